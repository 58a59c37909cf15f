//! The GEMM pipeline's lowering (kernels made by `tile-to-gpu`): an MLIR module written as
//! text, which [`crate::mlir_driver`] parses and compiles. The typed writer
//! ([`super::writer`]) is to replace it construct by construct.
//!
//! The module follows `lowering/reference/gemm_bf16_sm90a.mlir` (checked on an H200), op by
//! op:
//!
//! - `tile.smem_alloc`, `tile.mbarrier_alloc`: offsets in the dynamic shared memory
//!   (`@dynamic_smem`, 1024-aligned): barriers in `[0, 1024)`, rings after, each 1024-aligned;
//!   thread 0 runs `nvvm.mbarrier.init` for each, then `nvvm.fence.mbarrier.init` and
//!   `nvvm.barrier0`
//! - `tile.warp_specialize`: warpgroup 0 → producer (`nvvm.setmaxregister decrease 40` on sm_90a;
//!   thread 0 runs region 0), the others → consumers (`increase 232`), which run region 1 and the
//!   rest of the kernel
//! - `tile.mbarrier_wait`: `nvvm.mbarrier.try_wait.parity`
//! - `tile.mbarrier_expect_tx`: `nvvm.mbarrier.arrive.expect_tx`
//! - `tile.tma_load`: `nvvm.cp.async.bulk.tensor.shared.cluster.global`, one per 64-element-wide
//!   box
//! - `tile.mma {kind = "wgmma"}`: 4 × `nvvm.wgmma.mma_async` m64nNk16 with shared-memory
//!   descriptors (128-byte swizzle; B N-major); `zero_acc` → `scale-d = 0` on the first
//! - `tile.wgmma_fence`, `tile.commit_group`: `nvvm.wgmma.fence.aligned`,
//!   `nvvm.wgmma.commit.group.sync.aligned`
//! - `tile.wait_group`: `llvm.inline_asm "wgmma.wait_group.sync.aligned N;"` with the accumulators
//!   as tied operands, so no use of them can move above the wait
//! - `tile.mbarrier_arrive`: `nvvm.mbarrier.arrive` by lane 0 of each consumer warp (after
//!   `bar.warp.sync`, unless a `.sync.aligned` wait just converged the warp); `{cta = r}`: `mapa` +
//!   `mbarrier.arrive.release.cluster.shared::cluster` on CTA r's barrier
//! - `tile.while`: a do-while block: the body, then `llvm.cond_br` on the yielded flag back to the
//!   body or out
//! - `tile.clc_try_cancel`: inline `clusterlaunchcontrol.try_cancel.async.shared::cta.`
//!   `mbarrier::complete_tx::bytes[.multicast::cluster::all].b128 [slot], [mbar]`
//! - `tile.clc_query`: inline: one `ld.shared.b128` of the slot,
//!   `clusterlaunchcontrol.query_cancel.is_canceled.pred.b128`, then `@p
//!   …get_first_ctaid.v4.b32.b128` (ids 0 when not canceled)
//! - `tile.fence_proxy_async`: inline `fence.proxy.async.shared::cta`
//! - `tile.smem_store`: per 16 columns × 16 rows of a warp: 4 registers packed to bf16x2
//!   (`cvt.rn.bf16x2.f32`), one `stmatrix.sync.aligned.m8n8.x4.shared.b16` at the 128B-swizzled
//!   address of the lane's row; 4 per warp per 64-column box
//! - `tile.tma_store`: inline, predicated on the warpgroup's thread 0:
//!   `cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [tmap, {col, row + 64 w}], [slot + w ·
//!   8 KB]` (w = consumer warpgroup); C's tensor map has box 64×64, 128B swizzle
//! - `tile.bulk_commit_group`, `tile.bulk_wait_group`: inline, predicated on the warpgroup's thread
//!   0: `cp.async.bulk.commit_group`, `cp.async.bulk.wait_group[.read] N`
//! - `tile.named_barrier`: inline `bar.sync id, threads`; in the consumer region with 128 threads,
//!   `bar.sync id + w, 128` (each consumer warpgroup its own barrier)
//! - `tile.cluster_ctarank`: `%cluster_ctarank`
//! - kernel `cluster = [x, y, z]`: `nvvm.cluster_dim` (`.reqnctapercluster`); every thread ends
//!   with `barrier.cluster.arrive.release` + `barrier.cluster.wait.acquire`
//! - epilogue ops on the accumulator (`convert`, elementwise, `broadcast`, `load`, `store`):
//!   evaluated per register at the store (each register's chain is short-lived): value v of (warp
//!   w, lane l) of a wgmma fragment is row 16w + l/4 + 8((v/2) mod 2), column 8(v/4) + 2(l mod 4) +
//!   (v mod 2); epilogue loads are predicated `ld.global` (out of bounds reads zero, touches
//!   nothing); the store has a fast path (whole tile inside, unit column stride, aligned: one
//!   `llvm.store` of 2 elements per register pair) and a slow path (one predicated `st.global` per
//!   element in inline asm, with its column, bounds check and address; out-of-bounds elements are
//!   dropped)
//!
//! `index` values are 64-bit. Every construct it does not lower is an error naming the op
//! and its location, raised before MLIR sees anything.

use super::LoweredKernel;
use crate::manifest::{Manifest, Param};
use std::collections::HashMap;
use std::fmt::Write;
use std::rc::Rc;
use tilec_dialect::{
    Attribute, Diagnostic, Expr, Module, OpKind, Operation, ScalarType, Target, Type, Value,
};

/// Cycles hint of `mbarrier.try_wait.parity` (the op loops until the phase completes).
const TRY_WAIT_TICKS: i64 = 10_000_000;

/// How a tile IR value lives in the lowered code.
#[derive(Clone, Debug)]
enum Lv {
    /// A scalar SSA value with its MLIR type.
    Scalar(String, &'static str),
    /// A kernel tensor passed as a tensor map (`!llvm.ptr` to the param).
    TensorMap(String),
    /// A kernel tensor passed as pointer + sizes + strides (i64 each).
    TensorPtr {
        ptr: String,
        sizes: Vec<String>,
        strides: Vec<String>,
        elem: ScalarType,
    },
    /// A shared-memory ring at a byte offset of dynamic shared memory.
    Ring {
        offset: u64,
        stage_bytes: u64,
        shape: Vec<u64>,
        elem: ScalarType,
    },
    /// An mbarrier array at a byte offset.
    Bars { offset: u64 },
    /// A wgmma accumulator: an `!acc` struct value.
    Acc(String),
    /// An epilogue value of the accumulator's tile, evaluated per register at its store.
    Lazy(Rc<Lazy>),
}

/// A float literal MLIR's lexer takes back exactly: `1.5e-3`, `0.0e0` (it needs the '.').
fn mlir_float(v: f64) -> String {
    let s = format!("{v:e}");
    match s.split_once('e') {
        Some((m, e)) if !m.contains('.') => format!("{m}.0e{e}"),
        _ => s,
    }
}

fn mlir_scalar(t: ScalarType) -> &'static str {
    match t {
        ScalarType::I1 => "i1",
        ScalarType::I32 => "i32",
        ScalarType::I64 | ScalarType::Index => "i64",
        ScalarType::F16 => "f16",
        ScalarType::BF16 => "bf16",
        ScalarType::F32 => "f32",
    }
}

struct Em<'a> {
    m: &'a Module,
    target: Target,
    body: Vec<String>,
    consts: Vec<String>,
    const_names: HashMap<(i64, &'static str), String>,
    fconsts: HashMap<(u64, &'static str), String>,
    n: usize,
    blocks: usize,
    vals: HashMap<Value, Lv>,
    /// Set once tid etc. exist.
    tid: String,
    smem: String,
    smem_i32: String,
    /// Consumer-side values for the fragment layout.
    cwg: Option<String>,
    lane: String,
    warp_in_wg: String,
    /// Accumulator shape (rows, cols) of the CTA tile and registers per thread.
    acc_cols: u64,
    nacc: usize,
    acc_ty: String,
    /// The MMA family of the kernel: decides the fragment layout.
    mma_sync: bool,
    /// Threads of the producer (128 with wgmma, 32 with mma.sync).
    producer_threads: i64,
    /// mma.sync: the consumer warp's (warp_m, warp_n) in the 2 x 4 warp grid.
    warp_mn: Option<(String, String)>,
    /// The thread's base (row, col) in the accumulator tile (i64), set in the consumer region.
    frag_rc: Option<(String, String)>,
    /// Tensor params: name → (kind) for the manifest.
    exit_block: String,
    barrier_inits: Vec<(u64, u64, i64)>,
    smem_end: u64,
    /// The kind of the op lowered last in the current block (a `.sync.aligned` wait
    /// converges the warp, so an arrive right after it needs no `bar.warp.sync`).
    prev: Option<OpKind>,
    /// The CTA's accumulator tile shape (rows, columns), once an MMA is lowered.
    acc_shape: Option<Vec<u64>>,
    /// CTAs per cluster (1: no cluster launch).
    cluster_size: i64,
    /// The `swizzle` (bytes) of each shared-memory ring.
    ring_swizzle: HashMap<Value, i64>,
    /// Consumer warpgroups of the kernel's `tile.warp_specialize` (1 without one).
    consumer_wgs: i64,
    /// Loops (`tile.for`, `tile.while`) around the op being lowered: an epilogue at depth > 0
    /// sits in a persistent tile loop, after that tile's k loop.
    loop_depth: usize,
}

type R<T> = Result<T, Diagnostic>;

fn err<T>(op: &Operation, msg: impl Into<String>) -> R<T> {
    Err(Diagnostic::error(op.loc.clone(), msg.into()))
}

impl Em<'_> {
    fn fresh(&mut self, hint: &str) -> String {
        self.n += 1;
        format!("%{hint}{}", self.n)
    }
    fn emit(&mut self, s: impl AsRef<str>) {
        self.body.push(format!("    {}", s.as_ref()));
    }
    fn label(&mut self, s: &str) {
        self.body.push(format!("  ^{s}"));
    }
    fn block_name(&mut self, hint: &str) -> String {
        self.blocks += 1;
        format!("{hint}{}", self.blocks)
    }
    fn op(&mut self, text: impl AsRef<str>, hint: &str) -> String {
        let r = self.fresh(hint);
        self.emit(format!("{r} = {}", text.as_ref()));
        r
    }
    fn cst(&mut self, v: i64, t: &'static str) -> String {
        if let Some(n) = self.const_names.get(&(v, t)) {
            return n.clone();
        }
        let name = format!(
            "%c{}_{t}",
            if v < 0 {
                format!("m{}", -v)
            } else {
                v.to_string()
            }
        );
        self.consts
            .push(format!("    {name} = llvm.mlir.constant({v} : {t}) : {t}"));
        self.const_names.insert((v, t), name.clone());
        name
    }
    fn fcst(&mut self, v: f64, t: &'static str) -> String {
        if let Some(n) = self.fconsts.get(&(v.to_bits(), t)) {
            return n.clone();
        }
        self.n += 1;
        let name = format!("%f{}_{t}", self.n);
        self.consts.push(format!(
            "    {name} = llvm.mlir.constant({} : {t}) : {t}",
            mlir_float(v)
        ));
        self.fconsts.insert((v.to_bits(), t), name.clone());
        name
    }
    fn bin(&mut self, o: &str, a: &str, b: &str, t: &str, hint: &str) -> String {
        self.op(format!("llvm.{o} {a}, {b} : {t}"), hint)
    }
    fn icmp(&mut self, pred: &str, a: &str, b: &str, t: &str) -> String {
        self.op(format!("llvm.icmp \"{pred}\" {a}, {b} : {t}"), "p")
    }
    fn gep3(&mut self, off_i32: &str) -> String {
        let smem = self.smem.clone();
        self.op(
            format!(
                "llvm.getelementptr {smem}[{off_i32}] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8"
            ),
            "ptr",
        )
    }
    /// `v` through an opaque `mov` (inline asm with side effects): LLVM can neither hoist
    /// what is computed from it out of the enclosing loop nor merge it with the same
    /// computation on `v` elsewhere. For kernel parameters, which ptxas reads from the
    /// constant bank, this keeps epilogue-only arithmetic out of the registers live across
    /// a persistent loop's k loop.
    fn opaque(&mut self, v: &str, t: &str) -> String {
        let (c, m) = if t == "i64" {
            ("l", "b64")
        } else {
            ("r", "b32")
        };
        self.op(
            format!(
                "llvm.inline_asm has_side_effects asm_dialect = att \"mov.{m} $0, $1;\", \
                    \"={c},{c}\" {v} : ({t}) -> {t}"
            ),
            "opq",
        )
    }
    fn trunc32(&mut self, v: &str) -> String {
        self.op(format!("llvm.trunc {v} : i64 to i32"), "t")
    }
    fn zext64(&mut self, v: &str) -> String {
        self.op(format!("llvm.zext {v} : i32 to i64"), "z")
    }
    fn scalar(&self, op: &Operation, v: Value) -> R<String> {
        match self.vals.get(&v) {
            Some(Lv::Scalar(s, _)) => Ok(s.clone()),
            _ => err(
                op,
                format!("'{}': operand is not a lowered scalar", op.kind.name()),
            ),
        }
    }
    /// 1 (i32) in the consumer warpgroup's elected thread (its thread 0, which issues and
    /// waits for its bulk groups), 0 elsewhere.
    fn elected(&mut self) -> R<String> {
        let tid = self.tid.clone();
        let c127 = self.cst(127, "i32");
        let r = self.bin("and", &tid, &c127, "i32", "wgtid");
        let z = self.cst(0, "i32");
        let e = self.icmp("eq", &r, &z, "i32");
        Ok(self.op(format!("llvm.zext {e} : i1 to i32"), "elected"))
    }
    /// Byte address (i32, in shared memory) of barrier `idx` (an i64 SSA value) of an array.
    fn bar_addr(&mut self, op: &Operation, bars: Value, idx: Value) -> R<String> {
        let Some(Lv::Bars { offset }) = self.vals.get(&bars).cloned() else {
            return err(op, "expected an mbarrier array");
        };
        let i = self.scalar(op, idx)?;
        let i32v = self.trunc32(&i);
        let c3 = self.cst(3, "i32");
        let sh = self.bin("shl", &i32v, &c3, "i32", "boff");
        let co = self.cst(offset as i64, "i32");
        let off = self.bin("add", &sh, &co, "i32", "boff");
        Ok(self.gep3(&off))
    }
}

