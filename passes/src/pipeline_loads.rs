//! `tile-pipeline-loads` — a loop's loads that only feed shared memory become TMA copies
//! into a ring, issued `stages - 1` iterations ahead of the iteration that reads them.
//!
//! Software pipelining of a kernel with a plain launch (laid out by `tile-assign-layouts`;
//! no `tile.warp_specialize`). It takes what `tile-dot-to-wgmma` leaves in a loop body:
//!
//! ```text
//! %x = tile.load %T, %i0, ..., %iv_expr, ...  // [1, ..., 1, R, C]
//! %y = tile.reshape %x                        // any reshapes and layout conversions
//! tile.smem_store %y, %buf, %c0               // %buf: one stage, swizzle = 128
//! tile.fence_proxy_async
//! tile.barrier
//! ... tile.mma ..., %buf, %c0, ...            // the only other readers of %buf
//! ```
//!
//! and makes `%buf` a ring of `stages` stages filled by `cp.async.bulk.tensor` (TMA), whose
//! completion each iteration awaits on an mbarrier of its own stage:
//!
//! ```text
//! %full = tile.mbarrier_alloc {arrive_count = 1} : mbarrier<S>  // before the loop
//! tile.if (lb + j·step < ub) {                // j = 0 .. S-2: the prologue
//!   tile.mbarrier_expect_tx %full, j {bytes = R·C·size}
//!   tile.tma_load %T, %buf, %full, j, <coordinates at iv = lb + j·step>
//! }
//! tile.for %iv = lb to ub step step {
//!   %i = (iv - lb) / step;  %stage = i mod S;  %phase = (i / S) mod 2
//!   tile.if (iv + (S-1)·step < ub) {          // the copy for iteration i + S - 1
//!     tile.mbarrier_expect_tx %full, (i + S - 1) mod S {bytes = ...}
//!     tile.tma_load %T, %buf, %full, (i + S - 1) mod S, <coordinates at iv + (S-1)·step>
//!   }
//!   tile.mbarrier_wait %full, %stage, %phase
//!   ... tile.mma ..., %buf, %stage, ...
//! }
//! ```
//!
//! The copy for iteration `i + S - 1` overwrites the stage iteration `i - 1` read:
//! `async-wait-placement` retires the wgmma groups that read it before the copy (an
//! overwrite hazard, [`crate::async_model`]), with a CTA barrier where several warpgroups
//! read it. The lowering issues the expect_tx and the copy from one thread
//! (PTX ISA §9.7.9.25, `cp.async.bulk.tensor`; §9.7.13.15, mbarrier).
//!
//! A load is pipelined when:
//! - it is directly in the body of a `tile.for`, and its value reaches only the
//!   `tile.smem_store` (through `tile.reshape` / `tile.convert_layout`, each used once);
//! - its tile is `[1, ..., 1, R, C]` with `[R, C]` the buffer's stage (R ≤ 256, the TMA box
//!   limit), C spans whole 128-byte rows, and it reads zeros outside the tensor (no
//!   `padding`): TMA's out-of-bounds fill;
//! - the tensor is a kernel argument of rank 2 to 5 that the kernel never writes, and every
//!   load of it is pipelined with the same box (one tensor map per tensor);
//! - the buffer is one `tile.smem_alloc` stage read only by `tile.mma` ops directly in the
//!   loop body after the store (so each iteration's wgmma, which the copy overwriting its
//!   stage waits for, orders every thread's barrier wait before that copy re-arms the
//!   barrier), and the store's fence and barrier are its own (no store before it);
//! - its coordinates are computed from the induction variable, values defined outside the
//!   loop, and scalar integer ops in the body (so they can be computed for a later iteration);
//! - the loop holds no flag op (`tile.wait_flag`, `tile.arrive_flag`, `tile.release_flag`):
//!   a copy issued ahead would cross it.
//!
//! The mbarriers are allocated (and initialised) right before the loop, so a loop run again
//! (the tile loop of a persistent kernel around it) starts from phase 0. A tensor whose
//! loads are pipelined is passed as a `CUtensorMap` (the manifest's `tensor_map` parameter):
//! TMA needs its base 16-byte aligned and its strides multiples of 16 bytes.
//!
//! **`warp-specialize`.** The copies leave the consumers' loop for a producer warpgroup's
//! (region 0 of a `tile.warp_specialize` whose region 1 is the rest of the kernel; `block`
//! gains 128 threads, `num_warps` stays the consumers'):
//!
//! ```text
//! %full = tile.mbarrier_alloc {arrive_count = 1} : mbarrier<S>   // per ring, before the
//! %empty = tile.mbarrier_alloc {arrive_count = W} : mbarrier<S>  // split; W: num_warps
//! tile.warp_specialize {consumers = W / 4} {
//!   tile.for %j = lb to ub step step {          // the producer: the same iterations
//!     tile.mbarrier_wait %empty, %stage, 1 - %phase   // released (passes in round 0)
//!     tile.mbarrier_expect_tx %full, %stage {bytes = ...}
//!     tile.tma_load %T, %buf, %full, %stage, <coordinates at %j>
//!   }
//! } {
//!   ... tile.for %iv ... {                      // the consumers
//!     tile.mbarrier_wait %full, %stage, %phase
//!     ... tile.mma ..., %buf, %stage, ...
//!     tile.mbarrier_arrive %empty, %stage       // or the previous stage, see below
//!   }
//! }
//! ```
//!
//! A stage is released before the first op of the body that needs a result of its readers
//! (a wgmma that only accumulates into another passes the need on): there the readers'
//! groups must have retired anyway, so the release adds no wait. Where that op is only in
//! the next iteration (the value is loop-carried, as attention's O), the previous
//! iteration's stage is released there, after the first trip (`tile.if lb < iv`); where no
//! op needs it (a GEMM's accumulator), the previous stage at the end of the body.
//! `async-wait-placement` puts the waits before the releases. The scalar ops the producer
//! needs (the bounds, the coordinates' values from outside the loop) are computed again in
//! region 0. It applies to a kernel with 1 to 3 whole consumer warpgroups whose loads are
//! pipelined in one loop directly in its body, or directly in the body of a static
//! persistent tile loop there (`tile.for {tile_loop = true}`), with no cluster, role or flag
//! op, and whose bounds and coordinates come from kernel arguments, the tile loop's
//! induction variable and scalar integer ops; otherwise the loop is pipelined as above and
//! a remark says why. In the persistent form the producer runs the same tile loop (with the
//! tile body's scalar ops it needs computed again), and both tile loops carry the ring
//! iterations of the earlier tiles, `n`, from 0: each role's iteration number is `n + (iv -
//! lb) / step`, so that the rings' stages and phases run on across tiles, and the tile adds
//! `ceildiv(max(ub - lb, 0), step)`. The stage that the loop's last iteration holds (a ring
//! whose release waits for the next iteration) is released after the loop where the loop
//! ran: the producer may then fill the next tile's first stages while the consumers finish
//! this tile's epilogue. With `mma-lookahead`, a wgmma issued
//! ahead waits on the next stage's full barrier (stage and parity from `i + 1`) and its
//! ring's stage is released where the carried result is first needed.
//!
//! **`mma-lookahead`.** A wgmma of the body that reads only rings it alone reads and
//! loop-invariant operands (attention's Q·Kᵀ) is issued one iteration ahead: iteration 0's
//! before the loop, iteration `i + 1`'s in iteration `i`, its result carried. The next
//! issue goes before the first other wgmma after this iteration's last read of the result
//! (before P·V), or at the end of the body: one accumulator of it is live at a time, so
//! nothing copies an accumulator in flight at the back edge (ptxas would wait there itself,
//! C7517, and serialize the wgmmas, C7511). The A fragment of each register-A wgmma that the
//! body defines (P) is carried too, so that the wgmma may stay in flight across the back
//! edge: `async-wait-placement` then retires P·V where the next iteration writes P again,
//! and the next softmax runs under it.
//!
//! Options: `stages` (2 to 8, default 2), `mma-lookahead` (default false), `warp-specialize`
//! (default false). Statistics: `loads-pipelined`, `mmas-issued-ahead`,
//! `kernels-warp-specialized`. Remarks, at the kernel: why `warp-specialize` did not apply,
//! and that a kernel with wgmma but no loop to stage makes `warp-specialize` and
//! `mma-lookahead` change nothing.

use crate::pass::{OptionInfo, OptionKind, Pass, PassContext, PassInfo, PassOptions};
use std::collections::{HashMap, HashSet};
use tilec_dialect::{
    Attribute, Block, Diagnostic, Diagnostics, Location, Module, OpClass, OpKind, Operation, Type,
    Value,
};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "tile-pipeline-loads",
    summary: "Turn a loop's loads staged into shared memory into a TMA ring filled ahead",
    description: "In a laid-out kernel, a 'tile.load' in a 'tile.for' body whose value is only \
        stored into a one-stage shared-memory buffer (as 'tile-dot-to-wgmma' stages wgmma \
        operands) becomes a 'tile.tma_load' into a ring of 'stages' stages, issued stages - 1 \
        iterations ahead, with an mbarrier per stage that the reading iteration waits on. The \
        tensor becomes a tensor map. Run 'async-wait-placement' after it.\n\n\
        Example: tile-opt --pass-pipeline='tile-assign-layouts{target=sm_90a},\
        tile-dot-to-wgmma,dce,tile-pipeline-loads{stages=2},async-wait-placement' \
        examples/attention_fwd.tile",
    options: &[
        OptionInfo {
            name: "stages",
            kind: OptionKind::UInt,
            default: "2",
            help: "Ring depth, 2 to 8: copies run up to stages - 1 iterations ahead",
        },
        OptionInfo {
            name: "mma-lookahead",
            kind: OptionKind::Bool,
            default: "false",
            help: "Issue a wgmma that reads only rings and loop-invariant operands one \
                iteration ahead of its uses, carrying its result (FlashAttention-3's \
                intra-warpgroup overlap)",
        },
        OptionInfo {
            name: "warp-specialize",
            kind: OptionKind::Bool,
            default: "false",
            help: "Issue the copies from a producer warpgroup of their own \
                ('tile.warp_specialize'), which waits on an empty mbarrier per stage that \
                the consumer warps release, instead of from the consumers ahead of their reads",
        },
    ],
};

