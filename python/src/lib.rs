//! `tilec._tilec`: the Python package's extension module. The package (`python/tilec/`)
//! wraps it; users call `tilec.compile` and the `Kernel` it returns.
//!
//! - `compile(source, file, options, cubin, cache)` compiles in process with the GIL
//!   released and a disk cache (`tilec_runtime::Cache`), returning the kernel's name, PTX,
//!   cubin and manifest; diagnostics become `CompileError` with `file:line:col` text and a
//!   `diagnostics` list. Absent from the runtime-only build (`--no-default-features`).
//! - `Launcher(manifest, ptx, cubin, device)` loads a kernel into the device's primary
//!   context (PyTorch's) and `launch(args, stream, grid)` launches it through
//!   `tilec_runtime::Kernel` on the caller's stream.
//!
//! Dependencies: `tilec` (the compiler; optional), `tilec-runtime` and `tilec-manifest`
//! (the launch), `serde_json` (the manifest as text), `pyo3` (the CPython bindings).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyTuple};
use tilec_manifest::{Dtype, Manifest};
use tilec_runtime::{Arg, Context, Device, Image, Kernel, RuntimeError, Stream, TensorArg};

create_exception!(
    _tilec,
    CompileError,
    PyException,
    "A kernel did not compile: its
diagnostics, rendered with file:line:col and the source line, are the message; the
`diagnostics` attribute lists (file, line, col, severity, message) tuples."
);
create_exception!(
    _tilec,
    LaunchError,
    PyRuntimeError,
    "A kernel did not load or launch."
);
create_exception!(
    _tilec,
    ArgumentError,
    LaunchError,
    "Arguments that do not bind to a
kernel's parameters: missing, unknown or repeated names, wrong dtype, rank or device, a
layout TMA cannot read, a scalar out of range."
);
create_exception!(
    _tilec,
    NoDriverError,
    LaunchError,
    "No CUDA driver (no GPU): raised at
launch, never at import."
);

create_exception!(
    _tilec,
    BuildError,
    CompileError,
    "A Builder refused an op: its
diagnostic (located at the op, `SCOPE:ID:0`) is the message and the `diagnostics` attribute."
);

#[cfg(feature = "compiler")]
mod builder;
mod dlpack;

#[cfg(feature = "compiler")]
mod compiler {
    use super::*;
    use tilec::{compile as tilec_compile, Emit, Error, Input, Options};
    use tilec_runtime::{Cache, CacheKey, Entry, Lookup};

    /// What a compile gives Python.
    struct Compiled {
        name: String,
        ptx: String,
        cubin: Vec<u8>,
        manifest: String,
        cache: &'static str,
    }

    enum Failure {
        Diagnostics {
            text: String,
            list: Vec<(String, u32, u32, String, String)>,
        },
        Options(String),
        Other(String),
    }

    /// What to compile: text, or a module a `Builder` made.
    enum Src {
        Text { source: String, file: String },
        Module(tilec::dialect::Module),
    }

    fn run(src: &Src, options: &[(String, String)], cubin: bool) -> Result<Entry, Failure> {
        let mut opts = Options::new(tilec::dialect::Target::Sm90a);
        for (k, v) in options {
            opts.set(k, v)
                .map_err(|e| Failure::Options(e.to_string()))?;
        }
        opts = opts.with_emit(if cubin { Emit::Cubin } else { Emit::Ptx });
        opts.validate()
            .map_err(|e| Failure::Options(e.to_string()))?;
        let (input, source, file) = match src {
            Src::Text { source, file } => (
                Input::Text { source, file },
                Some(source.as_str()),
                file.as_str(),
            ),
            Src::Module(m) => (Input::Module(m), None, "<builder>"),
        };
        match tilec_compile(input, &opts) {
            Ok(k) => {
                let mut manifest = k.manifest;
                if cubin {
                    manifest.cubin_file = Some(format!("{}.cubin", manifest.kernel));
                }
                Ok(Entry {
                    ptx: k.ptx,
                    manifest: manifest.to_json(),
                    cubin: k.cubin,
                })
            }
            Err(Error::Diagnostics(d)) => Err(Failure::Diagnostics {
                text: d.render(source),
                list: d
                    .0
                    .iter()
                    .map(|x| {
                        (
                            x.loc.file.to_string(),
                            x.loc.line,
                            x.loc.col,
                            x.severity.to_string(),
                            x.message.clone(),
                        )
                    })
                    .collect(),
            }),
            Err(Error::Options(e)) => Err(Failure::Options(e.to_string())),
            Err(e) => Err(Failure::Other(format!("{file}: error: {e}"))),
        }
    }

