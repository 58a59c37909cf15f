//! The examples without a dot, on the CPU: the reference interpreter runs each one on
//! random inputs (ragged sizes included) and its result is compared with a float64
//! reference computed here; the same kernel after the default pipeline (laid out by
//! `tile-assign-layouts`, GPU-level) runs in the interpreter too and must give the same
//! result. The PTX of each is assembled by `ptxas` for sm_90a, sm_90 and sm_100: no
//! error, no warning, no spill.

use std::path::Path;
use tilec::dialect::interp::{run, ArgValue, Tensor};
use tilec::dialect::{parse, ScalarType, Target};
use tilec::{compile, Emit, Input, Options};

mod common;

fn example(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples")
            .join(name),
    )
    .unwrap()
}

/// A small deterministic generator (xorshift), for inputs in [-scale, scale).
struct Rng(u64);

impl Rng {
    fn next(&mut self, scale: f32) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
    }
    fn vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.next(scale)).collect()
    }
}

fn round(elem: ScalarType, xs: &[f32]) -> Vec<f64> {
    Tensor::from_f32(elem, &[xs.len()], xs).to_f64_vec()
}

/// Runs kernel `name` of `src` (level 1) and of its GPU-level form; returns both outputs
/// (the tensor argument at `out`).
fn run_both(file: &str, name: &str, args: &[ArgValue], out: usize) -> (Vec<f64>, Vec<f64>) {
    run_both_src(&example(file), file, name, args, out)
}

/// [`run_both`] on the kernel text `src` (named `file` in messages).
fn run_both_src(
    src: &str,
    file: &str,
    name: &str,
    args: &[ArgValue],
    out: usize,
) -> (Vec<f64>, Vec<f64>) {
    let m = parse(src, file).unwrap_or_else(|d| panic!("{file}: {d}"));
    let mut a1 = args.to_vec();
    run(&m, name, &mut a1).unwrap_or_else(|e| panic!("{file} (level 1): {e}"));
    let mut opts = Options::new(Target::Sm90);
    opts.emit = Emit::Tile;
    let k = compile(Input::Text { source: src, file }, &opts).unwrap();
    assert!(
        k.text.contains("#linear<"),
        "{file}: no layouts after the pipeline"
    );
    let gm = parse(&k.text, file).unwrap_or_else(|d| panic!("{file} GPU level: {d}"));
    let mut a2 = args.to_vec();
    run(&gm, name, &mut a2).unwrap_or_else(|e| panic!("{file} (GPU level): {e}"));
    let get = |a: &[ArgValue]| a[out].tensor().unwrap().to_f64_vec();
    (get(&a1), get(&a2))
}

fn assert_close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let num: f64 = got.iter().zip(want).map(|(g, w)| (g - w).powi(2)).sum();
    let den: f64 = want.iter().map(|w| w * w).sum();
    let err = (num / den.max(1e-300)).sqrt();
    assert!(err <= tol, "{what}: relative error {err:e} > {tol:e}");
}

fn tensor(elem: ScalarType, shape: &[usize], xs: &[f32]) -> ArgValue {
    ArgValue::Tensor(Tensor::from_f32(elem, shape, xs))
}

fn softmax_rows(x: &[f64], m: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for r in 0..m {
        let row = &x[r * n..(r + 1) * n];
        let mx = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|v| (v - mx).exp()).sum();
        for c in 0..n {
            out[r * n + c] = (row[c] - mx).exp() / s;
        }
    }
    out
}

#[test]
fn vadd_matches_and_keeps_results_after_layout_assignment() {
    let mut g = Rng(7);
    for n in [1usize, 1000, 1024, 2500] {
        let (x, y) = (g.vec(n, 4.0), g.vec(n, 4.0));
        let args = [
            tensor(ScalarType::F32, &[n], &x),
            tensor(ScalarType::F32, &[n], &y),
            ArgValue::Tensor(Tensor::zeros(ScalarType::F32, &[n])),
            ArgValue::Int(n as i64),
        ];
        let (l1, l2) = run_both("vadd.tile", "vadd", &args, 2);
        let want: Vec<f64> = x.iter().zip(&y).map(|(a, b)| f64::from(a + b)).collect();
        assert_eq!(l1, want, "vadd N={n}");
        assert_eq!(l2, l1, "vadd N={n}: the GPU-level kernel differs");
    }
}

