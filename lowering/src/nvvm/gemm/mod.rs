//! The GEMM pipeline's lowering (kernels made by `tile-to-gpu`), on the typed writer
//! ([`super::writer`]): the analysis of the kernel (which tensors are TMA tensor maps, and
//! their boxes; the consumer warpgroups), the parameters and the `llvm.func`, and the walk
//! that hands each op to its construct:
//!
//! - `sync`: `tile.warp_specialize` (barrier init by thread 0, the producer and consumer
//!   regions with `nvvm.setmaxregister`; a block without producer threads runs the
//!   consumers' `role = "scheduler"` ops on their first thread), mbarriers, named
//!   barriers, fences, cluster and try_cancel ops, bulk async-groups;
//! - `tma`: `tile.tma_load`, `tile.smem_store` (`stmatrix`) and `tile.tma_store`;
//! - `wgmma`: `tile.mma {kind = "wgmma"}` (`wgmma.mma_async` with shared-memory
//!   descriptors, one asm statement per K stage) and `tile.wait_group`;
//! - `mma_sync`: `tile.mma {kind = "mma_sync"}` (`ldmatrix` + `nvvm.mma.sync`, sm_90 and
//!   sm_100);
//! - `epilogue`: the ops on the accumulator after the K loop, evaluated per register at
//!   their store;
//! - `control`: `tile.for`, `tile.while` and `tile.if` as blocks with arguments.
//!
//! The op sequence follows `lowering/reference/gemm_bf16_sm90a.mlir` (checked on an H200).
//! Shared memory is `@dynamic_smem` (1024-aligned): mbarriers in `[0, 1024)`, rings after,
//! each 1024-aligned. `index` values are 64-bit. Every construct it does not lower is an
//! error naming the op and its location, raised before MLIR is compiled.

mod control;
mod epilogue;
mod mma_sync;
mod reduce;
mod sync;
mod tma;
mod wgmma;

use super::plain::err;
use super::writer::{ICmp, Writer, V};
use super::{dtype_of, scalar_dtype};
use crate::manifest::{
    Dtype, Fill, Finalize, FinalizeOp, Interleave, L2Promotion, Manifest, Param, Reduction, SplitK,
    Swizzle, WorkspaceInit,
};
use epilogue::Lazy;
use melior::{
    dialect::llvm,
    ir::{
        attribute::{DenseI32ArrayAttribute, IntegerAttribute, StringAttribute, TypeAttribute},
        block::BlockLike,
        operation::{OperationBuilder, OperationLike, OperationMutLike},
        r#type::IntegerType,
        Attribute, Block, BlockRef, Identifier, Location, Module, Region, RegionLike, Type, Value,
    },
    Context,
};
use std::collections::HashMap;
use std::rc::Rc;
use tilec_dialect::{
    Attribute as TileAttr, Diagnostic, Expr, Module as TileModule, OpKind, Operation, ScalarType,
    Target, Type as TileType, Value as TileValue,
};

pub(super) type R<T> = Result<T, Diagnostic>;

/// A shared-memory ring at a byte offset of the dynamic shared memory.
#[derive(Clone, Debug)]
pub(super) struct Ring {
    pub offset: u64,
    pub stage_bytes: u64,
    pub shape: Vec<u64>,
    pub elem: ScalarType,
    /// The `swizzle` in bytes (0 without one).
    pub swizzle: u64,
}

impl Ring {
    /// The ring's swizzle span in bytes for an MMA operand or a TMA copy: 32, 64 or 128,
    /// the widths the lowering addresses (rows of one span, in boxes of that many bytes).
    pub fn span(&self, op: &Operation) -> R<u64> {
        match self.swizzle {
            32 | 64 | 128 => Ok(self.swizzle),
            s => err(
                op,
                format!(
                    "convert-tile-to-nvvm: MMA operand and TMA rings are 32-, 64- or 128-byte \
                     swizzled; this ring has swizzle = {s}"
                ),
            ),
        }
    }
}

/// A kernel tensor passed as pointer + sizes + strides (i64 each; elements).
#[derive(Clone, Debug)]
pub(super) struct PtrTensor<'c, 'm> {
    pub ptr: V<'c, 'm>,
    pub sizes: Vec<V<'c, 'm>>,
    pub strides: Vec<V<'c, 'm>>,
    pub elem: ScalarType,
}

/// How a tile IR value lives in the lowered code.
#[derive(Clone, Debug)]
pub(super) enum Lv<'c, 'm> {
    /// A scalar SSA value.
    Scalar(V<'c, 'm>),
    /// `tile.zeros`: the initial accumulator of a `zero_acc` chain, or zeros in an epilogue.
    Zeros,
    /// A kernel tensor passed as a tensor map (`!llvm.ptr` to the byval parameter).
    TensorMap(Value<'c, 'm>),
    /// A kernel tensor passed as pointer, sizes and strides.
    TensorPtr(PtrTensor<'c, 'm>),
    /// A shared-memory ring.
    Ring(Ring),
    /// An mbarrier array at a byte offset.
    Bars { offset: u64 },
    /// An MMA accumulator: the thread's f32 registers, one SSA value each. Loops and joins
    /// carry them as that many block arguments: a struct carried across blocks would cost
    /// LLVM's instruction selection one copy of every field per field read
    /// (`SelectionDAGBuilder::getCopyFromRegs`), quadratic in the registers.
    Acc(Rc<Vec<Value<'c, 'm>>>),
    /// An epilogue value of the accumulator's tile, evaluated per register at its store.
    Lazy(Rc<Lazy<'c, 'm>>),
}

/// The accumulator of the kernel's MMAs (one shape per kernel).
#[derive(Clone, Debug)]
pub(super) struct AccInfo {
    /// f32 registers per thread.
    pub regs: usize,
    /// The CTA's accumulator tile (rows, columns), as the epilogue sees it: the MMA's, or
    /// its transpose once `transposed`.
    pub shape: Option<Vec<u64>>,
    /// The epilogue reads the accumulator through a `tile.transpose` (tile-to-gpu's
    /// swap-AB: the MMA computed Cᵀ = Bᵀ · Aᵀ).
    pub transposed: bool,
}

