//! Precision: conversion chains that are exact, and narrow arithmetic written wide.
//!
//! A conversion to a type that holds every value of the source (`bf16 → f32`,
//! `f16 → f32`) is exact, so in a chain only the last rounding counts. Rounding to
//! nearest even is monotone, symmetric under negation and keeps zero, so it commutes with
//! `neg`, `abs`, `relu`, `max` and `min`. A bf16/f16 `+ − · / sqrt` is the f32 result
//! rounded once (f32 has more than 2p + 2 bits), so `convert(op(convert(x), convert(y)))`
//! through f32 is the narrow op; and the products of bf16/f16 values are exact in f32, so
//! a dot of upcast operands is the narrow dot with an f32 accumulator.
//!
//! **Never folded**: `convert(convert(x : f32) : bf16) : f32` rounds `x` to bf16 — the
//! chain rule applies only when the first conversion is exact.

use super::{facts, rule, rule_fn, rule_if, same_type, ty_node, var, Rewrite};
use crate::simplify::lang::{EGraph, TileLang, TyLit, BINARY};
use egg::{Id, Subst};
use tilec_dialect::interp::float_subset;
use tilec_dialect::ScalarType;

/// The precision rules.
#[rustfmt::skip]
pub fn rules() -> Vec<Rewrite> {
    let mut r = vec![
        // Converting to the type a value already has does nothing.
        rule_if("precision-convert-identity",
            "(convert ?t ?x)", "?x", same_type("?t", "?x")),
        // When the first conversion is exact, only the last one rounds.
        rule_if("precision-exact-convert-chain",
            "(convert ?t (convert ?u ?x))", "(convert ?t ?x)", first_is_exact("?x", "?u")),
        // Rounding is symmetric under negation and |·|, and monotone (relu, max, min).
        rule("precision-convert-into-neg",
            "(convert ?t (neg ?x))", "(neg (convert ?t ?x))"),
        rule("precision-convert-out-of-neg",
            "(neg (convert ?t ?x))", "(convert ?t (neg ?x))"),
        rule("precision-convert-into-abs",
            "(convert ?t (abs ?x))", "(abs (convert ?t ?x))"),
        rule("precision-convert-out-of-abs",
            "(abs (convert ?t ?x))", "(convert ?t (abs ?x))"),
        rule("precision-convert-into-relu",
            "(convert ?t (relu ?x))", "(relu (convert ?t ?x))"),
        rule("precision-convert-out-of-relu",
            "(relu (convert ?t ?x))", "(convert ?t (relu ?x))"),
        rule("precision-convert-into-max",
            "(convert ?t (max ?x ?y))", "(max (convert ?t ?x) (convert ?t ?y))"),
        rule("precision-convert-into-min",
            "(convert ?t (min ?x ?y))", "(min (convert ?t ?x) (convert ?t ?y))"),
        // A narrow square root computed in f32 and rounded once is the narrow square root.
        rule_if("precision-narrow-sqrt",
            "(convert ?t (sqrt (convert ?u ?x)))",
            "(sqrt ?x)",
            wide_is_f32("?t", "?u", "?x", "?x")),
        // bf16/f16 products are exact in f32: the upcast dot is the narrow dot.
        rule_if("precision-dot-upcast",
            "(dot (convert ?t ?a) (convert ?u ?b) ?c)",
            "(dot ?a ?b ?c)",
            narrow_dot("?t", "?u", "?a", "?b")),
        // Convert the scalar, not every element of its splat.
        rule_fn("precision-convert-splat",      "(convert ?t (splat ?u ?s))", {
            let (t, sc) = (var("?t"), var("?s"));
            move |eg, s| {
                let elem = facts(eg, s, t).ty.elem;
                let st = ty_node(eg, TyLit::scalar(elem));
                let c = eg.add(TileLang::Convert([st, s[sc]]));
                Some(eg.add(TileLang::Splat([s[t], c])))
            }
        }),
        // Convert the row before broadcasting it, and before reshaping.
        rule_fn("precision-convert-broadcast",  "(convert ?t (broadcast ?u ?x))", {
            let (t, x) = (var("?t"), var("?x"));
            move |eg, s| {
                let (elem, xt) = (facts(eg, s, t).ty.elem, facts(eg, s, x).ty);
                let ct = ty_node(eg, xt.with_elem(elem));
                let c = eg.add(TileLang::Convert([ct, s[x]]));
                Some(eg.add(TileLang::Broadcast([s[t], c])))
            }
        }),
        rule_fn("precision-convert-reshape",    "(convert ?t (reshape ?u ?x))", {
            let (t, x) = (var("?t"), var("?x"));
            move |eg, s| {
                let (elem, xt) = (facts(eg, s, t).ty.elem, facts(eg, s, x).ty);
                let ct = ty_node(eg, xt.with_elem(elem));
                let c = eg.add(TileLang::Convert([ct, s[x]]));
                Some(eg.add(TileLang::Reshape([s[t], c])))
            }
        }),
    ];
    // A narrow + − · / max min computed in f32 and rounded once is the narrow op.
    for (_, op) in BINARY {
        r.push(rule_if(
            &format!("precision-narrow-{op}"),
            &format!("(convert ?t ({op} (convert ?u ?x) (convert ?u ?y)))"),
            &format!("({op} ?x ?y)"),
            wide_is_f32("?t", "?u", "?x", "?y"),
        ));
    }
    r
}

/// Every value of `?x`'s type is a value of `?u`'s: the conversion `?x → ?u` is exact.
fn first_is_exact(x: &str, u: &str) -> impl Fn(&mut EGraph, Id, &Subst) -> bool {
    let (x, u) = (var(x), var(u));
    move |eg, _, s| float_subset(facts(eg, s, x).ty.elem, facts(eg, s, u).ty.elem)
}

/// `?x` and `?y` have the type `?t` names (same shape, narrow element type) and `?u` is
/// f32: the op ran wide on exactly converted narrow values and rounds back to `?t`.
fn wide_is_f32(t: &str, u: &str, x: &str, y: &str) -> impl Fn(&mut EGraph, Id, &Subst) -> bool {
    let (t, u, x, y) = (var(t), var(u), var(x), var(y));
    move |eg, _, s| {
        let (tf, xf, yf) = (facts(eg, s, t), facts(eg, s, x), facts(eg, s, y));
        facts(eg, s, u).ty.elem == ScalarType::F32
            && xf.ty == tf.ty
            && yf.ty == tf.ty
            && tf.ty.elem.is_float()
    }
}

/// `?a` and `?b` are bf16 (or both f16) and both upcasts go to f32.
fn narrow_dot(t: &str, u: &str, a: &str, b: &str) -> impl Fn(&mut EGraph, Id, &Subst) -> bool {
    let (t, u, a, b) = (var(t), var(u), var(a), var(b));
    move |eg, _, s| {
        let (ea, eb) = (facts(eg, s, a).ty.elem, facts(eg, s, b).ty.elem);
        ea == eb
            && matches!(ea, ScalarType::BF16 | ScalarType::F16)
            && facts(eg, s, t).ty.elem == ScalarType::F32
            && facts(eg, s, u).ty.elem == ScalarType::F32
    }
}
