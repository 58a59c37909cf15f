//! `verify-named-barriers` — prove that a plain launch's CTA and named barriers pair up and
//! never deadlock, for every interleaving of its warpgroups.
//!
//! PTX's barriers (PTX ISA §9.7.13.1, `bar.sync` / `bar.arrive`) count arriving threads:
//! barrier `b` with count `n` completes once `n` threads have arrived; `bar.sync` waits for
//! that, `bar.arrive` does not. A CTA whose warpgroups order their work through named
//! barriers (two consumer warpgroups taking turns at the tensor cores, FlashAttention-3's
//! ping-pong) must keep every wait matched by enough arrivals, in every order the hardware may
//! run them. This pass checks it on the tile IR, before any of it is lowered:
//!
//! - `tile.barrier` is `bar.sync 0` over the whole CTA;
//! - `tile.named_barrier {id = B, threads = N}` is `bar.sync` (with `arrive = true`,
//!   `bar.arrive`) on barrier `B`; with `peer = P`, warpgroup `w` of `W` uses barrier
//!   `B + (w + P) mod W`; with `only_warpgroup = k`, only warpgroup `k` executes it.
//!
//! The kernel's scalars (and so its branches and trip counts) are the same in every
//! warpgroup, so all warpgroups take one path through the control flow: both sides of each
//! `tile.if`, and 0 to `trips` trips of each `tile.for` (1 to `trips` of a `tile.while`),
//! are enumerated. For each path, every warpgroup's sequence of barrier operations is run
//! against the barrier semantics in every interleaving (a depth-first search over the states
//! of all warpgroups and barriers). A path is rejected when:
//! - **deadlock**: some warpgroups wait and none can move (the notes say where each waits);
//! - **double arrival**: a warpgroup arrives again on a barrier before its phase completes
//!   (PTX leaves that undefined);
//! - **count mismatch**: two arrivals in one phase give different thread counts;
//! - **mixed warps**: warpgroups that may reach one barrier at the same time bring more
//!   threads than its phase has room for (PTX counts arrivals by warp, so the phase could
//!   complete with some warps of each);
//! - **unpaired**: a barrier holds arrivals at kernel exit (a `bar.arrive` nothing waits
//!   for);
//! - a barrier id outside 0 to 15, a count that is not a multiple of a warpgroup's threads
//!   or exceeds the CTA's, or an `only_warpgroup` the CTA lacks.
//!
//! The check is bounded: a loop is explored up to `trips` trips (a protocol that balances
//! its arrivals per trip, as a ping-pong does, behaves the same at every larger count).
//! In a plain launch with a producer warpgroup (`tile.warp_specialize` directly in the body,
//! as `tile-pipeline-loads warp-specialize` writes it) the consumer region is checked alone,
//! over the `num_warps` consumer warps: the producer's one thread takes part in none of
//! their barriers (the lowering counts their CTA barriers as theirs), and a named barrier
//! elsewhere is an error. Any other kernel with `tile.warp_specialize` (the GEMM pipeline's)
//! is not checked here and is counted in `kernels-skipped`; a kernel without barriers, or
//! whose barriers all sync the whole CTA, passes at once (every warpgroup meets the same
//! sequence of them).
//!
//! Options: `trips` (default 3), `max_states` (default 1,000,000: the search budget per
//! path; a kernel that needs more is reported, not proven). Statistics: `kernels-checked`,
//! `kernels-skipped`, `paths`, `states`.

