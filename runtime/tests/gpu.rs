//! Launches through `tilec-runtime` on a GPU, checked against host references.
//!
//! The kernels come from `tile-compile` (the runtime has no compiler):
//! `tools/gpu/build_runtime.sh` writes them with the test binary, and
//! `TILEC_RUNTIME_KERNELS=DIR` points this test at them. Without that variable, or without
//! a CUDA driver, every trial is reported as ignored (never as passed).
//!
//! The trials: vadd (pointer parameters and a scalar); a loop's trip count at bounds
//! near the ends of `i64` (`for_bounds`); the persistent bf16 GEMM with its
//! TMA-store epilogue (tensor maps, 225 KiB of dynamic shared memory) and with its direct
//! epilogue for sm_90 (PTX the driver's JIT compiles) on ragged shapes; the GEMM from a
//! cubin when the directory has one; a launch on a created stream captured into a CUDA
//! graph and replayed; the split-K GEMM with its workspace zeroed and finalized, launched
//! and replayed from a graph twice; the ordered split-K GEMMs, the same bits on every
//! launch and their flags left zero; launches in clusters of 2 and 16; and, one trial each,
//! the errors a launch gives for a target the device lacks, corrupt PTX, a malformed cubin,
//! a tensor on another device, and a device that does not exist.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cudarc::driver::sys;
use libtest_mimic::{Arguments, Failed, Trial};
use tilec_manifest::{Dtype, Manifest};
use tilec_runtime::{
    Arg, BindError, Context, Device, Image, Kernel, Prepared, RuntimeError, Stream, TensorArg,
};

type Result<T> = std::result::Result<T, Failed>;

fn ok(call: &str, r: sys::CUresult) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("{call}: {r:?}").into())
    }
}

/// Device memory, freed on drop (in the context it was allocated in).
struct Buf {
    ctx: Arc<Context>,
    ptr: u64,
    bytes: usize,
}

impl Buf {
    fn new(ctx: &Arc<Context>, bytes: usize) -> Result<Buf> {
        let mut ptr = 0;
        let r = ctx.with(|| {
            // SAFETY: the driver writes one pointer.
            Ok(unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes.max(1)) })
        });
        ok("cuMemAlloc", r.map_err(|e| e.to_string())?)?;
        Ok(Buf {
            ctx: ctx.clone(),
            ptr,
            bytes,
        })
    }

    fn from<T: Copy>(ctx: &Arc<Context>, host: &[T]) -> Result<Buf> {
        let b = Buf::new(ctx, std::mem::size_of_val(host))?;
        b.write(host)?;
        Ok(b)
    }

    fn write<T: Copy>(&self, host: &[T]) -> Result<()> {
        assert_eq!(std::mem::size_of_val(host), self.bytes);
        let r = self.ctx.with(|| {
            // SAFETY: `bytes` bytes of host memory into an allocation of that size.
            Ok(unsafe { sys::cuMemcpyHtoD_v2(self.ptr, host.as_ptr().cast(), self.bytes) })
        });
        ok("cuMemcpyHtoD", r.map_err(|e| e.to_string())?)
    }

    fn read<T: Copy + Default>(&self) -> Result<Vec<T>> {
        let mut host = vec![T::default(); self.bytes / std::mem::size_of::<T>()];
        let r = self.ctx.with(|| {
            // SAFETY: as `write`, the other way; synchronous on the legacy stream.
            Ok(unsafe { sys::cuMemcpyDtoH_v2(host.as_mut_ptr().cast(), self.ptr, self.bytes) })
        });
        ok("cuMemcpyDtoH", r.map_err(|e| e.to_string())?)?;
        Ok(host)
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        let _ = self.ctx.with(|| {
            // SAFETY: allocated by `new`, freed once.
            unsafe { sys::cuMemFree_v2(self.ptr) };
            Ok(())
        });
    }
}

fn sync(ctx: &Context) -> Result<()> {
    let r = ctx.with(|| {
        // SAFETY: no preconditions.
        Ok(unsafe { sys::cuCtxSynchronize() })
    });
    ok("cuCtxSynchronize", r.map_err(|e| e.to_string())?)
}

/// A small xorshift generator: the inputs are pseudo-random, the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

fn bf16(x: f32) -> u16 {
    half::bf16::from_f32(x).to_bits()
}

