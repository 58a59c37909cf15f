//! Binding arguments to the manifests tile-compile writes (tests/*.json: vadd, the bf16
//! GEMM for sm_90a with its direct and TMA-store epilogues, and the 64×64 split-K GEMM): the
//! values a launch gets, and a clear error for each kind of wrong argument.

use tilec_manifest::{Dtype, Manifest, Swizzle};
use tilec_runtime::{bind, Arg, BindError, Device, ParamValue, TensorArg};

fn manifest(name: &str) -> Manifest {
    let path = format!("{}/tests/{name}.json", env!("CARGO_MANIFEST_DIR"));
    Manifest::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn t(ptr: u64, dtype: Dtype, shape: &[u64]) -> Arg {
    Arg::Tensor(TensorArg::contiguous(ptr, dtype, shape, Device::Cuda(0)))
}

/// A, B, C for C[M,N] = A[M,K] · B[K,N] in bf16, and the sizes.
fn gemm_args(m: u64, n: u64, k: u64) -> Vec<(&'static str, Arg)> {
    let int = |x: u64| Arg::Int(x as i64);
    vec![
        ("A", t(0x10_0000, Dtype::Bf16, &[m, k])),
        ("B", t(0x20_0000, Dtype::Bf16, &[k, n])),
        ("C", t(0x30_0000, Dtype::Bf16, &[m, n])),
        ("M", int(m)),
        ("N", int(n)),
        ("K", int(k)),
    ]
}

fn err(m: &Manifest, args: &[(&str, Arg)]) -> BindError {
    bind(m, args, 0, 132).expect_err("bound")
}

#[test]
fn a_gemm_binds_to_its_tensor_maps_pointer_and_scalars() {
    let m = manifest("gemm_bf16");
    let b = bind(&m, &gemm_args(4096, 2048, 1024), 0, 132).unwrap();
    // Static persistent schedule: min(tiles, SMs) CTAs of 3 warpgroups.
    assert_eq!(b.config.grid, [132, 1, 1]);
    assert_eq!(b.config.block, [384, 1, 1]);
    assert_eq!(b.config.dynamic_shared_memory_bytes, 197_632);
    let ParamValue::TensorMap(a) = &b.params[0] else {
        panic!("{:?}", b.params[0])
    };
    // Innermost first: K then M; the row pitch in bytes; the box reversed.
    assert_eq!(a.global_dims, [1024, 4096]);
    assert_eq!(a.global_strides, [2048]);
    assert_eq!(a.box_dims, [64, 128]);
    assert_eq!(a.swizzle, Swizzle::B128);
    assert_eq!(a.global_address, 0x10_0000);
    // C by pointer: address, sizes, strides (elements), 8 bytes each.
    let ParamValue::Bytes { bytes, align, .. } = &b.params[2] else {
        panic!("{:?}", b.params[2])
    };
    let words: Vec<u64> = bytes
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!((words, *align), (vec![0x30_0000, 4096, 2048, 2048, 1], 8));
    let ParamValue::Bytes { bytes, .. } = &b.params[5] else {
        panic!()
    };
    assert_eq!(bytes, &1024i64.to_le_bytes());
}

#[test]
fn wrong_arguments_are_clear_errors() {
    let m = manifest("gemm_bf16");
    let with = |name: &str, a: Arg| {
        let mut v = gemm_args(256, 512, 128);
        v.iter_mut().find(|(n, _)| *n == name).unwrap().1 = a;
        v
    };
    let c_on = |d| {
        Arg::Tensor(TensorArg::contiguous(
            0x30_0000,
            Dtype::Bf16,
            &[256, 512],
            d,
        ))
    };
    let cases: Vec<(Vec<(&str, Arg)>, &str)> = vec![
        (
            gemm_args(256, 512, 128)[1..].to_vec(),
            "kernel 'gemm_bf16' needs argument 'A', which was not given",
        ),
        (
            [gemm_args(256, 512, 128), vec![("bias", Arg::Int(0))]].concat(),
            "'bias' is not a parameter of kernel 'gemm_bf16' (its parameters: A, B, C, M, N, K)",
        ),
        (
            [gemm_args(256, 512, 128), vec![("M", Arg::Int(1))]].concat(),
            "argument 'M' is given twice",
        ),
        (
            with("A", t(0x10_0000, Dtype::F16, &[256, 128])),
            "'A' takes a tensor of bf16, found f16",
        ),
        (
            with("B", t(0x20_0000, Dtype::Bf16, &[1, 128, 512])),
            "'B' takes a tensor of rank 2, found shape [1, 128, 512] and strides [65536, 512, 1]",
        ),
        (
            with("C", c_on(Device::Host)),
            "'C' is in host memory; the kernel runs on cuda:0",
        ),
        (
            with("C", c_on(Device::Cuda(1))),
            "'C' is in cuda:1; the kernel runs on cuda:0",
        ),
        (
            with("K", Arg::Float(128.0)),
            "'K' takes an integer, found a float",
        ),
        (
            with("A", Arg::Int(7)),
            "'A' takes a tensor, found an integer",
        ),
        (
            with("A", t(0x10_0008, Dtype::Bf16, &[256, 128])),
            "'A': TMA needs a 16-byte aligned address, found 0x100008",
        ),
        (
            with("C", t(0x30_0001, Dtype::Bf16, &[256, 512])),
            "'C': address 0x300001 is not aligned to its 2-byte elements",
        ),
    ];
    for (args, want) in cases {
        assert_eq!(err(&m, &args).to_string(), want);
    }
    // A transposed view: TMA reads rows contiguously.
    let mut a = TensorArg::contiguous(0x10_0000, Dtype::Bf16, &[256, 128], Device::Cuda(0));
    a.strides = vec![1, 256];
    let e = err(&m, &with("A", Arg::Tensor(a)));
    assert!(
        e.to_string()
            .contains("its stride must be 1, found [1, 256]"),
        "{e}"
    );
    // K = 100: rows of 200 bytes.
    let e = err(&m, &gemm_args(256, 512, 100));
    assert_eq!(
        e.to_string(),
        "'A': TMA needs each row pitch to be a multiple of 16 bytes below 2^40: dimension 0 \
         has a stride of 100 elements (200 bytes)"
    );
    // K = 0: a tensor map cannot be encoded.
    let e = err(&m, &gemm_args(256, 512, 0));
    assert!(
        e.to_string().starts_with("'A': dimension 1 has 0 elements"),
        "{e}"
    );
    // A grid from a size out of range.
    let e = err(&m, &with("M", Arg::Int(-5)));
    assert!(matches!(e, BindError::Launch(_)), "{e}");
}

#[test]
fn a_tma_store_needs_whole_16_byte_rows() {
    let m = manifest("gemm_bf16_tma");
    assert!(bind(&m, &gemm_args(256, 512, 128), 0, 132).is_ok());
    // N = 260: rows of 520 bytes; pitch 520 is not a multiple of 16 either, so use a
    // padded C: 260 columns in rows of 264.
    let mut args = gemm_args(256, 260, 128);
    let mut c = TensorArg::contiguous(0x30_0000, Dtype::Bf16, &[256, 260], Device::Cuda(0));
    c.strides = vec![264, 1];
    args[2].1 = Arg::Tensor(c);
    args[1].1 = t(0x20_0000, Dtype::Bf16, &[128, 264]);
    let e = err(&m, &args);
    assert!(e
        .to_string()
        .starts_with("'C': a TMA store writes whole 16-byte chunks: rows of 260"));
}

#[test]
fn scalars_are_checked_against_their_type() {
    let m = manifest("vadd");
    let x = |p| t(p, Dtype::F32, &[10]);
    let args = |n: Arg| {
        vec![
            ("X", x(0x1000)),
            ("Y", x(0x2000)),
            ("Z", x(0x3000)),
            ("N", n),
        ]
    };
    let b = bind(&m, &args(Arg::Int(10)), 0, 132).unwrap();
    assert_eq!(b.config.grid, [1, 1, 1]);
    assert_eq!(
        err(&m, &args(Arg::Float(1.5))).to_string(),
        "'N' takes an integer, found a float"
    );
    // ceildiv(N, 1024) with N = 0 is a grid of 0 CTAs.
    assert!(matches!(err(&m, &args(Arg::Int(0))), BindError::Launch(_)));
}

#[test]
fn null_and_wrapping_tensors_are_refused() {
    let m = manifest("gemm_bf16");
    let with_c = |ptr: u64, shape: &[u64]| {
        let mut v = gemm_args(256, 512, 128);
        v[2].1 = t(ptr, Dtype::Bf16, shape);
        v
    };
    let e = err(&m, &with_c(0, &[256, 512])).to_string();
    assert_eq!(e, "'C': the address is null");
    let e = err(&m, &with_c(u64::MAX - 0xff, &[256, 512])).to_string();
    assert!(
        e.contains("past the end of the 64-bit address space"),
        "{e}"
    );
    // An empty tensor has no extent: a null address is fine.
    assert!(bind(&m, &with_c(0, &[0, 512]), 0, 132).is_ok());
}

/// A, B, the f32 workspace W, the sizes and S for the split-K GEMM (64×64 tiles).
fn split_args(m: u64, n: u64, k: u64, s: i64) -> Vec<(&'static str, Arg)> {
    let mut args = gemm_args(m, n, k);
    args.retain(|(name, _)| *name != "C");
    args.push(("W", t(0x40_0000, Dtype::F32, &[m, n])));
    args.push(("S", Arg::Int(s)));
    args
}

#[test]
fn a_split_k_launch_zeroes_its_workspace_and_finalizes_into_the_output() {
    let m = manifest("gemm_bf16_splitk");
    // Without the finalize's output: W zeroed as 1000 rows of 712 words, no finalize.
    let b = bind(&m, &split_args(1000, 712, 4096, 3), 0, 132).unwrap();
    // Persistent: min(tiles, SMs) CTAs, with 12 · 16 · 3 tiles (N, M, S).
    assert_eq!(b.config.grid, [132, 1, 1]);
    let work = b.split_k.expect("split-K work");
    assert_eq!(work.zero.len(), 1);
    let z = &work.zero[0];
    assert_eq!(
        (z.param.as_str(), z.ptr, z.pitch_bytes, z.width, z.height),
        ("W", 0x40_0000, 712 * 4, 712, 1000)
    );
    assert_eq!(work.finalize, None);
    // With C (the manifest's finalize.to), rounded from W after the kernel.
    let mut args = split_args(1000, 712, 4096, 3);
    args.push(("C", t(0x30_0000, Dtype::F16, &[1000, 712])));
    let work = bind(&m, &args, 0, 132).unwrap().split_k.unwrap();
    let (src, dst) = work.finalize.expect("finalize");
    assert_eq!(
        (src.ptr, dst.ptr, dst.dtype),
        (0x40_0000, 0x30_0000, Dtype::F16)
    );
    // A W with a row pitch: the memset takes the pitch.
    let mut args = split_args(100, 56, 64, 1);
    args[5] = (
        "W",
        Arg::Tensor(TensorArg {
            ptr: 0x40_0000,
            dtype: Dtype::F32,
            shape: vec![100, 56],
            strides: vec![64, 1],
            device: Device::Cuda(0),
        }),
    );
    let z = bind(&m, &args, 0, 132).unwrap().split_k.unwrap().zero[0].clone();
    assert_eq!((z.pitch_bytes, z.width, z.height), (256, 56, 100));
}

#[test]
fn split_k_arguments_that_cannot_work_are_refused() {
    let m = manifest("gemm_bf16_splitk");
    let with = |name: &'static str, a: Arg| {
        let mut args = split_args(128, 128, 256, 2);
        args.retain(|(n, _)| *n != name);
        args.push((name, a));
        err(&m, &args)
    };
    let msg = with("C", t(0x30_0000, Dtype::Bf16, &[128, 64])).to_string();
    assert_eq!(
        msg,
        "'C': the split-K finalize writes W's shape [128, 128] into it, found [128, 64]"
    );
    let msg = with("C", t(0x30_0000, Dtype::I32, &[128, 128])).to_string();
    assert_eq!(
        msg,
        "'C' is i32: the split-K finalize writes bf16, f16 or f32"
    );
    let msg = with("C", Arg::Int(3)).to_string();
    assert_eq!(msg, "'C' takes a tensor, found an integer");
    let column_major = Arg::Tensor(TensorArg {
        ptr: 0x40_0000,
        dtype: Dtype::F32,
        shape: vec![128, 128],
        strides: vec![1, 128],
        device: Device::Cuda(0),
    });
    let msg = with("W", column_major).to_string();
    assert_eq!(
        msg,
        "'W': a split-K workspace is zeroed as rows: its last stride must be 1, found 128"
    );
    // Another extra name is still unknown.
    let msg = with("D", t(0x30_0000, Dtype::Bf16, &[128, 128])).to_string();
    assert!(msg.starts_with("'D' is not a parameter of kernel"), "{msg}");
    // S is an ordinary scalar: missing, it is missing.
    let mut args = split_args(128, 128, 256, 2);
    args.retain(|(n, _)| *n != "S");
    assert_eq!(
        err(&m, &args).to_string(),
        "kernel 'gemm_bf16_splitk_64x64' needs argument 'S', which was not given"
    );
}

