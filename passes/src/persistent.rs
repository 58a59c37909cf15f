//! `persistent` — turn a one-tile-per-CTA kernel into a persistent loop over its tiles.
//!
//! Runs on level-1 IR, before `tile-to-gpu` (which then keeps the shared-memory ring's
//! phases running across tiles). With `dot-kernels-only` (the default pipeline sets it),
//! only kernels in the main-loop form `tile-to-gpu` pipelines
//! ([`crate::tile_to_gpu::pipelines`]) are made persistent; the others are left as they
//! are: one program per CTA, as launched (`tile-assign-layouts` gives them a plain
//! launch). Without it, every schedule also applies to kernels with a plain launch
//! (`tile-assign-layouts` keeps the static tile loop, a `tile.for` over
//! `tile.ctaid`/`tile.nctaid`, and the clc work-stealing loop below; the plain lowering
//! runs the `role = "scheduler"` ops on thread 0 and counts one `per_cta` arrival per warp).
//! The kernel's launch `grid` stays the *tile* grid; the
//! pass adds `schedule` and `group_m` attributes, which the manifest passes on to the
//! launcher.
//!
//! - `schedule=static` (sm_90, sm_90a): the launcher starts min(tiles, SMs × CTAs per SM)
//!   CTAs along x, the SM count read from the device at launch (never a constant); CTA c
//!   runs tiles c, c + nctaid, c + 2·nctaid, … (`tile.for %t = ctaid.x to tiles step
//!   nctaid.x`), so every tile runs exactly once, the ragged last row and column included.
//! - `schedule=none`: one tile per CTA as launched, but tile ids are still remapped to the
//!   grouped order below.
//! - `schedule=clc` (sm_100, sm_100a): Blackwell's `clusterlaunchcontrol.try_cancel` work
//!   stealing (PTX ISA 8.6). The host launches the whole tile grid; a CTA starts with its
//!   own tile (its linearised `ctaid`) and steals not-yet-launched clusters:
//!
//!   ```text
//!   %clc_resp  = tile.smem_alloc : smem<2x4xi32>          // two 16-byte response slots
//!   %clc_full  = tile.mbarrier_alloc {arrive_count = 1}   // response n arrived (16 tx bytes)
//!   %clc_empty = tile.mbarrier_alloc {arrive_count = C, per_cta = true} // slot read by CTAs
//!   %end:2 = tile.while %first, %c0 {tile_loop = true} {
//!   ^bb0(%tile, %n):                                        // n-th tile of this CTA
//!     slot = n mod 2, parity = (n / 2) mod 2
//!     mbarrier_wait %clc_empty, slot, 1 - parity  {role = "scheduler"}  // slot's last reader done
//!     fence_proxy_async                         {role = "scheduler"}  // generic → async
//!     mbarrier_expect_tx %clc_full, slot {bytes = 16, role = "scheduler"}
//!     clc_try_cancel %clc_resp, %clc_full, slot {role = "scheduler"}  // overlaps this tile
//!     … decode %tile into program ids; the kernel body …
//!     mbarrier_wait %clc_full, slot, parity {role = "all"}  // every thread of the CTA
//!     %ok, %x, %y, %z = clc_query %clc_resp, slot {role = "all"}  // one ld.shared.b128
//!     mbarrier_arrive %clc_empty, slot {role = "all"}
//!     tile.yield %ok, linear(%x, %y, %z), n + 1
//!   }
//!   ```
//!
//!   A request is issued only at the top of an iteration, which runs only after the last
//!   response was a success: **no request follows an observed failure**. Two response
//!   slots let the scheduler issue request n + 1 while readers still hold response n. The
//!   tile id reaches every thread because every thread reads the response itself, after
//!   its own wait on the response barrier. `role = "scheduler"` marks what the elected
//!   scheduler thread alone executes; `role = "all"` what every thread executes after the
//!   tile, the producer too (`tile-to-gpu` distributes both).
//!
//!   With `cluster = C > 1` (sm_100a): the kernel gets `cluster = [C, 1, 1]`, grid x is
//!   rounded up to a multiple of C (padding tiles lie out of bounds: their loads read zeros,
//!   their stores are dropped), every CTA arms its own `%clc_full`, only the CTA of cluster
//!   rank 0 waits for the slot to be free and issues the `{multicast = true}` request (one
//!   response, written to every CTA of the cluster), every reader arrives on rank 0's
//!   `%clc_empty` (`{cta = 0}`), and each CTA takes tile (x + rank, y, z) of the cancelled
//!   cluster. The lowering ends such a kernel with a cluster barrier, so no CTA exits
//!   while a multicast response may still be written into it.
//!
//!   With `cluster = X` and `cluster-y = Y` (X · Y ≤ 4; `Options::cluster` on sm_90a):
//!   the kernel gets `cluster = [X, Y, 1]`, and a cluster takes X × Y adjacent tiles, X
//!   along grid dimension 0 and Y along dimension 1. The loop runs over cluster tiles
//!   (dimension 0 divided by X, dimension 1 by Y, rounded up) from `tile.clusterid {dim =
//!   0}` in steps of `tile.nclusterid {dim = 0}`, the same sequence in every CTA of a
//!   cluster; a CTA's program id along d is the cluster tile's times the cluster's size
//!   plus its `tile.cluster_ctaid` along d. The launcher starts (clusters · X, Y, 1) CTAs.
//!   Where the grid does not divide, a cluster's tiles past its edge run with program ids
//!   past it (their loads read zeros, their stores are dropped); a kernel with flag ops is
//!   refused. `tile-to-gpu` then multicasts the copies that are the same across a line of
//!   the cluster.
//!
//! Tile order: linear tile t is decoded to program ids. With `group_m = G > 0` on a grid of
//! 2 or more dimensions, tiles sweep G rows of dimension 1 (M) before moving along
//! dimension 0 (N), so the CTAs in flight share rows of A and columns of B in L2:
//! `group = t / (G·gx)`, `first = group·G`, `rows = min(gy − first, G)`,
//! `pid1 = first + (t mod G·gx) mod rows`, `pid0 = (t mod G·gx) / rows`; dimension 2 (a
//! batch) is outermost. `group_m = 0` is row-major: `pid0 = t mod gx`, `pid1 = (t / gx)
//! mod gy`, `pid2 = t / (gx·gy)`.
//!
//! Every `tile.program_id {dim = d}` becomes the decoded id, every `tile.num_programs`
//! the grid size, both computed from the kernel's grid expressions in the kernel.
//!
//! Options: `schedule` (static), `group_m` (8), `cluster` (1; clc and static), `cluster-y`
//! (1; static only). Statistics:
//! `kernels-made-persistent`.

