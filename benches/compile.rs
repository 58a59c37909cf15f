//! Compile-time benchmark: `tilec::compile` (IR text -> PTX + manifest) of every example in
//! `examples/` for every target, in process, on this CPU.
//!
//! ```sh
//! cargo bench --bench compile                 # all examples x targets
//! cargo bench --bench compile -- gemm_bf16    # criterion's filter
//! ```
//!
//! Before criterion's measurements, each (example, target) pair is compiled 10 times and the
//! median of each pipeline stage (`Kernel::timings`: parse+verify, tilec passes,
//! convert-tile-to-nvvm, MLIR to PTX) is printed, so the report says where the time goes.
//! Pairs that do not compile (an example not yet lowered, a target that lacks an op) are
//! reported as skipped, not benched. Whole-process `tile-compile` is measured separately
//! (docs/performance.md says how).

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::time::Duration;
use tilec::dialect::Target;
use tilec::{compile, Input, Options};

fn examples() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut v: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("examples/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "tile"))
        .map(|p| {
            (
                p.file_stem().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

fn stage_report(name: &str, src: &str, target: Target) -> bool {
    let opts = Options::new(target);
    let mut per_stage: Vec<(&'static str, Vec<Duration>)> = vec![];
    for _ in 0..10 {
        match compile(
            Input::Text {
                source: src,
                file: name,
            },
            &opts,
        ) {
            Ok(k) => {
                for (i, (stage, d)) in k.timings.iter().enumerate() {
                    if per_stage.len() <= i {
                        per_stage.push((stage, vec![]));
                    }
                    per_stage[i].1.push(*d);
                }
            }
            Err(e) => {
                let first = e.to_string().lines().next().unwrap_or("").to_string();
                eprintln!("compile/{name}/{}: skipped ({first})", target.name());
                return false;
            }
        }
    }
    let mut line = format!("compile/{name}/{}: stage medians:", target.name());
    let mut total = 0.0;
    for (stage, mut ds) in per_stage {
        ds.sort();
        let ms = ds[ds.len() / 2].as_secs_f64() * 1e3;
        total += ms;
        line.push_str(&format!(" {stage} {ms:.2} ms;"));
    }
    eprintln!("{line} sum {total:.2} ms");
    true
}

fn bench_compile(c: &mut Criterion) {
    let mut g = c.benchmark_group("compile");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for (name, src) in examples() {
        for target in Target::ALL {
            if !stage_report(&name, &src, target) {
                continue;
            }
            let opts = Options::new(target);
            g.bench_function(format!("{name}/{}", target.name()), |b| {
                b.iter(|| {
                    compile(
                        Input::Text {
                            source: black_box(&src),
                            file: &name,
                        },
                        &opts,
                    )
                    .unwrap()
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench_compile);
criterion_main!(benches);