#[test]
fn softmax_examples_match_float64() {
    let mut g = Rng(11);
    for (file, name, elem, shapes) in [
        (
            "softmax.tile",
            "softmax",
            ScalarType::BF16,
            vec![(3usize, 100usize), (2, 4096)],
        ),
        (
            "softmax_rows.tile",
            "softmax_rows",
            ScalarType::F32,
            vec![(5, 1000), (1, 7)],
        ),
        (
            "softmax_online.tile",
            "softmax_online",
            ScalarType::BF16,
            vec![(2, 5000), (1, 33)],
        ),
    ] {
        for (m, n) in shapes {
            let x = g.vec(m * n, 6.0);
            let args = [
                tensor(elem, &[m, n], &x),
                ArgValue::Tensor(Tensor::zeros(elem, &[m, n])),
                ArgValue::Int(m as i64),
                ArgValue::Int(n as i64),
            ];
            let (l1, l2) = run_both(file, name, &args, 1);
            let want = softmax_rows(&round(elem, &x), m, n);
            let tol = if elem == ScalarType::F32 { 1e-5 } else { 1e-2 };
            assert_close(&format!("{file} {m}x{n}"), &l1, &want, tol);
            assert_close(&format!("{file} {m}x{n} GPU level"), &l2, &l1, 1e-6);
        }
    }
}

#[test]
fn norm_examples_match_float64() {
    let mut g = Rng(5);
    for (layer, rows) in [(false, false), (true, false), (false, true), (true, true)] {
        let (file, name) = match (layer, rows) {
            (true, false) => ("layernorm.tile", "layernorm"),
            (false, false) => ("rmsnorm.tile", "rmsnorm"),
            (true, true) => ("layernorm_rows.tile", "layernorm_rows"),
            (false, true) => ("rmsnorm_rows.tile", "rmsnorm_rows"),
        };
        // The row variants take four rows of at most 1024 per program: ragged M included.
        let shapes: &[(usize, usize)] = if rows {
            &[(3, 100), (6, 1024), (1, 1), (5, 777)]
        } else {
            &[(3, 100), (2, 4096), (1, 1)]
        };
        for &(m, n) in shapes {
            let x: Vec<f32> = g.vec(m * n, 3.0).iter().map(|v| v + 1.5).collect();
            let w: Vec<f32> = g.vec(n, 0.2).iter().map(|v| v + 1.0).collect();
            let b = g.vec(n, 0.2);
            let bf = ScalarType::BF16;
            let mut args = vec![tensor(bf, &[m, n], &x), tensor(bf, &[n], &w)];
            if layer {
                args.push(tensor(bf, &[n], &b));
            }
            args.push(ArgValue::Tensor(Tensor::zeros(bf, &[m, n])));
            args.extend([
                ArgValue::Int(m as i64),
                ArgValue::Int(n as i64),
                ArgValue::Float(1e-5),
            ]);
            let out = if layer { 3 } else { 2 };
            let (l1, l2) = run_both(file, name, &args, out);
            let (x, w, b) = (round(bf, &x), round(bf, &w), round(bf, &b));
            let mut want = vec![0.0; m * n];
            for r in 0..m {
                let row = &x[r * n..(r + 1) * n];
                let mean = if layer {
                    row.iter().sum::<f64>() / n as f64
                } else {
                    0.0
                };
                let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
                let inv = 1.0 / (var + 1e-5).sqrt();
                for c in 0..n {
                    let y = (row[c] - mean) * inv * w[c];
                    want[r * n + c] = if layer { y + b[c] } else { y };
                }
            }
            assert_close(&format!("{file} {m}x{n}"), &l1, &want, 1e-2);
            assert_close(&format!("{file} {m}x{n} GPU level"), &l2, &l1, 1e-6);
        }
    }
}