    /// Which ptxas `--emit cubin` runs: its path, size and modification time (a cubin from
    /// another ptxas is another cache entry).
    fn ptxas_identity() -> String {
        let Some(p) = tilec::ptxas::find() else {
            return "none".into();
        };
        let meta = std::fs::metadata(&p).ok();
        let size = meta.as_ref().map_or(0, |m| m.len());
        let mtime = meta
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        format!("{}:{size}:{mtime}", p.display())
    }

    /// Compiles `source` (named `file` in diagnostics) with `options` (name, value) as
    /// `tilec::Options::set` reads them (`target` among them); with `cubin`, ptxas
    /// assembles the PTX too. With `cache` (a key suffix, e.g. the build's identity) the
    /// result is looked up in and stored to the disk cache. Releases the GIL.
    #[pyfunction]
    #[pyo3(signature = (source, file, options, cubin, cache))]
    pub fn compile<'py>(
        py: Python<'py>,
        source: String,
        file: String,
        options: Vec<(String, String)>,
        cubin: bool,
        cache: Option<String>,
    ) -> PyResult<Bound<'py, PyDict>> {
        compile_src(py, Src::Text { source, file }, options, cubin, cache)
    }

    /// Compiles the module `builder` has built, as [`compile`] does text; its
    /// diagnostics point at the builder's op locations (`SCOPE:ID:0`). Releases the GIL.
    #[pyfunction]
    #[pyo3(signature = (builder, options, cubin, cache))]
    pub fn compile_module<'py>(
        py: Python<'py>,
        builder: &Bound<'py, super::builder::PyBuilder>,
        options: Vec<(String, String)>,
        cubin: bool,
        cache: Option<String>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let m = builder.get().snapshot()?;
        compile_src(py, Src::Module(m), options, cubin, cache)
    }

    fn compile_src<'py>(
        py: Python<'py>,
        src: Src,
        options: Vec<(String, String)>,
        cubin: bool,
        cache: Option<String>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let result = py.detach(|| -> Result<Compiled, Failure> {
            let dir = cache.as_ref().and_then(|_| Cache::from_env());
            let (entry, lookup) = match (&cache, dir) {
                (Some(salt), Some(dir)) => {
                    let printed;
                    let (kind, text, file): (&[u8], &str, &str) = match &src {
                        Src::Text { source, file } => (b"text", source, file),
                        Src::Module(m) => {
                            printed = tilec::dialect::print_module(m);
                            (b"module", &printed, "")
                        }
                    };
                    let mut parts: Vec<&[u8]> = vec![
                        env!("CARGO_PKG_VERSION").as_bytes(),
                        salt.as_bytes(),
                        kind,
                        text.as_bytes(),
                        file.as_bytes(),
                        if cubin { b"cubin" } else { b"ptx" },
                    ];
                    for (k, v) in &options {
                        parts.push(k.as_bytes());
                        parts.push(v.as_bytes());
                    }
                    let ptxas = if cubin {
                        ptxas_identity()
                    } else {
                        String::new()
                    };
                    parts.push(ptxas.as_bytes());
                    let key = CacheKey::new(parts);
                    let (mut e, mut l) = dir.get_or_compile(&key, || run(&src, &options, cubin))?;
                    if Manifest::from_json(&e.manifest).is_err() {
                        // A checksummed entry this build cannot read: compile again.
                        e = run(&src, &options, cubin)?;
                        let _ = dir.put(&key, &e);
                        l = Lookup::Corrupt;
                    }
                    let l = match l {
                        Lookup::Hit => "hit",
                        Lookup::Miss => "miss",
                        Lookup::Corrupt => "corrupt",
                    };
                    (e, l)
                }
                _ => (run(&src, &options, cubin)?, "off"),
            };
            let manifest = Manifest::from_json(&entry.manifest)
                .map_err(|e| Failure::Other(format!("the cached manifest: {e}")))?;
            Ok(Compiled {
                name: manifest.kernel,
                ptx: entry.ptx,
                cubin: entry.cubin,
                manifest: entry.manifest,
                cache: lookup,
            })
        });
        let c = match result {
            Ok(c) => c,
            Err(Failure::Diagnostics { text, list }) => {
                let err = CompileError::new_err(text.trim_end().to_string());
                err.value(py).setattr("diagnostics", list)?;
                return Err(err);
            }
            Err(Failure::Options(m)) => return Err(PyValueError::new_err(m)),
            Err(Failure::Other(m)) => return Err(CompileError::new_err(m)),
        };
        let d = PyDict::new(py);
        d.set_item("name", c.name)?;
        d.set_item("ptx", c.ptx)?;
        let cubin = (!c.cubin.is_empty()).then(|| PyBytes::new(py, &c.cubin));
        d.set_item("cubin", cubin)?;
        d.set_item("manifest", c.manifest)?;
        d.set_item("cache", c.cache)?;
        Ok(d)
    }

    /// The directory the cache uses (`$TILEC_CACHE_DIR`, else `$XDG_CACHE_HOME/tilec`, else
    /// `~/.cache/tilec`), or None.
    #[pyfunction]
    pub fn cache_dir() -> Option<String> {
        Cache::from_env().map(|c| c.dir().display().to_string())
    }
}

