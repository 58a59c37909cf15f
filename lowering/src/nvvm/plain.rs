//! Kernels with a plain launch (laid out by `tile-assign-layouts`: no dot, no warp
//! specialization): the analysis of the kernel, its parameters, and the walk that hands
//! each op to its construct.
//!
//! A tile value is one SSA register per element of its layout's register index
//! ([`tilec_dialect::layout`]): register `r` of lane `l` of warp `w` holds the element at
//! `layout.apply(r, l, w)`. The constructs are in [`super::memory`] (loads and stores),
//! [`super::math`] (elementwise math and conversions), [`super::reduce`] (reductions),
//! [`super::remap`] (broadcasts and layout conversions) and [`super::control`] (loops and
//! branches).

use super::smem_plan::{SmemPlan, Span, ALWAYS};
use super::writer::{thread_dim_bases, ICmp, Writer, V};
use crate::manifest::{Manifest, Param};
use melior::{
    dialect::llvm,
    ir::{
        attribute::{DenseI32ArrayAttribute, IntegerAttribute, StringAttribute, TypeAttribute},
        block::BlockLike,
        operation::{OperationBuilder, OperationLike, OperationMutLike},
        Attribute, Block, BlockRef, Identifier, Location, Module, Region, RegionLike, Type, Value,
    },
    Context,
};
use std::collections::HashMap;
use tilec_dialect::{
    Attribute as TileAttr, Diagnostic, LinearLayout, Location as TileLoc, Module as TileModule,
    OpKind, Operation, ScalarType, Target, Type as TileType, Value as TileValue,
};

pub(super) type R<T> = Result<T, Diagnostic>;

pub(super) fn err<T>(op: &Operation, msg: impl Into<String>) -> R<T> {
    Err(Diagnostic::error(op.loc.clone(), msg))
}

/// Shared memory running out at `loc`: a resource-limit error of `needed` bytes where a CTA
/// has `limit`.
pub(super) fn smem_limit(loc: &TileLoc, msg: String, needed: u64, limit: u64) -> Diagnostic {
    let resource = "shared memory bytes per block";
    Diagnostic::resource_limit(loc.clone(), msg, resource, needed, limit)
}

/// A tile in registers: `regs[r]` is register `r` of the layout.
#[derive(Clone, Debug)]
pub(crate) struct Tile<'c, 'm> {
    pub regs: Vec<Value<'c, 'm>>,
    pub elem: ScalarType,
    pub shape: Vec<u64>,
    pub layout: LinearLayout,
}

/// A global tensor parameter: base pointer, sizes and strides (elements, i64).
#[derive(Clone, Debug)]
pub(crate) struct Tensor<'c, 'm> {
    pub ptr: Value<'c, 'm>,
    pub sizes: Vec<V<'c, 'm>>,
    pub strides: Vec<V<'c, 'm>>,
    pub elem: ScalarType,
}

/// How a tile IR value lives in the lowered code.
#[derive(Clone, Debug)]
pub(crate) enum Lv<'c, 'm> {
    Scalar(V<'c, 'm>),
    Tile(Tile<'c, 'm>),
    Tensor(Tensor<'c, 'm>),
    /// A shared-memory buffer (`tile.smem_alloc`).
    Smem(super::wgmma::SmemBuf),
    /// A kernel tensor passed as a `CUtensorMap` (a pointer to the byval parameter).
    TensorMap(Value<'c, 'm>),
    /// An mbarrier array at a byte offset of the dynamic shared memory.
    Bars {
        offset: u64,
    },
    /// An unswizzled shared-memory buffer (`tile.smem_alloc` without `swizzle`): `stages`
    /// slots of `stage_bytes` (16-byte aligned) from byte `offset`.
    RawSmem {
        offset: u64,
        stage_bytes: u64,
    },
}

/// The state of one kernel's lowering.
pub(crate) struct Lowerer<'c, 'm, 'k> {
    pub w: Writer<'c, 'm>,
    pub m: &'k TileModule,
    pub vals: HashMap<TileValue, Lv<'c, 'm>>,
    /// The entry block: values every block may use are written here.
    pub prologue: BlockRef<'c, 'm>,
    pub lane: V<'c, 'm>,
    pub warp: V<'c, 'm>,
    pub target: Target,
    /// The coordinate (i32) a thread's lane and warp contribute in one dimension, per
    /// that dimension's lane and warp bases ([`thread_dim_bases`]).
    pub thread_coords: HashMap<(Vec<u64>, Vec<u64>), V<'c, 'm>>,
    /// Bytes of dynamic shared memory the kernel needs (the regions of its round trips).
    pub smem_bytes: u64,
    /// How many `tile.for` and `tile.while` bodies enclose the op being lowered.
    pub loop_depth: u32,
    /// The values (registers per thread) the enclosing loops carry, summed.
    pub loop_carried: usize,
    /// Warps per CTA.
    pub num_warps: u64,
    /// CTAs to be resident per SM (the kernel's `ctas_per_sm`, default 1): the registers and
    /// shared memory each may use.
    pub ctas_per_sm: u64,
    /// In a cluster launch, the mbarrier arrays a cluster barrier follows
    /// ([`super::clc::cluster_barriers`]).
    pub cluster_visible: std::collections::HashSet<TileValue>,
    /// Whether the op being lowered is the scheduler's, run by thread 0 alone
    /// ([`super::clc`]).
    pub scheduler: bool,
    /// The shared-memory slot of `tile.arrive_flag`'s old value, once allocated.
    pub flag_slot: Option<u64>,
    /// The op numbering and the buffers' live ranges ([`SmemPlan`]).
    pub plan: SmemPlan,
    /// Every region placed so far: byte offset, bytes, and the ops it is live over.
    pub placed: Vec<Placed>,
    /// The number ([`SmemPlan::index`]) of the op being lowered.
    pub cur_op: usize,
    /// The values waits take as inputs, not tied ([`super::wgmma::wgmma_only`]).
    pub wgmma_only: std::collections::HashSet<TileValue>,
    /// Tensors the program stored to since its last CTA barrier: a later read of one
    /// (whose elements another thread may have written) is put after a barrier
    /// ([`Lowerer::order_accesses`]).
    pub written: std::collections::HashSet<TileValue>,
    /// Tensors the program read since its last CTA barrier: a later write of one (to
    /// elements another thread may still be about to read) is put after a barrier.
    pub read: std::collections::HashSet<TileValue>,
}

