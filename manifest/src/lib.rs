//! # tilec-manifest: how to launch a tilec kernel
//!
//! `tile-compile` writes `NAME.json` beside `NAME.ptx`: the kernel's name, target, PTX ISA
//! version, block and cluster shape, dynamic shared memory, the grid as expressions over the
//! scalar arguments, the persistent schedule, and the parameters in order. This crate holds
//! those types, their JSON form (`docs/manifest.md`, schema [`SCHEMA_VERSION`]), and what a
//! launcher computes from them: [`Manifest::launch_config`] evaluates the grid for the
//! caller's scalars and SM count and checks it against CUDA's limits.
//!
//! It depends on no MLIR and no GPU, so a runtime that only launches kernels compiled ahead
//! of time links this crate alone.
//!
//! ```
//! use tilec_manifest::Manifest;
//! let json = r#"{"schema_version": 1, "kernel": "gemm", "target": "sm_90a",
//!   "ptx_version": "8.0", "ptx_file": "gemm.ptx", "block": [384, 1, 1],
//!   "cluster": [1, 1, 1], "dynamic_shared_memory_bytes": 197632,
//!   "grid": {"x": {"ceildiv": [{"arg": "N"}, 256]}, "y": {"ceildiv": [{"arg": "M"}, 128]},
//!            "z": 1, "text": ["ceildiv(N, 256)", "ceildiv(M, 128)", "1"]},
//!   "persistent": {"schedule": "static", "ctas_per_sm": 1, "group_m": 8},
//!   "params": [{"name": "M", "kind": "scalar", "dtype": "i64"},
//!              {"name": "N", "kind": "scalar", "dtype": "i64"}]}"#;
//! let m = Manifest::from_json(json).unwrap();
//! // 4096 × 4096: 16 × 32 tiles, 512 > 132 SMs, so 132 persistent CTAs along x.
//! let lc = m.launch_config(&[("M", 4096), ("N", 4096)], 132).unwrap();
//! assert_eq!(lc.grid, [132, 1, 1]);
//! assert_eq!((lc.block, lc.dynamic_shared_memory_bytes), ([384, 1, 1], 197632));
//! ```
//!
//! Dependencies: `serde` and `serde_json` for the JSON form, `thiserror` for the errors.

#![deny(missing_docs)]

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The schema version this crate reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// CUDA's most CTAs along x, y and z (`cudaDeviceProp::maxGridSize` on sm_90 and sm_100).
pub const MAX_GRID: [u64; 3] = [2_147_483_647, 65_535, 65_535];

/// A grid dimension: an expression over the kernel's scalar arguments.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GridExpr {
    /// A constant.
    Int(i64),
    /// `{"arg": "N"}`.
    Arg {
        /// The argument name.
        arg: String,
    },
    /// `{"ceildiv": [a, b]}`: ⌈a / b⌉, b > 0.
    CeilDiv {
        /// Operands.
        ceildiv: Box<[GridExpr; 2]>,
    },
    /// `{"mul": [a, b]}`.
    Mul {
        /// Operands.
        mul: Box<[GridExpr; 2]>,
    },
    /// `{"add": [a, b]}`.
    Add {
        /// Operands.
        add: Box<[GridExpr; 2]>,
    },
    /// `{"min": [a, b]}`.
    Min {
        /// Operands.
        min: Box<[GridExpr; 2]>,
    },
}

impl GridExpr {
    /// The value for the scalar arguments that `arg` gives by name.
    ///
    /// # Errors
    /// [`LaunchError::MissingArg`] for an argument `arg` does not give;
    /// [`LaunchError::Arithmetic`] for a `ceildiv` by a value ≤ 0 or a 64-bit overflow.
    pub fn eval(&self, arg: &dyn Fn(&str) -> Option<i64>) -> Result<i64, LaunchError> {
        let two = |ab: &[GridExpr; 2]| Ok::<_, LaunchError>((ab[0].eval(arg)?, ab[1].eval(arg)?));
        let arith = |what: &str| LaunchError::Arithmetic {
            expr: self.to_string(),
            reason: what.to_string(),
        };
        match self {
            GridExpr::Int(i) => Ok(*i),
            GridExpr::Arg { arg: name } => {
                arg(name).ok_or_else(|| LaunchError::MissingArg { name: name.clone() })
            }
            GridExpr::CeilDiv { ceildiv } => {
                let (a, b) = two(ceildiv)?;
                if b <= 0 {
                    return Err(arith(&format!("the divisor is {b}")));
                }
                // ⌈a / b⌉ for any a, b > 0, without overflow.
                Ok(a.div_euclid(b) + i64::from(a.rem_euclid(b) != 0))
            }
            GridExpr::Mul { mul } => {
                let (a, b) = two(mul)?;
                a.checked_mul(b)
                    .ok_or_else(|| arith("the product overflows 64 bits"))
            }
            GridExpr::Add { add } => {
                let (a, b) = two(add)?;
                a.checked_add(b)
                    .ok_or_else(|| arith("the sum overflows 64 bits"))
            }
            GridExpr::Min { min } => {
                let (a, b) = two(min)?;
                Ok(a.min(b))
            }
        }
    }
}

