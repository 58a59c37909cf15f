//! An LLVM fatal error under the handler of `install_fatal_error_handler`: the process
//! prints one `error:` line naming what was compiled and the MLIR pass, and exits with
//! status 1 (LLVM exits after the handler), instead of aborting with "LLVM ERROR". The
//! fatal error is provoked in a child process (this test binary run again), with MLIR that
//! tilec itself never emits: `llvm.intr.tanh`, which NVPTX cannot select.

use std::process::Command;
use tilec_lowering::{
    install_fatal_error_handler, mlir_to_ptx, set_fatal_error_subject, TargetSpec,
};

const CHILD: &str = "TILEC_FATAL_ERROR_CHILD";

const TANH: &str = r#"module attributes {gpu.container_module} {
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
fn child_provokes_a_fatal_error() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    install_fatal_error_handler();
    set_fatal_error_subject("kernel @t for sm_90a");
    let r = mlir_to_ptx(TANH, &TargetSpec::sm_90a());
    // Not reached: LLVM exits inside.
    eprintln!("child: mlir_to_ptx returned {:?}", r.map(|p| p.len()));
    std::process::exit(3);
}

#[test]
fn a_fatal_error_is_one_line_and_exit_1() {
    let out = Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            "--exact",
            "child_provokes_a_fatal_error",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .expect("the child runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{err}");
    assert!(
        err.contains(
            "error: LLVM failed fatally compiling kernel @t for sm_90a in LLVM (translation, \
             optimisation, NVPTX code generation): Cannot select"
        ),
        "{err}"
    );
    assert!(!err.contains("LLVM ERROR"), "{err}");
}
