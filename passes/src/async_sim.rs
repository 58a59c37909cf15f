//! An executable model of asynchronous-group semantics, run on concrete paths: the second,
//! independent half of `verify-async-waits`.
//!
//! [`crate::async_model`] defines hazards over *symbolic* stages and register slots, and
//! both `async-wait-placement` and the path explorer of `verify-async-waits` read that one
//! definition. This module shares none of it (it imports nothing from `async_model`): it
//! interprets the GPU-level IR run by run, with concrete group queues, concrete register
//! sets and concrete stage numbers, and checks each op against the rules of the PTX ISA
//! (its asynchronous warpgroup-level MMA instructions `wgmma.mma_async`, `wgmma.fence`,
//! `wgmma.commit_group` and `wgmma.wait_group`, and the bulk async-groups of
//! `cp.async.bulk`). A bug in either model then shows up as a disagreement between the two.
//!
//! **What is chosen.** Each `tile.if` takes either side; each loop instance runs 0, 1, 2,
//! 3 or 5 times (`tile.while` at least once; a ring of S > 4 stages, up to 16, adds
//! S + 1); every combination is run, up to a budget of runs. The values the analysis
//! cannot know are chosen too, lazily (only when a stage index needs them), from `0..D`,
//! D the least common multiple of the rings' and barrier arrays' sizes and of the constant
//! moduli of `tile.remi` (at most 64; with a larger modulus no state is cut, see Cost):
//! kernel arguments, special registers, loads, the first induction value of each loop
//! instance whose lower bound is not a constant, a loop's carried values (afresh in each
//! iteration, fixed within it) and results, a `tile.if`'s results, and every `tile.divi`,
//! `tile.ceildiv`, `tile.mini`, `tile.maxi`, non-constant product or remainder. Only sums,
//! differences, products by a constant and remainders by a constant are computed. That is
//! the precision the wait contract promises (DESIGN.md,
//! "Async groups and tight waits": a stage is known up to its loop's iteration), so that a
//! wait found tight here is tight there, and not tighter than a symbolic analysis can be.
//!
//! **Cost.** Runs are enumerated with the last choice varying fastest, so once a run
//! reaches a loop-iteration entry in some state, every continuation of that state is run
//! before any earlier choice changes: a later run reaching the same state (queues, fence
//! state, remaining trips of the enclosing loops, and the scalars read later, as affine
//! forms modulo D) stops there. The regions of a `tile.warp_specialize` are enumerated apart
//! (their choices add instead of multiplying), and a producer region that issues no group
//! is not run. gemm_bf16 (persistent, two consumer warpgroups) takes 572 runs in all, about
//! 3 ms on a 2-core x86 host (scalars live in a per-run arena that is reused, and a state's
//! key is built in reused buffers). Besides the runs, one simulation makes at most
//! [`MAX_OP_STEPS`] op executions.
//!
//! **Register sets**, fixed by the lowering's contract: an accumulator operand and the
//! wgmma result chained on it (not with `zero_acc`), a wait's operands and results, a
//! loop's init, carried argument, yield and result (one init starting several carried
//! values that no group can write is copied for the second and later ones), a branch's and
//! a `tile.warp_specialize` consumer region's yields and results.
//!
//! **Hazards**, checked at each op of each run, per warpgroup role (the producer region of
//! a `tile.warp_specialize` runs as one warpgroup, from the state before it; the consumer
//! region and what follows as `consumers` warpgroups; other code as `block / 128`):
//! - any access, by an op other than a wgmma, to the accumulator or A-fragment registers
//!   of a wgmma issued and not yet retired by a `tile.wait_group` (the PTX ISA makes any
//!   such access before the `wgmma.wait_group` that covers the wgmma undefined);
//! - a wgmma writing another pending wgmma's A fragment, or reading as its A the
//!   accumulator of a pending wgmma of another chain;
//! - a wgmma with no `tile.wgmma_fence` since the warpgroup started or since another op
//!   touched its registers;
//! - a `tile.tma_load` or `tile.smem_store` into, or a `tile.mbarrier_arrive` releasing
//!   (the rings a producer loads after waiting on that barrier; every ring when none does),
//!   a stage that a pending wgmma reads; with two or more warpgroups, an overwrite of a
//!   stage that a wgmma retired by a wait but not yet followed by a `tile.barrier` reads
//!   (another warpgroup's copy of it may still be reading);
//! - a `tile.smem_store` into a staging slot that a pending `tile.tma_store` reads, or that
//!   a retired one read with no `tile.named_barrier` (or `tile.barrier`) since its wait
//!   (the elected thread waits; all 128 threads write);
//! - `cp.async` groups (`tile.cp_async`, `tile.cp_async_commit_group`,
//!   `tile.cp_async_wait_group`), which *write* a stage, each thread its own chunks: any
//!   access of that stage (`tile.smem_load`, `tile.smem_store`, `tile.cp_async`,
//!   `tile.tma_load`, `tile.tma_store`, `tile.mma`) while the group is pending; after the
//!   wait, a generic-proxy access (`ld`/`st.shared`, `ldmatrix`, another `cp.async`) before
//!   a `tile.barrier`, or an async-proxy access (wgmma, TMA) before a `tile.barrier` that
//!   follows a `tile.fence_proxy_async` executed after the wait (the PTX memory model's
//!   proxy rule: the writes must be fenced into the async proxy before the barrier that
//!   publishes them);
//! - a `tile.smem_store`, `tile.cp_async` or `tile.tma_load` into a stage this thread read
//!   with `tile.smem_load` with no `tile.barrier` since (other threads may still read it);
//! - a `tile.smem_load` of a stage this thread wrote with `tile.smem_store` with no
//!   `tile.barrier` since, nor a `tile.named_barrier` of every thread that runs the code
//!   (the other threads' parts of it may not be written yet);
//! - the end of a warpgroup (`tile.return`, the end of a producer region) with any group
//!   of any kind pending;
//! - the end of a block (its `tile.yield`) that defines a pending register-A wgmma's A
//!   fragment and does not yield it: the fragment's registers are free from there on.
//!
//! A run stops at its first hazard, which is reported with the choices of that run.

use rustc_hash::{FxHashMap, FxHashSet};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use tilec_dialect::{Block, Location, Module, OpKind, Operation, Type, Value};

/// The default budget: runs per simulation.
pub const DEFAULT_RUNS: u64 = 4096;

/// The most op executions one simulation makes over all its runs (a kernel of deep loop
/// nests has long runs); past it the verdict is [`Verdict::Budget`].
pub const MAX_OP_STEPS: u64 = 4_000_000;

/// A change to the kernel, by the op's pre-order index in its kernel (the kernel is 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// A `tile.wait_group` or `tile.bulk_wait_group` with this `pending`.
    Pending(i64),
    /// The op is left out (a wait, a fence or a barrier).
    Delete,
    /// The op runs after the op that follows it in its block instead of before it.
    Later,
}

/// A hazard one run met.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hazard {
    /// The op at which it happens.
    pub loc: Location,
    /// What happens, e.g. "'tile.tma_load' overwrites stage 1 of a ring that the wgmma
    /// group of the 'tile.mma' at f:12:3 reads while it is pending".
    pub message: String,
    /// The choices of the run, e.g. "the loop at f:14:3 ran 2 times, else-branch of the if
    /// at f:15:5".
    pub run: String,
    /// A hazard only this model looks for (a missing proxy fence before the async proxy
    /// reads copied data; a stage rewritten while other threads may still read it with
    /// `tile.smem_load`): the path explorer does not check these, so meeting one is no
    /// disagreement between the two.
    pub unmodelled: bool,
}

/// What a simulation found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every combination of choices ran without a hazard.
    NoHazard,
    /// The first run with a hazard.
    Hazard(Hazard),
    /// The budget of runs ran out first.
    Budget,
}

/// A simulation's verdict and the runs it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// What it found.
    pub verdict: Verdict,
    /// Runs made.
    pub runs: u64,
}

/// One kernel, prepared for simulation.
pub struct Simulator<'m> {
    m: &'m Module,
    ops: Vec<&'m Operation>,
    ids: FxHashMap<*const Operation, u32>,
    slot: FxHashMap<Value, u32>,
    /// For each block (by address) that ends in a `tile.yield`, the register sets whose
    /// values are all defined in it or below it and which it does not yield: they are free
    /// after it.
    frees: FxHashMap<usize, FxHashSet<u32>>,
    /// For each loop `tile.yield` (by address), the (yielded, carried argument) pairs whose
    /// registers differ: the back edge copies one into the other.
    copies: FxHashMap<usize, Vec<(Value, Value)>>,
    /// The rings each barrier guards (none known: every ring).
    bar_ring: FxHashMap<Value, Vec<Value>>,
    /// Stage count of every ring.
    stages: FxHashMap<Value, i64>,
    /// Values chosen for unknowns are taken from `0..domain`.
    domain: i64,
    /// Trip counts of a loop without a loop inside.
    trips: Vec<i64>,
    warpgroups: u64,
    /// For each loop, the values that its iterations and everything after them may read
    /// and that are defined outside its body: what a run's future depends on there.
    live: FxHashMap<u32, Vec<Value>>,
    /// Ops only the producer phase runs (region 0 of a `tile.warp_specialize`), and ops
    /// only the consumer phase runs (region 1, and what follows the `tile.warp_specialize`).
    producer_only: FxHashSet<u32>,
    consumer_only: FxHashSet<u32>,
    /// Rings that code outside a producer region overwrites (`tile.tma_load`,
    /// `tile.smem_store`): a retired group matters to later overwrites only if it reads one.
    overwritten: FxHashSet<Value>,
    /// Whether every remainder modulus divides the domain (else states are not cut).
    exact: bool,
    /// Whether a producer phase can meet a hazard: some group is issued before the
    /// `tile.warp_specialize` or inside its producer region (without one, that warpgroup
    /// has nothing pending, ever).
    producer_issues: bool,
}

