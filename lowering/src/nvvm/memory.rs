//! Loads and stores of tiles of any rank and layout between global memory and registers.
//!
//! Each access has two or three paths, chosen once per access at run time:
//!
//! - **fast**: the whole tile is inside the tensor, its last dimension is contiguous
//!   (stride 1), and the base, the other strides and the last offset keep each thread's
//!   contiguous registers ([`LinearLayout::contiguous_register_bits`]) aligned: one
//!   `llvm.load`/`llvm.store` of a vector (up to 16 bytes) per group of contiguous registers;
//! - **vector** (a ragged tile otherwise fit for the fast path, the last dimension's size a
//!   multiple of the vector, so that each vector is wholly inside or outside the tensor;
//!   loads only): one branch per vector around its access, on its first element's bounds;
//! - **slow** (ragged edges, odd strides, padded shapes): one scalar access per element,
//!   predicated on its bounds (`@p ld.global` / `@p st.global` inline asm; inside loops,
//!   where the asm cost registers, loads take a branch each instead), so an element outside
//!   the tensor is never touched (loads give the padding; stores are dropped).
//!
//! A masked store's fast path stores a vector whole where all its mask bits are set, and
//! element by element where some are clear; its slow path stores each element where it is
//! in bounds and its bit is set. Both are predicated stores (inline asm), not branches.
//!
//! Element `c` of a tile at offsets `o` is at `base + Σ_d (o_d + c_d) · stride_d` elements;
//! an element is in bounds when `0 ≤ o_d + c_d < size_d` for every `d`. Outside loops, for
//! layouts whose register bits are disjoint from the thread bits, the slow path checks
//! this as compares of each register's constant coordinate against per-access limits,
//! and an index of the access's base plus constant multiples of the strides (see
//! `split_access`); elsewhere from each element's coordinate (one unsigned compare per
//! dimension). Where such a slow path is predicated, each element's asm computes its
//! address and the compares of the dimensions its registers span itself, from per-access
//! values (the writer's `AsmElement`): LLVM then sees no per-element arithmetic, which
//! made most of the compile time of the dot-free kernels.

use super::plain::{err, Lowerer, Lv, Tensor, Tile, R};
use super::writer::{AsmBound, AsmElement, ICmp, V};
use melior::ir::{Type, Value};
use tilec_dialect::{LinearLayout, OpKind, Operation, ScalarType};