pub(super) fn lower_kernel(m: &Module, k: &Operation) -> R<LoweredKernel> {
    let name = k.symbol.clone().unwrap_or_default();
    let Some(target) = k.str_attr("target").and_then(Target::from_name) else {
        return err(
            k,
            format!(
                "kernel '@{name}' has no 'target': run 'tile-to-gpu' before 'convert-tile-to-nvvm'"
            ),
        );
    };
    let block: Vec<i64> = k
        .attr("block")
        .and_then(Attribute::as_array)
        .map(|a| a.iter().filter_map(Attribute::as_int).collect())
        .unwrap_or_default();
    if block.len() != 3 {
        return err(k, "kernel has no 'block' attribute (set by tile-to-gpu)");
    }
    let body = &k.regions[0];
    let cluster: Vec<i64> = k
        .attr("cluster")
        .and_then(Attribute::as_array)
        .map(|a| a.iter().filter_map(Attribute::as_int).collect())
        .unwrap_or_else(|| vec![1, 1, 1]);
    // Which tensors are read by TMA (→ tensor maps) and with which box.
    let mut tma_boxes: HashMap<Value, Vec<u64>> = HashMap::new();
    // Tensors written by TMA (tile.tma_store): each consumer warpgroup stores its rows of
    // a staging slot, so the box is (slot rows / consumers) x slot columns.
    let mut store_boxes: HashMap<Value, (Vec<u64>, &Operation)> = HashMap::new();
    let mut consumers = 1u64;
    k.walk(&mut |o| {
        if o.kind == OpKind::WarpSpecialize {
            consumers = o.int_attr("consumers").unwrap_or(1).max(1) as u64;
        }
    });
    k.walk(&mut |o| {
        if o.kind == OpKind::TmaLoad {
            if let Some(Type::Smem { shape, .. }) = m.try_ty(o.operands[1]) {
                let inner = shape[1].min(64);
                tma_boxes.insert(o.operands[0], vec![shape[0], inner]);
            }
        }
        if o.kind == OpKind::TmaStore {
            if let Some(Type::Smem { shape, .. }) = m.try_ty(o.operands[1]) {
                if shape.len() == 2 {
                    store_boxes.insert(o.operands[0], (vec![shape[0] / consumers, shape[1]], o));
                }
            }
        }
    });
    for (t, (b, o)) in &store_boxes {
        if tma_boxes.get(t).is_some_and(|l| l != b) {
            return err(
                o,
                "convert-tile-to-nvvm: a tensor both loaded and stored by TMA needs one \
                    box for both (one tensor map)",
            );
        }
        if b[1] * m.ty(o.operands[1]).elem().map_or(2, ScalarType::size_bytes) != 128 {
            return err(
                o,
                "convert-tile-to-nvvm: a TMA-store slot row must be 128 bytes (64 16-bit \
                    elements, one 128-byte swizzle span)",
            );
        }
        tma_boxes.insert(*t, b.clone());
    }
    let mut em = Em {
        m,
        target,
        body: vec![],
        consts: vec![],
        const_names: HashMap::new(),
        fconsts: HashMap::new(),
        n: 0,
        blocks: 0,
        vals: HashMap::new(),
        tid: String::new(),
        smem: String::new(),
        smem_i32: String::new(),
        cwg: None,
        lane: String::new(),
        warp_in_wg: String::new(),
        acc_cols: 0,
        nacc: 0,
        acc_ty: String::new(),
        mma_sync: !target.has_wgmma(),
        producer_threads: if target.has_wgmma() { 128 } else { 32 },
        warp_mn: None,
        frag_rc: None,
        exit_block: "exit".into(),
        barrier_inits: vec![],
        smem_end: 1024,
        prev: None,
        acc_shape: None,
        cluster_size: 1,
        ring_swizzle: HashMap::new(),
        consumer_wgs: consumers as i64,
        loop_depth: 0,
    };
    // Parameters.
    let tm_attr = "{llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}";
    let mut params_mlir = vec![];
    let mut params = vec![];
    for (index, &a) in body.args.iter().enumerate() {
        let an = m.name(a).unwrap_or("arg").to_string();
        // `arg<index>_` keeps every parameter's SSA names apart from each other's and from
        // the writer's own (`%<hint><n>`), whatever the IR names are.
        let pn = format!("arg{index}_{}", super::sanitize(&an));
        match m.ty(a) {
            Type::Tensor { rank, elem } => {
                if let Some(b) = tma_boxes.get(&a) {
                    params_mlir.push(format!("%{pn}: !llvm.ptr {tm_attr}"));
                    em.vals.insert(a, Lv::TensorMap(format!("%{pn}")));
                    // A map only stored through has no fill (TMA clips out-of-bounds writes).
                    let fill = if store_boxes.contains_key(&a) && !k_loads(k, a) {
                        "none"
                    } else {
                        "zero"
                    };
                    params.push(Param::TensorMap {
                        name: an.clone(),
                        dtype: elem.name().into(),
                        rank: *rank,
                        box_: b.clone(),
                        swizzle: "128B".into(),
                        fill: fill.into(),
                        interleave: "none".into(),
                        l2_promotion: "256B".into(),
                    });
                } else {
                    params_mlir.push(format!("%{pn}_ptr: i64"));
                    let sizes: Vec<String> = (0..*rank).map(|i| format!("%{pn}_size{i}")).collect();
                    let strides: Vec<String> =
                        (0..*rank).map(|i| format!("%{pn}_stride{i}")).collect();
                    for s in sizes.iter().chain(&strides) {
                        params_mlir.push(format!("{s}: i64"));
                    }
                    em.vals.insert(
                        a,
                        Lv::TensorPtr {
                            ptr: format!("%{pn}_ptr"),
                            sizes,
                            strides,
                            elem: *elem,
                        },
                    );
                    params.push(Param::TensorPointer {
                        name: an.clone(),
                        dtype: elem.name().into(),
                        rank: *rank,
                    });
                }
            }
            Type::Scalar(s) => {
                let t = mlir_scalar(*s);
                params_mlir.push(format!("%{pn}: {t}"));
                em.vals.insert(a, Lv::Scalar(format!("%{pn}"), t));
                params.push(Param::Scalar {
                    name: an.clone(),
                    dtype: t.into(),
                });
            }
            t => {
                return err(
                    k,
                    format!("kernel argument '%{an}' of type {t} cannot be a kernel parameter"),
                )
            }
        }
    }
    // Entry.
    em.tid = em.op("nvvm.read.ptx.sreg.tid.x : i32", "tid");
    em.smem = em.op("llvm.mlir.addressof @dynamic_smem : !llvm.ptr<3>", "smem");
    let smem = em.smem.clone();
    em.smem_i32 = em.op(
        format!("llvm.ptrtoint {smem} : !llvm.ptr<3> to i32"),
        "smem_addr",
    );
    let c31 = em.cst(31, "i32");
    let tid = em.tid.clone();
    em.lane = em.bin("and", &tid, &c31, "i32", "lane");
    let c5 = em.cst(5, "i32");
    let c3 = em.cst(3, "i32");
    let w = em.bin("lshr", &tid, &c5, "i32", "warp");
    em.warp_in_wg = em.bin("and", &w, &c3, "i32", "warp_in_wg");
    em.cluster_size = cluster.iter().product();
    lower_block(&mut em, &body.ops)?;
    em.label("exit:");
    if cluster.iter().product::<i64>() > 1 {
        // No CTA may exit while a peer can still write into its shared memory (a multicast
        // try_cancel response, a remote mbarrier arrive): every thread meets here.
        em.emit(
            "llvm.inline_asm has_side_effects asm_dialect = att \
                \"barrier.cluster.arrive.release; barrier.cluster.wait.acquire;\", \"\"  : () -> \
                ()",
        );
    }
    em.emit("llvm.return");

    let maxntid = format!("array<i32: {}, {}, {}>", block[0], block[1], block[2]);
    let mut text = String::new();
    let _ = writeln!(
        text,
        "// Generated by tilec convert-tile-to-nvvm from kernel @{name} for {target}."
    );
    if !em.acc_ty.is_empty() {
        let _ = writeln!(text, "!acc = {}", em.acc_ty);
    }
    let _ = writeln!(text, "module attributes {{gpu.container_module}} {{");
    let _ = writeln!(text, "gpu.module @{}_module {{", super::sanitize(&name));
    let _ = writeln!(
        text,
        "  llvm.mlir.global external @dynamic_smem() {{addr_space = 3 : i32, \
            alignment = 1024 : i64}} : !llvm.array<0 x i8>"
    );
    // Register budget. wgmma kernels: maxntid 384 + minctasm 1 gives ptxas a cap of 168 at
    // entry, which setmaxnreg then rebalances (40 producer / 232 consumers). mma.sync
    // kernels (no setmaxnreg): the hardware allocates warps in groups of 4, so 288 threads
    // (9 warps) take the register file of 12 warps: 65536 / (12 × 32) = 170 → 168. (A cap
    // of 224 assembled but failed to launch on the H200 with LAUNCH_OUT_OF_RESOURCES.)
    let regs = if em.mma_sync {
        let warps = ((block[0] * block[1] * block[2]) as u64).div_ceil(32);
        let alloc_warps = warps.div_ceil(4) * 4;
        format!(
            "nvvm.maxnreg = {} : i32",
            (65536 / (alloc_warps * 32)).min(255) / 8 * 8
        )
    } else {
        "nvvm.minctasm = 1 : i32".to_string()
    };
    let regs = if cluster.iter().product::<i64>() > 1 {
        format!(
            "{regs}, nvvm.cluster_dim = array<i32: {}, {}, {}>",
            cluster[0], cluster[1], cluster[2]
        )
    } else {
        regs
    };
    let _ = writeln!(
        text,
        "  llvm.func @{}({}) attributes {{gpu.kernel, nvvm.kernel, nvvm.maxntid \
            = {maxntid}, {regs}}} {{",
        super::sanitize(&name),
        params_mlir.join(", ")
    );
    for c in &em.consts {
        let _ = writeln!(text, "{c}");
    }
    for l in &em.body {
        let _ = writeln!(text, "{l}");
    }
    let _ = writeln!(text, "  }}\n}}\n}}");

    let grid = k.attr("grid").and_then(Attribute::as_array).unwrap_or(&[]);
    let (dims, texts) = super::grid_of(k);
    let smem_bytes = k.int_attr("smem_bytes").unwrap_or(em.smem_end as i64) as u64;
    let mut atomics = false;
    k.walk(&mut |o| atomics |= o.kind == OpKind::AtomicAdd);
    let mut ptx_version = if atomics {
        target.min_ptx_version().max((8, 1))
    } else {
        target.min_ptx_version()
    };
    // Parameter space: PTX ISA 8.1 raised the limit; use it when the parameters need it.
    let bytes = param_bytes(&params);
    if bytes > tilec_dialect::target::max_param_bytes(ptx_version) {
        ptx_version = ptx_version.max((8, 1));
    }
    let limit = tilec_dialect::target::max_param_bytes(ptx_version);
    if bytes > limit {
        return err(
            k,
            format!(
                "the kernel's {} parameters take {bytes} bytes of parameter space; PTX allows \
                 {limit} (tensor maps take 128 bytes each, pointer tensors 8 per pointer, size \
                 and stride)",
                params.len()
            ),
        );
    }
    let (maj, min) = ptx_version;
    let persistent = match k.str_attr("schedule") {
        Some("static") => Some(serde_json::json!({
            "schedule": "static",
            "ctas_per_sm": 1,
            "group_m": k.int_attr("group_m").unwrap_or(0),
        })),
        Some("clc") => Some(
            serde_json::json!({"schedule": "clc", "group_m": k.int_attr("group_m").unwrap_or(0)}),
        ),
        _ => None,
    };
    let mut manifest = Manifest::new(
        name.clone(),
        target.name().into(),
        format!("{maj}.{min}"),
        [block[0] as u32, block[1] as u32, block[2] as u32],
        smem_bytes.max(em.smem_end),
        dims,
        texts,
        params,
    );
    manifest.persistent = persistent;
    if atomics {
        // Split-K: which scalar is S (grid z, when it is a plain argument), which tensors
        // the kernel adds into (the launcher zeroes them before each launch), the K
        // granularity of a slice (the ring's K tile), and what the launcher does after.
        let mut ws: Vec<String> = vec![];
        let mut k_tile = 0u64;
        k.walk(&mut |o| {
            if o.kind == OpKind::AtomicAdd {
                if let Some(n) = m.name(o.operands[0]) {
                    if !ws.iter().any(|w| w == n) {
                        ws.push(n.to_string());
                    }
                }
            }
            if o.kind == OpKind::SmemAlloc && k_tile == 0 {
                if let Type::Smem { shape, .. } = m.ty(o.results[0]) {
                    k_tile = shape.last().copied().unwrap_or(0);
                }
            }
        });
        let arg = match grid.get(2) {
            Some(Attribute::Expr(Expr::Arg(n))) => serde_json::Value::String(n.clone()),
            _ => serde_json::Value::Null,
        };
        manifest.split_k = Some(serde_json::json!({
            "arg": arg,
            "workspace": ws,
            "workspace_init": "zero",
            "k_tile": k_tile,
            "finalize": {"op": "convert", "from": ws.first(), "to": "C", "dtype": "bf16"},
        }));
    }
    manifest.cluster = [cluster[0] as u32, cluster[1] as u32, cluster[2] as u32];
    Ok(LoweredKernel {
        mlir: text,
        manifest,
        target,
        ptx_version: (maj, min),
    })
}

/// Whether kernel `k` reads tensor `t` with `tile.tma_load`.
fn k_loads(k: &Operation, t: Value) -> bool {
    let mut any = false;
    k.walk(&mut |o| any |= o.kind == OpKind::TmaLoad && o.operands.first() == Some(&t));
    any
}

/// MLIR SSA names allow `[A-Za-z0-9_$.-]`; keep tile names as they are where possible.
/// Bytes of PTX parameter space the parameters take, each aligned as the ABI aligns it
/// (docs/manifest.md): a tensor map 128 bytes at 64, a pointer tensor's pointer, sizes and
/// strides 8 each, a scalar its size.
fn param_bytes(params: &[Param]) -> u64 {
    let mut offset = 0u64;
    for p in params {
        let (size, align) = match p {
            Param::TensorMap { .. } => (128, 64),
            Param::TensorPointer { rank, .. } => (8 * (1 + 2 * u64::from(*rank)), 8),
            Param::Scalar { dtype, .. } => match dtype.as_str() {
                "i64" | "f64" => (8, 8),
                "i32" | "f32" => (4, 4),
                "f16" | "bf16" => (2, 2),
                _ => (1, 1),
            },
        };
        offset = offset.div_ceil(align) * align + size;
    }
    offset
}

fn lower_block(em: &mut Em, ops: &[Operation]) -> R<()> {
    em.prev = None;
    for op in ops {
        lower_op(em, op)?;
        em.prev = Some(op.kind);
    }
    Ok(())
}

fn def_scalar(em: &mut Em, op: &Operation, s: String, t: &'static str) {
    em.vals.insert(op.results[0], Lv::Scalar(s, t));
}

