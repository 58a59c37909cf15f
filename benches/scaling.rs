//! Compile-time scaling: one GEMM with an epilogue of 10², 10³ and 10⁴ elementwise ops
//! (`epilogue_chain`), compiled in process to PTX for sm_90a; prints the median of
//! each stage (`Kernel::timings`, `Kernel::mlir_timings`) and the 10⁴ / 10³ ratio of each.
//!
//! ```sh
//! cargo bench --bench scaling              # 5 runs per size
//! cargo bench --bench scaling -- --runs 3  # fewer
//! ```
//!
//! Linear compile time is a ratio of 10 per 10× ops. tools/tests/mlir_growth.rs checks
//! that the MLIR grows linearly (in ops, not seconds).

mod common;
use std::collections::BTreeMap;
use tilec::dialect::Target;
use tilec::{compile, Input, Options};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs = common::arg(&args, "--runs", 5);
    let no_simplify = args.iter().any(|a| a == "--no-simplify");
    let sizes = [100usize, 1000, 10000];
    let mut medians: Vec<BTreeMap<String, f64>> = vec![];
    for &n in &sizes {
        let src = epilogue_chain(n);
        let mut opts = Options::new(Target::Sm90a);
        opts.simplify = !no_simplify;
        let mut per: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for _ in 0..runs {
            let t = std::time::Instant::now();
            let k = match compile(
                Input::Text {
                    source: &src,
                    file: "chain.tile",
                },
                &opts,
            ) {
                Ok(k) => k,
                Err(e) => {
                    eprintln!("scaling: {n} ops: {e}");
                    std::process::exit(1);
                }
            };
            let total = t.elapsed().as_secs_f64() * 1e3;
            per.entry("total".into()).or_default().push(total);
            for (stage, d) in k.timings.iter().chain(k.mlir_timings.iter()) {
                per.entry(stage.to_string())
                    .or_default()
                    .push(d.as_secs_f64() * 1e3);
            }
        }
        let med: BTreeMap<String, f64> = per
            .into_iter()
            .map(|(k, mut v)| {
                v.sort_by(f64::total_cmp);
                (k, v[v.len() / 2])
            })
            .collect();
        let line: Vec<String> = med.iter().map(|(k, v)| format!("{k} {v:.1} ms")).collect();
        println!(
            "scaling/{n} ops ({runs} runs, medians): {}",
            line.join("; ")
        );
        medians.push(med);
    }
    let (a, b) = (&medians[1], &medians[2]);
    let ratios: Vec<String> = b
        .iter()
        .filter_map(|(k, v)| a.get(k).map(|u| format!("{k} {:.1}", v / u)))
        .collect();
    println!("scaling/ratio 10^4 / 10^3 ops: {}", ratios.join("; "));
}

/// `examples/gemm_bias_relu.tile`'s GEMM (128×256×64 tiles, bf16 in, f32 accumulator) with an
/// epilogue of `n` elementwise ops on the 128×256 accumulator: `e_i = op(e_{i-1}, bias)`,
/// the op cycling through add, mul, max, sub, so that no two neighbours fold into one.
pub fn epilogue_chain(n: usize) -> String {
    let mut s = String::from(
        "tile.kernel @chain(%A: tensor<?x?xbf16>, %B: tensor<?x?xbf16>, \
         %bias: tensor<?x?xf32>, %C: tensor<?x?xbf16>, %M: index, %N: index, %K: index) \
         {grid = [ceildiv(%N, 256), ceildiv(%M, 128)]} {
  %pid_n = tile.program_id {dim = 0} : index
  %pid_m = tile.program_id {dim = 1} : index
  %c0 = tile.constant {value = 0} : index
  %c64 = tile.constant {value = 64} : index
  %c128 = tile.constant {value = 128} : index
  %c256 = tile.constant {value = 256} : index
  %row = tile.muli %pid_m, %c128 : index
  %col = tile.muli %pid_n, %c256 : index
  %zero = tile.zeros : tile<128x256xf32>
  %acc = tile.for %c0, %K, %c64, %zero : tile<128x256xf32> {
  ^bb0(%k: index, %c: tile<128x256xf32>):
    %a = tile.load %A, %row, %k : tile<128x64xbf16>
    %b = tile.load %B, %k, %col : tile<64x256xbf16>
    %d = tile.dot %a, %b, %c : tile<128x256xf32>
    tile.yield %d
  }
  %bias_row = tile.load %bias, %c0, %col : tile<1x256xf32>
  %bias_tile = tile.broadcast %bias_row : tile<128x256xf32>
  %e0 = tile.add %acc, %bias_tile : tile<128x256xf32>
",
    );
    for i in 1..n {
        let op = ["mul", "max", "sub", "add"][i % 4];
        s.push_str(&format!(
            "  %e{i} = tile.{op} %e{}, %bias_tile : tile<128x256xf32>\n",
            i - 1
        ));
    }
    s.push_str(&format!(
        "  %out = tile.convert %e{} : tile<128x256xbf16>
  tile.store %C, %row, %col, %out
  tile.return
}}
",
        n.max(1) - 1
    ));
    s
}
