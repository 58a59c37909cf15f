//! `async-wait-placement` — wgmma fences, commit groups and the tightest safe waits.
//!
//! Every `tile.mma {kind = "wgmma"}` becomes one asynchronous group: the pass puts a
//! `tile.commit_group` right after it, a `tile.wgmma_fence` before it where the PTX ISA
//! needs one, and `tile.wait_group {pending = N}` before every *hazard* (an op that must
//! not run while a group is pending; see [`crate::async_model`] for the exact list: a
//! non-wgmma access of the group's accumulator or A-fragment registers, a TMA copy into a
//! stage it reads, an `mbarrier_arrive` releasing such a stage, kernel exit) with the
//! largest `N` that is safe on every path (DESIGN.md, "Async groups and tight waits").
//!
//! How: a forward dataflow over the structured IR. The state at a point maps each pending
//! group instance (its `tile.mma` and the stages it reads, relative to the current loop
//! iterations) to the smallest number of commits after it over the paths on which it is
//! still pending — exact for "which N retires it on every path". Branches join by taking
//! the minimum; loops iterate to a fixpoint, so groups that are only loop-carried stay in
//! flight across iterations and are drained by the first hazard after the loop. At a
//! hazard, `N` = the minimum over the conflicting groups (capped at 7); the wait goes
//! directly before the hazard, so it is as late as it can be, and none is placed where an
//! earlier wait already retired every conflicting group.
//!
//! A wait changes the states it was decided from (one placed because a group from the
//! previous trip round a loop may reach a hazard retires that very group), so a loop's
//! decisions are made from a head state that covers every trip, and the states that flow
//! on are then recomputed with the decisions frozen (a monotone least fixpoint, exact).
//! Last, the decisions are refined against those exact states, to a fixpoint: from the last
//! wait to the first, a wait (then a barrier, then a fence) that the others make
//! unnecessary is dropped; each wait sinks past the op it stands before (a loop whole, or
//! into both branches of a `tile.if`) while every hazard stays safe, merging with a wait
//! it reaches; and each remaining `pending` is raised while every hazard stays safe; and a
//! wait after a `tile.if` moves into the ends of its branches where some branch can then
//! wait for fewer groups (a join does not force the smaller N on both paths; a value the
//! moved wait takes that is used after the join leaves the `tile.if` as a new result).
//! These are the moves `verify-async-waits` tries, so what it accepts as tight is what
//! placement produces. Last, a loop entered with groups in flight that keeps two or more in
//! flight at its back edge is placed again with a `pending = 0` wait before it, kept where
//! the waits inside then leave more groups in flight in sum: a group issued before the loop
//! is the newest on entry but one commit further back on the back edge, and the head joins
//! both (attention's first Q·Kᵀ, issued ahead, would force `pending = 0` on every trip).
//!
//! Groups are per warpgroup: only region 1 of `tile.warp_specialize` (the consumers) and
//! the kernel code after it carry the consumers' groups; region 0 starts from the state
//! before the op and its end is an exit.
//!
//! A wait takes, and returns tied, every accumulator (or A-fragment) value of a group in
//! flight before it that is still used after it; later uses in its scope are rewired to
//! its results, so lowering cannot move accumulator uses across it.
//!
//! When an overwrite (`tile.tma_load`) races with a group that another warpgroup may still
//! have pending — two or more warpgroups run the code (`consumers` ≥ 2 of a
//! `tile.warp_specialize`, or a `block` of ≥ 256 threads without one) — a `tile.barrier`
//! follows the wait, and only then. Inside a warp-specialized consumer region that barrier
//! must be lowered as a barrier of the consumer warpgroups only.
//!
//! Fences: before a kernel's first wgmma on every path, and again only before a wgmma
//! whose accumulator or A-fragment registers some other op read or wrote since the last
//! fence. Accumulators that are only passed from wgmma to wgmma (loop-carried, through
//! waits and yields) need none: the PTX ISA orders accumulator accesses of wgmmas of one
//! shape, and ptxas 13.5 emits the same SASS (one `WARPGROUP.ARRIVE` per k-tile, no
//! C75xx message) for the reference kernel with the per-iteration fence removed. Fences
//! that a loop needs only because of what ran before it go before the loop, not into every
//! iteration: one fence there whenever that leaves fewer inside (a body whose own accesses
//! need a fence per iteration for one chain keeps that one, and no other).
//!
//! **Other group kinds**, placed by the same analysis, each with its own counters: bulk store
//! groups (`tile.tma_store`; `tile.bulk_commit_group`, `tile.bulk_wait_group {read = true}` and the
//! warpgroup's named barrier) and cp.async groups (`tile.cp_async`; `tile.cp_async_commit_group`,
//! `tile.cp_async_wait_group`). A cp.async copy *writes* its stage, each thread its own chunks:
//! every access of the stage waits for it, and a `tile.barrier` follows the wait (the other
//! threads' chunks). Where wgmma or TMA (the async proxy) accesses a copied stage, a
//! `tile.fence_proxy_async` goes before that barrier — also with no wait, where a barrier already
//! published the copy to `ld.shared` but no fence covered it. Every proxy fence and barrier the
//! pass places carries `{placed = "KIND"}` (`wgmma`, `bulk`, `cp_async`), for the pass to know it
//! as its own. The cp.async ops go before the wgmma waits and fence already placed before the same
//! op; a cp.async wait that needs a barrier goes after the other kinds' waits (whose barriers its
//! CTA barrier replaces and serves). No wait moves past, or splits at a join in front of, another
//! wait or a proxy fence, nor sinks (or, split at a join, leaves its copy) onto a barrier of its
//! kind (a cp.async wait, nor onto a proxy fence: the pass owns those after its waits). The kinds
//! are placed in turn (wgmma, bulk, cp.async), each seeing the ops of the kinds placed before it;
//! where a later kind's barrier has made an earlier kind's barrier redundant, each is placed again,
//! alone, with every other kind's ops in the IR, for up to three rounds or until nothing changes.
//! That result is kept when every kind's placement, read back from the IR, is safe with the others;
//! else the first.
//!
//! The pass owns these ops: it first deletes every `tile.wgmma_fence`,
//! `tile.commit_group` and `tile.wait_group`, the other kinds' commits and waits, and
//! every proxy fence or barrier marked `placed` in the input, all kinds before any is
//! placed, so running it twice gives the same IR. Every proxy fence and barrier it places
//! carries the mark; one without it is the program's and stays, wherever it stands (after
//! a hand-written wait too). A marked barrier whose deletion would leave the program's own
//! exchange through shared memory unordered (`tile.smem_store` then another thread's
//! `tile.smem_load`, or the reverse), where no kind places one again, is kept, mark and all,
//! and the kernel is placed again around it. A ring of one
//! stage that must be drained (`pending = 0`) before it is refilled or released gets a
//! remark: a second stage would let one group stay in flight.
//!
//! Options: none. Statistics: `waits-placed`, `waits-N0` … `waits-N7` (waits by their N),
//! `fences`, `commits`, `loop-analyses` (loops analysed from an entry state not met
//! before in the same walk: what a loop nest costs), `barriers`, and per loop with groups
//! in flight at its back edge `groups-in-flight (loop at FILE:LINE:COL)`; with bulk
//! stores `bulk-waits-placed`, `bulk-waits-N*`, `bulk-commits`, `named-barriers`; with
//! cp.async copies
//! `cp-async-waits-placed`, `cp-async-waits-N*`, `cp-async-commits`, `proxy-fences`.
//!
//! Example (`tile-opt examples/gemm_bf16.tile --tile-to-gpu --async-wait-placement`), the
//! consumer region (stage arithmetic elided):
//!
//! ```text
//! tile.mbarrier_wait %full, %stage, %phase
//! tile.wgmma_fence
//! %acc0 = tile.mma %a_ring, %b_ring, %stage, %zero {kind = "wgmma", zero_acc = true}
//!     : tile<128x256xf32>
//! tile.commit_group
//! %acc = tile.for %c1, %ktiles, %c1, %acc0 : tile<128x256xf32> {
//! ^bb0(%kt: index, %acc_iter: tile<128x256xf32>):
//!   ...
//!   %acc_next = tile.mma %a_ring, %b_ring, %1, %acc_iter {kind = "wgmma"} : tile<128x256xf32>
//!   tile.commit_group
//!   ...
//!   %acc_next_w = tile.wait_group %acc_next {pending = 1} : tile<128x256xf32>
//!   tile.mbarrier_arrive %empty, %prev_stage
//!   tile.yield %acc_next_w
//! }
//! ...
//! %acc_w = tile.wait_group %acc {pending = 0} : tile<128x256xf32>
//! tile.mbarrier_arrive %empty, %last_stage
//! %out = tile.convert %acc_w : tile<128x256xbf16>
//! ```
//!
//! One group stays in flight in the K loop; the drain is the first hazard after it (the
//! release of the last stage), and the epilogue reads the wait's result.

use crate::async_model::{
    fence_ahead, placed_sync, scalar_only, wait_may_stand_before, Facts, GroupKind, Hazard, Inst,
    OpId, Slot, C_CAP, MAX_PENDING,
};
use crate::pass::{Pass, PassContext, PassInfo};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use tilec_dialect::{
    Attribute, Block, Diagnostic, Diagnostics, Location, Module, OpKind, Operation, Type, Value,
};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "async-wait-placement",
    summary: "Insert wgmma fences, commit groups and the tightest safe wait_group N",
    description: "Puts tile.commit_group after every wgmma tile.mma, tile.wgmma_fence before the \
        first wgmma and after other register accesses, and tile.wait_group {pending = N} directly \
        before every hazard (accumulator use, stage overwrite or release, exit) with the \
        largest N safe on every path, across branches, loops and warp specialization; adds \
        a tile.barrier after the wait where several warpgroups read a stage about to \
        be overwritten. Bulk TMA-store groups and cp.async groups are placed alike, each kind \
        with its own commits and waits (a cp.async wait gets a barrier, and a proxy fence \
        before it where wgmma or TMA reads the copied stage).\n\nExample: tile-opt \
        examples/gemm_bf16.tile --tile-to-gpu \
        --async-wait-placement --pass-statistics",
    options: &[],
};

/// The pass.
pub struct AsyncWaitPlacement;

