//! Binding a launch's arguments to a manifest's parameters, with every check a launcher
//! can make on the host: names, kinds, dtypes, ranks, devices, layouts and the alignment
//! TMA needs, scalar ranges, and the grid. The result says exactly what to put in the
//! parameter buffer and which tensor maps to encode; nothing here calls the driver.

use tilec_manifest::{
    Dtype, Fill, Interleave, L2Promotion, LaunchConfig, LaunchError, Manifest, Param, Persistent,
    Swizzle, WorkspaceInit,
};

/// Where a tensor's memory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// Host memory (an error for a kernel argument).
    Host,
    /// Global memory of CUDA device `ordinal`.
    Cuda(u32),
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Host => f.write_str("host memory"),
            Device::Cuda(d) => write!(f, "cuda:{d}"),
        }
    }
}

/// A tensor passed to a kernel: its device address, element type, shape and strides in
/// elements, outermost dimension first (as torch's `shape` and `stride()`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorArg {
    /// The address of element (0, …, 0).
    pub ptr: u64,
    /// The element type.
    pub dtype: Dtype,
    /// Sizes, outermost first.
    pub shape: Vec<u64>,
    /// Strides in elements, outermost first (a row-major M×N tensor has `[N, 1]`).
    pub strides: Vec<i64>,
    /// Where the memory is.
    pub device: Device,
}

impl TensorArg {
    /// A row-major (contiguous) tensor of `shape` at `ptr` on `device`.
    pub fn contiguous(ptr: u64, dtype: Dtype, shape: &[u64], device: Device) -> TensorArg {
        let mut strides = vec![1i64; shape.len()];
        for d in (0..shape.len().saturating_sub(1)).rev() {
            let next = i64::try_from(shape[d + 1]).unwrap_or(i64::MAX);
            strides[d] = strides[d + 1].saturating_mul(next);
        }
        TensorArg {
            ptr,
            dtype,
            shape: shape.to_vec(),
            strides,
            device,
        }
    }
}

/// One argument of a launch.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// A tensor in device memory.
    Tensor(TensorArg),
    /// An integer scalar (for `i1`, `i32`, `i64` and `index` parameters).
    Int(i64),
    /// A float scalar (for `f32`, `f16` and `bf16` parameters).
    Float(f64),
}

impl Arg {
    fn kind(&self) -> &'static str {
        match self {
            Arg::Tensor(_) => "a tensor",
            Arg::Int(_) => "an integer",
            Arg::Float(_) => "a float",
        }
    }
}

/// What `cuTensorMapEncodeTiled` takes for one `tensor_map` parameter, in the driver's
/// order (innermost dimension first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorMapRequest {
    /// The parameter's name.
    pub param: String,
    /// The element type (fp8 is encoded as `UINT8`).
    pub dtype: Dtype,
    /// The global address (16-byte aligned).
    pub global_address: u64,
    /// Sizes, innermost first (`globalDim`).
    pub global_dims: Vec<u64>,
    /// Byte strides of dimensions 1 and up, innermost first (`globalStrides`; multiples of
    /// 16).
    pub global_strides: Vec<u64>,
    /// The box, innermost first (`boxDim`).
    pub box_dims: Vec<u32>,
    /// `CUtensorMapSwizzle`.
    pub swizzle: Swizzle,
    /// `CUtensorMapInterleave`.
    pub interleave: Interleave,
    /// `CUtensorMapL2promotion`.
    pub l2_promotion: L2Promotion,
    /// What out-of-bounds reads give.
    pub fill: Fill,
}

/// One parameter's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamValue {
    /// A 128-byte `CUtensorMap` to encode, passed by value (64-byte aligned).
    TensorMap(TensorMapRequest),
    /// Little-endian bytes of `bytes.len() / align` consecutive PTX parameters of `align`
    /// bytes each: one for a scalar; the address, sizes and strides (8 bytes each) of a
    /// tensor passed by pointer.
    Bytes {
        /// The manifest parameter's name.
        param: String,
        /// The bytes.
        bytes: Vec<u8>,
        /// Each PTX parameter's size and alignment.
        align: u64,
    },
}

/// A launch with its arguments bound: the configuration and each parameter's value, in the
/// manifest's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bound {
    /// Grid, block, cluster and dynamic shared memory.
    pub config: LaunchConfig,
    /// The parameters' values, in order.
    pub params: Vec<ParamValue>,
    /// A split-K kernel's work around the launch (docs/manifest.md); None for others.
    pub split_k: Option<SplitKWork>,
}

