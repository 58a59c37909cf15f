//! `examples/gemm_splitk.tile` (split-K reduced inside the kernel in slice order, through
//! `tile.wait_flag` / `tile.release_flag`) on the CPU: the reference interpreter runs it as
//! written (the GPU-level IR of its warp-specialized consumers is not interpreted) and
//! compiled for each target, for several
//! tile bindings, ragged shapes and slice counts (empty slices included), against an f64
//! product of the same bf16 inputs. The flags must be zero again after the launch, and a
//! flag that is not zero at launch must be reported as a wait that could last forever. The
//! GPU runs are `tools/gpu/bench.py` on its builds (docs/performance.md, session 28).

use std::collections::BTreeMap;
use tilec::dialect::interp::{run, ArgValue, Tensor};
use tilec::dialect::{parse_with_constants, ConstantBindings, ScalarType, Target};
use tilec::{compile, Input, Options};

mod common;

use common::Rng;

const FILE: &str = "gemm_splitk.tile";

fn source() -> String {
    std::fs::read_to_string(format!("{}/examples/{FILE}", env!("CARGO_MANIFEST_DIR"))).unwrap()
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

impl Case {
    fn tiles(&self) -> usize {
        self.m.div_ceil(self.bm as usize) * self.n.div_ceil(self.bn as usize)
    }
}

/// Runs the kernel of `module` on `c`; returns C and the flags after the launch, or the
/// interpreter's error.
fn launch(
    module: &tilec::dialect::Module,
    c: Case,
    ab: &(Vec<f32>, Vec<f32>),
    flags: Vec<i64>,
) -> Result<(Vec<f32>, Vec<i64>), String> {
    let nflags = flags.len();
    let mut args = [
        ArgValue::Tensor(Tensor::from_f32(ScalarType::BF16, &[c.m, c.k], &ab.0)),
        ArgValue::Tensor(Tensor::from_f32(ScalarType::BF16, &[c.k, c.n], &ab.1)),
        ArgValue::Tensor(Tensor::filled(ScalarType::BF16, &[c.m, c.n], f32::NAN)),
        ArgValue::Tensor(Tensor::filled(ScalarType::F32, &[c.m, c.n], f32::NAN)),
        ArgValue::Tensor(Tensor::from_i64(ScalarType::I32, &[nflags], &flags)),
        ArgValue::Int(c.m as i64),
        ArgValue::Int(c.n as i64),
        ArgValue::Int(c.k as i64),
        ArgValue::Int(c.s as i64),
    ];
    run(module, "gemm_splitk", &mut args).map_err(|e| e.to_string())?;
    let out = args[2].tensor().unwrap().to_f32_vec().unwrap();
    let f = match &args[4].tensor().unwrap().data {
        tilec::dialect::interp::Data::Int(v) => v.clone(),
        d => panic!("flags hold {d:?}"),
    };
    Ok((out, f))
}

fn bindings(c: Case) -> ConstantBindings {
    ConstantBindings {
        values: BTreeMap::from([("BM".into(), c.bm), ("BN".into(), c.bn)]),
        kernel: None,
    }
}

#[test]
fn ordered_splitk_matches_an_f64_product_and_compiles_for_every_target() {
    let src = source();
    let cases = [
        // Ragged in every dimension; 5 k tiles in 3 slices of 2 (the last has 1).
        Case {
            m: 70,
            n: 130,
            k: 300,
            s: 3,
            bm: 64,
            bn: 64,
        },
        // Decode-like: one row block, many slices.
        Case {
            m: 16,
            n: 64,
            k: 640,
            s: 5,
            bm: 64,
            bn: 64,
        },
        // More slices than k tiles: slices past K add zeros.
        Case {
            m: 33,
            n: 65,
            k: 130,
            s: 6,
            bm: 64,
            bn: 64,
        },
        // One slice: no wait, no workspace.
        Case {
            m: 64,
            n: 128,
            k: 192,
            s: 1,
            bm: 64,
            bn: 128,
        },
        Case {
            m: 130,
            n: 260,
            k: 256,
            s: 2,
            bm: 128,
            bn: 256,
        },
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
        let written = parse_with_constants(&src, FILE, &bindings(c)).unwrap();
        let (out, flags) = launch(&written, c, &ab, vec![0; c.tiles()]).unwrap();
        assert!(flags.iter().all(|&f| f == 0), "{c:?}: flags left {flags:?}");
        for (j, (&o, &w)) in out.iter().zip(&want).enumerate() {
            // One bf16 rounding of an f32 sum: 2^-8 relative, plus the f32 sum's error.
            let tol = w.abs() / 128.0 + 1e-3;
            assert!(
                (f64::from(o) - w).abs() <= tol,
                "{c:?}: C[{j}] = {o}, want {w}"
            );
        }
        // Each target compiles it (the GPU-level IR, with its warp-specialized consumers,
        // is not interpreted): one acquire spin, and the releases.
        // sm_90's and sm_100's MMA paths take the 128x256 tile only.
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
                    file: FILE,
                },
                &o,
            )
            .unwrap_or_else(|e| panic!("{c:?} {target}: {e}"));
            assert_eq!(
                k.ptx.matches("ld.acquire.gpu.global.b32").count(),
                1,
                "{target}"
            );
            // LLVM may merge the two branches' stores into one of a selected value.
            let releases = k.ptx.matches("st.release.gpu.global.b32").count();
            assert!((1..=2).contains(&releases), "{target}: {releases} releases");
        }
    }
}

#[test]
fn a_flag_not_zero_at_launch_is_a_wait_that_could_last_forever() {
    let c = Case {
        m: 64,
        n: 64,
        k: 256,
        s: 2,
        bm: 64,
        bn: 64,
    };
    let m = parse_with_constants(&source(), FILE, &bindings(c)).unwrap();
    let ab = (vec![0.0; c.m * c.k], vec![0.0; c.k * c.n]);
    let e = launch(&m, c, &ab, vec![7]).unwrap_err();
    assert!(
        e.contains("waits for flag 0 == 0, but it is 7") && e.contains("wait forever"),
        "{e}"
    );
    // Too few flags for the tiles: a located error, not a read outside the tensor.
    let c = Case { m: 128, ..c };
    let ab = (vec![0.0; c.m * c.k], vec![0.0; c.k * c.n]);
    let e = launch(&m, c, &ab, vec![0]).unwrap_err();
    assert!(
        e.contains("flag 1 is outside the flag tensor of 1 element"),
        "{e}"
    );
}
