//! `verify-async-waits` — an independent check that every wgmma wait is safe and tight.
//!
//! It re-derives what `async-wait-placement` computes, by different means: instead of a
//! dataflow over "fewest commits after each group", it explores the paths of the
//! structured IR one by one, carrying the *exact* queue of each path — the committed
//! groups in order, the wgmmas issued but not yet committed, the groups retired but not
//! yet followed by a CTA barrier, and the registers touched since the last fence. Both
//! sides of a branch are taken; loops run 0, 1, 2, … iterations: the first two are
//! always unrolled, later ones until no path brings a queue not seen at the loop head
//! before (paths with equal queues have equal futures, so the exploration is exhaustive);
//! a `tile.while` runs its body at least once. Where only safety is asked (not the
//! diagnostics), a path that another at the same op dominates is dropped: every group it
//! has pending is pending there too, no older, and each step keeps that order, so it meets
//! no hazard the other does not (`Queue::dominated_by`).
//! What counts as a hazard is defined once for placement and this explorer, in
//! [`crate::async_model`].
//!
//! A second analysis shares nothing with that model: [`crate::async_sim`] runs the kernel on
//! concrete paths (every branch side, trip counts 0–5, and enough trips for every pair of
//! ring stages to meet; unknown values chosen), with concrete
//! queues, register sets and stage numbers, by the PTX ISA's rules. Once the explorer has
//! found a kernel safe and tight, the simulation must agree: no run may meet a hazard; and
//! each wait raised by one, each wait moved one op later (not past a fence or a barrier,
//! nor past an op that uses its results: the explorer's moves keep the IR well-formed, so
//! it tries none of those; nor, as the explorer, past the op it guards, one that meets a
//! hazard when the wait is deleted), and each `tile.wgmma_fence` deleted, must meet a
//! hazard on some run. A disagreement is
//! an error naming both analyses: one of the models is wrong (`tests/async_waits_prop.rs`
//! seeds bugs into `async_model` and shows them caught). A simulation that runs out of `sim_runs`
//! leaves the explorer's verdict alone and is counted in `sim-incomplete`.
//!
//! Bulk store groups (`tile.tma_store` / `tile.bulk_commit_group` /
//! `tile.bulk_wait_group`) are a second, independent kind with their own counters: each
//! kernel is explored once per kind, the other kind's ops being ordinary ops. For bulk
//! groups the hazards are a `tile.smem_store` into a slot a pending group reads and the
//! warpgroup's exit, and a retired group's slot may be rewritten only after a
//! `tile.named_barrier` follows the wait (the elected thread waits; all 128 threads
//! write). The tightness rules are the same, with `tile.named_barrier` in the place of
//! `tile.barrier`. cp.async groups (`tile.cp_async` / `tile.cp_async_commit_group` /
//! `tile.cp_async_wait_group`) are the third kind: a copy writes its stage, so any access
//! of the stage is a hazard while it is pending, and until a `tile.barrier` follows the
//! wait (each thread waits for its own chunks). The simulation also checks what the
//! explorer leaves out: that a `tile.fence_proxy_async` comes between the wait and the
//! barrier that publishes a copy before wgmma or TMA reads or rewrites the stage (and
//! flags a proxy fence that could be deleted), and that shared memory exchanged between
//! threads is ordered by a barrier: a stage read with `tile.smem_load` is not rewritten,
//! and a stage written with `tile.smem_store` is not read with `tile.smem_load`, before a
//! `tile.barrier` (or a `tile.named_barrier` of every thread that runs the code). That
//! simulation runs on every kernel that uses shared memory in these ways, with asynchronous
//! groups or without. A barrier after a cp.async wait is
//! reported unneeded only if the simulation agrees. Before any exploration, each block is
//! checked for the staging hand-off:
//! between the `tile.smem_store` that writes a slot and the `tile.tma_store` that reads it,
//! a `tile.fence_proxy_async` and the warpgroup's `tile.named_barrier` (`threads` = 128).
//!
//! Errors, each at the op concerned, with notes at the group's `tile.mma` and the last wait
//! on the path, and the path spelled out ("iteration 2 of the loop at f:12:3, then-branch
//! of the if at f:15:5"):
//! - **unsafe**: a hazard that, on some path, sees a group pending (or a wgmma not yet
//!   committed); an overwrite that another warpgroup's group may still read because no
//!   `tile.barrier` follows the wait that retired it (≥ 2 warpgroups); a wgmma with no
//!   `tile.wgmma_fence` since the warpgroup started or since another op touched its
//!   registers.
//!   After reporting, a path goes on as if the wait (barrier, fence) it needed were there,
//!   so one missing wait gives one error, not one per later op.
//! - **untied** (checked when no path is unsafe): an op other than a wait, a hand-on
//!   (`tile.if`, loop and `tile.warp_specialize` yields, loop inits, `tile.reshape`,
//!   `tile.transpose`) or the next wgmma of the chain (as its accumulator) reads a wgmma's
//!   result, or a value handed on from it, that no wait retiring its group has taken (a
//!   wait that takes it while, on some path of the exploration, the group stays pending
//!   hands it on). The lowering orders only a wait's operands after `wgmma.wait_group`, so
//!   such a read is unordered even where every path's wait has retired the group.
//! - **not tight** (checked when the kernel is safe, by re-running the exploration on a
//!   changed copy, waits taken last to first): a wait that can be deleted and stay safe
//!   (redundant; it is then deleted from the copy, so the waits reported redundant can all
//!   go together); a wait whose `pending` can be raised by one and stay safe; a wait that
//!   can be swapped with the op after it (a loop passed whole, when it reads none of the
//!   wait's results; or sunk into both branches of a `tile.if` after it, when nothing uses
//!   its results) and stay safe — unless that op is one it guards
//!   (unsafe on some path without the wait), since "as late as possible" means "directly
//!   before the first hazard"; a wait after a `tile.if` (only scalar ops in between) whose
//!   hazard stays safe with the wait moved into the branches and `pending` raised by one in
//!   one of them (a copy after the hazard keeps the rest as it was): a join must not force
//!   the smaller N on both paths; a `tile.barrier` directly after a wait that can be
//!   deleted and stay safe; a `tile.wgmma_fence` that can be deleted and stay safe, or
//!   that stands in a loop body and can move before the loop and stay safe. A wait is
//!   never moved past a `tile.wgmma_fence`, which belongs to the wgmma after it.
//!
//! The exploration of one kernel is bounded by `max_steps` (path, op) steps; a kernel
//! that needs more is reported as not proven (the example GEMM takes under 500). Two exact
//! reductions keep the queues few: a queue orders only the youngest N + 1 groups, N the
//! largest `pending` in the kernel (every wait retires the older ones); and when only
//! safety is asked (the tightness variants, and the first pass over a kernel) a group is
//! known by its registers and stages, not by which `tile.mma` issued it. In those
//! safety-only explorations a loop is also summarised: its exit queues for a set of entry
//! queues (or a single one) are computed once per exploration, so a nest of d loops costs
//! a few summaries per level rather than 2^d runs of the innermost body.
//!
//! Options: `max_steps` (1000000); `sim_runs` (4096 runs per simulation, 0 for none).
//! Statistics: `waits-checked`, `path-steps` (of the safety explorations), `sim-runs`,
//! `sim-witnesses` (changed waits and fences for which a run met a hazard),
//! `sim-incomplete`, `kernels-checked`.
//!
//! Example: `tile-opt gemm.tile --tile-to-gpu --async-wait-placement --verify-async-waits`
//! passes; `tests/lit/passes/verify-async-waits.tile` holds rejected variants, e.g.
//!
//! ```text
//! f.tile:23:5: error: 'tile.mbarrier_arrive' releases to its producer a shared-memory stage
//!   that the wgmma group of the 'tile.mma' at f.tile:12:3 reads, which may still be pending
//!   (1 group committed after it) on the path: iteration 1 of the loop at f.tile:14:3
//! f.tile:12:3: note: the group's 'tile.mma'
//! f.tile:22:5: note: the last wait on that path (pending = 2) leaves it pending
//! ```

use crate::async_model::{
    fence_ahead, is_wgmma, placed_sync, scalar_only, wait_may_stand_before, Facts, GroupKind,
    Hazard, Inst, OpId, Slot, MAX_PENDING,
};
use crate::pass::{OptionInfo, OptionKind, Pass, PassContext, PassInfo};
use std::collections::{BTreeMap, BTreeSet};
use tilec_dialect::{
    Attribute, Diagnostic, Diagnostics, Location, Module, OpKind, Operation, Value,
};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "verify-async-waits",
    summary: "Check that every wgmma wait is safe and tight, by path exploration and by simulation",
    description: "Explores every path of each kernel (both branch sides, loops unrolled at least \
        twice and until the group queues repeat) with the exact queue of pending wgmma groups, and \
        rejects a hazard that can see a pending group, a missing fence or CTA barrier, and a \
        wait whose pending could be larger, that is redundant, or that could move later. Then \
        runs an executable model that shares nothing with the explorer's (async_sim: concrete \
        runs, every branch and trip-count choice) and rejects any disagreement. Bulk store \
        and cp.async groups are checked alike (for cp.async, the simulation also checks the \
        proxy fence before wgmma or TMA reads a copy). Changes nothing.\n\nExample: \
        tile-opt k.tile --async-wait-placement \
        --verify-async-waits",
    options: &[
        OptionInfo {
            name: "max_steps",
            kind: OptionKind::UInt,
            default: "1000000",
            help: "Budget of one path exploration in (path, op) steps; a kernel that needs more \
                is reported, not proven",
        },
        OptionInfo {
            name: "sim_runs",
            kind: OptionKind::UInt,
            default: "4096",
            help: "Budget of one concrete simulation (async_sim) in runs; 0 turns the \
                simulation off. A simulation that runs out is counted in sim-incomplete, not \
                reported",
        },
    ],
};