use crate::pass::{OptionInfo, OptionKind, Pass, PassContext, PassInfo, PassOptions};
use std::collections::HashMap;
use tilec_dialect::{
    Attribute, Block, Diagnostic, Diagnostics, Expr, Location, Module, OpKind, Operation, Type,
    Value,
};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "persistent",
    summary: "Make the kernel a persistent loop over its tiles (static stride), in grouped tile \
        order",
    description: "Wraps the kernel body in a loop over linear tile ids (start ctaid.x, step \
        nctaid.x), decoding each into program ids in grouped order for L2 reuse. The launcher \
        starts min(tiles, SMs x CTAs per SM) CTAs.\n\nExample: tile-opt \
        --persistent='schedule=static group_m=8' examples/gemm_bf16.tile",
    options: &[
        OptionInfo {
            name: "schedule",
            kind: OptionKind::Enum(&["static", "none", "clc"]),
            default: "static",
            help: "static: strided persistent loop; none: one tile per CTA (grouped order only); \
                clc: try_cancel work stealing (sm_100, sm_100a)",
        },
        OptionInfo {
            name: "group_m",
            kind: OptionKind::UInt,
            default: "8",
            help: "Tiles of dimension 1 swept per group (0: row-major order)",
        },
        OptionInfo {
            name: "cluster",
            kind: OptionKind::UInt,
            default: "1",
            help: "CTAs per cluster along x (1, 2 or 4): clc uses the multicast try_cancel \
                (sm_100a); static gives each cluster adjacent tiles along grid dimension 0, \
                whose loads tile-to-gpu multicasts",
        },
        OptionInfo {
            name: "cluster-y",
            kind: OptionKind::UInt,
            default: "1",
            help: "static only: CTAs per cluster along y (1, 2 or 4; x times y at most 4): \
                adjacent tiles along grid dimension 1",
        },
        OptionInfo {
            name: "dot-kernels-only",
            kind: OptionKind::Bool,
            default: "false",
            help: "Leave kernels that tile-to-gpu does not pipeline as they are (the default \
                pipeline sets it: those get a plain launch)",
        },
    ],
};

/// The pass.
pub struct Persistent {
    /// `static`, `none` or `clc`.
    pub schedule: String,
    /// Group size along dimension 1 (0 = off).
    pub group_m: u64,
    /// CTAs per cluster along x (clc, static).
    pub cluster: u64,
    /// CTAs per cluster along y (static only).
    pub cluster_y: u64,
    /// Leave kernels that `tile-to-gpu` does not pipeline alone.
    pub dot_kernels_only: bool,
    /// Test-only: emit a deliberately broken clc protocol (the model test must catch it).
    #[doc(hidden)]
    pub fault: Option<ClcFault>,
}

/// Deliberately broken variants of the clc protocol, for the model test only (no pass
/// option reaches them).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClcFault {
    /// Issue the next request right after reading a response, whatever its outcome.
    RequestAfterFailure,
    /// Readers do not wait on the response barrier before reading.
    MissingBarrierWait,
    /// Read the response with four 32-bit loads.
    NarrowLoads,
    /// Only the scheduler thread reads the response; the other threads never learn the id.
    IdNotBroadcast,
}

