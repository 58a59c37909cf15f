//! `tile-compile`: a tile IR file to PTX and a launch manifest.
//!
//! ```text
//! tile-compile FILE --target sm_90a|sm_90|sm_100|sm_100a [-o DIR]
//!              [--emit ptx|mlir|llvm|tile|cubin]
//!              [--stages N] [--load-stages N] [--mma-lookahead BOOL] [--warp-specialize BOOL]
//!              [--pingpong BOOL] [--pingpong-body BOOL] [--defer-mma BOOL] [--ftz] [--fp-fusion]
//!              [--specialize-masks BOOL]
//!              [--epilogue-store direct|tma]
//!              [--promote auto|on|off] [--invariant-a auto|smem|registers]
//!              [--schedule static|clc|none|off] [--persistent-kernels dots|all] [--ctas-per-sm N]
//!              [--cluster X[xY]] [--group-m G] [--num-warps W]
//!              [--kernel NAME] [-D NAME=VALUE]... [--no-simplify] [-O 0-3]
//!              [--tile auto --problem M=..,N=..,K=..[,BATCH=..][,GROUPS=..] [--sms N]]
//!              [--ptxas] [--timing]
//! ```
//! `-D BM=64` binds the kernel constant `BM` (`tile.kernel @gemm<BM = 128, ...>`; the
//! parser's "Kernel constants"); the manifest's `constants` records every constant's value.
//! `--tile auto` lets tilec choose a GEMM kernel's tile for the problem (`tilec::auto_tile`,
//! the model of `tilec::gemm_heuristic`): it binds the constants `BM`, `BN` and `BK` (the
//! kernel must declare them) and sets the stages, the schedule and the epilogue store, and
//! prints the choice and its reason; those options are then not given by hand.
//! Writes `DIR/NAME.ptx` and its manifest `DIR/NAME.json`, all or none (with `--emit mlir`,
//! `llvm` or `tile` only `DIR/NAME.mlir`, `.ll` or `.tile`: a manifest names its PTX).
//! `--emit cubin` also writes `DIR/NAME.cubin` (`ptxas -arch=TARGET` of the PTX), which the
//! manifest's `cubin_file` names. `--ptxas` assembles the PTX with `ptxas -v` and reports
//! registers, spills and warnings, then the manifest's dynamic shared memory (ptxas reports
//! static shared memory only). Both find `ptxas` as `tilec::ptxas::find`
//! does: `$PTXAS`, the `nvidia-cuda-nvcc` wheel in a `.venv` or on `PATH`, then `PATH`.
//! Exit codes: 0 success, 1 diagnostics or a failed ptxas, 2 usage.
//!
//! `tile-compile FILE --mlir-stage ptx|llvm --target CHIP [--ptx-version M.m] [-O N]` runs
//! only the MLIR stage: FILE (or `-`) holds an MLIR module as `--emit mlir` writes it, and
//! the PTX (or LLVM IR) goes to standard output. This is the child process that
//! `Options::mlir_child` (`tilec::lowering::mlir_stage_in_child`) starts, so that an LLVM
//! fatal error ends the child and not the library's caller.

#[path = "../common.rs"]
mod common;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{CommandFactory, FromArgMatches, Parser};
use common::*;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;
use tilec::dialect::Target;
use tilec::gemm_heuristic::{GemmProblem, Machine};
use tilec::{
    auto_tile, compile, ClusterShape, Emit, EpilogueStore, Error, Input, InvariantA, OptLevel,
    Options, PersistentKernels, Promote, Schedule,
};