/// The state of one GEMM kernel's lowering.
pub(super) struct Gemm<'c, 'm, 'k> {
    pub w: Writer<'c, 'm>,
    pub m: &'k TileModule,
    pub target: Target,
    pub vals: HashMap<TileValue, Lv<'c, 'm>>,
    pub tid: V<'c, 'm>,
    /// `@dynamic_smem` as a pointer and as its 32-bit shared-window address.
    pub smem: Value<'c, 'm>,
    pub smem_i32: V<'c, 'm>,
    pub lane: V<'c, 'm>,
    pub warp_in_wg: V<'c, 'm>,
    /// The consumer warpgroup's index, inside the consumer region.
    pub cwg: Option<V<'c, 'm>>,
    pub acc: Option<AccInfo>,
    /// The MMA family of the kernel: decides the fragment layout.
    pub mma_sync: bool,
    /// Threads of the producer, before the consumers': 128 with wgmma, 0 with mma.sync
    /// (the consumers issue the copies).
    pub producer_threads: i64,
    /// mma.sync: the consumer warp's (warp_m, warp_n) in the 2 x 4 warp grid.
    pub warp_mn: Option<(V<'c, 'm>, V<'c, 'm>)>,
    /// The thread's base (row, col) in the accumulator tile (i64), in the consumer region.
    pub frag_rc: Option<(V<'c, 'm>, V<'c, 'm>)>,
    /// The kernel's exit block, placed last.
    pub exit: BlockRef<'c, 'm>,
    /// (byte offset, count, arrive count) of each mbarrier array.
    pub barrier_inits: Vec<(u64, u64, i64)>,
    pub smem_end: u64,
    /// The kind of the op lowered last in the current block (a `.sync.aligned` wait
    /// converges the warp, so an arrive right after it needs no `bar.warp.sync`).
    pub prev: Option<OpKind>,
    /// CTAs per cluster (1: no cluster launch).
    pub cluster_size: i64,
    /// The cluster's shape (x, y, z).
    pub cluster: [i64; 3],
    /// The `swizzle` (bytes) of each shared-memory ring.
    pub ring_swizzle: HashMap<TileValue, i64>,
    /// Consumer warpgroups of the kernel's `tile.warp_specialize` (1 without one).
    pub consumer_wgs: i64,
    /// Loops (`tile.for`, `tile.while`) around the op being lowered: an epilogue at depth > 0
    /// sits in a persistent tile loop, after that tile's k loop.
    pub loop_depth: usize,
    /// The tensors the kernel writes (`tile.store`, `tile.atomic_add`) when it also has
    /// flag ops: other programs may write them between a load and its use, so loads of
    /// them are read where they stand, not where their value is used. Empty otherwise.
    pub written: std::collections::HashSet<TileValue>,
    /// Whether the kernel stores with TMA (`tile.tma_store`).
    pub tma_stores: bool,
    /// The shared-memory slot of `tile.arrive_flag`'s old value, once allocated.
    pub flag_slot: Option<u64>,
    /// Whether the op being lowered runs on the consumers' first thread alone (an op with
    /// `role = "scheduler"` in the consumer region).
    pub scheduler: bool,
    /// Whether the producer region (its elected thread) is being lowered.
    pub in_producer: bool,
}