impl fmt::Display for GridExpr {
    /// The text form of the manifest's `grid.text`: `ceildiv(N, 256)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, ab) = match self {
            GridExpr::Int(i) => return write!(f, "{i}"),
            GridExpr::Arg { arg } => return f.write_str(arg),
            GridExpr::CeilDiv { ceildiv } => ("ceildiv", ceildiv),
            GridExpr::Mul { mul } => ("mul", mul),
            GridExpr::Add { add } => ("add", add),
            GridExpr::Min { min } => ("min", min),
        };
        write!(f, "{name}({}, {})", ab[0], ab[1])
    }
}

/// The launch grid (before the persistent schedule: one CTA per tile).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grid {
    /// CTAs along x.
    pub x: GridExpr,
    /// CTAs along y.
    pub y: GridExpr,
    /// CTAs along z.
    pub z: GridExpr,
    /// The same as text (`ceildiv(N, 256)`), x, y, z.
    pub text: Vec<String>,
}

/// Declares a closed set of JSON strings as an enum with `name()`, `Display` and `FromStr`
/// (which reads the JSON spelling, and gives back the text it could not read).
macro_rules! spelled {
    ($(#[$m:meta])* $ty:ident { $($(#[$vm:meta])* $var:ident = $name:literal,)+ }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $ty {
            $($(#[$vm])* #[serde(rename = $name)] $var,)+
        }
        impl $ty {
            /// The JSON spelling.
            pub fn name(self) -> &'static str {
                match self { $($ty::$var => $name,)+ }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
        impl std::str::FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($name => Ok($ty::$var),)+
                    _ => Err(s.to_string()),
                }
            }
        }
    };
}

spelled! {
    /// An element or scalar type, as the IR names it.
    Dtype {
        /// 1-bit integer (a byte in memory).
        I1 = "i1",
        /// 32-bit integer.
        I32 = "i32",
        /// 64-bit integer.
        I64 = "i64",
        /// The IR's `index` (64-bit); scalar parameters of `index` are written `i64`.
        Index = "index",
        /// IEEE half.
        F16 = "f16",
        /// bfloat16.
        Bf16 = "bf16",
        /// IEEE single.
        F32 = "f32",
        /// OCP FP8 E4M3 (torch's `float8_e4m3fn`); TMA moves it as `UINT8`.
        E4m3 = "e4m3",
        /// OCP FP8 E5M2 (torch's `float8_e5m2`); TMA moves it as `UINT8`.
        E5m2 = "e5m2",
    }
}

impl Dtype {
    /// Bytes per element in global memory.
    pub fn size_bytes(self) -> u64 {
        match self {
            Dtype::I1 | Dtype::E4m3 | Dtype::E5m2 => 1,
            Dtype::F16 | Dtype::Bf16 => 2,
            Dtype::I32 | Dtype::F32 => 4,
            Dtype::I64 | Dtype::Index => 8,
        }
    }
}

spelled! {
    /// A tensor map's shared-memory swizzle (`CUtensorMapSwizzle`).
    Swizzle {
        /// `CU_TENSOR_MAP_SWIZZLE_NONE`.
        None = "none",
        /// `CU_TENSOR_MAP_SWIZZLE_32B`.
        B32 = "32B",
        /// `CU_TENSOR_MAP_SWIZZLE_64B`.
        B64 = "64B",
        /// `CU_TENSOR_MAP_SWIZZLE_128B`.
        B128 = "128B",
    }
}

impl Swizzle {
    /// The swizzle span in bytes, 0 for none.
    pub fn bytes(self) -> u32 {
        match self {
            Swizzle::None => 0,
            Swizzle::B32 => 32,
            Swizzle::B64 => 64,
            Swizzle::B128 => 128,
        }
    }

    /// The swizzle of a span of `bytes` (0, 32, 64 or 128).
    pub fn from_bytes(bytes: u64) -> Option<Swizzle> {
        [Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128]
            .into_iter()
            .find(|s| u64::from(s.bytes()) == bytes)
    }
}

spelled! {
    /// What a tensor map reads out of bounds (`CUtensorMapFloatOOBfill`).
    Fill {
        /// Zeros (`CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE`, which fills with zeros).
        Zero = "zero",
        /// A map only stored through: nothing is read.
        None = "none",
    }
}

spelled! {
    /// A tensor map's interleave (`CUtensorMapInterleave`).
    Interleave {
        /// `CU_TENSOR_MAP_INTERLEAVE_NONE`.
        None = "none",
    }
}

spelled! {
    /// A tensor map's L2 promotion (`CUtensorMapL2promotion`).
    L2Promotion {
        /// `CU_TENSOR_MAP_L2_PROMOTION_NONE`.
        None = "none",
        /// `CU_TENSOR_MAP_L2_PROMOTION_L2_64B`.
        B64 = "64B",
        /// `CU_TENSOR_MAP_L2_PROMOTION_L2_128B`.
        B128 = "128B",
        /// `CU_TENSOR_MAP_L2_PROMOTION_L2_256B`.
        B256 = "256B",
    }
}

/// One kernel parameter (see `docs/manifest.md` for the PTX parameters each becomes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Param {
    /// A `CUtensorMap` (128 bytes, by value, `__grid_constant__`).
    TensorMap {
        /// The IR argument name.
        name: String,
        /// Element type.
        dtype: Dtype,
        /// Tensor rank.
        rank: u32,
        /// Box in elements, outermost first.
        #[serde(rename = "box")]
        box_: Vec<u64>,
        /// Shared-memory swizzle.
        swizzle: Swizzle,
        /// What out-of-bounds reads give.
        fill: Fill,
        /// Interleave.
        interleave: Interleave,
        /// L2 promotion.
        l2_promotion: L2Promotion,
    },
    /// Base pointer, then `rank` sizes and `rank` strides (elements), all 64-bit.
    TensorPointer {
        /// The IR argument name.
        name: String,
        /// Element type.
        dtype: Dtype,
        /// Tensor rank.
        rank: u32,
    },
    /// A scalar by value.
    Scalar {
        /// The IR argument name.
        name: String,
        /// `i64` (also for the IR's `index`), `i32`, `f32`, …
        dtype: Dtype,
    },
}

