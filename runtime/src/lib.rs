//! # tilec-runtime: launching tilec kernels
//!
//! The host side of a tilec kernel, without MLIR (it reads the manifest through
//! `tilec-manifest`):
//! - [`bind`]: binds a launch's arguments to the manifest's parameters by name and checks
//!   them (dtype, rank, device, TMA's alignment rules, scalar ranges, the grid), giving the
//!   launch configuration, the parameter bytes and the tensor maps to encode;
//! - [`Cache`]: the compile cache on disk (`$TILEC_CACHE_DIR`, else `~/.cache/tilec`), with
//!   atomic writes and a checksum that makes a corrupted entry a recompile;
//! - [`driver_library`]: whether the CUDA driver library can be loaded, checked before any
//!   driver call, so that a machine without a GPU gets an error and not a panic;
//! - [`Context`], [`Kernel`]: a device's primary context (the one PyTorch uses), a kernel
//!   loaded from PTX or a cubin, its tensor maps encoded (`cuTensorMapEncodeTiled`) and its
//!   launch (`cuLaunchKernelEx`, with the cluster attribute) on the caller's [`Stream`],
//!   without a host synchronization, so that it can be captured into a CUDA graph;
//! - split-K kernels ([`SplitKWork`]): each launch zeroes the workspace and, given the
//!   output, rounds the workspace into it with an embedded finalize kernel
//!   ([`FINALIZE_KERNELS`]), on the same stream.
//!
//! ```
//! use tilec_runtime::{bind, Arg, Device, TensorArg};
//! use tilec_manifest::{Dtype, Manifest};
//! let m = Manifest::from_json(include_str!("../tests/vadd.json")).unwrap();
//! let x = |p| Arg::Tensor(TensorArg::contiguous(p, Dtype::F32, &[5000], Device::Cuda(0)));
//! let args = [("X", x(0x10000)), ("Y", x(0x20000)), ("Z", x(0x30000)), ("N", Arg::Int(5000))];
//! let b = bind(&m, &args, 0, 132).unwrap();
//! assert_eq!(b.config.grid, [5, 1, 1]); // ceildiv(N, 1024)
//! ```
//!
//! Dependencies: `tilec-manifest` (the manifest types), `thiserror` (the error types),
//! `sha2` (cache keys and entry checksums: a well-kept implementation of a hash whose
//! collisions do not happen by accident), `serde`/`serde_json` (the cache's entries), and
//! `libloading` (probing for the driver library without loading it through cudarc, whose
//! dynamic loader panics when the library is missing), and `cudarc` (the CUDA driver API's
//! bindings, loaded at run time, so that the crate builds without CUDA).

#![deny(missing_docs)]

mod bind;
mod cache;
mod launch;

pub use bind::{
    bind, Arg, BindError, Bound, Device, ParamValue, SplitKWork, TensorArg, TensorMapRequest,
    ZeroRegion,
};
pub use cache::{Cache, CacheKey, Entry, Lookup};
pub use launch::{
    check_cubin, device_count, runs_on, Context, Image, Kernel, Prepared, RuntimeError, Stream,
    FINALIZE_KERNELS,
};

/// The file names the CUDA driver library has, tried in order.
#[cfg(unix)]
const DRIVER_NAMES: &[&str] = &["libcuda.so.1", "libcuda.so"];
#[cfg(windows)]
const DRIVER_NAMES: &[&str] = &["nvcuda.dll"];

/// No CUDA driver library could be loaded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "no CUDA driver: {tried} could not be loaded ({reason}); launching needs an NVIDIA GPU \
     and its driver"
)]
pub struct NoDriver {
    /// The names tried.
    pub tried: String,
    /// The loader's last error.
    pub reason: String,
}

/// The name of the CUDA driver library that loads here, checked by loading and unloading
/// it (no driver call is made).
///
/// # Errors
/// [`NoDriver`] when none of its names loads.
pub fn driver_library() -> Result<&'static str, NoDriver> {
    let mut reason = String::new();
    for name in DRIVER_NAMES {
        // SAFETY: loading the driver runs its initialisers only, which have no
        // preconditions; the library is unloaded again at once.
        match unsafe { libloading::Library::new(name) } {
            Ok(_) => return Ok(name),
            Err(e) => reason = e.to_string(),
        }
    }
    Err(NoDriver {
        tried: DRIVER_NAMES.join(", "),
        reason,
    })
}
