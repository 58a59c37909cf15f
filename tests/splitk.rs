//! `examples/gemm_splitk.tile` (split-K reduced inside the kernel in one step: the last
//! slice to `tile.arrive_flag` sums the partials in slice order),
//! `examples/gemm_splitk_last_slice.tile` (the last slice waits for the others' arrivals and
//! reduces) and `examples/gemm_splitk_serial.tile` (slice after slice, through
//! `tile.wait_flag` / `tile.release_flag`) on the CPU: the reference interpreter runs each
//! as written (the GPU-level IR of their warp-specialized consumers is not interpreted) for
//! several tile bindings, ragged shapes and slice counts (empty slices included), against
//! an f64 product of the same bf16 inputs; all give the same bits, and all compile for
//! each target with the flag instructions expected. The flags must be zero again after a
//! launch; a stale flag is a wait that could last forever (serial) or a C left unwritten
//! (one step). The GPU runs are `tools/gpu/bench.py` on their builds (docs/performance.md).

use std::collections::BTreeMap;
use tilec::dialect::interp::{run, ArgValue, Data, Tensor};
use tilec::dialect::{parse_with_constants, ConstantBindings, Module, ScalarType, Target};
use tilec::{compile, Input, Options};

mod common;

use common::Rng;

const ONE_STEP: &str = "gemm_splitk";
const SERIAL: &str = "gemm_splitk_serial";
const LAST_SLICE: &str = "gemm_splitk_last_slice";

fn source(kernel: &str) -> String {
    let root = env!("CARGO_MANIFEST_DIR");
    std::fs::read_to_string(format!("{root}/examples/{kernel}.tile")).unwrap()
}

fn bf16(x: f32) -> f32 {
    tilec::dialect::interp::round_to(ScalarType::BF16, x)
}

/// One launch: sizes, slices, and the tile binding.
#[derive(Clone, Copy, Debug)]
struct Case {
    m: usize,
    n: usize,
    k: usize,
    s: usize,
    bm: i64,
    bn: i64,
}

const fn case(m: usize, n: usize, k: usize, s: usize, bm: i64, bn: i64) -> Case {
    Case { m, n, k, s, bm, bn }
}

impl Case {
    fn tiles(&self) -> usize {
        self.m.div_ceil(self.bm as usize) * self.n.div_ceil(self.bn as usize)
    }
}

fn parsed(kernel: &str, c: Case) -> Module {
    let b = ConstantBindings {
        values: BTreeMap::from([("BM".into(), c.bm), ("BN".into(), c.bn)]),
        kernel: None,
    };
    parse_with_constants(&source(kernel), &format!("{kernel}.tile"), &b).unwrap()
}

/// Runs `kernel` of `module` on `c` with the flags `flags`; returns C and the flags after
/// the launch, or the interpreter's error.
fn launch(
    module: &Module,
    kernel: &str,
    c: Case,
    ab: &(Vec<f32>, Vec<f32>),
    flags: Vec<i64>,
) -> Result<(Vec<f32>, Vec<i64>), String> {
    // The serial reduction's running sums (M×N), or one partial per slice (S×M×N).
    let w: Vec<usize> = if kernel == SERIAL {
        vec![c.m, c.n]
    } else {
        vec![c.s, c.m, c.n]
    };
    let mut args = [
        ArgValue::Tensor(Tensor::from_f32(ScalarType::BF16, &[c.m, c.k], &ab.0)),
        ArgValue::Tensor(Tensor::from_f32(ScalarType::BF16, &[c.k, c.n], &ab.1)),
        ArgValue::Tensor(Tensor::filled(ScalarType::BF16, &[c.m, c.n], f32::NAN)),
        ArgValue::Tensor(Tensor::filled(ScalarType::F32, &w, f32::NAN)),
        ArgValue::Tensor(Tensor::from_i64(ScalarType::I32, &[flags.len()], &flags)),
        ArgValue::Int(c.m as i64),
        ArgValue::Int(c.n as i64),
        ArgValue::Int(c.k as i64),
        ArgValue::Int(c.s as i64),
    ];
    run(module, kernel, &mut args).map_err(|e| e.to_string())?;
    let out = args[2].tensor().unwrap().to_f32_vec().unwrap();
    let f = match &args[4].tensor().unwrap().data {
        Data::Int(v) => v.clone(),
        d => panic!("flags hold {d:?}"),
    };
    Ok((out, f))
}