impl<'c, 'm> Gemm<'c, 'm, '_> {
    pub fn i32(&mut self, v: i64) -> V<'c, 'm> {
        self.w.i32(v)
    }

    pub fn i64(&mut self, v: i64) -> V<'c, 'm> {
        self.w.i64(v)
    }

    pub fn bin(&mut self, name: &str, a: V<'c, 'm>, b: V<'c, 'm>) -> V<'c, 'm> {
        self.w.bin(name, a, b)
    }

    pub fn trunc32(&mut self, a: V<'c, 'm>) -> V<'c, 'm> {
        self.w.trunc(a, ScalarType::I32)
    }

    pub fn zext64(&mut self, a: V<'c, 'm>) -> V<'c, 'm> {
        self.w.zext(a, ScalarType::I64)
    }

    /// The `!llvm.struct` of the accumulator's f32 registers.
    pub fn acc_ty(&self) -> Type<'c> {
        let f32t = self.w.ty(ScalarType::F32);
        let n = self.acc.as_ref().map_or(0, |a| a.regs);
        self.w.struct_ty(&vec![f32t; n])
    }

    pub fn scalar(&self, op: &Operation, v: TileValue) -> R<V<'c, 'm>> {
        match self.vals.get(&v) {
            Some(Lv::Scalar(s)) => Ok(*s),
            _ => err(
                op,
                format!("'{}': operand is not a lowered scalar", op.kind.name()),
            ),
        }
    }

    pub fn ring(&self, op: &Operation, v: TileValue, what: &str) -> R<Ring> {
        match self.vals.get(&v) {
            Some(Lv::Ring(r)) => Ok(r.clone()),
            _ => err(op, format!("{what} is not a shared-memory ring")),
        }
    }

    /// `@dynamic_smem + off` bytes.
    pub fn gep3(&mut self, off: V<'c, 'm>) -> Value<'c, 'm> {
        let p3 = self.w.ptr_ty(3);
        self.w.gep_bytes(self.smem, off, p3)
    }

    /// `v` through an opaque `mov` (inline asm with side effects): LLVM can neither hoist
    /// what is computed from it out of the enclosing loop nor merge it with the same
    /// computation on `v` elsewhere. For kernel parameters, which ptxas reads from the
    /// constant bank, this keeps epilogue-only arithmetic out of the registers live across
    /// a persistent loop's k loop.
    pub fn opaque(&mut self, v: V<'c, 'm>) -> V<'c, 'm> {
        let (c, m) = match v.t {
            ScalarType::I32 => ("r", "b32"),
            ScalarType::F32 => ("f", "b32"),
            _ => ("l", "b64"),
        };
        let ty = self.w.ty(v.t);
        let r = self.w.inline_asm(
            &format!("mov.{m} $0, $1;"),
            &format!("={c},{c}"),
            &[v.v],
            Some(ty),
            true,
        );
        V {
            v: r.expect("a typed result"),
            t: v.t,
        }
    }

    /// 1 (i32) in the consumer warpgroup's elected thread (its thread 0, which issues and
    /// waits for its bulk groups), 0 elsewhere.
    pub fn elected(&mut self) -> V<'c, 'm> {
        let c127 = self.i32(127);
        let r = self.bin("and", self.tid, c127);
        let z = self.i32(0);
        let e = self.w.icmp(ICmp::Eq, r, z);
        self.w.zext(e, ScalarType::I32)
    }

    /// Address (in shared memory) of barrier `idx` (an index value) of an array.
    pub fn bar_addr(
        &mut self,
        op: &Operation,
        bars: TileValue,
        idx: TileValue,
    ) -> R<Value<'c, 'm>> {
        let Some(Lv::Bars { offset }) = self.vals.get(&bars).cloned() else {
            return err(op, "expected an mbarrier array");
        };
        let i = self.scalar(op, idx)?;
        let i32v = self.trunc32(i);
        let c3 = self.i32(3);
        let sh = self.bin("shl", i32v, c3);
        let co = self.i32(offset as i64);
        let off = self.bin("add", sh, co);
        Ok(self.gep3(off))
    }

    /// Lowers `ops` in order. An f32 tile of the accumulator's shape computed from
    /// accumulators (an epilogue value, otherwise evaluated per register where it is used)
    /// is evaluated where it is written when an MMA follows it in the block: that MMA may
    /// write registers it reads (the promoted sum `acc + part` before the next k tile's
    /// chain).
    pub fn lower_block(&mut self, ops: &[Operation]) -> R<()> {
        self.prev = None;
        let mut mma_after = vec![false; ops.len()];
        let mut seen = false;
        for (i, op) in ops.iter().enumerate().rev() {
            mma_after[i] = seen;
            seen |= holds_mma(op);
        }
        for (op, &mma_after) in ops.iter().zip(&mma_after) {
            self.w.at(&op.loc);
            let one_thread = self.scheduler || self.in_producer;
            if op.str_attr("role") == Some("scheduler") && !one_thread {
                self.lower_scheduler_op(op)?;
            } else {
                self.check_one_thread_op(op, one_thread)?;
                self.lower_op(op)?;
            }
            if let ([r], true) = (&op.results[..], mma_after) {
                if let Some(Lv::Lazy(l)) =
                    self.vals.get(r).cloned().filter(|_| self.is_acc_tile(*r))
                {
                    let regs = self.materialize(op, &l)?;
                    self.vals.insert(*r, Lv::Acc(Rc::new(regs)));
                }
            }
            self.prev = Some(op.kind);
        }
        Ok(())
    }

    fn def_scalar(&mut self, op: &Operation, v: V<'c, 'm>) {
        self.vals.insert(op.results[0], Lv::Scalar(v));
    }

    /// The tile IR scalar type of result `i` of `op`.
    fn result_scalar(&self, op: &Operation, i: usize) -> R<ScalarType> {
        match op.results.get(i).map(|&r| self.m.ty(r)) {
            Some(TileType::Scalar(s)) => Ok(*s),
            _ => err(
                op,
                format!("'{}': expected a scalar result", op.kind.name()),
            ),
        }
    }

    fn lower_op(&mut self, op: &Operation) -> R<()> {
        use OpKind as K;
        match op.kind {
            K::ProgramId | K::NumPrograms | K::CtaId | K::NumCtas => {
                let d = ["x", "y", "z"][op.int_attr("dim").unwrap_or(0).clamp(0, 2) as usize];
                let reg = if matches!(op.kind, K::ProgramId | K::CtaId) {
                    "ctaid"
                } else {
                    "nctaid"
                };
                let v = self.w.sreg(&format!("{reg}.{d}"));
                let z = self.zext64(v);
                self.def_scalar(op, z);
            }
            K::Constant => {
                let s = self.result_scalar(op, 0)?;
                let c = match op.attr("value") {
                    Some(TileAttr::Int(i)) if s.is_int() => self.w.int(*i, s),
                    Some(TileAttr::Bool(b)) if s.is_int() => self.w.int(i64::from(*b), s),
                    Some(a) if s.is_float() => self.w.float(a.as_f64().unwrap_or(0.0), s),
                    _ => return err(op, "a constant needs a value of its type"),
                };
                self.def_scalar(op, c);
            }
            K::AddI
            | K::SubI
            | K::MulI
            | K::DivI
            | K::RemI
            | K::MinI
            | K::MaxI
            | K::CeilDiv
            | K::CmpI
                if matches!(self.m.ty(op.results[0]), TileType::Tile { .. }) =>
            {
                self.lower_epilogue_int(op)?
            }
            K::Select if matches!(self.m.ty(op.results[0]), TileType::Tile { .. }) => {
                self.lower_epilogue_select(op)?
            }
            K::Iota => self.lower_epilogue_iota(op)?,
            K::AddI | K::SubI | K::MulI | K::DivI | K::RemI | K::MinI | K::MaxI | K::CeilDiv => {
                let a = self.scalar(op, op.operands[0])?;
                let b = self.scalar(op, op.operands[1])?;
                let t = self.result_scalar(op, 0)?;
                let (a, b) = (V { v: a.v, t }, V { v: b.v, t });
                // An i1 is 0 or 1 (see `int_binary`): unsigned forms.
                let bit = t == ScalarType::I1;
                let div = if bit { "udiv" } else { "sdiv" };
                let r = match op.kind {
                    K::AddI => self.bin("add", a, b),
                    K::SubI => self.bin("sub", a, b),
                    K::MulI => self.bin("mul", a, b),
                    K::DivI => self.bin(div, a, b),
                    K::RemI => self.bin(if bit { "urem" } else { "srem" }, a, b),
                    K::MinI => self.bin(if bit { "intr.umin" } else { "intr.smin" }, a, b),
                    K::MaxI => self.bin(if bit { "intr.umax" } else { "intr.smax" }, a, b),
                    _ => {
                        let one = self.w.int(1, t);
                        let bm1 = self.bin("sub", b, one);
                        let s = self.bin("add", a, bm1);
                        self.bin(div, s, b)
                    }
                };
                self.def_scalar(op, r);
            }
            K::CmpI => {
                let a = self.scalar(op, op.operands[0])?;
                let b = self.scalar(op, op.operands[1])?;
                let Some(p) = crate::nvvm::plain::cmpi_predicate(op)? else {
                    return err(op, "'tile.cmpi' without a predicate");
                };
                let r = self.w.icmp(p.on(a.t), a, b);
                self.def_scalar(op, r);
            }
            K::Select if matches!(self.m.ty(op.results[0]), TileType::Scalar(_)) => {
                let c = self.scalar(op, op.operands[0])?;
                let a = self.scalar(op, op.operands[1])?;
                let b = self.scalar(op, op.operands[2])?;
                let r = self.w.select(c, a, b);
                self.def_scalar(op, r);
            }
            K::Zeros => {
                self.vals.insert(op.results[0], Lv::Zeros);
            }
            K::SmemAlloc => {
                let TileType::Smem {
                    stages,
                    shape,
                    elem,
                } = self.m.ty(op.results[0]).clone()
                else {
                    return err(op, "bad ring");
                };
                let stage_bytes = shape.iter().product::<u64>() * elem.size_bytes();
                let offset = self.smem_end.div_ceil(1024) * 1024;
                self.smem_end = offset + stages * stage_bytes;
                self.vals.insert(
                    op.results[0],
                    Lv::Ring(Ring {
                        offset,
                        stage_bytes,
                        shape,
                        elem,
                        swizzle: op.int_attr("swizzle").unwrap_or(0).max(0) as u64,
                    }),
                );
                self.ring_swizzle
                    .insert(op.results[0], op.int_attr("swizzle").unwrap_or(0));
            }
            K::MbarrierAlloc => {
                let TileType::Mbarrier { count } = self.m.ty(op.results[0]).clone() else {
                    return err(op, "bad barriers");
                };
                let offset: u64 = self.barrier_inits.iter().map(|b| b.1 * 8).sum();
                if count
                    .checked_mul(8)
                    .and_then(|b| b.checked_add(offset))
                    .is_none_or(|e| e > 1024)
                {
                    return err(
                        op,
                        "more than 128 mbarriers do not fit the 1024-byte barrier region",
                    );
                }
                self.barrier_inits
                    .push((offset, count, op.int_attr("arrive_count").unwrap_or(1)));
                self.vals.insert(op.results[0], Lv::Bars { offset });
            }
            K::WarpSpecialize => self.lower_warp_specialize(op)?,
            K::For => self.lower_for(op)?,
            K::If => self.lower_if(op)?,
            K::While => self.lower_while(op)?,
            K::Yield => {} // handled by the parent
            K::Return => {
                let op = OperationBuilder::new("llvm.br", self.w.loc)
                    .add_successors(&[&self.exit])
                    .build();
                self.w.push(op);
            }
            K::MbarrierWait => self.lower_mbarrier_wait(op)?,
            K::MbarrierExpectTx => self.lower_expect_tx(op)?,
            K::MbarrierArrive => self.lower_arrive(op)?,
            K::FenceProxyAsync => self.w.fence_proxy_async(),
            K::ClusterCtaRank | K::ClusterCtaId | K::ClusterId | K::NumClusters => {
                let r = self.w.sreg(&crate::nvvm::cluster_sreg(op));
                let r64 = self.zext64(r);
                self.def_scalar(op, r64);
            }
            K::ClcTryCancel => self.lower_try_cancel(op)?,
            K::ClcQuery => self.lower_clc_query(op)?,
            K::TmaLoad => self.lower_tma_load(op)?,
            K::WgmmaFence => self.w.wgmma_fence(),
            K::CommitGroup => self.w.wgmma_commit_group(),
            K::Barrier => {
                // `bar.sync 0` waits for every thread of the CTA; inside a warp-specialized
                // consumer region the producer never arrives, so it would hang.
                if self.cwg.is_some() {
                    return err(
                        op,
                        "convert-tile-to-nvvm: 'tile.barrier' inside the consumer region of \
                         'tile.warp_specialize' needs a named barrier over the consumer \
                         warpgroups, which is not lowered yet",
                    );
                }
                self.w.barrier();
            }
            K::Mma => match op.str_attr("kind") {
                Some("wgmma") => self.lower_wgmma(op)?,
                Some("mma_sync") => self.lower_mma_sync(op)?,
                k => {
                    return err(
                        op,
                        format!(
                            "convert-tile-to-nvvm: unknown MMA kind {:?}",
                            k.unwrap_or("?")
                        ),
                    )
                }
            },
            K::WaitGroup => self.lower_wait(op)?,
            K::Convert
            | K::Add
            | K::Sub
            | K::Mul
            | K::Div
            | K::Max
            | K::Min
            | K::Neg
            | K::Abs
            | K::Relu
            | K::Exp
            | K::Exp2
            | K::Log
            | K::Sqrt
            | K::Rsqrt
            | K::Tanh
            | K::Broadcast
            | K::Splat => self.lower_elementwise(op)?,
            K::Reduce => self.lower_epilogue_reduce(op)?,
            K::Reshape => self.lower_epilogue_reshape(op)?,
            K::Transpose => self.lower_epilogue_transpose(op)?,
            K::Load => self.lower_epilogue_load(op)?,
            K::Extract => {
                let Some(Lv::TensorPtr(t)) = self.vals.get(&op.operands[0]).cloned() else {
                    return err(
                        op,
                        "convert-tile-to-nvvm: 'tile.extract' reads a tensor passed as a \
                         pointer; this one is a TMA tensor map (read by 'tile.tma_load')",
                    );
                };
                let idx = op.operands[1..]
                    .iter()
                    .map(|&i| self.scalar(op, i))
                    .collect::<R<Vec<_>>>()?;
                let p1 = self.w.ptr_ty(1);
                let base = self.w.cast("llvm.inttoptr", t.ptr.v, p1);
                let v = self
                    .w
                    .load_element(base, &t.sizes, &t.strides, &idx, t.elem);
                self.def_scalar(op, v);
            }
            K::Store => self.lower_store(op, false)?,
            K::AtomicAdd => self.lower_store(op, true)?,
            K::SmemStore => self.lower_smem_store(op)?,
            K::TmaStore => self.lower_tma_store(op)?,
            K::BulkCommitGroup => self.lower_bulk_commit(),
            K::BulkWaitGroup => self.lower_bulk_wait(op),
            K::NamedBarrier => self.lower_named_barrier(op)?,
            K::WaitFlag | K::ReleaseFlag | K::ArriveFlag => self.lower_flag(op)?,
            other => {
                return err(
                    op,
                    format!(
                        "convert-tile-to-nvvm does not lower '{}' here",
                        other.name()
                    ),
                )
            }
        }
        Ok(())
    }
}

