//! The typed builder: a method for every tile-level op of the op table, inferred result
//! types, named values, grids from argument handles, and errors (not panics) for foreign,
//! out-of-scope or wrong-kind values, located at the op and leaving the module as it was.

use tilec_dialect::interp::{run, ArgValue, Tensor};
use tilec_dialect::{
    parse, print_module, verify, BuildResult, Builder, CmpPredicate, DiagKind, Module, OpKind,
    Precision, ReduceKind, ScalarType::*, Type, Value,
};

fn t2(e: tilec_dialect::ScalarType) -> Type {
    Type::Tensor { rank: 2, elem: e }
}

/// One kernel that uses every method; returns the module.
fn every_op() -> BuildResult<Module> {
    let mut m = Module::new();
    let mut b = Builder::new(&mut m);
    let args = [
        ("X", t2(F32)),
        ("W", t2(BF16)),
        ("I", Type::Tensor { rank: 1, elem: I32 }),
        ("Y", t2(F32)),
        ("N", Type::INDEX),
    ];
    b.kernel("all", &args, |b, a| {
        let n = b.arg(a[4])?;
        b.grid([n.ceil_div(16), 2.into()])?;
        let (pid, np) = (b.program_id(0)?, b.num_programs(1)?);
        let c0 = b.constant_index(0)?;
        let c16 = b.constant_index(16_u64)?;
        let rows = b.dim(a[0], 0)?;
        let mut i = b.muli(pid, c16)?;
        for f in [
            Builder::addi,
            Builder::subi,
            Builder::divi,
            Builder::remi,
            Builder::ceildiv,
            Builder::mini,
            Builder::maxi,
        ] {
            i = f(b, i, c16)?;
        }
        let i = b.addi(i, np)?;
        let inb = b.cmpi(CmpPredicate::Slt, i, rows)?;
        let row = b.select(inb, i, c0)?;
        let x = b.load_padded(a[0], &[row, c0], &[16, 16], f64::NEG_INFINITY)?;
        let w = b.load(a[1], &[c0, c0], &[16, 16])?;
        let idx = b.load(a[2], &[c0], &[16])?;
        let g = b.gather(a[0], idx, c0, 16)?;
        let wf = b.convert(w, F32)?;
        let acc = b.zeros(&[16, 16], F32)?;
        let mut y = b.dot_with(x, wf, acc, Precision::Tf32)?;
        y = b.dot(g, wf, y)?;
        for f in [
            Builder::add,
            Builder::sub,
            Builder::mul,
            Builder::div,
            Builder::max,
        ] {
            y = f(b, y, g)?;
        }
        y = b.min(y, x)?;
        for f in [
            Builder::neg,
            Builder::abs,
            Builder::exp,
            Builder::exp2,
            Builder::log,
            Builder::sqrt,
            Builder::rsqrt,
            Builder::tanh,
            Builder::relu,
        ] {
            y = f(b, y)?;
        }
        let yt = b.transpose(y)?;
        let flat = b.reshape(yt, &[256])?;
        let back = b.reshape(flat, &[16, 16])?;
        let half = b.extract_slice(back, &[0, 8], &[16, 8])?;
        let back = b.transpose(half)?;
        let back = b.reshape(back, &[16, 8])?;
        let col = b.extract_slice(back, &[0, 0], &[16, 1])?;
        let back = b.broadcast(col, &[16, 16])?;
        let s = b.reduce(back, 1, ReduceKind::Max)?;
        let s = b.broadcast(s, &[16, 16])?;
        let cols = b.iota(&[16, 16], Index, 1)?;
        let lim = b.splat(c16, &[16, 16])?;
        let mask = b.cmpi(CmpPredicate::Slt, cols, lim)?;
        let y = b.select(mask, s, back)?;
        let one = b.constant_index(1)?;
        let y = b.for_loop(c0, c16, one, &[y], |b, _k, c| Ok(vec![b.relu(c[0])?]))?[0];
        let t = b.constant_int(1, I1)?;
        let y = b.if_else(t, |_| Ok(vec![y]), |b| Ok(vec![b.neg(y)?]))?[0];
        let y = b.while_loop(&[y], |b, c| {
            let f = b.constant_int(0, I1)?;
            Ok((f, vec![c[0]]))
        })?[0];
        let y = b.warp_specialize(1, |_| Ok(()), |_| Ok(vec![y]))?[0];
        b.name(y, "out")?;
        b.store(a[3], &[row, c0], y)?;
        b.atomic_add(a[3], &[row, c0], y)?;
        let e = b.extract(a[2], &[row])?;
        let e = b.convert(e, Index)?;
        let rows = b.iota(&[16, 16], Index, 0)?;
        let lim = b.splat(e, &[16, 16])?;
        let mine = b.cmpi(CmpPredicate::Slt, rows, lim)?;
        b.store_masked(a[3], &[row, c0], mine, y)?;
        b.atomic_add_masked(a[3], &[row, c0], mine, y)?;
        // The flags: a[2] is a 1-D i32 tensor.
        let old = b.arrive_flag(a[2], c0)?;
        b.wait_flag(a[2], c0, old)?;
        b.release_flag(a[2], c0, c0)
    })?;
    Ok(m)
}

