//! Control flow of the GEMM pipeline as blocks with arguments: `tile.for` (a header that
//! tests the induction value, the body, an exit), `tile.while` (a do-while block) and
//! `tile.if` (two branches and a join). Loops and ifs carry scalars and accumulators; an
//! epilogue value cannot be carried (it is evaluated per register at its store).

use super::{err, Gemm, Lv, R};
use crate::nvvm::writer::{ICmp, V};
use melior::ir::{block::BlockLike, Type, Value};
use std::rc::Rc;
use tilec_dialect::{Diagnostic, Operation, ScalarType, Type as TileType, Value as TileValue};

/// Carried values: their MLIR values and types, flattened (an accumulator is one block
/// argument per register), and how each lives in the lowered code.
struct Carried<'c, 'm> {
    vals: Vec<Value<'c, 'm>>,
    tys: Vec<Type<'c>>,
    kinds: Vec<Lv<'c, 'm>>,
}

impl<'c, 'm> Carried<'c, 'm> {
    fn new() -> Self {
        Carried {
            vals: vec![],
            tys: vec![],
            kinds: vec![],
        }
    }

    fn push(&mut self, lv: Lv<'c, 'm>, ty: Type<'c>, f32t: Type<'c>) {
        match &lv {
            Lv::Scalar(s) => {
                self.vals.push(s.v);
                self.tys.push(ty);
            }
            Lv::Acc(regs) => {
                self.vals.extend(regs.iter().copied());
                self.tys.extend(std::iter::repeat_n(f32t, regs.len()));
            }
            _ => unreachable!("carry_one() admits scalars and accumulators only"),
        }
        self.kinds.push(lv);
    }
}

/// The carried values of `kinds` as the flattened block arguments or results `vals`.
fn renamed<'c, 'm>(kinds: &[Lv<'c, 'm>], vals: &[Value<'c, 'm>]) -> Vec<Lv<'c, 'm>> {
    let mut at = 0;
    kinds
        .iter()
        .map(|kind| match kind {
            Lv::Acc(regs) => {
                let lv = Lv::Acc(Rc::new(vals[at..at + regs.len()].to_vec()));
                at += regs.len();
                lv
            }
            Lv::Scalar(s) => {
                at += 1;
                Lv::Scalar(V {
                    v: vals[at - 1],
                    t: s.t,
                })
            }
            _ => unreachable!("carry_one() admits scalars and accumulators only"),
        })
        .collect()
}

fn args_of<'c, 'm>(b: &melior::ir::BlockRef<'c, 'm>) -> Vec<Value<'c, 'm>> {
    (0..b.argument_count())
        .filter_map(|i| b.argument(i).ok().map(Into::into))
        .collect()
}

