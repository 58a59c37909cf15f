//! `tile-dot-to-wgmma` — a laid-out `tile.dot` as Hopper's warpgroup MMA, with its
//! shared-memory operands staged where they are defined.
//!
//! In a kernel with a plain launch (laid out by `tile-assign-layouts`) for a target with
//! `wgmma.mma_async` (sm_90a), each `tile.dot` whose accumulator is the wgmma fragment
//! becomes the GPU-level sequence that `async-wait-placement` then completes with commits,
//! fences and the tightest waits:
//!
//! ```text
//! %x = ...                                        // an operand read from shared memory
//! tile.smem_store %x, %x_smem, %c0                // right after its definition
//! tile.fence_proxy_async                          // generic-proxy writes before wgmma reads
//! tile.barrier                                    // every thread's part is written
//! ...
//! %r = tile.mma %a|%a_smem, %b_smem, %c0, %c {kind = "wgmma", b_major = "k"|"n"}
//! ```
//!
//! - **A** defined outside the innermost loop around the dot (attention's Q) is staged in
//!   shared memory (the "SS" form: stored once, no registers held across the loop) when its
//!   register fragment would take more than [`RS_MAX_REGISTERS`] registers per thread;
//!   it must then be a power-of-two `[16·warps, K]` tile with K spanning at least one
//!   128-byte swizzle row. A smaller one stays in registers, which leaves its shared memory
//!   to more CTAs per SM. Any other A stays in registers: the
//!   register-A ("RS") form of `wgmma.mma_async` (PTX ISA §9.7.15.5.1), whose fragment for
//!   m64nNk16 is, per warp, the `mma.sync.m16n8k16` A fragment — the layout
//!   `tile-assign-layouts` gives A ([`LinearLayout::dot_operand_a`]); an accumulator of
//!   `[m, k]` is the same layout, so attention's P feeds P·V where Q·Kᵀ left it.
//! - **B** is written into its own `smem<1 x R x C>` buffer (`swizzle = 128`), as rows
//!   along the dimension its registers run in: `[N][K]` (`b_major = "k"`) when they run
//!   along K (a transposed load, `Kᵀ`: the transpose is folded away), `[K][N]`
//!   (`b_major = "n"`) otherwise.
//! - A staged value is stored right after its definition (a loop's carried value at the
//!   top of the body), so its registers die there, and the store's latency overlaps what
//!   follows; a value behind `tile.convert_layout` is stored as it was before the
//!   conversion (a store takes any layout), and the conversion, now unused, is left for
//!   `dce`.
//! - **C** is the wgmma accumulator: the `[16·warps, n]` result laid out by
//!   [`LinearLayout::dot_accumulator`] with every warp along M is, warpgroup by warpgroup,
//!   the m64nN D fragment. A C defined by `tile.zeros` adds `zero_acc = true`.
//!
//! Each buffer has one stage: `async-wait-placement` drains the group that reads it before
//! the next store overwrites it (an overwrite hazard, `crate::async_model`).
//!
//! A dot stays a `tile.dot` (lowered with `mma.sync`) when the wgmma form does not fit:
//! operands other than bf16/f16 into f32, a tf32 `precision`, warps not a multiple of 4 or
//! not all along M (M ≠ 16 · warps), N above 256, B not a power-of-two tile or its
//! contiguous dimension under 128 bytes (one swizzle row).
//!
//! Options: `stage-invariant-a` (`auto`, the default, chooses by the fragment's registers
//! as above; `true` stages every such A that fits the SS form; `false` keeps it in
//! registers, the RS form, where its layout allows). Statistics: `dots-to-wgmma`,
//! `dots-on-mma-sync` (dots left for mma.sync on a wgmma target).