/// A scalar: a constant, an unknown chosen on demand, or linear arithmetic over them.
/// Operands are indices into the run's arena ([`Run::arena`]).
#[derive(Clone, Copy)]
enum Expr {
    K(i64),
    Leaf(usize),
    Add(u32, u32),
    Sub(u32, u32),
    Mul(u32, i64),
    Rem(u32, i64),
}

#[derive(Clone, Debug)]
struct Wgmma {
    op: u32,
    acc: u32,
    a: Option<u32>,
    stages: Vec<(Value, i64)>,
}

#[derive(Clone, Debug, PartialEq)]
struct Store {
    op: u32,
    slot: (Value, i64),
}

/// A cp.async group's copy retired by this thread's wait, not yet visible to every access.
#[derive(Clone, Debug, PartialEq)]
struct Retired {
    copy: Store,
    /// A `tile.fence_proxy_async` ran since the wait.
    fenced: bool,
    /// A `tile.barrier` ran since the wait: other threads' generic accesses see the copy.
    generic: bool,
    /// A `tile.barrier` ran after such a fence: the async proxy sees the copy too.
    proxy: bool,
}

/// One warpgroup's queues.
#[derive(Clone, Debug, Default)]
struct Queues {
    committed: Vec<Vec<Wgmma>>,
    open: Vec<Wgmma>,
    /// Retired by this warpgroup's wait, no CTA barrier since.
    unsynced: Vec<Wgmma>,
    bulk_committed: Vec<Vec<Store>>,
    bulk_open: Vec<Store>,
    bulk_unsynced: Vec<Store>,
    cp_committed: Vec<Vec<Store>>,
    cp_open: Vec<Store>,
    cp_retired: Vec<Retired>,
    /// Stages this thread read with `tile.smem_load` since the last `tile.barrier`: other
    /// threads may still be reading them.
    loaded: Vec<(Value, i64)>,
    /// Stages this thread wrote with `tile.smem_store` since the last `tile.barrier`: other
    /// threads may not read them yet.
    stored: Vec<(Value, i64)>,
    /// Stages this thread wrote with `tile.smem_store` that the async proxy (wgmma) may not
    /// see yet, each with whether a `tile.fence_proxy_async` ran since: a barrier after
    /// the fence publishes them (PTX ISA, "Proxy": generic writes reach the async proxy
    /// through `fence.proxy.async` by the writer, then the synchronisation).
    unpublished: Vec<((Value, i64), bool)>,
    fenced: bool,
    dirty: SlotSet,
}

/// A set of register-set ids (small integers), as a bit set: iterated in increasing order.
#[derive(Clone, Debug, Default)]
struct SlotSet(Vec<u64>);

impl SlotSet {
    fn insert(&mut self, s: u32) {
        let (w, b) = (s as usize / 64, s % 64);
        if w >= self.0.len() {
            self.0.resize(w + 1, 0);
        }
        self.0[w] |= 1 << b;
    }
    fn contains(&self, s: u32) -> bool {
        self.0
            .get(s as usize / 64)
            .is_some_and(|w| w >> (s % 64) & 1 == 1)
    }
    fn clear(&mut self) {
        self.0.fill(0);
    }
    fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }
    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(i, &w)| {
            (0..64u32)
                .filter(move |b| w >> b & 1 == 1)
                .map(move |b| i as u32 * 64 + b)
        })
    }
}

impl Queues {
    fn pending(&self) -> impl Iterator<Item = &Wgmma> {
        self.committed.iter().flatten().chain(&self.open)
    }
    fn bulk_pending(&self) -> impl Iterator<Item = &Store> {
        self.bulk_committed.iter().flatten().chain(&self.bulk_open)
    }
    fn cp_pending(&self) -> impl Iterator<Item = &Store> {
        self.cp_committed.iter().flatten().chain(&self.cp_open)
    }
}

/// An affine form: (leaf, coefficient) terms and a constant.
type Affine = (Vec<(usize, i64)>, i64);

/// Scalar values by value number: an arena index, [`Env::NONE`] for none.
#[derive(Default)]
struct Env(Vec<u32>);

impl Env {
    const NONE: u32 = u32::MAX;
    fn get(&self, v: &Value) -> Option<u32> {
        self.0
            .get(v.0 as usize)
            .copied()
            .filter(|&e| e != Self::NONE)
    }
    fn insert(&mut self, v: Value, e: u32) {
        let i = v.0 as usize;
        if i >= self.0.len() {
            self.0.resize(i + 1, Self::NONE);
        }
        self.0[i] = e;
    }
    fn remove(&mut self, v: &Value) {
        if let Some(x) = self.0.get_mut(v.0 as usize) {
            *x = Self::NONE;
        }
    }
}

#[derive(Clone, Copy)]
enum Event {
    Trips(u32, i64),
    Branch(u32, bool),
}

struct Run<'s, 'm> {
    s: &'s Simulator<'m>,
    changes: &'s HashMap<u32, Change>,
    env: Env,
    /// The scalar expressions of this run ([`Expr`] operands index it).
    arena: Vec<Expr>,
    leaves: Vec<Option<i64>>,
    q: Queues,
    wg: u64,
    choices: Vec<usize>,
    used: usize,
    arity: Vec<usize>,
    events: Vec<Event>,
    /// This run takes the producer region of a `tile.warp_specialize` and stops after it;
    /// otherwise it skips that region.
    producer: bool,
    stop: bool,
    /// The states seen at loop-iteration entries in earlier runs of this enumeration. Runs
    /// are enumerated with the last choice varying fastest, so every continuation of a state
    /// has been run (or is being run) once it is seen: a later run that reaches it stops.
    /// Each state with the choices that led to it (a run with the same choices is still
    /// exploring its continuations).
    seen: &'s RefCell<FxHashMap<Vec<i64>, Vec<usize>>>,
    /// Buffers of [`Run::seen_before`], kept across the runs of an enumeration.
    scratch: &'s RefCell<Scratch>,
    /// The enclosing loop iterations (loop, trips, iteration) and deferred ops.
    ctx: Vec<i64>,
    /// Op executions of this enumeration so far (see [`MAX_OP_STEPS`]).
    steps: &'s std::cell::Cell<u64>,
    /// The hazard met is one the path explorer does not model ([`Hazard::unmodelled`]).
    unmodelled: std::cell::Cell<bool>,
}

/// Working buffers of [`Run::seen_before`].
#[derive(Default)]
struct Scratch {
    key: Vec<i64>,
    /// The terms of the live scalars' affine forms, one range per form.
    terms: Vec<(usize, i64)>,
    /// Per live scalar: its terms' range and its constant, if it is affine.
    forms: Vec<Option<(usize, usize, i64)>>,
    /// Per leaf: how many live forms hold it.
    count: Vec<u32>,
    ranks: Ranks,
}

/// Leaves numbered in order of first appearance in a state key (-1: not yet).
#[derive(Default)]
struct Ranks {
    of: Vec<i64>,
    next: i64,
}

impl Ranks {
    fn reset(&mut self, leaves: usize) {
        self.of.clear();
        self.of.resize(leaves, -1);
        self.next = 0;
    }
    /// The rank of leaf `l`, given it now if it has none.
    fn of(&mut self, l: usize) -> i64 {
        if self.of[l] < 0 {
            self.of[l] = self.next;
            self.next += 1;
        }
        self.of[l]
    }
}

