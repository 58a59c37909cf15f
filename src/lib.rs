//! # tilec: tile-level GPU programs to PTX for Hopper and Blackwell
//!
//! The facade a tensor compiler calls. [`compile`] takes IR text (or a module built with
//! [`dialect::Builder`]), runs the default pipeline for the target and returns the PTX and
//! its launch manifest. It never panics on bad input and never lets MLIR abort the process:
//! the IR is verified, and the target's limits checked, before MLIR is built.
//!
//! ```no_run
//! let src = std::fs::read_to_string("examples/gemm_bf16.tile").unwrap();
//! let k = tilec::compile(tilec::Input::Text { source: &src, file: "gemm_bf16.tile" },
//!                        &tilec::Options::new(tilec::dialect::Target::Sm90a)).unwrap();
//! assert!(k.ptx.contains(".target sm_90a"));
//! println!("{}", k.manifest.to_json());
//! ```
//!
//! Pipeline (each pass usable alone from `tile-opt`): `tile-simplify` →
//! `persistent{schedule group_m}` → `tile-to-gpu{target stages}` →
//! `async-wait-placement` → `verify-async-waits` → `convert-tile-to-nvvm` → MLIR's
//! `convert-nvvm-to-llvm`, `nvvm-attach-target`, and MLIR's NVVM serializer to PTX with
//! tilec's LLVM pass pipeline (`tilec::lowering::LLVM_PIPELINE`).
//!
//! Dependencies: the workspace crates, and `thiserror` for [`Error`].

#![deny(missing_docs)]

pub use tilec_dialect as dialect;
pub use tilec_lowering as lowering;
pub use tilec_passes as passes;

use std::time::{Duration, Instant};
use tilec_dialect::{parse, verify, Diagnostics, Module, Target, VerifiedModule};
use tilec_lowering::{convert_tile_to_nvvm, mlir_stage_in_child, Manifest, Product, TargetSpec};
use tilec_passes::PassManager;

/// What to compile.
pub enum Input<'a> {
    /// IR text and the file name used in diagnostics.
    Text {
        /// The IR.
        source: &'a str,
        /// Its name in `file:line:col`.
        file: &'a str,
    },
    /// A module built in memory (it is verified first).
    Module(Module),
}

/// Where to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// The GPU-level tile IR after the tilec passes.
    Tile,
    /// The MLIR module handed to MLIR.
    Mlir,
    /// LLVM IR of the kernel (after MLIR's NVVM lowering and LLVM's optimisation).
    Llvm,
    /// PTX.
    Ptx,
}

