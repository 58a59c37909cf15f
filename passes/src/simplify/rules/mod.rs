//! The rewrite rules of `tile-simplify`, one file per family:
//!
//! - [`algebra`]: identities and splat folding;
//! - [`layout`]: transposes, reshapes and broadcasts (transpose∘transpose, a transpose
//!   moved through elementwise ops and into the operands of a dot);
//! - [`precision`]: conversion chains that are exact, narrow arithmetic done wide;
//! - [`fusion`]: an add into the dot accumulator, elementwise work on a broadcast row
//!   done on the row;
//! - [`hoist`]: loop-aware rewrites on the IR itself (loop-invariant ops out of a loop, a
//!   scale of a dot operand inside the K loop into the epilogue).
//!
//! **Every e-graph rule is exact**: for all inputs (NaN payloads aside) both sides give
//! the same bits under the semantics of [`tilec_dialect::interp`]. Rules that hold only
//! up to rounding have no place in the e-graph (the analysis asserts that merged classes
//! agree on their constants). Names are kebab-case with the family as prefix; each rule
//! has a one-line justification beside it; side conditions are small named helpers below.

pub mod algebra;
pub mod fusion;
pub mod hoist;
pub mod layout;
pub mod precision;

use super::lang::{EGraph, FConst, Facts, TileAnalysis, TileLang, TyLit};
use egg::{Applier, ConditionalApplier, Id, Pattern, PatternAst, Subst, Symbol, Var};

/// A rule of the e-graph.
pub type Rewrite = egg::Rewrite<TileLang, TileAnalysis>;

/// Every e-graph rule, built once per process (parsing the patterns is most of a small
/// run's time).
pub fn all() -> &'static [Rewrite] {
    static RULES: std::sync::OnceLock<Vec<Rewrite>> = std::sync::OnceLock::new();
    RULES.get_or_init(rules)
}

/// Every e-graph rule, family by family, freshly built.
pub fn rules() -> Vec<Rewrite> {
    let mut r = algebra::rules();
    r.extend(layout::rules());
    r.extend(precision::rules());
    r.extend(fusion::rules());
    r
}

pub(crate) fn var(s: &str) -> Var {
    s.parse().expect("pattern variable")
}

pub(crate) fn pat(s: &str) -> Pattern<TileLang> {
    s.parse().unwrap_or_else(|e| panic!("bad pattern {s}: {e}"))
}

/// The facts of the class bound to `v`.
pub(crate) fn facts(eg: &EGraph, s: &Subst, v: Var) -> Facts {
    eg[s[v]].data
}

/// A rule from pattern text.
pub(crate) fn rule(name: &str, lhs: &str, rhs: &str) -> Rewrite {
    Rewrite::new(name, pat(lhs), pat(rhs)).unwrap_or_else(|e| panic!("rule {name}: {e}"))
}

/// A rule from pattern text with a side condition.
pub(crate) fn rule_if(
    name: &str,
    lhs: &str,
    rhs: &str,
    cond: impl Fn(&mut EGraph, Id, &Subst) -> bool + Send + Sync + 'static,
) -> Rewrite {
    Rewrite::new(
        name,
        pat(lhs),
        ConditionalApplier {
            condition: cond,
            applier: pat(rhs),
        },
    )
    .unwrap_or_else(|e| panic!("rule {name}: {e}"))
}

/// A rule whose right side is built by a function (for new types and constants); the
/// function returns `None` when the rule does not apply.
pub(crate) fn rule_fn(
    name: &str,
    lhs: &str,
    build: impl Fn(&mut EGraph, &Subst) -> Option<Id> + Send + Sync + 'static,
) -> Rewrite {
    Rewrite::new(name, pat(lhs), Build(build)).unwrap_or_else(|e| panic!("rule {name}: {e}"))
}

/// A custom applier: builds the replacement, then unions it with the matched class.
pub(crate) struct Build<F>(pub F);

impl<F> Applier<TileLang, TileAnalysis> for Build<F>
where
    F: Fn(&mut EGraph, &Subst) -> Option<Id>,
{
    fn apply_one(
        &self,
        eg: &mut EGraph,
        eclass: Id,
        subst: &Subst,
        _ast: Option<&PatternAst<TileLang>>,
        _rule: Symbol,
    ) -> Vec<Id> {
        let Some(id) = (self.0)(eg, subst) else {
            return vec![];
        };
        if eg[id].data.ty != eg[eclass].data.ty {
            debug_assert!(false, "a custom rule built a node of another type");
            return vec![];
        }
        if eg.union(eclass, id) {
            vec![id]
        } else {
            vec![]
        }
    }
}

// ---- side conditions ------------------------------------------------------------------

/// `?v` is a splat or scalar of exactly `c` (bitwise: `+0` is not `−0`).
pub(crate) fn is_const(v: &str, c: f32) -> impl Fn(&mut EGraph, Id, &Subst) -> bool {
    let v = var(v);
    move |eg, _, s| facts(eg, s, v).is_const(c)
}

/// `?v` is a splat or scalar of +0 or −0.
pub(crate) fn is_zero(v: &str) -> impl Fn(&mut EGraph, Id, &Subst) -> bool {
    let v = var(v);
    move |eg, _, s| facts(eg, s, v).constant == Some(0.0)
}

/// The classes of `?a` and `?b` have one type (for a type literal: name it).
pub(crate) fn same_type(a: &str, b: &str) -> impl Fn(&mut EGraph, Id, &Subst) -> bool {
    let (a, b) = (var(a), var(b));
    move |eg, _, s| facts(eg, s, a).ty == facts(eg, s, b).ty
}

// ---- node builders -------------------------------------------------------------------

/// The type literal `t`.
pub(crate) fn ty_node(eg: &mut EGraph, t: TyLit) -> Id {
    eg.add(TileLang::Ty(t))
}

/// A value of type `t` all of whose elements are `c` (a constant or a splat of one).
pub(crate) fn const_node(eg: &mut EGraph, t: TyLit, c: f32) -> Id {
    let k = eg.add(TileLang::Const(FConst::new(c, t.elem)));
    if t.is_tile() {
        let tn = ty_node(eg, t);
        eg.add(TileLang::Splat([tn, k]))
    } else {
        k
    }
}

/// Whether `x` is ±2^k with 1/x exactly representable in `elem`.
pub(crate) fn pow2_with_exact_inverse(x: f32, elem: tilec_dialect::ScalarType) -> Option<f32> {
    if !x.is_finite() || x == 0.0 || x.to_bits() & 0x007f_ffff != 0 || x.is_subnormal() {
        return None;
    }
    let inv = 1.0 / x;
    (inv.is_finite() && inv * x == 1.0 && tilec_dialect::interp::round_to(elem, inv) == inv)
        .then_some(inv)
}

#[cfg(test)]
mod tests;
