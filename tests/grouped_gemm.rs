//! Grouped GEMMs for mixture-of-experts layers on the CPU: `examples/grouped_gemm.tile`
//! (groups of any size stacked along M, found by walking the group ends read with
//! `tile.extract`, stored with a row mask) and `examples/grouped_gemm_contiguous.tile`
//! (each group padded to whole tiles, a group id per row), run by the reference
//! interpreter on ragged groups, empty groups and padding tiles against an f64 product of
//! the same bf16 inputs, and compiled for each target. The GPU runs are
//! `tools/gpu/grouped.py` (docs/performance.md).

use std::collections::BTreeMap;
use tilec::dialect::interp::{run, run_with, ArgValue, Limits, Tensor};
use tilec::dialect::{parse_with_constants, ConstantBindings, Module, ScalarType, Target};
use tilec::passes::PassManager;
use tilec::{compile, Input, Options};

mod common;

use common::Rng;

const GROUPED: &str = "grouped_gemm";
const CONTIGUOUS: &str = "grouped_gemm_contiguous";

fn source(kernel: &str) -> String {
    let root = env!("CARGO_MANIFEST_DIR");
    std::fs::read_to_string(format!("{root}/examples/{kernel}.tile")).unwrap()
}

fn bf16(x: f32) -> f32 {
    tilec::dialect::interp::round_to(ScalarType::BF16, x)
}

fn parsed(kernel: &str, bm: i64, bn: i64) -> Module {
    let bind = ConstantBindings {
        values: BTreeMap::from([("BM".into(), bm), ("BN".into(), bn)]),
        kernel: None,
    };
    parse_with_constants(&source(kernel), &format!("{kernel}.tile"), &bind).unwrap()
}

/// Row `row` of A (M×K) times B[g] (K×N), in f64.
fn product_row(a: &[f32], b: &[f32], row: usize, g: usize, n: usize, k: usize) -> Vec<f64> {
    (0..n)
        .map(|col| {
            (0..k)
                .map(|kk| f64::from(a[row * k + kk]) * f64::from(b[(g * k + kk) * n + col]))
                .sum()
        })
        .collect()
}

/// `got` within one bf16 rounding of an f32 sum of `want`.
fn assert_close(got: f32, want: f64, what: &str) {
    let tol = want.abs() / 128.0 + 1e-3;
    assert!(
        (f64::from(got) - want).abs() <= tol,
        "{what} = {got}, want {want}"
    );
}

#[test]
fn ragged_groups_match_an_f64_product_and_write_only_their_rows() {
    // (group sizes, BM, BN, N, K)
    let cases: [(&[usize], i64, i64, usize, usize); 5] = [
        // Ragged, with an empty group between and boundaries inside row tiles.
        (&[70, 0, 129, 5, 64], 64, 64, 96, 200),
        // The first and last groups empty; one group smaller than a tile.
        (&[0, 3, 64, 0], 64, 64, 72, 64),
        // The shipped 128x256 tile.
        (&[200, 56, 1], 128, 256, 260, 96),
        // One group.
        (&[100], 64, 128, 130, 72),
        // Every group empty.
        (&[0, 0, 0], 64, 64, 64, 64),
    ];
    for (i, &(sizes, bm, bn, n, k)) in cases.iter().enumerate() {
        let g = sizes.len();
        let m: usize = sizes.iter().sum();
        let ends: Vec<i64> = sizes
            .iter()
            .scan(0i64, |e, &s| {
                *e += s as i64;
                Some(*e)
            })
            .collect();
        let mut r = Rng(i as u64 * 0x51_7cc1 + 3);
        let a: Vec<f32> = (0..m * k).map(|_| bf16(r.f32(1.0))).collect();
        let b: Vec<f32> = (0..g * k * n).map(|_| bf16(r.f32(1.0))).collect();
        let module = parsed(GROUPED, bm, bn);
        // As built for the GPU: persistent, 3 CTAs walking the tiles (in grouped order),
        // each store moved out of bounds past the last tile.
        let mut persistent = module.clone();
        PassManager::parse("persistent{schedule=static group_m=8}")
            .unwrap()
            .run(&mut persistent, &mut |_, _, _| {})
            .unwrap();
        // C holds NaN, so a row left unwritten shows. The programs run in both orders: the
        // two that share a row tile at a group boundary must each write only their own
        // rows, or the later one overwrites the other's.
        for (module, ctas, reverse) in [
            (&module, None, false),
            (&module, None, true),
            (&persistent, Some(3), false),
            (&persistent, Some(3), true),
        ] {
            let mut args = [
                ArgValue::Tensor(Tensor::from_f32(ScalarType::BF16, &[m, k], &a)),
                ArgValue::Tensor(Tensor::from_f32(ScalarType::BF16, &[g, k, n], &b)),
                ArgValue::Tensor(Tensor::filled(ScalarType::BF16, &[m, n], f32::NAN)),
                ArgValue::Tensor(Tensor::from_i64(ScalarType::I32, &[g], &ends)),
                ArgValue::Int(g as i64),
                ArgValue::Int(m as i64),
                ArgValue::Int(n as i64),
                ArgValue::Int(k as i64),
            ];
            let limits = Limits {
                reverse,
                ctas,
                ..Limits::default()
            };
            run_with(module, GROUPED, &mut args, limits).unwrap();
            let c = args[2].tensor().unwrap().to_f32_vec().unwrap();
            let mut start = 0;
            for (grp, &size) in sizes.iter().enumerate() {
                for row in start..start + size {
                    let want = product_row(&a, &b, row, grp, n, k);
                    for (col, &w) in want.iter().enumerate() {
                        let what = format!(
                            "case {i} ({sizes:?}, {ctas:?} CTAs, reverse {reverse}) group \
                             {grp}: C[{row}, {col}]"
                        );
                        assert_close(c[row * n + col], w, &what);
                    }
                }
                start += size;
            }
        }
    }
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
    type Case = (&'static [usize], usize, i64, i64, usize, usize);
    let cases: [Case; 4] = [
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
        let module = parsed(CONTIGUOUS, bm, bn);
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
                (gr, _) if gr >= 0 => product_row(&a, &b, row, gr as usize, n, k),
                // A tile of padding only: zeros (C held NaNs before the launch).
                (_, -1) => vec![0.0; n],
                // Padding in a real group's tile: unspecified.
                _ => continue,
            };
            for (col, &w) in want.iter().enumerate() {
                let what = format!("case {i} ({sizes:?}, pad {pad}): C[{row}, {col}]");
                assert_close(c[row * n + col], w, &what);
                checked += 1;
            }
        }
        let real: usize = sizes.iter().sum();
        assert!(checked >= real * n, "case {i}: {checked} elements checked");
    }
}

