//! What both sides of the async-group contract agree on: which ops open wgmma groups,
//! which registers and shared-memory stages a group reads and writes, and which ops are
//! hazards for a pending group (DESIGN.md, "Async groups and tight waits").
//!
//! [`crate::async_wait_placement`] computes waits from these facts by dataflow;
//! [`crate::verify_async_waits`] re-derives safety and tightness from them by path
//! exploration. The facts are static (per op), so the two analyses share the *definition*
//! of a hazard and nothing of the *analysis*.
//!
//! - **Groups**: every `tile.mma {kind = "wgmma"}` is one asynchronous MMA; `tile.mma` of
//!   any other kind is synchronous and is an ordinary op here.
//! - **Register slots**: values that must live in the same registers are joined into one
//!   slot: an MMA's accumulator operand and its result (the chain; not with `zero_acc`,
//!   which does not read the operand), a loop's init, carried argument, yielded value and
//!   result, a branch's yields and results, `tile.warp_specialize`'s consumer yields and
//!   results, and a wait's operands and results (tied). Yields, loops, branches and waits
//!   are plumbing: they neither read nor write a slot. Every other op that takes or defines
//!   a value of a slot that a wgmma uses reads or writes its registers.
//! - **Stages**: a stage operand is evaluated symbolically: a constant exactly;
//!   `tile.remi(x, S)` with `S` a constant and `x` a sum (`tile.addi`/`tile.subi`) of
//!   constants, at most one loop induction variable `%iv` and at most one other value
//!   `%base` as "`(iv + base + c) mod S`" (stage indices are taken to be non-negative);
//!   anything else as unknown, which may alias every stage. Two stages with the same
//!   `%iv`, `%base` and `S` are equal exactly when their `c` are. A group from `d`
//!   iterations back has its `c` shifted by `-d·step` (the step must be a constant, else
//!   unknown); leaving the loop makes it unknown, and so does crossing a back edge of a
//!   loop inside which `%base` is defined (its value changes there). The persistent
//!   kernel's `(kbase + kt) mod S`, `kbase` carried by the tile loop, is of this form.
//! - **Hazards** for a pending group `g` at an op `X`: `X` is not a wgmma of `g`'s chain
//!   and reads or writes `g`'s accumulator or A-fragment registers; `X` is a
//!   `tile.tma_load`, `tile.smem_store` or `tile.cp_async` into a stage of a ring `g` reads
//!   that may alias; `X` is a
//!   `tile.mbarrier_arrive %bar, %i` whose barrier guards a ring `g` reads (the rings the
//!   producer loads with `%bar` the last barrier it waited on before the copy — it passed
//!   every earlier wait too, and the copy waits for this release; every ring when none is
//!   known) at a stage that may alias `%i`; `X` is `tile.return` (or the end of the
//!   producer region of a `tile.warp_specialize`, where the producer warpgroup exits); `X`
//!   is the `tile.yield` of the block that defines `g`'s A fragment (the register-A form)
//!   and does not yield it: the fragment's registers are free after it, so the group must
//!   be retired first, by a wait that takes the fragment (tied), which keeps its registers
//!   until then.
//! - **Bulk store groups** (`GroupKind::Bulk`, the second, independent kind): every
//!   `tile.tma_store` is one asynchronous bulk copy reading a slot of a staging ring,
//!   closed by `tile.bulk_commit_group` and retired by `tile.bulk_wait_group {pending = N,
//!   read = true}`; these count separately from wgmma groups (PTX keeps separate bulk
//!   async-group counters), so each kind is analysed on its own, with its own commits and
//!   waits. Hazards for a pending bulk group `g` at `X`: `X` is a `tile.smem_store` or
//!   `tile.cp_async` into a slot `g` reads that may alias (slots compared like ring
//!   stages), or `X` ends the warpgroup. The elected thread issues and waits; all 128
//!   threads of the warpgroup write the slot, so a retired group's slot counts as still read
//!   (unsynced) until a
//!   `tile.named_barrier` (or `tile.barrier`) follows the wait, whatever the number of
//!   warpgroups. No fences are placed for bulk groups (the `fence.proxy.async` before a
//!   store's read is `tile-to-gpu`'s, part of the op sequence it emits).
//! - **cp.async groups** (`GroupKind::CpAsync`, the third kind): every `tile.cp_async` is
//!   one asynchronous copy *writing* a ring stage, each thread its chunks, closed by
//!   `tile.cp_async_commit_group` and retired by `tile.cp_async_wait_group {pending = N}`.
//!   Hazards for a pending cp.async group `g` at `X`: `X` reads (`tile.smem_load`,
//!   `tile.mma`, `tile.tma_store`) or writes (`tile.smem_store`, `tile.tma_load`, another
//!   `tile.cp_async`) a stage `g` writes that may alias, or `X` ends the CTA. A wait
//!   completes only the waiting thread's chunks, so a retired group's stage counts as still
//!   written (unsynced) until a `tile.barrier` follows the wait. Where wgmma or TMA (the
//!   async proxy) reads or rewrites a ring that `tile.cp_async` writes, the placement puts a
//!   `tile.fence_proxy_async` between such a wait and its barrier; the fence is checked by
//!   `verify-async-waits`' simulation, not by this model.
//! - **Warpgroups**: groups are per warpgroup. The number of warpgroups that run an op
//!   (and so read a buffer it overwrites) is `consumers` inside region 1 of a
//!   `tile.warp_specialize` and in the kernel code after it, 1 in its region 0, and the
//!   kernel's `block` threads / 128 elsewhere.

use std::collections::{BTreeSet, HashMap, HashSet};
use tilec_dialect::{Block, Module, OpKind, Operation, Type, Value};

/// Pre-order index of an op inside its kernel (the kernel itself is 0).
pub(crate) type OpId = u32;

/// A register slot: the id of a class of values that share registers.
pub(crate) type Slot = u32;

/// The cap on commits counted after a group: a wait's `pending` is at most 7, so a group
/// with 8 or more commits after it is retired by any wait.
pub(crate) const C_CAP: u8 = 8;

/// The largest remainder modulus a stage is tracked by (ring depths are far smaller).
pub(crate) const MAX_MODULUS: i64 = 64;

/// The largest `pending` the verifier accepts.
pub(crate) const MAX_PENDING: u8 = 7;

/// A ring stage, symbolically.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum StageSym {
    /// A known stage.
    Const(i64),
    /// `(iv + base + off) mod modulus`: `iv` the current iteration of loop `lp` (if any),
    /// `base` a value that does not change while the stage is compared (if any).
    Rel {
        lp: Option<OpId>,
        base: Option<Value>,
        off: i64,
        modulus: i64,
    },
    /// Some stage in `0..modulus`, which one forgotten (a remainder whose loop ended or
    /// whose base changed).
    Below(i64),
    /// A stage in `c..c + w` (known stage `c` where `w` is 1; some stage below `w`, a
    /// [`StageSym::Below`], where `c` is 0) of a group that was pending when the loops of
    /// `rel` (each a `tile.for` with a constant lower bound and step) started, with what
    /// is known of each such loop's induction variable in its current iteration: `iv +
    /// off ≡ c (mod period)`, `period` a common multiple of the kernel's remainder moduli
    /// and ring sizes. It compares exactly with those loops' own `(iv + k) mod S` stages
    /// (S dividing `period`) as well as with constants, and takes at most `period` forms
    /// per loop, so loop states still repeat. Unused entries of `rel` are [`NO_LOOP`].
    Entered {
        c: i64,
        w: i64,
        rel: [(OpId, i64); 3],
        period: i64,
    },
    /// Anything else: may alias every stage.
    Unknown,
}