/// Whether kernel `k` reads tensor `t` with `tile.tma_load`.
fn k_loads(k: &Operation, t: TileValue) -> bool {
    let mut any = false;
    k.walk(&mut |o| any |= o.kind == OpKind::TmaLoad && o.operands.first() == Some(&t));
    any
}

/// The analysis of a kernel before anything is built: the TMA box of each tensor read or
/// written by TMA, and the consumer warpgroups.
struct Analysis<'k> {
    /// Tensors read or written by TMA (→ tensor maps), with their box.
    tma_boxes: HashMap<TileValue, Vec<u64>>,
    /// The swizzle (bytes) of each tensor map: its ring's.
    tma_swizzle: HashMap<TileValue, u64>,
    /// Tensors written by `tile.tma_store`.
    stored: HashMap<TileValue, &'k Operation>,
    consumers: u64,
}

fn analyze<'k>(m: &TileModule, k: &'k Operation) -> R<Analysis<'k>> {
    let cluster = super::cluster_of(k)?;
    let mut tma_boxes: HashMap<TileValue, Vec<u64>> = HashMap::new();
    // Each consumer warpgroup stores its rows of a staging slot, so a store's box is
    // (slot rows / consumers) x slot columns.
    let mut store_boxes: HashMap<TileValue, (Vec<u64>, &Operation)> = HashMap::new();
    let mut consumers = 1u64;
    let mut ring_swizzle: HashMap<TileValue, u64> = HashMap::new();
    k.walk(&mut |o| {
        if o.kind == OpKind::WarpSpecialize {
            consumers = o.int_attr("consumers").unwrap_or(1).max(1) as u64;
        }
        if o.kind == OpKind::SmemAlloc {
            ring_swizzle.insert(
                o.results[0],
                o.int_attr("swizzle").unwrap_or(0).max(0) as u64,
            );
        }
    });
    let mut tma_swizzle: HashMap<TileValue, u64> = HashMap::new();
    k.walk(&mut |o| {
        if o.kind == OpKind::TmaLoad {
            if let (Some(TileType::Smem { shape, elem, .. }), Some(TileType::Tensor { rank, .. })) =
                (m.try_ty(o.operands[1]), m.try_ty(o.operands[0]))
            {
                // Boxes of one swizzle span of columns; leading unit dimensions for a
                // tensor of rank > 2 (a batch index).
                let sw = ring_swizzle.get(&o.operands[1]).copied().unwrap_or(128);
                let cols = (sw.max(16) / elem.size_bytes()).max(1);
                let mut b = vec![1; (*rank as usize).saturating_sub(2)];
                // A multicast copy: each of the n CTAs copies 1/n of the stage's rows.
                let parts = o
                    .int_attr("multicast")
                    .map_or(1, |d| cluster[d.clamp(0, 2) as usize].max(1) as u64);
                b.extend([shape[0] / parts, shape[1].min(cols)]);
                tma_boxes.insert(o.operands[0], b);
                tma_swizzle.insert(o.operands[0], sw);
            }
        }
        if o.kind == OpKind::TmaStore {
            if let (Some(TileType::Smem { shape, .. }), Some(TileType::Tensor { rank, .. })) =
                (m.try_ty(o.operands[1]), m.try_ty(o.operands[0]))
            {
                if shape.len() == 2 {
                    // Leading unit dimensions for a tensor of rank > 2 (a batch index).
                    let mut b = vec![1; (*rank as usize).saturating_sub(2)];
                    b.extend([shape[0] / consumers, shape[1]]);
                    store_boxes.insert(o.operands[0], (b, o));
                }
            }
        }
    });
    let mut stored = HashMap::new();
    for (t, (b, o)) in &store_boxes {
        if tma_boxes.get(t).is_some_and(|l| l != b) {
            return err(
                o,
                "convert-tile-to-nvvm: a tensor both loaded and stored by TMA needs one box \
                 for both (one tensor map)",
            );
        }
        let cols = b.last().copied().unwrap_or(0);
        if cols * m.ty(o.operands[1]).elem().map_or(2, ScalarType::size_bytes) != 128 {
            return err(
                o,
                "convert-tile-to-nvvm: a TMA-store slot row must be 128 bytes (64 16-bit \
                 elements, one 128-byte swizzle span)",
            );
        }
        tma_boxes.insert(*t, b.clone());
        stored.insert(*t, *o);
    }
    for t in stored.keys() {
        tma_swizzle.entry(*t).or_insert(128);
    }
    Ok(Analysis {
        tma_boxes,
        tma_swizzle,
        stored,
        consumers,
    })
}