impl<'c, 'm> Lowerer<'c, 'm, '_> {
    /// Registers per vector access for `layout` and `elem`: the contiguous registers, at
    /// most 16 bytes.
    /// `i1` elements are one byte each in memory, but LLVM packs an `<n x i1>` vector into
    /// bits: they are accessed one at a time.
    fn vector_regs(layout: &LinearLayout, elem: ScalarType) -> u64 {
        if elem == ScalarType::I1 {
            return 1;
        }
        let mut v = 1u64 << layout.contiguous_register_bits();
        while v > 1 && v * elem.size_bytes() > 16 {
            v /= 2;
        }
        v
    }

    /// Whether register `r` of `layout` lies outside a tile of `shape` for every thread: its
    /// constant coordinate in a padded dimension is at least the tile's size there (the
    /// layouts of the asm form, whose register bits are apart from the thread bits, add it
    /// to the thread's coordinate). Such an element is the padding, or not stored; the
    /// asm's own compare would hide that from ptxas, which then kept the element live.
    fn padded_out(shape: &[u64], layout: &LinearLayout, r: u64) -> bool {
        let k = layout.register_coord(r);
        k.iter()
            .zip(shape)
            .zip(&layout.dims)
            .any(|((&k, &size), &dim)| size != dim && k >= size)
    }

    /// Whether a slow path of `elems` registers per thread is predicated (inline asm per
    /// element) rather than a branch per element: outside loops always; inside a loop
    /// where the registers the enclosing loops carry and `elems` are at most
    /// [`LOOP_PREDICATE_REGISTERS`]. ptxas schedules predicated loads early, which
    /// lengthens their registers' lives; beside many loop-carried registers (attention's
    /// accumulator: 69 a thread on mma.sync) that spilled, where the branches did not.
    fn predicate_slow_path(&self, elems: u64) -> bool {
        !self.in_loop() || self.loop_carried as u64 + elems <= LOOP_PREDICATE_REGISTERS
    }

    /// Whether the fast path applies (i1), or `None` when it never can (padded shapes).
    /// With `bounds` false, the condition of the vector path instead: the same alignment,
    /// and the last dimension's size a multiple of the vector, without the tile inside the
    /// tensor (`None` also where vectors are single elements).
    fn fast_path(
        &mut self,
        t: &Tensor<'c, 'm>,
        offs: &[V<'c, 'm>],
        shape: &[u64],
        layout: &LinearLayout,
        vec: u64,
        bounds: bool,
    ) -> Option<V<'c, 'm>> {
        if layout.dims != shape || (!bounds && vec == 1) {
            return None;
        }
        let w = &mut self.w;
        let rank = shape.len();
        let mut ok: Option<V<'c, 'm>> = None;
        let mut and = |w: &mut super::writer::Writer<'c, 'm>, c: V<'c, 'm>| {
            ok = Some(match ok {
                Some(a) => w.and(a, c),
                None => c,
            });
        };
        for d in (0..rank).filter(|_| bounds) {
            // o_d ≥ 0 and o_d + S_d ≤ size_d.
            let zero = w.i64(0);
            let nonneg = w.icmp(ICmp::Sge, offs[d], zero);
            and(w, nonneg);
            let end = w.add_const(offs[d], shape[d] as i64);
            let fits = w.icmp(ICmp::Sle, end, t.sizes[d]);
            and(w, fits);
        }
        let one = w.i64(1);
        let unit = w.icmp(ICmp::Eq, t.strides[rank - 1], one);
        and(w, unit);
        if vec > 1 {
            let mask = w.i64(vec as i64 - 1);
            let zero = w.i64(0);
            for d in 0..rank - 1 {
                let r = w.bin("and", t.strides[d], mask);
                let c = w.icmp(ICmp::Eq, r, zero);
                and(w, c);
            }
            let r = w.bin("and", offs[rank - 1], mask);
            let c = w.icmp(ICmp::Eq, r, zero);
            and(w, c);
            if !bounds {
                let r = w.bin("and", t.sizes[rank - 1], mask);
                let c = w.icmp(ICmp::Eq, r, zero);
                and(w, c);
            }
            let i64t = w.ty(ScalarType::I64);
            let addr = V {
                v: w.op1("llvm.ptrtoint", &[t.ptr], i64t, &[]),
                t: ScalarType::I64,
            };
            let bmask = w.i64((vec * t.elem.size_bytes()) as i64 - 1);
            let r = w.bin("and", addr, bmask);
            let c = w.icmp(ICmp::Eq, r, zero);
            and(w, c);
        }
        ok
    }

    /// The value a load of `op` gives elements outside the tensor: its `padding` (floats),
    /// 0 for integers.
    fn load_padding(&mut self, op: &Operation, elem: ScalarType) -> R<V<'c, 'm>> {
        Ok(if elem.is_float() {
            let p = tilec_dialect::ops::load_padding(op.attr("padding"))
                .map_err(|e| tilec_dialect::Diagnostic::error(op.loc.clone(), e))?;
            self.w.float(p, elem)
        } else {
            self.w.int(0, elem)
        })
    }

    /// The element index (i64) of tile coordinate `coord` at offsets `offs`, and whether
    /// it is in bounds (i1).
    fn element(
        &mut self,
        t: &Tensor<'c, 'm>,
        offs: &[V<'c, 'm>],
        coord: &[V<'c, 'm>],
    ) -> (V<'c, 'm>, V<'c, 'm>) {
        let w = &mut self.w;
        let mut index = w.i64(0);
        let mut inb: Option<V<'c, 'm>> = None;
        for d in 0..coord.len() {
            let c = w.int_cast(coord[d], ScalarType::I64);
            let g = w.add(offs[d], c);
            let ok = w.icmp(ICmp::Ult, g, t.sizes[d]);
            inb = Some(match inb {
                Some(a) => w.and(a, ok),
                None => ok,
            });
            let s = w.mul(g, t.strides[d]);
            index = w.add(index, s);
        }
        let inb = inb.unwrap_or_else(|| w.int(1, ScalarType::I1));
        (index, inb)
    }

    /// The per-access part of a slow path whose layout keeps register bits apart from
    /// thread bits ([`LinearLayout::register_bits_disjoint`]), or `None` for other
    /// layouts. Each element's bounds are then compares of its register's constant
    /// coordinate with a per-access limit, and its index a per-access base plus constant
    /// multiples of the strides, so no per-element coordinate is computed: such
    /// coordinates are the same in every access of a layout, and LLVM would share them
    /// across accesses and keep them live in between.
    fn split_access(
        &mut self,
        t: &Tensor<'c, 'm>,
        offs: &[V<'c, 'm>],
        shape: &[u64],
        layout: &LinearLayout,
        asm: bool,
    ) -> Option<Split<'c, 'm>> {
        // Inside a loop the per-register compares of a loop-invariant dimension are
        // loop-invariant too, and LLVM hoists them all out of the loop: there the
        // coordinate form, whose compares vary with the loop, is cheaper, unless the
        // compares are in each element's asm (`asm`), which stays in the loop.
        if !layout.register_bits_disjoint() || (self.in_loop() && !asm) {
            return None;
        }
        let tc32 = self.thread_coord(layout);
        let ety = self.w.ty(t.elem);
        let p1 = self.w.ptr_ty(1);
        let w = &mut self.w;
        let mut base = w.i64(0);
        let mut hi = Vec::with_capacity(offs.len());
        let mut lo = Vec::with_capacity(offs.len());
        let mut pad = Vec::with_capacity(offs.len());
        for d in 0..offs.len() {
            let c = w.int_cast(tc32[d], ScalarType::I64);
            // Padded shapes: tc + k < shape.
            pad.push((shape[d] != layout.dims[d]).then(|| {
                let n = w.i64(shape[d] as i64);
                w.bin("sub", n, c)
            }));
            let g = w.add(offs[d], c);
            let s = w.mul(g, t.strides[d]);
            base = w.add(base, s);
            // off + tc + k in [0, size)  <=>  -(off + tc) <= k < size - (off + tc).
            hi.push(w.bin("sub", t.sizes[d], g));
            let zero = w.i64(0);
            lo.push(w.bin("sub", zero, g));
        }
        let ptr = w.gep(t.ptr, base, ety, p1);
        Some(Split { hi, lo, pad, ptr })
    }

    /// Element index (i64, from [`Split::ptr`]) and in-bounds flag (i1) of register `r`
    /// from a [`Split`]: its coordinate `k` (a constant) against the limits, and
    /// `k < shape - tc` for padded shapes.
    fn split_element(
        &mut self,
        s: &Split<'c, 'm>,
        t: &Tensor<'c, 'm>,
        tile: &Tile<'c, 'm>,
        r: u64,
    ) -> (V<'c, 'm>, V<'c, 'm>) {
        let k = tile.layout.register_coord(r);
        let w = &mut self.w;
        // Constant multiples of the strides from the access's base pointer: a chain of adds
        // from one register's index to the next would cost LLVM's straight-line strength
        // reduction time quadratic in the chain's length.
        let mut index = w.i64(0);
        for (d, &x) in k.iter().enumerate() {
            if x != 0 {
                let kc = w.i64(x as i64);
                let term = w.mul(t.strides[d], kc);
                index = w.add(index, term);
            }
        }
        let dims: Vec<(usize, u64)> = k.iter().copied().enumerate().collect();
        (index, self.split_inbounds(s, &dims))
    }

    /// Whether the register at constant coordinate `k_d` (from the thread's first) in each
    /// listed dimension `(d, k_d)` is in bounds there (i1), from a [`Split`]'s limits.
    fn split_inbounds(&mut self, s: &Split<'c, 'm>, dims: &[(usize, u64)]) -> V<'c, 'm> {
        let w = &mut self.w;
        let mut inb: Option<V<'c, 'm>> = None;
        let mut and = |w: &mut super::writer::Writer<'c, 'm>, c: V<'c, 'm>| {
            inb = Some(match inb {
                Some(a) => w.and(a, c),
                None => c,
            });
        };
        for &(d, kd) in dims {
            let kc = w.i64(kd as i64);
            let below = w.icmp(ICmp::Slt, kc, s.hi[d]);
            and(w, below);
            let above = w.icmp(ICmp::Sge, kc, s.lo[d]);
            and(w, above);
            if let Some(p) = s.pad[d] {
                let inside = w.icmp(ICmp::Slt, kc, p);
                and(w, inside);
            }
        }
        inb.unwrap_or_else(|| w.int(1, ScalarType::I1))
    }

    /// What a predicated slow path's asm needs of a [`Split`], once per access: the byte
    /// address of its base, the tensor's strides in bytes, the dimensions along which
    /// the layout's registers lie (their bounds are checked in each element's asm), and
    /// the bounds of the others (the same for every element; i1).
    fn split_asm_base(
        &mut self,
        s: &Split<'c, 'm>,
        t: &Tensor<'c, 'm>,
        layout: &LinearLayout,
    ) -> AsmBase<'c, 'm> {
        let base = self.w.asm_element(s.ptr).base;
        let eb = self.w.i64(t.elem.size_bytes() as i64);
        let strides = t.strides.iter().map(|&x| self.w.mul(x, eb)).collect();
        let rank = t.strides.len();
        let mut varying = vec![false; rank];
        for r in 0..layout.num_registers() {
            for (d, &k) in layout.register_coord(r).iter().enumerate() {
                varying[d] |= k != 0;
            }
        }
        // Register 0's bounds in the dimensions along which no register lies.
        let fixed: Vec<(usize, u64)> = (0..rank).filter(|&d| !varying[d]).map(|d| (d, 0)).collect();
        let flag = self.split_inbounds(s, &fixed);
        AsmBase {
            base,
            strides,
            varying,
            flag,
        }
    }

    /// Address and guard of register `r` on a predicated slow path, from a [`Split`] and
    /// its [`AsmBase`]: the base plus constant multiples of the byte strides, and the
    /// bounds of the dimensions along which the registers lie, all in the asm.
    fn predicated_element(
        &mut self,
        (s, b): &(Split<'c, 'm>, AsmBase<'c, 'm>),
        tile: &Tile<'c, 'm>,
        r: u64,
    ) -> AsmElement<'c, 'm> {
        let k = tile.layout.register_coord(r);
        let terms = k
            .iter()
            .zip(&b.strides)
            .filter(|(&kd, _)| kd != 0)
            .map(|(&kd, &stride)| (stride, kd))
            .collect();
        let bounds = (0..k.len())
            .filter(|&d| b.varying[d])
            .map(|d| AsmBound {
                k: k[d],
                hi: s.hi[d],
                lo: s.lo[d],
                pad: s.pad[d],
            })
            .collect();
        AsmElement {
            base: b.base,
            terms,
            bounds,
        }
    }

    /// Address and in-bounds flag (i1) of register `r` on a predicated slow path without
    /// an [`AsmBase`]: as [`Self::slow_element`] gives them, the bounds in LLVM.
    fn predicated_element_llvm(
        &mut self,
        split: Option<&Split<'c, 'm>>,
        t: &Tensor<'c, 'm>,
        offs: &[V<'c, 'm>],
        tile: &Tile<'c, 'm>,
        r: u64,
    ) -> (AsmElement<'c, 'm>, V<'c, 'm>) {
        let (base, index, inb) = self.slow_element(split, t, offs, tile, r);
        let ety = self.w.ty(t.elem);
        let p1 = self.w.ptr_ty(1);
        let p = self.w.gep(base, index, ety, p1);
        (self.w.asm_element(p), inb)
    }

    /// Address and in-bounds flag of register `r` on a slow path: from `split` where the
    /// layout allows it, else from the element's coordinate. The address is a base pointer
    /// and an element index from it, for the caller to combine where it accesses memory.
    fn slow_element(
        &mut self,
        split: Option<&Split<'c, 'm>>,
        t: &Tensor<'c, 'm>,
        offs: &[V<'c, 'm>],
        tile: &Tile<'c, 'm>,
        r: u64,
    ) -> (Value<'c, 'm>, V<'c, 'm>, V<'c, 'm>) {
        if let Some(s) = split {
            let (index, inb) = self.split_element(s, t, tile, r);
            return (s.ptr, index, inb);
        }
        let coord = self.coord(&tile.layout, r);
        let (index, mut inb) = self.element(t, offs, &coord);
        if let Some(it) = self.in_tile(tile, &coord) {
            inb = self.w.and(inb, it);
        }
        (t.ptr, index, inb)
    }

    pub(super) fn offsets(&self, op: &Operation, from: usize, rank: usize) -> R<Vec<V<'c, 'm>>> {
        op.operands[from..from + rank]
            .iter()
            .map(|&o| self.scalar(op, o))
            .collect()
    }

    pub(super) fn lower_load(&mut self, op: &Operation) -> R<()> {
        let t = self.tensor(op, op.operands[0])?;
        let (shape, elem, layout) = self.result_layout(op, 0)?;
        let rank = shape.len();
        let offs: Vec<V<'c, 'm>> = self
            .offsets(op, 1, rank)?
            .into_iter()
            .map(|o| self.w.int_cast(o, ScalarType::I64))
            .collect();
        let ety = self.w.ty(elem);
        let n = layout.num_registers();
        let vec = Self::vector_regs(&layout, elem);
        // The paths join on whole vectors, so the registers stay packed (two 16-bit
        // elements per 32-bit register) across the join; elements are extracted after it.
        let vty = if vec > 1 {
            Type::vector(&[vec], ety)
        } else {
            ety
        };
        let join = self.w.new_block(&vec![vty; (n / vec) as usize]);
        let tile = Tile {
            regs: vec![],
            elem,
            shape: shape.clone(),
            layout: layout.clone(),
        };
        let p1 = self.w.ptr_ty(1);
        let slow = self.w.new_block(&[]);
        let pad = self.load_padding(op, elem)?;
        // The padding's bits, for the asm to give where it reads nothing (`None`: a value
        // the type cannot hold exactly, given by a select instead).
        let pad_bits = match elem.is_float() {
            true => tilec_dialect::ops::load_padding(op.attr("padding"))
                .ok()
                .and_then(|p| elem.exact_bits(p)),
            false => Some(0),
        };
        if let Some(fast_ok) = self.fast_path(&t, &offs, &shape, &layout, vec, true) {
            let fast = self.w.new_block(&[]);
            let other = match self.fast_path(&t, &offs, &shape, &layout, vec, false) {
                Some(vec_ok) => {
                    let check = self.w.new_block(&[]);
                    self.w.cond_br(fast_ok, &fast, &[], &check, &[]);
                    self.w.block = check;
                    let vector = self.w.new_block(&[]);
                    self.w.cond_br(vec_ok, &vector, &[], &slow, &[]);
                    Some(vector)
                }
                None => {
                    self.w.cond_br(fast_ok, &fast, &[], &slow, &[]);
                    None
                }
            };
            self.w.block = fast;
            let mut vecs: Vec<Value<'c, 'm>> = Vec::with_capacity((n / vec) as usize);
            for r0 in (0..n).step_by(vec as usize) {
                let coord = self.coord(&layout, r0);
                let (index, _) = self.element(&t, &offs, &coord);
                let p = self.w.gep(t.ptr, index, ety, p1);
                vecs.push(self.w.load(p, vty, vec * elem.size_bytes()));
            }
            self.w.br(&join, &vecs);
            if let Some(vector) = other {
                self.w.block = vector;
                let vecs = self.vector_path(&t, &offs, &tile, vty, pad, pad_bits);
                self.w.br(&join, &vecs);
            }
        } else {
            self.w.br(&slow, &[]);
        }
        self.w.block = slow;
        let mut vecs = Vec::with_capacity((n / vec) as usize);
        let mut acc: Option<Value<'c, 'm>> = None;
        // A predicated load per element, not a branch and a block each (a block per
        // element made LLVM's CodeGenPrepare, GVN and strength reduction time grow with the
        // elements), where [`Lowerer::predicate_slow_path`] allows it. The asm keeps its
        // place among the kernel's accesses (another argument may be the same buffer).
        let predicated = self.predicate_slow_path(n);
        let mut split = self.split_access(&t, &offs, &shape, &layout, predicated);
        let asm_split = match (predicated, pad_bits) {
            (true, Some(_)) => split.take().map(|s| {
                let b = self.split_asm_base(&s, &t, &layout);
                (s, b)
            }),
            _ => None,
        };
        let asm_ok = asm_split
            .as_ref()
            .map(|a| self.w.zext(a.1.flag, ScalarType::I32));
        // One asm per vector where its elements pack into 32-bit words.
        let bits = elem.size_bytes() * 8;
        let packed = vec > 1 && matches!(bits, 8 | 16 | 32) && (vec * bits).is_multiple_of(32);
        if let (Some(a), Some(ok), true) = (&asm_split, asm_ok, packed) {
            for r0 in (0..n).step_by(vec as usize) {
                let at: Vec<Option<AsmElement<'c, 'm>>> = (r0..r0 + vec)
                    .map(|r| {
                        let out = Self::padded_out(&shape, &layout, r);
                        (!out).then(|| self.predicated_element(a, &tile, r))
                    })
                    .collect();
                let bits = pad_bits.unwrap_or(0);
                let words = self.w.predicated_load_packed(&at, ok, elem, bits);
                vecs.push(self.w.cast("llvm.bitcast", words, vty));
            }
        }
        for r in (0..n).filter(|_| !(asm_split.is_some() && packed)) {
            let x = if asm_split.is_some() && Self::padded_out(&shape, &layout, r) {
                pad.v
            } else if let (Some(a), Some(ok)) = (&asm_split, asm_ok) {
                let at = self.predicated_element(a, &tile, r);
                let bits = pad_bits.unwrap_or(0);
                self.w.predicated_load_at(&at, ok, elem, true, bits).v
            } else if predicated {
                let (at, inb) = self.predicated_element_llvm(split.as_ref(), &t, &offs, &tile, r);
                let ok = self.w.zext(inb, ScalarType::I32);
                let x = self
                    .w
                    .predicated_load_at(&at, ok, elem, true, pad_bits.unwrap_or(0));
                match pad_bits {
                    Some(_) => x.v,
                    None => self.w.select(inb, x, pad).v,
                }
            } else {
                let (base, index, inb) = self.slow_element(split.as_ref(), &t, &offs, &tile, r);
                let p = self.w.gep(base, index, ety, p1);
                let ld = self.w.new_block(&[]);
                let next = self.w.new_block(&[ety]);
                self.w.cond_br(inb, &ld, &[], &next, &[pad.v]);
                self.w.block = ld;
                let x = self.w.load(p, ety, elem.size_bytes());
                self.w.br(&next, &[x]);
                self.w.block = next;
                self.w.args(next)[0]
            };
            if vec == 1 {
                vecs.push(x);
                continue;
            }
            let base = acc.unwrap_or_else(|| self.w.op1("llvm.mlir.poison", &[], vty, &[]));
            let j = self.w.i32((r % vec) as i64);
            let v = self.w.op1("llvm.insertelement", &[base, x, j.v], vty, &[]);
            if (r + 1) % vec == 0 {
                vecs.push(v);
                acc = None;
            } else {
                acc = Some(v);
            }
        }
        self.w.br(&join, &vecs);
        self.w.block = join;
        let joined = self.w.args(join);
        let regs = if vec == 1 {
            joined
        } else {
            let mut regs = Vec::with_capacity(n as usize);
            for x in joined {
                for j in 0..vec {
                    let jj = self.w.i32(j as i64);
                    regs.push(self.w.op1("llvm.extractelement", &[x, jj.v], ety, &[]));
                }
            }
            regs
        };
        if let Some(&r) = op.results.first() {
            self.vals.insert(r, Lv::Tile(Tile { regs, ..tile }));
        }
        Ok(())
    }

    /// The vector path of a load: a ragged tile whose vectors (`vty`, registers
    /// `r0..r0 + vec` of `tile`'s layout) each lie wholly inside or outside the tensor.
    /// Where [`Lowerer::predicate_slow_path`] allows it and the padding (`pad_bits`) fills
    /// a 32-bit word, one predicated vector load per vector, its address and bounds in
    /// the asm ([`AsmElement`]); else one branch per vector, on its first element's
    /// bounds, around a vector load. Returns the vectors.
    fn vector_path(
        &mut self,
        t: &Tensor<'c, 'm>,
        offs: &[V<'c, 'm>],
        tile: &Tile<'c, 'm>,
        vty: Type<'c>,
        pad: V<'c, 'm>,
        pad_bits: Option<u64>,
    ) -> Vec<Value<'c, 'm>> {
        let (elem, layout) = (tile.elem, &tile.layout);
        let n = layout.num_registers();
        let vec = Self::vector_regs(layout, elem);
        let bytes = vec * elem.size_bytes();
        let word = pad_bits
            .filter(|_| bytes.is_multiple_of(4) && self.predicate_slow_path(n))
            .and_then(|b| pad_word(b, elem));
        let split = self.split_access(t, offs, &tile.shape, layout, word.is_some());
        let mut vecs: Vec<Value<'c, 'm>> = Vec::with_capacity((n / vec) as usize);
        if let (Some(word), Some(s)) = (word, &split) {
            let b = self.split_asm_base(s, t, layout);
            let ok = self.w.zext(b.flag, ScalarType::I32);
            let a = (split.expect("matched above"), b);
            for r0 in (0..n).step_by(vec as usize) {
                let at = self.predicated_element(&a, tile, r0);
                let words = self.w.predicated_load_words(&at, ok, bytes / 4, word);
                vecs.push(self.w.cast("llvm.bitcast", words, vty));
            }
            return vecs;
        }
        let ety = self.w.ty(elem);
        let p1 = self.w.ptr_ty(1);
        let mut padv = self.w.op1("llvm.mlir.poison", &[], vty, &[]);
        for j in 0..vec {
            let jj = self.w.i32(j as i64);
            padv = self
                .w
                .op1("llvm.insertelement", &[padv, pad.v, jj.v], vty, &[]);
        }
        for r0 in (0..n).step_by(vec as usize) {
            let (base, index, inb) = self.slow_element(split.as_ref(), t, offs, tile, r0);
            let ld = self.w.new_block(&[]);
            let next = self.w.new_block(&[vty]);
            self.w.cond_br(inb, &ld, &[], &next, &[padv]);
            self.w.block = ld;
            let p = self.w.gep(base, index, ety, p1);
            let x = self.w.load(p, vty, bytes);
            self.w.br(&next, &[x]);
            self.w.block = next;
            vecs.push(self.w.args(next)[0]);
        }
        vecs
    }

    /// `tile.gather`: per register, row `rows[i]` (the index register of its row) and
    /// column `col + c`; one branch per element around a scalar load, so rows outside the
    /// tensor (any index) are never touched.
    pub(super) fn lower_gather(&mut self, op: &Operation) -> R<()> {
        let t = self.tensor(op, op.operands[0])?;
        let rows = self.tile(op, op.operands[1])?;
        let col = self.scalar(op, op.operands[2])?;
        let col = self.w.int_cast(col, ScalarType::I64);
        let (shape, elem, layout) = self.result_layout(op, 0)?;
        let by_row: std::collections::HashMap<u64, usize> = (0..rows.layout.num_registers())
            .map(|r| (rows.layout.register_coord(r)[0], r as usize))
            .collect();
        let ety = self.w.ty(elem);
        let p1 = self.w.ptr_ty(1);
        let pad = self.load_padding(op, elem)?;
        let tile = Tile {
            regs: vec![],
            elem,
            shape,
            layout: layout.clone(),
        };
        let mut regs = Vec::with_capacity(layout.num_registers() as usize);
        for r in 0..layout.num_registers() {
            let rc = layout.register_coord(r);
            let Some(&ri) = by_row.get(&rc[0]) else {
                return err(
                    op,
                    "internal error: the row indices are not in the gather's rows",
                );
            };
            let row = self.w.int_cast(
                V {
                    v: rows.regs[ri],
                    t: rows.elem,
                },
                ScalarType::I64,
            );
            let coord = self.coord(&layout, r);
            let c = self.w.int_cast(coord[1], ScalarType::I64);
            let gc = self.w.add(col, c);
            let row_ok = self.w.icmp(ICmp::Ult, row, t.sizes[0]);
            let col_ok = self.w.icmp(ICmp::Ult, gc, t.sizes[1]);
            let mut inb = self.w.and(row_ok, col_ok);
            if let Some(it) = self.in_tile(&tile, &coord) {
                inb = self.w.and(inb, it);
            }
            let a = self.w.mul(row, t.strides[0]);
            let b = self.w.mul(gc, t.strides[1]);
            let index = self.w.add(a, b);
            let ld = self.w.new_block(&[]);
            let next = self.w.new_block(&[ety]);
            self.w.cond_br(inb, &ld, &[], &next, &[pad.v]);
            self.w.block = ld;
            let p = self.w.gep(t.ptr, index, ety, p1);
            let x = self.w.load(p, ety, elem.size_bytes());
            self.w.br(&next, &[x]);
            self.w.block = next;
            regs.push(self.w.args(next)[0]);
        }
        if let Some(&r) = op.results.first() {
            self.vals.insert(r, Lv::Tile(Tile { regs, ..tile }));
        }
        Ok(())
    }

    /// `tile.wait_flag`, `tile.release_flag` and `tile.arrive_flag` in a kernel without a
    /// dot ([`crate::nvvm::flags`]): thread 0 touches the flag, the CTA meets at
    /// `bar.sync 0`.
    ///
    /// # Errors
    /// In a region only some threads run (the try_cancel scheduler's).
    pub(super) fn lower_flag(&mut self, op: &Operation) -> R<()> {
        if self.scheduler {
            return err(
                op,
                format!(
                    "convert-tile-to-nvvm: '{}' needs every thread of the CTA; the \
                     scheduler's region runs in thread 0 alone",
                    op.kind.name()
                ),
            );
        }
        let t = self.tensor(op, op.operands[0])?;
        let pos = self.scalar(op, op.operands[1])?;
        let pos = self.w.int_cast(pos, ScalarType::I64);
        let value = match op.operands.get(2) {
            Some(&v) => {
                let v = self.scalar(op, v)?;
                self.w.int_cast(v, ScalarType::I32)
            }
            None => self.w.i32(0),
        };
        let stride = self.w.int_cast(t.strides[0], ScalarType::I64);
        let elems = self.w.mul(pos, stride);
        let p1 = self.w.ptr_ty(1);
        let i32t = self.w.ty(ScalarType::I32);
        let addr = self.w.gep(t.ptr, elems, i32t, p1);
        let z = self.w.i32(0);
        let first_warp = self.w.icmp(ICmp::Eq, self.warp, z);
        let first_lane = self.w.icmp(ICmp::Eq, self.lane, z);
        let leader = self.w.and(first_warp, first_lane);
        if let Some(old) = super::flags::lower(self, op, addr, value, leader)? {
            self.def(op, Lv::Scalar(old));
        }
        Ok(())
    }

    /// `tile.store`, and `tile.atomic_add` (one predicated `red.global.add.f32` per
    /// element, by the element's one owner: a layout may give several threads copies of
    /// an element, and each copy would add).
    pub(super) fn lower_store(&mut self, op: &Operation) -> R<()> {
        let t = self.tensor(op, op.operands[0])?;
        let Some(&tv) = op.operands.last() else {
            return err(op, "'tile.store' has no tile");
        };
        let atomic = op.kind == OpKind::AtomicAdd;
        let tile = self.tile(op, tv)?;
        let rank = tile.shape.len();
        let offs: Vec<V<'c, 'm>> = self
            .offsets(op, 1, rank)?
            .into_iter()
            .map(|o| self.w.int_cast(o, ScalarType::I64))
            .collect();
        // A mask (before the value), in the value's layout (tile-assign-layouts): on the
        // fast path a vector is stored whole where all its bits are set, else element by
        // element where each is; on the slow path each bit joins its element's bounds.
        let mask = match op.operands.len() == rank + 3 {
            true => {
                let m = self.tile(op, op.operands[rank + 1])?;
                if m.layout != tile.layout {
                    return err(
                        op,
                        "convert-tile-to-nvvm: the store's mask is not in its value's layout \
                         (tile-assign-layouts puts it there)",
                    );
                }
                Some(m.regs)
            }
            false => None,
        };
        let elem = tile.elem;
        let ety = self.w.ty(elem);
        let layout = tile.layout.clone();
        let n = layout.num_registers();
        let vec = Self::vector_regs(&layout, elem);
        let join = self.w.new_block(&[]);
        let slow = self.w.new_block(&[]);
        let p1 = self.w.ptr_ty(1);
        let fast = match atomic {
            true => None,
            false => self.fast_path(&t, &offs, &tile.shape, &layout, vec, true),
        };
        if let Some(fast_ok) = fast {
            let fast = self.w.new_block(&[]);
            self.w.cond_br(fast_ok, &fast, &[], &slow, &[]);
            self.w.block = fast;
            let vty = Type::vector(&[vec], ety);
            for r0 in (0..n).step_by(vec as usize) {
                let coord = self.coord(&layout, r0);
                let (index, _) = self.element(&t, &offs, &coord);
                let p = self.w.gep(t.ptr, index, ety, p1);
                if let Some(m) = &mask {
                    self.masked_vector(m, r0, vec, p, &tile.regs, elem);
                    continue;
                }
                if vec == 1 {
                    self.w.store(tile.regs[r0 as usize], p, elem.size_bytes());
                    continue;
                }
                let mut x = self.w.op1("llvm.mlir.poison", &[], vty, &[]);
                for j in 0..vec {
                    let jj = self.w.i32(j as i64);
                    x = self.w.op1(
                        "llvm.insertelement",
                        &[x, tile.regs[(r0 + j) as usize], jj.v],
                        vty,
                        &[],
                    );
                }
                self.w.store(x, p, vec * elem.size_bytes());
            }
            self.w.br(&join, &[]);
        } else {
            self.w.br(&slow, &[]);
        }
        self.w.block = slow;
        let owner = atomic.then(|| self.owner(&layout));
        // Predicated (no branch): an atomic add on its owner, a masked store on its bit,
        // and any store [`Lowerer::predicate_slow_path`] allows (a branch and a block per
        // element slow LLVM).
        let predicated = owner.is_some() || mask.is_some() || self.predicate_slow_path(n);
        let mut split = self.split_access(&t, &offs, &tile.shape, &layout, predicated);
        let asm_split = match predicated {
            true => split.take().map(|s| {
                let b = self.split_asm_base(&s, &t, &layout);
                (s, b)
            }),
            false => None,
        };
        // A plain store's elements in one asm per vector of registers.
        let grouped = owner.is_none() && mask.is_none() && vec > 1;
        if let (Some(a), true) = (&asm_split, grouped) {
            for r0 in (0..n).step_by(vec as usize) {
                let at: Vec<Option<AsmElement<'c, 'm>>> = (r0..r0 + vec)
                    .map(|r| {
                        let out = Self::padded_out(&tile.shape, &layout, r);
                        (!out).then(|| self.predicated_element(a, &tile, r))
                    })
                    .collect();
                let xs: Vec<V<'c, 'm>> = (r0..r0 + vec)
                    .map(|r| V {
                        v: tile.regs[r as usize],
                        t: elem,
                    })
                    .collect();
                self.w.predicated_store_group(&at, a.1.flag, &xs);
            }
        }
        for r in (0..n).filter(|_| !(asm_split.is_some() && grouped)) {
            if owner.is_some_and(|(regs, _)| r & regs != 0) {
                continue;
            }
            if asm_split.is_some() && Self::padded_out(&tile.shape, &layout, r) {
                continue;
            }
            if predicated {
                let (addr, mut ok) = match &asm_split {
                    Some(a) => (self.predicated_element(a, &tile, r), a.1.flag),
                    None => self.predicated_element_llvm(split.as_ref(), &t, &offs, &tile, r),
                };
                if let Some((_, thread_owns)) = owner {
                    ok = self.w.and(ok, thread_owns);
                }
                if let Some(m) = &mask {
                    let keep = V {
                        v: m[r as usize],
                        t: ScalarType::I1,
                    };
                    ok = self.w.and(ok, keep);
                }
                let x = V {
                    v: tile.regs[r as usize],
                    t: elem,
                };
                match atomic {
                    true => self.w.predicated_red_add(&addr, ok, x),
                    false => self.w.predicated_store_at(&addr, ok, &[x]),
                }
                continue;
            }
            let (base, index, inb) = self.slow_element(split.as_ref(), &t, &offs, &tile, r);
            let st = self.w.new_block(&[]);
            let next = self.w.new_block(&[]);
            self.w.cond_br(inb, &st, &[], &next, &[]);
            self.w.block = st;
            let p = self.w.gep(base, index, ety, p1);
            self.w.store(tile.regs[r as usize], p, elem.size_bytes());
            self.w.br(&next, &[]);
            self.w.block = next;
        }
        self.w.br(&join, &[]);
        self.w.block = join;
        Ok(())
    }
}

