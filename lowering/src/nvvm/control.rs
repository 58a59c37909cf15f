//! `tile.for`, `tile.while` and `tile.if` as blocks of the function's control-flow graph,
//! carrying any values: a scalar is one block argument, a tile one per register.
//!
//! ```text
//! tile.for %lb, %ub, %step, inits:  br ^header(lb, inits)
//!                                   ^header(iv, carried): cond_br iv < ub, ^body, ^exit(carried)
//!                                   ^body: ... br ^header(iv + step, yielded)
//!                                   ^exit(results): ...
//! tile.while inits:                 br ^body(inits)
//!                                   ^body(carried): ... cond_br go, ^body(next), ^exit(next)
//!                                   ^exit(results): ...
//! tile.if %c:                       cond_br c, ^then, ^else
//!                                   ^then: ... br ^join(yielded)
//!                                   ^else: ... br ^join(yielded)
//!                                   ^join(results): ...
//! ```

use super::plain::{err, Lowerer, Lv, Tile, R};
use super::writer::{ICmp, V};
use melior::ir::{BlockRef, Type, Value};
use tilec_dialect::{Attribute, Block, Operation};

impl<'c, 'm> Lowerer<'c, 'm, '_> {
    /// The MLIR values of `lv`, in order.
    fn flatten(lv: &Lv<'c, 'm>) -> Vec<Value<'c, 'm>> {
        match lv {
            Lv::Scalar(s) => vec![s.v],
            Lv::Tile(t) => t.regs.clone(),
            Lv::Smem(_) | Lv::TensorMap(_) | Lv::Bars { .. } | Lv::RawSmem { .. } => vec![],
            Lv::Tensor(t) => {
                let mut v = vec![t.ptr];
                v.extend(t.sizes.iter().map(|s| s.v));
                v.extend(t.strides.iter().map(|s| s.v));
                v
            }
        }
    }

    /// The MLIR types of `lv`'s values.
    fn flat_types(&self, lv: &Lv<'c, 'm>) -> Vec<Type<'c>> {
        match lv {
            Lv::Scalar(s) => vec![self.w.ty(s.t)],
            Lv::Tile(t) => vec![self.w.ty(t.elem); t.regs.len()],
            Lv::Smem(_) | Lv::TensorMap(_) | Lv::Bars { .. } | Lv::RawSmem { .. } => vec![],
            Lv::Tensor(t) => {
                let mut v = vec![self.w.ptr_ty(1)];
                v.extend(vec![
                    self.w.ty(tilec_dialect::ScalarType::I64);
                    2 * t.sizes.len()
                ]);
                v
            }
        }
    }

    /// `lv` rebuilt from `vals` (as many as [`Self::flatten`] gives).
    fn unflatten(lv: &Lv<'c, 'm>, vals: &[Value<'c, 'm>]) -> Lv<'c, 'm> {
        match lv {
            Lv::Scalar(s) => Lv::Scalar(V { v: vals[0], t: s.t }),
            Lv::Tile(t) => Lv::Tile(Tile {
                regs: vals.to_vec(),
                ..t.clone()
            }),
            Lv::Smem(_) | Lv::TensorMap(_) | Lv::Bars { .. } | Lv::RawSmem { .. } => lv.clone(),
            Lv::Tensor(t) => {
                let r = t.sizes.len();
                let mut t = t.clone();
                t.ptr = vals[0];
                for d in 0..r {
                    t.sizes[d].v = vals[1 + d];
                    t.strides[d].v = vals[1 + r + d];
                }
                Lv::Tensor(t)
            }
        }
    }

    /// Appends the MLIR types and values of each of `lvs` to `types` and `vals`.
    fn flatten_all(
        &self,
        lvs: &[Lv<'c, 'm>],
        types: &mut Vec<Type<'c>>,
        vals: &mut Vec<Value<'c, 'm>>,
    ) {
        for lv in lvs {
            types.extend(self.flat_types(lv));
            vals.extend(Self::flatten(lv));
        }
    }

    /// Binds each of `vars` to the values of `vals` in the shapes of `templates`.
    fn bind(
        &mut self,
        vars: &[tilec_dialect::Value],
        templates: &[Lv<'c, 'm>],
        vals: &[Value<'c, 'm>],
    ) {
        let mut at = 0;
        for (&v, t) in vars.iter().zip(templates) {
            let n = Self::flatten(t).len();
            self.vals.insert(v, Self::unflatten(t, &vals[at..at + n]));
            at += n;
        }
    }

    /// Whether `a` and `b` may stand for one another when a loop or branch joins: values in
    /// registers always; a shared-memory buffer, an mbarrier array or a tensor map (which
    /// live at a fixed place, not in registers) only when they are the same one.
    fn same_place(a: &Lv<'c, 'm>, b: &Lv<'c, 'm>) -> bool {
        match (a, b) {
            (Lv::Smem(x), Lv::Smem(y)) => x.offset == y.offset,
            (Lv::RawSmem { offset: x, .. }, Lv::RawSmem { offset: y, .. })
            | (Lv::Bars { offset: x }, Lv::Bars { offset: y }) => x == y,
            (Lv::TensorMap(x), Lv::TensorMap(y)) => x == y,
            (Lv::Smem(_) | Lv::RawSmem { .. } | Lv::Bars { .. } | Lv::TensorMap(_), _)
            | (_, Lv::Smem(_) | Lv::RawSmem { .. } | Lv::Bars { .. } | Lv::TensorMap(_)) => false,
            _ => true,
        }
    }

    /// The flattened values a region's `tile.yield` passes on, in `templates`' shapes.
    fn yielded(&mut self, b: &Block, templates: &[Lv<'c, 'm>]) -> R<Vec<Value<'c, 'm>>> {
        let Some(y) = b.ops.last() else {
            return Ok(vec![]);
        };
        let mut out = vec![];
        for (i, &v) in y.operands.iter().enumerate() {
            let lv = self.get(y, v)?;
            if templates.get(i).is_some_and(|t| !Self::same_place(&lv, t)) {
                return err(
                    y,
                    "a shared-memory buffer, mbarrier array or tensor map carried by a loop or \
                     joined by 'tile.if' must be the same one on every path (it lives at a \
                     fixed place, not in registers)",
                );
            }
            let (a, b) = (Self::flatten(&lv), templates.get(i).map(Self::flatten));
            if b.is_some_and(|b| b.len() != a.len()) {
                return err(
                    y,
                    "internal error: a yielded value changes its register count",
                );
            }
            out.extend(a);
        }
        Ok(out)
    }

    /// `tile.for` as the interpreter runs it: `trap` unless `step > 0`; `cond_br lb < ub,
    /// ^body(lb, inits), ^exit(inits)`; `^body(iv, args)`: `assume(iv >= lb)`, the body, then
    /// `cond_br more, ^body(iv + step, yields), ^exit(yields)` with
    /// [`super::writer::Writer::loop_continues`]'s test, so the loop stops where `iv + step`
    /// would overflow.
    pub(super) fn lower_for(&mut self, op: &Operation) -> R<()> {
        let lb = self.scalar(op, op.operands[0])?;
        let ub = self.scalar(op, op.operands[1])?;
        let step = self.scalar(op, op.operands[2])?;
        let inits = self.gets(op, &op.operands[3..])?;
        let (mut types, mut init_vals) = (vec![self.w.ty(lb.t)], vec![lb.v]);
        self.flatten_all(&inits, &mut types, &mut init_vals);
        self.w.trap_unless_positive(step);
        let header = self.w.new_block(&types);
        let exit = self.w.new_block(&types[1..]);
        let enter = self.w.icmp(ICmp::Slt, lb, ub);
        self.w
            .cond_br(enter, &header, &init_vals, &exit, &init_vals[1..]);
        self.w.block = header;
        let hargs = self.w.args(header);
        let iv = V {
            v: hargs[0],
            t: lb.t,
        };
        let region = &op.regions[0];
        self.vals.insert(region.args[0], Lv::Scalar(iv));
        self.bind(&region.args[1..], &inits, &hargs[1..]);
        let from_lb = self.w.icmp(ICmp::Sge, iv, lb);
        self.w.assume(from_lb);
        self.loop_body(header, &region.ops, init_vals.len())?;
        let step_iv = self.w.add(iv, step);
        let mut next = vec![step_iv.v];
        next.extend(self.yielded(region, &inits)?);
        let more = self.w.loop_continues(iv, step_iv, ub);
        self.w.cond_br(more, &header, &next, &exit, &next[1..]);
        self.w.block = exit;
        let eargs = self.w.args(exit);
        self.bind(&op.results, &inits, &eargs);
        Ok(())
    }

    /// `tile.named_barrier` in a plain launch of W = warps / 4 warpgroups: barrier `id`, or
    /// with `peer = P`, `id + (w + P) mod W` for warpgroup `w` (`%tid.x / 128`); with
    /// `only_warpgroup = k`, warpgroup `k` only; `bar.arrive` with `arrive = true`.
    ///
    /// # Errors
    /// `peer` or `only_warpgroup` in a CTA that is not whole warpgroups, an `only_warpgroup`
    /// it lacks, or ids past 15.
    pub(super) fn lower_named_barrier(&mut self, op: &Operation) -> R<()> {
        let id = op.int_attr("id").unwrap_or(1);
        let threads = op.int_attr("threads").unwrap_or(128);
        let arrive = matches!(op.attr("arrive"), Some(Attribute::Bool(true)));
        let (peer, only) = (op.int_attr("peer"), op.int_attr("only_warpgroup"));
        let wgs = self.num_warps as i64 / 4;
        if (peer.is_some() || only.is_some()) && (!self.num_warps.is_multiple_of(4) || wgs == 0) {
            return err(
                op,
                format!(
                    "'peer' and 'only_warpgroup' need whole warpgroups; the CTA has {} warps",
                    self.num_warps
                ),
            );
        }
        if let Some(k) = only.filter(|&k| k >= wgs) {
            return err(
                op,
                format!("'only_warpgroup = {k}', but the CTA has {wgs} warpgroup(s)"),
            );
        }
        if peer.is_some() && id + wgs - 1 > 15 {
            return err(
                op,
                format!(
                    "named barrier {id} + a warpgroup index of up to {} exceeds 15",
                    wgs - 1
                ),
            );
        }
        let c2 = self.w.i32(2);
        let wg = self.w.bin("lshr", self.warp, c2);
        let cont = match only {
            Some(k) => {
                let kv = self.w.i32(k);
                let mine = self.w.icmp(ICmp::Eq, wg, kv);
                let go = self.w.new_block(&[]);
                let cont = self.w.new_block(&[]);
                self.w.cond_br(mine, &go, &[], &cont, &[]);
                self.w.block = go;
                Some(cont)
            }
            None => None,
        };
        let idv = match peer {
            Some(p) => {
                let pv = self.w.i32(p);
                let shifted = self.w.add(wg, pv);
                let n = self.w.i32(wgs);
                let r = self.w.bin("urem", shifted, n);
                let base = self.w.i32(id);
                self.w.add(r, base)
            }
            None => self.w.i32(id),
        };
        self.w.named_barrier(idv, threads, arrive);
        if let Some(cont) = cont {
            self.w.br(&cont, &[]);
            self.w.block = cont;
        }
        Ok(())
    }

    /// Lowers a loop body's `ops` from block `entry` on (the insertion block), one loop
    /// deeper. The body gets its own prologue: the thread's lane and warp read again (a
    /// `mov` from %tid.x that LLVM may not hoist), and every thread coordinate the body needs
    /// computed from them there. Addresses and bounds built on thread coordinates then vary
    /// with the loop, so LLVM does not hoist one per element out of the loop and keep them
    /// all live through it (register pressure ptxas does not undo).
    fn loop_body(&mut self, entry: BlockRef<'c, 'm>, ops: &[Operation], carried: usize) -> R<()> {
        let saved = (
            self.prologue,
            self.lane,
            self.warp,
            std::mem::take(&mut self.thread_coords),
        );
        let tid = self.w.opaque_tid();
        let c31 = self.w.i32(31);
        let c5 = self.w.i32(5);
        self.lane = self.w.bin("and", tid, c31);
        self.warp = self.w.bin("lshr", tid, c5);
        self.prologue = entry;
        let first = self.w.new_block(&[]);
        self.w.block = first;
        self.loop_depth += 1;
        self.loop_carried += carried;
        let lowered = self.lower_block(ops);
        self.loop_carried -= carried;
        self.loop_depth -= 1;
        let here = self.w.block;
        self.w.block = entry;
        self.w.br(&first, &[]);
        self.w.block = here;
        (self.prologue, self.lane, self.warp, self.thread_coords) = saved;
        lowered
    }

    /// `tile.while` as a do-while: `br ^body(inits)`; `^body(args)`: the body, then
    /// `cond_br %continue, ^body(next), ^exit(next)` with the yield's first operand as
    /// `%continue`.
    pub(super) fn lower_while(&mut self, op: &Operation) -> R<()> {
        let inits = self.gets(op, &op.operands)?;
        let (mut types, mut init_vals) = (vec![], vec![]);
        self.flatten_all(&inits, &mut types, &mut init_vals);
        let region = &op.regions[0];
        let Some(y) = region.ops.last().filter(|y| !y.operands.is_empty()) else {
            return err(op, "'tile.while' yields its continue flag first");
        };
        let body = self.w.new_block(&types);
        let exit = self.w.new_block(&types);
        self.w.br(&body, &init_vals);
        self.w.block = body;
        let bargs = self.w.args(body);
        self.bind(&region.args, &inits, &bargs);
        self.loop_body(body, &region.ops, init_vals.len())?;
        let go = self.scalar(y, y.operands[0])?;
        let mut next = vec![];
        for (i, &v) in y.operands[1..].iter().enumerate() {
            let lv = self.get(y, v)?;
            if inits.get(i).is_some_and(|t| !Self::same_place(&lv, t)) {
                return err(
                    y,
                    "a shared-memory buffer, mbarrier array or tensor map carried by a loop \
                     must be the same one on every iteration (it lives at a fixed place, not \
                     in registers)",
                );
            }
            let vals = Self::flatten(&lv);
            if inits.get(i).map(|t| Self::flatten(t).len()) != Some(vals.len()) {
                return err(
                    y,
                    "internal error: a carried value changes its register count",
                );
            }
            next.extend(vals);
        }
        self.w.cond_br(go, &body, &next, &exit, &next);
        self.w.block = exit;
        let eargs = self.w.args(exit);
        self.bind(&op.results, &inits, &eargs);
        Ok(())
    }

    pub(super) fn lower_if(&mut self, op: &Operation) -> R<()> {
        let c = self.scalar(op, op.operands[0])?;
        let then_b = self.w.new_block(&[]);
        let else_b = self.w.new_block(&[]);
        self.w.cond_br(c, &then_b, &[], &else_b, &[]);
        self.w.block = then_b;
        self.lower_block(&op.regions[0].ops)?;
        // The then-region's yielded values give the results' shapes and types.
        let templates: Vec<Lv<'c, 'm>> = match op.regions[0].ops.last() {
            Some(y) => y
                .operands
                .iter()
                .map(|&v| self.get(y, v))
                .collect::<R<_>>()?,
            None => vec![],
        };
        let types: Vec<Type<'c>> = templates.iter().flat_map(|t| self.flat_types(t)).collect();
        let join = self.w.new_block(&types);
        let tv = self.yielded(&op.regions[0], &templates)?;
        self.w.br(&join, &tv);
        self.w.block = else_b;
        if let Some(r) = op.regions.get(1) {
            self.lower_block(&r.ops)?;
            let ev = self.yielded(r, &templates)?;
            self.w.br(&join, &ev);
        } else {
            self.w.br(&join, &[]);
        }
        self.w.block = join;
        let jargs = self.w.args(join);
        self.bind(&op.results, &templates, &jargs);
        Ok(())
    }
}