fn lower_op(em: &mut Em, op: &Operation) -> R<()> {
    let m = em.m;
    match op.kind {
        OpKind::ProgramId | OpKind::NumPrograms | OpKind::CtaId | OpKind::NumCtas => {
            let d = ["x", "y", "z"][op.int_attr("dim").unwrap_or(0) as usize];
            let reg = if matches!(op.kind, OpKind::ProgramId | OpKind::CtaId) {
                "ctaid"
            } else {
                "nctaid"
            };
            let v = em.op(format!("nvvm.read.ptx.sreg.{reg}.{d} : i32"), reg);
            let z = em.zext64(&v);
            def_scalar(em, op, z, "i64");
        }
        OpKind::Constant => {
            let Type::Scalar(s) = m.ty(op.results[0]) else {
                return err(
                    op,
                    "non-scalar \
                        constant",
                );
            };
            let t = mlir_scalar(*s);
            let c = match op.attr("value") {
                Some(Attribute::Int(i)) if s.is_int() => em.cst(*i, t),
                Some(a) => em.fcst(a.as_f64().unwrap_or(0.0), t),
                None => return err(op, "constant without value"),
            };
            def_scalar(em, op, c, t);
        }
        OpKind::AddI
        | OpKind::SubI
        | OpKind::MulI
        | OpKind::DivI
        | OpKind::RemI
        | OpKind::MinI
        | OpKind::MaxI
        | OpKind::CeilDiv => {
            let (a, b) = (
                em.scalar(op, op.operands[0])?,
                em.scalar(op, op.operands[1])?,
            );
            let Type::Scalar(s) = m.ty(op.results[0]) else {
                return err(op, "non-scalar");
            };
            let t = mlir_scalar(*s);
            let r = match op.kind {
                OpKind::AddI => em.bin("add", &a, &b, t, "v"),
                OpKind::SubI => em.bin("sub", &a, &b, t, "v"),
                OpKind::MulI => em.bin("mul", &a, &b, t, "v"),
                OpKind::DivI => em.bin("sdiv", &a, &b, t, "v"),
                OpKind::RemI => em.bin("srem", &a, &b, t, "v"),
                OpKind::MinI => em.op(format!("llvm.intr.smin({a}, {b}) : ({t}, {t}) -> {t}"), "v"),
                OpKind::MaxI => em.op(format!("llvm.intr.smax({a}, {b}) : ({t}, {t}) -> {t}"), "v"),
                _ => {
                    let one = em.cst(1, t);
                    let bm1 = em.bin("sub", &b, &one, t, "v");
                    let s = em.bin("add", &a, &bm1, t, "v");
                    em.bin("sdiv", &s, &b, t, "v")
                }
            };
            def_scalar(em, op, r, t);
        }
        OpKind::CmpI => {
            let (a, b) = (
                em.scalar(op, op.operands[0])?,
                em.scalar(op, op.operands[1])?,
            );
            let t = match m.ty(op.operands[0]) {
                Type::Scalar(s) => mlir_scalar(*s),
                _ => "i64",
            };
            let r = em.icmp(op.str_attr("predicate").unwrap_or("eq"), &a, &b, t);
            def_scalar(em, op, r, "i1");
        }
        OpKind::Select if matches!(m.ty(op.results[0]), Type::Scalar(_)) => {
            let (c, a, b) = (
                em.scalar(op, op.operands[0])?,
                em.scalar(op, op.operands[1])?,
                em.scalar(op, op.operands[2])?,
            );
            let Type::Scalar(s) = m.ty(op.results[0]) else {
                unreachable!("matched")
            };
            let t = mlir_scalar(*s);
            let r = em.op(format!("llvm.select {c}, {a}, {b} : i1, {t}"), "v");
            def_scalar(em, op, r, t);
        }
        OpKind::Zeros => {
            // Only as the initial accumulator of a zero_acc MMA; materialised as undef.
            em.vals
                .insert(op.results[0], Lv::Scalar("<zeros>".into(), "zeros"));
        }
        OpKind::SmemAlloc => {
            let Type::Smem {
                stages,
                shape,
                elem,
            } = m.ty(op.results[0]).clone()
            else {
                return err(op, "bad ring");
            };
            let stage_bytes = shape.iter().product::<u64>() * elem.size_bytes();
            let offset = em.smem_end.div_ceil(1024) * 1024;
            em.smem_end = offset + stages * stage_bytes;
            em.vals.insert(
                op.results[0],
                Lv::Ring {
                    offset,
                    stage_bytes,
                    shape,
                    elem,
                },
            );
            em.ring_swizzle
                .insert(op.results[0], op.int_attr("swizzle").unwrap_or(0));
        }
        OpKind::MbarrierAlloc => {
            let Type::Mbarrier { count } = m.ty(op.results[0]).clone() else {
                return err(
                    op,
                    "bad \
                        barriers",
                );
            };
            let offset: u64 = em.barrier_inits.iter().map(|b| b.1 * 8).sum();
            if offset + count * 8 > 1024 {
                return err(
                    op,
                    "more than 128 mbarriers do not fit the 1024-byte barrier region",
                );
            }
            em.barrier_inits
                .push((offset, count, op.int_attr("arrive_count").unwrap_or(1)));
            em.vals.insert(op.results[0], Lv::Bars { offset });
        }
        OpKind::WarpSpecialize => lower_warp_specialize(em, op)?,
        OpKind::For => lower_for(em, op)?,
        OpKind::If => {
            // Results (scalars and accumulators, as loops carry) are the join block's
            // arguments.
            let c = em.scalar(op, op.operands[0])?;
            let (t, e, j) = (
                em.block_name("then"),
                em.block_name("else"),
                em.block_name("join"),
            );
            em.emit(format!("llvm.cond_br {c}, ^{t}, ^{e}"));
            let mut kinds = vec![];
            let mut tys = vec![];
            for (r, name) in [(0, t), (1, e)] {
                em.label(&format!("{name}:"));
                lower_block(em, &op.regions[r].ops)?;
                let ys = op.regions[r]
                    .ops
                    .last()
                    .filter(|y| y.kind == OpKind::Yield)
                    .map(|y| y.operands.clone())
                    .unwrap_or_default();
                let (names, ts, ks) = if_yields(em, op, &ys)?;
                if r == 0 {
                    (kinds, tys) = (ks, ts.clone());
                } else if ts != tys {
                    return err(op, "the branches of 'tile.if' yield different types");
                }
                if names.is_empty() {
                    em.emit(format!("llvm.br ^{j}"));
                } else {
                    em.emit(format!(
                        "llvm.br ^{j}({} : {})",
                        names.join(", "),
                        ts.join(", ")
                    ));
                }
            }
            let res: Vec<String> = (0..op.results.len())
                .map(|i| format!("%{j}_r{i}"))
                .collect();
            if res.is_empty() {
                em.label(&format!("{j}:"));
            } else {
                let sig: Vec<String> = res
                    .iter()
                    .zip(&tys)
                    .map(|(n, t)| format!("{n}: {t}"))
                    .collect();
                em.label(&format!("{j}({}):", sig.join(", ")));
            }
            for ((&r, n), kind) in op.results.iter().zip(&res).zip(&kinds) {
                em.vals.insert(r, renamed(kind, n));
            }
        }
        OpKind::Yield => {} // handled by the parent
        OpKind::Return => {
            let x = em.exit_block.clone();
            em.emit(format!("llvm.br ^{x}"));
        }
        OpKind::MbarrierWait => {
            let a = em.bar_addr(op, op.operands[0], op.operands[1])?;
            let p = em.scalar(op, op.operands[2])?;
            let p32 = em.trunc32(&p);
            let t = em.cst(TRY_WAIT_TICKS, "i32");
            em.emit(format!(
                "nvvm.mbarrier.try_wait.parity {a}, {p32}, {t} : !llvm.ptr<3>, i32, \
                    i32"
            ));
        }
        OpKind::MbarrierExpectTx => {
            let a = em.bar_addr(op, op.operands[0], op.operands[1])?;
            let b = em.cst(op.int_attr("bytes").unwrap_or(0), "i32");
            em.emit(format!(
                "nvvm.mbarrier.arrive.expect_tx {a}, {b} : !llvm.ptr<3>, i32"
            ));
        }
        OpKind::MbarrierArrive => {
            // One arrive per warp (lane 0), matching arrive_count = 4 × consumer warpgroups.
            // The arrive releases what every lane of the warp read: unless a `.sync.aligned`
            // wait just converged the warp, `bar.warp.sync` orders the other lanes' reads
            // first (not in the producer region, where one thread runs).
            if em.cwg.is_some() && em.prev != Some(OpKind::WaitGroup) {
                em.emit(
                    "llvm.inline_asm has_side_effects asm_dialect = att \"bar.warp.sync -1;\", \
                        \"\"  : () -> ()",
                );
            }
            let a = em.bar_addr(op, op.operands[0], op.operands[1])?;
            let lane = em.lane.clone();
            let z = em.cst(0, "i32");
            let l0 = em.icmp("eq", &lane, &z, "i32");
            let (go, cont) = (em.block_name("arrive"), em.block_name("arrived"));
            em.emit(format!("llvm.cond_br {l0}, ^{go}, ^{cont}"));
            em.label(&format!("{go}:"));
            match op.int_attr("cta") {
                None => em.emit(format!("nvvm.mbarrier.arrive {a} : !llvm.ptr<3>")),
                Some(cta) => {
                    let a32 = em.op(format!("llvm.ptrtoint {a} : !llvm.ptr<3> to i32"), "bar32");
                    let r = em.cst(cta, "i32");
                    em.emit(format!(
                        "llvm.inline_asm has_side_effects asm_dialect = att \"{{ .reg \
                            .b32 remote; mapa.shared::cluster.u32 remote, $0, $1; \
                            mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote]; }}\", \
                            \"r,r\" {a32}, {r} : (i32, i32) -> ()"
                    ));
                }
            }
            em.emit(format!("llvm.br ^{cont}"));
            em.label(&format!("{cont}:"));
        }
        OpKind::While => lower_while(em, op)?,
        OpKind::FenceProxyAsync => em.emit(
            "llvm.inline_asm has_side_effects asm_dialect = att \
                \"fence.proxy.async.shared::cta;\", \"\"  : () -> ()",
        ),
        OpKind::ClusterCtaRank => {
            let r = em.op(
                "llvm.inline_asm asm_dialect = att \"mov.u32 $0, %cluster_ctarank;\", \
                    \"=r\"  : () -> i32",
                "rank32",
            );
            let r64 = em.zext64(&r);
            def_scalar(em, op, r64, "i64");
        }
        OpKind::ClcTryCancel => {
            let slot = clc_slot_addr(em, op)?;
            let b = em.bar_addr(op, op.operands[1], op.operands[2])?;
            let b32 = em.op(format!("llvm.ptrtoint {b} : !llvm.ptr<3> to i32"), "bar32");
            let mc = if op.attr("multicast").and_then(Attribute::as_bool) == Some(true) {
                ".multicast::cluster::all"
            } else {
                ""
            };
            em.emit(format!(
                "llvm.inline_asm has_side_effects asm_dialect = att \
                    \"clusterlaunchcontrol.try_cancel.async.shared::cta.\
                    mbarrier::complete_tx::bytes{mc}.b128 [$0], [$1];\", \"r,r\" {slot}, {b32} : \
                    (i32, i32) -> ()"
            ));
        }
        OpKind::ClcQuery => {
            let bits = op.int_attr("load_bits").unwrap_or(128);
            if bits != 128 {
                return err(
                    op,
                    format!(
                        "convert-tile-to-nvvm: a try_cancel response is an opaque \
                            128-bit value read with one ld.shared.b128; load_bits = {bits} is not \
                            lowered"
                    ),
                );
            }
            let slot = clc_slot_addr(em, op)?;
            let asm = "{ .reg .b128 resp; .reg .pred canceled; .reg .b32 w; ld.shared.b128 resp, \
                [$4]; clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 canceled, resp; \
                selp.u32 $0, 1, 0, canceled; mov.u32 $1, 0; mov.u32 $2, 0; mov.u32 $3, 0; \
                @canceled clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128 \
                {$1, $2, $3, w}, resp; }";
            let r = em.op(
                format!(
                    "llvm.inline_asm has_side_effects asm_dialect = att \"{asm}\", \
                        \"=r,=r,=r,=r,r\" {slot} : (i32) -> !llvm.struct<(i32, i32, i32, i32)>"
                ),
                "clc",
            );
            let f = em.op(
                format!(
                    "llvm.extractvalue {r}[0] : !llvm.struct<(i32, i32, i32, \
                        i32)>"
                ),
                "canceled32",
            );
            let z = em.cst(0, "i32");
            let ok = em.icmp("ne", &f, &z, "i32");
            em.vals.insert(op.results[0], Lv::Scalar(ok, "i1"));
            for d in 0..3 {
                let x = em.op(
                    format!(
                        "llvm.extractvalue {r}[{}] : !llvm.struct<(i32, i32, i32, \
                            i32)>",
                        d + 1
                    ),
                    "first_ctaid",
                );
                let x64 = em.zext64(&x);
                em.vals.insert(op.results[d + 1], Lv::Scalar(x64, "i64"));
            }
        }
        OpKind::TmaLoad => lower_tma_load(em, op)?,
        OpKind::WgmmaFence => em.emit("nvvm.wgmma.fence.aligned"),
        OpKind::CommitGroup => em.emit("nvvm.wgmma.commit.group.sync.aligned"),
        OpKind::Barrier => {
            // `bar.sync 0` waits for every thread of the CTA; inside a warp-specialized
            // consumer region the producer never arrives, so it would hang.
            if em.cwg.is_some() {
                return err(
                    op,
                    "convert-tile-to-nvvm: 'tile.barrier' inside the consumer region of \
                        'tile.warp_specialize' needs a named barrier over the consumer warpgroups, \
                        which is not lowered yet",
                );
            }
            em.emit("nvvm.barrier0")
        }
        OpKind::Mma => lower_mma(em, op)?,
        OpKind::WaitGroup => lower_wait(em, op)?,
        OpKind::Convert
        | OpKind::Add
        | OpKind::Sub
        | OpKind::Mul
        | OpKind::Div
        | OpKind::Max
        | OpKind::Min
        | OpKind::Neg
        | OpKind::Abs
        | OpKind::Relu
        | OpKind::Exp
        | OpKind::Exp2
        | OpKind::Log
        | OpKind::Sqrt
        | OpKind::Rsqrt
        | OpKind::Tanh
        | OpKind::Broadcast
        | OpKind::Splat => lower_elementwise(em, op)?,
        OpKind::Load => lower_epilogue_load(em, op)?,
        OpKind::Store => lower_store(em, op, false)?,
        OpKind::AtomicAdd => lower_store(em, op, true)?,
        OpKind::SmemStore => lower_smem_store(em, op)?,
        OpKind::TmaStore => lower_tma_store(em, op)?,
        OpKind::BulkCommitGroup => {
            let p = em.elected()?;
            em.emit(format!(
                "llvm.inline_asm has_side_effects asm_dialect = att \"{{ .reg .pred p; \
                    setp.ne.u32 p, $0, 0; @p cp.async.bulk.commit_group; }}\", \"r\" {p} : (i32) \
                    -> \
                    ()"
            ));
        }
        OpKind::BulkWaitGroup => {
            let p = em.elected()?;
            let n = op.int_attr("pending").unwrap_or(0);
            let read = if op.attr("read").and_then(Attribute::as_bool) == Some(true) {
                ".read"
            } else {
                ""
            };
            em.emit(format!(
                "llvm.inline_asm has_side_effects asm_dialect = att \"{{ .reg .pred p; \
                    setp.ne.u32 p, $0, 0; @p cp.async.bulk.wait_group{read} {n}; }}\", \"r\" {p} : \
                    (i32) -> ()"
            ));
        }
        OpKind::NamedBarrier => {
            let id = op.int_attr("id").unwrap_or(1);
            let threads = op.int_attr("threads").unwrap_or(128);
            // In the consumer region a one-warpgroup barrier is per warpgroup: id + w.
            let idv = match em.cwg.clone() {
                Some(cwg) if threads == 128 => {
                    if id + em.consumer_wgs - 1 > 15 {
                        return err(
                            op,
                            format!(
                                "convert-tile-to-nvvm: named barrier {id} + \
                                    consumer warpgroup index exceeds barrier 15"
                            ),
                        );
                    }
                    let c = em.cst(id, "i32");
                    em.bin("add", &cwg, &c, "i32", "bar_id")
                }
                _ => em.cst(id, "i32"),
            };
            em.emit(format!(
                "llvm.inline_asm has_side_effects asm_dialect = att \"bar.sync $0, \
                    {threads};\", \"r\" {idv} : (i32) -> ()"
            ));
        }
        other => {
            return err(
                op,
                format!(
                    "convert-tile-to-nvvm does not lower '{}' \
                        here",
                    other.name()
                ),
            )
        }
    }
    Ok(())
}