impl Persistent {
    /// Build from checked options.
    ///
    /// # Errors
    /// None today; the signature matches the registry.
    pub fn from_options(o: &PassOptions) -> Result<Self, String> {
        let group_m = o.uint("group_m");
        if group_m > 1 << 16 {
            return Err(format!(
                "persistent option 'group_m' must be at most 65536, found {group_m}"
            ));
        }
        let cluster = o.uint("cluster");
        if ![1, 2, 4].contains(&cluster) {
            return Err(format!(
                "persistent option 'cluster' must be 1, 2 or 4, found {cluster}"
            ));
        }
        let cluster_y = o.uint("cluster-y");
        if ![1, 2, 4].contains(&cluster_y) || cluster * cluster_y > 4 {
            return Err(format!(
                "persistent options 'cluster' x 'cluster-y' must be 1, 2 or 4 each and at most 4 \
                 CTAs in all, found {cluster} x {cluster_y}"
            ));
        }
        let schedule = o.get("schedule");
        if cluster * cluster_y > 1 && schedule == "none" {
            return Err(format!(
                "persistent option 'cluster={cluster} cluster-y={cluster_y}' needs schedule=static \
                 or schedule=clc"
            ));
        }
        if cluster_y > 1 && schedule == "clc" {
            return Err(format!(
                "persistent option 'cluster-y={cluster_y}' needs schedule=static (the clc \
                 cluster lies along x)"
            ));
        }
        Ok(Persistent {
            schedule: schedule.to_string(),
            group_m,
            cluster,
            cluster_y,
            dot_kernels_only: o.bool("dot-kernels-only"),
            fault: None,
        })
    }
}

impl Pass for Persistent {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let mut errors = vec![];
        let mut ops = std::mem::take(&mut m.ops);
        for k in &mut ops {
            if k.kind != OpKind::Kernel
                || k.attr("schedule").is_some()
                || k.attr("target").is_some()
                || (self.dot_kernels_only && !crate::tile_to_gpu::pipelines(k))
            {
                continue;
            }
            // The tile loop is one more region around the body.
            let depth = k.region_depth();
            if depth >= tilec_dialect::parser::MAX_NESTING {
                errors.push(Diagnostic::error(
                    k.loc.clone(),
                    format!(
                        "the kernel's regions nest {depth} levels, and the persistent tile loop \
                         would add one past the limit ({}): nest less, or build it without a \
                         persistent schedule (schedule none)",
                        tilec_dialect::parser::MAX_NESTING
                    ),
                ));
                continue;
            }
            match make_persistent(m, k, self) {
                Ok(()) => cx.stat("kernels-made-persistent", 1),
                Err(d) => errors.push(d),
            }
        }
        m.ops = ops;
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Diagnostics(errors))
        }
    }
}

struct Em<'m> {
    m: &'m mut Module,
    ops: Vec<Operation>,
    loc: Location,
    args: HashMap<String, Value>,
}

impl Em<'_> {
    fn one(
        &mut self,
        kind: OpKind,
        operands: &[Value],
        attrs: &[(&str, Attribute)],
        name: &str,
    ) -> Value {
        let mut op = Operation::new(kind, self.loc.clone());
        op.operands = operands.to_vec();
        op.attrs = attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let r = self.m.new_value(Type::INDEX, Some(name.to_string()));
        op.results = vec![r];
        self.ops.push(op);
        r
    }
    fn cst(&mut self, v: i64) -> Value {
        let name = if v < 0 {
            format!("cm{}", v.unsigned_abs())
        } else {
            format!("c{v}")
        };
        self.one(
            OpKind::Constant,
            &[],
            &[("value", Attribute::Int(v))],
            &name,
        )
    }
    fn bin(&mut self, kind: OpKind, a: Value, b: Value, name: &str) -> Value {
        self.one(kind, &[a, b], &[], name)
    }
    /// Emit the value of a grid expression.
    fn expr(&mut self, e: &Expr) -> Result<Value, String> {
        Ok(match e {
            Expr::Int(i) => self.cst(*i),
            Expr::Arg(n) => {
                let a = *self
                    .args
                    .get(n)
                    .ok_or_else(|| format!("grid reads '%{n}', not an argument"))?;
                match self.m.ty(a) {
                    Type::Scalar(s) if *s == tilec_dialect::ScalarType::Index => a,
                    Type::Scalar(s) if s.is_int() && *s != tilec_dialect::ScalarType::I1 => {
                        self.one(OpKind::Convert, &[a], &[], n)
                    }
                    t => return Err(format!("grid reads '%{n}' of type {t}, not an integer")),
                }
            }
            Expr::CeilDiv(a, b) | Expr::Mul(a, b) | Expr::Add(a, b) | Expr::Min(a, b) => {
                let (x, y) = (self.expr(a)?, self.expr(b)?);
                let k = match e {
                    Expr::CeilDiv(..) => OpKind::CeilDiv,
                    Expr::Mul(..) => OpKind::MulI,
                    Expr::Add(..) => OpKind::AddI,
                    _ => OpKind::MinI,
                };
                self.bin(k, x, y, "g")
            }
        })
    }
}

