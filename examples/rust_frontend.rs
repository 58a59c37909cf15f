//! A tensor compiler's use of tilec from Rust, with no IR text: it builds a bf16 GEMM
//! (C = A · B, f32 accumulation) for a sweep of tile sizes and a row softmax with the typed
//! builder, asks which GEMM configurations the target lowers (`TargetInfo::check_gemm`,
//! then `tilec::check` on the built module, neither building MLIR), compiles the legal
//! ones on every core, and prints each kernel's launch configuration for a problem size.
//!
//! ```text
//! cargo run --release --example rust_frontend -- [M N K] [--target sm_90a|sm_90|sm_100|sm_100a]
//! ```
//!
//! M, N and K default to 4096; the target to sm_90a; the SM count for persistent grids
//! is the H200's 132.

use std::error::Error as StdError;
use std::io::Write;
use std::time::Instant;
use tilec::dialect::Type;
use tilec::dialect::{BuildResult, Builder, GemmTile, Module, ReduceKind, ScalarType::*, Target};
use tilec::lowering::manifest::LaunchConfig;
use tilec::{check, compile, Input, Options, TargetInfo};

/// SMs of an H200, for the persistent schedules' grids.
const SM_COUNT: u32 = 132;

/// C = A · B for row-major bf16 A (M×K), B (K×N) and C (M×N): one program per `bm`×`bn`
/// tile of C, stepping K by `bk`.
fn gemm(name: &str, bm: u64, bn: u64, bk: u64) -> BuildResult<Module> {
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
    b.kernel(name, &args, |b, a| {
        let [ta, tb, tc, m, n, k] = [a[0], a[1], a[2], a[3], a[4], a[5]];
        let bm_i = i64::try_from(bm).unwrap_or(i64::MAX);
        let bn_i = i64::try_from(bn).unwrap_or(i64::MAX);
        b.grid([b.arg(n)?.ceil_div(bn_i), b.arg(m)?.ceil_div(bm_i)])?;
        let (pid_n, pid_m) = (b.program_id(0)?, b.program_id(1)?);
        let c0 = b.constant_index(0)?;
        let (cbm, cbn, cbk) = (
            b.constant_index(bm)?,
            b.constant_index(bn)?,
            b.constant_index(bk)?,
        );
        let row = b.muli(pid_m, cbm)?;
        let col = b.muli(pid_n, cbn)?;
        let zero = b.zeros(&[bm, bn], F32)?;
        let acc = b.for_loop(c0, k, cbk, &[zero], |b, kk, c| {
            let x = b.load(ta, &[row, kk], &[bm, bk])?;
            let y = b.load(tb, &[kk, col], &[bk, bn])?;
            Ok(vec![b.dot(x, y, c[0])?])
        })?;
        let out = b.convert(acc[0], BF16)?;
        b.name(out, "out")?;
        b.store(tc, &[row, col], out)
    })?;
    Ok(m)
}

/// y = softmax(x) along each row of an M×N f32 matrix (N ≤ `cols`): `rows` rows per
/// program; e^(x - max) as 2^((x - max)·log2 e).
fn softmax(rows: u64, cols: u64) -> BuildResult<Module> {
    let mut m = Module::new();
    let mut b = Builder::new(&mut m);
    let t2 = Type::Tensor { rank: 2, elem: F32 };
    let args = [
        ("X", t2.clone()),
        ("Y", t2),
        ("M", Type::INDEX),
        ("N", Type::INDEX),
    ];
    b.kernel("softmax", &args, |b, a| {
        let rows_i = i64::try_from(rows).unwrap_or(i64::MAX);
        b.grid([b.arg(a[2])?.ceil_div(rows_i)])?;
        let pid = b.program_id(0)?;
        let (c0, crows) = (b.constant_index(0)?, b.constant_index(rows)?);
        let row = b.muli(pid, crows)?;
        let x = b.load_padded(a[0], &[row, c0], &[rows, cols], f64::NEG_INFINITY)?;
        let mx = b.reduce(x, 1, ReduceKind::Max)?;
        let mx = b.broadcast(mx, &[rows, cols])?;
        let d = b.sub(x, mx)?;
        let log2e = b.constant_float(std::f64::consts::LOG2_E, F32)?;
        let log2e = b.splat(log2e, &[rows, cols])?;
        let d = b.mul(d, log2e)?;
        let e = b.exp2(d)?;
        let s = b.reduce(e, 1, ReduceKind::Add)?;
        let one = b.constant_float(1.0, F32)?;
        let one = b.splat(one, &[rows, 1])?;
        let r = b.div(one, s)?;
        let r = b.broadcast(r, &[rows, cols])?;
        let y = b.mul(e, r)?;
        b.store(a[1], &[row, c0], y)
    })?;
    Ok(m)
}

/// One line of the launch table: the kernel, what it is, its launch configuration.
fn launch_line(kernel: &tilec::Kernel, what: &str, l: &LaunchConfig) -> String {
    format!(
        "  {:<20} {what:<24} grid {:?} block {:?} cluster {:?}, {} B shared, {} B of PTX",
        kernel.name,
        l.grid,
        l.block,
        l.cluster,
        l.dynamic_shared_memory_bytes,
        kernel.ptx.len()
    )
}

/// One GEMM configuration of the sweep.
struct Config {
    tile: GemmTile,
    stages: u32,
    module: Module,
    options: Options,
}

fn bf16_tile(bm: u64, bn: u64, bk: u64) -> GemmTile {
    GemmTile {
        bm,
        bn,
        bk,
        elem: BF16,
        b_elem: BF16,
        acc: F32,
        a_k_major: true,
        b_k_major: false,
    }
}

