//! `tile-to-gpu` — from level-1 tile IR to the GPU-level ops of a target.
//!
//! Recognises the matrix-product main loop a frontend writes —
//!
//! ```text
//! %acc = tile.for %c0, %K, %cBK, %zero : tile<BMxBNxf32> {
//! ^bb0(%k: index, %c: tile<BMxBNxf32>):
//!   %a = tile.load %A, %row, %k : tile<BMxBKxT>
//!   %b = tile.load %B, %k, %col : tile<BKxBNxT>
//!   %d = tile.dot %a, %b, %c : tile<BMxBNxf32>
//!   tile.yield %d
//! }
//! ```
//!
//! — and turns it into a warp-specialized pipeline: a `stages`-deep ring of shared-memory
//! stages for A (BM×BK) and B (BK×BN) with 128-byte swizzle, a `full` mbarrier per stage
//! (armed with `expect_tx` for the stage's bytes, completed by the TMA copies) and an
//! `empty` mbarrier per stage (one arrive per consumer warp), a producer warpgroup
//! whose elected thread issues the copies, and BM/64 consumer warpgroups running
//! `tile.mma` over each stage. The first k tile is peeled (its MMA zeroes the
//! accumulator). A consumer releases stage `kt-1` in iteration `kt` (deferred release), so one MMA group can stay in flight; `async-wait-placement` then
//! puts the waits. The epilogue after the loop moves into the consumer region (the consumers hold the
//! accumulator) and is lowered per fragment.
//!
//! On `sm_90a` the MMA is `wgmma` (m64nBNk16); elsewhere `ldmatrix` + `mma.sync`
//! m16n8k16. Checked before anything is rewritten, each with the limit it breaks: the
//! target exists; element types are bf16/f16 with an f32 accumulator; BK = 64 (one
//! 128-byte swizzle span of 2-byte elements); BM = 64 × consumers with 1 or 2 consumer
//! warpgroups; BN a multiple of 8 up to 256 (wgmma's N) — for mma.sync 128 or 256; the
//! ring plus barriers fit the target's shared memory per block.
//!
//! Options: `target` (sm_90a), `stages` (4). Statistics: `loops-pipelined`,
//! `smem-bytes`.

use crate::pass::{OptionInfo, OptionKind, Pass, PassContext, PassInfo, PassOptions};
use std::collections::HashMap;
use tilec_dialect::{Attribute, Block, Diagnostic, Diagnostics, Location, Module, OpKind, Operation, ScalarType, Target, Type, Value};

/// The registry entry.
pub static INFO: PassInfo = PassInfo {
    name: "tile-to-gpu",
    summary: "Lower the matmul main loop to a TMA ring, mbarriers and async MMA for a target",
    description: "Rewrites the K loop of a tile matmul into a warp-specialized pipeline: TMA copies into a shared-memory ring (128-byte swizzle) completing on mbarriers, and wgmma (sm_90a) or ldmatrix+mma.sync (sm_90, sm_100) over each stage.\n\nExample: tile-opt --pass-pipeline='tile-to-gpu{target=sm_90a stages=4}' examples/gemm_bf16.tile",
    options: &[
        OptionInfo { name: "target", kind: OptionKind::Enum(&["sm_90", "sm_90a", "sm_100", "sm_100a"]), default: "sm_90a", help: "GPU to build for" },
        OptionInfo { name: "stages", kind: OptionKind::UInt, default: "4", help: "Shared-memory ring depth (2 to 8)" },
    ],
};

/// Bytes at the start of dynamic shared memory reserved for mbarriers (keeps the stages
/// 1024-byte aligned, as 128-byte-swizzle atoms need).
pub const BARRIER_REGION_BYTES: u64 = 1024;

/// Threads per warpgroup.
pub const WARPGROUP_THREADS: i64 = 128;

/// The pass.
pub struct TileToGpu {
    /// Target.
    pub target: Target,
    /// Ring depth.
    pub stages: u64,
}

impl TileToGpu {
    /// Build from checked options.
    ///
    /// # Errors
    /// `stages` outside 2..=8.
    pub fn from_options(o: &PassOptions) -> Result<Self, String> {
        let target = Target::from_name(o.get("target")).ok_or_else(|| format!("unknown target '{}'", o.get("target")))?;
        let stages = o.uint("stages");
        if !(2..=8).contains(&stages) {
            return Err(format!("tile-to-gpu option 'stages' must be 2 to 8, found {stages}"));
        }
        Ok(TileToGpu { target, stages })
    }
}