fn lower_warp_specialize(em: &mut Em, op: &Operation) -> R<()> {
    // Barrier init by thread 0, made visible to the async proxy and the CTA.
    let tid = em.tid.clone();
    let z = em.cst(0, "i32");
    let t0 = em.icmp("eq", &tid, &z, "i32");
    em.emit(format!("llvm.cond_br {t0}, ^init, ^after_init"));
    em.label("init:  // [mbarrier.init]");
    for (offset, count, arrive) in em.barrier_inits.clone() {
        for s in 0..count {
            let o = em.cst((offset + 8 * s) as i64, "i32");
            let p = em.gep3(&o);
            let c = em.cst(arrive, "i32");
            em.emit(format!("nvvm.mbarrier.init {p}, {c} : !llvm.ptr<3>, i32"));
        }
    }
    em.emit("nvvm.fence.mbarrier.init");
    em.emit("llvm.br ^after_init");
    em.label("after_init:");
    em.emit("nvvm.barrier0");
    if em.cluster_size > 1 {
        // Peers arrive on this CTA's barriers and multicast into its shared memory: the
        // whole cluster sees every barrier initialised before anyone goes on.
        em.emit(
            "llvm.inline_asm has_side_effects asm_dialect = att \
                \"barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;\", \
                \"\"  : () -> ()",
        );
    }
    let pt = em.cst(em.producer_threads, "i32");
    let is_p = em.icmp("ult", &tid, &pt, "i32");
    em.emit(format!("llvm.cond_br {is_p}, ^producer, ^consumer"));
    em.label("producer:  // warpgroup 0: TMA producer");
    if em.target.has_setmaxnreg() {
        em.emit("nvvm.setmaxregister decrease 40");
    }
    let t0b = em.icmp("eq", &tid, &z, "i32");
    em.emit(format!("llvm.cond_br {t0b}, ^producer_elected, ^exit"));
    em.label("producer_elected:");
    lower_block(em, &op.regions[0].ops)?;
    em.emit("llvm.br ^exit");
    em.label("consumer:  // consumer warpgroups");
    if em.target.has_setmaxnreg() {
        em.emit("nvvm.setmaxregister increase 232");
    }
    let c128 = em.cst(128, "i32");
    let wg = em.bin("udiv", &tid, &c128, "i32", "wg");
    let one = em.cst(1, "i32");
    em.cwg = Some(em.bin("sub", &wg, &one, "i32", "cwg"));
    if em.mma_sync {
        // Consumer warps 0..7 (after the producer warp) in a 2 x 4 grid of 64 x 64 tiles.
        let c5 = em.cst(5, "i32");
        let w = em.bin("lshr", &tid, &c5, "i32", "w");
        let cw = em.bin("sub", &w, &one, "i32", "cw");
        let c2 = em.cst(2, "i32");
        let c3 = em.cst(3, "i32");
        let wm = em.bin("lshr", &cw, &c2, "i32", "warp_m");
        let wn = em.bin("and", &cw, &c3, "i32", "warp_n");
        em.warp_mn = Some((wm, wn));
    }
    em.frag_rc = Some(frag_base(em, op)?);
    lower_block(em, &op.regions[1].ops)?;
    let y = op.regions[1].ops.last().expect("verified yield");
    for (r, v) in op.results.iter().zip(&y.operands) {
        let lv = em
            .vals
            .get(v)
            .cloned()
            .ok_or_else(|| Diagnostic::error(y.loc.clone(), "yielded value not lowered"))?;
        em.vals.insert(*r, lv);
    }
    Ok(())
}

fn lv_type(em: &Em, lv: &Lv) -> Option<String> {
    match lv {
        Lv::Scalar(_, t) => Some(t.to_string()),
        Lv::Acc(_) => Some("!acc".into()),
        _ => {
            let _ = em;
            None
        }
    }
}

fn lv_name(lv: &Lv) -> Option<String> {
    match lv {
        Lv::Scalar(s, _) | Lv::Acc(s) => Some(s.clone()),
        _ => None,
    }
}

fn lower_for(em: &mut Em, op: &Operation) -> R<()> {
    let lb = em.scalar(op, op.operands[0])?;
    let ub = em.scalar(op, op.operands[1])?;
    let step = em.scalar(op, op.operands[2])?;
    let (names, tys, carried_kinds) = carried(em, op, &op.operands[3..])?;
    let init_names: Vec<String> = std::iter::once(lb.clone()).chain(names).collect();
    let init_tys: Vec<String> = std::iter::once("i64".to_string()).chain(tys).collect();
    let (head, body, exit) = (
        em.block_name("loop"),
        em.block_name("body"),
        em.block_name("done"),
    );
    let b = &op.regions[0];
    let arg_names: Vec<String> = (0..b.args.len()).map(|i| format!("%{head}_a{i}")).collect();
    em.emit(format!(
        "llvm.br ^{head}({} : {})",
        init_names.join(", "),
        init_tys.join(", ")
    ));
    let args_sig: Vec<String> = arg_names
        .iter()
        .zip(&init_tys)
        .map(|(n, t)| format!("{n}: {t}"))
        .collect();
    em.label(&format!("{head}({}):", args_sig.join(", ")));
    em.vals
        .insert(b.args[0], Lv::Scalar(arg_names[0].clone(), "i64"));
    for ((&a, n), kind) in b.args[1..].iter().zip(&arg_names[1..]).zip(&carried_kinds) {
        em.vals.insert(a, renamed(kind, n));
    }
    let iv = arg_names[0].clone();
    let c = em.icmp("slt", &iv, &ub, "i64");
    let carried_args: Vec<String> = arg_names[1..].to_vec();
    let exit_sig = if carried_args.is_empty() {
        String::new()
    } else {
        format!(
            "({} : {})",
            carried_args.join(", "),
            init_tys[1..].join(", ")
        )
    };
    em.emit(format!("llvm.cond_br {c}, ^{body}, ^{exit}{exit_sig}"));
    em.label(&format!("{body}:"));
    let yielded = loop_body(em, b)?;
    let mut next = vec![em.bin("add", &iv, &step, "i64", "iv")];
    next.extend(yielded);
    em.emit(format!(
        "llvm.br ^{head}({} : {})",
        next.join(", "),
        init_tys.join(", ")
    ));
    let res_names: Vec<String> = (0..op.results.len())
        .map(|i| format!("%{exit}_r{i}"))
        .collect();
    let res_sig: Vec<String> = res_names
        .iter()
        .zip(&init_tys[1..])
        .map(|(n, t)| format!("{n}: {t}"))
        .collect();
    if res_sig.is_empty() {
        em.label(&format!("{exit}:"));
    } else {
        em.label(&format!("{exit}({}):", res_sig.join(", ")));
    }
    for ((&r, n), kind) in op.results.iter().zip(&res_names).zip(&carried_kinds) {
        em.vals.insert(r, renamed(kind, n));
    }
    Ok(())
}

/// The values a loop carries (`vals`): their MLIR names, types and kinds. Only scalars and
/// accumulators can be block arguments.
fn carried(em: &Em, op: &Operation, vals: &[Value]) -> R<(Vec<String>, Vec<String>, Vec<Lv>)> {
    let (mut names, mut tys, mut kinds) = (vec![], vec![], vec![]);
    for &v in vals {
        let lv = em
            .vals
            .get(&v)
            .cloned()
            .ok_or_else(|| Diagnostic::error(op.loc.clone(), "loop init not lowered"))?;
        let (Some(n), Some(t)) = (lv_name(&lv), lv_type(em, &lv)) else {
            return err(
                op,
                "convert-tile-to-nvvm: a loop or 'tile.if' may carry scalars and accumulators \
                    only",
            );
        };
        names.push(n);
        tys.push(t);
        kinds.push(lv);
    }
    Ok((names, tys, kinds))
}

/// The values a `tile.if` branch yields (`vals`), as `carried` gives them; a `tile.zeros`
/// where the `tile.if` returns an accumulator becomes an accumulator of zeros, built in the
/// branch.
fn if_yields(
    em: &mut Em,
    op: &Operation,
    vals: &[Value],
) -> R<(Vec<String>, Vec<String>, Vec<Lv>)> {
    let (mut names, mut tys, mut kinds) = (vec![], vec![], vec![]);
    for (i, &v) in vals.iter().enumerate() {
        let zeros = matches!(em.vals.get(&v), Some(Lv::Scalar(_, "zeros")));
        let acc_result = op
            .results
            .get(i)
            .is_some_and(|&r| matches!(em.m.ty(r), Type::Tile { .. }))
            && em.nacc > 0;
        if zeros && acc_result {
            let zero = em.fcst(0.0, "f32");
            let mut st = em.op("llvm.mlir.undef : !acc", "acc0");
            for k in 0..em.nacc {
                st = em.op(format!("llvm.insertvalue {zero}, {st}[{k}] : !acc"), "acc0");
            }
            names.push(st.clone());
            tys.push("!acc".to_string());
            kinds.push(Lv::Acc(st));
            continue;
        }
        let (n, t, k) = carried(em, op, &[v])?;
        names.extend(n);
        tys.extend(t);
        kinds.extend(k);
    }
    Ok((names, tys, kinds))
}

/// A carried value of `kind` under the block-argument or result name `n`.
fn renamed(kind: &Lv, n: &str) -> Lv {
    match kind {
        Lv::Acc(_) => Lv::Acc(n.to_string()),
        Lv::Scalar(_, t) => Lv::Scalar(n.to_string(), t),
        _ => unreachable!("carried() admits scalars and accumulators only"),
    }
}

/// Lower a loop body (one level deeper) and return the MLIR names its `tile.yield` passes on.
fn loop_body(em: &mut Em, b: &tilec_dialect::Block) -> R<Vec<String>> {
    em.loop_depth += 1;
    let r = lower_block(em, &b.ops);
    em.loop_depth -= 1;
    r?;
    let y = b.ops.last().expect("verified yield");
    y.operands
        .iter()
        .map(|v| {
            let lv = em
                .vals
                .get(v)
                .cloned()
                .ok_or_else(|| Diagnostic::error(y.loc.clone(), "yielded value not lowered"))?;
            lv_name(&lv).ok_or_else(|| {
                Diagnostic::error(
                    y.loc.clone(),
                    "convert-tile-to-nvvm: a \
                        loop may carry scalars and accumulators only; this yields an epilogue tile \
                        (evaluated per register at its store)",
                )
            })
        })
        .collect()
}

/// Shared-memory address (i32) of slot `operands[last]` of the response ring `operands[0]`
/// (16 bytes per slot).
fn clc_slot_addr(em: &mut Em, op: &Operation) -> R<String> {
    let Some(Lv::Ring {
        offset,
        stage_bytes,
        ..
    }) = em.vals.get(&op.operands[0]).cloned()
    else {
        return err(op, "the try_cancel response is not a shared-memory ring");
    };
    if stage_bytes != 16 || offset % 16 != 0 {
        return err(
            op,
            format!(
                "a try_cancel response slot must be 16 bytes, 16-byte aligned; \
                    found {stage_bytes} bytes at offset {offset}"
            ),
        );
    }
    let slot = em.scalar(op, *op.operands.last().expect("verified"))?;
    let s32 = em.trunc32(&slot);
    let c4 = em.cst(4, "i32");
    let so = em.bin("shl", &s32, &c4, "i32", "slot_off");
    let base = em.cst(offset as i64, "i32");
    let o = em.bin("add", &so, &base, "i32", "slot_off");
    let smem = em.smem_i32.clone();
    Ok(em.bin("add", &smem, &o, "i32", "slot_addr"))
}

/// `tile.while` as a do-while: `br ^body(inits)`; `^body(args)`: the body, then
/// `cond_br %continue, ^body(next), ^done(next)`.
fn lower_while(em: &mut Em, op: &Operation) -> R<()> {
    let (init_names, tys, kinds) = carried(em, op, &op.operands)?;
    let (head, exit) = (em.block_name("while"), em.block_name("while_done"));
    let b = &op.regions[0];
    let arg_names: Vec<String> = (0..b.args.len()).map(|i| format!("%{head}_a{i}")).collect();
    em.emit(format!(
        "llvm.br ^{head}({} : {})",
        init_names.join(", "),
        tys.join(", ")
    ));
    let sig: Vec<String> = arg_names
        .iter()
        .zip(&tys)
        .map(|(n, t)| format!("{n}: {t}"))
        .collect();
    em.label(&format!("{head}({}):", sig.join(", ")));
    for ((&a, n), kind) in b.args.iter().zip(&arg_names).zip(&kinds) {
        em.vals.insert(a, renamed(kind, n));
    }
    let mut vals = loop_body(em, b)?;
    let go = vals.remove(0);
    let next = format!("({} : {})", vals.join(", "), tys.join(", "));
    em.emit(format!("llvm.cond_br {go}, ^{head}{next}, ^{exit}{next}"));
    let res_names: Vec<String> = (0..op.results.len())
        .map(|i| format!("%{exit}_r{i}"))
        .collect();
    let res_sig: Vec<String> = res_names
        .iter()
        .zip(&tys)
        .map(|(n, t)| format!("{n}: {t}"))
        .collect();
    em.label(&format!("{exit}({}):", res_sig.join(", ")));
    for ((&r, n), kind) in op.results.iter().zip(&res_names).zip(&kinds) {
        em.vals.insert(r, renamed(kind, n));
    }
    Ok(())
}

