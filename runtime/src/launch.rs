//! The launch over the CUDA driver API (cudarc's `driver::sys` bindings, loaded at run
//! time): a device's primary context, a kernel's module loaded from PTX or a cubin, tensor
//! maps encoded with `cuTensorMapEncodeTiled`, and `cuLaunchKernelEx` with the cluster
//! attribute on a stream the caller owns.
//!
//! Every entry point checks first that the driver library loads ([`crate::driver_library`]),
//! so a machine without a GPU gets [`RuntimeError::NoDriver`] and not cudarc's panic. A
//! launch does not synchronize the host: it may be captured into a CUDA graph.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::{Arc, OnceLock};

use cudarc::driver::sys;
use tilec_manifest::{Dtype, Fill, Interleave, L2Promotion, Manifest, Swizzle};

use crate::bind::{bind, Arg, BindError, Bound, ParamValue, TensorMapRequest};
use crate::NoDriver;

/// Why a kernel did not load or launch.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The driver library is missing (no GPU, or no driver).
    #[error(transparent)]
    NoDriver(#[from] NoDriver),
    /// A driver call failed.
    #[error("{call} failed: {name} ({description})")]
    Driver {
        /// The driver function.
        call: &'static str,
        /// The `CUresult` name (`CUDA_ERROR_INVALID_VALUE`).
        name: String,
        /// The driver's description of it.
        description: String,
    },
    /// The arguments do not bind to the kernel's parameters.
    #[error(transparent)]
    Bind(#[from] BindError),
    /// No device has the ordinal asked for.
    #[error("no CUDA device {ordinal}: this machine has {count}")]
    NoDevice {
        /// The ordinal asked for.
        ordinal: u32,
        /// The number of devices.
        count: u32,
    },
    /// The kernel was compiled for a target the device cannot run.
    #[error(
        "kernel '{kernel}' was compiled for {target}, which device {ordinal} ({device}, \
         compute capability {major}.{minor}) cannot run"
    )]
    Target {
        /// The kernel.
        kernel: String,
        /// The manifest's target (`sm_90a`).
        target: String,
        /// The device's ordinal.
        ordinal: u32,
        /// The device's name.
        device: String,
        /// Its compute capability's major number.
        major: u32,
        /// Its compute capability's minor number.
        minor: u32,
    },
    /// The module did not load: the driver's JIT or loader refused the image.
    #[error("kernel '{kernel}': {call} failed: {name}{}", log_suffix(log))]
    Load {
        /// The kernel.
        kernel: String,
        /// The driver function.
        call: &'static str,
        /// The `CUresult` name.
        name: String,
        /// The JIT's error log (empty when it wrote none).
        log: String,
    },
    /// The kernel needs more dynamic shared memory than the device gives a CTA.
    #[error(
        "kernel '{kernel}' needs {needed} bytes of dynamic shared memory; device {ordinal} \
         gives a CTA at most {limit}"
    )]
    SharedMemory {
        /// The kernel.
        kernel: String,
        /// The bytes it needs.
        needed: u64,
        /// The device's opt-in limit per CTA.
        limit: u64,
        /// The device's ordinal.
        ordinal: u32,
    },
}

fn log_suffix(log: &str) -> String {
    if log.trim().is_empty() {
        String::new()
    } else {
        format!("\n{}", log.trim_end())
    }
}

/// The result of a driver call as a [`RuntimeError::Driver`].
fn check(call: &'static str, r: sys::CUresult) -> Result<(), RuntimeError> {
    if r == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let (name, description) = describe(r);
    Err(RuntimeError::Driver {
        call,
        name,
        description,
    })
}

/// A `CUresult`'s name and description, from the driver.
fn describe(r: sys::CUresult) -> (String, String) {
    let text = |f: unsafe fn(sys::CUresult, *mut *const c_char) -> sys::CUresult| {
        let mut p: *const c_char = std::ptr::null();
        // SAFETY: the driver writes a pointer to a static string, or leaves null.
        let ok = unsafe { f(r, &mut p) } == sys::CUresult::CUDA_SUCCESS;
        if ok && !p.is_null() {
            // SAFETY: a non-null result is a NUL-terminated static string.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        } else {
            format!("{r:?}")
        }
    };
    (text(sys::cuGetErrorName), text(sys::cuGetErrorString))
}