fn from_bf16(b: u16) -> f32 {
    half::bf16::from_bits(b).to_f32()
}

fn load(ctx: &Arc<Context>, dir: &Path, sub: &str, stem: &str) -> Result<Kernel> {
    let base = dir.join(sub);
    let m = std::fs::read_to_string(base.join(format!("{stem}.json")))?;
    let m = Manifest::from_json(&m).map_err(|e| e.to_string())?;
    let ptx = std::fs::read_to_string(base.join(&m.ptx_file))?;
    Kernel::load(ctx, m, Image::Ptx(&ptx)).map_err(|e| e.to_string().into())
}

fn tensor(b: &Buf, dtype: Dtype, shape: &[u64], ordinal: u32) -> Arg {
    Arg::Tensor(TensorArg::contiguous(
        b.ptr,
        dtype,
        shape,
        Device::Cuda(ordinal),
    ))
}

fn vadd(ctx: &Arc<Context>, dir: &Path) -> Result<()> {
    let k = load(ctx, dir, "vadd", "vadd")?;
    let n = 5000usize;
    let mut rng = Rng(7);
    let x: Vec<f32> = (0..n).map(|_| rng.next()).collect();
    let y: Vec<f32> = (0..n).map(|_| rng.next()).collect();
    let (bx, by) = (Buf::from(ctx, &x)?, Buf::from(ctx, &y)?);
    let bz = Buf::from(ctx, &vec![f32::NAN; n])?;
    let o = ctx.ordinal();
    let args = [
        ("X", tensor(&bx, Dtype::F32, &[n as u64], o)),
        ("Y", tensor(&by, Dtype::F32, &[n as u64], o)),
        ("Z", tensor(&bz, Dtype::F32, &[n as u64], o)),
        ("N", Arg::Int(n as i64)),
    ];
    // SAFETY: the buffers hold the shapes given and outlive the synchronization below.
    unsafe { k.launch(&args, Stream(0)) }.map_err(|e| e.to_string())?;
    sync(ctx)?;
    let z: Vec<f32> = bz.read()?;
    for i in 0..n {
        if z[i] != x[i] + y[i] {
            return Err(format!("z[{i}] = {}, want {}", z[i], x[i] + y[i]).into());
        }
    }
    // X as every other element of a 2N buffer: the stride reaches the kernel.
    let wide: Vec<f32> = (0..2 * n)
        .map(|i| if i % 2 == 0 { x[i / 2] } else { 1e9 })
        .collect();
    let bw = Buf::from(ctx, &wide)?;
    bz.write(&vec![f32::NAN; n])?;
    let mut args = args;
    args[0].1 = Arg::Tensor(TensorArg {
        ptr: bw.ptr,
        dtype: Dtype::F32,
        shape: vec![n as u64],
        strides: vec![2],
        device: Device::Cuda(o),
    });
    // SAFETY: as above.
    unsafe { k.launch(&args, Stream(0)) }.map_err(|e| e.to_string())?;
    sync(ctx)?;
    let z2: Vec<f32> = bz.read()?;
    if z2 != z {
        return Err("a strided X gave another sum than a contiguous one".into());
    }
    Ok(())
}

/// The trips of `tile.for %lb to %ub step %step` as the interpreter counts them: while
/// `iv < ub`, stopping where `iv + step` overflows.
fn trips(lb: i64, ub: i64, step: i64) -> i32 {
    let (mut iv, mut n) = (lb, 0);
    while iv < ub {
        n += 1;
        match iv.checked_add(step) {
            Some(next) => iv = next,
            None => break,
        }
    }
    n
}

