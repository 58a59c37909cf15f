//! Loop-aware hoisting: rewrites across a `tile.for`'s boundary, done on the IR (an
//! e-graph holds one region at a time). Each rewrite has a name, counted in the pass
//! statistics like the e-graph rules:
//!
//! - `hoist-invariant`: a pure float op of a loop body whose operands are all defined outside the
//!   loop moves before the loop (why it is sound: pure, cannot trap; runs once instead of once per
//!   trip)
//! - `hoist-pow2-scale-lhs`, `hoist-pow2-scale-rhs`: `acc = dot(a · 2^k, b, acc)` in the loop (a
//!   loop-invariant splat) → `dot(a, b, acc)` and `acc · 2^k` after the loop (the initial value
//!   divided by 2^k, when not zero) (why it is sound: scaling by a positive power of two commutes
//!   with every rounding of the accumulation, barring overflow and underflow)
//! - `hoist-scale-lhs`, `hoist-scale-rhs`: the same for any loop-invariant scale, only with
//!   `reassociate=true` (why it is sound: equal up to rounding)
//!
//! The scale rules apply only when the accumulator is an f32 loop-carried value used by
//! nothing but that dot, the scaled operand feeds only the dot, and the cost model says
//! the loop's `trip count × operand` multiplications cost more than the epilogue's.

use crate::simplify::cost::{op_cost, trip_count};
use crate::simplify::region::{in_language, substitute_op};
use std::collections::{BTreeMap, HashMap, HashSet};
use tilec_dialect::interp::round_to;
use tilec_dialect::{
    Attribute, Block, Location, Module, OpKind, Operation, ScalarType, Type, Value,
};

/// The loop-level rules: name and one-line justification.
pub const RULES: [(&str, &str); 5] = [
    (
        "hoist-invariant",
        "a pure op whose operands are defined outside the loop computes the same \
            value on every trip",
    ),
    (
        "hoist-pow2-scale-lhs",
        "a positive power-of-two scale of the dot's A operand commutes with \
            every rounding of the K loop's accumulation",
    ),
    (
        "hoist-pow2-scale-rhs",
        "a positive power-of-two scale of the dot's B operand commutes with \
            every rounding of the K loop's accumulation",
    ),
    (
        "hoist-scale-lhs",
        "any loop-invariant scale of A moves to the epilogue (equal up to \
            rounding; reassociate=true)",
    ),
    (
        "hoist-scale-rhs",
        "any loop-invariant scale of B moves to the epilogue (equal up to \
            rounding; reassociate=true)",
    ),
];

/// What the hoisting needs to know.
pub struct HoistContext<'a> {
    /// Integer constants of the kernel, for trip counts.
    pub consts: &'a HashMap<Value, i64>,
    /// The trip count assumed for unknown bounds.
    pub default_trip: u64,
    /// Whether rewrites exact only up to rounding are allowed.
    pub reassociate: bool,
    /// Counts of rewrites done, by rule name.
    pub fired: &'a mut BTreeMap<String, u64>,
}

fn defined_in(b: &Block, out: &mut HashSet<Value>) {
    out.extend(&b.args);
    for op in &b.ops {
        out.extend(&op.results);
        for r in &op.regions {
            defined_in(r, out);
        }
    }
}

fn count_uses(b: &Block, v: Value) -> usize {
    b.ops
        .iter()
        .map(|o| {
            o.operands.iter().filter(|&&x| x == v).count()
                + o.regions.iter().map(|r| count_uses(r, v)).sum::<usize>()
        })
        .sum()
}

/// Move loop-invariant pure ops out of every loop in `block` (inner loops first, so an op
/// can climb several levels). Returns whether anything moved.
pub fn hoist_invariants(m: &Module, block: &mut Block, cx: &mut HoistContext<'_>) -> bool {
    let mut changed = false;
    for op in &mut block.ops {
        for r in &mut op.regions {
            changed |= hoist_invariants(m, r, cx);
        }
    }
    let mut i = 0;
    while i < block.ops.len() {
        if block.ops[i].kind != OpKind::For || trip_count(&block.ops[i], cx.consts) == Some(0) {
            i += 1;
            continue;
        }
        let Some(body) = block.ops[i].regions.first_mut() else {
            i += 1;
            continue;
        };
        let mut inside = HashSet::new();
        defined_in(body, &mut inside);
        let mut moved = vec![];
        let mut k = 0;
        while k < body.ops.len() {
            let op = &body.ops[k];
            if in_language(m, op) && op.operands.iter().all(|v| !inside.contains(v)) {
                let op = body.ops.remove(k);
                inside.remove(&op.results[0]);
                moved.push(op);
            } else {
                k += 1;
            }
        }
        let n = moved.len();
        if n > 0 {
            *cx.fired.entry("hoist-invariant".into()).or_default() += n as u64;
            changed = true;
        }
        block.ops.splice(i..i, moved);
        i += n + 1;
    }
    changed
}