/// Loads the driver once and calls `cuInit`; every entry point starts here.
fn driver() -> Result<(), RuntimeError> {
    static INIT: OnceLock<Result<(), RuntimeError>> = OnceLock::new();
    INIT.get_or_init(|| {
        crate::driver_library()?;
        // cudarc looks under more names than `driver_library`; both must agree that the
        // library loads before cudarc's loader (which panics) runs.
        // SAFETY: probing loads and unloads the library only.
        if !unsafe { sys::is_culib_present() } {
            return Err(NoDriver {
                tried: "cudarc's candidate names for libcuda".into(),
                reason: "not found".into(),
            }
            .into());
        }
        // SAFETY: cuInit has no preconditions.
        check("cuInit", unsafe { sys::cuInit(0) })
    })
    .clone()
}

/// The number of CUDA devices.
///
/// # Errors
/// [`RuntimeError::NoDriver`] without a driver; a driver error when `cuInit` fails (no
/// device, or a driver older than the library's bindings).
pub fn device_count() -> Result<u32, RuntimeError> {
    driver()?;
    let mut n: c_int = 0;
    // SAFETY: the driver writes one int.
    check("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut n) })?;
    Ok(n.max(0) as u32)
}

/// A device's primary context: the one PyTorch and the CUDA runtime use, so that modules
/// loaded here run on their streams. Retained while this lives.
#[derive(Debug)]
pub struct Context {
    ordinal: u32,
    device: sys::CUdevice,
    ctx: sys::CUcontext,
    name: String,
    sm_count: u32,
    compute_capability: (u32, u32),
    max_shared_memory: u64,
}

// SAFETY: a CUcontext is a handle the driver lets any thread use.
unsafe impl Send for Context {}
// SAFETY: as above; the driver API is thread-safe.
unsafe impl Sync for Context {}

/// Makes a context current on this thread for a scope, restoring the previous one after.
struct Current;

impl Current {
    fn push(ctx: sys::CUcontext) -> Result<Current, RuntimeError> {
        // SAFETY: ctx is a retained primary context.
        check("cuCtxPushCurrent", unsafe { sys::cuCtxPushCurrent_v2(ctx) })?;
        Ok(Current)
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        let mut old = std::ptr::null_mut();
        // SAFETY: pops what `push` pushed on this thread.
        unsafe { sys::cuCtxPopCurrent_v2(&mut old) };
    }
}

impl Context {
    /// Retains the primary context of device `ordinal` and reads its name, SM count,
    /// compute capability and opt-in shared-memory limit.
    ///
    /// # Errors
    /// [`RuntimeError::NoDriver`], [`RuntimeError::NoDevice`] for an ordinal out of range,
    /// or the failing driver call.
    pub fn primary(ordinal: u32) -> Result<Arc<Context>, RuntimeError> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(RuntimeError::NoDevice { ordinal, count });
        }
        let mut device: sys::CUdevice = 0;
        // SAFETY: the ordinal is in range; the driver writes one handle.
        check("cuDeviceGet", unsafe {
            sys::cuDeviceGet(&mut device, ordinal as c_int)
        })?;
        let attr = |a: sys::CUdevice_attribute| -> Result<u32, RuntimeError> {
            let mut v: c_int = 0;
            // SAFETY: the driver writes one int.
            check("cuDeviceGetAttribute", unsafe {
                sys::cuDeviceGetAttribute(&mut v, a, device)
            })?;
            Ok(v.max(0) as u32)
        };
        use sys::CUdevice_attribute as A;
        let sm_count = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let major = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let smem = attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
        let mut buf = [0 as c_char; 256];
        // SAFETY: the driver writes at most `len` bytes, NUL-terminated.
        check("cuDeviceGetName", unsafe {
            sys::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as c_int, device)
        })?;
        // SAFETY: NUL-terminated within the buffer.
        let name = unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let mut ctx = std::ptr::null_mut();
        // SAFETY: the driver writes one handle; released in Drop.
        check("cuDevicePrimaryCtxRetain", unsafe {
            sys::cuDevicePrimaryCtxRetain(&mut ctx, device)
        })?;
        Ok(Arc::new(Context {
            ordinal,
            device,
            ctx,
            name,
            sm_count,
            compute_capability: (major, minor),
            max_shared_memory: u64::from(smem),
        }))
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// The device's name (`NVIDIA H200`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Streaming multiprocessors on the device (a persistent kernel's grid depends on it).
    pub fn sm_count(&self) -> u32 {
        self.sm_count
    }

    /// The compute capability, (major, minor).
    pub fn compute_capability(&self) -> (u32, u32) {
        self.compute_capability
    }

    /// The raw `CUcontext`, for callers that make their own driver calls.
    pub fn raw(&self) -> sys::CUcontext {
        self.ctx
    }

    /// Runs `f` with this context current on the calling thread.
    ///
    /// # Errors
    /// The failing `cuCtxPushCurrent`, or `f`'s error.
    pub fn with<T>(&self, f: impl FnOnce() -> Result<T, RuntimeError>) -> Result<T, RuntimeError> {
        let _current = Current::push(self.ctx)?;
        f()
    }

    /// Whether this device runs `image` compiled for `target` ([`runs_on`]).
    pub fn runs(&self, target: &str, image: &Image<'_>) -> bool {
        runs_on(target, self.compute_capability, image)
    }
}

