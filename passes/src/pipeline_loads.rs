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
//! Options: `stages` (2 to 8, default 2). Statistics: `loads-pipelined`.

use crate::pass::{OptionInfo, OptionKind, Pass, PassContext, PassInfo, PassOptions};
use std::collections::{HashMap, HashSet};
use tilec_dialect::{
    Attribute, Block, Diagnostics, Location, Module, OpClass, OpKind, Operation, Type, Value,
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
        Ok(PipelineLoads {
            stages,
            mma_lookahead: o.bool("mma-lookahead"),
        })
    }
}

impl Pass for PipelineLoads {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let mut kernels = std::mem::take(&mut m.ops);
        let (mut n, mut ahead) = (0, 0);
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
                continue;
            }
            n += cands.len() as u64;
            let mut rw = Rewrite {
                m,
                stages: self.stages,
                lookahead: self.mma_lookahead,
                issued_ahead: 0,
                cands,
                next_loop: 0,
            };
            let mut body = std::mem::take(&mut k.regions[0]);
            rw.block(&mut body);
            k.regions[0] = body;
            ahead += rw.issued_ahead;
        }
        m.ops = kernels;
        cx.stat("loads-pipelined", n);
        cx.stat("mmas-issued-ahead", ahead);
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
        // Iteration 0's issue of each wgmma issued ahead. Its barrier waits are skipped when
        // the loop runs no iteration (no copy was issued); the wgmma then reads a stage no
        // copy writes, and its result is not used.
        let mut inits = vec![];
        if !ahead.is_empty() {
            let c0 = e.constant(0);
            let go = e.less(lb, ub);
            for a in &ahead {
                let waits: Vec<Operation> = a
                    .rings
                    .iter()
                    .map(|&ri| wait_op(&e.loc, rings[ri].full, c0, c0))
                    .collect();
                guarded(&mut e, go, waits);
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
                inits.push(issue(&mut e, a, &rings, c0, acc));
            }
        }
        // The body: at each load, the copy S-1 iterations ahead and the wait for this one;
        // at a wgmma issued ahead, the next iteration's issue, and after the first use of
        // this iteration's (carried) result, the copies into the stages it read.
        let carried: Vec<Value> = ahead
            .iter()
            .map(|a| self.m.new_value(self.m.ty(a.op.results[0]).clone(), None))
            .collect();
        let subst: HashMap<Value, Value> = ahead
            .iter()
            .zip(&carried)
            .map(|(a, &c)| (a.op.results[0], c))
            .collect();
        let mut next = vec![None; ahead.len()];
        let mut pending: Vec<(usize, Iteration)> = vec![];
        let ops = std::mem::take(&mut f.regions[0].ops);
        let mut body = vec![];
        let mut counter: Option<Iteration> = None;
        let mut skip_sync = 0;
        for mut o in ops {
            if skip_sync > 0 && matches!(o.kind, OpKind::FenceProxyAsync | OpKind::Barrier) {
                skip_sync -= 1;
                continue;
            }
            skip_sync = 0;
            if o.kind == OpKind::SmemStore && rings.iter().any(|r| r.cand.buf == o.operands[1]) {
                skip_sync = 2;
                continue;
            }
            let chained = o
                .results
                .first()
                .is_some_and(|v| rings.iter().any(|r| r.cand.chain.contains(v)));
            if o.kind != OpKind::Load && chained {
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
                let waits: Vec<Operation> = ahead[ai]
                    .rings
                    .iter()
                    .map(|&ri| wait_op(&e.loc, rings[ri].full, it.stage, it.phase))
                    .collect();
                guarded(&mut e, go, waits);
                let acc = tilec_dialect::ops::mma_operands(&o).expect("an mma").acc;
                next[ai] = Some(issue(&mut e, &ahead[ai], &rings, it.stage, acc));
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
        // The wgmma reads: each pipelined ring at its iteration's stage.
        let stage_of: HashMap<Value, Value> = rings
            .iter()
            .filter_map(|r| Some((r.cand.buf, r.stage?)))
            .collect();
        let mut a_in_regs = HashSet::new();
        f.walk(&mut |o| {
            if let Some(p) = tilec_dialect::ops::mma_operands(o) {
                if !matches!(self.m.try_ty(p.a), Some(Type::Smem { .. })) {
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
        out.push(f);
    }
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