fn launch_error(e: RuntimeError) -> PyErr {
    match e {
        RuntimeError::NoDriver(_) => NoDriverError::new_err(e.to_string()),
        RuntimeError::Bind(_) => ArgumentError::new_err(e.to_string()),
        _ => LaunchError::new_err(e.to_string()),
    }
}

/// Each device's primary context, retained once per process.
fn context(device: u32) -> Result<Arc<Context>, RuntimeError> {
    static CONTEXTS: Mutex<Option<HashMap<u32, Arc<Context>>>> = Mutex::new(None);
    let mut map = CONTEXTS.lock().unwrap_or_else(|p| p.into_inner());
    let map = map.get_or_insert_with(HashMap::new);
    if let Some(c) = map.get(&device) {
        return Ok(c.clone());
    }
    let c = Context::primary(device)?;
    map.insert(device, c.clone());
    Ok(c)
}

/// A kernel loaded on one device.
#[pyclass(frozen, module = "tilec._tilec")]
struct Launcher {
    kernel: Kernel,
}

/// One argument as Python gives it: an int, a float, a bool, or a tensor tuple
/// `(ptr, dtype, shape, strides, device)` (`device` -1 for host memory).
fn argument<'py>(name: &str, v: &Bound<'py, PyAny>) -> PyResult<Arg> {
    if v.is_instance_of::<PyBool>() {
        return Ok(Arg::Int(i64::from(v.extract::<bool>()?)));
    }
    if v.is_instance_of::<PyInt>() {
        let x: i64 = v.extract().map_err(|_| {
            ArgumentError::new_err(format!("'{name}': {v} does not fit a 64-bit integer"))
        })?;
        return Ok(Arg::Int(x));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(Arg::Float(v.extract()?));
    }
    let t = v.cast::<PyTuple>().map_err(|_| {
        ArgumentError::new_err(format!(
            "'{name}': cannot pass {} to a kernel",
            v.get_type()
        ))
    })?;
    let bad = |what: &str| ArgumentError::new_err(format!("'{name}': {what}"));
    if t.len() != 5 {
        return Err(bad("a tensor is (pointer, dtype, shape, strides, device)"));
    }
    let int = |v: Bound<'py, PyAny>, what: &str| -> PyResult<i128> {
        if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
            return Err(bad(&format!(
                "{what} must be an int, found {}",
                v.get_type()
            )));
        }
        v.extract::<i128>()
            .map_err(|_| bad(&format!("{what} {v} is out of range")))
    };
    let in_range = |v: i128, lo: i128, hi: i128, what: &str| -> PyResult<i128> {
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(bad(&format!("{what} {v} is out of range [{lo}, {hi}]")))
        }
    };
    let list = |v: Bound<'py, PyAny>, what: &str| -> PyResult<Vec<Bound<'py, PyAny>>> {
        let v = v
            .cast_into::<PyList>()
            .map_err(|_| bad(&format!("the {what} must be a list")))?;
        Ok(v.iter().collect())
    };
    let ptr = in_range(
        int(t.get_item(0)?, "the pointer")?,
        0,
        u64::MAX.into(),
        "the pointer",
    )?;
    let dtype: String = t
        .get_item(1)?
        .extract()
        .map_err(|_| bad("the dtype must be a str"))?;
    let dtype = dtype
        .parse::<Dtype>()
        .map_err(|_| bad(&format!("no tilec dtype '{dtype}'")))?;
    let mut shape = vec![];
    for d in list(t.get_item(2)?, "shape")? {
        shape.push(in_range(int(d, "a size")?, 0, i64::MAX.into(), "a size")? as u64);
    }
    let mut strides = vec![];
    for d in list(t.get_item(3)?, "strides")? {
        let s = in_range(
            int(d, "a stride")?,
            i64::MIN.into(),
            i64::MAX.into(),
            "a stride",
        )?;
        strides.push(s as i64);
    }
    let device = match in_range(
        int(t.get_item(4)?, "the device")?,
        -1,
        i32::MAX.into(),
        "the device",
    )? {
        -1 => Device::Host,
        d => Device::Cuda(d as u32),
    };
    Ok(Arg::Tensor(TensorArg {
        ptr: ptr as u64,
        dtype,
        shape,
        strides,
        device,
    }))
}