/// A flag whose values are one of tilec's choice enums: clap lists `names` in `--help` and
/// parses with the enum's `FromStr`, so the CLI and `Options::set` accept the same spellings.
fn choice<T>(names: Vec<&'static str>) -> impl TypedValueParser<Value = T>
where
    T: FromStr<Err = tilec::OptionsError> + Clone + Send + Sync + 'static,
{
    PossibleValuesParser::new(names).try_map(|s| s.parse::<T>())
}

#[derive(Parser, Debug)]
#[command(
    name = "tile-compile",
    version,
    about = "Compile a tile IR kernel to PTX and a launch manifest"
)]
struct Cli {
    /// Input file (- for standard input).
    file: String,
    /// Target GPU: sm_90a (wgmma), sm_90, sm_100, sm_100a.
    #[arg(long, value_parser = parse_target)]
    target: Target,
    /// Output directory.
    #[arg(
        short = 'o',
        long = "output-dir",
        value_name = "DIR",
        default_value = "."
    )]
    out_dir: PathBuf,
    /// What to write.
    #[arg(long, default_value = "ptx", value_parser = choice::<Emit>(Emit::names()))]
    emit: Emit,
    /// Shared-memory ring depth (2 to 8).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(2..=8))]
    stages: u32,
    /// Ring depth of the TMA pipeline that a loop's loads staged in shared memory for wgmma
    /// go through (tile-pipeline-loads; sm_90a; such a tensor becomes a tensor map): 2 to 8,
    /// or 0 to keep those loads going through registers.
    #[arg(long, default_value_t = 2, value_parser = load_stages)]
    load_stages: u32,
    /// Issue a loop's wgmma that reads only TMA rings and loop-invariant operands one
    /// iteration ahead of its uses, so that it runs under the rest of the body (attention:
    /// the next Q·Kᵀ under this block's softmax; tile-pipeline-loads mma-lookahead).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_name = "BOOL")]
    mma_lookahead: bool,
    /// Issue the TMA rings' copies from a producer warpgroup of its own, which gives its
    /// registers to the consumers (setmaxnreg); the consumers release each stage on an
    /// mbarrier (tile-pipeline-loads warp-specialize; sm_90a).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_name = "BOOL")]
    warp_specialize: bool,
    /// With --warp-specialize true and two or more consumer warpgroups: the warpgroups take
    /// turns at issuing their wgmmas, on named barriers (tile-pingpong; FlashAttention-3's
    /// ping-pong).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_name = "BOOL")]
    pingpong: bool,
    /// With --warp-specialize true: the last wgmma of the consumer loop runs one iteration
    /// later, after the next iteration's first (tile-defer-mma; FlashAttention-3's order:
    /// P·V of block j-1 under the softmax of block j). Not with --mma-lookahead true.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_name = "BOOL")]
    defer_mma: bool,
    /// With --pingpong true: one turn per consumer loop body, from its first wgmma to its last
    /// (tile-pingpong turn=body; with --defer-mma, FlashAttention-3's turn around Q·Kᵀ and
    /// P·V), where nothing between them blocks; else one turn per run of adjacent wgmmas.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_name = "BOOL")]
    pingpong_body: bool,
    /// Flush f32 subnormals to zero (PTX .ftz, as nvcc -ftz=true): exp2 becomes one
    /// ex2.approx.ftz.f32; results below 2^-126 in magnitude become zero.
    #[arg(long)]
    ftz: bool,
    /// Let an f32 multiply and the add or subtract that takes its result become one fused
    /// multiply-add, rounded once (fma.rn.f32; nvcc's -fmad=true, Triton's enable_fp_fusion).
    /// Results may differ from the interpreter's in the last bits.
    #[arg(long)]
    fp_fusion: bool,
    /// Give a select on an index-range mask (bounds, causal) a uniform branch for the
    /// blocks where the mask is all true (tile-specialize-masks; default true).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    specialize_masks: bool,
    /// How the epilogue stores C: direct (from the accumulator registers, the default) or
    /// tma (staged in shared memory, stored with TMA; sm_90a; C becomes a tensor map).
    #[arg(
        long = "epilogue-store",
        default_value = "direct",
        value_parser = choice::<EpilogueStore>(EpilogueStore::names())
    )]
    epilogue_store: EpilogueStore,
    /// Add each k tile's MMA result into the f32 sum once it completes (tile-to-gpu
    /// `promote`): the precise fp8 accumulation on sm_90a, needing two accumulators' registers
    /// (a 128x192 tile; three, to overlap the add with the next MMAs, up to 128x128). auto
    /// (default): for fp8 on wgmma when they fit; on: always (an error where they do not fit);
    /// off: never.
    #[arg(long, default_value = "auto", value_parser = choice::<Promote>(Promote::names()))]
    promote: Promote,
    /// Where a laid-out dot's loop-invariant A operand (attention's Q) goes on wgmma
    /// (tile-dot-to-wgmma stage-invariant-a): auto (default): registers where its fragment
    /// takes at most 32 registers per thread, else shared memory; smem; registers.
    #[arg(long, default_value = "auto", value_parser = choice::<InvariantA>(InvariantA::names()))]
    invariant_a: InvariantA,
    /// Persistent schedule: static (default on sm_90a), clc (try_cancel work stealing,
    /// default on sm_100/sm_100a), none (default on sm_90), off.
    #[arg(long, value_parser = choice::<Schedule>(Schedule::names()))]
    schedule: Option<Schedule>,
    /// Which kernels --schedule makes persistent: dots (default: kernels whose main loop
    /// tile-to-gpu pipelines, GEMMs) or all (attention, norms too; with --warp-specialize,
    /// the producer then copies the next tile's first stages under this tile's epilogue).
    #[arg(
        long,
        default_value = "dots",
        value_parser = choice::<PersistentKernels>(PersistentKernels::names())
    )]
    persistent_kernels: PersistentKernels,
    /// CTAs per SM that a kernel with a plain launch is built for (1 to 32; CUDA's
    /// __launch_bounds__ minimum): registers per thread capped at that share (with
    /// --warp-specialize, the setmaxnreg split for it), shared memory too, and a persistent
    /// launch starts that many per SM.
    #[arg(long, default_value_t = 1)]
    ctas_per_sm: u32,
    /// CTAs per cluster, X or XxY: with --schedule clc 1, 2 or 4 along x (the multicast
    /// try_cancel, sm_100a only); with the static schedule on sm_90a up to 4 CTAs along x
    /// and y, taking adjacent tiles, whose shared operand copies are multicast (2: A along
    /// N; 1x2: B along M; 2x2: both).
    #[arg(long, default_value = "1", value_parser = |s: &str| s.parse::<ClusterShape>())]
    cluster: ClusterShape,
    /// Tiles of M swept per group for L2 reuse (0 = row-major order; at most 65536).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(0..=65_536))]
    group_m: u32,
    /// Warps per CTA of a kernel without a dot: 1, 2, 4, 8, 16 or 32, or 0 to let
    /// tile-assign-layouts choose from the tiles.
    #[arg(long, default_value_t = 0, value_parser = warps)]
    num_warps: u32,
    /// LLVM optimisation level of the NVPTX back end (0-3).
    #[arg(
        short = 'O',
        long = "opt-level",
        default_value = "3",
        value_parser = choice::<OptLevel>(OptLevel::names())
    )]
    opt_level: OptLevel,
    /// The LLVM pass pipeline at -O3, as `opt -passes=` reads it (default: tilec's, which
    /// gives the same PTX as LLVM's `default<O3>` on the examples but attention, in less time).
    #[arg(long, value_name = "PIPELINE")]
    llvm_passes: Option<String>,
    /// Skip tile-simplify.
    #[arg(long)]
    no_simplify: bool,
    /// The kernel to compile when the file holds several (its symbol, with or without '@').
    #[arg(long, value_name = "NAME")]
    kernel: Option<String>,
    /// Bind a kernel constant (tile.kernel @k<BM = 128>): NAME=VALUE, repeatable; a constant
    /// not bound takes its default.
    #[arg(short = 'D', long = "define", value_name = "NAME=VALUE", value_parser = define)]
    defines: Vec<(String, i64)>,
    /// Let tilec choose the GEMM tile for --problem: binds BM, BN, BK and sets --stages,
    /// --schedule and --epilogue-store (tilec::gemm_heuristic).
    #[arg(long, value_parser = ["auto"], requires = "problem",
          conflicts_with_all = ["stages", "schedule", "epilogue_store"])]
    tile: Option<String>,
    /// The problem --tile auto chooses for: `M=..,N=..,K=..[,BATCH=..][,GROUPS=..]`
    /// (GROUPS: a grouped GEMM's groups, each with its own B).
    #[arg(long, value_name = "M=..,N=..,K=..", value_parser = problem, requires = "tile")]
    problem: Option<[u64; 5]>,
    /// SMs of the GPU that --tile auto chooses for (132: H100 SXM, H200).
    #[arg(long, default_value_t = 132, requires = "tile",
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    sms: u32,
    /// Run ptxas -v on the PTX and report registers, spills and warnings, then the kernel's
    /// dynamic shared memory (the manifest's).
    #[arg(long)]
    ptxas: bool,
    /// Print the time of each stage and of the whole compile.
    #[arg(long)]
    timing: bool,
    /// Run only the MLIR stage: FILE is an MLIR module (as --emit mlir writes it), the PTX
    /// or LLVM IR goes to standard output (the child process of Options::mlir_child).
    #[arg(long, value_name = "PRODUCT", value_parser = ["ptx", "llvm"])]
    mlir_stage: Option<String>,
    /// The PTX ISA version for --mlir-stage, e.g. 8.1 (default: the target's minimum).
    #[arg(long, value_name = "M.m", requires = "mlir_stage", value_parser = parse_ptx_version)]
    ptx_version: Option<(u32, u32)>,
}

