//! The attention examples on the CPU: `examples/attention_fwd.tile` and
//! `examples/attention_fwd_causal.tile` run by the reference interpreter, as written and as
//! laid out for every target by the default pipeline (GPU-level IR: register-A wgmma on
//! sm_90a, K and V through TMA rings, mma.sync fragments elsewhere), and made persistent
//! (the static schedule's tile loop around the pipelined KV loop, its rings' barriers
//! initialised again for each tile; on sm_100 the clc schedule's work-stealing loop),
//! against an f64 attention on the same bf16 inputs.
//! For sm_100, which no machine here runs, this and ptxas (tests/precise.rs) are the check;
//! the H200 runs are `tools/gpu/attention.py`.

use tilec::dialect::interp::{run_with, ArgValue, Limits, Tensor};
use tilec::dialect::{parse, print_module, ScalarType, Target};
use tilec::passes::PassManager;
use tilec::{compile, Emit, Input, Options};

mod common;

use common::Rng;

const D: usize = 128;

/// One problem: batch, query heads, KV heads, query and key lengths.
#[derive(Clone, Copy, Debug)]
struct Case {
    b: usize,
    h: usize,
    hkv: usize,
    sq: usize,
    skv: usize,
}

fn bf16(x: f32) -> f32 {
    tilec::dialect::interp::round_to(ScalarType::BF16, x)
}

/// Q, K, V as bf16 values (row-major [B·H, SQ, D], [B·HKV, SKV, D]).
fn inputs(c: Case, seed: u64) -> [Vec<f32>; 3] {
    let mut g = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut v = |n: usize| (0..n).map(|_| bf16(g.f32(2.0))).collect::<Vec<f32>>();
    [
        v(c.b * c.h * c.sq * D),
        v(c.b * c.hkv * c.skv * D),
        v(c.b * c.hkv * c.skv * D),
    ]
}

/// softmax(Q·Kᵀ / √D) · V in f64, query head h reading KV head h / (H / HKV); causal: key
/// j ≤ query i (top-left).
fn reference(c: Case, qkv: &[Vec<f32>; 3], causal: bool) -> Vec<f64> {
    let [q, k, v] = qkv;
    let scale = 1.0 / (D as f64).sqrt();
    let mut out = vec![0.0; c.b * c.h * c.sq * D];
    for b in 0..c.b {
        for h in 0..c.h {
            let bh = b * c.h + h;
            let bkv = b * c.hkv + h / (c.h / c.hkv);
            for i in 0..c.sq {
                let keys = if causal { (i + 1).min(c.skv) } else { c.skv };
                let s: Vec<f64> = (0..keys)
                    .map(|j| {
                        (0..D)
                            .map(|d| {
                                f64::from(q[(bh * c.sq + i) * D + d])
                                    * f64::from(k[(bkv * c.skv + j) * D + d])
                            })
                            .sum::<f64>()
                            * scale
                    })
                    .collect();
                let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let p: Vec<f64> = s.iter().map(|x| (x - m).exp()).collect();
                let l: f64 = p.iter().sum();
                for d in 0..D {
                    let o: f64 = (0..keys)
                        .map(|j| p[j] * f64::from(v[(bkv * c.skv + j) * D + d]))
                        .sum();
                    out[(bh * c.sq + i) * D + d] = o / l;
                }
            }
        }
    }
    out
}

/// Runs `kernel` of `src` on case `c` with `limits` (a persistent launch's CTA count, the
/// try_cancel successes per CTA).
fn interpret(src: &str, kernel: &str, c: Case, qkv: &[Vec<f32>; 3], limits: Limits) -> Vec<f32> {
    let m = parse(src, "attention.tile").unwrap_or_else(|d| panic!("{d}"));
    let t = |n: usize, s: usize, x: &[f32]| Tensor::from_f32(ScalarType::BF16, &[n, s, D], x);
    let mut args = [
        ArgValue::Tensor(t(c.b * c.h, c.sq, &qkv[0])),
        ArgValue::Tensor(t(c.b * c.hkv, c.skv, &qkv[1])),
        ArgValue::Tensor(t(c.b * c.hkv, c.skv, &qkv[2])),
        ArgValue::Tensor(Tensor::filled(
            ScalarType::BF16,
            &[c.b * c.h, c.sq, D],
            f32::NAN,
        )),
        ArgValue::Int(c.b as i64),
        ArgValue::Int(c.h as i64),
        ArgValue::Int(c.hkv as i64),
        ArgValue::Int(c.sq as i64),
        ArgValue::Int(c.skv as i64),
        ArgValue::Float(1.0 / (D as f32).sqrt()),
    ];
    run_with(&m, kernel, &mut args, limits).unwrap_or_else(|e| panic!("{kernel}: {e}"));
    args[3].tensor().unwrap().to_f32_vec().unwrap()
}