/// A placed region of dynamic shared memory: `bytes` from byte `offset`, live over the
/// ops numbered `live` ([`super::smem_plan::ALWAYS`] for one never dead).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Placed {
    pub offset: u64,
    pub bytes: u64,
    pub live: Span,
    /// A round trip's region ([`Lowerer::scratch_region`]).
    pub scratch: bool,
}

/// Shared memory (bytes) up to which round trips keep apart from each other
/// ([`Lowerer::scratch_region`]): 48 KiB, CUDA's dynamic shared memory without the opt-in,
/// which leaves four CTAs an SM on Hopper.
pub(crate) const SCRATCH_APART_BYTES: u64 = 48 * 1024;

/// A round trip's scratch region ([`Lowerer::scratch_region`]) and the synchronisation its
/// bytes need.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scratch {
    /// Byte offset (16-byte aligned).
    pub offset: u64,
    /// Bytes an earlier region used: all threads must be past their reads of it (and its
    /// asynchronous writes and reads done) before this op writes, so the op starts with a
    /// barrier.
    pub reuses_earlier: bool,
    /// Bytes a later buffer uses: the op ends with `fence.proxy.async` and a barrier, so
    /// every thread's accesses come before that buffer's first (possibly TMA) write.
    pub precedes_later: bool,
}