impl Pass for TileToGpu {
    fn info(&self) -> &'static PassInfo {
        &INFO
    }
    fn run(&mut self, m: &mut Module, cx: &mut PassContext) -> Result<(), Diagnostics> {
        let mut errors = vec![];
        let mut kernels = std::mem::take(&mut m.ops);
        for k in &mut kernels {
            if k.kind != OpKind::Kernel || k.attr("target").is_some() {
                continue;
            }
            match lower_kernel(m, k, self.target, self.stages) {
                Ok(bytes) => {
                    cx.stat("loops-pipelined", 1);
                    cx.stat("smem-bytes", bytes);
                }
                Err(d) => errors.push(d),
            }
        }
        m.ops = kernels;
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Diagnostics(errors))
        }
    }
}

/// The constant value of `v` if a `tile.constant` in `defs` defines it.
fn const_of(defs: &HashMap<Value, &Operation>, v: Value) -> Option<i64> {
    let d = defs.get(&v)?;
    (d.kind == OpKind::Constant).then(|| d.int_attr("value")).flatten()
}

/// Emits ops into a block under construction.
struct Emitter<'m> {
    m: &'m mut Module,
    ops: Vec<Operation>,
    loc: Location,
}

impl Emitter<'_> {
    fn op(&mut self, kind: OpKind, operands: &[Value], attrs: &[(&str, Attribute)], results: &[Type], name: Option<&str>) -> Vec<Value> {
        let mut op = Operation::new(kind, self.loc.clone());
        op.operands = operands.to_vec();
        op.attrs = attrs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        op.results = results.iter().map(|t| self.m.new_value(t.clone(), name.map(str::to_string))).collect();
        let r = op.results.clone();
        self.ops.push(op);
        r
    }
    fn one(&mut self, kind: OpKind, operands: &[Value], attrs: &[(&str, Attribute)], ty: Type, name: &str) -> Value {
        self.op(kind, operands, attrs, &[ty], Some(name))[0]
    }
    fn index(&mut self, v: i64, name: &str) -> Value {
        self.one(OpKind::Constant, &[], &[("value", Attribute::Int(v))], Type::INDEX, name)
    }
    fn int(&mut self, kind: OpKind, a: Value, b: Value, name: &str) -> Value {
        self.one(kind, &[a, b], &[], Type::INDEX, name)
    }
    fn take(&mut self) -> Vec<Operation> {
        std::mem::take(&mut self.ops)
    }
}

struct Matmul {
    loop_idx: usize,
    a_tensor: Value,
    b_tensor: Value,
    row: Value,
    col: Value,
    ub: Value,
    bm: u64,
    bn: u64,
    bk: u64,
    elem: ScalarType,
    acc_ty: Type,
    init: Value,
}

