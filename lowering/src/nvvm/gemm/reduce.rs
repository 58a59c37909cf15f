//! Reductions in the epilogue, over the accumulator's layout.
//!
//! The accumulator is a [`LinearLayout`] like any other
//! ([`LinearLayout::wgmma_accumulator`], [`LinearLayout::mma_sync_accumulator`]), over the
//! consumer warps in order. An epilogue tile of the accumulator's shape is evaluated over
//! that layout; a tile with a dimension of size 1 (a reduction's result, or a row or column
//! loaded to be broadcast) over the accumulator's layout sliced along it (its *space*,
//! [`Gemm::space_of`]).
//!
//! `tile.reduce` evaluates its operand in every register of the operand's space, then
//! combines through [`reduce_registers`]: in thread, across lanes by `shfl.sync.bfly`, and
//! across warps through shared memory (read where each element is used, so that a store
//! of column sums holds one element at a time, not every column beside the accumulator),
//! behind a named barrier over the consumer threads
//! (`bar.sync 1 + W, consumers` with W consumer warpgroups, after their own barriers
//! `1 ..= W`; the producer does not take part). The result stays in
//! registers ([`Lazy::Regs`]); a `tile.broadcast` back to the accumulator's shape reads it
//! per register, and a store or `tile.atomic_add` of it writes each element once: lanes and
//! warps whose bits broadcast (hold copies) do not write.

use super::epilogue::{EvalMemo, Lazy, StoreArgs};
use super::{err, Gemm, Lv, R};
use crate::nvvm::plain::smem_limit;
use crate::nvvm::reduce::{reduce_registers, ReduceSite, Reduced};
use crate::nvvm::writer::{ICmp, Writer, V};
use std::collections::HashMap;
use std::rc::Rc;
use tilec_dialect::{LinearLayout, Location, Operation, ReduceKind, ScalarType, Type as TileType};