/// What a split-K launch does besides the kernel, on the same stream: zero each workspace
/// before it, and, when the caller passed the finalize's output (the argument named by the
/// manifest's `split_k.finalize.to`), round the workspace into it after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitKWork {
    /// The workspaces, zeroed before every launch (`cuMemsetD2D32Async`).
    pub zero: Vec<ZeroRegion>,
    /// The finalize's input (the f32 workspace) and output (bf16, f16 or f32, same shape).
    pub finalize: Option<(TensorArg, TensorArg)>,
}

/// A workspace as rows of 32-bit words, for `cuMemsetD2D32Async`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZeroRegion {
    /// The workspace parameter.
    pub param: String,
    /// The address of its first element.
    pub ptr: u64,
    /// Bytes from one row to the next.
    pub pitch_bytes: u64,
    /// Words per row.
    pub width: u64,
    /// Rows.
    pub height: u64,
}

/// Why arguments do not bind to a kernel's parameters.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BindError {
    /// A parameter got no argument.
    #[error("kernel '{kernel}' needs argument '{name}', which was not given")]
    Missing {
        /// The kernel.
        kernel: String,
        /// The parameter.
        name: String,
    },
    /// An argument that is no parameter of the kernel.
    #[error("'{name}' is not a parameter of kernel '{kernel}' (its parameters: {known})")]
    Unknown {
        /// The kernel.
        kernel: String,
        /// The name given.
        name: String,
        /// The parameters, comma-separated.
        known: String,
    },
    /// An argument given twice.
    #[error("argument '{name}' is given twice")]
    Duplicate {
        /// The name.
        name: String,
    },
    /// A tensor where a scalar goes, or the other way round.
    #[error("'{name}' takes {expected}, found {found}")]
    Kind {
        /// The parameter.
        name: String,
        /// What it takes.
        expected: &'static str,
        /// What was given.
        found: &'static str,
    },
    /// A tensor of another element type.
    #[error("'{name}' takes a tensor of {expected}, found {found}")]
    Dtype {
        /// The parameter.
        name: String,
        /// Its dtype.
        expected: Dtype,
        /// The tensor's.
        found: Dtype,
    },
    /// A tensor of another rank, or shape and strides of different lengths.
    #[error("'{name}' takes a tensor of rank {expected}, found {found}")]
    Rank {
        /// The parameter.
        name: String,
        /// Its rank.
        expected: u32,
        /// What was given (a description of the shape and strides).
        found: String,
    },
    /// A tensor not in the launch device's memory.
    #[error("'{name}' is in {found}; the kernel runs on {expected}")]
    Device {
        /// The parameter.
        name: String,
        /// The launch's device.
        expected: Device,
        /// The tensor's.
        found: Device,
    },
    /// A layout the parameter cannot take (TMA's alignment and stride rules, negative
    /// strides).
    #[error("'{name}': {reason}")]
    Layout {
        /// The parameter.
        name: String,
        /// What is wrong and what is needed.
        reason: String,
    },
    /// A scalar that the parameter's type cannot hold.
    #[error("'{name}' is {dtype}, which cannot hold {value}")]
    Scalar {
        /// The parameter.
        name: String,
        /// Its type.
        dtype: Dtype,
        /// The value given.
        value: String,
    },
    /// A grid given by the caller that this kernel cannot take.
    #[error("grid {grid:?} for kernel '{kernel}': {reason}")]
    Grid {
        /// The kernel.
        kernel: String,
        /// The grid given.
        grid: [u32; 3],
        /// Why it is refused.
        reason: String,
    },
    /// A manifest this launcher does not launch yet.
    #[error("{0}")]
    Unsupported(String),
    /// The grid (a scalar the grid reads, a dimension out of CUDA's limits).
    #[error(transparent)]
    Launch(#[from] LaunchError),
}

/// TMA's limits (CUDA driver API, `cuTensorMapEncodeTiled`).
const TMA_ALIGN: u64 = 16;
const TMA_MAX_DIM: u64 = 1 << 32;
const TMA_MAX_STRIDE: u64 = 1 << 40;