/// What the pass did, in numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlacementStats {
    /// Waits by their `pending` value (index = N).
    pub waits: [u64; 8],
    /// Fences inserted.
    pub fences: u64,
    /// Commits inserted.
    pub commits: u64,
    /// CTA barriers inserted.
    pub barriers: u64,
    /// For each loop that keeps groups in flight across its back edge: its location and
    /// the largest number of groups in flight there.
    pub in_flight: Vec<(Location, u64)>,
    /// Bulk store waits (`tile.bulk_wait_group`) by their `pending` value.
    pub bulk_waits: [u64; 8],
    /// Bulk commits (`tile.bulk_commit_group`) inserted.
    pub bulk_commits: u64,
    /// Named barriers inserted after bulk waits.
    pub named_barriers: u64,
    /// cp.async waits (`tile.cp_async_wait_group`) by their `pending` value.
    pub cp_async_waits: [u64; 8],
    /// cp.async commits (`tile.cp_async_commit_group`) inserted.
    pub cp_async_commits: u64,
    /// `tile.fence_proxy_async`s inserted before the barriers of cp.async waits.
    pub proxy_fences: u64,
    /// Analyses of a loop from an entry state not met before (the work of the dataflow:
    /// a nest of d loops costs about 4 per loop and state, not 4^d).
    pub loop_analyses: u64,
}

impl PlacementStats {
    /// Adds `o`'s counts (another kernel's) to these.
    fn add(&mut self, o: &PlacementStats) {
        let sum = |a: &mut [u64; 8], b: &[u64; 8]| a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        sum(&mut self.waits, &o.waits);
        sum(&mut self.bulk_waits, &o.bulk_waits);
        sum(&mut self.cp_async_waits, &o.cp_async_waits);
        self.fences += o.fences;
        self.commits += o.commits;
        self.barriers += o.barriers;
        self.bulk_commits += o.bulk_commits;
        self.named_barriers += o.named_barriers;
        self.cp_async_commits += o.cp_async_commits;
        self.proxy_fences += o.proxy_fences;
        self.loop_analyses += o.loop_analyses;
        self.in_flight.extend(o.in_flight.iter().cloned());
    }
}

/// Place fences, commits and waits in every kernel of `m`. Remarks (single-stage rings
/// drained to zero) go to `remarks`.
pub fn place_async_waits(m: &mut Module, remarks: &mut Vec<Diagnostic>) -> PlacementStats {
    let mut stats = PlacementStats::default();
    let mut kernels = std::mem::take(&mut m.ops);
    for k in &mut kernels {
        if k.kind == OpKind::Kernel {
            place_kernel(m, k, &mut stats, remarks);
        }
    }
    m.ops = kernels;
    stats
}

// ---- stripping the ops the pass owns ----------------------------------------------------

fn strip(k: &mut Operation, kind: GroupKind) {
    strip_marking(k, kind, false);
}

/// Strips the ops of `kind` from `k`; with `mark`, each leaves its decision as a mark on
/// the op it stood before (see `strip_block`).
fn strip_marking(k: &mut Operation, kind: GroupKind, mark: bool) {
    let mut repl = HashMap::new();
    for b in &mut k.regions {
        strip_block(b, &mut repl, kind, mark);
    }
    k.walk_mut(&mut |o| {
        for v in &mut o.operands {
            while let Some(&r) = repl.get(v) {
                *v = r;
            }
        }
    });
}

/// Strips the ops of `kind` from `b`; with `mark`, each stripped wait, barrier or fence
/// leaves a mark (`MARK_*`) on the op that follows it.
fn strip_block(b: &mut Block, repl: &mut HashMap<Value, Value>, kind: GroupKind, mark: bool) {
    let mut kept = Vec::with_capacity(b.ops.len());
    let mut marks: Vec<(&str, Attribute)> = vec![];
    for mut o in std::mem::take(&mut b.ops) {
        let placed = match (kind, o.kind) {
            (_, k) if k == kind.commit_op() => None,
            (GroupKind::Wgmma, OpKind::WgmmaFence) => Some(MARK_FENCE),
            (_, k) if k == kind.wait_op() => {
                for (&r, &a) in o.results.iter().zip(&o.operands) {
                    repl.insert(r, a);
                }
                Some(MARK_WAIT)
            }
            // The pass's own proxy fences and barriers carry its mark; any other is the
            // program's, wherever it stands.
            (GroupKind::CpAsync, OpKind::FenceProxyAsync) if placed_by(&o, kind) => {
                Some(MARK_PROXY_FENCE)
            }
            (_, k) if placed_by(&o, kind) && k == kind.barrier_op() => Some(MARK_BARRIER),
            _ => {
                for r in &mut o.regions {
                    strip_block(r, repl, kind, mark);
                }
                if mark {
                    for (name, a) in marks.drain(..) {
                        o.attrs.insert(name.into(), a);
                    }
                }
                kept.push(o);
                continue;
            }
        };
        if let (true, Some(name)) = (mark, placed) {
            let value = if name == MARK_WAIT {
                Attribute::Int(o.int_attr("pending").unwrap_or(0))
            } else {
                Attribute::Bool(true)
            };
            marks.push((name, value));
        }
    }
    b.ops = kept;
}

// ---- the dataflow ----------------------------------------------------------------------

/// The state at a program point.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct State {
    /// Pending instance → fewest commits after it over the paths where it is pending.
    pending: BTreeMap<Inst, u8>,
    /// Instances retired by this warpgroup's wait but not yet followed by a CTA barrier
    /// (other warpgroups may still read their stages).
    unsynced: BTreeSet<Inst>,
    /// cp.async groups of `unsynced` that a `tile.fence_proxy_async` has covered since.
    proxy_fenced: BTreeSet<Inst>,
    /// cp.async groups a barrier published to other threads' generic accesses with no
    /// proxy fence before it: wgmma and TMA may not access their stages yet.
    proxy_unpublished: BTreeSet<Inst>,
    /// Register slots of wgmma operands accessed by other ops since the last fence.
    dirty: BTreeSet<Slot>,
    /// Some path reaches here with no fence yet.
    unfenced: bool,
}

impl State {
    fn join(&mut self, o: &State) {
        for (i, &c) in &o.pending {
            let e = self.pending.entry(i.clone()).or_insert(c);
            *e = (*e).min(c);
        }
        // Fenced where every path on which the copy is retired and unpublished fenced it (on
        // a path where it is still pending, its wait comes later and the fence after that).
        let unfenced_on = |st: &State, g: &Inst| {
            !st.proxy_fenced.contains(g)
                && (st.unsynced.contains(g) || st.proxy_unpublished.contains(g))
        };
        let fenced: BTreeSet<Inst> = self
            .proxy_fenced
            .union(&o.proxy_fenced)
            .filter(|g| !unfenced_on(self, g) && !unfenced_on(o, g))
            .cloned()
            .collect();
        self.proxy_fenced = fenced;
        self.unsynced.extend(o.unsynced.iter().cloned());
        self.proxy_unpublished
            .extend(o.proxy_unpublished.iter().cloned());
        self.dirty.extend(o.dirty.iter().copied());
        self.unfenced |= o.unfenced;
    }

    /// Applies `f` to every instance (stages seen from another iteration or scope). Two
    /// instances `f` maps onto one stay fenced only if both were.
    fn map_insts(&mut self, f: impl Fn(&mut Inst)) {
        let mapped = |g: &Inst| {
            let mut g = g.clone();
            f(&mut g);
            g
        };
        let unfenced: BTreeSet<Inst> = self
            .unsynced
            .iter()
            .chain(&self.proxy_unpublished)
            .filter(|g| !self.proxy_fenced.contains(*g))
            .map(mapped)
            .collect();
        let pending = std::mem::take(&mut self.pending);
        for (mut i, c) in pending {
            f(&mut i);
            let e = self.pending.entry(i).or_insert(c);
            *e = (*e).min(c);
        }
        for set in [
            &mut self.unsynced,
            &mut self.proxy_fenced,
            &mut self.proxy_unpublished,
        ] {
            *set = std::mem::take(set)
                .into_iter()
                .map(|mut i| {
                    f(&mut i);
                    i
                })
                .collect();
        }
        self.proxy_fenced.retain(|g| !unfenced.contains(g));
    }

    /// A wait with `pending = n`; `shared`: other warpgroups run the same code, so the
    /// retired groups' stages may still be read by theirs until a CTA barrier.
    fn wait(&mut self, n: u8, shared: bool) {
        let retired: Vec<Inst> = self
            .pending
            .iter()
            .filter(|(_, &c)| c >= n)
            .map(|(i, _)| i.clone())
            .collect();
        for i in retired {
            self.pending.remove(&i);
            // A fence before this wait does not cover the copy it retires.
            self.proxy_fenced.remove(&i);
            if shared && !i.stages.is_empty() {
                self.unsynced.insert(i);
            }
        }
    }

    /// A `tile.fence_proxy_async`: the copies retired so far are fenced into the async
    /// proxy (published to it by the next barrier).
    fn proxy_fence(&mut self) {
        self.proxy_fenced.extend(self.unsynced.iter().cloned());
        self.proxy_fenced
            .extend(self.proxy_unpublished.iter().cloned());
    }

    /// A barrier (after a proxy fence if `fenced`): retired groups are published to the
    /// other threads; cp.async copies to the async proxy only where a fence covered them.
    fn sync(&mut self, fenced: bool) {
        if fenced {
            self.proxy_fence();
        }
        let unsynced = std::mem::take(&mut self.unsynced);
        self.proxy_unpublished.extend(unsynced);
        let fenced = std::mem::take(&mut self.proxy_fenced);
        self.proxy_unpublished.retain(|g| !fenced.contains(g));
    }

    fn commit(&mut self, inst: Inst) {
        for c in self.pending.values_mut() {
            *c = (*c + 1).min(C_CAP);
        }
        self.pending.insert(inst, 0);
    }
}

/// What to insert around one op.
#[derive(Clone, Debug, Default)]
struct Decision {
    wait: Option<u8>,
    barrier: bool,
    /// A `tile.fence_proxy_async` before the barrier (cp.async groups whose stage the op
    /// accesses through the async proxy).
    proxy_fence: bool,
    fence: bool,
    /// Slots of the groups in flight just before the wait.
    in_flight: BTreeSet<Slot>,
    /// A one-stage ring drained to zero here.
    single_stage: Option<Value>,
}

#[derive(Clone, Copy)]
struct Ctx {
    warpgroups: u64,
}

struct Analysis<'a, 'k> {
    m: &'a Module,
    f: &'a Facts<'k>,
    /// Apply the recorded decisions instead of making them (the states that follow from
    /// the decisions, as opposed to the states the decisions are made from).
    frozen: bool,
    /// Hazards that, in a frozen run, see a conflicting group pending (or an overwrite
    /// another warpgroup may still read) after the decisions are applied.
    violations: u64,
    decisions: HashMap<OpId, Decision>,
    /// Loop id → groups in flight at its back edge (last analysis of the loop).
    in_flight: HashMap<OpId, u64>,
    /// Runs of [`Analysis::run_loop`] (memo hits aside).
    loop_runs: u64,
    /// Within one walk of the kernel, the loops already analysed from a given entry state
    /// and what that did, so that a loop nest is analysed once per distinct state at each
    /// level, not once per trip of every loop around it. What a loop's analysis decides
    /// and finds depends only on its entry state and the warpgroups, and, frozen, on the
    /// decisions inside it (which an unfrozen walk remakes as it goes): those are part of
    /// the key. The memo is kept per walk.
    memo: Option<Vec<LoopMemo>>,
    /// Loops that some walk entered with groups in flight.
    entered_busy: BTreeSet<OpId>,
    /// Loops before which the decisions drain every group (`pending = 0`); see
    /// [`Analysis::drain_before_loops`].
    drain: BTreeSet<OpId>,
}