impl<'c, 'm> Lowerer<'c, 'm, '_> {
    pub fn get(&self, op: &Operation, v: TileValue) -> R<Lv<'c, 'm>> {
        self.vals
            .get(&v)
            .cloned()
            .ok_or_else(|| Diagnostic::error(op.loc.clone(), "internal error: operand not lowered"))
    }

    /// The lowered values of `vs`, in order.
    pub fn gets(&self, op: &Operation, vs: &[TileValue]) -> R<Vec<Lv<'c, 'm>>> {
        vs.iter().map(|&v| self.get(op, v)).collect()
    }

    pub fn scalar(&self, op: &Operation, v: TileValue) -> R<V<'c, 'm>> {
        match self.get(op, v)? {
            Lv::Scalar(s) => Ok(s),
            _ => err(op, "expected a scalar operand"),
        }
    }

    pub fn tile(&self, op: &Operation, v: TileValue) -> R<Tile<'c, 'm>> {
        match self.get(op, v)? {
            Lv::Tile(t) => Ok(t),
            _ => err(op, "expected a tile operand"),
        }
    }

    pub fn tensor(&self, op: &Operation, v: TileValue) -> R<Tensor<'c, 'm>> {
        match self.get(op, v)? {
            Lv::Tensor(t) => Ok(t),
            _ => err(op, "expected a tensor operand"),
        }
    }

    /// The layout of a tile result (set by `tile-assign-layouts`).
    pub fn result_layout(
        &self,
        op: &Operation,
        i: usize,
    ) -> R<(Vec<u64>, ScalarType, LinearLayout)> {
        match op.results.get(i).map(|&r| self.m.ty(r)) {
            Some(TileType::Tile {
                shape,
                elem,
                layout: Some(l),
            }) => Ok((shape.clone(), *elem, (**l).clone())),
            _ => err(
                op,
                "a tile result has no layout: run 'tile-assign-layouts' before \
                 'convert-tile-to-nvvm'",
            ),
        }
    }

    /// Runs `f` with the prologue as the insertion block.
    pub fn in_prologue<T>(&mut self, f: impl FnOnce(&mut Writer<'c, 'm>) -> T) -> T {
        let here = self.w.block;
        self.w.block = self.prologue;
        let r = f(&mut self.w);
        self.w.block = here;
        r
    }

    /// The coordinate (one i32 per dimension) that this thread's lane and warp contribute
    /// in `layout`: the XOR of the bases of the lane and warp bits set.
    /// Each dimension's part is computed once per prologue and shared by every layout whose
    /// lane and warp bases agree in that dimension.
    pub fn thread_coord(&mut self, layout: &LinearLayout) -> Vec<V<'c, 'm>> {
        (0..layout.rank())
            .map(|d| {
                let bases = thread_dim_bases(layout, d);
                if let Some(&c) = self.thread_coords.get(&bases) {
                    return c;
                }
                let (lane, warp) = (self.lane, self.warp);
                let c = self.in_prologue(|w| w.thread_dim_coord(&bases, lane, warp));
                self.thread_coords.insert(bases, c);
                c
            })
            .collect()
    }

    /// The coordinate of register `r` of this thread in `layout` (i32 per dimension).
    pub fn coord(&mut self, layout: &LinearLayout, r: u64) -> Vec<V<'c, 'm>> {
        let t = self.thread_coord(layout);
        let rc = layout.register_coord(r);
        t.iter()
            .zip(rc)
            .map(|(&c, x)| self.w.xor_const(c, x as i64))
            .collect()
    }

    /// Whether register `r`'s element is inside the tile (not padding); `None` when every
    /// element is (power-of-two shapes).
    pub fn in_tile(&mut self, t: &Tile<'c, 'm>, coord: &[V<'c, 'm>]) -> Option<V<'c, 'm>> {
        let mut acc: Option<V<'c, 'm>> = None;
        for (d, &c) in coord.iter().enumerate() {
            if t.shape[d] == t.layout.dims[d] {
                continue;
            }
            let n = self.w.i32(t.shape[d] as i64);
            let ok = self.w.icmp(ICmp::Slt, c, n);
            acc = Some(match acc {
                Some(a) => self.w.and(a, ok),
                None => ok,
            });
        }
        acc
    }

    /// Checks that `bytes` from byte `at` fit a CTA's shared memory.
    fn fits(&self, at: u64, bytes: u64, loc: &TileLoc) -> R<()> {
        let max = self.target.max_smem_per_block_at(self.ctas_per_sm);
        if at + bytes > max {
            let needed = at + bytes;
            let msg = if self.ctas_per_sm > 1 {
                format!(
                    "the kernel's shared-memory round trips need {needed} bytes; with {} CTAs \
                     per SM ('ctas_per_sm') a CTA has at most {max}",
                    self.ctas_per_sm
                )
            } else {
                format!(
                    "the kernel's shared-memory round trips need {needed} bytes; a CTA has at \
                     most {max}"
                )
            };
            return Err(smem_limit(loc, msg, needed, max));
        }
        Ok(())
    }

    /// A region of `bytes` of dynamic shared memory that no other region ever shares
    /// (16-byte aligned), and its byte offset: mbarriers, slots read across ops, and the
    /// regions of round trips that are not placed by [`Self::scratch_region`]. An op that
    /// runs once (outside every loop) needs no barrier after reading such a region: nothing
    /// writes it again. Ops inside a loop end with one ([`Self::in_loop`]).
    ///
    /// # Errors
    /// More shared memory than a CTA may have.
    pub fn smem_region(&mut self, bytes: u64, loc: &TileLoc) -> R<u64> {
        let at = self.smem_bytes.div_ceil(16) * 16;
        self.fits(at, bytes, loc)?;
        self.smem_bytes = at + bytes;
        self.placed.push(Placed {
            offset: at,
            bytes,
            live: ALWAYS,
            scratch: false,
        });
        Ok(at)
    }

    /// [`Self::smem_region_aligned`] for the `tile.smem_alloc` result `v`: the region is
    /// recorded as live over `v`'s range ([`SmemPlan::live`]) only, so that a round trip
    /// where `v` is dead may take its bytes.
    ///
    /// # Errors
    /// More shared memory than a CTA may have.
    pub fn buffer_region(&mut self, v: TileValue, bytes: u64, align: u64, loc: &TileLoc) -> R<u64> {
        let at = self.smem_region_aligned(bytes, align, loc)?;
        if let Some(p) = self.placed.last_mut() {
            p.live = self.plan.live(v);
        }
        Ok(at)
    }

    /// A region of `bytes` for the current op's round trip alone (16-byte aligned): the
    /// lowest offset, first fit over the regions placed so far, that no buffer live at this
    /// op and no other round trip uses. So it may take the bytes of a `tile.smem_alloc`
    /// buffer that is dead here or not yet in use; [`Scratch`] says which barriers that
    /// needs. Round trips share bytes with earlier ones only where holding them apart would
    /// take the kernel past [`SCRATCH_APART_BYTES`] (inside a loop: past what a CTA may
    /// have): sharing costs a barrier before the op (an op outside a loop ends with none),
    /// and more shared memory costs CTAs per SM.
    ///
    /// # Errors
    /// More shared memory than a CTA may have, even with every earlier round trip's bytes
    /// taken again.
    pub fn scratch_region(&mut self, bytes: u64, loc: &TileLoc) -> R<Scratch> {
        let cur = self.cur_op;
        let first_fit = |share: bool| {
            let busy: Vec<(u64, u64)> = self
                .placed
                .iter()
                .filter(|p| {
                    (p.scratch && !(share && p.live.1 < cur))
                        || (p.live.0 <= cur && cur <= p.live.1)
                })
                .map(|p| (p.offset, p.offset + p.bytes))
                .collect();
            let mut starts: Vec<u64> = std::iter::once(0)
                .chain(busy.iter().map(|b| b.1))
                .map(|x| x.div_ceil(16) * 16)
                .collect();
            starts.sort_unstable();
            starts
                .into_iter()
                .find(|&o| busy.iter().all(|&(a, z)| o + bytes <= a || z <= o))
                .unwrap_or_else(|| self.smem_bytes.div_ceil(16) * 16)
        };
        let mut at = first_fit(false);
        // In a loop the barrier would run every iteration: share there only when the
        // round trips cannot be held apart at all.
        let apart = if self.in_loop() {
            self.target.max_smem_per_block_at(self.ctas_per_sm)
        } else {
            SCRATCH_APART_BYTES
        };
        if at + bytes > apart {
            at = first_fit(true);
        }
        self.fits(at, bytes, loc)?;
        let overlaps = |p: &Placed| at < p.offset + p.bytes && p.offset < at + bytes;
        let reuses_earlier = self.placed.iter().any(|p| overlaps(p) && p.live.1 < cur);
        let precedes_later = self.placed.iter().any(|p| overlaps(p) && p.live.0 > cur);
        self.placed.push(Placed {
            offset: at,
            bytes,
            live: (cur, cur),
            scratch: true,
        });
        self.smem_bytes = self.smem_bytes.max(at + bytes);
        Ok(Scratch {
            offset: at,
            reuses_earlier,
            precedes_later,
        })
    }

    /// A region of `bytes` of dynamic shared memory aligned to `align` bytes (a power of
    /// two; the dynamic shared memory itself is then declared with that alignment).
    ///
    /// # Errors
    /// More shared memory than a CTA may have.
    pub fn smem_region_aligned(&mut self, bytes: u64, align: u64, loc: &TileLoc) -> R<u64> {
        self.smem_bytes = self.smem_bytes.div_ceil(align) * align;
        self.smem_region(bytes, loc)
    }

    /// Whether the op being lowered is inside a loop (its shared-memory region is written
    /// again by the next iteration).
    pub fn in_loop(&self) -> bool {
        self.loop_depth > 0
    }

    pub fn lower_block(&mut self, ops: &[Operation]) -> R<()> {
        for op in ops {
            self.w.at(&op.loc);
            if let Some(i) = self.plan.index(op) {
                self.cur_op = i;
            }
            if op.str_attr("role") == Some("scheduler") && !self.scheduler {
                self.lower_scheduler_op(op)?;
            } else {
                self.order_accesses(op);
                self.lower_op(op)?;
                if matches!(op.kind, OpKind::Store | OpKind::AtomicAdd) {
                    self.written.extend(op.operands.first().copied());
                }
                if op.kind.reads_global() {
                    self.read.extend(op.operands.first().copied());
                }
            }
        }
        Ok(())
    }

    /// Read after write and write after read within one program: the elements a program
    /// stores may be held by other threads than those that read them (another layout, or
    /// a layout whose copies of an element live in several threads), so a read
    /// (`tile.load`, `tile.gather`, `tile.extract`) of a tensor stored to since the last
    /// barrier, and a write (`tile.store`, `tile.atomic_add`) of a tensor read since
    /// then, come after a CTA barrier (`bar.sync`, which also orders the CTA's memory
    /// accesses). A loop's body counts its own stores as written and its own reads as
    /// read at its top (the next iteration follows them); a branch whose ops read or
    /// write such a tensor gets the barrier before it (the condition is a scalar, the
    /// same in every thread). The scheduler's thread reads what it wrote itself.
    fn order_accesses(&mut self, op: &Operation) {
        let looped = matches!(op.kind, OpKind::For | OpKind::While);
        if self.scheduler || (self.written.is_empty() && self.read.is_empty() && !looped) {
            return;
        }
        let mut reads = vec![];
        let mut writes = vec![];
        op.walk(&mut |o| {
            if o.kind.reads_global() {
                reads.extend(o.operands.first().copied());
            }
            if matches!(o.kind, OpKind::Store | OpKind::AtomicAdd) {
                writes.extend(o.operands.first().copied());
            }
        });
        if looped {
            self.written.extend(writes);
            self.read.extend(reads);
            return;
        }
        let after_write = reads.iter().any(|t| self.written.contains(t));
        let after_read = writes.iter().any(|t| self.read.contains(t));
        if after_write || after_read {
            self.w.barrier();
            self.written.clear();
            self.read.clear();
        }
    }

    pub(super) fn def(&mut self, op: &Operation, lv: Lv<'c, 'm>) {
        if let Some(&r) = op.results.first() {
            self.vals.insert(r, lv);
        }
    }

    pub(super) fn lower_op(&mut self, op: &Operation) -> R<()> {
        use OpKind as K;
        let result_scalar = |m: &TileModule| {
            op.results
                .first()
                .and_then(|&r| m.ty(r).elem())
                .unwrap_or(ScalarType::Index)
        };
        match op.kind {
            K::ProgramId | K::NumPrograms | K::CtaId | K::NumCtas => {
                let d = ["x", "y", "z"][op.int_attr("dim").unwrap_or(0).clamp(0, 2) as usize];
                let reg = if matches!(op.kind, K::ProgramId | K::CtaId) {
                    "ctaid"
                } else {
                    "nctaid"
                };
                let v = self.w.sreg(&format!("{reg}.{d}"));
                let t = result_scalar(self.m);
                let v = self.zext(v, t);
                self.def(op, Lv::Scalar(v));
            }
            K::Constant => {
                let t = result_scalar(self.m);
                let v = match op.attr("value") {
                    Some(TileAttr::Float(x)) if t.is_float() => self.w.float(*x, t),
                    Some(TileAttr::Int(i)) if t.is_float() => self.w.float(*i as f64, t),
                    Some(TileAttr::Int(i)) => self.w.int(*i, t),
                    Some(TileAttr::Bool(b)) => self.w.int(i64::from(*b), t),
                    _ => return err(op, "'tile.constant' has no lowerable 'value'"),
                };
                self.def(op, Lv::Scalar(v));
            }
            K::Dim => {
                let t = self.tensor(op, op.operands[0])?;
                let d = op.int_attr("dim").unwrap_or(0) as usize;
                let Some(&s) = t.sizes.get(d) else {
                    return err(op, "'tile.dim' of a dimension the tensor lacks");
                };
                let v = self.w.int_cast(s, result_scalar(self.m));
                self.def(op, Lv::Scalar(v));
            }
            K::AddI
            | K::SubI
            | K::MulI
            | K::DivI
            | K::RemI
            | K::CeilDiv
            | K::MinI
            | K::MaxI
            | K::CmpI => {
                let lv = match (self.get(op, op.operands[0])?, self.get(op, op.operands[1])?) {
                    (Lv::Scalar(a), Lv::Scalar(b)) => Lv::Scalar(self.int_op(op, a, b)?),
                    (Lv::Tile(a), Lv::Tile(b)) => {
                        let mut regs = Vec::with_capacity(a.regs.len());
                        let mut elem = a.elem;
                        for (&x, &y) in a.regs.iter().zip(&b.regs) {
                            let r =
                                self.int_op(op, V { v: x, t: a.elem }, V { v: y, t: b.elem })?;
                            elem = r.t;
                            regs.push(r.v);
                        }
                        Lv::Tile(Tile { regs, elem, ..a })
                    }
                    _ => return err(op, "integer operands must be two scalars or two tiles"),
                };
                self.def(op, lv);
            }
            K::Iota => {
                let (shape, elem, layout) = self.result_layout(op, 0)?;
                let d = op.int_attr("dim").unwrap_or(0) as usize;
                let mut regs = Vec::with_capacity(layout.num_registers() as usize);
                for r in 0..layout.num_registers() {
                    let c = self.coord(&layout, r)[d];
                    regs.push(self.w.int_cast(c, elem).v);
                }
                self.def(
                    op,
                    Lv::Tile(Tile {
                        regs,
                        elem,
                        shape,
                        layout,
                    }),
                );
            }
            K::Select => self.lower_select(op)?,
            K::Convert => self.lower_convert(op)?,
            K::Load => self.lower_load(op)?,
            K::Gather => self.lower_gather(op)?,
            K::Extract => {
                let t = self.tensor(op, op.operands[0])?;
                let idx = self.offsets(op, 1, t.sizes.len())?;
                let v = self
                    .w
                    .load_element(t.ptr, &t.sizes, &t.strides, &idx, t.elem);
                self.def(op, Lv::Scalar(v));
            }
            K::Store | K::AtomicAdd => self.lower_store(op)?,
            K::WaitFlag | K::ReleaseFlag | K::ArriveFlag => self.lower_flag(op)?,
            K::Add | K::Sub | K::Mul | K::Div | K::Max | K::Min => self.lower_elementwise(op)?,
            K::Neg | K::Abs | K::Exp | K::Exp2 | K::Sqrt | K::Rsqrt | K::Relu | K::Tanh => {
                self.lower_elementwise(op)?
            }
            K::Transpose | K::Reshape => {
                let t = self.tile(op, op.operands[0])?;
                let (shape, elem, layout) = self.result_layout(op, 0)?;
                self.def(
                    op,
                    Lv::Tile(Tile {
                        regs: t.regs,
                        elem,
                        shape,
                        layout,
                    }),
                );
            }
            K::Splat | K::Zeros => {
                let (shape, elem, layout) = self.result_layout(op, 0)?;
                let x = if op.kind == K::Splat {
                    self.scalar(op, op.operands[0])?
                } else if elem.is_float() {
                    self.w.float(0.0, elem)
                } else {
                    self.w.int(0, elem)
                };
                let regs = vec![x.v; layout.num_registers() as usize];
                self.def(
                    op,
                    Lv::Tile(Tile {
                        regs,
                        elem,
                        shape,
                        layout,
                    }),
                );
            }
            K::Broadcast | K::ConvertLayout => self.lower_remap(op)?,
            K::ExtractSlice => self.lower_extract_slice(op)?,
            K::Reduce => self.lower_reduce(op)?,
            K::Dot => self.lower_dot(op)?,
            K::For => self.lower_for(op)?,
            K::While => self.lower_while(op)?,
            K::If => self.lower_if(op)?,
            K::SmemAlloc if op.int_attr("swizzle").unwrap_or(0) == 0 => {
                self.lower_raw_smem_alloc(op)?;
            }
            K::SmemAlloc => self.lower_smem_alloc(op)?,
            K::MbarrierArrive => self.lower_arrive(op)?,
            K::ClcTryCancel => self.lower_try_cancel(op)?,
            K::ClcQuery => self.lower_clc_query(op)?,
            K::ClusterCtaRank | K::ClusterCtaId | K::ClusterId | K::NumClusters => {
                self.lower_cluster_cta_rank(op)?
            }
            K::SmemStore => self.lower_smem_store(op)?,
            K::SmemLoad => self.lower_smem_load(op)?,
            K::CpAsync => self.lower_cp_async(op)?,
            K::CpAsyncCommitGroup => self.w.cp_async_commit_group(),
            K::CpAsyncWaitGroup => self
                .w
                .cp_async_wait_group(op.int_attr("pending").unwrap_or(0)),
            K::Mma => self.lower_wgmma(op)?,
            K::WaitGroup => self.lower_wait_group(op)?,
            K::WgmmaFence => self.w.wgmma_fence(),
            K::CommitGroup => self.w.wgmma_commit_group(),
            K::FenceProxyAsync => self.w.fence_proxy_async(),
            K::MbarrierAlloc => self.lower_mbarrier_alloc(op)?,
            K::MbarrierExpectTx => self.lower_expect_tx(op)?,
            K::MbarrierWait => self.lower_mbarrier_wait(op)?,
            K::TmaLoad => self.lower_tma_load(op)?,
            K::Barrier => self.w.barrier(),
            K::NamedBarrier => self.lower_named_barrier(op)?,
            K::WarpSpecialize => self.lower_warp_specialize(op)?,
            K::Yield | K::Return => {}
            k => {
                return err(
                    op,
                    format!(
                        "'{}' is not lowered in a kernel with a plain launch",
                        k.name()
                    ),
                )
            }
        }
        Ok(())
    }

    /// A scalar integer op (`tile.addi` ... `tile.cmpi`) on one value pair.
    fn int_op(&mut self, op: &Operation, a: V<'c, 'm>, b: V<'c, 'm>) -> R<V<'c, 'm>> {
        let pred = cmpi_predicate(op)?;
        Ok(int_binary(&mut self.w, op.kind, pred, a, b))
    }

    /// An unsigned i32 (a special register) as `t`.
    fn zext(&mut self, v: V<'c, 'm>, t: ScalarType) -> V<'c, 'm> {
        if t == ScalarType::I32 {
            return v;
        }
        let ty = self.w.ty(t);
        V {
            v: self.w.op1("llvm.zext", &[v.v], ty, &[]),
            t,
        }
    }

    fn lower_select(&mut self, op: &Operation) -> R<()> {
        let c = self.get(op, op.operands[0])?;
        let a = self.get(op, op.operands[1])?;
        let b = self.get(op, op.operands[2])?;
        let lv = match (c, a, b) {
            (Lv::Scalar(c), Lv::Scalar(a), Lv::Scalar(b)) => Lv::Scalar(self.w.select(c, a, b)),
            (c, Lv::Tile(a), Lv::Tile(b)) => {
                let mut regs = vec![];
                for r in 0..a.regs.len() {
                    let cr = match &c {
                        Lv::Scalar(s) => *s,
                        Lv::Tile(t) => V {
                            v: t.regs[r],
                            t: ScalarType::I1,
                        },
                        _ => return err(op, "a tensor is not a condition"),
                    };
                    let x = V {
                        v: a.regs[r],
                        t: a.elem,
                    };
                    let y = V {
                        v: b.regs[r],
                        t: b.elem,
                    };
                    regs.push(self.w.select(cr, x, y).v);
                }
                Lv::Tile(Tile { regs, ..a })
            }
            _ => {
                return err(
                    op,
                    "'tile.select' operands must be two scalars or two tiles",
                )
            }
        };
        self.def(op, lv);
        Ok(())
    }
}

