//! Tests of the MLIR driver (`mlir_to_ptx`, `mlir_to_llvm_ir`).
//!
//! All of the crate's tests live in this one file: every test binary links MLIR and LLVM
//! statically, which is large and slow.

use std::time::Instant;
use tilec_lowering::{
    min_ptx_version, mlir_to_llvm_ir, mlir_to_ptx, MlirError, Severity, TargetSpec,
};

/// A kernel that stores `threadIdx.x` to `out[threadIdx.x]`.
const TID_STORE: &str = r#"
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @store_tid(%out: !llvm.ptr<1>) attributes {nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %p = llvm.getelementptr %out[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      llvm.store %tid, %p : i32, !llvm.ptr<1>
      llvm.return
    }
  }
}
"#;

/// wgmma fence, commit and wait (sm_90a only).
const WGMMA: &str = r#"
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @wg() attributes {nvvm.kernel} {
      nvvm.wgmma.fence.aligned
      nvvm.wgmma.commit.group.sync.aligned
      nvvm.wgmma.wait.group.sync.aligned 1
      llvm.return
    }
  }
}
"#;

/// One try_cancel request (sm_100+, PTX ISA 8.6).
const TRY_CANCEL: &str = r#"
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @clc(%resp: !llvm.ptr<3>, %bar: !llvm.ptr<3>) attributes {nvvm.kernel} {
      nvvm.clusterlaunchcontrol.try.cancel %resp, %bar
      llvm.return
    }
  }
}
"#;

