//! The MLIR `convert-tile-to-nvvm` writes grows linearly in the number of epilogue ops: a
//! GEMM whose epilogue chains n elementwise ops on the accumulator, for n = 10 to 160,
//! gives MLIR whose size per added op is the same at every n (ops are counted, as lines
//! holding an `=` or an op, not timed).

use std::path::Path;
use std::process::Command;

fn mlir_ops(n: usize) -> usize {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/gemm_bf16.tile");
    let base = std::fs::read_to_string(example).expect("the example");
    let mut lines = vec!["%e0 = tile.convert %acc : tile<128x256xf32>".to_string()];
    for i in 1..=n {
        let op = ["tile.add", "tile.mul", "tile.max", "tile.sub"][i % 4];
        lines.push(format!(
            "%e{i} = {op} %e{}, %acc : tile<128x256xf32>",
            i - 1
        ));
    }
    lines.push(format!("%out = tile.convert %e{n} : tile<128x256xbf16>"));
    let src = base.replace(
        "%out = tile.convert %acc : tile<128x256xbf16>",
        &lines.join("\n  "),
    );
    let dir = std::env::temp_dir().join(format!("tilec-mlir-growth-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    let file = dir.join("k.tile");
    std::fs::write(&file, src).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_tile-compile"))
        .arg(&file)
        .args([
            "--target",
            "sm_90a",
            "--emit",
            "mlir",
            "--no-simplify",
            "-o",
        ])
        .arg(&dir)
        .output()
        .expect("tile-compile runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mlir = std::fs::read_to_string(dir.join("gemm_bf16.mlir")).expect("the MLIR");
    let _ = std::fs::remove_dir_all(&dir);
    mlir.lines()
        .filter(|l| l.contains(" = ") || l.trim_start().starts_with("llvm."))
        .count()
}

#[test]
fn emitted_mlir_grows_linearly_in_epilogue_ops() {
    let sizes: Vec<(usize, usize)> = [10, 20, 40, 80, 160]
        .iter()
        .map(|&n| (n, mlir_ops(n)))
        .collect();
    let per_op: Vec<f64> = sizes
        .windows(2)
        .map(|w| (w[1].1 - w[0].1) as f64 / (w[1].0 - w[0].0) as f64)
        .collect();
    eprintln!("MLIR ops by epilogue ops: {sizes:?}; added per op: {per_op:?}");
    // The accumulator has 128 registers per thread: each op costs a small constant per register.
    for p in &per_op {
        assert!(
            *p > 64.0,
            "an epilogue op adds {p} MLIR ops: not one per register?"
        );
        let ratio = p / per_op[0];
        assert!(
            (0.95..=1.05).contains(&ratio),
            "MLIR per added op changes with n: {per_op:?}"
        );
    }
}