fn find_matmul(m: &Module, body: &Block) -> Result<Matmul, Diagnostic> {
    let mut defs: HashMap<Value, &Operation> = HashMap::new();
    for op in &body.ops {
        for &r in &op.results {
            defs.insert(r, op);
        }
    }
    let loops: Vec<usize> = body.ops.iter().enumerate().filter(|(_, o)| o.kind == OpKind::For && o.regions[0].ops.iter().any(|x| x.kind == OpKind::Dot)).map(|(i, _)| i).collect();
    let kernel_loc = body.ops.first().map(|o| o.loc.clone()).unwrap_or_else(Location::unknown);
    let &[li] = loops.as_slice() else {
        return Err(Diagnostic::error(kernel_loc, format!("tile-to-gpu expects exactly one 'tile.for' loop containing a 'tile.dot' in the kernel body, found {}", loops.len())));
    };
    let lp = &body.ops[li];
    let err = |msg: String| Diagnostic::error(lp.loc.clone(), msg);
    if lp.operands.len() != 4 || lp.results.len() != 1 {
        return Err(err("tile-to-gpu expects the K loop to carry exactly one value, the accumulator".into()));
    }
    let (lb, ub, step, init) = (lp.operands[0], lp.operands[1], lp.operands[2], lp.operands[3]);
    if const_of(&defs, lb) != Some(0) {
        return Err(err("tile-to-gpu expects the K loop to start at a constant 0".into()));
    }
    let Some(bk) = const_of(&defs, step) else {
        return Err(err("tile-to-gpu expects the K loop step to be a constant (the K tile)".into()));
    };
    if !defs.get(&init).is_some_and(|d| d.kind == OpKind::Zeros) {
        return Err(err("tile-to-gpu expects the accumulator to start as 'tile.zeros'".into()));
    }
    let b = &lp.regions[0];
    let (iv, carried) = (b.args[0], b.args[1]);
    let kinds: Vec<OpKind> = b.ops.iter().map(|o| o.kind).collect();
    if kinds != [OpKind::Load, OpKind::Load, OpKind::Dot, OpKind::Yield] {
        let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        return Err(err(format!("tile-to-gpu expects the K loop body to be 'tile.load', 'tile.load', 'tile.dot', 'tile.yield'; found {}", names.join(", "))));
    }
    let (la, lb_, dot, y) = (&b.ops[0], &b.ops[1], &b.ops[2], &b.ops[3]);
    if dot.operands != [la.results[0], lb_.results[0], carried] || y.operands != [dot.results[0]] {
        return Err(Diagnostic::error(dot.loc.clone(), "tile-to-gpu expects 'tile.dot %a, %b, %acc' of the two loads and the carried accumulator, yielded".to_string()));
    }
    if la.operands.len() != 3 || lb_.operands.len() != 3 {
        return Err(Diagnostic::error(la.loc.clone(), "tile-to-gpu expects 2-D loads of A and B".to_string()));
    }
    if la.operands[2] != iv || lb_.operands[1] != iv {
        return Err(Diagnostic::error(la.loc.clone(), "tile-to-gpu expects A to be loaded at (row, k) and B at (k, col), k the loop's induction variable".to_string()));
    }
    let at = m.ty(la.results[0]).clone();
    let bt = m.ty(lb_.results[0]).clone();
    let (Type::Tile { shape: ash, elem }, Type::Tile { shape: bsh, .. }) = (&at, &bt) else { unreachable!("verified loads") };
    if ash[1] as i64 != bk {
        return Err(err(format!("tile-to-gpu: the loop step ({bk}) must equal the K size of the A tile ({})", ash[1])));
    }
    Ok(Matmul {
        loop_idx: li,
        a_tensor: la.operands[0],
        b_tensor: lb_.operands[0],
        row: la.operands[1],
        col: lb_.operands[2],
        ub,
        bm: ash[0],
        bn: bsh[1],
        bk: ash[1],
        elem: *elem,
        acc_ty: m.ty(init).clone(),
        init,
    })
}

/// Check the tile configuration against the target; the error names the limit.
fn check_config(mm: &Matmul, target: Target, stages: u64, loc: &Location) -> Result<u64, Diagnostic> {
    let e = |msg: String| Err(Diagnostic::error(loc.clone(), msg));
    if !matches!(mm.elem, ScalarType::BF16 | ScalarType::F16) || mm.acc_ty.elem() != Some(ScalarType::F32) {
        return e(format!("tile-to-gpu for {target}: the MMA takes bf16 or f16 inputs with an f32 accumulator, found {} inputs with a {} accumulator", mm.elem, mm.acc_ty.elem().map_or("?".into(), |t| t.to_string())));
    }
    if mm.bk != 64 {
        return e(format!("tile-to-gpu: the K tile must be 64 elements (128 bytes of {}, the 128-byte swizzle span), found {}", mm.elem, mm.bk));
    }
    if mm.bm != 64 && mm.bm != 128 {
        return e(format!("tile-to-gpu: the M tile must be 64 or 128 (64 rows per consumer warpgroup, 1 or 2 warpgroups), found {}", mm.bm));
    }
    if target.has_wgmma() {
        if mm.bn % 8 != 0 || mm.bn > 256 {
            return e(format!("tile-to-gpu: the N tile {} is not a legal wgmma N (a multiple of 8 from 8 to 256)", mm.bn));
        }
        if mm.bn % 64 != 0 {
            return e(format!("tile-to-gpu: the N tile {} must be a multiple of 64 (one 128-byte TMA box of B per 64 columns)", mm.bn));
        }
    } else if mm.bn != 128 && mm.bn != 256 {
        return e(format!("tile-to-gpu: on {target} (ldmatrix + mma.sync) the N tile must be 128 or 256, found {}", mm.bn));
    }
    let stage_bytes = (mm.bm * mm.bk + mm.bk * mm.bn) * mm.elem.size_bytes();
    let total = BARRIER_REGION_BYTES + stages * stage_bytes;
    let limit = target.max_smem_per_block();
    if total > limit {
        return e(format!(
            "tile-to-gpu: {stages} stages of {}x{} + {}x{} {} tiles need {total} bytes of shared memory ({stage_bytes} per stage + {BARRIER_REGION_BYTES} for barriers), over the {limit}-byte limit per block on {target}; use at most {} stages",
            mm.bm, mm.bk, mm.bk, mm.bn, mm.elem, (limit - BARRIER_REGION_BYTES) / stage_bytes
        ));
    }
    Ok(total)
}