/// The largest TMA box dimension, in elements (PTX ISA §5.5.1, tensor-map box size).
const MAX_BOX: u64 = 256;

/// Bytes of one 128-byte-swizzled row: a stage's rows span whole ones.
const SWIZZLE_BYTES: u64 = 128;

/// The pass.
pub struct PipelineLoads {
    /// Ring depth.
    pub stages: u64,
    /// Whether wgmmas that qualify are issued one iteration ahead (see the module docs).
    pub mma_lookahead: bool,
    /// Whether the copies are issued from a producer warpgroup (see the module docs).
    pub warp_specialize: bool,
}

impl PipelineLoads {
    /// From the pass options.
    ///
    /// # Errors
    /// `stages` outside 2 to 8.
    pub fn from_options(o: &PassOptions) -> Result<Self, String> {
        let stages = o.uint("stages");
        if !(2..=8).contains(&stages) {
            return Err(format!(
                "tile-pipeline-loads option 'stages' must be 2 to 8, found {stages}"
            ));
        }
        let (mma_lookahead, warp_specialize) = (o.bool("mma-lookahead"), o.bool("warp-specialize"));
        Ok(PipelineLoads {
            stages,
            mma_lookahead,
            warp_specialize,
        })
    }
}

impl Pass for PipelineLoads {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let mut kernels = std::mem::take(&mut m.ops);
        let (mut n, mut ahead, mut specialized_kernels) = (0, 0, 0);
        for k in &mut kernels {
            if k.kind != OpKind::Kernel || k.regions.is_empty() || k.int_attr("num_warps").is_none()
            {
                continue;
            }
            let mut specialized = false;
            k.walk(&mut |o| specialized |= o.kind == OpKind::WarpSpecialize);
            if specialized {
                continue;
            }
            let cands = candidates(m, k);
            if cands.is_empty() {
                let mut dots = false;
                k.walk(&mut |o| dots |= o.kind == OpKind::Mma);
                if dots && (self.warp_specialize || self.mma_lookahead) {
                    cx.diagnostics.push(Diagnostic::remark(
                        k.loc.clone(),
                        "tile-pipeline-loads: no loop of this kernel loads a wgmma operand, so \
                         nothing is staged in a TMA ring: warp-specialize and mma-lookahead \
                         change nothing here",
                    ));
                }
                continue;
            }
            n += cands.len() as u64;
            let ws = match self.warp_specialize.then(|| specializable(m, k, &cands)) {
                Some(Ok(persistent)) => Some(persistent.then(|| Tiles::new(m))),
                Some(Err(why)) => {
                    cx.diagnostics.push(Diagnostic::remark(
                        k.loc.clone(),
                        format!("tile-pipeline-loads: not warp-specialized: {why}"),
                    ));
                    None
                }
                None => None,
            };
            let mut rw = Rewrite {
                m,
                stages: self.stages,
                lookahead: self.mma_lookahead,
                issued_ahead: 0,
                cands,
                next_loop: 0,
                ws: ws.map(|tiles| Specialized {
                    consumer_warps: k.int_attr("num_warps").unwrap_or(4) as u64,
                    tiles,
                    ..Specialized::default()
                }),
            };
            let mut body = std::mem::take(&mut k.regions[0]);
            rw.block(&mut body);
            k.regions[0] = body;
            ahead += rw.issued_ahead;
            if let Some(sp) = rw.ws.take() {
                specialize(m, k, sp);
                specialized_kernels += 1;
            }
        }
        m.ops = kernels;
        cx.stat("loads-pipelined", n);
        cx.stat("mmas-issued-ahead", ahead);
        cx.stat("kernels-warp-specialized", specialized_kernels);
        Ok(())
    }
}

/// One load to pipeline.
#[derive(Clone, Debug)]
struct Cand {
    /// The pre-order number of the `tile.for` whose body holds it.
    lp: u32,
    /// The load's result.
    load: Value,
    /// The values of the load, its reshapes and conversions, and the store's operand.
    chain: HashSet<Value>,
    /// The buffer.
    buf: Value,
    /// The tensor.
    tensor: Value,
    /// The load's offset operands.
    coords: Vec<Value>,
    /// Bytes of one stage.
    bytes: u64,
}

/// The ops of a kernel by result, for the analysis.
struct Index<'k> {
    def: HashMap<Value, &'k Operation>,
    uses: HashMap<Value, Vec<&'k Operation>>,
    /// For each value, the pre-order numbers of the `tile.for` loops around its definition,
    /// outermost first.
    loops: HashMap<Value, Vec<u32>>,
}

impl<'k> Index<'k> {
    fn build(k: &'k Operation) -> Self {
        let mut ix = Index {
            def: HashMap::new(),
            uses: HashMap::new(),
            loops: HashMap::new(),
        };
        ix.block(&k.regions[0], &mut vec![], &mut 0);
        ix
    }

    fn block(&mut self, b: &'k Block, chain: &mut Vec<u32>, next: &mut u32) {
        for &a in &b.args {
            self.loops.insert(a, chain.clone());
        }
        for op in &b.ops {
            for &v in &op.operands {
                self.uses.entry(v).or_default().push(op);
            }
            for &r in &op.results {
                self.def.insert(r, op);
                self.loops.insert(r, chain.clone());
            }
            let is_for = op.kind == OpKind::For;
            if is_for {
                chain.push(*next);
                *next += 1;
            }
            for r in &op.regions {
                for &a in &r.args {
                    self.def.insert(a, op);
                }
                self.block(r, chain, next);
            }
            if is_for {
                chain.pop();
            }
        }
    }

    fn uses(&self, v: Value) -> &[&'k Operation] {
        self.uses.get(&v).map_or(&[], Vec::as_slice)
    }

    /// Whether `v` is defined inside loop `lp`.
    fn inside(&self, v: Value, lp: u32) -> bool {
        self.loops.get(&v).is_some_and(|c| c.contains(&lp))
    }

    /// The values of loop `f`'s body (number `lp`) that can be computed again for another
    /// iteration: the induction variable, and the body's scalar integer ops (not nested
    /// deeper) whose operands are such values or defined outside the loop. One pass over
    /// the body, in order.
    fn recomputable(&self, f: &Operation, lp: u32) -> HashSet<Value> {
        let mut ok: HashSet<Value> = f.regions[0].args.first().copied().into_iter().collect();
        for o in &f.regions[0].ops {
            let fits = is_index_op(o.kind)
                && o.regions.is_empty()
                && o.operands
                    .iter()
                    .all(|v| ok.contains(v) || !self.inside(*v, lp));
            if fits {
                ok.extend(o.results.iter().copied());
            }
        }
        ok
    }
}

/// Scalar integer ops whose results the pass may compute again.
fn is_index_op(k: OpKind) -> bool {
    k.class() == OpClass::IntBinary
        || matches!(
            k,
            OpKind::Constant
                | OpKind::Dim
                | OpKind::ProgramId
                | OpKind::NumPrograms
                | OpKind::CtaId
                | OpKind::NumCtas
        )
}

/// The loads of kernel `k` that the pass pipelines.
fn candidates(m: &Module, k: &Operation) -> Vec<Cand> {
    let ix = Index::build(k);
    let args: HashSet<Value> = k.regions[0].args.iter().copied().collect();
    let mut written = HashSet::new();
    k.walk(&mut |o| {
        if matches!(o.kind, OpKind::Store | OpKind::AtomicAdd | OpKind::TmaStore) {
            written.extend(o.operands.first().copied());
        }
    });
    let mut out = vec![];
    let mut fors = vec![];
    k.walk(&mut |o| {
        if o.kind == OpKind::For {
            fors.push(o);
        }
    });
    for (lp, f) in fors.iter().enumerate() {
        // Loads do not move across a flag op (another program's writes are ordered by it):
        // a loop holding one is not pipelined.
        let mut flags = false;
        f.walk(&mut |o| flags |= o.kind.is_flag());
        if flags {
            continue;
        }
        let body = &f.regions[0];
        let mut recomputable = None;
        for (i, st) in body.ops.iter().enumerate() {
            if st.kind != OpKind::SmemStore
                || st.operands.len() != 3
                || st.attr("col_offset").is_some()
            {
                continue;
            }
            // The fence and barrier after the store are its own: no store before it relies
            // on them.
            let fenced = body.ops.get(i + 1).map(|o| o.kind) == Some(OpKind::FenceProxyAsync)
                && body.ops.get(i + 2).map(|o| o.kind) == Some(OpKind::Barrier)
                && (i == 0 || body.ops[i - 1].kind != OpKind::SmemStore);
            if !fenced {
                continue;
            }
            let recomputable = recomputable.get_or_insert_with(|| ix.recomputable(f, lp as u32));
            if let Some(c) = candidate(m, &ix, (f, lp as u32, i), recomputable, &args, &written) {
                out.push(c);
            }
        }
    }
    // One box per tensor map, and no other use of the tensor.
    let mut boxes: HashMap<Value, Vec<Vec<u64>>> = HashMap::new();
    for c in &out {
        if let Some(Type::Tile { shape, .. }) = m.try_ty(c.load) {
            boxes.entry(c.tensor).or_default().push(shape.clone());
        }
    }
    out.retain(|c| {
        let all = &boxes[&c.tensor];
        let loads = ix.uses(c.tensor).len();
        all.iter().all(|b| *b == all[0]) && loads == all.len()
    });
    out
}