/// Lowers kernel `k` (laid out by `tile-assign-layouts`): with `trial`, builds its MLIR
/// module once, to report what the lowering cannot take; describes its launch. Without
/// `trial` the manifest's shared memory is 0, to be raised to what the build lays out.
///
/// # Errors
/// A located diagnostic for what the lowering cannot take, and for kernels whose
/// parameters overflow the PTX parameter space.
pub(super) fn lower_kernel(
    m: &TileModule,
    k: &Operation,
    trial: bool,
) -> R<(Manifest, (u32, u32))> {
    let (name, target, num_warps) = launch_of(k)?;
    let body = &k.regions[0];
    let maps = tensor_maps(m, k)?;
    let mut params = vec![];
    for &a in &body.args {
        let an = m.name(a).unwrap_or("arg").to_string();
        match m.ty(a) {
            TileType::Tensor { rank, elem } if maps.contains_key(&a) => {
                params.push(Param::TensorMap {
                    name: an,
                    dtype: super::dtype_of(*elem),
                    rank: *rank,
                    box_: maps[&a].clone(),
                    swizzle: crate::manifest::Swizzle::B128,
                    fill: crate::manifest::Fill::Zero,
                    interleave: crate::manifest::Interleave::None,
                    l2_promotion: crate::manifest::L2Promotion::B256,
                })
            }
            TileType::Tensor { rank, elem } => params.push(Param::TensorPointer {
                name: an,
                dtype: super::dtype_of(*elem),
                rank: *rank,
            }),
            TileType::Scalar(s) => params.push(Param::Scalar {
                name: an,
                dtype: super::scalar_dtype(*s),
            }),
            t => {
                return err(
                    k,
                    format!("kernel argument '%{an}' of type {t} is not a parameter"),
                )
            }
        }
    }
    let ptx_version = super::param_space(k, &params, target.min_ptx_version())?;
    let cluster_size: i64 = super::cluster_of(k)?.iter().product();
    let threads = 32 * (num_warps + super::specialize::producer_warps(k, num_warps, cluster_size)?);
    let smem_bytes = if trial {
        crate::mlir_driver::with_builder_context(|ctx| {
            build_module(ctx, m, k, &name, num_warps, target).map(|(_, bytes)| bytes)
        })?
    } else {
        0
    };
    let dims = super::grid_of(k);
    let (maj, min) = ptx_version;
    let mut manifest = Manifest::new(
        name.clone(),
        target.name().into(),
        format!("{maj}.{min}"),
        [threads as u32, 1, 1],
        smem_bytes,
        dims,
        params,
    );
    manifest.persistent = super::persistent_of(k);
    manifest.cluster = super::cluster_of(k)?.map(|c| c as u32);
    manifest.atomic_outputs = super::atomic_outputs(m, k);
    Ok((manifest, ptx_version))
}