#[pymethods]
impl Launcher {
    /// Loads the kernel of `manifest` (JSON text) from `cubin` when given, else from
    /// `ptx`, into device `device`'s primary context.
    #[new]
    #[pyo3(signature = (manifest, ptx, cubin=None, device=0))]
    fn new(
        py: Python<'_>,
        manifest: &str,
        ptx: String,
        cubin: Option<Vec<u8>>,
        device: i64,
    ) -> PyResult<Launcher> {
        let device = ordinal(device)?;
        let m = Manifest::from_json(manifest).map_err(|e| PyValueError::new_err(e.to_string()))?;
        py.detach(|| {
            let ctx = context(device)?;
            let image = match &cubin {
                Some(b) => Image::Cubin(b),
                None => Image::Ptx(&ptx),
            };
            Kernel::load(&ctx, m, image)
        })
        .map(|kernel| Launcher { kernel })
        .map_err(launch_error)
    }

    /// Launches with `args`, a list of (name, value), on `stream` (a `CUstream` as an
    /// int; 0 is the legacy default stream). `grid` replaces a persistent kernel's CTA
    /// count. Returns the grid launched.
    #[pyo3(signature = (args, stream=0, grid=None))]
    fn launch(
        &self,
        args: &Bound<'_, PyList>,
        stream: u64,
        grid: Option<(i64, i64, i64)>,
    ) -> PyResult<(u32, u32, u32)> {
        let bound = arguments(args)?;
        let mut prepared = self.kernel.prepare(&bound).map_err(launch_error)?;
        if let Some((x, y, z)) = grid {
            let dim = |v: i64| {
                u32::try_from(v).map_err(|_| {
                    ArgumentError::new_err(format!("grid ({x}, {y}, {z}) is out of range"))
                })
            };
            prepared
                .set_grid(self.kernel.manifest(), [dim(x)?, dim(y)?, dim(z)?])
                .map_err(|e| launch_error(e.into()))?;
        }
        let g = prepared.bound().config.grid;
        // SAFETY: the Python layer passes the addresses of live tensors on this device and
        // a stream of its primary context; it keeps the tensors alive across the call, and
        // the caching allocator keeps their memory until the stream's work is done.
        unsafe { self.kernel.launch_prepared(&prepared, Stream(stream)) }.map_err(launch_error)?;
        Ok((g[0], g[1], g[2]))
    }

    /// The device's SM count.
    #[getter]
    fn sm_count(&self) -> u32 {
        self.kernel.context().sm_count()
    }

    /// The device's name.
    #[getter]
    fn device_name(&self) -> String {
        self.kernel.context().name().to_string()
    }

