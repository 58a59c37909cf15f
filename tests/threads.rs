//! Compiles on several threads at once give the same PTX as one after another: each
//! compile has its own MLIR and LLVM contexts, and the process-wide LLVM option that differs
//! between targets (sm_90a's and sm_100a's) is held for the whole of each compile.

use std::path::Path;
use tilec::dialect::Target;
use tilec::{compile, Input, Options};

const JOBS: [(&str, Target); 6] = [
    ("gemm_bf16.tile", Target::Sm90a),
    ("softmax.tile", Target::Sm100a),
    ("gemm_bias_relu.tile", Target::Sm90a),
    ("layernorm.tile", Target::Sm90a),
    ("gemm_bf16.tile", Target::Sm100a),
    ("rmsnorm.tile", Target::Sm100a),
];

fn ptx(file: &str, target: Target) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(file);
    let src = std::fs::read_to_string(path).unwrap();
    let k = compile(Input::Text { source: &src, file }, &Options::new(target))
        .unwrap_or_else(|e| panic!("{file} {target}: {e}"));
    k.ptx
}

#[test]
fn parallel_compiles_match_serial_ones() {
    let serial: Vec<String> = JOBS.iter().map(|(f, t)| ptx(f, *t)).collect();
    // Four threads, each through every job from a different start, so that targets
    // alternate across threads.
    let parallel: Vec<Vec<(usize, String)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|start| {
                s.spawn(move || {
                    (0..JOBS.len())
                        .map(|i| {
                            let j = (start + i) % JOBS.len();
                            (j, ptx(JOBS[j].0, JOBS[j].1))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (thread, results) in parallel.iter().enumerate() {
        for (j, text) in results {
            assert!(
                *text == serial[*j],
                "thread {thread}: {} for {} differs from the serial compile",
                JOBS[*j].0,
                JOBS[*j].1
            );
        }
    }
}