/// The pass.
pub struct VerifyAsyncWaits {
    /// Its budgets.
    pub options: CheckOptions,
}

/// The budgets of [`verify_async_waits`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckOptions {
    /// The budget of one path exploration, in (path, op) steps.
    pub max_steps: u64,
    /// The budget of one concrete simulation ([`crate::async_sim`]), in runs; 0: none.
    pub sim_runs: u64,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            max_steps: DEFAULT_MAX_STEPS,
            sim_runs: crate::async_sim::DEFAULT_RUNS,
        }
    }
}

/// The most committed groups a queue keeps in order: older ones are only known to be
/// older, since every wait retires them. Per kernel it is one more than the largest
/// `pending` of its waits (exact, and it keeps the queues few: most kernels wait with 0 or
/// 1); this is the bound for any kernel.
const MAX_KEEP: usize = MAX_PENDING as usize + 1;

/// A queue's pending instances with their distances ([`Queue::distances`]).
type Distances = Vec<(Inst, u32)>;

/// The exact per-path state.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Queue {
    /// Committed groups, oldest first.
    committed: Vec<Vec<Inst>>,
    /// Groups with at least `keep` groups committed after them.
    old: BTreeSet<Inst>,
    /// wgmmas issued since the last commit.
    open: Vec<Inst>,
    /// Retired by this warpgroup's wait, not yet followed by a CTA barrier.
    unsynced: BTreeSet<Inst>,
    /// Register slots of wgmmas touched by other ops since the last fence.
    dirty: BTreeSet<Slot>,
    /// No fence yet on this path.
    unfenced: bool,
}

impl Queue {
    /// Each pending instance, in order, with its distances from the youngest committed
    /// group as a bit set: bit d + 1 for distance d, -1 open, `keep` old (retired by any
    /// wait); a wait of N retires the occurrences at N or more.
    fn distances(&self, keep: usize) -> Distances {
        let n = self.committed.len();
        let mut d: Vec<(Inst, u32)> = self.open.iter().map(|i| (i.clone(), 1)).collect();
        for (j, g) in self.committed.iter().enumerate() {
            d.extend(g.iter().map(|i| (i.clone(), 1 << (n - j))));
        }
        d.extend(self.old.iter().map(|i| (i.clone(), 1 << (keep + 1))));
        d.sort();
        d.dedup_by(|b, a| {
            let same = a.0 == b.0;
            if same {
                a.1 |= b.1;
            }
            same
        });
        d
    }

    /// Whether every path from `self` meets a hazard only where the same path from `p`
    /// does (at the same op or before), so that `self` need not be explored beside `p`.
    /// Each step keeps the order (a wait, a commit, an issue, a barrier, a fence, a loop's
    /// renaming), and a hazard found from `self` is found from `p`:
    /// - each pending instance of `self` is pending in `p`, no older (a wait that keeps it
    ///   in `self` keeps it in `p`); an instance with a register A fragment is pending
    ///   in `p` at every distance it has in `self`, so that each wait that retires it in
    ///   `self` also does in `p` (whether that wait takes the fragment is checked there);
    /// - an instance retired without a barrier since in `self` is so in `p`, or pending;
    /// - `p` has every dirty register slot of `self`, and is unfenced if `self` is.
    ///
    /// `mine` and `theirs` are the [`Queue::distances`] of `self` and `p`; `reg_a` says
    /// whether an instance's wgmma takes A from registers. `Mode::Collect` goes on after
    /// an error with a step that keeps this order (each conflicting group retired alone,
    /// each overwritten one synchronised, the wgmma's own registers fenced); `Mode::Full`'s
    /// diagnostics follow each path, and a probe counts groups.
    fn dominated_by(
        &self,
        p: &Queue,
        mine: &Distances,
        theirs: &Distances,
        reg_a: &dyn Fn(&Inst) -> bool,
    ) -> bool {
        if (self.unfenced && !p.unfenced)
            || mine.len() > theirs.len()
            || !self.dirty.is_subset(&p.dirty)
        {
            return false;
        }
        let mut rest = theirs.iter();
        for (i, m) in mine {
            let Some((_, t)) = rest.by_ref().find(|(j, _)| j >= i).filter(|(j, _)| j == i) else {
                return false;
            };
            let ok = if reg_a(i) {
                m & !t == 0
            } else {
                t.trailing_zeros() <= m.trailing_zeros()
            };
            if !ok {
                return false;
            }
        }
        self.unsynced
            .iter()
            .all(|i| p.unsynced.contains(i) || theirs.binary_search_by(|(j, _)| j.cmp(i)).is_ok())
    }

    fn insts_mut(&mut self) -> impl Iterator<Item = &mut Inst> {
        self.committed
            .iter_mut()
            .flatten()
            .chain(self.open.iter_mut())
    }
    fn map_sets(&mut self, f: &dyn Fn(&mut Inst)) {
        for i in self.insts_mut() {
            f(i);
        }
        // Two instances the mapping made equal are one: issued again without a commit, a
        // wgmma joins the open group it is already in (the state stays finite).
        self.open.sort();
        self.open.dedup();
        for g in &mut self.committed {
            g.sort();
            g.dedup();
        }
        self.old = std::mem::take(&mut self.old)
            .into_iter()
            .map(|mut i| {
                f(&mut i);
                i
            })
            .collect();
        self.unsynced = std::mem::take(&mut self.unsynced)
            .into_iter()
            .map(|mut i| {
                f(&mut i);
                i
            })
            .collect();
    }
}

/// One step of a path, for messages.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// Inside iteration k of a loop.
    Iter(OpId, u32),
    /// A loop ran k times.
    Ran(OpId, u32),
    /// A side of a branch.
    Branch(OpId, bool),
    /// A region of a warp_specialize.
    Region(OpId, usize),
}

#[derive(Clone, Debug, Default)]
struct Trail {
    steps: Vec<Step>,
    last_wait: Option<OpId>,
}

type States = BTreeMap<Queue, Trail>;

fn add(s: &mut States, q: Queue, t: Trail) {
    s.entry(q).or_insert(t);
}

struct Explorer<'a, 'k> {
    f: &'a Facts<'k>,
    mode: Mode,
    /// Committed groups kept in order (see [`MAX_KEEP`]).
    keep: usize,
    /// An error was found (`Mode::Quick`: stop).
    failed: bool,
    /// (path, op) steps taken, and the most allowed.
    steps: u64,
    budget: u64,
    /// The budget ran out: the exploration is incomplete.
    gave_up: bool,
    /// One error per offending op.
    errors: BTreeMap<OpId, Diagnostic>,
    /// The offending ops (`Mode::Collect`).
    offending: BTreeSet<OpId>,
    /// An op at which to record the most groups pending on any path (see
    /// [`pending_exceeds`]).
    probe: Option<OpId>,
    /// The most committed groups seen pending at `probe` (`usize::MAX`: more than kept).
    probe_max: usize,
    /// Loop summaries (`Mode::Quick` and `Mode::Collect`, where no path is spelled out):
    /// (loop, warpgroups, the queues at entry) → the queues at exit. A loop's exits
    /// depend on nothing else, so a nest reached again with queues met before is not
    /// explored again: depth d costs d summaries per distinct entry, not 2^d runs.
    loop_memo: BTreeMap<(OpId, u64, Vec<Queue>), Vec<Queue>>,
    /// (wait, operand index): on some path the operand's registers belong to a group that
    /// is still pending after the wait, so its result is not yet ordered after the group.
    through: BTreeSet<(OpId, usize)>,
}

/// How much an exploration reports.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Every error with its diagnostic.
    Full,
    /// Whether there is an error: stop at the first (groups known by their registers).
    Quick,
    /// Which ops are unsafe, without diagnostics (groups known by their registers).
    Collect,
}

impl Explorer<'_, '_> {
    fn loc(&self, id: OpId) -> &Location {
        &self.f.ops[id as usize].loc
    }

    fn path(&self, t: &Trail) -> String {
        if t.steps.is_empty() {
            return "straight-line code".into();
        }
        let parts: Vec<String> = t
            .steps
            .iter()
            .map(|s| match *s {
                Step::Iter(l, k) => format!("iteration {k} of the loop at {}", self.loc(l)),
                Step::Ran(l, 0) => format!("the loop at {} skipped", self.loc(l)),
                Step::Ran(l, k) => format!(
                    "{k} iteration{} of the loop at {}",
                    if k == 1 { "" } else { "s" },
                    self.loc(l)
                ),
                Step::Branch(i, then) => format!(
                    "{}-branch of the if at {}",
                    if then { "then" } else { "else" },
                    self.loc(i)
                ),
                Step::Region(w, r) => format!(
                    "{} region of the warp_specialize at {}",
                    if r == 0 { "producer" } else { "consumer" },
                    self.loc(w)
                ),
            })
            .collect();
        parts.join(", ")
    }

    fn report(&mut self, id: OpId, d: impl FnOnce(&Self) -> Diagnostic) {
        match self.mode {
            Mode::Quick => {
                self.failed = true;
                return;
            }
            Mode::Collect => {
                self.offending.insert(id);
                return;
            }
            Mode::Full => {}
        }
        if !self.errors.contains_key(&id) {
            let d = d(self);
            self.errors.insert(id, d);
        }
    }

    /// Whether a path may be dropped for one that dominates it ([`Queue::dominated_by`]):
    /// only where safety alone is asked and nothing is counted.
    fn prunes(&self) -> bool {
        self.mode != Mode::Full && self.probe.is_none()
    }

    fn reg_a(&self, i: &Inst) -> bool {
        self.f.groups[&i.mma].a.is_some()
    }

