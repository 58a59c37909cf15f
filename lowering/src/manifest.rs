//! The launch manifest (`NAME.json` beside `NAME.ptx`): everything a launcher in any
//! language needs — kernel name, target, PTX ISA version, block and cluster shape, dynamic
//! shared memory bytes, the grid as expressions of the scalar arguments, and the
//! parameters in order. Schema: `docs/manifest.md`, versioned by [`SCHEMA_VERSION`].

use serde::{Deserialize, Serialize};
use tilec_dialect::Expr;

/// The schema version this crate writes.
pub const SCHEMA_VERSION: u32 = 1;

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
    /// `{"ceildiv": [a, b]}`.
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
    /// Convert from the IR's expression.
    pub fn from_expr(e: &Expr) -> GridExpr {
        let two = |a: &Expr, b: &Expr| Box::new([GridExpr::from_expr(a), GridExpr::from_expr(b)]);
        match e {
            Expr::Int(i) => GridExpr::Int(*i),
            Expr::Arg(n) => GridExpr::Arg { arg: n.clone() },
            Expr::CeilDiv(a, b) => GridExpr::CeilDiv { ceildiv: two(a, b) },
            Expr::Mul(a, b) => GridExpr::Mul { mul: two(a, b) },
            Expr::Add(a, b) => GridExpr::Add { add: two(a, b) },
            Expr::Min(a, b) => GridExpr::Min { min: two(a, b) },
        }
    }
}

/// The launch grid.
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

/// One kernel parameter (see `docs/manifest.md` for the PTX parameters each becomes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Param {
    /// A `CUtensorMap` (128 bytes, by value, `__grid_constant__`).
    TensorMap {
        /// The IR argument name.
        name: String,
        /// Element type (`bf16`).
        dtype: String,
        /// Tensor rank.
        rank: u32,
        /// Box in elements, outermost first.
        #[serde(rename = "box")]
        box_: Vec<u64>,
        /// `128B`.
        swizzle: String,
        /// `zero`: out-of-bounds elements read as zero.
        fill: String,
        /// `none`.
        interleave: String,
        /// `256B`.
        l2_promotion: String,
    },
    /// Base pointer, then `rank` sizes and `rank` strides (elements), all 64-bit.
    TensorPointer {
        /// The IR argument name.
        name: String,
        /// Element type.
        dtype: String,
        /// Tensor rank.
        rank: u32,
    },
    /// A scalar by value.
    Scalar {
        /// The IR argument name.
        name: String,
        /// `i64`, `i32`, `f32`, …
        dtype: String,
    },
}

/// The manifest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Threads per CTA.
    pub block: [u32; 3],
    /// CTAs per cluster.
    pub cluster: [u32; 3],
    /// Dynamic shared memory in bytes (set the function attribute and pass at launch).
    pub dynamic_shared_memory_bytes: u64,
    /// The launch grid.
    pub grid: Grid,
    /// The most CTAs along x, y and z (CUDA's limits): the launcher checks each evaluated
    /// grid dimension against them (a constant dimension was checked at compile time).
    #[serde(default = "default_grid_limits")]
    pub grid_limits: [u64; 3],
    /// `null` (one CTA per tile), or the persistent schedule:
    /// `{"schedule": "static", "ctas_per_sm": 1, "group_m": 8}` — launch
    /// min(tiles, SMs × ctas_per_sm) CTAs along x, the tile count being the product of the
    /// grid dimensions and the SM count read from the device at launch.
    pub persistent: Option<serde_json::Value>,
    /// Parameters in order.
    pub params: Vec<Param>,
    /// Absent for an ordinary kernel. For a kernel that adds into f32 workspaces with
    /// `tile.atomic_add` (split-K): `{"arg": "S", "workspace": ["W"], "workspace_init":
    /// "zero", "k_tile": 64, "finalize": {"op": "convert", "from": "W", "to": "C", "dtype":
    /// "bf16"}}` — the launcher picks S (the scalar named by `arg`, grid z), zeroes each
    /// workspace before every launch, and after it converts the workspace into C
    /// (docs/manifest.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_k: Option<serde_json::Value>,
    /// The tensors the kernel adds into with `tile.atomic_add` (`red.global.add`), in
    /// parameter order: it reads them, so the launcher passes their initial values (zeros
    /// for a sum). Empty (and absent from the JSON) for a kernel without atomics.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub atomic_outputs: Vec<String>,
}

fn default_grid_limits() -> [u64; 3] {
    tilec_dialect::target::MAX_GRID
}

impl Manifest {
    /// A manifest with no cluster and no persistent schedule.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        kernel: String,
        target: String,
        ptx_version: String,
        block: [u32; 3],
        smem: u64,
        dims: Vec<GridExpr>,
        text: Vec<String>,
        params: Vec<Param>,
    ) -> Self {
        let mut d = dims.into_iter();
        let mut next = || d.next().unwrap_or(GridExpr::Int(1));
        Manifest {
            schema_version: SCHEMA_VERSION,
            ptx_file: format!("{kernel}.ptx"),
            kernel,
            target,
            ptx_version,
            block,
            cluster: [1, 1, 1],
            dynamic_shared_memory_bytes: smem,
            grid: Grid {
                x: next(),
                y: next(),
                z: next(),
                text,
            },
            grid_limits: tilec_dialect::target::MAX_GRID,
            persistent: None,
            params,
            split_k: None,
            atomic_outputs: vec![],
        }
    }

    /// Pretty JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("manifest serializes")
    }
}
