//! End to end: the examples through `tilec::compile` to PTX, assembled by `ptxas` 13.x
//! (the `nvidia-cuda-nvcc` wheel in `.venv`, or `$PTXAS`) for each target: no error, no
//! warning (no C75xx wgmma serialization), no spill; `nvdisasm` shows HGMMA for sm_90a.
//! Also the target checks that must fire before MLIR is built.

use std::path::{Path, PathBuf};
use std::process::Command;
use tilec::dialect::Target;
use tilec::{compile, ClusterShape, EpilogueStore, Error, Input, Options, Schedule};

mod common;

fn nv_tool(name: &str, env: &str) -> PathBuf {
    common::nv_tool(name, env).unwrap_or_else(|e| panic!("{e}"))
}

fn example(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples")
            .join(name),
    )
    .unwrap()
}

/// Compile, assemble, and return (ptx, ptxas output, cubin path).
fn build(file: &str, target: Target) -> (String, String, PathBuf) {
    build_with(file, &Options::new(target), "")
}

/// As [`build`], with options; `tag` keeps the scratch folders of variants apart.
fn build_with(file: &str, opts: &Options, tag: &str) -> (String, String, PathBuf) {
    build_source(file, &example(file), opts, tag)
}

/// As [`build_with`], for the program `src` (named `file`).
fn build_source(file: &str, src: &str, opts: &Options, tag: &str) -> (String, String, PathBuf) {
    let target = opts.target;
    let k = compile(Input::Text { source: src, file }, opts)
        .unwrap_or_else(|e| panic!("{file} for {target}: {e}"));
    let dir = std::env::temp_dir().join(format!(
        "tilec-ptxas-{}-{target}-{file}{tag}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let ptx = dir.join("k.ptx");
    std::fs::write(&ptx, &k.ptx).unwrap();
    let cubin = dir.join("k.cubin");
    let out = Command::new(nv_tool("ptxas", "PTXAS"))
        .arg(format!("-arch={}", target.name()))
        .arg("-v")
        .arg(&ptx)
        .arg("-o")
        .arg(&cubin)
        .output()
        .unwrap();
    let log =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "ptxas failed for {file} on {target}:\n{log}"
    );
    (k.ptx, log, cubin)
}

fn assert_clean(log: &str, what: &str) {
    assert_no_c75(log, what);
    assert!(!log.contains("warning"), "{what}: ptxas warned:\n{log}");
    assert!(
        log.contains("0 bytes spill stores, 0 bytes spill loads"),
        "{what}: spills:\n{log}"
    );
    assert!(log.contains("Used "), "{what}: no register report:\n{log}");
}

/// nvdisasm's SASS listing of `cubin`.
fn disassemble(cubin: &std::path::Path) -> String {
    let out = Command::new(nv_tool("nvdisasm", "NVDISASM"))
        .arg(cubin)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// ptxas reports wgmma trouble as `info` lines C7510–C7520 (serialization, injected waits).
fn assert_no_c75(log: &str, what: &str) {
    assert!(
        !log.contains("(C75"),
        "{what}: ptxas C75xx message (wgmma serialized or a wait injected):\n{log}"
    );
}

#[test]
fn gemm_sm90a_wgmma() {
    let (ptx, log, cubin) = build("gemm_bf16.tile", Target::Sm90a);
    assert!(ptx.contains(".target sm_90a"), "{ptx:.300}");
    assert!(ptx.contains(".version 8.0"));
    assert!(ptx.contains("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"));
    assert!(ptx.contains("cp.async.bulk.tensor.2d"));
    // The epilogue's ragged/strided path: one predicated store per element, no branches.
    assert_eq!(
        ptx.matches("@p st.global.b16").count(),
        128,
        "slow-path stores"
    );
    assert_clean(&log, "gemm_bf16 sm_90a");
    let sass = disassemble(&cubin);
    // 4 k16 steps in the peeled first k tile + 4 in the loop.
    assert_eq!(
        sass.matches("HGMMA.64x256x16.F32.BF16").count(),
        8,
        "HGMMA count"
    );
}

#[test]
fn static_clusters_sm90a_no_gpu_scope_fence_per_k_step() {
    // Static clusters (TMA multicast): clean for ptxas, HGMMA in the SASS, and the stage
    // releases to peer CTAs (mbarrier.arrive.shared::cluster, .release.cta) compile without
    // a GPU-scope fence: the only MEMBAR.ALL.GPU are the two of the barrier.cluster arrives
    // at entry and exit, whatever the number of peers (a .release.cluster arrive added one
    // per release site and cost about 0.45 µs per k step and peer on an H100).
    for c in ["2", "1x2", "2x2", "4"] {
        let mut o = Options::new(Target::Sm90a);
        o.schedule = Schedule::Static;
        o.cluster = c.parse::<ClusterShape>().unwrap();
        let (ptx, log, cubin) = build_with("gemm_bf16.tile", &o, &format!("-cluster{c}"));
        let what = format!("gemm_bf16 --cluster {c}");
        assert!(ptx.contains(".reqnctapercluster"), "{what}");
        assert!(
            ptx.contains("mbarrier.arrive.shared::cluster.b64"),
            "{what}"
        );
        assert!(!ptx.contains("mbarrier.arrive.release.cluster"), "{what}");
        assert_clean(&log, &what);
        let sass = disassemble(&cubin);
        assert_eq!(
            sass.matches("HGMMA.64x256x16.F32.BF16").count(),
            8,
            "{what}"
        );
        assert_eq!(sass.matches("MEMBAR.ALL.GPU").count(), 2, "{what}");
    }
}

#[test]
fn wide_norms_without_spills() {
    // Normalisations of 32,768 columns at 16 and 32 warps (128 and 64 registers a thread):
    // tile-strip-mine-stores computes the output in column strips, so the weights are not
    // all live beside the kept row (LayerNorm spilled 616 bytes at 16 warps without it).
    for name in ["layernorm.tile", "rmsnorm.tile"] {
        let src = example(name).replace("4096", "32768");
        for warps in [16, 32] {
            let o = Options::new(Target::Sm90a).with_num_warps(warps);
            let (_, log, _) = build_source(name, &src, &o, &format!("-w32768-{warps}"));
            assert_clean(&log, &format!("{name} at 32768 columns, {warps} warps"));
        }
    }
}

#[test]
fn smaller_tile_programs_sm90a() {
    // The smaller-tile GEMM programs the benchmark autotunes over (docs/performance.md):
    // one tile per CTA, deeper rings; m64nBN wgmma, 8 per k tile and consumer warpgroup.
    for (file, stages, hgmma, per_tile) in [
        ("gemm_bf16_64x64.tile", 8, "HGMMA.64x64x16.F32.BF16", 8),
        ("gemm_bf16_64x128.tile", 6, "HGMMA.64x128x16.F32.BF16", 8),
        ("gemm_bf16_128x128.tile", 6, "HGMMA.64x128x16.F32.BF16", 8),
    ] {
        let src = example(file);
        let mut o = Options::new(Target::Sm90a);
        o.schedule = Schedule::None;
        o.stages = stages;
        let k = compile(Input::Text { source: &src, file }, &o)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let dir = std::env::temp_dir().join(format!("tilec-ptxas-{}-{file}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("k.ptx"), &k.ptx).unwrap();
        let out = Command::new(nv_tool("ptxas", "PTXAS"))
            .args(["-arch=sm_90a", "-v"])
            .arg(dir.join("k.ptx"))
            .arg("-o")
            .arg(dir.join("k.cubin"))
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stderr).to_string()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{file}: {log}");
        assert_clean(&log, file);
        assert_eq!(
            disassemble(&dir.join("k.cubin")).matches(hgmma).count(),
            per_tile,
            "{file}: {hgmma} count"
        );
    }
}

#[test]
fn splitk_atomic_epilogue_sm90a() {
    // Split-K programs (a third grid dimension of K slices, a K loop over [s·Kc, min((s+1)·Kc,
    // K)), tile.atomic_add into an f32 workspace), persistent (the default) and one tile per
    // CTA: PTX ISA 8.1 for the vector red, one red.global.add.v2.f32 per register pair on the
    // fast path and one predicated red.global.add.f32 per register on the slow path; clean
    // for ptxas; HGMMA in the SASS.
    for (file, regs, hgmma) in [
        ("gemm_bf16_splitk_64x64.tile", 32, "HGMMA.64x64x16.F32.BF16"),
        (
            "gemm_bf16_splitk_64x128.tile",
            64,
            "HGMMA.64x128x16.F32.BF16",
        ),
        (
            "gemm_bf16_splitk_128x256.tile",
            128,
            "HGMMA.64x256x16.F32.BF16",
        ),
    ] {
        for schedule in [Schedule::Static, Schedule::None] {
            let mut o = Options::new(Target::Sm90a);
            o.schedule = schedule;
            let (ptx, log, cubin) = build_with(file, &o, schedule.name());
            let what = format!("{file} schedule={schedule}");
            assert!(
                ptx.contains(".version 8.1"),
                "{what}: PTX ISA 8.1 for red.v2"
            );
            assert_eq!(
                ptx.matches("red.global.add.v2.f32").count(),
                regs / 2,
                "{what}: vector reds"
            );
            assert_eq!(
                ptx.matches("@p red.global.add.f32").count(),
                regs,
                "{what}: slow-path reds"
            );
            assert!(
                !ptx.contains("st.global"),
                "{what}: the split-K epilogue only adds"
            );
            assert_clean(&log, &what);
            let sass = disassemble(&cubin);
            assert!(sass.contains(hgmma), "{what}: {hgmma}");
            assert!(
                sass.contains("RED.E.ADD.F32") || sass.contains("REDG.E.ADD.F32"),
                "{what}: no RED in the SASS"
            );
        }
    }
}

#[test]
fn gemm_sm90_and_sm100_mma_sync() {
    for (t, v) in [
        (Target::Sm90, ".version 8.0"),
        (Target::Sm100, ".version 8.6"),
    ] {
        let (ptx, log, _) = build("gemm_bf16.tile", t);
        assert!(ptx.contains(&format!(".target {}", t.name())));
        assert!(ptx.contains(v), "{t}: wrong PTX version");
        assert!(!ptx.contains("wgmma"), "{t} must not use wgmma");
        assert_eq!(
            ptx.matches("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")
                .count(),
            256,
            "{t}: 2 k tiles x 4 k16 x 32 mma"
        );
        // sm_100's default is the clc persistent loop: 0 spills within the 255 registers
        // of a 256-thread CTA (no producer warp on mma.sync targets).
        assert_clean(&log, &format!("gemm_bf16 {t}"));
        assert!(ptx.contains(".maxntid 256, 1, 1"), "{t}: 8 consumer warps");
    }
}

#[test]
fn gemm_family_operand_majors_f16_and_batches() {
    // x · Wᵀ (B stored N×K), Aᵀ · B (A stored K×M), f16, and a batch (3-D tensors): on
    // sm_90a wgmma with the transpose immediates (imm-trans-a, imm-trans-b) that say which
    // operand is MN-major in shared memory, 8 HGMMA (the peeled k tile and the loop, 4 k16
    // steps each), 0 spills; on sm_90 ldmatrix with .trans exactly for the MN-major operands
    // (16 per operand and k tile), 0 spills.
    for (file, trans, wgmma, hgmma) in [
        (
            "gemm_nt_bf16.tile",
            (0, 0),
            "bf16.bf16",
            "HGMMA.64x256x16.F32.BF16",
        ),
        (
            "gemm_tn_bf16.tile",
            (1, 1),
            "bf16.bf16",
            "HGMMA.64x256x16.F32.BF16",
        ),
        ("gemm_f16.tile", (0, 1), "f16.f16", "HGMMA.64x256x16.F32 "),
        (
            "batched_gemm.tile",
            (0, 1),
            "bf16.bf16",
            "HGMMA.64x256x16.F32.BF16",
        ),
    ] {
        let (ptx, log, cubin) = build(file, Target::Sm90a);
        let what = format!("{file} sm_90a");
        let imm = format!("p, 1, 1, {}, {};", trans.0, trans.1);
        assert_eq!(
            ptx.matches(&format!("m64n256k16.f32.{wgmma}")).count(),
            8,
            "{what}: wgmma count"
        );
        assert_eq!(
            ptx.matches(&imm).count(),
            8,
            "{what}: transpose immediates {imm}"
        );
        assert_clean(&log, &what);
        assert_eq!(
            disassemble(&cubin).matches(hgmma).count(),
            8,
            "{what}: HGMMA"
        );
        if file == "batched_gemm.tile" {
            assert_eq!(ptx.matches("cp.async.bulk.tensor.3d").count(), 5, "{what}");
        }
        let (ptx, log, _) = build(file, Target::Sm90);
        let what = format!("{file} sm_90");
        let tr = ptx
            .matches("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16")
            .count();
        let plain = ptx
            .matches("ldmatrix.sync.aligned.m8n8.x4.shared.b16")
            .count();
        // The transpose immediates are 1 exactly for the MN-major operands.
        let mn_major = trans.0 + trans.1;
        assert_eq!(
            (tr, plain),
            (32 * mn_major, 64 - 32 * mn_major),
            "{what}: ldmatrix"
        );
        assert_clean(&log, &what);
    }
}

#[test]
fn mma_sync_gemms_compile_without_spills() {
    // The shipped GEMMs that spilled at the 168-register cap of a producer warp beside 8
    // consumer warps (288 threads take 12 warps' registers): fp8 with its promoted sum,
    // row-wise scales, an epilogue reduction, grouped offsets, both operands MN-major,
    // a fused bias. On sm_90 and sm_100 (clc) the CTA is the 8 consumer warps, and ptxas
    // reports no spill and no warning.
    for file in [
        "gemm_fp8_e4m3.tile",
        "gemm_fp8_rowwise.tile",
        "gemm_rowsum.tile",
        "grouped_gemm.tile",
        "grouped_gemm_contiguous.tile",
        "gemm_tn_bf16.tile",
        "gemm_bias_relu.tile",
    ] {
        for t in [Target::Sm90, Target::Sm100] {
            let (ptx, log, _) = build(file, t);
            assert!(
                ptx.contains(".maxntid 256, 1, 1"),
                "{file} {t}: 256 threads"
            );
            assert_clean(&log, &format!("{file} {t}"));
        }
    }
}

#[test]
fn legal_wgmma_tiles_compile_without_spills() {
    // A sample of sm_90a's legality table (Target::check_gemm_tile, whose unit tests walk all
    // of it): BM 64 and 128, BK 32 (64-byte swizzle for the K-major operands), 64 and 128,
    // BN from 8 to 256 for a B stored N×K (any
    // multiple of 8, N ≡ 8 mod 16 included), multiples of 64 for K×N, and an A stored K×M;
    // the deepest ring that fits. ptxas: no spill, no warning, no wgmma serialization.
    let mut n = 0;
    for bm in [64u64, 128] {
        for bk in [32u64, 64, 128] {
            let nt = [8u64, 24, 40, 72, 136, 248, 256].map(|bn| (bn, false, true));
            let nn = [64u64, 192].map(|bn| (bn, false, false));
            let tn = [(128u64, true, false)];
            for (bn, a_t, b_t) in nt.into_iter().chain(nn).chain(tn) {
                let tile = tilec::dialect::GemmTile {
                    bm,
                    bn,
                    bk,
                    elem: tilec::dialect::ScalarType::BF16,
                    b_elem: tilec::dialect::ScalarType::BF16,
                    acc: tilec::dialect::ScalarType::F32,
                    a_k_major: !a_t,
                    b_k_major: b_t,
                };
                let stages = ((232_448 - 1024) / tile.stage_bytes()).min(4) as u32;
                let mut o = Options::new(Target::Sm90a);
                o.stages = stages;
                let layout = match (a_t, b_t) {
                    (true, _) => "TN",
                    (_, true) => "NT",
                    _ => "NN",
                };
                let what = format!("{bm}x{bn}x{bk} {layout}");
                let src = common::gemm_source(bm, bn, bk, a_t, b_t);
                let (_, log, _) = build_source("tile.tile", &src, &o, &what.replace(' ', "-"));
                assert_clean(&log, &what);
                n += 1;
            }
        }
    }
    assert_eq!(n, 60);
}

#[test]
fn illegal_tiles_are_located_errors() {
    for (bm, bn, bk, b_t, want) in [
        (
            256,
            256,
            64,
            false,
            "a 256x256 f32 accumulator needs 256 KiB of registers",
        ),
        (
            128,
            40,
            64,
            false,
            "of a B stored K×N must be a multiple of 16",
        ),
        (
            128,
            256,
            16,
            false,
            "the K tile must be 64, 128 or 256 bytes",
        ),
        (128, 260, 64, true, "is not a legal wgmma N"),
    ] {
        let src = common::gemm_source(bm, bn, bk, false, b_t);
        let e = compile_err(&src, Target::Sm90a);
        assert!(
            e.contains(want) && e.contains("t.tile:11:3"),
            "{bm}x{bn}x{bk}: {e}"
        );
    }
    // 4 stages of 128x256x128 do not fit: the error says how many do.
    let e = compile_err(
        &common::gemm_source(128, 256, 128, false, false),
        Target::Sm90a,
    );
    assert!(e.contains("use at most 2 stages"), "{e}");
}

/// One `ld.shared.b128`, then is_canceled, then the predicated get_first_ctaid, in that order.
fn assert_clc_sequence(ptx: &str, what: &str) {
    let at = |needle: &str| {
        ptx.find(needle)
            .unwrap_or_else(|| panic!("{what}: no '{needle}' in the PTX"))
    };
    let (fence, arm, req) = (
        at("fence.proxy.async.shared::cta;"),
        at("mbarrier.arrive.expect_tx"),
        at("clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes"),
    );
    assert!(
        fence < req && arm < req,
        "{what}: the fence and the 16-byte arm come before the request"
    );
    let (ld, q, get) = (
        at("ld.shared.b128 resp"),
        at("clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 canceled, resp"),
        at("@canceled clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128"),
    );
    assert!(
        req < ld && ld < q && q < get,
        "{what}: request, 128-bit load, is_canceled, predicated get_first_ctaid"
    );
    assert_eq!(
        ptx.matches("ld.shared.b128").count(),
        1,
        "{what}: one 128-bit load of the response (mma.sync kernels have no producer warp)"
    );
}

#[test]
fn clc_try_cancel_sm100_and_multicast_sm100a() {
    // sm_100: the default schedule is clc, the plain (non-multicast) request.
    let (ptx, log, _) = build("gemm_bf16.tile", Target::Sm100);
    assert!(
        ptx.contains(".version 8.6") && ptx.contains(".target sm_100"),
        "{ptx:.300}"
    );
    assert_clc_sequence(&ptx, "sm_100");
    assert!(
        !ptx.contains("multicast::cluster::all"),
        "sm_100 has no multicast try_cancel"
    );
    assert!(!log.contains("warning"), "{log}");
    // sm_100a with clusters of 2: the multicast form, remote arrives, cluster barriers.
    let src = example("gemm_bf16.tile");
    let mut o = Options::new(Target::Sm100a);
    o.cluster = ClusterShape::x(2);
    let k = compile(
        Input::Text {
            source: &src,
            file: "gemm_bf16.tile",
        },
        &o,
    )
    .unwrap();
    assert_eq!(k.manifest.cluster, [2, 1, 1]);
    let ptx = &k.ptx;
    assert!(
        ptx.contains(".reqnctapercluster 2, 1, 1"),
        "cluster shape in the PTX"
    );
    assert!(ptx.contains(concat!(
        "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes",
        ".multicast::cluster::all.b128"
    )));
    assert_clc_sequence(ptx, "sm_100a cluster 2");
    assert!(
        ptx.contains("mapa.shared::cluster")
            && ptx.contains("mbarrier.arrive.release.cluster.shared::cluster.b64"),
        "readers release the slot on rank 0's barrier"
    );
    // `barrier.cluster.arrive` releases and `barrier.cluster.wait` acquires by default.
    let tail = &ptx[ptx
        .rfind("barrier.cluster.arrive")
        .expect("a cluster barrier")..];
    assert!(
        tail.starts_with("barrier.cluster.arrive;")
            && tail.contains("barrier.cluster.wait;")
            && tail.contains("ret;"),
        "the kernel ends with a (non-aligned) cluster barrier: {tail:.200}"
    );
    let dir = std::env::temp_dir().join(format!("tilec-ptxas-{}-clc-sm100a", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("k.ptx"), ptx).unwrap();
    let out = Command::new(nv_tool("ptxas", "PTXAS"))
        .args(["-arch=sm_100a", "-v"])
        .arg(dir.join("k.ptx"))
        .arg("-o")
        .arg(dir.join("k.cubin"))
        .output()
        .unwrap();
    let log =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ptxas sm_100a:\n{log}");
    assert_clean(&log, "gemm_bf16 sm_100a cluster 2");
    // The multicast form on plain sm_100: refused with the options, before any IR is read
    // (tile-opt's path, the verifier's error, is tests/lit/lowering/clc_ptx.tile's).
    let mut o = Options::new(Target::Sm100);
    o.cluster = ClusterShape::x(2);
    match compile(
        Input::Text {
            source: &src,
            file: "gemm_bf16.tile",
        },
        &o,
    ) {
        Err(Error::Options(e)) => assert_eq!(
            e.to_string(),
            "option 'cluster': 2 uses the multicast try_cancel, which needs sm_100a; the \
             target is sm_100"
        ),
        other => panic!("expected an options error, got {:?}", other.map(|k| k.name)),
    }
}

/// The TMA-store epilogue (`epilogue = "tma"`) on the default sm_90a kernel (persistent,
/// 4 stages) and on the one-tile-per-CTA kernel: stmatrix into the staging slots, a bulk
/// tensor store per 64x64 box, bulk waits; clean ptxas, and the SASS has UTMASTG
/// (the TMA store) and STSM (stmatrix), no STG.
#[test]
fn gemm_sm90a_tma_epilogue() {
    for (schedule, file) in [
        (Schedule::Static, "gemm_bf16.tile"),
        (Schedule::None, "gemm_bias_relu.tile"),
    ] {
        let mut o = Options::new(Target::Sm90a);
        o.epilogue = EpilogueStore::Tma;
        o.schedule = schedule;
        let what = format!("{file} sm_90a epilogue=tma schedule={schedule}");
        let (ptx, log, cubin) = build_with(file, &o, &format!("-tma-{schedule}"));
        assert_eq!(
            ptx.matches("stmatrix.sync.aligned.m8n8.x4.shared.b16")
                .count(),
            16,
            "{what}: stmatrix count"
        );
        assert_eq!(
            ptx.matches("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group")
                .count(),
            4,
            "{what}: TMA stores"
        );
        assert_eq!(
            ptx.matches("cp.async.bulk.commit_group").count(),
            4,
            "{what}: bulk commits"
        );
        assert!(
            ptx.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .contains("cp.async.bulk.wait_group.read 0;"),
            "{what}: exit drain"
        );
        assert!(
            !ptx.contains("st.global"),
            "{what}: no register-direct store left"
        );
        assert_clean(&log, &what);
        let sass = disassemble(&cubin);
        assert_eq!(sass.matches("UTMASTG").count(), 4, "{what}: UTMASTG count");
        assert_eq!(
            sass.matches("STSM.16.M88.4").count(),
            16,
            "{what}: STSM count"
        );
        assert!(!sass.contains(" STG."), "{what}: STG in SASS");
        assert_eq!(
            sass.matches("HGMMA.64x256x16.F32.BF16").count(),
            8,
            "{what}: HGMMA count"
        );
    }
    // The staging ring does not fit beside 5 stages: an error naming the limit.
    let mut o = Options::new(Target::Sm90a);
    o.epilogue = EpilogueStore::Tma;
    o.stages = 5;
    match compile(
        Input::Text {
            source: &example("gemm_bf16.tile"),
            file: "t.tile",
        },
        &o,
    ) {
        Err(Error::Diagnostics(d)) => {
            let s = d.to_string();
            assert!(
                s.contains("32768 for the epilogue=tma staging ring")
                    && s.contains("use at most 4 stages"),
                "{s}"
            );
        }
        other => panic!(
            "expected a shared-memory error, got {:?}",
            other.map(|k| k.name)
        ),
    }
}

#[test]
fn gemm_bias_relu_fused_epilogue() {
    for t in [Target::Sm90a, Target::Sm90] {
        let (ptx, log, _) = build("gemm_bias_relu.tile", t);
        assert!(
            ptx.contains("max.f32") || ptx.contains("max.NaN.f32") || ptx.contains("max.ftz.f32"),
            "{t}: no relu max in PTX"
        );
        assert!(
            ptx.contains("@p ld.global.f32"),
            "{t}: the bias is read with predicated loads"
        );
        // sm_90 (mma.sync, 168-register cap) spilled 364/1636 bytes here until the epilogue's
        // slow path became predicated stores (docs/performance.md, 2026-11-29 session 2).
        assert_clean(&log, &format!("gemm_bias_relu {t}"));
    }
}

/// Reductions in a GEMM epilogue, over the accumulator's layout: row sums (wgmma: in thread
/// and across the 4 lanes of a row; mma.sync: across the 4 warps of a row too, through
/// shared memory behind the consumers' named barrier) and column sums (wgmma: across the
/// 8 consumer warps), each added once per element by its owner thread.
#[test]
fn gemm_epilogue_reductions() {
    let (ptx, log, _) = build("gemm_rowsum.tile", Target::Sm90a);
    assert_clean(&log, "gemm_rowsum sm_90a");
    assert_eq!(
        ptx.matches("shfl.sync.bfly.b32").count(),
        4,
        "2 rows x 2 lane bits"
    );
    assert_eq!(
        ptx.matches("@p red.global.add.f32").count(),
        2,
        "2 rows per thread"
    );
    assert!(
        !ptx.contains("bar.sync \t3"),
        "row sums need no shared memory on sm_90a"
    );
    let (ptx, log, _) = build("gemm_rowsum.tile", Target::Sm90);
    assert_clean(&log, "gemm_rowsum sm_90");
    assert_eq!(
        ptx.matches("shfl.sync.bfly.b32").count(),
        16,
        "8 rows x 2 lane bits"
    );
    assert_eq!(
        ptx.matches("@p red.global.add.f32").count(),
        8,
        "8 rows per thread"
    );
    assert!(
        ptx.contains("bar.sync \t3, 256;"),
        "mma.sync: after barriers 1 and 2"
    );
    let (_, log, _) = build("gemm_rowsum.tile", Target::Sm100);
    assert!(
        !log.contains("warning"),
        "gemm_rowsum sm_100: ptxas warned:\n{log}"
    );
    let cols = example("gemm_rowsum.tile")
        .replace(
            "{dim = 1, kind = \"add\"} : tile<128x1xf32>",
            "{dim = 0, kind = \"max\"} : tile<1x256xf32>",
        )
        .replace(
            "tile.atomic_add %S, %row, %c0, %sums",
            "tile.store %S, %pid_m, %col, %sums",
        )
        .replace("  tile.store %C, %row, %col, %out\n", "");
    // At the 168-register cap of the 3 warpgroups, the 64 columns' exchange spills a few
    // bytes (8 at this commit; docs/performance.md, 2026-12-02): no error or warning.
    let (ptx, log, _) = build_source("colmax.tile", &cols, &Options::new(Target::Sm90a), "");
    assert_no_c75(&log, "column maxima sm_90a");
    assert!(
        !log.contains("warning"),
        "column maxima sm_90a: ptxas warned:\n{log}"
    );
    assert_eq!(
        ptx.matches("shfl.sync.bfly.b32").count(),
        3 * 64,
        "64 columns x 3 lane bits"
    );
    assert!(
        ptx.contains("bar.sync \t3, 256;"),
        "after the 2 warpgroups' barriers"
    );
}

/// A masked epilogue (`tile.iota`, `tile.cmpi`, `tile.select`): ReLU on the columns left of
/// N/2 only, so the accumulator and its ReLU are both live per register. The store's fast
/// and slow paths compute the same chain; without the slow path's opaque copies of the
/// accumulator, LLVM's MachineCSE hoisted both paths' chains above the branch and sm_90a
/// spilled 540 bytes.
#[test]
fn gemm_masked_epilogue() {
    let src = example("gemm_bf16.tile").replace(
        "  %out = tile.convert %acc : tile<128x256xbf16>\n",
        "  %cols = tile.iota {dim = 1} : tile<128x256xindex>
  %colt = tile.splat %col : tile<128x256xindex>
  %gc = tile.addi %cols, %colt : tile<128x256xindex>
  %c2 = tile.constant {value = 2} : index
  %half = tile.divi %N, %c2 : index
  %ht = tile.splat %half : tile<128x256xindex>
  %in = tile.cmpi %gc, %ht {predicate = \"slt\"} : tile<128x256xi1>
  %r = tile.relu %acc : tile<128x256xf32>
  %y = tile.select %in, %r, %acc : tile<128x256xf32>
  %out = tile.convert %y : tile<128x256xbf16>\n",
    );
    assert!(src.contains("tile.select"));
    for t in [Target::Sm90a, Target::Sm90] {
        let (ptx, log, _) = build_source("masked.tile", &src, &Options::new(t), "");
        assert_clean(&log, &format!("masked epilogue {t}"));
        assert!(ptx.contains("max.f32"), "{t}: no ReLU");
    }
}

fn compile_err(src: &str, target: Target) -> String {
    match compile(
        Input::Text {
            source: src,
            file: "t.tile",
        },
        &Options::new(target),
    ) {
        Err(Error::Diagnostics(d)) => d.to_string(),
        Err(e) => panic!("expected diagnostics before MLIR, got {e}"),
        Ok(_) => panic!("expected an error"),
    }
}

#[test]
fn limits_are_errors_before_mlir() {
    let base = example("gemm_bf16.tile");
    // f32 inputs: no IEEE f32 MMA; tf32 only when the dot asks for it, and then K-major
    // only (gemm_bf16's B is stored K×N).
    let f32_src = base
        .replace("bf16>", "f32>")
        .replace("tile<128x256xbf16>", "tile<128x256xf32>");
    let e = compile_err(&f32_src, Target::Sm90a);
    assert!(
        e.contains("'tile.dot' has no MMA instruction") && e.contains("{precision = \"tf32\"}"),
        "{e}"
    );
    let tf32_src = f32_src.replace(
        "%d = tile.dot %a, %b, %c :",
        "%d = tile.dot %a, %b, %c {precision = \"tf32\"} :",
    );
    let e = compile_err(&tf32_src, Target::Sm90a);
    assert!(
        e.contains("tf32 operands must both be K-major") && e.contains("found A M×K and B K×N"),
        "{e}"
    );
    assert!(e.contains("t.tile:"), "{e}");
    // 8 stages of 48 KiB do not fit 227 KiB.
    let mut o = Options::new(Target::Sm90a);
    o.stages = 8;
    match compile(
        Input::Text {
            source: &base,
            file: "t.tile",
        },
        &o,
    ) {
        Err(Error::Diagnostics(d)) => {
            let s = d.to_string();
            assert!(
                s.contains("over the 232448-byte limit per block on sm_90a")
                    && s.contains("use at most 4 stages"),
                "{s}"
            );
        }
        other => panic!(
            "expected a shared-memory error, got {:?}",
            other.map(|k| k.name)
        ),
    }
    // N = 200 with B stored K×N (200 ≡ 8 mod 16: no 32-byte swizzle span divides its rows).
    let n200 = base
        .replace("tile<128x256xf32>", "tile<128x200xf32>")
        .replace("tile<64x256xbf16>", "tile<64x200xbf16>")
        .replace("tile<128x256xbf16>", "tile<128x200xbf16>");
    let e = compile_err(&n200, Target::Sm90a);
    assert!(
        e.contains("of a B stored K×N must be a multiple of 16"),
        "{e}"
    );
}

/// tilec's LLVM pass pipeline (`LLVM_PIPELINE`) gives the PTX LLVM's own `default<O3>` gives,
/// byte for byte, for every example that compiles, on sm_90a (wgmma) and sm_100a (try_cancel,
/// packed f32): the pipeline only leaves out passes that change nothing in the writer's IR.
/// The exceptions are listed in [`DIFFERS_FROM_O3`]; for them, the PTX must still differ
/// (so the list stays true) by at most a few lines.
/// Examples whose PTX from `LLVM_PIPELINE` is not byte-identical to `default<O3>`'s, with
/// the most lines by which the two may differ in length. In the attention kernels'
/// pipelined key loop on sm_90a, `default<O3>` tests the exit with a compare of its own where
/// tilec's pipeline reuses the prefetch guard's (`kv + 64 < SKV`), and places one address
/// computation differently (measured 2026-12-06). No single pass of `default<O3>` that
/// `LLVM_PIPELINE` leaves out explains it (each was added back, and each removed from
/// `default<O3>`, on 2026-12-04). The early SimplifyCFG and the first
/// CorrelatedValuePropagation run, added on 2026-12-07, made every other example identical
/// (the mma.sync GEMMs' copies by the consumers' thread 0, the split-K clamps, the grouped
/// GEMMs' trip counts, softmax_online's loop entry). Since its loop's slow path became
/// predicated asm (2026-12-07), softmax_online differs again on every target: tilec's
/// pipeline computes one `and.pred` of the slow path's bounds earlier than `default<O3>`,
/// next to the compares it combines (12 lines differ; the same count). Since code generation
/// runs at `CodeGenOptLevel::Default` (2026-12-08; EarlyCSE where `Aggressive` ran GVN),
/// gemm_splitk_last_slice on sm_90a is 9 lines shorter from tilec's pipeline: its IR and
/// `default<O3>`'s give the same PTX at `Aggressive` (`llc -O3`), and at `Default` EarlyCSE
/// merges more in tilec's (7 instructions fewer). Since a reduction's partials are read from
/// shared memory as vectors (2026-12-08), col_sums and col_sums_split on sm_100a read them in
/// another order than from `default<O3>`, whose SLP vectorizer pairs their adds otherwise
/// (the same instructions, reordered).
const DIFFERS_FROM_O3: [(&str, Target, usize); 9] = [
    ("attention_fwd.tile", Target::Sm90a, 6),
    ("attention_fwd_causal.tile", Target::Sm90a, 6),
    ("col_sums.tile", Target::Sm100a, 0),
    ("col_sums_split.tile", Target::Sm100a, 0),
    ("gemm_splitk_last_slice.tile", Target::Sm90a, 10),
    ("softmax_online.tile", Target::Sm90a, 6),
    ("softmax_online.tile", Target::Sm90, 6),
    ("softmax_online.tile", Target::Sm100, 6),
    ("softmax_online.tile", Target::Sm100a, 6),
];

#[test]
fn llvm_pipeline_matches_default_o3() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".tile"))
        .collect();
    names.sort();
    let mut compared = 0;
    for target in [Target::Sm90a, Target::Sm100a] {
        for name in &names {
            let src = example(name);
            let ours = Options::new(target);
            let Ok(k) = compile(
                Input::Text {
                    source: &src,
                    file: name,
                },
                &ours,
            ) else {
                continue; // an example the back end refuses (checked elsewhere)
            };
            let llvm = Options::new(target).with_llvm_passes("default<O3>");
            let o3 = compile(
                Input::Text {
                    source: &src,
                    file: name,
                },
                &llvm,
            )
            .unwrap_or_else(|e| panic!("{name} for {target} with default<O3>: {e}"));
            let listed = DIFFERS_FROM_O3
                .iter()
                .find(|(n, t, _)| *n == name.as_str() && *t == target);
            if let Some(&(_, _, most)) = listed {
                let (a, b): (Vec<&str>, Vec<&str>) =
                    (k.ptx.lines().collect(), o3.ptx.lines().collect());
                let extra = b.len().abs_diff(a.len());
                assert!(
                    k.ptx != o3.ptx && extra <= most,
                    "{name} for {target}: listed in DIFFERS_FROM_O3, but the PTX is {} \
                     ({} lines against default<O3>'s {})",
                    if k.ptx == o3.ptx {
                        "the same"
                    } else {
                        "further off"
                    },
                    a.len(),
                    b.len()
                );
            } else {
                assert!(
                    k.ptx == o3.ptx,
                    "{name} for {target}: the PTX differs from default<O3>'s"
                );
            }
            compared += 1;
        }
    }
    assert!(compared >= 30, "only {compared} examples compared");
}