use crate::pass::{OptionInfo, OptionKind, Pass, PassContext, PassInfo, PassOptions};
use std::collections::{BTreeMap, HashSet};
use tilec_dialect::{
    Attribute, Block, Diagnostic, Diagnostics, Location, Module, OpKind, Operation,
};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "verify-named-barriers",
    summary: "Prove that a plain launch's CTA and named barriers pair up and never deadlock",
    description: "Runs each kernel's tile.barrier (bar.sync 0) and tile.named_barrier ops \
        (bar.sync / bar.arrive, per-warpgroup ids with 'peer', 'only_warpgroup') for every \
        warpgroup of the CTA, along every path (both branch sides, 0 to 'trips' loop trips), \
        in every interleaving, and rejects a deadlock, a second arrival in one phase, a thread \
        count that differs within a phase, and arrivals left at kernel exit. Changes \
        nothing.\n\nExample: tile-opt k.tile --pass-pipeline='verify-named-barriers{trips=4}'",
    options: &[
        OptionInfo {
            name: "trips",
            kind: OptionKind::UInt,
            default: "3",
            help: "Most trips of each loop explored (at least 1)",
        },
        OptionInfo {
            name: "max_states",
            kind: OptionKind::UInt,
            default: "1000000",
            help: "Budget of one path's interleaving search in states; a kernel that needs \
                more is reported, not proven",
        },
    ],
};

/// Threads of a warpgroup.
const WARPGROUP: i64 = 128;

/// Paths explored per kernel at most (each is searched on its own).
const MAX_PATHS: usize = 4096;

/// The default `trips` (see the [module docs](self)).
pub const DEFAULT_TRIPS: u64 = 3;

/// The default `max_states`.
pub const DEFAULT_MAX_STATES: u64 = 1_000_000;

/// The pass.
pub struct VerifyNamedBarriers {
    /// Most trips of each loop explored.
    pub trips: u64,
    /// Search budget per path, in states.
    pub max_states: u64,
}

impl VerifyNamedBarriers {
    /// From the pass options (`trips` at least 1).
    ///
    /// # Errors
    /// `trips` 0.
    pub fn from_options(o: &PassOptions) -> Result<Self, String> {
        let trips = o.uint("trips");
        if trips == 0 {
            return Err("verify-named-barriers option 'trips' must be at least 1".into());
        }
        Ok(VerifyNamedBarriers {
            trips,
            max_states: o.uint("max_states"),
        })
    }
}

/// What [`check_kernel`] explored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BarrierReport {
    /// Paths through the control flow.
    pub paths: u64,
    /// States of the interleaving searches.
    pub states: u64,
}

/// A barrier op of the kernel, before it is resolved per warpgroup.
#[derive(Clone, Debug)]
struct Site {
    /// `tile.barrier`: barrier 0 over the whole CTA.
    cta: bool,
    /// The barrier id (0 for `tile.barrier`).
    id: i64,
    /// Threads the barrier counts.
    threads: i64,
    /// `bar.arrive` (does not wait) instead of `bar.sync`.
    arrive: bool,
    /// Warpgroup `w` uses `id + (w + peer) mod W`.
    peer: Option<i64>,
    /// Only this warpgroup executes it.
    only: Option<i64>,
    loc: Location,
}

/// The control flow that holds barrier ops (regions without any are dropped).
#[derive(Clone, Debug)]
enum Node {
    Site(usize),
    Loop {
        at_least_once: bool,
        body: Vec<Node>,
    },
    If {
        arms: Vec<Vec<Node>>,
    },
}

/// One warpgroup's barrier operation on a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Ev {
    site: usize,
    id: i64,
    threads: i64,
    arrive: bool,
}

/// A barrier's current phase: the threads that arrived, which warpgroups, and the first
/// arrival's site (for messages).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Phase {
    threads: i64,
    count: i64,
    arrived: u64,
    first: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    pos: Vec<usize>,
    /// The barrier each warpgroup waits on (its `bar.sync` is at `pos - 1`).
    waits: Vec<Option<i64>>,
    phases: BTreeMap<i64, Phase>,
}

