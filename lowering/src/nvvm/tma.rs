//! The tensor memory accelerator in a kernel with a plain launch: the ops
//! `tile-pipeline-loads` leaves (PTX ISA §9.7.9.25, `cp.async.bulk.tensor`; §9.7.13.15,
//! `mbarrier`).
//!
//! - `tile.mbarrier_alloc {arrive_count = n} : mbarrier<S>`: `S` 8-byte barriers in the
//!   dynamic shared memory, initialised by thread 0 (`mbarrier.init.shared.b64`), then
//!   `fence.mbarrier_init.release.cluster` and a CTA barrier. Inside a loop (a persistent
//!   kernel's tile loop runs the pipelined loop again) a CTA barrier comes first as well, so
//!   no thread still waits on a phase of the previous run when the barriers are reset.
//! - `tile.mbarrier_expect_tx` and `tile.tma_load`: thread 0 alone, as
//!   `mbarrier.arrive.expect_tx.shared.b64` and one
//!   `cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes` per box
//!   of 128 bytes of columns (the 128-byte swizzle's span): a `[R][C]` stage is `C·size/128`
//!   boxes of `[1, ..., 1, R, 128/size]`, box `j` at `j·R·128` bytes in the stage, the
//!   layout `tile.smem_store` writes and wgmma's descriptors read
//!   ([`super::wgmma`]). The tensor is a `CUtensorMap` parameter whose box the manifest
//!   records; TMA fills what lies outside the tensor with zeros.
//! - `tile.mbarrier_wait`: every thread that runs it (thread 0 alone in the scheduler's
//!   code, [`super::clc`]), `mbarrier.try_wait.parity` in a loop.
//! - An array `{per_cta = true}` and a cluster launch: see [`super::clc`].

use super::plain::{err, Lowerer, Lv, R};
use super::writer::{ICmp, V};
use melior::ir::Value;
use tilec_dialect::{Attribute as TileAttr, Operation, ScalarType, Type, Value as TileValue};

/// Bytes of columns one TMA box copies: the 128-byte swizzle's span.
const BOX_BYTES: u64 = 128;

/// Cycles hint of one `mbarrier.try_wait.parity` (the op loops until the phase completes).
const TRY_WAIT_TICKS: i64 = 10_000_000;

/// The TMA box (outermost first) that copies a `[rows, cols]` stage of `elem` from a
/// tensor of rank `rank`: `[1, ..., 1, rows, 128 / size]`.
pub(crate) fn tma_box(rank: u32, stage: [u64; 2], elem: ScalarType) -> Vec<u64> {
    let mut b = vec![1; (rank as usize).saturating_sub(2)];
    b.extend([stage[0], (BOX_BYTES / elem.size_bytes()).min(stage[1])]);
    b
}