/// The PTX with each run of spaces and tabs made one space (LLVM separates operands with a tab).
fn squeeze(ptx: &str) -> String {
    ptx.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

fn first_error(error: &MlirError) -> &tilec_lowering::Diagnostic {
    error
        .diagnostics()
        .iter()
        .find(|d| d.severity == Severity::Error)
        .unwrap_or_else(|| panic!("no error diagnostic in {error:?}"))
}

#[test]
fn tid_store_sm_90a_and_sm_100() {
    let ptx = mlir_to_ptx(TID_STORE, &TargetSpec::sm_90a()).expect("sm_90a");
    assert!(ptx.contains(".version 8.0"), "{ptx}");
    assert!(ptx.contains(".target sm_90a"), "{ptx}");
    assert!(ptx.contains(".entry store_tid"), "{ptx}");
    assert!(ptx.contains("%tid.x"), "{ptx}");
    assert!(ptx.contains("st.global"), "{ptx}");
    assert!(!ptx.contains('\0'));

    let ptx = mlir_to_ptx(TID_STORE, &TargetSpec::sm_100()).expect("sm_100");
    assert!(ptx.contains(".version 8.6"), "{ptx}");
    assert!(ptx.contains(".target sm_100"), "{ptx}");
    assert!(ptx.contains(".entry store_tid"), "{ptx}");
}

#[test]
fn wgmma_wait_group_sm_90a() {
    let ptx = squeeze(&mlir_to_ptx(WGMMA, &TargetSpec::sm_90a()).expect("wgmma on sm_90a"));
    assert!(ptx.contains("wgmma.fence.sync.aligned"), "{ptx}");
    assert!(ptx.contains("wgmma.commit_group.sync.aligned"), "{ptx}");
    assert!(ptx.contains("wgmma.wait_group.sync.aligned 1"), "{ptx}");
}

#[test]
fn try_cancel_sm_100() {
    let ptx =
        squeeze(&mlir_to_ptx(TRY_CANCEL, &TargetSpec::sm_100()).expect("try_cancel on sm_100"));
    assert!(ptx.contains(".version 8.6"), "{ptx}");
    assert!(ptx.contains("clusterlaunchcontrol.try_cancel"), "{ptx}");
}

#[test]
fn llvm_ir() {
    let ir = mlir_to_llvm_ir(TID_STORE, &TargetSpec::sm_90a()).expect("llvm ir");
    assert!(
        ir.contains("target triple = \"nvptx64-nvidia-cuda\""),
        "{ir}"
    );
    assert!(ir.contains("define ptx_kernel void @store_tid"), "{ir}");
    assert!(ir.contains("@llvm.nvvm.read.ptx.sreg.tid.x"), "{ir}");
}

#[test]
fn errors_are_returned_not_printed() {
    // Garbage text.
    let error = mlir_to_ptx("this is not MLIR {", &TargetSpec::sm_90a()).unwrap_err();
    assert!(matches!(error, MlirError::Parse { .. }), "{error}");
    assert!(
        first_error(&error).location.starts_with("input.mlir:1:"),
        "{error}"
    );

    // An unknown op, located where it is written.
    let text = TID_STORE.replace(
        "llvm.store %tid",
        "nvvm.no_such_op %tid\n      llvm.store %tid",
    );
    let error = mlir_to_ptx(&text, &TargetSpec::sm_90a()).unwrap_err();
    assert!(matches!(error, MlirError::Parse { .. }), "{error}");
    let diagnostic = first_error(&error);
    assert!(diagnostic.message.contains("nvvm.no_such_op"), "{error}");
    assert_eq!(diagnostic.location, "input.mlir:7:7", "{error}");

    // A location written in the text is reported as written.
    // (a verifier error: returning a value from a void function; MLIR verifies while parsing.)
    let text = TID_STORE.replace("llvm.return", "llvm.return %tid : i32 loc(\"k.tile\":3:5)");
    let error = mlir_to_ptx(&text, &TargetSpec::sm_90a()).unwrap_err();
    assert!(matches!(error, MlirError::Parse { .. }), "{error}");
    let diagnostic = first_error(&error);
    assert_eq!(diagnostic.location, "k.tile:3:5", "{error}");
    assert!(diagnostic.message.contains("llvm.return"), "{error}");

    // wgmma on sm_80 / sm_100, try_cancel on sm_90a: MLIR's NVVM target checks diagnose them.
    for (text, target, op) in [
        (
            WGMMA,
            TargetSpec::new("sm_80", (8, 0)),
            "nvvm.wgmma.fence.aligned",
        ),
        (WGMMA, TargetSpec::sm_100(), "nvvm.wgmma.fence.aligned"),
        (
            TRY_CANCEL,
            TargetSpec::sm_90a(),
            "nvvm.clusterlaunchcontrol.try.cancel",
        ),
    ] {
        let error = mlir_to_ptx(text, &target).unwrap_err();
        let MlirError::Pass { pass, .. } = &error else {
            panic!("{error}")
        };
        // The pass manager's verifier, run after the target is attached, diagnoses it.
        assert!(pass.starts_with("nvvm-attach-target"), "{error}");
        let diagnostic = first_error(&error);
        assert!(diagnostic.message.contains(op), "{error}");
        assert!(
            diagnostic
                .message
                .contains(&format!("not supported on {}", target.chip)),
            "{error}"
        );
        assert!(diagnostic.location.starts_with("input.mlir:"), "{error}");
    }

    // Not a container module; no gpu.module.
    let error = mlir_to_ptx(
        &TID_STORE.replace(" attributes {gpu.container_module}", ""),
        &TargetSpec::sm_90a(),
    )
    .unwrap_err();
    assert!(matches!(error, MlirError::Verify { .. }), "{error}");
    let error = mlir_to_ptx(
        "module attributes {gpu.container_module} {}",
        &TargetSpec::sm_90a(),
    )
    .unwrap_err();
    assert!(matches!(error, MlirError::Verify { .. }), "{error}");

    // Targets LLVM would die on (or ignore with a message on stderr) are refused first.
    for target in [
        TargetSpec::new("sm_100", (8, 0)),
        TargetSpec::new("sm_90a", (7, 0)),
        TargetSpec::new("sm_999", (8, 0)),
        TargetSpec::new("sm_90a", (9, 9)),
        TargetSpec {
            opt_level: 4,
            ..TargetSpec::sm_90a()
        },
    ] {
        let error = mlir_to_ptx(TID_STORE, &target).unwrap_err();
        assert!(matches!(error, MlirError::Target(_)), "{target:?}: {error}");
    }
    assert_eq!(min_ptx_version("sm_90a"), Some((8, 0)));
    assert_eq!(min_ptx_version("sm_100"), Some((8, 6)));
    assert_eq!(TargetSpec::sm_100().ptx_feature(), "+ptx86");

    // After all that, the driver still works.
    assert!(mlir_to_ptx(TID_STORE, &TargetSpec::sm_90a()).is_ok());
}

#[test]
fn many_threads() {
    let threads: Vec<_> = (0..4)
        .map(|i| {
            std::thread::spawn(move || {
                for _ in 0..5 {
                    let (text, target, needle) = if i % 2 == 0 {
                        (TID_STORE, TargetSpec::sm_90a(), ".entry store_tid")
                    } else {
                        (
                            WGMMA,
                            TargetSpec::sm_90a(),
                            "wgmma.wait_group.sync.aligned 1",
                        )
                    };
                    let ptx = squeeze(&mlir_to_ptx(text, &target).unwrap());
                    assert!(ptx.contains(needle));
                    assert!(mlir_to_ptx("garbage", &target).is_err());
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

/// Prints how long `mlir_to_ptx` takes (run with `--nocapture`); first call of the process
/// only if this test happens to run first, so it also reports a fresh-thread call.
#[test]
fn timing() {
    let start = Instant::now();
    mlir_to_ptx(TID_STORE, &TargetSpec::sm_90a()).unwrap();
    let first = start.elapsed();
    let mut later = Vec::new();
    for _ in 0..10 {
        let start = Instant::now();
        mlir_to_ptx(TID_STORE, &TargetSpec::sm_90a()).unwrap();
        later.push(start.elapsed());
    }
    later.sort();
    eprintln!(
        "mlir_to_ptx: first call in this test {first:?}, later calls median {:?} (min {:?}, \
            max {:?})",
        later[later.len() / 2],
        later[0],
        later[later.len() - 1]
    );
}

/// An input MLIR's verifier lets through but LLVM's NVPTX back end cannot select ends the
/// process (`report_fatal_error`): the multicast try_cancel on `sm_100` (it needs `sm_100a`).
/// Run in a child process (this test binary, re-executed) so the abort is observed, not
/// suffered; documents why the tile verifier must reject such ops before MLIR is built.
#[test]
fn abort_case_is_an_abort() {
    const MULTICAST: &str = "nvvm.clusterlaunchcontrol.try.cancel multicast, %resp, %bar";
    let text = TRY_CANCEL.replace(
        "nvvm.clusterlaunchcontrol.try.cancel %resp, %bar",
        MULTICAST,
    );
    if std::env::var_os("TILEC_LOWERING_ABORT_CHILD").is_some() {
        let _ = mlir_to_ptx(&text, &TargetSpec::sm_100());
        return; // not reached if LLVM still dies on it
    }
    // On sm_100a it is fine.
    let ptx = mlir_to_ptx(&text, &TargetSpec::sm_100a()).expect("multicast on sm_100a");
    assert!(ptx.contains("multicast::cluster::all"), "{ptx}");

    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "abort_case_is_an_abort",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TILEC_LOWERING_ABORT_CHILD", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "LLVM no longer aborts; update the driver docs"
    );
    assert!(stderr.contains("LLVM ERROR: Cannot select"), "{stderr}");
}

/// A two-field inline-asm result carried around a loop as a struct block argument (an
/// `llvm` phi of struct type), read after the loop.
const STRUCT_LOOP: &str = r#"
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @carry(%out: !llvm.ptr<1>, %n: i32) attributes {nvvm.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %c1 = llvm.mlir.constant(1 : i32) : i32
      %s0 = llvm.inline_asm has_side_effects "mov.b32 $0, 1; mov.b32 $1, 2;", "=r,=r"
        : () -> !llvm.struct<(i32, i32)>
      llvm.br ^head(%c0, %s0 : i32, !llvm.struct<(i32, i32)>)
    ^head(%i: i32, %s: !llvm.struct<(i32, i32)>):
      %a = llvm.extractvalue %s[0] : !llvm.struct<(i32, i32)>
      %b = llvm.extractvalue %s[1] : !llvm.struct<(i32, i32)>
      %t = llvm.inline_asm has_side_effects "add.s32 $0, $2, $3; sub.s32 $1, $3, $2;",
        "=r,=r,r,r" %a, %b : (i32, i32) -> !llvm.struct<(i32, i32)>
      %i1 = llvm.add %i, %c1 : i32
      %more = llvm.icmp "slt" %i1, %n : i32
      llvm.cond_br %more, ^head(%i1, %t : i32, !llvm.struct<(i32, i32)>), ^exit
    ^exit:
      %x = llvm.extractvalue %t[1] : !llvm.struct<(i32, i32)>
      llvm.store %x, %out : i32, !llvm.ptr<1>
      llvm.return
    }
  }
}
"#;

/// `tilec-split-aggregates` turns the struct phi into one phi per field and moves the
/// `extractvalue` after the loop next to the asm statement that defines its struct.
#[test]
fn split_aggregates() {
    let with = |passes: &str| TargetSpec {
        llvm_passes: Some(passes.into()),
        ..TargetSpec::sm_90a()
    };
    let before = mlir_to_llvm_ir(STRUCT_LOOP, &with("verify")).expect("verify only");
    assert!(before.contains("phi { i32, i32 }"), "{before}");
    let after =
        mlir_to_llvm_ir(STRUCT_LOOP, &with("function(tilec-split-aggregates)")).expect("split");
    assert!(!after.contains("phi {"), "{after}");
    assert_eq!(after.matches("phi i32").count(), 3, "{after}");
    // The extractvalue of %t is in %t's block, right after it.
    let t = after.find("sub.s32").expect("the loop's asm statement");
    let rest = &after[t..];
    let next_line = rest.lines().nth(1).unwrap_or_default();
    assert!(next_line.contains("extractvalue"), "{after}");
    let ptx = mlir_to_ptx(STRUCT_LOOP, &TargetSpec::sm_90a()).expect("tilec's pipeline");
    assert!(ptx.contains("sub.s32"), "{ptx}");
}

/// A pipeline LLVM cannot parse is an error naming it, not a crash.
#[test]
fn bad_llvm_pipeline() {
    let spec = TargetSpec {
        llvm_passes: Some("function(no-such-pass)".into()),
        ..TargetSpec::sm_90a()
    };
    let error = mlir_to_ptx(TID_STORE, &spec).unwrap_err();
    let e = first_error(&error);
    assert!(e.message.contains("no-such-pass"), "{error}");
    assert!(matches!(error, MlirError::Llvm { .. }), "{error}");
    // The message names the pipeline; the module itself is not printed with it.
    assert!(!error.to_string().contains("gpu.module"), "{error}");
    // LLVM's own default<O3> is accepted and gives the same PTX as tilec's pipeline here.
    let o3 = TargetSpec {
        llvm_passes: Some("default<O3>".into()),
        ..TargetSpec::sm_90a()
    };
    assert_eq!(
        mlir_to_ptx(TID_STORE, &o3).unwrap(),
        mlir_to_ptx(TID_STORE, &TargetSpec::sm_90a()).unwrap()
    );
}
