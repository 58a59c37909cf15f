//! Structured diagnostics from `tilec::compile`: each error's kind (invalid IR, unsupported,
//! resource limit with the amounts, target lacks), the kernel it is about, and option errors
//! apart from IR errors.

use std::path::Path;
use tilec::dialect::{DiagKind, Diagnostic, Target};
use tilec::passes::PassManager;
use tilec::{compile, EpilogueStore, Error, Input, Options, Promote, Schedule};

fn example(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

/// The diagnostics of a compile that must fail with IR diagnostics.
fn diags(source: &str, opts: &Options) -> Vec<Diagnostic> {
    match compile(
        Input::Text {
            source,
            file: "k.tile",
        },
        opts,
    ) {
        Err(Error::Diagnostics(d)) => d.0,
        Err(e) => panic!("expected diagnostics, got {e}"),
        Ok(k) => panic!("{} compiled", k.name),
    }
}

#[test]
fn parse_and_verifier_errors_are_invalid_ir() {
    let o = Options::new(Target::Sm90a);
    let d = diags("tile.kernel @k(", &o);
    assert_eq!(d.len(), 1);
    assert_eq!((&d[0].kind, &d[0].kernel), (&DiagKind::InvalidIr, &None));
    let src = "tile.kernel @k(%n: index, %b: i32) {grid = [1]} {\n  %x = tile.addi %n, %b : \
               index\n  tile.return\n}\n";
    let d = diags(src, &o);
    assert!(!d.is_empty());
    for x in &d {
        assert_eq!(x.kind, DiagKind::InvalidIr, "{x}");
        assert_eq!(x.kernel.as_deref(), Some("k"), "{x}");
        assert_eq!(x.loc.line, 2, "{x}");
    }
}

#[test]
fn shared_memory_overflow_is_a_resource_limit() {
    // 8 stages of a 128x256x64 bf16 tile: 49152 bytes each, over sm_90a's 232448.
    let d = diags(
        &example("gemm_bf16.tile"),
        &Options::new(Target::Sm90a).with_stages(8),
    );
    assert_eq!(d.len(), 1, "{d:?}");
    let DiagKind::ResourceLimit {
        resource,
        needed,
        limit,
    } = &d[0].kind
    else {
        panic!("{:?}", d[0].kind)
    };
    assert_eq!(*resource, "shared memory bytes per block");
    assert!(*needed > 8 * 49_152, "{needed}");
    assert_eq!(*limit, 232_448);
    assert_eq!(d[0].kernel.as_deref(), Some("gemm_bf16"));
}

/// examples/transpose.tile with 256x256 tiles.
fn transpose_256() -> String {
    example("transpose.tile")
        .replace("64x64", "256x256")
        .replace("{value = 64}", "{value = 256}")
        .replace(", 64)", ", 256)")
}

#[test]
fn the_lowering_s_shared_memory_overflow_is_a_resource_limit() {
    // A 256x256 f32 transpose at 16 warps (128 registers per thread): its round trip
    // through shared memory (rows padded) needs 263168 bytes; the lowering, not the table,
    // finds it, at the store.
    let d = diags(
        &transpose_256(),
        &Options::new(Target::Sm90a).with_num_warps(16),
    );
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(
        d[0].kind,
        DiagKind::ResourceLimit {
            resource: "shared memory bytes per block",
            needed: 263_168,
            limit: 232_448
        }
    );
    assert_eq!(
        (d[0].loc.line, d[0].kernel.as_deref()),
        (13, Some("transpose"))
    );
}

#[test]
fn register_limits_are_resource_limits() {
    // Promotion of a 128x256 fp8 tile: two accumulators of 128 registers per thread.
    let o = Options::new(Target::Sm90a).with_promote(Promote::On);
    let d = diags(&example("gemm_fp8_e4m3.tile"), &o);
    assert_eq!(
        d[0].kind,
        DiagKind::ResourceLimit {
            resource: "accumulator registers per thread",
            needed: 256,
            limit: 192
        },
        "{}",
        d[0]
    );
    // At 8 warps (given: the automatic choice takes 16 for such a tile), the 256x256 f32
    // transpose's tiles need 256 registers per thread: the first op that makes one is
    // refused.
    let d = diags(
        &transpose_256(),
        &Options::new(Target::Sm90a).with_num_warps(8),
    );
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(
        d[0].kind,
        DiagKind::ResourceLimit {
            resource: "registers per thread",
            needed: 256,
            limit: 255
        }
    );
    assert_eq!(
        (d[0].loc.line, d[0].kernel.as_deref()),
        (11, Some("transpose"))
    );
    // A 256x256 f32 accumulator does not fit the register file.
    let src = example("gemm_bf16.tile").replace("tile<128x", "tile<256x");
    let d = diags(&src, &Options::new(Target::Sm90a));
    assert!(
        matches!(&d[0].kind, DiagKind::ResourceLimit { resource, .. }
            if *resource == "accumulator bytes per CTA"),
        "{}: {:?}",
        d[0],
        d[0].kind
    );
}

#[test]
fn a_missing_instruction_is_target_lacks() {
    // tile-opt's path (compile's Options::validate refuses the combination first).
    let mut m = tilec::dialect::parse(&example("gemm_bf16.tile"), "gemm_bf16.tile").unwrap();
    let mut pm = PassManager::parse("tile-to-gpu{target=sm_90 stages=4 epilogue=tma}").unwrap();
    let d = pm.run(&mut m, &mut |_, _, _| {}).unwrap_err();
    assert_eq!(
        d.0[0].kind,
        DiagKind::TargetLacks {
            target: "sm_90",
            feature: "wgmma.mma_async"
        }
    );
}

#[test]
fn hand_written_gpu_ops_are_invalid_ir() {
    let src = "tile.kernel @k() {grid = [1]} {\n  tile.fence_proxy_async\n  tile.return\n}\n";
    let d = diags(src, &Options::new(Target::Sm90a));
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].kind, DiagKind::InvalidIr);
    assert_eq!(d[0].kernel.as_deref(), Some("k"));
    // tile.warp_specialize is GPU-level too (the passes' producer/consumer split).
    let src = "tile.kernel @k() {grid = [1]} {\n  tile.warp_specialize {consumers = 1} {\n    \
               tile.yield\n  } {\n    tile.yield\n  }\n  tile.return\n}\n";
    let d = diags(src, &Options::new(Target::Sm90a));
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(
        d[0].message
            .starts_with("'tile.warp_specialize' is a GPU-level op"),
        "{}",
        d[0]
    );
    assert_eq!(d[0].kind, DiagKind::InvalidIr);
}