impl Param {
    /// The IR argument name.
    pub fn name(&self) -> &str {
        match self {
            Param::TensorMap { name, .. }
            | Param::TensorPointer { name, .. }
            | Param::Scalar { name, .. } => name,
        }
    }

    /// The element or scalar type.
    pub fn dtype(&self) -> Dtype {
        match self {
            Param::TensorMap { dtype, .. }
            | Param::TensorPointer { dtype, .. }
            | Param::Scalar { dtype, .. } => *dtype,
        }
    }
}

impl Param {
    /// Bytes and alignment of the PTX parameters it becomes (docs/manifest.md): a tensor map
    /// 128 bytes at 64; a pointer tensor's pointer, sizes and strides 8 bytes each; a scalar
    /// its size.
    pub fn ptx_size_align(&self) -> (u64, u64) {
        match self {
            Param::TensorMap { .. } => (128, 64),
            Param::TensorPointer { rank, .. } => (8 * (1 + 2 * u64::from(*rank)), 8),
            Param::Scalar { dtype, .. } => (dtype.size_bytes(), dtype.size_bytes()),
        }
    }
}

/// Bytes of PTX parameter space that `params` take in order, each at its alignment
/// ([`Param::ptx_size_align`]); PTX ISA 8.1 raised the limit from 4 KiB to 32 KiB.
pub fn param_space_bytes(params: &[Param]) -> u64 {
    params.iter().fold(0, |offset, p| {
        let (size, align) = p.ptx_size_align();
        offset.div_ceil(align) * align + size
    })
}

/// The persistent schedule: how many CTAs to launch for the tile grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "schedule", rename_all = "snake_case")]
pub enum Persistent {
    /// A strided loop over the tiles: launch min(tiles, SMs × `ctas_per_sm`) CTAs along x,
    /// the tile count being the product of the grid's dimensions. With a `cluster` of
    /// cx × cy CTAs: min(cluster tiles, SMs × `ctas_per_sm` / (cx·cy)) clusters, as
    /// (clusters · cx, cy, 1) CTAs, the cluster tiles being ceildiv(x, cx) · ceildiv(y, cy) · z.
    Static {
        /// CTAs per SM.
        ctas_per_sm: u32,
        /// Tiles of M swept per group (0: row-major order).
        group_m: u32,
    },
    /// Work stealing with `clusterlaunchcontrol.try_cancel`: launch the grid as given (its x
    /// is already a multiple of the cluster size).
    Clc {
        /// Tiles of M swept per group (0: row-major order).
        group_m: u32,
    },
}

/// How a split-K launcher prepares each workspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceInit {
    /// Zero it before every launch.
    Zero,
    /// Nothing: the kernel writes each element before it reads it.
    None,
}

/// How a split-K kernel combines its slices' partial tiles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reduction {
    /// Each slice adds into the workspace with `red.global.add` (any order; the f32 sum
    /// can differ in its last bits from run to run); a finalize converts it.
    #[default]
    Atomic,
    /// Inside the kernel, in slice order (flags: `tile.arrive_flag`, or `tile.wait_flag`
    /// and `tile.release_flag`): the same inputs give the same bits. The kernel writes the
    /// output.
    Ordered,
}

/// What the launcher does after a split-K kernel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finalize {
    /// The operation: `convert` (round the f32 workspace to `dtype`, nearest even).
    pub op: FinalizeOp,
    /// The workspace read (`null` when the kernel adds into none).
    pub from: Option<String>,
    /// The tensor written.
    pub to: String,
    /// Its element type.
    pub dtype: Dtype,
}

/// A split-K finalization step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinalizeOp {
    /// Convert `from` into `to`'s element type.
    Convert,
}

/// A split-K kernel: grid z is the number of K slices, a scalar argument (docs/manifest.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitK {
    /// The scalar argument that is the number of K slices S (grid z).
    pub arg: String,
    /// How the slices combine (absent: `atomic`).
    #[serde(default)]
    pub reduction: Reduction,
    /// The f32 M×N tensors that hold the running sums.
    pub workspace: Vec<String>,
    /// How to prepare each workspace before a launch.
    pub workspace_init: WorkspaceInit,
    /// The i32 flag tensors of an `ordered` reduction (one element per output tile): zero
    /// before the first launch; every launch leaves them zero. Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    /// Whether a program waits for another (`tile.wait_flag`): then every program of a
    /// tile must be resident with the others (S · tiles ≤ SMs when S > 1), or the grid
    /// persistent. Absent (false) when no program waits.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub waits: bool,
    /// A slice is a whole number of k tiles of this many elements.
    pub k_tile: u64,
    /// What to do after the kernel (`null` when the kernel writes the output itself).
    pub finalize: Option<Finalize>,
}

