//! `tile-simplify` on the examples: the reference interpreter gives the same bits before
//! and after on ragged random shapes, and the naive frontend kernel ends with the loop
//! structure of the hand-written fused one.

mod common;
use common::Rng;
use tilec_dialect::interp::{run, ArgValue, Tensor};
use tilec_dialect::{parse, print_module, verify, Module, OpKind, ScalarType};
use tilec_passes::simplify::{simplify, SimplifyOptions};

fn example(name: &str) -> Module {
    let path = format!("{}/../examples/{name}.tile", env!("CARGO_MANIFEST_DIR"));
    let m = parse(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
    verify(&m).unwrap();
    m
}

fn simplified(m: &Module) -> Module {
    let mut s = m.clone();
    simplify(&mut s, &SimplifyOptions::default());
    verify(&s).unwrap_or_else(|d| panic!("{d}\n{}", print_module(&s)));
    s
}

/// The args of a GEMM-like example: tensors first (A, B, [bias], C), then M, N, K
/// (batched: batch first).
fn gemm_args(rng: &mut Rng, name: &str, m: usize, n: usize, k: usize) -> (Vec<ArgValue>, usize) {
    let bf = ScalarType::BF16;
    match name {
        "batched_gemm" => (
            vec![
                ArgValue::Tensor(rng.tensor(bf, &[2, m, k])),
                ArgValue::Tensor(rng.tensor(bf, &[2, k, n])),
                ArgValue::Tensor(Tensor::filled(bf, &[2, m, n], f32::NAN)),
                ArgValue::Int(2),
                ArgValue::Int(m as i64),
                ArgValue::Int(n as i64),
                ArgValue::Int(k as i64),
            ],
            2,
        ),
        "gemm_bf16" => (
            vec![
                ArgValue::Tensor(rng.tensor(bf, &[m, k])),
                ArgValue::Tensor(rng.tensor(bf, &[k, n])),
                ArgValue::Tensor(Tensor::filled(bf, &[m, n], f32::NAN)),
                ArgValue::Int(m as i64),
                ArgValue::Int(n as i64),
                ArgValue::Int(k as i64),
            ],
            2,
        ),
        _ => (
            vec![
                ArgValue::Tensor(rng.tensor(bf, &[m, k])),
                ArgValue::Tensor(rng.tensor(bf, &[k, n])),
                ArgValue::Tensor(rng.tensor(ScalarType::F32, &[1, n])),
                ArgValue::Tensor(Tensor::filled(bf, &[m, n], f32::NAN)),
                ArgValue::Int(m as i64),
                ArgValue::Int(n as i64),
                ArgValue::Int(k as i64),
            ],
            3,
        ),
    }
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_f32_vec()
        .unwrap()
        .iter()
        .map(|x| x.to_bits())
        .collect()
}

#[test]
fn examples_keep_their_results_bit_for_bit() {
    let mut rng = Rng(0x5eed);
    for name in [
        "gemm_bf16",
        "gemm_bias_relu",
        "batched_gemm",
        "frontend_naive_gemm",
    ] {
        let m = example(name);
        let s = simplified(&m);
        for &(mm, nn, kk) in &[(37usize, 300usize, 130usize), (5, 7, 3), (128, 256, 64)] {
            let (args, out) = gemm_args(&mut rng, name, mm, nn, kk);
            let (mut a, mut b) = (args.clone(), args);
            run(&m, name, &mut a).unwrap();
            run(&s, name, &mut b).unwrap();
            let (x, y) = (a[out].tensor().unwrap(), b[out].tensor().unwrap());
            assert!(
                bits(x).iter().all(|&w| !f32::from_bits(w).is_nan()),
                "{name}: output not fully written"
            );
            assert_eq!(
                bits(x),
                bits(y),
                "{name} {mm}x{nn}x{kk}: results differ after tile-simplify"
            );
        }
    }
}

#[test]
fn naive_frontend_kernel_matches_reference() {
    // relu(0.5 · A·B + bias) against an f64 reference, within bf16 tolerance.
    let m = simplified(&example("frontend_naive_gemm"));
    let mut rng = Rng(99);
    let (mm, nn, kk) = (37, 300, 130);
    let (mut args, out) = gemm_args(&mut rng, "frontend_naive_gemm", mm, nn, kk);
    let (a, b, bias) = (
        args[0].tensor().unwrap().to_f64_vec(),
        args[1].tensor().unwrap().to_f64_vec(),
        args[2].tensor().unwrap().to_f64_vec(),
    );
    run(&m, "frontend_naive_gemm", &mut args).unwrap();
    let got = args[out].tensor().unwrap().to_f64_vec();
    for i in 0..mm {
        for j in 0..nn {
            let s: f64 = (0..kk).map(|q| a[i * kk + q] * b[q * nn + j]).sum();
            let want = (0.5 * s + bias[j]).max(0.0);
            let tol = want.abs() * 2f64.powi(-8) + 1e-4;
            assert!(
                (got[i * nn + j] - want).abs() <= tol,
                "({i}, {j}): {} vs {want}",
                got[i * nn + j]
            );
        }
    }
}

fn loop_body_kinds(m: &Module) -> Vec<OpKind> {
    let mut kinds = vec![];
    m.walk(&mut |o| {
        if o.kind == OpKind::For {
            kinds = o.regions[0].ops.iter().map(|o| o.kind).collect();
        }
    });
    kinds
}

#[test]
fn naive_frontend_kernel_gets_the_fused_loop() {
    let naive = simplified(&example("frontend_naive_gemm"));
    let fused = example("gemm_bias_relu");
    assert_eq!(
        loop_body_kinds(&naive),
        vec![OpKind::Load, OpKind::Load, OpKind::Dot, OpKind::Yield]
    );
    assert_eq!(loop_body_kinds(&naive), loop_body_kinds(&fused));
    // The epilogue: the fused kernel's ops plus the scale (constant, splat, mul).
    let epilogue = |m: &Module| {
        let body = &m.ops[0].regions[0].ops;
        let at = body.iter().position(|o| o.kind == OpKind::For).unwrap();
        body[at + 1..]
            .iter()
            .map(|o| o.kind)
            .filter(|k| !matches!(k, OpKind::Constant | OpKind::Splat | OpKind::Mul))
            .collect::<Vec<_>>()
    };
    assert_eq!(epilogue(&naive), epilogue(&fused));
    // Deterministic.
    assert_eq!(
        print_module(&naive),
        print_module(&simplified(&example("frontend_naive_gemm")))
    );
}

#[test]
fn hand_written_kernels_are_already_simplest() {
    for name in ["gemm_bf16", "gemm_bias_relu", "batched_gemm"] {
        let m = example(name);
        assert_eq!(
            print_module(&simplified(&m)),
            print_module(&m),
            "{name} changed"
        );
    }
}