impl<'c, 'm> Gemm<'c, 'm, '_> {
    /// The accumulator's layout over the consumer warps.
    ///
    /// # Errors
    /// Before the kernel's first MMA, or for an accumulator the fragment constructors do not
    /// describe.
    pub(super) fn acc_layout(&self, op: &Operation) -> R<LinearLayout> {
        let Some(shape) = self.acc.as_ref().and_then(|a| a.shape.clone()) else {
            return err(
                op,
                "convert-tile-to-nvvm: an epilogue op before the kernel's MMA",
            );
        };
        let wgs = self.consumer_wgs as u64;
        if self.acc.as_ref().is_some_and(|a| a.transposed) {
            let mma = [shape[1], shape[0]];
            if self.mma_sync || mma[0] != 64 * wgs || !wgs.is_power_of_two() {
                return err(
                    op,
                    format!(
                        "convert-tile-to-nvvm: a transposed {mma:?} accumulator over {wgs} \
                         consumer warpgroups has no wgmma fragment layout"
                    ),
                );
            }
            return Ok(LinearLayout::wgmma_accumulator(mma[1], wgs).transposed());
        }
        if self.mma_sync {
            if shape != [128, 256] {
                return err(
                    op,
                    "convert-tile-to-nvvm: the mma.sync accumulator is 128x256",
                );
            }
            return Ok(LinearLayout::mma_sync_accumulator(2, 4));
        }
        if shape.len() != 2 || shape[0] != 64 * wgs || !wgs.is_power_of_two() {
            return err(
                op,
                format!(
                    "convert-tile-to-nvvm: a {shape:?} accumulator over {wgs} consumer \
                     warpgroups has no wgmma fragment layout"
                ),
            );
        }
        Ok(LinearLayout::wgmma_accumulator(shape[1], wgs))
    }

    /// The layout an epilogue tile of `shape` is evaluated over: the accumulator's, sliced
    /// along each dimension where `shape` is 1 and the accumulator is not.
    ///
    /// # Errors
    /// A shape that is neither the accumulator's nor a broadcast of it.
    pub(super) fn space_of(&self, op: &Operation, shape: &[u64]) -> R<LinearLayout> {
        let mut l = self.acc_layout(op)?;
        let acc = self
            .acc
            .as_ref()
            .and_then(|a| a.shape.clone())
            .unwrap_or_default();
        if shape.len() != acc.len() {
            return err(
                op,
                format!(
                    "convert-tile-to-nvvm: epilogue tiles are 2-D (the accumulator's {}x{} or \
                     a broadcast of it), found {shape:?}",
                    acc[0], acc[1]
                ),
            );
        }
        for (d, (&n, &a)) in shape.iter().zip(&acc).enumerate() {
            if n == a {
                continue;
            }
            if n != 1 {
                return err(
                    op,
                    format!(
                        "convert-tile-to-nvvm: an epilogue tile of {}x{} over a {}x{} \
                         accumulator: each dimension is the accumulator's or 1",
                        shape[0], shape[1], acc[0], acc[1]
                    ),
                );
            }
            l = l.slice(d);
        }
        Ok(l)
    }

    /// The thread's base (row, column) (i64) in `space`: the fragment's base, 0 along
    /// sliced dimensions.
    pub(super) fn space_base(&mut self, space: &LinearLayout) -> (V<'c, 'm>, V<'c, 'm>) {
        let (fr, fc) = self
            .frag_rc
            .expect("fragment base set in the consumer region");
        let at = |g: &mut Self, d: usize, x| if space.dims[d] == 1 { g.i64(0) } else { x };
        (at(self, 0, fr), at(self, 1, fc))
    }

    /// The thread's warp among the consumer warps (i32).
    fn consumer_warp(&mut self) -> V<'c, 'm> {
        let c5 = self.i32(5);
        let w = self.bin("lshr", self.tid, c5);
        let p = self.i32(self.producer_threads / 32);
        self.bin("sub", w, p)
    }

    /// `bar.sync id, threads`.
    pub(super) fn bar_sync(&mut self, id: V<'c, 'm>, threads: i64) {
        self.w.named_barrier(id, threads, false);
    }

    /// `tile.reduce` in the epilogue (see the [module docs](self)).
    pub(super) fn lower_epilogue_reduce(&mut self, op: &Operation) -> R<()> {
        if self.frag_rc.is_none() {
            return err(
                op,
                "convert-tile-to-nvvm: a 'tile.reduce' in a GEMM kernel reduces an epilogue \
                 tile, in the consumers after the MMA",
            );
        }
        let TileType::Tile { shape, elem, .. } = self.m.ty(op.operands[0]).clone() else {
            return err(op, "'tile.reduce' of a non-tile");
        };
        if !elem.is_float() {
            return err(op, "'tile.reduce' of an integer tile is not lowered");
        }
        let d = op.int_attr("dim").unwrap_or(0) as usize;
        let kind = ReduceKind::of(op).unwrap_or(ReduceKind::Add);
        let space = self.space_of(op, &shape)?;
        let node = self.lazy_of(op, op.operands[0])?;
        let mut memo = EvalMemo {
            reg: HashMap::new(),
            loads: Some(HashMap::new()),
            opaque_acc: false,
        };
        let sp = space.clone();
        let value = &mut |g: &mut Self, r: u64| {
            memo.reg.clear();
            g.eval(op, &node, &sp, r as usize, &mut memo)
        };
        let reduced = reduce_registers(self, op, (&space, &shape), d, kind, value, true)?;
        let layout = space.slice(d);
        let slots = (0..layout.num_registers())
            .map(|r| (layout.register_coord(r), r as usize))
            .collect();
        let node = match reduced {
            Reduced::Registers(acc) => Lazy::Regs {
                regs: acc
                    .into_iter()
                    .map(|a| self.w.fptrunc_to(a, elem).v)
                    .collect(),
                layout,
                slots,
                elem,
            },
            Reduced::Shared(p) => Lazy::Shared { p, slots, elem },
        };
        self.vals.insert(op.results[0], Lv::Lazy(Rc::new(node)));
        Ok(())
    }

    /// A store or atomic add of a tile in a slice `space` of the accumulator's layout: one
    /// predicated `st.global` (`red.global.add.f32`) per register, by the threads that own
    /// the element (broadcast lane and warp bits 0), inside the tile and the tensor.
    pub(super) fn store_space(
        &mut self,
        op: &Operation,
        a: StoreArgs<'c, 'm>,
        space: &LinearLayout,
    ) -> R<()> {
        let StoreArgs {
            t,
            r0,
            c0,
            val,
            mask,
            atomic,
        } = a;
        let value = *op.operands.last().expect("verified store");
        let TileType::Tile { shape, .. } = self.m.ty(value).clone() else {
            return err(op, "store of a non-tile");
        };
        let (st, reg) = match (t.elem, atomic) {
            (ScalarType::F32, true) => ("red.global.add.f32", "f"),
            (ScalarType::F32, false) => ("st.global.f32", "f"),
            (ScalarType::BF16 | ScalarType::F16, false) => ("st.global.b16", "h"),
            (other, _) => {
                return err(
                    op,
                    format!("convert-tile-to-nvvm: epilogue stores of {other} are not lowered yet"),
                )
            }
        };
        let (br, bc) = self.space_base(space);
        let mut owner: Option<V<'c, 'm>> = None;
        let lane = self.lane;
        let warp = self.consumer_warp();
        for (index, bases) in [(lane, &space.lane), (warp, &space.warp)] {
            let mask: i64 = bases
                .iter()
                .enumerate()
                .filter(|(_, b)| b.iter().all(|&x| x == 0))
                .map(|(i, _)| 1i64 << i)
                .sum();
            if mask != 0 {
                let m = self.i32(mask);
                let x = self.bin("and", index, m);
                let z = self.i32(0);
                let ok = self.w.icmp(ICmp::Eq, x, z);
                owner = Some(match owner {
                    Some(o) => self.w.and(o, ok),
                    None => ok,
                });
            }
        }
        let eb = self.i64(t.elem.size_bytes() as i64);
        let i16t = self.w.int_ty(16);
        let mut memo = EvalMemo {
            reg: HashMap::new(),
            loads: Some(HashMap::new()),
            opaque_acc: false,
        };
        for rho in 0..space.num_registers() {
            let c = space.register_coord(rho);
            if c.iter().zip(&shape).any(|(&x, &n)| x >= n) {
                continue; // padding in every thread
            }
            let mut ok = owner;
            let mut at = vec![];
            for (d, base) in [br, bc].into_iter().enumerate() {
                let k = self.i64(c[d] as i64);
                let x = self.bin("add", base, k);
                if shape[d] != space.dims[d] {
                    let n = self.i64(shape[d] as i64);
                    let inside = self.w.icmp(ICmp::Ult, x, n);
                    ok = Some(match ok {
                        Some(o) => self.w.and(o, inside),
                        None => inside,
                    });
                }
                at.push(x);
            }
            let row = self.bin("add", r0, at[0]);
            let col = self.bin("add", c0, at[1]);
            let rok = self.w.icmp(ICmp::Ult, row, t.sizes[0]);
            let cok = self.w.icmp(ICmp::Ult, col, t.sizes[1]);
            let mut pred = self.w.and(rok, cok);
            if let Some(o) = ok {
                pred = self.w.and(pred, o);
            }
            if let Some(m) = &mask {
                memo.reg.clear();
                let keep = self.eval(op, m, space, rho as usize, &mut memo)?;
                pred = self.w.and(pred, keep);
            }
            let p32 = self.w.zext(pred, ScalarType::I32);
            let ro = self.bin("mul", row, t.strides[0]);
            let co = self.bin("mul", col, t.strides[1]);
            let off = self.bin("add", ro, co);
            let boff = self.bin("mul", off, eb);
            let addr = self.bin("add", t.ptr, boff);
            memo.reg.clear();
            let x = self.eval(op, &val, space, rho as usize, &mut memo)?;
            let x = if reg == "h" {
                self.w.cast("llvm.bitcast", x.v, i16t)
            } else {
                x.v
            };
            // Inline asm: a predicated access, as the accumulator's slow path stores.
            self.w.inline_asm(
                &format!("{{ .reg .pred p; setp.ne.u32 p, $1, 0; @p {st} [$0], $2; }}"),
                &format!("l,r,{reg}"),
                &[addr.v, p32.v, x],
                None,
                true,
            );
        }
        Ok(())
    }
}