/// Sorts `terms[start..]` by leaf, adds up the coefficients of each leaf modulo `d` and
/// drops the zero ones; returns the end of the normalised range (the vector's new length).
fn normalize(terms: &mut Vec<(usize, i64)>, start: usize, d: i64) -> usize {
    terms[start..].sort_unstable();
    let mut w = start;
    for r in start..terms.len() {
        let (l, a) = terms[r];
        if w > start && terms[w - 1].0 == l {
            terms[w - 1].1 = (terms[w - 1].1 + a).rem_euclid(d);
        } else {
            terms[w] = (l, a);
            w += 1;
        }
    }
    terms.truncate(w);
    let mut k = start;
    for r in start..w {
        if terms[r].1 != 0 {
            terms[k] = terms[r];
            k += 1;
        }
    }
    terms.truncate(k);
    k
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn is_settled(o: &Operation) -> bool {
    o.regions.is_empty() && !matches!(o.kind, OpKind::Mma | OpKind::WaitGroup)
}

impl<'m> Simulator<'m> {
    /// Prepare `kernel`, a `tile.kernel` of `m`.
    pub fn new(m: &'m Module, kernel: &'m Operation) -> Self {
        let mut ops = vec![];
        kernel.walk(&mut |o| ops.push(o));
        let ids = ops
            .iter()
            .enumerate()
            .map(|(i, &o)| (o as *const Operation, i as u32))
            .collect();
        let mut stages = FxHashMap::default();
        let mut domain = 1i64;
        for o in &ops {
            for &r in &o.results {
                let n = match m.try_ty(r) {
                    Some(Type::Smem { stages: n, .. }) => {
                        stages.insert(r, *n as i64);
                        *n as i64
                    }
                    Some(Type::Mbarrier { count, .. }) => *count as i64,
                    _ => continue,
                };
                if n > 0 && domain <= 64 {
                    domain = (domain / gcd(domain, n)).saturating_mul(n);
                }
            }
        }
        // Rings deeper than 4 stages add S + 1 trips (up to 16 stages: the kernels tilec
        // builds have at most 8).
        // Remainders by constants: the state cuts compare scalars modulo the domain, which
        // is exact only if every such modulus divides it.
        let mut exact = true;
        let consts: FxHashMap<Value, i64> = ops
            .iter()
            .filter(|o| o.kind == OpKind::Constant)
            .filter_map(|o| Some((*o.results.first()?, o.int_attr("value")?)))
            .collect();
        for o in &ops {
            if o.kind == OpKind::RemI {
                let c = o.operands.get(1).and_then(|v| consts.get(v).copied());
                if let Some(n) = c.filter(|&n| n > 0) {
                    if domain <= 64 {
                        domain = (domain / gcd(domain, n)).saturating_mul(n);
                    }
                }
            }
        }
        if domain > 64 {
            exact = false;
        }
        let mut trips = vec![0, 1, 2, 3, 5];
        for &n in stages.values() {
            if (5..=16).contains(&n) && !trips.contains(&(n + 1)) {
                trips.push(n + 1);
            }
        }
        // Stage indices repeat every `domain` trips, and a group stays pending up to
        // `depth` trips: every (stage, stage of a pending group) pair of two rings of
        // coprime depths (3 and 2: first met on the sixth trip) is met within
        // domain + depth trips.
        let mut depth = 1i64;
        for o in &ops {
            if matches!(
                o.kind,
                OpKind::WaitGroup | OpKind::CpAsyncWaitGroup | OpKind::BulkWaitGroup
            ) {
                depth = depth.max(o.int_attr("pending").unwrap_or(0).clamp(0, 8) + 1);
            }
        }
        if exact && domain + depth <= 24 && !trips.contains(&(domain + depth)) {
            trips.push(domain + depth);
        }
        let mut bar_ring = FxHashMap::default();
        if let Some(b) = kernel.regions.first() {
            guards(b, &[], &mut bar_ring);
        }
        let warpgroups = tilec_dialect::ops::block_threads(kernel)
            .map_or(1, |t| t / 128)
            .max(1) as u64;
        let mut live = FxHashMap::default();
        if let Some(b) = kernel.regions.first() {
            live_sets(b, &HashSet::new(), &HashSet::new(), &ids, &mut live);
        }
        for vs in live.values_mut() {
            vs.retain(|&v| matches!(m.try_ty(v), Some(Type::Scalar(_))));
        }
        let (mut producer_only, mut consumer_only) = (FxHashSet::default(), FxHashSet::default());
        if let Some(b) = kernel.regions.first() {
            let mut after_ws = false;
            for o in &b.ops {
                let mark = |x: &Operation, set: &mut FxHashSet<u32>| {
                    x.walk(&mut |y| {
                        if let Some(&i) = ids.get(&(y as *const Operation)) {
                            set.insert(i);
                        }
                    })
                };
                if after_ws {
                    mark(o, &mut consumer_only);
                } else if o.kind == OpKind::WarpSpecialize && o.regions.len() == 2 {
                    for x in &o.regions[0].ops {
                        mark(x, &mut producer_only);
                    }
                    for x in &o.regions[1].ops {
                        mark(x, &mut consumer_only);
                    }
                    after_ws = true;
                }
            }
        }
        let issues = |o: &Operation| {
            let mut any = false;
            o.walk(&mut |x| {
                any |= matches!(x.kind, OpKind::TmaStore | OpKind::CpAsync)
                    || (x.kind == OpKind::Mma && x.str_attr("kind") == Some("wgmma"))
            });
            any
        };
        let mut producer_issues = false;
        if let Some(b) = kernel.regions.first() {
            for o in &b.ops {
                if o.kind == OpKind::WarpSpecialize {
                    producer_issues |= o.regions.first().is_some_and(|r| r.ops.iter().any(issues));
                    break;
                }
                producer_issues |= issues(o);
            }
        }
        let mut overwritten = FxHashSet::default();
        for (i, o) in ops.iter().enumerate() {
            let ring = match o.kind {
                OpKind::TmaLoad | OpKind::SmemStore | OpKind::CpAsync => o.operands.get(1),
                _ => None,
            };
            if let (Some(&r), false) = (ring, producer_only.contains(&(i as u32))) {
                overwritten.insert(r);
            }
        }
        let (slot, copies) = register_sets(&ops);
        let frees = kernel
            .regions
            .first()
            .map(|b| freed_sets(b, &slot))
            .unwrap_or_default();
        Simulator {
            exact,
            frees,
            copies,
            m,
            live,
            producer_issues,
            overwritten,
            producer_only,
            consumer_only,
            slot,
            ops,
            ids,
            bar_ring,
            stages,
            domain: domain.clamp(2, 64),
            trips,
            warpgroups,
        }
    }

    /// The most trips a loop instance takes.
    pub fn max_trips(&self) -> i64 {
        self.trips.iter().copied().max().unwrap_or(0)
    }

    /// The pre-order index of `op` in the kernel (the kernel is 0).
    pub fn id(&self, op: &Operation) -> Option<u32> {
        self.ids.get(&(op as *const Operation)).copied()
    }

    /// Run the kernel with `changes` on every combination of choices, at most `budget`
    /// runs, stopping at the first hazard.
    pub fn run(&self, changes: &HashMap<u32, Change>, budget: u64) -> Outcome {
        // The regions of a `tile.warp_specialize` run on different warpgroups, from the
        // same state: each is enumerated on its own (a run stops after the producer's), so
        // their choices add up instead of multiplying.
        let mut has_ws = false;
        self.ops[0].walk(&mut |o| has_ws |= o.kind == OpKind::WarpSpecialize);
        let mut runs = 0;
        let only =
            |set: &FxHashSet<u32>| !changes.is_empty() && changes.keys().all(|i| set.contains(i));
        for producer in [true, false] {
            // A phase that runs none of the changed ops is the unchanged kernel's.
            if (producer && (!has_ws || !self.producer_issues || only(&self.consumer_only)))
                || (!producer && has_ws && only(&self.producer_only))
            {
                continue;
            }
            let o = self.enumerate(changes, budget - runs, producer);
            runs += o.runs;
            if o.verdict != Verdict::NoHazard {
                return Outcome { runs, ..o };
            }
        }
        Outcome {
            verdict: Verdict::NoHazard,
            runs,
        }
    }

    fn enumerate(&self, changes: &HashMap<u32, Change>, budget: u64, producer: bool) -> Outcome {
        let mut choices: Vec<usize> = vec![];
        let seen = RefCell::new(FxHashMap::default());
        let scratch = RefCell::new(Scratch::default());
        let steps = std::cell::Cell::new(0u64);
        // Each run's scalar environment and expression arena, kept across runs.
        let (mut env, mut arena) = (
            Env(vec![Env::NONE; self.m.values.len()]),
            Vec::with_capacity(256),
        );
        let mut runs = 0;
        while runs < budget {
            runs += 1;
            let mut r = Run {
                s: self,
                changes,
                env: std::mem::take(&mut env),
                arena: std::mem::take(&mut arena),
                leaves: vec![],
                q: Queues::default(),
                wg: self.warpgroups,
                choices: std::mem::take(&mut choices),
                used: 0,
                arity: vec![],
                events: vec![],
                producer,
                stop: false,
                seen: &seen,
                scratch: &scratch,
                ctx: vec![],
                steps: &steps,
                unmodelled: std::cell::Cell::new(false),
            };
            let body = &self.ops[0].regions[0];
            if let Err((loc, message)) = r.block(body).map(|_| ()) {
                let run = r.describe();
                return Outcome {
                    verdict: Verdict::Hazard(Hazard {
                        loc,
                        message,
                        run,
                        unmodelled: r.unmodelled.get(),
                    }),
                    runs,
                };
            }
            if steps.get() > MAX_OP_STEPS {
                break;
            }
            // The next combination: the consumed choices as a mixed-radix counter.
            let mut c = r.choices[..r.used].to_vec();
            loop {
                match c.pop() {
                    None => {
                        return Outcome {
                            verdict: Verdict::NoHazard,
                            runs,
                        }
                    }
                    Some(x) if x + 1 < r.arity[c.len()] => {
                        c.push(x + 1);
                        break;
                    }
                    Some(_) => {}
                }
            }
            choices = c;
            env = std::mem::take(&mut r.env);
            env.0.fill(Env::NONE);
            arena = std::mem::take(&mut r.arena);
            arena.clear();
        }
        Outcome {
            verdict: Verdict::Budget,
            runs,
        }
    }
}

/// Register sets (see the module docs), as a map from value to set id.
fn register_sets(ops: &[&Operation]) -> RegisterSets {
    let mut p: HashMap<Value, Value> = HashMap::new();
    fn find(p: &mut HashMap<Value, Value>, v: Value) -> Value {
        let mut r = v;
        while let Some(&q) = p.get(&r) {
            if q == r {
                break;
            }
            r = q;
        }
        p.insert(v, r);
        r
    }
    let union = |p: &mut HashMap<Value, Value>, a: Value, b: Value| {
        let (ra, rb) = (find(p, a), find(p, b));
        if ra != rb {
            p.insert(ra, rb);
        }
    };
    let mut copies: FxHashMap<usize, Vec<(Value, Value)>> = FxHashMap::default();
    let mut settled = HashSet::new();
    for o in ops {
        if is_settled(o) {
            settled.extend(o.results.iter().copied());
        }
    }
    let yields = |b: &Block| -> Vec<Value> {
        b.ops
            .last()
            .filter(|y| y.kind == OpKind::Yield)
            .map(|y| y.operands.clone())
            .unwrap_or_default()
    };
    for o in ops {
        match o.kind {
            OpKind::Mma if o.attr("zero_acc").and_then(|a| a.as_bool()) != Some(true) => {
                if let (Some(&acc), Some(&r)) = (o.operands.last(), o.results.first()) {
                    union(&mut p, acc, r);
                }
            }
            OpKind::WaitGroup => {
                for (&a, &r) in o.operands.iter().zip(&o.results) {
                    union(&mut p, a, r);
                }
            }
            OpKind::For | OpKind::While if !o.regions.is_empty() => {
                let is_for = o.kind == OpKind::For;
                let (inits, args) = if is_for {
                    (
                        o.operands.get(3..).unwrap_or(&[]),
                        o.regions[0].args.get(1..).unwrap_or(&[]),
                    )
                } else {
                    (&o.operands[..], &o.regions[0].args[..])
                };
                let ys = yields(&o.regions[0]);
                let ys = if is_for {
                    &ys[..]
                } else {
                    ys.get(1..).unwrap_or(&[])
                };
                let mut seen = HashSet::new();
                let live = live_after_def(&o.regions[0]);
                for (k, &arg) in args.iter().enumerate() {
                    if let Some(&init) = inits.get(k) {
                        if seen.insert(init) || !settled.contains(&init) {
                            union(&mut p, init, arg);
                        }
                    }
                    let y = ys.get(k).copied();
                    let apart = y.is_some_and(|y| live(arg, y));
                    if let (Some(y), Some(last)) = (y, o.regions[0].ops.last()) {
                        if apart {
                            let at = last as *const Operation as usize;
                            copies.entry(at).or_default().push((y, arg));
                        } else {
                            union(&mut p, arg, y);
                        }
                    }
                    if let Some(&r) = o.results.get(k) {
                        union(&mut p, if apart { y.unwrap_or(arg) } else { arg }, r);
                    }
                }
            }
            OpKind::If => {
                for b in &o.regions {
                    for (&y, &r) in yields(b).iter().zip(&o.results) {
                        union(&mut p, y, r);
                    }
                }
            }
            OpKind::WarpSpecialize if o.regions.len() == 2 => {
                for (&y, &r) in yields(&o.regions[1]).iter().zip(&o.results) {
                    union(&mut p, y, r);
                }
            }
            _ => {}
        }
    }
    let mut all = vec![];
    for o in ops {
        all.extend(o.operands.iter().copied());
        all.extend(o.results.iter().copied());
        for b in &o.regions {
            all.extend(b.args.iter().copied());
        }
    }
    let slots = all.into_iter().map(|v| (v, find(&mut p, v).0)).collect();
    (slots, copies)
}

/// Register sets by value, and the back-edge copies of each loop yield (by address).
type RegisterSets = (FxHashMap<Value, u32>, FxHashMap<usize, Vec<(Value, Value)>>);

/// For a loop body: whether a carried argument is still read once the value yielded into it
/// exists, so that the two need registers of their own. Reads are looked for in the ops
/// after the one defining the yielded value; both values are taken through the waits that
/// tie them (a wait's results are its operands' registers) and through the branches whose
/// two arms yield one value's registers.
fn live_after_def(body: &Block) -> impl Fn(Value, Value) -> bool + '_ {
    let mut through: HashMap<Value, Value> = HashMap::new();
    let mut arms: HashMap<Value, (Value, Value)> = HashMap::new();
    for o in &body.ops {
        o.walk(&mut |x| {
            if x.kind == OpKind::WaitGroup {
                for (&r, &a) in x.results.iter().zip(&x.operands) {
                    through.insert(r, a);
                }
            }
            if x.kind == OpKind::If && x.regions.len() == 2 {
                let ys: Vec<&Operation> = x
                    .regions
                    .iter()
                    .filter_map(|b| b.ops.last().filter(|y| y.kind == OpKind::Yield))
                    .collect();
                if let [t, e] = ys[..] {
                    for (i, &r) in x.results.iter().enumerate() {
                        if let (Some(&a), Some(&b)) = (t.operands.get(i), e.operands.get(i)) {
                            arms.insert(r, (a, b));
                        }
                    }
                }
            }
        });
    }
    move |arg: Value, y: Value| {
        fn root(
            v: Value,
            through: &HashMap<Value, Value>,
            arms: &HashMap<Value, (Value, Value)>,
            depth: u32,
        ) -> Value {
            if depth > 64 {
                return v;
            }
            if let Some(&a) = through.get(&v) {
                return root(a, through, arms, depth + 1);
            }
            if let Some(&(a, b)) = arms.get(&v) {
                let (ra, rb) = (
                    root(a, through, arms, depth + 1),
                    root(b, through, arms, depth + 1),
                );
                if ra == rb {
                    return ra;
                }
            }
            v
        }
        let root = |v: Value| root(v, &through, &arms, 0);
        let y = root(y);
        let Some(def) = body.ops.iter().position(|o| o.results.contains(&y)) else {
            return false;
        };
        let mut read = false;
        for o in body.ops[def + 1..]
            .iter()
            .take_while(|o| o.kind != OpKind::Yield)
        {
            o.walk(&mut |x| read |= x.operands.iter().any(|&v| root(v) == arg));
        }
        read
    }
}