use crate::pass::{OptionInfo, OptionKind, Pass, PassContext, PassInfo, PassOptions};
use std::collections::{HashMap, HashSet};
use tilec_dialect::{
    Attribute, Block, Diagnostics, LinearLayout, Location, Module, OpKind, Operation, ScalarType,
    Target, Type, Value,
};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "tile-dot-to-wgmma",
    summary: "Turn laid-out dots into wgmma, staging their shared-memory operands",
    description: "In a laid-out kernel for a wgmma target (sm_90a), each 'tile.dot' whose \
        accumulator is the wgmma fragment becomes 'tile.mma {kind = \"wgmma\"}': B, and A \
        when it is defined outside the loop around the dot, are written into 128-byte-swizzled \
        buffers with 'tile.smem_store', 'tile.fence_proxy_async' and 'tile.barrier' right after \
        their definition (with stage-invariant-a=auto, such an A only where its fragment takes \
        more than 32 registers per thread); any other A stays in registers (the register-A \
        form). Run 'dce' and \
        'async-wait-placement' after it.\n\n\
        Example: tile-opt --pass-pipeline='tile-assign-layouts{target=sm_90a},\
        tile-dot-to-wgmma,dce,async-wait-placement' examples/attention_fwd.tile",
    options: &[OptionInfo {
        name: "stage-invariant-a",
        kind: OptionKind::Enum(&["auto", "true", "false"]),
        default: "auto",
        help: "Stage an A defined outside the loop around its dot in shared memory (the SS \
            form): auto where its register fragment would take more than 32 registers per \
            thread, true always, false never (the RS form, where its layout allows)",
    }],
};

/// The most registers per thread a loop-invariant A's fragment may take and stay in
/// registers under `stage-invariant-a=auto`. Attention's Q at head dim 128 (32 registers)
/// then stays, and the 16 KB it would stage go to a third CTA per SM (with the lowering's
/// scratch taking dead buffers' bytes): 10–17 % faster on the H200 (docs/performance.md,
/// session 33); at head dim 256 (64 registers) the RS form spills and is 22 % slower.
pub const RS_MAX_REGISTERS: u64 = 32;

/// Where a loop-invariant A goes (`stage-invariant-a`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageA {
    /// Shared memory where its fragment exceeds [`RS_MAX_REGISTERS`].
    Auto,
    /// Shared memory wherever the SS form fits.
    Always,
    /// Registers.
    Never,
}

/// Bytes of one row of the 128-byte swizzle: a staged operand's contiguous dimension spans
/// at least this many.
const SWIZZLE_BYTES: u64 = 128;

/// The pass.
pub struct DotToWgmma {
    /// The `stage-invariant-a` option.
    pub stage_invariant_a: StageA,
}

impl DotToWgmma {
    /// From the pass options.
    pub fn from_options(o: &PassOptions) -> Self {
        DotToWgmma {
            stage_invariant_a: match o.get("stage-invariant-a") {
                "true" => StageA::Always,
                "false" => StageA::Never,
                _ => StageA::Auto,
            },
        }
    }
}

impl Pass for DotToWgmma {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let mut kernels = std::mem::take(&mut m.ops);
        for k in &mut kernels {
            let target = k.str_attr("target").and_then(Target::from_name);
            let warps = k.int_attr("num_warps");
            let (Some(t), Some(w)) = (target, warps) else {
                continue;
            };
            if k.kind != OpKind::Kernel || !t.has_wgmma() || k.regions.is_empty() {
                continue;
            }
            let (done, left) = rewrite_kernel(m, k, w as u64, self.stage_invariant_a);
            cx.stat("dots-to-wgmma", done);
            cx.stat("dots-on-mma-sync", left);
        }
        m.ops = kernels;
        Ok(())
    }
}

/// How one dot becomes a wgmma.
#[derive(Clone, Copy)]
struct Plan {
    /// A is staged in shared memory (the "SS" form): it is defined outside the innermost
    /// loop around the dot.
    a_smem: bool,
    /// B is stored `[N][K]` (rows along K).
    k_major: bool,
    /// The value stored: B, or the `[N, K]` tile B is the transpose of.
    rows: Option<Value>,
}

/// What the rewrite of a kernel needs to know about values defined before a dot.
#[derive(Default)]
struct Defs {
    /// Values defined by `tile.zeros`.
    zeros: HashSet<Value>,
    /// `tile.transpose` results and their operand.
    transposed: HashMap<Value, Value>,
    /// `tile.convert_layout` results and their operand.
    converted: HashMap<Value, Value>,
    /// The loops (pre-order ids of `tile.for`/`tile.while`) around each value's definition,
    /// outermost first; values absent are outside every loop.
    loops: HashMap<Value, Vec<u32>>,
    /// The plan of each dot that fits, by its result.
    plans: HashMap<Value, Plan>,
    /// The values stored into shared memory right after their definition: A operands
    /// defined outside the loop around their dot, and B operands (or the `[N, K]` tile a
    /// B is the transpose of).
    staged: HashSet<Value>,
}

