//! The MLIR driver: MLIR text (`gpu` + `llvm` + `nvvm` dialects) → PTX or LLVM IR.
//!
//! The input is a builtin module with the `gpu.container_module` attribute holding exactly
//! one `gpu.module`, whose kernels are `llvm.func`s marked `nvvm.kernel` and written with
//! `llvm.*` and `nvvm.*` ops. [`mlir_to_ptx`] runs, each stage in its own pass-manager run
//! so that a failure names its pass:
//!
//! 1. `convert-nvvm-to-llvm` (NVVM ops that lower to inline PTX, e.g.
//!    `nvvm.mbarrier.try_wait.parity`),
//! 2. `reconcile-unrealized-casts`,
//! 3. `nvvm-attach-target{chip=… features=+ptxNN O=…}`,
//! 4. the serialization of the `gpu.module` (`tilecSerializeGpuModule` in
//!    `lowering/cpp/register.cpp`: MLIR's NVVM serializer, the one `gpu-module-to-binary`
//!    runs, with tilec's LLVM pass pipeline [`LLVM_PIPELINE`] at -O3): translation to LLVM
//!    IR, LLVM's optimisation passes, NVPTX code generation (at `CodeGenOptLevel::Default`
//!    where `opt_level` is 3: `Aggressive` adds two GVN runs to NVPTX's IR passes, 5–20 % of
//!    a dot-free kernel's compile, for PTX with as many instructions or more on every
//!    example),
//!
//! and returns the PTX text. [`mlir_to_llvm_ir`] runs the same stages and returns the LLVM
//! module LLVM's NVPTX back end is given (target triple and data layout set, optimised at
//! `opt_level`) as text.
//!
//! # Errors, and the inputs that abort
//!
//! Every MLIR diagnostic (parser, verifier, passes, translation) is captured by a handler on
//! the context and returned in the [`MlirError`]; nothing is printed to stderr. Checked with
//! MLIR 22.1:
//!
//! - malformed text, unknown ops, ill-typed ops → [`MlirError::Parse`] (MLIR's parser also
//!   runs the verifier, so verifier errors in the input arrive here too);
//! - an `nvvm` op the chip lacks where the op declares it (`NVVMRequiresSM`/`NVVMRequiresSMa`
//!   in `NVVMOps.td`, e.g. `nvvm.wgmma.*` on `sm_80`/`sm_90`/`sm_100`, or
//!   `nvvm.clusterlaunchcontrol.try.cancel` on `sm_90a`) → [`MlirError::Pass`] for
//!   `nvvm-attach-target` (the verifier that runs after it checks ops against the attached
//!   `#nvvm.target`), message `'nvvm.…' op is not supported on sm_80`;
//! - an unknown chip, an unknown PTX ISA version, or a PTX ISA version below the chip's
//!   minimum → [`MlirError::Target`], checked here *before* MLIR runs, because LLVM would
//!   either print "not a recognized processor" to stderr and carry on, or (too old a PTX
//!   version: "PTX version 8.0 does not support target 'sm_100'") call `report_fatal_error`,
//!   which exits the process.
//!
//! Inputs that still **end the process** (LLVM `report_fatal_error`, which cannot be caught:
//! LLVM exits or aborts after calling any installed handler): an intrinsic the NVPTX back end
//! cannot select for the chip although MLIR's verifier let it through — checked example:
//! `nvvm.clusterlaunchcontrol.try.cancel multicast, …` on `sm_100` ("Cannot select:
//! intrinsic %llvm.nvvm.clusterlaunchcontrol.try_cancel.async.multicast.shared"; it needs
//! `sm_100a`). The tile-level verifier must reject target-specific ops the target lacks
//! before MLIR is built (DESIGN.md, "Targets"); this driver is not a safety net for that.
//!
//! # Concurrency
//!
//! Dialects and passes are registered once per process (registering passes twice crashes
//! MLIR); the registry is read-only afterwards. Each call creates its own single-threaded
//! MLIR context (and MLIR's serializer its own LLVM context), so calls on several threads
//! run in parallel. LLVM's command-line options are process-wide: the one the driver sets
//! per target (`llvm_options`) is held by a reader-writer lock, so compiles that need the
//! same value run together and one that needs the other waits for them to finish.

use melior::{
    diagnostic::{Diagnostic as MlirDiagnostic, DiagnosticSeverity},
    dialect::DialectRegistry,
    ir::{block::BlockLike, operation::OperationLike, Location, Module, Operation, OperationRef},
    pass::PassManager,
    utility::parse_pass_pipeline,
    Context, StringRef,
};
use std::{
    cell::RefCell,
    ffi::c_char,
    fmt,
    rc::Rc,
    sync::{OnceLock, RwLock, RwLockReadGuard},
    time::{Duration, Instant},
};

/// The buffer name the input text is parsed under; diagnostics about the text itself are
/// located as `input.mlir:LINE:COL`. Locations written in the text (`loc("k.tile":3:5)`)
/// are reported as written.
pub const SOURCE_NAME: &str = "input.mlir";

/// Which GPU and PTX ISA to build for.
///
/// `chip` is an LLVM NVPTX processor name (`sm_90a`, `sm_100`, …); `ptx_version` is the PTX
/// ISA version as `(major, minor)` — `(8, 0)` becomes the `+ptx80` feature and
/// `.version 8.0` in the PTX; `opt_level` is LLVM's optimisation level, 0 to 3.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TargetSpec {
    /// The `.target` of the PTX, e.g. `"sm_90a"`.
    pub chip: String,
    /// The PTX ISA version `(major, minor)`, e.g. `(8, 0)`; at least [`min_ptx_version`].
    pub ptx_version: (u32, u32),
    /// LLVM optimisation level, 0–3 (code generation at most at 2, see the module docs).
    pub opt_level: u32,
    /// The LLVM pass pipeline run at `opt_level` 3, as `opt -passes=` reads it; `None`:
    /// [`LLVM_PIPELINE`]; an empty string: LLVM's `default<O3>`. At levels 0–2 LLVM's
    /// `default<On>` runs. One LLVM cannot parse is an [`MlirError::Llvm`].
    pub llvm_passes: Option<String>,
}

