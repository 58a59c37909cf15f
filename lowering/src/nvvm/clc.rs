//! The work-stealing loop of `persistent{schedule=clc}` in a kernel with a plain launch:
//! Blackwell's cluster launch control (PTX ISA 8.6, §9.7.13.16, `clusterlaunchcontrol`) and
//! the mbarriers around it (§9.7.13.15). The protocol itself is the `persistent` pass's
//! (its module docs); this module gives its ops their meaning when every thread of the CTA
//! runs the kernel body (no producer warp):
//!
//! - **Roles.** An op with `role = "scheduler"` runs on thread 0 alone, the CTA's scheduler
//!   (what it holds in registers no other thread has, so such an op has no results; and it
//!   may not be a CTA-, warpgroup- or warp-wide operation: a barrier, an mbarrier
//!   allocation, an MMA, tile values). Every other op, `role = "all"` included, runs on
//!   every thread.
//! - `tile.smem_alloc` without `swizzle`: plain bytes, each stage 16-byte aligned (the
//!   try_cancel response slots).
//! - `tile.mbarrier_arrive %bars, %i {cta = r}`: one arrive per warp — `bar.warp.sync`
//!   orders the lanes' reads before lane 0's arrive, which releases them — or, in the
//!   scheduler's code, thread 0's one arrive. With `cta`, the arrive goes to CTA `r`'s
//!   barrier at cluster scope (`mapa`). An mbarrier array `{per_cta = true}` counts
//!   arrivals per CTA: its `arrive_count` is multiplied by the warps, the arrivals one CTA
//!   makes.
//! - `tile.clc_try_cancel` and `tile.clc_query`: the writer's `clc_try_cancel` and
//!   `clc_query` on a 16-byte slot of the response buffer; the query's ids are
//!   zero-extended to `index`.
//! - `tile.cluster_cta_rank`: `%cluster_ctarank`.
//! - A kernel with `cluster = [x, y, z]` (more than one CTA) gets `nvvm.cluster_dim`; each
//!   mbarrier array allocated at the kernel's top level is followed by a cluster barrier
//!   (peers arrive on it and multicast into this CTA's slots only once it is initialised;
//!   a barrier peers touch must be allocated there), and the kernel
//!   ends with one (no CTA exits while a peer may still write into its shared memory).

use super::plain::{err, Lowerer, Lv, R};
use super::writer::{ICmp, V};
use tilec_dialect::{
    Attribute as TileAttr, Module as TileModule, OpClass, OpKind, Operation, ScalarType, Type,
};

/// In a cluster launch (`cluster_size > 1`), the mbarrier arrays at the kernel's top level:
/// those get a cluster barrier after their initialisation.
///
/// # Errors
/// A barrier that peers touch (an arrive with `cta`, the barrier of a multicast try_cancel)
/// allocated inside a loop or branch, where no cluster barrier can order its
/// initialisation before the peers' accesses, located at the op that touches it.
pub(super) fn cluster_barriers(
    k: &Operation,
    cluster_size: i64,
) -> R<std::collections::HashSet<tilec_dialect::Value>> {
    if cluster_size <= 1 {
        return Ok(Default::default());
    }
    let top: std::collections::HashSet<_> = k.regions[0]
        .ops
        .iter()
        .filter(|o| o.kind == OpKind::MbarrierAlloc)
        .filter_map(|o| o.results.first().copied())
        .collect();
    let mut bad = None;
    k.walk(&mut |o| {
        let touched = match o.kind {
            OpKind::MbarrierArrive if o.attr("cta").is_some() => o.operands.first(),
            OpKind::ClcTryCancel
                if o.attr("multicast").and_then(TileAttr::as_bool) == Some(true) =>
            {
                o.operands.get(1)
            }
            _ => None,
        };
        if let Some(b) = touched {
            if !top.contains(b) && bad.is_none() {
                bad = Some(o.clone());
            }
        }
    });
    match bad {
        Some(o) => err(
            &o,
            format!(
                "'{}' touches a peer CTA's mbarrier, which in a cluster launch must be \
                 allocated at the kernel's top level (a cluster barrier then orders its \
                 initialisation before every peer's access)",
                o.kind.name()
            ),
        ),
        None => Ok(top),
    }
}