    /// The device's compute capability.
    #[getter]
    fn compute_capability(&self) -> (u32, u32) {
        self.kernel.context().compute_capability()
    }
}

/// The (name, value) list of Python arguments as the runtime's arguments.
fn arguments(args: &Bound<'_, PyList>) -> PyResult<Vec<(String, Arg)>> {
    let mut out = Vec::with_capacity(args.len());
    for item in args.iter() {
        let (name, value): (String, Bound<'_, PyAny>) = item.extract()?;
        let a = argument(&name, &value)?;
        out.push((name, a));
    }
    Ok(out)
}

/// Binds `args` to the kernel of `manifest` (JSON) for device `device` with `sm_count`
/// SMs, on the host only (no driver): every check a launch makes before the driver, and
/// the launch configuration, as a dict (grid, block, cluster, dynamic_shared_memory_bytes).
#[pyfunction]
#[pyo3(signature = (manifest, args, device=0, sm_count=132))]
fn bind<'py>(
    py: Python<'py>,
    manifest: &str,
    args: &Bound<'py, PyList>,
    device: i64,
    sm_count: i64,
) -> PyResult<Bound<'py, PyDict>> {
    let device = ordinal(device)?;
    let sm_count = u32::try_from(sm_count)
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| PyValueError::new_err(format!("sm_count {sm_count} is not positive")))?;
    let m = Manifest::from_json(manifest).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let bound = arguments(args)?;
    let b = tilec_runtime::bind(&m, &bound, device, sm_count)
        .map_err(|e| ArgumentError::new_err(e.to_string()))?;
    let d = PyDict::new(py);
    let c = b.config;
    d.set_item("grid", (c.grid[0], c.grid[1], c.grid[2]))?;
    d.set_item("block", (c.block[0], c.block[1], c.block[2]))?;
    d.set_item("cluster", (c.cluster[0], c.cluster[1], c.cluster[2]))?;
    d.set_item("dynamic_shared_memory_bytes", c.dynamic_shared_memory_bytes)?;
    Ok(d)
}

/// A device ordinal from Python, or ValueError.
fn ordinal(device: i64) -> PyResult<u32> {
    u32::try_from(device)
        .ok()
        .filter(|&d| d <= i32::MAX as u32)
        .ok_or_else(|| PyValueError::new_err(format!("device {device} is not a CUDA ordinal")))
}

/// Reads `manifest` (JSON) as the runtime does; ValueError with the reason if it does not.
#[pyfunction]
fn check_manifest(manifest: &str) -> PyResult<()> {
    Manifest::from_json(manifest)
        .map(|_| ())
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The number of CUDA devices (raises NoDriverError without a driver).
#[pyfunction]
fn device_count() -> PyResult<u32> {
    tilec_runtime::device_count().map_err(launch_error)
}

#[pymodule]
fn _tilec(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("HAS_COMPILER", cfg!(feature = "compiler"))?;
    m.add("CompileError", py.get_type::<CompileError>())?;
    m.add("LaunchError", py.get_type::<LaunchError>())?;
    m.add("ArgumentError", py.get_type::<ArgumentError>())?;
    m.add("NoDriverError", py.get_type::<NoDriverError>())?;
    m.add_class::<Launcher>()?;
    m.add_function(wrap_pyfunction!(device_count, m)?)?;
    m.add_function(wrap_pyfunction!(bind, m)?)?;
    m.add_function(wrap_pyfunction!(check_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack::dlpack_tensor, m)?)?;
    #[cfg(feature = "compiler")]
    {
        m.add_function(wrap_pyfunction!(compiler::compile, m)?)?;
        m.add_function(wrap_pyfunction!(compiler::cache_dir, m)?)?;
        m.add_function(wrap_pyfunction!(compiler::compile_module, m)?)?;
        m.add("BuildError", py.get_type::<BuildError>())?;
        m.add_class::<builder::PyBuilder>()?;
        m.add_class::<builder::PyValue>()?;
        m.add_class::<builder::GridExpr>()?;
        m.add_function(wrap_pyfunction!(builder::tile_ops, m)?)?;
    }
    Ok(())
}