#[test]
fn transpose_and_column_sums_match_float64() {
    let mut g = Rng(3);
    for (m, n) in [(64usize, 64usize), (70, 130), (1, 5)] {
        let x = g.vec(m * n, 2.0);
        let args = [
            tensor(ScalarType::F32, &[m, n], &x),
            ArgValue::Tensor(Tensor::zeros(ScalarType::F32, &[n, m])),
            ArgValue::Int(m as i64),
            ArgValue::Int(n as i64),
        ];
        let (l1, l2) = run_both("transpose.tile", "transpose", &args, 1);
        let want: Vec<f64> = (0..n * m)
            .map(|i| f64::from(x[(i % m) * n + i / m]))
            .collect();
        assert_eq!(l1, want, "transpose {m}x{n}");
        assert_eq!(l2, l1, "transpose {m}x{n}: the GPU-level kernel differs");
        let args = [
            tensor(ScalarType::F32, &[m, n], &x),
            ArgValue::Tensor(Tensor::zeros(ScalarType::F32, &[1, n])),
            ArgValue::Int(m as i64),
            ArgValue::Int(n as i64),
        ];
        let (l1, l2) = run_both("col_sums.tile", "col_sums", &args, 1);
        let want: Vec<f64> = (0..n)
            .map(|j| (0..m).map(|i| f64::from(x[i * n + j])).sum())
            .collect();
        assert_close(&format!("col_sums {m}x{n}"), &l1, &want, 1e-6);
        assert_close(&format!("col_sums {m}x{n} GPU level"), &l2, &l1, 1e-6);
    }
}