/// `tests/lit/lowering/for_bounds.tile`'s `count` (a loop with runtime bounds and step)
/// counts its trips as the interpreter does, at bounds near `i64::MAX` and `i64::MIN`
/// where a wrapping increment would go on.
fn for_bounds(ctx: &Arc<Context>, dir: &Path) -> Result<()> {
    let k = load(ctx, dir, "for_bounds", "count")?;
    let out = Buf::from(ctx, &[-1i32])?;
    let (max, min) = (i64::MAX, i64::MIN);
    let cases = [
        (0, 10, 3),
        (5, 5, 1),
        (7, 3, 1),
        (-10, 10, 7),
        (max - 5, max, 4),
        (max - 1, max, 1),
        (max - 10, max, max),
        (min, min + 3, 1),
        (min, min + 100, 40),
    ];
    for (lb, ub, step) in cases {
        out.write(&[-1i32])?;
        let args = [
            ("out", tensor(&out, Dtype::I32, &[1], ctx.ordinal())),
            ("lb", Arg::Int(lb)),
            ("ub", Arg::Int(ub)),
            ("by", Arg::Int(step)),
        ];
        // SAFETY: `out` holds one i32 and outlives the synchronization below.
        unsafe { k.launch(&args, Stream(0)) }.map_err(|e| e.to_string())?;
        sync(ctx)?;
        let got = out.read::<i32>()?[0];
        let want = trips(lb, ub, step);
        if got != want {
            return Err(format!("for {lb} to {ub} step {step}: {got} trips, want {want}").into());
        }
    }
    Ok(())
}

/// A, B (bf16, row-major, [M,K] and [K,N]), and C = A·B in f32 from the rounded inputs.
struct Gemm {
    m: usize,
    n: usize,
    k: usize,
    a: Vec<u16>,
    b: Vec<u16>,
    want: Vec<f32>,
}

impl Gemm {
    fn new(m: usize, n: usize, k: usize) -> Gemm {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let a: Vec<u16> = (0..m * k).map(|_| bf16(rng.next())).collect();
        let b: Vec<u16> = (0..k * n).map(|_| bf16(rng.next())).collect();
        let af: Vec<f32> = a.iter().map(|&v| from_bf16(v)).collect();
        let bf: Vec<f32> = b.iter().map(|&v| from_bf16(v)).collect();
        let mut want = vec![0f32; m * n];
        for i in 0..m {
            for p in 0..k {
                let x = af[i * k + p];
                let row = &bf[p * n..(p + 1) * n];
                for (w, y) in want[i * n..(i + 1) * n].iter_mut().zip(row) {
                    *w += x * y;
                }
            }
        }
        Gemm {
            m,
            n,
            k,
            a,
            b,
            want,
        }
    }

    fn args(&self, a: &Buf, b: &Buf, c: &Buf, o: u32) -> Vec<(&'static str, Arg)> {
        let (m, n, k) = (self.m as u64, self.n as u64, self.k as u64);
        vec![
            ("A", tensor(a, Dtype::Bf16, &[m, k], o)),
            ("B", tensor(b, Dtype::Bf16, &[k, n], o)),
            ("C", tensor(c, Dtype::Bf16, &[m, n], o)),
            ("M", Arg::Int(m as i64)),
            ("N", Arg::Int(n as i64)),
            ("K", Arg::Int(k as i64)),
        ]
    }

    /// Every element within bf16's rounding of the f32 reference (plus the f32
    /// accumulation's order), and none NaN (C starts poisoned).
    fn check(&self, c: &[u16]) -> Result<()> {
        let mut worst = 0f32;
        for (i, (&g, &w)) in c.iter().zip(&self.want).enumerate() {
            let g = from_bf16(g);
            let err = (g - w).abs();
            if err.is_nan() || err > 1e-2 * w.abs().max(1.0) {
                let (r, col) = (i / self.n, i % self.n);
                return Err(format!("C[{r},{col}] = {g}, want {w}").into());
            }
            worst = worst.max(err);
        }
        println!(
            "    {}x{}x{}: largest error {worst:.4}",
            self.m, self.n, self.k
        );
        Ok(())
    }
}

fn gemm(ctx: &Arc<Context>, k: &Kernel, g: &Gemm) -> Result<()> {
    let (a, b) = (Buf::from(ctx, &g.a)?, Buf::from(ctx, &g.b)?);
    let c = Buf::from(ctx, &vec![0x7fc0u16; g.m * g.n])?;
    // SAFETY: the buffers hold the shapes given and outlive the synchronization below.
    unsafe { k.launch(&g.args(&a, &b, &c, ctx.ordinal()), Stream(0)) }
        .map_err(|e| e.to_string())?;
    sync(ctx)?;
    g.check(&c.read()?)
}

fn gemm_tma(ctx: &Arc<Context>, dir: &Path) -> Result<()> {
    let k = load(ctx, dir, "gemm_tma", "gemm_bf16")?;
    for (m, n, kk) in [(1000, 712, 312), (128, 256, 64), (77, 8, 1032)] {
        gemm(ctx, &k, &Gemm::new(m, n, kk))?;
    }
    Ok(())
}