/// ||got − want|| / ||want||, or infinity when an element is NaN (not written).
fn rel_err(got: &[f32], want: &[f64]) -> f64 {
    if got.iter().any(|x| x.is_nan()) {
        return f64::INFINITY;
    }
    let (mut num, mut den) = (0.0, 0.0);
    for (&g, &w) in got.iter().zip(want) {
        num += (f64::from(g) - w).powi(2);
        den += w * w;
    }
    (num / den).sqrt()
}

#[test]
fn attention_examples_match_an_f64_reference_as_written_and_laid_out() {
    // Ragged lengths (not multiples of the 64-row blocks), GQA (two query heads per KV
    // head), more queries than keys.
    let cases = [
        Case {
            b: 1,
            h: 2,
            hkv: 1,
            sq: 70,
            skv: 100,
        },
        Case {
            b: 2,
            h: 1,
            hkv: 1,
            sq: 65,
            skv: 33,
        },
    ];
    for (example, kernel, causal) in [
        ("attention_fwd", "attention_fwd", false),
        ("attention_fwd_causal", "attention_fwd_causal", true),
    ] {
        let path = format!("{}/examples/{example}.tile", env!("CARGO_MANIFEST_DIR"));
        let src = std::fs::read_to_string(&path).unwrap();
        for (i, &c) in cases.iter().enumerate() {
            let qkv = inputs(c, i as u64 + 1);
            let want = reference(c, &qkv, causal);
            let written = interpret(&src, kernel, c, &qkv, Limits::default());
            let err = rel_err(&written, &want);
            // bf16 P and bf16 output: about 2e-3, as torch's bf16 SDPA on the H200.
            assert!(err < 6e-3, "{example} {c:?}: error {err:e} as written");
            let persistent = |schedule: &str| {
                let mut m = parse(&src, "attention.tile").unwrap();
                PassManager::parse(&format!("persistent{{schedule={schedule} group_m=8}}"))
                    .unwrap()
                    .run(&mut m, &mut |_, _, _| {})
                    .unwrap();
                print_module(&m)
            };
            let (static_, clc) = (persistent("static"), persistent("clc"));
            let ctas = |n| Limits {
                ctas: Some(n),
                ..Limits::default()
            };
            // Static: three CTAs, each running several tiles, the rings' barriers initialised
            // again for each. clc: the whole grid launched, each CTA stealing two tiles
            // (then its request fails), cancelled CTAs never launching.
            let steals = Limits {
                clc_steals: 2,
                ..Limits::default()
            };
            // With mma_lookahead, Q·Kᵀ of the next key block is issued before this block's
            // softmax, and the loop carries it.
            // With specialize_masks, blocks whose mask is all true skip it (a tile.if).
            for (target, source, limits, ahead) in [
                (Target::Sm90a, &src, Limits::default(), false),
                (Target::Sm90a, &src, Limits::default(), true),
                (Target::Sm90, &src, Limits::default(), false),
                (Target::Sm100a, &src, Limits::default(), false),
                (Target::Sm90a, &static_, ctas(3), false),
                (Target::Sm90a, &static_, ctas(3), true),
                (Target::Sm100, &clc, steals, false),
            ] {
                // The lookahead builds also specialise the masks.
                let mut o = Options::new(target)
                    .with_mma_lookahead(ahead)
                    .with_specialize_masks(ahead);
                o.emit = Emit::Tile;
                let k = compile(
                    Input::Text {
                        source,
                        file: "attention.tile",
                    },
                    &o,
                )
                .unwrap_or_else(|e| panic!("{example} {target}: {e}"));
                if target == Target::Sm90a {
                    let rings = k.text.matches("tile.tma_load").count();
                    assert!(rings >= 4, "{example}: K and V not pipelined:\n{}", k.text);
                    let pending_one = k.text.contains("{pending = 1}");
                    assert_eq!(pending_one, ahead, "{example}: waits\n{}", k.text);
                    let versioned = k.text.contains("= tile.if");
                    assert_eq!(versioned, ahead, "{example}: masks\n{}", k.text);
                }
                let laid = interpret(&k.text, kernel, c, &qkv, limits);
                assert_eq!(
                    laid, written,
                    "{example} {c:?} {target}: the laid-out kernel computes something else"
                );
            }
        }
    }
}
