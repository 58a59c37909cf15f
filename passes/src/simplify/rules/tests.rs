//! egg-style tests: per family, start ⇒ goal must be proved (the two terms end in one
//! e-class), negative cases must not be, and a saturation test. Every case runs with all
//! the rules (families lean on each other: the accumulator fusion on commutativity).
//! Limits: `TILE_SIMPLIFY_TEST_NODE_LIMIT` (10000), `TILE_SIMPLIFY_TEST_ITER_LIMIT`
//! (30), `TILE_SIMPLIFY_TEST_TIME_LIMIT_MS` (2000).

use super::super::lang::{TileAnalysis, TileLang};
use super::{all, hoist};
use egg::{RecExpr, Runner, StopReason};
use std::time::Duration;

fn env_limit(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn runner(start: &RecExpr<TileLang>) -> Runner<TileLang, TileAnalysis> {
    Runner::new(TileAnalysis)
        .with_node_limit(env_limit("TILE_SIMPLIFY_TEST_NODE_LIMIT", 10_000) as usize)
        .with_iter_limit(env_limit("TILE_SIMPLIFY_TEST_ITER_LIMIT", 30) as usize)
        .with_time_limit(Duration::from_millis(env_limit(
            "TILE_SIMPLIFY_TEST_TIME_LIMIT_MS",
            2000,
        )))
        .with_expr(start)
        .run(all())
}

fn expr(s: &str) -> RecExpr<TileLang> {
    s.parse()
        .unwrap_or_else(|e| panic!("cannot parse {s}: {e}"))
}

/// Whether the rules prove `start = goal`.
fn proves(start: &str, goal: &str) -> bool {
    let (s, g) = (expr(start), expr(goal));
    let r = runner(&s);
    let root = r.egraph.find(r.roots[0]);
    r.egraph
        .lookup_expr(&g)
        .is_some_and(|id| r.egraph.find(id) == root)
}

fn check(family: &str, cases: &[(&str, &str)], negative: &[(&str, &str)]) {
    for (s, g) in cases {
        assert!(proves(s, g), "{family}: {s} ⇒ {g} was not proved");
    }
    for (s, g) in negative {
        assert!(!proves(s, g), "{family}: {s} ⇒ {g} must not be proved");
    }
}

const F: &str = "tile<4x8xf32>";

fn t(s: &str) -> String {
    s.replace("F", F)
        .replace("X", "%0:tile<4x8xf32>")
        .replace("Y", "%1:tile<4x8xf32>")
        .replace("Z", "%2:tile<4x8xf32>")
}

#[test]
fn algebra() {
    let cases: Vec<(String, String)> = [
        ("(add X (splat F #-0.0:f32))", "X"),
        ("(sub X (zeros F))", "X"),
        ("(mul (splat F #1.0:f32) X)", "X"),
        ("(mul X (splat F #-1.0:f32))", "(neg X)"),
        ("(mul (neg X) (neg Y))", "(mul X Y)"),
        ("(neg (neg X))", "X"),
        ("(sub X Y)", "(add (neg Y) X)"),
        ("(div X (splat F #4.0:f32))", "(mul X (splat F #0.25:f32))"),
        ("(max (zeros F) X)", "(relu X)"),
        ("(relu (relu (max X (zeros F))))", "(relu X)"),
        ("(abs (neg (abs X)))", "(abs X)"),
        ("(select %3:i1 X X)", "X"),
        ("(min X X)", "X"),
        // Splat folding: constants in the analysis, opaque scalars by rule.
        (
            "(mul (splat F #3.0:f32) (splat F #0.5:f32))",
            "(splat F #1.5:f32)",
        ),
        (
            "(add (splat F %4:f32) (splat F %5:f32))",
            "(splat F (add %4:f32 %5:f32))",
        ),
        ("(exp (splat F %4:f32))", "(splat F (exp %4:f32))"),
    ]
    .iter()
    .map(|(a, b)| (t(a), t(b)))
    .collect();
    let negative: Vec<(String, String)> = [
        // −0 + +0 = +0: adding +0 is no identity.
        ("(add X (zeros F))", "X"),
        // ∞ · 0 is NaN.
        ("(mul X (zeros F))", "(zeros F)"),
        // 1/3 is not exact.
        (
            "(div X (splat F #3.0:f32))",
            "(mul X (splat F #0.33333334:f32))",
        ),
        // No reassociation.
        ("(add (add X Y) Z)", "(add X (add Y Z))"),
        // −(x − y) and y − x differ in the sign of a zero result.
        ("(neg (sub X Y))", "(sub Y X)"),
        // exp is not folded (the GPU's is an approximation).
        ("(exp (splat F #1.0:f32))", "(splat F #2.7182817:f32)"),
    ]
    .iter()
    .map(|(a, b)| (t(a), t(b)))
    .collect();
    let c: Vec<(&str, &str)> = cases
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let n: Vec<(&str, &str)> = negative
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    check("algebra", &c, &n);
}

#[test]
fn layout() {
    check(
        "layout",
        &[
            (
                "(transpose (transpose %0:tile<4x8xbf16>))",
                "%0:tile<4x8xbf16>",
            ),
            (
                "(transpose (relu (transpose %0:tile<4x8xf32>)))",
                "(relu %0:tile<4x8xf32>)",
            ),
            (
                "(add (transpose %0:tile<4x8xf32>) (transpose %1:tile<4x8xf32>))",
                "(transpose (add \
                    %0:tile<4x8xf32> %1:tile<4x8xf32>))",
            ),
            // The transposes of a dot's operands move out: (XᵀYᵀ)ᵀ = YX.
            (
                "(transpose (dot (transpose %0:tile<8x4xbf16>) (transpose %1:tile<16x8xbf16>) \
                    (zeros tile<4x16xf32>)))",
                "(dot %1:tile<16x8xbf16> %0:tile<8x4xbf16> (splat tile<16x4xf32> #0.0:f32))",
            ),
            // B loaded N×K and transposed into the dot stays one transpose of the result
            // away from the dot of the untransposed loads.
            (
                "(dot (transpose %0:tile<8x4xbf16>) (transpose %1:tile<16x8xbf16>) (zeros \
                    tile<4x16xf32>))",
                "(transpose (dot %1:tile<16x8xbf16> %0:tile<8x4xbf16> (splat tile<16x4xf32> \
                    #0.0:f32)))",
            ),
            (
                "(transpose %0:tile<1x8xf32>)",
                "(reshape tile<8x1xf32> %0:tile<1x8xf32>)",
            ),
            (
                "(reshape tile<4x8xf32> (reshape tile<32x1xf32> \
                    %0:tile<4x8xf32>))",
                "%0:tile<4x8xf32>",
            ),
            (
                "(broadcast tile<4x8xf32> (splat tile<1x8xf32> %2:f32))",
                "(splat tile<4x8xf32> \
                    %2:f32)",
            ),
            (
                "(transpose (splat tile<4x8xf32> %2:f32))",
                "(splat tile<8x4xf32> %2:f32)",
            ),
            (
                "(transpose (convert tile<4x8xbf16> %0:tile<4x8xf32>))",
                "(convert tile<8x4xbf16> \
                    (transpose %0:tile<4x8xf32>))",
            ),
        ],
        &[
            ("(transpose %0:tile<4x4xf32>)", "%0:tile<4x4xf32>"),
            // A reshape to the transposed shape is no transpose.
            (
                "(reshape tile<8x4xf32> %0:tile<4x8xf32>)",
                "(transpose %0:tile<4x8xf32>)",
            ),
        ],
    );
}

#[test]
fn precision() {
    check(
        "precision",
        &[
            (
                "(convert tile<4x8xbf16> (convert tile<4x8xf32> \
                    %0:tile<4x8xbf16>))",
                "%0:tile<4x8xbf16>",
            ),
            (
                "(convert tile<4x8xf16> (convert tile<4x8xf32> %0:tile<4x8xbf16>))",
                "(convert \
                    tile<4x8xf16> %0:tile<4x8xbf16>)",
            ),
            (
                "(convert tile<4x8xf32> %0:tile<4x8xf32>)",
                "%0:tile<4x8xf32>",
            ),
            (
                "(convert tile<4x8xbf16> (add (convert tile<4x8xf32> %0:tile<4x8xbf16>) (convert \
                    tile<4x8xf32> %1:tile<4x8xbf16>)))",
                "(add %0:tile<4x8xbf16> %1:tile<4x8xbf16>)",
            ),
            (
                "(dot (convert tile<4x8xf32> %0:tile<4x8xbf16>) (convert tile<8x4xf32> \
                    %1:tile<8x4xbf16>) %2:tile<4x4xf32>)",
                "(dot %0:tile<4x8xbf16> %1:tile<8x4xbf16> %2:tile<4x4xf32>)",
            ),
            (
                "(convert tile<4x8xbf16> (relu %0:tile<4x8xf32>))",
                "(relu (convert tile<4x8xbf16> \
                    %0:tile<4x8xf32>))",
            ),
            (
                "(convert tile<4x8xbf16> (splat tile<4x8xf32> %2:f32))",
                "(splat tile<4x8xbf16> \
                    (convert bf16 %2:f32))",
            ),
            (
                "(convert tile<4x8xbf16> (splat tile<4x8xf32> #0.1:f32))",
                "(splat tile<4x8xbf16> \
                    #0.1:bf16)",
            ),
        ],
        &[
            // The rounding rule: f32 → bf16 → f32 rounds x to bf16; never folded.
            (
                "(convert tile<4x8xf32> (convert tile<4x8xbf16> \
                    %0:tile<4x8xf32>))",
                "%0:tile<4x8xf32>",
            ),
            // Two narrowings round twice.
            (
                "(convert tile<4x8xbf16> (convert tile<4x8xf16> %0:tile<4x8xf32>))",
                "(convert \
                    tile<4x8xbf16> %0:tile<4x8xf32>)",
            ),
            // Wide arithmetic on f32 inputs is not the narrow arithmetic.
            (
                "(convert tile<4x8xbf16> (add %0:tile<4x8xf32> %1:tile<4x8xf32>))",
                "(add (convert tile<4x8xbf16> %0:tile<4x8xf32>) (convert tile<4x8xbf16> \
                    %1:tile<4x8xf32>))",
            ),
        ],
    );
}

#[test]
fn fusion() {
    let a = "%0:tile<4x8xbf16>";
    let b = "%1:tile<8x16xbf16>";
    let c = "%2:tile<4x16xf32>";
    let z = "(zeros tile<4x16xf32>)";
    check(
        "fusion",
        &[
            (
                &format!("(add (dot {a} {b} {z}) {c})"),
                &format!("(dot {a} {b} {c})"),
            ),
            (
                &format!("(add {c} (dot {a} {b} {z}))"),
                &format!("(dot {a} {b} {c})"),
            ),
            (
                &format!("(sub (dot {a} {b} {z}) {c})"),
                &format!("(dot {a} {b} (neg {c}))"),
            ),
            (
                &format!("(dot (neg {a}) (neg {b}) {c})"),
                &format!("(dot {a} {b} {c})"),
            ),
            (
                "(relu (broadcast tile<4x8xf32> %3:tile<1x8xf32>))",
                "(broadcast tile<4x8xf32> (relu \
                    %3:tile<1x8xf32>))",
            ),
            (
                "(add (broadcast tile<4x8xf32> %3:tile<1x8xf32>) (broadcast tile<4x8xf32> \
                    %4:tile<1x8xf32>))",
                "(broadcast tile<4x8xf32> (add %3:tile<1x8xf32> \
                    %4:tile<1x8xf32>))",
            ),
            (
                "(mul (broadcast tile<4x8xf32> %3:tile<1x8xf32>) (splat tile<4x8xf32> \
                    %5:f32))",
                "(broadcast tile<4x8xf32> (mul %3:tile<1x8xf32> (splat tile<1x8xf32> \
                    %5:f32)))",
            ),
        ],
        &[
            // An f16 accumulator rounds the products' sum before the add.
            (
                "(add (dot %0:tile<4x8xf16> %1:tile<8x16xf16> (zeros tile<4x16xf16>)) \
                    %2:tile<4x16xf16>)",
                "(dot %0:tile<4x8xf16> %1:tile<8x16xf16> %2:tile<4x16xf16>)",
            ),
            // A non-zero accumulator: moving the add in would reassociate.
            (
                &format!("(add (dot {a} {b} %3:tile<4x16xf32>) {c})"),
                &format!(
                    "(dot {a} {b} (add \
                        %3:tile<4x16xf32> {c}))"
                ),
            ),
        ],
    );
}

#[test]
fn saturates_on_a_naive_loop_body() {
    // The body of examples/frontend_naive_gemm.tile, as the e-graph sees it.
    let body = "(add %9:tile<128x256xf32> (dot (mul %1:tile<128x64xbf16> (splat tile<128x64xbf16> \
        %7:bf16)) (transpose (transpose %2:tile<64x256xbf16>)) (zeros tile<128x256xf32>)))";
    let r = runner(&expr(body));
    assert!(
        matches!(r.stop_reason, Some(StopReason::Saturated)),
        "{:?}",
        r.stop_reason
    );
    assert!(
        r.egraph.total_number_of_nodes() < 200,
        "{} nodes",
        r.egraph.total_number_of_nodes()
    );
}

#[test]
fn rules_are_named_by_family_and_unique() {
    let rules = all();
    let mut names: Vec<String> = rules.iter().map(|r| r.name.to_string()).collect();
    names.extend(hoist::RULES.iter().map(|(n, _)| n.to_string()));
    let n = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), n, "duplicate rule names");
    for name in &names {
        let family = name.split('-').next().unwrap();
        assert!(
            ["algebra", "layout", "precision", "fusion", "hoist"].contains(&family),
            "{name}"
        );
        assert!(
            name.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "{name} is not kebab-case"
        );
    }
    assert!(n >= 30, "{n} rules");
}