/// What a frozen analysis applies of a decision: wait, barrier, proxy fence, fence.
type AppliedDecision = (Option<u8>, bool, bool, bool);

/// One analysis of one loop from one entry state: its exit state and its effects on the
/// analysis (the decisions on the ops inside, the back-edge depth of the loops inside, the
/// hazards it counted).
struct LoopMemo {
    id: OpId,
    warpgroups: u64,
    frozen: bool,
    entry: State,
    /// Frozen: the decisions inside the loop that the analysis applied.
    applied: Vec<(OpId, AppliedDecision)>,
    exit: State,
    decisions: Vec<(OpId, Option<Decision>)>,
    loops: Vec<(OpId, u64)>,
    violations: u64,
}

/// Iterations after which loop states are joined instead of replaced (guarantees a
/// fixpoint even where wait decisions make the transfer non-monotone).
const PLAIN_ITERATIONS: u32 = 16;

/// Rounds of drop / sink / raise in `refine` (each round only removes, moves later or
/// weakens waits, so a fixpoint comes quickly; this bounds it).
const REFINE_ROUNDS: u32 = 8;

impl Analysis<'_, '_> {
    fn block(&mut self, b: &Block, st: &mut State, ctx: &mut Ctx, exit_at_end: bool) {
        let n = b.ops.len();
        for (i, op) in b.ops.iter().enumerate() {
            self.op(op, st, ctx, exit_at_end && i + 1 == n);
        }
    }

    fn op(&mut self, op: &Operation, st: &mut State, ctx: &mut Ctx, exit: bool) {
        let id = self.f.id(op);
        let structured = matches!(
            op.kind,
            OpKind::For | OpKind::While | OpKind::If | OpKind::WarpSpecialize
        );
        if self.frozen && structured {
            // A wait that `refine` sank onto a structured op.
            if let Some(n) = self.decisions.get(&id).and_then(|d| d.wait) {
                self.frozen_wait(id, n, st, ctx);
            }
        }
        match op.kind {
            OpKind::For | OpKind::While if self.frozen => {
                if self.decisions.get(&id).is_some_and(|d| d.fence) {
                    st.unfenced = false;
                    st.dirty.clear();
                }
                *st = self.run_loop_memo(op, id, st.clone(), ctx);
            }
            OpKind::For | OpKind::While => {
                if !st.pending.is_empty() {
                    self.entered_busy.insert(id);
                }
                let drain = self.drain.contains(&id).then_some(0);
                if drain.is_some() {
                    st.wait(0, self.f.kind.shared(ctx.warpgroups));
                }
                self.decisions.insert(
                    id,
                    Decision {
                        wait: drain,
                        ..Decision::default()
                    },
                );
                let before = (self.decisions.clone(), self.in_flight.clone());
                let out = self.run_loop_memo(op, id, st.clone(), ctx);
                let inside = self.fences_inside(op);
                if (st.unfenced || !st.dirty.is_empty()) && inside > 0 {
                    // Fences the loop needs only because of what came before it go before
                    // the loop, not into every iteration: one there, when that leaves
                    // fewer inside (those the body's own accesses need stay).
                    let after = (
                        std::mem::replace(&mut self.decisions, before.0),
                        std::mem::replace(&mut self.in_flight, before.1),
                    );
                    let clean = State {
                        unfenced: false,
                        dirty: BTreeSet::new(),
                        ..st.clone()
                    };
                    let hoisted = self.run_loop_memo(op, id, clean, ctx);
                    if self.fences_inside(op) < inside {
                        self.decisions.insert(
                            id,
                            Decision {
                                wait: drain,
                                fence: true,
                                ..Decision::default()
                            },
                        );
                        *st = hoisted;
                        return;
                    }
                    (self.decisions, self.in_flight) = after;
                }
                *st = out;
            }
            OpKind::If => {
                let mut t = st.clone();
                let mut e = st.clone();
                self.block(&op.regions[0], &mut t, &mut ctx.clone(), false);
                self.block(&op.regions[1], &mut e, &mut ctx.clone(), false);
                t.join(&e);
                *st = t;
            }
            OpKind::WarpSpecialize => {
                let mut p = st.clone();
                self.block(&op.regions[0], &mut p, &mut Ctx { warpgroups: 1 }, true);
                let consumers = op.int_attr("consumers").unwrap_or(1).max(1) as u64;
                *ctx = Ctx {
                    warpgroups: consumers,
                };
                self.block(&op.regions[1], st, &mut ctx.clone(), false);
            }
            _ => self.plain(op, id, st, ctx, exit),
        }
    }

    /// Analyse loop `op` from `entry`: make the decisions of its body (unless frozen) from
    /// a head state that covers every trip count, then compute the states that follow from
    /// those decisions; returns the state after the loop.
    ///
    /// Decisions change the states they are made from (a wait placed because a group from
    /// the previous trip may reach a hazard retires that very group), so the head state
    /// may oscillate; after `PLAIN_ITERATIONS` it is joined instead of replaced, which
    /// ends at a state covering every head state seen — sound for the decisions. The state
    /// that flows on is then the fixpoint with the decisions frozen, by plain iteration
    /// from the entry, not that cover: a group the loop's own wait retires on every trip
    /// must not seem to leave the loop. With frozen decisions the step is monotone except
    /// for proxy fences (a fence publishes every copy unpublished so far, so a head state
    /// with more unpublished copies can leave fewer); that iteration may then cycle, and it
    /// too is joined after `PLAIN_ITERATIONS`.
    /// [`Analysis::run_loop`], through the memo when one is kept.
    fn run_loop_memo(&mut self, op: &Operation, id: OpId, entry: State, ctx: &Ctx) -> State {
        let Some(memo) = &self.memo else {
            return self.run_loop(op, id, entry, ctx);
        };
        let frozen = self.frozen;
        let applied = if frozen {
            self.applied_inside(op)
        } else {
            vec![]
        };
        let hit = memo.iter().find(|m| {
            m.id == id
                && m.warpgroups == ctx.warpgroups
                && m.frozen == frozen
                && m.entry == entry
                && m.applied == applied
        });
        if let Some(m) = hit {
            let exit = m.exit.clone();
            let (decisions, loops, violations) =
                (m.decisions.clone(), m.loops.clone(), m.violations);
            for (o, d) in decisions {
                match d {
                    Some(d) => self.decisions.insert(o, d),
                    None => self.decisions.remove(&o),
                };
            }
            self.in_flight.extend(loops);
            self.violations += violations;
            return exit;
        }
        let before = self.violations;
        let exit = self.run_loop(op, id, entry.clone(), ctx);
        let (mut decisions, mut loops) = (vec![], vec![]);
        for r in &op.regions {
            for o in &r.ops {
                o.walk(&mut |o| {
                    let oid = self.f.id(o);
                    decisions.push((oid, self.decisions.get(&oid).cloned()));
                    if let Some(&n) = self.in_flight.get(&oid) {
                        loops.push((oid, n));
                    }
                });
            }
        }
        if let Some(&n) = self.in_flight.get(&id) {
            loops.push((id, n));
        }
        let violations = self.violations - before;
        if let Some(memo) = &mut self.memo {
            memo.push(LoopMemo {
                id,
                warpgroups: ctx.warpgroups,
                frozen,
                entry,
                applied,
                exit: exit.clone(),
                decisions,
                loops,
                violations,
            });
        }
        exit
    }

    /// The decisions on the ops inside loop `op`, as a frozen analysis applies them.
    fn applied_inside(&self, op: &Operation) -> Vec<(OpId, AppliedDecision)> {
        let mut out = vec![];
        for r in &op.regions {
            for o in &r.ops {
                o.walk(&mut |o| {
                    let oid = self.f.id(o);
                    if let Some(d) = self.decisions.get(&oid) {
                        out.push((oid, (d.wait, d.barrier, d.proxy_fence, d.fence)));
                    }
                });
            }
        }
        out
    }

    fn run_loop(&mut self, op: &Operation, id: OpId, mut entry: State, ctx: &Ctx) -> State {
        self.loop_runs += 1;
        entry.map_insts(|i| self.f.enter_loop(i, id));
        if !self.frozen {
            let mut head = entry.clone();
            let mut iter = 0;
            loop {
                let mut s = head.clone();
                let mut c = *ctx;
                self.block(&op.regions[0], &mut s, &mut c, false);
                s.map_insts(|i| self.f.next_iteration(i, id));
                let mut next = entry.clone();
                next.join(&s);
                if iter >= PLAIN_ITERATIONS {
                    let mut acc = head.clone();
                    acc.join(&next);
                    next = acc;
                }
                if next == head {
                    break;
                }
                head = next;
                iter += 1;
            }
        }
        let was = std::mem::replace(&mut self.frozen, true);
        let mut head = entry.clone();
        let mut iter = 0;
        let mut exit = loop {
            let mut s = head.clone();
            let mut c = *ctx;
            self.block(&op.regions[0], &mut s, &mut c, false);
            s.map_insts(|i| self.f.next_iteration(i, id));
            let depth = s
                .pending
                .values()
                .map(|&c| u64::from(c) + 1)
                .max()
                .unwrap_or(0);
            self.in_flight.insert(id, depth);
            let mut next = entry.clone();
            next.join(&s);
            if iter >= PLAIN_ITERATIONS {
                next.join(&head);
            }
            if next == head {
                // A tile.for may run no trip and leaves from its head; a tile.while runs
                // its body at least once and leaves after it.
                break if op.kind == OpKind::While { s } else { head };
            }
            head = next;
            iter += 1;
        };
        self.frozen = was;
        exit.map_insts(|i| self.f.after_loop(i, id));
        exit
    }

    /// The fences decided inside `op`'s regions.
    fn fences_inside(&self, op: &Operation) -> usize {
        let mut n = 0;
        for r in &op.regions {
            for o in &r.ops {
                o.walk(&mut |x| {
                    n += usize::from(self.decisions.get(&self.f.id(x)).is_some_and(|d| d.fence))
                });
            }
        }
        n
    }

    /// Run the whole kernel with the decisions frozen; whether no hazard sees a group it
    /// conflicts with (exact: the frozen states are least fixpoints). Also records, for
    /// each wait, the slots of the groups in flight before it.
    fn frozen_safe(&mut self, body: &Block) -> bool {
        let was = std::mem::replace(&mut self.frozen, true);
        let memo = self.memo.replace(vec![]);
        self.violations = 0;
        let mut st = State {
            unfenced: self.f.kind == GroupKind::Wgmma,
            ..State::default()
        };
        let mut ctx = Ctx {
            warpgroups: self.f.kernel_warpgroups,
        };
        self.block(body, &mut st, &mut ctx, false);
        self.frozen = was;
        self.memo = memo;
        self.violations == 0
    }