    /// Whether `q` is dominated by or equal to one of `by` (queues with their distances).
    fn dominated(&self, q: &Queue, by: &[(Queue, Distances)]) -> bool {
        let mine = q.distances(self.keep);
        by.iter()
            .any(|(p, d)| p == q || q.dominated_by(p, &mine, d, &|i| self.reg_a(i)))
    }

    /// `states` less those another of them dominates (where [`Explorer::prunes`]).
    fn prune(&self, states: States) -> States {
        if !self.prunes() || states.len() < 2 {
            return states;
        }
        let all: Vec<&Queue> = states.keys().collect();
        let dist: Vec<_> = all.iter().map(|q| q.distances(self.keep)).collect();
        let reg_a = |i: &Inst| self.reg_a(i);
        let keep: Vec<bool> = (0..all.len())
            .map(|a| {
                !(0..all.len()).any(|b| {
                    a != b
                        && all[a].dominated_by(all[b], &dist[a], &dist[b], &reg_a)
                        // Of two equivalent queues, the first stays.
                        && !(b > a && all[b].dominated_by(all[a], &dist[b], &dist[a], &reg_a))
                })
            })
            .collect();
        states
            .into_iter()
            .zip(keep)
            .filter_map(|(qt, k)| k.then_some(qt))
            .collect()
    }

    fn block(
        &mut self,
        b: &tilec_dialect::Block,
        mut states: States,
        wg: &mut u64,
        exit_at_end: bool,
    ) -> States {
        let n = b.ops.len();
        for (i, op) in b.ops.iter().enumerate() {
            if self.failed || self.gave_up || states.is_empty() {
                return States::new();
            }
            states = self.op(op, states, wg, exit_at_end && i + 1 == n);
        }
        states
    }

    fn op(&mut self, op: &Operation, states: States, wg: &mut u64, exit: bool) -> States {
        let id = self.f.id(op);
        if self.probe == Some(id) {
            for q in states.keys() {
                let n = if q.old.is_empty() {
                    q.committed.len()
                } else {
                    usize::MAX
                };
                self.probe_max = self.probe_max.max(n);
            }
        }
        match op.kind {
            OpKind::For | OpKind::While => {
                let exits = self.for_loop(op, id, states, *wg);
                self.prune(exits)
            }
            OpKind::If => {
                let mut out = States::new();
                for (r, then) in [(0, true), (1, false)] {
                    let entered = states.iter().map(|(q, t)| {
                        let mut t = t.clone();
                        t.steps.push(Step::Branch(id, then));
                        (q.clone(), t)
                    });
                    for (q, t) in
                        self.block(&op.regions[r], entered.collect(), &mut wg.clone(), false)
                    {
                        add(&mut out, q, t);
                    }
                }
                self.prune(out)
            }
            OpKind::WarpSpecialize => {
                let enter = |r: usize| -> States {
                    states
                        .iter()
                        .map(|(q, t)| {
                            let mut t = t.clone();
                            t.steps.push(Step::Region(id, r));
                            (q.clone(), t)
                        })
                        .collect()
                };
                self.block(&op.regions[0], enter(0), &mut 1, true);
                *wg = op.int_attr("consumers").unwrap_or(1).max(1) as u64;
                let mut consumers = *wg;
                self.block(&op.regions[1], enter(1), &mut consumers, false)
            }
            _ => {
                let mut out = States::new();
                for (q, t) in states {
                    if let Some((q, t)) = self.step(op, id, q, t, *wg, exit) {
                        add(&mut out, q, t);
                    }
                }
                out
            }
        }
    }

    fn for_loop(&mut self, op: &Operation, id: OpId, states: States, wg: u64) -> States {
        if self.mode == Mode::Full {
            return self.run_loop(op, id, states, wg);
        }
        // The exits of a set of entry queues met before are reused; so are those of each
        // single queue met before (a set of one); the other queues run together, as a set.
        // Trails are not reported in these modes.
        let all: Vec<Queue> = states.keys().cloned().collect();
        let trail = states.values().next().cloned().unwrap_or_default();
        let mut exits: Vec<Queue> = vec![];
        let mut rest = States::new();
        if let Some(x) = self.loop_memo.get(&(id, wg, all.clone())) {
            self.steps += 1;
            exits.extend(x.iter().cloned());
        } else {
            for (q, t) in states {
                match self.loop_memo.get(&(id, wg, vec![q.clone()])).cloned() {
                    Some(x) => {
                        self.steps += 1;
                        exits.extend(x);
                    }
                    None => add(&mut rest, q, t),
                }
            }
            if !rest.is_empty() {
                let key: Vec<Queue> = rest.keys().cloned().collect();
                let x: Vec<Queue> = self.run_loop(op, id, rest, wg).into_keys().collect();
                if self.failed || self.gave_up {
                    return States::new();
                }
                exits.extend(x.iter().cloned());
                self.loop_memo.insert((id, wg, key), x);
            }
            exits.sort();
            exits.dedup();
            self.loop_memo.insert((id, wg, all), exits.clone());
        }
        exits.into_iter().map(|q| (q, trail.clone())).collect()
    }

    fn run_loop(&mut self, op: &Operation, id: OpId, states: States, wg: u64) -> States {
        let mut out = States::new();
        let mut seen: BTreeSet<Queue> = BTreeSet::new();
        let mut frontier = States::new();
        for (q, t) in states {
            seen.insert(q.clone());
            // A tile.for may run no trip; a tile.while runs its body at least once.
            if op.kind == OpKind::For {
                let mut skipped = t.clone();
                skipped.steps.push(Step::Ran(id, 0));
                add(&mut out, q.clone(), skipped);
            }
            let (mut q, mut t) = (q, t);
            q.map_sets(&|i: &mut Inst| self.f.enter_loop(i, id));
            t.steps.push(Step::Iter(id, 1));
            add(&mut frontier, q, t);
        }
        // The head queues explored (where paths are pruned): a queue one of them dominates
        // or equals needs no trip of its own.
        let mut explored: Vec<(Queue, Distances)> = if self.prunes() {
            frontier
                .keys()
                .map(|q| (q.clone(), q.distances(self.keep)))
                .collect()
        } else {
            vec![]
        };
        let mut k = 1u32;
        while !frontier.is_empty() && !self.failed && !self.gave_up {
            let end = self.block(&op.regions[0], frontier, &mut wg.clone(), false);
            let mut next = States::new();
            for (mut q, mut t) in end {
                q.map_sets(&|i: &mut Inst| self.f.next_iteration(i, id));
                let at = t
                    .steps
                    .iter()
                    .rposition(|s| matches!(s, Step::Iter(l, _) if *l == id))
                    .unwrap_or(t.steps.len());
                t.steps.truncate(at);
                let mut ran = t.clone();
                ran.steps.push(Step::Ran(id, k));
                add(&mut out, q.clone(), ran);
                if k >= 2 && seen.contains(&q) {
                    continue;
                }
                if self.prunes() {
                    if self.dominated(&q, &explored) {
                        continue;
                    }
                    explored.push((q.clone(), q.distances(self.keep)));
                }
                seen.insert(q.clone());
                t.steps.push(Step::Iter(id, k + 1));
                add(&mut next, q, t);
            }
            frontier = next;
            k += 1;
        }
        let mut exits = States::new();
        for (mut q, t) in out {
            q.map_sets(&|i: &mut Inst| self.f.after_loop(i, id));
            add(&mut exits, q, t);
        }
        exits
    }