/// `M=..,N=..,K=..[,BATCH=..][,GROUPS=..]` as [M, N, K, batch, groups].
fn problem(s: &str) -> Result<[u64; 5], String> {
    const NAMES: [&str; 5] = ["M", "N", "K", "BATCH", "GROUPS"];
    let mut out = [0, 0, 0, 1, 1];
    let mut seen = [false; 5];
    for part in s.split(',') {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("'{part}' is not NAME=VALUE (M=16,N=4096,K=4096)"))?;
        let i = NAMES
            .iter()
            .position(|n| n.eq_ignore_ascii_case(k.trim()))
            .ok_or_else(|| format!("unknown dimension '{k}' (M, N, K, BATCH, GROUPS)"))?;
        if seen[i] {
            return Err(format!("{} is given twice", NAMES[i]));
        }
        out[i] = v
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|&x| x > 0)
            .ok_or_else(|| format!("'{v}' ({k}) is not a positive integer"))?;
        let max = tilec::gemm_heuristic::MAX_DIM;
        if out[i] > max {
            return Err(format!(
                "{v} ({k}) is over {max} (2^31 - 1, CUDA's grid limit along x)"
            ));
        }
        seen[i] = true;
    }
    if !seen[..3].iter().all(|&x| x) {
        return Err("M, N and K are all needed (M=16,N=4096,K=4096)".into());
    }
    Ok(out)
}