/// An unused relation of [`StageSym::Entered`].
pub(crate) const NO_LOOP: OpId = OpId::MAX;

impl StageSym {
    /// The stages `c..c + w` (see [`StageSym::Entered`]) with `rel` less loop `lp`'s
    /// relation: a constant (or `Below(w)`) once none is left.
    fn entered_without(c: i64, w: i64, mut rel: [(OpId, i64); 3], lp: OpId, period: i64) -> Self {
        for r in rel.iter_mut().filter(|r| r.0 == lp) {
            *r = (NO_LOOP, 0);
        }
        if rel.iter().all(|r| r.0 == NO_LOOP) {
            return StageSym::span(c, w);
        }
        StageSym::Entered { c, w, rel, period }
    }

    /// The stages `c..c + w` with nothing known of any loop: `Const(c)` where `w` is 1,
    /// else `Below(w)` (`c` is then 0).
    fn span(c: i64, w: i64) -> Self {
        if w == 1 {
            StageSym::Const(c)
        } else {
            StageSym::Below(w)
        }
    }

    /// Whether the two stages may be the same stage.
    pub(crate) fn may_alias(self, o: StageSym) -> bool {
        match (self, o) {
            (StageSym::Entered { c, w, .. }, StageSym::Entered { c: d, w: v, .. }) => {
                c < d + v && d < c + w
            }
            (
                StageSym::Entered { c, w, rel, period },
                StageSym::Rel {
                    lp: Some(l2),
                    base: None,
                    off: o2,
                    modulus,
                },
            )
            | (
                StageSym::Rel {
                    lp: Some(l2),
                    base: None,
                    off: o2,
                    modulus,
                },
                StageSym::Entered { c, w, rel, period },
            ) if period % modulus == 0 && rel.iter().any(|r| r.0 == l2) => {
                // iv ≡ c - off (mod period), so (iv + o2) mod modulus is known.
                let off = rel.iter().find(|r| r.0 == l2).map_or(0, |r| r.1);
                (c..c + w).contains(&(c - off + o2).rem_euclid(modulus))
            }
            (StageSym::Entered { c, w, .. }, x) | (x, StageSym::Entered { c, w, .. }) => {
                StageSym::span(c, w).may_alias(x)
            }
            (StageSym::Const(a), StageSym::Const(b)) => a == b,
            (
                StageSym::Rel {
                    lp: l1,
                    base: b1,
                    off: o1,
                    modulus: m1,
                },
                StageSym::Rel {
                    lp: l2,
                    base: b2,
                    off: o2,
                    modulus: m2,
                },
            ) if l1 == l2 && b1 == b2 && m1 == m2 => o1 == o2,
            // A remainder lies in 0..modulus.
            (StageSym::Rel { modulus, .. } | StageSym::Below(modulus), StageSym::Const(c))
            | (StageSym::Const(c), StageSym::Rel { modulus, .. } | StageSym::Below(modulus)) => {
                (0..modulus).contains(&c)
            }
            _ => true,
        }
    }
}

/// One issued wgmma, as it is seen now: its op and the ring stages it reads (stage
/// symbols relative to the current iterations).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Inst {
    /// The `tile.mma` op.
    pub mma: OpId,
    /// (ring, stage) it reads.
    pub stages: Vec<(Value, StageSym)>,
}

/// The static description of a wgmma `tile.mma`.
#[derive(Clone, Debug)]
pub(crate) struct GroupDesc {
    /// Accumulator slot (written; read unless `zero_acc`).
    pub acc: Slot,
    /// A-fragment slot for the register-A form.
    pub a: Option<Slot>,
    /// (ring, stage) read from shared memory, stages relative to the issuing iteration.
    pub smem: Vec<(Value, StageSym)>,
}

impl GroupDesc {
    /// The register slots the wgmma accesses.
    pub(crate) fn slots(&self) -> impl Iterator<Item = Slot> + '_ {
        std::iter::once(self.acc).chain(self.a)
    }
}

/// Why an op must not run while a group is pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Hazard {
    /// Reads or writes the group's accumulator or A-fragment registers.
    Registers,
    /// Overwrites a shared-memory stage the group reads (a cp.async group: reads or writes
    /// a stage the group writes).
    Overwrite,
    /// Releases a stage the group reads to its producer.
    Release,
    /// The warpgroup exits.
    Exit,
    /// The group's A fragment goes out of scope (its registers may be reused).
    FragmentScope,
}

/// What one op does that matters to pending groups.
#[derive(Clone, Debug, Default)]
pub(crate) struct Access {
    /// The op is a wgmma: its id.
    pub wgmma: Option<OpId>,
    /// Register slots of wgmma operands it reads or writes (non-wgmma, non-plumbing ops).
    pub regs: BTreeSet<Slot>,
    /// (ring, stage) it overwrites; ring `None` = unknown ring.
    pub writes: Vec<(Option<Value>, StageSym)>,
    /// (ring, stage) it reads (kept for cp.async groups only, which write their stage).
    pub reads: Vec<(Option<Value>, StageSym)>,
    /// (rings, stage) it releases; rings `None` = every ring.
    pub releases: Vec<(Option<BTreeSet<Value>>, StageSym)>,
    /// It ends the warpgroup.
    pub exit: bool,
    /// Its accesses of ring stages go through the async proxy (wgmma, TMA); kept for
    /// cp.async groups, whose copies the async proxy sees only after a proxy fence.
    pub async_proxy: bool,
    /// A-fragment slots whose values go out of scope here (a `tile.yield` that does not
    /// carry them): a wgmma still reading one would read registers that may be reused.
    pub ends: BTreeSet<Slot>,
}

impl Access {
    /// Whether the op matters at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.wgmma.is_none()
            && self.regs.is_empty()
            && self.writes.is_empty()
            && self.reads.is_empty()
            && self.releases.is_empty()
            && self.ends.is_empty()
            && !self.exit
    }
}

/// Which async groups an analysis is about: the two kinds have separate commit and wait
/// counters, so each is analysed alone (the other kind's ops are ordinary ops).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GroupKind {
    /// `wgmma.mma_async` groups: `tile.mma {kind = "wgmma"}`, `tile.commit_group`,
    /// `tile.wait_group`, `tile.wgmma_fence`, `tile.barrier` after a wait.
    Wgmma,
    /// `cp.async.bulk` store groups: `tile.tma_store`, `tile.bulk_commit_group`,
    /// `tile.bulk_wait_group`, `tile.named_barrier` after a wait.
    Bulk,
    /// `cp.async` groups: `tile.cp_async`, `tile.cp_async_commit_group`,
    /// `tile.cp_async_wait_group`, `tile.barrier` after a wait.
    CpAsync,
}

impl GroupKind {
    /// Every kind, in the order the passes take them.
    pub(crate) const ALL: [GroupKind; 3] = [GroupKind::Wgmma, GroupKind::Bulk, GroupKind::CpAsync];
}

/// The register slot of a bulk group (it has no registers; never in any op's accesses).
pub(crate) const NO_SLOT: Slot = Slot::MAX;