/// Checks kernel `k` (see the [module docs](self)); `Ok(None)` for a kernel this pass does
/// not check (warp-specialized).
///
/// # Errors
/// The first violation found, located at the barrier op concerned, with notes.
pub fn check_kernel(
    m: &Module,
    k: &Operation,
    trips: u64,
    max_states: u64,
) -> Result<Option<BarrierReport>, Diagnostic> {
    let block = match k.attr("block") {
        Some(Attribute::Array(d)) => Some(
            d.iter()
                .map(|a| match a {
                    Attribute::Int(i) => *i,
                    _ => 1,
                })
                .product::<i64>(),
        ),
        _ => None,
    };
    // A plain launch's producer warpgroup (tile-pipeline-loads warp-specialize) comes after
    // its num_warps consumer warps and takes no part in their barriers: the consumer region
    // is checked alone.
    let mut nested = false;
    let mut specialized = None;
    if let Some(top) = k.regions.first() {
        for o in &top.ops {
            if o.kind == OpKind::WarpSpecialize {
                specialized = Some(o);
            } else {
                o.walk(&mut |x| nested |= x.kind == OpKind::WarpSpecialize);
            }
        }
    }
    let warps = k.int_attr("num_warps");
    let (scope, producer) = match (specialized, warps) {
        _ if nested => return Ok(None),
        (Some(ws), Some(_)) if ws.regions.len() == 2 => (Some(&ws.regions[1]), 128),
        (Some(_), _) => return Ok(None),
        (None, _) => (k.regions.first(), 0),
    };
    if let Some(ws) = specialized {
        let mut consumers: HashSet<*const Operation> = HashSet::new();
        for o in &ws.regions[1].ops {
            o.walk(&mut |x| {
                consumers.insert(x as *const Operation);
            });
        }
        let mut outside = None;
        k.walk(&mut |o| {
            let stray = o.kind == OpKind::NamedBarrier && !consumers.contains(&(o as *const _));
            if stray && outside.is_none() {
                outside = Some(o.loc.clone());
            }
        });
        if let Some(loc) = outside {
            return Err(Diagnostic::error(
                loc,
                "in a warp-specialized kernel, named barriers belong in the consumer region \
                 (region 1 of 'tile.warp_specialize'): the producer's one thread cannot take \
                 part in a barrier of whole warpgroups",
            ));
        }
    }
    // The lowering launches num_warps warps (and the producer's); 'block' must say the same.
    let threads = match (warps, block) {
        (Some(w), Some(b)) if w * 32 + producer != b => {
            return Err(Diagnostic::error(
                k.loc.clone(),
                format!(
                    "the kernel's 'block' ({b} threads) and 'num_warps' ({w}, {} threads{}) \
                     disagree",
                    w * 32 + producer,
                    if producer > 0 {
                        " with the producer warpgroup"
                    } else {
                        ""
                    }
                ),
            ));
        }
        (Some(w), _) => w * 32,
        (None, Some(b)) => b,
        (None, None) => 0,
    };
    let mut sites = vec![];
    let body = scope.map_or(vec![], |b| tree(m, b, &mut sites));
    if sites.is_empty() {
        return Ok(Some(BarrierReport::default()));
    }
    if threads <= 0 {
        return Err(Diagnostic::error(
            k.loc.clone(),
            "verify-named-barriers needs the kernel's 'block' (run tile-assign-layouts first)",
        ));
    }
    // Whole warpgroups, or else the CTA as one group of threads.
    let wg_threads = if threads % WARPGROUP == 0 {
        WARPGROUP
    } else {
        threads
    };
    let wgs = threads / wg_threads;
    for s in &sites {
        validate(s, threads, wg_threads, wgs)?;
    }
    // A warpgroup's own barrier (a sync of its threads alone on `id + w`, ids no other op
    // uses) completes as it arrives: it cannot block or be shared, so it is left out.
    let ids = |s: &Site| -> std::ops::RangeInclusive<i64> {
        match s.peer {
            Some(_) => s.id..=s.id + wgs - 1,
            None => s.id..=s.id,
        }
    };
    let own = |s: &Site| {
        !s.cta && !s.arrive && s.only.is_none() && s.peer.is_some() && s.threads == wg_threads
    };
    let shared: Vec<std::ops::RangeInclusive<i64>> =
        sites.iter().filter(|s| !own(s)).map(ids).collect();
    let private: Vec<bool> = sites
        .iter()
        .map(|s| {
            let r = ids(s);
            own(s)
                && shared
                    .iter()
                    .all(|o| o.end() < r.start() || r.end() < o.start())
        })
        .collect();
    // Only syncs of the whole CTA left: every warpgroup runs the same sequence of them (one
    // path for all), and each completes once all have arrived.
    if sites.iter().zip(&private).all(|(s, &p)| {
        p || s.cta || (!s.arrive && s.peer.is_none() && s.only.is_none() && s.threads == threads)
    }) {
        return Ok(Some(BarrierReport::default()));
    }
    let mut paths = vec![vec![]];
    expand(&body, trips, &mut paths, &sites)?;
    let mut report = BarrierReport::default();
    for path in &paths {
        let path: Vec<usize> = path.iter().copied().filter(|&i| !private[i]).collect();
        let evs: Vec<Vec<Ev>> = (0..wgs)
            .map(|w| resolve(&path, &sites, w, wgs, threads))
            .collect();
        report.paths += 1;
        let budget = max_states.saturating_sub(report.states);
        report.states += search(&evs, &sites, wg_threads, budget, &path, k)?;
    }
    Ok(Some(report))
}