fn main() -> Result<(), Box<dyn StdError>> {
    let mut sizes = vec![];
    let mut target = Target::Sm90a;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--target" {
            let t = args.next().ok_or("--target needs a value")?;
            target = Target::from_name(&t).ok_or_else(|| format!("unknown target '{t}'"))?;
        } else {
            sizes.push(a.parse::<i64>().map_err(|e| format!("'{a}': {e}"))?);
        }
    }
    let (m, n, k) = match sizes[..] {
        [] => (4096, 4096, 4096),
        [m, n, k] => (m, n, k),
        _ => return Err("give M N K, or nothing".into()),
    };
    run(target, (m, n, k), &mut std::io::stdout())
}

/// The sweep, the compiles and the launch configurations for `target` and M, N, K, printed
/// to `out`.
fn run(
    target: Target,
    (m, n, k): (i64, i64, i64),
    out: &mut dyn Write,
) -> Result<(), Box<dyn StdError>> {
    let info = TargetInfo::new(target);

    // 1. The sweep, and what the target lowers.
    writeln!(
        out,
        "GEMM tiles for {target} (bf16, f32 accumulator, K tile 64):"
    )?;
    let mut legal = vec![];
    for (bm, bn) in [(64, 128), (128, 128), (128, 256), (256, 128), (256, 256)] {
        for stages in [3, 4, 6] {
            let tile = bf16_tile(bm, bn, 64);
            if let Err(r) = info.check_gemm(&tile, stages) {
                writeln!(
                    out,
                    "  {bm:>3}x{bn:<3} {stages} stages: skipped: {}",
                    r.message
                )?;
                continue;
            }
            let module = gemm(&format!("gemm_{bm}x{bn}_s{stages}"), bm, bn, 64)?;
            let options = Options::new(target).with_stages(stages);
            // The whole front end (verifier, passes) without MLIR: an epilogue or register
            // budget the table cannot see is refused here.
            if let Err(e) = check(Input::Module(&module), &options) {
                writeln!(
                    out,
                    "  {bm:>3}x{bn:<3} {stages} stages: refused by check: {e}"
                )?;
                continue;
            }
            legal.push(Config {
                tile,
                stages,
                module,
                options,
            });
        }
    }

    // 2. Compile the legal ones, one thread per core.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let start = Instant::now();
    let kernels = std::thread::scope(|s| {
        let chunks: Vec<_> = legal
            .chunks(legal.len().div_ceil(threads).max(1))
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|c| compile(Input::Module(&c.module), &c.options))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        chunks
            .into_iter()
            .flat_map(|h| h.join().expect("a compile thread panicked"))
            .collect::<Vec<_>>()
    });
    writeln!(
        out,
        "compiled {} kernels on {threads} threads in {:.0} ms",
        kernels.len(),
        start.elapsed().as_secs_f64() * 1e3
    )?;

    // 3. Launch configurations for M, N, K.
    writeln!(out, "launch for M={m} N={n} K={k} ({SM_COUNT} SMs):")?;
    for (c, kernel) in legal.iter().zip(kernels) {
        let kernel = kernel?;
        let l = kernel
            .manifest
            .launch_config(&[("M", m), ("N", n), ("K", k)], SM_COUNT)?;
        let what = format!(
            "{}x{}x{} {} stages:",
            c.tile.bm, c.tile.bn, c.tile.bk, c.stages
        );
        writeln!(out, "{}", launch_line(&kernel, &what, &l))?;
    }

    let sm = softmax(4, 1024)?;
    let kernel = compile(Input::Module(&sm), &Options::new(target))?;
    let l = kernel
        .manifest
        .launch_config(&[("M", m), ("N", n)], SM_COUNT)?;
    writeln!(out, "{}", launch_line(&kernel, "4x1024 rows:", &l))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The sweep for M = 256, N = 512, K = 1024 on sm_90a: its refusals, the kernels
    /// compiled, and their launch configurations.
    #[test]
    fn sweeps_compiles_and_prints_launches() {
        let mut out = vec![];
        super::run(super::Target::Sm90a, (256, 512, 1024), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let line = |prefix: &str| -> &str {
            let hit = text.lines().find(|l| l.trim_start().starts_with(prefix));
            hit.unwrap_or_else(|| panic!("no line starting {prefix:?} in\n{text}"))
        };
        // Refused by the table, each for its own reason.
        let ring = "skipped: 6 stages of 128x256x64 bf16 need 295936 bytes of shared memory";
        assert!(line("128x256 6 stages").contains(ring), "{text}");
        assert!(
            line("256x128 3 stages").contains("the M tile must be 64 or 128"),
            "{text}"
        );
        assert!(
            line("256x256 3 stages").contains("256x256 f32 accumulator"),
            "{text}"
        );
        assert!(line("compiled 8 kernels on").contains("threads"), "{text}");
        // 64x128, 3 stages: a producer and a consumer warpgroup, a ring of 3 x 24 KiB and
        // the barriers; the static schedule launches one CTA per tile up to the SM count:
        // 256/64 x 512/128 = 16 tiles.
        let want = "grid [16, 1, 1] block [256, 1, 1] cluster [1, 1, 1], 74752 B shared";
        assert!(line("gemm_64x128_s3").contains(want), "{text}");
        let want = "grid [4, 1, 1] block [384, 1, 1]";
        assert!(line("gemm_128x256_s4").contains(want), "{text}");
        // Softmax: 4 rows per program, M = 256.
        assert!(
            line("softmax").contains("grid [64, 1, 1] block [128, 1, 1]"),
            "{text}"
        );
    }
}