impl GroupKind {
    /// Whether `op` issues a group member of this kind.
    pub(crate) fn is_group_op(self, op: &Operation) -> bool {
        match self {
            GroupKind::Wgmma => is_wgmma(op),
            GroupKind::Bulk => op.kind == OpKind::TmaStore,
            GroupKind::CpAsync => op.kind == OpKind::CpAsync,
        }
    }
    /// The op that closes a group.
    pub(crate) fn commit_op(self) -> OpKind {
        match self {
            GroupKind::Wgmma => OpKind::CommitGroup,
            GroupKind::Bulk => OpKind::BulkCommitGroup,
            GroupKind::CpAsync => OpKind::CpAsyncCommitGroup,
        }
    }
    /// The op that waits for groups.
    pub(crate) fn wait_op(self) -> OpKind {
        match self {
            GroupKind::Wgmma => OpKind::WaitGroup,
            GroupKind::Bulk => OpKind::BulkWaitGroup,
            GroupKind::CpAsync => OpKind::CpAsyncWaitGroup,
        }
    }
    /// The barrier the placement puts after a wait where other threads still may read
    /// (wgmma) or are about to write (bulk) the retired groups' buffers.
    pub(crate) fn barrier_op(self) -> OpKind {
        match self {
            GroupKind::Wgmma | GroupKind::CpAsync => OpKind::Barrier,
            GroupKind::Bulk => OpKind::NamedBarrier,
        }
    }
    /// Whether `op` synchronises the threads that share this kind's buffers (clears the
    /// unsynced set).
    pub(crate) fn is_barrier(self, op: &Operation) -> bool {
        match self {
            GroupKind::Wgmma | GroupKind::CpAsync => op.kind == OpKind::Barrier,
            GroupKind::Bulk => matches!(op.kind, OpKind::Barrier | OpKind::NamedBarrier),
        }
    }
    /// Whether a wait leaves retired groups' buffers in use by other threads until a
    /// barrier: with `warpgroups` warpgroups running the code (wgmma: other warpgroups'
    /// groups; bulk: always, the waiting thread is one of the warpgroup's 128 writers;
    /// cp.async: always, every thread copies its own chunks).
    pub(crate) fn shared(self, warpgroups: u64) -> bool {
        self != GroupKind::Wgmma || warpgroups >= 2
    }
    /// The value of the `placed` attribute that marks a barrier or proxy fence the
    /// placement put with no wait of this kind right before it.
    pub(crate) fn mark(self) -> &'static str {
        let [wgmma, bulk, cp_async] = tilec_dialect::PLACED_KINDS;
        match self {
            GroupKind::Wgmma => wgmma,
            GroupKind::Bulk => bulk,
            GroupKind::CpAsync => cp_async,
        }
    }
    /// The name used in messages.
    pub(crate) fn what(self) -> &'static str {
        match self {
            GroupKind::Wgmma => "wgmma",
            GroupKind::Bulk => "bulk store",
            GroupKind::CpAsync => "cp.async",
        }
    }
    /// The op issuing a group, for messages.
    pub(crate) fn issuer(self) -> &'static str {
        match self {
            GroupKind::Wgmma => "tile.mma",
            GroupKind::Bulk => "tile.tma_store",
            GroupKind::CpAsync => "tile.cp_async",
        }
    }
}

/// The facts of one kernel.
pub(crate) struct Facts<'k> {
    /// The kind of group analysed.
    pub kind: GroupKind,
    /// Ops by id.
    pub ops: Vec<&'k Operation>,
    ids: HashMap<*const Operation, OpId>,
    defs: HashMap<Value, OpId>,
    /// The op whose region holds each block argument.
    arg_owner: HashMap<Value, OpId>,
    /// The op holding each op's block (`None` for the kernel).
    parent: Vec<Option<OpId>>,
    iv_of: HashMap<Value, OpId>,
    slot_of: HashMap<Value, Slot>,
    /// Slots some wgmma accesses.
    pub reg_slots: BTreeSet<Slot>,
    /// Stage count of each ring (`tile.smem_alloc` result).
    pub rings: HashMap<Value, u64>,
    bar_rings: HashMap<Value, BTreeSet<Value>>,
    /// wgmma ops.
    pub groups: HashMap<OpId, GroupDesc>,
    /// For each wgmma, the first wgmma with the same register slots: the two conflict with
    /// the same ops when they read the same stages.
    pub canonical: HashMap<OpId, OpId>,
    /// Warpgroups of the kernel (block threads / 128, at least 1).
    pub kernel_warpgroups: u64,
    /// For each `tile.yield`, the A-fragment slots whose values its block defines and it
    /// does not yield: their registers are free after it.
    pub scope_ends: HashMap<OpId, BTreeSet<Slot>>,
    /// The A-fragment slots of the register-A wgmmas.
    fragments: BTreeSet<Slot>,
    /// For each loop `tile.yield`, the (yielded value, carried argument) pairs it copies:
    /// the argument is used after the value's definition, so the two cannot share registers.
    yield_copies: HashMap<OpId, Vec<(Value, Value)>>,
    /// For each `tile.for`, the rings that ops inside it take as operands or release.
    loop_rings: HashMap<OpId, BTreeSet<Value>>,
    /// The least common multiple of the ring sizes and the constant `tile.remi` moduli up
    /// to [`MAX_MODULUS`], when it is at most [`MAX_PERIOD`] ([`StageSym::Entered`]).
    period: Option<i64>,
}

/// The largest period of [`StageSym::Entered`] stages: a loop state with a group from
/// before the loop repeats after at most this many iterations.
pub(crate) const MAX_PERIOD: i64 = 64;

thread_local! {
    static FORGET_FRAGMENTS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static MERGE_ACCUMULATORS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Fault injection, for the test that shows an executable model catching a bug of this
/// one: while `on` (on this thread), a wgmma's A-fragment registers (the register-A form)
/// are left out of its group, so placement and `verify-async-waits`, which share this
/// model, both let the fragment be overwritten while the wgmma may still read it. Never set
/// outside tests.
#[doc(hidden)]
pub fn seed_forgotten_fragments(on: bool) {
    FORGET_FRAGMENTS.with(|c| c.set(on));
}

/// Fault injection, for the test that shows the checker's simulation catching a bug of this
/// model that makes placement too cautious: while `on` (on this thread), the results of all
/// wgmma `tile.mma`s of a kernel are put in one register slot, as if two accumulators were
/// one, so a use of one waits for the other's group. Never set outside tests.
#[doc(hidden)]
pub fn seed_merged_accumulators(on: bool) {
    MERGE_ACCUMULATORS.with(|c| c.set(on));
}

/// Whether `op` is an asynchronous (wgmma) `tile.mma`.
pub(crate) fn is_wgmma(op: &Operation) -> bool {
    op.kind == OpKind::Mma && op.str_attr("kind") == Some("wgmma")
}

struct UnionFind(HashMap<Value, Value>);

impl UnionFind {
    fn find(&mut self, v: Value) -> Value {
        let p = *self.0.get(&v).unwrap_or(&v);
        if p == v {
            return v;
        }
        let r = self.find(p);
        self.0.insert(v, r);
        r
    }
    fn union(&mut self, a: Value, b: Value) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.0.insert(ra.max(rb), ra.min(rb));
        }
    }
}

/// Symbolic integer: a constant, `iv + base + c`, or unknown.
#[derive(Clone, Copy)]
enum Lin {
    Const(i64),
    Sym {
        iv: Option<OpId>,
        base: Option<Value>,
        off: i64,
    },
    Other,
}

impl<'k> Facts<'k> {
    /// Collect the wgmma facts of `kernel` (a `tile.kernel` of `m`).
    #[cfg(test)]
    pub(crate) fn new(m: &Module, kernel: &'k Operation) -> Self {
        Self::of_kind(m, kernel, GroupKind::Wgmma)
    }