/// tilec's LLVM pass pipeline at -O3 (new pass manager syntax, as `opt -passes=` reads it).
///
/// It is LLVM 22's `default<O3>` for the NVPTX target less the passes that change nothing in the
/// writer's IR, and `tilec-split-aggregates` (`lowering/cpp/register.cpp`) last. Found by removing
/// `default<O3>`'s passes one at a time, keeping a removal only when the PTX stayed byte-identical
/// for every example on sm_90a, sm_90, sm_100 and sm_100a and for the option snapshots
/// (`tests/precise`); `tests/ptxas.rs` compares it with `default<O3>` on every example: the
/// attention kernels on sm_90a, softmax_online and gemm_splitk_last_slice on sm_90a differ by
/// a few lines (the reasons are in that test). `nvvm-reflect` and `nvvm-intr-range` (the
/// ranges of `%tid`, `%ctaid` and the like, from the kernel's `maxntid`) are what the NVPTX
/// target adds at the start of every default pipeline. `slp-vectorizer` stays for the targets
/// with `f32x2` arithmetic, which it forms on sm_100 ([`TargetSpec::llvm_pipeline`] drops it
/// elsewhere), and `loop-unroll` although only some kernels need it (their own short loops).
/// What is gone: the inliner and call-graph passes (a kernel is one function), coroutine,
/// OpenMP and loop-vectorizer passes, SROA (the writer makes no allocas), DSE, MemCpyOpt,
/// JumpThreading, VectorCombine, 3 of the 8 InstCombine runs and 5 of the 8 SimplifyCFG runs,
/// and SLP on targets without `f32x2`. `tile-compile
/// --llvm-passes 'default<O3>'` runs LLVM's own.
pub const LLVM_PIPELINE: &str = concat!(
    "nvvm-reflect,",
    "function(nvvm-intr-range,",
    "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;no-switch-range-to-icmp;",
    "no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;",
    "no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;",
    "simplify-cond-branch;no-speculate-unpredictables>,",
    "early-cse<>),",
    "ipsccp,",
    "function(",
    "instcombine<max-iterations=1;no-verify-fixpoint>,",
    "early-cse<memssa>,",
    "speculative-execution<only-if-divergent-target>,",
    "correlated-propagation,",
    "instcombine<max-iterations=1;no-verify-fixpoint>,",
    "reassociate,",
    "loop-mssa(loop-instsimplify,loop-simplifycfg,licm<no-allowspeculation>,",
    "loop-rotate<header-duplication;no-prepare-for-lto>,licm<allowspeculation>,",
    "simple-loop-unswitch<nontrivial;trivial>),",
    "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;",
    "no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;",
    "no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;",
    "simplify-cond-branch;no-speculate-unpredictables>,",
    "instcombine<max-iterations=1;no-verify-fixpoint>,",
    "loop(loop-idiom,indvars,extra-simple-loop-unswitch-passes,loop-deletion,",
    "loop-unroll-full),",
    "gvn<>,",
    "sccp,",
    "instcombine<max-iterations=1;no-verify-fixpoint>,",
    "correlated-propagation,",
    "loop-mssa(licm<allowspeculation>),",
    "infer-alignment,",
    "simplifycfg<bonus-inst-threshold=1;forward-switch-cond;switch-range-to-icmp;",
    "switch-to-arithmetic;switch-to-lookup;no-keep-loops;hoist-common-insts;",
    "no-hoist-loads-stores-with-cond-faulting;sink-common-insts;speculate-blocks;",
    "simplify-cond-branch;no-speculate-unpredictables>,",
    "slp-vectorizer,",
    "loop-unroll<O3>,",
    "infer-alignment,",
    "instcombine<max-iterations=1;no-verify-fixpoint>,",
    "loop-mssa(licm<allowspeculation>),",
    "div-rem-pairs,",
    "tilec-split-aggregates),",
    "globaldce"
);

impl TargetSpec {
    /// A target with `opt_level` 3.
    pub fn new(chip: impl Into<String>, ptx_version: (u32, u32)) -> Self {
        Self {
            chip: chip.into(),
            ptx_version,
            opt_level: 3,
            llvm_passes: None,
        }
    }