/// The register sets each block (by address, a block ending in `tile.yield`) frees: those
/// all of whose values the block or a block inside it defines, and which its yield does not
/// carry out.
fn freed_sets(top: &Block, slot: &FxHashMap<Value, u32>) -> FxHashMap<usize, FxHashSet<u32>> {
    fn walk(
        b: &Block,
        chain: &mut Vec<usize>,
        defs: &mut FxHashMap<u32, Vec<Vec<usize>>>,
        slot: &FxHashMap<Value, u32>,
    ) {
        chain.push(b as *const Block as usize);
        for v in b
            .args
            .iter()
            .chain(b.ops.iter().flat_map(|o| o.results.iter()))
        {
            if let Some(&s) = slot.get(v) {
                defs.entry(s).or_default().push(chain.clone());
            }
        }
        for o in &b.ops {
            for r in &o.regions {
                walk(r, chain, defs, slot);
            }
        }
        chain.pop();
    }
    fn ends(
        b: &Block,
        defs: &FxHashMap<u32, Vec<Vec<usize>>>,
        slot: &FxHashMap<Value, u32>,
        out: &mut FxHashMap<usize, FxHashSet<u32>>,
    ) {
        for o in &b.ops {
            for r in &o.regions {
                ends(r, defs, slot, out);
            }
        }
        let Some(y) = b.ops.last().filter(|y| y.kind == OpKind::Yield) else {
            return;
        };
        let me = b as *const Block as usize;
        let yielded: FxHashSet<u32> = y
            .operands
            .iter()
            .filter_map(|v| slot.get(v))
            .copied()
            .collect();
        let freed: FxHashSet<u32> = b
            .args
            .iter()
            .chain(b.ops.iter().flat_map(|o| o.results.iter()))
            .filter_map(|v| slot.get(v).copied())
            .filter(|s| !yielded.contains(s))
            .filter(|s| defs[s].iter().all(|c| c.contains(&me)))
            .collect();
        if !freed.is_empty() {
            out.insert(me, freed);
        }
    }
    let mut defs = FxHashMap::default();
    walk(top, &mut vec![], &mut defs, slot);
    let mut out = FxHashMap::default();
    ends(top, &defs, slot, &mut out);
    out
}

/// Which rings each barrier guards: those a TMA copy fills with the barrier the last one
/// waited on before it, in its block or an enclosing one (the producer's
/// `mbarrier_wait %empty, s` before it refills stage s; it passed every earlier wait too,
/// and the copy waits for this barrier's release).
fn guards(b: &Block, waited: &[Value], out: &mut FxHashMap<Value, Vec<Value>>) {
    let mut waited = waited.to_vec();
    for o in &b.ops {
        if o.kind == OpKind::MbarrierWait {
            if let Some(&bar) = o.operands.first() {
                waited = vec![bar];
            }
        }
        if o.kind == OpKind::TmaLoad {
            if let Some(&ring) = o.operands.get(1) {
                for &bar in &waited {
                    let rings = out.entry(bar).or_default();
                    if !rings.contains(&ring) {
                        rings.push(ring);
                    }
                }
            }
        }
        for r in &o.regions {
            guards(r, &waited, out);
        }
    }
}

fn uses_of(op: &Operation, out: &mut HashSet<Value>) {
    out.extend(op.operands.iter().copied());
    for r in &op.regions {
        for o in &r.ops {
            uses_of(o, out);
        }
    }
}

fn defs_in(b: &Block, out: &mut HashSet<Value>) {
    for o in &b.ops {
        out.extend(o.results.iter().copied());
        for r in &o.regions {
            out.extend(r.args.iter().copied());
            defs_in(r, out);
        }
    }
}

/// [`Simulator::live`] for the loops in `b`: the values read after a loop's entry (in its
/// body, in later iterations of the loops around it, or after it) and defined before it.
/// `after`: the values read after `b` that are defined before it; `later`: the values
/// defined after `b` (read after their definition only, so not live here).
fn live_sets(
    b: &Block,
    after: &HashSet<Value>,
    later: &HashSet<Value>,
    ids: &FxHashMap<*const Operation, u32>,
    out: &mut FxHashMap<u32, Vec<Value>>,
) {
    for (i, op) in b.ops.iter().enumerate() {
        if op.regions.is_empty() {
            continue;
        }
        let (mut uses, mut defs) = (after.clone(), later.clone());
        for o in &b.ops[i + 1..] {
            uses_of(o, &mut uses);
            defs.extend(o.results.iter().copied());
            for r in &o.regions {
                defs_in(r, &mut defs);
            }
        }
        if matches!(op.kind, OpKind::For | OpKind::While) {
            // Later iterations read what the body reads, less what the body defines.
            let mut body_defs = HashSet::new();
            defs_in(&op.regions[0], &mut body_defs);
            let mut again = HashSet::new();
            uses_of(op, &mut again);
            uses.extend(again.into_iter().filter(|v| !body_defs.contains(v)));
            let mut live: Vec<Value> = uses
                .iter()
                .copied()
                .filter(|v| !body_defs.contains(v) && !defs.contains(v))
                .collect();
            live.sort();
            if let Some(&id) = ids.get(&(op as *const Operation)) {
                out.insert(id, live);
            }
        }
        for r in &op.regions {
            live_sets(r, &uses, &defs, ids, out);
        }
    }
}

type Res<T> = Result<T, (Location, String)>;

