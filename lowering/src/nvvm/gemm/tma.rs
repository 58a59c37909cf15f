//! The tensor memory accelerator: `tile.tma_load` (`nvvm.cp.async.bulk.tensor.shared.
//! cluster.global`, one per 64-element-wide box), and the TMA-store epilogue:
//! `tile.smem_store` (`nvvm.stmatrix` into a 128-byte-swizzled staging slot) and
//! `tile.tma_store` (`nvvm.cp.async.bulk.tensor.global.shared.cta`, predicated on the
//! warpgroup's elected thread).

use super::epilogue::EvalMemo;
use super::{err, Gemm, Lv, R};
use crate::nvvm::writer::{ICmp, V};
use melior::ir::attribute::DenseI32ArrayAttribute;
use std::collections::HashMap;
use tilec_dialect::{Operation, ScalarType, Value as TileValue};

impl<'c, 'm> Gemm<'c, 'm, '_> {
    pub(super) fn lower_tma_load(&mut self, op: &Operation) -> R<()> {
        let Some(Lv::TensorMap(tm)) = self.vals.get(&op.operands[0]).cloned() else {
            return err(op, "TMA source is not a tensor map");
        };
        let ring = self.ring(op, op.operands[1], "the TMA destination")?;
        let bar = self.bar_addr(op, op.operands[2], op.operands[3])?;
        // A rank-r tensor is copied in boxes of (1, ..., 1, rows, one swizzle span of
        // columns): the ring's stage is the boxes without their leading unit dimensions.
        let rank = op.operands.len() - 4;
        if ring.shape.len() != 2 || !(2..=5).contains(&rank) {
            return err(
                op,
                "convert-tile-to-nvvm lowers TMA copies of 2-D stages from tensors of rank 2 to 5",
            );
        }
        let elem = ring.elem;
        // Boxes of one swizzle span of columns each (64 16-bit elements at 128 bytes, 32 at
        // 64), `rows` x span bytes apart in the stage.
        let span = ring.span(op)?;
        let box_cols = span / elem.size_bytes();
        if ring.shape[1] % box_cols != 0 {
            return err(
                op,
                format!(
                    "TMA stage inner dimension must be a multiple of {box_cols} {elem} elements \
                     ({span} bytes, the ring's swizzle)"
                ),
            );
        }
        let st = self.scalar(op, op.operands[3])?;
        let st32 = self.trunc32(st);
        let sb = self.i32(ring.stage_bytes as i64);
        let so = self.bin("mul", st32, sb);
        let base_c = self.i32(ring.offset as i64);
        let mut base = self.bin("add", so, base_c);
        // cp.async.bulk.tensor takes the coordinates innermost first.
        let mut coords32 = vec![];
        for &c in &op.operands[4..] {
            let v = self.scalar(op, c)?;
            coords32.push(self.trunc32(v));
        }
        coords32.reverse();
        // Multicast along cluster dimension d: the n CTAs that differ only along d each copy
        // rows [i·R/n, (i+1)·R/n) of every box (i = %cluster_ctaid along d) into all n.
        let mut mask = None;
        if let Some(d) = op.int_attr("multicast") {
            let d = d.clamp(0, 2) as usize;
            let n = self.cluster[d] as u64;
            if n < 2 || ring.shape[0] % (8 * n) != 0 {
                return err(
                    op,
                    format!(
                        "convert-tile-to-nvvm: a multicast copy splits the stage's {} rows \
                         among the cluster's {n} CTAs along dimension {d} in whole 8-row \
                         swizzle atoms",
                        ring.shape[0]
                    ),
                );
            }
            let part = ring.shape[0] / n;
            let (id, stride, first) = self.cluster_line(d);
            let rows = self.i32(part as i64);
            let r0 = self.bin("mul", id, rows);
            coords32[1] = self.bin("add", coords32[1], r0);
            let pb = self.i32((part * span) as i64);
            let off = self.bin("mul", id, pb);
            base = self.bin("add", base, off);
            // The line's ranks: first + j·stride for j < n.
            let pattern: i64 = (0..n as i64).map(|j| 1 << (j * stride)).sum();
            let pat = self.i32(pattern);
            let m32 = self.bin("shl", pat, first);
            let i16t = self.w.int_ty(16);
            mask = Some(self.w.cast("llvm.trunc", m32.v, i16t));
        }
        let inner32 = coords32[0];
        let boxes = ring.shape[1] / box_cols;
        let box_bytes = ring.shape[0] * span;
        for j in 0..boxes {
            let d = if j == 0 {
                base
            } else {
                let c = self.i32((j * box_bytes) as i64);
                self.bin("add", base, c)
            };
            let p = self.gep3(d);
            let ij = if j == 0 {
                inner32
            } else {
                let c = self.i32((box_cols * j) as i64);
                self.bin("add", inner32, c)
            };
            let mut at = vec![ij.v];
            at.extend(coords32[1..].iter().map(|c| c.v));
            self.w.tma_load_box(p, tm, &at, bar, mask);
        }
        Ok(())
    }

    /// Shared-memory byte address (i32) of slot `slot` (an index operand) of ring `ring`,
    /// with the ring's shape and element type.
    fn slot_addr(
        &mut self,
        op: &Operation,
        ring: TileValue,
        slot: TileValue,
    ) -> R<(V<'c, 'm>, Vec<u64>, ScalarType)> {
        let r = self.ring(
            op,
            ring,
            &format!("'{}': the staging buffer", op.kind.name()),
        )?;
        let s = self.scalar(op, slot)?;
        let s32 = self.trunc32(s);
        let sb = self.i32(r.stage_bytes as i64);
        let so = self.bin("mul", s32, sb);
        let base = self.i32(r.offset as i64);
        let o = self.bin("add", so, base);
        Ok((self.bin("add", self.smem_i32, o), r.shape, r.elem))
    }

    /// The staging ring of a `tile.smem_store` / `tile.tma_store` must be 128-byte
    /// swizzled: the `stmatrix` addressing and the C tensor map (`"swizzle": "128B"`)
    /// assume it.
    fn staging_is_swizzled(&self, op: &Operation) -> R<()> {
        match self.ring_swizzle.get(&op.operands[1]) {
            Some(128) => Ok(()),
            Some(s) => err(
                op,
                format!(
                    "convert-tile-to-nvvm: '{}' needs a staging ring with swizzle = 128 (the \
                     stmatrix addressing and the C tensor map assume it), found swizzle = {s}",
                    op.kind.name()
                ),
            ),
            None => err(
                op,
                format!(
                    "convert-tile-to-nvvm: '{}': the staging ring is not a 'tile.smem_alloc' \
                     of this kernel",
                    op.kind.name()
                ),
            ),
        }
    }

    /// `tile.smem_store`: the warpgroup's 64 rows of columns [col_offset, col_offset + 64)
    /// of an accumulator-shaped 16-bit tile into a 128-byte-swizzled staging slot (row r of
    /// the slot at r·128 bytes, 16-byte chunk c at (c xor r mod 8)·16: the layout a
    /// 128B-swizzle TMA box of 64 16-bit columns reads), with
    /// `stmatrix.sync.aligned.m8n8.x4.shared.b16`. Each 8x8 matrix of a wgmma fragment is
    /// (row half h, column group g): lane l holds its row l/4, columns 2(l mod 4) and +1 as
    /// registers v = 4g + 2h and v + 1 — stmatrix's fragment layout. One x4 stores the 4
    /// matrices of column groups g, g+1; lane l gives the address of row l mod 8 of matrix
    /// l/8. The rows differ mod 8 across the 8 lanes of a matrix, so the swizzle puts them
    /// in 8 different 16-byte bank groups: conflict-free.
    pub(super) fn lower_smem_store(&mut self, op: &Operation) -> R<()> {
        if self.mma_sync || self.frag_rc.is_none() {
            return err(
                op,
                "convert-tile-to-nvvm: 'tile.smem_store' is lowered for wgmma accumulators \
                 (sm_90a) in the consumer region only",
            );
        }
        self.staging_is_swizzled(op)?;
        let (addr, shape, elem) = self.slot_addr(op, op.operands[1], op.operands[2])?;
        if elem.size_bytes() != 2 || shape.len() != 2 || shape[1] != 64 {
            return err(
                op,
                format!(
                    "convert-tile-to-nvvm: 'tile.smem_store' writes slots of 64 16-bit columns \
                     (one 128-byte swizzled row), found {} x {elem}",
                    shape
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join("x")
                ),
            );
        }
        let val = self.lazy_of(op, op.operands[0])?;
        if val.elem() != elem {
            return err(
                op,
                "'tile.smem_store': the tile's element type differs from the ring's",
            );
        }
        let col_offset = op.int_attr("col_offset").unwrap_or(0) as usize;
        let cwg = self.cwg.expect("checked");
        let (lane, w) = (self.lane, self.warp_in_wg);
        let (c3, c4, c7, c64, c16, c128) = (
            self.i32(3),
            self.i32(4),
            self.i32(7),
            self.i32(64),
            self.i32(16),
            self.i32(128),
        );
        let one = self.i32(1);
        // row = 64 cwg + 16 w + 8 ((l >> 3) & 1) + (l & 7)
        let r0 = self.bin("mul", cwg, c64);
        let r1 = self.bin("mul", w, c16);
        let l3 = self.bin("lshr", lane, c3);
        let h = self.bin("and", l3, one);
        let h8 = self.bin("shl", h, c3);
        let lr = self.bin("and", lane, c7);
        let a = self.bin("add", r0, r1);
        let b = self.bin("add", a, h8);
        let row = self.bin("add", b, lr);
        let rowb = self.bin("mul", row, c128);
        let rowaddr = self.bin("add", addr, rowb);
        // chunk base = (l >> 4) xor (l & 7); column group pair q adds 2q (xor: disjoint bits).
        let hi = self.bin("lshr", lane, c4);
        let cx = self.bin("xor", hi, lr);
        let et = self.w.ty(elem);
        let v2 = self.w.vector_ty(2, et);
        let u2 = self.w.undef(v2);
        let i0 = self.i32(0);
        let i32t = self.w.ty(ScalarType::I32);
        let stmatrix = [
            ("eltType", self.w.attr("#nvvm.ld_st_matrix_elt_type<b16>")),
            ("layout", self.w.attr("#nvvm.mma_layout<row>")),
            (
                "shape",
                self.w.attr("#nvvm.ld_st_matrix_shape<m = 8, n = 8>"),
            ),
        ];
        let space = self.acc_layout(op)?;
        let mut memo = EvalMemo {
            reg: HashMap::new(),
            loads: Some(HashMap::new()),
            opaque_acc: false,
        };
        for q in 0..4usize {
            let chunk = if q == 0 {
                cx
            } else {
                let c = self.i32(2 * q as i64);
                self.bin("xor", cx, c)
            };
            let cb = self.bin("shl", chunk, c4);
            let p = self.bin("add", rowaddr, cb);
            let g = col_offset / 8 + 2 * q;
            let mut regs = vec![p.v];
            for i in 0..4usize {
                let v = 4 * g + 2 * i;
                memo.reg.clear();
                let x0 = self.eval(op, &val, &space, v, &mut memo)?;
                memo.reg.clear();
                let x1 = self.eval(op, &val, &space, v + 1, &mut memo)?;
                let vec = self.w.insert_element(u2, x0.v, i0);
                let vec = self.w.insert_element(vec, x1.v, one);
                regs.push(self.w.cast("llvm.bitcast", vec, i32t));
            }
            let p3 = self.w.ptr_ty(3);
            regs[0] = self.w.cast("llvm.inttoptr", regs[0], p3);
            self.w.op("nvvm.stmatrix", &regs, &[], &stmatrix);
        }
        Ok(())
    }

    /// `tile.tma_store`: consumer warpgroup w's elected thread copies its 64 rows of the
    /// slot (at slot + w·64·128 bytes) to the tensor at (..., row + 64 w, col) with
    /// `cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group` (N the tensor's rank, 2 to 5:
    /// a 64x64 box of the tensor map, 1 in the leading dimensions; 128-byte swizzle); TMA
    /// clips what lies outside the tensor, and a box wholly before the tensor's start (row
    /// or column at or below minus the box's extent) is not issued.
    pub(super) fn lower_tma_store(&mut self, op: &Operation) -> R<()> {
        self.staging_is_swizzled(op)?;
        let Some(Lv::TensorMap(tm)) = self.vals.get(&op.operands[0]).cloned() else {
            return err(op, "'tile.tma_store': the destination is not a tensor map");
        };
        let rank = op.operands.len().saturating_sub(3);
        if !(2..=5).contains(&rank) {
            return err(
                op,
                "convert-tile-to-nvvm lowers TMA stores into tensors of rank 2 to 5 (TMA's \
                 dimensions)",
            );
        }
        let Some(cwg) = self.cwg else {
            return err(
                op,
                "convert-tile-to-nvvm: 'tile.tma_store' is lowered in the consumer region of \
                 'tile.warp_specialize' only",
            );
        };
        let (addr, shape, elem) = self.slot_addr(op, op.operands[1], op.operands[2])?;
        let rows = shape[0] as i64 / self.consumer_wgs.max(1);
        let row_bytes = (shape[1] * elem.size_bytes()) as i64;
        let part = self.i32(rows * row_bytes);
        let po = self.bin("mul", cwg, part);
        let src = self.bin("add", addr, po);
        let row = self.scalar(op, op.operands[rank + 1])?;
        let col = self.scalar(op, op.operands[rank + 2])?;
        // Coordinates innermost first: column, row, then the leading dimensions.
        let mut outer = vec![];
        for &v in op.operands[3..rank + 1].iter().rev() {
            let x = self.scalar(op, v)?;
            outer.push(self.trunc32(x).v);
        }
        let row32 = self.trunc32(row);
        let col32 = self.trunc32(col);
        let rc = self.i32(rows);
        let ro = self.bin("mul", cwg, rc);
        let r = self.bin("add", row32, ro);
        let p = self.elected();
        let z = self.i32(0);
        let go = self.w.icmp(ICmp::Ne, p, z);
        // A box wholly before the tensor's start (a coordinate at or below minus its extent)
        // writes nothing, so it is not issued: the persistent schedule parks the tile of a
        // cluster's CTA past the grid at coordinate -2^30, and such a store faulted on an
        // H100 (illegal instruction).
        let lo_r = self.i32(-rows);
        let lo_c = self.i32(-(shape[1] as i64));
        let in_r = self.w.icmp(ICmp::Sgt, r, lo_r);
        let in_c = self.w.icmp(ICmp::Sgt, col32, lo_c);
        let go = self.bin("and", go, in_r);
        let go = self.bin("and", go, in_c);
        let src = self.w.cast("llvm.inttoptr", src.v, self.w.ptr_ty(3));
        let segments = DenseI32ArrayAttribute::new(self.w.ctx, &[1, 1, rank as i32, 0, 1]).into();
        let mode = self.w.attr("#nvvm.tma_store_mode<tile>");
        let mut operands = vec![tm, src, col32.v, r.v];
        operands.extend(outer);
        operands.push(go.v);
        self.w.op(
            "nvvm.cp.async.bulk.tensor.global.shared.cta",
            &operands,
            &[],
            &[("operandSegmentSizes", segments), ("mode", mode)],
        );
        Ok(())
    }
}