    /// Collect the facts of `kernel` about groups of `kind`.
    pub(crate) fn of_kind(m: &Module, kernel: &'k Operation, kind: GroupKind) -> Self {
        let mut f = Facts {
            kind,
            ops: vec![],
            ids: HashMap::new(),
            defs: HashMap::new(),
            arg_owner: HashMap::new(),
            parent: vec![],
            iv_of: HashMap::new(),
            slot_of: HashMap::new(),
            reg_slots: BTreeSet::new(),
            rings: HashMap::new(),
            bar_rings: HashMap::new(),
            groups: HashMap::new(),
            canonical: HashMap::new(),
            kernel_warpgroups: 1,
            scope_ends: HashMap::new(),
            fragments: BTreeSet::new(),
            yield_copies: HashMap::new(),
            loop_rings: HashMap::new(),
            period: None,
        };
        kernel.walk(&mut |o| {
            let id = f.ops.len() as OpId;
            f.ids.insert(o as *const Operation, id);
            f.ops.push(o);
        });
        f.parent = vec![None; f.ops.len()];
        for (id, o) in f.ops.clone().into_iter().enumerate() {
            for b in &o.regions {
                for &a in &b.args {
                    f.arg_owner.insert(a, id as OpId);
                }
                for x in &b.ops {
                    let xi = f.id(x);
                    f.parent[xi as usize] = Some(id as OpId);
                }
            }
        }
        // Values no asynchronous group can write: results of ops other than MMAs, waits and
        // ops with regions. A copy of one needs no wait.
        let mut settled: HashSet<Value> = HashSet::new();
        for o in &f.ops {
            if !matches!(
                o.kind,
                OpKind::Mma | OpKind::WaitGroup | OpKind::For | OpKind::While | OpKind::If
            ) && o.regions.is_empty()
            {
                settled.extend(o.results.iter().copied());
            }
        }
        let mut uf = UnionFind(HashMap::new());
        for (id, o) in f.ops.clone().into_iter().enumerate() {
            let id = id as OpId;
            for &r in &o.results {
                f.defs.insert(r, id);
            }
            match o.kind {
                OpKind::For | OpKind::While => {
                    // tile.for: (lb, ub, step, inits...), args (iv, carried...), yield
                    // (carried...); tile.while: (inits...), args (carried...), yield
                    // (continue, carried...).
                    let b = &o.regions[0];
                    let is_for = o.kind == OpKind::For;
                    if is_for {
                        if let Some(&iv) = b.args.first() {
                            f.iv_of.insert(iv, id);
                        }
                    }
                    let (init_at, arg_at, yield_at) = if is_for { (3, 1, 0) } else { (0, 0, 1) };
                    let y = b.ops.last().filter(|t| t.kind == OpKind::Yield);
                    // Registers are identified by SSA value, not by the value they start
                    // from: two carried positions initialised from one value no group
                    // writes (`%a, %b = tile.for ... %z, %z` with `%z = tile.zeros`) are two
                    // register sets, the second a copy. (A value a group may still write
                    // keeps one set for all its positions: copying it would need a wait.)
                    let mut inits = HashSet::new();
                    for (i, &r) in o.results.iter().enumerate() {
                        let a = b.args.get(arg_at + i).copied();
                        let yv = y.and_then(|y| y.operands.get(yield_at + i)).copied();
                        // A carried argument still used after the body defines the value
                        // yielded into it lives beside that value: the back edge copies
                        // the value into the argument's registers (the yield reads one
                        // and writes the other).
                        let copied = match (a, yv) {
                            (Some(a), Some(yv)) if interferes(b, a, yv) => {
                                let yi = f.id(y.expect("a yield"));
                                f.yield_copies.entry(yi).or_default().push((yv, a));
                                Some(a)
                            }
                            _ => None,
                        };
                        if let Some(&init) = o.operands.get(init_at + i) {
                            if inits.insert(init) || !settled.contains(&init) {
                                uf.union(copied.unwrap_or(r), init);
                            }
                        }
                        if let (Some(a), None) = (a, copied) {
                            uf.union(r, a);
                        }
                        if let Some(yv) = yv {
                            uf.union(r, yv);
                        }
                    }
                }
                OpKind::If | OpKind::WarpSpecialize => {
                    let regions: &[Block] = if o.kind == OpKind::If {
                        &o.regions
                    } else {
                        &o.regions[1..]
                    };
                    for b in regions {
                        if let Some(y) = b.ops.last().filter(|t| t.kind == OpKind::Yield) {
                            for (&r, &yv) in o.results.iter().zip(&y.operands) {
                                uf.union(r, yv);
                            }
                        }
                    }
                }
                OpKind::WaitGroup => {
                    for (&a, &r) in o.operands.iter().zip(&o.results) {
                        uf.union(a, r);
                    }
                }
                OpKind::Mma
                    if is_wgmma(o)
                        && o.results.len() == 1
                        && o.attr("zero_acc").and_then(|a| a.as_bool()) != Some(true) =>
                {
                    if let Some(p) = tilec_dialect::ops::mma_operands(o) {
                        uf.union(p.acc, o.results[0]);
                    }
                }
                OpKind::SmemAlloc => {
                    if let (Some(&r), Some(Type::Smem { stages, .. })) =
                        (o.results.first(), o.results.first().map(|&r| m.ty(r)))
                    {
                        f.rings.insert(r, *stages);
                    }
                }
                _ => {}
            }
        }
        if MERGE_ACCUMULATORS.with(std::cell::Cell::get) {
            let accs: Vec<Value> = f
                .ops
                .iter()
                .filter(|o| is_wgmma(o))
                .filter_map(|o| o.results.first().copied())
                .collect();
            for w in accs.windows(2) {
                uf.union(w[0], w[1]);
            }
        }
        // Slot ids: the representative value's index.
        let mut all_values: Vec<Value> = vec![];
        for o in &f.ops {
            all_values.extend(o.operands.iter().copied());
            all_values.extend(o.results.iter().copied());
            for b in &o.regions {
                all_values.extend(b.args.iter().copied());
            }
        }
        for v in all_values {
            let r = uf.find(v);
            f.slot_of.insert(v, r.0);
        }
        // Groups.
        for (id, o) in f.ops.clone().into_iter().enumerate() {
            if kind != GroupKind::Wgmma {
                if kind.is_group_op(o) && o.operands.len() >= 3 {
                    let smem = vec![(o.operands[1], f.stage(o.operands[2]))];
                    f.groups.insert(
                        id as OpId,
                        GroupDesc {
                            acc: NO_SLOT,
                            a: None,
                            smem,
                        },
                    );
                }
                continue;
            }
            let parts = tilec_dialect::ops::mma_operands(o);
            let (true, Some(p), 1) = (is_wgmma(o), parts, o.results.len()) else {
                continue;
            };
            let acc = f.slot(o.results[0]);
            let a = matches!(m.try_ty(p.a), Some(Type::Tile { .. }))
                .then(|| f.slot(p.a))
                .filter(|_| !FORGET_FRAGMENTS.with(std::cell::Cell::get));
            // Each ring at its own stage.
            let smem: Vec<(Value, StageSym)> = [(p.a, p.stage_a), (p.b, p.stage_b)]
                .into_iter()
                .filter(|&(v, _)| matches!(m.try_ty(v), Some(Type::Smem { .. })))
                .map(|(v, s)| (v, f.stage(s)))
                .collect();
            f.reg_slots.insert(acc);
            if o.attr("zero_acc").and_then(|a| a.as_bool()) != Some(true) {
                f.reg_slots.insert(f.slot(p.acc));
            }
            if let Some(a) = a {
                f.reg_slots.insert(a);
            }
            f.groups.insert(id as OpId, GroupDesc { acc, a, smem });
        }
        let mut first: HashMap<(Slot, Option<Slot>), OpId> = HashMap::new();
        let mut ids: Vec<OpId> = f.groups.keys().copied().collect();
        ids.sort();
        for id in ids {
            let g = &f.groups[&id];
            let rep = *first.entry((g.acc, g.a)).or_insert(id);
            f.canonical.insert(id, rep);
        }
        // Which rings a barrier guards: rings loaded by TMA whose last wait before the
        // load (in program order, enclosing blocks included) is on it.
        if let Some(b) = kernel.regions.first() {
            f.scan_barriers(b, &BTreeSet::new());
        }
        let all_rings: BTreeSet<Value> = f.rings.keys().copied().collect();
        let mut period = Some(1i64);
        let mut moduli: Vec<i64> = f.rings.values().map(|&n| n as i64).collect();
        for o in &f.ops {
            if o.kind == OpKind::RemI && o.operands.len() == 2 {
                if let Lin::Const(k) = f.lin(o.operands[1], 0) {
                    moduli.extend(Some(k).filter(|k| (1..=MAX_MODULUS).contains(k)));
                }
            }
        }
        for k in moduli {
            period = period
                .map(|p| p / gcd(p, k) * k)
                .filter(|&p| p <= MAX_PERIOD);
        }
        f.period = period;
        for (id, o) in f.ops.iter().enumerate() {
            if o.kind != OpKind::For {
                continue;
            }
            let mut rings = BTreeSet::new();
            for b in &o.regions {
                for x in &b.ops {
                    x.walk(&mut |y| {
                        rings.extend(
                            y.operands
                                .iter()
                                .copied()
                                .filter(|v| f.rings.contains_key(v)),
                        );
                        if y.kind == OpKind::MbarrierArrive {
                            let released = y.operands.first().and_then(|b| f.bar_rings.get(b));
                            rings.extend(released.unwrap_or(&all_rings).iter().copied());
                        }
                    });
                }
            }
            f.loop_rings.insert(id as OpId, rings);
        }
        if let Some(threads) = tilec_dialect::ops::block_threads(kernel) {
            f.kernel_warpgroups = (threads / 128).max(1) as u64;
        }
        f.fragments = f.groups.values().filter_map(|g| g.a).collect();
        if !f.fragments.is_empty() {
            let fragments = f.fragments.clone();
            for r in &kernel.regions {
                f.scan_scopes(r, &fragments);
            }
        }
        f
    }