impl SplitK {
    /// The number of K slices for a problem of `k` elements along K over `tiles` output
    /// tiles on `sm_count` SMs: enough slices to fill the SMs, at most one per k tile, then
    /// lowered so that no slice is empty (`tools/gpu/run.py` chooses the same).
    pub fn slices(&self, k: u64, tiles: u64, sm_count: u32) -> u64 {
        let kt = k.div_ceil(self.k_tile.max(1)).max(1);
        let s = (u64::from(sm_count) / tiles.max(1)).clamp(1, kt);
        kt.div_ceil(kt.div_ceil(s))
    }
}

/// Grid, block, cluster and shared memory for one launch (`cuLaunchKernelEx`'s config).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// CTAs along x, y, z.
    pub grid: [u32; 3],
    /// Threads per CTA along x, y, z.
    pub block: [u32; 3],
    /// CTAs per cluster along x, y, z (all 1: launch without the cluster attribute).
    pub cluster: [u32; 3],
    /// Dynamic shared memory in bytes: set `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`
    /// to it when it exceeds 48 KiB, and pass it at launch.
    pub dynamic_shared_memory_bytes: u32,
}

/// Why a manifest gives no launch configuration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// A scalar the grid needs was not given.
    #[error("the grid needs the scalar argument '{name}', which was not given")]
    MissingArg {
        /// Its name.
        name: String,
    },
    /// A name given that is no scalar parameter of the kernel.
    #[error("'{name}' is not a scalar parameter of the kernel (its scalars: {known})")]
    UnknownArg {
        /// The name given.
        name: String,
        /// The kernel's scalar parameters, comma-separated.
        known: String,
    },
    /// An expression has no value (a division by a value ≤ 0, an overflow).
    #[error("grid expression {expr}: {reason}")]
    Arithmetic {
        /// The expression, as text.
        expr: String,
        /// What went wrong.
        reason: String,
    },
    /// A grid dimension outside 1 to CUDA's limit. A dimension of 0 means an empty problem:
    /// there is nothing to launch.
    #[error("grid {axis} = {expr} is {value}, outside 1 to {limit}")]
    GridDim {
        /// `x`, `y` or `z`.
        axis: char,
        /// The expression, as text.
        expr: String,
        /// Its value.
        value: i64,
        /// CUDA's limit along this axis.
        limit: u64,
    },
    /// A persistent schedule needs the device's SM count.
    #[error("the persistent schedule needs the SM count, which was given as 0")]
    NoSms,
    /// A grid dimension that is not a whole number of clusters (CUDA launches clusters
    /// whole).
    #[error("grid {axis} = {expr} is {value}, not a multiple of the cluster's {cluster}")]
    ClusterGrid {
        /// `x`, `y` or `z`.
        axis: char,
        /// The expression, as text.
        expr: String,
        /// Its value.
        value: u32,
        /// The cluster's size along this axis.
        cluster: u32,
    },
    /// The shared memory does not fit CUDA's 32-bit launch parameter.
    #[error("{bytes} bytes of dynamic shared memory do not fit a launch")]
    SharedMemory {
        /// The manifest's bytes.
        bytes: u64,
    },
}

/// Why a manifest did not load.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// Not JSON, or not this schema's fields.
    #[error("manifest: {0}")]
    Json(#[from] serde_json::Error),
    /// Another schema version.
    #[error("manifest schema_version {found}; this crate reads {SCHEMA_VERSION}")]
    Schema {
        /// The version found.
        found: u32,
    },
    /// Fields that read but cannot describe a launch.
    #[error("manifest: {0}")]
    Invalid(String),
}

/// The manifest of one kernel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Manifest {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The `.entry` name.
    pub kernel: String,
    /// `ptxas -arch` value (`sm_90a`).
    pub target: String,
    /// The `.version` of the PTX (`8.0`).
    pub ptx_version: String,
    /// The PTX file name beside the manifest.
    pub ptx_file: String,
    /// The cubin file name beside the manifest (`tile-compile --emit cubin`: `ptxas
    /// -arch=TARGET` of the PTX, loaded without the driver's JIT); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cubin_file: Option<String>,
    /// Threads per CTA.
    pub block: [u32; 3],
    /// CTAs per cluster.
    pub cluster: [u32; 3],
    /// Dynamic shared memory in bytes (set the function attribute and pass it at launch).
    pub dynamic_shared_memory_bytes: u64,
    /// The tile grid.
    pub grid: Grid,
    /// The most CTAs along x, y and z (CUDA's limits): the launcher checks each evaluated
    /// grid dimension against them (a constant dimension was checked at compile time).
    #[serde(default = "default_grid_limits")]
    pub grid_limits: [u64; 3],
    /// `None`: one CTA per tile. Otherwise the persistent schedule.
    pub persistent: Option<Persistent>,
    /// Parameters in order.
    pub params: Vec<Param>,
    /// Absent for an ordinary kernel; a split-K kernel's launch protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_k: Option<SplitK>,
    /// The tensors the kernel adds into with `tile.atomic_add` (`red.global.add`), in
    /// parameter order: it reads them, so the launcher passes their initial values (zeros
    /// for a sum). Empty (and absent from the JSON) for a kernel without atomics.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub atomic_outputs: Vec<String>,
    /// The kernel's compile-time constants as they were bound (`tile.kernel
    /// @gemm<BM = 128, BN = 256>`, `tile-compile -D BM=64`), by name. Empty (and absent
    /// from the JSON) for a kernel that declares none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub constants: BTreeMap<String, i64>,
}

fn default_grid_limits() -> [u64; 3] {
    MAX_GRID
}