impl<'c, 'm> Lowerer<'c, 'm, '_> {
    /// Whether this thread is thread 0 of the CTA (i1).
    fn thread0(&mut self) -> V<'c, 'm> {
        let (lane, warp) = (self.lane, self.warp);
        self.in_prologue(|w| {
            let x = w.bin("or", lane, warp);
            let z = w.i32(0);
            w.icmp(ICmp::Eq, x, z)
        })
    }

    /// Runs `body` on thread 0 only (as it is, in the scheduler's code, which only thread 0
    /// runs).
    pub(super) fn on_thread0(&mut self, body: impl FnOnce(&mut Self) -> R<()>) -> R<()> {
        if self.scheduler {
            return body(self);
        }
        let t0 = self.thread0();
        let go = self.w.block(&[]);
        let cont = self.w.block(&[]);
        self.w.cond_br(t0, &go, &[], &cont, &[]);
        self.w.place(go);
        body(self)?;
        self.w.br(&cont, &[]);
        self.w.place(cont);
        Ok(())
    }

    /// `tile.mbarrier_alloc`.
    pub(super) fn lower_mbarrier_alloc(&mut self, op: &Operation) -> R<()> {
        let (Some(&r), Some(&Type::Mbarrier { count })) = (
            op.results.first(),
            op.results.first().map(|&r| self.m.ty(r)),
        ) else {
            return err(op, "'tile.mbarrier_alloc' without an mbarrier result");
        };
        let mut arrive = op.int_attr("arrive_count").unwrap_or(1);
        if op.attr("per_cta").and_then(TileAttr::as_bool) == Some(true) {
            arrive *= self.num_warps as i64;
        }
        let offset = self.smem_region_aligned(8 * count, 8, &op.loc)?;
        if self.in_loop() {
            self.w.barrier();
        }
        self.on_thread0(|l| {
            for s in 0..count {
                let p = l.bar_at(offset + 8 * s);
                let c = l.w.i32(arrive);
                l.w.op("nvvm.mbarrier.init", &[p, c.v], &[], &[]);
            }
            l.w.op("nvvm.fence.mbarrier.init", &[], &[], &[]);
            Ok(())
        })?;
        self.w.barrier();
        if self.cluster_visible.contains(&r) {
            self.w.cluster_barrier(false);
        }
        self.vals.insert(r, Lv::Bars { offset });
        Ok(())
    }

    /// The shared-memory pointer of the barrier at byte `offset`.
    fn bar_at(&mut self, offset: u64) -> Value<'c, 'm> {
        let o = self.w.i32(offset as i64);
        self.w.smem_addr(o)
    }

    /// The shared-memory pointer of barrier `idx` (an index value) of array `bars`.
    pub(super) fn bar_addr(
        &mut self,
        op: &Operation,
        bars: TileValue,
        idx: TileValue,
    ) -> R<Value<'c, 'm>> {
        let Lv::Bars { offset } = self.get(op, bars)? else {
            return err(op, "expected an mbarrier array ('tile.mbarrier_alloc')");
        };
        let i = self.scalar(op, idx)?;
        let i = self.w.trunc(i, ScalarType::I32);
        let c3 = self.w.i32(3);
        let sh = self.w.bin("shl", i, c3);
        let at = self.w.add_const(sh, offset as i64);
        Ok(self.w.smem_addr(at))
    }

    /// `tile.mbarrier_wait %bars, %idx, %parity`.
    pub(super) fn lower_mbarrier_wait(&mut self, op: &Operation) -> R<()> {
        let a = self.bar_addr(op, op.operands[0], op.operands[1])?;
        let p = self.scalar(op, op.operands[2])?;
        let p = self.w.trunc(p, ScalarType::I32);
        let t = self.w.i32(TRY_WAIT_TICKS);
        self.w
            .op("nvvm.mbarrier.try_wait.parity", &[a, p.v, t.v], &[], &[]);
        Ok(())
    }

    /// `tile.mbarrier_expect_tx %bars, %idx {bytes}`.
    pub(super) fn lower_expect_tx(&mut self, op: &Operation) -> R<()> {
        let a = self.bar_addr(op, op.operands[0], op.operands[1])?;
        let bytes = op.int_attr("bytes").unwrap_or(0);
        self.on_thread0(|l| {
            let b = l.w.i32(bytes);
            l.w.op("nvvm.mbarrier.arrive.expect_tx", &[a, b.v], &[], &[]);
            Ok(())
        })
    }

    /// `tile.tma_load %T, %ring, %bars, %stage, %coords...`.
    pub(super) fn lower_tma_load(&mut self, op: &Operation) -> R<()> {
        let Lv::TensorMap(tm) = self.get(op, op.operands[0])? else {
            return err(op, "internal error: the TMA source is not a tensor map");
        };
        let Lv::Smem(buf) = self.get(op, op.operands[1])? else {
            return err(
                op,
                "'tile.tma_load' copies into a shared-memory ring ('tile.smem_alloc')",
            );
        };
        if let (Type::Smem { stages, .. }, Type::Mbarrier { count }) =
            (self.m.ty(op.operands[1]), self.m.ty(op.operands[2]))
        {
            if stages != count {
                return err(
                    op,
                    format!(
                        "'tile.tma_load' copies into a ring of {stages} stage(s) with {count} \
                         mbarrier(s): a kernel with a plain launch completes stage s on \
                         barrier s, so the counts must be equal"
                    ),
                );
            }
        }
        if op.attr("multicast").is_some() {
            return err(
                op,
                "'tile.tma_load' with 'multicast' is lowered in GEMM kernels (tile-to-gpu's \
                 warp-specialized loop), not in a kernel with a plain launch",
            );
        }
        let bar = self.bar_addr(op, op.operands[2], op.operands[3])?;
        let rank = op.operands.len() - 4;
        let esize = buf.elem.size_bytes();
        let box_cols = BOX_BYTES / esize;
        if !(2..=5).contains(&rank) || buf.shape[0] > 256 || buf.shape[1] % box_cols != 0 {
            return err(
                op,
                format!(
                    "'tile.tma_load' in a kernel with a plain launch copies stages of at most \
                     256 rows whose columns are whole {BOX_BYTES}-byte rows ({box_cols} \
                     {}), from tensors of rank 2 to 5",
                    buf.elem
                ),
            );
        }
        let stage = self.scalar(op, op.operands[3])?;
        let st = self.w.trunc(stage, ScalarType::I32);
        let sb = self.w.i32(buf.stage_bytes as i64);
        let so = self.w.mul(st, sb);
        let base = self.w.add_const(so, buf.offset as i64);
        // cp.async.bulk.tensor takes the coordinates innermost first.
        let mut coords = vec![];
        for &c in op.operands[4..].iter().rev() {
            let v = self.scalar(op, c)?;
            coords.push(self.w.trunc(v, ScalarType::I32));
        }
        let boxes = buf.shape[1] / box_cols;
        let box_bytes = buf.shape[0] * BOX_BYTES;
        self.on_thread0(|l| {
            for j in 0..boxes {
                let d = l.w.add_const(base, (j * box_bytes) as i64);
                let p = l.w.smem_addr(d);
                let inner = l.w.add_const(coords[0], (j * box_cols) as i64);
                let mut at = vec![inner.v];
                at.extend(coords[1..].iter().map(|c| c.v));
                l.w.tma_load_box(p, tm, &at, bar, None);
            }
            Ok(())
        })
    }
}
