//! Legality without compiling: `tilec::check` (options, parse, verifier, the tilec passes
//! with the target's table; no MLIR) and `TargetInfo`'s answers, which agree with what the
//! passes accept.

mod common;

use tilec::dialect::{DiagKind, GemmTile, ScalarType, Target};
use tilec::{check, Error, Input, Options, TargetInfo};

fn checked(src: &str, opts: &Options) -> Result<(), Error> {
    check(
        Input::Text {
            source: src,
            file: "g.tile",
        },
        opts,
    )
}

fn bf16(bm: u64, bn: u64, bk: u64, b_k_major: bool) -> GemmTile {
    GemmTile {
        bm,
        bn,
        bk,
        elem: ScalarType::BF16,
        b_elem: ScalarType::BF16,
        acc: ScalarType::F32,
        a_k_major: true,
        b_k_major,
    }
}

#[test]
fn check_reports_what_compile_would() {
    let src = common::gemm_source(128, 256, 64, false, false);
    let o = Options::new(Target::Sm90a);
    assert!(checked(&src, &o).is_ok());
    // Five stages of 48 KiB do not fit: the same resource limit compile reports.
    let Err(Error::Diagnostics(d)) = checked(&src, &o.clone().with_stages(5)) else {
        panic!("five stages checked")
    };
    assert!(matches!(
        d.0[0].kind,
        DiagKind::ResourceLimit {
            needed: 246_784,
            limit: 232_448,
            ..
        }
    ));
    assert_eq!(d.0[0].kernel.as_deref(), Some("g"));
    let info = TargetInfo::new(Target::Sm90a);
    assert_eq!(info.max_stages(&bf16(128, 256, 64, false)), Some(4));
    let e = info.check_gemm(&bf16(128, 256, 64, false), 5).unwrap_err();
    assert_eq!(
        e.kind,
        DiagKind::ResourceLimit {
            resource: "shared memory bytes per block",
            needed: 246_784,
            limit: 232_448
        }
    );
    assert!(checked("tile.kernel @g(", &o).is_err());
}

#[test]
fn target_info_agrees_with_the_passes() {
    let info = TargetInfo::new(Target::Sm90a);
    let nk = info.legal_gemm_tiles(ScalarType::BF16, ScalarType::BF16, true, true);
    let kn = info.legal_gemm_tiles(ScalarType::BF16, ScalarType::BF16, true, false);
    // wgmma: M 64 or 128; any N multiple of 8 for a B stored N×K, of 16 for K×N; K tiles of
    // 32, 64, 128 bf16 elements; 256x256 does not fit the registers.
    assert!(nk
        .iter()
        .all(|t| [64, 128].contains(&t.bm) && [32, 64, 128].contains(&t.bk)));
    assert!(kn.iter().all(|t| t.bn % 16 == 0));
    assert_eq!(nk.len(), 2 * 32 * 3);
    assert_eq!(kn.len(), 2 * 16 * 3);
    // A sample of accepted and refused tiles, through the passes.
    let o = Options::new(Target::Sm90a).with_stages(2);
    for t in [&nk[0], &nk[nk.len() / 2], &nk[nk.len() - 1]] {
        let src = common::gemm_source(t.bm, t.bn, t.bk, false, true);
        let r = checked(&src, &o);
        assert!(r.is_ok(), "{}x{}x{}: {:?}", t.bm, t.bn, t.bk, r.err());
    }
    for (bm, bn, bk) in [(256, 256, 64), (192, 128, 64), (128, 256, 16)] {
        let refusal = info.check_gemm(&bf16(bm, bn, bk, true), 2).unwrap_err();
        let src = common::gemm_source(bm, bn, bk, false, true);
        let Err(Error::Diagnostics(d)) = checked(&src, &o) else {
            panic!("{bm}x{bn}x{bk} checked")
        };
        assert_eq!(d.0[0].kind, refusal.kind, "{bm}x{bn}x{bk}: {}", d.0[0]);
        assert!(d.0[0].message.ends_with(&refusal.message), "{}", d.0[0]);
    }
    let sync = TargetInfo::new(Target::Sm100a);
    let tiles = sync.legal_gemm_tiles(ScalarType::E4M3, ScalarType::E4M3, true, true);
    assert!(
        tiles.iter().all(|t| (t.bm, t.bn) == (128, 256)),
        "{tiles:?}"
    );
    assert!(!tiles.is_empty());
}