/// Whether a device of compute capability `cc` (major, minor) runs `image` compiled for
/// `target` (`sm_90a`, `sm_90`, `sm_100a`): an arch-specific (`a`) target only on exactly
/// its capability; PTX for a plain `sm_XY` on any capability at least X.Y (the driver's
/// JIT compiles it); a cubin for a plain `sm_XY` on major X, minor at least Y (the CUDA
/// binary compatibility rule). An unknown target runs nowhere.
pub fn runs_on(target: &str, cc: (u32, u32), image: &Image<'_>) -> bool {
    let Some(rest) = target.strip_prefix("sm_") else {
        return false;
    };
    let arch_specific = rest.ends_with('a');
    let Ok(n) = rest.trim_end_matches('a').parse::<u32>() else {
        return false;
    };
    let want = (n / 10, n % 10);
    if arch_specific {
        return cc == want;
    }
    match image {
        Image::Ptx(_) => cc >= want,
        Image::Cubin(_) => cc.0 == want.0 && cc.1 >= want.1,
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: releases the retain made in `primary`.
        unsafe { sys::cuDevicePrimaryCtxRelease_v2(self.device) };
    }
}

/// A kernel image: PTX text (compiled by the driver's JIT at load) or a cubin
/// (`tile-compile --emit cubin`, loaded as it is).
#[derive(Clone, Copy, Debug)]
pub enum Image<'a> {
    /// PTX assembly.
    Ptx(&'a str),
    /// An ELF cubin for the manifest's target.
    Cubin(&'a [u8]),
}

/// Checks that `bytes` is a whole ELF64 image for CUDA (`EM_CUDA`, 190): its header, its
/// program and section header tables, and every segment and section with contents lie
/// inside it. `cuModuleLoadData` takes no length, so this is what keeps a truncated or
/// malformed cubin from being read past its end.
///
/// # Errors
/// What is wrong, as text.
pub fn check_cubin(bytes: &[u8]) -> Result<(), String> {
    let u16_at = |o: usize| -> Option<u64> {
        Some(u64::from(u16::from_le_bytes(
            bytes.get(o..o + 2)?.try_into().ok()?,
        )))
    };
    let u32_at = |o: usize| -> Option<u64> {
        Some(u64::from(u32::from_le_bytes(
            bytes.get(o..o + 4)?.try_into().ok()?,
        )))
    };
    let u64_at = |o: usize| -> Option<u64> {
        Some(u64::from_le_bytes(bytes.get(o..o + 8)?.try_into().ok()?))
    };
    let len = bytes.len() as u64;
    if len < 64 || !bytes.starts_with(b"\x7fELF") {
        return Err(format!("{len} bytes: no ELF64 header"));
    }
    if bytes[4] != 2 || bytes[5] != 1 {
        return Err("not a 64-bit little-endian ELF image".into());
    }
    let field = |v: Option<u64>| v.ok_or_else(|| "a truncated ELF header".to_string());
    let machine = field(u16_at(18))?;
    if machine != 190 {
        return Err(format!("ELF machine {machine}, not EM_CUDA (190)"));
    }
    let within = |what: &str, off: u64, size: u64| -> Result<(), String> {
        match off.checked_add(size) {
            Some(end) if end <= len => Ok(()),
            _ => Err(format!(
                "{what} at {off} of {size} bytes reaches past the image's {len} bytes"
            )),
        }
    };
    let (phoff, shoff) = (field(u64_at(32))?, field(u64_at(40))?);
    let (phentsize, phnum) = (field(u16_at(54))?, field(u16_at(56))?);
    let (shentsize, shnum) = (field(u16_at(58))?, field(u16_at(60))?);
    if (phnum > 0 && phentsize < 56) || (shnum > 0 && shentsize < 64) {
        return Err("ELF header table entries smaller than ELF64's".into());
    }
    within("the program header table", phoff, phentsize * phnum)?;
    within("the section header table", shoff, shentsize * shnum)?;
    for i in 0..phnum {
        let h = (phoff + i * phentsize) as usize;
        let (off, size) = (field(u64_at(h + 8))?, field(u64_at(h + 32))?);
        within(&format!("segment {i}"), off, size)?;
    }
    for i in 0..shnum {
        let h = (shoff + i * shentsize) as usize;
        const SHT_NOBITS: u64 = 8;
        if field(u32_at(h + 4))? == SHT_NOBITS {
            continue;
        }
        let (off, size) = (field(u64_at(h + 24))?, field(u64_at(h + 32))?);
        within(&format!("section {i}"), off, size)?;
    }
    Ok(())
}

/// A stream handle (`CUstream`, as torch's `Stream.cuda_stream` gives it); `Stream(0)` is
/// the legacy default stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stream(pub u64);

/// A kernel loaded into a device's primary context, with its manifest. Unloaded on drop.
#[derive(Debug)]
pub struct Kernel {
    ctx: Arc<Context>,
    module: sys::CUmodule,
    function: sys::CUfunction,
    manifest: Manifest,
    /// A split-K kernel's finalize kernels (bf16, f16, f32 output), loaded on first use.
    finalize: [OnceLock<Box<Kernel>>; 3],
}

/// The split-K finalize kernels tilec-runtime carries: PTX and manifest that tilec writes
/// for `runtime/kernels/splitk_finalize.tile` (sm_90, so that the driver's JIT runs them
/// on every later GPU), by output dtype.
pub const FINALIZE_KERNELS: [(Dtype, &str, &str); 3] = [
    (
        Dtype::Bf16,
        include_str!("../kernels/splitk_finalize_bf16.ptx"),
        include_str!("../kernels/splitk_finalize_bf16.json"),
    ),
    (
        Dtype::F16,
        include_str!("../kernels/splitk_finalize_f16.ptx"),
        include_str!("../kernels/splitk_finalize_f16.json"),
    ),
    (
        Dtype::F32,
        include_str!("../kernels/splitk_finalize_f32.ptx"),
        include_str!("../kernels/splitk_finalize_f32.json"),
    ),
];

// SAFETY: module and function handles are usable from any thread in their context, which
// every call makes current.
unsafe impl Send for Kernel {}
// SAFETY: as above; launching does not mutate the kernel.
unsafe impl Sync for Kernel {}

impl Kernel {
    /// Loads `image` into `ctx` and finds the manifest's entry point. A kernel with more
    /// than 48 KiB of dynamic shared memory gets
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`; a cluster of more than 8 CTAs gets
    /// `CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`.
    ///
    /// # Errors
    /// [`RuntimeError::Target`] when the device cannot run the manifest's target,
    /// [`RuntimeError::SharedMemory`] when the kernel needs more shared memory than a CTA
    /// gets, [`RuntimeError::Load`] with the JIT's log when the image does not load, or the
    /// failing driver call.
    pub fn load(
        ctx: &Arc<Context>,
        manifest: Manifest,
        image: Image<'_>,
    ) -> Result<Kernel, RuntimeError> {
        let kernel = manifest.kernel.clone();
        if !ctx.runs(&manifest.target, &image) {
            let (major, minor) = ctx.compute_capability;
            return Err(RuntimeError::Target {
                kernel,
                target: manifest.target.clone(),
                ordinal: ctx.ordinal,
                device: ctx.name.clone(),
                major,
                minor,
            });
        }
        let smem = manifest.dynamic_shared_memory_bytes;
        if smem > ctx.max_shared_memory {
            return Err(RuntimeError::SharedMemory {
                kernel,
                needed: smem,
                limit: ctx.max_shared_memory,
                ordinal: ctx.ordinal,
            });
        }
        let owned_ptx;
        let data: *const c_void = match image {
            Image::Ptx(text) => {
                let mut bytes = text.as_bytes().to_vec();
                bytes.retain(|&b| b != 0);
                bytes.push(0);
                owned_ptx = bytes;
                owned_ptx.as_ptr().cast()
            }
            Image::Cubin(bytes) => {
                // The driver takes no length: a truncated or malformed image would be read
                // past its end.
                check_cubin(bytes).map_err(|log| RuntimeError::Load {
                    kernel: kernel.clone(),
                    call: "the cubin's ELF check",
                    name: "a malformed cubin".into(),
                    log,
                })?;
                bytes.as_ptr().cast()
            }
        };
        let _current = Current::push(ctx.ctx)?;
        let mut log = vec![0u8; 16 * 1024];
        let mut options = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        let mut values: [*mut c_void; 2] = [log.as_mut_ptr().cast(), log.len() as *mut c_void];
        let mut module = std::ptr::null_mut();
        // SAFETY: `data` is a NUL-terminated PTX string or a cubin the driver validates;
        // the log buffer outlives the call and its size is given.
        let r = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                data,
                options.len() as c_uint,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            return Err(RuntimeError::Load {
                kernel,
                call: "cuModuleLoadDataEx",
                name: describe(r).0,
                log: String::from_utf8_lossy(&log[..end]).into_owned(),
            });
        }
        let unload = |e: RuntimeError| {
            // SAFETY: the module loaded above and nothing else holds it.
            unsafe { sys::cuModuleUnload(module) };
            e
        };
        let entry = std::ffi::CString::new(kernel.clone()).map_err(|_| {
            unload(RuntimeError::Load {
                kernel: kernel.clone(),
                call: "cuModuleGetFunction",
                name: "an entry name with a NUL byte".into(),
                log: String::new(),
            })
        })?;
        let mut function = std::ptr::null_mut();
        // SAFETY: the module is loaded; the name is NUL-terminated.
        let r = unsafe { sys::cuModuleGetFunction(&mut function, module, entry.as_ptr()) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(unload(RuntimeError::Load {
                kernel: kernel.clone(),
                call: "cuModuleGetFunction",
                name: describe(r).0,
                log: format!("the image has no entry '{kernel}'"),
            }));
        }
        use sys::CUfunction_attribute as F;
        if smem > 48 * 1024 {
            // SAFETY: the function is loaded; the value was checked against the limit.
            let r = unsafe {
                sys::cuFuncSetAttribute(
                    function,
                    F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    smem as c_int,
                )
            };
            check("cuFuncSetAttribute", r).map_err(unload)?;
        }
        if manifest.cluster.iter().product::<u32>() > 8 {
            // SAFETY: as above.
            let r = unsafe {
                sys::cuFuncSetAttribute(
                    function,
                    F::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                    1,
                )
            };
            check("cuFuncSetAttribute", r).map_err(unload)?;
        }
        Ok(Kernel {
            ctx: ctx.clone(),
            module,
            function,
            manifest,
            finalize: Default::default(),
        })
    }

    /// The split-K finalize kernel writing `dtype`, loaded into this kernel's context on
    /// first use.
    /// Returns its index in [`FINALIZE_KERNELS`] too.
    fn finalize_kernel(&self, dtype: Dtype) -> Result<(usize, &Kernel), RuntimeError> {
        let Some(i) = FINALIZE_KERNELS.iter().position(|(d, _, _)| *d == dtype) else {
            return Err(RuntimeError::Bind(BindError::Unsupported(format!(
                "the split-K finalize writes bf16, f16 or f32, not {dtype}"
            ))));
        };
        if let Some(k) = self.finalize[i].get() {
            return Ok((i, k));
        }
        let (_, ptx, json) = FINALIZE_KERNELS[i];
        let manifest = Manifest::from_json(json).map_err(|e| {
            RuntimeError::Bind(BindError::Unsupported(format!(
                "the embedded finalize manifest does not read: {e}"
            )))
        })?;
        let k = Kernel::load(&self.ctx, manifest, Image::Ptx(ptx))?;
        // Another thread may have loaded it meanwhile: keep one.
        Ok((i, self.finalize[i].get_or_init(|| Box::new(k))))
    }

    /// The kernel's manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The context it is loaded in.
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// Binds `args` ([`bind`], with this device's ordinal and SM count) and encodes its
    /// tensor maps: everything a launch does before `cuLaunchKernelEx`. A tensor passed by
    /// pointer becomes its PTX parameters: address, sizes, strides.
    ///
    /// # Errors
    /// [`RuntimeError::Bind`] for arguments that do not bind, or the failing
    /// `cuTensorMapEncodeTiled`.
    pub fn prepare<S: AsRef<str>>(&self, args: &[(S, Arg)]) -> Result<Prepared, RuntimeError> {
        let bound = bind(&self.manifest, args, self.ctx.ordinal, self.ctx.sm_count)?;
        let _current = Current::push(self.ctx.ctx)?;
        let mut slots = Vec::with_capacity(bound.params.len());
        for p in &bound.params {
            match p {
                ParamValue::TensorMap(r) => slots.push(Slot::Map(Box::new(encode(r)?))),
                ParamValue::Bytes { bytes, align, .. } => {
                    // One PTX parameter per `align` bytes, each in its own 8-byte word.
                    for c in bytes.chunks((*align).clamp(1, 8) as usize) {
                        let mut w = [0u8; 8];
                        w[..c.len()].copy_from_slice(c);
                        slots.push(Slot::Word(u64::from_le_bytes(w)));
                    }
                }
            }
        }
        let finalize = match bound.split_k.as_ref().and_then(|w| w.finalize.as_ref()) {
            Some((src, dst)) if !src.shape.contains(&0) => {
                let (i, k) = self.finalize_kernel(dst.dtype)?;
                let (m, n) = match src.shape.as_slice() {
                    [m, n] => (*m, *n),
                    _ => (1, src.shape.first().copied().unwrap_or(1)),
                };
                let int = |v: u64| Arg::Int(i64::try_from(v).unwrap_or(i64::MAX));
                let args = [
                    ("X", Arg::Tensor(src.clone())),
                    ("Y", Arg::Tensor(dst.clone())),
                    ("M", int(m)),
                    ("N", int(n)),
                ];
                Some((i, Box::new(k.prepare(&args)?)))
            }
            _ => None,
        };
        Ok(Prepared {
            bound,
            slots,
            finalize,
        })
    }

    /// Launches the kernel on `stream` with `args` bound by name: [`Kernel::prepare`], then
    /// `cuLaunchKernelEx` with the manifest's block, dynamic shared memory and (when not 1)
    /// cluster dimensions. Asynchronous: nothing waits for the kernel, so the launch can be
    /// captured into a CUDA graph.
    ///
    /// # Errors
    /// As [`Kernel::prepare`], or the failing `cuLaunchKernelEx`.
    ///
    /// # Safety
    /// Every tensor's address must be device memory of this kernel's device, holding its
    /// shape and strides, valid until the kernel has run on `stream`; `stream` must be a
    /// stream of this device's primary context (or 0).
    pub unsafe fn launch<S: AsRef<str>>(
        &self,
        args: &[(S, Arg)],
        stream: Stream,
    ) -> Result<(), RuntimeError> {
        let prepared = self.prepare(args)?;
        // SAFETY: the caller's contract.
        unsafe { self.launch_prepared(&prepared, stream) }
    }

    /// Launches a [`Prepared`] launch (see [`Kernel::launch`]).
    ///
    /// # Errors
    /// The failing `cuLaunchKernelEx`.
    ///
    /// # Safety
    /// As [`Kernel::launch`], for the arguments `prepared` was made from.
    pub unsafe fn launch_prepared(
        &self,
        prepared: &Prepared,
        stream: Stream,
    ) -> Result<(), RuntimeError> {
        if let Some(work) = &prepared.bound.split_k {
            let _current = Current::push(self.ctx.ctx)?;
            for z in work.zero.iter().filter(|z| z.width > 0 && z.height > 0) {
                // SAFETY: the region is the workspace the caller vouches for (rows of
                // `width` words, `pitch_bytes` apart, checked by bind).
                let r = unsafe {
                    sys::cuMemsetD2D32Async(
                        z.ptr as sys::CUdeviceptr,
                        z.pitch_bytes as usize,
                        0,
                        z.width as usize,
                        z.height as usize,
                        stream.0 as sys::CUstream,
                    )
                };
                check("cuMemsetD2D32Async", r)?;
            }
        }
        // SAFETY: the caller's contract.
        unsafe { self.launch_one(prepared, stream)? };
        if let Some((i, fin)) = &prepared.finalize {
            // Loaded by `prepare`, which made `fin`.
            if let Some(k) = self.finalize[*i].get() {
                // SAFETY: the finalize reads the workspace and writes the output the
                // caller vouches for, after the kernel on the same stream.
                unsafe { k.launch_one(fin, stream)? };
            }
        }
        Ok(())
    }

    /// `cuLaunchKernelEx` of this kernel alone.
    ///
    /// # Safety
    /// As [`Kernel::launch_prepared`].
    unsafe fn launch_one(&self, prepared: &Prepared, stream: Stream) -> Result<(), RuntimeError> {
        let c = &prepared.bound.config;
        let mut pointers: Vec<*mut c_void> = prepared
            .slots
            .iter()
            .map(|s| match s {
                Slot::Map(m) => (&**m as *const sys::CUtensorMap).cast_mut().cast(),
                Slot::Word(w) => (w as *const u64).cast_mut().cast(),
            })
            .collect();
        let mut attrs = vec![];
        if c.cluster != [1, 1, 1] {
            // SAFETY: an all-zero attribute is valid plain data; the fields are set below.
            let mut a: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
            a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            a.value.clusterDim.x = c.cluster[0];
            a.value.clusterDim.y = c.cluster[1];
            a.value.clusterDim.z = c.cluster[2];
            attrs.push(a);
        }
        let config = sys::CUlaunchConfig {
            gridDimX: c.grid[0],
            gridDimY: c.grid[1],
            gridDimZ: c.grid[2],
            blockDimX: c.block[0],
            blockDimY: c.block[1],
            blockDimZ: c.block[2],
            sharedMemBytes: c.dynamic_shared_memory_bytes,
            hStream: stream.0 as sys::CUstream,
            attrs: attrs.as_mut_ptr(),
            numAttrs: attrs.len() as c_uint,
        };
        let _current = Current::push(self.ctx.ctx)?;
        // SAFETY: one pointer per parameter, each to storage of the parameter's size that
        // lives through the call (the driver copies parameters at launch); the caller
        // vouches for the memory and the stream.
        let r = unsafe {
            sys::cuLaunchKernelEx(
                &config,
                self.function,
                pointers.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        check("cuLaunchKernelEx", r)
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        if let Ok(_current) = Current::push(self.ctx.ctx) {
            // SAFETY: the module was loaded by `load` and is unloaded once.
            unsafe { sys::cuModuleUnload(self.module) };
        }
    }
}

/// A launch bound and encoded, ready for [`Kernel::launch_prepared`]; reusable as long as
/// its tensors stay where they are.
#[derive(Debug)]
pub struct Prepared {
    bound: Bound,
    slots: Vec<Slot>,
    /// A split-K launch's finalize: its kernel (an index into [`FINALIZE_KERNELS`]),
    /// bound to the workspace and the output.
    finalize: Option<(usize, Box<Prepared>)>,
}

impl Prepared {
    /// The bound launch: configuration and parameter values.
    pub fn bound(&self) -> &Bound {
        &self.bound
    }

    /// Launches `grid` CTAs instead of the manifest's grid. Only a persistent kernel can
    /// take it (its CTAs loop over the tiles, so any number covers them); an ordinary
    /// kernel's grid is its tile grid, and another grid would leave tiles undone or run
    /// CTAs past the tensors.
    ///
    /// # Errors
    /// [`BindError::Grid`] for an ordinary kernel, an empty dimension, a dimension past
    /// the manifest's `grid_limits`, or a grid other than (x, cluster y, 1) (persistent
    /// kernels launch clusters along x).
    pub fn set_grid(&mut self, manifest: &Manifest, grid: [u32; 3]) -> Result<(), BindError> {
        let refuse = |reason: String| BindError::Grid {
            kernel: manifest.kernel.clone(),
            grid,
            reason,
        };
        if manifest.persistent.is_none() {
            return Err(refuse(
                "the kernel is not persistent: its grid is its tile grid, computed from the \
                 arguments"
                    .into(),
            ));
        }
        let cy = manifest.cluster[1].max(1);
        if grid[1] != cy || grid[2] != 1 {
            return Err(refuse(format!(
                "a persistent kernel's grid is (x, {cy}, 1): clusters along x, one cluster's \
                 extent along y"
            )));
        }
        let cluster = manifest.cluster[0].max(1);
        if grid[0] == 0 || grid[0] % cluster != 0 {
            return Err(refuse(format!(
                "x must be a positive multiple of the cluster size {cluster}"
            )));
        }
        if u64::from(grid[0]) > manifest.grid_limits[0] {
            return Err(refuse(format!(
                "x exceeds CUDA's {}",
                manifest.grid_limits[0]
            )));
        }
        self.bound.config.grid = grid;
        Ok(())
    }
}

/// One PTX parameter's storage: an encoded tensor map, or a scalar of at most 8 bytes
/// (little-endian, in an aligned word).
#[derive(Debug)]
enum Slot {
    Map(Box<sys::CUtensorMap>),
    Word(u64),
}

/// The driver's element type for a tensor map of `dtype` (fp8 moves as bytes).
fn map_dtype(dtype: Dtype) -> sys::CUtensorMapDataType {
    use sys::CUtensorMapDataType as T;
    match dtype {
        Dtype::I1 | Dtype::E4m3 | Dtype::E5m2 => T::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        Dtype::I32 => T::CU_TENSOR_MAP_DATA_TYPE_INT32,
        Dtype::I64 | Dtype::Index => T::CU_TENSOR_MAP_DATA_TYPE_INT64,
        Dtype::F16 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        Dtype::Bf16 => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        Dtype::F32 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
    }
}

/// Encodes one tensor map with `cuTensorMapEncodeTiled` (element strides all 1).
fn encode(r: &TensorMapRequest) -> Result<sys::CUtensorMap, RuntimeError> {
    use sys::CUtensorMapL2promotion as L;
    use sys::CUtensorMapSwizzle as S;
    let swizzle = match r.swizzle {
        Swizzle::None => S::CU_TENSOR_MAP_SWIZZLE_NONE,
        Swizzle::B32 => S::CU_TENSOR_MAP_SWIZZLE_32B,
        Swizzle::B64 => S::CU_TENSOR_MAP_SWIZZLE_64B,
        Swizzle::B128 => S::CU_TENSOR_MAP_SWIZZLE_128B,
    };
    let l2 = match r.l2_promotion {
        L2Promotion::None => L::CU_TENSOR_MAP_L2_PROMOTION_NONE,
        L2Promotion::B64 => L::CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
        L2Promotion::B128 => L::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        L2Promotion::B256 => L::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
    };
    let interleave = match r.interleave {
        Interleave::None => sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
    };
    // Both fills read zeros out of bounds; `None` marks a map only stored through.
    let fill = match r.fill {
        Fill::Zero | Fill::None => sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    };
    let rank = r.global_dims.len();
    let element_strides = vec![1u32; rank];
    // SAFETY: plain data, written by the driver.
    let mut map: sys::CUtensorMap = unsafe { std::mem::zeroed() };
    // SAFETY: each array holds `rank` entries (strides `rank - 1`), as `bind` built them.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            map_dtype(r.dtype),
            rank as u32,
            r.global_address as *mut c_void,
            r.global_dims.as_ptr(),
            r.global_strides.as_ptr(),
            r.box_dims.as_ptr(),
            element_strides.as_ptr(),
            interleave,
            swizzle,
            l2,
            fill,
        )
    };
    check("cuTensorMapEncodeTiled", r)?;
    Ok(map)
}
