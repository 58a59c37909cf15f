//! Hopper's warpgroup MMA in a kernel with a plain launch: the GPU-level ops that
//! `tile-dot-to-wgmma` and `async-wait-placement` leave (PTX ISA §9.7.15, "Asynchronous
//! Warpgroup Level Matrix Multiply-Accumulate").
//!
//! - `tile.smem_alloc {swizzle = 128}`: a region of the dynamic shared memory, each stage
//!   1024-byte aligned (the 128-byte swizzle repeats every 8 rows of 128 bytes).
//! - `tile.smem_store %t, %buf, %stage`: every thread writes its registers of `%t` (any
//!   layout) into the stage, laid out as TMA's `SWIZZLE_128B` writes a box and as wgmma's
//!   descriptors read it: the `[R][C]` stage is split into boxes of 128 bytes of C (64
//!   16-bit elements), box `j` at `j · R · 128`; row `r` of a box at `128 r`, its 16-byte
//!   chunk `q` at `16 (q ⊕ (r mod 8))`. The byte offset is linear over GF(2) in the
//!   coordinate bits (R a power of two), so it is the thread's offset, computed once, XOR a
//!   constant per register (an add, folded into the address, where the two share no bit).
//!   Runs of registers contiguous along C go out as one vector of up to 16 bytes.
//!   `tile.smem_load %buf, %stage` reads the same layout back into any register layout;
//!   both take a view of the stage (`offsets`, `transpose`): the stage coordinate is the
//!   tile's (swapped when transposed) plus the offsets.
//! - `tile.mma {kind = "wgmma"}`: `wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}`,
//!   all k16 steps in one asm statement, D as the warp's f32 accumulator registers in the
//!   order of [`LinearLayout::dot_accumulator`] and B by a shared-memory descriptor
//!   (128-byte swizzle; `b_major = "k"`: the stage is `[N][K]`; `"n"`: `[K][N]`,
//!   `imm-trans-b = 1`). A is either a tile — the register-A form, four 32-bit registers
//!   per k16 step (the `mma.sync.m16n8k16` A fragment of the warp's 16 rows, which is the
//!   layout [`LinearLayout::dot_operand_a`] with every warp along M) — or an `[M][K]` stage
//!   read by descriptor (`imm-trans-a = 0`), warpgroup `g` from row `64 g`. A step's
//!   descriptor is the base plus an immediate, added in the asm's own registers: one
//!   64-bit operand per step would keep them all live across the statement.
//! - `tile.wait_group`: `wgmma.wait_group.sync.aligned N`, with every register of the
//!   tiles it takes (accumulators, A fragments) as tied operands, so no access of them
//!   moves above it and none is reused while a wgmma may still read it.
//! - `tile.wgmma_fence`, `tile.commit_group`, `tile.fence_proxy_async`, `tile.barrier`: the
//!   instructions of their names.

use super::plain::{err, Lowerer, Lv, Tile, R};
use super::writer::V;
use melior::ir::Value;
use tilec_dialect::{Attribute as TileAttr, LinearLayout, Operation, ScalarType, Type};

/// Bytes of one 128-byte-swizzled row (a box's width).
const SWIZZLE_BYTES: u64 = 128;

/// The A operand of a wgmma.
enum WgmmaA<'c, 'm> {
    /// In registers (the register-A form).
    Regs(Tile<'c, 'm>),
    /// In a stage, `[M][K]`.
    Smem(SmemBuf),
}

/// A shared-memory buffer of `tile.smem_alloc`.
#[derive(Clone, Debug)]
pub(crate) struct SmemBuf {
    /// Where it starts in the dynamic shared memory, in bytes (1024-aligned).
    pub offset: u64,
    /// A stage's shape `[R, C]`, in elements (C contiguous).
    pub shape: [u64; 2],
    /// The element type.
    pub elem: ScalarType,
    /// Bytes from one stage to the next (a multiple of 1024).
    pub stage_bytes: u64,
}

impl SmemBuf {
    /// The byte offset, in a stage, of element `(r, c)` (the module docs' layout).
    fn offset_of(&self, r: u64, c: u64) -> u64 {
        let per_box = SWIZZLE_BYTES / self.elem.size_bytes();
        let cb = (c % per_box) * self.elem.size_bytes();
        (c / per_box) * self.shape[0] * SWIZZLE_BYTES
            + r * SWIZZLE_BYTES
            + (((cb / 16) ^ (r % 8)) * 16)
            + cb % 16
    }
}

/// A view of a stage (`tile.smem_load` / `tile.smem_store`): tile element (i, j) is stage
/// element `offsets + (i, j)`, or `offsets + (j, i)` transposed.
#[derive(Clone, Copy, Debug)]
struct StageView {
    offsets: [u64; 2],
    transpose: bool,
}