/// Rewrite one kernel in place.
fn make_persistent(m: &mut Module, k: &mut Operation, p: &Persistent) -> Result<(), Diagnostic> {
    let (schedule, group_m) = (p.schedule.as_str(), p.group_m);
    let err = |msg: String| Diagnostic::error(k.loc.clone(), msg);
    let mut grid: Vec<Expr> = k
        .attr("grid")
        .and_then(Attribute::as_array)
        .ok_or_else(|| err("persistent: kernel has no grid".into()))?
        .iter()
        .map(|a| match a {
            Attribute::Int(i) => Ok(Expr::Int(*i)),
            Attribute::Expr(e) => Ok(e.clone()),
            other => Err(err(format!(
                "persistent: grid dimension {other} is not an expression"
            ))),
        })
        .collect::<Result<_, _>>()?;
    let cluster = if schedule == "clc" { p.cluster } else { 1 };
    // A static schedule's cluster: CTAs of tiles adjacent along grid dimensions 0 and 1.
    let (cx, cy) = if schedule == "static" {
        (p.cluster as i64, p.cluster_y as i64)
    } else {
        (1, 1)
    };
    if let Some(c) = k.attr("cluster") {
        return Err(err(format!(
            "persistent: the kernel already has 'cluster = {c}'; the schedule \
                sets the cluster shape itself (cluster=X cluster-y=Y)"
        )));
    }
    if cy > 1 && grid.len() < 2 {
        return Err(err(format!(
            "persistent: a cluster {cx}x{cy} ('cluster-y={cy}') puts adjacent tiles of grid \
                dimension 1 in a cluster, but the grid has one dimension"
        )));
    }
    if cx * cy > 1 && !crate::tile_to_gpu::pipelines(k) {
        return Err(err(format!(
            "persistent: a static cluster ({cx} x {cy}) multicasts the operand copies of a GEMM \
             pipeline (tile-to-gpu's main-loop form); this kernel gets a plain launch, where \
             nothing would be multicast: build it without a cluster"
        )));
    }
    if cx * cy > 1 {
        // A cluster's tiles past the grid's edge run with program ids past it (their loads
        // read zeros, their stores are dropped); a flag indexed by tile would be out of range.
        let mut flag = None;
        k.walk(&mut |o| {
            if flag.is_none()
                && matches!(
                    o.kind,
                    OpKind::WaitFlag | OpKind::ReleaseFlag | OpKind::ArriveFlag
                )
            {
                flag = Some(o.loc.clone());
            }
        });
        if let Some(loc) = flag {
            return Err(Diagnostic::error(
                loc,
                format!(
                    "persistent: a cluster of {cx} x {cy} CTAs runs tiles past the grid's edge \
                     when the grid does not divide; a flag op is not guarded against that: \
                     build this kernel without a cluster"
                ),
            ));
        }
        k.attrs.insert(
            "cluster".into(),
            Attribute::Array(vec![
                Attribute::Int(cx),
                Attribute::Int(cy),
                Attribute::Int(1),
            ]),
        );
    }
    if cluster > 1 {
        // A cluster launch needs grid x divisible by the cluster size: pad it.
        let c = Box::new(Expr::Int(cluster as i64));
        grid[0] = Expr::Mul(
            Box::new(Expr::CeilDiv(Box::new(grid[0].clone()), c.clone())),
            c,
        );
        k.attrs.insert(
            "grid".into(),
            Attribute::Array(grid.iter().cloned().map(Attribute::Expr).collect()),
        );
        k.attrs.insert(
            "cluster".into(),
            Attribute::Array(vec![
                Attribute::Int(cluster as i64),
                Attribute::Int(1),
                Attribute::Int(1),
            ]),
        );
    }
    let body = &k.regions[0];
    let args: HashMap<String, Value> = body
        .args
        .iter()
        .filter_map(|&a| m.name(a).map(|n| (n.to_string(), a)))
        .collect();
    let loc = k.loc.clone();
    let mut em = Em {
        m,
        ops: vec![],
        loc,
        args,
    };
    let gd: Vec<Value> = grid
        .iter()
        .map(|e| em.expr(e))
        .collect::<Result<_, _>>()
        .map_err(|e| err(format!("persistent: {e}")))?;
    // With a static cluster, the loop runs over cluster tiles: the grid in units of the
    // cluster's cx x cy tiles.
    let clustered = cx * cy > 1;
    let gc: Vec<Value> = if clustered {
        let mut gc = gd.clone();
        for (d, c) in [(0, cx), (1, cy)] {
            if c > 1 {
                let cv = em.cst(c);
                gc[d] = em.bin(OpKind::CeilDiv, gd[d], cv, "gc");
            }
        }
        gc
    } else {
        gd.clone()
    };
    let mut ntiles = gc[0];
    for &g in &gc[1..] {
        ntiles = em.bin(OpKind::MulI, ntiles, g, "ntiles");
    }
    let prologue = std::mem::take(&mut em.ops);

    // The tile index: a loop variable (static, clc) or the linearised ctaid (none).
    let mut clc_first = None;
    let (t, loop_head) = if schedule == "static" {
        let mut start = em.one(OpKind::CtaId, &[], &[("dim", Attribute::Int(0))], "cta");
        let mut stride = em.one(OpKind::NumCtas, &[], &[("dim", Attribute::Int(0))], "ncta");
        if clustered {
            // The loop runs over cluster tiles, the same in every CTA of a cluster.
            em.ops.clear();
            start = em.one(
                OpKind::ClusterId,
                &[],
                &[("dim", Attribute::Int(0))],
                "cluster",
            );
            stride = em.one(
                OpKind::NumClusters,
                &[],
                &[("dim", Attribute::Int(0))],
                "nclusters",
            );
        }
        let t = em.m.new_value(Type::INDEX, Some("tile".into()));
        (t, Some((start, stride)))
    } else {
        let ids: Vec<Value> = (0..gd.len())
            .map(|d| {
                em.one(
                    OpKind::CtaId,
                    &[],
                    &[("dim", Attribute::Int(d as i64))],
                    "cta",
                )
            })
            .collect();
        let lin = linearize(&mut em, &ids, &gd);
        if schedule == "clc" {
            clc_first = Some(lin);
            (em.m.new_value(Type::INDEX, Some("tile".into())), None)
        } else {
            (lin, None)
        }
    };
    let head_ops = std::mem::take(&mut em.ops);

    // Decode t into program ids; in a cluster, the CTA's tile within its cluster's.
    let mut pids = decode(&mut em, t, &gc, group_m);
    if clustered {
        for (d, c) in [(0, cx), (1, cy)] {
            if c > 1 {
                let cv = em.cst(c);
                let base = em.bin(OpKind::MulI, pids[d], cv, "cbase");
                let r = em.one(
                    OpKind::ClusterCtaId,
                    &[],
                    &[("dim", Attribute::Int(d as i64))],
                    "crank",
                );
                pids[d] = em.bin(OpKind::AddI, base, r, "pid");
            }
        }
    }
    // In a cluster, a tile past the grid's edge still runs (its copies fill its peers'
    // stages), but its stores must not land: their coordinates become -2^30 there, which
    // is outside every tensor, so the store drops every element.
    let mut edge_guard = None;
    if clustered {
        let i1 = Type::Scalar(tilec_dialect::ScalarType::I1);
        let mut inside: Option<Value> = None;
        for (d, c) in [(0, cx), (1, cy)] {
            if c > 1 {
                let mut op = Operation::new(OpKind::CmpI, em.loc.clone());
                op.operands = vec![pids[d], gd[d]];
                op.attrs
                    .insert("predicate".into(), Attribute::Str("slt".into()));
                let r = em.m.new_value(i1.clone(), Some("in_grid".into()));
                op.results = vec![r];
                em.ops.push(op);
                inside = Some(match inside {
                    None => r,
                    Some(a) => {
                        // a && r
                        let mut op = Operation::new(OpKind::Select, em.loc.clone());
                        let f = em.m.new_value(i1.clone(), Some("in_grid".into()));
                        op.operands = vec![a, r, a];
                        op.results = vec![f];
                        em.ops.push(op);
                        f
                    }
                });
            }
        }
        let far = em.cst(-(1 << 30));
        edge_guard = inside.map(|i| (i, far));
    }
    let decode_ops = std::mem::take(&mut em.ops);

    // Rewrite the body: program ids and grid sizes; drop the return.
    let mut body_ops = std::mem::take(&mut k.regions[0].ops);
    let ret = body_ops
        .pop()
        .expect("verified kernel ends with tile.return");
    // At any depth: a program id read inside a loop or branch is the tile's too.
    let mut repl: HashMap<Value, Value> = HashMap::new();
    fn drop_ids(
        ops: &mut Vec<Operation>,
        pids: &[Value],
        gd: &[Value],
        repl: &mut HashMap<Value, Value>,
    ) {
        ops.retain(|o| match o.kind {
            OpKind::ProgramId | OpKind::NumPrograms => {
                let d = o.int_attr("dim").unwrap_or(0) as usize;
                let v = if o.kind == OpKind::ProgramId {
                    pids.get(d)
                } else {
                    gd.get(d)
                };
                if let Some(&v) = v {
                    repl.insert(o.results[0], v);
                }
                false
            }
            _ => true,
        });
        for o in ops.iter_mut() {
            for r in &mut o.regions {
                drop_ids(&mut r.ops, pids, gd, repl);
            }
        }
    }
    drop_ids(&mut body_ops, &pids, &gd, &mut repl);
    if let Some((inside, far)) = edge_guard {
        guard_stores(em.m, &mut body_ops, inside, far);
    }
    for o in &mut body_ops {
        o.walk_mut(&mut |x| {
            for v in &mut x.operands {
                if let Some(r) = repl.get(v) {
                    *v = *r;
                }
            }
        });
    }
    // The tile loop (static: tile.for; clc: tile.while) or straight-line code (none).
    let mut new_body = prologue;
    new_body.extend(head_ops);
    match (clc_first, loop_head) {
        (Some(first), _) => {
            let mut inner = decode_ops;
            inner.extend(body_ops);
            new_body.extend(clc_loop(
                &mut em,
                k.loc.clone(),
                ret.loc.clone(),
                first,
                t,
                inner,
                &gd,
                cluster,
                p.fault,
            ));
        }
        (None, Some((start, stride))) => {
            let mut inner = decode_ops;
            inner.extend(body_ops);
            inner.push(Operation::new(OpKind::Yield, ret.loc.clone()));
            let mut lp = Operation::new(OpKind::For, k.loc.clone());
            lp.operands = vec![start, ntiles, stride];
            lp.attrs.insert("tile_loop".into(), Attribute::Bool(true));
            lp.regions.push(Block {
                args: vec![t],
                ops: inner,
            });
            new_body.push(lp);
        }
        (None, None) => {
            new_body.extend(decode_ops);
            new_body.extend(body_ops);
        }
    }
    new_body.push(ret);
    k.regions[0].ops = new_body;
    k.attrs
        .insert("schedule".into(), Attribute::Str(schedule.to_string()));
    k.attrs
        .insert("group_m".into(), Attribute::Int(group_m as i64));
    Ok(())
}

