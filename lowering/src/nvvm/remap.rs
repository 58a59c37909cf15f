//! Moving a tile's elements between layouts: `tile.convert_layout`, `tile.broadcast` and
//! `tile.extract_slice`.
//!
//! All three are one map: destination element `c` takes the source element `proj(c) + o`,
//! where `proj` zeroes the broadcast dimensions (none for a conversion or a slice) and `o`
//! is the slice's offsets (zero otherwise). Derived from the two layouts alone:
//!
//! - **registers only**, when every lane and warp basis of the destination, projected, is
//!   the source's basis for that bit: then each destination register's element is in the
//!   same thread, in the source register whose coordinate is the projected one — a
//!   renaming, no instruction (a reduction's slice broadcast back over its dimension is
//!   this case; so is a slice along register bits, where adding `o` carries into no
//!   thread bit);
//! - **a shared-memory round trip** otherwise: every thread writes its source registers
//!   at their row-major offsets of the (padded) source shape, with each row padded by 4
//!   bytes so that a column's elements fall in different banks, a barrier, every thread
//!   reads its destination elements (at `o` further on); inside a loop, a barrier before
//!   the next iteration writes the region again (each op has a region of its own).
//!   Threads that hold copies of one element write the same value.

use super::plain::{err, Lowerer, Lv, Tile, R};
use super::writer::V;
use tilec_dialect::{LinearLayout, Operation};

