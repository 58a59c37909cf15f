//! # tilec: tile-level GPU programs to PTX for Hopper and Blackwell
//!
//! The facade a tensor compiler calls. [`compile`] takes IR text (or a module built with
//! [`dialect::Builder`]), runs the default pipeline for the target and returns the PTX and
//! its launch manifest. It never panics on bad input and never lets MLIR abort the process:
//! the IR is verified, and the target's limits checked, before MLIR is built.
//!
//! A tile sweep, as an autotuner runs it: typed options, a legality check without MLIR,
//! compiles on threads, and each kernel's launch configuration for a problem size.
//!
//! ```no_run
//! use tilec::dialect::{DiagKind, Target};
//! use tilec::{check, compile, Error, Input, Options, Schedule};
//!
//! let src = std::fs::read_to_string("examples/gemm_bf16.tile").unwrap();
//! let input = Input::Text { source: &src, file: "gemm_bf16.tile" };
//! // Options that do not go together are refused by `validate` (and by `compile`).
//! let configs: Vec<Options> = (2..=8)
//!     .map(|s| Options::new(Target::Sm90a).with_stages(s).with_schedule(Schedule::Static))
//!     .collect();
//! // Keep what the target can hold; a resource limit says how much was needed.
//! let legal: Vec<&Options> = configs
//!     .iter()
//!     .filter(|o| match check(input, o) {
//!         Ok(()) => true,
//!         Err(Error::Diagnostics(d)) => {
//!             assert!(matches!(d.0[0].kind, DiagKind::ResourceLimit { .. }));
//!             false
//!         }
//!         Err(e) => panic!("{e}"),
//!     })
//!     .collect();
//! // Compiles on several threads run in parallel.
//! let kernels: Vec<_> = std::thread::scope(|s| {
//!     let hs: Vec<_> = legal.iter().map(|o| s.spawn(move || compile(input, o))).collect();
//!     hs.into_iter().map(|h| h.join().unwrap().unwrap()).collect()
//! });
//! for k in &kernels {
//!     assert!(k.ptx.contains(".target sm_90a"));
//!     let launch = k.manifest.launch_config(&[("M", 8192), ("N", 8192), ("K", 8192)], 132);
//!     println!("{}: {:?}", k.name, launch.unwrap());
//! }
//! ```
//!
//! Pipeline (each pass usable alone from `tile-opt`): `tile-simplify` →
//! `persistent{schedule group_m}` → `tile-to-gpu{target stages}` →
//! `async-wait-placement` → `verify-async-waits` → `verify-named-barriers` →
//! `convert-tile-to-nvvm` → MLIR's
//! `convert-nvvm-to-llvm`, `nvvm-attach-target`, and MLIR's NVVM serializer to PTX with
//! tilec's LLVM pass pipeline (`tilec::lowering::LLVM_PIPELINE`).
//!
//! Kernels may declare compile-time constants (`tile.kernel @gemm<BM = 128, BN = 256>`):
//! [`Options::with_constant`] binds them, and [`auto_tile`] lets the tile heuristic
//! ([`gemm_heuristic`]) bind a GEMM's `BM`, `BN`, `BK` and choose its stages, schedule and
//! epilogue store for a problem shape.
//!
//! Modules hold any number of kernels: [`Options::kernel`] names the one to compile.
//! [`TargetInfo`] answers which GEMM tiles a target lowers without any IR.
//! `examples/rust_frontend.rs` runs such a sweep over kernels built without text by
//! [`dialect::Builder`].
//!
//! Dependencies: the workspace crates, `thiserror` for [`Error`] and [`OptionsError`], and
//! `tempfile` for the directory `ptxas` works in ([`Emit::Cubin`]).

#![deny(missing_docs)]

pub use tilec_dialect as dialect;
pub use tilec_lowering as lowering;
pub use tilec_passes as passes;

use std::time::{Duration, Instant};
use tilec_dialect::{
    parse_with_constants, verify, Diagnostics, Module, ScalarType, VerifiedModule,
};
use tilec_lowering::{
    convert_tile_to_nvvm, mlir_stage_in_child, prepare_tile_to_nvvm, BuildError, Manifest, Product,
    TargetSpec,
};
use tilec_passes::PassManager;

pub mod gemm_heuristic;
mod options;
pub mod ptxas;
mod target_info;
pub use options::{
    parse_define, ClusterShape, Emit, EpilogueStore, InvariantA, OptLevel, Options, OptionsError,
    PersistentKernels, Promote, Schedule, NUM_WARPS,
};
pub use target_info::{TargetInfo, MAX_STAGES};

/// What to compile.
#[derive(Clone, Copy, Debug)]
pub enum Input<'a> {
    /// IR text and the file name used in diagnostics.
    Text {
        /// The IR.
        source: &'a str,
        /// Its name in `file:line:col`.
        file: &'a str,
    },
    /// A module built in memory (with [`dialect::Builder`] or parsed earlier). It is
    /// verified first, and left as it is: compiling it again with other options (an
    /// autotuner's sweep) needs no copy on the caller's side.
    Module(&'a Module),
}