fn lower_tma_load(em: &mut Em, op: &Operation) -> R<()> {
    let Some(Lv::TensorMap(tm)) = em.vals.get(&op.operands[0]).cloned() else {
        return err(op, "TMA source is not a tensor map");
    };
    let Some(Lv::Ring {
        offset,
        stage_bytes,
        shape,
        elem,
    }) = em.vals.get(&op.operands[1]).cloned()
    else {
        return err(op, "TMA destination is not a ring");
    };
    let bar = em.bar_addr(op, op.operands[2], op.operands[3])?;
    if shape.len() != 2 || op.operands.len() != 6 {
        return err(op, "convert-tile-to-nvvm lowers 2-D TMA copies only");
    }
    let inner_bytes = 64 * elem.size_bytes();
    if shape[1] * elem.size_bytes() % 128 != 0 || inner_bytes != 128 {
        return err(
            op,
            format!(
                "TMA stage inner dimension must be a multiple of 64 {elem} elements (128 bytes)"
            ),
        );
    }
    let st = em.scalar(op, op.operands[3])?;
    let st32 = em.trunc32(&st);
    let sb = em.cst(stage_bytes as i64, "i32");
    let so = em.bin("mul", &st32, &sb, "i32", "soff");
    let base_c = em.cst(offset as i64, "i32");
    let base = em.bin("add", &so, &base_c, "i32", "soff");
    let outer = em.scalar(op, op.operands[4])?;
    let inner = em.scalar(op, op.operands[5])?;
    let outer32 = em.trunc32(&outer);
    let inner32 = em.trunc32(&inner);
    let boxes = shape[1] / 64;
    let box_bytes = shape[0] * 128;
    for j in 0..boxes {
        let d = if j == 0 {
            base.clone()
        } else {
            let c = em.cst((j * box_bytes) as i64, "i32");
            em.bin("add", &base, &c, "i32", "doff")
        };
        let p = em.gep3(&d);
        let p7 = em.op(
            format!("llvm.addrspacecast {p} : !llvm.ptr<3> to !llvm.ptr<7>"),
            "dst",
        );
        let ij = if j == 0 {
            inner32.clone()
        } else {
            let c = em.cst((64 * j) as i64, "i32");
            em.bin("add", &inner32, &c, "i32", "x")
        };
        em.emit(format!(
            "nvvm.cp.async.bulk.tensor.shared.cluster.global {p7}, {tm}, {bar}, \
                box[{ij}, {outer32}] : !llvm.ptr<7>, !llvm.ptr"
        ));
    }
    Ok(())
}

/// The operands of a `tile.mma` (a stage shared by both rings, or one each).
fn mma_parts(op: &Operation) -> R<tilec_dialect::ops::MmaOperands> {
    tilec_dialect::ops::mma_operands(op).ok_or_else(|| {
        Diagnostic::error(
            op.loc.clone(),
            "'tile.mma' takes (a, b, stage, acc) or (a, b, stage_a, stage_b, acc)",
        )
    })
}

fn lower_mma(em: &mut Em, op: &Operation) -> R<()> {
    match op.str_attr("kind") {
        Some("wgmma") => {}
        Some("mma_sync") => return lower_mma_sync(em, op),
        k => {
            return err(
                op,
                format!(
                    "convert-tile-to-nvvm: unknown MMA kind {:?}",
                    k.unwrap_or("?")
                ),
            )
        }
    }
    let (
        Some(Lv::Ring {
            offset: a_off,
            stage_bytes: a_sb,
            shape: a_sh,
            elem,
        }),
        Some(Lv::Ring {
            offset: b_off,
            stage_bytes: b_sb,
            shape: b_sh,
            ..
        }),
    ) = (
        em.vals.get(&op.operands[0]).cloned(),
        em.vals.get(&op.operands[1]).cloned(),
    )
    else {
        return err(op, "MMA operands are not rings");
    };
    let n = b_sh[1];
    if a_sh[1] != 64 || b_sh[0] != 64 {
        return err(op, "wgmma lowering expects 64-wide K stages");
    }
    let et = mlir_scalar(elem);
    let nacc = (n / 2) as usize;
    if em.acc_ty.is_empty() {
        em.acc_ty = format!("!llvm.struct<({})>", vec!["f32"; nacc].join(", "));
        em.nacc = nacc;
        em.acc_cols = n;
        em.acc_shape = em.m.ty(op.results[0]).tile_shape().map(<[u64]>::to_vec);
    } else if em.nacc != nacc {
        return err(op, "all MMAs of a kernel must share one accumulator shape");
    }
    let _ = a_sh[0];
    let cwg = em.cwg.clone().ok_or_else(|| {
        Diagnostic::error(
            op.loc.clone(),
            "'tile.mma' outside the consumer region of 'tile.warp_specialize'",
        )
    })?;
    // Descriptors: layout (1 = 128B swizzle) << 62 | (SBO >> 4) << 32 | (LBO >> 4) << 16 | addr >>
    // 4.
    let parts = mma_parts(op)?;
    let st = em.scalar(op, parts.stage_a)?;
    let st32 = em.trunc32(&st);
    let stb = if parts.stage_b == parts.stage_a {
        st32.clone()
    } else {
        let s = em.scalar(op, parts.stage_b)?;
        em.trunc32(&s)
    };
    let wg_rows = em.cst(64 * 128, "i32");
    let a_wg = em.bin("mul", &cwg, &wg_rows, "i32", "a_wg");
    let a_sbc = em.cst(a_sb as i64, "i32");
    let a_so = em.bin("mul", &st32, &a_sbc, "i32", "a_so");
    let a_base = em.cst(a_off as i64, "i32");
    let a1 = em.bin("add", &a_so, &a_base, "i32", "a_off");
    let a2 = em.bin("add", &a1, &a_wg, "i32", "a_off");
    let smem_i32 = em.smem_i32.clone();
    let a_addr = em.bin("add", &smem_i32, &a2, "i32", "a_addr");
    let b_sbc = em.cst(b_sb as i64, "i32");
    let b_so = em.bin("mul", &stb, &b_sbc, "i32", "b_so");
    let b_base = em.cst(b_off as i64, "i32");
    let b1 = em.bin("add", &b_so, &b_base, "i32", "b_off");
    let b_addr = em.bin("add", &smem_i32, &b1, "i32", "b_addr");
    let c4 = em.cst(4, "i32");
    let a_lo = em.bin("lshr", &a_addr, &c4, "i32", "a_lo");
    let b_lo = em.bin("lshr", &b_addr, &c4, "i32", "b_lo");
    let a_lo64 = em.zext64(&a_lo);
    let b_lo64 = em.zext64(&b_lo);
    let (a_lbo, a_sbo) = (16u64, 1024u64);
    let (b_lbo, b_sbo) = (64 * 64 * 2u64, 1024u64);
    let hi = |lbo: u64, sbo: u64| ((1u64 << 62) | ((sbo >> 4) << 32) | ((lbo >> 4) << 16)) as i64;
    let ahi = em.cst(hi(a_lbo, a_sbo), "i64");
    let bhi = em.cst(hi(b_lbo, b_sbo), "i64");
    let da0 = em.bin("or", &a_lo64, &ahi, "i64", "descA");
    let db0 = em.bin("or", &b_lo64, &bhi, "i64", "descB");
    let zero_acc = op.attr("zero_acc").and_then(Attribute::as_bool) == Some(true);
    let mut acc = if zero_acc {
        em.op("llvm.mlir.undef : !acc", "acc_undef")
    } else {
        match em.vals.get(&parts.acc) {
            Some(Lv::Acc(a)) => a.clone(),
            _ => {
                return err(
                    op,
                    "MMA accumulator is not a wgmma accumulator (start a chain with zero_acc)",
                )
            }
        }
    };
    for kk in 0..4i64 {
        let (da, db) = if kk == 0 {
            (da0.clone(), db0.clone())
        } else {
            let ca = em.cst((32 * kk) >> 4, "i64");
            let cb = em.cst((2048 * kk) >> 4, "i64");
            (
                em.bin("add", &da0, &ca, "i64", "dA"),
                em.bin("add", &db0, &cb, "i64", "dB"),
            )
        };
        let scale = if zero_acc && kk == 0 { "zero" } else { "one" };
        acc = em.op(
            format!(
                "nvvm.wgmma.mma_async {da}, {db}, {acc}, <m = 64, n = {n}, k = 16>, \
                    D[<f32>, <{scale}>], A[<{et}>, <one>, <row>], B[<{et}>, <one>, <row>] : !acc \
                    -> \
                    !acc"
            ),
            "acc",
        );
    }
    em.vals.insert(op.results[0], Lv::Acc(acc));
    Ok(())
}

fn lower_wait(em: &mut Em, op: &Operation) -> R<()> {
    let n = op.int_attr("pending").unwrap_or(0);
    if op.operands.is_empty() {
        em.emit(format!("nvvm.wgmma.wait.group.sync.aligned {n}"));
        return Ok(());
    }
    // Every guarded accumulator's registers go through one asm statement as tied operands,
    // so no use of any of them can be scheduled above the wait. Other operands (a
    // `tile.zeros` that shares a join with an accumulator) pass through: no group writes
    // them.
    let mut accs = vec![];
    let mut acc_results = vec![];
    for (&a, &res) in op.operands.iter().zip(&op.results) {
        match em.vals.get(&a).cloned() {
            Some(Lv::Acc(acc)) => {
                accs.push(acc);
                acc_results.push(res);
            }
            Some(other) => {
                em.vals.insert(res, other);
            }
            None => return err(op, "wait_group operand is not lowered"),
        }
    }
    if accs.is_empty() {
        em.emit(format!("nvvm.wgmma.wait.group.sync.aligned {n}"));
        return Ok(());
    }
    let nacc = em.nacc;
    let total = nacc * accs.len();
    let mut elems = vec![];
    for acc in &accs {
        for i in 0..nacc {
            elems.push(em.op(format!("llvm.extractvalue {acc}[{i}] : !acc"), "a"));
        }
    }
    let cons: Vec<String> = std::iter::repeat_n("=f".to_string(), total)
        .chain((0..total).map(|i| i.to_string()))
        .collect();
    let ret_ty = if accs.len() == 1 {
        "!acc".to_string()
    } else {
        format!("!llvm.struct<({})>", vec!["f32"; total].join(", "))
    };
    let r = em.op(
        format!(
            "llvm.inline_asm has_side_effects asm_dialect = att \
                \"wgmma.wait_group.sync.aligned {n};\", \"{}\" {} : ({}) -> \
                {ret_ty}",
            cons.join(","),
            elems.join(", "),
            vec!["f32"; total].join(", ")
        ),
        "accw",
    );
    if accs.len() == 1 {
        em.vals.insert(acc_results[0], Lv::Acc(r));
        return Ok(());
    }
    for (j, &res) in acc_results.iter().enumerate() {
        let mut st = em.op("llvm.mlir.undef : !acc", "accw");
        for i in 0..nacc {
            let x = em.op(
                format!("llvm.extractvalue {r}[{}] : {ret_ty}", j * nacc + i),
                "w",
            );
            st = em.op(format!("llvm.insertvalue {x}, {st}[{i}] : !acc"), "accw");
        }
        em.vals.insert(res, Lv::Acc(st));
    }
    Ok(())
}

/// Register `v` of a thread's fragment: (row, column) offset from the thread's base.
/// wgmma m64nN: v → (8((v/2) mod 2), 8(v/4) + v mod 2). mma.sync m16n8 tiles of a 64×64
/// warp tile, v = 4(8 mi + ni) + e → (16 mi + 8(e/2), 8 ni + e mod 2).
fn frag_coord(mma_sync: bool, v: usize) -> (u64, u64) {
    if mma_sync {
        let (t, e) = (v / 4, v % 4);
        let (mi, ni) = (t / 8, t % 8);
        ((16 * mi + 8 * (e / 2)) as u64, (8 * ni + e % 2) as u64)
    } else {
        (8 * ((v / 2) % 2) as u64, (8 * (v / 4) + v % 2) as u64)
    }
}

/// The thread's base row and column (i64) of the fragment, relative to the tile origin.
fn frag_base(em: &mut Em, op: &Operation) -> R<(String, String)> {
    let cwg = em
        .cwg
        .clone()
        .ok_or_else(|| Diagnostic::error(op.loc.clone(), "epilogue op outside the consumers"))?;
    let c64 = em.cst(64, "i32");
    if let Some((wm, wn)) = em.warp_mn.clone() {
        let lane = em.lane.clone();
        return Ok(mma_sync_frag_rc(em, &wm, &wn, &lane));
    }
    let c16 = em.cst(16, "i32");
    let c2 = em.cst(2, "i32");
    let c3 = em.cst(3, "i32");
    let w = em.warp_in_wg.clone();
    let lane = em.lane.clone();
    let r0 = em.bin("mul", &cwg, &c64, "i32", "r");
    let r1 = em.bin("mul", &w, &c16, "i32", "r");
    let r2 = em.bin("lshr", &lane, &c2, "i32", "r");
    let r3 = em.bin("add", &r0, &r1, "i32", "r");
    let row = em.bin("add", &r3, &r2, "i32", "frow");
    let l3 = em.bin("and", &lane, &c3, "i32", "c");
    let col = em.bin("mul", &l3, &c2, "i32", "fcol");
    Ok((em.zext64(&row), em.zext64(&col)))
}

fn m_elem(t: &Type) -> ScalarType {
    t.elem().unwrap_or(ScalarType::F32)
}

/// An epilogue value, evaluated register by register where it is stored: each register's
/// chain (load, add, activation, convert) lives only until its store, so a fused epilogue
/// needs no more registers than the accumulator.
#[derive(Debug)]
enum Lazy {
    /// Register v of a wgmma/mma.sync accumulator struct.
    Acc(String),
    /// A scalar SSA value (the same in every register) and its type.
    Scalar(String, ScalarType),
    /// A tile loaded from a pointer tensor at (r0, c0); size-1 dimensions broadcast.
    Load {
        base: String,
        sizes: Vec<String>,
        strides: Vec<String>,
        r0: String,
        c0: String,
        bcast_rows: bool,
        bcast_cols: bool,
        elem: ScalarType,
    },
    /// An elementwise op (or conversion) of other values, from element type `from` to `to`.
    Op {
        kind: OpKind,
        args: Vec<Rc<Lazy>>,
        from: ScalarType,
        to: ScalarType,
    },
}

fn lazy_of(em: &mut Em, op: &Operation, v: Value) -> R<Rc<Lazy>> {
    match em.vals.get(&v) {
        Some(Lv::Lazy(l)) => Ok(l.clone()),
        Some(Lv::Acc(a)) => Ok(Rc::new(Lazy::Acc(a.clone()))),
        // A `tile.zeros` used by the epilogue: 0.0 in every register, in the tile's type.
        Some(Lv::Scalar(_, "zeros")) => {
            let elem = m_elem(em.m.ty(v));
            let z = Rc::new(Lazy::Scalar(em.fcst(0.0, "f32"), ScalarType::F32));
            Ok(if elem == ScalarType::F32 {
                z
            } else {
                Rc::new(Lazy::Op {
                    kind: OpKind::Convert,
                    args: vec![z],
                    from: ScalarType::F32,
                    to: elem,
                })
            })
        }
        Some(Lv::Scalar(s, _)) => Ok(Rc::new(Lazy::Scalar(s.clone(), m_elem(em.m.ty(v))))),
        _ => err(
            op,
            format!(
                "'{}': operand is not an epilogue value of the accumulator's tile",
                op.kind.name()
            ),
        ),
    }
}

fn lazy_elem(l: &Lazy) -> ScalarType {
    match l {
        Lazy::Acc(_) => ScalarType::F32,
        Lazy::Scalar(_, t) => *t,
        Lazy::Load { elem, .. } => *elem,
        Lazy::Op { to, .. } => *to,
    }
}

/// Memo of one evaluation path: values already computed for the current register, and
/// (on straight-line paths) loads by coordinate, reusable across registers.
#[derive(Default)]
struct EvalMemo {
    reg: HashMap<*const Lazy, String>,
    loads: Option<HashMap<(*const Lazy, u64, u64), String>>,
}

