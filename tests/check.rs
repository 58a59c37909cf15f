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