fn define(s: &str) -> Result<(String, i64), String> {
    tilec::parse_define(s).map_err(|e| e.reason)
}

fn warps(s: &str) -> Result<u32, String> {
    s.parse::<u32>()
        .ok()
        .filter(|w| tilec::NUM_WARPS.contains(w))
        .ok_or_else(|| format!("'{s}' is not 0, 1, 2, 4, 8, 16 or 32"))
}

fn load_stages(s: &str) -> Result<u32, String> {
    s.parse::<u32>()
        .ok()
        .filter(|&n| n == 0 || (2..=8).contains(&n))
        .ok_or_else(|| format!("'{s}' is not 0 or 2 to 8"))
}

fn parse_ptx_version(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("'{s}' is not a PTX ISA version like 8.1");
    let (a, b) = s.split_once('.').ok_or_else(bad)?;
    Ok((a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?))
}

/// `--mlir-stage`: the MLIR module in `src` to PTX or LLVM IR on standard output.
fn mlir_stage(cli: &Cli, product: &str, name: &str, src: &str) -> i32 {
    use tilec::lowering::{mlir_to_llvm_ir, mlir_to_ptx, set_fatal_error_subject, TargetSpec};
    let version = cli.ptx_version.unwrap_or(cli.target.min_ptx_version());
    let mut spec = TargetSpec::new(cli.target.name(), version);
    spec.opt_level = cli.opt_level.level();
    spec.llvm_passes = cli.llvm_passes.clone();
    set_fatal_error_subject(&format!("the MLIR module {name} for {}", cli.target));
    let out = if product == "llvm" {
        mlir_to_llvm_ir(src, &spec)
    } else {
        mlir_to_ptx(src, &spec)
    };
    match out {
        Ok(text) => match write_output(None, &text) {
            Ok(()) => EXIT_OK,
            Err(e) => {
                eprintln!("{e}");
                EXIT_DIAGNOSTICS
            }
        },
        Err(e) => {
            eprintln!("{name}: error: {}", e.with_source_name(name));
            EXIT_DIAGNOSTICS
        }
    }
}