/// Moves every `tile.store` and `tile.atomic_add` in `ops` (at any depth) out of bounds
/// where `inside` is false: each coordinate becomes `select(inside, c, far)`.
fn guard_stores(m: &mut Module, ops: &mut Vec<Operation>, inside: Value, far: Value) {
    let mut out = Vec::with_capacity(ops.len());
    for mut o in std::mem::take(ops) {
        for r in &mut o.regions {
            guard_stores(m, &mut r.ops, inside, far);
        }
        if matches!(o.kind, OpKind::Store | OpKind::AtomicAdd) && o.operands.len() >= 3 {
            // The coordinates: one per tensor dimension (a mask and the value follow).
            let rank = match m.try_ty(o.operands[0]) {
                Some(Type::Tensor { rank, .. }) => *rank as usize,
                _ => o.operands.len() - 2,
            };
            for i in 1..=rank.min(o.operands.len() - 2) {
                let c = o.operands[i];
                let mut sel = Operation::new(OpKind::Select, o.loc.clone());
                let v = m.new_value(Type::INDEX, Some("edge".into()));
                sel.operands = vec![inside, c, far];
                sel.results = vec![v];
                out.push(sel);
                o.operands[i] = v;
            }
        }
        out.push(o);
    }
    *ops = out;
}