/// A uniform, loop-invariant scale: the scalar it splats and its value when constant.
struct Scale {
    scalar: Value,
    constant: Option<f32>,
}

/// The definitions of the kernel's splat and constant ops (what a scale is made of).
pub struct Defs(HashMap<Value, Operation>);

impl Defs {
    /// Collect from a kernel.
    pub fn of(kernel: &Operation) -> Defs {
        let mut d = HashMap::new();
        kernel.walk(&mut |o| {
            if matches!(
                o.kind,
                OpKind::Splat | OpKind::Broadcast | OpKind::Constant | OpKind::Zeros
            ) && o.results.len() == 1
            {
                d.insert(o.results[0], o.clone());
            }
        });
        Defs(d)
    }

    fn scale(&self, m: &Module, v: Value) -> Option<Scale> {
        let d = self.0.get(&v)?;
        if !matches!(d.kind, OpKind::Splat | OpKind::Broadcast) {
            return None;
        }
        let s = *d.operands.first()?;
        if !m.try_ty(s)?.is_scalar() {
            return None;
        }
        let constant = self
            .0
            .get(&s)
            .filter(|c| c.kind == OpKind::Constant)
            .and_then(|c| c.attr("value")?.as_f64())
            .map(|x| {
                round_to(
                    m.try_ty(s).and_then(Type::elem).unwrap_or(ScalarType::F32),
                    x as f32,
                )
            });
        Some(Scale {
            scalar: s,
            constant,
        })
    }

    fn is_zero(&self, v: Value) -> bool {
        match self.0.get(&v) {
            Some(d) if d.kind == OpKind::Zeros => true,
            Some(d) if d.kind == OpKind::Splat => {
                d.operands
                    .first()
                    .and_then(|s| self.0.get(s))
                    .and_then(|c| c.attr("value")?.as_f64())
                    == Some(0.0)
            }
            _ => false,
        }
    }
}

/// A power of two c > 0 whose inverse is exact in f32 and in `elem`.
fn exact_pow2(c: f32, elem: ScalarType) -> bool {
    c > 0.0
        && crate::simplify::rules::pow2_with_exact_inverse(c, elem).is_some()
        && crate::simplify::rules::pow2_with_exact_inverse(c, ScalarType::F32).is_some()
}

struct Plan {
    carried: usize,
    dot: usize,
    side: usize,
    mul: usize,
    data: Value,
    scale: Scale,
    rule: &'static str,
}

fn plan(m: &Module, f: &Operation, defs: &Defs, cx: &HoistContext<'_>) -> Option<Plan> {
    let body = f.regions.first()?;
    let yld = body.ops.last().filter(|o| o.kind == OpKind::Yield)?;
    let mut inside = HashSet::new();
    defined_in(body, &mut inside);
    let trips = trip_count(f, cx.consts).unwrap_or(cx.default_trip);
    for (j, &y) in yld.operands.iter().enumerate() {
        let acc = *body.args.get(1 + j)?;
        let Some(Type::Tile {
            shape: acc_shape,
            elem: ScalarType::F32,
            ..
        }) = m.try_ty(acc)
        else {
            continue;
        };
        let Some(d) = body.ops.iter().position(|o| {
            o.kind == OpKind::Dot
                && tilec_dialect::ops::dot_precision(o) == "ieee"
                && o.results.first() == Some(&y)
                && o.operands.get(2) == Some(&acc)
        }) else {
            continue;
        };
        if count_uses(body, acc) != 1 || count_uses(body, y) != 1 {
            continue;
        }
        let init_zero = defs.is_zero(*f.operands.get(3 + j)?);
        for side in 0..2 {
            let x = body.ops[d].operands[side];
            let Some(mi) = body
                .ops
                .iter()
                .position(|o| o.kind == OpKind::Mul && o.results.first() == Some(&x))
            else {
                continue;
            };
            if count_uses(body, x) != 1 {
                continue;
            }
            let (p, q) = (body.ops[mi].operands[0], body.ops[mi].operands[1]);
            for (data, sv) in [(p, q), (q, p)] {
                if inside.contains(&sv) {
                    continue;
                }
                let Some(scale) = defs.scale(m, sv) else {
                    continue;
                };
                let elem = m.try_ty(x).and_then(Type::elem)?;
                let exact = scale.constant.is_some_and(|c| exact_pow2(c, elem));
                let rule = match (exact, cx.reassociate, side) {
                    (true, _, 0) => "hoist-pow2-scale-lhs",
                    (true, _, _) => "hoist-pow2-scale-rhs",
                    (false, true, 0) => "hoist-scale-lhs",
                    (false, true, _) => "hoist-scale-rhs",
                    (false, false, _) => continue,
                };
                let xs = m.try_ty(x).and_then(Type::tile_shape)?;
                let before = trips.saturating_mul(op_cost(OpKind::Mul, xs, xs));
                let epilogue = op_cost(OpKind::Mul, acc_shape, acc_shape) + 2;
                let after = if init_zero {
                    epilogue
                } else {
                    epilogue + op_cost(OpKind::Div, acc_shape, acc_shape) + 2
                };
                if after >= before {
                    continue;
                }
                return Some(Plan {
                    carried: j,
                    dot: d,
                    side,
                    mul: mi,
                    data,
                    scale,
                    rule,
                });
            }
        }
    }
    None
}