    /// The LLVM pass pipeline at -O3: `llvm_passes`, or [`LLVM_PIPELINE`], less its
    /// `slp-vectorizer` for a chip without packed f32 arithmetic
    /// ([`tilec_dialect::Target::has_f32x2`]): there it forms nothing (the PTX is the same)
    /// and took 3 % of a LayerNorm's compile.
    pub fn llvm_pipeline(&self) -> std::borrow::Cow<'_, str> {
        match &self.llvm_passes {
            Some(p) => p.as_str().into(),
            None if !packed_f32(&self.chip) => LLVM_PIPELINE.replace("slp-vectorizer,", "").into(),
            None => LLVM_PIPELINE.into(),
        }
    }

    /// Hopper with wgmma: `sm_90a`, PTX ISA 8.0.
    pub fn sm_90a() -> Self {
        Self::new("sm_90a", (8, 0))
    }

    /// Portable Hopper: `sm_90`, PTX ISA 8.0.
    pub fn sm_90() -> Self {
        Self::new("sm_90", (8, 0))
    }

    /// Blackwell, forward-compatible: `sm_100`, PTX ISA 8.6 (the first with try_cancel).
    pub fn sm_100() -> Self {
        Self::new("sm_100", (8, 6))
    }

    /// Arch-specific Blackwell: `sm_100a`, PTX ISA 8.6.
    pub fn sm_100a() -> Self {
        Self::new("sm_100a", (8, 6))
    }

    /// The LLVM feature string for the PTX ISA version, e.g. `+ptx80`.
    pub fn ptx_feature(&self) -> String {
        format!("+ptx{}{}", self.ptx_version.0, self.ptx_version.1)
    }

    /// Checks the chip, PTX version and optimisation level against what LLVM 22's NVPTX back
    /// end accepts (see [`min_ptx_version`]), so that LLVM never sees a combination it would
    /// ignore with a message on stderr or die on.
    pub fn validate(&self) -> Result<(), MlirError> {
        let Some(min) = min_ptx_version(&self.chip) else {
            return Err(MlirError::Target(format!(
                "unknown chip `{}`; LLVM 22's NVPTX back end knows: {}",
                self.chip,
                CHIP_MIN_PTX
                    .iter()
                    .map(|(c, _)| *c)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        if !PTX_VERSIONS.contains(&self.ptx_version) {
            return Err(MlirError::Target(format!(
                "unknown PTX ISA version {}.{}; LLVM 22 knows: {}",
                self.ptx_version.0,
                self.ptx_version.1,
                PTX_VERSIONS
                    .iter()
                    .map(|(a, b)| format!("{a}.{b}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        if self.ptx_version < min {
            return Err(MlirError::Target(format!(
                "PTX ISA {}.{} does not support {}; it needs at least {}.{}",
                self.ptx_version.0, self.ptx_version.1, self.chip, min.0, min.1
            )));
        }
        if self.opt_level > 3 {
            return Err(MlirError::Target(format!(
                "optimisation level {} is out of range 0..=3",
                self.opt_level
            )));
        }
        if self.llvm_pipeline().contains('\0') {
            return Err(MlirError::Target(
                "the LLVM pass pipeline contains a NUL character".into(),
            ));
        }
        Ok(())
    }
}

/// Every processor of LLVM 22's NVPTX back end with the least PTX ISA version it accepts
/// (measured with `llc -mcpu=… -mattr=+ptxNN` against LLVM 22.1).
const CHIP_MIN_PTX: &[(&str, (u32, u32))] = &[
    ("sm_20", (3, 2)),
    ("sm_21", (3, 2)),
    ("sm_30", (3, 2)),
    ("sm_32", (4, 0)),
    ("sm_35", (3, 2)),
    ("sm_37", (4, 1)),
    ("sm_50", (4, 0)),
    ("sm_52", (4, 1)),
    ("sm_53", (4, 2)),
    ("sm_60", (5, 0)),
    ("sm_61", (5, 0)),
    ("sm_62", (5, 0)),
    ("sm_70", (6, 0)),
    ("sm_72", (6, 1)),
    ("sm_75", (6, 3)),
    ("sm_80", (7, 0)),
    ("sm_86", (7, 1)),
    ("sm_87", (7, 4)),
    ("sm_88", (9, 0)),
    ("sm_89", (7, 8)),
    ("sm_90", (7, 8)),
    ("sm_90a", (8, 0)),
    ("sm_100", (8, 6)),
    ("sm_100a", (8, 6)),
    ("sm_100f", (8, 8)),
    ("sm_101", (8, 6)),
    ("sm_101a", (8, 6)),
    ("sm_101f", (8, 8)),
    ("sm_103", (8, 8)),
    ("sm_103a", (8, 8)),
    ("sm_103f", (8, 8)),
    ("sm_110", (9, 0)),
    ("sm_110a", (9, 0)),
    ("sm_110f", (9, 0)),
    ("sm_120", (8, 7)),
    ("sm_120a", (8, 7)),
    ("sm_120f", (8, 8)),
    ("sm_121", (8, 8)),
    ("sm_121a", (8, 8)),
    ("sm_121f", (8, 8)),
];

/// The PTX ISA versions LLVM 22's NVPTX back end has a `+ptxNN` feature for.
const PTX_VERSIONS: &[(u32, u32)] = &[
    (3, 2),
    (4, 0),
    (4, 1),
    (4, 2),
    (4, 3),
    (5, 0),
    (6, 0),
    (6, 1),
    (6, 2),
    (6, 3),
    (6, 4),
    (6, 5),
    (7, 0),
    (7, 1),
    (7, 2),
    (7, 3),
    (7, 4),
    (7, 5),
    (7, 6),
    (7, 7),
    (7, 8),
    (8, 0),
    (8, 1),
    (8, 2),
    (8, 3),
    (8, 4),
    (8, 5),
    (8, 6),
    (8, 7),
    (8, 8),
    (9, 0),
];

/// The least PTX ISA version LLVM 22 accepts for `chip`, or `None` for a chip it does not know.
pub fn min_ptx_version(chip: &str) -> Option<(u32, u32)> {
    CHIP_MIN_PTX
        .iter()
        .find(|(c, _)| *c == chip)
        .map(|(_, v)| *v)
}

/// How serious a [`Diagnostic`] is: MLIR's severities are the dialect's (error, warning,
/// note, remark), so the type is shared.
pub use tilec_dialect::Severity;

/// One MLIR diagnostic, copied out of the MLIR context.
///
/// Displays as `location: severity: message`, like `mlir-opt` does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error, warning, note or remark. Notes follow the diagnostic they belong to.
    pub severity: Severity,
    /// The message, as MLIR prints it.
    pub message: String,
    /// `file:line:col` as MLIR prints it (`input.mlir:4:7` for the text itself, see
    /// [`SOURCE_NAME`]); name locations give their child's position, call sites their
    /// callee's, fused locations their first one's; `unknown` when MLIR has no position.
    pub location: String,
}

impl Diagnostic {
    fn synthetic(message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            message: message.into(),
            location: "unknown".into(),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.location, self.severity, self.message)
    }
}

/// Formats diagnostics one per line, for the `Display` of [`MlirError`].
struct Lines<'a>(&'a [Diagnostic]);

impl fmt::Display for Lines<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in self.0 {
            write!(f, "\n  {d}")?;
        }
        Ok(())
    }
}

/// Why [`mlir_to_ptx`] or [`mlir_to_llvm_ir`] failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MlirError {
    /// The [`TargetSpec`] is not one LLVM 22 can build for.
    #[error("invalid target: {0}")]
    Target(String),
    /// The text is not a valid MLIR module: a syntax error, an unknown op or dialect, or a
    /// verifier error (MLIR verifies while parsing).
    #[error("failed to parse the MLIR module:{}", Lines(diagnostics))]
    Parse {
        /// What MLIR reported.
        diagnostics: Vec<Diagnostic>,
    },
    /// The module parsed but is not what the driver builds from: not a builtin module, no
    /// `gpu.container_module` attribute, not exactly one `gpu.module`, or it fails
    /// verification.
    #[error("the MLIR module is not a valid input:{}", Lines(diagnostics))]
    Verify {
        /// What is wrong with it.
        diagnostics: Vec<Diagnostic>,
    },
    /// A pass of the pipeline failed.
    #[error("MLIR pass `{pass}` failed:{}", Lines(diagnostics))]
    Pass {
        /// The pass with its options, as given to the pass pipeline parser.
        pass: String,
        /// What MLIR reported.
        diagnostics: Vec<Diagnostic>,
    },
    /// LLVM failed: translating the `gpu.module` to LLVM IR, parsing or running the pass
    /// pipeline ([`TargetSpec::llvm_passes`]), or NVPTX code generation.
    #[error("LLVM failed:{}", Lines(diagnostics))]
    Llvm {
        /// What LLVM and MLIR's serializer reported.
        diagnostics: Vec<Diagnostic>,
    },
    /// The module holds no `gpu.module` to serialize.
    #[error("the MLIR module holds no gpu.module")]
    NoGpuModule,
    /// The serialized output could not be read back (PTX or LLVM IR that is not UTF-8).
    #[error("cannot read the serialized GPU module: {0}")]
    Object(String),
    /// The MLIR stage ran in a child process ([`mlir_stage_in_child`]) and failed: what it
    /// printed on stderr (the MLIR diagnostics, or the line of an LLVM fatal error) and how
    /// it ended (an exit status, or the signal that killed it).
    #[error("the MLIR stage in a child process ({status}) failed:\n{stderr}")]
    Child {
        /// How the child ended, e.g. `exit status: 1` or `signal: 6 (SIGABRT)`.
        status: String,
        /// What it printed on stderr.
        stderr: String,
    },
}

impl MlirError {
    /// The diagnostics carried by this error (empty for variants without any).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            MlirError::Parse { diagnostics }
            | MlirError::Verify { diagnostics }
            | MlirError::Llvm { diagnostics }
            | MlirError::Pass { diagnostics, .. } => diagnostics,
            _ => &[],
        }
    }

    /// This error with every location in the input text itself (`input.mlir:LINE:COL`, see
    /// [`SOURCE_NAME`]) renamed to `name:LINE:COL`, for a caller that read the text from a
    /// file. Locations written in the text are left as they are.
    pub fn with_source_name(mut self, name: &str) -> Self {
        let prefix = format!("{SOURCE_NAME}:");
        match &mut self {
            MlirError::Parse { diagnostics }
            | MlirError::Verify { diagnostics }
            | MlirError::Llvm { diagnostics }
            | MlirError::Pass { diagnostics, .. } => {
                for d in diagnostics {
                    if let Some(rest) = d.location.strip_prefix(&prefix) {
                        d.location = format!("{name}:{rest}");
                    }
                }
            }
            _ => {}
        }
        self
    }
}