fn gemm_sm90(ctx: &Arc<Context>, dir: &Path) -> Result<()> {
    let k = load(ctx, dir, "gemm_sm90", "gemm_bf16")?;
    for (m, n, kk) in [(999, 712, 296), (1, 8, 8)] {
        gemm(ctx, &k, &Gemm::new(m, n, kk))?;
    }
    Ok(())
}

fn gemm_cubin(ctx: &Arc<Context>, dir: &Path) -> Result<()> {
    let base = dir.join("gemm_cubin");
    let m = Manifest::from_json(&std::fs::read_to_string(base.join("gemm_bf16.json"))?)
        .map_err(|e| e.to_string())?;
    let file = m
        .cubin_file
        .clone()
        .ok_or("the manifest of --emit cubin names no cubin_file")?;
    let cubin = std::fs::read(base.join(file))?;
    let k = Kernel::load(ctx, m, Image::Cubin(&cubin)).map_err(|e| e.to_string())?;
    gemm(ctx, &k, &Gemm::new(1000, 712, 312))
}

/// The launch is captured into a graph on a stream of the caller's, and the graph replayed:
/// nothing in a launch synchronizes the host or allocates.
fn graph_capture(ctx: &Arc<Context>, dir: &Path) -> Result<()> {
    let k = load(ctx, dir, "gemm_tma", "gemm_bf16")?;
    let g = Gemm::new(512, 384, 256);
    let (a, b) = (Buf::from(ctx, &g.a)?, Buf::from(ctx, &g.b)?);
    let poison = vec![0x7fc0u16; g.m * g.n];
    let c = Buf::from(ctx, &poison)?;
    let prepared = k
        .prepare(&g.args(&a, &b, &c, ctx.ordinal()))
        .map_err(|e| e.to_string())?;
    replay(ctx, &k, &prepared, 1)?;
    g.check(&c.read()?)
}

/// Captures `prepared`'s launch into a graph on a created stream and replays it `times`,
/// then synchronizes.
fn replay(ctx: &Arc<Context>, k: &Kernel, prepared: &Prepared, times: usize) -> Result<()> {
    let r = ctx.with(|| {
        let mut stream = std::ptr::null_mut();
        let mut graph = std::ptr::null_mut();
        let mut exec = std::ptr::null_mut();
        // SAFETY: plain driver calls on handles made here; the buffers outlive the replay.
        unsafe {
            let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
            let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
            let steps = [
                sys::cuStreamCreate(&mut stream, flags),
                sys::cuStreamBeginCapture_v2(stream, mode),
            ];
            if let Some(r) = steps
                .into_iter()
                .find(|r| *r != sys::CUresult::CUDA_SUCCESS)
            {
                return Ok(Err(format!("stream or capture: {r:?}")));
            }
            let launched = k.launch_prepared(prepared, Stream(stream as u64));
            let end = sys::cuStreamEndCapture(stream, &mut graph);
            launched?;
            if end != sys::CUresult::CUDA_SUCCESS {
                return Ok(Err(format!("cuStreamEndCapture: {end:?}")));
            }
            let mut steps = vec![sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0)];
            for _ in 0..times {
                steps.push(sys::cuGraphLaunch(exec, stream));
            }
            steps.push(sys::cuStreamSynchronize(stream));
            if let Some(r) = steps
                .into_iter()
                .find(|r| *r != sys::CUresult::CUDA_SUCCESS)
            {
                return Ok(Err(format!("graph instantiate, launch or sync: {r:?}")));
            }
            sys::cuGraphExecDestroy(exec);
            sys::cuGraphDestroy(graph);
            sys::cuStreamDestroy_v2(stream);
        }
        Ok(Ok(()))
    });
    r.map_err(|e| e.to_string())??;
    Ok(())
}

