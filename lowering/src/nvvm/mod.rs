//! `convert-tile-to-nvvm`: GPU-level tile IR → an MLIR module (`gpu.module` holding one
//! `llvm.func` kernel written with `llvm.*` and `nvvm.*` ops), built through melior's API
//! by the typed writer ([`writer`]: ops from `OperationBuilder`, values as melior `Value`s
//! with their tile IR type) and printed for [`crate::mlir_driver`].
//!
//! Two lowerings, chosen per kernel:
//!
//! - kernels laid out by `tile-assign-layouts` (a `num_warps` attribute: a plain launch):
//!   [`plain`] (the kernel and the walk), [`memory`], [`math`], [`reduce`], [`remap`],
//!   [`dot`], [`control`];
//! - kernels made by `tile-to-gpu` (the GEMM pipeline): [`gemm`] and its modules
//!   (synchronization, TMA, wgmma, mma.sync, the epilogue, control flow).
//!
//! Both use `math::float_op` for elementwise float math, so an op has one lowering and
//! one stated error bound wherever it appears.

pub mod clc;
pub mod control;
pub mod dot;
pub mod flags;
pub mod gemm;
pub mod math;
pub mod memory;
pub mod plain;
pub mod reduce;
pub mod remap;
pub mod smem_plan;
pub mod specialize;
pub mod tma;
pub mod wgmma;
pub mod writer;

use crate::manifest::{Dtype, GridExpr, Manifest};
use crate::mlir_driver::{MlirError, StageTimings, TargetSpec};
use melior::{ir::Module as MlirModule, Context};
use std::sync::Arc;
use tilec_dialect::{
    Attribute, Diagnostic, Expr, Module as TileModule, Operation, ScalarType, Target,
    Type as TileType, VerifiedModule,
};

/// The tensors kernel `k` adds into with `tile.atomic_add`, by name, in parameter order
/// (the manifest's `atomic_outputs`).
pub(crate) fn atomic_outputs(m: &tilec_dialect::Module, k: &Operation) -> Vec<String> {
    let mut added = std::collections::HashSet::new();
    k.walk(&mut |o| {
        if o.kind == tilec_dialect::OpKind::AtomicAdd {
            added.extend(o.operands.first().copied());
        }
    });
    k.regions[0]
        .args
        .iter()
        .filter(|a| added.contains(*a))
        .filter_map(|&a| m.name(a).map(str::to_string))
        .collect()
}

/// A lowered kernel: the recipe of its MLIR module, and the manifest describing its launch.
///
/// The module is built through melior's API in whichever MLIR context needs it: the driver
/// builds it in its own context and runs the pipeline on it ([`LoweredKernel::to_ptx`]), so
/// the PTX path never prints or parses MLIR text; [`LoweredKernel::mlir`] builds and prints
/// it for `--emit mlir`. Building is deterministic: every build gives the same module.
#[derive(Clone, Debug)]
pub struct LoweredKernel {
    /// The launch manifest.
    pub manifest: Manifest,
    /// The target the kernel was lowered for.
    pub target: Target,
    /// The PTX ISA version the kernel needs: the target's minimum, or 8.1 for the vector
    /// `red.global.add.v2.f32` of `tile.atomic_add` (sm_90) or for parameters past 4,352
    /// bytes.
    pub ptx_version: (u32, u32),
    /// The GPU-level module the kernel is in, and the kernel's index among its kernels.
    source: Arc<TileModule>,
    kernel: usize,
}

impl LoweredKernel {
    fn kernel_op(&self) -> &Operation {
        self.source
            .kernels()
            .nth(self.kernel)
            .expect("the kernel index was taken from this module")
    }