/// The kernel's parameters as the manifest describes them, in order.
fn params_of(m: &TileModule, k: &Operation, a: &Analysis) -> R<Vec<Param>> {
    let mut params = vec![];
    for &v in &k.regions[0].args {
        let an = m.name(v).unwrap_or("arg").to_string();
        match m.ty(v) {
            TileType::Tensor { rank, elem } => {
                if let Some(b) = a.tma_boxes.get(&v) {
                    // A map only stored through has no fill (TMA clips out-of-bounds writes).
                    let fill = if a.stored.contains_key(&v) && !k_loads(k, v) {
                        Fill::None
                    } else {
                        Fill::Zero
                    };
                    let bytes = a.tma_swizzle.get(&v).copied().unwrap_or(128);
                    let Some(swizzle) = Swizzle::from_bytes(bytes) else {
                        return err(k, format!("internal error: a {bytes}-byte TMA swizzle"));
                    };
                    params.push(Param::TensorMap {
                        name: an,
                        dtype: dtype_of(*elem),
                        rank: *rank,
                        box_: b.clone(),
                        swizzle,
                        fill,
                        interleave: Interleave::None,
                        l2_promotion: L2Promotion::B256,
                    });
                } else {
                    params.push(Param::TensorPointer {
                        name: an,
                        dtype: dtype_of(*elem),
                        rank: *rank,
                    });
                }
            }
            TileType::Scalar(s) => params.push(Param::Scalar {
                name: an,
                dtype: scalar_dtype(*s),
            }),
            t => {
                return err(
                    k,
                    format!("kernel argument '%{an}' of type {t} cannot be a kernel parameter"),
                )
            }
        }
    }
    Ok(params)
}

/// What the module and the manifest are made from: the kernel's launch shape, the
/// analysis, its parameters and PTX ISA version.
struct Setup<'k> {
    shape: KernelShape,
    analysis: Analysis<'k>,
    params: Vec<Param>,
    atomics: bool,
    ptx_version: (u32, u32),
}