fn lower_kernel(m: &mut Module, k: &mut Operation, target: Target, stages: u64) -> Result<u64, Diagnostic> {
    let body = k.regions.first().ok_or_else(|| Diagnostic::error(k.loc.clone(), "kernel without body"))?;
    let mm = find_matmul(m, body)?;
    let lp_loc = body.ops[mm.loop_idx].loc.clone();
    let smem = check_config(&mm, target, stages, &lp_loc)?;
    let old_loop = k.regions[0].ops.remove(mm.loop_idx);
    let consumers = (mm.bm / 64) as i64;
    let mut e = Emitter { m, ops: vec![], loc: lp_loc.clone() };
    let s = stages;
    let a_ring = e.one(OpKind::SmemAlloc, &[], &[("swizzle", Attribute::Int(128))], Type::Smem { stages: s, shape: vec![mm.bm, mm.bk], elem: mm.elem }, "a_ring");
    let b_ring = e.one(OpKind::SmemAlloc, &[], &[("swizzle", Attribute::Int(128))], Type::Smem { stages: s, shape: vec![mm.bk, mm.bn], elem: mm.elem }, "b_ring");
    let full = e.one(OpKind::MbarrierAlloc, &[], &[("arrive_count", Attribute::Int(1))], Type::Mbarrier { count: s }, "full");
    let empty = e.one(OpKind::MbarrierAlloc, &[], &[("arrive_count", Attribute::Int(4 * consumers))], Type::Mbarrier { count: s }, "empty");
    let c0 = e.index(0, "c0");
    let c1 = e.index(1, "c1");
    let c2 = e.index(2, "c2");
    let cs = e.index(s as i64, "cstages");
    let cbk = e.index(mm.bk as i64, "cbk");
    // At least one k tile: the peeled first tile always runs (a tensor map cannot encode
    // K = 0, and with K < 64 the TMA zero-fill supplies the rest).
    let kceil = e.int(OpKind::CeilDiv, mm.ub, cbk, "kceil");
    let ktiles = e.int(OpKind::MaxI, kceil, c1, "ktiles");
    let prologue = e.take();

    // Stage and phase parity of k tile %kt: s = kt mod S, parity = (kt / S) mod 2.
    let stage_and_parity = |e: &mut Emitter, kt: Value| {
        let st = e.int(OpKind::RemI, kt, cs, "stage");
        let round = e.int(OpKind::DivI, kt, cs, "round");
        let ph = e.int(OpKind::RemI, round, c2, "phase");
        (st, ph)
    };

    // Producer: for each k tile, wait for the stage to be empty (the first round passes at
    // once: a fresh mbarrier is in phase 0, so waiting for parity 1 returns), arm the full
    // barrier with the stage's bytes, issue both copies.
    let kt_p = e.m.new_value(Type::INDEX, Some("kt".into()));
    let (st, ph) = stage_and_parity(&mut e, kt_p);
    let eph = e.int(OpKind::SubI, c1, ph, "empty_phase");
    e.op(OpKind::MbarrierWait, &[empty, st, eph], &[], &[], None);
    let tx = (mm.bm * mm.bk + mm.bk * mm.bn) * mm.elem.size_bytes();
    e.op(OpKind::MbarrierExpectTx, &[full, st], &[("bytes", Attribute::Int(tx as i64))], &[], None);
    let kk = e.int(OpKind::MulI, kt_p, cbk, "k");
    e.op(OpKind::TmaLoad, &[mm.a_tensor, a_ring, full, st, mm.row, kk], &[], &[], None);
    e.op(OpKind::TmaLoad, &[mm.b_tensor, b_ring, full, st, kk, mm.col], &[], &[], None);
    e.op(OpKind::Yield, &[], &[], &[], None);
    let producer_body = Block { args: vec![kt_p], ops: e.take() };
    let mut producer_loop = Operation::new(OpKind::For, lp_loc.clone());
    producer_loop.operands = vec![c0, ktiles, c1];
    producer_loop.regions.push(producer_body);
    e.ops.push(producer_loop);
    e.op(OpKind::Yield, &[], &[], &[], None);
    let producer_region = Block { args: vec![], ops: e.take() };

    // Consumers: wait for the stage to be full, MMA over it, then release the previous
    // stage (deferred release keeps one MMA group in flight).
    // k tile 0 is peeled: its MMA starts from a zero accumulator (`zero_acc`, wgmma's
    // scale-d = 0), so no instruction but the MMA ever defines the accumulator registers.
    let mma_attrs = [("kind", Attribute::Str(target.mma_kind().into()))];
    let mut first_attrs = mma_attrs.to_vec();
    first_attrs.push(("zero_acc", Attribute::Bool(true)));
    e.op(OpKind::MbarrierWait, &[full, c0, c0], &[], &[], None);
    let acc0 = e.one(OpKind::Mma, &[a_ring, b_ring, c0, mm.init], &first_attrs, mm.acc_ty.clone(), "acc0");
    let consumer_prologue = e.take();
    let kt_c = e.m.new_value(Type::INDEX, Some("kt".into()));
    let acc_in = e.m.new_value(mm.acc_ty.clone(), Some("acc_iter".into()));
    let (st, ph) = stage_and_parity(&mut e, kt_c);
    e.op(OpKind::MbarrierWait, &[full, st, ph], &[], &[], None);
    let d = e.one(OpKind::Mma, &[a_ring, b_ring, st, acc_in], &mma_attrs, mm.acc_ty.clone(), "acc_next");
    // Release stage kt-1 (deferred release): (kt + S - 1) mod S.
    let wrapped = e.int(OpKind::AddI, kt_c, cs, "kt_wrap");
    let prev_kt = e.int(OpKind::SubI, wrapped, c1, "kt_prev");
    let prev = e.int(OpKind::RemI, prev_kt, cs, "prev_stage");
    e.op(OpKind::MbarrierArrive, &[empty, prev], &[], &[], None);
    e.op(OpKind::Yield, &[d], &[], &[], None);
    let consumer_ops = e.take();
    e.ops = consumer_prologue;
    let mut consumer_loop = Operation::new(OpKind::For, lp_loc.clone());
    consumer_loop.operands = vec![c1, ktiles, c1, acc0];
    // The loop's result keeps the old loop's value, so the epilogue reads it unchanged.
    consumer_loop.results = old_loop.results.clone();
    consumer_loop.regions.push(Block { args: vec![kt_c, acc_in], ops: consumer_ops });
    e.ops.push(consumer_loop);
    let mut consumer_ops = e.take();

    // The epilogue (everything after the K loop but the kernel's `tile.return`) runs on the
    // consumers, which hold the accumulator: it moves into the consumer region.
    let body = &mut k.regions[0].ops;
    let mut tail = body.split_off(mm.loop_idx);
    let ret = tail.pop().expect("verified kernel ends with tile.return");
    consumer_ops.extend(tail);
    let mut yield_op = Operation::new(OpKind::Yield, ret.loc.clone());
    yield_op.operands.clear();
    consumer_ops.push(yield_op);
    let consumer_region = Block { args: vec![], ops: consumer_ops };

    let mut ws = Operation::new(OpKind::WarpSpecialize, lp_loc);
    ws.attrs.insert("consumers".into(), Attribute::Int(consumers));
    ws.regions = vec![producer_region, consumer_region];
    body.extend(prologue);
    body.push(ws);
    body.push(ret);
    k.attrs.insert("target".into(), Attribute::Str(target.name().into()));
    // wgmma needs warpgroup-aligned consumers, so the producer is a whole warpgroup (which
    // gives its registers away with setmaxnreg); with mma.sync one producer warp suffices and
    // keeps the per-thread register cap at 65536 / 288 = 227.
    let producer_threads = if target.has_wgmma() { WARPGROUP_THREADS } else { 32 };
    k.attrs.insert("block".into(), Attribute::Array(vec![Attribute::Int(producer_threads + WARPGROUP_THREADS * consumers), Attribute::Int(1), Attribute::Int(1)]));
    k.attrs.insert("smem_bytes".into(), Attribute::Int(smem as i64));
    k.attrs.insert("stages".into(), Attribute::Int(s as i64));
    Ok(smem)
}