    /// Builds the kernel's MLIR module in `ctx` (which must have the `llvm`, `nvvm` and `gpu`
    /// dialects loaded).
    ///
    /// # Errors
    /// The located diagnostic [`convert_tile_to_nvvm`] would give; it gave none for this
    /// kernel, so an error here is an internal one.
    pub(crate) fn build<'c>(&self, ctx: &'c Context) -> Result<MlirModule<'c>, Diagnostic> {
        self.build_sized(ctx).map(|(module, _)| module)
    }

    /// [`LoweredKernel::build`], and the dynamic shared memory the module lays out, in bytes.
    fn build_sized<'c>(&self, ctx: &'c Context) -> Result<(MlirModule<'c>, u64), Diagnostic> {
        let k = self.kernel_op();
        if k.attr("num_warps").is_some() {
            plain::build(ctx, &self.source, k)
        } else {
            gemm::build(ctx, &self.source, k)
        }
    }

    /// The PTX for `spec`, from a kernel of [`prepare_tile_to_nvvm`]: the module is built
    /// once, in the driver's context, and the manifest's `dynamic_shared_memory_bytes` raised
    /// to the shared memory it lays out. (For a kernel of [`convert_tile_to_nvvm`] it is
    /// [`LoweredKernel::to_ptx`] with a build error reported as located.)
    ///
    /// # Errors
    /// [`BuildError::Lowering`]: what the lowering cannot take (a located diagnostic, as
    /// [`convert_tile_to_nvvm`] reports it); [`BuildError::Mlir`]: the MLIR stage.
    pub fn build_ptx(&mut self, spec: &TargetSpec) -> Result<(String, StageTimings), BuildError> {
        let smem = std::cell::Cell::new(0u64);
        let refused = std::cell::RefCell::new(None);
        let r = crate::mlir_driver::built_to_ptx(
            &|ctx| match self.build_sized(ctx) {
                Ok((module, bytes)) => {
                    smem.set(bytes);
                    Ok(module)
                }
                Err(d) => {
                    *refused.borrow_mut() = Some(d.clone());
                    Err(d)
                }
            },
            spec,
        );
        if let Some(d) = refused.into_inner() {
            return Err(BuildError::Lowering(Box::new(d)));
        }
        let out = r.map_err(BuildError::Mlir)?;
        let m = &mut self.manifest;
        m.dynamic_shared_memory_bytes = m.dynamic_shared_memory_bytes.max(smem.get());
        Ok(out)
    }

    /// The MLIR module as text (`--emit mlir`): a comment naming the kernel, then the
    /// module as MLIR prints it (generic form where an op has no custom one).
    pub fn mlir(&self) -> String {
        let k = self.kernel_op();
        let name = k.symbol.as_deref().unwrap_or("");
        let header = if k.attr("num_warps").is_some() {
            let from = "// Generated by tilec convert-tile-to-nvvm from kernel";
            format!("{from} @{name} (plain launch).")
        } else {
            let from = "// Generated by tilec convert-tile-to-nvvm from kernel";
            format!("{from} @{name} for {}.", self.target)
        };
        crate::mlir_driver::with_builder_context(|ctx| match self.build(ctx) {
            Ok(module) => format!("{header}\n{}", module.as_operation()),
            Err(d) => format!("{header}\n// internal error: the module did not build again: {d}"),
        })
    }

    /// The PTX for `spec`, and the time each MLIR step took: the module is built in the
    /// driver's context and run through its pipeline ([`crate::mlir_driver`]).
    ///
    /// # Errors
    /// [`MlirError`] from the driver; `Verify` if the built module does not verify (an
    /// internal error).
    pub fn to_ptx(&self, spec: &TargetSpec) -> Result<(String, StageTimings), MlirError> {
        crate::mlir_driver::built_to_ptx(&|ctx| self.build(ctx), spec)
    }

    /// The LLVM IR given to LLVM's NVPTX back end for `spec` (`--emit llvm`), as
    /// [`crate::mlir_driver::mlir_to_llvm_ir`] gives it for the module's text.
    ///
    /// # Errors
    /// As [`LoweredKernel::to_ptx`].
    pub fn to_llvm_ir(&self, spec: &TargetSpec) -> Result<String, MlirError> {
        crate::mlir_driver::built_to_llvm_ir(&|ctx| self.build(ctx), spec)
    }
}