    /// Check `op` against one path's queue and apply it.
    fn step(
        &mut self,
        op: &Operation,
        id: OpId,
        mut q: Queue,
        mut t: Trail,
        wg: u64,
        exit: bool,
    ) -> Option<(Queue, Trail)> {
        self.steps += 1;
        if self.steps > self.budget {
            self.gave_up = true;
            return None;
        }
        let x = self.f.access(op, id, exit);
        if !x.is_empty() {
            let n = q.committed.len();
            let pending = q
                .open
                .iter()
                .map(|i| (i, None))
                .chain(
                    q.committed
                        .iter()
                        .enumerate()
                        .flat_map(|(j, g)| g.iter().map(move |i| (i, Some(n - 1 - j)))),
                )
                .chain(q.old.iter().map(|i| (i, Some(self.keep))));
            let mut hit = None;
            // The youngest conflicting group (`Some(None)`: one not even committed).
            let mut youngest: Option<Option<usize>> = None;
            for (g, after) in pending {
                if let Some(h) = self.f.conflict(&x, g) {
                    if hit.is_none() {
                        hit = Some((g.clone(), after, h));
                    }
                    youngest = Some(match (youngest, after) {
                        (Some(None), _) | (_, None) => None,
                        (Some(Some(a)), Some(b)) => Some(a.min(b)),
                        (None, Some(b)) => Some(b),
                    });
                }
            }
            if let Some((g, after, h)) = hit {
                self.report(id, |e| e.unsafe_diag(op, &g, after, h, &t));
                // Go on as if the wait this path needed were there, so that one missing
                // wait is reported once and the queues stay as small as in safe code.
                // Where paths are pruned, as if each conflicting group had been waited for
                // alone (a step that keeps the order paths are pruned by).
                if self.mode == Mode::Collect {
                    let conflicting = |i: &Inst| self.f.conflict(&x, i).is_some();
                    let mut c: BTreeSet<Inst> = q.open.iter().cloned().collect();
                    c.extend(q.committed.iter().flatten().cloned());
                    c.extend(q.old.iter().cloned());
                    c.retain(|i| conflicting(i));
                    q.open.retain(|i| !c.contains(i));
                    for g in &mut q.committed {
                        g.retain(|i| !c.contains(i));
                    }
                    q.old.retain(|i| !c.contains(i));
                    if self.f.kind.shared(wg) {
                        q.unsynced
                            .extend(c.into_iter().filter(|i| !i.stages.is_empty()));
                    }
                } else {
                    match youngest {
                        Some(Some(n)) => {
                            let keep_from = q.committed.len() - n;
                            q.committed.drain(..keep_from);
                            q.old.clear();
                        }
                        _ => {
                            q.committed.clear();
                            q.old.clear();
                            q.open.clear();
                        }
                    }
                }
            } else if self.f.kind.shared(wg) {
                if let Some(g) = q
                    .unsynced
                    .iter()
                    .find(|g| self.f.overwrites(&x, g))
                    .cloned()
                {
                    let kind = self.f.kind;
                    self.report(id, |e| {
                        let msg = match kind {
                            GroupKind::Wgmma => format!(
                                "'{}' overwrites a shared-memory stage that the wgmma group of the \
                                    'tile.mma' at {} may still be reading in another of the {wg} \
                                    warpgroups: no 'tile.barrier' follows the wait that \
                                    retired it, on the path: {}",
                                op.kind.name(),
                                e.loc(g.mma),
                                e.path(&t)
                            ),
                            GroupKind::Bulk => format!(
                                "'{}' overwrites a staging slot that the bulk store group of the \
                                    'tile.tma_store' at {} read: only the warpgroup's elected \
                                    thread waited for it, and no 'tile.named_barrier' follows \
                                    that wait, on the path: {}",
                                op.kind.name(),
                                e.loc(g.mma),
                                e.path(&t)
                            ),
                            GroupKind::CpAsync => format!(
                                "'{}' accesses a shared-memory stage that the cp.async group of \
                                    the 'tile.cp_async' at {} writes: the wait completed only \
                                    this thread's chunks, and no 'tile.barrier' follows it, on \
                                    the path: {}",
                                op.kind.name(),
                                e.loc(g.mma),
                                e.path(&t)
                            ),
                        };
                        Diagnostic::error(op.loc.clone(), msg).with_note(
                            e.loc(g.mma).clone(),
                            format!("the group's '{}'", kind.issuer()),
                        )
                    });
                    if self.mode == Mode::Collect {
                        q.unsynced.retain(|g| !self.f.overwrites(&x, g));
                    } else {
                        q.unsynced.clear();
                    }
                }
            }
            if let Some(m) = x.wgmma.filter(|_| self.f.kind == GroupKind::Wgmma) {
                let gd = &self.f.groups[&m];
                let why = if q.unfenced {
                    Some("before any 'tile.wgmma_fence' of the warpgroup".to_string())
                } else {
                    gd.slots().any(|s| q.dirty.contains(&s)).then(|| {
                        "after another op accessed \
                            its registers, with no 'tile.wgmma_fence' since"
                            .to_string()
                    })
                };
                if let Some(why) = why {
                    self.report(id, |e| {
                        Diagnostic::error(
                            op.loc.clone(),
                            format!("wgmma 'tile.mma' issued {why}, on the path: {}", e.path(&t)),
                        )
                    });
                    if self.mode == Mode::Collect {
                        q.dirty.retain(|s| !gd.slots().any(|g| g == *s));
                    } else {
                        q.dirty.clear();
                    }
                    q.unfenced = false;
                }
            }
        }
        if self.failed {
            return None;
        }
        let kind = self.f.kind;
        match op.kind {
            k if k == kind.wait_op() => {
                let n = op.int_attr("pending").unwrap_or(0).clamp(0, 64) as usize;
                let keep_from = q.committed.len().saturating_sub(n);
                let retired: Vec<Inst> = q
                    .committed
                    .drain(..keep_from)
                    .flatten()
                    .chain(std::mem::take(&mut q.old))
                    .collect();
                // A register-A group's fragment must reach the wait that retires it (tied),
                // or its registers may be reused while the wgmma reads them.
                let untied = retired.iter().find(|g| {
                    self.f.groups[&g.mma]
                        .a
                        .is_some_and(|a| !op.operands.iter().any(|&v| self.f.slot(v) == a))
                });
                if let Some(g) = untied.cloned() {
                    self.report(id, |e| {
                        Diagnostic::error(
                            op.loc.clone(),
                            format!(
                                "'{}' retires the register-A wgmma group of the 'tile.mma' at {} \
                                    without taking its A fragment: the fragment's registers may \
                                    be reused while the wgmma reads them, on the path: {}",
                                op.kind.name(),
                                e.loc(g.mma),
                                e.path(&t)
                            ),
                        )
                        .with_note(e.loc(g.mma).clone(), "the group's 'tile.mma'")
                    });
                }
                // A value the wait takes whose group stays pending is handed on, not tied.
                if kind == GroupKind::Wgmma {
                    for (i, &v) in op.operands.iter().enumerate() {
                        let s = self.f.slot(v);
                        let pending = q.committed.iter().flatten().chain(&q.open);
                        if pending
                            .into_iter()
                            .any(|g| self.f.groups[&g.mma].slots().any(|x| x == s))
                        {
                            self.through.insert((id, i));
                        }
                    }
                }
                // Only where other warpgroups run the same code can they still read (bulk:
                // the warpgroup's other threads have not seen the elected thread's wait).
                if kind.shared(wg) {
                    q.unsynced
                        .extend(retired.into_iter().filter(|i| !i.stages.is_empty()));
                }
                t.last_wait = Some(id);
            }
            k if k == kind.commit_op() => {
                let g = std::mem::take(&mut q.open);
                q.committed.push(g);
                if q.committed.len() > self.keep {
                    let oldest = q.committed.remove(0);
                    q.old.extend(oldest);
                }
            }
            _ if kind.is_barrier(op) => q.unsynced.clear(),
            OpKind::WgmmaFence if kind == GroupKind::Wgmma => {
                q.dirty.clear();
                q.unfenced = false;
            }
            _ if x.wgmma.is_some() => {
                let mut i = self.f.issue(id);
                if self.mode != Mode::Full {
                    // Only safety is asked: a group is known by what it may conflict with.
                    i.mma = self.f.canonical[&id];
                }
                if !q.open.contains(&i) {
                    q.open.push(i);
                }
            }
            _ => q.dirty.extend(x.regs.iter().copied()),
        }
        Some((q, t))
    }

    fn unsafe_diag(
        &self,
        op: &Operation,
        g: &Inst,
        after: Option<usize>,
        h: Hazard,
        t: &Trail,
    ) -> Diagnostic {
        let (x, at) = (op.kind.name(), self.loc(g.mma));
        let (what, issuer) = (self.f.kind.what(), self.f.kind.issuer());
        let state = match after {
            None => "issued but not committed".to_string(),
            Some(n) if n >= self.keep => format!("{} or more groups committed after it", self.keep),
            Some(n) => format!(
                "{n} group{} committed after it",
                if n == 1 { "" } else { "s" }
            ),
        };
        let what = match h {
            Hazard::Registers => format!(
                "'{x}' accesses the registers of the {what} group of the \
                    '{issuer}' at {at}, which may still be pending"
            ),
            Hazard::Overwrite if self.f.kind == GroupKind::CpAsync => format!(
                "'{x}' accesses a shared-memory stage that the {what} group of the \
                    '{issuer}' at {at} writes, which may still be pending"
            ),
            Hazard::Overwrite => format!(
                "'{x}' overwrites a shared-memory stage that the {what} \
                    group of the '{issuer}' at {at} reads, which may still be pending"
            ),
            Hazard::Release => format!(
                "'{x}' releases to its producer a shared-memory stage that \
                    the {what} group of the '{issuer}' at {at} reads, which may still be pending"
            ),
            Hazard::FragmentScope => format!(
                "'{x}' ends the scope of the A fragment of the {what} group of the \
                    '{issuer}' at {at}, which may still be pending: its registers may be reused \
                    while the wgmma reads them"
            ),
            Hazard::Exit => format!(
                "'{x}' ends the warpgroup while the {what} group of the \
                    '{issuer}' at {at} may still be pending"
            ),
        };
        let mut d = Diagnostic::error(
            op.loc.clone(),
            format!("{what} ({state}) on the path: {}", self.path(t)),
        )
        .with_note(at.clone(), format!("the group's '{issuer}'"));
        if let Some(w) = t.last_wait {
            let n = self.f.ops[w as usize].int_attr("pending").unwrap_or(0);
            d = d.with_note(
                self.loc(w).clone(),
                format!("the last wait on that path (pending = {n}) leaves it pending"),
            );
        }
        d
    }
}

/// What an exploration found.
struct Outcome {
    /// Every path was explored (the step budget did not run out).
    complete: bool,
    /// No error was found.
    clean: bool,
    /// The errors (`Mode::Full`).
    errors: Vec<Diagnostic>,
    /// The unsafe ops (`Mode::Collect`).
    offending: BTreeSet<OpId>,
    /// Steps taken.
    steps: u64,
    /// Wait operands passed on while their group may be pending (`Explorer::through`).
    through: BTreeSet<(OpId, usize)>,
}

impl Outcome {
    /// Safe, proven (`Some(true)`); unsafe (`Some(false)`); unknown (`None`).
    fn safe(&self) -> Option<bool> {
        if !self.clean {
            Some(false)
        } else {
            self.complete.then_some(true)
        }
    }
}

/// Explore `kernel` within `budget` (path, op) steps.
fn explore(m: &Module, kernel: &Operation, kind: GroupKind, mode: Mode, budget: u64) -> Outcome {
    explore_probing(m, kernel, kind, mode, budget, None).0
}

/// Whether on some path more than `n` groups of `kind` are pending when op `at` (pre-order
/// id) runs: a wait of `n` there would retire one. `true` when the exploration is cut short.
fn pending_exceeds(
    m: &Module,
    kernel: &Operation,
    kind: GroupKind,
    at: OpId,
    n: i64,
    budget: u64,
) -> bool {
    let (o, max) = explore_probing(m, kernel, kind, Mode::Quick, budget, Some(at));
    !o.complete || max == usize::MAX || max as i64 > n
}