/// Builds the MLIR module of kernel `k` (laid out by `tile-assign-layouts`) in `ctx`; also
/// returns the dynamic shared memory it uses, in bytes.
///
/// # Errors
/// As [`lower_kernel`].
pub(super) fn build<'c>(ctx: &'c Context, m: &TileModule, k: &Operation) -> R<(Module<'c>, u64)> {
    let (name, target, num_warps) = launch_of(k)?;
    build_module(ctx, m, k, &name, num_warps, target)
}

/// The kernel's name, its target and its warps per CTA (the attributes
/// `tile-assign-layouts` sets).
///
/// # Errors
/// A kernel without a known `target`.
fn launch_of(k: &Operation) -> R<(String, Target, u64)> {
    let name = k.symbol.clone().unwrap_or_default();
    let Some(target) = k.str_attr("target").and_then(Target::from_name) else {
        return err(k, "kernel has no 'target' (run 'tile-assign-layouts')");
    };
    let num_warps = k.int_attr("num_warps").unwrap_or(4).max(1) as u64;
    Ok((name, target, num_warps))
}

/// Builds the module (`gpu.container_module` → `gpu.module` → `@dynamic_smem` + the
/// `llvm.func`); also returns the dynamic shared memory bytes.
fn build_module<'c>(
    ctx: &'c Context,
    m: &TileModule,
    k: &Operation,
    name: &str,
    num_warps: u64,
    target: Target,
) -> R<(Module<'c>, u64)> {
    let loc = Location::unknown(ctx);
    let mut module = Module::new(loc);
    module
        .as_operation_mut()
        .set_attribute("gpu.container_module", Attribute::unit(ctx));
    let ident = |s: &str| Identifier::new(ctx, s);
    let fname = super::sanitize(name);
    let gpu_region = Region::new();
    gpu_region.append_block(Block::new(&[]));
    let gpu_module = OperationBuilder::new("gpu.module", loc)
        .add_attributes(&[(
            ident("sym_name"),
            StringAttribute::new(ctx, &format!("{fname}_module")).into(),
        )])
        .add_regions([gpu_region])
        .build()
        .map_err(|e| Diagnostic::error(k.loc.clone(), format!("internal error: {e}")))?;
    let body = module.body();
    let gm = body.append_operation(gpu_module);
    let gm_block = gm
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or_else(|| Diagnostic::error(k.loc.clone(), "internal error: gpu.module body"))?;

    let i8t: Type = melior::ir::r#type::IntegerType::new(ctx, 8).into();
    // wgmma's 128-byte swizzle is of address bits: its buffers need 1024-byte alignment.
    let mut smem_align = 16;
    k.walk(&mut |o| {
        if o.kind == OpKind::SmemAlloc {
            smem_align = 1024;
        }
    });
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
            (
                ident("addr_space"),
                IntegerAttribute::new(melior::ir::r#type::IntegerType::new(ctx, 32).into(), 3)
                    .into(),
            ),
            (
                ident("alignment"),
                IntegerAttribute::new(
                    melior::ir::r#type::IntegerType::new(ctx, 64).into(),
                    smem_align,
                )
                .into(),
            ),
        ])
        .add_regions([Region::new()])
        .build()
        .map_err(|e| Diagnostic::error(k.loc.clone(), format!("internal error: {e}")))?;
    gm_block.append_operation(smem_global);

    // Parameter types: a tensor is pointer, sizes, strides.
    let w0 = Writer {
        ctx,
        loc,
        region: gm
            .region(0)
            .map_err(|e| Diagnostic::error(k.loc.clone(), e.to_string()))?,
        block: gm_block,
        error: None,
        pending: vec![],
        contract: None,
        cta_threads: None,
    };
    let kbody = &k.regions[0];
    let maps = tensor_maps(m, k)?;
    let mut ptypes = vec![];
    let mut arg_attrs = vec![];
    for &a in &kbody.args {
        match m.ty(a) {
            TileType::Tensor { .. } if maps.contains_key(&a) => {
                ptypes.push(w0.ptr_ty(0));
                arg_attrs.push(
                    "{llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, \
                     nvvm.grid_constant}",
                );
            }
            TileType::Tensor { rank, .. } => {
                ptypes.push(w0.ptr_ty(1));
                for _ in 0..2 * rank {
                    ptypes.push(w0.ty(ScalarType::I64));
                }
                arg_attrs.extend(std::iter::repeat_n("{}", 1 + 2 * *rank as usize));
            }
            TileType::Scalar(s) => {
                ptypes.push(w0.ty(*s));
                arg_attrs.push("{}");
            }
            _ => {}
        }
    }
    let arg_attrs = Attribute::parse(ctx, &format!("[{}]", arg_attrs.join(", ")))
        .ok_or_else(|| Diagnostic::error(k.loc.clone(), "internal error: argument attributes"))?;
    let fty = llvm::r#type::function(llvm::r#type::void(ctx), &ptypes, false);
    let region = Region::new();
    let args: Vec<(Type, Location)> = ptypes.iter().map(|&t| (t, loc)).collect();
    region.append_block(Block::new(&args));
    let cluster = super::cluster_of(k)?;
    let cluster_size: i64 = cluster.iter().product();
    let producer = super::specialize::producer_warps(k, num_warps, cluster_size)?;
    let threads = 32 * (num_warps + producer) as i32;
    // Register budget: `.maxnreg` at the even share of `ctas_per_sm` CTAs, so ptxas spends
    // what the code needs; with a producer warpgroup that moves registers (`setmaxnreg`),
    // `.minnctapersm ctas_per_sm` instead, which starts every thread at that share and lets
    // the code after `setmaxnreg.inc` use the consumers' count (ptxas caps the whole kernel
    // at `.maxnreg`).
    let ctas = super::ctas_per_sm(k);
    let resident = threads as u64 * ctas;
    if resident > target.max_threads_per_sm() {
        return Err(Diagnostic::error(
            k.loc.clone(),
            format!(
                "'ctas_per_sm' = {ctas} CTAs of {threads} threads would be {resident} threads \
                 on one SM; {target} holds at most {} (at most {} such CTAs)",
                target.max_threads_per_sm(),
                target.max_threads_per_sm() / threads as u64
            ),
        ));
    }
    let i32t: Type = melior::ir::r#type::IntegerType::new(ctx, 32).into();
    let budget = if producer > 0 && target.setmaxnreg_split(num_warps / 4, ctas).is_some() {
        (
            ident("nvvm.minctasm"),
            IntegerAttribute::new(i32t, ctas as i64).into(),
        )
    } else {
        (
            ident("nvvm.maxnreg"),
            IntegerAttribute::new(i32t, target.register_cap(threads as u64 * ctas) as i64).into(),
        )
    };
    let cluster_dim = (cluster_size > 1).then(|| {
        (
            ident("nvvm.cluster_dim"),
            DenseI32ArrayAttribute::new(ctx, &cluster.map(|c| c as i32)).into(),
        )
    });
    let func = OperationBuilder::new("llvm.func", loc)
        .add_attributes(&cluster_dim.into_iter().collect::<Vec<_>>())
        .add_attributes(&super::denormal_attrs(ctx, k))
        .add_attributes(&[
            (ident("sym_name"), StringAttribute::new(ctx, &fname).into()),
            (ident("function_type"), TypeAttribute::new(fty).into()),
            (ident("arg_attrs"), arg_attrs),
            (ident("gpu.kernel"), Attribute::unit(ctx)),
            (ident("nvvm.kernel"), Attribute::unit(ctx)),
            (
                ident("nvvm.maxntid"),
                DenseI32ArrayAttribute::new(ctx, &[threads, 1, 1]).into(),
            ),
            budget,
        ])
        .add_regions([region])
        .build()
        .map_err(|e| Diagnostic::error(k.loc.clone(), format!("internal error: {e}")))?;
    let f = gm_block.append_operation(func);
    let fregion = f
        .region(0)
        .map_err(|e| Diagnostic::error(k.loc.clone(), e.to_string()))?;
    let entry = fregion
        .first_block()
        .ok_or_else(|| Diagnostic::error(k.loc.clone(), "internal error: function body"))?;

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
    // Parameters.
    let mut vals = HashMap::new();
    let mut i = 0;
    let arg = |i: usize| -> Value {
        entry
            .argument(i)
            .map(Into::into)
            .expect("declared argument")
    };
    for &a in &kbody.args {
        match m.ty(a) {
            TileType::Tensor { .. } if maps.contains_key(&a) => {
                vals.insert(a, Lv::TensorMap(arg(i)));
                i += 1;
            }
            TileType::Tensor { rank, elem } => {
                let ptr = arg(i);
                let r = *rank as usize;
                let sv = |j: usize| V {
                    v: arg(j),
                    t: ScalarType::I64,
                };
                let sizes = (0..r).map(|d| sv(i + 1 + d)).collect();
                let strides = (0..r).map(|d| sv(i + 1 + r + d)).collect();
                vals.insert(
                    a,
                    Lv::Tensor(Tensor {
                        ptr,
                        sizes,
                        strides,
                        elem: *elem,
                    }),
                );
                i += 1 + 2 * r;
            }
            TileType::Scalar(s) => {
                vals.insert(a, Lv::Scalar(V { v: arg(i), t: *s }));
                i += 1;
            }
            _ => {}
        }
    }
    let tid = w.sreg("tid.x");
    let c31 = w.i32(31);
    let lane = w.bin("and", tid, c31);
    let c5 = w.i32(5);
    let warp = w.bin("lshr", tid, c5);
    // The prologue ends with a branch to the body's first block, written last.
    let first = w.new_block(&[]);
    w.block = first;
    let mut lw = Lowerer {
        w,
        m,
        vals,
        prologue: entry,
        lane,
        warp,
        target,
        thread_coords: HashMap::new(),
        smem_bytes: 0,
        loop_depth: 0,
        loop_carried: 0,
        num_warps,
        ctas_per_sm: super::ctas_per_sm(k),
        cluster_visible: super::clc::cluster_barriers(k, cluster_size)?,
        scheduler: false,
        flag_slot: None,
        plan: SmemPlan::new(m, &kbody.ops),
        placed: vec![],
        cur_op: 0,
        wgmma_only: super::wgmma::wgmma_only(k),
        written: std::collections::HashSet::new(),
        read: std::collections::HashSet::new(),
    };
    lw.lower_block(&kbody.ops)?;
    if cluster_size > 1 {
        // No CTA exits while a peer may still write into its shared memory.
        lw.w.cluster_barrier(false);
    }
    let ret = llvm::r#return(None, loc);
    lw.w.push(Ok(ret));
    lw.w.block = entry;
    lw.w.br(&first, &[]);
    lw.w.finish(&k.loc)?;
    let smem = lw.smem_bytes;
    drop(lw);
    drop(w0);
    Ok((module, smem))
}