    /// Tighten the decisions against the exact states, to a fixpoint: last to first,
    /// drop each wait (then each barrier) that the others make unnecessary; sink each wait
    /// past the op it stands before while that stays safe (as `verify-async-waits` moves
    /// it: past a plain op that does not read its results, or into both branches of a
    /// `tile.if`); then raise each remaining `pending` while it stays safe. Decisions are
    /// made from loop-head states that cover every trip; a wait later in a loop can make
    /// one earlier in the next trip redundant, or free to move later.
    fn refine(&mut self, kernel: &Operation) {
        let body = &kernel.regions[0];
        for _ in 0..REFINE_ROUNDS {
            let before = self.decision_summary();
            self.drop_unneeded(body);
            self.drop_fences(body);
            self.sink_waits(kernel);
            self.split_at_joins(kernel);
            self.raise_pending(body);
            if self.decision_summary() == before {
                break;
            }
        }
        for d in self.decisions.values_mut() {
            if d.wait != Some(0) {
                d.single_stage = None;
            }
        }
        // The final states: in-flight sets of the waits, groups in flight per loop.
        self.frozen_safe(body);
    }

    /// Makes the decisions (a walk of the kernel from its entry) and refines them.
    fn decide(&mut self, kernel: &Operation) {
        self.decisions.clear();
        self.in_flight.clear();
        self.memo = Some(vec![]);
        let mut st = State {
            unfenced: self.f.kind == GroupKind::Wgmma,
            ..State::default()
        };
        let mut ctx = Ctx {
            warpgroups: self.f.kernel_warpgroups,
        };
        self.block(&kernel.regions[0], &mut st, &mut ctx, false);
        self.memo = None;
        self.refine(kernel);
    }

    /// Drains every group (`pending = 0`) before a loop entered with groups in flight,
    /// where the waits inside the loop can then leave more groups in flight. A group issued
    /// before the loop (a wgmma issued one iteration ahead) is the newest on entry but one
    /// commit further back on the back edge (where the previous trip's last wgmma follows
    /// it), and the loop head joins both: drained on entry, the head's wait need not retire
    /// the back edge's newer group. With fewer groups on entry, no hazard in the loop sees
    /// more groups than before; the drain is kept when the waits inside the loop then
    /// leave more groups in flight in sum (their `pending` added up). Each loop that a walk
    /// entered with groups in flight is tried once, in op order.
    fn drain_before_loops(&mut self, kernel: &Operation) {
        let mut tried = BTreeSet::new();
        while let Some(id) = self.entered_busy.difference(&tried).next().copied() {
            tried.insert(id);
            let Some(&op) = self.f.ops.get(id as usize) else {
                continue;
            };
            // Only a loop that keeps two or more groups in flight at its back edge, with a
            // wait inside that retires all but fewer than the last one, can gain.
            let depth = self.in_flight.get(&id).copied().unwrap_or(0);
            let sum = |w: Vec<u8>| w.into_iter().map(u64::from).sum::<u64>();
            let waits = self.waits_inside(op);
            let least = waits.iter().min().copied();
            if depth < 2 || least.is_none_or(|n| u64::from(n) + 1 >= depth) {
                continue;
            }
            let before = sum(waits);
            let saved = (self.decisions.clone(), self.in_flight.clone());
            self.drain.insert(id);
            self.decide(kernel);
            let after = sum(self.waits_inside(op));
            if after <= before {
                self.drain.remove(&id);
                (self.decisions, self.in_flight) = saved;
                self.frozen_safe(&kernel.regions[0]);
            }
        }
    }

    /// The `pending` of each wait decided inside loop `op`.
    fn waits_inside(&self, op: &Operation) -> Vec<u8> {
        let mut out = vec![];
        for r in &op.regions {
            for o in &r.ops {
                o.walk(&mut |x| {
                    out.extend(self.decisions.get(&self.f.id(x)).and_then(|d| d.wait));
                });
            }
        }
        out
    }

    /// The waits and barriers decided, in op order (to detect a fixpoint of `refine`).
    fn decision_summary(&self) -> Vec<(OpId, Option<u8>, bool, bool)> {
        let mut v: Vec<_> = self
            .decisions
            .iter()
            .filter(|(_, d)| d.wait.is_some() || d.barrier || d.proxy_fence)
            .map(|(&id, d)| (id, d.wait, d.barrier, d.proxy_fence))
            .collect();
        v.sort_unstable();
        v
    }

    /// The ops with a wait before them, last first.
    fn wait_sites(&self) -> Vec<OpId> {
        let mut waits: Vec<OpId> = self
            .decisions
            .iter()
            .filter(|(_, d)| d.wait.is_some())
            .map(|(&id, _)| id)
            .collect();
        waits.sort_unstable_by(|a, b| b.cmp(a));
        waits
    }

    /// Drop each fence (last to first) that the others make unnecessary: a fence hoisted
    /// before a loop whose first wgmma is fenced on every trip anyway.
    fn drop_fences(&mut self, body: &Block) {
        let mut fences: Vec<OpId> = self
            .decisions
            .iter()
            .filter(|(_, d)| d.fence)
            .map(|(&id, _)| id)
            .collect();
        fences.sort_unstable_by(|a, b| b.cmp(a));
        for id in fences {
            self.decisions.get_mut(&id).expect("decision").fence = false;
            if !self.frozen_safe(body) {
                self.decisions.get_mut(&id).expect("decision").fence = true;
            }
        }
    }

    fn drop_unneeded(&mut self, body: &Block) {
        for id in self.wait_sites() {
            let saved = self.decisions.get_mut(&id).expect("decision").wait.take();
            if !self.frozen_safe(body) {
                self.decisions.get_mut(&id).expect("decision").wait = saved;
            }
        }
        let mut barriers: Vec<OpId> = self
            .decisions
            .iter()
            .filter(|(_, d)| d.barrier)
            .map(|(&id, _)| id)
            .collect();
        barriers.sort_unstable_by(|a, b| b.cmp(a));
        for &id in &barriers {
            self.decisions.get_mut(&id).expect("decision").barrier = false;
            if !self.frozen_safe(body) {
                self.decisions.get_mut(&id).expect("decision").barrier = true;
            }
        }
        let mut fences: Vec<OpId> = self
            .decisions
            .iter()
            .filter(|(_, d)| d.proxy_fence)
            .map(|(&id, _)| id)
            .collect();
        fences.sort_unstable_by(|a, b| b.cmp(a));
        for &id in &fences {
            self.decisions.get_mut(&id).expect("decision").proxy_fence = false;
            if !self.frozen_safe(body) {
                self.decisions.get_mut(&id).expect("decision").proxy_fence = true;
            }
        }
    }

    fn raise_pending(&mut self, body: &Block) {
        for id in self.wait_sites() {
            while let Some(n) = self.decisions[&id].wait.filter(|&n| n < MAX_PENDING) {
                self.decisions.get_mut(&id).expect("decision").wait = Some(n + 1);
                if !self.frozen_safe(body) {
                    self.decisions.get_mut(&id).expect("decision").wait = Some(n);
                    break;
                }
            }
        }
    }

    /// Move a wait that stands after a `tile.if` (with only [`scalar_only`] ops in
    /// between) before a plain op `X` into the ends of both branches, where some branch
    /// can then wait for fewer groups and `X` stays safe: each branch's wait is dropped or
    /// raised while every hazard stays safe, with a copy of the wait right after `X`
    /// keeping what follows as it was (the later steps of `refine` drop or sink that
    /// copy). Kept only when some branch waits for fewer groups than the one wait did.
    /// `wait_group` is `.sync.aligned`; a `tile.if`'s condition is a scalar, uniform
    /// across the CTA.
    fn split_at_joins(&mut self, kernel: &Operation) {
        let body = &kernel.regions[0];
        for id in self.wait_sites() {
            let d = &self.decisions[&id];
            let Some(n) = d.wait else { continue };
            if d.barrier || d.fence || n >= MAX_PENDING {
                continue;
            }
            let Some((ends, after)) = join_sites(self.m, body, self.f, id) else {
                continue;
            };
            let saved = self.decisions.clone();
            self.decisions.get_mut(&id).expect("decision").wait = None;
            for &e in ends.iter().chain([&after]) {
                let x = self.decisions.entry(e).or_default();
                x.wait = Some(x.wait.map_or(n, |m| m.min(n)));
            }
            if !self.frozen_safe(body) {
                self.decisions = saved;
                continue;
            }
            let mut better = false;
            for &e in &ends {
                let w = self.decisions[&e].wait;
                self.decisions.get_mut(&e).expect("decision").wait = None;
                if self.frozen_safe(body) {
                    better = true;
                    continue;
                }
                self.decisions.get_mut(&e).expect("decision").wait = w;
                while let Some(k) = self.decisions[&e].wait.filter(|&k| k < MAX_PENDING) {
                    self.decisions.get_mut(&e).expect("decision").wait = Some(k + 1);
                    if !self.frozen_safe(body) {
                        self.decisions.get_mut(&e).expect("decision").wait = Some(k);
                        break;
                    }
                }
                better |= self.decisions[&e].wait.is_some_and(|k| k > n);
            }
            if !better {
                self.decisions = saved;
            }
        }
    }

    /// Move each wait later, one op at a time, while every hazard stays safe. A wait that
    /// lands on an op that already has one merges with it (the smaller `pending`).
    fn sink_waits(&mut self, kernel: &Operation) {
        let body = &kernel.regions[0];
        // The in-flight sets (which values each wait takes) of the current decisions: a
        // rejected attempt of an earlier step may have left others.
        self.frozen_safe(body);
        let mut work = self.wait_sites();
        while let Some(id) = work.pop() {
            let d = &self.decisions[&id];
            let Some(n) = d.wait else { continue };
            if d.barrier || d.fence {
                // The barrier (or fence) after the wait belongs to it.
                continue;
            }
            let operands = wait_operands(self.f, kernel, &self.decisions, Some(id))
                .remove(&id)
                .unwrap_or_default();
            let Some(targets) = sink_targets(body, self.f, id, &operands) else {
                continue;
            };
            let saved = self.decisions.clone();
            self.decisions.get_mut(&id).expect("decision").wait = None;
            for &t in &targets {
                let e = self.decisions.entry(t).or_default();
                e.wait = Some(e.wait.map_or(n, |m| m.min(n)));
            }
            if self.frozen_safe(body) {
                work.extend(targets);
            } else {
                self.decisions = saved;
            }
        }
    }