/// The candidate of `smem_store` `st` in the body of loop `f` (number `lp`), if it fits.
fn candidate(
    m: &Module,
    ix: &Index,
    (f, lp, at): (&Operation, u32, usize),
    recomputable: &HashSet<Value>,
    args: &HashSet<Value>,
    written: &HashSet<Value>,
) -> Option<Cand> {
    let body = &f.regions[0].ops;
    let st = &body[at];
    let (val, buf, stage) = (st.operands[0], st.operands[1], st.operands[2]);
    let alloc = ix.def.get(&buf)?;
    let (
        Type::Smem {
            stages: 1,
            shape,
            elem,
        },
        OpKind::SmemAlloc,
    ) = (m.try_ty(buf)?, alloc.kind)
    else {
        return None;
    };
    if alloc.int_attr("swizzle") != Some(SWIZZLE_BYTES as i64)
        || shape.len() != 2
        || shape[0] > MAX_BOX
        || (shape[1] * elem.size_bytes()) % SWIZZLE_BYTES != 0
    {
        return None;
    }
    let st_def = ix.def.get(&stage)?;
    if st_def.kind != OpKind::Constant || st_def.int_attr("value") != Some(0) {
        return None;
    }
    // The buffer: this store, and wgmma reads directly in the body after it. Each iteration
    // then runs a wgmma on every stage it waits for, which the copy that overwrites the
    // stage waits for in turn: no thread can still be polling a phase the copy re-arms.
    let after = |u: &Operation| body[at + 1..].iter().any(|o| std::ptr::eq(o, u));
    for u in ix.uses(buf) {
        let ok = match u.kind {
            OpKind::SmemStore => std::ptr::eq(*u, st),
            OpKind::Mma => after(u),
            _ => false,
        };
        if !ok {
            return None;
        }
    }
    // The value: a load through reshapes and conversions, each used once.
    let mut chain = HashSet::from([val]);
    let mut v = val;
    let load = loop {
        let d = ix.def.get(&v)?;
        if ix.uses(v).len() != 1 || !body.iter().any(|o| std::ptr::eq(o, *d)) {
            return None;
        }
        match d.kind {
            OpKind::Reshape | OpKind::ConvertLayout => {
                v = d.operands[0];
                chain.insert(v);
            }
            OpKind::Load => break *d,
            _ => return None,
        }
    };
    let tensor = *load.operands.first()?;
    let Some(Type::Tensor { rank, elem: te }) = m.try_ty(tensor) else {
        return None;
    };
    let Some(Type::Tile { shape: ls, .. }) = m.try_ty(load.results[0]) else {
        return None;
    };
    let r = ls.len();
    let fits = args.contains(&tensor)
        && !written.contains(&tensor)
        && (2..=5).contains(rank)
        && te == elem
        && r == *rank as usize
        && ls[r - 2..] == shape[..]
        && ls[..r - 2].iter().all(|&d| d == 1)
        && load.attr("padding").is_none()
        && load.operands[1..]
            .iter()
            .all(|c| recomputable.contains(c) || !ix.inside(*c, lp));
    if !fits {
        return None;
    }
    Some(Cand {
        lp,
        load: load.results[0],
        chain,
        buf,
        tensor,
        coords: load.operands[1..].to_vec(),
        bytes: shape[0] * shape[1] * elem.size_bytes(),
    })
}

/// The state of one kernel's rewrite.
struct Rewrite<'a> {
    m: &'a mut Module,
    stages: u64,
    /// The `mma-lookahead` option.
    lookahead: bool,
    /// How many wgmmas were issued ahead.
    issued_ahead: u64,
    cands: Vec<Cand>,
    /// The pre-order number of the next `tile.for`.
    next_loop: u32,
    /// With `warp-specialize` (and a kernel [`specializable`]): what the producer takes.
    ws: Option<Specialized>,
}

/// What the rewrite of a loop with `warp-specialize` leaves for [`specialize`].
#[derive(Default)]
struct Specialized {
    /// The consumers' warps (the kernel's `num_warps`): one release each per stage use.
    consumer_warps: u64,
    /// The values every thread must have before the roles split: the rings' buffers and
    /// their mbarrier arrays.
    shared: Vec<Value>,
    /// The mbarrier allocations, to go before the split.
    allocs: Vec<Operation>,
    /// The producer's loop.
    producer: Vec<Operation>,
    /// In a persistent kernel, the ring iterations before the current tile's.
    tiles: Option<Tiles>,
}

/// The ring iterations that a persistent kernel's earlier tiles used, carried by its tile
/// loop in each role, so that the rings' stages and phases run on across tiles.
struct Tiles {
    /// The consumers' count at the top of the tile loop's body (its new block argument).
    consumer: Value,
    /// The producer's.
    producer: Value,
    /// The consumers' count for the next tile, computed after the pipelined loop.
    consumer_next: Option<Value>,
    /// The producer's.
    producer_next: Option<Value>,
}

impl Tiles {
    /// Fresh counts (the tile loops' new block arguments), no next counts yet.
    fn new(m: &mut Module) -> Self {
        Tiles {
            consumer: m.new_value(Type::INDEX, None),
            producer: m.new_value(Type::INDEX, None),
            consumer_next: None,
            producer_next: None,
        }
    }
}

/// The ring of one pipelined load in its loop.
struct Ring {
    cand: Cand,
    full: Value,
    /// The stage the iteration reads.
    stage: Option<Value>,
}

/// Appends ops to a list, making their results.
struct Emit<'a, 'b> {
    m: &'a mut Module,
    out: &'b mut Vec<Operation>,
    loc: Location,
}

impl Emit<'_, '_> {
    fn op(&mut self, kind: OpKind, operands: &[Value], ty: Option<Type>) -> Option<Value> {
        let mut o = Operation::new(kind, self.loc.clone());
        o.operands = operands.to_vec();
        let r = ty.map(|t| self.m.new_value(t, None));
        o.results.extend(r);
        self.out.push(o);
        r
    }

    fn index(&mut self, kind: OpKind, a: Value, b: Value) -> Value {
        self.op(kind, &[a, b], Some(Type::INDEX)).expect("a result")
    }

    fn constant(&mut self, x: i64) -> Value {
        let v = self.m.new_value(Type::INDEX, None);
        let mut o = Operation::new(OpKind::Constant, self.loc.clone());
        o.attrs.insert("value".into(), Attribute::Int(x));
        o.results.push(v);
        self.out.push(o);
        v
    }

    fn less(&mut self, a: Value, b: Value) -> Value {
        let v = self.m.new_value(Type::I1, None);
        let mut o = Operation::new(OpKind::CmpI, self.loc.clone());
        o.operands = vec![a, b];
        o.attrs
            .insert("predicate".into(), Attribute::Str("slt".into()));
        o.results.push(v);
        self.out.push(o);
        v
    }
}