/// Reads the launch attributes, analyses `k` and lays out its parameters.
///
/// # Errors
/// A located diagnostic for what the lowering cannot take, and for kernels whose
/// parameters overflow the PTX parameter space.
fn setup<'k>(m: &TileModule, k: &'k Operation) -> R<Setup<'k>> {
    let name = k.symbol.clone().unwrap_or_default();
    let Some(target) = k.str_attr("target").and_then(Target::from_name) else {
        return err(
            k,
            format!(
                "kernel '@{name}' has no 'target': run 'tile-to-gpu' (a kernel with a \
                 'tile.dot') or 'tile-assign-layouts' (any other) before 'convert-tile-to-nvvm'"
            ),
        );
    };
    let block: Vec<i64> = k
        .attr("block")
        .and_then(TileAttr::as_array)
        .map(|a| a.iter().filter_map(TileAttr::as_int).collect())
        .unwrap_or_default();
    if k.attr("block").is_none() {
        return err(k, "kernel has no 'block' attribute (set by tile-to-gpu)");
    }
    let cluster = super::cluster_of(k)?;
    // One `tile.warp_specialize`, in the kernel body: its lowering initialises the CTA's
    // mbarriers, which a second one would initialise again while they are in use.
    let mut specialized = vec![];
    k.walk(&mut |o| {
        if o.kind == OpKind::WarpSpecialize {
            specialized.push(o);
        }
    });
    let top = k.regions.first().map_or(0, |b| {
        b.ops
            .iter()
            .filter(|o| o.kind == OpKind::WarpSpecialize)
            .count()
    });
    let misplaced = specialized.len() > 1 || top != specialized.len();
    if let Some(&o) = specialized
        .get(1)
        .or(specialized.first().filter(|_| misplaced))
    {
        return err(
            o,
            "a GEMM kernel has one 'tile.warp_specialize', directly in the kernel body (its \
             lowering initialises the CTA's mbarriers)",
        );
    }
    let analysis = analyze(m, k)?;
    // The block is one-dimensional (the lowering reads `%tid.x` alone): the producer (a
    // warpgroup with wgmma, none with mma.sync) after the consumer warpgroups, which on
    // mma.sync are the 2 x 4 warp grid of the 128x256 tile.
    let consumers = analysis.consumers as i64;
    if !target.has_wgmma() && consumers != 2 {
        return err(
            k,
            format!(
                "a GEMM kernel on {target} has 2 consumer warpgroups (the 2 x 4 warps of \
                 mma.sync's 128x256 tile), found {consumers}"
            ),
        );
    }
    let want = [producer_threads(target) + 128 * consumers, 1, 1];
    if block[..] != want {
        return err(
            k,
            format!(
                "kernel 'block' = {block:?}: a GEMM kernel with {consumers} consumer warpgroups \
                 on {target} has block = {want:?}"
            ),
        );
    }
    let params = params_of(m, k, &analysis)?;
    let mut atomics = false;
    k.walk(&mut |o| atomics |= o.kind == OpKind::AtomicAdd);
    let ptx_version = if atomics {
        target.min_ptx_version().max((8, 1))
    } else {
        target.min_ptx_version()
    };

    let ptx_version = super::param_space(k, &params, ptx_version)?;
    let shape = KernelShape {
        name,
        target,
        block: [block[0], block[1], block[2]],
        cluster: [cluster[0], cluster[1], cluster[2]],
    };
    Ok(Setup {
        shape,
        analysis,
        params,
        atomics,
        ptx_version,
    })
}

/// Builds the MLIR module of kernel `k` (made by `tile-to-gpu`) in `ctx`; also returns the
/// end of the shared memory it lays out, in bytes.
///
/// # Errors
/// As [`lower_kernel`].
pub(super) fn build<'c>(ctx: &'c Context, m: &TileModule, k: &Operation) -> R<(Module<'c>, u64)> {
    let s = setup(m, k)?;
    build_module(ctx, m, k, &s.shape, &s.analysis)
}

/// Lowers kernel `k` (made by `tile-to-gpu`): with `trial`, builds its MLIR module once, to
/// report what the lowering cannot take; describes its launch. Without `trial` the
/// manifest's shared memory is the kernel's `smem_bytes` (0 without one), to be raised to
/// the end of the shared memory the build lays out.
///
/// # Errors
/// A located diagnostic for what the lowering cannot take, and for kernels whose
/// parameters overflow the PTX parameter space.
pub(super) fn lower_kernel(
    m: &TileModule,
    k: &Operation,
    trial: bool,
) -> R<(Manifest, (u32, u32))> {
    let Setup {
        shape,
        analysis,
        params,
        atomics,
        ptx_version,
    } = setup(m, k)?;
    let name = shape.name.clone();
    let target = shape.target;
    let block = shape.block;
    let cluster = shape.cluster;
    let smem_end = if trial {
        crate::mlir_driver::with_builder_context(|ctx| {
            build_module(ctx, m, k, &shape, &analysis).map(|(_, end)| end)
        })?
    } else {
        0
    };

    let grid = k.attr("grid").and_then(TileAttr::as_array).unwrap_or(&[]);
    let dims = super::grid_of(k);
    let smem_bytes = k
        .int_attr("smem_bytes")
        .map_or(smem_end, |b| b.max(0) as u64);
    let (maj, min) = ptx_version;
    let persistent = super::persistent_of(k);
    let mut manifest = Manifest::new(
        name.clone(),
        target.name().into(),
        format!("{maj}.{min}"),
        [block[0] as u32, block[1] as u32, block[2] as u32],
        smem_bytes.max(smem_end),
        dims,
        params,
    );
    manifest.persistent = persistent;
    if atomics {
        // Split-K: which scalar is S (grid z, when it is a plain argument), which tensors
        // the kernel adds into (the launcher zeroes them before each launch), the K
        // granularity of a slice (the ring's K tile), and what the launcher does after.
        let ws = super::atomic_outputs(m, k);
        let mut flags = false;
        k.walk(&mut |o| flags |= o.kind.is_flag());
        let k_tile = k_tile_of(m, k);
        // A split-K kernel: grid z is the number of K slices, a plain scalar argument. Other
        // kernels with atomics (an epilogue's reduction added into its output) only say
        // what they add into.
        // A kernel that also has flag ops orders its own reduction: no launcher protocol
        // is inferred for it.
        if let (Some(TileAttr::Expr(Expr::Arg(n))), false) = (grid.get(2), flags) {
            manifest.split_k = Some(SplitK {
                arg: n.clone(),
                reduction: Reduction::Atomic,
                flags: vec![],
                waits: false,
                finalize: Some(Finalize {
                    op: FinalizeOp::Convert,
                    from: ws.first().cloned(),
                    to: "C".into(),
                    // The operands' 16-bit type (the output a caller of an f16 GEMM wants).
                    dtype: manifest
                        .params
                        .iter()
                        .map(Param::dtype)
                        .find(|d| matches!(d, Dtype::Bf16 | Dtype::F16))
                        .unwrap_or(Dtype::Bf16),
                }),
                workspace: ws.clone(),
                workspace_init: WorkspaceInit::Zero,
                k_tile,
            });
        }
        manifest.atomic_outputs = ws;
    } else if let Some(TileAttr::Expr(Expr::Arg(n))) = grid.get(2) {
        manifest.split_k = ordered_split_k(m, k, n);
    }
    manifest.cluster = [cluster[0] as u32, cluster[1] as u32, cluster[2] as u32];
    Ok((manifest, (maj, min)))
}