    fn plain(&mut self, op: &Operation, id: OpId, st: &mut State, ctx: &Ctx, exit: bool) {
        let x = self.f.access(op, id, exit);
        if self.frozen {
            let d = self.decisions.get(&id).cloned().unwrap_or_default();
            if let Some(n) = d.wait {
                self.frozen_wait(id, n, st, ctx);
            }
            if d.proxy_fence {
                st.proxy_fence();
            }
            if d.barrier {
                st.sync(false);
            }
            if !x.is_empty() {
                let pending_conflict = st.pending.keys().any(|g| self.f.conflict(&x, g).is_some());
                let unsynced_conflict = self.f.kind.shared(ctx.warpgroups)
                    && st.unsynced.iter().any(|g| self.f.overwrites(&x, g));
                let unpublished = x.async_proxy
                    && st
                        .proxy_unpublished
                        .iter()
                        .any(|g| self.f.overwrites(&x, g));
                self.violations += u64::from(pending_conflict || unsynced_conflict || unpublished);
            }
            if x.wgmma.is_some() && self.f.kind == GroupKind::Wgmma && !d.fence {
                let gd = &self.f.groups[&id];
                let unfenced = st.unfenced || gd.slots().any(|s| st.dirty.contains(&s));
                self.violations += u64::from(unfenced);
            }
            self.effect(op, id, &x, st, d.fence);
            return;
        }
        let mut d = Decision::default();
        if !x.is_empty() {
            let mut n: Option<u8> = None;
            let mut overwrite_pending = false;
            for (g, &c) in &st.pending {
                if let Some(h) = self.f.conflict(&x, g) {
                    n = Some(n.map_or(c, |n| n.min(c)));
                    overwrite_pending |= h == Hazard::Overwrite || self.f.overwrites(&x, g);
                    if c == 0 && matches!(h, Hazard::Overwrite | Hazard::Release) {
                        d.single_stage = d.single_stage.or(self.f.single_stage_ring(&x, g));
                    }
                }
            }
            let overwrite_unsynced = st.unsynced.iter().any(|g| self.f.overwrites(&x, g));
            if let Some(n) = n {
                let n = n.min(MAX_PENDING);
                d.in_flight = st
                    .pending
                    .keys()
                    .flat_map(|g| self.f.groups[&g.mma].slots())
                    .collect();
                d.wait = Some(n);
                st.wait(n, self.f.kind.shared(ctx.warpgroups));
                if n > 0 {
                    d.single_stage = None;
                }
            }
            // wgmma and TMA see a copy only after a proxy fence and a barrier.
            let unpublished = x.async_proxy
                && st
                    .proxy_unpublished
                    .iter()
                    .any(|g| self.f.overwrites(&x, g));
            if self.f.kind.shared(ctx.warpgroups)
                && (overwrite_pending || overwrite_unsynced || unpublished)
            {
                d.barrier = true;
                d.proxy_fence = self.f.kind == GroupKind::CpAsync && x.async_proxy;
                st.sync(d.proxy_fence);
            }
        }
        if x.wgmma.is_some() && self.f.kind == GroupKind::Wgmma {
            let gd = &self.f.groups[&id];
            d.fence = st.unfenced || gd.slots().any(|s| st.dirty.contains(&s));
        }
        self.effect(op, id, &x, st, d.fence);
        self.decisions.insert(id, d);
    }

    /// Apply the wait decided before op `id` (frozen run); records the slots in flight.
    fn frozen_wait(&mut self, id: OpId, n: u8, st: &mut State, ctx: &Ctx) {
        let in_flight = st
            .pending
            .keys()
            .flat_map(|g| self.f.groups[&g.mma].slots())
            .collect();
        if let Some(e) = self.decisions.get_mut(&id) {
            e.in_flight = in_flight;
        }
        st.wait(n, self.f.kind.shared(ctx.warpgroups));
    }

    /// What `op` itself does to the state (after any wait or barrier before it); `fence`:
    /// a fence goes before it.
    fn effect(
        &self,
        op: &Operation,
        id: OpId,
        x: &crate::async_model::Access,
        st: &mut State,
        fence: bool,
    ) {
        match op.kind {
            _ if self.f.kind.is_barrier(op) => st.sync(false),
            OpKind::FenceProxyAsync if self.f.kind == GroupKind::CpAsync => st.proxy_fence(),
            _ if x.wgmma.is_some() => {
                if fence {
                    st.unfenced = false;
                    st.dirty.clear();
                }
                st.commit(self.f.issue(id));
            }
            _ => st.dirty.extend(x.regs.iter().copied()),
        }
    }
}

// ---- which values a wait takes --------------------------------------------------------

/// The block holding op `id` (somewhere under `b`) and its index there.
fn locate<'b>(b: &'b Block, f: &Facts<'_>, id: OpId) -> Option<(&'b Block, usize)> {
    for (i, op) in b.ops.iter().enumerate() {
        if f.id(op) == id {
            return Some((b, i));
        }
        for r in &op.regions {
            if let Some(hit) = locate(r, f, id) {
                return Some(hit);
            }
        }
    }
    None
}

/// Where a wait before op `id` goes when it moves one step later, as `verify-async-waits`
/// moves it: after a plain op or a loop that reads none of the wait's `operands`, the op
/// that follows; before a `tile.if` whose block reads none of them after the wait, the first
/// op of each branch, and else, if the `tile.if` itself reads none of them, the op after
/// it. `None` where it cannot move: before a terminator, a
/// `tile.warp_specialize`, a barrier, another wait or a proxy fence, an op that reads what
/// the wait returns, or an op followed by a barrier of this kind.
fn sink_targets(body: &Block, f: &Facts<'_>, id: OpId, operands: &[Value]) -> Option<Vec<OpId>> {
    let (b, i) = locate(body, f, id)?;
    let op = &b.ops[i];
    let reads = |o: &Operation| operands.iter().any(|&v| used_in(o, v));
    let cp = f.kind == GroupKind::CpAsync;
    match op.kind {
        k if k.is_terminator() => None,
        OpKind::WarpSpecialize => None,
        _ if placed_sync(op) || f.kind.is_barrier(op) => None,
        OpKind::If => {
            let into_branches = !b.ops[i..].iter().any(reads)
                && !op
                    .regions
                    .iter()
                    .any(|r| r.ops.is_empty() || (cp && fence_ahead(&r.ops, 0)));
            if into_branches {
                return Some(op.regions.iter().map(|r| f.id(&r.ops[0])).collect());
            }
            // What follows the `tile.if` reads what the wait returns: past it whole, as
            // past a loop, where the branches read none of it.
            let next = b.ops.get(i + 1)?;
            if reads(op) || !wait_may_stand_before(&b.ops, i + 1, f.kind) {
                return None;
            }
            Some(vec![f.id(next)])
        }
        _ => {
            let next = b.ops.get(i + 1)?;
            if reads(op) || !wait_may_stand_before(&b.ops, i + 1, f.kind) {
                return None;
            }
            Some(vec![f.id(next)])
        }
    }
}

/// For a wait before op `id` (a plain op, not a terminator or barrier) that stands after a
/// `tile.if` with only [`scalar_only`] ops in between: the terminators of the branches
/// (where the wait may go instead) and the op after `id` (where a copy keeps what
/// follows as it was; not a barrier the pass would take for its own, see
/// [`wait_may_stand_before`]). `None` otherwise.
fn join_sites(m: &Module, body: &Block, f: &Facts<'_>, id: OpId) -> Option<(Vec<OpId>, OpId)> {
    let (b, i) = locate(body, f, id)?;
    let x = &b.ops[i];
    if x.kind.is_terminator() || !x.regions.is_empty() || f.kind.is_barrier(x) || placed_sync(x) {
        return None;
    }
    let after = f.id(b.ops.get(i + 1)?);
    if !wait_may_stand_before(&b.ops, i + 1, f.kind) {
        return None;
    }
    let j = (0..i).rev().find(|&j| !scalar_only(m, &b.ops[j]))?;
    let cond = &b.ops[j];
    if cond.kind != OpKind::If || cond.regions.len() != 2 {
        return None;
    }
    let ends = cond
        .regions
        .iter()
        .map(|r| {
            r.ops
                .last()
                .filter(|o| o.kind.is_terminator())
                .map(|o| f.id(o))
        })
        .collect::<Option<Vec<_>>>()?;
    Some((ends, after))
}

fn used_in(op: &Operation, v: Value) -> bool {
    op.operands.contains(&v)
        || op
            .regions
            .iter()
            .any(|b| b.ops.iter().any(|o| used_in(o, v)))
}

/// One level of the position of an op: a block and the op's index in it, with the op that
/// holds the block and the region's index.
struct Level<'k> {
    block: &'k Block,
    index: usize,
    parent: &'k Operation,
    region: usize,
}

/// Whether `v`, defined in the block of level `def_level`, is used at or after the op at
/// the innermost level.
fn live_at(levels: &[Level<'_>], v: Value, def_level: usize) -> bool {
    for (depth, l) in levels.iter().enumerate().rev() {
        if depth < def_level {
            return false;
        }
        let innermost = depth + 1 == levels.len();
        let from = if innermost { l.index } else { l.index + 1 };
        if l.block.ops[from..].iter().any(|o| used_in(o, v)) {
            return true;
        }
        match l.parent.kind {
            // A value from outside the loop is live at any use in its body: the next
            // iteration reaches it.
            OpKind::For | OpKind::While
                if depth > def_level && l.block.ops.iter().any(|o| used_in(o, v)) =>
            {
                return true
            }
            OpKind::WarpSpecialize if l.region == 0 => return false,
            OpKind::Kernel => return false,
            _ => {}
        }
    }
    false
}

/// For each op with a wait before it (only op `only`, when given), the values the wait
/// takes, in value order (`order_wait_operands` puts each placed wait's in text order).
fn wait_operands(
    f: &Facts<'_>,
    kernel: &Operation,
    decisions: &HashMap<OpId, Decision>,
    only: Option<OpId>,
) -> HashMap<OpId, Vec<Value>> {
    fn walk<'k>(
        f: &Facts<'k>,
        parent: &'k Operation,
        region: usize,
        levels: &mut Vec<Level<'k>>,
        d: &HashMap<OpId, Decision>,
        only: Option<OpId>,
        out: &mut HashMap<OpId, Vec<Value>>,
    ) {
        let block = &parent.regions[region];
        levels.push(Level {
            block,
            index: 0,
            parent,
            region,
        });
        for (i, op) in block.ops.iter().enumerate() {
            levels.last_mut().expect("level").index = i;
            let id = f.id(op);
            let wanted = only.is_none_or(|o| o == id);
            if let Some(dec) = d.get(&id).filter(|d| wanted && d.wait.is_some()) {
                let mut vals = vec![];
                for (def_level, l) in levels.iter().enumerate() {
                    let visible = l.block.args.iter().copied().chain(
                        l.block.ops[..l.index]
                            .iter()
                            .flat_map(|o| o.results.iter().copied()),
                    );
                    for v in visible {
                        // An in-flight wgmma's A fragment is taken even where it is
                        // dead: the tie keeps its registers until the group retires.
                        if f.is_reg(v)
                            && dec.in_flight.contains(&f.slot(v))
                            && (live_at(levels, v, def_level) || f.is_fragment(f.slot(v)))
                        {
                            vals.push(v);
                        }
                    }
                }
                vals.sort();
                vals.dedup();
                out.insert(id, vals);
            }
            for r in 0..op.regions.len() {
                walk(f, op, r, levels, d, only, out);
            }
        }
        levels.pop();
    }
    let mut out = HashMap::new();
    if !kernel.regions.is_empty() {
        walk(f, kernel, 0, &mut vec![], decisions, only, &mut out);
    }
    out
}

