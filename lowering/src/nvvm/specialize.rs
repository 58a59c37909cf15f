//! `tile.warp_specialize` in a kernel with a plain launch (`tile-pipeline-loads
//! warp-specialize=true` writes it): one producer warpgroup beside the consumers.
//!
//! - **Launch.** The kernel's `num_warps` are the consumers (the layouts are theirs); the
//!   producer warpgroup comes after them, so a CTA has `32 · num_warps + 128` threads and
//!   the consumers' lane and warp numbers are those the layouts assume.
//! - **Before the op** every thread runs the kernel (the mbarrier initialisations and their
//!   CTA barrier).
//! - **Region 0, the producer,** runs on the producer's first thread alone, with the
//!   one-thread meaning of the synchronisation ops that the scheduler's code of
//!   [`super::clc`] has: scalar arithmetic, `tile.for`, `tile.if`, mbarrier waits,
//!   expect_tx and arrives, and TMA copies. On a target with `setmaxnreg` the producer
//!   warpgroup first gives up registers (`Target::setmaxnreg_split`). Its threads then
//!   return.
//! - **Region 1, the consumers,** runs on the other warps, which take the registers the
//!   producer gave up. Every CTA barrier from here on is `bar.sync 0, 32 · num_warps`: the
//!   producer's threads take no part in it.
//!
//! PTX ISA §9.7.19.5 (`setmaxnreg`), §9.7.13.1 (`bar.sync` with a thread count).

use super::plain::{err, Lowerer, R};
use super::writer::ICmp;
use tilec_dialect::{OpKind, Operation};

/// Threads of the producer warpgroup.
const PRODUCER_THREADS: u64 = 128;

/// The producer's warps in kernel `k` with `num_warps` consumer warps: 4 where its body
/// holds a `tile.warp_specialize`, else 0.
///
/// # Errors
/// A `tile.warp_specialize` that is not directly in the kernel body, a second one, one whose
/// `consumers` are not the kernel's `num_warps` / 4, or one in a cluster launch; located at
/// the op.
pub(super) fn producer_warps(k: &Operation, num_warps: u64, cluster_size: i64) -> R<u64> {
    let top: Vec<&Operation> = k.regions[0]
        .ops
        .iter()
        .filter(|o| o.kind == OpKind::WarpSpecialize)
        .collect();
    let mut all = vec![];
    k.walk(&mut |o| {
        if o.kind == OpKind::WarpSpecialize {
            all.push(o);
        }
    });
    if let Some(o) = all
        .iter()
        .find(|o| !top.iter().any(|t| std::ptr::eq(*t, **o)))
    {
        return err(
            o,
            "in a kernel with a plain launch, 'tile.warp_specialize' must be directly in the \
             kernel body (the producer's threads return at its end)",
        );
    }
    let Some(ws) = top.first() else {
        return Ok(0);
    };
    if let Some(second) = top.get(1) {
        return err(
            second,
            "a kernel with a plain launch holds at most one 'tile.warp_specialize'",
        );
    }
    let consumers = ws.int_attr("consumers").unwrap_or(1);
    if !num_warps.is_multiple_of(4) || consumers as u64 * 4 != num_warps {
        return err(
            ws,
            format!(
                "'tile.warp_specialize' has {consumers} consumer warpgroup(s) but the kernel's \
                 num_warps is {num_warps}: in a plain launch the consumers are the kernel's \
                 warps, whole warpgroups"
            ),
        );
    }
    if cluster_size > 1 {
        return err(
            ws,
            "'tile.warp_specialize' in a cluster launch is not lowered in a kernel with a \
             plain launch",
        );
    }
    if ws.regions.len() != 2 {
        return err(
            ws,
            "'tile.warp_specialize' needs a producer and a consumer region",
        );
    }
    let mut bad = None;
    for o in &ws.regions[0].ops {
        o.walk(&mut |x| {
            if bad.is_none() && !producer_may_run(x.kind) {
                bad = Some(x.clone());
            }
        });
    }
    if let Some(x) = bad {
        return err(
            &x,
            format!(
                "'{}' in the producer region of 'tile.warp_specialize': in a kernel with a \
                 plain launch one producer thread runs it, which takes scalar integer ops, \
                 program ids, 'tile.for', 'tile.if', mbarrier ops and 'tile.tma_load'",
                x.kind.name()
            ),
        );
    }
    Ok(PRODUCER_THREADS / 32)
}

/// Whether the producer's one thread may run an op of kind `k`.
fn producer_may_run(k: OpKind) -> bool {
    super::clc::scheduler_may_run(k)
        || matches!(
            k,
            OpKind::For
                | OpKind::Yield
                | OpKind::ProgramId
                | OpKind::NumPrograms
                | OpKind::CtaId
                | OpKind::NumCtas
                | OpKind::Dim
        )
}

impl<'c, 'm> Lowerer<'c, 'm, '_> {
    /// `tile.warp_specialize` (module docs).
    pub(super) fn lower_warp_specialize(&mut self, op: &Operation) -> R<()> {
        let consumers = self.num_warps / 4;
        let split = self.target.setmaxnreg_split(consumers, self.ctas_per_sm);
        let nw = self.w.i32(self.num_warps as i64);
        let is_p = self.w.icmp(ICmp::Uge, self.warp, nw);
        let producer = self.w.block(&[]);
        let consumer = self.w.block(&[]);
        self.w.cond_br(is_p, &producer, &[], &consumer, &[]);
        self.w.place(producer);
        if let Some((p, _)) = split {
            self.w.setmaxnreg(false, p);
        }
        let first = self.w.icmp(ICmp::Eq, self.warp, nw);
        let z = self.w.i32(0);
        let lane0 = self.w.icmp(ICmp::Eq, self.lane, z);
        let elected = self.w.bin("and", first, lane0);
        let run = self.w.block(&[]);
        let done = self.w.block(&[]);
        self.w.cond_br(elected, &run, &[], &done, &[]);
        self.w.place(run);
        self.scheduler = true;
        let r = self.lower_block(&op.regions[0].ops);
        self.scheduler = false;
        r?;
        self.w.br(&done, &[]);
        self.w.place(done);
        self.w.ret();
        self.w.place(consumer);
        if let Some((_, c)) = split {
            self.w.setmaxnreg(true, c);
        }
        self.w.cta_threads = Some(32 * self.num_warps as i64);
        self.lower_block(&op.regions[1].ops)
    }
}