impl<'c, 'm> Lowerer<'c, 'm, '_> {
    /// Which of a `layout` tile's elements this thread owns ([`LinearLayout::owner_masks`]):
    /// the register bits that must be clear, and whether the lane and warp bits that must
    /// be are (i1).
    fn owner(&mut self, layout: &LinearLayout) -> (u64, V<'c, 'm>) {
        let (regs, lanes, warps) = layout.owner_masks();
        let z = self.w.i32(0);
        let mut own = self.w.int(1, ScalarType::I1);
        for (idx, mask) in [(self.lane, lanes), (self.warp, warps)] {
            if mask != 0 {
                let m = self.w.i32(mask as i64);
                let bits = self.w.bin("and", idx, m);
                let clear = self.w.icmp(ICmp::Eq, bits, z);
                own = self.w.and(own, clear);
            }
        }
        (regs, own)
    }

    /// The masked fast path's store of the vector of registers `r0..r0 + vec` at `p`: one
    /// predicated vector store where all their mask bits are set, and a predicated store
    /// of each element whose bit is set where some are clear (no branch).
    fn masked_vector(
        &mut self,
        mask: &[Value<'c, 'm>],
        r0: u64,
        vec: u64,
        p: Value<'c, 'm>,
        regs: &[Value<'c, 'm>],
        elem: ScalarType,
    ) {
        let bit = |r: u64| V {
            v: mask[r as usize],
            t: ScalarType::I1,
        };
        let xs: Vec<V<'c, 'm>> = (r0..r0 + vec)
            .map(|r| V {
                v: regs[r as usize],
                t: elem,
            })
            .collect();
        let ety = self.w.ty(elem);
        let p1 = self.w.ptr_ty(1);
        if vec * elem.size_bytes() < 4 {
            // Too narrow for 32-bit words: each element where its bit is set.
            for (j, &x) in xs.iter().enumerate() {
                let jj = self.w.i64(j as i64);
                let pj = self.w.gep(p, jj, ety, p1);
                self.w.predicated_store(pj, bit(r0 + j as u64), &[x]);
            }
            return;
        }
        let mut all = bit(r0);
        for r in r0 + 1..r0 + vec {
            all = self.w.and(all, bit(r));
        }
        self.w.predicated_store(p, all, &xs);
        let t = self.w.int(1, ScalarType::I1);
        let some = self.w.bin("xor", all, t);
        for (j, &x) in xs.iter().enumerate() {
            let ok = self.w.and(some, bit(r0 + j as u64));
            let jj = self.w.i64(j as i64);
            let pj = self.w.gep(p, jj, ety, p1);
            self.w.predicated_store(pj, ok, &[x]);
        }
    }
}