/// Binds `args` (by name) to `manifest`'s parameters for a launch on device `device` with
/// `sm_count` SMs (for persistent grids).
///
/// # Errors
/// The first [`BindError`] in parameter order: a missing, unknown or repeated argument, a
/// tensor of the wrong kind, dtype, rank or device, a layout TMA cannot read (an innermost
/// stride other than 1, a base or a pitch not a multiple of 16 bytes, an empty dimension,
/// a store map whose rows are not whole 16-byte chunks), a scalar out of its type's range,
/// or a grid the scalars do not give. A split-K kernel also takes the finalize's output by
/// the name `split_k.finalize.to` (optional), and its workspaces must be f32 rows
/// ([`SplitKWork`]). An ordered split-K kernel's flags must be i32 rows of at least one
/// flag per output tile, a rank-3 workspace must hold at least S partials, and a kernel
/// whose programs wait (`split_k.waits`) must not launch more programs than SMs unless its
/// grid is static persistent.
pub fn bind<S: AsRef<str>>(
    manifest: &Manifest,
    args: &[(S, Arg)],
    device: u32,
    sm_count: u32,
) -> Result<Bound, BindError> {
    let kernel = &manifest.kernel;
    let finalize_to = manifest
        .split_k
        .as_ref()
        .and_then(|sk| sk.finalize.as_ref())
        .map(|f| f.to.as_str())
        .filter(|to| manifest.param(to).is_none());
    for (i, (name, _)) in args.iter().enumerate() {
        let name = name.as_ref();
        if args[..i].iter().any(|(n, _)| n.as_ref() == name) {
            return Err(BindError::Duplicate {
                name: name.to_string(),
            });
        }
        if manifest.param(name).is_none() && Some(name) != finalize_to {
            let known: Vec<&str> = manifest.params.iter().map(Param::name).collect();
            return Err(BindError::Unknown {
                kernel: kernel.clone(),
                name: name.to_string(),
                known: known.join(", "),
            });
        }
    }
    let mut params = vec![];
    let mut scalars = vec![];
    for p in &manifest.params {
        let name = p.name();
        let Some((_, arg)) = args.iter().find(|(n, _)| n.as_ref() == name) else {
            return Err(BindError::Missing {
                kernel: kernel.clone(),
                name: name.to_string(),
            });
        };
        let value = match p {
            Param::Scalar { dtype, .. } => {
                let (bytes, as_int) = scalar(name, *dtype, arg)?;
                if let Some(v) = as_int {
                    scalars.push((name, v));
                }
                ParamValue::Bytes {
                    param: name.to_string(),
                    align: bytes.len() as u64,
                    bytes,
                }
            }
            Param::TensorPointer { dtype, rank, .. } => {
                let t = tensor(name, *dtype, *rank, arg, device)?;
                pointer(name, t)?
            }
            Param::TensorMap {
                dtype,
                rank,
                box_,
                swizzle,
                fill,
                interleave,
                l2_promotion,
                ..
            } => {
                let t = tensor(name, *dtype, *rank, arg, device)?;
                let mut r = tensor_map(name, t, box_, *fill)?;
                r.swizzle = *swizzle;
                r.interleave = *interleave;
                r.l2_promotion = *l2_promotion;
                ParamValue::TensorMap(r)
            }
        };
        params.push(value);
    }
    let config = manifest.launch_config(&scalars, sm_count)?;
    if let Some(sk) = manifest.split_k.as_ref().filter(|sk| {
        // A static persistent grid walks the tiles in order on resident CTAs; clc
        // launches the whole tile grid, like a plain launch.
        sk.waits && !matches!(manifest.persistent, Some(Persistent::Static { .. }))
    }) {
        let ctas: u64 = config.grid.iter().map(|&d| u64::from(d)).product();
        if config.grid[2] > 1 && ctas > u64::from(sm_count) {
            return Err(BindError::Unsupported(format!(
                "kernel '{kernel}' reduces its {} K slices one after another, so each program \
                 of a tile waits for the one before it: {ctas} programs on {sm_count} SMs could \
                 wait for one that is not resident; pass {} ≤ SMs / output tiles",
                sk.arg, sk.arg
            )));
        }
    }
    if let Some(sk) = manifest.split_k.as_ref().filter(|sk| !sk.flags.is_empty()) {
        ordered_extents(manifest, sk, args, &scalars)?;
    }
    let split_k = match &manifest.split_k {
        Some(sk) => Some(split_k_work(manifest, sk, args, finalize_to, device)?),
        None => None,
    };
    Ok(Bound {
        config,
        params,
        split_k,
    })
}