#[test]
fn every_tile_level_op_of_the_table_has_a_method() {
    let m = every_op().unwrap();
    verify(&m).unwrap();
    let missing: Vec<&str> = OpKind::ALL
        .iter()
        .filter(|k| !k.is_gpu_level() && m.op_count(**k) == 0)
        .map(|k| k.name())
        .collect();
    assert!(missing.is_empty(), "no builder method made {missing:?}");
    // The text form round-trips, the given name included.
    let text = print_module(&m);
    assert!(text.contains("%out = tile.warp_specialize"), "{text}");
    assert!(text.contains("grid = [ceildiv(%N, 16), 2]"), "{text}");
    assert!(text.contains(" = tile.extract %I, %"), "{text}");
    let back = parse(&text, "built.tile").unwrap();
    assert_eq!(print_module(&back), text);
}

/// Softmax over rows of 8, one program per row.
fn softmax() -> BuildResult<Module> {
    let mut m = Module::new();
    let mut b = Builder::new(&mut m);
    b.kernel(
        "softmax",
        &[("X", t2(F32)), ("Y", t2(F32)), ("M", Type::INDEX)],
        |b, a| {
            let rows = b.arg(a[2])?;
            b.grid([rows])?;
            let row = b.program_id(0)?;
            let c0 = b.constant_index(0)?;
            let x = b.load_padded(a[0], &[row, c0], &[1, 8], f64::NEG_INFINITY)?;
            let mx = b.reduce(x, 1, ReduceKind::Max)?;
            let mx = b.broadcast(mx, &[1, 8])?;
            let d = b.sub(x, mx)?;
            let p = b.exp(d)?;
            let s = b.reduce(p, 1, ReduceKind::Add)?;
            let s = b.broadcast(s, &[1, 8])?;
            let y = b.div(p, s)?;
            b.store(a[1], &[row, c0], y)
        },
    )?;
    Ok(m)
}

#[test]
fn a_softmax_built_without_text_computes_softmax() {
    let m = softmax().unwrap();
    verify(&m).unwrap();
    // Three rows of 6: the padding columns read -inf and add nothing.
    let xs: Vec<f32> = (0..18).map(|i| ((i * 7) % 11) as f32 * 0.5 - 2.0).collect();
    let mut args = vec![
        ArgValue::Tensor(Tensor::from_f32(F32, &[3, 6], &xs)),
        ArgValue::Tensor(Tensor::zeros(F32, &[3, 6])),
        ArgValue::Int(3),
    ];
    run(&m, "softmax", &mut args).unwrap();
    let got = args[1].tensor().unwrap().to_f32_vec().unwrap();
    for r in 0..3 {
        let row = &xs[r * 6..r * 6 + 6];
        let mx = row.iter().cloned().fold(f32::MIN, f32::max);
        let sum: f32 = row.iter().map(|x| (x - mx).exp()).sum();
        for c in 0..6 {
            let want = (row[c] - mx).exp() / sum;
            assert!(
                (got[r * 6 + c] - want).abs() < 1e-6,
                "row {r} col {c}: {got:?}"
            );
        }
    }
}