/// The tensors that `tile.tma_load` copies from, each with its TMA box (outermost first):
/// they are passed as tensor maps.
///
/// # Errors
/// A tensor copied with two boxes, one that is not a kernel argument, or one that another
/// op also reads (it has no pointer), located at the op.
fn tensor_maps(m: &TileModule, k: &Operation) -> R<HashMap<TileValue, Vec<u64>>> {
    let mut maps: HashMap<TileValue, Vec<u64>> = HashMap::new();
    let mut failed = None;
    k.walk(&mut |o| {
        if o.kind != OpKind::TmaLoad || failed.is_some() {
            return;
        }
        let (Some(&t), Some(&ring)) = (o.operands.first(), o.operands.get(1)) else {
            return;
        };
        let (Some(TileType::Tensor { rank, .. }), Some(TileType::Smem { shape, elem, .. })) =
            (m.try_ty(t), m.try_ty(ring))
        else {
            return;
        };
        if shape.len() != 2 || !k.regions[0].args.contains(&t) {
            failed = Some(Diagnostic::error(
                o.loc.clone(),
                "'tile.tma_load' in a kernel with a plain launch copies 2-D stages from a \
                 kernel argument",
            ));
            return;
        }
        let b = super::tma::tma_box(*rank, [shape[0], shape[1]], *elem);
        if maps.get(&t).is_some_and(|x| *x != b) {
            failed = Some(Diagnostic::error(
                o.loc.clone(),
                "every 'tile.tma_load' of a tensor must copy the same box (one tensor map per \
                 tensor)",
            ));
        }
        maps.insert(t, b);
    });
    if let Some(d) = failed {
        return Err(d);
    }
    k.walk(&mut |o| {
        if o.kind != OpKind::TmaLoad && failed.is_none() {
            if let Some(t) = o.operands.iter().find(|v| maps.contains_key(v)) {
                failed = Some(Diagnostic::error(
                    o.loc.clone(),
                    format!(
                        "'{}' reads '%{}', which 'tile.tma_load' copies and which is therefore \
                         passed as a tensor map, not a pointer",
                        o.kind.name(),
                        m.name(*t).unwrap_or("?")
                    ),
                ));
            }
        }
    });
    match failed {
        Some(d) => Err(d),
        None => Ok(maps),
    }
}