#[test]
fn kernel_constants_bind_like_written_sizes() {
    let src = std::fs::read_to_string(format!("{}/examples/gemm.tile", env!("CARGO_MANIFEST_DIR")))
        .unwrap();
    let input = Input::Text {
        source: &src,
        file: "gemm.tile",
    };
    // Bound constants give the PTX of the same program written with those sizes.
    let o = Options::new(Target::Sm90a)
        .with_constant("BM", 64)
        .with_constant("BN", 128);
    let bound = tilec::compile(input, &o).unwrap();
    let written = common::gemm_source(64, 128, 64, false, false);
    let plain = tilec::compile(
        Input::Text {
            source: &written,
            file: "g.tile",
        },
        &Options::new(Target::Sm90a),
    )
    .unwrap();
    assert_eq!(bound.ptx.replace("gemm", "g"), plain.ptx);
    let want: std::collections::BTreeMap<String, i64> = [("BK", 64), ("BM", 64), ("BN", 128)]
        .map(|(k, v)| (k.to_string(), v))
        .into();
    assert_eq!(bound.manifest.constants, want);
    assert!(plain.manifest.constants.is_empty());
    // `Options::set` spells a binding as tile-compile's -D does.
    let mut s = Options::new(Target::Sm90a);
    s.set("define", "BM=64").unwrap();
    s.set("define", "BN = 128").unwrap();
    assert_eq!(s.constants, o.constants);
    assert_eq!(s.set("define", "BM").unwrap_err().option, "define");
    assert_eq!(s.set("define", "bm=1").unwrap_err().option, "define");
    assert_eq!(s.set("define", "BM=x").unwrap_err().option, "define");
    // A constant the kernel does not declare is a located error naming what it declares.
    let Err(Error::Diagnostics(d)) = check(input, &o.clone().with_constant("BX", 1)) else {
        panic!("an undeclared binding checked")
    };
    assert_eq!(d.0[0].loc.line, 7, "{}", d.0[0]);
    assert!(
        d.0[0].message.contains("constant 'BX' is bound") && d.0[0].message.contains("BK, BM, BN"),
        "{}",
        d.0[0]
    );
    // A bad name is refused by validate; a built module has no constants to bind.
    let bad = Options::new(Target::Sm90a).with_constant("bm", 1);
    assert_eq!(bad.validate().unwrap_err().option, "define");
    let m = tilec::dialect::parse(&written, "g.tile").unwrap();
    let Err(Error::Options(e)) = check(Input::Module(&m), &o) else {
        panic!("a module with bindings checked")
    };
    assert_eq!(e.option, "define");
    // A size the target cannot lower is the passes' located error, as if written.
    let Err(Error::Diagnostics(d)) = check(input, &o.clone().with_constant("BM", 96)) else {
        panic!("BM = 96 checked")
    };
    assert!(d.0[0].message.contains("found 96"), "{}", d.0[0]);
}

#[test]
fn auto_tile_binds_the_heuristic_choice_and_checks_it() {
    use tilec::gemm_heuristic::{GemmProblem, Machine};
    use tilec::{auto_tile, EpilogueStore, Schedule};
    let root = env!("CARGO_MANIFEST_DIR");
    let src = std::fs::read_to_string(format!("{root}/examples/gemm.tile")).unwrap();
    let input = Input::Text {
        source: &src,
        file: "gemm.tile",
    };
    let base = Options::new(Target::Sm90a);
    let p = GemmProblem::new(16, 4096, 4096, ScalarType::BF16);
    assert_eq!(
        tilec::dot_operand_type(input, &base).unwrap(),
        ScalarType::BF16
    );
    let (o, c) = auto_tile(input, &base, &p, &Machine::H200).unwrap();
    assert_eq!((c.config.bm, c.config.bn, c.config.bk), (16, 64, 64));
    assert_eq!(
        (o.stages, o.schedule, o.epilogue),
        (8, Schedule::None, EpilogueStore::Direct)
    );
    let k = tilec::compile(input, &o).unwrap();
    assert_eq!(k.manifest.constants["BM"], 16);
    assert_eq!(k.manifest.block, [256, 1, 1]);
    let p = GemmProblem::new(128, 4096, 4096, ScalarType::BF16);
    let (o, c) = auto_tile(input, &base, &p, &Machine::H200).unwrap();
    assert_eq!((c.config.bm, c.config.bn), (64, 64));
    assert_eq!(o.epilogue, EpilogueStore::Tma);
    // An f32 C: the TMA store takes 16-bit elements only, so the direct store is next.
    let f32_src = src
        .replace("%C: tensor<?x?xbf16>", "%C: tensor<?x?xf32>")
        .replace("  %out = tile.convert %acc : tile<BMxBNxbf16>\n", "")
        .replace(
            "tile.store %C, %row, %col, %out",
            "tile.store %C, %row, %col, %acc",
        );
    let f32_in = Input::Text {
        source: &f32_src,
        file: "f32.tile",
    };
    let p = GemmProblem::new(8192, 8192, 8192, ScalarType::BF16);
    let (o, c) = auto_tile(f32_in, &base, &p, &Machine::H200).unwrap();
    assert_eq!((c.config.bm, c.config.bn), (128, 256));
    assert_eq!(o.epilogue, EpilogueStore::Direct);
    assert!(
        c.reason
            .contains("the passes refused 128x256x64 with the tma store"),
        "{}",
        c.reason
    );
    // The problem's element type must be the kernel's.
    let f16 = GemmProblem::new(64, 64, 64, ScalarType::F16);
    let Err(Error::Diagnostics(d)) = auto_tile(input, &base, &f16, &Machine::H200) else {
        panic!("an f16 problem tiled a bf16 kernel")
    };
    assert!(d.0[0]
        .message
        .contains("element type is f16, but kernel '@gemm' multiplies bf16"));
    // A kernel with fixed sizes declares no constants to bind: a located error.
    let fixed = std::fs::read_to_string(format!("{root}/examples/gemm_bf16.tile")).unwrap();
    let fixed_in = Input::Text {
        source: &fixed,
        file: "gemm_bf16.tile",
    };
    let Err(Error::Diagnostics(d)) = auto_tile(fixed_in, &base, &p, &Machine::H200) else {
        panic!("a kernel without constants tiled")
    };
    assert_eq!(d.0[0].loc.line, 4);
    assert!(
        d.0[0].message.contains("does not declare BM, BN, BK"),
        "{}",
        d.0[0]
    );
    // A kernel without a dot has no operand type for the heuristic.
    let vadd = std::fs::read_to_string(format!("{root}/examples/vadd.tile")).unwrap();
    let v_in = Input::Text {
        source: &vadd,
        file: "vadd.tile",
    };
    let Err(Error::Diagnostics(d)) = tilec::dot_operand_type(v_in, &base) else {
        panic!("vadd has a dot?")
    };
    assert!(d.0[0].message.contains("has no tile.dot"), "{}", d.0[0]);
}