/// Bytes of one try_cancel response (PTX ISA 8.6: an opaque 16-byte value).
const RESPONSE_BYTES: u64 = 16;

/// Whether thread 0 alone may run an op of kind `k` in the scheduler's code: scalar
/// arithmetic, control flow, and the one-thread synchronisation ops.
pub(super) fn scheduler_may_run(k: OpKind) -> bool {
    k.class() == OpClass::IntBinary
        || matches!(
            k,
            OpKind::Constant
                | OpKind::CmpI
                | OpKind::If
                | OpKind::For
                | OpKind::Yield
                | OpKind::MbarrierWait
                | OpKind::MbarrierExpectTx
                | OpKind::MbarrierArrive
                | OpKind::FenceProxyAsync
                | OpKind::ClcTryCancel
                | OpKind::TmaLoad
        )
}

/// Refuses, at the op, a `role = "scheduler"` op that one thread cannot run for all: one
/// with results (no other thread would have them), or one holding an op that
/// [`scheduler_may_run`] refuses or that touches a tile. `scheduler` names the thread, as in
/// "thread 0 alone in a kernel with a plain launch".
pub(super) fn check_scheduler_code(m: &TileModule, op: &Operation, scheduler: &str) -> R<()> {
    if !op.results.is_empty() {
        return err(
            op,
            format!(
                "'{}' with role = \"scheduler\" has results: the scheduler is {scheduler}, and \
                 no other thread would have them",
                op.kind.name()
            ),
        );
    }
    let mut bad = None;
    op.walk(&mut |o| {
        let tiles = o
            .results
            .iter()
            .chain(&o.operands)
            .any(|&v| matches!(m.ty(v), Type::Tile { .. }));
        if (tiles || !scheduler_may_run(o.kind)) && bad.is_none() {
            bad = Some(o);
        }
    });
    match bad {
        None => Ok(()),
        Some(o) => err(
            o,
            format!(
                "'{}' cannot run in the scheduler's code (role = \"scheduler\": {scheduler}): \
                 only scalar arithmetic, 'tile.if', 'tile.for', and mbarrier, fence, TMA and \
                 try_cancel ops can",
                o.kind.name()
            ),
        ),
    }
}

