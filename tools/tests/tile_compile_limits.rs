//! `tile-compile` on inputs at the limits of what CUDA and PTX take: kernel parameter space,
//! grid sizes, kernel names longer than a file name. Each is decided before MLIR is built:
//! a located error, or output that ptxas accepts.

use std::path::{Path, PathBuf};
use std::process::Command;

const TILE_COMPILE: &str = env!("CARGO_BIN_EXE_tile-compile");

fn example() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/gemm_bf16.tile");
    std::fs::read_to_string(p).expect("the example")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tilec-limits-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).expect("scratch folder");
    d
}

/// Run tile-compile on `src` (as `name.tile`) with `args`; (exit code, stderr, out folder).
fn compile(name: &str, src: &str, args: &[&str]) -> (Option<i32>, String, PathBuf) {
    let dir = scratch(name);
    let file = dir.join(format!("{name}.tile"));
    std::fs::write(&file, src).expect("write");
    let out = Command::new(TILE_COMPILE)
        .arg(&file)
        .args(["-o"])
        .arg(dir.join("out"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("tile-compile runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !stderr.contains("panicked") && !stderr.contains("LLVM ERROR"),
        "{stderr}"
    );
    (out.status.code(), stderr, dir.join("out"))
}

/// The GEMM with `n` extra pointer tensors (2-D: 40 bytes of parameters each).
fn with_extra_tensors(n: usize) -> String {
    let extra: String = (0..n)
        .map(|i| format!(", %T{i}: tensor<?x?xf32>"))
        .collect();
    example().replace("%K: index)", &format!("%K: index{extra})"))
}

#[test]
fn parameter_space_raises_the_ptx_version_then_is_an_error() {
    // 110 extra tensors: 4,400 + the GEMM's 280 bytes, over the 4,352 bytes below PTX ISA
    // 8.1, so the kernel is emitted at 8.1, which ptxas takes.
    let (code, stderr, out) = compile(
        "params110",
        &with_extra_tensors(110),
        &["--target", "sm_90a", "--ptxas"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let ptx = std::fs::read_to_string(out.join("gemm_bf16.ptx")).expect("ptx");
    assert!(ptx.contains(".version 8.1"), "{}", &ptx[..200]);
    assert!(!stderr.contains("error"), "{stderr}");
    // A few tensors fewer: the target's own minimum (8.0) stays.
    let (code, stderr, out) = compile(
        "params100",
        &with_extra_tensors(100),
        &["--target", "sm_90a"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let ptx = std::fs::read_to_string(out.join("gemm_bf16.ptx")).expect("ptx");
    assert!(ptx.contains(".version 8.0"));
    // 900: 36,000 bytes, over the 32,764 of any PTX ISA: an error at the kernel.
    let (code, stderr, _) = compile(
        "params900",
        &with_extra_tensors(900),
        &["--target", "sm_90"],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("params900.tile:4:1: error: the kernel's 906 parameters take 36320 bytes"),
        "{stderr}"
    );
    assert!(stderr.contains("PTX allows 32764"), "{stderr}");
}

#[test]
fn constant_grid_dimensions_beyond_cuda_limits_are_errors() {
    for (grid, dim, limit) in [
        ("[2147483648]", 0, "2147483647"),
        ("[1, 65536]", 1, "65535"),
    ] {
        let src = example().replace("[ceildiv(%N, 256), ceildiv(%M, 128)]", grid);
        let (code, stderr, _) = compile("grid", &src, &["--target", "sm_90a"]);
        assert_eq!(code, Some(1), "{stderr}");
        let want = format!("error: grid dimension {dim} is");
        assert!(stderr.contains(&want) && stderr.contains(limit), "{stderr}");
    }
    let src = example().replace(
        "[ceildiv(%N, 256), ceildiv(%M, 128)]",
        "[2147483647, 65535]",
    );
    let (code, stderr, out) = compile("grid_ok", &src, &["--target", "sm_90a"]);
    assert_eq!(code, Some(0), "{stderr}");
    let man = std::fs::read_to_string(out.join("gemm_bf16.json")).expect("manifest");
    assert!(
        man.contains("\"grid_limits\": [\n    2147483647,\n    65535,\n    65535\n  ]"),
        "{man}"
    );
}

#[test]
fn a_long_kernel_name_gets_a_short_file_name() {
    let name = format!("k{}", "x".repeat(299));
    let src = example().replace("@gemm_bf16", &format!("@{name}"));
    let (code, stderr, out) = compile("longname", &src, &["--target", "sm_90a"]);
    assert_eq!(code, Some(0), "{stderr}");
    let files: Vec<String> = std::fs::read_dir(&out)
        .expect("outputs")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let ptx = files
        .iter()
        .find(|f| f.ends_with(".ptx"))
        .expect("a .ptx file");
    assert!(ptx.len() < 255 && ptx.starts_with(&name[..180]), "{ptx}");
    let man = std::fs::read_to_string(out.join(ptx.replace(".ptx", ".json"))).expect("manifest");
    assert!(
        man.contains(&format!("\"ptx_file\": \"{ptx}\"")),
        "the manifest names the file"
    );
    assert!(
        man.contains(&format!("\"kernel\": \"{name}\"")),
        "and keeps the kernel's name"
    );
}

/// `--ptxas` with an output ptxas does not take is a usage error (exit 2) found before any
/// work: no output file is written.
#[test]
fn ptxas_with_a_non_ptx_emit_is_refused_before_writing() {
    let (code, stderr, out) = compile(
        "ptxas_mlir",
        &example(),
        &["--target", "sm_90a", "--emit", "mlir", "--ptxas"],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr, "error: --ptxas needs --emit ptx or cubin\n");
    assert!(!out.exists(), "an output folder was created");
}