/// Why [`LoweredKernel::build_ptx`] failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The lowering cannot take the kernel: a located diagnostic at the op.
    #[error("{0}")]
    Lowering(Box<Diagnostic>),
    /// The MLIR stage failed (a tilec bug when it happens).
    #[error(transparent)]
    Mlir(#[from] MlirError),
}

/// The CTAs per SM kernel `k` is built for: its `ctas_per_sm` attribute (the verifier
/// keeps it in 1 to 32), else 1.
pub(crate) fn ctas_per_sm(k: &Operation) -> u64 {
    k.int_attr("ctas_per_sm").unwrap_or(1).clamp(1, 32) as u64
}

/// The launch schedule the `persistent` pass gave kernel `k` (its `schedule` and
/// `group_m` attributes), for the manifest; `None` for one program per CTA.
pub(crate) fn persistent_of(k: &Operation) -> Option<crate::manifest::Persistent> {
    use crate::manifest::Persistent;
    let group_m = k.int_attr("group_m").unwrap_or(0).clamp(0, u32::MAX as i64) as u32;
    match k.str_attr("schedule") {
        Some("static") => Some(Persistent::Static {
            ctas_per_sm: ctas_per_sm(k) as u32,
            group_m,
        }),
        Some("clc") => Some(Persistent::Clc { group_m }),
        _ => None,
    }
}

/// Refuses, at kernel `k`, launch attributes the manifest would pass on to the launcher
/// unchecked: a `schedule` other than `none`, `static` and `clc` (and `clc` on a target
/// without try_cancel), a persistent schedule on a kernel without the `persistent` pass's
/// tile loop (`{tile_loop = true}`; each CTA would run one tile of a grid launched with fewer
/// CTAs than tiles), a `group_m` outside 0 to 65,536, and `smem_bytes` over the target's
/// shared memory per block at the kernel's CTAs per SM.
fn check_launch_attrs(k: &Operation) -> Result<(), Diagnostic> {
    let Some(target) = k.str_attr("target").and_then(Target::from_name) else {
        return Ok(());
    };
    let bad = |msg: String| Err(Diagnostic::error(k.loc.clone(), msg));
    match k.attr("schedule") {
        None => {}
        Some(Attribute::Str(s)) if s == "none" => {}
        Some(Attribute::Str(s)) if s == "static" || s == "clc" => {
            if s == "clc" && !target.has_try_cancel() {
                let with: Vec<&str> = Target::ALL
                    .into_iter()
                    .filter(|t| t.has_try_cancel())
                    .map(Target::name)
                    .collect();
                return bad(format!(
                    "kernel 'schedule' = \"clc\" needs clusterlaunchcontrol.try_cancel ({}); \
                     the target is {target}",
                    with.join(", ")
                ));
            }
            let mut tile_loop = false;
            k.walk(&mut |o| tile_loop |= o.attr("tile_loop").is_some());
            if !tile_loop {
                return bad(format!(
                    "kernel 'schedule' = \"{s}\" launches fewer CTAs than tiles, but the kernel \
                     has no tile loop ({{tile_loop = true}}, from the 'persistent' pass)"
                ));
            }
        }
        Some(a) => {
            return bad(format!(
                "kernel 'schedule' must be \"none\", \"static\" or \"clc\", found {a}"
            ))
        }
    }
    if let Some(g) = k.attr("group_m") {
        if !g.as_int().is_some_and(|g| (0..=65_536).contains(&g)) {
            return bad(format!("kernel 'group_m' must be 0 to 65536, found {g}"));
        }
    }
    if let Some(b) = k.attr("smem_bytes") {
        let limit = target.max_smem_per_block_at(ctas_per_sm(k));
        if !b.as_int().is_some_and(|b| (0..=limit as i64).contains(&b)) {
            return bad(format!(
                "kernel 'smem_bytes' must be 0 to {limit} (the shared memory of a block on \
                 {target}), found {b}"
            ));
        }
    }
    Ok(())
}