/// What the serialization of the `gpu.module` should produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ObjectFormat {
    /// PTX text.
    Isa,
    /// LLVM IR text of the optimised module.
    Llvm,
}

/// Parse an MLIR module given as text (a `gpu.module` with `llvm.func` kernels using `nvvm.*`
/// ops, inside a builtin module with `gpu.container_module`), verify it, run
/// `convert-nvvm-to-llvm`, `reconcile-unrealized-casts`,
/// `nvvm-attach-target{chip=… features=+ptxNN O=…}`, serialize the `gpu.module` to PTX
/// (LLVM's NVPTX back end, [`LLVM_PIPELINE`] at -O3) and return the PTX text.
///
/// Safe to call any number of times, from any thread (calls are serialised). See the
/// [module docs](self) for the errors and for the inputs that end the process.
pub fn mlir_to_ptx(module_text: &str, target: &TargetSpec) -> Result<String, MlirError> {
    mlir_to_ptx_timed(module_text, target).map(|(ptx, _)| ptx)
}

/// Wall time of each step of one MLIR compile, in order: `setup` (the process-wide
/// registration on the first call, waiting for the LLVM options' lock, the context and its LLVM
/// translations), `parse+verify`, then one entry per pass-pipeline stage named by its pass,
/// and `llvm`: translation to LLVM IR, LLVM's optimisation pipeline and NVPTX code
/// generation.
pub type StageTimings = Vec<(&'static str, Duration)>;

/// [`mlir_to_ptx`], also returning how long each step took ([`StageTimings`]).
pub fn mlir_to_ptx_timed(
    module_text: &str,
    target: &TargetSpec,
) -> Result<(String, StageTimings), MlirError> {
    let (object, timings) = compile(Source::Text(module_text), target, ObjectFormat::Isa)?;
    Ok((ptx_text(object)?, timings))
}

/// The PTX text the serializer returned.
fn ptx_text(object: Vec<u8>) -> Result<String, MlirError> {
    let mut ptx = String::from_utf8(object)
        .map_err(|e| MlirError::Object(format!("the PTX is not UTF-8: {e}")))?;
    // The NVPTX serializer may keep the C string's terminator.
    while ptx.ends_with('\0') {
        ptx.pop();
    }
    Ok(ptx)
}

/// Same input as [`mlir_to_ptx`]; returns the LLVM IR text of the `gpu.module` for
/// `--emit llvm`: the module MLIR hands to LLVM's NVPTX back end, i.e. after
/// `convert-nvvm-to-llvm`, translation to LLVM IR, the NVPTX target triple and data layout,
/// and LLVM's optimisation pipeline at `target.opt_level`, printed with LLVM's IR printer.
pub fn mlir_to_llvm_ir(module_text: &str, target: &TargetSpec) -> Result<String, MlirError> {
    let (text, _) = compile(Source::Text(module_text), target, ObjectFormat::Llvm)?;
    llvm_text(text)
}

/// What the MLIR stage produces: PTX ([`mlir_to_ptx`]) or LLVM IR ([`mlir_to_llvm_ir`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Product {
    /// PTX text.
    Ptx,
    /// LLVM IR text.
    LlvmIr,
}

impl Product {
    /// The value of `tile-compile --mlir-stage` for this product.
    pub fn name(self) -> &'static str {
        match self {
            Product::Ptx => "ptx",
            Product::LlvmIr => "llvm",
        }
    }
}