impl Rewrite<'_> {
    fn block(&mut self, b: &mut Block) {
        let ops = std::mem::take(&mut b.ops);
        for mut op in ops {
            let lp = (op.kind == OpKind::For).then(|| {
                self.next_loop += 1;
                self.next_loop - 1
            });
            for r in &mut op.regions {
                self.block(r);
            }
            let mine: Vec<Cand> = self
                .cands
                .iter()
                .filter(|c| Some(c.lp) == lp)
                .cloned()
                .collect();
            if mine.is_empty() {
                b.ops.push(op);
            } else if self.ws.is_some() {
                self.pipeline_specialized(&mut b.ops, op, mine);
            } else {
                self.pipeline(&mut b.ops, op, mine);
            }
        }
    }

    /// Appends loop `f`, with the loads `cands` of its body pipelined, and its prologue to
    /// `out`.
    fn pipeline(&mut self, out: &mut Vec<Operation>, mut f: Operation, cands: Vec<Cand>) {
        let loc = f.loc.clone();
        let (lb, ub, step) = (f.operands[0], f.operands[1], f.operands[2]);
        let iv = f.regions[0].args[0];
        let s = self.stages;
        let mut rings = vec![];
        for c in cands {
            let Type::Smem { shape, elem, .. } = self.m.ty(c.buf).clone() else {
                continue;
            };
            self.m.values[c.buf.0 as usize].ty = Type::Smem {
                stages: s,
                shape,
                elem,
            };
            let full = self.m.new_value(Type::Mbarrier { count: s }, None);
            let mut a = Operation::new(OpKind::MbarrierAlloc, loc.clone());
            a.attrs.insert("arrive_count".into(), Attribute::Int(1));
            a.results.push(full);
            out.push(a);
            rings.push(Ring {
                cand: c,
                full,
                stage: None,
            });
        }
        // The wgmmas issued one iteration ahead, and the rings only they read.
        let ahead = if self.lookahead {
            lookahead_mmas(self.m, &f, &rings)
        } else {
            vec![]
        };
        let ahead_ring = |ri: usize| ahead.iter().any(|a| a.rings.contains(&ri));
        // The body's scalar integer ops, which the coordinates of a later iteration repeat.
        let index_defs: HashMap<Value, Operation> = f.regions[0]
            .ops
            .iter()
            .filter(|o| is_index_op(o.kind) && o.regions.is_empty())
            .flat_map(|o| o.results.first().map(|&r| (r, o.clone())))
            .collect();
        // The prologue: the copies of iterations 0 .. S-2, and S-1 for the rings of wgmmas
        // issued ahead (whose copies run one iteration further ahead).
        let mut e = Emit {
            m: self.m,
            out,
            loc: loc.clone(),
        };
        for j in 0..s {
            let now: Vec<usize> = (0..rings.len())
                .filter(|&ri| j + 1 < s || ahead_ring(ri))
                .collect();
            if now.is_empty() {
                continue;
            }
            let cj = e.constant(j as i64);
            let at = if j == 0 {
                lb
            } else {
                let off = e.index(OpKind::MulI, cj, step);
                e.index(OpKind::AddI, lb, off)
            };
            let go = e.less(at, ub);
            for ri in now {
                copy(&mut e, &index_defs, iv, at, go, &rings[ri], cj);
            }
        }
        // Iteration 0's issue of each wgmma issued ahead.
        let inits = issue_first(&mut e, &ahead, &rings, [lb, ub], None, s);
        // The body: at each load, the copy S-1 iterations ahead and the wait for this one;
        // at a wgmma issued ahead, the next iteration's issue, and after the first use of
        // this iteration's (carried) result, the copies into the stages it read.
        let (carried, subst) = carry(self.m, &ahead);
        let mut next = vec![None; ahead.len()];
        let mut pending: Vec<(usize, Iteration)> = vec![];
        let ops = std::mem::take(&mut f.regions[0].ops);
        let points = issue_points(&ops, &ahead);
        let mut deferred: Vec<Option<(Value, Value, Value, Value)>> = vec![None; ahead.len()];
        let mut body = vec![];
        let mut counter: Option<Iteration> = None;
        let mut skip_sync = 0;
        for (idx, mut o) in ops.into_iter().enumerate() {
            for ai in (0..ahead.len()).filter(|&ai| points[ai] == idx) {
                let Some((go, stage, phase, acc)) = deferred[ai].take() else {
                    continue;
                };
                let mut e = Emit {
                    m: self.m,
                    out: &mut body,
                    loc: o.loc.clone(),
                };
                next[ai] = Some(issue_when(
                    &mut e,
                    &ahead[ai],
                    &rings,
                    go,
                    [stage, phase],
                    acc,
                ));
            }
            if dropped(&o, &rings, &mut skip_sync) {
                continue;
            }
            if let Some(ai) = ahead.iter().position(|a| o.results == a.op.results) {
                let mut e = Emit {
                    m: self.m,
                    out: &mut body,
                    loc: o.loc.clone(),
                };
                let nx = e.index(OpKind::AddI, iv, step);
                let go = e.less(nx, ub);
                let it = Iteration::emit(&mut e, [nx, lb, ub, step], s);
                let acc = tilec_dialect::ops::mma_operands(&o).expect("an mma").acc;
                deferred[ai] = Some((go, it.stage, it.phase, acc));
                pending.push((ai, it));
                continue;
            }
            o.walk_mut(&mut |x| {
                for v in &mut x.operands {
                    if let Some(&c) = subst.get(v) {
                        *v = c;
                    }
                }
            });
            if o.kind == OpKind::Yield {
                let mut e = Emit {
                    m: self.m,
                    out: &mut body,
                    loc: o.loc.clone(),
                };
                for (ai, it) in std::mem::take(&mut pending) {
                    refill(&mut e, &index_defs, iv, &rings, &ahead[ai], it);
                }
                o.operands.extend(next.iter().flatten());
                body.push(o);
                continue;
            }
            let Some(ri) = o
                .results
                .first()
                .and_then(|&v| rings.iter().position(|r| r.cand.load == v))
            else {
                let mut used = HashSet::new();
                o.walk(&mut |x| used.extend(x.operands.iter().copied()));
                let loc = o.loc.clone();
                body.push(o);
                let (now, later): (Vec<_>, Vec<_>) = std::mem::take(&mut pending)
                    .into_iter()
                    .partition(|(ai, _)| used.contains(&carried[*ai]));
                pending = later;
                let mut e = Emit {
                    m: self.m,
                    out: &mut body,
                    loc,
                };
                for (ai, it) in now {
                    refill(&mut e, &index_defs, iv, &rings, &ahead[ai], it);
                }
                continue;
            };
            if ahead_ring(ri) {
                continue;
            }
            let mut e = Emit {
                m: self.m,
                out: &mut body,
                loc: o.loc.clone(),
            };
            let Iteration {
                ahead: at,
                go,
                stage,
                phase,
                next,
            } = *counter.get_or_insert_with(|| Iteration::emit(&mut e, [iv, lb, ub, step], s));
            copy(&mut e, &index_defs, iv, at, go, &rings[ri], next);
            e.op(OpKind::MbarrierWait, &[rings[ri].full, stage, phase], None);
            rings[ri].stage = Some(stage);
        }
        self.issued_ahead += ahead.len() as u64;
        f.operands.extend(inits);
        f.regions[0].args.extend(carried.iter().copied());
        for a in &ahead {
            let ty = self.m.ty(a.op.results[0]).clone();
            let r = self.m.new_value(ty, None);
            f.results.push(r);
        }
        f.regions[0].ops = body;
        read_stages(self.m, &mut f, &rings);
        if !ahead.is_empty() {
            carry_fragments(self.m, &mut f, out, &loc);
        }
        out.push(f);
    }
}

/// Carries the A fragment (the register-A form) of each wgmma directly in loop `f`'s body
/// that the body defines and does not yield: a new block argument, initialised by a
/// `tile.zeros` appended to `out` (never read), into which the body yields the fragment. The
/// fragment's registers then stay in scope across the back edge, so the wgmma may stay in
/// flight into the next iteration (`async-wait-placement` retires it before the body
/// defines the fragment again, instead of before the yield): with a wgmma issued ahead,
/// FlashAttention-3's P·V runs under the next iteration's softmax.
fn carry_fragments(m: &mut Module, f: &mut Operation, out: &mut Vec<Operation>, loc: &Location) {
    let body = &f.regions[0];
    let defined: HashSet<Value> = body.ops.iter().flat_map(|o| o.results.clone()).collect();
    let yielded: HashSet<Value> = body
        .ops
        .last()
        .filter(|y| y.kind == OpKind::Yield)
        .map(|y| y.operands.iter().copied().collect())
        .unwrap_or_default();
    let mut frags: Vec<Value> = vec![];
    for o in &body.ops {
        let Some(p) = tilec_dialect::ops::mma_operands(o).filter(|_| o.kind == OpKind::Mma) else {
            continue;
        };
        let in_regs = matches!(m.try_ty(p.a), Some(Type::Tile { .. }));
        if in_regs && defined.contains(&p.a) && !yielded.contains(&p.a) && !frags.contains(&p.a) {
            frags.push(p.a);
        }
    }
    for v in frags {
        let ty = m.ty(v).clone();
        let init = m.new_value(ty.clone(), None);
        let mut z = Operation::new(OpKind::Zeros, loc.clone());
        z.results.push(init);
        out.push(z);
        let arg = m.new_value(ty.clone(), None);
        let res = m.new_value(ty, None);
        f.operands.push(init);
        f.regions[0].args.push(arg);
        f.results.push(res);
        if let Some(y) = f.regions[0]
            .ops
            .last_mut()
            .filter(|y| y.kind == OpKind::Yield)
        {
            y.operands.push(v);
        }
    }
}

/// Points each wgmma of loop `f` that reads a pipelined ring at the stage its iteration
/// waited for (an A fragment in registers takes B's stage).
fn read_stages(m: &Module, f: &mut Operation, rings: &[Ring]) {
    // The wgmma reads: each pipelined ring at its iteration's stage.
    let stage_of: HashMap<Value, Value> = rings
        .iter()
        .filter_map(|r| Some((r.cand.buf, r.stage?)))
        .collect();
    let mut a_in_regs = HashSet::new();
    f.walk(&mut |o| {
        if let Some(p) = tilec_dialect::ops::mma_operands(o) {
            if !matches!(m.try_ty(p.a), Some(Type::Smem { .. })) {
                a_in_regs.insert(p.a);
            }
        }
    });
    f.walk_mut(&mut |o| {
        if o.kind != OpKind::Mma {
            return;
        }
        let Some(p) = tilec_dialect::ops::mma_operands(o) else {
            return;
        };
        let sb = stage_of.get(&p.b).copied().unwrap_or(p.stage_b);
        let sa = match stage_of.get(&p.a) {
            Some(&x) => x,
            None if a_in_regs.contains(&p.a) => sb,
            None => p.stage_a,
        };
        o.operands = if sa == sb {
            vec![p.a, p.b, sa, p.acc]
        } else {
            vec![p.a, p.b, sa, sb, p.acc]
        };
    });
}

/// What an iteration of a pipelined loop computes once, before its first copy.
#[derive(Clone, Copy)]
struct Iteration {
    /// The induction variable `stages - 1` iterations on.
    ahead: Value,
    /// Whether that iteration runs: `ahead < ub`.
    go: Value,
    /// The stage this iteration reads: `i mod stages`, `i` the iteration's number.
    stage: Value,
    /// The parity of the phase its barrier completes: `(i / stages) mod 2`.
    phase: Value,
    /// The stage of the copy issued ahead: `(i + stages - 1) mod stages`.
    next: Value,
}

impl Iteration {
    /// Appends the computations; `loop_`: the induction variable, lower and upper bounds and
    /// step.
    fn emit(e: &mut Emit, loop_: [Value; 4], stages: u64) -> Self {
        let [iv, lb, ub, step] = loop_;
        let d = e.index(OpKind::SubI, iv, lb);
        let i = e.index(OpKind::DivI, d, step);
        let k = e.constant(stages as i64 - 1);
        let off = e.index(OpKind::MulI, k, step);
        let ahead = e.index(OpKind::AddI, iv, off);
        let go = e.less(ahead, ub);
        let cs = e.constant(stages as i64);
        let c2 = e.constant(2);
        let stage = e.index(OpKind::RemI, i, cs);
        let round = e.index(OpKind::DivI, i, cs);
        let phase = e.index(OpKind::RemI, round, c2);
        let later = e.index(OpKind::AddI, i, k);
        let next = e.index(OpKind::RemI, later, cs);
        Iteration {
            ahead,
            go,
            stage,
            phase,
            next,
        }
    }
}