/// Lower every kernel of a verified GPU-level module, each through the lowering its form
/// takes: a plain launch (a `num_warps` attribute) or the GEMM pipeline. Each kernel's
/// module is built once here, so that what the lowering cannot take is reported now.
///
/// # Errors
/// A diagnostic at the op that cannot be lowered: a kernel through neither `tile-to-gpu`
/// nor `tile-assign-layouts` (no `target`), an MMA kind or shape not supported, an
/// epilogue op outside the supported set, a layout a construct does not take.
pub fn convert_tile_to_nvvm(vm: &VerifiedModule) -> Result<Vec<LoweredKernel>, Diagnostic> {
    lower_kernels(vm, true)
}

/// [`convert_tile_to_nvvm`] without the trial build: the checks that need no MLIR (the
/// kernel's form, fp8 values, the parameter space) and the manifests, whose
/// `dynamic_shared_memory_bytes` is a lower bound until [`LoweredKernel::build_ptx`] builds
/// the module (once, in the MLIR driver's context) and raises it. What only the build can
/// refuse is then [`BuildError::Lowering`], with the same located diagnostic
/// [`convert_tile_to_nvvm`] gives. This is [`crate`]'s path to PTX in one build: the trial
/// build costs about as much as the driver's (about 3 ms of a 60 ms GEMM compile).
///
/// # Errors
/// As [`convert_tile_to_nvvm`], less what only the build finds.
pub fn prepare_tile_to_nvvm(vm: &VerifiedModule) -> Result<Vec<LoweredKernel>, Diagnostic> {
    lower_kernels(vm, false)
}

/// [`convert_tile_to_nvvm`] (`trial`) or [`prepare_tile_to_nvvm`].
fn lower_kernels(vm: &VerifiedModule, trial: bool) -> Result<Vec<LoweredKernel>, Diagnostic> {
    let m = vm.module();
    let source = Arc::new(m.clone());
    m.kernels()
        .enumerate()
        .map(|(index, k)| {
            refuse_fp8(m, k)?;
            check_launch_attrs(k)?;
            let (mut manifest, ptx_version) = if k.attr("num_warps").is_some() {
                plain::lower_kernel(m, k, trial)?
            } else if ctas_per_sm(k) != 1 {
                return Err(Diagnostic::error(
                    k.loc.clone(),
                    format!(
                        "'ctas_per_sm' = {} applies to kernels with a plain launch; the GEMM \
                         pipeline (tile-to-gpu) sets its own register and shared-memory \
                         budget",
                        ctas_per_sm(k)
                    ),
                ));
            } else {
                gemm::lower_kernel(m, k, trial)?
            };
            if let Some(c) = k.attr("constants").and_then(Attribute::as_dict) {
                manifest.constants = c
                    .iter()
                    .filter_map(|(n, v)| Some((n.clone(), v.as_int()?)))
                    .collect();
            }
            let target = Target::from_name(&manifest.target).ok_or_else(|| {
                Diagnostic::error(k.loc.clone(), "internal error: the manifest's target")
            })?;
            Ok(LoweredKernel {
                manifest,
                target,
                ptx_version,
                source: source.clone(),
                kernel: index,
            })
        })
        .collect()
}