#[test]
fn unit_dimension_reshapes_of_any_shape_keep_every_element() {
    // A 1x100 row as a 100x1 column (tile-simplify makes the transpose a reshape): the
    // padded layouts differ only in where the unit dimension is.
    let src = "tile.kernel @col(%X: tensor<?x?xf32>, %Y: tensor<?x?xf32>) {grid = [1]} {
  %c0 = tile.constant {value = 0} : index
  %x = tile.load %X, %c0, %c0 : tile<1x100xf32>
  %t = tile.transpose %x : tile<100x1xf32>
  %r = tile.reshape %t : tile<100xf32>
  %s = tile.reshape %r : tile<1x100x1xf32>
  %u = tile.reshape %s : tile<100x1xf32>
  tile.store %Y, %c0, %c0, %u
  tile.return
}";
    let x: Vec<f32> = (0..100).map(|i| i as f32 + 0.5).collect();
    let args = [
        tensor(ScalarType::F32, &[1, 100], &x),
        ArgValue::Tensor(Tensor::zeros(ScalarType::F32, &[100, 1])),
    ];
    let (l1, l2) = run_both_src(src, "unit.tile", "col", &args, 1);
    let want: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    assert_eq!(l1, want);
    assert_eq!(l2, want, "GPU level");
    let ptxas = common::nv_tool("ptxas", "PTXAS").unwrap_or_else(|e| panic!("{e}"));
    let k = compile(
        Input::Text {
            source: src,
            file: "unit.tile",
        },
        &Options::new(Target::Sm90a),
    )
    .unwrap_or_else(|e| panic!("unit.tile: {e}"));
    let dir = std::env::temp_dir().join(format!("tilec-unit-reshape-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ptx = dir.join("k.ptx");
    std::fs::write(&ptx, &k.ptx).unwrap();
    let o = std::process::Command::new(&ptxas)
        .args(["-arch", "sm_90a"])
        .arg(&ptx)
        .arg("-o")
        .arg(dir.join("k.cubin"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn split_column_sums_add_every_slab_once() {
    let mut g = Rng(5);
    // 2500 rows: three programs per column block add into S (1024 rows each, the last 452).
    for (m, n) in [(70usize, 130usize), (2500, 300), (1, 5)] {
        let x = g.vec(m * n, 2.0);
        // S starts at 1 everywhere: the kernel adds to what is there.
        let args = [
            tensor(ScalarType::F32, &[m, n], &x),
            tensor(ScalarType::F32, &[1, n], &vec![1.0; n]),
            ArgValue::Int(m as i64),
            ArgValue::Int(n as i64),
        ];
        let (l1, l2) = run_both("col_sums_split.tile", "col_sums_split", &args, 1);
        let want: Vec<f64> = (0..n)
            .map(|j| 1.0 + (0..m).map(|i| f64::from(x[i * n + j])).sum::<f64>())
            .collect();
        assert_close(&format!("col_sums_split {m}x{n}"), &l1, &want, 1e-6);
        assert_close(&format!("col_sums_split {m}x{n} GPU level"), &l2, &l1, 1e-6);
    }
}

#[test]
fn scale_bias_act_matches_float64() {
    let mut g = Rng(9);
    let bf = ScalarType::BF16;
    for (m, n) in [(8usize, 256usize), (3, 100), (20, 300)] {
        let x = g.vec(m * n, 4.0);
        let b = g.vec(n, 1.0);
        let s = 0.75f32;
        let args = [
            tensor(bf, &[m, n], &x),
            tensor(bf, &[n], &b),
            ArgValue::Tensor(Tensor::zeros(bf, &[m, n])),
            ArgValue::Tensor(Tensor::zeros(bf, &[m, n])),
            ArgValue::Int(m as i64),
            ArgValue::Int(n as i64),
            ArgValue::Float(s),
        ];
        let (x, b) = (round(bf, &x), round(bf, &b));
        let v = |i: usize| x[i] * f64::from(s) + b[i % n];
        let silu: Vec<f64> = (0..m * n).map(|i| v(i) / (1.0 + (-v(i)).exp())).collect();
        let k = (2.0 / std::f64::consts::PI).sqrt();
        let gelu: Vec<f64> = (0..m * n)
            .map(|i| 0.5 * v(i) * (1.0 + (k * (v(i) + 0.044715 * v(i).powi(3))).tanh()))
            .collect();
        for (out, want) in [(2, &silu), (3, &gelu)] {
            let (l1, l2) = run_both("scale_bias_act.tile", "scale_bias_act", &args, out);
            assert_close(
                &format!("scale_bias_act {m}x{n} out {out}"),
                &l1,
                want,
                1e-2,
            );
            assert_close(&format!("scale_bias_act {m}x{n} GPU level"), &l2, &l1, 1e-6);
        }
    }
}

#[test]
fn embedding_gathers_rows_and_zeroes_bad_ids() {
    let mut g = Rng(13);
    let bf = ScalarType::BF16;
    for (t, v, d) in [(5usize, 7usize, 300usize), (16, 3, 256), (40, 100, 17)] {
        let table = g.vec(v * d, 2.0);
        // Ids in [-2, v + 2): some outside the table.
        let ids: Vec<i64> = (0..t)
            .map(|_| (g.next(1.0) * (v as f32 + 2.0)) as i64)
            .collect();
        let args = [
            ArgValue::Tensor(Tensor::from_i64(ScalarType::I32, &[t], &ids)),
            tensor(bf, &[v, d], &table),
            ArgValue::Tensor(Tensor::zeros(bf, &[t, d])),
            ArgValue::Int(t as i64),
            ArgValue::Int(d as i64),
        ];
        let (l1, l2) = run_both("embedding.tile", "embedding", &args, 2);
        let table = round(bf, &table);
        let want: Vec<f64> = (0..t * d)
            .map(|i| {
                let id = ids[i / d];
                if (0..v as i64).contains(&id) {
                    table[id as usize * d + i % d]
                } else {
                    0.0
                }
            })
            .collect();
        assert_eq!(l1, want, "embedding {t}x{v}x{d}");
        assert_eq!(
            l2, l1,
            "embedding {t}x{v}x{d}: the GPU-level kernel differs"
        );
    }
}

#[test]
fn plain_examples_assemble_without_spills() {
    let ptxas = common::nv_tool("ptxas", "PTXAS").unwrap_or_else(|e| panic!("{e}"));
    let files = [
        "vadd.tile",
        "softmax.tile",
        "softmax_rows.tile",
        "softmax_online.tile",
        "rmsnorm.tile",
        "layernorm.tile",
        "rmsnorm_rows.tile",
        "layernorm_rows.tile",
        "transpose.tile",
        "col_sums.tile",
        "col_sums_split.tile",
        "scale_bias_act.tile",
        "embedding.tile",
    ];
    for target in [Target::Sm90a, Target::Sm90, Target::Sm100] {
        for file in files {
            let src = example(file);
            let k = compile(Input::Text { source: &src, file }, &Options::new(target))
                .unwrap_or_else(|e| panic!("{file} for {target}: {e}"));
            assert_eq!(k.manifest.block[0] % 32, 0, "{file}: block");
            let dir = std::env::temp_dir().join(format!(
                "tilec-plain-{}-{target}-{file}",
                std::process::id()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let ptx = dir.join("k.ptx");
            std::fs::write(&ptx, &k.ptx).unwrap();
            let o = std::process::Command::new(&ptxas)
                .args(["-v", "-arch", target.name()])
                .arg(&ptx)
                .arg("-o")
                .arg(dir.join("k.cubin"))
                .output()
                .unwrap();
            let log = String::from_utf8_lossy(&o.stderr).to_string();
            assert!(o.status.success(), "{file} {target}: ptxas failed:\n{log}");
            assert!(!log.contains("warning"), "{file} {target}: {log}");
            assert!(
                log.contains("0 bytes spill stores, 0 bytes spill loads"),
                "{file} {target} spills:\n{log}"
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
