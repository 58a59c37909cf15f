//! Every elementwise float op of the op table, in each float type, in a GEMM epilogue, for a
//! wgmma and an mma.sync target: `tile-compile` either writes PTX or refuses with a located
//! error before MLIR is built. Nothing reaches LLVM that LLVM rejects: no "LLVM ERROR", no
//! abort, no error without a location. The ops come from the table, so a new op is covered
//! when it is added.

use std::path::Path;
use std::process::Command;
use tilec_dialect::{OpClass, OpKind};

#[test]
fn every_elementwise_op_compiles_or_is_refused_with_a_location() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/gemm_bf16.tile");
    let base = std::fs::read_to_string(example).expect("the example");
    let dir = std::env::temp_dir().join(format!("tilec-epilogue-ops-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    let ops: Vec<OpKind> = OpKind::ALL
        .iter()
        .copied()
        .filter(|k| matches!(k.class(), OpClass::FloatUnary | OpClass::FloatBinary))
        .collect();
    assert!(ops.len() >= 14, "{} elementwise ops", ops.len());
    let (mut compiled, mut refused) = (0, 0);
    for op in &ops {
        for dt in ["f32", "f16", "bf16"] {
            let operands = if op.class() == OpClass::FloatBinary {
                "%h, %h"
            } else {
                "%h"
            };
            let epilogue = format!(
                "%h = tile.convert %acc : tile<128x256x{dt}>\n  \
                 %t = {} {operands} : tile<128x256x{dt}>\n  \
                 %out = tile.convert %t : tile<128x256xbf16>",
                op.name()
            );
            let src = base.replace("%out = tile.convert %acc : tile<128x256xbf16>", &epilogue);
            let stem = format!("{}_{dt}", &op.name()[5..]);
            let file = dir.join(format!("{stem}.tile"));
            std::fs::write(&file, &src).expect("write");
            for target in ["sm_90a", "sm_100"] {
                let out = Command::new(env!("CARGO_BIN_EXE_tile-compile"))
                    .arg(&file)
                    .args(["--target", target, "--no-simplify", "-o"])
                    .arg(dir.join(format!("out-{stem}-{target}")))
                    .output()
                    .expect("tile-compile runs");
                let err = String::from_utf8_lossy(&out.stderr);
                let what = format!("{} on {dt} for {target}", op.name());
                assert!(
                    !err.contains("LLVM ERROR") && !err.contains("panicked"),
                    "{what}: {err}"
                );
                match out.status.code() {
                    Some(0) => compiled += 1,
                    Some(1) => {
                        let located = format!("{stem}.tile:22:3: error: ");
                        assert!(err.contains(&located), "{what}: unlocated error:\n{err}");
                        refused += 1;
                    }
                    c => panic!("{what}: exit {c:?}\n{err}"),
                }
            }
        }
    }
    eprintln!("{compiled} compiled, {refused} refused with a location");
    assert!(compiled > 0 && refused > 0);
    let _ = std::fs::remove_dir_all(&dir);
}