/// [`SmemBuf::offset_of`] on i32 values: the byte offset in a stage of element (r, c).
fn stage_offset<'c, 'm>(
    w: &mut super::writer::Writer<'c, 'm>,
    buf: &SmemBuf,
    r: V<'c, 'm>,
    c: V<'c, 'm>,
) -> V<'c, 'm> {
    let esize = buf.elem.size_bytes();
    let per_box = (SWIZZLE_BYTES / esize) as i64;
    let cbox = w.i32(per_box);
    let bx = w.bin("udiv", c, cbox);
    let cin = w.bin("urem", c, cbox);
    let ce = w.i32(esize as i64);
    let cb = w.mul(cin, ce);
    let box_bytes = w.i32((buf.shape[0] * SWIZZLE_BYTES) as i64);
    let o1 = w.mul(bx, box_bytes);
    let c128 = w.i32(SWIZZLE_BYTES as i64);
    let o2 = w.mul(r, c128);
    let c16 = w.i32(16);
    let q = w.bin("udiv", cb, c16);
    let c7 = w.i32(7);
    let r8 = w.bin("and", r, c7);
    let qs = w.bin("xor", q, r8);
    let o3 = w.mul(qs, c16);
    let o4 = w.bin("urem", cb, c16);
    let s1 = w.add(o1, o2);
    let s2 = w.add(s1, o3);
    w.add(s2, o4)
}