/// The split-K GEMM (64×128 tiles, S slices of K): the launch zeroes the f32 workspace
/// (poisoned with NaN here), runs the kernel and rounds the workspace into C; launched
/// twice, and captured into a graph and replayed twice, the result is the same (the
/// workspace is zeroed every time, inside the graph too).
fn split_k(ctx: &Arc<Context>, dir: &Path) -> Result<()> {
    let k = load(ctx, dir, "splitk", "gemm_bf16_splitk_64x128")?;
    let o = ctx.ordinal();
    for (m, n, kk, s) in [(1000, 712, 1000, 3), (128, 128, 4096, 7), (77, 8, 64, 1)] {
        let g = Gemm::new(m, n, kk);
        let (a, b) = (Buf::from(ctx, &g.a)?, Buf::from(ctx, &g.b)?);
        let c = Buf::from(ctx, &vec![0x7fc0u16; m * n])?;
        let w = Buf::from(ctx, &vec![f32::NAN; m * n])?;
        let mut args = g.args(&a, &b, &c, o);
        args.push(("W", tensor(&w, Dtype::F32, &[m as u64, n as u64], o)));
        args.push(("S", Arg::Int(s)));
        let prepared = k.prepare(&args).map_err(|e| e.to_string())?;
        for _ in 0..2 {
            // SAFETY: the buffers hold the shapes given and outlive the synchronization.
            unsafe { k.launch_prepared(&prepared, Stream(0)) }.map_err(|e| e.to_string())?;
        }
        sync(ctx)?;
        g.check(&c.read()?)?;
        c.write(&vec![0x7fc0u16; m * n])?;
        w.write(&vec![f32::NAN; m * n])?;
        replay(ctx, &k, &prepared, 2)?;
        g.check(&c.read()?)?;
    }
    Ok(())
}

/// The ordered (deterministic, in-kernel) split-K GEMMs: `examples/gemm_splitk.tile` (the
/// last slice to arrive reduces; a plain grid) and `examples/gemm_splitk_last_slice.tile`
/// (the last slice waits and reduces; static persistent), 64×64 tiles. The launch zeroes
/// the flags (poisoned here) and leaves W alone (NaN here: the kernel writes it before it
/// reads it). Launched twice and replayed from a graph twice, C has the same bits every
/// time, and the flags end zero.
fn split_k_ordered(ctx: &Arc<Context>, dir: &Path) -> Result<()> {
    let o = ctx.ordinal();
    for (sub, stem) in [
        ("splitk_ordered", "gemm_splitk"),
        ("splitk_last_slice", "gemm_splitk_last_slice"),
    ] {
        let k = load(ctx, dir, sub, stem)?;
        for (m, n, kk, s) in [(100, 136, 1000, 3), (16, 256, 4096, 8), (77, 8, 64, 1)] {
            let g = Gemm::new(m, n, kk);
            let tiles = m.div_ceil(64) * n.div_ceil(64);
            let (a, b) = (Buf::from(ctx, &g.a)?, Buf::from(ctx, &g.b)?);
            let c = Buf::from(ctx, &vec![0x7fc0u16; m * n])?;
            let w = Buf::from(ctx, &vec![f32::NAN; s * m * n])?;
            let f = Buf::from(ctx, &vec![-1i32; tiles])?;
            let mut args = g.args(&a, &b, &c, o);
            let ws = [s as u64, m as u64, n as u64];
            args.push(("W", tensor(&w, Dtype::F32, &ws, o)));
            args.push(("F", tensor(&f, Dtype::I32, &[tiles as u64], o)));
            args.push(("S", Arg::Int(s as i64)));
            let prepared = k.prepare(&args).map_err(|e| e.to_string())?;
            // SAFETY: the buffers hold the shapes given and outlive the synchronization.
            unsafe { k.launch_prepared(&prepared, Stream(0)) }.map_err(|e| e.to_string())?;
            sync(ctx)?;
            let first: Vec<u16> = c.read()?;
            g.check(&first)?;
            // SAFETY: as above.
            unsafe { k.launch_prepared(&prepared, Stream(0)) }.map_err(|e| e.to_string())?;
            sync(ctx)?;
            replay(ctx, &k, &prepared, 2)?;
            if c.read::<u16>()? != first {
                return Err(
                    format!("{stem} {m}x{n}x{kk} S={s}: C changed between launches").into(),
                );
            }
            let flags: Vec<i32> = f.read()?;
            if flags.iter().any(|&x| x != 0) {
                return Err(format!("{stem}: flags left {flags:?}").into());
            }
        }
    }
    Ok(())
}

