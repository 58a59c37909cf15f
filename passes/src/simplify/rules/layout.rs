//! Layout: transposes, reshapes and broadcasts only move elements, so they commute with
//! elementwise ops, cancel in pairs, and fold into splats; a transpose of a dot's result
//! is the dot of the transposed operands in swapped order (`(AB + C)ᵀ = BᵀAᵀ + Cᵀ`, the
//! same products summed in the same k order), so transposes move into and out of the
//! MMA's operands — where the cost model, which counts a transpose as a shared-memory
//! round trip, removes them.

use super::{facts, rule, rule_fn, rule_if, same_type, ty_node, var, Rewrite};
use crate::simplify::lang::{TileLang, BINARY, UNARY};

/// The layout rules.
#[rustfmt::skip]
pub fn rules() -> Vec<Rewrite> {
    let mut r = vec![
        // Transposing twice restores the tile.
        rule("layout-transpose-transpose",   "(transpose (transpose ?x))",              "?x"),
        // A reshape of a reshape is one reshape (both keep the row-major order).
        rule("layout-reshape-reshape",
            "(reshape ?t (reshape ?u ?x))", "(reshape ?t ?x)"),
        // A reshape or broadcast to the type it already has does nothing.
        rule_if("layout-reshape-identity",
            "(reshape ?t ?x)", "?x", same_type("?t", "?x")),
        rule_if("layout-broadcast-identity",
            "(broadcast ?t ?x)", "?x", same_type("?t", "?x")),
        // Broadcasting a broadcast: each dimension of x is 1 or already final.
        rule("layout-broadcast-broadcast",
            "(broadcast ?t (broadcast ?u ?x))", "(broadcast ?t ?x)"),
        // Moving the elements of a splat gives a splat.
        rule("layout-broadcast-splat",
            "(broadcast ?t (splat ?u ?s))", "(splat ?t ?s)"),
        rule("layout-reshape-splat",
            "(reshape ?t (splat ?u ?s))", "(splat ?t ?s)"),
        // Broadcasting a scalar is splatting it.
        rule_if("layout-broadcast-scalar",
            "(broadcast ?t ?s)", "(splat ?t ?s)", is_scalar("?s")),
        // A transpose of a dot is the dot of the transposes, operands swapped; and back.
        rule("layout-transpose-into-dot",
            "(transpose (dot ?a ?b ?c))", "(dot (transpose ?b) (transpose ?a) (transpose ?c))"),
        rule("layout-transpose-out-of-dot",
            "(dot (transpose ?x) (transpose ?y) ?c)", "(transpose (dot ?y ?x (transpose ?c)))"),
        // Selecting between transposes is transposing the selection (by a scalar condition;
        // a tile of conditions would need transposing too).
        rule_if("layout-transpose-into-select",
            "(transpose (select ?c ?x ?y))", "(select ?c (transpose ?x) (transpose ?y))",
            is_scalar("?c")),
        // A transposed splat is a splat of the transposed type.
        rule_fn("layout-transpose-splat",    "(transpose (splat ?t ?s))", {
            let (t, sc) = (var("?t"), var("?s"));
            move |eg, s| {
                let tt = ty_node(eg, facts(eg, s, t).ty.transposed());
                Some(eg.add(TileLang::Splat([tt, s[sc]])))
            }
        }),
        // Transposing a 1×N or N×1 tile keeps the row-major order: it is a (free) reshape.
        rule_fn("layout-transpose-vector",   "(transpose ?x)", {
            let x = var("?x");
            move |eg, s| {
                let f = facts(eg, s, x);
                if f.ty.rank != 2 || (f.ty.dims[0] != 1 && f.ty.dims[1] != 1) {
                    return None;
                }
                let tt = ty_node(eg, f.ty.transposed());
                Some(eg.add(TileLang::Reshape([tt, s[x]])))
            }
        }),
        // Converting commutes with moving elements.
        rule_fn("layout-transpose-into-convert", "(transpose (convert ?t ?x))", {
            let (t, x) = (var("?t"), var("?x"));
            move |eg, s| {
                let xt = eg.add(TileLang::Transpose([s[x]]));
                let tt = ty_node(eg, facts(eg, s, t).ty.transposed());
                Some(eg.add(TileLang::Convert([tt, xt])))
            }
        }),
        rule_fn("layout-transpose-out-of-convert", "(convert ?t (transpose ?x))", {
            let (t, x) = (var("?t"), var("?x"));
            move |eg, s| {
                let tt = ty_node(eg, facts(eg, s, t).ty.transposed());
                let c = eg.add(TileLang::Convert([tt, s[x]]));
                Some(eg.add(TileLang::Transpose([c])))
            }
        }),
        // A transposed broadcast is the broadcast of the transposed (2-D) source.
        rule_fn("layout-transpose-into-broadcast", "(transpose (broadcast ?t ?x))", {
            let (t, x) = (var("?t"), var("?x"));
            move |eg, s| {
                if facts(eg, s, x).ty.rank != 2 {
                    return None;
                }
                let xt = eg.add(TileLang::Transpose([s[x]]));
                let tt = ty_node(eg, facts(eg, s, t).ty.transposed());
                Some(eg.add(TileLang::Broadcast([tt, xt])))
            }
        }),
    ];
    // Elementwise ops commute with a transpose, in both directions.
    for (_, op) in UNARY {
        r.push(rule(
            &format!("layout-transpose-into-{op}"),
            &format!("(transpose ({op} ?x))"),
            &format!("({op} (transpose ?x))"),
        ));
        r.push(rule(
            &format!("layout-transpose-out-of-{op}"),
            &format!("({op} (transpose ?x))"),
            &format!("(transpose ({op} ?x))"),
        ));
    }
    for (_, op) in BINARY {
        r.push(rule(
            &format!("layout-transpose-into-{op}"),
            &format!("(transpose ({op} ?x ?y))"),
            &format!("({op} (transpose ?x) (transpose ?y))"),
        ));
        r.push(rule(
            &format!("layout-transpose-out-of-{op}"),
            &format!("({op} (transpose ?x) (transpose ?y))"),
            &format!("(transpose ({op} ?x ?y))"),
        ));
    }
    r
}

/// `?v` is a scalar.
fn is_scalar(v: &str) -> impl Fn(&mut crate::simplify::lang::EGraph, egg::Id, &egg::Subst) -> bool {
    let v = var(v);
    move |eg, _, s| !facts(eg, s, v).ty.is_tile()
}