impl<'c, 'm> Lowerer<'c, 'm, '_> {
    /// The result of `tile.smem_alloc` `op`, its stage count, a stage's shape and the
    /// element type.
    pub(super) fn smem_result(
        &self,
        op: &Operation,
    ) -> R<(tilec_dialect::Value, u64, &'_ [u64], ScalarType)> {
        match op.results.first().map(|&r| (r, self.m.ty(r))) {
            Some((
                r,
                Type::Smem {
                    stages,
                    shape,
                    elem,
                },
            )) => Ok((r, *stages, shape, *elem)),
            _ => err(op, "'tile.smem_alloc' without an smem result"),
        }
    }

    /// `tile.smem_alloc`.
    pub(super) fn lower_smem_alloc(&mut self, op: &Operation) -> R<()> {
        let (r, stages, shape, elem) = self.smem_result(op)?;
        let shape = shape.to_vec();
        let swizzle = op.int_attr("swizzle").unwrap_or(0);
        let esize = elem.size_bytes();
        let ok = swizzle == 128
            && shape.len() == 2
            && shape[0].is_power_of_two()
            && (shape[1] * esize) % SWIZZLE_BYTES == 0;
        if !ok {
            return err(
                op,
                format!(
                    "'tile.smem_alloc' of smem<{stages}x{}x{elem}> {{swizzle = {swizzle}}} is \
                     not lowered in a kernel with a plain launch: it takes 2-D stages with a \
                     power-of-two row count, rows a multiple of 128 bytes, and swizzle = 128",
                    shape
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join("x")
                ),
            );
        }
        let stage_bytes = (shape[0] * shape[1] * esize).div_ceil(1024) * 1024;
        let offset = self.buffer_region(r, stages * stage_bytes, 1024, &op.loc)?;
        self.vals.insert(
            r,
            Lv::Smem(SmemBuf {
                offset,
                shape: [shape[0], shape[1]],
                elem,
                stage_bytes,
            }),
        );
        Ok(())
    }

    fn smem_buf(&self, op: &Operation, v: tilec_dialect::Value) -> R<SmemBuf> {
        match self.get(op, v)? {
            Lv::Smem(b) => Ok(b),
            _ => err(op, "expected a shared-memory buffer ('tile.smem_alloc')"),
        }
    }

    /// The view of a stage that `op` names (`offsets`, `transpose`) for a tile of `shape`:
    /// a located error unless it lies inside the stage.
    fn stage_view(&self, op: &Operation, shape: &[u64], buf: &SmemBuf) -> R<StageView> {
        let offsets = match op.attr("offsets") {
            Some(_) => tilec_dialect::ops::offsets(op),
            None => vec![0, 0],
        };
        let transpose = op.attr("transpose").and_then(TileAttr::as_bool) == Some(true);
        let window = match (shape, transpose) {
            (&[a, b], false) => [a, b],
            (&[a, b], true) => [b, a],
            _ => return err(op, "a stage view takes a 2-D tile"),
        };
        if offsets.len() != 2 || (0..2).any(|d| offsets[d] + window[d] > buf.shape[d]) {
            return err(
                op,
                format!(
                    "the view at {offsets:?} of {}x{} elements{} does not fit in the {}x{} stage",
                    window[0],
                    window[1],
                    if transpose { " (transposed)" } else { "" },
                    buf.shape[0],
                    buf.shape[1]
                ),
            );
        }
        Ok(StageView {
            offsets: [offsets[0], offsets[1]],
            transpose,
        })
    }

    /// The shared-memory address of each run of registers of a tile in layout `l` in the
    /// view `v` of stage `stage` of `buf`, and the run length (registers contiguous along
    /// the stage's columns, within a 16-byte chunk and not split by a thread; 1 for a
    /// transposed view). The byte offset of stage element (r, c) is
    /// [`SmemBuf::offset_of`], linear over GF(2) in the coordinate bits; with the view's
    /// offsets multiples of its padded extents, it is the thread's part (computed once),
    /// XOR a constant per register. Other offsets take the formula per register.
    ///
    /// `each` gets the address of each run, with its first register and length, in
    /// register order (each access right after its address).
    fn view_runs(
        &mut self,
        l: &LinearLayout,
        elem: ScalarType,
        buf: &SmemBuf,
        stage: V<'c, 'm>,
        v: StageView,
        mut each: impl FnMut(&mut Self, Value<'c, 'm>, usize, usize),
    ) {
        let esize = elem.size_bytes();
        let to_stage = |c: &[u64]| -> [u64; 2] {
            if v.transpose {
                [c[1], c[0]]
            } else {
                [c[0], c[1]]
            }
        };
        let window = to_stage(&l.dims);
        let aligned = (0..2).all(|d| v.offsets[d].is_multiple_of(window[d].next_power_of_two()));
        let off = |c: &[u64]| {
            let s = to_stage(c);
            buf.offset_of(s[0], s[1])
        };
        let sb = self.w.i32(buf.stage_bytes as i64);
        let st32 = self.w.trunc(stage, ScalarType::I32);
        let so = self.w.mul(st32, sb);
        let tc = self.thread_coord(l);
        let (tr, tcol) = if v.transpose {
            (tc[1], tc[0])
        } else {
            (tc[0], tc[1])
        };
        let base = buf.offset;
        let n = l.num_registers();
        if !aligned {
            for r in 0..n {
                let k = to_stage(&l.register_coord(r));
                let row = self.w.xor_const(tr, k[0] as i64);
                let row = self.w.add_const(row, v.offsets[0] as i64);
                let col = self.w.xor_const(tcol, k[1] as i64);
                let col = self.w.add_const(col, v.offsets[1] as i64);
                let o = stage_offset(&mut self.w, buf, row, col);
                let o = self.w.add(o, so);
                let at = self.w.add_const(o, base as i64);
                let p = self.w.smem_addr(at);
                each(self, p, r as usize, 1);
            }
            return;
        }
        // Bits the thread part of an offset may have.
        let thread_mask = l.lane.iter().chain(&l.warp).fold(0u64, |m, b| m | off(b));
        let run = if v.transpose {
            1
        } else {
            let run = l
                .contiguous_register_bits()
                .min((16 / esize).trailing_zeros() as usize);
            let vlen = 1u64 << run;
            if thread_mask & (vlen * esize - 1) == 0 {
                vlen
            } else {
                1
            }
        };
        let view_base = buf.offset_of(v.offsets[0], v.offsets[1]);
        let thread = self.in_prologue(|w| stage_offset(w, buf, tr, tcol));
        let thread = self.w.add(thread, so);
        for r in (0..n).step_by(run as usize) {
            let g = off(&l.register_coord(r)) ^ view_base;
            let at = if g & thread_mask == 0 {
                self.w.add_const(thread, (g + base) as i64)
            } else {
                let x = self.w.xor_const(thread, g as i64);
                self.w.add_const(x, base as i64)
            };
            let p = self.w.smem_addr(at);
            each(self, p, r as usize, run as usize);
        }
    }

    /// `tile.smem_store %t, %buf, %stage`: the whole tile into a view of one stage (the
    /// whole stage by default; `offsets`, `transpose`).
    pub(super) fn lower_smem_store(&mut self, op: &Operation) -> R<()> {
        let t = self.tile(op, op.operands[0])?;
        let buf = self.smem_buf(op, op.operands[1])?;
        let stage = self.scalar(op, op.operands[2])?;
        let col = op.int_attr("col_offset").unwrap_or(0);
        if col != 0 || t.layout.dims != t.shape || t.elem != buf.elem {
            return err(
                op,
                "'tile.smem_store' in a kernel with a plain launch stores a whole tile of \
                 power-of-two shape and the stage's element type (no col_offset)",
            );
        }
        let v = self.stage_view(op, &t.shape, &buf)?;
        let esize = t.elem.size_bytes();
        let layout = t.layout.clone();
        self.view_runs(&layout, t.elem, &buf, stage, v, |me, p, r, run| {
            me.w.store_run(&t.regs[r..r + run], p, esize);
        });
        Ok(())
    }

    /// `tile.cp_async %tensor, %buf, %stage, %coords...`: the box of the stage's shape at
    /// `coords` (over the tensor's last two dimensions) copied into the stage, laid out as
    /// `tile.smem_store` writes it, elements outside the tensor as zero. The box is split
    /// into 16-byte chunks, chunk q (row q / (C/v), columns v·(q mod C/v) on, v elements
    /// of 16 bytes) to thread q mod T of the CTA's T threads, so a warp reads contiguous
    /// global memory. Where the tensor allows it (last stride 1; base, other strides and the
    /// column coordinate 16-byte aligned), each chunk is one `cp.async.cg` of 16 bytes whose
    /// source size cuts it at the tensor's edge (0 outside). Otherwise each element is a
    /// guarded `ld.global` and `st.shared` (synchronous; complete at the wait all the same).
    pub(super) fn lower_cp_async(&mut self, op: &Operation) -> R<()> {
        use super::writer::ICmp;
        let t = self.tensor(op, op.operands[0])?;
        let buf = self.smem_buf(op, op.operands[1])?;
        let stage = self.scalar(op, op.operands[2])?;
        let rank = t.sizes.len();
        if rank < 2 || op.operands.len() != 3 + rank || t.elem != buf.elem {
            return err(
                op,
                "'tile.cp_async' takes a tensor of rank 2 or more, one coordinate per \
                 dimension, and the ring's element type",
            );
        }
        let elem = t.elem;
        let esize = elem.size_bytes();
        let v = 16 / esize;
        let [rows, cols] = buf.shape;
        if cols % v != 0 {
            return err(
                op,
                "'tile.cp_async' needs stage rows of whole 16-byte chunks",
            );
        }
        let per_row = cols / v;
        let chunks = rows * per_row;
        let threads = self.num_warps * 32;
        let coords: Vec<V<'c, 'm>> = op.operands[3..]
            .iter()
            .map(|&o| {
                self.scalar(op, o)
                    .map(|x| self.w.int_cast(x, ScalarType::I64))
            })
            .collect::<R<_>>()?;
        let (rd, cd) = (rank - 2, rank - 1);
        // The leading coordinates are in bounds, and their part of the element index.
        let zero = self.w.i64(0);
        let mut lead_ok = self.w.int(1, ScalarType::I1);
        let mut lead = zero;
        for (d, &x) in coords.iter().enumerate().take(rd) {
            let ge = self.w.icmp(ICmp::Sge, x, zero);
            let lt = self.w.icmp(ICmp::Slt, x, t.sizes[d]);
            let both = self.w.and(ge, lt);
            lead_ok = self.w.and(lead_ok, both);
            let term = self.w.mul(x, t.strides[d]);
            lead = self.w.add(lead, term);
        }
        // The fast path's condition.
        let one = self.w.i64(1);
        let mut fast = self.w.icmp(ICmp::Eq, t.strides[cd], one);
        let mask = self.w.i64(v as i64 - 1);
        for d in 0..cd {
            let r = self.w.bin("and", t.strides[d], mask);
            let c = self.w.icmp(ICmp::Eq, r, zero);
            fast = self.w.and(fast, c);
        }
        let r = self.w.bin("and", coords[cd], mask);
        let c = self.w.icmp(ICmp::Eq, r, zero);
        fast = self.w.and(fast, c);
        let i64t = self.w.ty(ScalarType::I64);
        let addr = V {
            v: self.w.op1("llvm.ptrtoint", &[t.ptr], i64t, &[]),
            t: ScalarType::I64,
        };
        let m16 = self.w.i64(15);
        let r = self.w.bin("and", addr, m16);
        let c = self.w.icmp(ICmp::Eq, r, zero);
        fast = self.w.and(fast, c);
        // The stage's base (i32 bytes) and this thread's index.
        let sb = self.w.i32(buf.stage_bytes as i64);
        let st32 = self.w.trunc(stage, ScalarType::I32);
        let so = self.w.mul(st32, sb);
        let stage_base = self.w.add_const(so, buf.offset as i64);
        let (lane, warp) = (self.lane, self.warp);
        let tid = self.in_prologue(|w| {
            let c5 = w.i32(5);
            let wv = w.bin("shl", warp, c5);
            w.bin("or", wv, lane)
        });
        let fast_b = self.w.new_block(&[]);
        let slow_b = self.w.new_block(&[]);
        let join = self.w.new_block(&[]);
        self.w.cond_br(fast, &fast_b, &[], &slow_b, &[]);
        let ety = self.w.ty(elem);
        let p1 = self.w.ptr_ty(1);
        for fast_path in [true, false] {
            self.w.block = if fast_path { fast_b } else { slow_b };
            for j in 0..chunks.div_ceil(threads) {
                let q = self.w.add_const(tid, (j * threads) as i64);
                let guarded = (j + 1) * threads > chunks;
                let after = guarded.then(|| {
                    let body = self.w.new_block(&[]);
                    let next = self.w.new_block(&[]);
                    let n = self.w.i32(chunks as i64);
                    let inside = self.w.icmp(ICmp::Ult, q, n);
                    self.w.cond_br(inside, &body, &[], &next, &[]);
                    self.w.block = body;
                    next
                });
                let pr = self.w.i32(per_row as i64);
                let row = self.w.bin("udiv", q, pr);
                let cc = self.w.bin("urem", q, pr);
                let vv = self.w.i32(v as i64);
                let col = self.w.mul(cc, vv);
                let o = stage_offset(&mut self.w, &buf, row, col);
                let o = self.w.add(o, stage_base);
                let dst = self.w.smem_addr(o);
                let row64 = self.w.int_cast(row, ScalarType::I64);
                let col64 = self.w.int_cast(col, ScalarType::I64);
                let grow = self.w.add(coords[rd], row64);
                let gcol = self.w.add(coords[cd], col64);
                let ge = self.w.icmp(ICmp::Sge, grow, zero);
                let lt = self.w.icmp(ICmp::Slt, grow, t.sizes[rd]);
                let row_ok = self.w.and(ge, lt);
                let row_ok = self.w.and(row_ok, lead_ok);
                let rterm = self.w.mul(grow, t.strides[rd]);
                let index = self.w.add(lead, rterm);
                if fast_path {
                    // Elements of the chunk inside the tensor: clamp(size - gcol, 0, v).
                    let rem = self.w.bin("sub", t.sizes[cd], gcol);
                    let vmax = self.w.i64(v as i64);
                    let lo = self.w.icmp(ICmp::Slt, rem, zero);
                    let rem = self.w.select(lo, zero, rem);
                    let hi = self.w.icmp(ICmp::Sgt, rem, vmax);
                    let rem = self.w.select(hi, vmax, rem);
                    let rem = self.w.select(row_ok, rem, zero);
                    let some = self.w.icmp(ICmp::Sgt, rem, zero);
                    let at = self.w.add(index, gcol);
                    let at = self.w.select(some, at, zero);
                    let src = self.w.gep(t.ptr, at, ety, p1);
                    let eb = self.w.i64(esize as i64);
                    let bytes = self.w.mul(rem, eb);
                    let bytes = self.w.int_cast(bytes, ScalarType::I32);
                    self.w.cp_async_16(dst, src, bytes);
                } else {
                    for e in 0..v {
                        let ge_col = self.w.add_const(gcol, e as i64);
                        let c0 = self.w.icmp(ICmp::Sge, ge_col, zero);
                        let c1 = self.w.icmp(ICmp::Slt, ge_col, t.sizes[cd]);
                        let inb = self.w.and(c0, c1);
                        let inb = self.w.and(inb, row_ok);
                        let ld = self.w.new_block(&[]);
                        let next = self.w.new_block(&[ety]);
                        let z = if elem.is_float() {
                            self.w.float(0.0, elem)
                        } else {
                            self.w.int(0, elem)
                        };
                        self.w.cond_br(inb, &ld, &[], &next, &[z.v]);
                        self.w.block = ld;
                        let cterm = self.w.mul(ge_col, t.strides[cd]);
                        let at = self.w.add(index, cterm);
                        let p = self.w.gep(t.ptr, at, ety, p1);
                        let x = self.w.load(p, ety, esize);
                        self.w.br(&next, &[x]);
                        self.w.block = next;
                        let x = self.w.args(next)[0];
                        let oe = self.w.add_const(o, (e * esize) as i64);
                        let pe = self.w.smem_addr(oe);
                        self.w.store(x, pe, esize);
                    }
                }
                if let Some(next) = after {
                    self.w.br(&next, &[]);
                    self.w.block = next;
                }
            }
            self.w.br(&join, &[]);
        }
        self.w.block = join;
        Ok(())
    }

    /// `tile.smem_load %buf, %stage`: a view of one stage into registers of the result's
    /// layout (`ld.shared`, vectors where runs allow).
    pub(super) fn lower_smem_load(&mut self, op: &Operation) -> R<()> {
        let buf = self.smem_buf(op, op.operands[0])?;
        let stage = self.scalar(op, op.operands[1])?;
        let (shape, elem, layout) = self.result_layout(op, 0)?;
        if layout.dims != shape || elem != buf.elem {
            return err(
                op,
                "'tile.smem_load' in a kernel with a plain launch reads a tile of power-of-two \
                 shape and the stage's element type",
            );
        }
        let v = self.stage_view(op, &shape, &buf)?;
        let esize = elem.size_bytes();
        let ety = self.w.ty(elem);
        let mut regs = Vec::with_capacity(layout.num_registers() as usize);
        self.view_runs(&layout, elem, &buf, stage, v, |me, p, _, run| {
            if run == 1 {
                regs.push(me.w.load(p, ety, esize));
                return;
            }
            let vt = me.w.vector_ty(run as u64, ety);
            let x = me.w.load(p, vt, esize * run as u64);
            for j in 0..run {
                let jj = me.w.i32(j as i64);
                regs.push(me.w.extract_element(x, jj, ety));
            }
        });
        if let Some(&r) = op.results.first() {
            self.vals.insert(
                r,
                Lv::Tile(Tile {
                    regs,
                    elem,
                    shape,
                    layout,
                }),
            );
        }
        Ok(())
    }

    /// `tile.mma {kind = "wgmma"}`, A in registers or in a stage (see the module docs).
    pub(super) fn lower_wgmma(&mut self, op: &Operation) -> R<()> {
        if op.str_attr("kind") != Some("wgmma") {
            return err(
                op,
                "'tile.mma' in a kernel with a plain launch is lowered only with kind = \"wgmma\"",
            );
        }
        let Some(parts) = tilec_dialect::ops::mma_operands(op) else {
            return err(op, "'tile.mma' takes (a, b, stage, acc)");
        };
        let a = match self.get(op, parts.a)? {
            Lv::Tile(t) => WgmmaA::Regs(t),
            Lv::Smem(b) => WgmmaA::Smem(b),
            _ => return err(op, "'tile.mma' takes A as a tile or a shared-memory buffer"),
        };
        let buf = self.smem_buf(op, parts.b)?;
        let stage = self.scalar(op, parts.stage_b)?;
        let (shape, _, acc_l) = self.result_layout(op, 0)?;
        let zero_acc = op.attr("zero_acc").and_then(TileAttr::as_bool) == Some(true);
        let b_k = tilec_dialect::ops::mma_b_k_major(op)
            .map_err(|e| tilec_dialect::Diagnostic::error(op.loc.clone(), e))?;
        let a_k = tilec_dialect::ops::mma_a_k_major(op)
            .map_err(|e| tilec_dialect::Diagnostic::error(op.loc.clone(), e))?;
        let n = acc_l.dims[1];
        let (elem, kdim, a_fits) = match &a {
            WgmmaA::Regs(t) => (
                t.elem,
                t.layout.dims[1],
                LinearLayout::is_wgmma_register_a(&acc_l, &shape, &t.layout, &t.shape),
            ),
            WgmmaA::Smem(b) => (
                b.elem,
                b.shape[1],
                a_k && LinearLayout::is_wgmma_accumulator(&acc_l, &shape)
                    && b.shape[0] == acc_l.dims[0]
                    && b.shape[1].is_multiple_of(16),
            ),
        };
        let want_b = if b_k { [n, kdim] } else { [kdim, n] };
        let fits = matches!(elem, ScalarType::BF16 | ScalarType::F16)
            && buf.elem == elem
            && a_fits
            && buf.shape == want_b;
        if !fits {
            return err(
                op,
                "'tile.mma' of this shape and layout is not lowered as a wgmma: it takes bf16 \
                 or f16 A, either in registers as the mma.sync A fragment or as an [M][K] stage \
                 (a_major = \"k\"), an f32 accumulator of [M, N] = [16·warps, 8 to 256] with \
                 every warp along M, and a B stage of [N][K] (b_major = \"k\") or [K][N]",
            );
        }
        let acc = if zero_acc {
            None
        } else {
            let c = self.tile(op, parts.acc)?;
            if c.layout != acc_l || c.elem != ScalarType::F32 {
                return err(op, "the wgmma accumulator is not in the result's layout");
            }
            Some(c)
        };
        let steps = (kdim / 16) as usize;
        let (b_desc, b_offs) = self.k_major_or_n_descs(&buf, stage, b_k, steps, None);
        let mut operands: Vec<Value<'c, 'm>> = vec![];
        if let Some(c) = &acc {
            operands.extend(c.regs.iter().copied());
        }
        let regs = (n / 2) as usize;
        let first_a = regs + operands.len();
        // A: four registers per k16 step, or one descriptor and its per-step offsets.
        let a_offs = match a {
            WgmmaA::Regs(t) => {
                let t = self.zero_padding(t, 1);
                for f in &self.a_fragments(&t, 1, steps as u64) {
                    operands.extend(f.iter().map(|&x| self.as_i32(x)));
                }
                None
            }
            WgmmaA::Smem(ab) => {
                let sa = self.scalar(op, parts.stage_a)?;
                // Warpgroup g multiplies rows 64g.. of A: its row of the accumulator's first
                // register, rounded down to 64.
                let tc = self.thread_coord(&acc_l);
                let row = self.in_prologue(|w| {
                    let m = w.i32(!63);
                    let r = w.bin("and", tc[0], m);
                    let c = w.i32(SWIZZLE_BYTES as i64);
                    w.mul(r, c)
                });
                let (d, offs) = self.k_major_or_n_descs(&ab, sa, true, steps, Some(row));
                operands.push(d);
                Some(offs)
            }
        };
        let first_b = operands.len() + regs;
        operands.push(b_desc);
        let d_list = (0..regs)
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let t = if elem == ScalarType::F16 {
            "f16"
        } else {
            "bf16"
        };
        // The descriptors of a step are the base plus an immediate, formed in the asm's own
        // registers: passing one per step would hold them all live across the statement.
        let mut asm = String::from("{\n.reg .pred p;\n.reg .b64 da, db;\n");
        for kk in 0..steps {
            let scale_d = u8::from(!(zero_acc && kk == 0));
            asm.push_str(&format!("add.s64 db, ${first_b}, {};\n", b_offs[kk]));
            let (a_arg, trans) = match &a_offs {
                None => {
                    let a0 = first_a + 4 * kk;
                    (
                        format!("{{${a0}, ${}, ${}, ${}}}", a0 + 1, a0 + 2, a0 + 3),
                        format!("{}", u8::from(!b_k)),
                    )
                }
                Some(offs) => {
                    asm.push_str(&format!("add.s64 da, ${first_a}, {};\n", offs[kk]));
                    ("da".to_string(), format!("0, {}", u8::from(!b_k)))
                }
            };
            asm.push_str(&format!(
                "setp.ne.b32 p, {scale_d}, 0;\n\
                 wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{t}.{t} {{{d_list}}}, \
                 {a_arg}, db, p, 1, 1, {trans};\n",
            ));
        }
        asm.push('}');
        let a_cons = match &a_offs {
            None => std::iter::repeat_n("r".to_string(), 4 * steps).collect::<Vec<_>>(),
            Some(_) => vec!["l".to_string()],
        };
        let cons: Vec<String> = std::iter::repeat_n("=f".to_string(), regs)
            .chain((0..regs).filter(|_| acc.is_some()).map(|i| i.to_string()))
            .chain(a_cons)
            .chain(std::iter::once("l".to_string()))
            .collect();
        let f32t = self.w.ty(ScalarType::F32);
        let ret = self.w.struct_ty(&vec![f32t; regs]);
        let r = self
            .w
            .inline_asm(&asm, &cons.join(","), &operands, Some(ret), true)
            .expect("a result type was given");
        let out = self.w.unpack(r, regs, f32t);
        self.vals.insert(
            op.results[0],
            Lv::Tile(Tile {
                regs: out,
                elem: ScalarType::F32,
                shape,
                layout: acc_l,
            }),
        );
        Ok(())
    }

    /// The shared-memory descriptor (PTX ISA §9.7.15.5.1, "Matrix Descriptor Format") of
    /// the first k16 slice of a stage of `buf` with the 128-byte swizzle, and what each of
    /// the `steps` slices adds to it (16-byte units): `k_major`, the stage is `[rows][K]`
    /// (LBO 16 bytes, unused with a swizzle; slice `k` 32 bytes on within a box, boxes of
    /// 64 16-bit K columns `rows · 128` bytes apart); otherwise `[K][cols]` (LBO one box of
    /// K rows: the boxes of 64 columns follow one another; slice `k` 16 rows on). SBO is 8
    /// rows of 128 bytes. `extra` (bytes, i32) is added to the start address.
    fn k_major_or_n_descs(
        &mut self,
        buf: &SmemBuf,
        stage: V<'c, 'm>,
        k_major: bool,
        steps: usize,
        extra: Option<V<'c, 'm>>,
    ) -> (Value<'c, 'm>, Vec<u64>) {
        let kdim = if k_major { buf.shape[1] } else { buf.shape[0] };
        let lbo = if k_major { 16 } else { kdim * SWIZZLE_BYTES };
        let sbo = 8 * SWIZZLE_BYTES;
        let hi = ((1u64 << 62) | ((sbo >> 4) << 32) | ((lbo >> 4) << 16)) as i64;
        let sb = self.w.i32(buf.stage_bytes as i64);
        let st32 = self.w.trunc(stage, ScalarType::I32);
        let so = self.w.mul(st32, sb);
        let so = self.w.add_const(so, buf.offset as i64);
        let so = match extra {
            Some(x) => self.w.add(so, x),
            None => so,
        };
        let p = self.w.smem_addr(so);
        let i32t = self.w.ty(ScalarType::I32);
        let addr = V {
            v: self.w.cast("llvm.ptrtoint", p, i32t),
            t: ScalarType::I32,
        };
        let lo64 = self.w.desc_start(addr);
        let hic = self.w.i64(hi);
        let d0 = self.w.bin("or", lo64, hic);
        let per_box = SWIZZLE_BYTES / 32;
        let offs = (0..steps as u64)
            .map(|kk| {
                let bytes = if k_major {
                    (kk / per_box) * buf.shape[0] * SWIZZLE_BYTES + (kk % per_box) * 32
                } else {
                    kk * 16 * SWIZZLE_BYTES
                };
                bytes >> 4
            })
            .collect();
        (d0.v, offs)
    }

    /// A 32-bit multiplicand register as i32 (the `r` constraint).
    fn as_i32(&mut self, v: Value<'c, 'm>) -> Value<'c, 'm> {
        let i32t = self.w.ty(ScalarType::I32);
        if melior::ir::ValueLike::r#type(&v) == i32t {
            v
        } else {
            self.w.cast("llvm.bitcast", v, i32t)
        }
    }

    /// `tile.wait_group {pending = N}`: the tiles it takes go through one asm statement as
    /// tied operands (f32 registers as `f`, 16-bit ones in pairs as `r`).
    /// The registers of `t` as inline-asm operands: f32 registers as `f`, a 16-bit tile's
    /// in pairs packed into `r` registers.
    fn asm_operands(
        &mut self,
        op: &Operation,
        t: &Tile<'c, 'm>,
    ) -> R<Vec<(Value<'c, 'm>, melior::ir::Type<'c>, &'static str)>> {
        let i32t = self.w.ty(ScalarType::I32);
        let f32t = self.w.ty(ScalarType::F32);
        let mut out = vec![];
        match t.elem.size_bytes() {
            4 => {
                for &x in &t.regs {
                    let v = if t.elem == ScalarType::F32 {
                        x
                    } else {
                        self.w.cast("llvm.bitcast", x, f32t)
                    };
                    out.push((v, f32t, "f"));
                }
            }
            2 => {
                if !t.regs.len().is_multiple_of(2) {
                    return err(op, "a 16-bit tile of an odd register count");
                }
                for p in t.regs.chunks(2) {
                    let v = self.pack_pair(t.elem, p[0], p[1]);
                    out.push((self.as_i32(v), i32t, "r"));
                }
            }
            _ => {
                return err(
                    op,
                    "'tile.wait_group' takes f32 accumulators and 16-bit A fragments",
                )
            }
        }
        Ok(out)
    }

    pub(super) fn lower_wait_group(&mut self, op: &Operation) -> R<()> {
        let n = op.int_attr("pending").unwrap_or(0);
        let mut tiles: Vec<(tilec_dialect::Value, Tile<'c, 'm>)> = vec![];
        let mut read_tiles: Vec<Tile<'c, 'm>> = vec![];
        for (&a, &res) in op.operands.iter().zip(&op.results) {
            match self.get(op, a)? {
                Lv::Tile(t) if self.wgmma_only.contains(&a) => {
                    // Only wgmmas read it: an input keeps its registers until the wait.
                    read_tiles.push(t.clone());
                    self.vals.insert(res, Lv::Tile(t));
                }
                Lv::Tile(t) => tiles.push((res, t)),
                other => {
                    self.vals.insert(res, other);
                }
            }
        }
        let mut tied: Vec<(Value<'c, 'm>, melior::ir::Type<'c>, &str)> = vec![];
        let mut read: Vec<(Value<'c, 'm>, &str)> = vec![];
        for t in &read_tiles {
            for (v, _, c) in self.asm_operands(op, t)? {
                read.push((v, c));
            }
        }
        for (_, t) in &tiles {
            tied.extend(self.asm_operands(op, t)?);
        }
        let after = self.w.wgmma_wait_group(n, &tied, &read);
        let mut at = 0;
        for (res, t) in tiles {
            let mut regs = vec![];
            if t.elem.size_bytes() == 4 {
                for _ in 0..t.regs.len() {
                    let x = after[at];
                    at += 1;
                    regs.push(if t.elem == ScalarType::F32 {
                        x
                    } else {
                        let ty = self.w.ty(t.elem);
                        self.w.cast("llvm.bitcast", x, ty)
                    });
                }
            } else {
                let et = self.w.ty(t.elem);
                let vt = self.w.vector_ty(2, et);
                for _ in 0..t.regs.len() / 2 {
                    let x = after[at];
                    at += 1;
                    let v = self.w.cast("llvm.bitcast", x, vt);
                    for i in 0..2 {
                        let idx = self.w.i32(i);
                        regs.push(self.w.extract_element(v, idx, et));
                    }
                }
            }
            self.vals.insert(res, Lv::Tile(Tile { regs, ..t }));
        }
        Ok(())
    }
}