// ---- the rewrite -----------------------------------------------------------------------

struct Rewriter<'a> {
    kind: GroupKind,
    m: &'a mut Module,
    decisions: HashMap<OpId, Decision>,
    operands: HashMap<OpId, Vec<Value>>,
    wgmma: BTreeSet<OpId>,
    next_id: OpId,
    stats: &'a mut PlacementStats,
}

impl Rewriter<'_> {
    /// Where a cp.async decision's ops go among `out`, the ops already rewritten before
    /// the op it guards. cp.async groups are placed after the other kinds: their ops go
    /// before the waits, barriers and wgmma fence already placed there, so that placing
    /// again (on stripped IR) puts them the same way; a cp.async wait that needs a barrier
    /// goes after those waits instead, so that its CTA barrier serves them too (another
    /// kind's wait placed with no barrier of its own, where a re-placement round found
    /// this one covering it) and replaces their own barriers (removed from `out` here:
    /// one barrier serves every kind).
    fn cp_async_insertion_point(&mut self, out: &mut Vec<Operation>, d: &Decision) -> usize {
        let is_wait = |o: &Operation| matches!(o.kind, OpKind::WaitGroup | OpKind::BulkWaitGroup);
        let mut k = out.len();
        if k > 0 && out[k - 1].kind == OpKind::WgmmaFence {
            k -= 1;
        }
        let fence_at = k;
        while k > 0 {
            let o = &out[k - 1];
            let placed_barrier =
                matches!(o.kind, OpKind::Barrier | OpKind::NamedBarrier) && is_placed(o);
            if is_wait(o) || placed_barrier {
                k -= 1;
            } else {
                break;
            }
        }
        if !(d.barrier && d.wait.is_some()) {
            return k;
        }
        let mut kept = Vec::with_capacity(fence_at - k);
        for o in out.drain(k..fence_at) {
            match o.kind {
                OpKind::Barrier => self.stats.barriers -= 1,
                OpKind::NamedBarrier => self.stats.named_barriers -= 1,
                _ => kept.push(o),
            }
        }
        let at = k + kept.len();
        out.splice(k..k, kept);
        at
    }

    /// Rewrites `b` with the replacements `repl` of the scope around it; returns the
    /// replacements in force at its end.
    fn block(&mut self, b: &mut Block, repl: &HashMap<Value, Value>) -> HashMap<Value, Value> {
        let mut repl = repl.clone();
        let mut out: Vec<Operation> = Vec::with_capacity(b.ops.len() + 4);
        let ops = std::mem::take(&mut b.ops);
        // Values used by each op's successors in this block (nested regions included).
        let mut later: Vec<std::collections::HashSet<Value>> = vec![Default::default(); ops.len()];
        for i in (0..ops.len().saturating_sub(1)).rev() {
            let mut u = later[i + 1].clone();
            ops[i + 1].walk(&mut |o| u.extend(o.operands.iter().copied()));
            later[i] = u;
        }
        for (i, mut op) in ops.into_iter().enumerate() {
            let id = self.next_id;
            self.next_id += 1;
            let loc = op.loc.clone();
            if let Some(d) = self.decisions.get(&id).cloned() {
                let at = if self.kind == GroupKind::CpAsync {
                    self.cp_async_insertion_point(&mut out, &d)
                } else {
                    out.len()
                };
                let mut pre = vec![];
                if let Some(n) = d.wait {
                    let mut w = Operation::new(self.kind.wait_op(), loc.clone());
                    w.attrs
                        .insert("pending".into(), Attribute::Int(i64::from(n)));
                    if self.kind == GroupKind::Bulk {
                        // Only the slot's reads must be done before it is rewritten.
                        w.attrs.insert("read".into(), Attribute::Bool(true));
                    }
                    // Two values may stand for one here (a branch yielding the same value);
                    // the wait takes it once, and both are replaced by its result.
                    let mut taken: HashMap<Value, Value> = HashMap::new();
                    // The result is named after the value the wait takes (a second
                    // placement, which sees only that one, names it alike).
                    for v in self.operands.get(&id).cloned().unwrap_or_default() {
                        let cur = repl.get(&v).copied().unwrap_or(v);
                        if let Some(&r) = taken.get(&cur) {
                            repl.insert(v, r);
                            continue;
                        }
                        let ty = self.m.ty(cur).clone();
                        let name = self.m.name(cur).map(|s| format!("{s}_w"));
                        let r = self.m.new_value(ty, name);
                        w.operands.push(cur);
                        w.results.push(r);
                        taken.insert(cur, r);
                        repl.insert(v, r);
                    }
                    pre.push(w);
                    match self.kind {
                        GroupKind::Wgmma => self.stats.waits[n as usize] += 1,
                        GroupKind::Bulk => self.stats.bulk_waits[n as usize] += 1,
                        GroupKind::CpAsync => self.stats.cp_async_waits[n as usize] += 1,
                    }
                }
                if d.proxy_fence {
                    let mut f = Operation::new(OpKind::FenceProxyAsync, loc.clone());
                    f.attrs
                        .insert(PLACED.into(), Attribute::Str(self.kind.mark().into()));
                    pre.push(f);
                    self.stats.proxy_fences += 1;
                }
                if d.barrier {
                    let mut b = Operation::new(self.kind.barrier_op(), loc.clone());
                    b.attrs
                        .insert(PLACED.into(), Attribute::Str(self.kind.mark().into()));
                    if self.kind == GroupKind::Bulk {
                        // The warpgroup's own barrier: its 128 threads wait for the elected
                        // thread's wait before they write the slot again.
                        b.attrs
                            .insert("id".into(), Attribute::Int(EPILOGUE_BARRIER_ID));
                        b.attrs.insert("threads".into(), Attribute::Int(128));
                        self.stats.named_barriers += 1;
                    } else {
                        self.stats.barriers += 1;
                    }
                    pre.push(b);
                }
                if d.fence {
                    pre.push(Operation::new(OpKind::WgmmaFence, loc.clone()));
                    self.stats.fences += 1;
                }
                out.splice(at..at, pre);
            }
            for v in &mut op.operands {
                if let Some(&r) = repl.get(v) {
                    *v = r;
                }
            }
            let yields: Vec<Vec<Value>> = op
                .regions
                .iter()
                .map(|r| r.ops.last().map(|y| y.operands.clone()).unwrap_or_default())
                .collect();
            let ends: Vec<HashMap<Value, Value>> = op
                .regions
                .iter_mut()
                .map(|r| self.block(r, &repl))
                .collect();
            if op.kind == OpKind::If {
                self.thread_through_if(&mut op, &yields, &ends, &later[i], &mut repl);
            }
            out.push(op);
            if self.wgmma.contains(&id) {
                out.push(Operation::new(self.kind.commit_op(), loc));
                match self.kind {
                    GroupKind::Wgmma => self.stats.commits += 1,
                    GroupKind::Bulk => self.stats.bulk_commits += 1,
                    GroupKind::CpAsync => self.stats.cp_async_commits += 1,
                }
            }
        }
        b.ops = out;
        repl
    }

    /// A wait inside a branch of `op` (a `tile.if`) that took a value defined outside it
    /// returns the value tied; so that uses after the `tile.if` are ordered after that
    /// wait too, the value leaves through a result of the `tile.if` (each branch yields
    /// its own version), and later uses in the block (`later`: the values they read) read
    /// that result. `yields`: the branches' yield
    /// operands before the rewrite; a result they already pass `v` through is reused, so
    /// placing twice gives the same IR.
    fn thread_through_if(
        &mut self,
        op: &mut Operation,
        yields: &[Vec<Value>],
        ends: &[HashMap<Value, Value>],
        later: &std::collections::HashSet<Value>,
        repl: &mut HashMap<Value, Value>,
    ) {
        let mut inner = std::collections::HashSet::new();
        for r in &op.regions {
            inner.extend(r.args.iter().copied());
            for o in &r.ops {
                o.walk(&mut |x| inner.extend(x.results.iter().copied()));
            }
        }
        let mut changed: Vec<Value> = ends
            .iter()
            .flat_map(|e| e.keys().copied())
            .filter(|v| !inner.contains(v) && later.contains(v))
            .filter(|v| {
                let outer = repl.get(v).copied().unwrap_or(*v);
                ends.iter().any(|e| e.get(v).is_some_and(|&x| x != outer))
            })
            .collect();
        changed.sort();
        changed.dedup();
        let terminated = op
            .regions
            .iter()
            .all(|r| r.ops.last().is_some_and(|o| o.kind.is_terminator()));
        if changed.is_empty() || op.regions.len() != 2 || !terminated {
            return;
        }
        for v in changed {
            // A result that already passes `v` through both branches (placed before).
            let through = (0..op.results.len()).find(|&p| {
                yields.iter().zip(ends).all(|(y, e)| {
                    y.get(p)
                        .is_some_and(|&x| x == v || e.get(&v).copied() == Some(x))
                })
            });
            if let Some(p) = through {
                repl.insert(v, op.results[p]);
                continue;
            }
            let outer = repl.get(&v).copied().unwrap_or(v);
            for (r, e) in op.regions.iter_mut().zip(ends) {
                if let Some(y) = r.ops.last_mut() {
                    y.operands.push(e.get(&v).copied().unwrap_or(outer));
                }
            }
            let ty = self.m.ty(v).clone();
            let name = self.m.name(v).map(|s| format!("{s}_j"));
            let res = self.m.new_value(ty, name);
            op.results.push(res);
            repl.insert(v, res);
        }
    }
}

/// The named barrier id the TMA-store epilogue uses (`tile.named_barrier {id = 1,
/// threads = 128}`; consumer warpgroup w synchronises on hardware barrier 1 + w).
pub const EPILOGUE_BARRIER_ID: i64 = 1;