/// Linear id `x + y·gx + z·gx·gy` of grid position `ids` on grid `gd`.
fn linearize(em: &mut Em, ids: &[Value], gd: &[Value]) -> Value {
    let mut lin = ids[0];
    let mut scale = gd[0];
    for d in 1..ids.len() {
        let o = em.bin(OpKind::MulI, ids[d], scale, "lin");
        lin = em.bin(OpKind::AddI, lin, o, "tile");
        if d + 1 < ids.len() {
            scale = em.bin(OpKind::MulI, scale, gd[d], "scale");
        }
    }
    lin
}

/// Emit one op with `role` (see the module doc) and optional results.
fn role_op(
    em: &mut Em,
    kind: OpKind,
    operands: &[Value],
    attrs: &[(&str, Attribute)],
    role: Option<&str>,
    results: &[(Type, &str)],
) -> Vec<Value> {
    let mut op = Operation::new(kind, em.loc.clone());
    op.operands = operands.to_vec();
    op.attrs = attrs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    if let Some(r) = role {
        op.attrs.insert("role".into(), Attribute::Str(r.into()));
    }
    op.results = results
        .iter()
        .map(|(t, n)| em.m.new_value(t.clone(), Some(n.to_string())))
        .collect();
    let r = op.results.clone();
    em.ops.push(op);
    r
}