/// How long [`mlir_stage_in_child`] waits for its child by default: 120 s (a GEMM's MLIR
/// stage takes about 0.1 s on a 2-core x86 host).
pub const CHILD_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs the MLIR stage ([`mlir_to_ptx`] or [`mlir_to_llvm_ir`] of `module_text`) in a child
/// process, so that an LLVM fatal error, a crash or a hang inside MLIR/LLVM fails this call
/// instead of ending or blocking the caller's process. `program` is a `tile-compile` binary:
/// it is run as
/// `program - --mlir-stage ptx|llvm --target CHIP --ptx-version M.m -O N [--llvm-passes P]`,
/// reads the module on stdin and writes the product on stdout. A child still running after
/// `timeout` is killed.
///
/// # Errors
/// [`MlirError::Target`] for a bad `target` (checked here first); [`MlirError::Child`] when
/// the child cannot be started, exits non-zero (its stderr holds MLIR's diagnostics or the
/// fatal error's line), is killed by a signal, or runs past `timeout` (status `timed out
/// after …`); [`MlirError::Object`] for output that is not UTF-8.
pub fn mlir_stage_in_child(
    module_text: &str,
    target: &TargetSpec,
    product: Product,
    program: &std::path::Path,
    timeout: Duration,
) -> Result<String, MlirError> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    target.validate()?;
    let child_error = |status: String, stderr: String| MlirError::Child { status, stderr };
    let mut child = Command::new(program)
        .args([
            "-",
            "--mlir-stage",
            product.name(),
            "--target",
            &target.chip,
        ])
        .arg("--ptx-version")
        .arg(format!("{}.{}", target.ptx_version.0, target.ptx_version.1))
        .arg("-O")
        .arg(target.opt_level.to_string())
        .args(
            target
                .llvm_passes
                .as_ref()
                .map(|p| ["--llvm-passes".to_string(), p.clone()])
                .into_iter()
                .flatten(),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| child_error("not started".into(), format!("{}: {e}", program.display())))?;
    // Write and read on threads of their own: the child may fill one pipe before it has
    // read all of its input, and the wait below must be able to give up.
    let mut stdin = child.stdin.take().expect("piped");
    let text = module_text.to_string();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(text.as_bytes());
    });
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() >= timeout => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(child_error("lost".into(), e.to_string())),
        }
    };
    let status = match status {
        Some(status) => status,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            let _ = writer.join();
            let stderr = String::from_utf8_lossy(&stderr.join().unwrap_or_default()).into_owned();
            return Err(child_error(
                format!("timed out after {:.1} s and killed", timeout.as_secs_f64()),
                stderr,
            ));
        }
    };
    let _ = writer.join();
    let out = stdout.join().unwrap_or_default();
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap_or_default()).into_owned();
    if !status.success() {
        return Err(child_error(status.to_string(), stderr));
    }
    String::from_utf8(out)
        .map_err(|e| MlirError::Object(format!("the child's output is not UTF-8: {e}")))
}

/// Reads `pipe` to its end on a thread of its own.
fn drain<R: std::io::Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// Process-wide MLIR state: the dialect registry every context is created from.
struct Global {
    registry: DialectRegistry,
}

// SAFETY: the registry is filled once, inside `global`'s `OnceLock` initialiser, before any
// other thread can see it; afterwards it is only read (`Context::new_with_registry` copies it
// into the new context: MLIR's `DialectRegistry::appendTo` is a const method).
unsafe impl Send for Global {}
unsafe impl Sync for Global {}

extern "C" {
    /// `lowering/cpp/register.cpp`: inserts the `llvm`, `nvvm` and `gpu` dialects, the
    /// `#nvvm.target` serialization model and the builtin/llvm/nvvm/gpu translations to
    /// LLVM IR into the registry.
    fn tilecRegisterDialects(registry: mlir_sys::MlirDialectRegistry);
    /// `lowering/cpp/register.cpp`: sets LLVM command-line option `name` to `value`; false
    /// if there is no such option or the value does not parse.
    fn tilecSetLlvmOption(name: *const c_char, value: *const c_char) -> bool;
    /// `lowering/cpp/register.cpp`: orders every block's use list under `op` as MLIR's
    /// parser would from the printed module (phis take their incoming values in that order).
    fn tilecOrderBlockUses(op: mlir_sys::MlirOperation);
    /// `lowering/cpp/register.cpp`: the `gpu.module` `module` to PTX, or with `llvm_ir` to
    /// optimised LLVM IR text, handed to `sink`; false on error (reported as diagnostics).
    fn tilecSerializeGpuModule(
        module: mlir_sys::MlirOperation,
        pipeline: *const c_char,
        llvm_ir: bool,
        sink: extern "C" fn(*const c_char, usize, *mut std::ffi::c_void),
        user: *mut std::ffi::c_void,
    ) -> bool;
}

/// The LLVM options the driver sets for a compile for `chip` (LLVM's options are global:
/// held by [`hold_llvm_options`] during each compile).
///
/// `slp-max-vf`: 1 (the SLP vectorizer stops before building trees) on targets without
/// packed f32 arithmetic, 0 (LLVM's default, no limit) on the others. MLIR's serialization
/// runs LLVM's O3 pipeline with SLP vectorization forced on; on sm_90 and sm_90a it forms
/// nothing in any example (their PTX is byte-identical with and without it: the precise
/// snapshots) but took 22–63 ms of a compile (softmax, LayerNorm, scale_bias_act;
/// `opt -O3 -time-passes`). On sm_100 it forms `add.rn.f32x2` and the like.
fn llvm_options(chip: &str) -> LlvmOptions {
    [("slp-max-vf", if packed_f32(chip) { "0" } else { "1" })]
}

/// Whether `chip` has packed f32 arithmetic, or is not one tilec knows (then LLVM decides).
fn packed_f32(chip: &str) -> bool {
    tilec_dialect::Target::from_name(chip).is_none_or(|t| t.has_f32x2())
}

/// Sets `options` through `tilecSetLlvmOption`; false if one of them does not exist.
fn set_llvm_options(options: &[(&str, &str)]) -> bool {
    options.iter().all(|(name, value)| {
        let (n, v) = (
            std::ffi::CString::new(*name).expect("no NUL"),
            std::ffi::CString::new(*value).expect("no NUL"),
        );
        // SAFETY: NUL-terminated strings that outlive the call.
        unsafe { tilecSetLlvmOption(n.as_ptr(), v.as_ptr()) }
    })
}

/// Registers the three MLIR passes of the pipeline and the dialects once, and returns the
/// registry. Only what the pipeline uses is registered, so that the static link keeps only
/// that part of MLIR (MLIR's C API `mlirRegisterAll*` would link all of it).
fn global() -> &'static Global {
    static GLOBAL: OnceLock<Global> = OnceLock::new();
    GLOBAL.get_or_init(|| {
        let registry = DialectRegistry::new();
        // SAFETY: called once per process (the `OnceLock`): passes must be registered once;
        // the registry is live.
        unsafe {
            mlir_sys::mlirRegisterConversionConvertNVVMToLLVMPass();
            mlir_sys::mlirRegisterConversionReconcileUnrealizedCastsPass();
            mlir_sys::mlirRegisterGPUGpuNVVMAttachTarget();
            tilecRegisterDialects(registry.to_raw());
        }
        Global { registry }
    })
}

/// The value of the per-target LLVM options currently set ([`llvm_options`]; `None` before
/// the first compile). Compiles hold it for reading while LLVM runs.
static LLVM_OPTIONS: RwLock<Option<LlvmOptions>> = RwLock::new(None);