fn place_kernel(
    m: &mut Module,
    k: &mut Operation,
    stats: &mut PlacementStats,
    remarks: &mut Vec<Diagnostic>,
) {
    let mut reads = false;
    let mut marked = false;
    k.walk(&mut |o| {
        reads |= o.kind == OpKind::SmemLoad || o.kind == OpKind::Mma;
        marked |= is_placed(o) && matches!(o.kind, OpKind::Barrier | OpKind::NamedBarrier);
    });
    let input = (reads && marked).then(|| k.clone());
    let mut s = PlacementStats::default();
    let mut r = vec![];
    place_kernel_once(m, k, &mut s, &mut r);
    // A marked barrier that orders the program's own exchange through shared memory, and
    // that no kind re-derives, is kept (see `keep_exchange_barriers`), and the kernel
    // placed again around it.
    if let Some(mut input) = input {
        let base = exchange_races(m, &input);
        let lost: BTreeSet<usize> = exchange_races(m, k).difference(&base).copied().collect();
        if !lost.is_empty() && keep_exchange_barriers(m, &mut input, &lost) {
            (s, r) = (PlacementStats::default(), vec![]);
            place_kernel_once(m, &mut input, &mut s, &mut r);
            input.walk_mut(&mut |o| {
                if let Some(a) = o.attrs.remove(KEPT) {
                    o.attrs.insert(PLACED.into(), a);
                }
            });
            *k = input;
        }
    }
    order_wait_operands(k);
    stats.add(&s);
    remarks.extend(r);
}

/// Puts each `tile.wait_group`'s operands, with their results, in the order their values
/// are defined in the text (which printing and parsing keep). The rewrite hands a wait the
/// value that a join (a `tile.if`'s or a loop's new result) makes of an operand in that
/// operand's place; a second run finds the join's value where it is defined, so without
/// this the two runs could order the same operands differently.
fn order_wait_operands(k: &mut Operation) {
    let mut order: HashMap<Value, usize> = HashMap::new();
    k.walk(&mut |o| {
        for &r in &o.results {
            let n = order.len();
            order.entry(r).or_insert(n);
        }
        for b in &o.regions {
            for &a in &b.args {
                let n = order.len();
                order.entry(a).or_insert(n);
            }
        }
    });
    k.walk_mut(&mut |o| {
        if o.kind != OpKind::WaitGroup || o.operands.len() != o.results.len() {
            return;
        }
        let mut pairs: Vec<(Value, Value)> = o
            .operands
            .iter()
            .copied()
            .zip(o.results.iter().copied())
            .collect();
        pairs.sort_by_key(|(v, _)| order.get(v).copied().unwrap_or(usize::MAX));
        (o.operands, o.results) = pairs.into_iter().unzip();
    });
}

fn place_kernel_once(
    m: &mut Module,
    k: &mut Operation,
    stats: &mut PlacementStats,
    remarks: &mut Vec<Diagnostic>,
) {
    // Every kind's ops are stripped before any is placed, so that each kind is placed on
    // the same IR whether or not the kernel was placed before (placing twice changes
    // nothing).
    for kind in GroupKind::ALL {
        strip(k, kind);
    }
    let mut first = PlacementStats::default();
    for kind in GroupKind::ALL {
        place_kernel_kind(m, k, &mut first, remarks, kind);
    }
    // Each kind was placed with the ops of the kinds before it in the IR, not those after:
    // a barrier a later kind placed may make an earlier kind's barrier redundant (and its
    // wait free to move). Where one has, each kind is placed again, alone, with every
    // other kind's ops in place, until nothing changes; the result is kept if it is safe
    // for every kind (with each kind's decisions read back from the IR), else the first
    // placement.
    let placed = k.clone();
    let mut in_flight = first.in_flight.clone();
    let mut analyses = first.loop_analyses;
    let mut kinds = 0;
    for kind in GroupKind::ALL {
        let mut has = false;
        k.walk(&mut |o| has |= kind.is_group_op(o));
        kinds += usize::from(has);
    }
    let rounds = if kinds > 1 && has_shadowed_barrier(m, k) {
        REPLACE_ROUNDS
    } else {
        0
    };
    for _ in 0..rounds {
        let before = placed_shape(k);
        for kind in GroupKind::ALL {
            strip(k, kind);
            let mut s = PlacementStats::default();
            place_kernel_kind(m, k, &mut s, &mut vec![], kind);
            analyses += s.loop_analyses;
            if kind == GroupKind::Wgmma {
                in_flight = s.in_flight;
            }
        }
        if placed_shape(k) == before {
            break;
        }
    }
    // Unchanged, it is the first placement, safe by construction.
    if placed_shape(k) != placed_shape(&placed)
        && !GroupKind::ALL
            .iter()
            .all(|&kind| frozen_safe_as_placed(m, k, kind))
    {
        *k = placed;
        in_flight = first.in_flight;
    }
    let mut counted = count_placed(k);
    counted.in_flight = in_flight;
    counted.loop_analyses = analyses;
    stats.add(&counted);
}

/// Where a kept barrier's mark waits while the kinds are stripped and placed.
const KEPT: &str = "placed.kept";

/// Marks for keeping the barriers of `k` marked `placed` that order the exchanges `lost`
/// (see [`exchange_races`]): those that the placement of every kind leaves unordered once
/// the marked barriers are gone. From all the marked barriers, each in program order is
/// dropped where the others still order as much of `lost` (two marked barriers where one
/// does keep one; one in each branch of a `tile.if` keeps both). A kept barrier's mark
/// moves to [`KEPT`], so that no kind strips it, and comes back after placement. Such a
/// barrier is the program's with a mark it should not carry, or one the pass placed that
/// also orders a racy program's exchange; kept, marked, it stays on a second run, which
/// finds the same `lost`. Returns whether any was kept.
fn keep_exchange_barriers(m: &Module, k: &mut Operation, lost: &BTreeSet<usize>) -> bool {
    let mut sites = vec![];
    for (r, b) in k.regions.iter().enumerate() {
        barrier_sites(b, &mut vec![r], &mut sites);
    }
    // The races of `lost` left with only the marked barriers `keep` says (barriers have no
    // regions, so deleting from the last site back keeps the earlier paths valid).
    let left = |keep: &[bool]| -> BTreeSet<usize> {
        let mut x = k.clone();
        for (path, _) in sites.iter().zip(keep).rev().filter(|(_, &kept)| !kept) {
            remove_at(&mut x, path);
        }
        exchange_races(m, &x).intersection(lost).copied().collect()
    };
    // With every marked barrier none of `lost` races (`lost` excludes `k`'s own races).
    let mut keep = vec![true; sites.len()];
    for i in 0..sites.len() {
        keep[i] = false;
        if !left(&keep).is_empty() {
            keep[i] = true;
        }
    }
    for (path, _) in sites.iter().zip(&keep).filter(|(_, &kept)| kept) {
        if let Some(op) = op_at_mut(k, path) {
            if let Some(a) = op.attrs.remove(PLACED) {
                op.attrs.insert(KEPT.into(), a);
            }
        }
    }
    keep.contains(&true)
}

/// The op at `path` (as [`barrier_sites`] gives it) in `k`.
fn op_at_mut<'k>(k: &'k mut Operation, path: &[usize]) -> Option<&'k mut Operation> {
    let (&last, inner) = path.split_last()?;
    block_at_mut(k, inner)?.ops.get_mut(last)
}

/// The shared-memory accesses of `k` that can race with another thread's, by a forward
/// dataflow over the structured IR with buffers (not stages) as the unit: a
/// `tile.smem_load`, or a wgmma's read of a shared-memory operand, of a buffer that a
/// `tile.smem_store` wrote since the last `tile.barrier` on some path (read after write),
/// and a `tile.smem_store`, `tile.cp_async` or `tile.tma_load` into a buffer read so since
/// then (write after read). A named barrier of every thread of the kernel orders the stores
/// before it, as in [`crate::async_sim`]. Each access is named by its place among the
/// kernel's shared-memory accesses in pre-order, which deleting a barrier does not change.
fn exchange_races(m: &Module, k: &Operation) -> BTreeSet<usize> {
    let mut index = HashMap::new();
    k.walk(&mut |o| {
        if !exchange_accesses(m, o).is_empty() {
            let n = index.len();
            index.insert(o as *const Operation, n);
        }
    });
    let threads = tilec_dialect::ops::block_threads(k).unwrap_or(128);
    let mut x = Exchange {
        m,
        index,
        threads,
        races: BTreeSet::new(),
    };
    let mut s = ExchangeState::default();
    for b in &k.regions {
        s = x.block(b, s);
    }
    x.races
}

/// The buffers a shared-memory access of the exchange analysis touches: (buffer, whether
/// it reads it).
fn exchange_accesses(m: &Module, o: &Operation) -> Vec<(Value, bool)> {
    match o.kind {
        OpKind::SmemLoad => o.operands.first().map(|&v| (v, true)).into_iter().collect(),
        OpKind::SmemStore | OpKind::CpAsync | OpKind::TmaLoad => {
            o.operands.get(1).map(|&v| (v, false)).into_iter().collect()
        }
        OpKind::Mma => o.operands[..o.operands.len().min(2)]
            .iter()
            .filter(|&&v| matches!(m.ty(v), Type::Smem { .. }))
            .map(|&v| (v, true))
            .collect(),
        _ => vec![],
    }
}

/// Buffers written with `tile.smem_store` and read with `tile.smem_load` since the last
/// barrier, on some path.
#[derive(Clone, Default, PartialEq, Eq)]
struct ExchangeState {
    stored: BTreeSet<Value>,
    loaded: BTreeSet<Value>,
}

impl ExchangeState {
    fn join(&mut self, o: &ExchangeState) {
        self.stored.extend(o.stored.iter().copied());
        self.loaded.extend(o.loaded.iter().copied());
    }
}

struct Exchange<'m> {
    m: &'m Module,
    index: HashMap<*const Operation, usize>,
    threads: i64,
    races: BTreeSet<usize>,
}

impl Exchange<'_> {
    fn block(&mut self, b: &Block, mut s: ExchangeState) -> ExchangeState {
        for o in &b.ops {
            s = self.op(o, s);
        }
        s
    }

    fn op(&mut self, o: &Operation, mut s: ExchangeState) -> ExchangeState {
        match o.kind {
            OpKind::Barrier => return ExchangeState::default(),
            OpKind::NamedBarrier => {
                if o.int_attr("threads").unwrap_or(0) >= self.threads {
                    s.stored.clear();
                }
                return s;
            }
            OpKind::For | OpKind::While => {
                // The head state grows to a fixpoint (finitely many buffers), and every
                // trip's accesses are checked against it. A tile.for may run no trip; a
                // tile.while runs its body at least once and leaves after it.
                let mut head = s;
                loop {
                    let mut next = head.clone();
                    let mut end = ExchangeState::default();
                    for r in &o.regions {
                        end = self.block(r, head.clone());
                        next.join(&end);
                    }
                    if next == head {
                        return if o.kind == OpKind::While { end } else { head };
                    }
                    head = next;
                }
            }
            _ if !o.regions.is_empty() => {
                // A branch runs one side (an if without else an empty one); the regions of
                // other ops (warp_specialize) run, each from the state before.
                let mut out = ExchangeState::default();
                for r in &o.regions {
                    let end = self.block(r, s.clone());
                    out.join(&end);
                }
                return out;
            }
            _ => {}
        }
        let Some(&id) = self.index.get(&(o as *const Operation)) else {
            return s;
        };
        for (buf, read) in exchange_accesses(self.m, o) {
            if read {
                if s.stored.contains(&buf) {
                    self.races.insert(id);
                }
                s.loaded.insert(buf);
            } else {
                if s.loaded.contains(&buf) {
                    self.races.insert(id);
                }
                if o.kind == OpKind::SmemStore {
                    s.stored.insert(buf);
                }
            }
        }
        s
    }
}