/// 8-bit floats reach the GPU as tensors read by TMA into shared-memory rings and as MMA
/// operands (`wgmma` k32, `mma.sync` m16n8k32); no register value of them (a scalar or a
/// distributed tile: loads, conversions, stores) is lowered yet. The first op (or the
/// kernel, for a scalar argument) that holds one is a located error, before any MLIR is
/// built.
fn refuse_fp8(m: &TileModule, k: &Operation) -> Result<(), Diagnostic> {
    let fp8 = |v: &tilec_dialect::Value| match m.try_ty(*v) {
        Some(TileType::Scalar(t) | TileType::Tile { elem: t, .. }) => t.is_fp8().then_some(*t),
        _ => None,
    };
    let args = k.regions.first().map_or(&[][..], |b| &b.args[..]);
    if let Some((v, t)) = args.iter().find_map(|v| fp8(v).map(|t| (*v, t))) {
        let name = m
            .name(v)
            .map_or_else(|| "an argument".into(), |n| format!("'%{n}'"));
        return Err(Diagnostic::error(
            k.loc.clone(),
            format!(
                "convert-tile-to-nvvm: kernel argument {name} is a scalar {t}: fp8 register \
                 values are not lowered yet (pass it as an f32 scalar, or as a tensor read \
                 by TMA)"
            ),
        ));
    }
    let mut bad = None;
    k.walk(&mut |o| {
        if bad.is_none() {
            if let Some(t) = o.operands.iter().chain(&o.results).find_map(fp8) {
                bad = Some((o.loc.clone(), o.kind.name(), t));
            }
        }
    });
    match bad {
        Some((loc, name, t)) => Err(Diagnostic::error(
            loc,
            format!("convert-tile-to-nvvm: '{name}' on {t} values is not lowered yet"),
        )),
        None => Ok(()),
    }
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

/// The `llvm.func` attribute of a kernel with `ftz = true`: f32 denormals flushed,
/// sign preserved (LLVM's `denormal-fp-math-f32`), so NVPTX selects the `.ftz` forms
/// (`ex2.approx.ftz.f32`, `add.ftz.f32`, ...). Empty otherwise.
pub(crate) fn denormal_attrs<'c>(
    ctx: &'c Context,
    k: &Operation,
) -> Vec<(melior::ir::Identifier<'c>, melior::ir::Attribute<'c>)> {
    if k.attr("ftz").and_then(|a| a.as_bool()) != Some(true) {
        return vec![];
    }
    vec![(
        melior::ir::Identifier::new(ctx, "denormal_fp_math_f32"),
        melior::ir::attribute::StringAttribute::new(ctx, "preserve-sign").into(),
    )]
}

/// LLVM's `contract` flag for kernel `k`'s f32 arithmetic if it has `fp_fusion = true`:
/// its multiplies and adds may then be fused into `fma.rn.f32`
/// ([`writer::Writer::contract`]).
pub(crate) fn fp_fusion<'c>(ctx: &'c Context, k: &Operation) -> Option<melior::ir::Attribute<'c>> {
    (k.attr("fp_fusion").and_then(|a| a.as_bool()) == Some(true))
        .then(|| melior::ir::Attribute::parse(ctx, "#llvm.fastmath<contract>"))
        .flatten()
}

/// The kernel's cluster shape (`cluster = [x, y, z]`, set by `persistent{schedule=clc
/// cluster=N}`; `[1, 1, 1]` without one).
///
/// # Errors
/// A `cluster` attribute that is not three integers, located at the kernel.
/// The special register (its NVVM name after `read.ptx.sreg.`) that a cluster id op reads:
/// `cluster.ctarank`, or `cluster.ctaid.D`, `clusterid.D`, `nclusterid.D` along `dim` D.
pub(crate) fn cluster_sreg(op: &Operation) -> String {
    let d = ["x", "y", "z"][op.int_attr("dim").unwrap_or(0).clamp(0, 2) as usize];
    match op.kind {
        tilec_dialect::OpKind::ClusterCtaId => format!("cluster.ctaid.{d}"),
        tilec_dialect::OpKind::ClusterId => format!("clusterid.{d}"),
        tilec_dialect::OpKind::NumClusters => format!("nclusterid.{d}"),
        _ => "cluster.ctarank".into(),
    }
}

pub(crate) fn cluster_of(k: &Operation) -> Result<[i64; 3], Diagnostic> {
    let c: Vec<i64> = k
        .attr("cluster")
        .and_then(Attribute::as_array)
        .map(|a| a.iter().filter_map(Attribute::as_int).collect())
        .unwrap_or_else(|| vec![1, 1, 1]);
    match c[..] {
        [x, y, z] if x >= 1 && y >= 1 && z >= 1 => Ok([x, y, z]),
        _ => Err(Diagnostic::error(
            k.loc.clone(),
            "a kernel's 'cluster' is three positive integers",
        )),
    }
}