fn new_op(
    m: &mut Module,
    kind: OpKind,
    operands: Vec<Value>,
    ty: Type,
    loc: &Location,
) -> Operation {
    let mut op = Operation::new(kind, loc.clone());
    op.operands = operands;
    op.results = vec![m.new_value(ty, None)];
    op
}

fn float_const(m: &mut Module, x: f32, loc: &Location) -> Operation {
    let mut op = new_op(
        m,
        OpKind::Constant,
        vec![],
        Type::Scalar(ScalarType::F32),
        loc,
    );
    op.attrs.insert("value".into(), Attribute::Float(x as f64));
    op
}

/// Move scales of dot operands out of the K loops of `block` and the blocks nested in it.
/// Returns whether anything moved.
pub fn hoist_scales(
    m: &mut Module,
    block: &mut Block,
    defs: &Defs,
    cx: &mut HoistContext<'_>,
) -> bool {
    let mut changed = false;
    for op in &mut block.ops {
        for r in &mut op.regions {
            changed |= hoist_scales(m, r, defs, cx);
        }
    }
    let mut i = 0;
    while i < block.ops.len() {
        if block.ops[i].kind != OpKind::For {
            i += 1;
            continue;
        }
        let Some(p) = plan(m, &block.ops[i], defs, cx) else {
            i += 1;
            continue;
        };
        let loc = block.ops[i].loc.clone();
        let acc_ty = m.ty(block.ops[i].results[p.carried]).clone();
        // The scale as an f32 scalar, splatted to the accumulator's type.
        let mut before = vec![];
        let k = match p.scale.constant {
            Some(c) if p.rule.starts_with("hoist-pow2") => {
                let op = float_const(m, c, &loc);
                let v = op.results[0];
                before.push(op);
                v
            }
            _ if m.ty(p.scale.scalar) == &Type::Scalar(ScalarType::F32) => p.scale.scalar,
            _ => {
                let op = new_op(
                    m,
                    OpKind::Convert,
                    vec![p.scale.scalar],
                    Type::Scalar(ScalarType::F32),
                    &loc,
                );
                let v = op.results[0];
                before.push(op);
                v
            }
        };
        let splat = new_op(m, OpKind::Splat, vec![k], acc_ty.clone(), &loc);
        let ks = splat.results[0];
        before.push(splat);
        // A non-zero initial value is divided by the scale (multiplied by the exact
        // inverse of a power of two).
        let init = block.ops[i].operands[3 + p.carried];
        if !defs.is_zero(init) {
            let scaled = match p
                .scale
                .constant
                .filter(|_| p.rule.starts_with("hoist-pow2"))
            {
                Some(c) => {
                    let inv = float_const(m, 1.0 / c, &loc);
                    let inv_s =
                        new_op(m, OpKind::Splat, vec![inv.results[0]], acc_ty.clone(), &loc);
                    let mul = new_op(
                        m,
                        OpKind::Mul,
                        vec![init, inv_s.results[0]],
                        acc_ty.clone(),
                        &loc,
                    );
                    before.extend([inv, inv_s]);
                    mul
                }
                None => new_op(m, OpKind::Div, vec![init, ks], acc_ty.clone(), &loc),
            };
            block.ops[i].operands[3 + p.carried] = scaled.results[0];
            before.push(scaled);
        }
        // The loop multiplies the unscaled operand.
        {
            let body = &mut block.ops[i].regions[0];
            body.ops[p.dot].operands[p.side] = p.data;
            body.ops.remove(p.mul);
        }
        // The epilogue scales the result.
        let res = block.ops[i].results[p.carried];
        let mul = new_op(m, OpKind::Mul, vec![res, ks], acc_ty, &loc);
        let scaled = mul.results[0];
        let map = HashMap::from([(res, scaled)]);
        for op in &mut block.ops[i + 1..] {
            substitute_op(op, &map);
        }
        let n = before.len();
        block.ops.splice(i..i, before);
        block.ops.insert(i + n + 1, mul);
        *cx.fired.entry(p.rule.into()).or_default() += 1;
        changed = true;
        // Look at the same loop again: another carried value may have a scale too.
        i += n;
    }
    changed
}