impl Run<'_, '_> {
    fn choose(&mut self, arity: usize) -> usize {
        if self.used >= self.choices.len() {
            self.choices.push(0);
        }
        let c = self.choices[self.used].min(arity - 1);
        self.arity.push(arity);
        self.used += 1;
        c
    }

    /// `e` in the arena.
    fn node(&mut self, e: Expr) -> u32 {
        self.arena.push(e);
        (self.arena.len() - 1) as u32
    }

    /// The constant `v`.
    fn k(&mut self, v: i64) -> u32 {
        self.node(Expr::K(v))
    }

    fn leaf(&mut self) -> u32 {
        self.leaves.push(None);
        self.node(Expr::Leaf(self.leaves.len() - 1))
    }

    /// The scalar `v` (a fresh unknown the first time an undefined value is read).
    fn expr(&mut self, v: Value) -> u32 {
        if let Some(e) = self.env.get(&v) {
            return e;
        }
        let e = self.leaf();
        self.env.insert(v, e);
        e
    }

    fn force(&mut self, e: u32) -> i64 {
        match self.arena[e as usize] {
            Expr::K(v) => v,
            Expr::Leaf(i) => match self.leaves[i] {
                Some(v) => v,
                None => {
                    let v = self.choose(self.s.domain as usize) as i64;
                    self.leaves[i] = Some(v);
                    v
                }
            },
            Expr::Add(a, b) => self.force(a).wrapping_add(self.force(b)),
            Expr::Sub(a, b) => self.force(a).wrapping_sub(self.force(b)),
            Expr::Mul(a, c) => self.force(a).wrapping_mul(c),
            Expr::Rem(a, c) => self.force(a).wrapping_rem(c),
        }
    }

    /// The value of scalar `v`, chosen where unknown.
    fn int(&mut self, v: Value) -> i64 {
        let e = self.expr(v);
        self.force(e)
    }

    /// Stage `v` of `ring` (an index the verifier keeps in `0..stages`).
    fn stage(&mut self, ring: Value, v: Value) -> (Value, i64) {
        (ring, self.int(v))
    }

    fn arith(&mut self, op: &Operation) {
        let (Some(&r), [a, b]) = (op.results.first(), op.operands.as_slice()) else {
            return;
        };
        let (x, y) = (self.expr(*a), self.expr(*b));
        let e = match (self.arena[x as usize], self.arena[y as usize], op.kind) {
            (Expr::K(p), Expr::K(q), kind) => {
                let v = match kind {
                    OpKind::AddI => Some(p.wrapping_add(q)),
                    OpKind::SubI => Some(p.wrapping_sub(q)),
                    OpKind::MulI => Some(p.wrapping_mul(q)),
                    OpKind::DivI => p.checked_div(q),
                    OpKind::RemI => p.checked_rem(q),
                    OpKind::CeilDiv => q
                        .checked_sub(1)
                        .and_then(|d| p.checked_add(d))
                        .and_then(|s| s.checked_div(q)),
                    OpKind::MinI => Some(p.min(q)),
                    OpKind::MaxI => Some(p.max(q)),
                    _ => None,
                };
                v.map(|v| self.k(v))
            }
            (_, _, OpKind::AddI) => Some(self.node(Expr::Add(x, y))),
            (_, _, OpKind::SubI) => Some(self.node(Expr::Sub(x, y))),
            (_, Expr::K(c), OpKind::MulI) => Some(self.node(Expr::Mul(x, c))),
            (Expr::K(c), _, OpKind::MulI) => Some(self.node(Expr::Mul(y, c))),
            (_, Expr::K(c), OpKind::RemI) if c > 0 => Some(self.node(Expr::Rem(x, c))),
            _ => None,
        };
        let e = e.unwrap_or_else(|| self.leaf());
        self.env.insert(r, e);
    }

    fn loc_of(&self, id: u32) -> &Location {
        &self.s.ops[id as usize].loc
    }

    fn describe(&self) -> String {
        if self.events.is_empty() {
            return "straight-line code".into();
        }
        let mut parts: Vec<String> = self
            .events
            .iter()
            .take(12)
            .map(|e| match *e {
                Event::Trips(l, 0) => format!("the loop at {} skipped", self.loc_of(l)),
                Event::Trips(l, n) => format!(
                    "the loop at {} ran {n} time{}",
                    self.loc_of(l),
                    if n == 1 { "" } else { "s" }
                ),
                Event::Branch(i, t) => format!(
                    "{}-branch of the if at {}",
                    if t { "then" } else { "else" },
                    self.loc_of(i)
                ),
            })
            .collect();
        if self.events.len() > 12 {
            parts.push(format!("{} more choices", self.events.len() - 12));
        }
        parts.join(", ")
    }

    fn is_tile(&self, v: Value) -> bool {
        matches!(self.s.m.try_ty(v), Some(Type::Tile { .. }))
    }

    fn is_scalar(&self, v: Value) -> bool {
        matches!(self.s.m.try_ty(v), Some(Type::Scalar(_)))
    }

    fn change(&self, op: &Operation) -> Option<Change> {
        if self.changes.is_empty() {
            return None;
        }
        self.s.id(op).and_then(|i| self.changes.get(&i)).copied()
    }

    fn group_at(&self, g: u32) -> String {
        format!("the 'tile.mma' at {}", self.loc_of(g))
    }

    /// Runs `b`, returning its yielded values.
    fn block(&mut self, b: &Block) -> Res<Vec<Value>> {
        let mut deferred = None;
        for op in &b.ops {
            self.steps.set(self.steps.get() + 1);
            if self.stop || self.steps.get() > MAX_OP_STEPS {
                return Ok(vec![]);
            }
            if op.kind == OpKind::Yield {
                if let Some(w) = deferred.take() {
                    self.op(w)?;
                }
                self.fragments_end(b, op)?;
                self.back_edge_copies(op)?;
                return Ok(op.operands.clone());
            }
            match self.change(op) {
                Some(Change::Later) if deferred.is_none() => {
                    deferred = Some(op);
                    self.ctx.push(-1 - self.s.id(op).unwrap_or(0) as i64);
                    continue;
                }
                _ => {}
            }
            self.op(op)?;
            if let Some(w) = deferred.take() {
                self.ctx.pop();
                self.op(w)?;
            }
        }
        if let Some(w) = deferred {
            self.op(w)?;
        }
        Ok(vec![])
    }

    /// At `yield_op`, the end of block `b`: the register sets it frees (`frees`) may be
    /// reused, so no pending wgmma may read one as its A fragment.
    fn fragments_end(&self, b: &Block, yield_op: &Operation) -> Res<()> {
        let Some(freed) = self.s.frees.get(&(b as *const Block as usize)) else {
            return Ok(());
        };
        match self
            .q
            .pending()
            .find(|g| g.a.is_some_and(|a| freed.contains(&a)))
        {
            Some(g) => Err((
                yield_op.loc.clone(),
                format!(
                    "the end of the block frees the A-fragment registers of the wgmma group of \
                        {}, which is pending",
                    self.group_at(g.op)
                ),
            )),
            None => Ok(()),
        }
    }

    fn exit(&self, loc: &Location, what: &str) -> Res<()> {
        if let Some(g) = self.q.pending().next() {
            return Err((
                loc.clone(),
                format!(
                    "{what} while the wgmma group of {} is pending",
                    self.group_at(g.op)
                ),
            ));
        }
        if let Some(g) = self.q.bulk_pending().next() {
            return Err((
                loc.clone(),
                format!(
                    "{what} while the bulk store group of the 'tile.tma_store' at {} is \
                        pending",
                    self.loc_of(g.op)
                ),
            ));
        }
        if let Some(g) = self.q.cp_pending().next() {
            return Err((
                loc.clone(),
                format!(
                    "{what} while the cp.async group of the 'tile.cp_async' at {} is pending",
                    self.loc_of(g.op)
                ),
            ));
        }
        Ok(())
    }

    /// Makes `vs` unknown: each is chosen afresh where a stage needs it.
    fn forget(&mut self, vs: &[Value]) {
        for v in vs {
            self.env.remove(v);
        }
    }