/// The launch protocol of a split-K kernel reduced in slice order (grid z the plain
/// scalar argument `arg`, flag ops in the epilogue): its flag tensors, whether a program
/// waits, its workspaces (the tensors it both loads and stores) and its k tile. `None` for a kernel
/// without flags.
fn ordered_split_k(m: &TileModule, k: &Operation, arg: &str) -> Option<SplitK> {
    let (mut flags, mut loaded, mut stored) = (vec![], vec![], vec![]);
    let mut waits = false;
    k.walk(&mut |o| {
        waits |= o.kind == OpKind::WaitFlag;
        let list = match o.kind {
            OpKind::ReleaseFlag | OpKind::WaitFlag | OpKind::ArriveFlag => &mut flags,
            OpKind::Load => &mut loaded,
            OpKind::Store => &mut stored,
            _ => return,
        };
        if let Some(n) = o.operands.first().and_then(|&t| m.name(t)) {
            if !list.iter().any(|x: &String| x == n) {
                list.push(n.to_string());
            }
        }
    });
    if flags.is_empty() {
        return None;
    }
    Some(SplitK {
        arg: arg.to_string(),
        reduction: Reduction::Ordered,
        workspace: stored.into_iter().filter(|w| loaded.contains(w)).collect(),
        workspace_init: WorkspaceInit::None,
        flags,
        waits,
        k_tile: k_tile_of(m, k),
        finalize: None,
    })
}

/// The K extent of a k tile: the last dimension of the kernel's first shared-memory ring of
/// floats (A's, `[BM, BK]`; a try_cancel response ring of i32 comes first under the clc
/// schedule). 0 without one.
fn k_tile_of(m: &TileModule, k: &Operation) -> u64 {
    let mut k_tile = 0;
    k.walk(&mut |o| {
        if o.kind != OpKind::SmemAlloc || k_tile != 0 {
            return;
        }
        if let TileType::Smem { shape, elem, .. } = m.ty(o.results[0]) {
            if elem.is_float() {
                k_tile = shape.last().copied().unwrap_or(0);
            }
        }
    });
    k_tile
}

/// What the module's function attributes need.
struct KernelShape {
    name: String,
    target: Target,
    block: [i64; 3],
    cluster: [i64; 3],
}

fn internal(k: &Operation, e: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(k.loc.clone(), format!("internal error: {e}"))
}

