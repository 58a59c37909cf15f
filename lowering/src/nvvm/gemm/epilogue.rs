//! The epilogue: ops on the accumulator after the K loop (`convert`, elementwise math,
//! `broadcast`, `splat`, `load`, `store`, `atomic_add`), evaluated register by register
//! where they are stored. Each register's chain (load, add, activation, convert) lives only
//! until its store, so a fused epilogue needs no more registers than the accumulator.
//!
//! Register v of (warp w, lane l) of a wgmma m64nN fragment is row 16w + l/4 +
//! 8((v/2) mod 2), column 8(v/4) + 2(l mod 4) + (v mod 2). Epilogue loads are predicated
//! `ld.global` (inline asm: out-of-bounds elements read zero and touch no memory). A store
//! has a fast path (the whole tile inside, unit column stride, aligned: one `llvm.store` of
//! 2 elements per register pair) and a slow path (one predicated `st.global` per element in
//! inline asm, with its column, bounds check and address; out-of-bounds elements are
//! dropped). A masked store evaluates its mask per register too: on the fast path each
//! register pair is one predicated vector store where both bits are set, else predicated
//! element stores; on the slow path the bit joins each element's bounds check.

use super::{err, Gemm, Lv, PtrTensor, R};
use crate::nvvm::math;
use crate::nvvm::plain::{cmpi_predicate, int_binary};
use crate::nvvm::reduce::Partials;
use crate::nvvm::writer::{ICmp, V};
use melior::ir::Value;
use std::collections::HashMap;
use std::rc::Rc;
use tilec_dialect::{
    Diagnostic, LinearLayout, OpKind, Operation, ScalarType, Type as TileType, Value as TileValue,
};

/// An epilogue value, evaluated per register where it is stored.
#[derive(Debug)]
pub(crate) enum Lazy<'c, 'm> {
    /// The registers of a wgmma/mma.sync accumulator, extracted from its struct where the
    /// struct is defined ([`Writer::unpack`](super::super::writer::Writer::unpack)).
    Acc(Rc<Vec<Value<'c, 'm>>>),
    /// A scalar SSA value (the same in every register) and its element type.
    Scalar(V<'c, 'm>, ScalarType),
    /// A tile loaded from a pointer tensor at (r0, c0); size-1 dimensions broadcast.
    Load {
        t: PtrTensor<'c, 'm>,
        r0: V<'c, 'm>,
        c0: V<'c, 'm>,
        bcast_rows: bool,
        bcast_cols: bool,
    },
    /// A tile held in registers in `layout`, a slice of the accumulator's layout (a
    /// reduction's result); `slots` maps each register's coordinate to its index. Evaluated
    /// in a wider space (after a `tile.broadcast`), a register reads the slot of its
    /// coordinate with the sliced dimensions set to 0.
    Regs {
        regs: Vec<Value<'c, 'm>>,
        layout: LinearLayout,
        slots: HashMap<Vec<u64>, usize>,
        elem: ScalarType,
    },
    /// A reduction's result as its warps' partials in shared memory
    /// ([`Partials`](crate::nvvm::reduce::Partials)), combined where each register is read;
    /// `slots` as for `Regs`.
    Shared {
        p: Partials,
        slots: HashMap<Vec<u64>, usize>,
        elem: ScalarType,
    },
    /// An integer op of two values (`tile.addi` ... `tile.maxi`, `tile.cmpi` with `pred`),
    /// with the plain launch's lowering ([`int_binary`]); `to` is the result's type.
    Int {
        kind: OpKind,
        pred: Option<ICmp>,
        args: [Rc<Lazy<'c, 'm>>; 2],
        to: ScalarType,
    },
    /// `tile.select`: a condition (`i1`) and two values.
    Select([Rc<Lazy<'c, 'm>>; 3]),
    /// `tile.iota`: each element's coordinate along `dim`, as `elem`.
    Iota { dim: usize, elem: ScalarType },
    /// An elementwise op (or conversion) of other values, from element type `from` to `to`.
    Op {
        kind: OpKind,
        args: Vec<Rc<Lazy<'c, 'm>>>,
        from: ScalarType,
        to: ScalarType,
    },
}

impl Lazy<'_, '_> {
    /// The element type of the value.
    pub fn elem(&self) -> ScalarType {
        match self {
            Lazy::Acc(_) => ScalarType::F32,
            Lazy::Scalar(_, t) => *t,
            Lazy::Load { t, .. } => t.elem,
            Lazy::Regs { elem, .. } | Lazy::Shared { elem, .. } | Lazy::Iota { elem, .. } => *elem,
            Lazy::Int { to, .. } => *to,
            Lazy::Select(args) => args[1].elem(),
            Lazy::Op { to, .. } => *to,
        }
    }
}

/// Memo of one evaluation path: values already computed for the current register, and
/// (on straight-line paths) loads by coordinate, reusable across registers.
#[derive(Default)]
pub(crate) struct EvalMemo<'c, 'm> {
    pub reg: HashMap<*const Lazy<'c, 'm>, V<'c, 'm>>,
    pub loads: Option<HashMap<(*const Lazy<'c, 'm>, u64, u64), V<'c, 'm>>>,
    /// Read the accumulator's registers through opaque copies (the slow path of a store:
    /// see [`Gemm::store_frags`]).
    pub opaque_acc: bool,
}

/// The register of a reduced value (laid out as `layout`, a slice of `space`) that register
/// `v` of `space` reads: its coordinate with the sliced dimensions set to 0.
fn slot_in(
    op: &Operation,
    space: &LinearLayout,
    layout: &LinearLayout,
    slots: &HashMap<Vec<u64>, usize>,
    v: usize,
) -> R<usize> {
    let mut c = space.register_coord(v as u64);
    for (x, &n) in c.iter_mut().zip(&layout.dims) {
        if n == 1 {
            *x = 0;
        }
    }
    match slots.get(&c) {
        Some(&rho) => Ok(rho),
        None => err(
            op,
            "internal error: a reduced epilogue value is read in a layout it is not a slice of",
        ),
    }
}