    fn op(&mut self, op: &Operation) -> Res<()> {
        let id = self.s.id(op).unwrap_or(0);
        match op.kind {
            OpKind::Constant => {
                if let (Some(&r), Some(v)) = (op.results.first(), op.int_attr("value")) {
                    let e = self.k(v);
                    self.env.insert(r, e);
                }
            }
            OpKind::AddI
            | OpKind::SubI
            | OpKind::MulI
            | OpKind::DivI
            | OpKind::RemI
            | OpKind::CeilDiv
            | OpKind::MinI
            | OpKind::MaxI => self.arith(op),
            OpKind::For | OpKind::While => self.for_loop(op, id)?,
            OpKind::If => {
                let r = self.choose(2);
                self.events.push(Event::Branch(id, r == 0));
                self.block(&op.regions[r.min(op.regions.len() - 1)])?;
                // A branch's result is unknown to the analysis, as the wait contract says.
                self.forget(&op.results);
            }
            OpKind::WarpSpecialize if op.regions.len() == 2 => {
                if self.producer {
                    self.wg = 1;
                    self.block(&op.regions[0])?;
                    let end = op.regions[0].ops.last().map_or(&op.loc, |o| &o.loc).clone();
                    self.exit(&end, "the producer warpgroup exits")?;
                    self.stop = true;
                    return Ok(());
                }
                self.wg = op.int_attr("consumers").unwrap_or(self.wg as i64).max(1) as u64;
                self.block(&op.regions[1])?;
                self.forget(&op.results);
            }
            OpKind::Mma if op.str_attr("kind") == Some("wgmma") => {
                for (st, proxy) in self.stage_accesses(op) {
                    self.copied(op, st, proxy)?;
                    if let Some(&(_, fenced)) = self.q.unpublished.iter().find(|(x, _)| *x == st) {
                        self.unmodelled.set(true);
                        let why = if fenced {
                            "a 'tile.fence_proxy_async' ran since, but no 'tile.barrier' after it"
                        } else {
                            "no 'tile.fence_proxy_async' then 'tile.barrier' since"
                        };
                        return Err((
                            op.loc.clone(),
                            format!(
                                "wgmma 'tile.mma' reads stage {} of a ring that threads wrote \
                                 with 'tile.smem_store', which the async proxy may not see yet: \
                                 {why}",
                                st.1
                            ),
                        ));
                    }
                }
                self.wgmma(op, id)?
            }
            OpKind::CommitGroup => {
                let g = std::mem::take(&mut self.q.open);
                self.q.committed.push(g);
            }
            OpKind::BulkCommitGroup => {
                let g = std::mem::take(&mut self.q.bulk_open);
                self.q.bulk_committed.push(g);
            }
            OpKind::CpAsyncCommitGroup => {
                let g = std::mem::take(&mut self.q.cp_open);
                self.q.cp_committed.push(g);
            }
            OpKind::FenceProxyAsync => {
                if self.change(op) != Some(Change::Delete) {
                    for r in &mut self.q.cp_retired {
                        r.fenced = true;
                    }
                    for u in &mut self.q.unpublished {
                        u.1 = true;
                    }
                }
            }
            OpKind::WaitGroup | OpKind::BulkWaitGroup | OpKind::CpAsyncWaitGroup => {
                let n = match self.change(op) {
                    Some(Change::Delete) => return Ok(()),
                    Some(Change::Pending(n)) => n,
                    _ => op.int_attr("pending").unwrap_or(0),
                };
                self.wait(op, n);
            }
            OpKind::WgmmaFence => {
                if self.change(op) != Some(Change::Delete) {
                    self.q.fenced = true;
                    self.q.dirty.clear();
                }
            }
            OpKind::Barrier | OpKind::NamedBarrier => {
                if self.change(op) != Some(Change::Delete) {
                    if op.kind == OpKind::Barrier {
                        self.q.unsynced.clear();
                        for r in &mut self.q.cp_retired {
                            r.generic = true;
                            r.proxy |= r.fenced;
                        }
                        self.q.cp_retired.retain(|r| !r.proxy);
                        self.q.loaded.clear();
                        self.q.stored.clear();
                        self.q.unpublished.retain(|u| !u.1);
                    } else if op.int_attr("threads").unwrap_or(0) >= 128 * self.wg as i64 {
                        // A named barrier of every thread that runs this code publishes
                        // their stores as a CTA barrier does.
                        self.q.stored.clear();
                        self.q.unpublished.retain(|u| !u.1);
                    }
                    self.q.bulk_unsynced.clear();
                }
            }
            OpKind::Return => self.exit(&op.loc, "the kernel ends")?,
            OpKind::Yield | OpKind::Kernel => {}
            _ => self.other(op, id)?,
        }
        Ok(())
    }

    /// Whether this state at the entry of an iteration of loop `id` was reached by an
    /// earlier run (and records it).
    fn seen_before(&mut self, id: u32) -> bool {
        if !self.s.exact {
            return false;
        }
        let mut guard = self.scratch.borrow_mut();
        let Scratch {
            key,
            terms,
            forms,
            count,
            ranks,
        } = &mut *guard;
        key.clear();
        key.extend_from_slice(&self.ctx);
        key.push(self.wg as i64);
        key.push(self.q.fenced as i64);
        key.push(self.q.dirty.len() as i64);
        key.extend(self.q.dirty.iter().map(i64::from));
        let wgmma = |key: &mut Vec<i64>, g: &Wgmma| {
            key.extend([g.op as i64, g.stages.len() as i64]);
            for (r, st) in &g.stages {
                key.extend([r.0 as i64, *st]);
            }
        };
        for grp in self
            .q
            .committed
            .iter()
            .chain([&self.q.open, &self.q.unsynced])
        {
            key.push(-1);
            for g in grp {
                wgmma(key, g);
            }
        }
        for grp in self
            .q
            .bulk_committed
            .iter()
            .chain([&self.q.bulk_open, &self.q.bulk_unsynced])
        {
            key.push(-2);
            for g in grp {
                key.extend([g.op as i64, g.slot.0 .0 as i64, g.slot.1]);
            }
        }
        for grp in self.q.cp_committed.iter().chain([&self.q.cp_open]) {
            key.push(-4);
            for g in grp {
                key.extend([g.op as i64, g.slot.0 .0 as i64, g.slot.1]);
            }
        }
        for (r, st) in &self.q.loaded {
            key.extend([-6, r.0 as i64, *st]);
        }
        for (r, st) in &self.q.stored {
            key.extend([-7, r.0 as i64, *st]);
        }
        for ((r, st), fenced) in &self.q.unpublished {
            key.extend([-8, r.0 as i64, *st, i64::from(*fenced)]);
        }
        for r in &self.q.cp_retired {
            key.extend([
                -5,
                r.copy.op as i64,
                r.copy.slot.0 .0 as i64,
                r.copy.slot.1,
                i64::from(r.fenced) | i64::from(r.generic) << 1,
            ]);
        }
        key.push(-3);
        // Live scalars, as affine forms over the unknowns not chosen yet (mod the domain).
        // A value holding an unknown that no other live value holds, with a unit
        // coefficient, takes every residue in the future whatever else it holds: it is
        // written as such.
        let live = self.s.live.get(&id).map_or(&[][..], |v| &v[..]);
        terms.clear();
        forms.clear();
        for v in live {
            let form = self.env.get(v).and_then(|e| {
                let start = terms.len();
                match self.affine_into(e, 1, 1, terms) {
                    Some(c) => Some((start, normalize(terms, start, self.s.domain), c)),
                    None => {
                        terms.truncate(start);
                        None
                    }
                }
            });
            forms.push(form);
        }
        count.clear();
        count.resize(self.leaves.len(), 0);
        for (v, f) in live.iter().zip(forms.iter()) {
            match f {
                Some((a, b, _)) => {
                    for &(l, _) in &terms[*a..*b] {
                        count[l] += 1;
                    }
                }
                None => {
                    if let Some(e) = self.env.get(v) {
                        self.unforced(e, &mut |l| count[l] += 1);
                    }
                }
            }
        }
        ranks.reset(self.leaves.len());
        let d = self.s.domain;
        for (v, f) in live.iter().zip(forms.iter()) {
            match (f, self.env.get(v)) {
                (_, None) => key.push(-4),
                (Some((a, b, c)), _) => {
                    let t = &terms[*a..*b];
                    if t.iter().any(|&(l, a)| count[l] == 1 && gcd(a, d) == 1) {
                        key.push(-11);
                        continue;
                    }
                    key.extend([-12, c.rem_euclid(d), t.len() as i64]);
                    for &(l, a) in t {
                        key.extend([ranks.of(l), a]);
                    }
                }
                (None, Some(e)) => self.serialize(e, ranks, key),
            }
        }
        let prefix = &self.choices[..self.used];
        let mut seen = self.seen.borrow_mut();
        match seen.get(&key[..]) {
            Some(p) => p[..] != *prefix,
            None => {
                seen.insert(key.clone(), prefix.to_vec());
                false
            }
        }
    }

    /// `e` as `Σ a·leaf + c` over the leaves not chosen yet, if it is affine: the
    /// coefficients reduced modulo the domain (sorted by leaf, none zero), the constant in
    /// wrapping arithmetic.
    fn affine(&self, e: u32) -> Option<Affine> {
        let d = self.s.domain;
        let mut terms = vec![];
        let c = self.affine_into(e, 1, 1, &mut terms)?;
        normalize(&mut terms, 0, d);
        Some((terms, c))
    }

    /// Adds `coef · e` to `terms` (coefficients modulo the domain: `coef` reduced, `raw`
    /// the same coefficient in wrapping arithmetic) and returns `raw ·` its constant.
    fn affine_into(
        &self,
        e: u32,
        coef: i64,
        raw: i64,
        terms: &mut Vec<(usize, i64)>,
    ) -> Option<i64> {
        let d = self.s.domain;
        let node = self.arena[e as usize];
        Some(match node {
            Expr::K(v) => raw.wrapping_mul(v),
            Expr::Leaf(i) => match self.leaves[i] {
                Some(v) => raw.wrapping_mul(v),
                None => {
                    terms.push((i, coef));
                    0
                }
            },
            Expr::Add(a, b) | Expr::Sub(a, b) => {
                let ca = self.affine_into(a, coef, raw, terms)?;
                let (cb, rb) = if matches!(node, Expr::Sub(..)) {
                    ((d - coef) % d, raw.wrapping_neg())
                } else {
                    (coef, raw)
                };
                ca.wrapping_add(self.affine_into(b, cb, rb, terms)?)
            }
            Expr::Mul(a, c) => {
                let cm = (coef * c.rem_euclid(d)).rem_euclid(d);
                self.affine_into(a, cm, raw.wrapping_mul(c), terms)?
            }
            Expr::Rem(a, c) => match self.affine(a)? {
                (t, k) if t.is_empty() => raw.wrapping_mul(k.wrapping_rem(c)),
                _ => return None,
            },
        })
    }

    /// Calls `f` on each leaf of `e` not chosen yet.
    fn unforced(&self, e: u32, f: &mut dyn FnMut(usize)) {
        match self.arena[e as usize] {
            Expr::K(_) => {}
            Expr::Leaf(i) => {
                if self.leaves[i].is_none() {
                    f(i)
                }
            }
            Expr::Add(a, b) | Expr::Sub(a, b) => {
                self.unforced(a, f);
                self.unforced(b, f);
            }
            Expr::Mul(a, _) | Expr::Rem(a, _) => self.unforced(a, f),
        }
    }