/// Appends `tile.if %go { expect_tx; tma_load }` of ring `r` into stage `stage`, with the
/// load's coordinates computed for induction variable `at` (the loop's is `iv`).
fn copy(
    e: &mut Emit,
    defs: &HashMap<Value, Operation>,
    iv: Value,
    at: Value,
    go: Value,
    r: &Ring,
    stage: Value,
) {
    let mut inner = vec![];
    let mut memo = HashMap::from([(iv, at)]);
    let mut coords = vec![];
    {
        let mut ie = Emit {
            m: e.m,
            out: &mut inner,
            loc: e.loc.clone(),
        };
        for &c in &r.cand.coords {
            coords.push(recompute(&mut ie, defs, &mut memo, c));
        }
        let mut ex = Operation::new(OpKind::MbarrierExpectTx, ie.loc.clone());
        ex.operands = vec![r.full, stage];
        ex.attrs
            .insert("bytes".into(), Attribute::Int(r.cand.bytes as i64));
        ie.out.push(ex);
        let mut operands = vec![r.cand.tensor, r.cand.buf, r.full, stage];
        operands.extend(coords);
        ie.op(OpKind::TmaLoad, &operands, None);
        ie.op(OpKind::Yield, &[], None);
    }
    e.out.push(Operation::if_then(go, inner, e.loc.clone()));
}

/// `v` computed again with the substitutions of `memo` (the induction variable's): the
/// ops of `defs` (the loop body's, by result) that define it are cloned with fresh results;
/// other values are defined outside the loop and stay.
fn recompute(
    e: &mut Emit,
    defs: &HashMap<Value, Operation>,
    memo: &mut HashMap<Value, Value>,
    v: Value,
) -> Value {
    if let Some(&x) = memo.get(&v) {
        return x;
    }
    let Some(d) = defs.get(&v) else {
        return v;
    };
    let mut c = d.clone();
    c.operands = d
        .operands
        .iter()
        .map(|&o| recompute(e, defs, memo, o))
        .collect();
    let ty = e.m.ty(v).clone();
    let r = e.m.new_value(ty, None);
    c.results = vec![r];
    e.out.push(c);
    memo.insert(v, r);
    r
}

/// A wgmma the `mma-lookahead` option issues one iteration ahead.
struct Ahead {
    /// The op, as in the body.
    op: Operation,
    /// The rings it reads (indices into the loop's rings), which no other op reads.
    rings: Vec<usize>,
    /// The `tile.zeros` of the body that is its accumulator, if that is where it comes from.
    zeros: Option<Operation>,
}

/// The wgmmas of loop `f`'s body that can be issued one iteration ahead of their uses: each
/// is directly in the body, reads at least one of `rings` and nothing else from the body (its
/// other operands are defined outside the loop, and no op in the loop writes a buffer among
/// them; its accumulator may be a `tile.zeros` of the body), and is the only reader of each
/// ring it reads.
fn lookahead_mmas(m: &Module, f: &Operation, rings: &[Ring]) -> Vec<Ahead> {
    let mut inside = HashSet::new();
    let mut written = HashSet::new();
    let mut readers: HashMap<Value, usize> = HashMap::new();
    for r in &f.regions {
        inside.extend(r.args.iter().copied());
        for o in &r.ops {
            o.walk(&mut |x| {
                inside.extend(x.results.iter().copied());
                for g in &x.regions {
                    inside.extend(g.args.iter().copied());
                }
                match x.kind {
                    OpKind::SmemStore | OpKind::TmaLoad => {
                        written.extend(x.operands.get(1).copied());
                    }
                    OpKind::Mma => {
                        if let Some(p) = tilec_dialect::ops::mma_operands(x) {
                            *readers.entry(p.a).or_default() += 1;
                            if p.b != p.a {
                                *readers.entry(p.b).or_default() += 1;
                            }
                        }
                    }
                    _ => {}
                }
            });
        }
    }
    let zeros: HashMap<Value, &Operation> = f.regions[0]
        .ops
        .iter()
        .filter(|o| o.kind == OpKind::Zeros && o.operands.is_empty())
        .flat_map(|o| o.results.first().map(|&r| (r, o)))
        .collect();
    let mut out = vec![];
    for o in &f.regions[0].ops {
        let Some(p) = tilec_dialect::ops::mma_operands(o).filter(|_| o.kind == OpKind::Mma) else {
            continue;
        };
        if o.results.len() != 1 || !o.regions.is_empty() {
            continue;
        }
        let ring_of = |v: Value| rings.iter().position(|r| r.cand.buf == v);
        let mut mine = vec![];
        let mut ok = true;
        for (v, stage) in [(p.a, p.stage_a), (p.b, p.stage_b)] {
            match ring_of(v) {
                Some(ri) => {
                    ok &= readers.get(&v) == Some(&1);
                    if !mine.contains(&ri) {
                        mine.push(ri);
                    }
                }
                None => {
                    // Defined outside the loop; a buffer also unwritten in it, at a stage
                    // from outside.
                    let smem = matches!(m.try_ty(v), Some(Type::Smem { .. }));
                    let changes = smem && (written.contains(&v) || inside.contains(&stage));
                    ok &= !inside.contains(&v) && !changes;
                }
            }
        }
        let zero = zeros.get(&p.acc).map(|z| (*z).clone());
        ok &= zero.is_some() || !inside.contains(&p.acc);
        if ok && !mine.is_empty() {
            out.push(Ahead {
                op: o.clone(),
                rings: mine,
                zeros: zero,
            });
        }
    }
    out
}

/// Iteration 0's issue of each wgmma of `ahead` (before the loop `lb .. ub`; at ring
/// iteration `base`, where earlier tiles of a persistent kernel used the rings, else 0): its
/// barrier waits are skipped when the loop runs no iteration (no copy was issued); the
/// wgmma then reads a stage no copy writes, and its result is not used. Returns the
/// results, the loop's new inits.
fn issue_first(
    e: &mut Emit,
    ahead: &[Ahead],
    rings: &[Ring],
    [lb, ub]: [Value; 2],
    base: Option<Value>,
    stages: u64,
) -> Vec<Value> {
    let mut inits = vec![];
    if ahead.is_empty() {
        return inits;
    }
    let (stage, phase) = match base {
        Some(b) => {
            let cs = e.constant(stages as i64);
            let c2 = e.constant(2);
            let stage = e.index(OpKind::RemI, b, cs);
            let round = e.index(OpKind::DivI, b, cs);
            (stage, e.index(OpKind::RemI, round, c2))
        }
        None => {
            let c0 = e.constant(0);
            (c0, c0)
        }
    };
    let go = e.less(lb, ub);
    for a in ahead {
        let waits: Vec<Operation> = a
            .rings
            .iter()
            .map(|&ri| wait_op(&e.loc, rings[ri].full, stage, phase))
            .collect();
        guarded(e, go, waits);
        let p = tilec_dialect::ops::mma_operands(&a.op).expect("an mma");
        let acc = match &a.zeros {
            Some(z) => {
                let r = e.m.new_value(e.m.ty(p.acc).clone(), None);
                let mut z = z.clone();
                z.results = vec![r];
                e.out.push(z);
                r
            }
            None => p.acc,
        };
        inits.push(issue(e, a, rings, stage, acc));
    }
    inits
}

/// The loop-carried values of the wgmmas of `ahead` (fresh block arguments), and the
/// substitution of each wgmma's result by its carried value.
fn carry(m: &mut Module, ahead: &[Ahead]) -> (Vec<Value>, HashMap<Value, Value>) {
    let carried: Vec<Value> = ahead
        .iter()
        .map(|a| m.new_value(m.ty(a.op.results[0]).clone(), None))
        .collect();
    let subst = ahead
        .iter()
        .zip(&carried)
        .map(|(a, &c)| (a.op.results[0], c))
        .collect();
    (carried, subst)
}

/// Whether the rewrite drops body op `o`: a pipelined load's store into its buffer, the
/// fence and barrier right after that store (`skip_sync` counts them down), and the
/// reshapes and conversions between the load and the store.
fn dropped(o: &Operation, rings: &[Ring], skip_sync: &mut usize) -> bool {
    if *skip_sync > 0 && matches!(o.kind, OpKind::FenceProxyAsync | OpKind::Barrier) {
        *skip_sync -= 1;
        return true;
    }
    *skip_sync = 0;
    if o.kind == OpKind::SmemStore && rings.iter().any(|r| r.cand.buf == o.operands[1]) {
        *skip_sync = 2;
        return true;
    }
    let chained = o
        .results
        .first()
        .is_some_and(|v| rings.iter().any(|r| r.cand.chain.contains(v)));
    o.kind != OpKind::Load && chained
}

/// `tile.mbarrier_wait %full, %stage, %phase`.
fn wait_op(loc: &Location, full: Value, stage: Value, phase: Value) -> Operation {
    let mut o = Operation::new(OpKind::MbarrierWait, loc.clone());
    o.operands = vec![full, stage, phase];
    o
}

/// Appends `tile.if %go { ops }`.
fn guarded(e: &mut Emit, go: Value, ops: Vec<Operation>) {
    e.out.push(Operation::if_then(go, ops, e.loc.clone()));
}

/// Appends wgmma `a` reading its rings at `stage`, with accumulator `acc`; returns its result.
fn issue(e: &mut Emit, a: &Ahead, rings: &[Ring], stage: Value, acc: Value) -> Value {
    let p = tilec_dialect::ops::mma_operands(&a.op).expect("an mma");
    let at = |v: Value, s: Value| {
        if a.rings.iter().any(|&ri| rings[ri].cand.buf == v) {
            stage
        } else {
            s
        }
    };
    let (sa, sb) = (at(p.a, p.stage_a), at(p.b, p.stage_b));
    let mut o = a.op.clone();
    o.operands = if sa == sb {
        vec![p.a, p.b, sa, acc]
    } else {
        vec![p.a, p.b, sa, sb, acc]
    };
    let r = e.m.new_value(e.m.ty(a.op.results[0]).clone(), None);
    o.results = vec![r];
    e.out.push(o);
    r
}

