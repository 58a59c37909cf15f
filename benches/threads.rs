//! Compile throughput on threads: 8 configurations of `examples/gemm_bf16.tile` (2, 3 and
//! twice 4 stages, static and unscheduled) compiled to PTX for sm_90a one after another, then
//! spread over `--threads N` threads (default 2). Prints the median wall time of each (over
//! `--runs`, default 3) and their ratio; on a 2-core machine 2 threads should take about
//! half the time.
//!
//! ```sh
//! cargo bench --bench threads
//! cargo bench --bench threads -- --threads 4 --runs 5
//! ```

mod common;
use common::arg;
use std::time::Instant;
use tilec::dialect::Target;
use tilec::{compile, Input, Options, Schedule};

fn configs() -> Vec<Options> {
    let mut v = vec![];
    for stages in [2, 3, 4, 4] {
        for schedule in [Schedule::Static, Schedule::None] {
            v.push(
                Options::new(Target::Sm90a)
                    .with_stages(stages)
                    .with_schedule(schedule),
            );
        }
    }
    v
}

fn run(src: &str, opts: &[Options]) {
    for o in opts {
        let input = Input::Text {
            source: src,
            file: "gemm_bf16.tile",
        };
        if let Err(e) = compile(input, o) {
            eprintln!("threads: {e}");
            std::process::exit(1);
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let threads = arg(&args, "--threads", 2);
    let runs = arg(&args, "--runs", 3);
    let src = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/gemm_bf16.tile"),
    )
    .expect("examples/gemm_bf16.tile");
    let all = configs();
    run(&src, &all[..1]); // registration and first-use costs out of the timings
    let (mut one, mut many) = (vec![], vec![]);
    for _ in 0..runs {
        let t = Instant::now();
        run(&src, &all);
        one.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        std::thread::scope(|s| {
            for chunk in all.chunks(all.len().div_ceil(threads)) {
                let src = &src;
                s.spawn(move || run(src, chunk));
            }
        });
        many.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (a, b) = (median(one), median(many));
    println!(
        "threads/{} compiles: 1 thread {a:.1} ms, {threads} threads {b:.1} ms, ratio {:.2} \
         ({runs} runs, medians)",
        all.len(),
        b / a
    );
}
