//! Fusion: an add after a dot becomes its accumulator, and elementwise work on broadcast
//! rows (a bias, a per-column scale in the epilogue) runs on the row, broadcast once.
//!
//! The accumulator rule rests on the interpreter's dot: the products are summed from +0
//! (so the sum `s` is never −0) and the accumulator is added last, `s + c`. Hence
//! `dot(a, b, ±0) + c = (s ± 0) + c = s + c = dot(a, b, c)` bit for bit — for an f32
//! accumulator; a narrower one rounds `s` first and is left alone.

use super::{facts, is_zero, rule, rule_fn, rule_if, ty_node, var, Rewrite};
use crate::simplify::lang::{EGraph, TileLang, BINARY, UNARY};
use egg::{Id, Subst};
use tilec_dialect::ScalarType;

/// The fusion rules.
#[rustfmt::skip]
pub fn rules() -> Vec<Rewrite> {
    let mut r = vec![
        // An add after a zero-accumulator dot is its accumulator (f32 accumulators).
        rule_if("fusion-add-dot-acc",
            "(add (dot ?a ?b ?z) ?c)", "(dot ?a ?b ?c)", f32_zero_acc("?z")),
        // A subtraction likewise, as the accumulation of −c (x − c is x + (−c)).
        rule_if("fusion-sub-dot-acc",
            "(sub (dot ?a ?b ?z) ?c)", "(dot ?a ?b (neg ?c))", f32_zero_acc("?z")),
        // (−a)(−b) = ab exactly: the dot of two negated operands is the plain dot.
        rule("fusion-dot-neg-neg",      "(dot (neg ?a) (neg ?b) ?c)",     "(dot ?a ?b ?c)"),
    ];
    // An elementwise op on rows broadcast alike is the op on the rows, broadcast once.
    for (_, op) in BINARY {
        r.push(rule_if(
            &format!("fusion-broadcast-{op}"),
            &format!("({op} (broadcast ?t ?x) (broadcast ?t ?y))"),
            &format!("(broadcast ?t ({op} ?x ?y))"),
            super::same_type("?x", "?y"),
        ));
    }
    for (_, op) in UNARY {
        r.push(rule(
            &format!("fusion-broadcast-{op}"),
            &format!("({op} (broadcast ?t ?x))"),
            &format!("(broadcast ?t ({op} ?x))"),
        ));
    }
    // An elementwise op of a broadcast row and a splat is the op on the row and a smaller
    // splat (every element of the splat is the same scalar).
    for (kind, op) in BINARY {
        r.push(rule_fn(&format!("fusion-broadcast-splat-{op}"), &format!("({op} (broadcast ?t ?x) \
            (splat ?t ?s))"), {
            let (x, sc) = (var("?x"), var("?s"));
            move |eg, s| {
                let xt = facts(eg, s, x).ty;
                if !xt.is_tile() {
                    return None;
                }
                let t = facts(eg, s, var("?t")).ty;
                let small_t = ty_node(eg, xt);
                let small = eg.add(TileLang::Splat([small_t, s[sc]]));
                let inner = eg.add(TileLang::elementwise(kind, &[s[x], small])?);
                let tt = ty_node(eg, t);
                Some(eg.add(TileLang::Broadcast([tt, inner])))
            }
        }));
    }
    r
}

/// `?z` is ±0 and of an f32 (accumulator) type.
fn f32_zero_acc(z: &str) -> impl Fn(&mut EGraph, Id, &Subst) -> bool {
    let zero = is_zero(z);
    let zv = var(z);
    move |eg, id, s| facts(eg, s, zv).ty.elem == ScalarType::F32 && zero(eg, id, s)
}
