//! GPU-level forms the GEMM lowering takes, checked on the example GEMM's GPU-level IR
//! (after the default passes) on the wgmma path (sm_90a) and the mma.sync path (sm_90):
//! - `tile.mma`'s two operand forms lower alike: each `tile.mma %a, %b, %s, %acc`
//!   rewritten to the five-operand form `tile.mma %a, %b, %s, %s, %acc` (a stage per ring,
//!   here the same) compiles to byte-identical PTX; with a different B stage it differs;
//! - a `tile.if` that returns the accumulator (as placement makes when a wait inside a
//!   branch takes it) lowers, here to the same PTX as without it (both branches yield the
//!   same value).

use std::path::Path;
use tilec::dialect::Target;
use tilec::{compile, Emit, Input, Options};

fn example(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples")
            .join(name),
    )
    .unwrap()
}

/// Rewrites every `tile.mma %a, %b, %s, %acc` of `ir` with `stage_b(%s)` as B's stage.
fn five_operands(ir: &str, stage_b: impl Fn(&str) -> String) -> String {
    let mut out = String::new();
    for line in ir.lines() {
        match line.split_once("tile.mma ") {
            Some((head, rest)) => {
                let (ops, tail) = rest.split_once(" {").expect("attributes");
                let parts: Vec<&str> = ops.split(", ").collect();
                assert_eq!(parts.len(), 4, "{line}");
                let b = stage_b(parts[2]);
                out.push_str(&format!(
                    "{head}tile.mma {}, {}, {}, {b}, {} {{{tail}\n",
                    parts[0], parts[1], parts[2], parts[3]
                ));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

fn ptx(src: &str, target: Target) -> String {
    compile(
        Input::Text {
            source: src,
            file: "gemm.tile",
        },
        &Options::new(target),
    )
    .unwrap_or_else(|e| panic!("{target}: {e}"))
    .ptx
}

/// The example GEMM's GPU-level IR after the default passes.
fn gpu_ir(target: Target) -> String {
    let opts = Options::new(target).with_emit(Emit::Tile);
    let src = example("gemm_bf16.tile");
    compile(
        Input::Text {
            source: &src,
            file: "gemm_bf16.tile",
        },
        &opts,
    )
    .unwrap_or_else(|e| panic!("{target}: {e}"))
    .text
}

#[test]
fn a_stage_per_operand_lowers_like_one_stage() {
    for target in [Target::Sm90a, Target::Sm90] {
        let gpu = gpu_ir(target);
        let same = five_operands(&gpu, str::to_string);
        assert_ne!(same, gpu);
        assert_eq!(ptx(&same, target), ptx(&gpu, target), "{target}");
        // B always at stage 0 (as a loop-invariant operand would be): other addresses.
        let c0 = gpu
            .lines()
            .find_map(|l| {
                l.trim()
                    .strip_suffix(" = tile.constant {value = 0} : index")
                    .map(str::to_string)
            })
            .expect("a constant 0");
        let fixed = five_operands(&gpu, |_| c0.clone());
        assert_ne!(ptx(&fixed, target), ptx(&gpu, target), "{target}");
    }
}

#[test]
fn if_returning_the_accumulator_lowers() {
    for target in [Target::Sm90a, Target::Sm90] {
        let gpu = gpu_ir(target);
        // The epilogue's convert of the accumulator reads it through a tile.if instead.
        let mut out = String::new();
        let mut done = false;
        for line in gpu.lines() {
            let conv = line.split_once(" = tile.convert ").and_then(|(_, r)| {
                let (acc, ty) = r.split_once(" : ")?;
                ty.ends_with("xbf16>").then(|| acc.to_string())
            });
            match conv {
                Some(acc) if !done => {
                    let ty = "tile<128x256xf32>";
                    out.push_str(&format!(
                        "%pos_if = tile.cmpi %c1, %c0 {{predicate = \"sgt\"}} : i1\n\
                         %acc_if = tile.if %pos_if : {ty} {{\n\
                         tile.yield {acc}\n}} {{\ntile.yield {acc}\n}}\n"
                    ));
                    out.push_str(&line.replace(&acc, "%acc_if"));
                    done = true;
                }
                _ => out.push_str(line),
            }
            out.push('\n');
        }
        assert!(done, "{target}: no epilogue convert found");
        assert_eq!(ptx(&out, target), ptx(&gpu, target), "{target}");
    }
}

/// A source GEMM whose epilogue picks the accumulator or the loop's zeros through a
/// `tile.if`: placement ties the zeros to the waits as well (they share the join), and the
/// lowering passes them through and builds the zero accumulator in the branch.
#[test]
fn epilogue_if_choosing_the_accumulator_or_zeros_compiles() {
    let src = example("gemm_bf16.tile")
        .replace("%K: index)", "%K: index, %flag: i1)")
        .replace(
            "%out = tile.convert %acc : tile<128x256xbf16>",
            "%r = tile.if %flag : tile<128x256xf32> {\n    tile.yield %acc\n  } {\n    \
             tile.yield %zero\n  }\n  %out = tile.convert %r : tile<128x256xbf16>",
        );
    assert!(
        src.contains("%flag: i1") && src.contains("tile.yield %zero"),
        "{src}"
    );
    for target in [Target::Sm90a, Target::Sm90] {
        let p = ptx(&src, target);
        assert!(p.contains(".entry gemm_bf16"), "{target}");
    }
}