impl<'c, 'm> ReduceSite<'c, 'm> for Gemm<'c, 'm, '_> {
    fn writer(&mut self) -> &mut Writer<'c, 'm> {
        &mut self.w
    }

    fn coord(&mut self, layout: &LinearLayout, r: u64) -> Vec<V<'c, 'm>> {
        let lane = self.lane;
        let warp = self.consumer_warp();
        let t = self.w.thread_coord(layout, lane, warp);
        let rc = layout.register_coord(r);
        t.into_iter()
            .zip(rc)
            .map(|(c, x)| self.w.xor_const(c, x as i64))
            .collect()
    }

    fn warp_index(&mut self) -> V<'c, 'm> {
        self.consumer_warp()
    }

    fn flag_slot(&mut self, loc: &Location) -> R<u64> {
        if let Some(at) = self.flag_slot {
            return Ok(at);
        }
        let at = self.smem_region(16, loc)?;
        self.flag_slot = Some(at);
        Ok(at)
    }

    fn smem_region(&mut self, bytes: u64, loc: &Location) -> R<u64> {
        let max = self.target.max_smem_per_block();
        let at = self.smem_end.div_ceil(16) * 16;
        if at + bytes > max {
            let needed = at + bytes;
            let msg = format!(
                "the kernel's shared memory (its rings and the epilogue's reductions) needs \
                 {needed} bytes; a CTA has at most {max}"
            );
            return Err(smem_limit(loc, msg, needed, max));
        }
        self.smem_end = at + bytes;
        Ok(at)
    }

    fn sync(&mut self) {
        // After the per-warpgroup barriers 1 ..= consumer_wgs (`tile.named_barrier`).
        let id = self.i32(1 + self.consumer_wgs);
        let threads = 32 * self.consumer_warps();
        self.bar_sync(id, threads);
    }

    fn in_loop(&self) -> bool {
        self.loop_depth > 0
    }
}

impl Gemm<'_, '_, '_> {
    /// The consumer warps: 8 with mma.sync, 4 per consumer warpgroup with wgmma.
    fn consumer_warps(&self) -> i64 {
        if self.mma_sync {
            8
        } else {
            4 * self.consumer_wgs
        }
    }
}