impl<'c, 'm> Gemm<'c, 'm, '_> {
    /// A carried value and its MLIR type (an accumulator's: f32, one per register): a
    /// scalar or an accumulator; where the loop or if carries an accumulator (`acc_slot`),
    /// also a `tile.zeros` (zero registers, built here) or an f32 tile of the
    /// accumulator's shape computed from accumulators (the promoted sum `acc + part`,
    /// evaluated per register).
    fn carry_one(
        &mut self,
        op: &Operation,
        v: TileValue,
        acc_slot: bool,
    ) -> R<(Lv<'c, 'm>, Type<'c>)> {
        let lv = self
            .vals
            .get(&v)
            .cloned()
            .ok_or_else(|| Diagnostic::error(op.loc.clone(), "loop init not lowered"))?;
        let f32t = self.w.ty(ScalarType::F32);
        match &lv {
            Lv::Scalar(s) => Ok((lv.clone(), self.w.ty(s.t))),
            Lv::Acc(_) => Ok((lv, f32t)),
            Lv::Zeros if acc_slot => {
                let zero = self.w.float(0.0, ScalarType::F32);
                let n = self.acc.as_ref().map_or(0, |a| a.regs);
                Ok((Lv::Acc(Rc::new(vec![zero.v; n])), f32t))
            }
            Lv::Lazy(l) if acc_slot && self.is_acc_tile(v) => {
                let regs = self.materialize(op, l)?;
                Ok((Lv::Acc(Rc::new(regs)), f32t))
            }
            _ => err(
                op,
                "convert-tile-to-nvvm: a loop or 'tile.if' may carry scalars and accumulators \
                 only",
            ),
        }
    }

    /// The values `vals` that `op` carries into its results `results` (a loop's inits, a
    /// branch's yields), as [`Self::carry_one`] gives them.
    fn carried(
        &mut self,
        op: &Operation,
        vals: &[TileValue],
        results: &[TileValue],
    ) -> R<Carried<'c, 'm>> {
        let f32t = self.w.ty(ScalarType::F32);
        let mut c = Carried::new();
        for (i, &v) in vals.iter().enumerate() {
            let acc_slot = results
                .get(i)
                .is_some_and(|&r| matches!(self.m.ty(r), TileType::Tile { .. }))
                && self.acc.is_some();
            let (lv, t) = self.carry_one(op, v, acc_slot)?;
            c.push(lv, t, f32t);
        }
        Ok(c)
    }

    /// Lowers a loop body (one level deeper) and returns the values its `tile.yield`
    /// passes on.
    fn loop_body(&mut self, b: &tilec_dialect::Block) -> R<Vec<Value<'c, 'm>>> {
        self.loop_depth += 1;
        let r = self.lower_block(&b.ops);
        self.loop_depth -= 1;
        r?;
        let y = b.ops.last().expect("verified yield");
        let mut out = vec![];
        for v in &y.operands {
            match self.vals.get(v).cloned() {
                Some(Lv::Scalar(s)) => out.push(s.v),
                Some(Lv::Acc(a)) => out.extend(a.iter().copied()),
                Some(Lv::Lazy(l)) if self.is_acc_tile(*v) => {
                    // An f32 tile of the accumulator's shape computed from accumulators (the
                    // promoted sum, `acc + part`): carried as accumulator registers.
                    out.extend(self.materialize(y, &l)?);
                }
                None => {
                    return Err(Diagnostic::error(
                        y.loc.clone(),
                        "yielded value not lowered",
                    ))
                }
                Some(_) => {
                    return Err(Diagnostic::error(
                        y.loc.clone(),
                        "convert-tile-to-nvvm: a loop may carry scalars and accumulators only; \
                         this yields an epilogue tile (evaluated per register at its store)",
                    ))
                }
            }
        }
        Ok(out)
    }

    /// `tile.for` as the interpreter runs it (the plain lowering's form): `trap` unless
    /// `step > 0`; `cond_br lb < ub, ^head(lb, inits), ^exit(inits)`; `^head(iv, args)`:
    /// `assume(iv >= lb)`, the body, then `cond_br more, ^head(iv + step, yields),
    /// ^exit(yields)` with [`crate::nvvm::writer::Writer::loop_continues`]'s test.
    pub(super) fn lower_for(&mut self, op: &Operation) -> R<()> {
        let lb = self.scalar(op, op.operands[0])?;
        let ub = self.scalar(op, op.operands[1])?;
        let step = self.scalar(op, op.operands[2])?;
        let c = self.carried(op, &op.operands[3..], &op.results)?;
        let mut init = vec![lb.v];
        init.extend(&c.vals);
        let mut tys = vec![self.w.ty(lb.t)];
        tys.extend(&c.tys);
        let b = &op.regions[0];
        self.w.trap_unless_positive(step);
        let head = self.w.block(&tys);
        let exit = self.w.block(&c.tys);
        let enter = self.w.icmp(ICmp::Slt, lb, ub);
        self.w.cond_br(enter, &head, &init, &exit, &c.vals);
        let head = self.w.place(head);
        let hargs = args_of(&head);
        let iv = V {
            v: hargs[0],
            t: lb.t,
        };
        self.vals.insert(b.args[0], Lv::Scalar(iv));
        for (&a, lv) in b.args[1..].iter().zip(renamed(&c.kinds, &hargs[1..])) {
            self.vals.insert(a, lv);
        }
        let from_lb = self.w.icmp(ICmp::Sge, iv, lb);
        self.w.assume(from_lb);
        let yielded = self.loop_body(b)?;
        let next = self.w.add(iv, step);
        let more = self.w.loop_continues(iv, next, ub);
        let mut again = vec![next.v];
        again.extend(&yielded);
        self.w.cond_br(more, &head, &again, &exit, &yielded);
        let exit = self.w.place(exit);
        let res = args_of(&exit);
        for (&r, lv) in op.results.iter().zip(renamed(&c.kinds, &res)) {
            self.vals.insert(r, lv);
        }
        Ok(())
    }

    /// `tile.while` as a do-while: `br ^body(inits)`; `^body(args)`: the body, then
    /// `cond_br %continue, ^body(next), ^done(next)`.
    pub(super) fn lower_while(&mut self, op: &Operation) -> R<()> {
        let c = self.carried(op, &op.operands, &op.results)?;
        let b = &op.regions[0];
        let head = self.w.block(&c.tys);
        let exit = self.w.block(&c.tys);
        self.w.br(&head, &c.vals);
        let head = self.w.place(head);
        for (&a, lv) in b.args.iter().zip(renamed(&c.kinds, &args_of(&head))) {
            self.vals.insert(a, lv);
        }
        let mut vals = self.loop_body(b)?;
        if vals.is_empty() {
            return err(op, "'tile.while' yields its continue flag first");
        }
        let go = V {
            v: vals.remove(0),
            t: ScalarType::I1,
        };
        self.w.cond_br(go, &head, &vals, &exit, &vals);
        let exit = self.w.place(exit);
        for (&r, lv) in op.results.iter().zip(renamed(&c.kinds, &args_of(&exit))) {
            self.vals.insert(r, lv);
        }
        Ok(())
    }

    /// Results (scalars and accumulators, as loops carry) are the join block's arguments.
    pub(super) fn lower_if(&mut self, op: &Operation) -> R<()> {
        let c = self.scalar(op, op.operands[0])?;
        let then_b = self.w.block(&[]);
        let else_b = self.w.block(&[]);
        self.w.cond_br(c, &then_b, &[], &else_b, &[]);
        let mut join = None;
        let mut kinds = vec![];
        let mut tys: Vec<Type<'c>> = vec![];
        for (r, b) in [(0, then_b), (1, else_b)] {
            self.w.place(b);
            self.lower_block(&op.regions[r].ops)?;
            let ys = op.regions[r]
                .ops
                .last()
                .filter(|y| y.kind == tilec_dialect::OpKind::Yield)
                .map(|y| y.operands.clone())
                .unwrap_or_default();
            let y = self.carried(op, &ys, &op.results)?;
            if r == 0 {
                tys = y.tys.clone();
                kinds = y.kinds;
                join = Some(self.w.block(&tys));
            } else if y.tys != tys {
                return err(op, "the branches of 'tile.if' yield different types");
            }
            let j = join.as_ref().expect("made with the first branch");
            self.w.br(j, &y.vals);
        }
        let join = self.w.place(join.expect("made with the first branch"));
        for (&r, lv) in op.results.iter().zip(renamed(&kinds, &args_of(&join))) {
            self.vals.insert(r, lv);
        }
        Ok(())
    }
}