/// Where the next iteration's issue of each wgmma of `ahead` goes: the index in `ops` (the
/// body) of the first other `tile.mma` after both the wgmma and the last op that reads its
/// result, or of the yield. There every register of this iteration's result is dead, so the
/// next one can take them: no copy of an accumulator in flight at the back edge (which
/// ptxas answers with a `wgmma.wait_group` of its own, C7517, and serialized wgmmas,
/// C7511), and at most one accumulator of each wgmma live at once. The wgmmas issued before
/// that point in the next iteration (FlashAttention-3's P·V after its softmax) stay in
/// flight while that iteration works on the result.
fn issue_points(ops: &[Operation], ahead: &[Ahead]) -> Vec<usize> {
    ahead
        .iter()
        .map(|a| {
            let at = ops
                .iter()
                .position(|o| o.results == a.op.results)
                .unwrap_or(0);
            let mut last = at;
            for (i, o) in ops.iter().enumerate() {
                let mut reads = false;
                o.walk(&mut |x| reads |= x.operands.iter().any(|v| a.op.results.contains(v)));
                if reads && o.kind != OpKind::Yield {
                    last = last.max(i);
                }
            }
            let other = |o: &Operation| {
                o.kind == OpKind::Mma && !ahead.iter().any(|b| b.op.results == o.results)
            };
            ops.iter()
                .enumerate()
                .skip(last + 1)
                .find(|(_, o)| other(o) || o.kind == OpKind::Yield)
                .map_or(ops.len().saturating_sub(1), |(i, _)| i)
        })
        .collect()
}

/// The next iteration's issue of `a` at `stage`: the waits on its rings' full barriers at
/// `stage` and `phase` (`at`) when that iteration runs (`go`), then the wgmma.
fn issue_when(
    e: &mut Emit,
    a: &Ahead,
    rings: &[Ring],
    go: Value,
    at: [Value; 2],
    acc: Value,
) -> Value {
    let [stage, phase] = at;
    let waits: Vec<Operation> = a
        .rings
        .iter()
        .map(|&ri| wait_op(&e.loc, rings[ri].full, stage, phase))
        .collect();
    guarded(e, go, waits);
    issue(e, a, rings, stage, acc)
}

/// Appends the copies into the stages wgmma `a` read this iteration: each of its rings,
/// `stages` iterations ahead (`it` is the next iteration's [`Iteration`]).
fn refill(
    e: &mut Emit,
    defs: &HashMap<Value, Operation>,
    iv: Value,
    rings: &[Ring],
    a: &Ahead,
    it: Iteration,
) {
    for &ri in &a.rings {
        copy(e, defs, iv, it.ahead, it.go, &rings[ri], it.next);
    }
}

/// Why kernel `k`, whose loads `cands` are to be pipelined, cannot take `warp-specialize`;
/// `Ok` where it can: the loads are in one `tile.for` directly in the kernel body or
/// directly in the body of a static persistent tile loop there (`Ok(true)`), the kernel has
/// whole warpgroups (1 to 3) and no cluster, role or flag op, and the loop's bounds and the
/// copies' coordinates come from kernel arguments, the tile loop's induction variable and
/// scalar integer ops (which the producer computes again).
fn specializable(m: &Module, k: &Operation, cands: &[Cand]) -> Result<bool, String> {
    let lp = cands[0].lp;
    if cands.iter().any(|c| c.lp != lp) {
        return Err("loads are pipelined in more than one loop".into());
    }
    let warps = k.int_attr("num_warps").unwrap_or(0);
    if warps % 4 != 0 || !(4..=12).contains(&warps) {
        return Err(format!(
            "the kernel has {warps} warps; the consumers must be 1 to 3 whole warpgroups"
        ));
    }
    if k.attr("cluster").is_some() {
        return Err("the kernel is a cluster launch".into());
    }
    let mut odd = None;
    k.walk(&mut |o| {
        if odd.is_none() && (o.kind.is_flag() || o.attr("role").is_some()) {
            odd = Some(o.kind.name());
        }
    });
    if let Some(name) = odd {
        return Err(format!(
            "the kernel holds '{name}', which is not split into roles"
        ));
    }
    let mut fors = vec![];
    k.walk(&mut |o| {
        if o.kind == OpKind::For {
            fors.push(o);
        }
    });
    let f = fors[lp as usize];
    let top = &k.regions[0];
    let tile_loop = top.ops.iter().find(|o| {
        o.kind == OpKind::For
            && o.attr("tile_loop").and_then(Attribute::as_bool) == Some(true)
            && o.regions[0].ops.iter().any(|x| std::ptr::eq(x, f))
    });
    if tile_loop.is_none() && !top.ops.iter().any(|o| std::ptr::eq(o, f)) {
        return Err(
            "the pipelined loop is neither directly in the kernel body nor directly in a \
             static persistent tile loop ('tile.for {tile_loop = true}') there"
                .into(),
        );
    }
    let ix = Index::build(k);
    let mut args: HashSet<Value> = top.args.iter().copied().collect();
    let mut top_ops: HashSet<*const Operation> = top.ops.iter().map(|o| o as *const _).collect();
    let mut todo: Vec<Value> = f.operands[..3].to_vec();
    if let Some(t) = tile_loop {
        // The producer runs the same tile loop: its bounds, and the tile body's scalar ops
        // that the copies use, are computed again there.
        if t.regions[0].args.len() != 1 || !t.results.is_empty() {
            return Err("the persistent tile loop carries values".into());
        }
        args.insert(t.regions[0].args[0]);
        top_ops.extend(t.regions[0].ops.iter().map(|o| o as *const _));
        todo.extend(&t.operands[..3]);
    }
    let iv = f.regions[0].args[0];
    todo.extend(cands.iter().flat_map(|c| c.coords.iter().copied()));
    let mut seen = HashSet::new();
    while let Some(v) = todo.pop() {
        if v == iv || args.contains(&v) || !seen.insert(v) {
            continue;
        }
        let Some(d) = ix.def.get(&v) else {
            return Err("a copy's coordinate has no definition".into());
        };
        let in_body = f.regions[0].ops.iter().any(|o| std::ptr::eq(o, *d));
        let ok = is_index_op(d.kind)
            && d.regions.is_empty()
            && (in_body || top_ops.contains(&(*d as *const _)));
        if !ok {
            let name = m.name(v).map_or(String::new(), |n| format!(" '%{n}'"));
            return Err(format!(
                "the loop's bounds or a copy's coordinates use{name}, defined by '{}', which \
                 the producer cannot compute (kernel arguments and scalar integer ops only)",
                d.kind.name()
            ));
        }
        todo.extend(d.operands.iter().copied());
    }
    Ok(tile_loop.is_some())
}

/// The per-iteration values of a pipelined loop with `warp-specialize`, computed at the top
/// of its body (and of the producer's).
#[derive(Clone, Copy)]
struct Counter {
    /// `i = base + (iv - lb) / step`, the iteration's number.
    i: Value,
    /// `i mod stages`: the stage the iteration uses.
    stage: Value,
    /// `(i / stages) mod 2`: the parity of the phase of that stage's barriers.
    phase: Value,
    /// `(i + stages - 1) mod stages`: the previous iteration's stage.
    prev: Value,
    /// `lb < iv`: whether there was a previous iteration.
    later: Value,
}

impl Counter {
    /// The next iteration's stage and phase parity, from `i + 1` (the form the async
    /// model relates to this iteration's stage).
    fn next(&self, e: &mut Emit, stages: u64) -> (Value, Value) {
        let c1 = e.constant(1);
        let i = e.index(OpKind::AddI, self.i, c1);
        let cs = e.constant(stages as i64);
        let c2 = e.constant(2);
        let stage = e.index(OpKind::RemI, i, cs);
        let round = e.index(OpKind::DivI, i, cs);
        (stage, e.index(OpKind::RemI, round, c2))
    }

    /// The values at `iv`; `base`, where given, counts the iterations of the loop's earlier
    /// instances (a persistent kernel's earlier tiles).
    fn emit(e: &mut Emit, [iv, lb, step]: [Value; 3], base: Option<Value>, stages: u64) -> Self {
        let d = e.index(OpKind::SubI, iv, lb);
        let mut i = e.index(OpKind::DivI, d, step);
        if let Some(b) = base {
            i = e.index(OpKind::AddI, b, i);
        }
        let cs = e.constant(stages as i64);
        let c2 = e.constant(2);
        let stage = e.index(OpKind::RemI, i, cs);
        let round = e.index(OpKind::DivI, i, cs);
        let phase = e.index(OpKind::RemI, round, c2);
        let k = e.constant(stages as i64 - 1);
        let back = e.index(OpKind::AddI, i, k);
        let prev = e.index(OpKind::RemI, back, cs);
        let later = e.less(lb, iv);
        Counter {
            i,
            stage,
            phase,
            prev,
            later,
        }
    }
}

/// Where a wgmma's result is first needed by something other than a wgmma that only
/// accumulates into it: the group must be retired there, so a release of the stages it read
/// costs no extra wait.
enum FirstUse {
    /// At this op of the body, in the same iteration.
    Here(usize),
    /// At this op of the body, in the next iteration (through a loop-carried value).
    Next(usize),
    /// Nowhere in the loop.
    Never,
}

/// Whether `o` uses a value of `set`; a wgmma that only accumulates into one adds its result
/// to `set` instead.
fn needs(o: &Operation, set: &mut HashSet<Value>) -> bool {
    if let Some(p) = tilec_dialect::ops::mma_operands(o).filter(|_| o.kind == OpKind::Mma) {
        if set.contains(&p.acc) && !set.contains(&p.a) && !set.contains(&p.b) {
            set.extend(o.results.iter().copied());
            return false;
        }
    }
    let mut used = false;
    o.walk(&mut |x| used |= x.operands.iter().any(|v| set.contains(v)));
    used
}

