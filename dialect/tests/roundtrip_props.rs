//! Property tests of the text form: every type and every attribute the IR can hold prints
//! to text that parses back to the same value. (The byte-level fuzz target in `fuzz/`
//! explores what text can be; these explore what the IR can be — e.g. `tile<4xindex>`,
//! which the printer wrote and the parser once rejected.)

use proptest::prelude::*;
use tilec_dialect::{parse, print_module, verify, Attribute, Expr, ScalarType, Type};

fn scalar() -> impl Strategy<Value = ScalarType> {
    prop::sample::select(ScalarType::ALL.to_vec())
}

fn dims(max_rank: usize) -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(prop_oneof![1u64..=16, 1u64..=(1 << 20)], 1..=max_rank)
}

fn ty() -> impl Strategy<Value = Type> {
    prop_oneof![
        scalar().prop_map(Type::Scalar),
        (dims(3), scalar()).prop_map(|(shape, elem)| Type::tile(&shape, elem)),
        (1u32..=5, scalar()).prop_map(|(rank, elem)| Type::Tensor { rank, elem }),
        (1u64..=8, prop::collection::vec(1u64..=256, 1..=3), scalar()).prop_map(
            |(stages, shape, elem)| Type::Smem {
                stages,
                shape,
                elem
            }
        ),
        (1u64..=64).prop_map(|count| Type::Mbarrier { count }),
    ]
}

/// Names as the lexer reads them after `%` or `@`.
fn name() -> impl Strategy<Value = String> {
    "[A-Za-z_][A-Za-z0-9_.$]{0,8}|[0-9]{1,3}"
}

/// Attribute dictionary keys: identifiers.
fn key() -> impl Strategy<Value = String> {
    "[a-z_][a-z0-9_]{0,6}"
}

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![any::<i64>().prop_map(Expr::Int), name().prop_map(Expr::Arg)];
    leaf.prop_recursive(4, 16, 2, |inner| {
        (
            prop::sample::select(Expr::FUNCTIONS.to_vec()),
            inner.clone(),
            inner,
        )
            .prop_map(|(f, a, b)| Expr::binary(f, a, b).expect("listed"))
    })
}

fn attribute() -> impl Strategy<Value = Attribute> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(Attribute::Int),
        any::<f64>()
            .prop_filter("finite", |x| x.is_finite())
            .prop_map(Attribute::Float),
        any::<bool>().prop_map(Attribute::Bool),
        // Any characters but a raw newline, which the printer escapes anyway.
        any::<String>().prop_map(Attribute::Str),
        ty().prop_map(Attribute::Type),
        name().prop_map(Attribute::Symbol),
        // A bare integer in an expression position is an Int attribute, so an Expr leaf
        // must be an argument or a call.
        expr()
            .prop_filter("not a bare int", |e| !matches!(e, Expr::Int(_)))
            .prop_map(Attribute::Expr),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop::collection::vec(inner, 0..4).prop_map(Attribute::Array)
    })
}

/// The text of a kernel whose only op carries `attrs` and whose arguments have `args`.
fn kernel_text(args: &[(String, Type)], attrs: &[(String, Attribute)]) -> String {
    let sig: Vec<String> = args.iter().map(|(n, t)| format!("%{n}: {t}")).collect();
    let dict: Vec<String> = attrs.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    let dict = if dict.is_empty() {
        String::new()
    } else {
        format!(" {{{}}}", dict.join(", "))
    };
    format!(
        "tile.kernel @k({}) {{grid = [1]}} {{\n  tile.barrier{dict}\n  tile.return\n}}\n",
        sig.join(", ")
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_type_reads_back(t in ty()) {
        let text = kernel_text(&[], &[("t".into(), Attribute::Type(t.clone()))]);
        let m = parse(&text, "t.tile").map_err(|e| TestCaseError::fail(e.render(Some(&text))))?;
        let got = m.ops[0].regions[0].ops[0].attr("t").cloned();
        prop_assert_eq!(got, Some(Attribute::Type(t)));
        prop_assert_eq!(print_module(&m), text);
    }

    #[test]
    fn every_attribute_reads_back(attrs in prop::collection::btree_map(key(), attribute(), 0..5)) {
        let attrs: Vec<(String, Attribute)> = attrs.into_iter().collect();
        let text = kernel_text(&[], &attrs);
        let m = parse(&text, "a.tile").map_err(|e| TestCaseError::fail(e.render(Some(&text))))?;
        let op = &m.ops[0].regions[0].ops[0];
        for (k, v) in &attrs {
            let got = op.attr(k).expect("attribute kept");
            // Compare printed forms: they tell -0.0 from 0.0, which `==` on f64 does not.
            prop_assert_eq!(got.to_string(), v.to_string());
            prop_assert_eq!(got, v);
        }
        prop_assert_eq!(print_module(&m), text);
    }

    #[test]
    fn kernel_arguments_keep_names_and_types(args in prop::collection::btree_map(
        // Argument names are identifiers (a number would read as a constant in the grid).
        "[A-Za-z_][A-Za-z0-9_.$]{0,8}",
        prop_oneof![
            scalar().prop_map(Type::Scalar),
            (1u32..=5, scalar()).prop_map(|(rank, elem)| Type::Tensor { rank, elem }),
        ],
        0..6,
    )) {
        let args: Vec<(String, Type)> = args.into_iter().collect();
        let text = kernel_text(&args, &[]);
        let m = parse(&text, "k.tile").map_err(|e| TestCaseError::fail(e.render(Some(&text))))?;
        verify(&m).map_err(|e| TestCaseError::fail(e.render(Some(&text))))?;
        prop_assert_eq!(print_module(&m), text);
    }
}
