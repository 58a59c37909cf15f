//! Every shipped example's manifest, from the compiler to a launch: it reads back from its
//! JSON as it was written, and [`Manifest::launch_config`] gives a grid within CUDA's
//! limits for a 4096-sized problem on 132 SMs (the H200's count). Two kernels' grids are
//! checked exactly.

use std::path::Path;
use tilec::dialect::Target;
use tilec::lowering::manifest::{LaunchConfig, Manifest, Param, Persistent};
use tilec::{compile, Emit, EpilogueStore, Input, Options};

const SMS: u32 = 132;

/// The manifest of `file` compiled for `target` (MLIR is enough: the manifest is written by
/// the lowering), or `None` where the example does not compile for the target.
fn manifest(file: &str, target: Target) -> Option<Manifest> {
    let src = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).ok()?;
    let opts = Options::new(target).with_emit(Emit::Mlir);
    compile(Input::Text { source: &src, file }, &opts)
        .ok()
        .map(|k| k.manifest)
}

/// Every scalar 4096, and a split-K kernel's slice count chosen as a launcher would.
fn launch(m: &Manifest) -> LaunchConfig {
    let mut args: Vec<(String, i64)> = m
        .params
        .iter()
        .filter(|p| matches!(p, Param::Scalar { .. }))
        .map(|p| (p.name().to_string(), 4096))
        .collect();
    if let Some(sk) = &m.split_k {
        let tiles = 4096u64.div_ceil(128) * 4096u64.div_ceil(256);
        let s = sk.slices(4096, tiles, SMS) as i64;
        args.iter_mut().find(|(n, _)| *n == sk.arg).unwrap().1 = s;
    }
    let args: Vec<(&str, i64)> = args.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    m.launch_config(&args, SMS)
        .unwrap_or_else(|e| panic!("{}: {e}", m.kernel))
}

#[test]
fn every_example_manifest_reads_back_and_launches() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tile"))
        .collect();
    files.sort();
    let mut compiled = 0;
    for f in &files {
        for target in [Target::Sm90a, Target::Sm90, Target::Sm100a] {
            let Some(m) = manifest(&format!("examples/{f}"), target) else {
                continue;
            };
            compiled += 1;
            let back = Manifest::from_json(&m.to_json()).unwrap();
            assert_eq!(back, m, "{f} {target}");
            let lc = launch(&m);
            if let Some(Persistent::Static { ctas_per_sm, .. }) = m.persistent {
                assert!(lc.grid[0] <= SMS * ctas_per_sm, "{f} {target}: {lc:?}");
                assert_eq!(lc.grid[1..], [1, 1], "{f} {target}");
            }
            assert_eq!(lc.block, m.block);
            assert_eq!(
                u64::from(lc.dynamic_shared_memory_bytes),
                m.dynamic_shared_memory_bytes
            );
        }
    }
    // Every example compiles for sm_90a at least.
    assert!(
        compiled >= files.len(),
        "{compiled} of {} examples",
        files.len()
    );
}

#[test]
fn gemm_grids_follow_the_schedule() {
    // 128×256 tiles: 4096² has 16 × 32 = 512 tiles; sm_90a's static schedule launches one
    // CTA per SM, sm_90's `none` one per tile, sm_100a's clc the tile grid.
    let m = manifest("examples/gemm_bf16.tile", Target::Sm90a).unwrap();
    assert_eq!(launch(&m).grid, [132, 1, 1]);
    let m = manifest("examples/gemm_bf16.tile", Target::Sm90).unwrap();
    assert_eq!(m.persistent, None);
    assert_eq!(launch(&m).grid[0] * launch(&m).grid[1], 512);
    let m = manifest("examples/gemm_bf16.tile", Target::Sm100a).unwrap();
    assert!(matches!(m.persistent, Some(Persistent::Clc { group_m: 8 })));
    assert_eq!(launch(&m).grid[0] * launch(&m).grid[1], 512);
}