impl<'c, 'm> Lowerer<'c, 'm, '_> {
    /// An op with `role = "scheduler"` (module docs): on thread 0 alone.
    pub(super) fn lower_scheduler_op(&mut self, op: &Operation) -> R<()> {
        check_scheduler_code(self.m, op, "thread 0 alone in a kernel with a plain launch")?;
        self.on_thread0(|l| {
            l.scheduler = true;
            let r = l.lower_op(op);
            l.scheduler = false;
            r
        })
    }

    /// `tile.smem_alloc` without `swizzle`: `stages` slots of plain bytes, 16-byte aligned.
    pub(super) fn lower_raw_smem_alloc(&mut self, op: &Operation) -> R<()> {
        let (r, stages, shape, elem) = self.smem_result(op)?;
        let bytes = shape.iter().product::<u64>() * elem.size_bytes();
        let stage_bytes = bytes.div_ceil(16) * 16;
        let offset = self.smem_region_aligned(stages * stage_bytes, 16, &op.loc)?;
        self.vals.insert(
            r,
            Lv::RawSmem {
                offset,
                stage_bytes,
            },
        );
        Ok(())
    }

    /// The shared-memory byte offset (i32) of slot `operands[last]` of the response buffer
    /// `operands[0]`.
    fn response_slot(&mut self, op: &Operation) -> R<V<'c, 'm>> {
        let Lv::RawSmem {
            offset,
            stage_bytes,
        } = self.get(op, op.operands[0])?
        else {
            return err(
                op,
                "a try_cancel response lives in a 'tile.smem_alloc' without swizzle",
            );
        };
        if stage_bytes != RESPONSE_BYTES {
            return err(
                op,
                format!(
                    "a try_cancel response slot is {RESPONSE_BYTES} bytes (smem<Nx4xi32>); \
                     this buffer's slots are {stage_bytes}"
                ),
            );
        }
        let idx = op.operands.last().copied().unwrap_or(op.operands[0]);
        let slot = self.scalar(op, idx)?;
        let s = self.w.trunc(slot, ScalarType::I32);
        let c4 = self.w.i32(4);
        let at = self.w.bin("shl", s, c4);
        Ok(self.w.add_const(at, offset as i64))
    }

    /// `tile.clc_try_cancel %resp, %bars, %slot {multicast}`.
    pub(super) fn lower_try_cancel(&mut self, op: &Operation) -> R<()> {
        let at = self.response_slot(op)?;
        let slot = self.w.smem_addr(at);
        let bar = self.bar_addr(op, op.operands[1], op.operands[2])?;
        let multicast = op.attr("multicast").and_then(TileAttr::as_bool) == Some(true);
        self.on_thread0(|l| {
            l.w.clc_try_cancel(slot, bar, multicast);
            Ok(())
        })
    }

    /// `%ok, %x, %y, %z = tile.clc_query %resp, %slot`, on every thread that runs it.
    pub(super) fn lower_clc_query(&mut self, op: &Operation) -> R<()> {
        let bits = op.int_attr("load_bits").unwrap_or(128);
        if bits != 128 || op.results.len() != 4 {
            return err(
                op,
                format!(
                    "a try_cancel response is an opaque 128-bit value read with one \
                     ld.shared.b128 into a flag and three ids; load_bits = {bits} with {} \
                     results is not lowered",
                    op.results.len()
                ),
            );
        }
        let at = self.response_slot(op)?;
        let p = self.w.smem_addr(at);
        let i32t = self.w.ty(ScalarType::I32);
        let addr = V {
            v: self.w.cast("llvm.ptrtoint", p, i32t),
            t: ScalarType::I32,
        };
        let (ok, ids) = self.w.clc_query(addr);
        self.vals.insert(op.results[0], Lv::Scalar(ok));
        for (d, x) in ids.into_iter().enumerate() {
            let x = self.w.zext(x, ScalarType::Index);
            self.vals.insert(op.results[d + 1], Lv::Scalar(x));
        }
        Ok(())
    }

    /// `tile.mbarrier_arrive %bars, %idx {cta}`: one arrive per warp (module docs).
    pub(super) fn lower_arrive(&mut self, op: &Operation) -> R<()> {
        let a = self.bar_addr(op, op.operands[0], op.operands[1])?;
        let cta = op.int_attr("cta");
        if self.scheduler {
            self.w.mbarrier_arrive(a, cta);
            return Ok(());
        }
        let all = self.w.i32(-1);
        self.w.op("nvvm.bar.warp.sync", &[all.v], &[], &[]);
        let z = self.w.i32(0);
        let l0 = self.w.icmp(ICmp::Eq, self.lane, z);
        let go = self.w.block(&[]);
        let cont = self.w.block(&[]);
        self.w.cond_br(l0, &go, &[], &cont, &[]);
        self.w.place(go);
        self.w.mbarrier_arrive(a, cta);
        self.w.br(&cont, &[]);
        self.w.place(cont);
        Ok(())
    }

    /// `tile.cluster_cta_rank`: `%cluster_ctarank` as an index.
    /// `tile.cluster_ctarank`, `tile.cluster_ctaid`, `tile.clusterid` and
    /// `tile.nclusterid`: the special registers `%cluster_ctarank`, `%cluster_ctaid.{x,y,z}`,
    /// `%clusterid.{x,y,z}` and `%nclusterid.{x,y,z}` (PTX ISA §10.23–10.26), as `index`.
    pub(super) fn lower_cluster_cta_rank(&mut self, op: &Operation) -> R<()> {
        let Some(&r) = op.results.first() else {
            return err(op, format!("'{}' without a result", op.kind.name()));
        };
        let rank = self.w.sreg(&crate::nvvm::cluster_sreg(op));
        let rank = self.w.zext(rank, ScalarType::Index);
        self.vals.insert(r, Lv::Scalar(rank));
        Ok(())
    }
}
