//! `tile-simplify` — equality saturation over the pure tile ops with `egg`, extraction
//! with a GPU cost model, and loop-aware hoisting.
//!
//! Frontends hand us naive tile programs: transposes an MMA could absorb, conversions that
//! cancel, scalings inside the K loop that belong in the epilogue, separate adds that are
//! an accumulate. Each block becomes an e-graph ([`region`]), the rules of [`rules`] run
//! to saturation or to the limits, and the cheapest equivalent ([`cost`]) is written back.
//! Then loop-invariant ops leave their loops and scales of dot operands leave the K loop
//! ([`rules::hoist`]), and the blocks are simplified once more.
//!
//! ```text
//! %b1 = tile.transpose %b : tile<256x64xbf16>
//! %b2 = tile.transpose %b1 : tile<64x256xbf16>
//! %p = tile.dot %a, %b2, %zero : tile<128x256xf32>
//! %d = tile.add %c, %p : tile<128x256xf32>
//! tile.yield %d
//!     ⇒
//! %d = tile.dot %a, %b, %c : tile<128x256xf32>
//! tile.yield %d
//! ```
//!
//! **Results are kept bit for bit**: every e-graph rule is exact under the semantics of
//! the reference interpreter ([`tilec_dialect::interp`]); moving a power-of-two scale out
//! of a loop is exact barring overflow and underflow; anything exact only up to rounding
//! needs `reassociate=true`. Kernels that already hold GPU-level ops, or are laid out (a
//! `target`), are left alone.
//!
//! **Deterministic**: egg runs with deterministic hash maps, extraction breaks ties by a
//! total order, and the default limits count e-nodes and iterations, so the same input
//! gives the same bytes on any machine under any load. A wall-clock limit exists only as
//! the explicit option `time-limit-ms`; output is then deterministic only while it does
//! not fire.
//!
//! Options: `node-limit` (10000), `iter-limit` (30), `time-limit-ms` (0 = none, per
//! region), `reassociate` (false), `default-trip-count` (64).
//!
//! Statistics: `regions`, `regions-rewritten`, `egraph-nodes`, `egraph-classes`,
//! `iterations`, `stop-saturated`, `stop-iteration-limit`, `stop-node-limit`,
//! `stop-time-limit`, `rules-fired`, `cost-before`, `cost-after`, then one
//! `fired.<rule>` per rule that fired.

pub mod cost;
pub mod lang;
pub mod region;
pub mod rules;

use crate::pass::{OptionInfo, OptionKind, Pass, PassContext, PassInfo, PassOptions};
use std::collections::BTreeMap;
use std::time::Duration;
use tilec_dialect::{Block, Diagnostics, Module, OpClass, OpKind};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "tile-simplify",
    summary: "Simplify tile programs by equality saturation (egg) with a GPU cost model",
    description:
        "Builds an e-graph of each block's pure float ops (loads, stores, loops and index \
            arithmetic stay as they are), applies exact rewrite rules (algebra, layout, precision, \
            fusion), extracts the cheapest program under a cost model that weighs loop bodies by \
            their trip count and shared-memory round trips above register ops, and hoists \
            loop-invariant ops and power-of-two scales of dot operands out of K \
            loops.\n\nExample: tile-opt --tile-simplify \
            examples/frontend_naive_gemm.tile",
    options: &[
        OptionInfo {
            name: "node-limit",
            kind: OptionKind::UInt,
            default: "10000",
            help: "Most e-nodes per region's e-graph",
        },
        OptionInfo {
            name: "iter-limit",
            kind: OptionKind::UInt,
            default: "30",
            help: "Most rule iterations per region",
        },
        OptionInfo {
            name: "time-limit-ms",
            kind: OptionKind::UInt,
            default: "0",
            help: "Most milliseconds per region; 0: none (a limit that fires makes the output \
                depend on the machine's load)",
        },
        OptionInfo {
            name: "reassociate",
            kind: OptionKind::Bool,
            default: "false",
            help:
                "Allow rewrites exact only up to rounding (any loop-invariant scale moves out of \
                    the K loop)",
        },
        OptionInfo {
            name: "default-trip-count",
            kind: OptionKind::UInt,
            default: "64",
            help: "Trip count the cost model assumes for loops with non-constant bounds",
        },
    ],
};

/// The options of one run.
#[derive(Clone, Copy, Debug)]
pub struct SimplifyOptions {
    /// The runner's limits per region.
    pub limits: region::Limits,
    /// Allow rewrites that hold only up to rounding.
    pub reassociate: bool,
    /// Trip count of loops with unknown bounds.
    pub default_trip: u64,
}

impl Default for SimplifyOptions {
    fn default() -> Self {
        SimplifyOptions {
            limits: region::Limits {
                nodes: 10_000,
                iterations: 30,
                time: None,
            },
            reassociate: false,
            default_trip: cost::DEFAULT_TRIP_COUNT,
        }
    }
}