/// Whether op `o` may lower to a CTA barrier (`bar.sync 0`) in a plain launch: a reduction
/// across warps, a layout change (it may go through shared memory), a dot on mma.sync (its
/// B staging), an mbarrier's initialisation, a flag op. Conservative: such an op counts as a
/// `tile.barrier`.
pub(crate) fn implicit_cta_barrier(m: &Module, o: &Operation) -> bool {
    match o.kind {
        OpKind::Reduce => {
            let dim = o.int_attr("dim").unwrap_or(0) as usize;
            o.operands.first().is_none_or(|&x| {
                m.ty(x)
                    .layout()
                    .is_none_or(|l| l.warp.iter().any(|b| b.get(dim).is_some_and(|&c| c != 0)))
            })
        }
        OpKind::Broadcast | OpKind::ConvertLayout | OpKind::ExtractSlice => {
            !remap_in_registers(m, o)
        }
        OpKind::Dot
        | OpKind::MbarrierAlloc
        | OpKind::WaitFlag
        | OpKind::ArriveFlag
        | OpKind::ReleaseFlag => true,
        _ => false,
    }
}

/// Whether remap `o` (`tile.broadcast`, `tile.convert_layout`, `tile.extract_slice`) is a
/// renaming of registers in the lowering ([`tilec_dialect::LinearLayout::registers_for`]),
/// with no shared-memory round trip and so no CTA barrier: a scalar broadcast, or a tile
/// whose every destination element is in the same thread.
fn remap_in_registers(m: &Module, o: &Operation) -> bool {
    let (Some(&x), Some(&r)) = (o.operands.first(), o.results.first()) else {
        return false;
    };
    let (src, dst) = (m.ty(x), m.ty(r));
    if o.kind == OpKind::Broadcast && !matches!(src, tilec_dialect::Type::Tile { .. }) {
        return true;
    }
    let (Some(sl), Some(dl), Some(ss), Some(ds)) = (
        src.layout(),
        dst.layout(),
        src.tile_shape(),
        dst.tile_shape(),
    ) else {
        return false;
    };
    if ss.len() != ds.len() {
        return false;
    }
    let bcast: Vec<usize> = (0..ds.len()).filter(|&d| ss[d] == 1 && ds[d] > 1).collect();
    let shift = if o.kind == OpKind::ExtractSlice {
        tilec_dialect::ops::offsets(o)
    } else {
        vec![]
    };
    sl.registers_for(dl, &bcast, &shift).is_some()
}

