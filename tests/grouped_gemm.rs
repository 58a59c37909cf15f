//! Grouped GEMMs for mixture-of-experts layers on the CPU: `examples/grouped_gemm_contiguous.tile`
//! (groups stacked along M, each padded to whole tiles, a group id per row read with
//! `tile.extract`) run by the reference interpreter on ragged groups, empty groups and
//! padding tiles, against an f64 product of the same bf16 inputs; and compiled for each
//! target, the group id read once per region with a predicated `ld.global`. The GPU runs
//! are `tools/gpu/grouped.py` (docs/performance.md).

use std::collections::BTreeMap;
use tilec::dialect::interp::{run, ArgValue, Tensor};
use tilec::dialect::{parse_with_constants, ConstantBindings, ScalarType, Target};
use tilec::{compile, Input, Options};

mod common;

use common::Rng;

const CONTIGUOUS: &str = "grouped_gemm_contiguous";

fn source(kernel: &str) -> String {
    let root = env!("CARGO_MANIFEST_DIR");
    std::fs::read_to_string(format!("{root}/examples/{kernel}.tile")).unwrap()
}

fn bf16(x: f32) -> f32 {
    tilec::dialect::interp::round_to(ScalarType::BF16, x)
}

/// Groups of `sizes` rows, each padded to a multiple of `pad` rows: each row's group id
/// (-1 for padding).
fn contiguous_layout(sizes: &[usize], pad: usize) -> Vec<i64> {
    let mut ids = vec![];
    for (g, &m) in sizes.iter().enumerate() {
        let padded = m.div_ceil(pad) * pad;
        ids.extend((0..padded).map(|r| if r < m { g as i64 } else { -1 }));
    }
    ids
}

#[test]
fn contiguous_groups_match_an_f64_product() {
    // (group sizes, padding unit, BM, BN, N, K)
    let cases: [(&[usize], usize, i64, i64, usize, usize); 4] = [
        // Ragged groups, one empty, padded to the tile.
        (&[70, 0, 128, 5], 64, 64, 64, 96, 200),
        // Padded to twice the tile: tiles of padding only (-1 in their first row).
        (&[5, 130, 0, 64], 128, 64, 64, 72, 64),
        // The shipped 128x256 tile; every group empty but one.
        (&[0, 0, 200], 128, 128, 256, 260, 96),
        // Every group empty: the launch has no rows.
        (&[0, 0], 64, 64, 64, 64, 64),
    ];
    for (i, &(sizes, pad, bm, bn, n, k)) in cases.iter().enumerate() {
        let ids = contiguous_layout(sizes, pad);
        let m = ids.len();
        let g = sizes.len();
        let mut r = Rng(i as u64 * 0x9e37_79b9 + 11);
        let a: Vec<f32> = (0..m * k).map(|_| bf16(r.f32(1.0))).collect();
        let b: Vec<f32> = (0..g * k * n).map(|_| bf16(r.f32(1.0))).collect();
        let bind = ConstantBindings {
            values: BTreeMap::from([("BM".into(), bm), ("BN".into(), bn)]),
            kernel: None,
        };
        let file = format!("{CONTIGUOUS}.tile");
        let module = parse_with_constants(&source(CONTIGUOUS), &file, &bind).unwrap();
        let mut args = [
            ArgValue::Tensor(Tensor::from_f32(ScalarType::BF16, &[m, k], &a)),
            ArgValue::Tensor(Tensor::from_f32(ScalarType::BF16, &[g, k, n], &b)),
            ArgValue::Tensor(Tensor::filled(ScalarType::BF16, &[m, n], f32::NAN)),
            ArgValue::Tensor(Tensor::from_i64(ScalarType::I32, &[m], &ids)),
            ArgValue::Int(m as i64),
            ArgValue::Int(n as i64),
            ArgValue::Int(k as i64),
        ];
        run(&module, CONTIGUOUS, &mut args).unwrap();
        let c = args[2].tensor().unwrap().to_f32_vec().unwrap();
        let mut checked = 0;
        for row in 0..m {
            let tile_first = row - row % bm as usize;
            let want: Vec<f64> = match (ids[row], ids[tile_first]) {
                // A real row: its group's product.
                (gr, _) if gr >= 0 => {
                    let gr = gr as usize;
                    (0..n)
                        .map(|col| {
                            (0..k)
                                .map(|kk| {
                                    f64::from(a[row * k + kk])
                                        * f64::from(b[(gr * k + kk) * n + col])
                                })
                                .sum()
                        })
                        .collect()
                }
                // A tile of padding only: zeros (C held NaNs before the launch).
                (_, -1) => vec![0.0; n],
                // Padding in a real group's tile: unspecified.
                _ => continue,
            };
            for (col, w) in want.iter().enumerate() {
                let o = f64::from(c[row * n + col]);
                let tol = w.abs() / 128.0 + 1e-3;
                assert!(
                    (o - w).abs() <= tol,
                    "case {i} ({sizes:?}, pad {pad}): C[{row}, {col}] = {o}, want {w}"
                );
                checked += 1;
            }
        }
        let real: usize = sizes.iter().sum();
        assert!(checked >= real * n, "case {i}: {checked} elements checked");
    }
}

#[test]
fn contiguous_groups_compile_for_every_target() {
    let src = source(CONTIGUOUS);
    let file = format!("{CONTIGUOUS}.tile");
    for (target, bm, bn) in [
        (Target::Sm90a, 128, 256),
        (Target::Sm90a, 64, 64),
        (Target::Sm90, 128, 256),
        (Target::Sm100a, 128, 256),
    ] {
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
        .unwrap_or_else(|e| panic!("{target} {bm}x{bn}: {e}"));
        // The group id: one 32-bit global load in each region that uses it (the producer's
        // copies of B, the consumers' K range), and B read by TMA at the group's
        // coordinate.
        let reads = k.ptx.matches("ld.global.b32").count() + k.ptx.matches("ld.global.u32").count();
        assert!(
            (1..=2).contains(&reads),
            "{target} {bm}x{bn}: {reads} group-id reads"
        );
        if target == Target::Sm90a {
            assert!(
                k.ptx.contains("cp.async.bulk.tensor.3d"),
                "{target}: B by TMA"
            );
        }
    }
}