    fn serialize(&self, e: u32, ranks: &mut Ranks, key: &mut Vec<i64>) {
        let node = self.arena[e as usize];
        match node {
            Expr::K(v) => key.extend([-5, v.rem_euclid(self.s.domain)]),
            Expr::Leaf(i) => match self.leaves[i] {
                Some(v) => key.extend([-5, v.rem_euclid(self.s.domain)]),
                None => key.extend([-6, ranks.of(i)]),
            },
            Expr::Add(a, b) | Expr::Sub(a, b) => {
                key.push(if matches!(node, Expr::Add(..)) {
                    -7
                } else {
                    -8
                });
                self.serialize(a, ranks, key);
                self.serialize(b, ranks, key);
            }
            Expr::Mul(a, c) | Expr::Rem(a, c) => {
                key.extend([
                    if matches!(node, Expr::Mul(..)) {
                        -9
                    } else {
                        -10
                    },
                    c,
                ]);
                self.serialize(a, ranks, key);
            }
        }
    }

    /// A wait of `op`'s kind that leaves at most `n` groups pending.
    fn wait(&mut self, op: &Operation, n: i64) {
        let n = n.max(0) as usize;
        if op.kind == OpKind::WaitGroup {
            let retire = self.q.committed.len().saturating_sub(n);
            let done: Vec<Wgmma> = self.q.committed.drain(..retire).flatten().collect();
            if self.wg >= 2 {
                // Only the stages matter to later overwrites: keep each set once.
                for g in done {
                    let read = g.stages.iter().any(|(r, _)| self.s.overwritten.contains(r));
                    if read && !self.q.unsynced.iter().any(|u| u.stages == g.stages) {
                        self.q.unsynced.push(g);
                    }
                }
            }
        } else if op.kind == OpKind::CpAsyncWaitGroup {
            let retire = self.q.cp_committed.len().saturating_sub(n);
            let done: Vec<Store> = self.q.cp_committed.drain(..retire).flatten().collect();
            for copy in done {
                let r = Retired {
                    copy,
                    fenced: false,
                    generic: false,
                    proxy: false,
                };
                if !self.q.cp_retired.contains(&r) {
                    self.q.cp_retired.push(r);
                }
            }
        } else {
            let retire = self.q.bulk_committed.len().saturating_sub(n);
            let done: Vec<Store> = self.q.bulk_committed.drain(..retire).flatten().collect();
            for g in done {
                if !self.q.bulk_unsynced.iter().any(|u| u.slot == g.slot) {
                    self.q.bulk_unsynced.push(g);
                }
            }
        }
    }

    fn for_loop(&mut self, op: &Operation, id: u32) -> Res<()> {
        let Some(body) = op.regions.first() else {
            return Ok(());
        };
        let is_for = op.kind == OpKind::For;
        // tile.while runs at least once.
        let set = if is_for {
            &self.s.trips[..]
        } else {
            &self.s.trips[1..]
        };
        let trips = set[self.choose(set.len())];
        self.events.push(Event::Trips(id, trips));
        let args = if is_for {
            body.args.get(1..).unwrap_or(&[])
        } else {
            &body.args[..]
        };
        let step = op.operands.get(2).map(|&s| self.expr(s));
        // A constant lower bound is known (as the path explorer knows it, for the stages
        // that enter the loop); any other start is chosen.
        let lb = op
            .operands
            .first()
            .filter(|_| is_for)
            .map(|&v| self.expr(v));
        let start = match lb.map(|e| self.arena[e as usize]) {
            Some(Expr::K(_)) => lb.unwrap_or_default(),
            _ => self.leaf(),
        };
        for t in 0..trips {
            if let (true, Some(step), Some(&iv)) = (is_for, &step, body.args.first()) {
                let off = match self.arena[*step as usize] {
                    Expr::K(c) => self.k(c.wrapping_mul(t)),
                    _ => self.node(Expr::Mul(*step, t)),
                };
                let e = self.node(Expr::Add(start, off));
                self.env.insert(iv, e);
            }
            // A carried value is unknown to the analysis from one iteration to the next (a
            // fresh one per iteration, fixed within it), and so is a loop's result.
            self.forget(args);
            self.ctx.extend([id as i64, trips - t]);
            if self.seen_before(id) {
                self.stop = true;
                return Ok(());
            }
            self.block(body)?;
            self.ctx.truncate(self.ctx.len() - 2);
        }
        self.forget(&op.results);
        Ok(())
    }

    fn wgmma(&mut self, op: &Operation, id: u32) -> Res<()> {
        let Some(p) = tilec_dialect::ops::mma_operands(op) else {
            return Ok(());
        };
        let Some(&res) = op.results.first() else {
            return Ok(());
        };
        let acc = self.s.slot[&res];
        let a = self.is_tile(p.a).then(|| self.s.slot[&p.a]);
        if !self.q.fenced
            || self.q.dirty.contains(acc)
            || a.is_some_and(|a| self.q.dirty.contains(a))
        {
            return Err((
                op.loc.clone(),
                "a wgmma runs with no 'tile.wgmma_fence' since the warpgroup started or since \
                    another op accessed its registers"
                    .into(),
            ));
        }
        for g in self.q.pending() {
            if g.a == Some(acc) || (a == Some(g.acc) && acc != g.acc) {
                return Err((
                    op.loc.clone(),
                    format!(
                        "this wgmma uses registers of the pending wgmma group of {} (its A \
                            fragment or accumulator) outside that chain",
                        self.group_at(g.op)
                    ),
                ));
            }
        }
        let mut stages = vec![];
        for (ring, s) in [(p.a, p.stage_a), (p.b, p.stage_b)] {
            if self.s.stages.contains_key(&ring) {
                let st = self.stage(ring, s);
                stages.push(st);
            }
        }
        self.q.open.push(Wgmma {
            op: id,
            acc,
            a,
            stages,
        });
        Ok(())
    }

    /// At a loop's `tile.yield`: the copies from yielded values into carried arguments
    /// that do not share their registers read and write both.
    fn back_edge_copies(&mut self, y: &Operation) -> Res<()> {
        let Some(pairs) = self
            .s
            .copies
            .get(&(y as *const Operation as usize))
            .cloned()
        else {
            return Ok(());
        };
        for (v, arg) in pairs {
            for x in [v, arg] {
                self.access(x, &y.loc, |g| {
                    format!(
                        "the loop's back edge copies registers of the wgmma group of {g} while \
                            it is pending"
                    )
                })?;
            }
        }
        Ok(())
    }

    /// An access, by an op other than a wgmma, to the registers of `v` if it is a tile: a
    /// hazard (at `loc`, `message` given the pending group's description) while a pending
    /// group holds them as its accumulator or A fragment; otherwise they are dirty until the
    /// next fence.
    fn access(&mut self, v: Value, loc: &Location, message: impl Fn(String) -> String) -> Res<()> {
        if !self.is_tile(v) {
            return Ok(());
        }
        let s = self.s.slot[&v];
        if let Some(g) = self.q.pending().find(|g| g.acc == s || g.a == Some(s)) {
            return Err((loc.clone(), message(self.group_at(g.op))));
        }
        self.q.dirty.insert(s);
        Ok(())
    }

    /// Any other op: its register accesses, and what it does to shared memory.
    fn other(&mut self, op: &Operation, id: u32) -> Res<()> {
        let name = op.kind.name();
        for &v in op.operands.iter().chain(&op.results) {
            self.access(v, &op.loc, |g| {
                format!("'{name}' accesses registers of the wgmma group of {g} while it is pending")
            })?;
        }
        let accessed = self.stage_accesses(op);
        for &(st, proxy) in &accessed {
            self.copied(op, st, proxy)?;
        }
        let writes = matches!(
            op.kind,
            OpKind::SmemStore | OpKind::CpAsync | OpKind::TmaLoad
        );
        if let Some(&st) = self
            .q
            .loaded
            .iter()
            .find(|&&st| writes && accessed.iter().any(|&(x, _)| x == st))
        {
            self.unmodelled.set(true);
            return Err((
                op.loc.clone(),
                format!(
                    "'{name}' overwrites stage {} of a ring that other threads may still read \
                        with 'tile.smem_load': no 'tile.barrier' since",
                    st.1
                ),
            ));
        }
        // The one stage a copy, store or shared-memory load accesses.
        let one = match op.kind {
            OpKind::TmaLoad
            | OpKind::TmaStore
            | OpKind::SmemStore
            | OpKind::CpAsync
            | OpKind::SmemLoad => accessed.first().map(|&(st, _)| st),
            _ => None,
        };
        if let (OpKind::SmemLoad, Some(st)) = (op.kind, one) {
            if self.q.stored.contains(&st) {
                self.unmodelled.set(true);
                return Err((
                    op.loc.clone(),
                    format!(
                        "'{name}' reads stage {} of a ring that other threads wrote with \
                            'tile.smem_store': no 'tile.barrier' since",
                        st.1
                    ),
                ));
            }
            if !self.q.loaded.contains(&st) {
                self.q.loaded.push(st);
            }
        }
        if let (OpKind::SmemStore, Some(st)) = (op.kind, one) {
            if !self.q.stored.contains(&st) {
                self.q.stored.push(st);
            }
            self.q.unpublished.retain(|u| u.0 != st);
            self.q.unpublished.push((st, false));
        }
        match (op.kind, one) {
            (OpKind::SmemStore | OpKind::CpAsync | OpKind::TmaLoad, Some(st)) => {
                self.overwrite(op, st)?;
                if op.kind == OpKind::CpAsync {
                    self.q.cp_open.push(Store { op: id, slot: st });
                }
                let bulk = self
                    .q
                    .bulk_pending()
                    .chain(&self.q.bulk_unsynced)
                    .find(|g| g.slot == st);
                if let Some(g) = bulk {
                    let pending = self.q.bulk_pending().any(|x| x.op == g.op && x.slot == st);
                    return Err((
                        op.loc.clone(),
                        format!(
                            "'{name}' writes slot {} of a staging ring that the bulk store of the \
                                'tile.tma_store' at {} reads{}",
                            st.1,
                            self.loc_of(g.op),
                            if pending {
                                " while it is pending"
                            } else {
                                ", with no 'tile.named_barrier' since the wait that retired it"
                            }
                        ),
                    ));
                }
            }
            (OpKind::MbarrierArrive, _) if op.operands.len() == 2 => {
                let i = self.int(op.operands[1]);
                let rings: Vec<Value> = match self.s.bar_ring.get(&op.operands[0]) {
                    Some(r) => r.clone(),
                    None => self.s.stages.keys().copied().collect(),
                };
                for ring in rings {
                    let st = (ring, i);
                    if let Some(g) = self.q.pending().find(|g| g.stages.contains(&st)) {
                        return Err((
                            op.loc.clone(),
                            format!(
                                "'{name}' releases stage {} of a ring that the wgmma group of {} \
                                    reads while it is pending",
                                st.1,
                                self.group_at(g.op)
                            ),
                        ));
                    }
                }
            }
            (OpKind::TmaStore, Some(slot)) => {
                self.q.bulk_open.push(Store { op: id, slot });
            }
            _ => {}
        }
        // A scalar this op defines is unknown to the analysis: a fresh one per execution.
        for &r in &op.results {
            if self.is_scalar(r) {
                self.env.remove(&r);
            }
        }
        Ok(())
    }