/// vadd launched in clusters through `cuLaunchKernelEx`'s cluster attribute: of 2 and of 16
/// (non-portable, past 8), each with a grid of whole clusters; a grid that is not is
/// refused before the driver.
fn cluster_launch(ctx: &Arc<Context>, dir: &Path) -> Result<()> {
    let base = dir.join("vadd");
    let text = std::fs::read_to_string(base.join("vadd.json"))?;
    let ptx = std::fs::read_to_string(base.join("vadd.ptx"))?;
    let o = ctx.ordinal();
    for cluster in [2u32, 16] {
        let mut m = Manifest::from_json(&text).map_err(|e| e.to_string())?;
        m.cluster = [cluster, 1, 1];
        let k = Kernel::load(ctx, m, Image::Ptx(&ptx)).map_err(|e| e.to_string())?;
        let n = 1024 * cluster as usize * 3;
        let mut rng = Rng(u64::from(cluster));
        let x: Vec<f32> = (0..n).map(|_| rng.next()).collect();
        let (bx, bz) = (Buf::from(ctx, &x)?, Buf::from(ctx, &vec![f32::NAN; n])?);
        let t = |b: &Buf| tensor(b, Dtype::F32, &[n as u64], o);
        let mut args = vec![
            ("X", t(&bx)),
            ("Y", t(&bx)),
            ("Z", t(&bz)),
            ("N", Arg::Int(n as i64)),
        ];
        let prepared = k.prepare(&args).map_err(|e| e.to_string())?;
        if prepared.bound().config.cluster != [cluster, 1, 1] {
            return Err(format!("{:?}", prepared.bound().config).into());
        }
        // SAFETY: the buffers hold the shapes given and outlive the synchronization.
        unsafe { k.launch_prepared(&prepared, Stream(0)) }.map_err(|e| e.to_string())?;
        sync(ctx)?;
        let z: Vec<f32> = bz.read()?;
        if let Some(i) = (0..n).find(|&i| z[i] != 2.0 * x[i]) {
            return Err(format!("cluster {cluster}: z[{i}] = {}", z[i]).into());
        }
        args[3].1 = Arg::Int(n as i64 - 1024);
        match k.prepare(&args) {
            Err(RuntimeError::Bind(BindError::Launch(e))) if e.to_string().contains("cluster") => {}
            other => return Err(format!("a grid of part clusters: {other:?}").into()),
        }
        println!("    cluster {cluster}: {} CTAs", n / 1024);
    }
    Ok(())
}

/// The TMA-store GEMM's manifest and PTX, for the error trials.
fn gemm_files(dir: &Path) -> Result<(Manifest, String)> {
    let base = dir.join("gemm_tma");
    let text = std::fs::read_to_string(base.join("gemm_bf16.json"))?;
    let ptx = std::fs::read_to_string(base.join("gemm_bf16.ptx"))?;
    Ok((Manifest::from_json(&text).map_err(|e| e.to_string())?, ptx))
}

fn error_target(ctx: &Arc<Context>, dir: &Path) -> Result<()> {
    let (mut m, ptx) = gemm_files(dir)?;
    m.target = "sm_100a".into();
    match Kernel::load(ctx, m, Image::Ptx(&ptx)) {
        Err(RuntimeError::Target { target, .. }) if target == "sm_100a" => Ok(()),
        other => Err(format!("an sm_100a kernel on this device: {other:?}").into()),
    }
}

fn error_corrupt_ptx(ctx: &Arc<Context>, dir: &Path) -> Result<()> {
    let (m, ptx) = gemm_files(dir)?;
    let corrupt = ptx.replace("wgmma.mma_async", "wgmma.mma_asink");
    match Kernel::load(ctx, m, Image::Ptx(&corrupt)) {
        Err(RuntimeError::Load { log, .. }) if log.contains("mma_asink") => Ok(()),
        other => Err(format!("corrupt PTX: {other:?}").into()),
    }
}

fn error_corrupt_cubin(ctx: &Arc<Context>, dir: &Path) -> Result<()> {
    let (m, _) = gemm_files(dir)?;
    match Kernel::load(ctx, m, Image::Cubin(b"\x7fELF not a cubin")) {
        Err(RuntimeError::Load { .. }) => Ok(()),
        other => Err(format!("a corrupt cubin: {other:?}").into()),
    }
}