/// An ordered split-K launch's tensors are large enough: each flag tensor holds one flag
/// per output tile (grid x · grid y; the flag ops do not check bounds), and a rank-3
/// workspace one partial per slice (its first extent at least S).
fn ordered_extents<S: AsRef<str>>(
    manifest: &Manifest,
    sk: &tilec_manifest::SplitK,
    args: &[(S, Arg)],
    scalars: &[(&str, i64)],
) -> Result<(), BindError> {
    let lookup = |n: &str| scalars.iter().find(|(a, _)| *a == n).map(|(_, v)| *v);
    let tiles = manifest.grid.x.eval(&lookup)? * manifest.grid.y.eval(&lookup)?;
    let slices = lookup(&sk.arg).unwrap_or(1);
    let extent = |name: &str| {
        args.iter()
            .find(|(n, _)| n.as_ref() == name)
            .and_then(|(_, a)| match a {
                Arg::Tensor(t) => t.shape.first().copied(),
                _ => None,
            })
    };
    for f in &sk.flags {
        match extent(f) {
            Some(n) if (n as i64) < tiles => {
                return Err(BindError::Layout {
                    name: f.clone(),
                    reason: format!(
                        "holds {n} flags; the kernel uses one per output tile, {tiles}"
                    ),
                })
            }
            _ => {}
        }
    }
    for w in &sk.workspace {
        let rank3 = matches!(
            manifest.param(w),
            Some(Param::TensorPointer { rank: 3, .. })
        );
        match extent(w) {
            Some(n) if rank3 && (n as i64) < slices => {
                return Err(BindError::Layout {
                    name: w.clone(),
                    reason: format!(
                        "holds {n} partials; the kernel writes one per K slice, {} = {slices}",
                        sk.arg
                    ),
                })
            }
            _ => {}
        }
    }
    Ok(())
}

/// The workspaces of a split-K launch as rows, and its finalize's tensors.
fn split_k_work<S: AsRef<str>>(
    manifest: &Manifest,
    sk: &tilec_manifest::SplitK,
    args: &[(S, Arg)],
    finalize_to: Option<&str>,
    device: u32,
) -> Result<SplitKWork, BindError> {
    let find = |name: &str| {
        args.iter()
            .find(|(n, _)| n.as_ref() == name)
            .map(|(_, a)| a)
    };
    let mut zero = vec![];
    let zeroed = match sk.workspace_init {
        WorkspaceInit::Zero => sk.workspace.iter().map(|w| (w, Dtype::F32)).collect(),
        WorkspaceInit::None => vec![],
    };
    // An ordered reduction's flags: zero before the first launch, and each launch leaves
    // them zero; zeroed before every launch all the same, since a buffer's history is the
    // caller's (one memset of 4 bytes per output tile).
    let flags = sk.flags.iter().map(|f| (f, Dtype::I32));
    for (w, dtype) in zeroed.into_iter().chain(flags) {
        let layout = |reason: String| BindError::Layout {
            name: w.clone(),
            reason,
        };
        let Some(Param::TensorPointer { .. }) = manifest.param(w) else {
            return Err(BindError::Unsupported(format!(
                "split-K workspace '{w}' is no tensor_pointer parameter of kernel '{}'",
                manifest.kernel
            )));
        };
        // Bound to its parameter already (kind, rank, device, layout).
        let Some(Arg::Tensor(t)) = find(w) else {
            continue;
        };
        if t.dtype != dtype {
            return Err(BindError::Dtype {
                name: w.clone(),
                expected: dtype,
                found: t.dtype,
            });
        }
        let (height, width, row) = match t.shape.as_slice() {
            [n] => (1, *n, 0),
            [m, n] => (*m, *n, t.strides[0]),
            _ => {
                return Err(layout(format!(
                    "a split-K workspace is zeroed as rows: rank 1 or 2, found rank {}",
                    t.shape.len()
                )))
            }
        };
        let inner = *t.strides.last().unwrap_or(&1);
        if width > 1 && inner != 1 {
            return Err(layout(format!(
                "a split-K workspace is zeroed as rows: its last stride must be 1, found {inner}"
            )));
        }
        if height > 1 && (row as u64) < width {
            return Err(layout(format!(
                "a split-K workspace is zeroed as rows: rows of {width} elements {row} apart \
                 overlap"
            )));
        }
        zero.push(ZeroRegion {
            param: w.clone(),
            ptr: t.ptr,
            pitch_bytes: (row as u64).max(width) * 4,
            width,
            height,
        });
    }
    let from = sk.finalize.as_ref().and_then(|f| f.from.as_ref());
    let finalize = match (finalize_to, from) {
        (Some(to), Some(from)) => match (find(to), find(from)) {
            (Some(out), Some(Arg::Tensor(src))) => {
                let Arg::Tensor(dst) = out else {
                    return Err(BindError::Kind {
                        name: to.to_string(),
                        expected: "a tensor",
                        found: out.kind(),
                    });
                };
                if !matches!(dst.dtype, Dtype::Bf16 | Dtype::F16 | Dtype::F32) {
                    return Err(BindError::Unsupported(format!(
                        "'{to}' is {}: the split-K finalize writes bf16, f16 or f32",
                        dst.dtype
                    )));
                }
                let dst = tensor(to, dst.dtype, 2, out, device)?;
                if dst.shape != src.shape {
                    return Err(BindError::Layout {
                        name: to.to_string(),
                        reason: format!(
                            "the split-K finalize writes {from}'s shape {:?} into it, found {:?}",
                            src.shape, dst.shape
                        ),
                    });
                }
                Some((src.clone(), dst.clone()))
            }
            _ => None,
        },
        _ => None,
    };
    Ok(SplitKWork { zero, finalize })
}

