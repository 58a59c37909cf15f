//! Assembling PTX into a cubin with NVIDIA's `ptxas` (a separate program: PyPI's
//! `nvidia-cuda-nvcc` wheel ships it, and CUDA toolkits do), so that a launch loads machine
//! code instead of paying the driver's JIT. [`Emit::Cubin`](crate::Emit::Cubin) runs it
//! after the PTX.

use std::path::{Path, PathBuf};
use std::process::Command;

use tilec_dialect::Target;

/// Why `ptxas` gave no cubin.
#[derive(Debug, thiserror::Error)]
pub enum PtxasError {
    /// No `ptxas` was found ([`find`] says where it looks).
    #[error(
        "ptxas not found: set PTXAS to its path, install the nvidia-cuda-nvcc wheel (into the \
         repository's .venv, or the Python environment on PATH), or put a CUDA toolkit's bin \
         on PATH"
    )]
    NotFound,
    /// A file could not be written or read, or `ptxas` could not be started.
    #[error("ptxas: {what}: {reason}")]
    Io {
        /// What was being done.
        what: String,
        /// The system's reason.
        reason: String,
    },
    /// `ptxas` refused the PTX; `log` is what it printed.
    #[error("{ptxas} -arch={arch} failed:\n{log}")]
    Failed {
        /// The program run.
        ptxas: String,
        /// The `-arch` value.
        arch: &'static str,
        /// Its standard error and output.
        log: String,
    },
}

/// Where `ptxas` is: `$PTXAS`; then `nvidia/cu13/bin/ptxas` (the `nvidia-cuda-nvcc` wheel's
/// layout) in the site-packages of a `.venv` beside the executable, the working directory or
/// one of their parents, or of the Python environment whose `bin` is on `PATH`; then `ptxas`
/// on `PATH`.
pub fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PTXAS") {
        return Some(PathBuf::from(p));
    }
    let wheel = |prefix: &Path| -> Option<PathBuf> {
        let lib = std::fs::read_dir(prefix.join("lib")).ok()?;
        lib.flatten()
            .map(|py| py.path().join("site-packages/nvidia/cu13/bin/ptxas"))
            .find(|p| p.is_file())
    };
    let exe = std::env::current_exe().ok();
    let cwd = std::env::current_dir().ok();
    let roots = exe.iter().chain(cwd.iter()).flat_map(|p| p.ancestors());
    if let Some(p) = roots.into_iter().find_map(|d| wheel(&d.join(".venv"))) {
        return Some(p);
    }
    let path = std::env::var_os("PATH")?;
    let dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    dirs.iter()
        .filter_map(|d| d.parent().and_then(wheel))
        .chain(dirs.iter().map(|d| d.join("ptxas")).filter(|p| p.is_file()))
        .next()
}

/// Assembles `ptx` for `target` with `ptxas -arch=TARGET` and returns the cubin (an ELF
/// image `cuModuleLoadData` takes). The PTX goes through a file in the system's temporary
/// directory, removed afterwards.
///
/// # Errors
/// [`PtxasError::NotFound`] when [`find`] finds none, [`PtxasError::Io`] when the files or
/// the process fail, [`PtxasError::Failed`] with ptxas's log when it refuses the PTX or
/// writes something other than an ELF image.
pub fn assemble(ptx: &str, target: Target) -> Result<Vec<u8>, PtxasError> {
    let ptxas = find().ok_or(PtxasError::NotFound)?;
    let io = |what: String| {
        move |e: std::io::Error| PtxasError::Io {
            what,
            reason: e.to_string(),
        }
    };
    let dir = tempfile::Builder::new()
        .prefix("tilec-ptxas-")
        .tempdir()
        .map_err(io("creating a temporary directory".into()))?;
    let input = dir.path().join("kernel.ptx");
    let output = dir.path().join("kernel.cubin");
    std::fs::write(&input, ptx).map_err(io(format!("writing {}", input.display())))?;
    let out = Command::new(&ptxas)
        .arg(format!("-arch={}", target.name()))
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .output()
        .map_err(io(format!("running {}", ptxas.display())))?;
    if !out.status.success() {
        let log = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        return Err(PtxasError::Failed {
            ptxas: ptxas.display().to_string(),
            arch: target.name(),
            log: log.trim_end().to_string(),
        });
    }
    let cubin = std::fs::read(&output).map_err(io(format!("reading {}", output.display())))?;
    if !cubin.starts_with(b"\x7fELF") {
        return Err(PtxasError::Failed {
            ptxas: ptxas.display().to_string(),
            arch: target.name(),
            log: format!(
                "it exited successfully but wrote no ELF image ({} bytes)",
                cubin.len()
            ),
        });
    }
    Ok(cubin)
}
