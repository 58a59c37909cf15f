//! The MLIR stage in a child process (`Options::mlir_child`, `mlir_stage_in_child`, which
//! run `tile-compile --mlir-stage`): the same PTX as in process, and a failure of MLIR or an
//! LLVM fatal error in the child is an error of the call, not the end of this process.

use std::path::{Path, PathBuf};
use tilec::dialect::Target;
use tilec::lowering::{mlir_stage_in_child, MlirError, Product, TargetSpec, CHILD_TIMEOUT};
use tilec::{compile, Emit, Input, Options};

fn tile_compile() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tile-compile"))
}

fn example(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(name);
    std::fs::read_to_string(p).expect("the example")
}

#[test]
fn the_child_gives_the_same_ptx_and_llvm_ir() {
    for (file, target) in [
        ("gemm_bf16.tile", Target::Sm90a),
        ("softmax.tile", Target::Sm100),
        ("col_sums.tile", Target::Sm90a),
        ("layernorm.tile", Target::Sm90),
    ] {
        let src = example(file);
        let input = || Input::Text { source: &src, file };
        let mut opts = Options::new(target);
        let here = compile(input(), &opts).expect("compiles in process");
        opts.mlir_child = Some(tile_compile());
        let there = compile(input(), &opts).expect("compiles in the child");
        assert!(here.ptx.contains(".entry"), "{file}: no kernel in the PTX");
        assert_eq!(here.ptx, there.ptx, "{file} for {target}");
        assert!(there.mlir_timings.is_empty());
        opts.emit = Emit::Llvm;
        let ll_child = compile(input(), &opts).expect("LLVM IR in the child").text;
        opts.mlir_child = None;
        let ll_here = compile(input(), &opts).expect("LLVM IR in process").text;
        assert_eq!(ll_here, ll_child, "{file} for {target}: LLVM IR");
    }
}

/// `llvm.intr.tanh` verifies in MLIR, and NVPTX cannot select it: LLVM's fatal error.
const FATAL: &str = r#"module attributes {gpu.container_module} {
  gpu.module @m {
    llvm.func @t(%p: !llvm.ptr, %x: f32) attributes {gpu.kernel, nvvm.kernel} {
      %y = llvm.intr.tanh(%x) : (f32) -> f32
      llvm.store %y, %p : f32, !llvm.ptr
      llvm.return
    }
  }
}
"#;

#[test]
fn an_llvm_fatal_error_in_the_child_is_an_error_here() {
    let r = mlir_stage_in_child(
        FATAL,
        &TargetSpec::sm_90a(),
        Product::Ptx,
        &tile_compile(),
        CHILD_TIMEOUT,
    );
    match r {
        Err(MlirError::Child { status, stderr }) => {
            assert_eq!(status, "exit status: 1", "{stderr}");
            assert!(
                stderr.contains("error: LLVM failed fatally compiling the MLIR module <stdin>")
                    && stderr.contains(
                        "in LLVM (translation, optimisation, NVPTX code generation): Cannot \
                         select"
                    ),
                "{stderr}"
            );
        }
        other => panic!("expected a failed child, got {other:?}"),
    }
}

#[test]
fn mlir_diagnostics_and_a_missing_program_are_errors() {
    let r = mlir_stage_in_child(
        "module {",
        &TargetSpec::sm_90a(),
        Product::Ptx,
        &tile_compile(),
        CHILD_TIMEOUT,
    );
    match r {
        Err(MlirError::Child { status, stderr }) => {
            assert_eq!(status, "exit status: 1");
            assert!(
                stderr.contains("failed to parse the MLIR module"),
                "{stderr}"
            );
            assert!(stderr.contains("<stdin>:1:"), "{stderr}");
        }
        other => panic!("expected a failed child, got {other:?}"),
    }
    let missing = Path::new("/nonexistent/tile-compile");
    match mlir_stage_in_child(
        FATAL,
        &TargetSpec::sm_90a(),
        Product::LlvmIr,
        missing,
        CHILD_TIMEOUT,
    ) {
        Err(MlirError::Child { status, stderr }) => {
            assert_eq!(status, "not started");
            assert!(stderr.contains("/nonexistent/tile-compile"), "{stderr}");
        }
        other => panic!("expected a child that did not start, got {other:?}"),
    }
    // The target is checked before any child starts.
    let bad = TargetSpec::new("sm_91", (8, 0));
    assert!(matches!(
        mlir_stage_in_child(FATAL, &bad, Product::Ptx, missing, CHILD_TIMEOUT),
        Err(MlirError::Target(_))
    ));
}

/// A child that does not finish within the timeout is killed, and the call fails at once.
#[test]
fn a_hanging_child_is_killed_at_the_timeout() {
    let dir = std::env::temp_dir().join(format!("tilec-hang-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hang = dir.join("hang.sh");
    // Written by a shell, not by this process: a test thread that forks while this process
    // holds the script open for writing would make its exec fail with ETXTBSY.
    let made = std::process::Command::new("sh")
        .arg("-c")
        .arg(
            "printf '#!/bin/sh\\necho started >&2\\nexec sleep 30\\n' > \"$1\" && chmod 755 \"$1\"",
        )
        .arg("sh")
        .arg(&hang)
        .status()
        .unwrap();
    assert!(made.success());
    let start = std::time::Instant::now();
    let r = mlir_stage_in_child(
        FATAL,
        &TargetSpec::sm_90a(),
        Product::Ptx,
        &hang,
        std::time::Duration::from_millis(300),
    );
    let took = start.elapsed();
    match r {
        Err(MlirError::Child { status, stderr }) => {
            assert_eq!(status, "timed out after 0.3 s and killed", "{stderr}");
            assert!(stderr.contains("started"), "{stderr}");
        }
        other => panic!("expected a timed-out child, got {other:?}"),
    }
    assert!(took < std::time::Duration::from_secs(20), "waited {took:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