/// A scalar's bytes, and its value when it is an integer (the grid may read it).
fn scalar(name: &str, dtype: Dtype, arg: &Arg) -> Result<(Vec<u8>, Option<i64>), BindError> {
    let range = |value: String| BindError::Scalar {
        name: name.to_string(),
        dtype,
        value,
    };
    let kind = |expected| BindError::Kind {
        name: name.to_string(),
        expected,
        found: arg.kind(),
    };
    match (dtype, arg) {
        (Dtype::I64 | Dtype::Index, Arg::Int(v)) => Ok((v.to_le_bytes().to_vec(), Some(*v))),
        (Dtype::I32, Arg::Int(v)) => {
            let x = i32::try_from(*v).map_err(|_| range(v.to_string()))?;
            Ok((x.to_le_bytes().to_vec(), Some(*v)))
        }
        (Dtype::I1, Arg::Int(v)) if matches!(v, 0 | 1) => Ok((vec![*v as u8], Some(*v))),
        (Dtype::I1, Arg::Int(v)) => Err(range(v.to_string())),
        (Dtype::F32, Arg::Float(x)) => {
            let f = *x as f32;
            if x.is_finite() && !f.is_finite() {
                return Err(range(x.to_string()));
            }
            Ok((f.to_le_bytes().to_vec(), None))
        }
        (Dtype::I1 | Dtype::I32 | Dtype::I64 | Dtype::Index, _) => Err(kind("an integer")),
        (Dtype::F32, _) => Err(kind("a float")),
        (Dtype::F16 | Dtype::Bf16 | Dtype::E4m3 | Dtype::E5m2, _) => Err(BindError::Unsupported(
            format!("scalar parameter '{name}' of {dtype}: this launcher passes f32 floats only"),
        )),
    }
}

/// The tensor bound to a tensor parameter, checked for kind, dtype, rank and device.
fn tensor<'a>(
    name: &str,
    dtype: Dtype,
    rank: u32,
    arg: &'a Arg,
    device: u32,
) -> Result<&'a TensorArg, BindError> {
    let Arg::Tensor(t) = arg else {
        return Err(BindError::Kind {
            name: name.to_string(),
            expected: "a tensor",
            found: arg.kind(),
        });
    };
    if t.dtype != dtype {
        return Err(BindError::Dtype {
            name: name.to_string(),
            expected: dtype,
            found: t.dtype,
        });
    }
    if t.shape.len() != rank as usize || t.strides.len() != rank as usize {
        return Err(BindError::Rank {
            name: name.to_string(),
            expected: rank,
            found: format!("shape {:?} and strides {:?}", t.shape, t.strides),
        });
    }
    if t.device != Device::Cuda(device) {
        return Err(BindError::Device {
            name: name.to_string(),
            expected: Device::Cuda(device),
            found: t.device,
        });
    }
    if let Some(d) = t.strides.iter().position(|&s| s < 0) {
        return Err(BindError::Layout {
            name: name.to_string(),
            reason: format!("stride {} of dimension {d} is negative", t.strides[d]),
        });
    }
    if t.shape.contains(&0) {
        return Ok(t);
    }
    let layout = |reason: &str| BindError::Layout {
        name: name.to_string(),
        reason: reason.to_string(),
    };
    if t.ptr == 0 {
        return Err(layout("the address is null"));
    }
    // The last element's offset in bytes: it must stay inside the 64-bit address space.
    let last = t
        .shape
        .iter()
        .zip(&t.strides)
        .try_fold(0u64, |acc, (&n, &s)| {
            (n - 1)
                .checked_mul(s as u64)
                .and_then(|x| acc.checked_add(x))
        })
        .and_then(|e| e.checked_add(1))
        .and_then(|e| e.checked_mul(t.dtype.size_bytes()))
        .and_then(|bytes| t.ptr.checked_add(bytes));
    if last.is_none() {
        return Err(layout(
            "its shape and strides reach past the end of the 64-bit address space",
        ));
    }
    Ok(t)
}