/// `tile.if %cond {role = "scheduler"}` whose then-region holds what `then` emits (and an
/// empty else-region).
fn scheduler_if(em: &mut Em, cond: Value, then: &mut dyn FnMut(&mut Em)) {
    let before = std::mem::take(&mut em.ops);
    then(em);
    let ops = std::mem::replace(&mut em.ops, before);
    let mut op = Operation::if_then(cond, ops, em.loc.clone());
    op.attrs
        .insert("role".into(), Attribute::Str("scheduler".into()));
    em.ops.push(op);
}

/// The clc work-stealing loop (module doc): allocations, then `tile.while` over the
/// CTA's tiles starting at `first`, running `body` (which reads the tile as `t`).
#[allow(clippy::too_many_arguments)]
fn clc_loop(
    em: &mut Em,
    loc: Location,
    yield_loc: Location,
    first: Value,
    t: Value,
    body: Vec<Operation>,
    gd: &[Value],
    cluster: u64,
    fault: Option<ClcFault>,
) -> Vec<Operation> {
    let saved = std::mem::take(&mut em.ops);
    let resp_ty = Type::Smem {
        stages: 2,
        shape: vec![4],
        elem: tilec_dialect::ScalarType::I32,
    };
    let resp = role_op(
        em,
        OpKind::SmemAlloc,
        &[],
        &[],
        None,
        &[(resp_ty, "clc_resp")],
    )[0];
    let full = role_op(
        em,
        OpKind::MbarrierAlloc,
        &[],
        &[("arrive_count", Attribute::Int(1))],
        None,
        &[(Type::Mbarrier { count: 2 }, "clc_full")],
    )[0];
    let empty = role_op(
        em,
        OpKind::MbarrierAlloc,
        &[],
        &[
            ("arrive_count", Attribute::Int(cluster as i64)),
            ("per_cta", Attribute::Bool(true)),
        ],
        None,
        &[(Type::Mbarrier { count: 2 }, "clc_empty")],
    )[0];
    let (c0, c1, c2) = (em.cst(0), em.cst(1), em.cst(2));
    let rank = (cluster > 1).then(|| em.one(OpKind::ClusterCtaRank, &[], &[], "rank"));
    let mut out = std::mem::take(&mut em.ops);

    let n = em.m.new_value(Type::INDEX, Some("n".into()));
    let slot = em.bin(OpKind::RemI, n, c2, "slot");
    let round = em.bin(OpKind::DivI, n, c2, "round");
    let parity = em.bin(OpKind::RemI, round, c2, "parity");
    let free = em.bin(OpKind::SubI, c1, parity, "free_parity");
    // The request for this iteration's successor: rank 0 (or the only CTA) waits for the
    // slot's last readers, fences, and issues; every CTA arms its own barrier.
    let request = |em: &mut Em, slot: Value, free: Value| {
        let multicast: &[(&str, Attribute)] = if cluster > 1 {
            &[("multicast", Attribute::Bool(true))]
        } else {
            &[]
        };
        let arm = |em: &mut Em| {
            role_op(
                em,
                OpKind::MbarrierExpectTx,
                &[full, slot],
                &[("bytes", Attribute::Int(16))],
                Some("scheduler"),
                &[],
            );
        };
        match rank {
            None => {
                role_op(
                    em,
                    OpKind::MbarrierWait,
                    &[empty, slot, free],
                    &[],
                    Some("scheduler"),
                    &[],
                );
                role_op(
                    em,
                    OpKind::FenceProxyAsync,
                    &[],
                    &[],
                    Some("scheduler"),
                    &[],
                );
                arm(em);
                role_op(
                    em,
                    OpKind::ClcTryCancel,
                    &[resp, full, slot],
                    multicast,
                    Some("scheduler"),
                    &[],
                );
            }
            Some(rank) => {
                let lead = role_op(
                    em,
                    OpKind::CmpI,
                    &[rank, c0],
                    &[("predicate", Attribute::Str("eq".into()))],
                    None,
                    &[(Type::I1, "lead")],
                )[0];
                scheduler_if(em, lead, &mut |em| {
                    role_op(
                        em,
                        OpKind::MbarrierWait,
                        &[empty, slot, free],
                        &[],
                        Some("scheduler"),
                        &[],
                    );
                    role_op(
                        em,
                        OpKind::FenceProxyAsync,
                        &[],
                        &[],
                        Some("scheduler"),
                        &[],
                    );
                });
                arm(em);
                scheduler_if(em, lead, &mut |em| {
                    role_op(
                        em,
                        OpKind::ClcTryCancel,
                        &[resp, full, slot],
                        multicast,
                        Some("scheduler"),
                        &[],
                    );
                });
            }
        }
    };
    if fault != Some(ClcFault::RequestAfterFailure) {
        request(em, slot, free);
    } else {
        // Broken: the first request at the top of iteration 0 only; the others go out
        // right after each read (below), whatever the response said.
        let is_first = role_op(
            em,
            OpKind::CmpI,
            &[n, c0],
            &[("predicate", Attribute::Str("eq".into()))],
            None,
            &[(Type::I1, "first_iter")],
        )[0];
        scheduler_if(em, is_first, &mut |em| request(em, slot, free));
    }
    let mut inner = std::mem::take(&mut em.ops);
    inner.extend(body);
    // After the tile: every thread reads the response and releases the slot.
    let reader = if fault == Some(ClcFault::IdNotBroadcast) {
        "scheduler"
    } else {
        "all"
    };
    if fault != Some(ClcFault::MissingBarrierWait) {
        role_op(
            em,
            OpKind::MbarrierWait,
            &[full, slot, parity],
            &[],
            Some(reader),
            &[],
        );
    }
    let mut qattrs = vec![];
    if fault == Some(ClcFault::NarrowLoads) {
        qattrs.push(("load_bits", Attribute::Int(32)));
    }
    let q = role_op(
        em,
        OpKind::ClcQuery,
        &[resp, slot],
        &qattrs,
        Some(reader),
        &[
            (Type::I1, "ok"),
            (Type::INDEX, "next_x"),
            (Type::INDEX, "next_y"),
            (Type::INDEX, "next_z"),
        ],
    );
    let mut aattrs = vec![];
    if cluster > 1 {
        aattrs.push(("cta", Attribute::Int(0)));
    }
    role_op(
        em,
        OpKind::MbarrierArrive,
        &[empty, slot],
        &aattrs,
        Some(reader),
        &[],
    );
    let mut ids = q[1..=gd.len()].to_vec();
    if let Some(rank) = rank {
        ids[0] = em.bin(OpKind::AddI, ids[0], rank, "next_x");
    }
    let next = linearize(em, &ids, gd);
    let n1 = em.bin(OpKind::AddI, n, c1, "n_next");
    if fault == Some(ClcFault::RequestAfterFailure) {
        // Broken: the next request goes out right after the read, whatever `ok` said (the
        // first one before the loop).
        let s1 = em.bin(OpKind::RemI, n1, c2, "slot");
        let r1 = em.bin(OpKind::DivI, n1, c2, "round");
        let p1 = em.bin(OpKind::RemI, r1, c2, "parity");
        let f1 = em.bin(OpKind::SubI, c1, p1, "free_parity");
        request(em, s1, f1);
    }
    // Everything after the tile is executed by every thread (role "all") unless it is the
    // scheduler's alone.
    for o in &mut em.ops {
        o.attrs
            .entry("role".into())
            .or_insert_with(|| Attribute::Str("all".into()));
    }
    inner.extend(std::mem::take(&mut em.ops));
    let mut y = Operation::new(OpKind::Yield, yield_loc);
    y.operands = vec![q[0], next, n1];
    inner.push(y);
    let mut lp = Operation::new(OpKind::While, loc);
    lp.operands = vec![first, c0];
    lp.attrs.insert("tile_loop".into(), Attribute::Bool(true));
    lp.results = vec![
        em.m.new_value(Type::INDEX, Some("last_tile".into())),
        em.m.new_value(Type::INDEX, Some("tiles_done".into())),
    ];
    lp.regions.push(Block {
        args: vec![t, n],
        ops: inner,
    });
    out.push(lp);
    em.ops = saved;
    out
}