fn tree(m: &Module, b: &Block, sites: &mut Vec<Site>) -> Vec<Node> {
    let mut out = vec![];
    for o in &b.ops {
        match o.kind {
            _ if o.kind == OpKind::Barrier || implicit_cta_barrier(m, o) => {
                sites.push(Site {
                    cta: true,
                    id: 0,
                    threads: 0,
                    arrive: false,
                    peer: None,
                    only: None,
                    loc: o.loc.clone(),
                });
                out.push(Node::Site(sites.len() - 1));
            }
            OpKind::NamedBarrier => {
                sites.push(Site {
                    cta: false,
                    id: o.int_attr("id").unwrap_or(1),
                    threads: o.int_attr("threads").unwrap_or(WARPGROUP),
                    arrive: matches!(o.attr("arrive"), Some(Attribute::Bool(true))),
                    peer: o.int_attr("peer"),
                    only: o.int_attr("only_warpgroup"),
                    loc: o.loc.clone(),
                });
                out.push(Node::Site(sites.len() - 1));
            }
            OpKind::For | OpKind::While => {
                let body = o.regions.first().map_or(vec![], |r| tree(m, r, sites));
                if !body.is_empty() {
                    out.push(Node::Loop {
                        at_least_once: o.kind == OpKind::While,
                        body,
                    });
                }
            }
            _ if !o.regions.is_empty() => {
                let arms: Vec<Vec<Node>> = o.regions.iter().map(|r| tree(m, r, sites)).collect();
                if arms.iter().any(|a| !a.is_empty()) {
                    if o.kind == OpKind::If {
                        out.push(Node::If { arms });
                    } else {
                        out.extend(arms.into_iter().flatten());
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn validate(s: &Site, threads: i64, wg_threads: i64, wgs: i64) -> Result<(), Diagnostic> {
    let bad = |m: String| Err(Diagnostic::error(s.loc.clone(), m));
    if s.cta {
        return Ok(());
    }
    if s.threads % wg_threads != 0 || s.threads > threads {
        return bad(format!(
            "named barrier {} counts {} threads: not a multiple of the {wg_threads} threads a \
             warpgroup arrives with, or more than the CTA's {threads}",
            s.id, s.threads
        ));
    }
    if (s.peer.is_some() || s.only.is_some()) && wg_threads != WARPGROUP {
        return bad(format!(
            "'peer' and 'only_warpgroup' need whole warpgroups; the CTA has {threads} threads"
        ));
    }
    if let Some(k) = s.only.filter(|&k| !(0..wgs).contains(&k)) {
        return bad(format!(
            "'only_warpgroup = {k}', but the CTA has {wgs} warpgroup(s) ({threads} threads)"
        ));
    }
    if s.peer.is_some_and(|p| p < 0) {
        return bad("'peer' must be at least 0".into());
    }
    let last = s.id + if s.peer.is_some() { wgs - 1 } else { 0 };
    if !(1..=15).contains(&s.id) || last > 15 {
        return bad(format!(
            "named barrier ids {}..={last} (one per warpgroup with 'peer') leave 1 to 15",
            s.id
        ));
    }
    Ok(())
}

/// Extends every partial path in `paths` by `nodes` (sites as indices).
fn expand(
    nodes: &[Node],
    trips: u64,
    paths: &mut Vec<Vec<usize>>,
    sites: &[Site],
) -> Result<(), Diagnostic> {
    for n in nodes {
        match n {
            Node::Site(i) => paths.iter_mut().for_each(|p| p.push(*i)),
            Node::Loop {
                at_least_once,
                body,
            } => {
                let mut all = vec![];
                let mut cur = paths.clone();
                if !at_least_once {
                    all.extend(cur.iter().cloned());
                }
                for _ in 0..trips {
                    expand(body, trips, &mut cur, sites)?;
                    all.extend(cur.iter().cloned());
                    too_many(all.len(), sites)?;
                }
                *paths = all;
            }
            Node::If { arms } => {
                let mut all = vec![];
                for a in arms {
                    let mut cur = paths.clone();
                    expand(a, trips, &mut cur, sites)?;
                    all.extend(cur);
                }
                too_many(all.len(), sites)?;
                *paths = all;
            }
        }
    }
    Ok(())
}

fn too_many(n: usize, sites: &[Site]) -> Result<(), Diagnostic> {
    if n > MAX_PATHS {
        return Err(Diagnostic::error(
            sites[0].loc.clone(),
            format!(
                "verify-named-barriers: more than {MAX_PATHS} paths through the barriers' \
                 branches and loops; not proven (lower 'trips')"
            ),
        ));
    }
    Ok(())
}

/// Warpgroup `w`'s barrier operations along `path`.
/// `tile.barrier` counts `cta` threads.
fn resolve(path: &[usize], sites: &[Site], w: i64, wgs: i64, cta: i64) -> Vec<Ev> {
    path.iter()
        .filter(|&&i| sites[i].only.is_none_or(|k| k == w))
        .map(|&i| {
            let s = &sites[i];
            Ev {
                site: i,
                id: s.id + s.peer.map_or(0, |p| (w + p) % wgs),
                threads: if s.cta { cta } else { s.threads },
                arrive: s.arrive,
            }
        })
        .collect()
}

/// Searches every interleaving of the warpgroups' `evs`; the number of states visited.
fn search(
    evs: &[Vec<Ev>],
    sites: &[Site],
    wg_threads: i64,
    max_states: u64,
    path: &[usize],
    k: &Operation,
) -> Result<u64, Diagnostic> {
    let wgs = evs.len();
    let start = State {
        pos: vec![0; wgs],
        waits: vec![None; wgs],
        phases: BTreeMap::new(),
    };
    let mut seen: HashSet<State> = HashSet::new();
    let mut stack = vec![start];
    while let Some(s) = stack.pop() {
        if !seen.insert(s.clone()) {
            continue;
        }
        if seen.len() as u64 > max_states {
            return Err(Diagnostic::error(
                k.loc.clone(),
                "verify-named-barriers: the kernel's paths need more states than the budget \
                 left ('max_states'); not proven",
            ));
        }
        let runnable: Vec<usize> = (0..wgs)
            .filter(|&w| s.waits[w].is_none() && s.pos[w] < evs[w].len())
            .collect();
        if runnable.is_empty() {
            if s.waits.iter().any(Option::is_some) {
                return Err(deadlock(&s, evs, sites, &k.loc)
                    .with_note(k.loc.clone(), path_note(path, sites)));
            }
            if let Some((id, ph)) = s.phases.iter().next() {
                return Err(Diagnostic::error(
                    sites[ph.first].loc.clone(),
                    format!(
                        "barrier {id} is left with {} of its {} threads arrived at kernel \
                         exit: an arrival nothing waits for",
                        ph.count, ph.threads
                    ),
                )
                .with_note(k.loc.clone(), path_note(path, sites)));
            }
            continue;
        }
        mixing(&s, &runnable, evs, sites, wg_threads, path, k)?;
        for w in runnable {
            let e = evs[w][s.pos[w]];
            let threads = e.threads;
            let mut t = s.clone();
            t.pos[w] += 1;
            let ph = t.phases.entry(e.id).or_insert(Phase {
                threads,
                count: 0,
                arrived: 0,
                first: e.site,
            });
            if ph.threads != threads {
                return Err(Diagnostic::error(
                    sites[e.site].loc.clone(),
                    format!(
                        "warpgroup {w} arrives on barrier {} with a count of {threads} threads \
                         where this phase counts {}",
                        e.id, ph.threads
                    ),
                )
                .with_note(sites[ph.first].loc.clone(), "the phase's first arrival")
                .with_note(k.loc.clone(), path_note(path, sites)));
            }
            if ph.arrived & (1 << w) != 0 {
                return Err(Diagnostic::error(
                    sites[e.site].loc.clone(),
                    format!(
                        "warpgroup {w} arrives on barrier {} again before the barrier \
                         completes (its earlier arrival is in the same phase)",
                        e.id
                    ),
                )
                .with_note(sites[ph.first].loc.clone(), "the phase's first arrival")
                .with_note(k.loc.clone(), path_note(path, sites)));
            }
            ph.arrived |= 1 << w;
            // Counts are multiples of `wg_threads` (`validate`), so a phase fills exactly.
            ph.count += wg_threads;
            if !e.arrive {
                t.waits[w] = Some(e.id);
            }
            if ph.count == ph.threads {
                t.phases.remove(&e.id);
                for x in t.waits.iter_mut() {
                    if *x == Some(e.id) {
                        *x = None;
                    }
                }
            }
            stack.push(t);
        }
    }
    Ok(seen.len() as u64)
}

/// PTX counts a barrier's arrivals by warp: where warpgroups that may arrive on one barrier
/// at the same time bring more threads than its open phase still counts, the phase may
/// complete with some warps of each (and the rest start the next one).
fn mixing(
    s: &State,
    runnable: &[usize],
    evs: &[Vec<Ev>],
    sites: &[Site],
    wg_threads: i64,
    path: &[usize],
    k: &Operation,
) -> Result<(), Diagnostic> {
    let mut at: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for &w in runnable {
        at.entry(evs[w][s.pos[w]].id).or_default().push(w);
    }
    for (id, ws) in at {
        if ws.len() < 2 {
            continue;
        }
        let e = evs[ws[0]][s.pos[ws[0]]];
        let room = s.phases.get(&id).map_or(e.threads, |p| p.threads - p.count);
        let bring = wg_threads * ws.len() as i64;
        if bring > room {
            return Err(Diagnostic::error(
                sites[e.site].loc.clone(),
                format!(
                    "warpgroups {ws:?} may arrive on barrier {id} together with {bring} threads \
                     where its phase has room for {room}: PTX counts arriving warps, so the \
                     phase may complete with some warps of each"
                ),
            )
            .with_note(k.loc.clone(), path_note(path, sites)));
        }
    }
    Ok(())
}

fn deadlock(s: &State, evs: &[Vec<Ev>], sites: &[Site], kernel: &Location) -> Diagnostic {
    let (first, _) = s
        .waits
        .iter()
        .enumerate()
        .find(|(_, x)| x.is_some())
        .expect("a waiting warpgroup");
    let site = |w: usize| evs[w][s.pos[w] - 1].site;
    let id = s.waits[first].unwrap_or(0);
    let ph = s.phases.get(&id);
    let mut d = Diagnostic::error(
        sites[site(first)].loc.clone(),
        format!(
            "deadlock: warpgroup {first} waits on barrier {id} ({} of {} threads arrived), \
             and no warpgroup can move",
            ph.map_or(0, |p| p.count),
            ph.map_or(0, |p| p.threads)
        ),
    );
    for (w, x) in s.waits.iter().enumerate() {
        match x {
            Some(b) if w != first => {
                d = d.with_note(
                    sites[site(w)].loc.clone(),
                    format!("warpgroup {w} waits here, on barrier {b}"),
                );
            }
            None if s.pos[w] == evs[w].len() => {
                d = d.with_note(
                    kernel.clone(),
                    format!("warpgroup {w} has run all its barrier operations"),
                );
            }
            _ => {}
        }
    }
    d
}

fn path_note(path: &[usize], sites: &[Site]) -> String {
    let lines: Vec<String> = path
        .iter()
        .take(24)
        .map(|&i| sites[i].loc.line.to_string())
        .collect();
    format!(
        "on the path through the barrier ops at lines {}{}",
        lines.join(", "),
        if path.len() > 24 { ", ..." } else { "" }
    )
}

/// [`check_kernel`] on every kernel of `m`: the totals, and how many kernels were checked
/// and skipped.
///
/// # Errors
/// Every kernel's first violation.
pub fn check_module(
    m: &Module,
    trips: u64,
    max_states: u64,
) -> Result<(BarrierReport, u64, u64), Diagnostics> {
    let (mut total, mut checked, mut skipped) = (BarrierReport::default(), 0, 0);
    let mut errs = vec![];
    for k in m.kernels() {
        match check_kernel(m, k, trips, max_states) {
            Ok(Some(r)) => {
                checked += 1;
                total.paths += r.paths;
                total.states += r.states;
            }
            Ok(None) => skipped += 1,
            Err(e) => errs.push(e),
        }
    }
    if errs.is_empty() {
        Ok((total, checked, skipped))
    } else {
        Err(Diagnostics(errs))
    }
}

impl Pass for VerifyNamedBarriers {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let (r, checked, skipped) = check_module(m, self.trips, self.max_states)?;
        cx.stat("kernels-checked", checked);
        cx.stat("kernels-skipped", skipped);
        cx.stat("paths", r.paths);
        cx.stat("states", r.states);
        Ok(())
    }
}