fn error_device(ctx: &Arc<Context>, dir: &Path) -> Result<()> {
    let (m, ptx) = gemm_files(dir)?;
    let k = Kernel::load(ctx, m, Image::Ptx(&ptx)).map_err(|e| e.to_string())?;
    let g = Gemm::new(128, 256, 64);
    let (a, b, c) = (
        Buf::from(ctx, &g.a)?,
        Buf::from(ctx, &g.b)?,
        Buf::new(ctx, 1)?,
    );
    let mut args = g.args(&a, &b, &c, ctx.ordinal());
    if let Arg::Tensor(t) = &mut args[0].1 {
        t.device = Device::Cuda(ctx.ordinal() + 1);
    }
    // SAFETY: refused before any launch.
    match unsafe { k.launch(&args, Stream(0)) } {
        Err(RuntimeError::Bind(BindError::Device { .. })) => Ok(()),
        other => Err(format!("a tensor on another device: {other:?}").into()),
    }
}

fn error_no_device(_: &Arc<Context>, _: &Path) -> Result<()> {
    match Context::primary(4096) {
        Err(RuntimeError::NoDevice { ordinal: 4096, .. }) => Ok(()),
        other => Err(format!("device 4096: {other:?}").into()),
    }
}

type Case = fn(&Arc<Context>, &Path) -> Result<()>;

/// Trials that capture a CUDA graph hold this exclusively, the others shared: a capture may
/// not overlap another thread's `cuCtxSynchronize` (CUDA invalidates it), and on the H200's
/// driver (580.159.04) a PTX load that fails in the JIT while another thread captures
/// crashed inside libcuda (3 runs in 15 of the whole suite; none with either trial skipped).
static CAPTURE: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn main() {
    let args = Arguments::from_args();
    let dir = std::env::var_os("TILEC_RUNTIME_KERNELS").map(PathBuf::from);
    let ctx = match (&dir, tilec_runtime::driver_library()) {
        (Some(_), Ok(_)) => match Context::primary(0) {
            Ok(c) => {
                let (major, minor) = c.compute_capability();
                println!(
                    "device 0: {} (sm_{major}{minor}, {} SMs)",
                    c.name(),
                    c.sm_count()
                );
                Some(c)
            }
            Err(e) => {
                eprintln!("no device: {e}");
                None
            }
        },
        (None, _) => {
            eprintln!("TILEC_RUNTIME_KERNELS is not set: the GPU trials are ignored");
            None
        }
        (_, Err(e)) => {
            eprintln!("{e}: the GPU trials are ignored");
            None
        }
    };
    let captures = [
        "graph_capture_on_a_created_stream",
        "split_k_zeroes_and_finalizes",
        "split_k_ordered_is_deterministic",
    ];
    let cases: [(&str, Case); 14] = [
        ("vadd", vadd),
        ("for_bounds", for_bounds),
        ("gemm_bf16_tma_sm90a", gemm_tma),
        ("gemm_bf16_direct_sm90_jit", gemm_sm90),
        ("gemm_bf16_cubin", gemm_cubin),
        ("graph_capture_on_a_created_stream", graph_capture),
        ("split_k_zeroes_and_finalizes", split_k),
        ("split_k_ordered_is_deterministic", split_k_ordered),
        ("cluster_launch", cluster_launch),
        ("error_target", error_target),
        ("error_corrupt_ptx", error_corrupt_ptx),
        ("error_corrupt_cubin", error_corrupt_cubin),
        ("error_device", error_device),
        ("error_no_device", error_no_device),
    ];
    let trials = cases
        .into_iter()
        .map(|(name, f)| {
            let ctx = ctx.clone();
            let dir = dir.clone();
            let ignored = ctx.is_none();
            let exclusive = captures.contains(&name);
            Trial::test(name, move || match (ctx, dir) {
                (Some(c), Some(d)) => {
                    // A trial that failed while holding it leaves it poisoned; the others
                    // still run.
                    let _guard = if exclusive {
                        (
                            Some(CAPTURE.write().unwrap_or_else(|e| e.into_inner())),
                            None,
                        )
                    } else {
                        (
                            None,
                            Some(CAPTURE.read().unwrap_or_else(|e| e.into_inner())),
                        )
                    };
                    f(&c, &d)
                }
                _ => Err("no GPU".into()),
            })
            .with_ignored_flag(ignored)
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
