//! Typed compilation options: [`Options`] and the enums of its choices.
//!
//! Every choice has one spelling, shared by the Rust API ([`std::str::FromStr`],
//! [`Options::set`]) and `tile-compile`'s flags, so the two accept exactly the same things.
//! [`Options::validate`] rejects combinations that do not go together; [`crate::compile`]
//! calls it first.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;
use tilec_dialect::Target;

/// An option value that does not parse, or options that do not go together.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("option '{option}': {reason}")]
pub struct OptionsError {
    /// The option, as [`Options::set`] names it (`schedule`, `cluster`, ...).
    pub option: &'static str,
    /// Why, with what would be accepted.
    pub reason: String,
}

impl OptionsError {
    pub(crate) fn new(option: &'static str, reason: impl Into<String>) -> Self {
        OptionsError {
            option,
            reason: reason.into(),
        }
    }
}

/// Declares a choice enum with its spellings, `name()`, `ALL`, `FromStr` and `Display`.
macro_rules! choice {
    (
        $(#[$m:meta])* $ty:ident, $option:literal {
            $($(#[$vm:meta])* $var:ident = $name:literal,)+
        }
    ) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $ty {
            $($(#[$vm])* $var,)+
        }

        impl $ty {
            /// Every value, in the order the documentation lists them.
            pub const ALL: &'static [$ty] = &[$($ty::$var,)+];
            /// The spelling (`tile-compile`'s flag value, [`Options::set`]'s value).
            pub fn name(self) -> &'static str {
                match self {
                    $($ty::$var => $name,)+
                }
            }
            /// Every spelling, in order.
            pub fn names() -> Vec<&'static str> {
                Self::ALL.iter().map(|v| v.name()).collect()
            }
        }

        impl FromStr for $ty {
            type Err = OptionsError;
            fn from_str(s: &str) -> Result<Self, OptionsError> {
                Self::ALL.iter().copied().find(|v| v.name() == s).ok_or_else(|| {
                    OptionsError::new(
                        $option,
                        format!("unknown value '{s}' (known: {})", Self::names().join(", ")),
                    )
                })
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

choice! {
    /// The `persistent` pass's schedule of output tiles over CTAs.
    Schedule, "schedule" {
        /// `static`: a strided persistent loop, min(tiles, SMs) CTAs (the default on sm_90a;
        /// measured 1.02 of cuBLAS at 8192³ against 0.99 without, docs/performance.md).
        Static = "static",
        /// `clc`: work stealing with `clusterlaunchcontrol.try_cancel` (PTX ISA 8.6; the
        /// default on sm_100 and sm_100a, which alone have it).
        Clc = "clc",
        /// `none`: one tile per CTA, in grouped order (the default on sm_90: with mma.sync
        /// the static loop's extra live values spill at the 168-register cap).
        None = "none",
        /// `off`: no `persistent` pass; the grid is the kernel's own.
        Off = "off",
    }
}

impl Schedule {
    /// The default for `target`: `static` with wgmma, `clc` where try_cancel exists, `none`
    /// otherwise.
    pub fn default_for(target: Target) -> Self {
        if target.has_wgmma() {
            Schedule::Static
        } else if target.has_try_cancel() {
            Schedule::Clc
        } else {
            Schedule::None
        }
    }
}

choice! {
    /// Which kernels the [`Schedule`] makes persistent (`persistent` `dot-kernels-only`).
    PersistentKernels, "persistent_kernels" {
        /// `dots`: kernels whose main loop `tile-to-gpu` pipelines (GEMMs, the default);
        /// the others keep one program per CTA.
        Dots = "dots",
        /// `all`: every kernel (attention, norms) with the `static` or `none` schedule.
        /// With `warp_specialize`, a pipelined loop in the static tile loop keeps its
        /// producer running across tiles: the next tile's first copies overlap this tile's
        /// epilogue.
        All = "all",
    }
}

choice! {
    /// How a GEMM's epilogue stores C (`tile-to-gpu` `epilogue`).
    EpilogueStore, "epilogue" {
        /// `direct`: from the accumulator registers (the default).
        Direct = "direct",
        /// `tma`: staged in shared memory and stored with TMA (wgmma targets only; C becomes
        /// a tensor map whose row pitch must be a multiple of 16 bytes, docs/manifest.md).
        Tma = "tma",
    }
}

choice! {
    /// Whether each k tile's MMA result is added into the f32 sum once it completes
    /// (`tile-to-gpu` `promote`): the precise fp8 accumulation on Hopper.
    Promote, "promote" {
        /// `auto`: promote fp8 MMAs on wgmma where two accumulators fit (an N tile of at most
        /// 192 with an M tile of 128; up to 128 the next k tile's MMAs run during the add).
        Auto = "auto",
        /// `on`: always; an error where the accumulators do not fit.
        On = "on",
        /// `off`: never.
        Off = "off",
    }
}

choice! {
    /// Where a laid-out dot's loop-invariant A operand (attention's Q) goes on wgmma
    /// (`tile-dot-to-wgmma` `stage-invariant-a`).
    InvariantA, "invariant_a" {
        /// `auto`: registers where its fragment takes at most 32 registers per thread
        /// (`tilec_passes::dot_to_wgmma::RS_MAX_REGISTERS`), shared memory otherwise.
        Auto = "auto",
        /// `smem`: shared memory, stored once before the loop (wgmma's SS form).
        Smem = "smem",
        /// `registers`: registers (wgmma's RS form), where the layout allows.
        Registers = "registers",
    }
}

choice! {
    /// LLVM's optimisation level for the NVPTX back end.
    OptLevel, "opt_level" {
        /// `0`: no optimisation.
        O0 = "0",
        /// `1`.
        O1 = "1",
        /// `2`.
        O2 = "2",
        /// `3`: the default, with tilec's LLVM pass pipeline (`lowering::LLVM_PIPELINE`).
        O3 = "3",
    }
}

impl OptLevel {
    /// The level as LLVM numbers it, 0 to 3.
    pub fn level(self) -> u32 {
        match self {
            OptLevel::O0 => 0,
            OptLevel::O1 => 1,
            OptLevel::O2 => 2,
            OptLevel::O3 => 3,
        }
    }
}

/// CTAs per thread-block cluster, x × y × z (PTX ISA `.reqnctapercluster`).
///
/// Spelled `X` (y = z = 1), `XxY` (z = 1) or `XxYxZ`. Compiled: clusters of 1, 2 or 4 CTAs
/// along x with the `clc` schedule on sm_100a, and of up to 4 CTAs along x and y with the
/// `static` schedule on sm_90a ([`Options::validate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClusterShape {
    /// CTAs along x.
    pub x: u32,
    /// CTAs along y.
    pub y: u32,
    /// CTAs along z.
    pub z: u32,
}

impl ClusterShape {
    /// No cluster: 1 × 1 × 1.
    pub const NONE: ClusterShape = ClusterShape { x: 1, y: 1, z: 1 };

    /// `x` CTAs along x.
    pub fn x(x: u32) -> Self {
        ClusterShape { x, y: 1, z: 1 }
    }

    /// CTAs per cluster, x · y · z.
    pub fn size(self) -> u64 {
        u64::from(self.x) * u64::from(self.y) * u64::from(self.z)
    }

    /// `[x, y, z]`, as the manifest's `cluster` writes it.
    pub fn dims(self) -> [u32; 3] {
        [self.x, self.y, self.z]
    }
}

impl Default for ClusterShape {
    fn default() -> Self {
        ClusterShape::NONE
    }
}

impl FromStr for ClusterShape {
    type Err = OptionsError;
    fn from_str(s: &str) -> Result<Self, OptionsError> {
        let bad = || {
            OptionsError::new(
                "cluster",
                format!(
                    "'{s}' is not a cluster shape: X, XxY or XxYxZ, positive integers (e.g. 2 \
                     or 2x1)"
                ),
            )
        };
        let dims: Vec<u32> = s
            .split('x')
            .map(|d| d.parse::<u32>().ok().filter(|&v| v > 0).ok_or_else(bad))
            .collect::<Result<_, _>>()?;
        match dims[..] {
            [x] => Ok(ClusterShape::x(x)),
            [x, y] => Ok(ClusterShape { x, y, z: 1 }),
            [x, y, z] => Ok(ClusterShape { x, y, z }),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for ClusterShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.y, self.z) {
            (1, 1) => write!(f, "{}", self.x),
            (y, 1) => write!(f, "{}x{y}", self.x),
            (y, z) => write!(f, "{}x{y}x{z}", self.x),
        }
    }
}

choice! {
    /// Where to stop.
    Emit, "emit" {
        /// `ptx`: PTX (the default).
        Ptx = "ptx",
        /// `mlir`: the MLIR module handed to MLIR.
        Mlir = "mlir",
        /// `llvm`: LLVM IR of the kernel (after MLIR's NVVM lowering and LLVM's
        /// optimisation).
        Llvm = "llvm",
        /// `tile`: the GPU-level tile IR after the tilec passes.
        Tile = "tile",
        /// `cubin`: the PTX assembled by `ptxas -arch=TARGET` ([`crate::ptxas`]); the
        /// kernel's `text` is the PTX and its `cubin` the machine code.
        Cubin = "cubin",
    }
}

impl Emit {
    /// The output file's extension (`ptx`, `mlir`, `ll`, `tile`, `cubin`).
    pub fn extension(self) -> &'static str {
        match self {
            Emit::Llvm => "ll",
            e => e.name(),
        }
    }
}

/// `with_FIELD(value) -> Self` for plain fields of [`Options`].
macro_rules! setters {
    ($($method:ident: $field:ident: $ty:ty,)+) => {
        $(
            #[doc = concat!("Sets [`Options::", stringify!($field), "`].")]
            pub fn $method(mut self, v: $ty) -> Self {
                self.$field = v;
                self
            }
        )+
    };
}

/// Warp counts `tile-assign-layouts` accepts (0: it chooses).
pub const NUM_WARPS: [u32; 7] = [0, 1, 2, 4, 8, 16, 32];

/// Compilation options. Build with [`Options::new`] and the `with_*` methods (or set the
/// fields), then [`Options::validate`]; [`crate::compile`] validates too.
///
/// ```
/// use tilec::{dialect::Target, Options, Schedule, ClusterShape};
/// let o = Options::new(Target::Sm100a)
///     .with_schedule(Schedule::Clc)
///     .with_cluster(ClusterShape::x(2));
/// assert!(o.validate().is_ok());
/// let bad = Options::new(Target::Sm90).with_cluster(ClusterShape::x(2));
/// assert_eq!(bad.validate().unwrap_err().option, "cluster");
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Options {
    /// Target GPU.
    pub target: Target,
    /// Shared-memory ring depth (`tile-to-gpu` `stages`), 2 to 8 (default 4).
    pub stages: u32,
    /// Ring depth of the TMA pipeline of a laid-out kernel's loads staged in shared memory
    /// (`tile-pipeline-loads` `stages`, sm_90a): 2 to 8, or 0 to keep those loads going
    /// through registers (default 2). A tensor so loaded is passed as a `CUtensorMap`.
    pub load_stages: u32,
    /// Issue a loop's wgmma that reads only TMA rings and loop-invariant operands one
    /// iteration ahead of its uses (`tile-pipeline-loads` `mma-lookahead`; needs
    /// `load_stages`): in attention, the next key block's Q·Kᵀ runs under this block's
    /// softmax (FlashAttention-3's intra-warpgroup overlap). Costs the registers of one
    /// more result tile. Default false.
    pub mma_lookahead: bool,
    /// Issue the TMA copies of `load_stages`' rings from a producer warpgroup of their own
    /// (`tile-pipeline-loads` `warp-specialize`; needs `load_stages`, sm_90a): the CTA
    /// gains 128 threads, which give their registers to the consumers (`setmaxnreg`), and
    /// the consumers release each stage on an mbarrier instead of meeting at CTA barriers
    /// before each refill. Applies to a kernel whose pipelined
    /// loop is directly in its body; elsewhere a remark says why not. Default false.
    pub warp_specialize: bool,
    /// Make the consumer warpgroups of a warp-specialized kernel take turns at issuing
    /// their wgmmas (`tile-pingpong`: named barriers 1 to W; needs `warp_specialize` and two
    /// or more consumer warpgroups, else a remark says why not): one warpgroup's softmax
    /// runs while the tensor cores run the other's products. Default false.
    pub pingpong: bool,
    /// With `pingpong`: one turn per consumer loop body, from its first wgmma to its last
    /// (`tile-pingpong` `turn=body`; FlashAttention-3's turn around Q·Kᵀ and P·V as
    /// `defer_mma` orders them), where no op between them blocks; else one turn per run of
    /// adjacent wgmmas. Default false.
    pub pingpong_body: bool,
    /// Run the last wgmma of a warp-specialized consumer loop one iteration later, after
    /// the next iteration's first wgmma (`tile-defer-mma`; needs `warp_specialize`, not
    /// `mma_lookahead`): in attention, P·V of key block j − 1 runs under the softmax of
    /// block j, and no wgmma is in flight at the back edge (FlashAttention-3's order).
    /// Where the loop does not qualify, a remark says why. Default false.
    pub defer_mma: bool,
    /// Flush f32 subnormals to zero on the GPU (sets every kernel's `ftz` attribute; PTX's
    /// `.ftz`, nvcc's `-ftz=true`): `exp2` becomes one `ex2.approx.ftz.f32` instead of that
    /// instruction with a subnormal fix-up (three more instructions). Results that would
    /// be subnormal (below 2⁻¹²⁶ in magnitude) become zero. Default false.
    pub ftz: bool,
    /// Let an f32 multiply and the add or subtract that takes its result become one
    /// fused multiply-add rounded once (sets every kernel's `fp_fusion` attribute; PTX's
    /// `fma.rn.f32`, nvcc's `-fmad=true`, Triton's `enable_fp_fusion`). Results may then
    /// differ from the interpreter's, which rounds each op, in the last bits. Default
    /// false.
    pub fp_fusion: bool,
    /// Run `tile-specialize-masks` before layouts: a select on an index-range mask (a
    /// bounds or causal mask) gets a uniform branch for blocks where the mask is all true,
    /// which then run no compare and no select (exact: the same values either way).
    /// Default true.
    pub specialize_masks: bool,
    /// How the epilogue stores C (default [`EpilogueStore::Direct`]).
    pub epilogue: EpilogueStore,
    /// Promotion of fp8 MMA results into the f32 sum (default [`Promote::Auto`]).
    pub promote: Promote,
    /// Where a laid-out dot's loop-invariant A goes on wgmma (default
    /// [`InvariantA::Auto`]).
    pub invariant_a: InvariantA,
    /// Where to stop (default [`Emit::Ptx`]).
    pub emit: Emit,
    /// Run the checkers after placement (default true): `verify-async-waits` (waits safe
    /// and tight) and `verify-named-barriers` (barriers pair up, no deadlock).
    pub check_waits: bool,
    /// The `persistent` schedule (default [`Schedule::default_for`] the target).
    pub schedule: Schedule,
    /// Which kernels `schedule` applies to (default [`PersistentKernels::Dots`]).
    pub persistent_kernels: PersistentKernels,
    /// CTAs of a kernel with a plain launch to be resident on one SM at once, 1 to 32
    /// (sets every kernel's `ctas_per_sm` attribute where not 1; CUDA's
    /// `__launch_bounds__` minimum blocks per SM): its registers per thread are capped at
    /// that share of the register file (`.maxnreg`; with a producer warpgroup,
    /// `.minnctapersm` and the `setmaxnreg` split of `Target::setmaxnreg_split`), its shared
    /// memory at that share of the SM's (a located error beyond), and a persistent launch
    /// starts that many CTAs per SM. Default 1.
    pub ctas_per_sm: u32,
    /// CTAs per cluster (default 1 × 1 × 1). More than one needs [`Schedule::Clc`] on
    /// sm_100a (the multicast try_cancel): 2 or 4 along x; or [`Schedule::Static`] on sm_90a:
    /// up to 4 CTAs along x and y, whose GEMM multicasts each operand's TMA copies to the
    /// CTAs of the cluster that share it (`persistent{schedule=static cluster=X
    /// cluster-y=Y}`).
    pub cluster: ClusterShape,
    /// Tiles of M swept per group for L2 reuse (`persistent` `group_m`; 0 = row-major;
    /// default 8).
    pub group_m: u32,
    /// Run `tile-simplify` first (default true).
    pub simplify: bool,
    /// LLVM's optimisation level for the NVPTX back end (default [`OptLevel::O3`]).
    pub opt_level: OptLevel,
    /// The LLVM pass pipeline at [`OptLevel::O3`], as `opt -passes=` reads it; `None` (the
    /// default): tilec's (`tilec::lowering::LLVM_PIPELINE`). Only O3 runs it.
    pub llvm_passes: Option<String>,
    /// Warps per CTA of a kernel without a dot (`tile-assign-layouts` `num-warps`): one of
    /// [`NUM_WARPS`], 0 (the default) to let the pass choose from the tiles.
    pub num_warps: u32,
    /// The kernel to compile, by symbol (`gemm` or `@gemm`), when the module holds several;
    /// `None` (the default): the module must hold exactly one.
    pub kernel: Option<String>,
    /// Run the MLIR/LLVM stage ([`Emit::Ptx`] and [`Emit::Llvm`]) in a child process: the
    /// path of a `tile-compile` binary (`tilec::lowering::mlir_stage_in_child`). For callers
    /// that compile untrusted input: an LLVM fatal error or a crash in MLIR/LLVM then fails
    /// this compile with [`crate::Error::Mlir`] (`MlirError::Child`) instead of ending the
    /// caller's process. `None` (the default): in process. The child's stage timings are not
    /// reported (`Kernel::mlir_timings` is empty).
    pub mlir_child: Option<PathBuf>,
    /// How long the child of `mlir_child` may run before it is killed and the compile fails
    /// with `MlirError::Child` (default `tilec::lowering::CHILD_TIMEOUT`, 120 s).
    pub mlir_child_timeout: Duration,
    /// Values for the kernel's compile-time constants (`tile.kernel @gemm<BM = 128>`:
    /// `tilec::dialect::parser`'s "Kernel constants"), by name; a constant not named here
    /// takes its default. Each name must be one the compiled kernel declares. Text input
    /// only: a [`crate::Input::Module`] is already concrete. Default empty.
    pub constants: BTreeMap<String, i64>,
}

impl Options {
    /// The options that configure tilec's passes (as [`Options::set`] names them) whose
    /// values differ from [`Options::new`]'s for this target: what a kernel that is already
    /// lowered (its `target` set) cannot honour, since the passes do not run on it again.
    pub(crate) fn pass_options_changed(&self) -> Vec<&'static str> {
        let d = Options::new(self.target);
        [
            ("stages", self.stages != d.stages),
            ("load_stages", self.load_stages != d.load_stages),
            ("mma_lookahead", self.mma_lookahead != d.mma_lookahead),
            ("warp_specialize", self.warp_specialize != d.warp_specialize),
            ("pingpong", self.pingpong != d.pingpong),
            ("pingpong_body", self.pingpong_body != d.pingpong_body),
            ("defer_mma", self.defer_mma != d.defer_mma),
            (
                "specialize_masks",
                self.specialize_masks != d.specialize_masks,
            ),
            ("epilogue", self.epilogue != d.epilogue),
            ("promote", self.promote != d.promote),
            ("invariant_a", self.invariant_a != d.invariant_a),
            ("schedule", self.schedule != d.schedule),
            (
                "persistent_kernels",
                self.persistent_kernels != d.persistent_kernels,
            ),
            ("cluster", self.cluster != d.cluster),
            ("group_m", self.group_m != d.group_m),
            ("simplify", self.simplify != d.simplify),
            ("num_warps", self.num_warps != d.num_warps),
        ]
        .into_iter()
        .filter_map(|(name, changed)| changed.then_some(name))
        .collect()
    }

    /// Defaults for `target`: 4 stages, PTX, waits checked, the target's schedule.
    pub fn new(target: Target) -> Self {
        Options {
            target,
            stages: 4,
            load_stages: 2,
            mma_lookahead: false,
            warp_specialize: false,
            pingpong: false,
            pingpong_body: false,
            defer_mma: false,
            ftz: false,
            fp_fusion: false,
            specialize_masks: true,
            epilogue: EpilogueStore::Direct,
            promote: Promote::Auto,
            invariant_a: InvariantA::Auto,
            emit: Emit::Ptx,
            check_waits: true,
            schedule: Schedule::default_for(target),
            persistent_kernels: PersistentKernels::Dots,
            ctas_per_sm: 1,
            cluster: ClusterShape::NONE,
            group_m: 8,
            simplify: true,
            opt_level: OptLevel::O3,
            llvm_passes: None,
            num_warps: 0,
            kernel: None,
            mlir_child: None,
            mlir_child_timeout: tilec_lowering::CHILD_TIMEOUT,
            constants: BTreeMap::new(),
        }
    }

    setters! {
        with_stages: stages: u32,
        with_load_stages: load_stages: u32,
        with_mma_lookahead: mma_lookahead: bool,
        with_warp_specialize: warp_specialize: bool,
        with_pingpong: pingpong: bool,
        with_pingpong_body: pingpong_body: bool,
        with_defer_mma: defer_mma: bool,
        with_ftz: ftz: bool,
        with_fp_fusion: fp_fusion: bool,
        with_specialize_masks: specialize_masks: bool,
        with_epilogue: epilogue: EpilogueStore,
        with_promote: promote: Promote,
        with_invariant_a: invariant_a: InvariantA,
        with_emit: emit: Emit,
        with_check_waits: check_waits: bool,
        with_schedule: schedule: Schedule,
        with_persistent_kernels: persistent_kernels: PersistentKernels,
        with_ctas_per_sm: ctas_per_sm: u32,
        with_cluster: cluster: ClusterShape,
        with_group_m: group_m: u32,
        with_simplify: simplify: bool,
        with_opt_level: opt_level: OptLevel,
    }

    /// Sets [`Options::llvm_passes`].
    pub fn with_llvm_passes(mut self, pipeline: impl Into<String>) -> Self {
        self.llvm_passes = Some(pipeline.into());
        self
    }
    /// Sets [`Options::num_warps`].
    pub fn with_num_warps(mut self, warps: u32) -> Self {
        self.num_warps = warps;
        self
    }
    /// Sets [`Options::kernel`].
    pub fn with_kernel(mut self, name: impl Into<String>) -> Self {
        self.kernel = Some(name.into());
        self
    }
    /// Binds the kernel constant `name` to `value` ([`Options::constants`]).
    pub fn with_constant(mut self, name: impl Into<String>, value: i64) -> Self {
        self.constants.insert(name.into(), value);
        self
    }
    /// Sets [`Options::mlir_child`].
    pub fn with_mlir_child(mut self, exe: impl Into<PathBuf>) -> Self {
        self.mlir_child = Some(exe.into());
        self
    }

    /// The option names [`Options::set`] takes.
    pub const NAMES: &'static [&'static str] = &[
        "target",
        "stages",
        "load_stages",
        "mma_lookahead",
        "warp_specialize",
        "pingpong",
        "pingpong_body",
        "defer_mma",
        "ftz",
        "fp_fusion",
        "specialize_masks",
        "epilogue",
        "promote",
        "invariant_a",
        "emit",
        "check_waits",
        "schedule",
        "persistent_kernels",
        "ctas_per_sm",
        "cluster",
        "group_m",
        "simplify",
        "opt_level",
        "llvm_passes",
        "num_warps",
        "kernel",
        "define",
    ];

    /// Sets one option from text, as a frontend with string-keyed options (Python keyword
    /// arguments, a config file) has them: `name` is a field's name (`-` may stand for `_`),
    /// `value` its spelling (`"clc"`, `"2"`, `"true"`, ...). Setting `target` keeps the other
    /// fields, except a schedule at the old target's default, which becomes the new one's
    /// (`clc` on sm_100, `none` on sm_90). `define` takes `NAME=VALUE` and binds one kernel
    /// constant ([`Options::constants`]; `tile-compile -D`), keeping the others.
    ///
    /// # Errors
    /// An unknown name, or a value that does not parse for it. Combinations are checked by
    /// [`Options::validate`].
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), OptionsError> {
        fn num(option: &'static str, v: &str) -> Result<u32, OptionsError> {
            v.parse().map_err(|_| {
                OptionsError::new(option, format!("'{v}' is not a non-negative integer"))
            })
        }
        fn flag(option: &'static str, v: &str) -> Result<bool, OptionsError> {
            match v {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err(OptionsError::new(
                    option,
                    format!("'{v}' is not true or false"),
                )),
            }
        }
        match name.replace('-', "_").as_str() {
            "target" => {
                let target = Target::from_name(value).ok_or_else(|| {
                    OptionsError::new(
                        "target",
                        format!("unknown target '{value}' (known: {})", Target::names()),
                    )
                })?;
                // A schedule left at the old target's default takes the new one's.
                if self.schedule == Schedule::default_for(self.target) {
                    self.schedule = Schedule::default_for(target);
                }
                self.target = target;
            }
            "stages" => self.stages = num("stages", value)?,
            "load_stages" => self.load_stages = num("load_stages", value)?,
            "mma_lookahead" => self.mma_lookahead = flag("mma_lookahead", value)?,
            "warp_specialize" => self.warp_specialize = flag("warp_specialize", value)?,
            "pingpong" => self.pingpong = flag("pingpong", value)?,
            "pingpong_body" => self.pingpong_body = flag("pingpong_body", value)?,
            "defer_mma" => self.defer_mma = flag("defer_mma", value)?,
            "ftz" => self.ftz = flag("ftz", value)?,
            "fp_fusion" => self.fp_fusion = flag("fp_fusion", value)?,
            "specialize_masks" => self.specialize_masks = flag("specialize_masks", value)?,
            "epilogue" => self.epilogue = value.parse()?,
            "promote" => self.promote = value.parse()?,
            "invariant_a" => self.invariant_a = value.parse()?,
            "emit" => self.emit = value.parse()?,
            "check_waits" => self.check_waits = flag("check_waits", value)?,
            "schedule" => self.schedule = value.parse()?,
            "persistent_kernels" => self.persistent_kernels = value.parse()?,
            "ctas_per_sm" => self.ctas_per_sm = num("ctas_per_sm", value)?,
            "cluster" => self.cluster = value.parse()?,
            "group_m" => self.group_m = num("group_m", value)?,
            "simplify" => self.simplify = flag("simplify", value)?,
            "opt_level" => self.opt_level = value.parse()?,
            "llvm_passes" => self.llvm_passes = Some(value.to_string()),
            "num_warps" => self.num_warps = num("num_warps", value)?,
            "kernel" => self.kernel = Some(value.to_string()),
            "define" => {
                let (n, v) = parse_define(value)?;
                self.constants.insert(n, v);
            }
            _ => {
                return Err(OptionsError {
                    option: "?",
                    reason: format!(
                        "unknown option '{name}' (known: {})",
                        Self::NAMES.join(", ")
                    ),
                })
            }
        }
        Ok(())
    }

    /// Checks each option's range and that the options go together on the target. Nothing
    /// is silently ignored or clamped: an option that would not take effect is an error.
    ///
    /// # Errors
    /// The first option found wrong, with the reason:
    /// - `stages` outside 2 to 8; `load_stages` neither 0 nor 2 to 8; `mma_lookahead` with
    ///   `load_stages` 0;
    /// - `schedule` `clc` on a target without `clusterlaunchcontrol.try_cancel` (sm_90,
    ///   sm_90a);
    /// - `cluster`: with `clc`, other than 1, 2 or 4 along x, or more than 1 on a target
    ///   without the multicast try_cancel (sm_100a only); with `static`, other than 1, 2 or 4
    ///   along x and y (at most 4 in all, 1 along z), or more than 1 on a target without TMA
    ///   multicast (sm_90a); more than 1 with any other schedule;
    /// - `epilogue` `tma`, `load_stages` other than 2, `mma_lookahead` true,
    ///   `warp_specialize` true, or `invariant_a` other than `auto` without wgmma (sm_90a
    ///   only);
    /// - `num_warps` not in [`NUM_WARPS`];
    /// - `llvm_passes` with an optimisation level below 3 (it would not run), or empty;
    ///   `llvm_passes` or an `opt_level` other than 3 with `emit` `tile` or `mlir` (LLVM
    ///   does not run);
    /// - `kernel` empty; `mlir_child_timeout` zero;
    /// - `define`: a [`Options::constants`] name that no kernel could declare (see
    ///   [`tilec_dialect::is_constant_name`]).
    pub fn validate(&self) -> Result<(), OptionsError> {
        let t = self.target;
        let err = |option, reason: String| Err(OptionsError::new(option, reason));
        if !(2..=8).contains(&self.stages) {
            return err(
                "stages",
                format!("{} is out of range: 2 to 8 ring slots", self.stages),
            );
        }
        if self.group_m > 65_536 {
            return err(
                "group_m",
                format!("{} is out of range: 0 to 65536 tiles of M", self.group_m),
            );
        }
        if !(1..=32).contains(&self.ctas_per_sm) {
            return err(
                "ctas_per_sm",
                format!("{} is out of range: 1 to 32 CTAs per SM", self.ctas_per_sm),
            );
        }
        if self.mma_lookahead && self.load_stages == 0 {
            return err(
                "mma_lookahead",
                "a wgmma is issued ahead only from TMA rings, and load_stages is 0 (none)".into(),
            );
        }
        if self.warp_specialize && self.load_stages == 0 {
            return err(
                "warp_specialize",
                "the producer issues the TMA rings' copies, and load_stages is 0 (none)".into(),
            );
        }
        if self.pingpong && !self.warp_specialize {
            return err(
                "pingpong",
                "true makes the consumers of a producer warpgroup take turns, and \
                 warp_specialize is false"
                    .into(),
            );
        }
        if self.pingpong_body && !self.pingpong {
            return err(
                "pingpong_body",
                "true shapes the turns of pingpong, and pingpong is false".into(),
            );
        }
        if self.defer_mma && !self.warp_specialize {
            return err(
                "defer_mma",
                "true reorders a warp-specialized consumer loop, and warp_specialize is false"
                    .into(),
            );
        }
        if self.defer_mma && self.mma_lookahead {
            return err(
                "defer_mma",
                "true and mma_lookahead true are two orders of one loop: choose one".into(),
            );
        }
        if self.load_stages != 0 && !(2..=8).contains(&self.load_stages) {
            return err(
                "load_stages",
                format!(
                    "{} is out of range: 0 (no TMA pipeline) or 2 to 8 ring slots",
                    self.load_stages
                ),
            );
        }
        if self.schedule == Schedule::Clc && !t.has_try_cancel() {
            return err(
                "schedule",
                format!(
                    "clc uses clusterlaunchcontrol.try_cancel (PTX ISA 8.6), which needs \
                     sm_100 or sm_100a; the target is {t}"
                ),
            );
        }
        let c = self.cluster;
        if c.size() > 1 && !matches!(self.schedule, Schedule::Clc | Schedule::Static) {
            return err(
                "cluster",
                format!(
                    "{c} needs the clc schedule (sm_100a) or the static one (sm_90a), but the \
                     schedule is {}",
                    self.schedule
                ),
            );
        }
        if self.schedule == Schedule::Static && c.size() > 1 {
            if c.z != 1 || ![1, 2, 4].contains(&c.x) || ![1, 2, 4].contains(&c.y) || c.size() > 4 {
                return err(
                    "cluster",
                    format!(
                        "{c}: the static schedule takes clusters of 1, 2 or 4 CTAs along x and \
                         y, at most 4 in all, and 1 along z"
                    ),
                );
            }
            if !t.has_tma_multicast() || !t.has_wgmma() {
                return err(
                    "cluster",
                    format!(
                        "{c}: a static cluster multicasts the wgmma GEMM's TMA copies \
                         (cp.async.bulk.tensor .multicast::cluster), which needs sm_90a; the \
                         target is {t}"
                    ),
                );
            }
        } else if c.y != 1 || c.z != 1 || ![1, 2, 4].contains(&c.x) {
            return err(
                "cluster",
                format!(
                    "{c}: clusters of 1, 2 or 4 CTAs along x are supported (and with the static \
                     schedule on sm_90a, along x and y)"
                ),
            );
        }
        if c.x > 1 && self.schedule == Schedule::Clc && !t.has_try_cancel_multicast() {
            return err(
                "cluster",
                format!(
                    "{c} uses the multicast try_cancel, which needs sm_100a; the target is {t}"
                ),
            );
        }
        if self.epilogue == EpilogueStore::Tma && !t.has_wgmma() {
            return err(
                "epilogue",
                format!(
                    "tma stores the wgmma accumulator fragments (one warpgroup per 64 rows), \
                     which needs sm_90a; the target is {t}"
                ),
            );
        }
        if self.mma_lookahead && !t.has_wgmma() {
            return err(
                "mma_lookahead",
                format!("true issues a wgmma ahead, which needs sm_90a; the target is {t}"),
            );
        }
        if self.load_stages != Options::new(t).load_stages && !t.has_wgmma() {
            return err(
                "load_stages",
                format!(
                    "{} sets the depth of the TMA rings that stage wgmma operands, which needs \
                     sm_90a; the target is {t}",
                    self.load_stages
                ),
            );
        }
        if self.warp_specialize && !t.has_wgmma() {
            return err(
                "warp_specialize",
                format!("true splits the TMA rings' loop, which needs sm_90a; the target is {t}"),
            );
        }
        if self.invariant_a != InvariantA::Auto && !t.has_wgmma() {
            return err(
                "invariant_a",
                format!(
                    "{} places a wgmma's A operand, which needs sm_90a; the target is {t} \
                     (auto is the only choice there)",
                    self.invariant_a
                ),
            );
        }
        if !NUM_WARPS.contains(&self.num_warps) {
            return err(
                "num_warps",
                format!(
                    "{} is not a power of two from 1 to 32 (or 0, to let the pass choose)",
                    self.num_warps
                ),
            );
        }
        if matches!(self.emit, Emit::Tile | Emit::Mlir) {
            let llvm = if self.llvm_passes.is_some() {
                Some("llvm_passes")
            } else if self.opt_level != OptLevel::O3 {
                Some("opt_level")
            } else {
                None
            };
            if let Some(option) = llvm {
                return err(
                    option,
                    format!(
                        "configures LLVM, which does not run when the output is {}: leave it \
                         out, or emit llvm, ptx or cubin",
                        self.emit
                    ),
                );
            }
        }
        match &self.llvm_passes {
            Some(p) if p.trim().is_empty() => {
                return err("llvm_passes", "the pipeline is empty".into());
            }
            Some(_) if self.opt_level != OptLevel::O3 => {
                return err(
                    "llvm_passes",
                    format!(
                        "the pipeline runs at opt level 3 only; the opt level is {}",
                        self.opt_level
                    ),
                );
            }
            _ => {}
        }
        if self
            .kernel
            .as_deref()
            .map(|k| k.trim_start_matches('@').is_empty())
            == Some(true)
        {
            return err("kernel", "the kernel name is empty".into());
        }
        if let Some(n) = self
            .constants
            .keys()
            .find(|n| !tilec_dialect::is_constant_name(n))
        {
            return err("define", bad_constant_name(n));
        }
        if self.mlir_child.is_some() && self.mlir_child_timeout.is_zero() {
            return err(
                "mlir_child_timeout",
                "a zero timeout kills every child".into(),
            );
        }
        Ok(())
    }

    /// The tilec pass pipeline these options select, as `tile-opt` text.
    pub fn pipeline(&self) -> String {
        let mut p = self.transforming_pipeline();
        if self.checks_waits() {
            p.push_str(",verify-async-waits,verify-named-barriers");
        }
        p
    }

    /// Whether [`Options::pipeline`] ends with the checkers (`verify-async-waits`,
    /// `verify-named-barriers`).
    pub(crate) fn checks_waits(&self) -> bool {
        self.check_waits
            && tilec_passes::lookup("async-wait-placement").is_some()
            && tilec_passes::lookup("verify-async-waits").is_some()
            && tilec_passes::lookup("verify-named-barriers").is_some()
    }

    /// [`Options::pipeline`] without its closing checkers: the passes that
    /// change the module. [`crate::compile`] runs the check on a second thread, beside the
    /// lowering and the MLIR stage, which only read the module.
    pub(crate) fn transforming_pipeline(&self) -> String {
        let mut p = String::new();
        if self.simplify && tilec_passes::lookup("tile-simplify").is_some() {
            p.push_str("tile-simplify,");
        }
        // A wide store's elementwise chain in column strips where its loads and kept tiles
        // would crowd the registers (a normalisation's output at 32,768 columns); before
        // `persistent`, which may wrap a kernel without a dot in its tile loop (the pass
        // leaves kernels with GPU-level ops alone).
        p.push_str(&format!(
            "tile-strip-mine-stores{{target={} num-warps={}}},",
            self.target, self.num_warps
        ));
        let dots = self.persistent_kernels == PersistentKernels::Dots;
        match self.schedule {
            Schedule::Off => {}
            Schedule::Clc => p.push_str(&format!(
                "persistent{{schedule=clc group_m={} cluster={} dot-kernels-only={dots}}},",
                self.group_m, self.cluster.x
            )),
            Schedule::Static if self.cluster.size() > 1 => p.push_str(&format!(
                "persistent{{schedule=static group_m={} cluster={} cluster-y={} \
                 dot-kernels-only={dots}}},",
                self.group_m, self.cluster.x, self.cluster.y
            )),
            s => p.push_str(&format!(
                "persistent{{schedule={s} group_m={} dot-kernels-only={dots}}},",
                self.group_m
            )),
        }
        p.push_str(&format!(
            "tile-to-gpu{{target={} stages={}{}{}}}",
            self.target,
            self.stages,
            match self.epilogue {
                EpilogueStore::Tma => " epilogue=tma",
                EpilogueStore::Direct => "",
            },
            match self.promote {
                Promote::On => " promote=true",
                Promote::Off => " promote=false",
                Promote::Auto => "",
            }
        ));
        if self.specialize_masks {
            p.push_str(",tile-specialize-masks");
        }
        // Kernels without a dot (tile-to-gpu leaves them): layouts and a plain launch.
        // (`tile-hoist-loads` is not in the default pipeline: on the H200 it left RMSNorm
        // as fast and made LayerNorm 22% slower, from the registers the early loads hold;
        // docs/performance.md.)
        p.push_str(&format!(
            ",tile-assign-layouts{{target={} num-warps={}}}",
            self.target, self.num_warps
        ));
        // Dots of laid-out kernels as wgmma where the target has it (a no-op elsewhere),
        // then the layout conversions and transposes that only fed them go; the waits come
        // next.
        p.push_str(match self.invariant_a {
            InvariantA::Auto => ",tile-dot-to-wgmma,dce",
            InvariantA::Smem => ",tile-dot-to-wgmma{stage-invariant-a=true},dce",
            InvariantA::Registers => ",tile-dot-to-wgmma{stage-invariant-a=false},dce",
        });
        // Loads staged for wgmma as TMA copies into rings filled ahead of their loop's
        // iterations.
        if self.load_stages != 0 {
            p.push_str(&format!(
                ",tile-pipeline-loads{{stages={}{}{}}}",
                self.load_stages,
                if self.mma_lookahead {
                    " mma-lookahead=true"
                } else {
                    ""
                },
                if self.warp_specialize {
                    " warp-specialize=true"
                } else {
                    ""
                }
            ));
            if self.defer_mma {
                p.push_str(",tile-defer-mma");
            }
            if self.pingpong {
                p.push_str(if self.pingpong_body {
                    ",tile-pingpong{turn=body}"
                } else {
                    ",tile-pingpong"
                });
            }
        }
        if tilec_passes::lookup("async-wait-placement").is_some() {
            p.push_str(",async-wait-placement");
        }
        p
    }
}