/// The (rows, columns) of a tile of rank 2, or of higher rank with every leading dimension
/// 1 (a batch index): how the epilogue sees it.
pub(super) fn matrix_shape(t: &TileType) -> Option<Vec<u64>> {
    let shape = t.tile_shape()?;
    let r = shape.len();
    (r >= 2 && shape[..r - 2].iter().all(|&n| n == 1)).then(|| shape[r - 2..].to_vec())
}

fn m_elem(t: &TileType) -> ScalarType {
    t.elem().unwrap_or(ScalarType::F32)
}

/// The arguments of an epilogue store.
pub(super) struct StoreArgs<'c, 'm> {
    pub t: PtrTensor<'c, 'm>,
    pub r0: V<'c, 'm>,
    pub c0: V<'c, 'm>,
    pub val: Rc<Lazy<'c, 'm>>,
    /// The store's mask (an `i1` epilogue value): an element is written where it is true.
    pub mask: Option<Rc<Lazy<'c, 'm>>>,
    /// `tile.atomic_add` (`red.global.add`) instead of a store.
    pub atomic: bool,
}

impl<'c, 'm> Gemm<'c, 'm, '_> {
    /// The thread's base row and column (i64) of the fragment, relative to the tile origin.
    pub(super) fn frag_base(&mut self, op: &Operation) -> R<(V<'c, 'm>, V<'c, 'm>)> {
        let cwg = self.cwg.ok_or_else(|| {
            Diagnostic::error(op.loc.clone(), "epilogue op outside the consumers")
        })?;
        let c64 = self.i32(64);
        if let Some((wm, wn)) = self.warp_mn {
            let lane = self.lane;
            return Ok(self.mma_sync_frag_rc(wm, wn, lane));
        }
        let c16 = self.i32(16);
        let c2 = self.i32(2);
        let c3 = self.i32(3);
        let (w, lane) = (self.warp_in_wg, self.lane);
        let r0 = self.bin("mul", cwg, c64);
        let r1 = self.bin("mul", w, c16);
        let r2 = self.bin("lshr", lane, c2);
        let r3 = self.bin("add", r0, r1);
        let row = self.bin("add", r3, r2);
        let l3 = self.bin("and", lane, c3);
        let col = self.bin("mul", l3, c2);
        Ok((self.zext64(row), self.zext64(col)))
    }

    /// mma.sync fragment base of a lane of consumer warp (wm, wn) of the 2 × 4 grid of
    /// 64 × 64 warp tiles: row 64·wm + lane/4, column 64·wn + 2·(lane mod 4) (i64 values).
    fn mma_sync_frag_rc(
        &mut self,
        wm: V<'c, 'm>,
        wn: V<'c, 'm>,
        lane: V<'c, 'm>,
    ) -> (V<'c, 'm>, V<'c, 'm>) {
        let (c2, c3, c64) = (self.i32(2), self.i32(3), self.i32(64));
        let r0 = self.bin("mul", wm, c64);
        let g = self.bin("lshr", lane, c2);
        let row = self.bin("add", r0, g);
        let c0 = self.bin("mul", wn, c64);
        let t = self.bin("and", lane, c3);
        let t2 = self.bin("mul", t, c2);
        let col = self.bin("add", c0, t2);
        (self.zext64(row), self.zext64(col))
    }

    /// mma.sync: the thread's fragment base (row, col), as [`Self::frag_base`], from a fresh
    /// read of `%tid.x` (inline asm, so LLVM does not reuse the values computed before the
    /// k loop and they need no registers across it).
    fn fresh_frag_rc(&mut self) -> (V<'c, 'm>, V<'c, 'm>) {
        let i32t = self.w.ty(ScalarType::I32);
        let tid = self
            .w
            .inline_asm("mov.u32 $0, %tid.x;", "=r", &[], Some(i32t), true)
            .expect("a typed result");
        let tid = V {
            v: tid,
            t: ScalarType::I32,
        };
        let (c2, c3, c5, c31) = (self.i32(2), self.i32(3), self.i32(5), self.i32(31));
        let one = self.i32(1);
        let lane = self.bin("and", tid, c31);
        let w = self.bin("lshr", tid, c5);
        let cw = self.bin("sub", w, one);
        let wm = self.bin("lshr", cw, c2);
        let wn = self.bin("and", cw, c3);
        self.mma_sync_frag_rc(wm, wn, lane)
    }

    pub(super) fn lazy_of(&mut self, op: &Operation, v: TileValue) -> R<Rc<Lazy<'c, 'm>>> {
        match self.vals.get(&v) {
            Some(Lv::Lazy(l)) => Ok(l.clone()),
            Some(Lv::Acc(regs)) => Ok(Rc::new(Lazy::Acc(regs.clone()))),
            // A `tile.zeros` used by the epilogue: 0.0 in every register, in the tile's type.
            Some(Lv::Zeros) => {
                let elem = m_elem(self.m.ty(v));
                let zero = self.w.float(0.0, ScalarType::F32);
                let z = Rc::new(Lazy::Scalar(zero, ScalarType::F32));
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
            Some(Lv::Scalar(s)) => Ok(Rc::new(Lazy::Scalar(*s, m_elem(self.m.ty(v))))),
            _ => err(
                op,
                format!(
                    "'{}': operand is not an epilogue value of the accumulator's tile",
                    op.kind.name()
                ),
            ),
        }
    }

    /// The value of `node` in register `v` of `space` (the accumulator's layout or a slice
    /// of it: see [`Self::space_of`]).
    ///
    /// # Errors
    /// A located error (at `op`) when a reduced value is read in a space it is not a
    /// slice of.
    pub(super) fn eval(
        &mut self,
        op: &Operation,
        node: &Rc<Lazy<'c, 'm>>,
        space: &LinearLayout,
        v: usize,
        memo: &mut EvalMemo<'c, 'm>,
    ) -> R<V<'c, 'm>> {
        let key = Rc::as_ptr(node);
        if let Some(x) = memo.reg.get(&key) {
            return Ok(*x);
        }
        let r = match &**node {
            // Registers past the accumulator's are padding (an N tile that is not a power
            // of two): 0, replaced by a reduction's identity, never stored.
            Lazy::Acc(regs) => match regs.get(v) {
                Some(&x) if memo.opaque_acc => self.opaque(V {
                    v: x,
                    t: ScalarType::F32,
                }),
                Some(&x) => V {
                    v: x,
                    t: ScalarType::F32,
                },
                None => self.w.float(0.0, ScalarType::F32),
            },
            Lazy::Scalar(s, t) => V { v: s.v, t: *t },
            Lazy::Regs {
                regs,
                layout,
                slots,
                elem,
            } => {
                let rho = slot_in(op, space, layout, slots, v)?;
                V {
                    v: regs[rho],
                    t: *elem,
                }
            }
            Lazy::Shared { p, slots, elem } => {
                let rho = slot_in(op, space, &p.layout, slots, v)?;
                let x = p.read(self, rho as u64);
                self.w.fptrunc_to(x, *elem)
            }
            Lazy::Int {
                kind,
                pred,
                args,
                to,
            } => {
                let a = self.eval(op, &args[0], space, v, memo)?;
                let b = self.eval(op, &args[1], space, v, memo)?;
                let r = int_binary(&mut self.w, *kind, *pred, a, b);
                V { v: r.v, t: *to }
            }
            Lazy::Select(args) => {
                let c = self.eval(op, &args[0], space, v, memo)?;
                let a = self.eval(op, &args[1], space, v, memo)?;
                let b = self.eval(op, &args[2], space, v, memo)?;
                self.w.select(c, a, b)
            }
            Lazy::Iota { dim, elem } => {
                let base = self.space_base(space);
                let base = if *dim == 0 { base.0 } else { base.1 };
                let c = space.register_coord(v as u64)[*dim];
                let x = self.w.add_const(base, c as i64);
                self.w.int_cast(x, *elem)
            }
            Lazy::Load {
                t,
                r0,
                c0,
                bcast_rows,
                bcast_cols,
            } => {
                let c = space.register_coord(v as u64);
                let (dr, dc) = (c[0], c[1]);
                let lk = (
                    key,
                    if *bcast_rows { u64::MAX } else { dr },
                    if *bcast_cols { u64::MAX } else { dc },
                );
                if let Some(x) = memo.loads.as_ref().and_then(|m| m.get(&lk)) {
                    let x = *x;
                    memo.reg.insert(key, x);
                    return Ok(x);
                }
                let base = self.space_base(space);
                let x = self.eval_load(t, (*r0, *c0), base, (*bcast_rows, *bcast_cols), (dr, dc));
                if let Some(m) = memo.loads.as_mut() {
                    m.insert(lk, x);
                }
                x
            }
            Lazy::Op {
                kind,
                args,
                from,
                to,
            } => {
                let xs: Vec<V<'c, 'm>> = args
                    .iter()
                    .map(|a| self.eval(op, a, space, v, memo))
                    .collect::<R<_>>()?;
                let t = *to;
                let x = xs[0];
                if *kind == OpKind::Convert {
                    self.w.convert(V { v: x.v, t: *from }, t)
                } else {
                    // In f32, rounded to the result type once, as the interpreter computes
                    // (the sequences and their bounds: `super::math`).
                    let xs32: Vec<V<'c, 'm>> = xs.iter().map(|&a| self.w.fpext_f32(a)).collect();
                    let y = math::float_op(&mut self.w, *kind, &xs32);
                    self.w.fptrunc_to(y, t)
                }
            }
        };
        memo.reg.insert(key, r);
        Ok(r)
    }

    /// One element of an epilogue load at the tile origin (r0, c0): register offset
    /// (dr, dc) from the thread's base (fr, fc) in its space, or the load's origin along a
    /// broadcast dimension.
    fn eval_load(
        &mut self,
        t: &PtrTensor<'c, 'm>,
        (r0, c0): (V<'c, 'm>, V<'c, 'm>),
        (fr, fc): (V<'c, 'm>, V<'c, 'm>),
        (bcast_rows, bcast_cols): (bool, bool),
        (dr, dc): (u64, u64),
    ) -> V<'c, 'm> {
        let row = if bcast_rows {
            r0
        } else {
            let d = self.i64(dr as i64);
            let a = self.bin("add", r0, fr);
            self.bin("add", a, d)
        };
        let col = if bcast_cols {
            c0
        } else {
            let d = self.i64(dc as i64);
            let a = self.bin("add", c0, fc);
            self.bin("add", a, d)
        };
        let rok = self.w.icmp(ICmp::Ult, row, t.sizes[0]);
        let cok = self.w.icmp(ICmp::Ult, col, t.sizes[1]);
        let ok = self.w.and(rok, cok);
        let ok32 = self.w.zext(ok, ScalarType::I32);
        let ro = self.bin("mul", row, t.strides[0]);
        let co = self.bin("mul", col, t.strides[1]);
        let off = self.bin("add", ro, co);
        let eb = self.i64(t.elem.size_bytes() as i64);
        let boff = self.bin("mul", off, eb);
        let addr = self.bin("add", t.ptr, boff);
        // A predicated load: out-of-bounds elements read zero and touch no memory.
        self.w.predicated_load(addr, ok32, t.elem, false)
    }

    pub(super) fn lower_elementwise(&mut self, op: &Operation) -> R<()> {
        let rt = m_elem(self.m.ty(op.results[0]));
        // Math ops lower to sequences with a stated error bound (the table in
        // `super::math`): `tile.exp` and `tile.tanh` in f32 through the plain launch's
        // sequences, `tile.exp2` to `ex2.approx.f32` (2 ulp), `tile.sqrt` to `sqrt.rn.f32`
        // (correctly rounded), `tile.rsqrt` to `rcp.rn.f32` of `sqrt.rn.f32` (two
        // roundings). `tile.log` has none yet; LLVM's NVPTX back end has no lowering of its
        // own (a libcall it cannot make), so it is refused here, before MLIR is built.
        if op.kind == OpKind::Log {
            return err(
                op,
                "convert-tile-to-nvvm: 'tile.log' is not lowered yet (no sequence with a stated \
                 error bound); 'tile.exp', 'tile.exp2', 'tile.tanh', 'tile.sqrt' and \
                 'tile.rsqrt' are",
            );
        }
        if op.kind == OpKind::Broadcast || op.kind == OpKind::Splat {
            // Registers are indexed by the result's (row, col): broadcasting a [1, N] /
            // [M, 1] load or a scalar changes nothing per register.
            let l = self.lazy_of(op, op.operands[0])?;
            self.vals.insert(op.results[0], Lv::Lazy(l));
            return Ok(());
        }
        let args: Vec<Rc<Lazy<'c, 'm>>> = op
            .operands
            .iter()
            .map(|&v| self.lazy_of(op, v))
            .collect::<R<_>>()?;
        let from = args[0].elem();
        let node = Rc::new(Lazy::Op {
            kind: op.kind,
            args,
            from,
            to: rt,
        });
        // A scalar result is the same in every register: computed here, once, so that
        // scalar ops (index arithmetic, other scalars) can use it.
        let value = if matches!(self.m.ty(op.results[0]), TileType::Scalar(_)) {
            // A scalar reads no register: any space will do.
            let space = LinearLayout::blocked(&[1, 1], 4, 1);
            let x = self.eval(op, &node, &space, 0, &mut EvalMemo::default())?;
            Lv::Scalar(V { v: x.v, t: rt })
        } else {
            Lv::Lazy(node)
        };
        self.vals.insert(op.results[0], value);
        Ok(())
    }

    /// Whether `v` is an f32 tile of the accumulator's shape (a value that can live in
    /// accumulator registers).
    pub(super) fn is_acc_tile(&self, v: TileValue) -> bool {
        let shape = self.acc.as_ref().and_then(|a| a.shape.clone());
        matches!(self.m.ty(v), TileType::Tile { shape: s, elem: ScalarType::F32, .. }
            if Some(s) == shape.as_ref())
    }

    /// The registers of `node`, an f32 tile of the accumulator's shape, evaluated in the
    /// accumulator's layout: one value per accumulator register, in its order.
    ///
    /// # Errors
    /// As [`Self::eval`].
    pub(super) fn materialize(
        &mut self,
        op: &Operation,
        node: &Rc<Lazy<'c, 'm>>,
    ) -> R<Vec<Value<'c, 'm>>> {
        let (regs, shape) = match &self.acc {
            Some(a) => (a.regs, a.shape.clone().unwrap_or_default()),
            None => return err(op, "an accumulator tile before any MMA"),
        };
        let space = self.space_of(op, &shape)?;
        (0..regs)
            .map(|v| {
                let x = self.eval(op, node, &space, v, &mut EvalMemo::default())?;
                Ok(self.w.fpext_f32(x).v)
            })
            .collect()
    }

    /// `tile.addi` ... `tile.cmpi` on epilogue tiles (scalar operands broadcast).
    pub(super) fn lower_epilogue_int(&mut self, op: &Operation) -> R<()> {
        let pred = cmpi_predicate(op)?;
        let a = self.lazy_of(op, op.operands[0])?;
        let b = self.lazy_of(op, op.operands[1])?;
        let to = m_elem(self.m.ty(op.results[0]));
        let node = Lazy::Int {
            kind: op.kind,
            pred,
            args: [a, b],
            to,
        };
        self.vals.insert(op.results[0], Lv::Lazy(Rc::new(node)));
        Ok(())
    }

    /// `tile.select` on epilogue tiles (a scalar condition or values broadcast).
    pub(super) fn lower_epilogue_select(&mut self, op: &Operation) -> R<()> {
        let args = [
            self.lazy_of(op, op.operands[0])?,
            self.lazy_of(op, op.operands[1])?,
            self.lazy_of(op, op.operands[2])?,
        ];
        self.vals
            .insert(op.results[0], Lv::Lazy(Rc::new(Lazy::Select(args))));
        Ok(())
    }

    /// `tile.iota` in the epilogue: evaluated per register of its consumer's space.
    pub(super) fn lower_epilogue_iota(&mut self, op: &Operation) -> R<()> {
        let TileType::Tile { shape, elem, .. } = self.m.ty(op.results[0]).clone() else {
            return err(op, "'tile.iota' of a non-tile");
        };
        if self.frag_rc.is_none() {
            return err(
                op,
                "convert-tile-to-nvvm: a 'tile.iota' in a GEMM kernel is an epilogue tile, in \
                 the consumers after the MMA",
            );
        }
        self.space_of(op, &shape)?;
        let dim = op.int_attr("dim").unwrap_or(0) as usize;
        self.vals
            .insert(op.results[0], Lv::Lazy(Rc::new(Lazy::Iota { dim, elem })));
        Ok(())
    }

    pub(super) fn lower_epilogue_load(&mut self, op: &Operation) -> R<()> {
        if op.attr("padding").is_some() {
            return err(
                op,
                "'tile.load' with a 'padding' is not lowered in a GEMM epilogue yet (out of \
                 bounds reads zero there)",
            );
        }
        let Some(Lv::TensorPtr(t)) = self.vals.get(&op.operands[0]).cloned() else {
            return err(
                op,
                "convert-tile-to-nvvm: only pointer tensors are loaded in the epilogue",
            );
        };
        if self.frag_rc.is_none() {
            return err(
                op,
                "convert-tile-to-nvvm: a 'tile.load' in a GEMM kernel that is not an MMA \
                 operand must stand in the epilogue, after the K loop, where the consumer \
                 warpgroups run",
            );
        }
        let Some(shape) = matrix_shape(self.m.ty(op.results[0])) else {
            return err(
                op,
                "convert-tile-to-nvvm: epilogue loads are 2-D tiles (or tiles whose leading \
                 dimensions are 1)",
            );
        };
        if !matches!(t.elem, ScalarType::F32 | ScalarType::BF16 | ScalarType::F16) {
            return err(
                op,
                format!(
                    "convert-tile-to-nvvm: epilogue loads of {} are not lowered yet",
                    t.elem
                ),
            );
        }
        let (t, r0, c0) = self.matrix_of(op, t)?;
        let now = self.written.contains(&op.operands[0]);
        let t = self.epilogue_params(t, now);
        let elem = t.elem;
        let node = Rc::new(Lazy::Load {
            t,
            r0,
            c0,
            bcast_rows: shape[0] == 1,
            bcast_cols: shape[1] == 1,
        });
        if !now {
            self.vals.insert(op.results[0], Lv::Lazy(node));
            return Ok(());
        }
        // Another program may write the tensor between here and a later use (after a
        // `tile.release_flag` or `tile.arrive_flag`): read it here, into registers.
        let acc_shape = self.acc.as_ref().and_then(|a| a.shape.clone());
        if elem != ScalarType::F32 || acc_shape.as_ref() != Some(&shape) {
            return err(
                op,
                "convert-tile-to-nvvm: in a kernel with flag ops, a GEMM epilogue loads a \
                 tensor the kernel also writes only as an f32 tile of the accumulator's shape \
                 (it is read where it stands, into the accumulator's registers)",
            );
        }
        let regs = self.materialize(op, &node)?;
        self.vals
            .insert(op.results[0], Lv::Lazy(Rc::new(Lazy::Acc(Rc::new(regs)))));
        Ok(())
    }

    /// `tile.reshape` that adds or drops leading unit dimensions (a batch index): the same
    /// registers, seen as a tile of another rank.
    pub(super) fn lower_epilogue_reshape(&mut self, op: &Operation) -> R<()> {
        let (from, to) = (self.m.ty(op.operands[0]), self.m.ty(op.results[0]));
        match (matrix_shape(from), matrix_shape(to)) {
            (Some(a), Some(b)) if a == b => {}
            _ => {
                return err(
                    op,
                    format!(
                        "convert-tile-to-nvvm: epilogue tiles are 2-D, or 2-D with leading unit \
                         dimensions (a batch index), so a 'tile.reshape' after the MMA may only \
                         add or drop leading unit dimensions; found {from} -> {to}"
                    ),
                )
            }
        }
        let Some(v) = self.vals.get(&op.operands[0]).cloned() else {
            return err(op, "'tile.reshape': operand is not lowered");
        };
        self.vals.insert(op.results[0], v);
        Ok(())
    }

    /// `tile.transpose` of the accumulator, as tile-to-gpu writes it after the K loop of a
    /// swapped product (Cᵀ = Bᵀ · Aᵀ): the same registers, which every later epilogue op
    /// reads in the transposed space (the layout, the shape and the thread's base row and
    /// column swapped).
    ///
    /// # Errors
    /// A transpose of anything but the accumulator, or a second one.
    pub(super) fn lower_epilogue_transpose(&mut self, op: &Operation) -> R<()> {
        let regs = match self.vals.get(&op.operands[0]) {
            Some(Lv::Acc(regs)) => regs.clone(),
            _ => {
                return err(
                    op,
                    "convert-tile-to-nvvm: a 'tile.transpose' after the MMA transposes the \
                     accumulator itself (the registers of the K loop's result), once",
                )
            }
        };
        let Some(acc) = self.acc.as_mut().filter(|a| !a.transposed) else {
            return err(
                op,
                "convert-tile-to-nvvm: the accumulator is transposed once",
            );
        };
        acc.transposed = true;
        if let Some(s) = acc.shape.as_mut() {
            s.reverse();
        }
        if let Some((r, c)) = self.frag_rc {
            self.frag_rc = Some((c, r));
        }
        self.vals.insert(op.results[0], Lv::Acc(regs));
        Ok(())
    }

    /// The tensor of a `tile.load`/`tile.store` in the epilogue as the 2-D tensor of its
    /// last two dimensions, and the tile's (row, column) in it. A rank-r tensor is read at
    /// leading coordinates where the tile is 1 wide: its base moves by Σ coordᵢ · strideᵢ
    /// elements, and its row count is 0 when a leading coordinate is outside its dimension
    /// (the bounds checks then drop every element, as rank-r checks would).
    fn matrix_of(
        &mut self,
        op: &Operation,
        t: PtrTensor<'c, 'm>,
    ) -> R<(PtrTensor<'c, 'm>, V<'c, 'm>, V<'c, 'm>)> {
        let r = t.sizes.len();
        let coords = &op.operands[1..=r];
        let r0 = self.scalar(op, coords[r - 2])?;
        let c0 = self.scalar(op, coords[r - 1])?;
        if r == 2 {
            return Ok((t, r0, c0));
        }
        let eb = self.i64(t.elem.size_bytes() as i64);
        let mut ptr = t.ptr;
        let mut inside: Option<V<'c, 'm>> = None;
        for (d, &c) in coords[..r - 2].iter().enumerate() {
            let x = self.scalar(op, c)?;
            let o = self.bin("mul", x, t.strides[d]);
            let ob = self.bin("mul", o, eb);
            ptr = self.bin("add", ptr, ob);
            let ok = self.w.icmp(ICmp::Ult, x, t.sizes[d]);
            inside = Some(match inside {
                Some(p) => self.w.and(p, ok),
                None => ok,
            });
        }
        let zero = self.i64(0);
        let rows = self
            .w
            .select(inside.expect("rank > 2"), t.sizes[r - 2], zero);
        Ok((
            PtrTensor {
                ptr,
                sizes: vec![rows, t.sizes[r - 1]],
                strides: t.strides[r - 2..].to_vec(),
                elem: t.elem,
            },
            r0,
            c0,
        ))
    }

    /// mma.sync in a persistent tile loop: the epilogue's tensor parameters through opaque
    /// `mov`s, so that LLVM keeps what the epilogue derives from them (row pitch in bytes,
    /// bounds, the fast-path test) in the epilogue instead of hoisting it out of the tile
    /// loop, where it would stay live across the k loop beside the 128 accumulators.
    /// The same for a load read where it stands (`now`) inside a loop: its per-register
    /// addresses stay in the loop instead of being hoisted out of it, live beside the
    /// registers it loads into. Unchanged elsewhere (wgmma kernels, one tile per CTA).
    fn epilogue_params(&mut self, t: PtrTensor<'c, 'm>, now: bool) -> PtrTensor<'c, 'm> {
        if !((self.mma_sync || now) && self.loop_depth > 0) {
            return t;
        }
        let ptr = self.opaque(t.ptr);
        let sizes = t.sizes.iter().map(|&v| self.opaque(v)).collect();
        let strides = t.strides.iter().map(|&v| self.opaque(v)).collect();
        PtrTensor {
            ptr,
            sizes,
            strides,
            elem: t.elem,
        }
    }

    /// `tile.store` (`atomic` false) or `tile.atomic_add` (`atomic` true) of an epilogue
    /// value from the accumulator registers. The atomic form adds each register pair with
    /// one `red.global.add.v2.f32` (sm_90; 8-byte aligned pairs) on the fast path and each
    /// element with a predicated `red.global.add.f32` on the slow path.
    pub(super) fn lower_store(&mut self, op: &Operation, atomic: bool) -> R<()> {
        let Some(Lv::TensorPtr(t)) = self.vals.get(&op.operands[0]).cloned() else {
            return err(
                op,
                format!(
                    "convert-tile-to-nvvm: the epilogue {} a pointer tensor",
                    if atomic { "adds into" } else { "stores to" }
                ),
            );
        };
        if atomic && t.elem != ScalarType::F32 {
            return err(
                op,
                format!(
                    "convert-tile-to-nvvm: atomic adds into f32 tensors only, found {}",
                    t.elem
                ),
            );
        }
        let value = *op.operands.last().expect("verified store");
        let shape = matrix_shape(self.m.ty(value));
        let (Some(shape), Some(_)) = (shape, self.frag_rc) else {
            return err(
                op,
                "convert-tile-to-nvvm: epilogue stores are of 2-D tiles (or tiles whose leading \
                 dimensions are 1), by the consumers after the MMA",
            );
        };
        // The accumulator's tile, or a slice of it (a reduction's result) stored from its
        // own registers.
        let space = self.space_of(op, &shape)?;
        let sliced = self.acc.as_ref().and_then(|a| a.shape.as_ref()) != Some(&shape);
        let rank = t.sizes.len();
        let (t, r0, c0) = self.matrix_of(op, t)?;
        let val = self.lazy_of(op, value)?;
        let mask = match op.operands.len() == rank + 3 {
            true => Some(self.lazy_of(op, op.operands[rank + 1])?),
            false => None,
        };
        if val.elem() != t.elem {
            return err(op, "store element type differs from the tensor's");
        }
        let t = self.epilogue_params(t, false);
        let saved_rc = self.frag_rc;
        if self.mma_sync && self.loop_depth > 0 {
            self.frag_rc = Some(self.fresh_frag_rc());
        }
        let args = StoreArgs {
            t,
            r0,
            c0,
            val,
            mask,
            atomic,
        };
        let r = if sliced {
            self.store_space(op, args, &space)
        } else {
            self.store_frags(op, args)
        };
        self.frag_rc = saved_rc;
        r
    }

    /// The epilogue store proper (see [`Self::lower_store`]).
    fn store_frags(&mut self, op: &Operation, a: StoreArgs<'c, 'm>) -> R<()> {
        let StoreArgs {
            t,
            r0,
            c0,
            val,
            mask,
            atomic,
        } = a;
        let Some(shape) = matrix_shape(self.m.ty(*op.operands.last().expect("a store"))) else {
            return err(op, "store of a non-tile");
        };
        let (st_ty, reg) = match t.elem {
            ScalarType::F32 => ("f32", "f"),
            ScalarType::BF16 | ScalarType::F16 => ("b16", "h"),
            other => {
                return err(
                    op,
                    format!("convert-tile-to-nvvm: epilogue stores of {other} are not lowered yet"),
                )
            }
        };
        let (fr, fc) = self.frag_rc.expect("checked");
        let nregs = self.acc.as_ref().map_or(0, |a| a.regs);
        let space = self.acc_layout(op)?;
        let et = self.w.ty(t.elem);
        let eb = t.elem.size_bytes() as i64;
        let p1 = self.w.ptr_ty(1);
        let base = self.w.cast("llvm.inttoptr", t.ptr.v, p1);
        let row0 = self.bin("add", r0, fr);
        let col0 = self.bin("add", c0, fc);
        // Fast path: the whole tile inside, unit column stride, even row stride, aligned base.
        let bm = self.i64(shape[0] as i64);
        let bn = self.i64(shape[1] as i64);
        let re = self.bin("add", r0, bm);
        let ce = self.bin("add", c0, bn);
        let f1 = self.w.icmp(ICmp::Ule, re, t.sizes[0]);
        let f2 = self.w.icmp(ICmp::Ule, ce, t.sizes[1]);
        let one = self.i64(1);
        let f3 = self.w.icmp(ICmp::Eq, t.strides[1], one);
        let s0 = self.bin("and", t.strides[0], one);
        let z64 = self.i64(0);
        let f4 = self.w.icmp(ICmp::Eq, s0, z64);
        let amask = self.i64(2 * eb - 1);
        let pa = self.bin("and", t.ptr, amask);
        let f5 = self.w.icmp(ICmp::Eq, pa, z64);
        let g1 = self.w.and(f1, f2);
        let g2 = self.w.and(f3, f4);
        let g3 = self.w.and(g1, g2);
        let fast = self.w.and(g3, f5);
        let fb = self.w.block(&[]);
        let sb = self.w.block(&[]);
        let done = self.w.block(&[]);
        self.w.cond_br(fast, &fb, &[], &sb, &[]);
        self.w.place(fb);
        let ro = self.bin("mul", row0, t.strides[0]);
        let off0 = self.bin("add", ro, col0);
        let p0 = self.w.gep(base, off0, et, p1);
        let v2 = self.w.vector_ty(2, et);
        let u2 = self.w.undef(v2);
        let i0 = self.i32(0);
        let i1 = self.i32(1);
        let i64t = self.w.ty(ScalarType::I64);
        let mut rowptr: HashMap<u64, Value<'c, 'm>> = HashMap::new();
        let mut memo = EvalMemo {
            reg: HashMap::new(),
            loads: Some(HashMap::new()),
            opaque_acc: false,
        };
        for v in (0..nregs).step_by(2) {
            let c = space.register_coord(v as u64);
            let (dr, dc) = (c[0], c[1]);
            // A register pair is stored as one vector where the layout puts it in adjacent
            // columns (the wgmma and mma.sync accumulators); else element by element.
            let pair = space.register_coord(v as u64 + 1) == [dr, dc + 1];
            if !pair {
                for x in [v, v + 1] {
                    let c = space.register_coord(x as u64);
                    let (rc, cc) = (self.i64(c[0] as i64), self.i64(c[1] as i64));
                    let ro = self.bin("mul", t.strides[0], rc);
                    let o = self.bin("add", ro, cc);
                    let p = self.w.gep(p0, o, et, p1);
                    memo.reg.clear();
                    let y = self.eval(op, &val, &space, x, &mut memo)?;
                    if let Some(m) = &mask {
                        memo.reg.clear();
                        let keep = self.eval(op, m, &space, x, &mut memo)?;
                        let pa = self.w.cast("llvm.ptrtoint", p, i64t);
                        self.masked_store(atomic, t.elem, pa, &[keep], &[y]);
                    } else if atomic {
                        let pa = self.w.cast("llvm.ptrtoint", p, i64t);
                        self.w.inline_asm(
                            "red.global.add.f32 [$0], $1;",
                            "l,f",
                            &[pa, y.v],
                            None,
                            true,
                        );
                    } else {
                        self.w.store(y.v, p, eb as u64);
                    }
                }
                continue;
            }
            let pr = match rowptr.get(&dr) {
                Some(p) => *p,
                None => {
                    let p = if dr == 0 {
                        p0
                    } else {
                        let c = self.i64(dr as i64);
                        let o = self.bin("mul", t.strides[0], c);
                        self.w.gep(p0, o, et, p1)
                    };
                    rowptr.insert(dr, p);
                    p
                }
            };
            memo.reg.clear();
            let x0 = self.eval(op, &val, &space, v, &mut memo)?;
            memo.reg.clear();
            let x1 = self.eval(op, &val, &space, v + 1, &mut memo)?;
            if let Some(m) = &mask {
                memo.reg.clear();
                let k0 = self.eval(op, m, &space, v, &mut memo)?;
                memo.reg.clear();
                let k1 = self.eval(op, m, &space, v + 1, &mut memo)?;
                let p = self.w.gep_const(pr, dc as i64, et, p1);
                let pa = self.w.cast("llvm.ptrtoint", p, i64t);
                self.masked_store(atomic, t.elem, pa, &[k0, k1], &[x0, x1]);
                continue;
            }
            if atomic {
                let p = self.w.gep_const(pr, dc as i64, et, p1);
                let pa = self.w.cast("llvm.ptrtoint", p, i64t);
                // Inline asm: MLIR 22 has no NVVM op for the vector reduction, and an
                // `llvm.atomicrmw fadd` is one element, with a result.
                self.w.inline_asm(
                    "red.global.add.v2.f32 [$0], {$1, $2};",
                    "l,f,f",
                    &[pa, x0.v, x1.v],
                    None,
                    true,
                );
            } else {
                let vec = self.w.insert_element(u2, x0.v, i0);
                let vec = self.w.insert_element(vec, x1.v, i1);
                let p = self.w.gep_const(pr, dc as i64, et, p1);
                self.w.store(vec, p, 2 * eb as u64);
            }
        }
        self.w.br(&done, &[]);
        // Slow path (ragged or strided): every element checked and stored by one predicated
        // `st.global`, all in one block. LLVM computes the per-row parts (2 rows per thread
        // for wgmma); each element's column, bounds check and address are in its store's
        // asm, so LLVM sees 128 opaque stores instead of 128 guarded blocks of address
        // arithmetic (which cost its NVPTX back end ~80 ms on a 2-vCPU x86 host, mostly in
        // straight-line strength reduction; docs/performance.md, 2026-11-29 session 2).
        self.w.place(sb);
        let ebc = self.i64(eb);
        let s1b = self.bin("mul", t.strides[1], ebc);
        let i16t = self.w.int_ty(16);
        let mut rows: HashMap<u64, (V<'c, 'm>, V<'c, 'm>)> = HashMap::new();
        // The accumulator through opaque copies: the two paths would otherwise compute the same
        // values from the same registers, and LLVM's MachineCSE hoists such common code of
        // both successors above the branch, where a chain that keeps the accumulator live
        // (a select between it and a function of it) doubles the live registers and spills.
        let mut memo = EvalMemo {
            opaque_acc: true,
            ..EvalMemo::default()
        };
        for v in 0..nregs {
            let c = space.register_coord(v as u64);
            let (dr, dc) = (c[0], c[1]);
            let (rok, raddr) = match rows.get(&dr) {
                Some(x) => *x,
                None => {
                    let c = self.i64(dr as i64);
                    let row = self.bin("add", row0, c);
                    let rok = self.w.icmp(ICmp::Ult, row, t.sizes[0]);
                    let rok = self.w.zext(rok, ScalarType::I32);
                    let ro = self.bin("mul", row, t.strides[0]);
                    let rob = self.bin("mul", ro, ebc);
                    let raddr = self.bin("add", t.ptr, rob);
                    rows.insert(dr, (rok, raddr));
                    (rok, raddr)
                }
            };
            memo.reg.clear();
            let x = self.eval(op, &val, &space, v, &mut memo)?;
            let x = if reg == "h" {
                self.w.cast("llvm.bitcast", x.v, i16t)
            } else {
                x.v
            };
            let rok = match &mask {
                Some(m) => {
                    memo.reg.clear();
                    let keep = self.eval(op, m, &space, v, &mut memo)?;
                    let keep = self.w.zext(keep, ScalarType::I32);
                    self.w.and(rok, keep)
                }
                None => rok,
            };
            // col = col0 + dc; p = col < N && row < M (and the mask); store to row_addr +
            // col * (stride1 * eb).
            let st = if atomic {
                "red.global.add.f32".to_string()
            } else {
                format!("st.global.{st_ty}")
            };
            let asm = format!(
                "{{ .reg .pred p; .reg .b64 c, a; add.s64 c, $2, {dc}; setp.lt.u64 p, c, $3; \
                 setp.ne.and.u32 p, $4, 0, p; mad.lo.s64 a, c, $1, $0; @p {st} [a], $5; }}"
            );
            self.w.inline_asm(
                &asm,
                &format!("l,l,l,l,r,{reg}"),
                &[raddr.v, s1b.v, col0.v, t.sizes[1].v, rok.v, x],
                None,
                true,
            );
        }
        self.w.br(&done, &[]);
        self.w.place(done);
        Ok(())
    }

    /// A masked store (or `red.global.add`, `atomic`) of one element or of a pair of
    /// adjacent elements at `addr` (i64) on the fast path: a pair whose two mask bits are
    /// set is one vector access; otherwise each element whose bit is set is stored alone.
    /// Inline asm: predicated accesses, with the mask bits as predicates (one branch-free
    /// sequence, as the unmasked fast path's vector stores are).
    fn masked_store(
        &mut self,
        atomic: bool,
        elem: ScalarType,
        addr: Value<'c, 'm>,
        keep: &[V<'c, 'm>],
        x: &[V<'c, 'm>],
    ) {
        let (ty, reg) = match elem {
            ScalarType::F32 => ("f32", "f"),
            _ => ("b16", "h"),
        };
        let (one, two) = if atomic {
            (
                "red.global.add.f32".to_string(),
                "red.global.add.v2.f32".to_string(),
            )
        } else {
            (format!("st.global.{ty}"), format!("st.global.v2.{ty}"))
        };
        let i16t = self.w.int_ty(16);
        let mut args = vec![addr];
        for &k in keep {
            args.push(self.w.zext(k, ScalarType::I32).v);
        }
        for &v in x {
            args.push(if reg == "h" {
                self.w.cast("llvm.bitcast", v.v, i16t)
            } else {
                v.v
            });
        }
        let eb = elem.size_bytes();
        let asm = if x.len() == 1 {
            format!("{{ .reg .pred p; setp.ne.u32 p, $1, 0; @p {one} [$0], $2; }}")
        } else {
            // b: both bits; p, q: each bit, cleared where b stores the pair.
            format!(
                "{{ .reg .pred p, q, b; setp.ne.u32 p, $1, 0; setp.ne.u32 q, $2, 0; \
                 and.pred b, p, q; @b {two} [$0], {{$3, $4}}; xor.pred p, p, b; \
                 xor.pred q, q, b; @p {one} [$0], $3; @q {one} [$0+{eb}], $4; }}"
            )
        };
        let cons = match x.len() {
            1 => format!("l,r,{reg}"),
            _ => format!("l,r,r,{reg},{reg}"),
        };
        self.w.inline_asm(&asm, &cons, &args, None, true);
    }
}