/// LLVM command-line options, name and value.
type LlvmOptions = [(&'static str, &'static str); 1];

/// Sets the LLVM options a compile for `chip` needs, if they are not set already, and holds
/// them (a read guard) until the compile ends. A change waits until every compile that
/// holds the other values has finished.
fn hold_llvm_options(chip: &str) -> RwLockReadGuard<'static, Option<LlvmOptions>> {
    let want = llvm_options(chip);
    loop {
        let held = LLVM_OPTIONS
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if *held == Some(want) {
            return held;
        }
        drop(held);
        let mut set = LLVM_OPTIONS
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if *set != Some(want) {
            // An option LLVM lacks only costs compile time (a test checks that they exist).
            let _ = set_llvm_options(&want);
            *set = Some(want);
        }
    }
}

thread_local! {
    /// What this thread is compiling, for the fatal-error handler (which runs on the thread
    /// that failed): (subject, stage).
    static FATAL_CONTEXT: RefCell<(String, String)> = const {
        RefCell::new((String::new(), String::new()))
    };
}

thread_local! {
    /// Whether this thread's compile runs a caller's LLVM pipeline
    /// ([`TargetSpec::llvm_passes`]), for the fatal-error handler's note.
    static USER_PIPELINE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn set_fatal_stage(stage: &str) {
    FATAL_CONTEXT.with(|c| {
        if let Ok(mut c) = c.try_borrow_mut() {
            c.1 = stage.to_string();
        }
    });
}

/// Name what this thread is compiling (e.g. "kernel @gemm for sm_90a") for the message of
/// the handler [`install_fatal_error_handler`] installs.
pub fn set_fatal_error_subject(subject: &str) {
    FATAL_CONTEXT.with(|c| {
        if let Ok(mut c) = c.try_borrow_mut() {
            c.0 = subject.to_string();
        }
    });
}

extern "C" fn on_llvm_fatal_error(reason: *const std::os::raw::c_char) {
    let reason = if reason.is_null() {
        String::new()
    } else {
        // SAFETY: LLVM passes a NUL-terminated string that lives for this call.
        unsafe { std::ffi::CStr::from_ptr(reason) }
            .to_string_lossy()
            .into_owned()
    };
    let (subject, stage) = FATAL_CONTEXT.with(|c| match c.try_borrow() {
        Ok(c) => (c.0.clone(), c.1.clone()),
        Err(_) => (String::new(), String::new()),
    });
    let subject = if subject.is_empty() {
        "the input".to_string()
    } else {
        subject
    };
    let stage = if stage.is_empty() {
        "MLIR/LLVM".to_string()
    } else {
        stage
    };
    let note = if USER_PIPELINE.with(std::cell::Cell::get) {
        "note: the LLVM pass pipeline was the one given (--llvm-passes); check it against \
         `opt -passes=`, or leave it out for tilec's"
    } else {
        "note: tilec should have refused this input before MLIR; please report it"
    };
    eprintln!("error: LLVM failed fatally compiling {subject} in {stage}: {reason}\n{note}");
    // LLVM aborts after the handler returns when the error asks for a crash report (as
    // instruction selection's do): end the process here, with the exit code of an error.
    std::process::exit(1);
}

/// Install LLVM's fatal-error handler (LLVM-C `LLVMInstallFatalErrorHandler`) for a
/// command-line tool: an LLVM fatal error then prints one `error:` line naming what was
/// being compiled ([`set_fatal_error_subject`]) and the MLIR pass, and the process exits
/// with status 1 instead of aborting. The process ends either way (LLVM cannot continue
/// after a fatal error), so this is for command-line tools: a library caller compiling
/// untrusted input runs the MLIR stage in a child process instead ([`mlir_stage_in_child`]).
pub fn install_fatal_error_handler() {
    // SAFETY: the handler is a plain function that lives as long as the process.
    unsafe { mlir_sys::LLVMInstallFatalErrorHandler(Some(on_llvm_fatal_error)) };
}

/// The shared diagnostic sink a context's handler appends to.
type Sink = Rc<RefCell<Vec<Diagnostic>>>;

/// Runs `build` with a fresh MLIR context in which the `builtin`, `llvm`, `nvvm` and `gpu`
/// dialects are loaded: the context the typed writer builds its module in. What `build`
/// returns must not borrow the context (print the module).
pub(crate) fn with_builder_context<T>(build: impl FnOnce(&Context) -> T) -> T {
    let context = Context::new_with_registry(&global().registry, false);
    load_dialects(&context);
    build(&context)
}

/// Loads the dialects the typed writer builds with (`builtin` is always loaded); parsing
/// loads them on demand instead.
fn load_dialects(context: &Context) {
    for d in ["llvm", "nvvm", "gpu"] {
        context.get_or_load_dialect(d);
    }
}

/// Builds a kernel's module in the driver's context (see [`built_to_ptx`]).
pub(crate) type Build<'a> =
    &'a dyn for<'c> Fn(&'c Context) -> Result<Module<'c>, tilec_dialect::Diagnostic>;

/// What the pipeline starts from: MLIR text to parse, or a module built in its context.
#[derive(Clone, Copy)]
enum Source<'a> {
    Text(&'a str),
    Built(Build<'a>),
}

/// [`mlir_to_ptx_timed`] for a module built by `build` in the driver's own context: no MLIR
/// text is printed or parsed. The module goes through the same input checks
/// (`check_input`: `gpu.container_module`, one `gpu.module`, the verifier) and pipeline.
pub(crate) fn built_to_ptx(
    build: Build<'_>,
    target: &TargetSpec,
) -> Result<(String, StageTimings), MlirError> {
    let (object, timings) = compile(Source::Built(build), target, ObjectFormat::Isa)?;
    Ok((ptx_text(object)?, timings))
}

/// [`mlir_to_llvm_ir`] for a module built by `build` in the driver's own context.
pub(crate) fn built_to_llvm_ir(build: Build<'_>, target: &TargetSpec) -> Result<String, MlirError> {
    let (text, _) = compile(Source::Built(build), target, ObjectFormat::Llvm)?;
    llvm_text(text)
}

/// Runs the whole pipeline and returns the bytes of the `#gpu.object` and the time taken
/// by each step.
fn compile(
    source: Source<'_>,
    target: &TargetSpec,
    format: ObjectFormat,
) -> Result<(Vec<u8>, StageTimings), MlirError> {
    target.validate()?;
    let mut timings = StageTimings::new();
    let mut clock = Instant::now();
    let mut lap = |name: &'static str| {
        let now = Instant::now();
        timings.push((name, now - clock));
        clock = now;
    };
    let _options = hold_llvm_options(&target.chip);
    // Single-threaded: one gpu.module gains nothing from MLIR's thread pool, and the
    // diagnostic handler below (an `Rc`) must only ever run on this thread.
    let context = Context::new_with_registry(&global().registry, false);
    let sink: Sink = Rc::default();
    {
        let sink = sink.clone();
        context.attach_diagnostic_handler(move |diagnostic| {
            push_diagnostic(&mut sink.borrow_mut(), &diagnostic, false);
            true // handled: MLIR must not print it to stderr
        });
    }

    lap("setup");

    let mut module = match source {
        Source::Text(text) => {
            let module = parse(&context, text, &sink)?;
            check_input(&module, &sink)?;
            lap("parse+verify");
            module
        }
        Source::Built(build) => {
            load_dialects(&context);
            let module = build(&context).map_err(|d| MlirError::Verify {
                diagnostics: vec![Diagnostic {
                    severity: Severity::Error,
                    message: format!(
                        "internal error: the kernel's module did not build: {}",
                        d.message
                    ),
                    location: d.loc.to_string(),
                }],
            })?;
            // SAFETY: the module is live; the call only reorders use lists.
            unsafe { tilecOrderBlockUses(module.as_operation().to_raw()) };
            check_input(&module, &sink)?;
            lap("build+verify");
            module
        }
    };

    let stages = [
        ("convert-nvvm-to-llvm", String::new()),
        ("reconcile-unrealized-casts", String::new()),
        (
            "nvvm-attach-target",
            format!(
                "{{chip={} features={} O={}}}",
                target.chip,
                target.ptx_feature(),
                target.opt_level
            ),
        ),
    ];
    for (i, (pass, options)) in stages.iter().enumerate() {
        set_fatal_stage(&format!("MLIR pass '{pass}'"));
        // MLIR verifies the module after the last stage only (each verification of a GEMM's
        // module costs about 0.35 ms): the built module was verified above, and the verifier
        // after `nvvm-attach-target` checks every op against the chip. Invalid IR from an
        // earlier stage (an MLIR bug) is reported there, under that stage's name.
        let verify = i + 1 == stages.len();
        run_stage(
            &context,
            &mut module,
            &format!("{pass}{options}"),
            &sink,
            verify,
        )?;
        lap(pass);
    }
    set_fatal_stage("LLVM (translation, optimisation, NVPTX code generation)");
    USER_PIPELINE.with(|u| u.set(target.llvm_passes.is_some()));
    let object = serialize(&module, target, format, &sink);
    lap("llvm");
    set_fatal_stage("");
    // Drop the module before the context (declaration order would do it too; be explicit).
    drop(module);
    Ok((object?, timings))
}

/// Translates the module's `gpu.module` to LLVM IR, optimises it (at -O3 with
/// [`TargetSpec::llvm_pipeline`]) and returns the PTX text or the optimised LLVM IR text
/// (`tilecSerializeGpuModule`, MLIR's NVVM serializer with the pipeline replaced).
fn serialize(
    module: &Module,
    target: &TargetSpec,
    format: ObjectFormat,
    sink: &Sink,
) -> Result<Vec<u8>, MlirError> {
    let gpu = ops_named(module, "gpu.module");
    let gpu = gpu.first().ok_or(MlirError::NoGpuModule)?;
    let pipeline =
        std::ffi::CString::new(&*target.llvm_pipeline()).expect("validate() refuses a NUL");
    extern "C" fn push(data: *const c_char, len: usize, user: *mut std::ffi::c_void) {
        // SAFETY: `user` is the `Vec` below; `data` holds `len` bytes for this call.
        unsafe {
            let out = &mut *(user as *mut Vec<u8>);
            out.extend_from_slice(std::slice::from_raw_parts(data as *const u8, len));
        }
    }
    let mut out: Vec<u8> = Vec::new();
    // SAFETY: a live `gpu.module` of a live module; the callback only runs during the call.
    let ok = unsafe {
        tilecSerializeGpuModule(
            gpu.to_raw(),
            pipeline.as_ptr(),
            format == ObjectFormat::Llvm,
            push,
            &mut out as *mut Vec<u8> as *mut std::ffi::c_void,
        )
    };
    if !ok {
        let mut diagnostics = take(sink);
        if diagnostics.is_empty() {
            diagnostics.push(Diagnostic::synthetic("LLVM failed without a diagnostic"));
        }
        return Err(MlirError::Llvm { diagnostics });
    }
    take(sink);
    Ok(out)
}

/// Copies an MLIR diagnostic and its notes into `out`.
fn push_diagnostic(out: &mut Vec<Diagnostic>, diagnostic: &MlirDiagnostic, is_note: bool) {
    let severity = if is_note {
        Severity::Note
    } else {
        match diagnostic.severity() {
            DiagnosticSeverity::Error => Severity::Error,
            DiagnosticSeverity::Warning => Severity::Warning,
            DiagnosticSeverity::Note => Severity::Note,
            DiagnosticSeverity::Remark => Severity::Remark,
        }
    };
    out.push(Diagnostic {
        severity,
        message: diagnostic.to_string(),
        location: format_location(diagnostic.location()),
    });
    for index in 0..diagnostic.note_count() {
        if let Ok(note) = diagnostic.note(index) {
            push_diagnostic(out, &note, true);
        }
    }
}

/// `file:line:col` for a location, looking through name, call-site and fused locations.
fn format_location(location: Location) -> String {
    fn find(location: Location, depth: usize) -> Option<String> {
        if depth > 16 {
            return None;
        }
        if location.is_file_line_col_range() {
            let file = location.file_line_col_range_filename();
            let file = file.as_string_ref().as_str().unwrap_or("?").to_string();
            return Some(format!(
                "{}:{}:{}",
                file,
                location.file_line_col_range_start_line(),
                location.file_line_col_range_start_column()
            ));
        }
        if location.is_name() {
            return find(location.name_child_location(), depth + 1);
        }
        if location.is_call_site() {
            return find(location.call_site_callee(), depth + 1);
        }
        if location.is_fused() {
            return (0..location.fused_num_locations())
                .find_map(|i| find(location.fused_location(i), depth + 1));
        }
        None
    }
    find(location, 0).unwrap_or_else(|| "unknown".to_string())
}

/// Takes what the handler collected so far.
fn take(sink: &Sink) -> Vec<Diagnostic> {
    std::mem::take(&mut *sink.borrow_mut())
}

/// Parses (and, as MLIR's parser does, verifies) the text into a builtin module.
fn parse<'c>(context: &'c Context, text: &str, sink: &Sink) -> Result<Module<'c>, MlirError> {
    // SAFETY: the string refs outlive the call; MLIR copies what it keeps.
    let raw = unsafe {
        mlir_sys::mlirOperationCreateParse(
            context.to_raw(),
            StringRef::new(text).to_raw(),
            StringRef::new(SOURCE_NAME).to_raw(),
        )
    };
    // SAFETY: `raw` is null or an operation we now own.
    let Some(operation) = (unsafe { Operation::from_option_raw(raw) }) else {
        let mut diagnostics = take(sink);
        if diagnostics.is_empty() {
            diagnostics.push(Diagnostic::synthetic("MLIR failed to parse the module"));
        }
        return Err(MlirError::Parse { diagnostics });
    };
    let name = operation
        .name()
        .as_string_ref()
        .as_str()
        .unwrap_or("")
        .to_string();
    if name != "builtin.module" {
        let location = format_location(operation.location());
        return Err(MlirError::Verify {
            diagnostics: vec![Diagnostic {
                severity: Severity::Error,
                message: format!("expected a builtin `module` at the top level, found `{name}`"),
                location,
            }],
        });
    }
    Module::from_operation(operation).ok_or_else(|| MlirError::Verify {
        diagnostics: vec![Diagnostic::synthetic(
            "the top-level operation is not a builtin module",
        )],
    })
}