/// A compiled kernel.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// The kernel's name.
    pub name: String,
    /// What `emit` asked for: PTX, LLVM IR, MLIR or tile IR text (the PTX for
    /// [`Emit::Cubin`]).
    pub text: String,
    /// The PTX (same as `text` when emitting PTX or a cubin; empty otherwise).
    pub ptx: String,
    /// The cubin for [`Emit::Cubin`] (`ptxas -arch=TARGET`); empty otherwise.
    pub cubin: Vec<u8>,
    /// The launch manifest.
    pub manifest: Manifest,
    /// Wall time per stage (parse+verify, tilec passes, lowering to MLIR, MLIR to the output,
    /// then the checkers `verify-async-waits` and `verify-named-barriers`, which run on a
    /// second thread beside the last two).
    pub timings: Vec<(&'static str, Duration)>,
    /// The steps of the MLIR stage when emitting PTX (setup, parse+verify, then each MLIR
    /// pass; see `tilec_lowering::StageTimings`); empty for the other outputs.
    pub mlir_timings: Vec<(&'static str, Duration)>,
    /// The remarks the passes made, with locations: among them why an option did not
    /// apply to this kernel (`warp_specialize`, `pingpong`: "not warp-specialized: ...").
    /// Render them with the source ([`Diagnostics::render`]).
    pub remarks: Diagnostics,
}

/// Why compilation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Parse, verify, pass or lowering diagnostics (with locations).
    #[error("{0}")]
    Diagnostics(Diagnostics),
    /// MLIR rejected the module or a pass failed (a tilec bug when it happens: report it).
    #[error("MLIR: {0}")]
    Mlir(#[from] tilec_lowering::MlirError),
    /// The pipeline text did not build.
    #[error("pipeline: {0}")]
    Pipeline(String),
    /// The options do not go together ([`Options::validate`]), or one configures passes that
    /// no kernel of the input runs and would be ignored: a pass option for a kernel already
    /// lowered, an option of the dot pipelines for a module without a `tile.dot`, an option
    /// of GEMM pipelines (`stages`, `epilogue`, `promote`) where every dot is laid out, one
    /// of laid-out dots (`warp_specialize`, `load_stages`, ...) where every dot is a GEMM
    /// pipeline, `num_warps` or `ctas_per_sm` for a module whose kernels are all GEMM
    /// pipelines, `schedule`, `group_m` or `persistent_kernels` where they make no kernel
    /// persistent. The message names the kernel and its file:line:col.
    #[error("{0}")]
    Options(#[from] OptionsError),
    /// `ptxas` did not assemble the PTX ([`Emit::Cubin`]).
    #[error("{0}")]
    Ptxas(#[from] ptxas::PtxasError),
}

impl From<Diagnostics> for Error {
    fn from(d: Diagnostics) -> Self {
        Error::Diagnostics(d)
    }
}

/// A kernel no pass has processed (neither tile-to-gpu's `target` attribute nor
/// persistent's `schedule`) is written in level-1 ops only: the GPU-level ops (shared
/// memory, TMA, mbarriers, async groups, ...) carry protocols that the passes establish and
/// the checkers verify, so one written by hand into a source kernel is an error at that op.
/// (A fully GPU-level kernel, with its `target`, is compiled as it is, its waits checked by
/// `verify-async-waits`.) Every kernel's symbol must be a PTX entry name.
///
/// # Errors
/// Each kernel whose symbol is not a PTX entry name; the first GPU-level op of each source
/// kernel.
fn check_source_level(m: &tilec_dialect::Module) -> Result<(), Error> {
    use tilec_dialect::Diagnostic;
    let mut ds = vec![];
    // A kernel's symbol is its PTX entry's name, which LLVM's NVPTX back end would rename
    // (`a.b` to `a_b`) where it is not letters, digits and '_'.
    for k in m.kernels() {
        let name = k.symbol.as_deref().unwrap_or_default();
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            ds.push(Diagnostic::error(
                k.loc.clone(),
                format!(
                    "kernel name '@{name}' is not a PTX entry name: use letters, digits and \
                     '_' only (a kernel's symbol names its '.entry', its files and its \
                     manifest)"
                ),
            ));
        }
    }
    // `target` marks tile-to-gpu's output, `schedule` persistent's: their GPU-level ops are
    // the passes' own.
    let untouched =
        |k: &&tilec_dialect::Operation| k.attr("target").is_none() && k.attr("schedule").is_none();
    for k in m.kernels().filter(untouched) {
        let mut first = None;
        k.walk(&mut |o| {
            if first.is_none() && o.kind.is_gpu_level() {
                first = Some((o.kind, o.loc.clone()));
            }
        });
        if let Some((kind, loc)) = first {
            ds.push(Diagnostic::error(
                loc,
                format!(
                    "'{}' is a GPU-level op, which the passes write (its protocol is theirs to \
                     keep); a source kernel, without a 'target' attribute, uses level-1 ops only",
                    kind.name()
                ),
            ));
        }
    }
    if ds.is_empty() {
        Ok(())
    } else {
        Err(Error::Diagnostics(
            Diagnostics(ds).with_kind(tilec_dialect::DiagKind::InvalidIr),
        ))
    }
}

/// The element type of the first `tile.dot`'s A operand in the kernel `opts` selects,
/// parsed with `opts.constants` and the defaults: what [`gemm_heuristic::GemmProblem`]'s
/// `elem` is for that kernel. `BM`, `BN` and `BK`, where neither bound nor given a default,
/// read as 64 for this query (the element type does not depend on the tile sizes), so that
/// a kernel whose tile sizes have no defaults can be asked before they are chosen.
///
/// # Errors
/// A parse or verifier error, no such kernel, or a kernel without a `tile.dot` (located at
/// the kernel).
pub fn dot_operand_type(input: Input<'_>, opts: &Options) -> Result<ScalarType, Error> {
    dot_elem(&selected_kernel(input, &provisional_tile(opts))?)
}

/// [`dot_operand_type`] of a module cut down to one kernel ([`selected_kernel`]).
fn dot_elem(module: &Module) -> Result<ScalarType, Error> {
    let k = module.kernels().next().expect("selected");
    let mut elem = None;
    k.walk(&mut |o| {
        if elem.is_none() && o.kind == tilec_dialect::OpKind::Dot {
            elem = o.operands.first().and_then(|&a| module.ty(a).elem());
        }
    });
    elem.ok_or_else(|| {
        Error::Diagnostics(Diagnostics(vec![tilec_dialect::Diagnostic::error(
            k.loc.clone(),
            format!(
                "kernel '@{}' has no tile.dot: the GEMM tile heuristic chooses a dot's tile",
                k.symbol.as_deref().unwrap_or("?")
            ),
        )]))
    })
}

/// `opts` with `BM`, `BN` and `BK` bound to 64 where they are not bound.
fn provisional_tile(opts: &Options) -> Options {
    let mut o = opts.clone();
    for c in ["BM", "BN", "BK"] {
        o.constants.entry(c.to_string()).or_insert(64);
    }
    o
}

/// The bindings `opts` gives the parser: its constants, for the kernel it selects.
fn bindings(opts: &Options) -> tilec_dialect::ConstantBindings {
    tilec_dialect::ConstantBindings {
        values: opts.constants.clone(),
        kernel: opts.kernel.clone(),
    }
}

/// `input` as a module, text parsed with `opts`' bindings, and its name for locations.
fn parsed(input: Input<'_>, opts: &Options) -> Result<(Module, String), Error> {
    Ok(match input {
        Input::Text { source, file } => (
            parse_with_constants(source, file, &bindings(opts))?,
            file.to_string(),
        ),
        Input::Module(m) => (m.clone(), "<module>".to_string()),
    })
}

/// `input` parsed with `opts.constants`, verified, and cut down to the kernel `opts`
/// selects.
fn selected_kernel(input: Input<'_>, opts: &Options) -> Result<Module, Error> {
    let (mut module, file) = parsed(input, opts)?;
    verify(&module)?;
    select_kernel(&mut module, opts.kernel.as_deref(), &file)?;
    if module.kernels().next().is_none() {
        return Err(Error::Diagnostics(Diagnostics(vec![
            tilec_dialect::Diagnostic::error(
                tilec_dialect::Location::new(std::sync::Arc::from(file.as_str()), 1, 1),
                "the module holds no kernel",
            ),
        ])));
    }
    Ok(module)
}

/// Chooses the tile configuration of a GEMM kernel for `problem` ([`gemm_heuristic`]) and
/// checks it with [`check`]: `base` with the chosen constants `BM`, `BN`, `BK`, stages,
/// schedule and epilogue store, ready for [`compile`]. Where the passes refuse the model's
/// first choice (a fused epilogue that the TMA store does not take, a tile the operand
/// majors do not allow), the next candidate in the model's order is tried, and the returned
/// choice's `reason` says what was refused.
///
/// ```no_run
/// use tilec::gemm_heuristic::{GemmProblem, Machine};
/// use tilec::{auto_tile, compile, dialect::{ScalarType, Target}, Input, Options};
/// let src = std::fs::read_to_string("examples/gemm.tile").unwrap();
/// let input = Input::Text { source: &src, file: "gemm.tile" };
/// let p = GemmProblem::new(128, 4096, 4096, ScalarType::BF16);
/// let (opts, choice) =
///     auto_tile(input, &Options::new(Target::Sm90a), &p, &Machine::H200).unwrap();
/// println!("{}: {}", choice.config.tile_name(), choice.reason);
/// let kernel = compile(input, &opts).unwrap();
/// assert_eq!(kernel.manifest.constants["BM"], 64);
/// ```
///
/// # Errors
/// [`Error::Options`] for a built module (it has no constants to bind) or a `cluster` of more
/// than one CTA (the heuristic chooses the cluster: none, or `1x2` for fp8); a located error at
/// the kernel when it does not declare `BM`, `BN` and `BK`, when the problem has a batch and
/// the kernel no third grid dimension, or groups and no rank-3 tensor (a stack of B
/// matrices), or when the heuristic has no
/// answer for the problem ([`gemm_heuristic::HeuristicError`]: an empty or oversized
/// dimension, an element type without measured configurations); otherwise, when no
/// candidate passes, the first candidate's error.
pub fn auto_tile(
    input: Input<'_>,
    base: &Options,
    problem: &gemm_heuristic::GemmProblem,
    machine: &gemm_heuristic::Machine,
) -> Result<(Options, gemm_heuristic::GemmChoice), Error> {
    if base.cluster.size() > 1 {
        return Err(Error::Options(OptionsError::new(
            "cluster",
            format!(
                "{}: the tile heuristic chooses the schedule and the cluster (one it measured: \
                 fp8's 1x2): give the tile with -D BM=.. -D BN=.. to build another cluster, or \
                 drop --cluster",
                base.cluster
            ),
        )));
    }
    let mut choice;
    if let Input::Text { .. } = input {
        let m = selected_kernel(input, &provisional_tile(base))?;
        let k = m.kernels().next().expect("selected");
        let declared = k
            .attr("constants")
            .and_then(tilec_dialect::Attribute::as_dict);
        let missing: Vec<&str> = ["BM", "BN", "BK"]
            .into_iter()
            .filter(|c| declared.is_none_or(|d| !d.contains_key(*c)))
            .collect();
        if !missing.is_empty() {
            // A K tile of 128 bytes, as the examples step K.
            let fp8 = dot_elem(&m).is_ok_and(|e| e.is_fp8());
            let (bk, example) = if fp8 {
                (128, "examples/gemm_fp8.tile")
            } else {
                (64, "examples/gemm.tile")
            };
            return Err(Error::Diagnostics(Diagnostics(vec![
                tilec_dialect::Diagnostic::error(
                    k.loc.clone(),
                    format!(
                        "the tile heuristic binds the constants BM, BN and BK, and kernel '@{}' \
                     does not declare {}: write its tile sizes as constants (tile.kernel \
                     @{}<BM = 128, BN = 256, BK = {bk}>(...), as {example} does)",
                        k.symbol.as_deref().unwrap_or("?"),
                        missing.join(", "),
                        k.symbol.as_deref().unwrap_or("k"),
                    ),
                ),
            ])));
        }
        let located = |msg: String| {
            Error::Diagnostics(Diagnostics(vec![tilec_dialect::Diagnostic::error(
                k.loc.clone(),
                msg,
            )]))
        };
        let elem = dot_elem(&m)?;
        if elem != problem.elem {
            return Err(located(format!(
                "the problem's element type is {}, but kernel '@{}' multiplies {elem}",
                problem.elem,
                k.symbol.as_deref().unwrap_or("?")
            )));
        }
        let grid_rank = k
            .attr("grid")
            .and_then(tilec_dialect::Attribute::as_array)
            .map_or(0, <[_]>::len);
        if problem.batch > 1 && grid_rank < 3 {
            return Err(located(format!(
                "the problem has a batch of {}, but kernel '@{}' has a {grid_rank}-D grid: a \
                 batched kernel walks the batch with a third grid dimension \
                 (examples/batched_gemm.tile)",
                problem.batch,
                k.symbol.as_deref().unwrap_or("?")
            )));
        }
        let stacked = k.regions.first().is_some_and(|b| {
            b.args
                .iter()
                .any(|&a| matches!(m.ty(a), tilec_dialect::Type::Tensor { rank, .. } if *rank >= 3))
        });
        if problem.groups > 1 && !stacked {
            return Err(located(format!(
                "the problem has {} groups, but kernel '@{}' has no stack of B matrices (a \
                 tensor of rank 3): a grouped kernel reads each group's B from one \
                 (examples/grouped_gemm.tile)",
                problem.groups,
                k.symbol.as_deref().unwrap_or("?")
            )));
        }
        let heuristic = gemm_heuristic::choose_gemm(problem, base.target, machine);
        choice = heuristic.map_err(|e| {
            let mut d = tilec_dialect::Diagnostic::error(k.loc.clone(), e.to_string());
            d.kind = tilec_dialect::DiagKind::Unsupported;
            Error::Diagnostics(Diagnostics(vec![d]))
        })?;
    } else {
        return Err(Error::Options(OptionsError::new(
            "define",
            "the tile heuristic binds kernel constants, which only text input has (a built \
             Module is concrete)",
        )));
    }
    let mut first_err = None;
    let mut refused = vec![];
    // Each candidate, then the same with the direct store where the TMA store is refused
    // (an f32 C, say).
    let tries = choice.ranked.clone().into_iter().flat_map(|(c, e)| {
        let direct = gemm_heuristic::GemmConfig {
            epilogue: EpilogueStore::Direct,
            ..c
        };
        std::iter::once((c, e)).chain((c.epilogue != EpilogueStore::Direct).then_some((direct, e)))
    });
    for (config, estimate) in tries {
        let opts = config.apply(base.clone());
        match check(input, &opts) {
            Ok(()) => {
                if !refused.is_empty() {
                    let first = choice.config;
                    let same_tile =
                        (config.bm, config.bn, config.bk) == (first.bm, first.bn, first.bk);
                    choice.reason = if same_tile {
                        format!(
                            "{}; with the {} store, as the passes refused {}",
                            choice.reason,
                            config.epilogue,
                            refused.join("; ")
                        )
                    } else {
                        format!(
                            "{} with the {} store, next in the model's order (the passes \
                             refused {})",
                            config.tile_name(),
                            config.epilogue,
                            refused.join("; ")
                        )
                    };
                }
                choice.config = config;
                choice.estimate = estimate;
                return Ok((opts, choice));
            }
            Err(e) => {
                refused.push(format!(
                    "{} with the {} store: {}",
                    config.tile_name(),
                    config.epilogue,
                    first_line(&e)
                ));
                first_err.get_or_insert(e);
            }
        }
    }
    Err(first_err.expect("at least one candidate"))
}

/// The first line of an error's text.
fn first_line(e: &Error) -> String {
    e.to_string().lines().next().unwrap_or("").to_string()
}

/// Every bound constant must be one the kernel to compile declares.
///
/// # Errors
/// The first binding the kernel lacks, at the kernel, naming what it declares.
fn check_bindings(
    m: &tilec_dialect::Module,
    constants: &std::collections::BTreeMap<String, i64>,
    file: &str,
) -> Result<(), Error> {
    use tilec_dialect::{Attribute, Location};
    let Some(k) = m.kernels().next() else {
        return Ok(());
    };
    let declared = k.attr("constants").and_then(Attribute::as_dict);
    let Some(n) = constants
        .keys()
        .find(|n| declared.is_none_or(|d| !d.contains_key(*n)))
    else {
        return Ok(());
    };
    let have = match declared {
        Some(d) if !d.is_empty() => {
            format!(
                "it declares {}",
                d.keys().cloned().collect::<Vec<_>>().join(", ")
            )
        }
        _ => "it declares none".to_string(),
    };
    let loc = if k.loc.line > 0 {
        k.loc.clone()
    } else {
        Location::new(std::sync::Arc::from(file), 1, 1)
    };
    Err(Error::Diagnostics(Diagnostics(vec![
        tilec_dialect::Diagnostic::error(
            loc,
            format!(
                "constant '{n}' is bound, but kernel '@{}' does not declare it ({have})",
                k.symbol.as_deref().unwrap_or("?")
            ),
        ),
    ])))
}

/// Keep only the kernel to compile: `name`, or the module's only kernel.
///
/// # Errors
/// No kernel, a `name` the module lacks, or several kernels and no `name`.
fn select_kernel(
    m: &mut tilec_dialect::Module,
    name: Option<&str>,
    file: &str,
) -> Result<(), Error> {
    use tilec_dialect::Location;
    let names: Vec<String> = m
        .kernels()
        .map(|k| format!("@{}", k.symbol.as_deref().unwrap_or("?")))
        .collect();
    let fail = |loc: Location, msg: String| {
        Err(Error::Diagnostics(Diagnostics(vec![
            tilec_dialect::Diagnostic::error(loc, msg),
        ])))
    };
    let file_loc = || Location::new(std::sync::Arc::from(file), 1, 1);
    match name {
        Some(n) => {
            let n = n.trim_start_matches('@');
            if !m.kernels().any(|k| k.symbol.as_deref() == Some(n)) {
                let have = if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                };
                return fail(
                    file_loc(),
                    format!("no kernel '@{n}' in the module (it holds {have})"),
                );
            }
            m.ops.retain(|k| k.symbol.as_deref() == Some(n));
            Ok(())
        }
        None if names.len() > 1 => {
            let second = m
                .kernels()
                .nth(1)
                .map(|k| k.loc.clone())
                .unwrap_or_else(file_loc);
            fail(
                second,
                format!(
                    "the module holds {} kernels ({}); one is compiled at a time: choose it \
                     (tile-compile --kernel NAME, Options::kernel)",
                    names.len(),
                    names.join(", ")
                ),
            )
        }
        None => Ok(()),
    }
}

/// Compile one kernel: the module's only kernel, or [`Options::kernel`]. Use the passes and
/// [`lowering`] directly for more control.
///
/// A module of several kernels compiles the one [`Options::kernel`] names (every kernel is
/// verified; the others are not compiled); without a name, such a module is an error
/// listing its kernels.
///
/// # Errors
/// See [`Error`]. Every error carries a location in the input where it has one. Each
/// diagnostic of [`Error::Diagnostics`] has a [`dialect::DiagKind`] and the name of the
/// kernel being compiled (where one was chosen), and no diagnostic is repeated.
pub fn compile(input: Input<'_>, opts: &Options) -> Result<Kernel, Error> {
    let mut kernel = None;
    compile_kernel(input, opts, &mut kernel)
        .map_err(|e| with_kernel(e, &kernel))
        .map_err(|e| user_pipeline_error(e, opts))
}

/// An LLVM failure to parse the user's pipeline ([`Options::llvm_passes`]) as the usage
/// error it is ([`Error::Options`]): LLVM's `PassBuilder` checks the text where it runs it,
/// in the MLIR stage, and its message (`unknown pass name 'x'`) is the reason.
fn user_pipeline_error(e: Error, opts: &Options) -> Error {
    const PREFIX: &str = "LLVM pass pipeline '";
    let Error::Mlir(m @ tilec_lowering::MlirError::Llvm { .. }) = &e else {
        return e;
    };
    let Some(pipeline) = &opts.llvm_passes else {
        return e;
    };
    match m.diagnostics().iter().find_map(|d| {
        d.message
            .strip_prefix(PREFIX)
            .and_then(|r| r.strip_prefix(pipeline.as_str()))
            .and_then(|r| r.strip_prefix("': "))
    }) {
        Some(reason) => Error::Options(OptionsError::new(
            "llvm_passes",
            format!("LLVM does not parse the pipeline: {reason}"),
        )),
        None => e,
    }
}

/// Checks that `input` compiles with `opts` as far as no MLIR is needed: the options, the
/// parse and the verifier, the kernel choice, and the tilec pass pipeline with the target's
/// legality table (MMA tile shapes and types, shared memory for the ring, accumulator
/// registers). An autotuner calls it to skip what will not lower; it costs the tilec passes
/// (milliseconds), not the MLIR and LLVM stage.
///
/// What only the lowering to MLIR can refuse (an op form without a lowering rule, the
/// lowering's own shared-memory round trips, the parameter space) is reported by
/// [`compile`], with the same located diagnostics.
///
/// # Errors
/// As [`compile`]'s.
pub fn check(input: Input<'_>, opts: &Options) -> Result<(), Error> {
    let mut kernel = None;
    front_end(input, opts, &mut kernel, false)
        .map(|_| ())
        .map_err(|e| with_kernel(e, &kernel))
}

/// The kernel name on every diagnostic, and no repeats.
fn with_kernel(e: Error, kernel: &Option<String>) -> Error {
    match e {
        Error::Diagnostics(mut d) => {
            d.dedup();
            for x in &mut d.0 {
                if x.kernel.is_none() {
                    x.kernel.clone_from(kernel);
                }
            }
            Error::Diagnostics(d)
        }
        e => e,
    }
}

/// What the tilec side of a compile produces: the module after the passes, its source's
/// name, the stage timings so far, and the passes' remarks.
type FrontEnd = (
    VerifiedModule,
    String,
    Vec<(&'static str, Duration)>,
    Diagnostics,
);

/// Options, parse, verify, kernel choice, the tilec passes; `kernel` is set to the chosen
/// kernel's symbol once it is known. With `defer_wait_check`, the pipeline's closing
/// `verify-async-waits` is left to the caller ([`check_waits`]).
fn front_end(
    input: Input<'_>,
    opts: &Options,
    kernel: &mut Option<String>,
    defer_wait_check: bool,
) -> Result<FrontEnd, Error> {
    opts.validate()?;
    let mut timings = vec![];
    let t = Instant::now();
    if let (Input::Module(_), Some(n)) = (input, opts.constants.keys().next()) {
        return Err(Error::Options(OptionsError::new(
            "define",
            format!(
                "constant '{n}' is bound, but the input is a built Module, whose kernels are \
                 concrete: constants are bound when text is parsed"
            ),
        )));
    }
    let (mut module, file) = parsed(input, opts)?;
    verify(&module)?;
    select_kernel(&mut module, opts.kernel.as_deref(), &file)?;
    check_bindings(&module, &opts.constants, &file)?;
    *kernel = module.kernels().next().and_then(|k| k.symbol.clone());
    check_source_level(&module)?;
    // Input already lowered to GPU-level ops carries its target: it must be the one asked
    // for (the PTX header and the ops' availability follow it).
    for k in &module.ops {
        if let Some(t) = k.str_attr("target") {
            if t != opts.target.name() {
                let msg = format!(
                    "kernel '@{}' was lowered for {t} ('target' attribute), but the \
                        compilation targets {}",
                    k.symbol.as_deref().unwrap_or("?"),
                    opts.target
                );
                return Err(Error::Diagnostics(Diagnostics(vec![
                    tilec_dialect::Diagnostic::error(k.loc.clone(), msg),
                ])));
            }
        }
    }
    // The passes skip a lowered kernel: an option that configures them would be ignored.
    if let Some(k) = module.kernels().find(|k| k.str_attr("target").is_some()) {
        if let Some(&option) = opts.pass_options_changed().first() {
            return Err(Error::Options(OptionsError::new(
                option,
                format!(
                    "kernel '@{}' ({}) is already lowered (its 'target' is set), and the \
                     passes this option configures do not run on it again: leave the option \
                     out, or compile the source kernel with it",
                    k.symbol.as_deref().unwrap_or("?"),
                    k.loc
                ),
            )));
        }
    }
    check_dot_options(&module, opts)?;
    let dots = dot_kernels(&module);
    for (on, flag) in [(opts.ftz, "ftz"), (opts.fp_fusion, "fp_fusion")] {
        if on {
            for k in &mut module.ops {
                k.attrs
                    .insert(flag.into(), tilec_dialect::Attribute::Bool(true));
            }
        }
    }
    if opts.ctas_per_sm != 1 {
        for k in &mut module.ops {
            k.attrs.insert(
                "ctas_per_sm".into(),
                tilec_dialect::Attribute::Int(i64::from(opts.ctas_per_sm)),
            );
        }
    }
    timings.push(("parse+verify", t.elapsed()));
    let t = Instant::now();
    let pipeline = if defer_wait_check {
        opts.transforming_pipeline()
    } else {
        opts.pipeline()
    };
    let mut pm = PassManager::parse(&pipeline).map_err(Error::Pipeline)?;
    let report = pm.run(&mut module, &mut |_, _, _| {})?;
    timings.push(("tilec passes", t.elapsed()));
    // A cluster is given to the kernels the schedule makes persistent; any other kernel
    // would silently run without one.
    if opts.cluster.size() > 1 && opts.schedule != Schedule::Off {
        if let Some(k) = module.kernels().find(|k| k.attr("cluster").is_none()) {
            return Err(Error::Diagnostics(Diagnostics(vec![
                tilec_dialect::Diagnostic::error(
                    k.loc.clone(),
                    if opts.schedule == Schedule::Static {
                        format!(
                            "--cluster {}: the static schedule gives clusters to GEMM \
                             pipelines only (it multicasts their operand copies), and this \
                             kernel has none: build it without a cluster",
                            opts.cluster
                        )
                    } else {
                        format!(
                            "--cluster {}: the {} schedule gives clusters to the kernels it \
                             makes persistent (GEMM pipelines, or every kernel with \
                             --persistent-kernels all), and this one is not: build it without \
                             a cluster",
                            opts.cluster, opts.schedule
                        )
                    },
                ),
            ])));
        }
    }
    check_num_warps(&module, opts)?;
    check_dot_paths(&module, &dots, opts)?;
    check_schedule_options(&module, opts)?;
    let remarks = Diagnostics(report.diagnostics);
    Ok((VerifiedModule::new(module)?, file, timings, remarks))
}

/// Whether every kernel of `module` (after the passes) is a GEMM pipeline: none has a plain
/// launch (`num_warps`).
fn all_gemm_pipelines(module: &tilec_dialect::Module) -> bool {
    module.kernels().all(|k| k.attr("num_warps").is_none())
}

/// `kernel '@NAME' at FILE:LINE:COL`, as the option refusals name a kernel.
fn kernel_at(k: &tilec_dialect::Operation) -> String {
    format!(
        "kernel '@{}' at {}",
        k.symbol.as_deref().unwrap_or("?"),
        k.loc
    )
}

/// The options that configure only `tile-to-gpu`'s GEMM pipelines (the shared-memory ring,
/// the epilogue store, promotion), as [`Options::set`] names them.
const PIPELINE_OPTIONS: [&str; 3] = ["stages", "epilogue", "promote"];

/// The options that configure only the dots of laid-out kernels, those with a plain launch
/// (`tile-dot-to-wgmma`'s operands, `tile-pipeline-loads`' rings and warp specialisation,
/// `tile-defer-mma`, `tile-pingpong`), as [`Options::set`] names them.
const LAID_OUT_DOT_OPTIONS: [&str; 7] = [
    "load_stages",
    "mma_lookahead",
    "warp_specialize",
    "pingpong",
    "pingpong_body",
    "defer_mma",
    "invariant_a",
];

/// The symbols of `module`'s kernels that have a `tile.dot`.
fn dot_kernels(module: &tilec_dialect::Module) -> Vec<String> {
    module
        .kernels()
        .filter(|k| {
            let mut dot = false;
            k.walk(&mut |o| dot |= o.kind == tilec_dialect::OpKind::Dot);
            dot
        })
        .filter_map(|k| k.symbol.clone())
        .collect()
}

/// [`Error::Options`] when `opts` changes one of [`PIPELINE_OPTIONS`] or
/// [`LAID_OUT_DOT_OPTIONS`] from its default and no kernel of `module` has a `tile.dot`: the
/// option would be silently ignored.
fn check_dot_options(module: &tilec_dialect::Module, opts: &Options) -> Result<(), Error> {
    let changed = opts.pass_options_changed();
    let Some(&option) = changed
        .iter()
        .find(|o| PIPELINE_OPTIONS.contains(o) || LAID_OUT_DOT_OPTIONS.contains(o))
    else {
        return Ok(());
    };
    match module.kernels().next() {
        Some(k) if dot_kernels(module).is_empty() => Err(Error::Options(OptionsError::new(
            option,
            format!(
                "no kernel of the module has a 'tile.dot' ({}), and this option configures \
                 only the passes of kernels with one: leave it out",
                kernel_at(k)
            ),
        ))),
        _ => Ok(()),
    }
}

/// [`Error::Options`] when, after the passes, `opts` changes an option that configures only
/// one of the two paths a dot takes and no kernel of `dots` (the symbols of the kernels that
/// had a `tile.dot`) took that path: [`PIPELINE_OPTIONS`] when every such kernel has a plain
/// launch (its dots laid out), [`LAID_OUT_DOT_OPTIONS`] when every one is a GEMM pipeline
/// (no `num_warps`: `tile-to-gpu` built it).
fn check_dot_paths(
    module: &tilec_dialect::Module,
    dots: &[String],
    opts: &Options,
) -> Result<(), Error> {
    let with_dot = || {
        module
            .kernels()
            .filter(|k| k.symbol.as_ref().is_some_and(|s| dots.contains(s)))
    };
    for option in opts.pass_options_changed() {
        let pipeline = PIPELINE_OPTIONS.contains(&option);
        if !pipeline && !LAID_OUT_DOT_OPTIONS.contains(&option) {
            continue;
        }
        // A pipeline option wants a kernel without a plain launch; a laid-out one, one with.
        if with_dot().any(|k| k.attr("num_warps").is_none() == pipeline) {
            continue;
        }
        let Some(k) = with_dot().next() else { continue };
        let reason = if pipeline {
            format!(
                "no kernel's dot is a GEMM pipeline ({} has a plain launch: its dots are laid \
                 out, by tile-dot-to-wgmma and tile-pipeline-loads), and this option \
                 configures only tile-to-gpu's GEMM pipelines: leave it out",
                kernel_at(k)
            )
        } else {
            format!(
                "every kernel's dot is a GEMM pipeline ({}: tile-to-gpu builds its ring and \
                 warpgroups), and this option configures only the passes of laid-out dots \
                 (tile-dot-to-wgmma, tile-pipeline-loads, tile-defer-mma, tile-pingpong): \
                 leave it out",
                kernel_at(k)
            )
        };
        return Err(Error::Options(OptionsError::new(option, reason)));
    }
    Ok(())
}

/// [`Error::Options`] when `opts` sets `num_warps` or `ctas_per_sm` and no kernel of
/// `module` (after the passes) has a plain launch: warps per CTA are `tile-assign-layouts`'
/// choice and CTAs per SM the plain launch's register budget, while the GEMM pipeline
/// (`tile-to-gpu`) sets its own warpgroups and budget.
fn check_num_warps(module: &tilec_dialect::Module, opts: &Options) -> Result<(), Error> {
    let option = if opts.num_warps != 0 {
        "num_warps"
    } else if opts.ctas_per_sm != 1 {
        "ctas_per_sm"
    } else {
        return Ok(());
    };
    match module.kernels().next() {
        Some(k) if all_gemm_pipelines(module) => Err(Error::Options(OptionsError::new(
            option,
            format!(
                "no kernel of the module has a plain launch ({} is a GEMM pipeline, whose \
                     warpgroups and register budget tile-to-gpu sets): leave the option out",
                kernel_at(k)
            ),
        ))),
        _ => Ok(()),
    }
}

/// [`Error::Options`] when, after the passes, `opts` sets an option of the `persistent` pass
/// that no kernel took: a `schedule` that makes kernels persistent (`static`, `clc`) or a
/// `group_m` where no kernel was made persistent (the pass takes GEMM pipelines, and with
/// `persistent_kernels` `all` every kernel), and `persistent_kernels` `all` where the
/// schedule makes nothing persistent or every kernel is a GEMM pipeline (which `dots`
/// already takes).
fn check_schedule_options(module: &tilec_dialect::Module, opts: &Options) -> Result<(), Error> {
    let changed = opts.pass_options_changed();
    let Some(k) = module.kernels().next() else {
        return Ok(());
    };
    let kernel = kernel_at(k);
    let persistent = module.kernels().any(|k| k.attr("schedule").is_some());
    let makes_persistent = matches!(opts.schedule, Schedule::Static | Schedule::Clc);
    let refuse = |option, reason: String| Err(Error::Options(OptionsError::new(option, reason)));
    if !persistent {
        let plain = if opts.persistent_kernels == PersistentKernels::Dots {
            "; a kernel with a plain launch only with --persistent-kernels all"
        } else {
            ""
        };
        let none = format!(
            "no kernel of the module is made persistent ({kernel} is not a GEMM \
             pipeline{plain})"
        );
        if changed.contains(&"schedule") && makes_persistent {
            return refuse("schedule", format!("{none}: leave the option out"));
        }
        if changed.contains(&"group_m") {
            let why = if makes_persistent {
                none
            } else {
                format!(
                    "the schedule is {}, which makes no kernel persistent",
                    opts.schedule
                )
            };
            return refuse(
                "group_m",
                format!("orders the tiles of persistent kernels, and {why}: leave the option out"),
            );
        }
    }
    if opts.persistent_kernels == PersistentKernels::All {
        if !makes_persistent {
            return refuse(
                "persistent_kernels",
                format!(
                    "the schedule is {}, which makes no kernel persistent: leave the option \
                     out, or choose static or clc",
                    opts.schedule
                ),
            );
        }
        if all_gemm_pipelines(module) {
            return refuse(
                "persistent_kernels",
                format!(
                    "every kernel of the module is a GEMM pipeline ({kernel}), which the \
                     default (dots) already makes persistent: leave the option out"
                ),
            );
        }
    }
    Ok(())
}

/// Whether `ptx` defines the kernel entry `name` (`.entry name(`).
fn ptx_has_entry(ptx: &str, name: &str) -> bool {
    ptx.lines().any(|l| {
        l.split_once(".entry ").is_some_and(|(_, rest)| {
            rest.trim_start()
                .strip_prefix(name)
                .is_some_and(|r| r.starts_with('(') || r.trim().is_empty())
        })
    })
}

/// `verify-async-waits` then `verify-named-barriers` (default budgets) on `m`, and the time
/// they took.
fn check_waits(m: &tilec_dialect::Module) -> (Result<(), Error>, Duration) {
    use tilec_passes::verify_named_barriers as nb;
    let t = Instant::now();
    let r = tilec_passes::verify_async_waits::check_module(m, &Default::default())
        .map(|_| ())
        .and_then(|_| nb::check_module(m, nb::DEFAULT_TRIPS, nb::DEFAULT_MAX_STATES).map(|_| ()))
        .map_err(Error::Diagnostics);
    (r, t.elapsed())
}

/// [`compile`]'s work; `kernel` is set to the chosen kernel's symbol once it is known.
///
/// The wait check (`verify-async-waits`, the pipeline's last pass, which only reads the
/// module) runs on a second thread beside the lowering and the MLIR stage; its errors are
/// reported before any of theirs, as if it had run first, and nothing is returned until it
/// has passed.
fn compile_kernel(
    input: Input<'_>,
    opts: &Options,
    kernel: &mut Option<String>,
) -> Result<Kernel, Error> {
    let defer = opts.checks_waits();
    let (vm, file, mut timings, remarks) = front_end(input, opts, kernel, defer)?;
    std::thread::scope(|s| {
        let check = defer.then(|| {
            deep_stack(s, "tilec-check-waits", || check_waits(vm.module()))
                .ok_or_else(|| check_waits(vm.module()))
        });
        let lower_here = || {
            let mut t = vec![];
            let r = lower(&vm, &file, opts, &mut t);
            (r, t)
        };
        let (lowered, steps) = match deep_stack(s, "tilec-lower", lower_here) {
            Some(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            None => lower_here(),
        };
        timings.extend(steps);
        match check {
            Some(Ok(h)) => {
                let (r, time) = h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                r?;
                timings.push(("checkers (second thread)", time));
            }
            Some(Err((r, time))) => {
                r?;
                timings.push(("checkers", time));
            }
            None => {}
        }
        let mut k = lowered?;
        k.timings = timings;
        k.remarks = remarks;
        Ok(k)
    })
}

/// The stack reserved for a compile's threads, in bytes (virtual memory, committed only as
/// it is used): the lowering evaluates a GEMM epilogue's chain of tile ops recursively, about
/// 1 KiB of stack per op, so a 10,000-op epilogue needs more than a main thread's 8 MiB.
const COMPILE_STACK: usize = 1 << 30;

/// `f` on a scoped thread named `name` with a [`COMPILE_STACK`] stack; `None` where the
/// thread cannot be started (then the caller runs `f` itself).
fn deep_stack<'s, 'e, T: Send + 's>(
    s: &'s std::thread::Scope<'s, 'e>,
    name: &str,
    f: impl FnOnce() -> T + Send + 's,
) -> Option<std::thread::ScopedJoinHandle<'s, T>> {
    std::thread::Builder::new()
        .name(name.into())
        .stack_size(COMPILE_STACK)
        .spawn_scoped(s, f)
        .ok()
}

/// The lowering, the MLIR stage and ptxas of a module the tilec passes produced; the
/// stage timings are appended to `timings` (the returned kernel's are empty).
fn lower(
    vm: &VerifiedModule,
    file: &str,
    opts: &Options,
    timings: &mut Vec<(&'static str, Duration)>,
) -> Result<Kernel, Error> {
    let t = Instant::now();
    // PTX in-process: the module is built once, in the MLIR driver's context
    // (`build_ptx`); the other outputs build it from a trial-built kernel.
    let one_build = matches!(opts.emit, Emit::Ptx | Emit::Cubin) && opts.mlir_child.is_none();
    let lowered = if one_build {
        prepare_tile_to_nvvm(vm)
    } else {
        convert_tile_to_nvvm(vm)
    };
    let lowered = lowered.map_err(Diagnostics::from)?;
    let Some(mut k) = lowered.into_iter().next() else {
        let loc = tilec_dialect::Location::new(std::sync::Arc::from(file), 1, 1);
        return Err(Error::Diagnostics(Diagnostics(vec![
            tilec_dialect::Diagnostic::error(loc, "the module holds no kernel"),
        ])));
    };
    timings.push(("convert-tile-to-nvvm", t.elapsed()));
    let name = k.manifest.kernel.clone();
    tilec_lowering::set_fatal_error_subject(&format!("kernel @{name} for {}", opts.target));
    let mut spec = TargetSpec::new(opts.target.name(), k.ptx_version);
    spec.opt_level = opts.opt_level.level();
    spec.llvm_passes = opts.llvm_passes.clone();
    let t = Instant::now();
    let mut mlir_timings = vec![];
    let (text, ptx) = match opts.emit {
        Emit::Tile => (tilec_dialect::print_module(vm.module()), String::new()),
        Emit::Mlir => (k.mlir(), String::new()),
        Emit::Llvm => match &opts.mlir_child {
            Some(exe) => (
                mlir_stage_in_child(
                    &k.mlir(),
                    &spec,
                    Product::LlvmIr,
                    exe,
                    opts.mlir_child_timeout,
                )?,
                String::new(),
            ),
            None => (k.to_llvm_ir(&spec)?, String::new()),
        },
        Emit::Ptx | Emit::Cubin => {
            let p = match &opts.mlir_child {
                Some(exe) => mlir_stage_in_child(
                    &k.mlir(),
                    &spec,
                    Product::Ptx,
                    exe,
                    opts.mlir_child_timeout,
                )?,
                None => {
                    let (p, steps) = k.build_ptx(&spec).map_err(|e| match e {
                        BuildError::Lowering(d) => Error::Diagnostics(Diagnostics(vec![*d])),
                        BuildError::Mlir(e) => Error::Mlir(e),
                    })?;
                    mlir_timings = steps;
                    p
                }
            };
            (p.clone(), p)
        }
    };
    timings.push(("MLIR", t.elapsed()));
    // Only a user's LLVM pipeline (--llvm-passes) can drop the kernel; say so rather than
    // hand out a PTX file that launches nothing.
    if matches!(opts.emit, Emit::Ptx | Emit::Cubin) && !ptx_has_entry(&ptx, &name) {
        return Err(Error::Diagnostics(Diagnostics(vec![
            tilec_dialect::Diagnostic::error(
                vm.module()
                    .kernels()
                    .find(|o| o.symbol.as_deref() == Some(name.as_str()))
                    .map_or_else(
                        || tilec_dialect::Location::new(std::sync::Arc::from(file), 1, 1),
                        |o| o.loc.clone(),
                    ),
                format!(
                    "the PTX has no '.entry {name}': the LLVM pass pipeline removed the kernel \
                     (--llvm-passes {:?})",
                    opts.llvm_passes.as_deref().unwrap_or("")
                ),
            ),
        ])));
    }
    let mut cubin = vec![];
    if opts.emit == Emit::Cubin {
        let t = Instant::now();
        cubin = ptxas::assemble(&ptx, opts.target)?;
        timings.push(("ptxas", t.elapsed()));
    }
    Ok(Kernel {
        name,
        text,
        ptx,
        cubin,
        manifest: k.manifest,
        timings: vec![],
        mlir_timings,
        remarks: Diagnostics(vec![]),
    })
}

#[cfg(test)]
mod option_class_tests {
    use super::*;
    use tilec_dialect::Target;

    /// The hand-kept option classes name options that exist, that [`Options::set`] takes,
    /// and whose change from the default `pass_options_changed` reports (so the
    /// applicability checks see them); no option is in both classes.
    #[test]
    fn option_classes_name_settable_pass_options() {
        for &name in PIPELINE_OPTIONS.iter().chain(LAID_OUT_DOT_OPTIONS.iter()) {
            assert!(
                Options::NAMES.contains(&name),
                "{name} is not an option name"
            );
            assert!(
                !(PIPELINE_OPTIONS.contains(&name) && LAID_OUT_DOT_OPTIONS.contains(&name)),
                "{name} is in both classes"
            );
            // A non-default value for each: the first of these that `set` takes.
            let mut o = Options::new(Target::Sm90a);
            let set = ["6", "true", "tma", "on", "smem"]
                .iter()
                .any(|v| o.set(name, v).is_ok() && o.pass_options_changed().contains(&name));
            assert!(set, "{name}: no value makes pass_options_changed report it");
        }
    }
}