/// The predicate of a `tile.cmpi` (`None` for other ops).
///
/// # Errors
/// A predicate with no `llvm.icmp` form.
pub(crate) fn cmpi_predicate(op: &Operation) -> R<Option<ICmp>> {
    if op.kind != OpKind::CmpI {
        return Ok(None);
    }
    let name = op.str_attr("predicate").unwrap_or("");
    match ICmp::from_name(name) {
        Some(p) => Ok(Some(p)),
        None => err(op, format!("'tile.cmpi' predicate '{name}' is not lowered")),
    }
}

/// An integer op (`tile.addi` ... `tile.maxi`, or `tile.cmpi` with `pred`) on one value
/// pair, wrapping as the interpreter does. An `i1` is 0 or 1 there (true is 1), where
/// LLVM's signed `i1` reads true as -1: on `i1` the signed ops and predicates become their
/// unsigned forms (`tile.mini` is then AND, `tile.maxi` OR), which agree with the
/// interpreter.
pub(crate) fn int_binary<'c: 'm, 'm>(
    w: &mut Writer<'c, 'm>,
    kind: OpKind,
    pred: Option<ICmp>,
    a: V<'c, 'm>,
    b: V<'c, 'm>,
) -> V<'c, 'm> {
    use OpKind as K;
    let bit = a.t == ScalarType::I1;
    let (div, rem) = if bit {
        ("udiv", "urem")
    } else {
        ("sdiv", "srem")
    };
    let (lt, gt) = if bit {
        (ICmp::Ult, ICmp::Ugt)
    } else {
        (ICmp::Slt, ICmp::Sgt)
    };
    match kind {
        K::AddI => w.bin("add", a, b),
        K::SubI => w.bin("sub", a, b),
        K::MulI => w.bin("mul", a, b),
        K::DivI => w.bin(div, a, b),
        K::RemI => w.bin(rem, a, b),
        K::CeilDiv => {
            let s = w.bin("add", a, b);
            let s = w.add_const(s, -1);
            w.bin(div, s, b)
        }
        K::MinI => {
            let c = w.icmp(lt, a, b);
            w.select(c, a, b)
        }
        K::MaxI => {
            let c = w.icmp(gt, a, b);
            w.select(c, a, b)
        }
        _ => w.icmp(pred.unwrap_or(ICmp::Eq).on(a.t), a, b),
    }
}