#[test]
fn wrong_values_are_located_errors_and_leave_the_module_unchanged() {
    let mut other = Module::new();
    let foreign = (0..4)
        .map(|_| other.new_value(Type::INDEX, None))
        .last()
        .unwrap();
    let mut m = Module::new();
    let mut b = Builder::new(&mut m);
    let mut errors = vec![];
    let mut inner = None;
    b.kernel("k", &[("X", t2(F32)), ("N", Type::INDEX)], |b, a| {
        b.grid([1.into()])?;
        let c0 = b.constant_index(0)?;
        let x = b.load(a[0], &[c0, c0], &[16, 16])?;
        let acc = b.zeros(&[16, 16], F32)?;
        let id = b.next_op_id();
        // A scalar where a tile goes.
        let e = b.dot(c0, x, acc).unwrap_err();
        assert_eq!(e.loc.op_id(), Some(id), "{e}");
        errors.push(e);
        // A handle this module does not have.
        errors.push(b.neg(Value(40)).unwrap_err());
        // A value of a region already closed.
        b.for_loop(c0, a[1], a[1], &[], |_, k, _| {
            inner = Some(k);
            Ok(vec![])
        })?;
        errors.push(b.addi(inner.unwrap(), c0).unwrap_err());
        // Wrong kinds and classes.
        errors.push(b.exp(c0).unwrap_err());
        errors.push(b.binary(OpKind::AddI, c0, c0).unwrap_err());
        errors.push(b.op(OpKind::For, &[], &[], &[]).unwrap_err());
        errors.push(b.load(c0, &[c0], &[4]).unwrap_err());
        errors.push(b.reduce(x, 2, ReduceKind::Add).unwrap_err());
        errors.push(b.constant_index(u64::MAX).unwrap_err());
        errors.push(b.constant_float(1.5, Index).unwrap_err());
        errors.push(b.arg(c0).unwrap_err());
        errors.push(b.name(x, "no spaces").map(|_| ()).unwrap_err());
        b.store(a[0], &[c0, c0], x)
    })
    .unwrap();
    let msgs: Vec<String> = errors.iter().map(|e| e.message.clone()).collect();
    let want = [
        "'tile.dot' expects",
        "operand 0 of 'tile.neg' is value handle 40, which this module does not have",
        "operand 0 of 'tile.addi' (#",
        "'tile.exp' expects a float tile or scalar, found index",
        "'tile.addi' is not an op of class FloatBinary",
        "'tile.for' has regions or ends one",
        "'tile.load' expects a tensor, found index",
        "'tile.reduce' attribute 'dim' = 2 is out of range [0, 1]",
        "'tile.constant' value 18446744073709551615 does not fit in index",
        "'tile.constant' value 1.5 is not a valid index",
        "value #2 is not a kernel argument",
        "'no spaces' is not a value name",
    ];
    assert_eq!(msgs.len(), want.len());
    for (m, w) in msgs.iter().zip(want) {
        assert!(m.starts_with(w), "{m:?} does not start with {w:?}");
    }
    for e in &errors {
        assert_eq!(e.kind, DiagKind::InvalidIr, "{e}");
        assert_eq!(e.kernel.as_deref(), Some("k"), "{e}");
        assert_eq!(&*e.loc.file, "<builder>", "{e}");
    }
    // None of the refused ops was appended: the kernel verifies and holds what worked.
    verify(&m).unwrap();
    assert_eq!(m.op_count(OpKind::Dot), 0);
    assert_eq!(m.op_count(OpKind::Store), 1);
    // A handle of another module whose number this module has too: not visible in k2.
    let mut b = Builder::new(&mut m);
    let e = b
        .kernel("k2", &[("N", Type::INDEX)], |b, a| {
            b.grid([b.arg(a[0])?])?;
            b.addi(foreign, a[0]).map(|_| ())
        })
        .unwrap_err();
    assert!(e.message.contains("is not visible here"), "{e}");
    assert_eq!(m.kernels().count(), 1);
}