/// Whether some barrier the pass placed in `k` can go with every kind's placement
/// (read back from the IR) still safe: a later kind's barrier made it redundant.
fn has_shadowed_barrier(m: &Module, k: &Operation) -> bool {
    let mut sites = vec![];
    for (r, b) in k.regions.iter().enumerate() {
        barrier_sites(b, &mut vec![r], &mut sites);
    }
    sites.iter().any(|path| {
        let mut without = k.clone();
        remove_at(&mut without, path).is_some()
            && GroupKind::ALL
                .iter()
                .all(|&kind| frozen_safe_as_placed(m, &without, kind))
    })
}

/// The paths (region index, then op index and region index per level, then the op index)
/// of the barriers under `b` that the pass placed (marked), in op order.
fn barrier_sites(b: &Block, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    for (i, o) in b.ops.iter().enumerate() {
        if is_placed(o) && matches!(o.kind, OpKind::Barrier | OpKind::NamedBarrier) {
            let mut p = path.clone();
            p.push(i);
            out.push(p);
        }
        for (r, region) in o.regions.iter().enumerate() {
            path.extend([i, r]);
            barrier_sites(region, path, out);
            path.truncate(path.len() - 2);
        }
    }
}

/// The attribute on every proxy fence and barrier the pass places: the
/// kind that placed it ([`GroupKind::mark`]).
const PLACED: &str = "placed";

/// Whether `op` is a proxy fence or barrier the pass placed.
fn is_placed(op: &Operation) -> bool {
    op.attr(PLACED).is_some()
}

/// Whether `op` carries the `placed` mark of `kind`.
fn placed_by(op: &Operation, kind: GroupKind) -> bool {
    matches!(op.attr(PLACED), Some(Attribute::Str(k)) if k == kind.mark())
}

/// Removes the op at `path` (as [`barrier_sites`] gives it) from `k`.
fn remove_at(k: &mut Operation, path: &[usize]) -> Option<Operation> {
    let (&last, inner) = path.split_last()?;
    let b = block_at_mut(k, inner)?;
    (last < b.ops.len()).then(|| b.ops.remove(last))
}

/// The block at `path` (region, then (op, region) pairs) in `k`.
fn block_at_mut<'k>(k: &'k mut Operation, path: &[usize]) -> Option<&'k mut Block> {
    let (&r, rest) = path.split_first()?;
    let mut b = k.regions.get_mut(r)?;
    for step in rest.chunks(2) {
        let [i, r] = *step else { return None };
        b = b.ops.get_mut(i)?.regions.get_mut(r)?;
    }
    Some(b)
}

/// The ops of `k` in order with their `pending` (what a placement changes; wait results
/// are fresh values each time).
fn placed_shape(k: &Operation) -> Vec<(OpKind, Option<i64>)> {
    let mut v = vec![];
    k.walk(&mut |o| v.push((o.kind, o.int_attr("pending"))));
    v
}

/// Rounds of placing each kind again (see `place_kernel`).
const REPLACE_ROUNDS: usize = 3;

/// Marks the placed ops of `kind` leave on the op they stood before, once stripped.
const MARK_WAIT: &str = "__placed_wait";
const MARK_BARRIER: &str = "__placed_barrier";
const MARK_PROXY_FENCE: &str = "__placed_proxy_fence";
const MARK_FENCE: &str = "__placed_fence";

/// The ops the pass owns in `k`, counted (all but `in_flight`).
fn count_placed(k: &Operation) -> PlacementStats {
    fn block(b: &Block, s: &mut PlacementStats) {
        for o in &b.ops {
            let n = usize::try_from(o.int_attr("pending").unwrap_or(0))
                .unwrap_or(7)
                .min(7);
            match o.kind {
                OpKind::WaitGroup => s.waits[n] += 1,
                OpKind::BulkWaitGroup => s.bulk_waits[n] += 1,
                OpKind::CpAsyncWaitGroup => s.cp_async_waits[n] += 1,
                OpKind::CommitGroup => s.commits += 1,
                OpKind::BulkCommitGroup => s.bulk_commits += 1,
                OpKind::CpAsyncCommitGroup => s.cp_async_commits += 1,
                OpKind::WgmmaFence => s.fences += 1,
                OpKind::FenceProxyAsync if is_placed(o) => s.proxy_fences += 1,
                OpKind::Barrier if is_placed(o) => s.barriers += 1,
                OpKind::NamedBarrier if is_placed(o) => s.named_barriers += 1,
                _ => {}
            }
            for r in &o.regions {
                block(r, s);
            }
        }
    }
    let mut s = PlacementStats::default();
    for r in &k.regions {
        block(r, &mut s);
    }
    s
}

/// Whether the ops of `kind` placed in `k` are safe: they are stripped, each leaving its
/// decision as a mark on the op it stood before, and the analysis runs with those
/// decisions frozen.
fn frozen_safe_as_placed(m: &Module, k: &Operation, kind: GroupKind) -> bool {
    let mut c = k.clone();
    strip_marking(&mut c, kind, true);
    let f = Facts::of_kind(m, &c, kind);
    if f.groups.is_empty() {
        return true;
    }
    let mut decisions = HashMap::new();
    for (id, o) in f.ops.iter().enumerate() {
        let marked = |name: &str| o.attr(name).is_some();
        if ![MARK_WAIT, MARK_BARRIER, MARK_PROXY_FENCE, MARK_FENCE]
            .iter()
            .any(|n| marked(n))
        {
            continue;
        }
        let d = Decision {
            wait: o
                .int_attr(MARK_WAIT)
                .map(|n| u8::try_from(n).unwrap_or(MAX_PENDING)),
            barrier: marked(MARK_BARRIER),
            proxy_fence: marked(MARK_PROXY_FENCE),
            fence: marked(MARK_FENCE),
            ..Decision::default()
        };
        decisions.insert(id as OpId, d);
    }
    let mut a = Analysis {
        m,
        f: &f,
        frozen: true,
        violations: 0,
        decisions,
        in_flight: HashMap::new(),
        loop_runs: 0,
        memo: None,
        entered_busy: BTreeSet::new(),
        drain: BTreeSet::new(),
    };
    a.frozen_safe(&c.regions[0])
}

fn place_kernel_kind(
    m: &mut Module,
    k: &mut Operation,
    stats: &mut PlacementStats,
    remarks: &mut Vec<Diagnostic>,
    kind: GroupKind,
) {
    let (decisions, operands, wgmma, loops) = {
        let f = Facts::of_kind(m, k, kind);
        if f.groups.is_empty() {
            return;
        }
        let mut a = Analysis {
            m,
            f: &f,
            frozen: false,
            violations: 0,
            decisions: HashMap::new(),
            in_flight: HashMap::new(),
            loop_runs: 0,
            memo: Some(vec![]),
            entered_busy: BTreeSet::new(),
            drain: BTreeSet::new(),
        };
        a.decide(k);
        if kind == GroupKind::Wgmma {
            a.drain_before_loops(k);
        }
        let operands = wait_operands(&f, k, &a.decisions, None);
        for (&id, d) in &a.decisions {
            if let Some(ring) = d.single_stage.filter(|_| kind == GroupKind::Wgmma) {
                let name = m
                    .name(ring)
                    .map_or_else(|| "a ring".to_string(), |n| format!("'%{n}'"));
                remarks.push(Diagnostic::remark(
                    f.ops[id as usize].loc.clone(),
                    format!(
                        "{name} has one stage: every wgmma reading it must complete here \
                            (pending = 0); a second stage would let one group stay in flight \
                            (pending \
                            = 1)"
                    ),
                ));
            }
        }
        let mut loops: Vec<(Location, u64)> = a
            .in_flight
            .iter()
            .filter(|(_, &n)| n > 0 && kind == GroupKind::Wgmma)
            .map(|(&id, &n)| (f.ops[id as usize].loc.clone(), n))
            .collect();
        loops.sort_by_key(|l| (l.0.line, l.0.col));
        stats.loop_analyses += a.loop_runs;
        let wgmma: BTreeSet<OpId> = f.groups.keys().copied().collect();
        (a.decisions, operands, wgmma, loops)
    };
    stats.in_flight.extend(loops);
    let mut rw = Rewriter {
        kind,
        m,
        decisions,
        operands,
        wgmma,
        next_id: 1,
        stats,
    };
    for r in &mut k.regions {
        rw.block(r, &HashMap::new());
    }
}

impl Pass for AsyncWaitPlacement {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let s = place_async_waits(m, &mut cx.diagnostics);
        cx.stat("waits-placed", s.waits.iter().sum());
        for (n, &c) in s.waits.iter().enumerate() {
            if c > 0 {
                cx.stat(&format!("waits-N{n}"), c);
            }
        }
        cx.stat("fences", s.fences);
        cx.stat("commits", s.commits);
        cx.stat("loop-analyses", s.loop_analyses);
        cx.stat("barriers", s.barriers);
        if s.bulk_commits > 0 {
            cx.stat("bulk-waits-placed", s.bulk_waits.iter().sum());
            for (n, &c) in s.bulk_waits.iter().enumerate() {
                if c > 0 {
                    cx.stat(&format!("bulk-waits-N{n}"), c);
                }
            }
            cx.stat("bulk-commits", s.bulk_commits);
            cx.stat("named-barriers", s.named_barriers);
        }
        if s.cp_async_commits > 0 {
            cx.stat("cp-async-waits-placed", s.cp_async_waits.iter().sum());
            for (n, &c) in s.cp_async_waits.iter().enumerate() {
                if c > 0 {
                    cx.stat(&format!("cp-async-waits-N{n}"), c);
                }
            }
            cx.stat("cp-async-commits", s.cp_async_commits);
            cx.stat("proxy-fences", s.proxy_fences);
        }
        for (loc, n) in &s.in_flight {
            cx.stat(&format!("groups-in-flight (loop at {loc})"), *n);
        }
        Ok(())
    }
}