impl Defs {
    /// Records the loops around every value defined in `b`, inside `chain`.
    fn record_loops(&mut self, b: &Block, chain: &mut Vec<u32>, next: &mut u32) {
        for &a in &b.args {
            self.loops.insert(a, chain.clone());
        }
        for op in &b.ops {
            for &r in &op.results {
                self.loops.insert(r, chain.clone());
            }
            let is_loop = matches!(op.kind, OpKind::For | OpKind::While);
            if is_loop {
                chain.push(*next);
                *next += 1;
            }
            for r in &op.regions {
                self.record_loops(r, chain, next);
            }
            if is_loop {
                chain.pop();
            }
        }
    }

    /// The value whose elements `v` holds in another layout: `v` itself, or the operand of
    /// the layout conversions that made it (a store to shared memory takes any layout).
    fn source(&self, mut v: Value) -> Value {
        while let Some(&x) = self.converted.get(&v) {
            v = x;
        }
        v
    }

    /// Whether `a`, an operand of the dot defining `res`, is defined outside the innermost
    /// loop around that dot (so it is the same in every iteration).
    fn loop_invariant(&self, a: Value, res: Value) -> bool {
        let (Some(la), Some(ld)) = (self.loops.get(&a), self.loops.get(&res)) else {
            return false;
        };
        ld.last().is_some_and(|inner| !la.contains(inner))
    }
}

/// Rewrites the fitting dots of kernel `k`; returns (rewritten, left).
fn rewrite_kernel(
    m: &mut Module,
    k: &mut Operation,
    warps: u64,
    stage_invariant_a: StageA,
) -> (u64, u64) {
    let mut defs = Defs::default();
    k.walk(&mut |o| match o.kind {
        OpKind::Zeros => defs.zeros.extend(o.results.first().copied()),
        OpKind::Transpose => {
            if let (Some(&r), Some(&x)) = (o.results.first(), o.operands.first()) {
                defs.transposed.insert(r, x);
            }
        }
        OpKind::ConvertLayout => {
            if let (Some(&r), Some(&x)) = (o.results.first(), o.operands.first()) {
                defs.converted.insert(r, x);
            }
        }
        _ => {}
    });
    defs.record_loops(&k.regions[0], &mut vec![], &mut 0);
    let (mut staged, mut plans) = (HashSet::new(), HashMap::new());
    k.walk(&mut |o| {
        if o.kind == OpKind::Dot {
            if let Some(p) = plan(m, o, warps, &defs, stage_invariant_a) {
                plans.insert(o.results[0], p);
                if p.a_smem {
                    staged.insert(defs.source(o.operands[0]));
                }
                match (p.k_major, p.rows) {
                    (false, _) => {
                        staged.insert(defs.source(o.operands[1]));
                    }
                    (true, Some(x)) => {
                        staged.insert(defs.source(x));
                    }
                    (true, None) => {}
                }
            }
        }
    });
    defs.staged = staged;
    defs.plans = plans;
    let mut cx = Rewrite {
        m,
        defs: &defs,
        prelude: vec![],
        c0: None,
        bufs: HashMap::new(),
        counts: (0, 0),
    };
    let mut body = std::mem::take(&mut k.regions[0]);
    cx.block(&mut body);
    let (prelude, counts) = (cx.prelude, cx.counts);
    body.ops.splice(0..0, prelude);
    k.regions[0] = body;
    counts
}

/// The state of one kernel's rewrite.
struct Rewrite<'a> {
    m: &'a mut Module,
    defs: &'a Defs,
    /// Ops for the kernel's top: the constant 0 and the buffers.
    prelude: Vec<Operation>,
    c0: Option<Value>,
    /// The buffer each staged value was stored into.
    bufs: HashMap<Value, Value>,
    /// (rewritten, left).
    counts: (u64, u64),
}