#[test]
fn kernel_level_errors() {
    let mut m = Module::new();
    let mut b = Builder::new(&mut m);
    let no_grid = b.kernel("k", &[], |_, _| Ok(())).unwrap_err();
    assert_eq!(
        no_grid.message,
        "kernel '@k' has no grid: call Builder::grid in its body"
    );
    let outside = b.zeros(&[4], F32).unwrap_err();
    assert!(
        outside.message.contains("outside a kernel body"),
        "{outside}"
    );
    b.kernel("k", &[("N", Type::INDEX)], |b, a| b.grid([b.arg(a[0])?]))
        .unwrap();
    let again = b.kernel("k", &[], |b, _| b.grid([1.into()])).unwrap_err();
    assert_eq!(again.message, "redefinition of kernel '@k'");
    let float_arg = b
        .kernel("f", &[("S", Type::Scalar(F32))], |b, a| {
            b.grid([b.arg(a[0])?])
        })
        .unwrap_err();
    assert!(
        float_arg.message.contains("not an integer argument"),
        "{float_arg}"
    );
    let nested = b
        .kernel("outer", &[], |b, _| {
            b.grid([1.into()])?;
            b.kernel("inner", &[], |b, _| b.grid([1.into()]))
        })
        .unwrap_err();
    assert_eq!(nested.message, "'tile.kernel' must be at top level");
    assert_eq!(m.kernels().count(), 1);
    verify(&m).unwrap();
}

#[test]
fn attribute_enums_are_the_verifier_s_spellings() {
    for p in CmpPredicate::ALL {
        assert_eq!(CmpPredicate::from_name(p.name()), Some(*p));
    }
    for k in ReduceKind::ALL {
        assert_eq!(ReduceKind::from_name(&k.to_string()), Some(*k));
    }
    let text = "tile.kernel @k(%n: index) {grid = [1]} {\n  \
        %b = tile.cmpi %n, %n {predicate = \"ult\"} : i1\n  tile.return\n}\n";
    let err = verify(&parse(text, "t.tile").unwrap()).unwrap_err();
    assert_eq!(
        err.0[0].message,
        "'tile.cmpi' attribute 'predicate' must be one of [\"eq\", \"ne\", \"slt\", \"sle\", \
         \"sgt\", \"sge\"], found \"ult\""
    );
}