/// Checks the shape the pipeline needs: `gpu.container_module`, exactly one `gpu.module`,
/// and a module that verifies.
fn check_input(module: &Module, sink: &Sink) -> Result<(), MlirError> {
    let top = module.as_operation();
    let location = format_location(top.location());
    let mut problems = Vec::new();
    if !top.has_attribute("gpu.container_module") {
        problems.push(Diagnostic {
            severity: Severity::Error,
            message: "the builtin module needs the `gpu.container_module` attribute".into(),
            location: location.clone(),
        });
    }
    let gpu_modules = ops_named(module, "gpu.module").len();
    if gpu_modules != 1 {
        problems.push(Diagnostic {
            severity: Severity::Error,
            message: format!("expected exactly one `gpu.module`, found {gpu_modules}"),
            location,
        });
    }
    if !problems.is_empty() {
        return Err(MlirError::Verify {
            diagnostics: problems,
        });
    }
    if !top.verify() {
        let mut diagnostics = take(sink);
        if diagnostics.is_empty() {
            diagnostics.push(Diagnostic::synthetic("the module failed verification"));
        }
        return Err(MlirError::Verify { diagnostics });
    }
    take(sink); // drop warnings/remarks from parsing
    Ok(())
}

/// The top-level operations of the module body named `name`.
fn ops_named<'c, 'a>(module: &'a Module<'c>, name: &str) -> Vec<OperationRef<'c, 'a>> {
    let mut found = Vec::new();
    let mut next = module.body().first_operation();
    while let Some(op) = next {
        if op.name().as_string_ref().as_str() == Ok(name) {
            found.push(op);
        }
        next = op.next_in_block();
    }
    found
}