/// The reason for a constant name that no kernel could declare.
fn bad_constant_name(n: &str) -> String {
    format!(
        "'{n}' is not a constant name: a capital letter, then capitals, digits and '_' (BM, \
         BLOCK_K)"
    )
}

/// `NAME=VALUE`, as `tile-compile -D` and [`Options::set`]'s `define` spell a binding.
///
/// # Errors
/// No `=`, a name no kernel could declare, or a value that is not a 64-bit integer.
pub fn parse_define(text: &str) -> Result<(String, i64), OptionsError> {
    let Some((n, v)) = text.split_once('=') else {
        return Err(OptionsError::new(
            "define",
            format!("'{text}' is not NAME=VALUE (e.g. BM=128)"),
        ));
    };
    let (n, v) = (n.trim(), v.trim());
    if !tilec_dialect::is_constant_name(n) {
        return Err(OptionsError::new("define", bad_constant_name(n)));
    }
    let v = v.parse::<i64>().map_err(|_| {
        let why = if v.parse::<i128>().is_ok() {
            "is out of the 64-bit integer range"
        } else {
            "is not an integer"
        };
        OptionsError::new("define", format!("'{v}' (for {n}) {why}"))
    })?;
    Ok((n.to_string(), v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for s in Schedule::ALL {
            assert_eq!(s.name().parse::<Schedule>(), Ok(*s));
        }
        for e in EpilogueStore::ALL {
            assert_eq!(e.to_string().parse::<EpilogueStore>(), Ok(*e));
        }
        for p in Promote::ALL {
            assert_eq!(p.name().parse::<Promote>(), Ok(*p));
        }
        for (i, l) in OptLevel::ALL.iter().enumerate() {
            assert_eq!(l.level(), i as u32);
            assert_eq!(i.to_string().parse::<OptLevel>(), Ok(*l));
        }
        assert_eq!(Emit::Llvm.extension(), "ll");
        assert_eq!("2".parse::<ClusterShape>(), Ok(ClusterShape::x(2)));
        let c: ClusterShape = "2x2x1".parse().unwrap();
        assert_eq!(
            (c.dims(), c.size(), c.to_string()),
            ([2, 2, 1], 4, "2x2".into())
        );
        assert_eq!(
            "1x2".parse::<ClusterShape>().map(ClusterShape::dims),
            Ok([1, 2, 1])
        );
        for bad in ["", "0", "2x2x1x1", "-1", "x", "2x1x0"] {
            assert_eq!(
                bad.parse::<ClusterShape>().unwrap_err().option,
                "cluster",
                "{bad:?}"
            );
        }
        let e = "TMA".parse::<EpilogueStore>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "option 'epilogue': unknown value 'TMA' (known: direct, tma)"
        );
        let e = "7".parse::<OptLevel>().unwrap_err();
        assert_eq!(e.reason, "unknown value '7' (known: 0, 1, 2, 3)");
    }

    #[test]
    fn defaults_follow_the_target() {
        let s = |t| Options::new(t).schedule;
        assert_eq!(s(Target::Sm90a), Schedule::Static);
        assert_eq!(s(Target::Sm90), Schedule::None);
        assert_eq!(s(Target::Sm100), Schedule::Clc);
        assert_eq!(s(Target::Sm100a), Schedule::Clc);
        for t in Target::ALL {
            assert_eq!(Options::new(t).validate(), Ok(()), "{t}");
        }
    }

    #[test]
    fn set_parses_every_name() {
        let mut o = Options::new(Target::Sm90a);
        for (k, v) in [
            ("target", "sm_100a"),
            ("stages", "6"),
            ("load-stages", "3"),
            ("mma-lookahead", "true"),
            ("warp-specialize", "false"),
            ("pingpong", "false"),
            ("defer-mma", "false"),
            ("pingpong-body", "false"),
            ("ftz", "true"),
            ("fp-fusion", "true"),
            ("specialize-masks", "false"),
            ("epilogue", "direct"),
            ("promote", "off"),
            ("invariant-a", "registers"),
            ("emit", "mlir"),
            ("check-waits", "false"),
            ("schedule", "clc"),
            ("persistent-kernels", "all"),
            ("ctas-per-sm", "2"),
            ("cluster", "4"),
            ("group_m", "0"),
            ("simplify", "false"),
            ("opt-level", "3"),
            ("llvm_passes", "default<O3>"),
            ("num_warps", "8"),
            ("kernel", "@gemm"),
            ("define", "BM=64"),
        ] {
            o.set(k, v).unwrap_or_else(|e| panic!("{k}={v}: {e}"));
        }
        let want = Options::new(Target::Sm100a)
            .with_stages(6)
            .with_load_stages(3)
            .with_mma_lookahead(true)
            .with_ftz(true)
            .with_fp_fusion(true)
            .with_specialize_masks(false)
            .with_promote(Promote::Off)
            .with_invariant_a(InvariantA::Registers)
            .with_emit(Emit::Mlir)
            .with_check_waits(false)
            .with_schedule(Schedule::Clc)
            .with_persistent_kernels(PersistentKernels::All)
            .with_ctas_per_sm(2)
            .with_cluster(ClusterShape::x(4))
            .with_group_m(0)
            .with_simplify(false)
            .with_llvm_passes("default<O3>")
            .with_num_warps(8)
            .with_kernel("@gemm")
            .with_constant("BM", 64);
        assert_eq!(o, want);
        // sm_100a has the clc cluster but no wgmma: the wgmma-only choices are refused, and
        // an LLVM pipeline with MLIR as the output.
        assert_eq!(o.validate().unwrap_err().option, "mma_lookahead");
        let wgmma_free = o
            .clone()
            .with_mma_lookahead(false)
            .with_load_stages(2)
            .with_invariant_a(InvariantA::Auto);
        assert_eq!(wgmma_free.validate().unwrap_err().option, "llvm_passes");
        assert_eq!(wgmma_free.with_emit(Emit::Ptx).validate(), Ok(()));
        assert_eq!(Options::NAMES.len(), 27);
        let e = o.set("stage", "4").unwrap_err();
        assert!(
            e.reason
                .starts_with("unknown option 'stage' (known: target, stages,"),
            "{e}"
        );
        assert_eq!(o.set("stages", "four").unwrap_err().option, "stages");
        assert_eq!(o.set("simplify", "yes").unwrap_err().option, "simplify");
        assert_eq!(o.set("target", "sm_80").unwrap_err().option, "target");
        // A schedule at the old target's default follows the target; a chosen one stays.
        let mut o = Options::new(Target::Sm90a);
        o.set("target", "sm_90").unwrap();
        assert_eq!(o.schedule, Schedule::None);
        o.set("target", "sm_100a").unwrap();
        assert_eq!(o.schedule, Schedule::Clc);
        let mut o = Options::new(Target::Sm90a).with_schedule(Schedule::Off);
        o.set("target", "sm_100").unwrap();
        assert_eq!(o.schedule, Schedule::Off);
    }

    #[test]
    fn validate_rejects_what_would_not_take_effect() {
        let base = || Options::new(Target::Sm90a);
        let opt = |o: Options| o.validate().map_err(|e| e.option);
        assert_eq!(opt(base().with_stages(1)), Err("stages"));
        assert_eq!(opt(base().with_stages(9)), Err("stages"));
        assert_eq!(opt(base().with_stages(8)), Ok(()));
        assert_eq!(opt(base().with_group_m(65_537)), Err("group_m"));
        assert_eq!(opt(base().with_group_m(65_536)), Ok(()));
        assert_eq!(opt(base().with_ctas_per_sm(0)), Err("ctas_per_sm"));
        assert_eq!(opt(base().with_ctas_per_sm(33)), Err("ctas_per_sm"));
        assert_eq!(opt(base().with_ctas_per_sm(2)), Ok(()));
        assert_eq!(opt(base().with_load_stages(1)), Err("load_stages"));
        assert_eq!(opt(base().with_load_stages(9)), Err("load_stages"));
        assert_eq!(opt(base().with_load_stages(0)), Ok(()));
        assert_eq!(opt(base().with_load_stages(3)), Ok(()));
        let ws = base().with_warp_specialize(true);
        assert_eq!(opt(ws.clone()), Ok(()));
        assert_eq!(opt(ws.clone().with_load_stages(0)), Err("warp_specialize"));
        assert_eq!(opt(ws.clone().with_mma_lookahead(true)), Ok(()));
        assert_eq!(opt(base().with_pingpong(true)), Err("pingpong"));
        assert_eq!(opt(base().with_defer_mma(true)), Err("defer_mma"));
        let body = ws.clone().with_pingpong_body(true);
        assert_eq!(opt(body.clone()), Err("pingpong_body"));
        assert_eq!(opt(body.with_pingpong(true)), Ok(()));
        assert_eq!(opt(ws.clone().with_defer_mma(true)), Ok(()));
        let both = ws.clone().with_defer_mma(true).with_mma_lookahead(true);
        assert_eq!(opt(both), Err("defer_mma"));
        assert_eq!(
            opt(base().with_warp_specialize(true).with_pingpong(true)),
            Ok(())
        );
        let sm90 = Options::new(Target::Sm90).with_warp_specialize(true);
        assert_eq!(opt(sm90), Err("warp_specialize"));
        let ahead = base().with_mma_lookahead(true);
        assert_eq!(opt(ahead.clone()), Ok(()));
        assert_eq!(opt(ahead.with_load_stages(0)), Err("mma_lookahead"));
        for t in [Target::Sm90, Target::Sm100, Target::Sm100a] {
            let o = Options::new(t);
            assert_eq!(
                opt(o.clone().with_mma_lookahead(true)),
                Err("mma_lookahead")
            );
            let mlir = o.clone().with_emit(Emit::Mlir);
            assert_eq!(
                opt(mlir.clone().with_opt_level(OptLevel::O1)),
                Err("opt_level")
            );
            assert_eq!(
                opt(mlir.with_llvm_passes("instcombine")),
                Err("llvm_passes")
            );
            assert_eq!(opt(o.clone().with_load_stages(3)), Err("load_stages"));
            assert_eq!(opt(o.clone().with_load_stages(0)), Err("load_stages"));
            assert_eq!(opt(o.clone().with_load_stages(2)), Ok(()));
            assert_eq!(
                opt(o.clone().with_invariant_a(InvariantA::Smem)),
                Err("invariant_a")
            );
            assert_eq!(
                opt(o.clone().with_invariant_a(InvariantA::Registers)),
                Err("invariant_a")
            );
            assert_eq!(opt(o.with_invariant_a(InvariantA::Auto)), Ok(()));
        }
        assert_eq!(opt(base().with_schedule(Schedule::Clc)), Err("schedule"));
        // Static clusters (TMA multicast): up to 4 CTAs along x and y on sm_90a.
        for c in ["2", "1x2", "2x2", "4", "1x4"] {
            let c: ClusterShape = c.parse().unwrap();
            assert_eq!(opt(base().with_cluster(c)), Ok(()), "{c}");
        }
        for c in ["4x2", "2x1x2", "3"] {
            let c: ClusterShape = c.parse().unwrap();
            assert_eq!(opt(base().with_cluster(c)), Err("cluster"), "{c}");
        }
        let stat = |t| Options::new(t).with_schedule(Schedule::Static);
        for t in [Target::Sm90, Target::Sm100a] {
            assert_eq!(
                opt(stat(t).with_cluster(ClusterShape::x(2))),
                Err("cluster"),
                "{t}"
            );
        }
        let none = Options::new(Target::Sm90a).with_schedule(Schedule::None);
        assert_eq!(opt(none.with_cluster(ClusterShape::x(2))), Err("cluster"));
        let clc = |t| Options::new(t).with_schedule(Schedule::Clc);
        assert_eq!(
            opt(clc(Target::Sm100).with_cluster(ClusterShape::x(2))),
            Err("cluster")
        );
        assert_eq!(
            opt(clc(Target::Sm100a).with_cluster(ClusterShape::x(3))),
            Err("cluster")
        );
        let yz = ClusterShape { x: 2, y: 2, z: 1 };
        assert_eq!(opt(clc(Target::Sm100a).with_cluster(yz)), Err("cluster"));
        let off = Options::new(Target::Sm100a).with_schedule(Schedule::Off);
        assert_eq!(opt(off.with_cluster(ClusterShape::x(2))), Err("cluster"));
        assert_eq!(opt(base().with_epilogue(EpilogueStore::Tma)), Ok(()));
        let tma = |t| Options::new(t).with_epilogue(EpilogueStore::Tma);
        assert_eq!(opt(tma(Target::Sm90)), Err("epilogue"));
        assert_eq!(opt(tma(Target::Sm100a)), Err("epilogue"));
        assert_eq!(opt(base().with_num_warps(3)), Err("num_warps"));
        assert_eq!(opt(base().with_num_warps(64)), Err("num_warps"));
        assert_eq!(opt(base().with_num_warps(32)), Ok(()));
        let o2 = base()
            .with_llvm_passes("default<O3>")
            .with_opt_level(OptLevel::O2);
        assert_eq!(opt(o2), Err("llvm_passes"));
        assert_eq!(opt(base().with_llvm_passes(" ")), Err("llvm_passes"));
        assert_eq!(opt(base().with_kernel("@")), Err("kernel"));
        let mut child = base().with_mlir_child("tile-compile");
        child.mlir_child_timeout = Duration::ZERO;
        assert_eq!(opt(child), Err("mlir_child_timeout"));
        let e = base().with_schedule(Schedule::Clc).validate().unwrap_err();
        assert_eq!(
            e.to_string(),
            "option 'schedule': clc uses clusterlaunchcontrol.try_cancel (PTX ISA 8.6), which \
             needs sm_100 or sm_100a; the target is sm_90a"
        );
    }

    #[test]
    fn pipeline_spells_the_choices() {
        let o = Options::new(Target::Sm100a)
            .with_cluster(ClusterShape::x(2))
            .with_promote(Promote::On)
            .with_num_warps(4);
        let p = o.pipeline();
        assert!(
            p.contains("persistent{schedule=clc group_m=8 cluster=2 "),
            "{p}"
        );
        assert!(
            p.contains("tile-to-gpu{target=sm_100a stages=4 promote=true}"),
            "{p}"
        );
        assert!(
            p.contains("tile-assign-layouts{target=sm_100a num-warps=4}"),
            "{p}"
        );
        assert!(p.contains(" dot-kernels-only=true}"), "{p}");
        let all = Options::new(Target::Sm90a).with_persistent_kernels(PersistentKernels::All);
        assert!(
            all.pipeline()
                .contains("persistent{schedule=static group_m=8 dot-kernels-only=false},"),
            "{}",
            all.pipeline()
        );
        let p = Options::new(Target::Sm90a)
            .with_schedule(Schedule::Off)
            .with_epilogue(EpilogueStore::Tma)
            .pipeline();
        assert!(!p.contains("persistent"), "{p}");
        assert!(
            p.contains("tile-to-gpu{target=sm_90a stages=4 epilogue=tma}"),
            "{p}"
        );
        for (a, spelled) in [
            (InvariantA::Auto, ",tile-dot-to-wgmma,"),
            (
                InvariantA::Smem,
                ",tile-dot-to-wgmma{stage-invariant-a=true},",
            ),
            (
                InvariantA::Registers,
                ",tile-dot-to-wgmma{stage-invariant-a=false},",
            ),
        ] {
            let p = Options::new(Target::Sm90a).with_invariant_a(a).pipeline();
            assert!(p.contains(spelled), "{a:?}: {p}");
            tilec_passes::parse_pipeline(&p).unwrap_or_else(|e| panic!("{p}: {e:?}"));
        }
    }
}