/// [`FirstUse`] of the result of `body[at]`, a wgmma; `args` are the body's block arguments.
fn first_use(body: &[Operation], at: usize, args: &[Value]) -> FirstUse {
    let mut set: HashSet<Value> = body[at].results.iter().copied().collect();
    for (i, o) in body.iter().enumerate().skip(at + 1) {
        if o.kind == OpKind::Yield {
            let mut carried: HashSet<Value> = o
                .operands
                .iter()
                .enumerate()
                .filter(|(_, v)| set.contains(v))
                .filter_map(|(k, _)| args.get(k + 1).copied())
                .collect();
            for (q, o2) in body.iter().enumerate() {
                if o2.kind == OpKind::Yield {
                    break;
                }
                if needs(o2, &mut carried) {
                    return FirstUse::Next(q);
                }
            }
            return FirstUse::Never;
        }
        if needs(o, &mut set) {
            return FirstUse::Here(i);
        }
    }
    FirstUse::Never
}

/// Inserts into `body` (a pipelined loop's, with `warp-specialize`) each ring's release:
/// `tile.mbarrier_arrive %empty, %stage` before the op where the wgmmas that read the stage
/// must have retired anyway ([`FirstUse`]); where that is only in the next iteration, the
/// previous iteration's stage is released there (`tile.if %later`), and where it is nowhere,
/// at the end of the body.
fn insert_releases(
    body: &mut Vec<Operation>,
    args: &[Value],
    rings: &[(Value, Value)],
    c: Counter,
    loc: &Location,
) -> Vec<Value> {
    let mut held = vec![];
    let mut at: Vec<(usize, Operation)> = vec![];
    let end = body.len().saturating_sub(1);
    for &(buf, empty) in rings {
        let readers: Vec<usize> = (0..body.len())
            .filter(|&i| {
                body[i].kind == OpKind::Mma
                    && tilec_dialect::ops::mma_operands(&body[i])
                        .is_some_and(|p| p.a == buf || p.b == buf)
            })
            .collect();
        let (mut here, mut next, mut current) = (0, 0, true);
        for &r in &readers {
            match first_use(body, r, args) {
                FirstUse::Here(p) => here = here.max(p),
                FirstUse::Next(q) => (current, next) = (false, next.max(q)),
                FirstUse::Never => (current, next) = (false, end),
            }
        }
        if readers.is_empty() {
            continue;
        }
        let mut arrive = Operation::new(OpKind::MbarrierArrive, loc.clone());
        if current {
            arrive.operands = vec![empty, c.stage];
            at.push((here, arrive));
        } else {
            arrive.operands = vec![empty, c.prev];
            at.push((next, Operation::if_then(c.later, vec![arrive], loc.clone())));
            held.push(empty);
        }
    }
    at.sort_by_key(|(i, _)| std::cmp::Reverse(*i));
    for (i, o) in at {
        body.insert(i, o);
    }
    held
}

/// After a pipelined loop `lb .. ub` (step `step`) in a persistent kernel's tile body: the
/// ring iterations of this and the earlier tiles, `base + ceildiv(max(ub - lb, 0), step)`.
fn count_after(e: &mut Emit, base: Value, [lb, ub, step]: [Value; 3]) -> Value {
    let d = e.index(OpKind::SubI, ub, lb);
    let c0 = e.constant(0);
    let d = e.index(OpKind::MaxI, d, c0);
    let n = e.index(OpKind::CeilDiv, d, step);
    e.index(OpKind::AddI, base, n)
}

/// The release, after a pipelined loop of a persistent kernel, of the stage that the loop's
/// last iteration took from each ring of `held` (one whose release waits for the next
/// iteration, [`insert_releases`]): `(next - 1) mod stages` where the loop ran (`base <
/// next`), so that the producer may refill it for a later tile.
fn release_last(e: &mut Emit, held: &[Value], [base, next]: [Value; 2], stages: u64) {
    if held.is_empty() {
        return;
    }
    let go = e.less(base, next);
    let k = e.constant(stages as i64 - 1);
    let x = e.index(OpKind::AddI, next, k);
    let cs = e.constant(stages as i64);
    let last = e.index(OpKind::RemI, x, cs);
    let arrives = held
        .iter()
        .map(|&empty| {
            let mut a = Operation::new(OpKind::MbarrierArrive, e.loc.clone());
            a.operands = vec![empty, last];
            a
        })
        .collect();
    guarded(e, go, arrives);
}

/// Makes kernel `k` (its loop rewritten by [`Rewrite::pipeline_specialized`]) a
/// `tile.warp_specialize`: the rings' buffers and barriers first, then region 0, the
/// producer (the scalar integer ops its loop uses, computed again, and the loop), and
/// region 1, the consumers (the rest of the kernel); `block` gains the producer warpgroup.
fn specialize(m: &mut Module, k: &mut Operation, sp: Specialized) {
    let warps = k.int_attr("num_warps").unwrap_or(4);
    let loc = k.loc.clone();
    let ops = std::mem::take(&mut k.regions[0].ops);
    let (mut head, mut consumer, mut tail) = (vec![], vec![], vec![]);
    for o in ops {
        if o.kind == OpKind::Return {
            tail.push(o);
        } else if o.kind == OpKind::SmemAlloc && o.results.iter().any(|r| sp.shared.contains(r)) {
            head.push(o);
        } else {
            consumer.push(o);
        }
    }
    head.extend(sp.allocs);
    let top_defs: HashMap<Value, Operation> = consumer
        .iter()
        .filter(|o| is_index_op(o.kind) && o.regions.is_empty())
        .flat_map(|o| o.results.first().map(|&r| (r, o.clone())))
        .collect();
    let mut producer = sp.producer;
    if let Some(t) = sp.tiles {
        producer = tile_loops(m, &mut consumer, t, producer, &loc);
    }
    let mut used = vec![];
    for o in &producer {
        o.walk(&mut |x| used.extend(x.operands.iter().copied()));
    }
    let mut region0 = vec![];
    let mut memo = HashMap::new();
    {
        let mut e = Emit {
            m,
            out: &mut region0,
            loc: loc.clone(),
        };
        for v in used {
            if top_defs.contains_key(&v) {
                recompute(&mut e, &top_defs, &mut memo, v);
            }
        }
    }
    for o in &mut producer {
        o.walk_mut(&mut |x| {
            for v in &mut x.operands {
                if let Some(&c) = memo.get(v) {
                    *v = c;
                }
            }
        });
    }
    region0.extend(producer);
    region0.push(Operation::new(OpKind::Yield, loc.clone()));
    consumer.push(Operation::new(OpKind::Yield, loc.clone()));
    let mut ws = Operation::new(OpKind::WarpSpecialize, loc.clone());
    ws.attrs
        .insert("consumers".into(), Attribute::Int(warps / 4));
    ws.regions = vec![
        Block {
            args: vec![],
            ops: region0,
        },
        Block {
            args: vec![],
            ops: consumer,
        },
    ];
    head.push(ws);
    head.extend(tail);
    k.regions[0].ops = head;
    k.attrs.insert(
        "block".into(),
        Attribute::Array(vec![
            Attribute::Int(32 * warps + 128),
            Attribute::Int(1),
            Attribute::Int(1),
        ]),
    );
}

/// In a persistent kernel being split by [`specialize`]: makes the consumers' tile loop
/// (among `consumer`, the kernel body's ops) carry the ring iteration count `t.consumer`
/// (from 0), and returns the producer's tile loop: the same tiles, carrying `t.producer`,
/// with the tile body's scalar ops that `producer` (its pipelined loop) uses computed again.
fn tile_loops(
    m: &mut Module,
    consumer: &mut Vec<Operation>,
    t: Tiles,
    producer: Vec<Operation>,
    loc: &Location,
) -> Vec<Operation> {
    let (Some(cnext), Some(pnext)) = (t.consumer_next, t.producer_next) else {
        return producer;
    };
    let Some(ti) = consumer.iter().position(|o| {
        o.kind == OpKind::For && o.attr("tile_loop").and_then(Attribute::as_bool) == Some(true)
    }) else {
        return producer;
    };
    let zero = |m: &mut Module| {
        let v = m.new_value(Type::INDEX, None);
        let mut o = Operation::new(OpKind::Constant, loc.clone());
        o.attrs.insert("value".into(), Attribute::Int(0));
        o.results.push(v);
        (v, o)
    };
    let (c0, def) = zero(m);
    consumer.insert(ti, def);
    let tl = &mut consumer[ti + 1];
    let tiv = tl.regions[0].args[0];
    let bounds = tl.operands[..3].to_vec();
    let attrs = tl.attrs.clone();
    tl.operands.push(c0);
    tl.regions[0].args.push(t.consumer);
    tl.results.push(m.new_value(Type::INDEX, None));
    let body = &mut tl.regions[0].ops;
    if let Some(y) = body.last_mut().filter(|y| y.kind == OpKind::Yield) {
        y.operands.push(cnext);
    }
    let tile_defs: HashMap<Value, Operation> = body
        .iter()
        .filter(|o| is_index_op(o.kind) && o.regions.is_empty())
        .flat_map(|o| o.results.first().map(|&r| (r, o.clone())))
        .collect();
    let piv = m.new_value(Type::INDEX, None);
    let mut pbody = vec![];
    let mut memo = HashMap::from([(tiv, piv)]);
    let mut used = vec![];
    for o in &producer {
        o.walk(&mut |x| used.extend(x.operands.iter().copied()));
    }
    {
        let mut e = Emit {
            m,
            out: &mut pbody,
            loc: loc.clone(),
        };
        for v in used {
            recompute(&mut e, &tile_defs, &mut memo, v);
        }
    }
    let mut producer = producer;
    for o in &mut producer {
        o.walk_mut(&mut |x| {
            for v in &mut x.operands {
                if let Some(&c) = memo.get(v) {
                    *v = c;
                }
            }
        });
    }
    pbody.extend(producer);
    let mut y = Operation::new(OpKind::Yield, loc.clone());
    y.operands = vec![pnext];
    pbody.push(y);
    let (p0, pdef) = zero(m);
    let mut pl = Operation::new(OpKind::For, loc.clone());
    pl.operands = bounds;
    pl.operands.push(p0);
    pl.attrs = attrs;
    pl.results.push(m.new_value(Type::INDEX, None));
    pl.regions = vec![Block {
        args: vec![piv, t.producer],
        ops: pbody,
    }];
    vec![pdef, pl]
}

