//! Algebra: identities that hold bit for bit in IEEE 754 (with the interpreter's
//! `max`/`min`), and splat folding. Constants fold in the analysis; these rules fold
//! what the analysis cannot see (splats of opaque scalars) and the identities.
//!
//! Not here, because they do not hold bit for bit: `x + 0 → x` (−0 + +0 = +0), `x · 0 → 0`
//! (∞ · 0, −x · 0), `−(x − y) → y − x` (the sign of a zero result), reassociation.

use super::{
    const_node, facts, is_const, pow2_with_exact_inverse, rule, rule_fn, rule_if, var, Rewrite,
};
use crate::simplify::lang::{TileLang, BINARY, UNARY};

/// The algebra rules.
#[rustfmt::skip]
pub fn rules() -> Vec<Rewrite> {
    let mut r = vec![
        // IEEE addition, multiplication, maximumNumber and minimumNumber are commutative.
        rule("algebra-add-comm",        "(add ?x ?y)",                 "(add ?y ?x)"),
        rule("algebra-mul-comm",        "(mul ?x ?y)",                 "(mul ?y ?x)"),
        rule("algebra-max-comm",        "(max ?x ?y)",                 "(max ?y ?x)"),
        rule("algebra-min-comm",        "(min ?x ?y)",                 "(min ?y ?x)"),
        // x + (−0) = x for every x, −0 included (+0 would turn −0 into +0).
        rule_if("algebra-add-neg-zero",
            "(add ?x ?z)", "?x", is_const("?z", -0.0)),
        // x − (+0) = x + (−0) = x.
        rule_if("algebra-sub-zero",
            "(sub ?x ?z)", "?x", is_const("?z", 0.0)),
        // x · 1 = x and x / 1 = x exactly.
        rule_if("algebra-mul-one",
            "(mul ?x ?o)", "?x", is_const("?o", 1.0)),
        rule_if("algebra-div-one",
            "(div ?x ?o)", "?x", is_const("?o", 1.0)),
        // x · (−1) = −x exactly.
        rule_if("algebra-mul-neg-one",
            "(mul ?x ?m)", "(neg ?x)", is_const("?m", -1.0)),
        // x − y is x + (−y) by definition; both directions.
        rule("algebra-sub-to-add-neg",  "(sub ?x ?y)",                 "(add ?x (neg ?y))"),
        rule("algebra-add-neg-to-sub",  "(add ?x (neg ?y))",           "(sub ?x ?y)"),
        // Negation is exact and involutive.
        rule("algebra-neg-neg",         "(neg (neg ?x))",              "?x"),
        // Signs cancel in a product; round-to-nearest-even is symmetric under negation.
        rule("algebra-mul-neg-neg",     "(mul (neg ?x) (neg ?y))",     "(mul ?x ?y)"),
        rule("algebra-mul-neg-out",     "(mul (neg ?x) ?y)",           "(neg (mul ?x ?y))"),
        rule("algebra-neg-into-mul",    "(neg (mul ?x ?y))",           "(mul (neg ?x) ?y)"),
        rule("algebra-div-neg-out",     "(div (neg ?x) ?y)",           "(neg (div ?x ?y))"),
        // |−x| = |x|, ||x|| = |x|, relu is idempotent.
        rule("algebra-abs-neg",         "(abs (neg ?x))",              "(abs ?x)"),
        rule("algebra-abs-abs",         "(abs (abs ?x))",              "(abs ?x)"),
        rule("algebra-relu-relu",       "(relu (relu ?x))",            "(relu ?x)"),
        // relu is defined as max(x, +0).
        rule_if("algebra-max-zero-relu",
            "(max ?x ?z)", "(relu ?x)", is_const("?z", 0.0)),
        // max(x, x) = min(x, x) = x, NaN and signed zeros included.
        rule("algebra-max-idem",        "(max ?x ?x)",                 "?x"),
        rule("algebra-min-idem",        "(min ?x ?x)",                 "?x"),
        // Both arms equal: the condition does not matter.
        rule("algebra-select-same",     "(select ?c ?x ?x)",           "?x"),
        // x / ±2^k = x · ±2^−k: both round the same real number (1/2^k must be exact).
        rule_fn("algebra-div-pow2",     "(div ?x ?p)", {
            let (x, p) = (var("?x"), var("?p"));
            move |eg, s| {
                let f = facts(eg, s, p);
                let inv = pow2_with_exact_inverse(f.constant?, f.ty.elem)?;
                let k = const_node(eg, f.ty, inv);
                Some(eg.add(TileLang::Mul([s[x], k])))
            }
        }),
    ];
    // Splat folding: an elementwise op on splats is the splat of the scalar op (the same
    // rounding happens once per element).
    for (_, op) in BINARY {
        r.push(rule(
            &format!("algebra-splat-{op}"),
            &format!("({op} (splat ?t ?a) (splat ?t ?b))"),
            &format!("(splat ?t ({op} ?a ?b))"),
        ));
    }
    for (_, op) in UNARY {
        r.push(rule(
            &format!("algebra-splat-{op}"),
            &format!("({op} (splat ?t ?a))"),
            &format!("(splat ?t ({op} ?a))"),
        ));
    }
    r
}