/// The kernel's grid for the manifest: x, y, z (missing dimensions are 1).
pub(crate) fn grid_of(k: &Operation) -> Vec<GridExpr> {
    let grid = k.attr("grid").and_then(Attribute::as_array).unwrap_or(&[]);
    grid.iter()
        .map(|a| match a {
            Attribute::Int(i) => GridExpr::Int(*i),
            Attribute::Expr(e) => grid_expr(e),
            _ => GridExpr::Int(1),
        })
        .collect()
}

/// The manifest's form of the IR's grid expression.
fn grid_expr(e: &Expr) -> GridExpr {
    let two = |a: &Expr, b: &Expr| Box::new([grid_expr(a), grid_expr(b)]);
    match e {
        Expr::Int(i) => GridExpr::Int(*i),
        Expr::Arg(n) => GridExpr::Arg { arg: n.clone() },
        Expr::CeilDiv(a, b) => GridExpr::CeilDiv { ceildiv: two(a, b) },
        Expr::Mul(a, b) => GridExpr::Mul { mul: two(a, b) },
        Expr::Add(a, b) => GridExpr::Add { add: two(a, b) },
        Expr::Min(a, b) => GridExpr::Min { min: two(a, b) },
    }
}

/// The PTX ISA version that holds kernel `k`'s parameters: `ptx_version`, raised to 8.1
/// (which raised the parameter space from 4 KiB to 32 KiB) where they need it.
///
/// # Errors
/// Parameters over 32 KiB: a [`tilec_dialect::DiagKind::ResourceLimit`] at the kernel.
pub(crate) fn param_space(
    k: &Operation,
    params: &[crate::manifest::Param],
    ptx_version: (u32, u32),
) -> Result<(u32, u32), Diagnostic> {
    use tilec_dialect::target::max_param_bytes;
    let bytes = crate::manifest::param_space_bytes(params);
    let version = if bytes > max_param_bytes(ptx_version) {
        ptx_version.max((8, 1))
    } else {
        ptx_version
    };
    let limit = max_param_bytes(version);
    if bytes > limit {
        return Err(Diagnostic::resource_limit(
            k.loc.clone(),
            format!(
                "the kernel's {} parameters take {bytes} bytes of parameter space; PTX allows \
                 {limit} (tensor maps take 128 bytes each, pointer tensors 8 per pointer, size \
                 and stride)",
                params.len()
            ),
            "parameter bytes",
            bytes,
            limit,
        ));
    }
    Ok(version)
}

/// The manifest's name of a tensor element type.
pub(crate) fn dtype_of(t: ScalarType) -> Dtype {
    match t {
        ScalarType::I1 => Dtype::I1,
        ScalarType::I32 => Dtype::I32,
        ScalarType::I64 => Dtype::I64,
        ScalarType::Index => Dtype::Index,
        ScalarType::F16 => Dtype::F16,
        ScalarType::BF16 => Dtype::Bf16,
        ScalarType::F32 => Dtype::F32,
        ScalarType::E4M3 => Dtype::E4m3,
        ScalarType::E5M2 => Dtype::E5m2,
    }
}

/// The manifest's type of a scalar parameter: `index` is passed as `i64`.
pub(crate) fn scalar_dtype(t: ScalarType) -> Dtype {
    match t {
        ScalarType::Index => Dtype::I64,
        t => dtype_of(t),
    }
}

// CUDA's grid limits, as the verifier checks constant grids and the manifest states them.
const _: () = {
    let (a, b) = (tilec_dialect::target::MAX_GRID, crate::manifest::MAX_GRID);
    assert!(a[0] == b[0] && a[1] == b[1] && a[2] == b[2]);
};