impl SimplifyOptions {
    /// From checked pass options.
    pub fn from_options(o: &PassOptions) -> Self {
        SimplifyOptions {
            limits: region::Limits {
                nodes: o.uint("node-limit") as usize,
                iterations: o.uint("iter-limit") as usize,
                time: Some(o.uint("time-limit-ms"))
                    .filter(|&ms| ms > 0)
                    .map(Duration::from_millis),
            },
            reassociate: o.bool("reassociate"),
            default_trip: o.uint("default-trip-count"),
        }
    }
}

/// What a run did (the pass statistics).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Blocks turned into an e-graph.
    pub regions: u64,
    /// Blocks rewritten (the extracted program was cheaper).
    pub regions_rewritten: u64,
    /// E-nodes at the end of each run, summed.
    pub nodes: u64,
    /// E-classes at the end of each run, summed.
    pub classes: u64,
    /// Rule iterations, summed.
    pub iterations: u64,
    /// Runs that saturated.
    pub stop_saturated: u64,
    /// Runs stopped by the iteration limit.
    pub stop_iteration_limit: u64,
    /// Runs stopped by the node limit.
    pub stop_node_limit: u64,
    /// Runs stopped by the time limit.
    pub stop_time_limit: u64,
    /// Runs stopped otherwise.
    pub stop_other: u64,
    /// Times each rule fired (e-graph rules: new matches applied; hoisting: rewrites).
    pub fired: BTreeMap<String, u64>,
    /// Weighted cost of the module before.
    pub cost_before: u64,
    /// Weighted cost of the module after.
    pub cost_after: u64,
}

/// The pass.
pub struct TileSimplify {
    /// Its options.
    pub options: SimplifyOptions,
}

fn simplify_tree(
    m: &mut Module,
    b: &mut Block,
    rules: &[rules::Rewrite],
    o: &SimplifyOptions,
    stats: &mut Stats,
) -> bool {
    let mut changed = region::simplify_block(m, b, rules, &o.limits, stats);
    for op in &mut b.ops {
        for r in &mut op.regions {
            changed |= simplify_tree(m, r, rules, o, stats);
        }
    }
    changed
}

/// Simplify every level-1 kernel of `m`.
pub fn simplify(m: &mut Module, o: &SimplifyOptions) -> Stats {
    // egg reads the time through `quanta`, whose first reading calibrates the TSC against
    // the OS clock for 10 ms or more: longer than simplifying a kernel. A frozen mock clock
    // skips that; the `time-limit-ms` option is measured with `std::time` instead (see
    // `region::run_egg`).
    let (clock, _frozen) = quanta::Clock::mock();
    quanta::with_clock(&clock, || simplify_kernels(m, o))
}

fn simplify_kernels(m: &mut Module, o: &SimplifyOptions) -> Stats {
    let mut stats = Stats {
        cost_before: cost::module_cost(m, o.default_trip),
        ..Stats::default()
    };
    let rules = rules::all();
    let mut kernels = std::mem::take(&mut m.ops);
    for k in &mut kernels {
        let mut gpu_level = false;
        k.walk(&mut |op| {
            gpu_level |= op.kind.class() == OpClass::Gpu || op.kind == OpKind::WarpSpecialize
        });
        // Laid-out kernels (a `target`) too: the rewrites build tiles without layouts.
        if k.kind != OpKind::Kernel || gpu_level || k.attr("target").is_some() {
            continue;
        }
        let Some(body) = k.regions.first_mut() else {
            continue;
        };
        simplify_tree(m, body, rules, o, &mut stats);
        let consts = cost::int_constants(k);
        let defs = rules::hoist::Defs::of(k);
        let body = &mut k.regions[0];
        let mut cx = rules::hoist::HoistContext {
            consts: &consts,
            default_trip: o.default_trip,
            reassociate: o.reassociate,
            fired: &mut stats.fired,
        };
        let mut hoisted = rules::hoist::hoist_invariants(m, body, &mut cx);
        let mut cx = rules::hoist::HoistContext {
            consts: &consts,
            default_trip: o.default_trip,
            reassociate: o.reassociate,
            fired: &mut stats.fired,
        };
        hoisted |= rules::hoist::hoist_scales(m, body, &defs, &mut cx);
        if hoisted {
            simplify_tree(m, body, rules, o, &mut stats);
        }
    }
    m.ops = kernels;
    stats.cost_after = cost::module_cost(m, o.default_trip);
    stats
}

impl Pass for TileSimplify {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let s = simplify(m, &self.options);
        cx.stat("regions", s.regions);
        cx.stat("regions-rewritten", s.regions_rewritten);
        cx.stat("egraph-nodes", s.nodes);
        cx.stat("egraph-classes", s.classes);
        cx.stat("iterations", s.iterations);
        cx.stat("stop-saturated", s.stop_saturated);
        cx.stat("stop-iteration-limit", s.stop_iteration_limit);
        cx.stat("stop-node-limit", s.stop_node_limit);
        cx.stat("stop-time-limit", s.stop_time_limit);
        cx.stat("rules-fired", s.fired.values().sum());
        cx.stat("cost-before", s.cost_before);
        cx.stat("cost-after", s.cost_after);
        for (name, n) in &s.fired {
            cx.stat(&format!("fired.{name}"), *n);
        }
        Ok(())
    }
}