#[test]
fn options_errors_are_apart_from_ir_errors() {
    // Options are refused before the input is read.
    let refuse = |o: Options| {
        let input = Input::Text {
            source: "not IR",
            file: "k.tile",
        };
        match compile(input, &o) {
            Err(Error::Options(e)) => e,
            Err(e) => panic!("{e}"),
            Ok(k) => panic!("{} compiled", k.name),
        }
    };
    let e = refuse(Options::new(Target::Sm90).with_epilogue(EpilogueStore::Tma));
    assert_eq!(e.option, "epilogue");
    let e = refuse(Options::new(Target::Sm90a).with_schedule(Schedule::Clc));
    assert_eq!(
        e.to_string(),
        "option 'schedule': clc uses clusterlaunchcontrol.try_cancel (PTX ISA 8.6), which \
         needs sm_100 or sm_100a; the target is sm_90a"
    );
}

/// A 128×256×64 bf16 GEMM built without text; the K loop is built in the scope
/// `node_17` (a frontend's node), and its op id is returned with the module.
fn built_gemm() -> (tilec::dialect::Module, u32) {
    use tilec::dialect::{Builder, Module, ScalarType::*, Type};
    let mut m = Module::new();
    let mut b = Builder::new(&mut m);
    let t2 = |e| Type::Tensor { rank: 2, elem: e };
    let args = [
        ("A", t2(BF16)),
        ("B", t2(BF16)),
        ("C", t2(BF16)),
        ("M", Type::INDEX),
        ("N", Type::INDEX),
        ("K", Type::INDEX),
    ];
    let mut loop_id = 0;
    b.kernel("gemm", &args, |b, a| {
        b.grid([b.arg(a[4])?.ceil_div(256), b.arg(a[3])?.ceil_div(128)])?;
        let (pn, pm) = (b.program_id(0)?, b.program_id(1)?);
        let (c0, c64) = (b.constant_index(0)?, b.constant_index(64)?);
        let (c128, c256) = (b.constant_index(128)?, b.constant_index(256)?);
        let row = b.muli(pm, c128)?;
        let col = b.muli(pn, c256)?;
        let zero = b.zeros(&[128, 256], F32)?;
        let acc = b.with_loc("node_17", |b| {
            loop_id = b.next_op_id();
            b.for_loop(c0, a[5], c64, &[zero], |b, k, c| {
                let x = b.load(a[0], &[row, k], &[128, 64])?;
                let y = b.load(a[1], &[k, col], &[64, 256])?;
                Ok(vec![b.dot(x, y, c[0])?])
            })
        })?;
        let out = b.convert(acc[0], BF16)?;
        b.store(a[2], &[row, col], out)
    })
    .unwrap();
    (m, loop_id)
}

#[test]
fn built_ir_errors_point_at_the_frontend_s_node() {
    let (m, loop_id) = built_gemm();
    let o = Options::new(Target::Sm90a);
    // It compiles as built (to the tile IR: no MLIR needed here).
    let k = compile(Input::Module(&m), &o.clone().with_emit(tilec::Emit::Tile)).unwrap();
    assert_eq!(k.name, "gemm");
    // Eight stages do not fit: the error is at the K loop, in the node's scope.
    let Err(Error::Diagnostics(d)) = compile(Input::Module(&m), &o.with_stages(8)) else {
        panic!("eight stages compiled")
    };
    let loc = &d.0[0].loc;
    assert_eq!(
        (&*loc.file, loc.op_id()),
        ("node_17", Some(loop_id)),
        "{}",
        d.0[0]
    );
    assert_eq!(
        d.0[0].to_string().split(": ").next(),
        Some(&*format!("node_17:{loop_id}:0"))
    );
    assert_eq!(d.0[0].kernel.as_deref(), Some("gemm"));
}