/// [`explore`], also returning the most groups pending at op `probe`.
fn explore_probing(
    m: &Module,
    kernel: &Operation,
    kind: GroupKind,
    mode: Mode,
    budget: u64,
    probe: Option<OpId>,
) -> (Outcome, usize) {
    let f = Facts::of_kind(m, kernel, kind);
    if f.groups.is_empty() {
        let o = Outcome {
            complete: true,
            clean: true,
            errors: vec![],
            offending: BTreeSet::new(),
            steps: 0,
            through: BTreeSet::new(),
        };
        return (o, 0);
    }
    let mut max_pending = 0;
    kernel.walk(&mut |o| {
        if o.kind == kind.wait_op() {
            max_pending = max_pending.max(
                o.int_attr("pending")
                    .unwrap_or(0)
                    .clamp(0, MAX_PENDING as i64) as usize,
            );
        }
    });
    let keep = (max_pending + 1).min(MAX_KEEP);
    let mut e = Explorer {
        f: &f,
        mode,
        keep,
        failed: false,
        steps: 0,
        budget,
        gave_up: false,
        errors: BTreeMap::new(),
        offending: BTreeSet::new(),
        probe,
        probe_max: 0,
        loop_memo: BTreeMap::new(),
        through: BTreeSet::new(),
    };
    let start: States = [(
        Queue {
            unfenced: kind == GroupKind::Wgmma,
            ..Queue::default()
        },
        Trail::default(),
    )]
    .into_iter()
    .collect();
    let mut wg = f.kernel_warpgroups;
    e.block(&kernel.regions[0], start, &mut wg, false);
    let clean = !e.failed && e.errors.is_empty() && e.offending.is_empty();
    let max = e.probe_max;
    let o = Outcome {
        complete: !e.gave_up,
        clean,
        errors: e.errors.into_values().collect(),
        offending: e.offending,
        steps: e.steps,
        through: e.through,
    };
    (o, max)
}

// ---- changed copies for the tightness checks ------------------------------------------

/// The (region, index) steps from the kernel to the op with pre-order id `id` (the
/// kernel is 0).
fn path_to(op: &Operation, id: OpId, next: &mut OpId, path: &mut Vec<(usize, usize)>) -> bool {
    for (r, b) in op.regions.iter().enumerate() {
        for (i, o) in b.ops.iter().enumerate() {
            *next += 1;
            path.push((r, i));
            if *next == id || path_to(o, id, next, path) {
                return true;
            }
            path.pop();
        }
    }
    false
}

/// A copy of `kernel` with `f` applied to the block holding op `id` and its index; `None`
/// when `f` declines.
fn edit(
    kernel: &Operation,
    id: OpId,
    f: impl FnOnce(&mut Vec<Operation>, usize) -> bool,
) -> Option<Operation> {
    let mut path = vec![];
    if !path_to(kernel, id, &mut 0, &mut path) {
        return None;
    }
    let mut k = kernel.clone();
    let (&(lr, li), outer) = path.split_last()?;
    let mut op = &mut k;
    for &(r, i) in outer {
        op = &mut op.regions[r].ops[i];
    }
    f(&mut op.regions[lr].ops, li).then_some(k)
}

fn rewire(k: &mut Operation, from: &[Value], to: &[Value]) {
    k.walk_mut(&mut |o| {
        for v in &mut o.operands {
            if let Some(p) = from.iter().position(|x| x == v) {
                *v = to[p];
            }
        }
    });
}

fn delete_wait(kernel: &Operation, id: OpId) -> Option<Operation> {
    let mut tied = None;
    let mut k = edit(kernel, id, |ops, i| {
        let w = ops.remove(i);
        tied = Some((w.results, w.operands));
        true
    })?;
    let (rs, os) = tied?;
    rewire(&mut k, &rs, &os);
    Some(k)
}

/// The join variant of a wait `id` (pending `n`) that stands after a `tile.if`, with only
/// [`scalar_only`] ops in between, before a plain op `X` (not a terminator or barrier):
/// the wait deleted, `wait n` at the end of each branch but `wait n + 1` at the end of
/// branch `raised`, and `wait n` right after `X` (so only `X` sees the difference). With
/// the `tile.if`'s location; `None` where the wait does not stand so, or where the op
/// after `X` is one the placement would take for its own after that copy (a barrier of
/// the kind; a proxy fence, for cp.async).
fn split_at_join(
    m: &Module,
    kernel: &Operation,
    id: OpId,
    kind: GroupKind,
    n: i64,
    raised: usize,
) -> Option<(Operation, Location)> {
    let mut tied = None;
    let mut if_loc = None;
    let wait = |p: i64, loc: &Location| {
        let mut w = Operation::new(kind.wait_op(), loc.clone());
        w.attrs.insert("pending".into(), Attribute::Int(p));
        if kind == GroupKind::Bulk {
            w.attrs.insert("read".into(), Attribute::Bool(true));
        }
        w
    };
    let mut k = edit(kernel, id, |ops, i| {
        let Some(x) = ops.get(i + 1) else {
            return false;
        };
        if x.kind.is_terminator() || !x.regions.is_empty() || kind.is_barrier(x) || placed_sync(x) {
            return false;
        }
        // Where the placement could put the copy after X.
        if !wait_may_stand_before(ops, i + 2, kind) {
            return false;
        }
        let Some(j) = (0..i).rev().find(|&j| !scalar_only(m, &ops[j])) else {
            return false;
        };
        if ops[j].kind != OpKind::If || ops[j].regions.len() != 2 {
            return false;
        }
        let ends_ok = ops[j]
            .regions
            .iter()
            .all(|r| r.ops.last().is_some_and(|o| o.kind.is_terminator()));
        if !ends_ok {
            return false;
        }
        let w = ops.remove(i);
        if_loc = Some(ops[j].loc.clone());
        for (b, r) in ops[j].regions.iter_mut().enumerate() {
            let at = r.ops.len() - 1;
            r.ops
                .insert(at, wait(if b == raised { n + 1 } else { n }, &w.loc));
        }
        // X is now at i.
        ops.insert(i + 1, wait(n, &w.loc));
        tied = Some((w.results, w.operands));
        true
    })?;
    let (rs, os) = tied?;
    rewire(&mut k, &rs, &os);
    Some((k, if_loc?))
}

/// The pre-order id of the terminator of region `branch` of the `tile.if` that the wait
/// `id` follows in its block (only scalar ops between them; see [`split_at_join`]).
fn branch_end(kernel: &Operation, id: OpId, branch: usize) -> Option<OpId> {
    let mut path = vec![];
    if !path_to(kernel, id, &mut 0, &mut path) {
        return None;
    }
    let (&(lr, li), outer) = path.split_last()?;
    let mut op = kernel;
    for &(r, i) in outer {
        op = &op.regions[r].ops[i];
    }
    let block = &op.regions[lr];
    let iff = block.ops[..li]
        .iter()
        .rev()
        .find(|o| o.kind == OpKind::If)?;
    let end = iff.regions.get(branch)?.ops.last()?;
    let mut next = 0;
    let mut found = None;
    kernel.walk(&mut |o| {
        if std::ptr::eq(o, end) {
            found = Some(next);
        }
        next += 1;
    });
    found
}

fn uses_any(op: &Operation, vs: &[Value]) -> bool {
    let mut hit = false;
    op.walk(&mut |o| hit |= o.operands.iter().any(|v| vs.contains(v)));
    hit
}

/// Whether the executable model finds no hazard in `kernel` (within its default runs).
fn sim_finds_no_hazard(m: &Module, kernel: &Operation) -> bool {
    let sim = crate::async_sim::Simulator::new(m, kernel);
    let o = sim.run(&Default::default(), crate::async_sim::DEFAULT_RUNS);
    o.verdict == crate::async_sim::Verdict::NoHazard
}