/// A, B, C, the S×M×N (one-step) or M×N (serial) workspace W, the flags F and S.
fn ordered_args(m: u64, n: u64, k: u64, s: i64, serial: bool) -> Vec<(&'static str, Arg)> {
    let mut args = gemm_args(m, n, k);
    let w: Vec<u64> = if serial {
        vec![m, n]
    } else {
        vec![s as u64, m, n]
    };
    args.push(("W", t(0x40_0000, Dtype::F32, &w)));
    let tiles = m.div_ceil(64) * n.div_ceil(64);
    args.push(("F", t(0x50_0000, Dtype::I32, &[tiles])));
    args.push(("S", Arg::Int(s)));
    args
}

#[test]
fn an_ordered_split_k_launch_zeroes_only_its_flags() {
    for (name, serial) in [("gemm_splitk", false), ("gemm_splitk_serial", true)] {
        let mut m = manifest(name);
        let sk = m.split_k.clone().expect("split_k");
        assert_eq!(sk.waits, serial, "{name}");
        // 2 x 4 tiles of 64 x 64, 8 slices: W is not zeroed, F is (8 words).
        let b = bind(&m, &ordered_args(100, 256, 4096, 8, serial), 0, 132).unwrap();
        let work = b.split_k.expect("split-K work");
        let zero: Vec<_> = work
            .zero
            .iter()
            .map(|z| (z.param.as_str(), z.ptr, z.width, z.height))
            .collect();
        assert_eq!(zero, [("F", 0x50_0000, 8, 1)], "{name}");
        assert_eq!(work.finalize, None, "{name}");
        // Launched as a plain grid (not persistent): 8 tiles x 20 slices = 160 programs
        // on 132 SMs. The one-step reduction has no program that waits, so any S works;
        // the serial one would have a slice wait for one that may not be resident.
        m.persistent = None;
        let r = bind(&m, &ordered_args(100, 256, 4096, 20, serial), 0, 132);
        // clc launches the whole tile grid too.
        let mut clc = m.clone();
        clc.persistent = Some(tilec_manifest::Persistent::Clc { group_m: 8 });
        let rc = bind(&clc, &ordered_args(100, 256, 4096, 20, serial), 0, 132);
        assert_eq!(rc.is_err(), serial, "{name}: clc");
        if serial {
            let e = r.expect_err("refused").to_string();
            assert!(
                e.contains("160 programs on 132 SMs could wait for one that is not resident"),
                "{e}"
            );
        } else {
            assert_eq!(r.unwrap().config.grid, [4, 2, 20]);
        }
        // S = 1 never waits.
        assert!(bind(&m, &ordered_args(2000, 4096, 64, 1, serial), 0, 132).is_ok());
        // Too few flags (8 tiles, 7 flags): the flag ops do not check bounds.
        let mut args = ordered_args(100, 256, 4096, 8, serial);
        args.retain(|(n, _)| *n != "F");
        args.push(("F", t(0x50_0000, Dtype::I32, &[7])));
        let e = err(&m, &args).to_string();
        assert_eq!(
            e, "'F': holds 7 flags; the kernel uses one per output tile, 8",
            "{name}"
        );
    }
    // A one-step workspace with fewer partials than slices.
    let m = manifest("gemm_splitk");
    let mut args = ordered_args(100, 256, 4096, 8, false);
    args.retain(|(n, _)| *n != "W");
    args.push(("W", t(0x40_0000, Dtype::F32, &[4, 100, 256])));
    let e = err(&m, &args).to_string();
    assert_eq!(
        e,
        "'W': holds 4 partials; the kernel writes one per K slice, S = 8"
    );
}