fn eval(em: &mut Em, node: &Rc<Lazy>, v: usize, memo: &mut EvalMemo) -> String {
    let key = Rc::as_ptr(node);
    if let Some(x) = memo.reg.get(&key) {
        return x.clone();
    }
    let r = match &**node {
        Lazy::Acc(a) => em.op(format!("llvm.extractvalue {a}[{v}] : !acc"), "x"),
        Lazy::Scalar(s, _) => s.clone(),
        Lazy::Load {
            base,
            sizes,
            strides,
            r0,
            c0,
            bcast_rows,
            bcast_cols,
            elem,
        } => {
            let (dr, dc) = frag_coord(em.mma_sync, v);
            let lk = (
                key,
                if *bcast_rows { u64::MAX } else { dr },
                if *bcast_cols { u64::MAX } else { dc },
            );
            if let Some(x) = memo.loads.as_ref().and_then(|m| m.get(&lk)) {
                let x = x.clone();
                memo.reg.insert(key, x.clone());
                return x;
            }
            let (fr, fc) = em
                .frag_rc
                .clone()
                .expect("fragment base set in the consumer region");
            let row = if *bcast_rows {
                r0.clone()
            } else {
                let d = em.cst(dr as i64, "i64");
                let a = em.bin("add", r0, &fr, "i64", "lr");
                em.bin("add", &a, &d, "i64", "lr")
            };
            let col = if *bcast_cols {
                c0.clone()
            } else {
                let d = em.cst(dc as i64, "i64");
                let a = em.bin("add", c0, &fc, "i64", "lc");
                em.bin("add", &a, &d, "i64", "lc")
            };
            let rok = em.icmp("ult", &row, &sizes[0], "i64");
            let cok = em.icmp("ult", &col, &sizes[1], "i64");
            let ok = em.bin("and", &rok, &cok, "i1", "ok");
            let ok32 = em.op(format!("llvm.zext {ok} : i1 to i32"), "ok");
            let ro = em.bin("mul", &row, &strides[0], "i64", "ro");
            let co = em.bin("mul", &col, &strides[1], "i64", "co");
            let off = em.bin("add", &ro, &co, "i64", "off");
            let eb = em.cst(elem.size_bytes() as i64, "i64");
            let boff = em.bin("mul", &off, &eb, "i64", "boff");
            let addr = em.bin("add", base, &boff, "i64", "addr");
            // A predicated load: out-of-bounds elements read zero and touch no memory.
            let x = match elem {
                ScalarType::F32 => em.op(
                    format!(
                        "llvm.inline_asm asm_dialect = att \"{{ .reg \
                            .pred p; setp.ne.u32 p, $2, 0; mov.b32 $0, 0; @p ld.global.f32 $0, \
                            [$1]; }}\", \
                            \"=f,l,r\" {addr}, {ok32} : (i64, i32) -> f32"
                    ),
                    "lx",
                ),
                ScalarType::BF16 | ScalarType::F16 => {
                    let h = em.op(
                        format!(
                            "llvm.inline_asm asm_dialect = att \"{{ .reg .pred p; \
                                setp.ne.u32 p, $2, 0; mov.b16 $0, 0; @p ld.global.b16 $0, [$1]; \
                                }}\", \
                                \"=h,l,r\" {addr}, {ok32} : (i64, i32) -> i16"
                        ),
                        "lh",
                    );
                    em.op(
                        format!("llvm.bitcast {h} : i16 to {}", mlir_scalar(*elem)),
                        "lx",
                    )
                }
                _ => unreachable!("checked when the load was lowered"),
            };
            if let Some(m) = memo.loads.as_mut() {
                m.insert(lk, x.clone());
            }
            x
        }
        Lazy::Op {
            kind,
            args,
            from,
            to,
        } => {
            let xs: Vec<String> = args.iter().map(|a| eval(em, a, v, memo)).collect();
            let t = mlir_scalar(*to);
            let x = &xs[0];
            match kind {
                OpKind::Convert => convert_value(em, x, *from, *to),
                OpKind::Add | OpKind::Sub | OpKind::Mul | OpKind::Div => {
                    let o = match kind {
                        OpKind::Add => "fadd",
                        OpKind::Sub => "fsub",
                        OpKind::Mul => "fmul",
                        _ => "fdiv",
                    };
                    em.op(format!("llvm.{o} {x}, {} : {t}", xs[1]), "e")
                }
                OpKind::Max | OpKind::Min => {
                    let o = if *kind == OpKind::Max {
                        "maxnum"
                    } else {
                        "minnum"
                    };
                    em.op(
                        format!("llvm.intr.{o}({x}, {}) : ({t}, {t}) -> {t}", xs[1]),
                        "e",
                    )
                }
                OpKind::Neg => em.op(format!("llvm.fneg {x} : {t}"), "e"),
                OpKind::Relu => {
                    let z = em.fcst(0.0, t);
                    em.op(
                        format!("llvm.intr.maxnum({x}, {z}) : ({t}, {t}) -> {t}"),
                        "e",
                    )
                }
                OpKind::Abs => em.op(format!("llvm.intr.fabs({x}) : ({t}) -> {t}"), "e"),
                OpKind::Exp => em.op(format!("llvm.intr.exp({x}) : ({t}) -> {t}"), "e"),
                OpKind::Exp2 => em.op(format!("llvm.intr.exp2({x}) : ({t}) -> {t}"), "e"),
                OpKind::Log => em.op(format!("llvm.intr.log({x}) : ({t}) -> {t}"), "e"),
                OpKind::Sqrt => em.op(format!("llvm.intr.sqrt({x}) : ({t}) -> {t}"), "e"),
                OpKind::Rsqrt => {
                    let sq = em.op(format!("llvm.intr.sqrt({x}) : ({t}) -> {t}"), "e");
                    let one = em.fcst(1.0, t);
                    em.op(format!("llvm.fdiv {one}, {sq} : {t}"), "e")
                }
                OpKind::Tanh => em.op(format!("llvm.intr.tanh({x}) : ({t}) -> {t}"), "e"),
                _ => unreachable!("only elementwise kinds are built"),
            }
        }
    };
    memo.reg.insert(key, r.clone());
    r
}

/// Whether [`convert_value`] converts `from` to `to`: between float types, between integer
/// types, and from integers to float types (float to integer is not lowered).
fn convertible(from: ScalarType, to: ScalarType) -> bool {
    from.is_float() == to.is_float() || to.is_float()
}

/// `x` of type `from` converted to `to` (see [`convertible`]), as the reference interpreter
/// converts: float narrowing rounds to nearest even (`fptrunc`), widening is exact (`fpext`),
/// f16 and bf16 convert through f32 (exact, then one rounding); integers become floats by
/// `uitofp` (`i1`) or `sitofp` (one rounding), and other integers by `trunc`, `zext` (`i1`)
/// or `sext`.
fn convert_value(em: &mut Em, x: &str, from: ScalarType, to: ScalarType) -> String {
    let (f, t) = (mlir_scalar(from), mlir_scalar(to));
    if from == to || f == t {
        return x.to_string();
    }
    if !from.is_float() && !to.is_float() {
        let bits = |s: ScalarType| {
            if s == ScalarType::I1 {
                1
            } else {
                8 * s.size_bytes()
            }
        };
        let o = if bits(from) > bits(to) {
            "trunc"
        } else if from == ScalarType::I1 {
            "zext"
        } else {
            "sext"
        };
        return em.op(format!("llvm.{o} {x} : {f} to {t}"), "cv");
    }
    if !from.is_float() {
        let o = if from == ScalarType::I1 {
            "uitofp"
        } else {
            "sitofp"
        };
        return em.op(format!("llvm.{o} {x} : {f} to {t}"), "cv");
    }
    if from.size_bytes() == to.size_bytes() {
        let wide = em.op(format!("llvm.fpext {x} : {f} to f32"), "cv");
        return em.op(format!("llvm.fptrunc {wide} : f32 to {t}"), "cv");
    }
    let o = if from.size_bytes() > to.size_bytes() {
        "fptrunc"
    } else {
        "fpext"
    };
    em.op(format!("llvm.{o} {x} : {f} to {t}"), "cv")
}

fn lower_elementwise(em: &mut Em, op: &Operation) -> R<()> {
    let rt = m_elem(em.m.ty(op.results[0]));
    // Math ops lower to instructions with a known error bound: `tile.exp2` to
    // `ex2.approx.f32` (2 ulp), `tile.sqrt` to `sqrt.rn.f32` (correctly rounded),
    // `tile.rsqrt` to `rcp.rn.f32` of `sqrt.rn.f32` (two roundings). LLVM's NVPTX back end
    // has no lowering of its own for exp, log and tanh (a libcall it cannot make, or a fatal
    // "Cannot select"), so they are refused here, before MLIR is built.
    if matches!(op.kind, OpKind::Exp | OpKind::Log | OpKind::Tanh) {
        return err(
            op,
            format!(
                "convert-tile-to-nvvm: '{}' is not lowered yet (no sequence with a stated error \
                 bound); 'tile.exp2', 'tile.sqrt' and 'tile.rsqrt' are",
                op.kind.name()
            ),
        );
    }
    if op.kind == OpKind::Broadcast || op.kind == OpKind::Splat {
        // Registers are indexed by the result's (row, col): broadcasting a [1, N] / [M, 1]
        // load or a scalar changes nothing per register.
        let l = lazy_of(em, op, op.operands[0])?;
        em.vals.insert(op.results[0], Lv::Lazy(l));
        return Ok(());
    }
    let args: Vec<Rc<Lazy>> = op
        .operands
        .iter()
        .map(|&v| lazy_of(em, op, v))
        .collect::<R<_>>()?;
    let from = lazy_elem(&args[0]);
    if op.kind == OpKind::Convert && !convertible(from, rt) {
        return err(
            op,
            format!(
                "convert-tile-to-nvvm: {from} -> {rt} conversion in the epilogue is \
                    not lowered yet"
            ),
        );
    }
    let node = Rc::new(Lazy::Op {
        kind: op.kind,
        args,
        from,
        to: rt,
    });
    // A scalar result is the same in every register: computed here, once, so that scalar
    // ops (index arithmetic, other scalars) can use it.
    let value = if matches!(em.m.ty(op.results[0]), Type::Scalar(_)) {
        Lv::Scalar(
            eval(em, &node, 0, &mut EvalMemo::default()),
            mlir_scalar(rt),
        )
    } else {
        Lv::Lazy(node)
    };
    em.vals.insert(op.results[0], value);
    Ok(())
}

/// The tile origin (row, col) of a load or store.
fn origin(em: &mut Em, op: &Operation, row: Value, col: Value) -> R<(String, String)> {
    let r = em.scalar(op, row)?;
    let c = em.scalar(op, col)?;
    Ok((r, c))
}

fn lower_epilogue_load(em: &mut Em, op: &Operation) -> R<()> {
    if op.attr("padding").is_some() {
        return err(
            op,
            "'tile.load' with a 'padding' is not lowered in a GEMM epilogue yet (out of bounds \
             reads zero there)",
        );
    }
    let Some(Lv::TensorPtr {
        ptr,
        sizes,
        strides,
        elem,
    }) = em.vals.get(&op.operands[0]).cloned()
    else {
        return err(
            op,
            "convert-tile-to-nvvm: only pointer tensors are loaded in the epilogue",
        );
    };
    let Type::Tile { shape, .. } = em.m.ty(op.results[0]).clone() else {
        return err(op, "load of a non-tile");
    };
    if shape.len() != 2 || em.frag_rc.is_none() {
        return err(
            op,
            "convert-tile-to-nvvm: epilogue loads are 2-D tiles loaded by the consumers \
                after the MMA",
        );
    }
    if !matches!(elem, ScalarType::F32 | ScalarType::BF16 | ScalarType::F16) {
        return err(
            op,
            format!("convert-tile-to-nvvm: epilogue loads of {elem} are not lowered yet"),
        );
    }
    let (r0, c0) = origin(em, op, op.operands[1], op.operands[2])?;
    let (ptr, sizes, strides) = epilogue_params(em, ptr, sizes, strides);
    let node = Lazy::Load {
        base: ptr,
        sizes,
        strides,
        r0,
        c0,
        bcast_rows: shape[0] == 1,
        bcast_cols: shape[1] == 1,
        elem,
    };
    em.vals.insert(op.results[0], Lv::Lazy(Rc::new(node)));
    Ok(())
}

/// `tile.store` (`atomic` false) or `tile.atomic_add` (`atomic` true) of an epilogue value
/// from the accumulator registers. The atomic form adds each register pair with one
/// `red.global.add.v2.f32` (sm_90; 8-byte aligned pairs) on the fast path and each element
/// with a predicated `red.global.add.f32` on the slow path.
fn lower_store(em: &mut Em, op: &Operation, atomic: bool) -> R<()> {
    let Some(Lv::TensorPtr {
        ptr,
        sizes,
        strides,
        elem,
    }) = em.vals.get(&op.operands[0]).cloned()
    else {
        return err(
            op,
            format!(
                "convert-tile-to-nvvm: the epilogue {} a pointer tensor",
                if atomic { "adds into" } else { "stores to" }
            ),
        );
    };
    if atomic && elem != ScalarType::F32 {
        return err(
            op,
            format!("convert-tile-to-nvvm: atomic adds into f32 tensors only, found {elem}"),
        );
    }
    if op.operands.len() != 4 || em.frag_rc.is_none() {
        return err(
            op,
            "convert-tile-to-nvvm: epilogue stores are 2-D, by the consumers after the MMA",
        );
    }
    if let (Some(acc), Type::Tile { shape, .. }) = (em.acc_shape.clone(), em.m.ty(op.operands[3])) {
        if *shape != acc {
            return err(
                op,
                format!(
                    "convert-tile-to-nvvm: the epilogue {} a {}x{} tile, but the \
                        accumulator it is evaluated over is \
                        {}x{}",
                    if atomic { "adds" } else { "stores" },
                    shape[0],
                    shape[1],
                    acc[0],
                    acc[1]
                ),
            );
        }
    }
    let (r0, c0) = origin(em, op, op.operands[1], op.operands[2])?;
    let val = lazy_of(em, op, op.operands[3])?;
    if lazy_elem(&val) != elem {
        return err(op, "store element type differs from the tensor's");
    }
    let (ptr, sizes, strides) = epilogue_params(em, ptr, sizes, strides);
    let saved_rc = em.frag_rc.clone();
    if em.mma_sync && em.loop_depth > 0 {
        em.frag_rc = Some(fresh_frag_rc(em));
    }
    let r = store_frags(
        em,
        op,
        StoreArgs {
            ptr,
            sizes,
            strides,
            elem,
            r0,
            c0,
            val,
            atomic,
        },
    );
    em.frag_rc = saved_rc;
    r
}

struct StoreArgs {
    ptr: String,
    sizes: Vec<String>,
    strides: Vec<String>,
    elem: ScalarType,
    r0: String,
    c0: String,
    val: Rc<Lazy>,
    /// `tile.atomic_add` (`red.global.add`) instead of a store.
    atomic: bool,
}