/// Inputs the parser would refuse in text are refused when built too: a built module
/// always prints as text that parses back.
#[test]
fn what_text_cannot_say_is_refused() {
    use tilec_dialect::{Attribute, Expr};
    let mut m = Module::new();
    let mut b = Builder::new(&mut m);
    let mut msgs = vec![];
    b.kernel("k", &[("X", t2(F32)), ("N", Type::INDEX)], |b, a| {
        b.grid([1.into()])?;
        let x = b.zeros(&[16, 16], F32)?;
        let mut e = |r: BuildResult<Value>| msgs.push(r.unwrap_err().message);
        e(b.zeros(&[], F32));
        e(b.zeros(&[0, 16], F32));
        e(b.zeros(&[u64::MAX], F32));
        e(b.reshape(x, &[(1 << 63) + 128, 2]));
        e(b.constant_float(1e10, F16));
        e(b.op(
            OpKind::Zeros,
            &[],
            &[("weird key!", Attribute::Int(1))],
            &[Type::tile(&[4], F32)],
        )
        .map(|v| v[0]));
        e(b.name(x, "0"));
        // Nesting past the parser's limit.
        let c0 = b.constant_index(0)?;
        fn nest(b: &mut Builder, c0: Value, n: usize) -> BuildResult<Vec<Value>> {
            b.for_loop(c0, c0, c0, &[], |b, _, _| {
                if n > 0 {
                    nest(b, c0, n - 1)?;
                }
                Ok(vec![])
            })
        }
        e(nest(b, c0, 200).map(|_| c0));
        let _ = a;
        Ok(())
    })
    .unwrap();
    let want = [
        "#", // the value's type: a tile has 1 to 3 dimensions, found 0
        "#",
        "#",
        "'tile.reshape' must keep the element type and the number of elements",
        "'tile.constant' value 10000000000.0 does not fit in f16 (its largest finite value is \
         65504); write inf for an infinity",
        "attribute name 'weird key!' of 'tile.zeros' is not a name",
        "'0' is not a value name",
        "regions nest deeper than 128 levels (the parser's limit)",
    ];
    assert_eq!(msgs.len(), want.len(), "{msgs:#?}");
    for (m, w) in msgs.iter().zip(want) {
        assert!(m.starts_with(w), "{m:?} does not start with {w:?}");
    }
    assert!(
        msgs[0].ends_with("a tile has 1 to 3 dimensions, found 0"),
        "{}",
        msgs[0]
    );
    assert!(
        msgs[1].ends_with("dimensions must be positive"),
        "{}",
        msgs[1]
    );
    assert!(msgs[2].ends_with("is larger than 1048576"), "{}", msgs[2]);
    verify(&m).unwrap();

    // Kernel-level names and grids.
    let mut b = Builder::new(&mut m);
    let kernel_err = |b: &mut Builder, name: &str, args: &[(&str, Type)], grid: Expr| {
        b.kernel(name, args, |b, _| b.grid([grid]))
            .unwrap_err()
            .message
    };
    let n = [("N", Type::INDEX)];
    assert!(kernel_err(&mut b, "my kernel", &n, 1.into()).starts_with("kernel name 'my kernel'"));
    let spaced = kernel_err(&mut b, "k2", &[("a b", Type::INDEX)], 1.into());
    assert!(
        spaced.starts_with("kernel argument name 'a b' is not a name"),
        "{spaced}"
    );
    let twice = kernel_err(
        &mut b,
        "k2",
        &[("N", Type::INDEX), ("N", t2(F32))],
        1.into(),
    );
    assert_eq!(twice, "kernel argument '%N' is declared twice");
    let zero = kernel_err(&mut b, "k2", &n, 0.into());
    assert!(zero.starts_with("grid dimension 0 is 0"), "{zero}");
    let huge = kernel_err(&mut b, "k2", &n, (1i64 << 40).into());
    assert!(
        huge.starts_with("grid dimension 0 is 1099511627776"),
        "{huge}"
    );
    let rank0 = kernel_err(
        &mut b,
        "k2",
        &[("T", Type::Tensor { rank: 0, elem: F32 })],
        1.into(),
    );
    assert!(
        rank0.ends_with("a tensor has 1 to 5 dimensions, found 0"),
        "{rank0}"
    );
    // A value of a finished kernel cannot be renamed from another.
    let k_arg = m.kernels().next().unwrap().regions[0].args[1];
    let mut b = Builder::new(&mut m);
    let e = b
        .kernel("k3", &n, |b, a| {
            b.grid([b.arg(a[0])?])?;
            b.name(k_arg, "Q").map(|_| ())
        })
        .unwrap_err();
    assert!(e.message.contains("is not visible here"), "{e}");
    let outside = b
        .for_loop(k_arg, k_arg, k_arg, &[], |_, _, _| Ok(vec![]))
        .unwrap_err();
    assert!(
        outside.message.contains("outside a kernel body"),
        "{outside}"
    );
    // A GPU-level rule only the whole kernel shows (a constant index out of its array).
    let e = b
        .kernel("k4", &n, |b, _| {
            b.grid([1.into()])?;
            let c0 = b.constant_index(0)?;
            let mb = b.op(
                OpKind::MbarrierAlloc,
                &[],
                &[("arrive_count", Attribute::Int(1))],
                &[Type::Mbarrier { count: 1 }],
            )?;
            let c3 = b.constant_index(3)?;
            b.op(OpKind::MbarrierWait, &[mb[0], c3, c0], &[], &[])
                .map(|_| ())
        })
        .unwrap_err();
    assert!(e.message.contains("outside"), "{e}");
    assert_eq!(m.kernels().count(), 1);
    verify(&m).unwrap();
    let text = print_module(&m);
    assert_eq!(print_module(&parse(&text, "k.tile").unwrap()), text);
}