impl<'c, 'm> Lowerer<'c, 'm, '_> {
    pub(super) fn lower_remap(&mut self, op: &Operation) -> R<()> {
        let (shape, elem, layout) = self.result_layout(op, 0)?;
        let out = match self.get(op, op.operands[0])? {
            Lv::Scalar(s) => Tile {
                regs: vec![s.v; layout.num_registers() as usize],
                elem,
                shape,
                layout,
            },
            Lv::Tile(t) => {
                let bcast: Vec<usize> = (0..shape.len())
                    .filter(|&d| t.shape[d] == 1 && shape[d] > 1)
                    .collect();
                let mut out = self.remap(op, t, &layout, &bcast, &[])?;
                out.shape = shape;
                out
            }
            _ => return err(op, "a tensor cannot be broadcast"),
        };
        if let Some(&r) = op.results.first() {
            self.vals.insert(r, Lv::Tile(out));
        }
        Ok(())
    }

    /// `tile.extract_slice`: the source's elements from `offsets` on, in the result's
    /// layout (see the module docs).
    pub(super) fn lower_extract_slice(&mut self, op: &Operation) -> R<()> {
        let (shape, _, layout) = self.result_layout(op, 0)?;
        let t = self.tile(op, op.operands[0])?;
        let offsets = tilec_dialect::ops::offsets(op);
        if offsets.len() != shape.len() {
            return err(op, "'tile.extract_slice' needs one offset per dimension");
        }
        let mut out = self.remap(op, t, &layout, &[], &offsets)?;
        out.shape = shape;
        if let Some(&r) = op.results.first() {
            self.vals.insert(r, Lv::Tile(out));
        }
        Ok(())
    }

    /// `src` in layout `dst` (of `src`'s rank), the dimensions `bcast` broadcast from size
    /// 1, destination element `c` taken from source element `c + shift` (`shift` empty:
    /// zero; see the module docs).
    pub(super) fn remap(
        &mut self,
        op: &Operation,
        src: Tile<'c, 'm>,
        dst: &LinearLayout,
        bcast: &[usize],
        shift: &[u64],
    ) -> R<Tile<'c, 'm>> {
        let rank = dst.dims.len();
        let shift: Vec<u64> = (0..rank)
            .map(|d| shift.get(d).copied().unwrap_or(0))
            .collect();
        let sl = &src.layout;
        if let Some(from) = sl.registers_for(dst, bcast, &shift) {
            return Ok(Tile {
                regs: from.into_iter().map(|i| src.regs[i]).collect(),
                layout: dst.clone(),
                ..src
            });
        }
        // Through shared memory.
        let bytes = src.elem.size_bytes();
        // Rows padded by 4 bytes (rank ≥ 2): consecutive rows start one bank apart, so a
        // warp reading or writing down a column touches 32 different banks.
        // Large enough for the destination's (padded) window at its shift too.
        let mut pitched: Vec<u64> = (0..rank)
            .map(|d| {
                if bcast.contains(&d) {
                    sl.dims[d]
                } else {
                    sl.dims[d].max(shift[d] + dst.dims[d])
                }
            })
            .collect();
        let pad = if pitched.len() >= 2 {
            (4 / bytes).max(1)
        } else {
            0
        };
        if let Some(last) = pitched.last_mut() {
            *last += pad;
        }
        let elems: u64 = pitched.iter().product();
        let scratch = self.scratch_region(elems * bytes, &op.loc)?;
        let region = scratch.offset;
        if scratch.reuses_earlier {
            self.w.barrier();
        }
        let ety = self.w.ty(src.elem);
        // Row-major over the pitched shape; the destination reads broadcast dimensions at 0.
        let strides: Vec<u64> = (0..pitched.len())
            .map(|d| pitched[d + 1..].iter().product())
            .collect();
        let at = self.smem_placement(sl, strides.clone(), bytes, region);
        for (r, &x) in src.regs.iter().enumerate() {
            let p = self.smem_address(&at, sl, r as u64);
            self.w.store(x, p, bytes);
        }
        self.w.barrier();
        let shift_bytes: u64 = shift.iter().zip(&strides).map(|(o, s)| o * s).sum::<u64>() * bytes;
        let mut dst_strides = strides;
        for &d in bcast {
            dst_strides[d] = 0;
        }
        let at = self.smem_placement(dst, dst_strides, bytes, region + shift_bytes);
        let mut regs = Vec::with_capacity(dst.num_registers() as usize);
        for r in 0..dst.num_registers() {
            let p = self.smem_address(&at, dst, r);
            regs.push(self.w.load(p, ety, bytes));
        }
        if scratch.precedes_later {
            self.w.fence_proxy_async();
            self.w.barrier();
        } else if self.in_loop() {
            self.w.barrier();
        }
        Ok(Tile {
            regs,
            layout: dst.clone(),
            ..src
        })
    }

    /// Where `layout`'s elements go in a shared-memory region: element `c` at byte
    /// `region + bytes · Σ_d c_d · strides[d]` (a stride of 0 reads that dimension as 0).
    /// With register bits apart from thread bits, the thread's part is computed here, once,
    /// and each register adds a constant (an immediate of the access): per-register
    /// addresses would be as many live values, shared by every access of the layout and
    /// kept live between them.
    pub(super) fn smem_placement(
        &mut self,
        layout: &LinearLayout,
        strides: Vec<u64>,
        bytes: u64,
        region: u64,
    ) -> SmemPlacement<'c, 'm> {
        let thread = layout.register_bits_disjoint().then(|| {
            let tc = self.thread_coord(layout);
            self.smem_offset(&tc, &strides, bytes, region)
        });
        SmemPlacement {
            strides,
            bytes,
            region,
            thread,
        }
    }

    /// The shared-memory address of register `r` of `layout` placed by `at`.
    pub(super) fn smem_address(
        &mut self,
        at: &SmemPlacement<'c, 'm>,
        layout: &LinearLayout,
        r: u64,
    ) -> melior::ir::Value<'c, 'm> {
        let off = match at.thread {
            Some(t) => {
                let k = layout.register_coord(r);
                let konst: u64 = k.iter().zip(&at.strides).map(|(&x, &s)| x * s).sum();
                self.w.add_const(t, (konst * at.bytes) as i64)
            }
            None => {
                let c = self.coord(layout, r);
                self.smem_offset(&c, &at.strides, at.bytes, at.region)
            }
        };
        self.w.smem_addr(off)
    }

    /// `region + bytes · Σ_d c_d · strides[d]` (i32).
    fn smem_offset(
        &mut self,
        c: &[V<'c, 'm>],
        strides: &[u64],
        bytes: u64,
        region: u64,
    ) -> V<'c, 'm> {
        let mut flat: Option<V<'c, 'm>> = None;
        for (&x, &st) in c.iter().zip(strides) {
            if st == 0 {
                continue;
            }
            let term = if st == 1 {
                x
            } else {
                let k = self.w.i32(st as i64);
                self.w.mul(x, k)
            };
            flat = Some(match flat {
                Some(f) => self.w.add(f, term),
                None => term,
            });
        }
        let Some(flat) = flat else {
            return self.w.i32(region as i64);
        };
        let b = self.w.i32(bytes as i64);
        let off = self.w.mul(flat, b);
        self.w.add_const(off, region as i64)
    }
}

/// A tile's placement in a shared-memory region ([`Lowerer::smem_placement`]).
pub(super) struct SmemPlacement<'c, 'm> {
    strides: Vec<u64>,
    bytes: u64,
    region: u64,
    /// The thread's byte offset, when registers add constants to it.
    thread: Option<V<'c, 'm>>,
}