/// Run the tightness checks on a safe kernel. Waits are taken last to first; one found
/// redundant is deleted from the copy the later checks look at, so the waits reported
/// redundant can all be deleted together.
fn tightness(
    m: &Module,
    kernel: &Operation,
    kind: GroupKind,
    budget: u64,
    out: &mut Vec<Diagnostic>,
) -> u64 {
    let f = Facts::of_kind(m, kernel, kind);
    let waits: Vec<(OpId, &Operation)> = f
        .ops
        .iter()
        .enumerate()
        .filter(|(_, o)| o.kind == kind.wait_op())
        .map(|(i, o)| (i as OpId, *o))
        .collect();
    // A change is reported only when it is proven safe (within the budget). The explorer
    // does not model publication to the async proxy (a proxy fence after the wait that
    // retires a copy, then a barrier): for cp.async groups the simulation must also find no
    // hazard.
    // With `tied`, every wgmma read must also stay tied: deleting a wait whose only work
    // is to take a value that another wait retires is not safe. (The other changes keep or
    // move the wait's operands, or, split at a join, stand for a placement that ties them.)
    let safe_as = |k: &Operation, tied: bool| {
        let o = explore(m, k, kind, Mode::Quick, budget);
        o.safe() == Some(true)
            && (!tied || kind != GroupKind::Wgmma || {
                let mut untied = vec![];
                check_untied_reads(m, k, &o.through, &mut untied);
                untied.is_empty()
            })
            && (kind != GroupKind::CpAsync || sim_finds_no_hazard(m, k))
    };
    let safe = |k: &Operation| safe_as(k, false);
    let mut cur = kernel.clone();
    for &(id, w) in waits.iter().rev() {
        let n = w.int_attr("pending").unwrap_or(0);
        let name = format!("'{}' (pending = {n})", kind.wait_op().name());
        // Redundant?
        if let Some(k) = delete_wait(&cur, id) {
            if safe_as(&k, true) {
                out.push(Diagnostic::error(
                    w.loc.clone(),
                    format!("{name} is redundant: every path stays safe without it"),
                ));
                cur = k;
                continue;
            }
        }
        // N too small?
        if n < i64::from(MAX_PENDING) {
            let raised = edit(&cur, id, |ops, i| {
                ops[i].attrs.insert("pending".into(), Attribute::Int(n + 1));
                true
            });
            if let Some(k) = raised {
                if safe(&k) {
                    let mut d = Diagnostic::error(
                        w.loc.clone(),
                        format!(
                            "{name} is not tight: pending = {} is still safe on every path",
                            n + 1
                        ),
                    );
                    if let Some(k) = delete_wait(&cur, id) {
                        for h in explore(m, &k, kind, Mode::Full, budget)
                            .errors
                            .iter()
                            .take(3)
                        {
                            d = d.with_note(h.loc.clone(), "a hazard it guards");
                        }
                    }
                    out.push(d);
                    continue;
                }
            }
        }
        // Could it move later? Not past an op it guards: one that, without it, is unsafe on
        // some path (even if a wait on an earlier trip round a loop would then cover it).
        let guards_next = delete_wait(&cur, id).is_none_or(|k| {
            let o = explore(m, &k, kind, Mode::Collect, budget);
            !o.complete || o.offending.contains(&id)
        });
        let mut moved_past: Option<(Location, String)> = None;
        let cp = kind == GroupKind::CpAsync;
        let later = edit(&cur, id, |ops, i| {
            let Some(next) = ops.get(i + 1) else {
                return false;
            };
            let results = ops[i].results.clone();
            match next.kind {
                k if k.is_terminator() => false,
                // A barrier right after the wait belongs to it; a fence, to the wgmma
                // after it (a proxy fence, to a cp.async wait before it). A loop is passed
                // whole, like a plain op.
                OpKind::WarpSpecialize | OpKind::WgmmaFence => false,
                // Nor past another wait or a proxy fence: the ops the placement puts before
                // a hazard stay together, whichever kind each serves.
                _ if placed_sync(next) => false,
                _ if kind.is_barrier(next) => false,
                OpKind::If => {
                    if next.regions.iter().any(|r| cp && fence_ahead(&r.ops, 0)) {
                        return false;
                    }
                    if ops.iter().any(|o| uses_any(o, &results)) {
                        // What follows reads what the wait returns: past the `tile.if`
                        // whole, where its branches read none of it.
                        if uses_any(next, &results) || !wait_may_stand_before(ops, i + 2, kind) {
                            return false;
                        }
                        moved_past = Some((next.loc.clone(), "after the 'tile.if'".into()));
                        ops.swap(i, i + 1);
                        return true;
                    }
                    moved_past = Some((
                        next.loc.clone(),
                        "into both branches of the 'tile.if'".into(),
                    ));
                    let w = ops.remove(i);
                    for r in &mut ops[i].regions {
                        r.ops.insert(0, w.clone());
                    }
                    true
                }
                // Not onto a barrier of this kind, nor a cp.async wait onto a proxy fence
                // (placement takes those right after its wait for its own).
                _ if !wait_may_stand_before(ops, i + 2, kind) => false,
                _ => {
                    if uses_any(next, &results) {
                        return false;
                    }
                    moved_past = Some((
                        next.loc.clone(),
                        format!("after the '{}'", next.kind.name()),
                    ));
                    ops.swap(i, i + 1);
                    true
                }
            }
        });
        if let (Some(k), Some((loc, what)), false) = (later, moved_past, guards_next) {
            if safe(&k) {
                out.push(
                    Diagnostic::error(
                        w.loc.clone(),
                        format!("{name} could move later, {what} at {loc}, and stay safe"),
                    )
                    .with_note(loc, "this op needs no group to complete"),
                );
                continue;
            }
        }
        // Tight at the join? The op it guards must need the same number on each branch.
        if n < i64::from(MAX_PENDING) {
            for (branch, side) in ["then", "else"].iter().enumerate() {
                let Some((k, if_loc)) = split_at_join(m, &cur, id, kind, n, branch) else {
                    break;
                };
                // Tighter only where the branch can end with more than n groups pending
                // (else a wait of n there retires nothing, and n + 1 keeps nothing more).
                let more = branch_end(&cur, id, branch)
                    .is_some_and(|end| pending_exceeds(m, &cur, kind, end, n, budget));
                if more && safe(&k) {
                    out.push(
                        Diagnostic::error(
                            w.loc.clone(),
                            format!(
                                "{name} after the join is not tight: moved into the branches \
                                    of the 'tile.if' at {if_loc}, pending = {} at the end of \
                                    the {side}-branch is still safe for the op after it",
                                n + 1
                            ),
                        )
                        .with_note(if_loc, "the 'tile.if'"),
                    );
                    break;
                }
            }
        }
    }
    // Barriers directly after a wait.
    for (i, o) in f.ops.iter().enumerate() {
        if o.kind != kind.barrier_op() {
            continue;
        }
        let id = i as OpId;
        let before = |j: usize| j > 0 && f.ops[j - 1].kind == kind.wait_op();
        let after_wait = before(i)
            || (kind == GroupKind::CpAsync
                && i > 1
                && f.ops[i - 1].kind == OpKind::FenceProxyAsync
                && before(i - 1));
        if !after_wait {
            continue;
        }
        if let Some(k) = edit(kernel, id, |ops, i| {
            ops.remove(i);
            true
        }) {
            let unneeded = safe(&k);
            if unneeded {
                let msg = match kind {
                    GroupKind::Wgmma => {
                        "'tile.barrier' after the wait is not needed: no stage \
                            another warpgroup reads is overwritten before the next barrier"
                    }
                    GroupKind::Bulk => {
                        "'tile.named_barrier' after the bulk wait is not needed: no \
                            staging slot a retired group read is written before the next barrier"
                    }
                    GroupKind::CpAsync => {
                        "'tile.barrier' after the cp.async wait is not needed: no stage a \
                            retired copy wrote is accessed before the next barrier"
                    }
                };
                out.push(Diagnostic::error(o.loc.clone(), msg));
            }
        }
    }
    // Fences: none redundant, and none in a loop body that one before the loop replaces.
    if kind == GroupKind::Wgmma {
        for (i, o) in f.ops.iter().enumerate() {
            if o.kind != OpKind::WgmmaFence {
                continue;
            }
            let id = i as OpId;
            let deleted = edit(kernel, id, |ops, i| {
                ops.remove(i);
                true
            });
            if deleted.as_ref().is_some_and(&safe) {
                out.push(Diagnostic::error(
                    o.loc.clone(),
                    "'tile.wgmma_fence' is redundant: every wgmma after it is fenced without it \
                        (no register access since the last fence on any path)",
                ));
                continue;
            }
            if let Some((k, loop_loc)) = hoist_fence(kernel, id) {
                if safe(&k) {
                    out.push(
                        Diagnostic::error(
                            o.loc.clone(),
                            format!(
                                "'tile.wgmma_fence' runs on every iteration of the loop at \
                                    {loop_loc}, but only the first needs it: one before the loop \
                                    is enough"
                            ),
                        )
                        .with_note(loop_loc, "the loop"),
                    );
                }
            }
        }
    }
    waits.len() as u64
}

/// A copy of `kernel` with the fence `id`, an op of a loop body, moved before the loop;
/// with the loop's location. `None` when the fence is not directly in a loop body.
fn hoist_fence(kernel: &Operation, id: OpId) -> Option<(Operation, Location)> {
    let mut path = vec![];
    if !path_to(kernel, id, &mut 0, &mut path) || path.len() < 2 {
        return None;
    }
    let (&(fr, fi), outer) = path.split_last()?;
    let (&(lr, li), outer) = outer.split_last()?;
    let mut k = kernel.clone();
    let mut op = &mut k;
    for &(r, i) in outer {
        op = &mut op.regions[r].ops[i];
    }
    let block = &mut op.regions[lr].ops;
    let lp = &mut block[li];
    if !matches!(lp.kind, OpKind::For | OpKind::While) || fr != 0 {
        return None;
    }
    let loc = lp.loc.clone();
    let fence = lp.regions[fr].ops.remove(fi);
    block.insert(li, fence);
    Some((k, loc))
}

/// The default budget of one exploration: (path, op) steps.
pub const DEFAULT_MAX_STEPS: u64 = 1_000_000;

/// What [`verify_async_waits`] checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Waits checked for tightness.
    pub waits: u64,
    /// (path, op) steps of the safety explorations (one per kernel).
    pub steps: u64,
    /// Runs of the concrete simulations.
    pub sim_runs: u64,
    /// Waits and fences whose tightness the simulation confirmed with a run that meets a
    /// hazard once the wait is raised by one (the fence deleted).
    pub sim_witnesses: u64,
    /// Simulations that ran out of runs before finishing (their check is the explorer's
    /// alone).
    pub sim_incomplete: u64,
}

/// Check every kernel of `m`, each exploration within `max_steps` (path, op) steps.
///
/// # Errors
/// Every unsafe hazard, missing fence or barrier, and (for kernels that are safe) every
/// wait or barrier that is not tight, at the op concerned; and a kernel whose paths could
/// not all be explored within the budget (it is not proven safe).
pub fn verify_async_waits(m: &Module, options: &CheckOptions) -> Result<CheckReport, Diagnostics> {
    let max_steps = options.max_steps;
    let mut errors = vec![];
    let mut report = CheckReport::default();
    for k in m.kernels() {
        check_staging_handoff(k, &mut errors);
    }
    for k in m.kernels().filter(|k| !k.regions.is_empty()) {
        let before = errors.len();
        let mut through = BTreeSet::new();
        for kind in GroupKind::ALL {
            let t = explore_kind(m, k, kind, max_steps, &mut report, &mut errors);
            if kind == GroupKind::Wgmma {
                through = t;
            }
        }
        // A read that may see a pending group is reported as such; one that sees none may
        // still be untied.
        if errors.len() == before {
            check_untied_reads(m, k, &through, &mut errors);
        }
        if errors.len() == before && options.sim_runs > 0 {
            simulate(m, k, options.sim_runs, &mut report, &mut errors);
        }
    }
    if errors.is_empty() {
        Ok(report)
    } else {
        errors.sort_by_key(|d| (d.loc.line, d.loc.col));
        Err(Diagnostics(errors))
    }
}