/// The values that a `tile.wait_group` passes to the wait as inputs instead of returning
/// them tied: those that, through the waits, loops and branches that carry them on, only
/// wgmmas read (a loop-invariant A fragment such as attention's Q, or an accumulator only
/// passed from wgmma to wgmma). Tying such a value would copy its registers before the
/// wait on every trip while the wgmmas it feeds may be in flight (a read of registers a
/// pending wgmma uses, which ptxas answers by serializing the wgmmas, C7514); as an input
/// its registers stay live up to the wait, which is all the wait needs of it. A value with
/// any other reader stays tied, so that no read moves above the wait.
pub(super) fn wgmma_only(k: &Operation) -> std::collections::HashSet<tilec_dialect::Value> {
    use std::collections::{HashMap, HashSet};
    use tilec_dialect::{OpKind, Value as TV};
    fn walk(
        b: &tilec_dialect::Block,
        parent: Option<&Operation>,
        succ: &mut HashMap<TV, Vec<TV>>,
        tainted: &mut HashSet<TV>,
    ) {
        for o in &b.ops {
            match o.kind {
                OpKind::WaitGroup => {
                    for (&a, &r) in o.operands.iter().zip(&o.results) {
                        succ.entry(a).or_default().push(r);
                    }
                }
                OpKind::Mma => {}
                OpKind::For => {
                    tainted.extend(o.operands.iter().take(3).copied());
                    for (i, &init) in o.operands.iter().enumerate().skip(3) {
                        let e = succ.entry(init).or_default();
                        e.extend(o.regions[0].args.get(i - 2).copied());
                        e.extend(o.results.get(i - 3).copied());
                    }
                }
                OpKind::Yield => match parent.map(|p| p.kind) {
                    Some(OpKind::For) => {
                        let p = parent.expect("a parent");
                        for (i, &v) in o.operands.iter().enumerate() {
                            let e = succ.entry(v).or_default();
                            e.extend(p.regions[0].args.get(i + 1).copied());
                            e.extend(p.results.get(i).copied());
                        }
                    }
                    Some(OpKind::If) => {
                        let p = parent.expect("a parent");
                        for (i, &v) in o.operands.iter().enumerate() {
                            succ.entry(v).or_default().extend(p.results.get(i).copied());
                        }
                    }
                    _ => tainted.extend(o.operands.iter().copied()),
                },
                _ => tainted.extend(o.operands.iter().copied()),
            }
            for r in &o.regions {
                walk(r, Some(o), succ, tainted);
            }
        }
    }
    let mut succ = HashMap::new();
    let mut tainted = HashSet::new();
    for r in &k.regions {
        walk(r, Some(k), &mut succ, &mut tainted);
    }
    loop {
        let more: Vec<TV> = succ
            .iter()
            .filter(|(v, s)| !tainted.contains(*v) && s.iter().any(|x| tainted.contains(x)))
            .map(|(&v, _)| v)
            .collect();
        if more.is_empty() {
            break;
        }
        tainted.extend(more);
    }
    succ.keys()
        .copied()
        .filter(|v| !tainted.contains(v))
        .collect()
}