/// Compilation options.
#[derive(Clone, Debug)]
pub struct Options {
    /// Target GPU.
    pub target: Target,
    /// Shared-memory ring depth (`tile-to-gpu` `stages`), 2 to 8.
    pub stages: u32,
    /// How the epilogue stores C (`tile-to-gpu` `epilogue`): `"direct"` (default, from the
    /// accumulator registers) or `"tma"` (staged in shared memory, stored with TMA; sm_90a).
    pub epilogue: &'static str,
    /// Promote each k tile's MMA result into the f32 sum (`tile-to-gpu` `promote`): the
    /// precise fp8 accumulation on Hopper; needs an N tile of at most 128 with an M tile of
    /// 128 on wgmma (three accumulators per thread: the sum, the part being added, the next
    /// part in flight). `None` (default): `auto`, promoting fp8 MMAs on wgmma when they
    /// fit; `Some(true)` asks for it (an error where they do not fit); `Some(false)` never.
    pub promote: Option<bool>,
    /// Where to stop.
    pub emit: Emit,
    /// Run `verify-async-waits` after placement (default true).
    pub check_waits: bool,
    /// The `persistent` schedule: `static` (default on sm_90a: a strided persistent loop,
    /// measured 1.02 of cuBLAS at 8192³ against 0.99 without, docs/performance.md), `clc`
    /// (default on sm_100 and sm_100a: try_cancel work stealing), `none` (default on
    /// sm_90: one tile per CTA in grouped order), or `off` (no `persistent`).
    pub schedule: &'static str,
    /// CTAs per cluster along x for the `clc` schedule (1, 2 or 4; > 1 needs sm_100a: the
    /// multicast try_cancel).
    pub cluster: u32,
    /// Tiles of M swept per group for L2 reuse (`persistent` `group_m`; 0 = row-major).
    pub group_m: u32,
    /// Run `tile-simplify` first (default true when the pass exists).
    pub simplify: bool,
    /// LLVM's optimisation level for the NVPTX back end (0 to 3, default 3).
    pub opt_level: u32,
    /// The LLVM pass pipeline at `opt_level` 3, as `opt -passes=` reads it; `None` (the
    /// default): tilec's (`tilec::lowering::LLVM_PIPELINE`).
    pub llvm_passes: Option<String>,
    /// Warps per CTA of a kernel without a dot (`tile-assign-layouts` `num-warps`): a power
    /// of two from 1 to 32, or 0 (the default) to let the pass choose from the tiles.
    pub num_warps: u32,
    /// The kernel to compile, by symbol (`gemm` or `@gemm`), when the module holds several;
    /// `None` (the default): the module must hold exactly one.
    pub kernel: Option<String>,
    /// Run the MLIR/LLVM stage (`--emit ptx` and `--emit llvm`) in a child process: the path
    /// of a `tile-compile` binary (`tilec::lowering::mlir_stage_in_child`). For callers that
    /// compile untrusted input: an LLVM fatal error or a crash in MLIR/LLVM then fails this
    /// compile with [`Error::Mlir`] (`MlirError::Child`) instead of ending the caller's
    /// process. `None` (the default): in process. The child's stage timings are not
    /// reported (`Kernel::mlir_timings` is empty).
    pub mlir_child: Option<std::path::PathBuf>,
    /// How long the child of `mlir_child` may run before it is killed and the compile fails
    /// with `MlirError::Child` (default `tilec::lowering::CHILD_TIMEOUT`, 120 s).
    pub mlir_child_timeout: std::time::Duration,
}

impl Options {
    /// Defaults for `target`: 4 stages, PTX, waits checked.
    pub fn new(target: Target) -> Self {
        // static on sm_90a (wgmma), clc where try_cancel exists; on sm_90 `none` (grouped
        // order, one tile per CTA): with mma.sync the static loop's extra live values spill
        // at the 168-register cap (docs/performance.md).
        let schedule = if target.has_wgmma() {
            "static"
        } else if target.has_try_cancel() {
            "clc"
        } else {
            "none"
        };
        Options {
            target,
            stages: 4,
            epilogue: "direct",
            promote: None,
            emit: Emit::Ptx,
            check_waits: true,
            schedule,
            cluster: 1,
            group_m: 8,
            simplify: true,
            opt_level: 3,
            llvm_passes: None,
            num_warps: 0,
            kernel: None,
            mlir_child: None,
            mlir_child_timeout: tilec_lowering::CHILD_TIMEOUT,
        }
    }

    /// The tilec pass pipeline these options select, as `tile-opt` text.
    pub fn pipeline(&self) -> String {
        let mut p = String::new();
        if self.simplify && tilec_passes::lookup("tile-simplify").is_some() {
            p.push_str("tile-simplify,");
        }
        if self.schedule != "off" {
            if self.schedule == "clc" {
                p.push_str(&format!(
                    "persistent{{schedule=clc group_m={} cluster={} dot-kernels-only=true}},",
                    self.group_m, self.cluster
                ));
            } else {
                p.push_str(&format!(
                    "persistent{{schedule={} group_m={} dot-kernels-only=true}},",
                    self.schedule, self.group_m
                ));
            }
        }
        p.push_str(&format!(
            "tile-to-gpu{{target={} stages={}{}{}}}",
            self.target,
            self.stages,
            if self.epilogue == "tma" {
                " epilogue=tma"
            } else {
                ""
            },
            match self.promote {
                Some(true) => " promote=true",
                Some(false) => " promote=false",
                None => "",
            }
        ));
        // Kernels without a dot (tile-to-gpu leaves them): layouts and a plain launch.
        // (`tile-hoist-loads` is not in the default pipeline: on the H200 it left RMSNorm
        // as fast and made LayerNorm 22% slower, from the registers the early loads hold;
        // docs/performance.md.)
        p.push_str(&format!(
            ",tile-assign-layouts{{target={} num-warps={}}}",
            self.target, self.num_warps
        ));
        if tilec_passes::lookup("async-wait-placement").is_some() {
            p.push_str(",async-wait-placement");
            if self.check_waits && tilec_passes::lookup("verify-async-waits").is_some() {
                p.push_str(",verify-async-waits");
            }
        }
        p
    }
}