/// Builds the module (`gpu.container_module` → `gpu.module` → `@dynamic_smem` + the
/// `llvm.func`); also returns the end of the shared memory it lays out.
fn build_module<'c>(
    ctx: &'c Context,
    m: &TileModule,
    k: &Operation,
    shape: &KernelShape,
    a: &Analysis,
) -> R<(Module<'c>, u64)> {
    let loc = Location::unknown(ctx);
    let mut module = Module::new(loc);
    module
        .as_operation_mut()
        .set_attribute("gpu.container_module", Attribute::unit(ctx));
    let ident = |s: &str| Identifier::new(ctx, s);
    let i32t: Type = IntegerType::new(ctx, 32).into();
    let i64t: Type = IntegerType::new(ctx, 64).into();
    let fname = super::sanitize(&shape.name);
    let gpu_region = Region::new();
    gpu_region.append_block(Block::new(&[]));
    let gpu_module = OperationBuilder::new("gpu.module", loc)
        .add_attributes(&[(
            ident("sym_name"),
            StringAttribute::new(ctx, &format!("{fname}_module")).into(),
        )])
        .add_regions([gpu_region])
        .build()
        .map_err(|e| internal(k, e))?;
    let gm = module.body().append_operation(gpu_module);
    let gm_block = gm
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or_else(|| internal(k, "gpu.module body"))?;
    let i8t: Type = IntegerType::new(ctx, 8).into();
    let smem_global = OperationBuilder::new("llvm.mlir.global", loc)
        .add_attributes(&[
            (
                ident("sym_name"),
                StringAttribute::new(ctx, "dynamic_smem").into(),
            ),
            (
                ident("global_type"),
                TypeAttribute::new(llvm::r#type::array(i8t, 0)).into(),
            ),
            (
                ident("linkage"),
                llvm::attributes::linkage(ctx, llvm::attributes::Linkage::External),
            ),
            (ident("addr_space"), IntegerAttribute::new(i32t, 3).into()),
            (ident("alignment"), IntegerAttribute::new(i64t, 1024).into()),
        ])
        .add_regions([Region::new()])
        .build()
        .map_err(|e| internal(k, e))?;
    gm_block.append_operation(smem_global);

    // Parameters: a tensor map is a byval pointer, a pointer tensor is pointer (as i64),
    // sizes and strides.
    let body = &k.regions[0];
    let ptr = llvm::r#type::pointer(ctx, 0);
    let mut ptypes = vec![];
    let mut arg_attrs = vec![];
    for &v in &body.args {
        match m.ty(v) {
            TileType::Tensor { .. } if a.tma_boxes.contains_key(&v) => {
                ptypes.push(ptr);
                arg_attrs.push(
                    "{llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, \
                     nvvm.grid_constant}",
                );
            }
            TileType::Tensor { rank, .. } => {
                for _ in 0..1 + 2 * rank {
                    ptypes.push(i64t);
                    arg_attrs.push("{}");
                }
            }
            TileType::Scalar(s) => {
                ptypes.push(super::writer::scalar_type(ctx, *s));
                arg_attrs.push("{}");
            }
            _ => {}
        }
    }
    // mma.sync kernels (no setmaxnreg split): the register file over the block's warps, in the
    // hardware's allocation groups (`Target::register_cap`: 168 for 288 threads, 255 for the
    // 256 of a kernel without a producer warp).
    let maxnreg = (!shape.target.has_wgmma()).then(|| {
        let threads = (shape.block[0] * shape.block[1] * shape.block[2]) as u64;
        shape.target.register_cap(threads)
    });
    let fty = llvm::r#type::function(llvm::r#type::void(ctx), &ptypes, false);
    let region = Region::new();
    let args: Vec<(Type, Location)> = ptypes.iter().map(|&t| (t, loc)).collect();
    region.append_block(Block::new(&args));
    let arg_attrs = Attribute::parse(ctx, &format!("[{}]", arg_attrs.join(", ")))
        .ok_or_else(|| internal(k, "argument attributes"))?;
    let maxntid = shape.block.map(|b| b as i32);
    let mut fattrs = vec![
        (ident("sym_name"), StringAttribute::new(ctx, &fname).into()),
        (ident("function_type"), TypeAttribute::new(fty).into()),
        (ident("arg_attrs"), arg_attrs),
        (ident("gpu.kernel"), Attribute::unit(ctx)),
        (ident("nvvm.kernel"), Attribute::unit(ctx)),
        (
            ident("nvvm.maxntid"),
            DenseI32ArrayAttribute::new(ctx, &maxntid).into(),
        ),
    ];
    // Register budget. wgmma kernels: maxntid 384 + minctasm 1 gives ptxas a cap of 168 at
    // entry, which setmaxnreg then rebalances (40 producer / 232 consumers).
    match maxnreg {
        Some(n) => fattrs.push((
            ident("nvvm.maxnreg"),
            IntegerAttribute::new(i32t, n as i64).into(),
        )),
        None => fattrs.push((
            ident("nvvm.minctasm"),
            IntegerAttribute::new(i32t, 1).into(),
        )),
    }
    fattrs.extend(super::denormal_attrs(ctx, k));
    let cluster_size: i64 = shape.cluster.iter().product();
    if cluster_size > 1 {
        let c = shape.cluster.map(|c| c as i32);
        fattrs.push((
            ident("nvvm.cluster_dim"),
            DenseI32ArrayAttribute::new(ctx, &c).into(),
        ));
    }
    let func = OperationBuilder::new("llvm.func", loc)
        .add_attributes(&fattrs)
        .add_regions([region])
        .build()
        .map_err(|e| internal(k, e))?;
    let f = gm_block.append_operation(func);
    let fregion = f.region(0).map_err(|e| internal(k, e))?;
    let entry = fregion
        .first_block()
        .ok_or_else(|| internal(k, "function body"))?;
    let mut w = Writer {
        ctx,
        loc,
        region: fregion,
        block: entry,
        error: None,
        pending: vec![],
        contract: super::fp_fusion(ctx, k),
        cta_threads: None,
    };
    let arg = |i: usize| -> Value { entry.argument(i).map(Into::into).expect("declared") };
    let mut vals = HashMap::new();
    let mut i = 0;
    for &v in &body.args {
        match m.ty(v) {
            TileType::Tensor { .. } if a.tma_boxes.contains_key(&v) => {
                vals.insert(v, Lv::TensorMap(arg(i)));
                i += 1;
            }
            TileType::Tensor { rank, elem } => {
                let r = *rank as usize;
                let sv = |j: usize| V {
                    v: arg(j),
                    t: ScalarType::I64,
                };
                vals.insert(
                    v,
                    Lv::TensorPtr(PtrTensor {
                        ptr: sv(i),
                        sizes: (0..r).map(|d| sv(i + 1 + d)).collect(),
                        strides: (0..r).map(|d| sv(i + 1 + r + d)).collect(),
                        elem: *elem,
                    }),
                );
                i += 1 + 2 * r;
            }
            TileType::Scalar(s) => {
                vals.insert(v, Lv::Scalar(V { v: arg(i), t: *s }));
                i += 1;
            }
            _ => {}
        }
    }
    // Entry: the thread's index, the shared memory's base, lane and warp.
    let tid = w.sreg("tid.x");
    let p3 = w.ptr_ty(3);
    let sym = melior::ir::attribute::FlatSymbolRefAttribute::new(ctx, "dynamic_smem").into();
    let smem = w.op1("llvm.mlir.addressof", &[], p3, &[("global_name", sym)]);
    let smem_i32 = V {
        v: w.cast("llvm.ptrtoint", smem, i32t),
        t: ScalarType::I32,
    };
    let c31 = w.i32(31);
    let lane = w.bin("and", tid, c31);
    let c5 = w.i32(5);
    let c3 = w.i32(3);
    let wv = w.bin("lshr", tid, c5);
    let warp_in_wg = w.bin("and", wv, c3);
    let exit = w.block(&[]);
    let mut g = Gemm {
        w,
        m,
        target: shape.target,
        vals,
        tid,
        smem,
        smem_i32,
        lane,
        warp_in_wg,
        cwg: None,
        acc: None,
        mma_sync: !shape.target.has_wgmma(),
        producer_threads: producer_threads(shape.target),
        warp_mn: None,
        frag_rc: None,
        exit,
        barrier_inits: vec![],
        smem_end: 1024,
        prev: None,
        cluster_size,
        cluster: shape.cluster,
        ring_swizzle: HashMap::new(),
        consumer_wgs: a.consumers as i64,
        loop_depth: 0,
        written: Default::default(),
        tma_stores: false,
        flag_slot: None,
        scheduler: false,
        in_producer: false,
    };
    let mut flags = false;
    k.walk(&mut |o| match o.kind {
        OpKind::Store | OpKind::AtomicAdd => g.written.extend(o.operands.first().copied()),
        OpKind::TmaStore => g.tma_stores = true,
        OpKind::WaitFlag | OpKind::ReleaseFlag | OpKind::ArriveFlag => flags = true,
        _ => {}
    });
    if !flags {
        g.written.clear();
    }
    g.lower_block(&body.ops)?;
    g.w.loc = loc;
    g.w.place(g.exit);
    if cluster_size > 1 {
        // No CTA may exit while a peer can still write into its shared memory (a multicast
        // try_cancel response, a remote mbarrier arrive): every thread meets here (not
        // `.aligned`: the producer's idle threads arrive from another branch).
        g.cluster_barrier(false);
    }
    g.w.push(Ok(llvm::r#return(None, loc)));
    g.w.finish(&k.loc)?;
    let smem_end = g.smem_end;
    drop(g);
    Ok((module, smem_end))
}

/// Threads of a GEMM kernel's producer, before its consumer warpgroups: a warpgroup with
/// wgmma (it gives its registers away with `setmaxnreg`), none with mma.sync (the
/// consumers' thread 0 issues the copies).
fn producer_threads(target: Target) -> i64 {
    if target.has_wgmma() {
        128
    } else {
        0
    }
}

/// Whether `op` is a `tile.mma` or holds one in its regions.
fn holds_mma(op: &Operation) -> bool {
    op.kind == OpKind::Mma || op.regions.iter().any(|b| b.ops.iter().any(holds_mma))
}