    /// Records in `scope_ends` the fragments each `tile.yield` in `b` and below ends: those
    /// all of whose values its block or a block inside it defines (a wait's tied result
    /// inside a branch does not end a fragment defined before the branch), and which it
    /// does not yield.
    fn scan_scopes(&mut self, b: &Block, fragments: &BTreeSet<Slot>) {
        fn defs(
            f: &Facts<'_>,
            b: &Block,
            chain: &mut Vec<*const Block>,
            out: &mut HashMap<Slot, Vec<Vec<*const Block>>>,
        ) {
            chain.push(b as *const Block);
            for &v in b
                .args
                .iter()
                .chain(b.ops.iter().flat_map(|o| o.results.iter()))
            {
                out.entry(f.slot(v)).or_default().push(chain.clone());
            }
            for o in &b.ops {
                for r in &o.regions {
                    defs(f, r, chain, out);
                }
            }
            chain.pop();
        }
        fn ends(
            f: &mut Facts<'_>,
            b: &Block,
            fragments: &BTreeSet<Slot>,
            defs: &HashMap<Slot, Vec<Vec<*const Block>>>,
        ) {
            for o in &b.ops {
                for r in &o.regions {
                    ends(f, r, fragments, defs);
                }
            }
            let Some(t) = b.ops.last().filter(|t| t.kind == OpKind::Yield) else {
                return;
            };
            let me = b as *const Block;
            let carried: BTreeSet<Slot> = t.operands.iter().map(|&v| f.slot(v)).collect();
            let ended: BTreeSet<Slot> = b
                .args
                .iter()
                .chain(b.ops.iter().flat_map(|o| o.results.iter()))
                .map(|&v| f.slot(v))
                .filter(|s| fragments.contains(s) && !carried.contains(s))
                .filter(|s| defs[s].iter().all(|c| c.contains(&me)))
                .collect();
            if !ended.is_empty() {
                let id = f.id(t);
                f.scope_ends.insert(id, ended);
            }
        }
        let mut d = HashMap::new();
        defs(self, b, &mut vec![], &mut d);
        ends(self, b, fragments, &d);
    }

    fn scan_barriers(&mut self, b: &Block, inherited: &BTreeSet<Value>) {
        let mut waited = inherited.clone();
        for o in &b.ops {
            if o.kind == OpKind::MbarrierWait {
                if let Some(&bar) = o.operands.first() {
                    // The thread passes every wait before a load to issue it, the last one
                    // too: a release of that barrier is what the overwrite waits for.
                    waited = BTreeSet::from([bar]);
                }
            }
            let mut loads = vec![];
            o.walk(&mut |x| {
                if x.kind == OpKind::TmaLoad {
                    if let Some(&ring) = x.operands.get(1) {
                        loads.push(ring);
                    }
                }
            });
            for ring in loads {
                for &bar in &waited {
                    self.bar_rings.entry(bar).or_default().insert(ring);
                }
            }
            for r in &o.regions {
                self.scan_barriers(r, &waited);
            }
        }
    }

    /// The id of `op`, which must belong to this kernel.
    pub(crate) fn id(&self, op: &Operation) -> OpId {
        self.ids[&(op as *const Operation)]
    }

    /// The slot of `v`.
    pub(crate) fn slot(&self, v: Value) -> Slot {
        self.slot_of.get(&v).copied().unwrap_or(v.0)
    }

    /// Whether `v` is in a register slot some wgmma uses.
    pub(crate) fn is_reg(&self, v: Value) -> bool {
        self.reg_slots.contains(&self.slot(v))
    }

