//! `convert-tile-to-nvvm`: GPU-level tile IR → an MLIR module (`gpu.module` holding one
//! `llvm.func` kernel written with `llvm.*` and `nvvm.*` ops), built through melior's API
//! by the typed writer ([`writer`]: ops from `OperationBuilder`, values as melior `Value`s
//! with their tile IR type) and printed for [`crate::mlir_driver`].
//!
//! Two lowerings, chosen per kernel:
//!
//! - kernels laid out by `tile-assign-layouts` (a `num_warps` attribute: no dot, a plain
//!   launch): [`plain`] (the kernel and the walk), [`memory`], [`math`], [`reduce`],
//!   [`remap`], [`control`];
//! - kernels made by `tile-to-gpu` (the GEMM pipeline): [`gemm`] and its modules
//!   (synchronization, TMA, wgmma, mma.sync, the epilogue, control flow).
//!
//! Both use [`math::float_op`] for elementwise float math, so an op has one lowering and
//! one stated error bound wherever it appears.

pub mod control;
pub mod gemm;
pub mod math;
pub mod memory;
pub mod plain;
pub mod reduce;
pub mod remap;
pub mod writer;

use crate::manifest::{GridExpr, Manifest};
use tilec_dialect::{Attribute, Diagnostic, Expr, Operation, Target, VerifiedModule};

/// The lowered kernel: MLIR text, and the manifest describing its launch.
#[derive(Clone, Debug)]
pub struct LoweredKernel {
    /// The MLIR module text.
    pub mlir: String,
    /// The launch manifest.
    pub manifest: Manifest,
    /// The target the kernel was lowered for.
    pub target: Target,
    /// The PTX ISA version the kernel needs: the target's minimum, or 8.1 for the vector
    /// `red.global.add.v2.f32` of `tile.atomic_add` (sm_90) or for parameters past 4,352
    /// bytes.
    pub ptx_version: (u32, u32),
}

/// Lower every kernel of a verified GPU-level module (one kernel per module for now).
///
/// # Errors
/// A diagnostic at the op that cannot be lowered: a kernel through neither `tile-to-gpu`
/// nor `tile-assign-layouts` (no `target`), an MMA kind or shape not supported, an
/// epilogue op outside the supported set, a layout a construct does not take.
pub fn convert_tile_to_nvvm(vm: &VerifiedModule) -> Result<Vec<LoweredKernel>, Diagnostic> {
    let m = vm.module();
    m.kernels()
        .map(|k| {
            if k.attr("num_warps").is_some() {
                plain::lower_kernel(m, k)
            } else {
                gemm::lower_kernel(m, k)
            }
        })
        .collect()
}

/// MLIR symbol names allow `[A-Za-z0-9_$.-]`; tile names map other characters to `_`.
pub(crate) fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The kernel's grid for the manifest: x, y, z as expressions and as text (missing
/// dimensions are 1).
pub(crate) fn grid_of(k: &Operation) -> (Vec<GridExpr>, Vec<String>) {
    let grid = k.attr("grid").and_then(Attribute::as_array).unwrap_or(&[]);
    let mut dims: Vec<GridExpr> = grid
        .iter()
        .map(|a| match a {
            Attribute::Int(i) => GridExpr::from_expr(&Expr::Int(*i)),
            Attribute::Expr(e) => GridExpr::from_expr(e),
            _ => GridExpr::Int(1),
        })
        .collect();
    let mut texts: Vec<String> = grid
        .iter()
        .map(|a| match a {
            Attribute::Expr(e) => e.to_plain_string(),
            other => other.to_string(),
        })
        .collect();
    while dims.len() < 3 {
        dims.push(GridExpr::Int(1));
        texts.push("1".into());
    }
    (dims, texts)
}