#[test]
fn ordered_splitk_matches_an_f64_product_and_compiles_for_every_target() {
    let cases = [
        // Ragged in every dimension; 5 k tiles in 3 slices of 2 (the last has 1).
        case(70, 130, 300, 3, 64, 64),
        // Decode-like: one row block, many slices.
        case(16, 64, 640, 5, 64, 64),
        // More slices than k tiles: slices past K add zeros.
        case(33, 65, 130, 6, 64, 64),
        // One slice: no wait; the one-step form sums its own partial.
        case(64, 128, 192, 1, 64, 128),
        case(130, 260, 256, 2, 128, 256),
    ];
    for (i, c) in cases.into_iter().enumerate() {
        let mut g = Rng(i as u64 * 0x9e37_79b9 + 7);
        let a: Vec<f32> = (0..c.m * c.k).map(|_| bf16(g.f32(1.0))).collect();
        let b: Vec<f32> = (0..c.k * c.n).map(|_| bf16(g.f32(1.0))).collect();
        let mut want = vec![0f64; c.m * c.n];
        for r in 0..c.m {
            for kk in 0..c.k {
                let x = f64::from(a[r * c.k + kk]);
                for col in 0..c.n {
                    want[r * c.n + col] += x * f64::from(b[kk * c.n + col]);
                }
            }
        }
        let ab = (a, b);
        let mut outs = vec![];
        for kernel in [ONE_STEP, SERIAL, LAST_SLICE] {
            let m = parsed(kernel, c);
            let (out, flags) = launch(&m, kernel, c, &ab, vec![0; c.tiles()]).unwrap();
            assert!(
                flags.iter().all(|&f| f == 0),
                "{kernel} {c:?}: flags {flags:?}"
            );
            for (j, (&o, &w)) in out.iter().zip(&want).enumerate() {
                // One bf16 rounding of an f32 sum: 2^-8 relative, plus the f32 sum's error.
                let tol = w.abs() / 128.0 + 1e-3;
                let ok = (f64::from(o) - w).abs() <= tol;
                assert!(ok, "{kernel} {c:?}: C[{j}] = {o}, want {w}");
            }
            outs.push(out);
            compiles(kernel, c);
        }
        // Both sum the partials in slice order: the same bits.
        let same = outs[0]
            .iter()
            .zip(&outs[1])
            .all(|(x, y)| x.to_bits() == y.to_bits());
        assert!(same, "{c:?}: the two reductions differ");
    }
}

/// `kernel` bound for `c` compiles for each target (sm_90's and sm_100's MMA paths take the
/// 128x256 tile only) with the flag instructions of its protocol.
fn compiles(kernel: &str, c: Case) {
    let src = source(kernel);
    let file = format!("{kernel}.tile");
    for target in [Target::Sm90a, Target::Sm90, Target::Sm100a] {
        let (bm, bn) = if target == Target::Sm90a {
            (c.bm, c.bn)
        } else {
            (128, 256)
        };
        let o = Options::new(target)
            .with_constant("BM", bm)
            .with_constant("BN", bn);
        let k = compile(
            Input::Text {
                source: &src,
                file: &file,
            },
            &o,
        )
        .unwrap_or_else(|e| panic!("{kernel} {c:?} {target}: {e}"));
        let n = |s: &str| k.ptx.matches(s).count();
        let acquires = n("ld.acquire.gpu.global.b32");
        // LLVM may merge the two branches' release stores into one of a selected value.
        let releases = n("st.release.gpu.global.b32");
        let arrives = n("atom.global.add.u32");
        let fences = n("fence.acq_rel.gpu");
        if kernel == SERIAL {
            assert_eq!((acquires, arrives), (1, 0), "{kernel} {target}");
            assert!((1..=2).contains(&releases), "{target}: {releases} releases");
        } else if kernel == LAST_SLICE {
            let got = (acquires, releases, arrives, fences);
            assert_eq!(got, (1, 1, 1, 2), "{kernel} {target}");
        } else {
            let got = (acquires, releases, arrives, fences);
            assert_eq!(got, (0, 1, 1, 2), "{kernel} {target}");
        }
    }
}

#[test]
fn a_flag_not_zero_at_launch_is_a_wait_that_could_last_forever() {
    let c = case(64, 64, 256, 2, 64, 64);
    let m = parsed(SERIAL, c);
    let ab = (vec![0.0; c.m * c.k], vec![0.0; c.k * c.n]);
    let e = launch(&m, SERIAL, c, &ab, vec![7]).unwrap_err();
    assert!(
        e.contains("waits for flag 0 == 0, but it is 7") && e.contains("wait forever"),
        "{e}"
    );
    // Too few flags for the tiles: a located error, not a read outside the tensor.
    let c = case(128, 64, 256, 2, 64, 64);
    let ab = (vec![0.0; c.m * c.k], vec![0.0; c.k * c.n]);
    let e = launch(&m, SERIAL, c, &ab, vec![0]).unwrap_err();
    assert!(
        e.contains("flag 1 is outside the flag tensor of 1 element"),
        "{e}"
    );
}

#[test]
fn a_counter_not_zero_at_launch_leaves_c_unwritten() {
    // The one-step reduction never waits: with a stale counter no program is last, so C
    // stays unwritten (NaN here) and the counter ends at its stale value plus S.
    let c = case(64, 64, 256, 2, 64, 64);
    let m = parsed(ONE_STEP, c);
    let ab = (vec![1.0; c.m * c.k], vec![1.0; c.k * c.n]);
    let (out, flags) = launch(&m, ONE_STEP, c, &ab, vec![5]).unwrap();
    assert!(out.iter().all(|x| x.is_nan()));
    assert_eq!(flags, [7]);
    let (out, flags) = launch(&m, ONE_STEP, c, &ab, vec![0]).unwrap();
    assert!(out.iter().all(|&x| x == 256.0), "{:?}", &out[..4]);
    assert_eq!(flags, [0]);
}