impl Rewrite<'_> {
    /// [`Rewrite::pipeline`] with `warp-specialize`: the rings' barriers go to
    /// [`Specialized::allocs`] (a full and an empty array per ring), the copies to the
    /// producer's loop over the same iterations, which waits for each stage's release before
    /// it refills it; the body keeps its full-barrier waits and gains the releases
    /// ([`insert_releases`]).
    fn pipeline_specialized(
        &mut self,
        out: &mut Vec<Operation>,
        mut f: Operation,
        cands: Vec<Cand>,
    ) {
        let mut sp = self.ws.take().expect("warp-specialized rewrite");
        let loc = f.loc.clone();
        let (lb, ub, step) = (f.operands[0], f.operands[1], f.operands[2]);
        let iv = f.regions[0].args[0];
        let s = self.stages;
        let warps = sp.consumer_warps;
        let mut rings = vec![];
        let mut empties = vec![];
        for c in cands {
            let Type::Smem { shape, elem, .. } = self.m.ty(c.buf).clone() else {
                continue;
            };
            self.m.values[c.buf.0 as usize].ty = Type::Smem {
                stages: s,
                shape,
                elem,
            };
            let mut bars = vec![];
            for count in [1, warps as i64] {
                let b = self.m.new_value(Type::Mbarrier { count: s }, None);
                let mut a = Operation::new(OpKind::MbarrierAlloc, loc.clone());
                a.attrs.insert("arrive_count".into(), Attribute::Int(count));
                a.results.push(b);
                sp.allocs.push(a);
                bars.push(b);
            }
            sp.shared.extend([c.buf, bars[0], bars[1]]);
            empties.push(bars[1]);
            rings.push(Ring {
                cand: c,
                full: bars[0],
                stage: None,
            });
        }
        let index_defs: HashMap<Value, Operation> = f.regions[0]
            .ops
            .iter()
            .filter(|o| is_index_op(o.kind) && o.regions.is_empty())
            .flat_map(|o| o.results.first().map(|&r| (r, o.clone())))
            .collect();
        // The producer: per iteration and ring, wait for the stage's release, then copy.
        let j = self.m.new_value(Type::INDEX, None);
        let mut pbody = vec![];
        {
            let mut e = Emit {
                m: self.m,
                out: &mut pbody,
                loc: loc.clone(),
            };
            let base = sp.tiles.as_ref().map(|t| t.producer);
            let c = Counter::emit(&mut e, [j, lb, step], base, s);
            let c1 = e.constant(1);
            let released = e.index(OpKind::SubI, c1, c.phase);
            for (r, &empty) in rings.iter().zip(&empties) {
                e.out.push(wait_op(&loc, empty, c.stage, released));
                let mut memo = HashMap::from([(iv, j)]);
                let coords: Vec<Value> = r
                    .cand
                    .coords
                    .iter()
                    .map(|&x| recompute(&mut e, &index_defs, &mut memo, x))
                    .collect();
                let mut ex = Operation::new(OpKind::MbarrierExpectTx, loc.clone());
                ex.operands = vec![r.full, c.stage];
                ex.attrs
                    .insert("bytes".into(), Attribute::Int(r.cand.bytes as i64));
                e.out.push(ex);
                let mut operands = vec![r.cand.tensor, r.cand.buf, r.full, c.stage];
                operands.extend(coords);
                e.op(OpKind::TmaLoad, &operands, None);
            }
            e.op(OpKind::Yield, &[], None);
        }
        let mut pf = Operation::new(OpKind::For, loc.clone());
        pf.operands = vec![lb, ub, step];
        pf.regions = vec![Block {
            args: vec![j],
            ops: pbody,
        }];
        sp.producer.push(pf);
        let base = sp.tiles.as_ref().map(|t| t.consumer);
        if let Some(t) = &mut sp.tiles {
            let mut e = Emit {
                m: self.m,
                out: &mut sp.producer,
                loc: loc.clone(),
            };
            t.producer_next = Some(count_after(&mut e, t.producer, [lb, ub, step]));
        }
        // The wgmmas issued one iteration ahead (mma-lookahead), and iteration 0's issue of
        // each before the loop, after the wait for stage 0 when the loop runs at all.
        let ahead = if self.lookahead {
            lookahead_mmas(self.m, &f, &rings)
        } else {
            vec![]
        };
        let ahead_ring = |ri: usize| ahead.iter().any(|a| a.rings.contains(&ri));
        let inits = issue_first(
            &mut Emit {
                m: self.m,
                out: &mut *out,
                loc: loc.clone(),
            },
            &ahead,
            &rings,
            [lb, ub],
            base,
            s,
        );
        let (carried, subst) = carry(self.m, &ahead);
        let mut next = vec![None; ahead.len()];
        // The consumers: the body with each load replaced by the wait for its stage; a
        // wgmma issued ahead becomes the next iteration's issue (after the wait for the next
        // stage, when there is a next iteration), its uses taking the carried result.
        let ops = std::mem::take(&mut f.regions[0].ops);
        let mut body = vec![];
        let c = Counter::emit(
            &mut Emit {
                m: self.m,
                out: &mut body,
                loc: loc.clone(),
            },
            [iv, lb, step],
            base,
            s,
        );
        let points = issue_points(&ops, &ahead);
        let mut deferred: Vec<Option<Value>> = vec![None; ahead.len()];
        let mut skip_sync = 0;
        for (idx, mut o) in ops.into_iter().enumerate() {
            for ai in (0..ahead.len()).filter(|&ai| points[ai] == idx) {
                let Some(acc) = deferred[ai].take() else {
                    continue;
                };
                let mut e = Emit {
                    m: self.m,
                    out: &mut body,
                    loc: o.loc.clone(),
                };
                let nx = e.index(OpKind::AddI, iv, step);
                let go = e.less(nx, ub);
                let (stage, phase) = c.next(&mut e, s);
                next[ai] = Some(issue_when(
                    &mut e,
                    &ahead[ai],
                    &rings,
                    go,
                    [stage, phase],
                    acc,
                ));
            }
            if dropped(&o, &rings, &mut skip_sync) {
                continue;
            }
            if let Some(ai) = ahead.iter().position(|a| o.results == a.op.results) {
                let acc = tilec_dialect::ops::mma_operands(&o).expect("an mma").acc;
                deferred[ai] = Some(acc);
                continue;
            }
            o.walk_mut(&mut |x| {
                for v in &mut x.operands {
                    if let Some(&c) = subst.get(v) {
                        *v = c;
                    }
                }
            });
            if o.kind == OpKind::Yield {
                o.operands.extend(next.iter().flatten());
                body.push(o);
                continue;
            }
            match o
                .results
                .first()
                .and_then(|&v| rings.iter().position(|r| r.cand.load == v))
            {
                Some(ri) if ahead_ring(ri) => {}
                Some(ri) => {
                    body.push(wait_op(&o.loc, rings[ri].full, c.stage, c.phase));
                    rings[ri].stage = Some(c.stage);
                }
                None => body.push(o),
            }
        }
        let pairs: Vec<(Value, Value)> = rings
            .iter()
            .enumerate()
            .filter(|&(ri, _)| !ahead_ring(ri))
            .map(|(ri, r)| (r.cand.buf, empties[ri]))
            .collect();
        let held = insert_releases(&mut body, &f.regions[0].args, &pairs, c, &loc);
        // A ring read ahead: this iteration's stage was read by the wgmma issued in the
        // previous iteration (or before the loop), whose carried result must have retired
        // where it is first needed; release it there.
        for (a, &cv) in ahead.iter().zip(&carried) {
            let mut set = HashSet::from([cv]);
            let at = body
                .iter()
                .position(|o| o.kind == OpKind::Yield || needs(o, &mut set))
                .unwrap_or(body.len().saturating_sub(1));
            for &ri in &a.rings {
                let mut arrive = Operation::new(OpKind::MbarrierArrive, loc.clone());
                arrive.operands = vec![empties[ri], c.stage];
                body.insert(at, arrive);
            }
        }
        self.issued_ahead += ahead.len() as u64;
        f.operands.extend(inits);
        f.regions[0].args.extend(carried.iter().copied());
        for a in &ahead {
            let ty = self.m.ty(a.op.results[0]).clone();
            let r = self.m.new_value(ty, None);
            f.results.push(r);
        }
        f.regions[0].ops = body;
        read_stages(self.m, &mut f, &rings);
        if !ahead.is_empty() {
            carry_fragments(self.m, &mut f, out, &loc);
        }
        out.push(f);
        if let (Some(t), Some(base)) = (&mut sp.tiles, base) {
            let mut e = Emit {
                m: self.m,
                out: &mut *out,
                loc: loc.clone(),
            };
            let next = count_after(&mut e, base, [lb, ub, step]);
            release_last(&mut e, &held, [base, next], s);
            t.consumer_next = Some(next);
        }
        self.ws = Some(sp);
    }
}