/// The first option given on the command line that `--mlir-stage` does not take, as its
/// flag (`--stages`, `-o`), or `None`.
fn ignored_by_mlir_stage(m: &clap::ArgMatches) -> Option<String> {
    const TAKEN: [&str; 6] = [
        "file",
        "target",
        "mlir_stage",
        "opt_level",
        "llvm_passes",
        "ptx_version",
    ];
    let cmd = Cli::command();
    m.ids()
        .map(|id| id.as_str())
        .filter(|id| !TAKEN.contains(id) && cmd.get_arguments().any(|a| a.get_id() == *id))
        .find(|id| m.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
        .map(|id| {
            let arg = cmd.get_arguments().find(|a| a.get_id() == id);
            match arg.and_then(|a| a.get_long()) {
                Some(long) => format!("--{long}"),
                None => arg
                    .and_then(|a| a.get_short())
                    .map_or_else(|| id.to_string(), |c| format!("-{c}")),
            }
        })
}

fn main() {
    exit_now(run());
}

/// Prints a compile error (located diagnostics with their source lines) and gives the exit
/// code for it.
fn report(e: &Error, name: &str, src: &str) -> i32 {
    match e {
        Error::Diagnostics(d) => eprint_diags(d, Some(src)),
        Error::Options(o) => {
            eprintln!("{name}: error: --{}: {}", flag(o.option), o.reason);
            return EXIT_USAGE;
        }
        e => eprintln!("{name}: error: {e}"),
    }
    EXIT_DIAGNOSTICS
}

/// The command-line flag of option `option` ([`tilec::Options::set`]'s name).
fn flag(option: &str) -> String {
    match option {
        "epilogue" => "epilogue-store".to_string(),
        "simplify" => "no-simplify".to_string(),
        o => o.replace('_', "-"),
    }
}

fn run() -> i32 {
    let t0 = Instant::now();
    // An LLVM fatal error (a tilec bug: such input must be refused before MLIR) ends the
    // process with one located line and exit 1, not an abort.
    tilec::lowering::install_fatal_error_handler();
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m).map(|c| (c, m)));
    let (cli, matches) = match parsed {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
        }
    };
    if cli.mlir_stage.is_some() {
        if let Some(flag) = ignored_by_mlir_stage(&matches) {
            eprintln!(
                "error: {flag}: --mlir-stage runs only the MLIR stage on an MLIR module, which \
                 this option does not configure (it takes --target, -O, --llvm-passes and \
                 --ptx-version; the PTX or LLVM IR goes to standard output)"
            );
            return EXIT_USAGE;
        }
    }
    if cli.ptxas && !matches!(cli.emit, Emit::Ptx | Emit::Cubin) {
        eprintln!("error: --ptxas needs --emit ptx or cubin");
        return EXIT_USAGE;
    }
    let (name, src) = match read_source(&cli.file) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let src = src.as_str();
    if let Some(product) = &cli.mlir_stage {
        return mlir_stage(&cli, product, &name, src);
    }
    let mut opts = Options::new(cli.target)
        .with_stages(cli.stages)
        .with_load_stages(cli.load_stages)
        .with_mma_lookahead(cli.mma_lookahead)
        .with_warp_specialize(cli.warp_specialize)
        .with_pingpong(cli.pingpong)
        .with_defer_mma(cli.defer_mma)
        .with_pingpong_body(cli.pingpong_body)
        .with_ftz(cli.ftz)
        .with_fp_fusion(cli.fp_fusion)
        .with_specialize_masks(cli.specialize_masks)
        .with_promote(cli.promote)
        .with_invariant_a(cli.invariant_a)
        .with_epilogue(cli.epilogue_store)
        .with_group_m(cli.group_m)
        .with_persistent_kernels(cli.persistent_kernels)
        .with_ctas_per_sm(cli.ctas_per_sm)
        .with_num_warps(cli.num_warps)
        .with_cluster(cli.cluster)
        .with_simplify(!cli.no_simplify)
        .with_opt_level(cli.opt_level)
        .with_emit(cli.emit);
    if let Some(s) = cli.schedule {
        opts.schedule = s;
    }
    opts.kernel = cli.kernel.clone();
    for (i, (n, _)) in cli.defines.iter().enumerate() {
        if cli.defines[..i].iter().any(|(m, _)| m == n) {
            eprintln!("error: -D {n} is given twice");
            return EXIT_USAGE;
        }
    }
    opts.constants = cli.defines.iter().cloned().collect();
    opts.llvm_passes = cli.llvm_passes.clone();
    if let Err(e) = opts.validate() {
        eprintln!("error: --{}: {}", flag(e.option), e.reason);
        return EXIT_USAGE;
    }
    let input = Input::Text {
        source: src,
        file: &name,
    };
    if let Some([m, n, kk, batch, groups]) = cli.problem {
        if let Some(c) = ["BM", "BN", "BK"]
            .iter()
            .find(|c| opts.constants.contains_key(**c))
        {
            eprintln!("error: -D {c} conflicts with --tile auto, which binds BM, BN and BK");
            return EXIT_USAGE;
        }
        let chosen = tilec::dot_operand_type(input, &opts).and_then(|elem| {
            let p = GemmProblem {
                m,
                n,
                k: kk,
                batch,
                groups,
                elem,
                // `--promote off` asks for wgmma's own accumulation: its tiles are the
                // unpromoted ones.
                fast_accum: opts.promote == tilec::Promote::Off,
            };
            auto_tile(input, &opts, &p, &Machine::H200.with_sms(cli.sms))
        });
        match chosen {
            Ok((o, c)) => {
                let f = &c.config;
                let cluster = if f.cluster == tilec::ClusterShape::NONE {
                    String::new()
                } else {
                    format!(", cluster {}", f.cluster)
                };
                eprintln!(
                    "tile auto: {} with {} stages, schedule {}, epilogue {}{cluster}: {}",
                    f.tile_name(),
                    f.stages,
                    f.schedule,
                    f.epilogue,
                    c.reason
                );
                opts = o;
            }
            Err(e) => return report(&e, &name, src),
        }
    }
    let k = match compile(input, &opts) {
        Ok(k) => k,
        Err(e) => return report(&e, &name, src),
    };
    eprint_diags(&k.remarks, Some(src));
    if let Err(e) = std::fs::create_dir_all(&cli.out_dir) {
        let why = if cli.out_dir.exists() || cli.out_dir.is_symlink() {
            "it is not a directory (-o names the directory the outputs go to)".to_string()
        } else {
            io_reason(&e)
        };
        eprintln!(
            "error: could not create the output directory '{}': {why}",
            cli.out_dir.display()
        );
        return EXIT_DIAGNOSTICS;
    }
    let cubin = cli.emit == Emit::Cubin;
    let ext = if cubin { "ptx" } else { cli.emit.extension() };
    let stem = file_stem(&k.name);
    let out = cli.out_dir.join(format!("{stem}.{ext}"));
    let man = cli.out_dir.join(format!("{stem}.json"));
    let mut manifest = k.manifest.clone();
    manifest.ptx_file = format!("{stem}.ptx");
    let mut files = vec![];
    if cubin {
        let file = format!("{stem}.cubin");
        files.push((cli.out_dir.join(&file), k.cubin.clone()));
        manifest.cubin_file = Some(file);
    }
    files.insert(0, (out.clone(), k.text.clone().into_bytes()));
    // A manifest names the PTX it launches: none beside MLIR, LLVM IR or tile IR.
    if matches!(cli.emit, Emit::Ptx | Emit::Cubin) {
        files.push((man.clone(), manifest.to_json().into_bytes()));
    }
    if let Err(e) = write_outputs(&files) {
        eprintln!("{e}");
        return EXIT_DIAGNOSTICS;
    }
    let written: Vec<String> = files.iter().map(|(p, _)| p.display().to_string()).collect();
    eprintln!("wrote {}", written.join(", "));
    let mut status = EXIT_OK;
    if cli.ptxas {
        status = run_ptxas(&out, cli.target, manifest.dynamic_shared_memory_bytes);
    }
    if cli.timing {
        for (stage, d) in &k.timings {
            eprintln!("  {:>9.3} ms  {stage}", d.as_secs_f64() * 1e3);
            if *stage == "MLIR" {
                for (step, d) in &k.mlir_timings {
                    eprintln!("  {:>9.3} ms    {step}", d.as_secs_f64() * 1e3);
                }
            }
        }
        eprintln!(
            "  {:>9.3} ms  total (process, including I/O)",
            t0.elapsed().as_secs_f64() * 1e3
        );
    }
    status
}