/// Runs one pipeline stage (`pass{options}`) on the module in its own pass manager, which
/// verifies the module after the pass when `verify` is set.
fn run_stage(
    context: &Context,
    module: &mut Module,
    stage: &str,
    sink: &Sink,
    verify: bool,
) -> Result<(), MlirError> {
    let manager = PassManager::new(context);
    manager.enable_verifier(verify);
    if let Err(error) = parse_pass_pipeline(
        manager.as_operation_pass_manager(),
        &format!("builtin.module({stage})"),
    ) {
        let mut diagnostics = take(sink);
        diagnostics.push(Diagnostic::synthetic(error.to_string()));
        return Err(MlirError::Pass {
            pass: stage.to_string(),
            diagnostics,
        });
    }
    if manager.run(module).is_err() {
        let mut diagnostics = take(sink);
        if diagnostics.is_empty() {
            diagnostics.push(Diagnostic::synthetic(
                "the pass failed without a diagnostic",
            ));
        }
        return Err(MlirError::Pass {
            pass: stage.to_string(),
            diagnostics,
        });
    }
    take(sink); // drop warnings/remarks of a successful stage
    Ok(())
}

/// The LLVM IR text the serializer returned.
fn llvm_text(text: Vec<u8>) -> Result<String, MlirError> {
    String::from_utf8(text).map_err(|e| MlirError::Object(format!("the LLVM IR is not UTF-8: {e}")))
}

#[cfg(test)]
mod target_table_tests {
    use super::min_ptx_version;
    use tilec_dialect::Target;

    /// LLVM's table and the dialect's target facts agree on when each target appeared, and
    /// what tilec emits is accepted by both.
    #[test]
    fn chip_minimums_agree_with_the_dialect() {
        for t in Target::ALL {
            assert_eq!(
                min_ptx_version(t.name()),
                Some(t.isa_min_ptx_version()),
                "{t}"
            );
            assert!(t.min_ptx_version() >= t.isa_min_ptx_version(), "{t}");
        }
    }
}

#[cfg(test)]
mod llvm_option_tests {
    use super::{llvm_options, set_llvm_options, tilecSetLlvmOption, LLVM_OPTIONS};
    use std::ffi::CString;

    /// Every option the driver sets exists in the linked LLVM and takes its values (a
    /// rename in a new LLVM would otherwise only cost compile time, silently), and an
    /// unknown name is refused.
    #[test]
    fn the_driver_s_llvm_options_exist() {
        let mut held = LLVM_OPTIONS.write().unwrap();
        for chip in ["sm_90a", "sm_90", "sm_100", "sm_100a"] {
            assert!(set_llvm_options(&llvm_options(chip)), "{chip}");
        }
        *held = Some(llvm_options("sm_100a"));
        assert_eq!(llvm_options("sm_90a")[0].1, "1");
        assert_eq!(llvm_options("sm_100")[0].1, "0");
        let (n, v) = (
            CString::new("no-such-tilec-option").unwrap(),
            CString::new("1").unwrap(),
        );
        // SAFETY: NUL-terminated strings that outlive the call.
        assert!(!unsafe { tilecSetLlvmOption(n.as_ptr(), v.as_ptr()) });
    }
}