/// The path explorer's checks of `kernel` for groups of `kind`; the wait operands it saw
/// passed on while their group may be pending (`Explorer::through`).
fn explore_kind(
    m: &Module,
    k: &Operation,
    kind: GroupKind,
    max_steps: u64,
    report: &mut CheckReport,
    errors: &mut Vec<Diagnostic>,
) -> BTreeSet<(OpId, usize)> {
    let mut any = false;
    // Kernels that issue, commit or wait on this kind of group (a wait with nothing
    // ever issued is then reported as redundant).
    k.walk(&mut |o| {
        any |= kind.is_group_op(o) || o.kind == kind.commit_op() || o.kind == kind.wait_op()
    });
    if !any {
        return BTreeSet::new();
    }
    // Safety first with groups known by their registers (fewer queues); the exact
    // exploration, for the diagnostics, only when something is wrong.
    let mut o = explore(m, k, kind, Mode::Quick, max_steps);
    report.steps += o.steps;
    let through = std::mem::take(&mut o.through);
    if o.safe() == Some(false) {
        o = explore(m, k, kind, Mode::Full, max_steps);
        if o.errors.is_empty() {
            // The exact exploration ran out of steps before the error: name the op.
            let bad = explore(m, k, kind, Mode::Collect, max_steps).offending;
            let f = Facts::of_kind(m, k, kind);
            for id in bad {
                let op = f.ops[id as usize];
                errors.push(Diagnostic::error(
                    op.loc.clone(),
                    format!(
                        "'{}' may run while a {} \
                            group it conflicts with is pending, or without a fence or barrier \
                            it \
                            needs",
                        op.kind.name(),
                        kind.what()
                    ),
                ));
            }
            o.complete = true;
        }
    }
    errors.extend(o.errors.iter().cloned());
    if !o.complete {
        errors.push(Diagnostic::error(
            k.loc.clone(),
            format!(
                "verify-async-waits could not explore every path of this kernel within \
                    max_steps = {max_steps} (path, op) steps, so its waits are not proven \
                    safe; \
                    raise max_steps"
            ),
        ));
    } else if o.clean {
        report.waits += tightness(m, k, kind, max_steps, errors);
    }
    through
}

/// The concrete simulation's checks of `kernel`, which the path explorer has found safe
/// and tight: no run meets a hazard; each wait raised by one, and each fence deleted, has
/// a run that does. A disagreement is an error that names both analyses: one of the two
/// models is wrong.
fn simulate(
    m: &Module,
    k: &Operation,
    runs: u64,
    report: &mut CheckReport,
    errors: &mut Vec<Diagnostic>,
) {
    use crate::async_sim::{Change, Simulator, Verdict};
    let mut asynchronous = false;
    k.walk(&mut |o| {
        asynchronous |= matches!(
            o.kind,
            OpKind::CommitGroup
                | OpKind::WaitGroup
                | OpKind::BulkCommitGroup
                | OpKind::BulkWaitGroup
                | OpKind::CpAsyncCommitGroup
                | OpKind::CpAsyncWaitGroup
                | OpKind::CpAsync
        ) || o.kind == OpKind::TmaStore
            || is_wgmma(o)
            // Shared memory exchanged between threads needs a barrier with no group too.
            || matches!(o.kind, OpKind::SmemStore | OpKind::SmemLoad)
    });
    if !asynchronous {
        return;
    }
    let sim = Simulator::new(m, k);
    let none = std::collections::HashMap::new();
    let o = sim.run(&none, runs);
    report.sim_runs += o.runs;
    match o.verdict {
        Verdict::Hazard(h) => {
            let msg = if h.unmodelled {
                format!("{} on the run: {}", h.message, h.run)
            } else {
                format!(
                    "the concrete simulation of verify-async-waits meets a hazard that its path \
                        explorer accepted (the two models disagree): {} on the run: {}",
                    h.message, h.run
                )
            };
            errors.push(Diagnostic::error(h.loc, msg));
            return;
        }
        Verdict::Budget => {
            report.sim_incomplete += 1;
            return;
        }
        Verdict::NoHazard => {}
    }
    // Each wait raised by one, each wait one op later (not past a fence, a barrier, a yield,
    // the end, or an op that uses its results), each fence deleted: every such change must
    // meet a hazard on some run.
    let mut checks = vec![];
    k.walk(&mut |o| {
        for b in &o.regions {
            for (i, x) in b.ops.iter().enumerate() {
                match x.kind {
                    OpKind::WaitGroup | OpKind::BulkWaitGroup | OpKind::CpAsyncWaitGroup => {
                        let n = x.int_attr("pending").unwrap_or(0);
                        // Not past an op that uses the wait's results (the explorer's
                        // moves keep the IR well-formed, so it never tries those), nor
                        // past the barrier that belongs to it.
                        let next = b.ops.get(i + 1);
                        let movable = match next.map(|y| y.kind) {
                            None
                            | Some(
                                OpKind::Yield
                                | OpKind::Return
                                | OpKind::WgmmaFence
                                | OpKind::FenceProxyAsync
                                | OpKind::WaitGroup
                                | OpKind::BulkWaitGroup
                                | OpKind::CpAsyncWaitGroup
                                | OpKind::Barrier
                                | OpKind::NamedBarrier,
                            ) => false,
                            _ => {
                                next.is_some_and(|y| !uses_any(y, &x.results))
                                    && !b.ops.get(i + 2).is_some_and(|y| {
                                        matches!(y.kind, OpKind::Barrier | OpKind::NamedBarrier)
                                    })
                                    // Nor (a cp.async wait) onto a proxy fence: the
                                    // placement takes one there for its own.
                                    && !(x.kind == OpKind::CpAsyncWaitGroup
                                        && fence_ahead(&b.ops, i + 2))
                            }
                        };
                        if n < MAX_PENDING as i64 {
                            checks.push((x, Change::Pending(n + 1), None));
                        }
                        if movable {
                            checks.push((x, Change::Later, b.ops.get(i + 1)));
                        }
                    }
                    OpKind::WgmmaFence => checks.push((x, Change::Delete, None)),
                    // A proxy fence after a cp.async wait: needed only where the async
                    // proxy reads or rewrites the copied stages.
                    OpKind::FenceProxyAsync
                        if i > 0 && b.ops[i - 1].kind == OpKind::CpAsyncWaitGroup =>
                    {
                        checks.push((x, Change::Delete, None))
                    }
                    _ => {}
                }
            }
        }
    });
    for (op, change, next) in checks {
        let Some(id) = sim.id(op) else { continue };
        // As the explorer: a wait does not move past an op it guards, one that meets a
        // hazard without the wait (even where a wait on an earlier trip would then cover
        // it).
        if let Some(next) = next {
            let o = sim.run(&[(id, Change::Delete)].into_iter().collect(), runs);
            report.sim_runs += o.runs;
            if matches!(&o.verdict, Verdict::Hazard(h) if h.loc == next.loc) {
                continue;
            }
        }
        let o = sim.run(&[(id, change)].into_iter().collect(), runs);
        report.sim_runs += o.runs;
        match o.verdict {
            Verdict::Hazard(_) => report.sim_witnesses += 1,
            Verdict::Budget => report.sim_incomplete += 1,
            Verdict::NoHazard => {
                let what = match change {
                    Change::Pending(n) => format!("with pending = {n}"),
                    Change::Delete => "without it".into(),
                    Change::Later => "moved after the op that follows it".into(),
                };
                errors.push(Diagnostic::error(
                    op.loc.clone(),
                    format!(
                        "'{}' is not tight by the concrete simulation of verify-async-waits: \
                            {what}, none of its {} runs (every branch side, loop trip counts up \
                            to {}) meets a hazard, while its path explorer found this one tight \
                            (the two models disagree)",
                        op.kind.name(),
                        o.runs,
                        sim.max_trips()
                    ),
                ));
            }
        }
    }
}

/// Whether every kernel of `m` is safe (no hazard can see a pending group; fences and
/// barriers present), tightness not checked: `Some(true)` proven, `Some(false)` an
/// unsafe path found, `None` the budget of `max_steps` ran out first. The path explorer
/// decides; for a kernel with cp.async groups, whose publication to the async proxy (a
/// proxy fence after the retiring wait, then a barrier) only the executable model follows,
/// a hazard that model meets (within its default runs) also makes it `Some(false)`.
pub fn async_waits_are_safe(m: &Module, max_steps: u64) -> Option<bool> {
    let mut all = Some(true);
    for k in m.kernels().filter(|k| !k.regions.is_empty()) {
        for kind in GroupKind::ALL {
            match explore(m, k, kind, Mode::Quick, max_steps).safe() {
                Some(false) => return Some(false),
                None => all = None,
                Some(true) => {}
            }
        }
        let mut copies = false;
        k.walk(&mut |o| copies |= GroupKind::CpAsync.is_group_op(o));
        if copies && !sim_finds_no_hazard(m, k) {
            return Some(false);
        }
    }
    all
}

/// [`verify_async_waits`] as the pass reports it: a broken async protocol is invalid IR,
/// whoever wrote it, so every diagnostic has [`tilec_dialect::DiagKind::InvalidIr`].
///
/// # Errors
/// As [`verify_async_waits`].
pub fn check_module(m: &Module, options: &CheckOptions) -> Result<CheckReport, Diagnostics> {
    verify_async_waits(m, options).map_err(|d| d.with_kind(tilec_dialect::DiagKind::InvalidIr))
}

