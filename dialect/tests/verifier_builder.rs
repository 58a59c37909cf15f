//! Verifier rules that text cannot break (the parser resolves every name): value handles
//! the module does not have, a value defined twice, unnamed kernel arguments. IR built in
//! memory (a frontend's builder, a buggy pass) can, and the verifier must say so instead
//! of panicking. Each test also prints the broken module: the printer must not panic.

use tilec_dialect::{
    print_module, verify, Attribute, Block, Expr, Location, Module, OpKind, Operation, ScalarType,
    Type, Value,
};

/// A kernel `@k` with the given argument values and body ops, `tile.return` appended.
fn kernel(args: Vec<Value>, mut ops: Vec<Operation>) -> Operation {
    let mut k = Operation::new(OpKind::Kernel, Location::unknown());
    k.symbol = Some("k".into());
    k.attrs
        .insert("grid".into(), Attribute::Array(vec![Attribute::Int(1)]));
    ops.push(Operation::new(OpKind::Return, Location::unknown()));
    k.regions.push(Block { args, ops });
    k
}

fn messages(m: &Module) -> Vec<String> {
    let _ = print_module(m);
    verify(m)
        .expect_err("must not verify")
        .0
        .into_iter()
        .map(|d| d.message)
        .collect()
}

#[test]
fn operand_handle_out_of_range() {
    let mut m = Module::new();
    let x = m.new_value(Type::Scalar(ScalarType::F32), Some("x".into()));
    let mut neg = Operation::new(OpKind::Neg, Location::unknown());
    neg.operands.push(Value(99));
    neg.results
        .push(m.new_value(Type::Scalar(ScalarType::F32), None));
    m.ops.push(kernel(vec![x], vec![neg]));
    assert_eq!(
        messages(&m),
        vec!["'tile.neg' uses value handle 99 that the module does not have"]
    );
    assert!(
        print_module(&m).contains("tile.neg %<undefined 99> : f32"),
        "{}",
        print_module(&m)
    );
}

#[test]
fn result_handle_out_of_range() {
    let mut m = Module::new();
    let mut z = Operation::new(OpKind::Zeros, Location::unknown());
    z.results.push(Value(7));
    m.ops.push(kernel(vec![], vec![z]));
    let msgs = messages(&m);
    assert!(
        msgs.contains(
            &"'tile.zeros' defines a value handle 7 that the module does not have".to_string()
        ),
        "{msgs:?}"
    );
    assert!(
        print_module(&m).contains("= tile.zeros : <invalid>"),
        "{}",
        print_module(&m)
    );
}

#[test]
fn value_defined_twice() {
    let mut m = Module::new();
    let v = m.new_value(Type::tile(&[4], ScalarType::F32), Some("v".into()));
    let mut a = Operation::new(OpKind::Zeros, Location::unknown());
    a.results.push(v);
    let b = a.clone();
    m.ops.push(kernel(vec![], vec![a, b]));
    assert_eq!(messages(&m), vec!["value '%v' is defined more than once"]);
    // Unnamed values are shown by handle.
    let mut m = Module::new();
    let v = m.new_value(Type::INDEX, None);
    m.ops.push(kernel(vec![v, v], vec![]));
    let unnamed = "kernel arguments must be named (the launch manifest uses the names)";
    assert_eq!(
        messages(&m),
        vec![unnamed, unnamed, "value #0 is defined more than once"]
    );
}

#[test]
fn unnamed_kernel_argument() {
    let mut m = Module::new();
    let n = m.new_value(Type::INDEX, None);
    let mut k = kernel(vec![n], vec![]);
    k.attrs.insert(
        "grid".into(),
        Attribute::Array(vec![Attribute::Expr(Expr::Arg("N".into()))]),
    );
    m.ops.push(k);
    assert_eq!(
        messages(&m),
        vec![
            "kernel arguments must be named (the launch manifest uses the names)",
            "grid expression %N reads '%N', which is not an argument of the kernel",
        ]
    );
}
