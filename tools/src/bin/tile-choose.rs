//! `tile-choose`: the GEMM tile heuristic's choice for each problem shape, with its reason
//! and estimate (`tilec::gemm_heuristic`), without compiling anything.
//!
//! ```text
//! tile-choose [MxNxK | BxMxNxK]... [--target sm_90a] [--dtype bf16|f16|e4m3|e5m2] [--sms 132]
//!             [--fast-accum]
//! ```
//! With no shape, the 21 shapes of `tools/gpu/bench.py`. Prints a Markdown table: the
//! chosen tile, stages, schedule and epilogue store, the waves over the SMs, what bounds the
//! estimate, the estimate in µs and TFLOP/s, and the reason. `tile-compile --tile auto`
//! makes the same choice (and checks it against the passes). Exit codes: 0 success, 1 a
//! shape the heuristic has no answer for, 2 usage.

#[path = "../common.rs"]
mod common;

use clap::Parser;
use common::*;
use std::fmt::Write as _;
use std::io::Write as _;
use tilec::dialect::{ScalarType, Target};
use tilec::gemm_heuristic::{choose_gemm, GemmProblem, Machine, BENCHMARK_SHAPES};

#[derive(Parser, Debug)]
#[command(
    name = "tile-choose",
    version,
    about = "Print the GEMM tile tilec chooses for each problem shape, with the reason"
)]
struct Cli {
    /// Problem shapes, MxNxK or BATCHxMxNxK (default: the 21 benchmark shapes).
    #[arg(value_parser = shape)]
    shapes: Vec<[u64; 4]>,
    /// Target GPU.
    #[arg(long, default_value = "sm_90a", value_parser = parse_target)]
    target: Target,
    /// Element type of A and B.
    #[arg(long, default_value = "bf16", value_parser = ["bf16", "f16", "e4m3", "e5m2"])]
    dtype: String,
    /// SMs of the GPU (132: H100 SXM, H200).
    #[arg(long, default_value_t = 132, value_parser = clap::value_parser!(u32).range(1..=4096))]
    sms: u32,
    /// fp8: accept wgmma's reduced-precision accumulation (torch._scaled_mm's
    /// use_fast_accum=True), so the unpromoted tiles are the candidates (`tile-compile
    /// --promote off --tile auto` chooses the same).
    #[arg(long)]
    fast_accum: bool,
}

/// `MxNxK` or `BxMxNxK` as [batch, M, N, K].
fn shape(s: &str) -> Result<[u64; 4], String> {
    let bad = || format!("'{s}' is not MxNxK or BATCHxMxNxK of positive integers");
    let v: Vec<u64> = s
        .split('x')
        .map(|d| d.parse::<u64>().ok().filter(|&x| x > 0).ok_or_else(bad))
        .collect::<Result<_, _>>()?;
    match v[..] {
        [m, n, k] => Ok([1, m, n, k]),
        [b, m, n, k] => Ok([b, m, n, k]),
        _ => Err(bad()),
    }
}

fn main() {
    exit_now(run());
}

fn run() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
        }
    };
    let elem = ScalarType::from_name(&cli.dtype).expect("a listed dtype");
    let shapes: Vec<[u64; 4]> = if cli.shapes.is_empty() {
        BENCHMARK_SHAPES
            .iter()
            .map(|&(m, n, k)| [1, m, n, k])
            .collect()
    } else {
        cli.shapes.clone()
    };
    let machine = Machine::H200.with_sms(cli.sms);
    // The table is written at once: a reader that closes the pipe early (`| head`) ends
    // the write, not the process.
    let mut out = String::from(
        "| batch | M | N | K | tile | stages | schedule | epilogue | cluster | waves | bound | \
         est. µs | est. TFLOP/s | reason |\n\
         | ---: | ---: | ---: | ---: | --- | ---: | --- | --- | --- | ---: | --- | ---: | ---: \
         | --- |\n",
    );
    let mut status = EXIT_OK;
    for [batch, m, n, k] in shapes {
        let p = GemmProblem {
            m,
            n,
            k,
            batch,
            groups: 1,
            elem,
            fast_accum: cli.fast_accum,
        };
        match choose_gemm(&p, cli.target, &machine) {
            Ok(c) => {
                let f = &c.config;
                let (waves, bound, us, tf) = match &c.estimate {
                    Some(e) => (
                        format!("{:.2}", e.tiles as f64 / f64::from(cli.sms)),
                        e.bound().to_string(),
                        format!("{:.1}", e.total_us),
                        format!("{:.0}", p.flops() / e.total_us / 1e6),
                    ),
                    None => ("-".into(), "-".into(), "-".into(), "-".into()),
                };
                let _ = writeln!(
                    out,
                    "| {batch} | {m} | {n} | {k} | {} | {} | {} | {} | {} | {waves} | {bound} \
                     | {us} | {tf} | {} |",
                    f.tile_name(),
                    f.stages,
                    f.schedule,
                    f.epilogue,
                    f.cluster,
                    c.reason
                );
            }
            Err(e) => {
                eprintln!("error: {e}");
                status = EXIT_DIAGNOSTICS;
            }
        }
    }
    match std::io::stdout().lock().write_all(out.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("error: writing the table: {e}");
            EXIT_DIAGNOSTICS
        }
        _ => status,
    }
}