impl Manifest {
    /// A manifest with no cluster, no persistent schedule and no split-K; the grid is
    /// `dims` (missing dimensions are 1) with their text, and `ptx_file` is `KERNEL.ptx`.
    pub fn new(
        kernel: String,
        target: String,
        ptx_version: String,
        block: [u32; 3],
        dynamic_shared_memory_bytes: u64,
        dims: Vec<GridExpr>,
        params: Vec<Param>,
    ) -> Self {
        let mut d = dims.into_iter();
        let mut next = || d.next().unwrap_or(GridExpr::Int(1));
        let (x, y, z) = (next(), next(), next());
        let text = [&x, &y, &z].iter().map(|e| e.to_string()).collect();
        Manifest {
            schema_version: SCHEMA_VERSION,
            ptx_file: format!("{kernel}.ptx"),
            cubin_file: None,
            kernel,
            target,
            ptx_version,
            block,
            cluster: [1, 1, 1],
            dynamic_shared_memory_bytes,
            grid: Grid { x, y, z, text },
            grid_limits: MAX_GRID,
            persistent: None,
            params,
            split_k: None,
            atomic_outputs: vec![],
            constants: BTreeMap::new(),
        }
    }

    /// Pretty JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a manifest serializes")
    }

    /// Reads a manifest.
    ///
    /// # Errors
    /// Text that is not this schema's JSON, another [`SCHEMA_VERSION`], or fields no launch
    /// can have ([`ManifestError::Invalid`]: an empty block or one over 1024 threads, an
    /// empty cluster dimension, grid limits past CUDA's, shared memory past 2^32, a
    /// parameter named twice, a file name with a directory).
    pub fn from_json(text: &str) -> Result<Manifest, ManifestError> {
        #[derive(Deserialize)]
        struct Version {
            schema_version: u32,
        }
        let v: Version = serde_json::from_str(text)?;
        if v.schema_version != SCHEMA_VERSION {
            return Err(ManifestError::Schema {
                found: v.schema_version,
            });
        }
        let m: Manifest = serde_json::from_str(text)?;
        m.check()?;
        Ok(m)
    }

    /// The rules a launch relies on: an entry name; a block of 1 to 1024 threads and no
    /// empty dimension; a cluster with no empty dimension; grid limits within CUDA's
    /// ([`MAX_GRID`]); dynamic shared memory that fits the driver's 32-bit field; distinct
    /// parameter names; file names without a directory.
    fn check(&self) -> Result<(), ManifestError> {
        let bad = |m: String| Err(ManifestError::Invalid(m));
        if self.kernel.is_empty() {
            return bad("the kernel has no name".into());
        }
        let threads: u64 = self.block.iter().map(|&b| u64::from(b)).product();
        if self.block.contains(&0) || threads > 1024 {
            return bad(format!(
                "block {:?}: 1 to 1024 threads, none empty",
                self.block
            ));
        }
        if self.cluster.contains(&0) {
            return bad(format!("cluster {:?} has an empty dimension", self.cluster));
        }
        if (0..3).any(|i| self.grid_limits[i] == 0 || self.grid_limits[i] > MAX_GRID[i]) {
            return bad(format!(
                "grid_limits {:?} are not within CUDA's {MAX_GRID:?}",
                self.grid_limits
            ));
        }
        if self.dynamic_shared_memory_bytes > u64::from(u32::MAX) {
            return bad(format!(
                "{} bytes of dynamic shared memory",
                self.dynamic_shared_memory_bytes
            ));
        }
        for (i, p) in self.params.iter().enumerate() {
            if self.params[..i].iter().any(|q| q.name() == p.name()) {
                return bad(format!("parameter '{}' is named twice", p.name()));
            }
        }
        let files = std::iter::once(&self.ptx_file).chain(self.cubin_file.as_ref());
        for f in files {
            if f.is_empty() || f.contains(['/', '\\']) || f == "." || f == ".." {
                return bad(format!("'{f}' is not a file name beside the manifest"));
            }
        }
        Ok(())
    }

    /// The parameter named `name`.
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name() == name)
    }

    /// The launch for the scalar arguments `args` (name, value; every scalar the grid
    /// reads) on a device of `sm_count` SMs: the tile grid evaluated, then the persistent
    /// schedule applied (static: min(tiles, SMs × CTAs per SM) CTAs along x), and each
    /// dimension checked against [`Manifest::grid_limits`]. For a split-K kernel, `args`
    /// gives its slice count too ([`SplitK::arg`], see [`SplitK::slices`]).
    ///
    /// # Errors
    /// See [`LaunchError`]: a name that is no scalar parameter, a missing scalar, an
    /// expression without a value, a dimension outside 1 to its limit (0 for an empty
    /// problem), a static schedule with `sm_count` 0.
    pub fn launch_config(
        &self,
        args: &[(&str, i64)],
        sm_count: u32,
    ) -> Result<LaunchConfig, LaunchError> {
        let scalars: Vec<&str> = self
            .params
            .iter()
            .filter(|p| matches!(p, Param::Scalar { .. }))
            .map(Param::name)
            .collect();
        if let Some((name, _)) = args.iter().find(|(n, _)| !scalars.contains(n)) {
            return Err(LaunchError::UnknownArg {
                name: name.to_string(),
                known: scalars.join(", "),
            });
        }
        let lookup = |n: &str| args.iter().find(|(a, _)| *a == n).map(|(_, v)| *v);
        let exprs = [&self.grid.x, &self.grid.y, &self.grid.z];
        let mut dims = [0i64; 3];
        for (d, e) in dims.iter_mut().zip(exprs) {
            *d = e.eval(&lookup)?;
        }
        let check = |axis: usize, value: i64, expr: String| {
            let limit = self.grid_limits[axis];
            if value < 1 || value as u64 > limit {
                return Err(LaunchError::GridDim {
                    axis: ['x', 'y', 'z'][axis],
                    expr,
                    value,
                    limit,
                });
            }
            Ok(value as u32)
        };
        let grid = match self.persistent {
            Some(Persistent::Static { ctas_per_sm, .. }) => {
                if sm_count == 0 {
                    return Err(LaunchError::NoSms);
                }
                // The tiles fold into x: each dimension needs only to be positive.
                for (axis, e) in exprs.iter().enumerate() {
                    if dims[axis] < 1 {
                        return Err(LaunchError::GridDim {
                            axis: ['x', 'y', 'z'][axis],
                            expr: e.to_string(),
                            value: dims[axis],
                            limit: self.grid_limits[axis],
                        });
                    }
                }
                // A cluster of cx × cy CTAs takes cx × cy adjacent tiles: the loop runs
                // over cluster tiles, ceildiv(x, cx) · ceildiv(y, cy) · z of them.
                let [cx, cy, _] = self.cluster.map(|c| i64::from(c.max(1)));
                let cdims = [(dims[0] + cx - 1) / cx, (dims[1] + cy - 1) / cy, dims[2]];
                let tiles = cdims.iter().try_fold(1i64, |t, &d| t.checked_mul(d));
                let ctas = i64::from(sm_count) * i64::from(ctas_per_sm.max(1));
                // Whole clusters, one at least (the CTAs past the last tile find no work).
                let clusters = (ctas / (cx * cy)).max(1);
                let n = tiles.map_or(clusters, |t| t.min(clusters));
                [
                    check(0, n * cx, format!("min(cluster tiles, {clusters}) x {cx}"))?,
                    check(1, cy, "the cluster's y".into())?,
                    1,
                ]
            }
            _ => {
                let mut g = [0u32; 3];
                for (axis, e) in exprs.iter().enumerate() {
                    g[axis] = check(axis, dims[axis], e.to_string())?;
                    let c = self.cluster[axis].max(1);
                    if g[axis] % c != 0 {
                        return Err(LaunchError::ClusterGrid {
                            axis: ['x', 'y', 'z'][axis],
                            expr: e.to_string(),
                            value: g[axis],
                            cluster: c,
                        });
                    }
                }
                g
            }
        };
        let smem = u32::try_from(self.dynamic_shared_memory_bytes).map_err(|_| {
            LaunchError::SharedMemory {
                bytes: self.dynamic_shared_memory_bytes,
            }
        })?;
        Ok(LaunchConfig {
            grid,
            block: self.block,
            cluster: self.cluster,
            dynamic_shared_memory_bytes: smem,
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn manifests_no_launch_can_have_are_refused() {
        let good = Manifest::new(
            "k".into(),
            "sm_90a".into(),
            "8.0".into(),
            [128, 1, 1],
            0,
            vec![GridExpr::Int(1)],
            vec![],
        );
        assert!(Manifest::from_json(&good.to_json()).is_ok());
        let bad = |f: &dyn Fn(&mut Manifest), want: &str| {
            let mut m = good.clone();
            f(&mut m);
            let e = Manifest::from_json(&m.to_json()).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        };
        bad(&|m| m.block = [0, 1, 1], "block");
        bad(&|m| m.block = [64, 32, 1], "block");
        bad(&|m| m.cluster = [2, 0, 1], "cluster");
        bad(&|m| m.grid_limits = [1 << 40, 1, 1], "grid_limits");
        bad(
            &|m| m.dynamic_shared_memory_bytes = 1 << 33,
            "shared memory",
        );
        bad(&|m| m.ptx_file = "../k.ptx".into(), "not a file name");
        bad(
            &|m| m.cubin_file = Some("/tmp/k.cubin".into()),
            "not a file name",
        );
        bad(&|m| m.kernel = String::new(), "no name");
    }

    use super::*;

    fn arg(n: &str) -> GridExpr {
        GridExpr::Arg { arg: n.into() }
    }
    fn ceildiv(a: GridExpr, b: i64) -> GridExpr {
        GridExpr::CeilDiv {
            ceildiv: Box::new([a, GridExpr::Int(b)]),
        }
    }
    fn scalar(n: &str) -> Param {
        Param::Scalar {
            name: n.into(),
            dtype: Dtype::I64,
        }
    }
    /// A 128×256-tile GEMM's manifest over M, N (grid x over N, y over M, z = 1).
    fn gemm(persistent: Option<Persistent>) -> Manifest {
        let mut m = Manifest::new(
            "gemm".into(),
            "sm_90a".into(),
            "8.0".into(),
            [384, 1, 1],
            197_632,
            vec![ceildiv(arg("N"), 256), ceildiv(arg("M"), 128)],
            vec![
                Param::TensorMap {
                    name: "A".into(),
                    dtype: Dtype::Bf16,
                    rank: 2,
                    box_: vec![128, 64],
                    swizzle: Swizzle::B128,
                    fill: Fill::Zero,
                    interleave: Interleave::None,
                    l2_promotion: L2Promotion::B256,
                },
                Param::TensorPointer {
                    name: "C".into(),
                    dtype: Dtype::Bf16,
                    rank: 2,
                },
                scalar("M"),
                scalar("N"),
                scalar("K"),
            ],
        );
        m.persistent = persistent;
        m
    }

    #[test]
    fn grid_expressions_evaluate() {
        let env = |n: &str| match n {
            "M" => Some(1000),
            "N" => Some(-7),
            _ => None,
        };
        assert_eq!(ceildiv(arg("M"), 128).eval(&env), Ok(8));
        assert_eq!(ceildiv(GridExpr::Int(1024), 128).eval(&env), Ok(8));
        assert_eq!(ceildiv(arg("N"), 2).eval(&env), Ok(-3));
        let min = GridExpr::Min {
            min: Box::new([arg("M"), GridExpr::Int(132)]),
        };
        assert_eq!(min.eval(&env), Ok(132));
        let sum = GridExpr::Add {
            add: Box::new([arg("M"), GridExpr::Int(24)]),
        };
        assert_eq!(sum.eval(&env), Ok(1024));
        assert_eq!(
            ceildiv(arg("K"), 64).eval(&env),
            Err(LaunchError::MissingArg { name: "K".into() })
        );
        let e = ceildiv(arg("M"), 0).eval(&env).unwrap_err();
        assert_eq!(
            e.to_string(),
            "grid expression ceildiv(M, 0): the divisor is 0"
        );
        let big = GridExpr::Mul {
            mul: Box::new([GridExpr::Int(i64::MAX), arg("M")]),
        };
        assert!(matches!(
            big.eval(&env),
            Err(LaunchError::Arithmetic { .. })
        ));
        assert_eq!(big.to_string(), format!("mul({}, M)", i64::MAX));
    }

    #[test]
    fn launch_config_applies_the_schedule() {
        let args = [("M", 4096), ("N", 4096), ("K", 4096)];
        let plain = gemm(None).launch_config(&args, 132).unwrap();
        assert_eq!(plain.grid, [16, 32, 1]);
        assert_eq!(plain.block, [384, 1, 1]);
        assert_eq!(plain.cluster, [1, 1, 1]);
        assert_eq!(plain.dynamic_shared_memory_bytes, 197_632);
        let st = Some(Persistent::Static {
            ctas_per_sm: 1,
            group_m: 8,
        });
        assert_eq!(
            gemm(st).launch_config(&args, 132).unwrap().grid,
            [132, 1, 1]
        );
        // Fewer tiles than SMs: one CTA per tile.
        let small = [("M", 256), ("N", 512), ("K", 64)];
        assert_eq!(gemm(st).launch_config(&small, 132).unwrap().grid, [4, 1, 1]);
        let clc = Some(Persistent::Clc { group_m: 8 });
        assert_eq!(
            gemm(clc).launch_config(&args, 132).unwrap().grid,
            [16, 32, 1]
        );
        assert_eq!(gemm(st).launch_config(&args, 0), Err(LaunchError::NoSms));
        // Clusters launch whole: a static grid rounds to them, one cluster at least.
        let mut c2 = gemm(st);
        c2.cluster = [2, 1, 1];
        assert_eq!(c2.launch_config(&args, 131).unwrap().grid, [130, 1, 1]);
        let one = [("M", 128), ("N", 256), ("K", 64)];
        assert_eq!(c2.launch_config(&one, 132).unwrap().grid, [2, 1, 1]);
    }

    #[test]
    fn launch_config_rejects_bad_arguments() {
        let m = gemm(None);
        let e = m.launch_config(&[("M", 1), ("n", 1)], 132).unwrap_err();
        assert_eq!(
            e.to_string(),
            "'n' is not a scalar parameter of the kernel (its scalars: M, N, K)"
        );
        let e = m.launch_config(&[("C", 1)], 132).unwrap_err();
        assert!(matches!(e, LaunchError::UnknownArg { .. }), "{e}");
        let e = m.launch_config(&[("M", 1)], 132).unwrap_err();
        assert_eq!(e, LaunchError::MissingArg { name: "N".into() });
        // An empty problem launches nothing.
        let e = m.launch_config(&[("M", 0), ("N", 64)], 132).unwrap_err();
        assert_eq!(
            e.to_string(),
            "grid y = ceildiv(M, 128) is 0, outside 1 to 65535"
        );
        let st = gemm(Some(Persistent::Static {
            ctas_per_sm: 1,
            group_m: 8,
        }));
        let e = st.launch_config(&[("M", 64), ("N", 0)], 132).unwrap_err();
        assert!(
            matches!(
                e,
                LaunchError::GridDim {
                    axis: 'x',
                    value: 0,
                    ..
                }
            ),
            "{e}"
        );
        // y is limited to 65535 CTAs: M = 128 · 65536 does not launch without a schedule,
        // but does with the static one, which folds every tile into x.
        let tall = [("M", 128 * 65_536), ("N", 256)];
        let e = m.launch_config(&tall, 132).unwrap_err();
        assert!(
            matches!(
                e,
                LaunchError::GridDim {
                    axis: 'y',
                    value: 65_536,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(st.launch_config(&tall, 132).unwrap().grid, [132, 1, 1]);
        let mut c2 = gemm(None);
        c2.cluster = [1, 2, 1];
        let e = c2
            .launch_config(&[("M", 300), ("N", 256)], 132)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "grid y = ceildiv(M, 128) is 3, not a multiple of the cluster's 2"
        );
        assert_eq!(
            c2.launch_config(&[("M", 512), ("N", 256)], 132)
                .unwrap()
                .grid,
            [1, 4, 1]
        );
        // A static cluster of 2 x 2 CTAs: the loop runs over cluster tiles (N = 5 tiles of
        // 256 → 3, M = 3 tiles of 128 → 2), clusters along x, one cluster's 2 along y.
        let mut sc = st.clone();
        sc.cluster = [2, 2, 1];
        let ragged = [("M", 300), ("N", 1200)];
        assert_eq!(sc.launch_config(&ragged, 132).unwrap().grid, [12, 2, 1]);
        // More cluster tiles than fit: 132 SMs hold 33 clusters of 4.
        assert_eq!(sc.launch_config(&tall, 132).unwrap().grid, [66, 2, 1]);
        sc.cluster = [2, 1, 1];
        assert_eq!(sc.launch_config(&ragged, 132).unwrap().grid, [18, 1, 1]);
        assert_eq!(sc.launch_config(&ragged, 3).unwrap().grid, [2, 1, 1]);
        let mut huge = gemm(None);
        huge.dynamic_shared_memory_bytes = 1 << 32;
        let e = huge.launch_config(&[("M", 1), ("N", 1)], 132).unwrap_err();
        assert_eq!(e, LaunchError::SharedMemory { bytes: 1 << 32 });
    }

    #[test]
    fn json_round_trips_and_is_checked() {
        let mut m = gemm(Some(Persistent::Static {
            ctas_per_sm: 1,
            group_m: 8,
        }));
        m.split_k = Some(SplitK {
            arg: "S".into(),
            reduction: Reduction::Atomic,
            workspace: vec!["W".into()],
            workspace_init: WorkspaceInit::Zero,
            flags: vec![],
            waits: false,
            k_tile: 64,
            finalize: Some(Finalize {
                op: FinalizeOp::Convert,
                from: Some("W".into()),
                to: "C".into(),
                dtype: Dtype::Bf16,
            }),
        });
        let text = m.to_json();
        // A manifest written before `reduction` existed reads as an atomic one.
        let old = text.replace(r#""reduction": "atomic","#, "");
        assert_ne!(old, text);
        assert_eq!(Manifest::from_json(&old).unwrap(), m);
        let mut ordered = m.clone();
        ordered.split_k = Some(SplitK {
            reduction: Reduction::Ordered,
            workspace_init: WorkspaceInit::None,
            flags: vec!["F".into()],
            waits: true,
            finalize: None,
            ..m.split_k.clone().unwrap()
        });
        let t = ordered.to_json();
        assert!(
            t.contains(r#""flags": ["#) && t.contains(r#""finalize": null"#),
            "{t}"
        );
        assert_eq!(Manifest::from_json(&t).unwrap(), ordered);
        assert!(text.contains(r#""schedule": "static""#), "{text}");
        assert!(text.contains(r#""swizzle": "128B""#), "{text}");
        assert!(text.contains(r#""text": ["#), "{text}");
        assert!(text.contains(r#""ceildiv(N, 256)""#), "{text}");
        assert_eq!(Manifest::from_json(&text).unwrap(), m);
        let v2 = text.replace(r#""schema_version": 1"#, r#""schema_version": 2"#);
        assert!(matches!(
            Manifest::from_json(&v2),
            Err(ManifestError::Schema { found: 2 })
        ));
        let bad = text.replace(r#""dtype": "bf16""#, r#""dtype": "bfloat16""#);
        let e = Manifest::from_json(&bad).unwrap_err().to_string();
        assert!(e.contains("unknown variant `bfloat16`"), "{e}");
        let bad = text.replace(r#""swizzle": "128B""#, r#""swizzle": "96B""#);
        assert!(Manifest::from_json(&bad).is_err());
        assert!(Manifest::from_json("{}").is_err());
    }

    #[test]
    fn split_k_slices_fill_the_sms_without_empty_slices() {
        let sk = SplitK {
            arg: "S".into(),
            reduction: Reduction::Atomic,
            workspace: vec![],
            workspace_init: WorkspaceInit::Zero,
            flags: vec![],
            waits: false,
            k_tile: 64,
            finalize: None,
        };
        // 16 tiles on 132 SMs: 8 slices; K = 8192 has 128 k tiles, 16 per slice.
        assert_eq!(sk.slices(8192, 16, 132), 8);
        // 10 k tiles over at most 8 slices: 2 per slice, so 5 slices, none empty.
        assert_eq!(sk.slices(640, 16, 132), 5);
        assert_eq!(sk.slices(64, 16, 132), 1);
        assert_eq!(sk.slices(8192, 512, 132), 1);
        assert_eq!(sk.slices(0, 0, 132), 1);
    }

    #[test]
    fn parameter_space_is_aligned() {
        let p = gemm(None).params;
        // A map at 0..128, C's pointer, 2 sizes, 2 strides at 128..168, three i64 scalars.
        assert_eq!(param_space_bytes(&p), 128 + 40 + 24);
        let odd = [
            Param::Scalar {
                name: "x".into(),
                dtype: Dtype::F32,
            },
            p[0].clone(),
        ];
        assert_eq!(param_space_bytes(&odd), 64 + 128);
        assert_eq!(Swizzle::from_bytes(64), Some(Swizzle::B64));
        assert_eq!(Swizzle::from_bytes(96), None);
    }
}