/// A `tensor_pointer`'s bytes: the address, the sizes and the strides (elements), 8 bytes
/// each.
fn pointer(name: &str, t: &TensorArg) -> Result<ParamValue, BindError> {
    let align = t.dtype.size_bytes();
    if t.ptr % align != 0 {
        return Err(BindError::Layout {
            name: name.to_string(),
            reason: format!(
                "address {:#x} is not aligned to its {align}-byte elements",
                t.ptr
            ),
        });
    }
    let mut bytes = t.ptr.to_le_bytes().to_vec();
    for s in &t.shape {
        bytes.extend(s.to_le_bytes());
    }
    for s in &t.strides {
        bytes.extend(s.to_le_bytes());
    }
    Ok(ParamValue::Bytes {
        param: name.to_string(),
        bytes,
        align: 8,
    })
}

/// A tensor map's encoding request, checked against TMA's rules.
fn tensor_map(
    name: &str,
    t: &TensorArg,
    box_: &[u64],
    fill: Fill,
) -> Result<TensorMapRequest, BindError> {
    let bad = |reason: String| BindError::Layout {
        name: name.to_string(),
        reason,
    };
    let esize = t.dtype.size_bytes();
    let rank = t.shape.len();
    if t.strides.last() != Some(&1) {
        return Err(bad(format!(
            "TMA reads the innermost dimension contiguously: its stride must be 1, found {:?} \
             (pass a contiguous tensor)",
            t.strides
        )));
    }
    if t.ptr % TMA_ALIGN != 0 {
        return Err(bad(format!(
            "TMA needs a 16-byte aligned address, found {:#x}",
            t.ptr
        )));
    }
    if let Some(d) = t.shape.iter().position(|&s| s == 0 || s > TMA_MAX_DIM) {
        return Err(bad(format!(
            "dimension {d} has {} elements; a tensor map needs 1 to 2^32 (an empty tensor \
             cannot be encoded: handle a size of 0 before launching)",
            t.shape[d]
        )));
    }
    let mut global_strides = vec![];
    for d in (0..rank.saturating_sub(1)).rev() {
        let bytes = (t.strides[d] as u64).saturating_mul(esize);
        if bytes % TMA_ALIGN != 0 || bytes >= TMA_MAX_STRIDE {
            return Err(bad(format!(
                "TMA needs each row pitch to be a multiple of 16 bytes below 2^40: dimension \
                 {d} has a stride of {} elements ({bytes} bytes)",
                t.strides[d]
            )));
        }
        global_strides.push(bytes);
    }
    if fill == Fill::None && (t.shape[rank - 1] * esize) % TMA_ALIGN != 0 {
        return Err(bad(format!(
            "a TMA store writes whole 16-byte chunks: rows of {} elements ({} bytes) would \
             have the bytes after them overwritten (docs/manifest.md); the row length must be \
             a multiple of 16 bytes",
            t.shape[rank - 1],
            t.shape[rank - 1] * esize
        )));
    }
    if box_.len() != rank || box_.iter().any(|&b| b == 0 || b > 256) {
        return Err(BindError::Unsupported(format!(
            "'{name}': the manifest's box {box_:?} is not {rank} sizes of 1 to 256"
        )));
    }
    Ok(TensorMapRequest {
        param: name.to_string(),
        dtype: t.dtype,
        global_address: t.ptr,
        global_dims: t.shape.iter().rev().copied().collect(),
        global_strides,
        box_dims: box_.iter().rev().map(|&b| b as u32).collect(),
        swizzle: Swizzle::None,
        interleave: Interleave::None,
        l2_promotion: L2Promotion::None,
        fill,
    })
}