/// mma.sync in a persistent tile loop: the epilogue's tensor parameters through opaque
/// `mov`s, so that LLVM keeps what the epilogue derives from them (row pitch in bytes,
/// bounds, the fast-path test) in the epilogue instead of hoisting it out of the tile loop,
/// where it would stay live across the k loop beside the 128 accumulators. Unchanged
/// elsewhere (wgmma kernels, one tile per CTA).
fn epilogue_params(
    em: &mut Em,
    ptr: String,
    sizes: Vec<String>,
    strides: Vec<String>,
) -> (String, Vec<String>, Vec<String>) {
    if !(em.mma_sync && em.loop_depth > 0) {
        return (ptr, sizes, strides);
    }
    let ptr = em.opaque(&ptr, "i64");
    let sizes = sizes.iter().map(|v| em.opaque(v, "i64")).collect();
    let strides = strides.iter().map(|v| em.opaque(v, "i64")).collect();
    (ptr, sizes, strides)
}

/// mma.sync: the thread's fragment base (row, col), as [`frag_base`], from a fresh read of
/// `%tid.x` (inline asm, so LLVM does not reuse the values computed before the k loop and
/// they need no registers across it).
fn fresh_frag_rc(em: &mut Em) -> (String, String) {
    let tid = em.op(
        "llvm.inline_asm has_side_effects asm_dialect = att \"mov.u32 $0, %tid.x;\", \
            \"=r\"  : () -> i32",
        "tid_e",
    );
    let (c2, c3, c5, c31) = (
        em.cst(2, "i32"),
        em.cst(3, "i32"),
        em.cst(5, "i32"),
        em.cst(31, "i32"),
    );
    let one = em.cst(1, "i32");
    let lane = em.bin("and", &tid, &c31, "i32", "lane_e");
    let w = em.bin("lshr", &tid, &c5, "i32", "w_e");
    let cw = em.bin("sub", &w, &one, "i32", "cw_e");
    let wm = em.bin("lshr", &cw, &c2, "i32", "wm_e");
    let wn = em.bin("and", &cw, &c3, "i32", "wn_e");
    mma_sync_frag_rc(em, &wm, &wn, &lane)
}

/// mma.sync fragment base of a lane of consumer warp (wm, wn) of the 2 × 4 grid of 64 × 64
/// warp tiles: row 64·wm + lane/4, column 64·wn + 2·(lane mod 4) (i64 values).
fn mma_sync_frag_rc(em: &mut Em, wm: &str, wn: &str, lane: &str) -> (String, String) {
    let (c2, c3, c64) = (em.cst(2, "i32"), em.cst(3, "i32"), em.cst(64, "i32"));
    let r0 = em.bin("mul", wm, &c64, "i32", "r");
    let g = em.bin("lshr", lane, &c2, "i32", "r");
    let row = em.bin("add", &r0, &g, "i32", "frow");
    let c0 = em.bin("mul", wn, &c64, "i32", "c");
    let t = em.bin("and", lane, &c3, "i32", "c");
    let t2 = em.bin("mul", &t, &c2, "i32", "c");
    let col = em.bin("add", &c0, &t2, "i32", "fcol");
    (em.zext64(&row), em.zext64(&col))
}

/// The epilogue store proper (see [`lower_store`]).
fn store_frags(em: &mut Em, op: &Operation, a: StoreArgs) -> R<()> {
    let StoreArgs {
        ptr,
        sizes,
        strides,
        elem,
        r0,
        c0,
        val,
        atomic,
    } = a;
    let Type::Tile { shape, .. } = em.m.ty(op.operands[3]).clone() else {
        return err(op, "store of a non-tile");
    };
    let (fr, fc) = em.frag_rc.clone().expect("checked");
    let nregs = em.nacc;
    let t = mlir_scalar(elem);
    let eb = elem.size_bytes() as i64;
    let base = em.op(
        format!("llvm.inttoptr {ptr} : i64 to !llvm.ptr<1>"),
        "c_base",
    );
    let row0 = em.bin("add", &r0, &fr, "i64", "row0");
    let col0 = em.bin("add", &c0, &fc, "i64", "col0");
    // Fast path: the whole tile inside, unit column stride, even row stride, aligned base.
    let bm = em.cst(shape[0] as i64, "i64");
    let bn = em.cst(shape[1] as i64, "i64");
    let re = em.bin("add", &r0, &bm, "i64", "re");
    let ce = em.bin("add", &c0, &bn, "i64", "ce");
    let f1 = em.icmp("ule", &re, &sizes[0], "i64");
    let f2 = em.icmp("ule", &ce, &sizes[1], "i64");
    let one = em.cst(1, "i64");
    let f3 = em.icmp("eq", &strides[1], &one, "i64");
    let s0 = em.bin("and", &strides[0], &one, "i64", "odd");
    let z64 = em.cst(0, "i64");
    let f4 = em.icmp("eq", &s0, &z64, "i64");
    let amask = em.cst(2 * eb - 1, "i64");
    let pa = em.bin("and", &ptr, &amask, "i64", "al");
    let f5 = em.icmp("eq", &pa, &z64, "i64");
    let g1 = em.bin("and", &f1, &f2, "i1", "f");
    let g2 = em.bin("and", &f3, &f4, "i1", "f");
    let g3 = em.bin("and", &g1, &g2, "i1", "f");
    let fast = em.bin("and", &g3, &f5, "i1", "fast");
    let (fb, sb, done) = (
        em.block_name("epi_fast"),
        em.block_name("epi_slow"),
        em.block_name("epi_done"),
    );
    em.emit(format!("llvm.cond_br {fast}, ^{fb}, ^{sb}"));
    em.label(&format!("{fb}:"));
    let ro = em.bin("mul", &row0, &strides[0], "i64", "ro");
    let off0 = em.bin("add", &ro, &col0, "i64", "off");
    let p0 = em.op(
        format!("llvm.getelementptr {base}[{off0}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, {t}"),
        "p_row",
    );
    let u2 = em.op(format!("llvm.mlir.undef : vector<2x{t}>"), "u2");
    let i0 = em.cst(0, "i32");
    let i1 = em.cst(1, "i32");
    let mut rowptr: HashMap<u64, String> = HashMap::new();
    let mut memo = EvalMemo {
        reg: HashMap::new(),
        loads: Some(HashMap::new()),
    };
    for v in (0..nregs).step_by(2) {
        let (dr, dc) = frag_coord(em.mma_sync, v);
        let pr = match rowptr.get(&dr) {
            Some(p) => p.clone(),
            None => {
                let p = if dr == 0 {
                    p0.clone()
                } else {
                    let c = em.cst(dr as i64, "i64");
                    let o = em.bin("mul", &strides[0], &c, "i64", "so");
                    em.op(
                        format!(
                            "llvm.getelementptr {p0}[{o}] : (!llvm.ptr<1>, i64) -> \
                                !llvm.ptr<1>, {t}"
                        ),
                        "p_row",
                    )
                };
                rowptr.insert(dr, p.clone());
                p
            }
        };
        memo.reg.clear();
        let x0 = eval(em, &val, v, &mut memo);
        memo.reg.clear();
        let x1 = eval(em, &val, v + 1, &mut memo);
        if atomic {
            let p = em.op(
                format!("llvm.getelementptr {pr}[{dc}] : (!llvm.ptr<1>) -> !llvm.ptr<1>, {t}"),
                "p",
            );
            let pa = em.op(format!("llvm.ptrtoint {p} : !llvm.ptr<1> to i64"), "pa");
            em.emit(format!(
                "llvm.inline_asm has_side_effects asm_dialect = att \
                    \"red.global.add.v2.f32 [$0], {{$1, $2}};\", \"l,f,f\" {pa}, {x0}, {x1} : \
                    (i64, \
                    f32, f32) -> ()"
            ));
        } else {
            let vec = em.op(
                format!("llvm.insertelement {x0}, {u2}[{i0} : i32] : vector<2x{t}>"),
                "vec",
            );
            let vec = em.op(
                format!("llvm.insertelement {x1}, {vec}[{i1} : i32] : vector<2x{t}>"),
                "vec",
            );
            let p = em.op(
                format!("llvm.getelementptr {pr}[{dc}] : (!llvm.ptr<1>) -> !llvm.ptr<1>, {t}"),
                "p",
            );
            em.emit(format!(
                "llvm.store {vec}, {p} {{alignment = {} : i64}} : vector<2x{t}>, !llvm.ptr<1>",
                2 * eb
            ));
        }
    }
    em.emit(format!("llvm.br ^{done}"));
    // Slow path (ragged or strided): every element checked and stored by one predicated
    // `st.global`, all in one block. LLVM computes the per-row parts (2 rows per thread for
    // wgmma); each element's column, bounds check and address are in its store's asm, so
    // LLVM sees 128 opaque stores instead of 128 guarded blocks of address arithmetic
    // (which cost its NVPTX back end ~80 ms on a 2-vCPU x86 host, mostly in straight-line
    // strength reduction; docs/performance.md, 2026-11-29 session 2).
    em.label(&format!(
        "{sb}:  // ragged or strided: every element checked"
    ));
    let (st_ty, reg) = match elem {
        ScalarType::F32 => ("f32", "f"),
        ScalarType::BF16 | ScalarType::F16 => ("b16", "h"),
        other => {
            return err(
                op,
                format!("convert-tile-to-nvvm: epilogue stores of {other} are not lowered yet"),
            )
        }
    };
    let ebc = em.cst(eb, "i64");
    let s1b = em.bin("mul", &strides[1], &ebc, "i64", "s1b");
    let mut rows: HashMap<u64, (String, String)> = HashMap::new();
    let mut memo = EvalMemo::default();
    for v in 0..nregs {
        let (dr, dc) = frag_coord(em.mma_sync, v);
        let (rok, raddr) = match rows.get(&dr) {
            Some(x) => x.clone(),
            None => {
                let c = em.cst(dr as i64, "i64");
                let row = em.bin("add", &row0, &c, "i64", "row");
                let rok = em.icmp("ult", &row, &sizes[0], "i64");
                let rok = em.op(format!("llvm.zext {rok} : i1 to i32"), "rok");
                let ro = em.bin("mul", &row, &strides[0], "i64", "ro");
                let rob = em.bin("mul", &ro, &ebc, "i64", "rob");
                let raddr = em.bin("add", &ptr, &rob, "i64", "raddr");
                rows.insert(dr, (rok.clone(), raddr.clone()));
                (rok, raddr)
            }
        };
        memo.reg.clear();
        let x = eval(em, &val, v, &mut memo);
        let (x, xt) = if reg == "h" {
            (em.op(format!("llvm.bitcast {x} : {t} to i16"), "xb"), "i16")
        } else {
            (x, "f32")
        };
        // col = col0 + dc; p = col < N && row < M; store to row_addr + col * (stride1 * eb).
        let st = if atomic {
            "red.global.add.f32".to_string()
        } else {
            format!("st.global.{st_ty}")
        };
        let asm = format!(
            "{{ .reg .pred p; .reg .b64 c, a; add.s64 c, $2, {dc}; setp.lt.u64 p, c, \
                $3; setp.ne.and.u32 p, $4, 0, p; mad.lo.s64 a, c, $1, $0; @p {st} [a], $5; }}"
        );
        em.emit(format!(
            "llvm.inline_asm has_side_effects asm_dialect = att \"{asm}\", \
                \"l,l,l,l,r,{reg}\" {raddr}, {s1b}, {col0}, {n}, {rok}, {x} : (i64, i64, i64, i64, \
                i32, {xt}) -> ()",
            n = sizes[1]
        ));
    }
    em.emit(format!("llvm.br ^{done}"));
    em.label(&format!("{done}:"));
    Ok(())
}