/// Program ids of linear tile `t` on grid `gd` (see the module doc for the order).
fn decode(em: &mut Em, t: Value, gd: &[Value], group_m: u64) -> Vec<Value> {
    match gd.len() {
        1 => vec![t],
        _ => {
            let plane = em.bin(OpKind::MulI, gd[0], gd[1], "plane");
            let (t2, z) = if gd.len() == 3 {
                (
                    em.bin(OpKind::RemI, t, plane, "t2"),
                    Some(em.bin(OpKind::DivI, t, plane, "pid2")),
                )
            } else {
                (t, None)
            };
            let (p0, p1) = if group_m > 0 {
                let g = em.cst(group_m as i64);
                let per_group = em.bin(OpKind::MulI, g, gd[0], "per_group");
                let group = em.bin(OpKind::DivI, t2, per_group, "group");
                let first = em.bin(OpKind::MulI, group, g, "first");
                let left = em.bin(OpKind::SubI, gd[1], first, "left");
                let rows = em.bin(OpKind::MinI, left, g, "rows");
                let in_group = em.bin(OpKind::RemI, t2, per_group, "in_group");
                let r = em.bin(OpKind::RemI, in_group, rows, "r");
                let p1 = em.bin(OpKind::AddI, first, r, "pid1");
                let p0 = em.bin(OpKind::DivI, in_group, rows, "pid0");
                (p0, p1)
            } else {
                let p0 = em.bin(OpKind::RemI, t2, gd[0], "pid0");
                let q = em.bin(OpKind::DivI, t2, gd[0], "q");
                let p1 = em.bin(OpKind::RemI, q, gd[1], "pid1");
                (p0, p1)
            };
            let mut v = vec![p0, p1];
            v.extend(z);
            v
        }
    }
}