/// The runtime's test manifests (`runtime/tests/*.json`) are what the compiler writes today:
/// its bind tests check real launches, not a format the lowering has left.
#[test]
fn the_runtime_fixtures_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (fixture, file, epilogue) in [
        ("vadd", "examples/vadd.tile", EpilogueStore::Direct),
        (
            "gemm_bf16",
            "examples/gemm_bf16.tile",
            EpilogueStore::Direct,
        ),
        (
            "gemm_bf16_tma",
            "examples/gemm_bf16.tile",
            EpilogueStore::Tma,
        ),
        (
            "gemm_bf16_splitk",
            "examples/gemm_bf16_splitk_64x64.tile",
            EpilogueStore::Direct,
        ),
        (
            "gemm_splitk",
            "examples/gemm_splitk.tile",
            EpilogueStore::Direct,
        ),
        (
            "gemm_splitk_serial",
            "examples/gemm_splitk_serial.tile",
            EpilogueStore::Direct,
        ),
    ] {
        let src = std::fs::read_to_string(root.join(file)).unwrap();
        let opts = Options::new(Target::Sm90a)
            .with_emit(Emit::Mlir)
            .with_epilogue(epilogue);
        let m = compile(Input::Text { source: &src, file }, &opts)
            .unwrap()
            .manifest;
        let path = root.join(format!("runtime/tests/{fixture}.json"));
        let want = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            m,
            Manifest::from_json(&want).unwrap(),
            "{} is stale: regenerate it with tile-compile {file} --target sm_90a{}",
            path.display(),
            if epilogue == EpilogueStore::Tma {
                " --epilogue-store tma"
            } else {
                ""
            }
        );
    }
}

/// The split-K finalize kernels tilec-runtime embeds (`runtime/kernels/`) are what the
/// compiler writes today for their source, PTX and manifest.
#[test]
fn the_runtime_finalize_kernels_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let file = "runtime/kernels/splitk_finalize.tile";
    let src = std::fs::read_to_string(root.join(file)).unwrap();
    for (dtype, ptx, json) in tilec_runtime::FINALIZE_KERNELS {
        let name = format!("splitk_finalize_{dtype}");
        let opts = Options::new(Target::Sm90).with_kernel(&name);
        let k = compile(Input::Text { source: &src, file }, &opts).unwrap();
        let stale = format!(
            "runtime/kernels/{name}.* are stale: regenerate them with tile-compile {file} \
             --target sm_90 --kernel {name} -o runtime/kernels"
        );
        assert_eq!(k.ptx, ptx, "{stale}");
        assert_eq!(k.manifest, Manifest::from_json(json).unwrap(), "{stale}");
        assert_eq!(k.manifest.params[1].dtype(), dtype);
    }
}

/// A cubin ptxas writes passes the runtime's ELF check; every truncation of it, and a
/// section table moved past its end, is refused before the driver would read past it.
#[test]
fn the_runtime_checks_a_cubin_before_the_driver_reads_it() {
    let src =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/vadd.tile"))
            .unwrap();
    let opts = Options::new(Target::Sm90a).with_emit(Emit::Cubin);
    let k = compile(
        Input::Text {
            source: &src,
            file: "vadd.tile",
        },
        &opts,
    )
    .unwrap();
    let cubin = k.cubin;
    assert_eq!(tilec_runtime::check_cubin(&cubin), Ok(()));
    for cut in [0, 16, 63, 64, 200, cubin.len() / 2, cubin.len() - 1] {
        assert!(
            tilec_runtime::check_cubin(&cubin[..cut]).is_err(),
            "cut at {cut}"
        );
    }
    let mut moved = cubin.clone();
    moved[40..48].copy_from_slice(&(cubin.len() as u64).to_le_bytes());
    let e = tilec_runtime::check_cubin(&moved).unwrap_err();
    assert!(e.starts_with("the section header table at"), "{e}");
    let mut machine = cubin.clone();
    machine[18] = 62; // EM_X86_64
    assert_eq!(
        tilec_runtime::check_cubin(&machine),
        Err("ELF machine 62, not EM_CUDA (190)".to_string())
    );
}