impl Pass for VerifyAsyncWaits {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let r = check_module(m, &self.options)?;
        cx.stat("waits-checked", r.waits);
        cx.stat("path-steps", r.steps);
        cx.stat("sim-runs", r.sim_runs);
        cx.stat("sim-witnesses", r.sim_witnesses);
        cx.stat("sim-incomplete", r.sim_incomplete);
        cx.stat("kernels-checked", m.kernels().count() as u64);
        Ok(())
    }
}

/// Reads of a wgmma accumulator that no wait retiring its group has taken. The lowering
/// orders an op after `wgmma.wait_group` only through the wait's operands (it returns the
/// registers it takes, PTX ISA §9.7.15.5.3), so an op that reads a `tile.mma`'s result
/// itself, or a value that a `tile.if`, a loop, a `tile.warp_specialize`, a `tile.reshape`,
/// a `tile.transpose` or a wait hands on from it, may read the registers before the wgmma
/// has written them, whatever the waits on the path retire. A wait hands on the operands in
/// `through` (the path explorer saw their group still pending after it, on some path); it
/// ties the others. An untied value may go only to a wait, to the accumulator (not the A or
/// B operand) of the next wgmma of its chain, and to those hand-ons (a loop's yield only where
/// it hands the registers on: a yield that copies the value into a carried argument still
/// in use reads it); any other reader is an error at the reader, with a note at the wgmma.
fn check_untied_reads(
    m: &Module,
    k: &Operation,
    through: &BTreeSet<(OpId, usize)>,
    errors: &mut Vec<Diagnostic>,
) {
    let mut ops = vec![];
    k.walk(&mut |o| ops.push(o));
    // The wgmma whose registers each value may hold untied, to a fixpoint over hand-ons.
    let mut raw: BTreeMap<Value, Location> = BTreeMap::new();
    for o in ops.iter().filter(|o| is_wgmma(o)) {
        for &r in &o.results {
            raw.insert(r, o.loc.clone());
        }
    }
    if raw.is_empty() {
        return;
    }
    // The registers of a value become those of each value it maps to, untouched.
    let mut hand_ons: BTreeMap<Value, Vec<Value>> = BTreeMap::new();
    let mut hand_on = |from: Value, to: Value| hand_ons.entry(from).or_default().push(to);
    for (id, o) in ops.iter().enumerate() {
        match o.kind {
            OpKind::WaitGroup => {
                for (i, (&v, &r)) in o.operands.iter().zip(&o.results).enumerate() {
                    if through.contains(&(id as OpId, i)) {
                        hand_on(v, r);
                    }
                }
            }
            OpKind::Reshape | OpKind::Transpose => {
                if let (Some(&v), Some(&r)) = (o.operands.first(), o.results.first()) {
                    hand_on(v, r);
                }
            }
            OpKind::If | OpKind::WarpSpecialize => {
                for r in 0..o.regions.len() {
                    let ys = tilec_dialect::ops::region_yields(o, r);
                    for (&y, &res) in ys.iter().zip(&o.results) {
                        hand_on(y, res);
                    }
                }
            }
            OpKind::For | OpKind::While => {
                // A tile.while runs its body at least once: its results are what the body
                // yields, never its inits.
                for c in tilec_dialect::ops::carried(o) {
                    let from_init = if o.kind == OpKind::For {
                        c.result
                    } else {
                        None
                    };
                    for to in [c.arg, from_init].into_iter().flatten() {
                        hand_on(c.init, to);
                    }
                    if let Some(y) = c.yielded {
                        for to in [c.arg, c.result].into_iter().flatten() {
                            hand_on(y, to);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let mut todo: Vec<Value> = raw.keys().copied().collect();
    while let Some(v) = todo.pop() {
        let at = raw[&v].clone();
        for &to in hand_ons.get(&v).into_iter().flatten() {
            if let std::collections::btree_map::Entry::Vacant(e) = raw.entry(to) {
                e.insert(at.clone());
                todo.push(to);
            }
        }
    }
    let facts = Facts::of_kind(m, k, GroupKind::Wgmma);
    for (id, o) in ops.iter().enumerate() {
        let allowed = |v: Value| match o.kind {
            // A yield that copies the value on the back edge reads its registers.
            OpKind::Yield => !facts.yield_copies(id as OpId).iter().any(|&(y, _)| y == v),
            OpKind::WaitGroup
            | OpKind::Reshape
            | OpKind::Transpose
            | OpKind::If
            | OpKind::For
            | OpKind::While
            | OpKind::WarpSpecialize => true,
            OpKind::Mma if is_wgmma(o) => tilec_dialect::ops::mma_operands(o)
                .is_some_and(|p| p.acc == v && p.a != v && p.b != v),
            _ => false,
        };
        let Some((v, at)) = o
            .operands
            .iter()
            .find_map(|&v| raw.get(&v).filter(|_| !allowed(v)).map(|at| (v, at)))
        else {
            continue;
        };
        let name = m
            .name(v)
            .map_or_else(|| format!("#{}", v.0), |n| format!("'%{n}'"));
        errors.push(
            Diagnostic::error(
                o.loc.clone(),
                format!(
                    "'{}' reads {name}, the accumulator of the wgmma at {at} (or a value \
                     handed on from it) that no 'tile.wait_group' retiring its group has \
                     taken: the lowering orders only a wait's operands after \
                     wgmma.wait_group, so the read may see the registers before the wgmma \
                     has written them; read the result of the wait that retires its group",
                    o.kind.name()
                ),
            )
            .with_note(at.clone(), "the wgmma 'tile.mma'"),
        );
    }
}

/// The hand-off of a staging slot from its writers to the TMA store, block by block: every
/// `tile.tma_store` of a slot written by a `tile.smem_store` earlier in the same block needs,
/// between the two, a `tile.fence_proxy_async` (the generic-proxy writes become visible to
/// the async proxy) and a `tile.named_barrier` of the threads that run the code (all
/// writers have written before the elected thread issues the copy). In the regions of the
/// GEMM pipeline's `tile.warp_specialize` that is one warpgroup's 128 threads (the lowering
/// gives each consumer warpgroup its own barrier id); in the consumer region of a plain
/// launch's (a kernel with `num_warps`), its `32 · num_warps` consumer threads; elsewhere
/// every thread of the CTA runs the code, so it is the kernel's `block` (a barrier counting
/// fewer completes on any warps' arrivals, letting writers through early; one counting more
/// waits for threads that never come).
fn check_staging_handoff(k: &Operation, errors: &mut Vec<Diagnostic>) {
    let threads = tilec_dialect::ops::block_threads(k).unwrap_or(128);
    let consumers = k.int_attr("num_warps").map(|w| 32 * w);
    handoff_regions(k, threads, consumers, errors);
}

/// [`check_staging_handoff`] of `op`'s regions, whose code `threads` threads run;
/// `consumers`: a plain launch's consumer threads.
fn handoff_regions(
    op: &Operation,
    threads: i64,
    consumers: Option<i64>,
    errors: &mut Vec<Diagnostic>,
) {
    for (i, b) in op.regions.iter().enumerate() {
        let t = match (op.kind, consumers) {
            (OpKind::WarpSpecialize, Some(c)) if i == 1 => c,
            (OpKind::WarpSpecialize, _) => 128,
            _ => threads,
        };
        check_block_handoff(&b.ops, t, errors);
        for o in &b.ops {
            handoff_regions(o, t, consumers, errors);
        }
    }
}

fn check_block_handoff(ops: &[Operation], threads: i64, errors: &mut Vec<Diagnostic>) {
    for (i, op) in ops.iter().enumerate() {
        // A barrier with a per-warpgroup id, for one warpgroup, or that only arrives orders
        // warpgroups (verify-named-barriers proves those); the staging protocol's is a sync
        // of every thread.
        let orders = ["peer", "only_warpgroup", "arrive"]
            .iter()
            .any(|a| op.attr(a).is_some());
        if op.kind == OpKind::NamedBarrier && !orders {
            if let Some(t) = op.int_attr("threads") {
                if t != threads {
                    let who = if threads == 128 {
                        "one warpgroup's 128 threads".to_string()
                    } else {
                        format!("the {threads} threads that run this code")
                    };
                    errors.push(Diagnostic::error(
                        op.loc.clone(),
                        format!(
                            "'tile.named_barrier' with threads = {t}: the staging protocol's \
                             barrier is {who} (fewer lets writers through early, more waits for \
                             threads that never arrive)"
                        ),
                    ));
                }
            }
        }
        if op.kind != OpKind::TmaStore || op.operands.len() < 3 {
            continue;
        }
        let (ring, slot) = (op.operands[1], op.operands[2]);
        let Some(w) = ops[..i].iter().rposition(|x| {
            x.kind == OpKind::SmemStore
                && x.operands.get(1) == Some(&ring)
                && x.operands.get(2) == Some(&slot)
        }) else {
            continue;
        };
        let between = &ops[w + 1..i];
        let fence = between.iter().any(|x| x.kind == OpKind::FenceProxyAsync);
        let barrier = between.iter().any(|x| x.kind == OpKind::NamedBarrier);
        if !fence || !barrier {
            let missing = match (fence, barrier) {
                (false, false) => "a 'tile.fence_proxy_async' and a 'tile.named_barrier'",
                (false, true) => "a 'tile.fence_proxy_async'",
                _ => "a 'tile.named_barrier'",
            };
            errors.push(
                Diagnostic::error(
                    op.loc.clone(),
                    format!(
                        "'tile.tma_store' reads a staging slot \
                            written by the 'tile.smem_store' before it without {missing} in \
                            between: the \
                            elected thread may copy before all writers' data is visible to the \
                            async \
                            proxy"
                    ),
                )
                .with_note(ops[w].loc.clone(), "the slot is written here"),
            );
        }
    }
}