/// A compiled kernel.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// The kernel's name.
    pub name: String,
    /// What `emit` asked for: PTX, LLVM IR, MLIR or tile IR text.
    pub text: String,
    /// The PTX (same as `text` when emitting PTX; empty otherwise).
    pub ptx: String,
    /// The launch manifest.
    pub manifest: Manifest,
    /// Wall time per stage (parse+verify, tilec passes, lowering to MLIR, MLIR to the output).
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
    use tilec_dialect::{Diagnostic, OpClass};
    let mut ds = vec![];
    // `target` marks tile-to-gpu's output, `schedule` persistent's: their GPU-level ops are
    // the passes' own.
    let untouched =
        |k: &&tilec_dialect::Operation| k.attr("target").is_none() && k.attr("schedule").is_none();
    for k in m.kernels().filter(untouched) {
        let mut first = None;
        k.walk(&mut |o| {
            if first.is_none() && o.kind.class() == OpClass::Gpu {
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
        Err(Error::Diagnostics(Diagnostics(ds)))
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
/// # Errors
/// See [`Error`]. Every error carries a location in the input where it has one.
pub fn compile(input: Input<'_>, opts: &Options) -> Result<Kernel, Error> {
    let mut timings = vec![];
    let t = Instant::now();
    let (mut module, file) = match input {
        Input::Text { source, file } => (parse(source, file)?, file.to_string()),
        Input::Module(m) => (m, "<module>".to_string()),
    };
    verify(&module)?;
    select_kernel(&mut module, opts.kernel.as_deref(), &file)?;
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
    timings.push(("parse+verify", t.elapsed()));
    let t = Instant::now();
    let mut pm = PassManager::parse(&opts.pipeline()).map_err(Error::Pipeline)?;
    pm.run(&mut module, &mut |_, _, _| {})?;
    timings.push(("tilec passes", t.elapsed()));
    let vm = VerifiedModule::new(module)?;
    let t = Instant::now();
    let lowered = convert_tile_to_nvvm(&vm).map_err(Diagnostics::from)?;
    let Some(k) = lowered.into_iter().next() else {
        let loc = tilec_dialect::Location::new(std::sync::Arc::from(file.as_str()), 1, 1);
        return Err(Error::Diagnostics(Diagnostics(vec![
            tilec_dialect::Diagnostic::error(loc, "the module holds no kernel"),
        ])));
    };
    timings.push(("convert-tile-to-nvvm", t.elapsed()));
    let name = k.manifest.kernel.clone();
    tilec_lowering::set_fatal_error_subject(&format!("kernel @{name} for {}", opts.target));
    let mut spec = TargetSpec::new(opts.target.name(), k.ptx_version);
    spec.opt_level = opts.opt_level.min(3);
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
        Emit::Ptx => {
            let p = match &opts.mlir_child {
                Some(exe) => mlir_stage_in_child(
                    &k.mlir(),
                    &spec,
                    Product::Ptx,
                    exe,
                    opts.mlir_child_timeout,
                )?,
                None => {
                    let (p, steps) = k.to_ptx(&spec)?;
                    mlir_timings = steps;
                    p
                }
            };
            (p.clone(), p)
        }
    };
    timings.push(("MLIR", t.elapsed()));
    Ok(Kernel {
        name,
        text,
        ptx,
        manifest: k.manifest,
        timings,
        mlir_timings,
    })
}