/// Writes each `(path, bytes)` of a compile's outputs (PTX or other text, cubin, manifest)
/// all or none: a path that is a directory is refused before anything is written, each file
/// goes to a temporary beside its path first, and only once every one is written are they
/// renamed into place, so that a failed compile never leaves a PTX without its manifest.
///
/// # Errors
/// `error: could not write 'PATH': REASON`, after removing the temporaries.
fn write_outputs(files: &[(PathBuf, Vec<u8>)]) -> Result<(), String> {
    let fail = |p: &Path, why: String| format!("error: could not write '{}': {why}", p.display());
    for (p, _) in files {
        if p.is_dir() {
            return Err(fail(p, "it is a directory".into()));
        }
    }
    let temp = |p: &Path| {
        let mut name = p.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".tmp-{}", std::process::id()));
        p.with_file_name(name)
    };
    let clean = || {
        for (p, _) in files {
            let _ = std::fs::remove_file(temp(p));
        }
    };
    for (p, bytes) in files {
        if let Err(e) = std::fs::write(temp(p), bytes) {
            clean();
            return Err(fail(p, io_reason(&e)));
        }
    }
    for (p, _) in files {
        if let Err(e) = std::fs::rename(temp(p), p) {
            clean();
            return Err(fail(p, io_reason(&e)));
        }
    }
    Ok(())
}