    /// The ring stages `op` reads or writes, each with whether the async proxy (wgmma,
    /// TMA) accesses it.
    fn stage_accesses(&mut self, op: &Operation) -> Vec<((Value, i64), bool)> {
        let o = &op.operands;
        match op.kind {
            OpKind::TmaLoad if o.len() >= 4 => vec![(self.stage(o[1], o[3]), true)],
            OpKind::TmaStore if o.len() >= 3 => vec![(self.stage(o[1], o[2]), true)],
            OpKind::SmemStore | OpKind::CpAsync if o.len() >= 3 => {
                vec![(self.stage(o[1], o[2]), false)]
            }
            OpKind::SmemLoad if o.len() == 2 => vec![(self.stage(o[0], o[1]), false)],
            OpKind::Mma => {
                let wgmma = op.str_attr("kind") == Some("wgmma");
                let Some(p) = tilec_dialect::ops::mma_operands(op) else {
                    return vec![];
                };
                [(p.a, p.stage_a), (p.b, p.stage_b)]
                    .into_iter()
                    .filter(|(v, _)| self.s.stages.contains_key(v))
                    .map(|(v, i)| (self.stage(v, i), wgmma))
                    .collect()
            }
            _ => vec![],
        }
    }

    /// An access of stage `st` (by the async proxy if `proxy`): a hazard while a cp.async
    /// group writing it is pending, or retired by this thread's wait but not yet published
    /// to the accessing proxy by a `tile.barrier` (after a `tile.fence_proxy_async`).
    fn copied(&self, op: &Operation, st: (Value, i64), proxy: bool) -> Res<()> {
        let name = op.kind.name();
        if let Some(g) = self.q.cp_pending().find(|g| g.slot == st) {
            return Err((
                op.loc.clone(),
                format!(
                    "'{name}' accesses stage {} of a ring that the cp.async group of the \
                        'tile.cp_async' at {} writes while it is pending",
                    st.1,
                    self.loc_of(g.op)
                ),
            ));
        }
        let r = self
            .q
            .cp_retired
            .iter()
            .find(|r| r.copy.slot == st && !(r.generic && (r.proxy || !proxy)));
        if let Some(r) = r {
            self.unmodelled.set(r.generic);
            let why = if r.generic {
                "no 'tile.fence_proxy_async' came between the wait and the 'tile.barrier' that \
                    published it, and the async proxy reads it"
            } else {
                "the wait completed only this thread's chunks, and no 'tile.barrier' since \
                    publishes the other threads'"
            };
            return Err((
                op.loc.clone(),
                format!(
                    "'{name}' accesses stage {} of a ring that the cp.async group of the \
                        'tile.cp_async' at {} wrote: {why}",
                    st.1,
                    self.loc_of(r.copy.op)
                ),
            ));
        }
        Ok(())
    }

    fn overwrite(&self, op: &Operation, st: (Value, i64)) -> Res<()> {
        let name = op.kind.name();
        if let Some(g) = self.q.pending().find(|g| g.stages.contains(&st)) {
            return Err((
                op.loc.clone(),
                format!(
                    "'{name}' overwrites stage {} of a ring that the wgmma group of {} reads \
                        while it is pending",
                    st.1,
                    self.group_at(g.op)
                ),
            ));
        }
        if self.wg >= 2 {
            if let Some(g) = self.q.unsynced.iter().find(|g| g.stages.contains(&st)) {
                return Err((
                    op.loc.clone(),
                    format!(
                        "'{name}' overwrites stage {} of a ring that another warpgroup's wgmma \
                            group of {} may still read: no 'tile.barrier' since the wait",
                        st.1,
                        self.group_at(g.op)
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_dialect::parse;

    const HEAD: &str = "tile.kernel @k(%A: tensor<?x?xbf16>, %N: index) {block = [128, 1, 1], \
        grid = [1]} {\n  %c0 = tile.constant {value = 0} : index\n  %c1 = tile.constant \
        {value = 1} : index\n  %c2 = tile.constant {value = 2} : index\n  %ring = \
        tile.smem_alloc {swizzle = 128} : smem<2x64x64xbf16>\n  %bar = tile.mbarrier_alloc \
        {arrive_count = 1} : mbarrier<2>\n  %z = tile.zeros : tile<64x64xf32>\n";

    /// A two-stage ring: each trip's wgmma reads stage iv mod 2 and the copy refills stage
    /// (iv + 1) mod 2 after a wait with `pending`.
    fn ring_loop(pending: i64) -> String {
        format!(
            "{HEAD}  tile.wgmma_fence\n  %r = tile.for %c0, %N, %c1, %z : tile<64x64xf32> {{\n  \
             ^bb0(%i: index, %acc: tile<64x64xf32>):\n    %s = tile.remi %i, %c2 : index\n    \
             %n = tile.mma %ring, %ring, %s, %acc {{kind = \"wgmma\"}} : tile<64x64xf32>\n    \
             tile.commit_group\n    %i1 = tile.addi %i, %c1 : index\n    %s1 = tile.remi %i1, \
             %c2 : index\n    %w = tile.wait_group %n {{pending = {pending}}} : \
             tile<64x64xf32>\n    tile.tma_load %A, %ring, %bar, %s1, %c0, %c0\n    tile.yield \
             %w\n  }}\n  %rw = tile.wait_group %r {{pending = 0}} : tile<64x64xf32>\n  %o = \
             tile.relu %rw : tile<64x64xf32>\n  tile.return\n}}\n"
        )
    }

    fn simulate(text: &str, changes: &HashMap<u32, Change>) -> Outcome {
        let m = parse(text, "t").expect("parses");
        let k = m.kernels().next().expect("a kernel");
        Simulator::new(&m, k).run(changes, DEFAULT_RUNS)
    }

    #[test]
    fn safe_ring_has_no_hazard_and_one_more_pending_has_one() {
        assert_eq!(
            simulate(&ring_loop(1), &HashMap::new()).verdict,
            Verdict::NoHazard
        );
        // pending = 2 leaves the group of the trip before pending while its stage is
        // refilled: the second trip's copy.
        let Verdict::Hazard(h) = simulate(&ring_loop(2), &HashMap::new()).verdict else {
            panic!("expected a hazard");
        };
        assert_eq!((h.loc.line, h.loc.col), (17, 5), "{h:?}");
        assert!(
            h.message.starts_with("'tile.tma_load' overwrites stage")
                && h.message.contains("the 'tile.mma' at t:12:5"),
            "{}",
            h.message
        );
        assert_eq!(h.run, "the loop at t:9:3 ran 2 times");
    }

    #[test]
    fn changes_apply_by_preorder_index() {
        let text = ring_loop(1);
        let m = parse(&text, "t").expect("parses");
        let k = m.kernels().next().expect("a kernel");
        let sim = Simulator::new(&m, k);
        let mut wait = None;
        k.walk(&mut |o| {
            if o.kind == OpKind::WaitGroup && wait.is_none() {
                wait = sim.id(o);
            }
        });
        let wait = wait.expect("a wait");
        for change in [Change::Pending(2), Change::Delete, Change::Later] {
            let o = sim.run(&[(wait, change)].into_iter().collect(), DEFAULT_RUNS);
            assert!(matches!(o.verdict, Verdict::Hazard(_)), "{change:?}: {o:?}");
        }
        // Deleting the fence: the first wgmma runs unfenced.
        let fence = k.regions[0]
            .ops
            .iter()
            .find(|o| o.kind == OpKind::WgmmaFence)
            .and_then(|o| sim.id(o))
            .expect("a fence");
        let o = sim.run(
            &[(fence, Change::Delete)].into_iter().collect(),
            DEFAULT_RUNS,
        );
        let Verdict::Hazard(h) = o.verdict else {
            panic!("expected a hazard: {o:?}");
        };
        assert!(h.message.contains("no 'tile.wgmma_fence'"), "{}", h.message);
    }

    #[test]
    fn budget_is_reported() {
        let o = simulate(&ring_loop(1), &HashMap::new());
        assert!(o.runs > 3, "{o:?}");
        let m = parse(&ring_loop(1), "t").expect("parses");
        let k = m.kernels().next().expect("a kernel");
        let short = Simulator::new(&m, k).run(&HashMap::new(), 3);
        assert_eq!((short.verdict, short.runs), (Verdict::Budget, 3));
    }
}
