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
//! `async-wait-placement` → `verify-async-waits` → `convert-tile-to-nvvm` → MLIR's
//! `convert-nvvm-to-llvm`, `nvvm-attach-target`, and MLIR's NVVM serializer to PTX with
//! tilec's LLVM pass pipeline (`tilec::lowering::LLVM_PIPELINE`).
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
use tilec_dialect::{parse, verify, Diagnostics, Module, VerifiedModule};
use tilec_lowering::{
    convert_tile_to_nvvm, mlir_stage_in_child, prepare_tile_to_nvvm, BuildError, Manifest, Product,
    TargetSpec,
};
use tilec_passes::PassManager;

mod options;
pub mod ptxas;
mod target_info;
pub use options::{
    ClusterShape, Emit, EpilogueStore, OptLevel, Options, OptionsError, Promote, Schedule,
    NUM_WARPS,
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
    /// then `verify-async-waits`, which runs on a second thread beside the last two).
    pub timings: Vec<(&'static str, Duration)>,
    /// The steps of the MLIR stage when emitting PTX (setup, parse+verify, then each MLIR
    /// pass; see `tilec_lowering::StageTimings`); empty for the other outputs.
    pub mlir_timings: Vec<(&'static str, Duration)>,
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
    /// The options do not go together ([`Options::validate`]).
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
/// the checkers verify, so one written by
/// hand into a source kernel is an error at that op. (A fully GPU-level kernel, with its
/// `target`, is compiled as it is, its waits checked by `verify-async-waits`.)
///
/// # Errors
/// The first GPU-level op of each source kernel.
fn check_source_level(m: &tilec_dialect::Module) -> Result<(), Error> {
    use tilec_dialect::Diagnostic;
    let mut ds = vec![];
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

/// Keep only the kernel to compile: `name`, or the module's only kernel.
///
/// # Errors
/// No kernel, a `name` the module lacks, or several kernels and no `name`.
fn select_kernel(
    m: &mut tilec_dialect::Module,
    name: Option<&str>,
    file: &str,
) -> Result<(), Error> {
    use tilec_dialect::{Diagnostic, Location};
    let names: Vec<String> = m
        .kernels()
        .map(|k| format!("@{}", k.symbol.as_deref().unwrap_or("?")))
        .collect();
    let fail = |loc: Location, msg: String| {
        Err(Error::Diagnostics(Diagnostics(vec![Diagnostic::error(
            loc, msg,
        )])))
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
    compile_kernel(input, opts, &mut kernel).map_err(|e| with_kernel(e, &kernel))
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
/// name, and the stage timings so far.
type FrontEnd = (VerifiedModule, String, Vec<(&'static str, Duration)>);

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
    let (mut module, file) = match input {
        Input::Text { source, file } => (parse(source, file)?, file.to_string()),
        Input::Module(m) => (m.clone(), "<module>".to_string()),
    };
    verify(&module)?;
    select_kernel(&mut module, opts.kernel.as_deref(), &file)?;
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
    if opts.ftz {
        for k in &mut module.ops {
            k.attrs
                .insert("ftz".into(), tilec_dialect::Attribute::Bool(true));
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
    pm.run(&mut module, &mut |_, _, _| {})?;
    timings.push(("tilec passes", t.elapsed()));
    Ok((VerifiedModule::new(module)?, file, timings))
}

/// `verify-async-waits` (default budgets) on `m`, and the time it took.
fn check_waits(m: &tilec_dialect::Module) -> (Result<(), Error>, Duration) {
    let t = Instant::now();
    let r = tilec_passes::verify_async_waits::check_module(m, &Default::default())
        .map(|_| ())
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
    let (vm, file, mut timings) = front_end(input, opts, kernel, defer)?;
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
                timings.push(("verify-async-waits (second thread)", time));
            }
            Some(Err((r, time))) => {
                r?;
                timings.push(("verify-async-waits", time));
            }
            None => {}
        }
        let mut k = lowered?;
        k.timings = timings;
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
    })
}