/// The file name stem of a kernel's outputs: its name, or for a name longer than 200 bytes
/// (file names have at most 255), its first 180 bytes, `-` and a 64-bit FNV-1a hash of the
/// whole name in hex, so that long names stay apart. The manifest's `ptx_file` names the
/// file.
fn file_stem(name: &str) -> String {
    if name.len() <= 200 {
        return name.to_string();
    }
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let mut cut = 180;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}-{hash:016x}", &name[..cut])
}

/// `ptxas -v` on `ptx`: its register, spill and warning lines, then the kernel's dynamic
/// shared memory (`smem_bytes`, the manifest's: ptxas reports only static shared memory).
fn run_ptxas(ptx: &Path, target: Target, smem_bytes: u64) -> i32 {
    let Some(ptxas) = tilec::ptxas::find() else {
        eprintln!("error: {}", tilec::ptxas::PtxasError::NotFound);
        return EXIT_DIAGNOSTICS;
    };
    let scratch = std::env::temp_dir().join(format!("tile-compile-{}.cubin", std::process::id()));
    let out = std::process::Command::new(&ptxas)
        .arg(format!("-arch={}", target.name()))
        .arg("-v")
        .arg(ptx)
        .arg("-o")
        .arg(&scratch)
        .output();
    let _ = std::fs::remove_file(&scratch);
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            eprintln!(
                "error: could not run {}: {}",
                ptxas.display(),
                io_reason(&e)
            );
            return EXIT_DIAGNOSTICS;
        }
    };
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    let mut summary = vec![];
    for l in text.lines() {
        let l = l.trim();
        if l.contains("Used")
            || l.contains("spill")
            || l.contains("warning")
            || l.contains("error")
            || l.contains("(C75")
        {
            summary.push(l.to_string());
        }
    }
    eprintln!("ptxas -arch={} -v:", target.name());
    for l in &summary {
        eprintln!("  {l}");
    }
    eprintln!("  {smem_bytes} bytes of dynamic shared memory (the manifest's)");
    if !out.status.success() {
        eprintln!("error: ptxas failed");
        return EXIT_DIAGNOSTICS;
    }
    if text.contains("warning") {
        eprintln!("warning: ptxas reported warnings");
    }
    EXIT_OK
}