/// `tile.mma {kind = "mma_sync"}`: one k stage (64) as 4 k16 steps; per step each consumer
/// warp loads its A fragments (4 m16 tiles, `ldmatrix.x4`) and B fragments (8 n8 tiles,
/// `ldmatrix.x4.trans`) from the 128-byte-swizzled stage and issues 32
/// `mma.sync.m16n8k16.row.col.f32.bf16.bf16.f32`. The 128 accumulator registers of a lane
/// travel as one `!acc` struct (LLVM's SROA splits it).
fn lower_mma_sync(em: &mut Em, op: &Operation) -> R<()> {
    let (
        Some(Lv::Ring {
            offset: a_off,
            stage_bytes: a_sb,
            shape: a_sh,
            elem,
        }),
        Some(Lv::Ring {
            offset: b_off,
            stage_bytes: b_sb,
            shape: b_sh,
            ..
        }),
    ) = (
        em.vals.get(&op.operands[0]).cloned(),
        em.vals.get(&op.operands[1]).cloned(),
    )
    else {
        return err(op, "MMA operands are not rings");
    };
    if a_sh != [128, 64] || b_sh != [64, 256] || elem != ScalarType::BF16 && elem != ScalarType::F16
    {
        return err(
            op,
            format!(
                "mma.sync lowering handles 128x64 and 64x256 bf16/f16 stages (2 x 4 \
                    warps of 64 x 64), found {}x{} and {}x{}",
                a_sh[0], a_sh[1], b_sh[0], b_sh[1]
            ),
        );
    }
    let et = if elem == ScalarType::BF16 {
        "bf16"
    } else {
        "f16"
    };
    const NACC: usize = 128;
    if em.acc_ty.is_empty() {
        em.acc_ty = format!("!llvm.struct<({})>", vec!["f32"; NACC].join(", "));
        em.nacc = NACC;
        em.acc_cols = 256;
        em.acc_shape = em.m.ty(op.results[0]).tile_shape().map(<[u64]>::to_vec);
    }
    let Some((wm, wn)) = em.warp_mn.clone() else {
        return err(op, "'tile.mma' outside the consumer region");
    };
    let parts = mma_parts(op)?;
    let st = em.scalar(op, parts.stage_a)?;
    let st32 = em.trunc32(&st);
    let stb = if parts.stage_b == parts.stage_a {
        st32.clone()
    } else {
        let s = em.scalar(op, parts.stage_b)?;
        em.trunc32(&s)
    };
    // Per-lane ldmatrix addressing: lane gives the row address of 8x8 matrix lane/8:
    // row = lane mod 16, 16-byte chunk = lane / 16 (+ 2 per k16 step), swizzled chunk =
    // chunk xor (row mod 8) = chunk xor (lane mod 8).
    let lane = em.lane.clone();
    let c15 = em.cst(15, "i32");
    let c7 = em.cst(7, "i32");
    let c4 = em.cst(4, "i32");
    let l16 = em.bin("and", &lane, &c15, "i32", "l16");
    let l8 = em.bin("and", &lane, &c7, "i32", "l8");
    let lhi = em.bin("lshr", &lane, &c4, "i32", "lhi");
    let ch0 = em.bin("xor", &lhi, &l8, "i32", "chunk");
    let chunk0 = em.bin("shl", &ch0, &c4, "i32", "chunk_b");
    let c64 = em.cst(64, "i32");
    let c7s = em.cst(7, "i32");
    let ar = em.bin("mul", &wm, &c64, "i32", "a_row");
    let ar2 = em.bin("add", &ar, &l16, "i32", "a_row");
    let a_lane = em.bin("shl", &ar2, &c7s, "i32", "a_lane");
    let bbox = em.cst(8192, "i32");
    let bb = em.bin("mul", &wn, &bbox, "i32", "b_box");
    let brow = em.bin("shl", &l16, &c7s, "i32", "b_row");
    let b_lane = em.bin("add", &bb, &brow, "i32", "b_lane");
    let asb = em.cst(a_sb as i64, "i32");
    let bsb = em.cst(b_sb as i64, "i32");
    let aso = em.bin("mul", &st32, &asb, "i32", "a_st");
    let bso = em.bin("mul", &stb, &bsb, "i32", "b_st");
    let aoffc = em.cst(a_off as i64, "i32");
    let boffc = em.cst(b_off as i64, "i32");
    let a0 = em.bin("add", &aso, &aoffc, "i32", "a_base");
    let a_base = em.bin("add", &a0, &a_lane, "i32", "a_base");
    let b0 = em.bin("add", &bso, &boffc, "i32", "b_base");
    let b_base = em.bin("add", &b0, &b_lane, "i32", "b_base");
    let zero_acc = op.attr("zero_acc").and_then(Attribute::as_bool) == Some(true);
    let mut acc: Vec<String> = if zero_acc {
        let z = em.fcst(0.0, "f32");
        vec![z; NACC]
    } else {
        let Some(Lv::Acc(a)) = em.vals.get(&parts.acc).cloned() else {
            return err(op, "MMA accumulator is not lowered");
        };
        (0..NACC)
            .map(|i| em.op(format!("llvm.extractvalue {a}[{i}] : !acc"), "x"))
            .collect()
    };
    let ldm = "!llvm.struct<(i32, i32, i32, i32)>";
    let acc4 = "!llvm.struct<(f32, f32, f32, f32)>";
    for kk in 0..4i64 {
        let ch = if kk == 0 {
            chunk0.clone()
        } else {
            let c = em.cst(32 * kk, "i32");
            em.bin("xor", &chunk0, &c, "i32", "ch")
        };
        let mut afrag = vec![];
        for mi in 0..4i64 {
            let o = if mi == 0 {
                a_base.clone()
            } else {
                let c = em.cst(mi * 16 * 128, "i32");
                em.bin("add", &a_base, &c, "i32", "a_off")
            };
            let o = em.bin("add", &o, &ch, "i32", "a_off");
            let p = em.gep3(&o);
            let r = em.op(
                format!(
                    "nvvm.ldmatrix {p} {{num = 4 : i32, layout = \
                        #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>, \
                        eltType = \
                        #nvvm.ld_st_matrix_elt_type<b16>}} : (!llvm.ptr<3>) -> {ldm}"
                ),
                "afrag",
            );
            let q: Vec<String> = (0..4)
                .map(|i| em.op(format!("llvm.extractvalue {r}[{i}] : {ldm}"), "a"))
                .collect();
            afrag.push(q);
        }
        let mut bfrag: Vec<(String, String)> = vec![];
        for nj in 0..4i64 {
            let o = if kk == 0 {
                b_base.clone()
            } else {
                let c = em.cst(kk * 16 * 128, "i32");
                em.bin("add", &b_base, &c, "i32", "b_off")
            };
            let chb = if nj == 0 {
                chunk0.clone()
            } else {
                let c = em.cst(32 * nj, "i32");
                em.bin("xor", &chunk0, &c, "i32", "bch")
            };
            let o = em.bin("add", &o, &chb, "i32", "b_off");
            let p = em.gep3(&o);
            let r = em.op(
                format!(
                    "nvvm.ldmatrix {p} {{num = 4 : i32, layout = \
                        #nvvm.mma_layout<col>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>, \
                        eltType = \
                        #nvvm.ld_st_matrix_elt_type<b16>}} : (!llvm.ptr<3>) -> {ldm}"
                ),
                "bfrag",
            );
            let v: Vec<String> = (0..4)
                .map(|i| em.op(format!("llvm.extractvalue {r}[{i}] : {ldm}"), "b"))
                .collect();
            bfrag.push((v[0].clone(), v[1].clone()));
            bfrag.push((v[2].clone(), v[3].clone()));
        }
        for (mi, a) in afrag.iter().enumerate().take(4) {
            for (ni, (b0, b1)) in bfrag.iter().enumerate().take(8) {
                let base = 4 * (8 * mi + ni);
                let c = &acc[base..base + 4];
                let d = em.op(
                    format!(
                        "nvvm.mma.sync A[{}, {}, {}, {}] B[{b0}, {b1}] C[{}, {}, {}, \
                            {}] {{layoutA = #nvvm.mma_layout<row>, layoutB = \
                            #nvvm.mma_layout<col>, \
                            multiplicandAPtxType = #nvvm.mma_type<{et}>, multiplicandBPtxType = \
                            #nvvm.mma_type<{et}>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}} : \
                            (i32, i32, f32) -> \
                            {acc4}",
                        a[0], a[1], a[2], a[3], c[0], c[1], c[2], c[3]
                    ),
                    "d",
                );
                for e in 0..4 {
                    acc[base + e] = em.op(format!("llvm.extractvalue {d}[{e}] : {acc4}"), "acc");
                }
            }
        }
    }
    let mut s = em.op("llvm.mlir.undef : !acc", "accs");
    for (i, x) in acc.iter().enumerate() {
        s = em.op(format!("llvm.insertvalue {x}, {s}[{i}] : !acc"), "accs");
    }
    em.vals.insert(op.results[0], Lv::Acc(s));
    Ok(())
}

/// Shared-memory byte address (i32) of slot `slot` (an index operand) of ring `ring`.
fn slot_addr(
    em: &mut Em,
    op: &Operation,
    ring: Value,
    slot: Value,
) -> R<(String, Vec<u64>, ScalarType)> {
    let Some(Lv::Ring {
        offset,
        stage_bytes,
        shape,
        elem,
    }) = em.vals.get(&ring).cloned()
    else {
        return err(
            op,
            format!(
                "'{}': the staging buffer is not a shared-memory ring",
                op.kind.name()
            ),
        );
    };
    let s = em.scalar(op, slot)?;
    let s32 = em.trunc32(&s);
    let sb = em.cst(stage_bytes as i64, "i32");
    let so = em.bin("mul", &s32, &sb, "i32", "slot_off");
    let base = em.cst(offset as i64, "i32");
    let o = em.bin("add", &so, &base, "i32", "slot_off");
    let smem = em.smem_i32.clone();
    Ok((em.bin("add", &smem, &o, "i32", "slot_addr"), shape, elem))
}

/// `tile.smem_store`: the warpgroup's 64 rows of columns [col_offset, col_offset + 64) of
/// an accumulator-shaped 16-bit tile into a 128-byte-swizzled staging slot (row r of the
/// slot at r·128 bytes, 16-byte chunk c at (c xor r mod 8)·16: the layout a 128B-swizzle
/// TMA box of 64 16-bit columns reads), with `stmatrix.sync.aligned.m8n8.x4.shared.b16`.
/// Each 8x8 matrix of a wgmma fragment is (row half h, column group g): lane l holds its
/// row l/4, columns 2(l mod 4) and +1 as registers v = 4g + 2h and v + 1 — stmatrix's
/// fragment layout. One x4 stores the 4 matrices of column groups g, g+1; lane l gives the
/// address of row l mod 8 of matrix l/8. The rows differ mod 8 across the 8 lanes of a
/// matrix, so the swizzle puts them in 8 different 16-byte bank groups: conflict-free.
fn lower_smem_store(em: &mut Em, op: &Operation) -> R<()> {
    if em.mma_sync || em.frag_rc.is_none() {
        return err(
            op,
            "convert-tile-to-nvvm: 'tile.smem_store' is lowered for wgmma accumulators \
                (sm_90a) in the consumer region only",
        );
    }
    staging_is_swizzled(em, op)?;
    let (addr, shape, elem) = slot_addr(em, op, op.operands[1], op.operands[2])?;
    if elem.size_bytes() != 2 || shape.len() != 2 || shape[1] != 64 {
        return err(
            op,
            format!(
                "convert-tile-to-nvvm: 'tile.smem_store' writes slots of 64 16-bit \
                    columns (one 128-byte swizzled row), found {} x \
                    {elem}",
                shape
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join("x")
            ),
        );
    }
    let val = lazy_of(em, op, op.operands[0])?;
    if lazy_elem(&val) != elem {
        return err(
            op,
            "'tile.smem_store': the tile's element type differs from the ring's",
        );
    }
    let col_offset = op.int_attr("col_offset").unwrap_or(0) as usize;
    let cwg = em.cwg.clone().expect("checked");
    let lane = em.lane.clone();
    let w = em.warp_in_wg.clone();
    let (c3, c4, c7, c64, c16, c128) = (
        em.cst(3, "i32"),
        em.cst(4, "i32"),
        em.cst(7, "i32"),
        em.cst(64, "i32"),
        em.cst(16, "i32"),
        em.cst(128, "i32"),
    );
    let one = em.cst(1, "i32");
    // row = 64 cwg + 16 w + 8 ((l >> 3) & 1) + (l & 7)
    let r0 = em.bin("mul", &cwg, &c64, "i32", "sr");
    let r1 = em.bin("mul", &w, &c16, "i32", "sr");
    let l3 = em.bin("lshr", &lane, &c3, "i32", "sr");
    let h = em.bin("and", &l3, &one, "i32", "sr");
    let h8 = em.bin("shl", &h, &c3, "i32", "sr");
    let lr = em.bin("and", &lane, &c7, "i32", "sr");
    let a = em.bin("add", &r0, &r1, "i32", "sr");
    let b = em.bin("add", &a, &h8, "i32", "sr");
    let row = em.bin("add", &b, &lr, "i32", "srow");
    let rowb = em.bin("mul", &row, &c128, "i32", "srowb");
    let rowaddr = em.bin("add", &addr, &rowb, "i32", "srowa");
    // chunk base = (l >> 4) xor (l & 7); column group pair q adds 2q (xor: disjoint bits).
    let hi = em.bin("lshr", &lane, &c4, "i32", "sc");
    let cx = em.bin("xor", &hi, &lr, "i32", "schunk");
    let t = mlir_scalar(elem);
    let u2 = em.op(format!("llvm.mlir.undef : vector<2x{t}>"), "u2");
    let i0 = em.cst(0, "i32");
    let mut memo = EvalMemo {
        reg: HashMap::new(),
        loads: Some(HashMap::new()),
    };
    for q in 0..4usize {
        let chunk = if q == 0 {
            cx.clone()
        } else {
            let c = em.cst(2 * q as i64, "i32");
            em.bin("xor", &cx, &c, "i32", "schunk")
        };
        let cb = em.bin("shl", &chunk, &c4, "i32", "sco");
        let p = em.bin("add", &rowaddr, &cb, "i32", "saddr");
        let g = col_offset / 8 + 2 * q;
        let mut regs = vec![];
        for i in 0..4usize {
            let v = 4 * g + 2 * i;
            memo.reg.clear();
            let x0 = eval(em, &val, v, &mut memo);
            memo.reg.clear();
            let x1 = eval(em, &val, v + 1, &mut memo);
            let vec = em.op(
                format!("llvm.insertelement {x0}, {u2}[{i0} : i32] : vector<2x{t}>"),
                "pk",
            );
            let vec = em.op(
                format!("llvm.insertelement {x1}, {vec}[{one} : i32] : vector<2x{t}>"),
                "pk",
            );
            regs.push(em.op(format!("llvm.bitcast {vec} : vector<2x{t}> to i32"), "pk"));
        }
        em.emit(format!(
            "llvm.inline_asm has_side_effects asm_dialect = att \
                \"stmatrix.sync.aligned.m8n8.x4.shared.b16 [$0], {{$1, $2, $3, $4}};\", \
                \"r,r,r,r,r\" {p}, {} : (i32, i32, i32, i32, i32) -> ()",
            regs.join(", ")
        ));
    }
    Ok(())
}

/// `tile.tma_store`: consumer warpgroup w's elected thread copies its 64 rows of the slot
/// (at slot + w·64·128 bytes) to the tensor at (row + 64 w, col) with
/// `cp.async.bulk.tensor.2d.global.shared::cta.bulk_group` (a 64x64 box of the tensor
/// map, 128-byte swizzle); TMA clips what lies outside the tensor.
/// The staging ring of a `tile.smem_store` / `tile.tma_store` must be 128-byte swizzled:
/// the `stmatrix` addressing and the C tensor map (`"swizzle": "128B"`) assume it.
fn staging_is_swizzled(em: &Em, op: &Operation) -> R<()> {
    match em.ring_swizzle.get(&op.operands[1]) {
        Some(128) => Ok(()),
        Some(s) => err(
            op,
            format!(
                "convert-tile-to-nvvm: '{}' needs a staging ring with swizzle = \
                    128 (the stmatrix addressing and the C tensor map assume it), found swizzle = \
                    {s}",
                op.kind.name()
            ),
        ),
        None => err(
            op,
            format!(
                "convert-tile-to-nvvm: '{}': the staging ring is not a \
                    'tile.smem_alloc' of this kernel",
                op.kind.name()
            ),
        ),
    }
}

fn lower_tma_store(em: &mut Em, op: &Operation) -> R<()> {
    staging_is_swizzled(em, op)?;
    let Some(Lv::TensorMap(tm)) = em.vals.get(&op.operands[0]).cloned() else {
        return err(op, "'tile.tma_store': the destination is not a tensor map");
    };
    if op.operands.len() != 5 {
        return err(op, "convert-tile-to-nvvm lowers 2-D TMA stores only");
    }
    let Some(cwg) = em.cwg.clone() else {
        return err(
            op,
            "convert-tile-to-nvvm: 'tile.tma_store' is lowered in the consumer region \
                of 'tile.warp_specialize' only",
        );
    };
    let (addr, shape, elem) = slot_addr(em, op, op.operands[1], op.operands[2])?;
    let rows = shape[0] as i64 / em.consumer_wgs.max(1);
    let row_bytes = (shape[1] * elem.size_bytes()) as i64;
    let part = em.cst(rows * row_bytes, "i32");
    let po = em.bin("mul", &cwg, &part, "i32", "part");
    let src = em.bin("add", &addr, &po, "i32", "src");
    let row = em.scalar(op, op.operands[3])?;
    let col = em.scalar(op, op.operands[4])?;
    let row32 = em.trunc32(&row);
    let col32 = em.trunc32(&col);
    let rc = em.cst(rows, "i32");
    let ro = em.bin("mul", &cwg, &rc, "i32", "wrow");
    let r = em.bin("add", &row32, &ro, "i32", "wrow");
    let tmi = em.op(format!("llvm.ptrtoint {tm} : !llvm.ptr to i64"), "tmap");
    let p = em.elected()?;
    em.emit(format!(
        "llvm.inline_asm has_side_effects asm_dialect = att \"{{ .reg .pred p; setp.ne.u32 p, $0, \
            0; @p cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$1, {{$2, $3}}], [$4]; \
            }}\", \"r,l,r,r,r\" {p}, {tmi}, {col32}, {r}, {src} : (i32, i64, i32, i32, i32) -> \
            ()"
    ));
    Ok(())
}