/// The most registers per thread that the loops around a slow path carry plus the slow
/// path's own for it to be predicated inside a loop ([`Lowerer::predicate_slow_path`]):
/// half the ISA's 255. From ptxas on the examples: col_sums (9 + 32) and softmax_online
/// predicate theirs at no spill; attention on mma.sync (69 carried) spilled 4–12 bytes.
const LOOP_PREDICATE_REGISTERS: u64 = 128;

/// See [`Lowerer::split_asm_base`].
struct AsmBase<'c, 'm> {
    /// The byte address of [`Split::ptr`] (i64).
    base: V<'c, 'm>,
    /// Each dimension's stride in bytes (i64).
    strides: Vec<V<'c, 'm>>,
    /// Per dimension: whether some register's coordinate in it is not 0.
    varying: Vec<bool>,
    /// The bounds of the other dimensions (i1).
    flag: V<'c, 'm>,
}

/// See [`Lowerer::split_access`].
struct Split<'c, 'm> {
    /// `size_d - (off_d + tc_d)` per dimension (i64): a register's coordinate `k_d` is in
    /// bounds below it.
    hi: Vec<V<'c, 'm>>,
    /// `-(off_d + tc_d)` per dimension (i64): and at or above it.
    lo: Vec<V<'c, 'm>>,
    /// `shape_d - tc_d` for the padded dimensions: inside the tile below it.
    pad: Vec<Option<V<'c, 'm>>>,
    /// `&tensor[Σ_d (off_d + tc_d) · stride_d]`: the thread's register 0, computed once in
    /// the block that dominates the access's per-element blocks, so that each element is
    /// one address computation from it (a base in each element's block would be a
    /// duplicate that LLVM cannot merge across sibling blocks, and that costs its
    /// straight-line strength reduction time quadratic in the elements).
    ptr: Value<'c, 'm>,
}

/// The 32-bit word that holds the padding `bits` of `elem` in each of its elements, or
/// `None` where an element is wider than a word and its padding is not 0.
fn pad_word(bits: u64, elem: ScalarType) -> Option<u32> {
    let w = elem.size_bytes() * 8;
    match w {
        32 => Some(bits as u32),
        _ if w > 32 => (bits == 0).then_some(0),
        _ => {
            let one = (bits & ((1 << w) - 1)) as u32;
            Some((0..32 / w).fold(0, |acc, i| acc | (one << (w * i))))
        }
    }
}