    /// The (yielded value, carried argument) pairs that the `tile.yield` with id `yield_id`
    /// copies on a loop's back edge (the argument is still used after the yielded value is
    /// defined, so each keeps its registers).
    pub(crate) fn yield_copies(&self, yield_id: OpId) -> &[(Value, Value)] {
        self.yield_copies
            .get(&yield_id)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// Whether slot `s` is the A fragment of a register-A wgmma.
    pub(crate) fn is_fragment(&self, s: Slot) -> bool {
        self.fragments.contains(&s)
    }

    fn lin(&self, v: Value, depth: u32) -> Lin {
        if let Some(&lp) = self.iv_of.get(&v) {
            return Lin::Sym {
                iv: Some(lp),
                base: None,
                off: 0,
            };
        }
        let atom = Lin::Sym {
            iv: None,
            base: Some(v),
            off: 0,
        };
        let Some(&d) = self.defs.get(&v) else {
            return atom;
        };
        let o = self.ops[d as usize];
        if depth > 16 {
            return Lin::Other;
        }
        match o.kind {
            OpKind::Constant => o.int_attr("value").map_or(atom, Lin::Const),
            OpKind::AddI | OpKind::SubI if o.operands.len() == 2 => {
                let (a, b) = (
                    self.lin(o.operands[0], depth + 1),
                    self.lin(o.operands[1], depth + 1),
                );
                let sub = o.kind == OpKind::SubI;
                let add = |x: i64, y: i64| {
                    if sub {
                        x.wrapping_sub(y)
                    } else {
                        x.wrapping_add(y)
                    }
                };
                match (a, b) {
                    (Lin::Const(x), Lin::Const(y)) => Lin::Const(add(x, y)),
                    (Lin::Sym { iv, base, off }, Lin::Const(y)) => Lin::Sym {
                        iv,
                        base,
                        off: add(off, y),
                    },
                    (Lin::Const(x), Lin::Sym { iv, base, off }) if !sub => Lin::Sym {
                        iv,
                        base,
                        off: x.wrapping_add(off),
                    },
                    (
                        Lin::Sym {
                            iv: i1,
                            base: b1,
                            off: o1,
                        },
                        Lin::Sym {
                            iv: i2,
                            base: b2,
                            off: o2,
                        },
                    ) if !sub
                        && (i1.is_none() || i2.is_none())
                        && (b1.is_none() || b2.is_none()) =>
                    {
                        Lin::Sym {
                            iv: i1.or(i2),
                            base: b1.or(b2),
                            off: o1.wrapping_add(o2),
                        }
                    }
                    _ => atom,
                }
            }
            _ => atom,
        }
    }

    /// The stage `v` names, symbolically.
    pub(crate) fn stage(&self, v: Value) -> StageSym {
        if let Some(&d) = self.defs.get(&v) {
            let o = self.ops[d as usize];
            if o.kind == OpKind::RemI && o.operands.len() == 2 {
                if let Lin::Const(s) = self.lin(o.operands[1], 0) {
                    if s == 1 {
                        return StageSym::Const(0);
                    }
                    // No ring is deeper than MAX_MODULUS stages; a remainder by more is left
                    // unknown, so that the iterations a loop's offsets take to repeat stay
                    // few.
                    if s > 0 && s <= MAX_MODULUS {
                        return match self.lin(o.operands[0], 0) {
                            Lin::Const(k) => StageSym::Const(k.rem_euclid(s)),
                            Lin::Sym { iv, base, off } => StageSym::Rel {
                                lp: iv,
                                base,
                                off: off.rem_euclid(s),
                                modulus: s,
                            },
                            Lin::Other => StageSym::Unknown,
                        };
                    }
                }
                return StageSym::Unknown;
            }
        }
        match self.lin(v, 0) {
            Lin::Const(k) => StageSym::Const(k),
            _ => StageSym::Unknown,
        }
    }

    /// The constant step of loop `lp`.
    pub(crate) fn step(&self, lp: OpId) -> Option<i64> {
        let o = self.ops[lp as usize];
        match self.lin(*o.operands.get(2)?, 0) {
            Lin::Const(s) => Some(s),
            _ => None,
        }
    }

    /// Whether `v` is defined inside loop `lp` (its block arguments included), so that it
    /// may change from one iteration to the next.
    fn defined_in(&self, v: Value, lp: OpId) -> bool {
        let mut at = match (self.arg_owner.get(&v), self.defs.get(&v)) {
            (Some(&owner), _) => Some(owner),
            (None, Some(&d)) => self.parent[d as usize],
            _ => None,
        };
        while let Some(x) = at {
            if x == lp {
                return true;
            }
            at = self.parent[x as usize];
        }
        false
    }

    /// `s` seen one iteration of loop `lp` later.
    fn stage_next_iteration(&self, s: StageSym, lp: OpId) -> StageSym {
        match s {
            StageSym::Rel {
                base: Some(b),
                modulus,
                ..
            } if self.defined_in(b, lp) => StageSym::Below(modulus),
            StageSym::Rel {
                lp: Some(l),
                base,
                off,
                modulus,
            } if l == lp => match self.step(lp) {
                Some(step) => StageSym::Rel {
                    lp: Some(l),
                    base,
                    off: (off - step).rem_euclid(modulus),
                    modulus,
                },
                None => StageSym::Below(modulus),
            },
            StageSym::Entered {
                c,
                w,
                mut rel,
                period,
            } if rel.iter().any(|r| r.0 == lp) => {
                let Some(step) = self.step(lp) else {
                    return StageSym::entered_without(c, w, rel, lp, period);
                };
                for r in rel.iter_mut().filter(|r| r.0 == lp) {
                    r.1 = (r.1 - step).rem_euclid(period);
                }
                StageSym::Entered { c, w, rel, period }
            }
            s => s,
        }
    }

    /// `s` seen after loop `lp` ended.
    fn stage_after_loop(&self, s: StageSym, lp: OpId) -> StageSym {
        match s {
            StageSym::Entered { c, w, rel, period } if rel.iter().any(|r| r.0 == lp) => {
                StageSym::entered_without(c, w, rel, lp, period)
            }
            StageSym::Rel {
                lp: Some(l),
                modulus,
                ..
            } if l == lp => StageSym::Below(modulus),
            StageSym::Rel {
                base: Some(b),
                modulus,
                ..
            } if self.defined_in(b, lp) => StageSym::Below(modulus),
            s => s,
        }
    }

    /// `s`, a stage of `ring` known before loop `lp`, seen from the loop's first
    /// iteration: a known stage `c` (or one below `w`, with `c` = 0) of a ring the loop
    /// accesses (or releases), in a `tile.for` with a constant lower bound `lb` and step,
    /// gains the relation `iv + (c - lb) ≡ c` ([`StageSym::Entered`]), so that it compares
    /// exactly with the loop's own `(iv + k) mod S` stages.
    fn stage_entering_loop(&self, ring: Value, s: StageSym, lp: OpId) -> StageSym {
        let o = self.ops[lp as usize];
        let (c, w, mut rel) = match s {
            StageSym::Const(c) => (c, 1, [(NO_LOOP, 0); 3]),
            StageSym::Below(w) => (0, w, [(NO_LOOP, 0); 3]),
            StageSym::Entered { c, w, rel, .. } => (c, w, rel),
            _ => return s,
        };
        let (OpKind::For, Some(&n), Some(period)) = (o.kind, self.rings.get(&ring), self.period)
        else {
            return s;
        };
        let Some(Lin::Const(lb)) = o.operands.first().map(|&v| self.lin(v, 0)) else {
            return s;
        };
        let touched = self.loop_rings.get(&lp).is_some_and(|r| r.contains(&ring));
        if !touched || c < 0 || w < 1 || c + w > n as i64 || self.step(lp).is_none() {
            return s;
        }
        // Innermost first: a relation to `lp` from an earlier entry goes, the others move
        // one slot out (over free slots), and with every slot taken the outermost gives way.
        let mut kept: Vec<(OpId, i64)> = rel
            .iter()
            .copied()
            .filter(|r| r.0 != NO_LOOP && r.0 != lp)
            .collect();
        kept.insert(0, (lp, (c - lb).rem_euclid(period)));
        rel = [(NO_LOOP, 0); 3];
        for (slot, r) in rel.iter_mut().zip(kept) {
            *slot = r;
        }
        StageSym::Entered { c, w, rel, period }
    }

    /// The stages of `i`, pending when loop `lp` starts, seen from its first iteration.
    pub(crate) fn enter_loop(&self, i: &mut Inst, lp: OpId) {
        for (ring, s) in &mut i.stages {
            *s = self.stage_entering_loop(*ring, *s, lp);
        }
    }

    /// Shift the stages of `i` one iteration of loop `lp` on (at its back edge).
    pub(crate) fn next_iteration(&self, i: &mut Inst, lp: OpId) {
        for (_, s) in &mut i.stages {
            *s = self.stage_next_iteration(*s, lp);
        }
    }

    /// Forget what `i`'s stages say relative to loop `lp`, which ended.
    pub(crate) fn after_loop(&self, i: &mut Inst, lp: OpId) {
        for (_, s) in &mut i.stages {
            *s = self.stage_after_loop(*s, lp);
        }
    }

    /// The fresh instance a wgmma issues.
    pub(crate) fn issue(&self, mma: OpId) -> Inst {
        Inst {
            mma,
            stages: self.groups[&mma].smem.clone(),
        }
    }

    /// What `op` does that matters (its id is `id`). `exit` marks a terminator at which
    /// the warpgroup exits.
    pub(crate) fn access(&self, op: &Operation, id: OpId, exit: bool) -> Access {
        let mut a = Access {
            exit: exit || op.kind == OpKind::Return,
            ends: self.scope_ends.get(&id).cloned().unwrap_or_default(),
            ..Access::default()
        };
        if self.kind == GroupKind::CpAsync {
            self.cp_async_access(op, id, &mut a);
            return a;
        }
        if self.kind == GroupKind::Bulk {
            match op.kind {
                OpKind::TmaStore if self.groups.contains_key(&id) => a.wgmma = Some(id),
                OpKind::SmemStore | OpKind::CpAsync if op.operands.len() >= 3 => {
                    let ring = op.operands[1];
                    let known = self.rings.contains_key(&ring).then_some(ring);
                    a.writes.push((known, self.stage(op.operands[2])));
                }
                // A TMA load into a staging slot overwrites what a pending store reads.
                OpKind::TmaLoad if op.operands.len() >= 4 => {
                    let ring = op.operands[1];
                    let known = self.rings.contains_key(&ring).then_some(ring);
                    a.writes.push((known, self.stage(op.operands[3])));
                }
                _ => {}
            }
            return a;
        }
        match op.kind {
            OpKind::Mma if self.groups.contains_key(&id) => a.wgmma = Some(id),
            OpKind::Yield if self.yield_copies.contains_key(&id) => {
                for &(yv, arg) in &self.yield_copies[&id] {
                    for v in [yv, arg] {
                        if self.is_reg(v) {
                            a.regs.insert(self.slot(v));
                        }
                    }
                }
            }
            OpKind::Yield
            | OpKind::For
            | OpKind::While
            | OpKind::If
            | OpKind::WarpSpecialize
            | OpKind::WaitGroup
            | OpKind::Kernel => {}
            _ => {
                for &v in op.operands.iter().chain(&op.results) {
                    if self.is_reg(v) {
                        a.regs.insert(self.slot(v));
                    }
                }
            }
        }
        match op.kind {
            OpKind::TmaLoad if op.operands.len() >= 4 => {
                let ring = op.operands[1];
                let known = self.rings.contains_key(&ring).then_some(ring);
                a.writes.push((known, self.stage(op.operands[3])));
            }
            OpKind::SmemStore | OpKind::CpAsync if op.operands.len() >= 3 => {
                let ring = op.operands[1];
                let known = self.rings.contains_key(&ring).then_some(ring);
                a.writes.push((known, self.stage(op.operands[2])));
            }
            OpKind::MbarrierArrive if op.operands.len() == 2 => {
                let rings = self.bar_rings.get(&op.operands[0]).cloned();
                a.releases.push((rings, self.stage(op.operands[1])));
            }
            _ => {}
        }
        a
    }

    /// The shared-memory accesses of `op` that matter to cp.async groups (which write
    /// stages): its reads and writes of ring stages; a `tile.cp_async` is a group member
    /// and a write.
    fn cp_async_access(&self, op: &Operation, id: OpId, a: &mut Access) {
        let at = |f: &Self, ring: Value, stage: Value| {
            (f.rings.contains_key(&ring).then_some(ring), f.stage(stage))
        };
        match op.kind {
            OpKind::CpAsync if op.operands.len() >= 3 => {
                if self.groups.contains_key(&id) {
                    a.wgmma = Some(id);
                }
                a.writes.push(at(self, op.operands[1], op.operands[2]));
            }
            OpKind::TmaLoad if op.operands.len() >= 4 => {
                a.writes.push(at(self, op.operands[1], op.operands[3]));
                a.async_proxy = true;
            }
            OpKind::SmemStore if op.operands.len() == 3 => {
                a.writes.push(at(self, op.operands[1], op.operands[2]));
            }
            OpKind::SmemLoad if op.operands.len() == 2 => {
                a.reads.push(at(self, op.operands[0], op.operands[1]));
            }
            OpKind::TmaStore if op.operands.len() >= 3 => {
                a.reads.push(at(self, op.operands[1], op.operands[2]));
                a.async_proxy = true;
            }
            OpKind::Mma => {
                a.async_proxy = is_wgmma(op);
                if let Some(p) = tilec_dialect::ops::mma_operands(op) {
                    for (v, s) in [(p.a, p.stage_a), (p.b, p.stage_b)] {
                        if self.rings.contains_key(&v) {
                            a.reads.push(at(self, v, s));
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// Whether `x` must not run while `g` is pending, and why.
    pub(crate) fn conflict(&self, x: &Access, g: &Inst) -> Option<Hazard> {
        if x.exit {
            return Some(Hazard::Exit);
        }
        let gd = &self.groups[&g.mma];
        if let Some(m) = x.wgmma {
            let xd = &self.groups[&m];
            // Same chain (same accumulator registers): wgmma orders it. Otherwise a wgmma
            // must not write g's A fragment or read g's accumulator as its A.
            if gd.a == Some(xd.acc) || (xd.a == Some(gd.acc) && xd.acc != gd.acc) {
                return Some(Hazard::Registers);
            }
        }
        if gd.slots().any(|s| x.regs.contains(&s)) {
            return Some(Hazard::Registers);
        }
        if self.overwrites(x, g) {
            return Some(Hazard::Overwrite);
        }
        if gd.a.is_some_and(|a| x.ends.contains(&a)) {
            return Some(Hazard::FragmentScope);
        }
        for (rings, st) in &x.releases {
            for (ring, gs) in &g.stages {
                if rings.as_ref().is_none_or(|rs| rs.contains(ring)) && st.may_alias(*gs) {
                    return Some(Hazard::Release);
                }
            }
        }
        None
    }

    /// Whether `x` overwrites a stage `g` reads (the hazard that needs a CTA barrier when
    /// several warpgroups read the buffer); for a cp.async group, whether `x` reads or
    /// writes a stage `g` writes.
    pub(crate) fn overwrites(&self, x: &Access, g: &Inst) -> bool {
        x.writes.iter().chain(&x.reads).any(|(ring, st)| {
            g.stages
                .iter()
                .any(|(r, gs)| ring.is_none_or(|x| x == *r) && st.may_alias(*gs))
        })
    }

    /// The rings with one stage among those `x` overwrites or releases that `g` reads.
    pub(crate) fn single_stage_ring(&self, x: &Access, g: &Inst) -> Option<Value> {
        let touched = |ring: &Value| {
            x.writes.iter().any(|(r, _)| r.is_none_or(|r| r == *ring))
                || x.releases
                    .iter()
                    .any(|(rs, _)| rs.as_ref().is_none_or(|rs| rs.contains(ring)))
        };
        g.stages
            .iter()
            .map(|(r, _)| *r)
            .find(|r| self.rings.get(r) == Some(&1) && touched(r))
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

/// Whether `op` is one of the ops the placement puts before a hazard besides barriers: a
/// wait of any kind, or a proxy fence. A wait does not move past one, nor split at a join
/// in front of one: the ops before a hazard stay together, whichever kind each serves.
pub(crate) fn placed_sync(op: &Operation) -> bool {
    matches!(
        op.kind,
        OpKind::WaitGroup
            | OpKind::BulkWaitGroup
            | OpKind::CpAsyncWaitGroup
            | OpKind::FenceProxyAsync
    )
}

/// Whether a cp.async wait placed before `ops[from]` would stand directly before a
/// `tile.fence_proxy_async`, other kinds' waits aside: the placement takes a proxy fence
/// right after its cp.async wait for its own, so a wait may not land there (a second
/// placement would strip the program's fence).
pub(crate) fn fence_ahead(ops: &[Operation], from: usize) -> bool {
    ops.iter()
        .skip(from)
        .find(|o| !is_group_wait(o))
        .is_some_and(|o| o.kind == OpKind::FenceProxyAsync)
}

/// Whether a wait of `kind` may stand right before `ops[j]` (or end the block): not before
/// a barrier of its kind, nor (cp.async) before a proxy fence, other kinds' waits aside.
/// The placement puts its barrier (and a cp.async proxy fence) right after its wait, so a
/// wait there would stand between the program's barrier and the ops it orders;
/// `verify-async-waits` moves waits only where the placement could put them.
pub(crate) fn wait_may_stand_before(ops: &[Operation], j: usize, kind: GroupKind) -> bool {
    !(ops.get(j).is_some_and(|o| kind.is_barrier(o))
        || (kind == GroupKind::CpAsync && fence_ahead(ops, j)))
}

/// Whether `op` is a wait of any group kind (`tile.wait_group`, `tile.bulk_wait_group`,
/// `tile.cp_async_wait_group`).
pub(crate) fn is_group_wait(op: &Operation) -> bool {
    matches!(
        op.kind,
        OpKind::WaitGroup | OpKind::BulkWaitGroup | OpKind::CpAsyncWaitGroup
    )
}

/// Whether `op` is pure, holds no regions, and reads and defines scalars only (index arithmetic,
/// constants, compares): it touches no register tile, shared memory or barrier, so a wait
/// may move across it. Placement and `verify-async-waits` both use it to find the hazard
/// that follows a `tile.if`.
pub(crate) fn scalar_only(m: &Module, op: &Operation) -> bool {
    op.regions.is_empty()
        && op.kind.is_pure()
        && op
            .operands
            .iter()
            .chain(&op.results)
            .all(|&v| matches!(m.ty(v), tilec_dialect::Type::Scalar(_)))
}

/// Whether carried argument `arg` of loop body `b` is used (at any depth) by an op after
/// the top-level op that defines `yielded`. Values are followed through `tile.wait_group`
/// ties, which share registers (so the answer is the same before and after waits are
/// placed), and through `tile.if` results whose two arms yield the same registers (each
/// arm tying the same value, as placement's waits in both arms of a branch do): `yielded`
/// back to the value it ties, and `arg` forward to every tie of it. A value defined outside
/// the body, or yielded from an argument, does not interfere.
fn interferes(b: &Block, arg: Value, yielded: Value) -> bool {
    let mut tied: HashMap<Value, Value> = HashMap::new();
    // A branch's result, by position: the values its arms yield there.
    let mut joined: HashMap<Value, Vec<Value>> = HashMap::new();
    for o in &b.ops {
        o.walk(&mut |x| {
            if x.kind == OpKind::WaitGroup {
                tied.extend(x.results.iter().copied().zip(x.operands.iter().copied()));
            }
            if x.kind == OpKind::If {
                for (i, &r) in x.results.iter().enumerate() {
                    let arms = x
                        .regions
                        .iter()
                        .filter_map(|rb| rb.ops.last().filter(|t| t.kind == OpKind::Yield))
                        .filter_map(|y| y.operands.get(i).copied())
                        .collect();
                    joined.insert(r, arms);
                }
            }
        });
    }
    // The value whose registers `v` is, through ties and through branches whose arms all
    // yield the same registers (each arm waiting for the same value, say).
    fn origin(
        v: Value,
        tied: &HashMap<Value, Value>,
        joined: &HashMap<Value, Vec<Value>>,
        depth: u32,
    ) -> Value {
        if depth > 64 {
            return v;
        }
        if let Some(&w) = tied.get(&v) {
            return origin(w, tied, joined, depth + 1);
        }
        if let Some(arms) = joined.get(&v) {
            let os: Vec<Value> = arms
                .iter()
                .map(|&a| origin(a, tied, joined, depth + 1))
                .collect();
            if let Some(&first) = os.first() {
                if os.len() == 2 && os.iter().all(|&o| o == first) {
                    return first;
                }
            }
        }
        v
    }
    let origin = |v: Value| origin(v, &tied, &joined, 0);
    let y = origin(yielded);
    let Some(d) = b.ops.iter().position(|o| o.results.contains(&y)) else {
        return false;
    };
    let mut used = false;
    for o in &b.ops[d + 1..] {
        if o.kind == OpKind::Yield {
            break;
        }
        o.walk(&mut |x| used |= x.operands.iter().any(|&v| origin(v) == arg));
    }
    used
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_aliasing() {
        let rel = |off, modulus| StageSym::Rel {
            lp: Some(3),
            base: None,
            off,
            modulus,
        };
        assert!(!rel(0, 4).may_alias(rel(3, 4)));
        assert!(rel(3, 4).may_alias(rel(3, 4)));
        assert!(rel(0, 4).may_alias(rel(0, 2)));
        assert!(StageSym::Const(1).may_alias(rel(1, 4)));
        assert!(!StageSym::Const(1).may_alias(StageSym::Const(2)));
        assert!(StageSym::Unknown.may_alias(StageSym::Const(2)));
        let based = StageSym::Rel {
            lp: Some(3),
            base: Some(Value(7)),
            off: 0,
            modulus: 4,
        };
        assert!(based.may_alias(rel(1, 4)));
    }

    fn facts_of(src: &str, f: impl FnOnce(&Module, &Facts<'_>)) {
        let m = tilec_dialect::parse(src, "t").unwrap();
        let k = m.kernels().next().unwrap();
        let facts = Facts::new(&m, k);
        f(&m, &facts);
    }

    #[test]
    fn stages_of_a_persistent_loop() {
        let src = "tile.kernel @k(%n: index) {grid = [1]} {
  %c0 = tile.constant {value = 0} : index
  %c1 = tile.constant {value = 1} : index
  %c4 = tile.constant {value = 4} : index
  %e = tile.for %c0, %n, %c1, %c0 : index {
  ^bb0(%t: index, %kbase: index):
    tile.for %c1, %n, %c1 {
    ^bb0(%kt: index):
      %kg = tile.addi %kbase, %kt : index
      %s = tile.remi %kg, %c4 : index
      %w = tile.addi %kg, %c4 : index
      %p = tile.subi %w, %c1 : index
      %prev = tile.remi %p, %c4 : index
      tile.yield
    }
    %next = tile.addi %kbase, %n : index
    tile.yield %next
  }
  tile.return
}";
        facts_of(src, |m, f| {
            let named = |n: &str| {
                Value(
                    (0..m.values.len() as u32)
                        .find(|&i| m.name(Value(i)) == Some(n))
                        .unwrap(),
                )
            };
            let (s, prev) = (f.stage(named("s")), f.stage(named("prev")));
            let (outer, inner) = (
                f.ops.iter().position(|o| o.kind == OpKind::For).unwrap() as OpId,
                f.ops.iter().rposition(|o| o.kind == OpKind::For).unwrap() as OpId,
            );
            assert!(matches!(
                s,
                StageSym::Rel {
                    off: 0,
                    modulus: 4,
                    base: Some(_),
                    ..
                }
            ));
            assert!(!s.may_alias(prev));
            // One inner iteration later, the group's stage is the previous stage.
            let s1 = f.stage_next_iteration(s, inner);
            assert_eq!(s1, prev);
            // Across the outer back edge, kbase changes, and after the inner loop its
            // iteration is forgotten: some stage of the four.
            assert_eq!(f.stage_next_iteration(s, outer), StageSym::Below(4));
            assert_eq!(f.stage_after_loop(s, inner), StageSym::Below(4));
            assert!(!StageSym::Below(4).may_alias(StageSym::Const(4)));
            assert!(StageSym::Below(4).may_alias(StageSym::Const(3)));
            assert!(StageSym::Below(4).may_alias(prev));
        });
    }
}