impl Rewrite<'_> {
    /// The index constant 0, defined once in the prelude.
    fn zero(&mut self) -> Value {
        if let Some(z) = self.c0 {
            return z;
        }
        let v = self.m.new_value(Type::INDEX, Some("c0".into()));
        let mut o = Operation::new(OpKind::Constant, Location::unknown());
        o.attrs.insert("value".into(), Attribute::Int(0));
        o.results.push(v);
        self.prelude.push(o);
        self.c0 = Some(v);
        v
    }

    /// A one-stage `[rows][cols]` buffer with the 128-byte swizzle, allocated in the prelude.
    fn alloc(&mut self, shape: Vec<u64>, elem: ScalarType, name: &str, loc: &Location) -> Value {
        let buf = self.m.new_value(
            Type::Smem {
                stages: 1,
                shape,
                elem,
            },
            Some(name.into()),
        );
        let mut alloc = Operation::new(OpKind::SmemAlloc, loc.clone());
        alloc.attrs.insert("swizzle".into(), Attribute::Int(128));
        alloc.results.push(buf);
        self.prelude.push(alloc);
        buf
    }

    /// Appends `smem_store %t, %buf, %c0; fence_proxy_async; barrier` to `out`.
    fn store(&mut self, out: &mut Vec<Operation>, t: Value, buf: Value, loc: &Location) {
        let zero = self.zero();
        let mut store = Operation::new(OpKind::SmemStore, loc.clone());
        store.operands = vec![t, buf, zero];
        out.push(store);
        out.push(Operation::new(OpKind::FenceProxyAsync, loc.clone()));
        out.push(Operation::new(OpKind::Barrier, loc.clone()));
    }

    /// Stores `v`, just defined, into its own buffer when a dot reads it from shared memory:
    /// its registers are dead from here on, and the store's latency overlaps what follows.
    fn stage(&mut self, out: &mut Vec<Operation>, v: Value, loc: &Location) {
        if !self.defs.staged.contains(&v) || self.bufs.contains_key(&v) {
            return;
        }
        let Some((shape, elem, _)) = laid_out(self.m, v).map(|(s, e, l)| (s.to_vec(), e, l)) else {
            return;
        };
        let buf = self.alloc(shape, elem, "smem", loc);
        self.store(out, v, buf, loc);
        self.bufs.insert(v, buf);
    }

    fn block(&mut self, b: &mut Block) {
        let ops = std::mem::take(&mut b.ops);
        for &a in &b.args.clone() {
            let loc = ops
                .first()
                .map(|o| o.loc.clone())
                .unwrap_or_else(Location::unknown);
            self.stage(&mut b.ops, a, &loc);
        }
        for mut op in ops {
            for r in &mut op.regions {
                self.block(r);
            }
            if op.kind != OpKind::Dot {
                let (results, loc) = (op.results.clone(), op.loc.clone());
                b.ops.push(op);
                for r in results {
                    self.stage(&mut b.ops, r, &loc);
                }
                continue;
            }
            match op
                .results
                .first()
                .and_then(|r| self.defs.plans.get(r))
                .copied()
            {
                Some(p) => {
                    self.counts.0 += 1;
                    self.dot(&mut b.ops, op, p);
                }
                None => {
                    self.counts.1 += 1;
                    b.ops.push(op);
                }
            }
        }
    }

    /// Appends the wgmma form of dot `op` to `out`.
    fn dot(&mut self, out: &mut Vec<Operation>, op: Operation, plan: Plan) {
        let loc = op.loc.clone();
        let (a, bv) = (op.operands[0], op.operands[1]);
        let a_op = if plan.a_smem {
            match self.bufs.get(&self.defs.source(a)) {
                Some(&buf) => buf,
                None => {
                    out.push(op);
                    return;
                }
            }
        } else {
            a
        };
        let Some((b_shape, elem, b_layout)) =
            laid_out(self.m, bv).map(|(s, e, l)| (s.to_vec(), e, l.clone()))
        else {
            out.push(op);
            return;
        };
        let buf_shape = if plan.k_major {
            vec![b_shape[1], b_shape[0]]
        } else {
            b_shape.clone()
        };
        let staged = match (plan.k_major, plan.rows) {
            (false, _) => self.bufs.get(&self.defs.source(bv)),
            (true, Some(x)) => self.bufs.get(&self.defs.source(x)),
            (true, None) => None,
        };
        if let Some(&buf) = staged {
            self.push_mma(out, op, a_op, buf, plan.k_major);
            return;
        }
        let buf = self.alloc(buf_shape.clone(), elem, "smem", &loc);
        let stored = match (plan.k_major, plan.rows) {
            (false, _) => bv,
            (true, Some(x)) => x,
            (true, None) => {
                let t = self.m.new_value(
                    Type::Tile {
                        shape: buf_shape,
                        elem,
                        layout: Some(Box::new(b_layout.transposed())),
                    },
                    None,
                );
                let mut tr = Operation::new(OpKind::Transpose, loc.clone());
                tr.operands.push(bv);
                tr.results.push(t);
                out.push(tr);
                t
            }
        };
        self.store(out, stored, buf, &loc);
        self.push_mma(out, op, a_op, buf, plan.k_major);
    }

    /// Appends the `tile.mma` of dot `op` with A `a` (a tile or a buffer) and B in `buf`.
    fn push_mma(&mut self, out: &mut Vec<Operation>, op: Operation, a: Value, buf: Value, k: bool) {
        let zero = self.zero();
        let c = op.operands[2];
        let mut mma = Operation::new(OpKind::Mma, op.loc);
        mma.operands = vec![a, buf, zero, c];
        mma.results = op.results;
        mma.attrs
            .insert("kind".into(), Attribute::Str("wgmma".into()));
        mma.attrs.insert(
            "b_major".into(),
            Attribute::Str(if k { "k" } else { "n" }.into()),
        );
        if self.defs.zeros.contains(&c) {
            mma.attrs.insert("zero_acc".into(), Attribute::Bool(true));
        }
        out.push(mma);
    }
}