/// The PTX of `kernel` built for `target` with tile BM x BN.
fn ptx(kernel: &str, target: Target, bm: i64, bn: i64) -> String {
    let o = Options::new(target)
        .with_constant("BM", bm)
        .with_constant("BN", bn);
    let input = Input::Text {
        source: &source(kernel),
        file: &format!("{kernel}.tile"),
    };
    compile(input, &o)
        .unwrap_or_else(|e| panic!("{kernel} {target} {bm}x{bn}: {e}"))
        .ptx
}

#[test]
fn contiguous_groups_compile_for_every_target() {
    for (target, bm, bn) in [
        (Target::Sm90a, 128, 256),
        (Target::Sm90a, 64, 64),
        (Target::Sm90, 128, 256),
        (Target::Sm100a, 128, 256),
    ] {
        let ptx = ptx(CONTIGUOUS, target, bm, bn);
        // The group id: one 32-bit global load in each region that uses it (the producer's
        // copies of B, the consumers' K range), and B read by TMA at the group's
        // coordinate.
        let reads = ptx.matches("ld.global.b32").count() + ptx.matches("ld.global.u32").count();
        assert!(
            (1..=2).contains(&reads),
            "{target} {bm}x{bn}: {reads} group-id reads"
        );
        if target == Target::Sm90a {
            assert!(
                ptx.contains("cp.async.bulk.tensor.3d"),
                "{target}: B by TMA"
            );
        }
    }
}

#[test]
fn ragged_groups_compile_for_every_target_with_masked_stores() {
    for (target, bm, bn) in [
        (Target::Sm90a, 128, 256),
        (Target::Sm90a, 64, 128),
        // Swap-AB: the mask read in the transposed accumulator.
        (Target::Sm90a, 16, 128),
        (Target::Sm90, 128, 256),
        (Target::Sm100a, 128, 256),
    ] {
        let ptx = ptx(GROUPED, target, bm, bn);
        // The group ends read in the walk (in each region that walks), and the stores
        // predicated on the mask: on the fast path, a pair of adjacent columns is one
        // vector store where both of its bits are set, else element stores; swap-AB's
        // registers are not adjacent in the transposed tile, so each is stored alone.
        let reads = ptx.matches("ld.global.s32").count() + ptx.matches("ld.global.b32").count();
        assert!(reads >= 2, "{target}: {reads} reads of the group ends");
        let fast = if bm < 64 {
            "{ .reg .pred p; setp.ne.u32 p, %r"
        } else {
            "and.pred b, p, q; @b st.global.v2.b16"
        };
        assert!(
            ptx.contains(fast),
            "{target} {bm}x{bn}: masked fast-path stores"
        );
    }
}