/// The layout of tile value `v`, with its shape and element.
fn laid_out(m: &Module, v: Value) -> Option<(&[u64], ScalarType, &LinearLayout)> {
    match m.try_ty(v)? {
        Type::Tile {
            shape,
            elem,
            layout: Some(l),
        } => Some((shape, *elem, l)),
        _ => None,
    }
}

/// How `op` becomes a wgmma at `warps` warps, if it fits (the module docs' conditions).
fn plan(
    m: &Module,
    op: &Operation,
    warps: u64,
    defs: &Defs,
    stage_invariant_a: StageA,
) -> Option<Plan> {
    if op.operands.len() != 3 || op.results.len() != 1 {
        return None;
    }
    if tilec_dialect::ops::dot_precision(op) != "ieee" {
        return None;
    }
    let (sa, ea, la) = laid_out(m, op.operands[0])?;
    let (sb, eb, lb) = laid_out(m, op.operands[1])?;
    let (sc, ec, lc) = laid_out(m, op.results[0])?;
    if [sa.len(), sb.len(), sc.len()] != [2, 2, 2] {
        return None;
    }
    if !matches!(ea, ScalarType::BF16 | ScalarType::F16) || eb != ea || ec != ScalarType::F32 {
        return None;
    }
    if laid_out(m, op.operands[2]).map(|(_, _, l)| l) != Some(lc) {
        return None;
    }
    let (n, kk) = (lc.dims[1], la.dims[1]);
    // A in shared memory: read again in every iteration of the loop around the dot, so one
    // store outside it frees A's registers for the whole loop.
    let a_regs = sa.iter().product::<u64>() * ea.size_bytes() / (4 * 32 * warps);
    let stage = match stage_invariant_a {
        StageA::Always => true,
        StageA::Never => false,
        StageA::Auto => a_regs > RS_MAX_REGISTERS,
    };
    let a_smem = stage
        && defs.loop_invariant(op.operands[0], op.results[0])
        && la.dims == sa
        && sa.iter().all(|d| d.is_power_of_two())
        && sa[1] * ea.size_bytes() >= SWIZZLE_BYTES
        && sa[0] == lc.dims[0];
    let a_fits = if a_smem {
        LinearLayout::is_wgmma_accumulator(lc, sc) && kk.is_multiple_of(16)
    } else {
        LinearLayout::is_wgmma_register_a(lc, sc, la, sa)
    };
    let fits = lc.num_warps() == warps
        && a_fits
        && sb.iter().all(|d| d.is_power_of_two())
        && lb.dims == [kk, n];
    if !fits {
        return None;
    }
    // Rows along the dimension B's registers run in.
    let k_major = lb.register.first().is_some_and(|x| x[0] == 1 && x[1] == 0);
    let run = if k_major { sb[0] } else { sb[1] };
    if run * eb.size_bytes() < SWIZZLE_BYTES {
        return None;
    }
    let rows = k_major
        .then(|| defs.transposed.get(&op.operands[1]).copied())
        .flatten()
        .filter(|&x| laid_out(m, x).is_some_and(|(_, _, l)| *l == lb.transposed()));
    Some(Plan {
        a_smem,
        k_major,
        rows,
    })
}
