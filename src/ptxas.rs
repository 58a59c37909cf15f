//! Assembling PTX into a cubin with NVIDIA's `ptxas` (a separate program: PyPI's
//! `nvidia-cuda-nvcc` wheel ships it, and CUDA toolkits do), so that a launch loads machine
//! code instead of paying the driver's JIT. [`Emit::Cubin`](crate::Emit::Cubin) runs it
//! after the PTX.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    /// `ptxas` ran longer than the time allowed, and was killed.
    #[error("{ptxas} -arch={arch} did not finish in {timeout:?} and was stopped")]
    Timeout {
        /// The program run.
        ptxas: String,
        /// The `-arch` value.
        arch: &'static str,
        /// The time allowed.
        timeout: Duration,
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

/// Where `ptxas` is: `$PTXAS` (an empty value counts as unset); then `nvidia/cu13/bin/ptxas`
/// (the `nvidia-cuda-nvcc` wheel's layout) in the site-packages of a `.venv` beside the
/// executable, the working directory or one of their parents, or of the Python environment
/// whose `bin` is on `PATH`; then `ptxas` on `PATH`.
pub fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PTXAS").filter(|p| !p.is_empty()) {
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

/// How long [`assemble`] lets `ptxas` run: far longer than any kernel tilec writes takes
/// (under a second), short enough that a stuck assembler does not hang a compile.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// Assembles `ptx` for `target` with the `ptxas` [`find`] finds, allowing it
/// [`DEFAULT_TIMEOUT`]; see [`assemble_with`].
///
/// # Errors
/// [`PtxasError::NotFound`] when [`find`] finds none; otherwise as [`assemble_with`].
pub fn assemble(ptx: &str, target: Target) -> Result<Vec<u8>, PtxasError> {
    let ptxas = find().ok_or(PtxasError::NotFound)?;
    assemble_with(&ptxas, ptx, target, DEFAULT_TIMEOUT)
}

/// Assembles `ptx` for `target` with `ptxas -arch=TARGET` and returns the cubin (an ELF
/// image `cuModuleLoadData` takes). The PTX, the cubin and ptxas's output go through files
/// in the system's temporary directory, removed afterwards. A `ptxas` still running after
/// `timeout` is killed.
///
/// # Errors
/// [`PtxasError::Io`] when the files or the process fail, [`PtxasError::Timeout`] when it
/// runs past `timeout`, [`PtxasError::Failed`] with ptxas's log when it refuses the PTX or
/// writes something other than an ELF image.
pub fn assemble_with(
    ptxas: &Path,
    ptx: &str,
    target: Target,
    timeout: Duration,
) -> Result<Vec<u8>, PtxasError> {
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
    let log_path = dir.path().join("ptxas.log");
    std::fs::write(&input, ptx).map_err(io(format!("writing {}", input.display())))?;
    let log_file =
        std::fs::File::create(&log_path).map_err(io(format!("creating {}", log_path.display())))?;
    let log_err = log_file
        .try_clone()
        .map_err(io(format!("opening {}", log_path.display())))?;
    let mut child = Command::new(ptxas)
        .arg(format!("-arch={}", target.name()))
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err)
        .spawn()
        .map_err(io(format!("running {}", ptxas.display())))?;
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .map_err(io(format!("waiting for {}", ptxas.display())))?
        {
            break status;
        }
        if started.elapsed() >= timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Err(PtxasError::Timeout {
                ptxas: ptxas.display().to_string(),
                arch: target.name(),
                timeout,
            });
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    };
    let log = std::fs::read(&log_path).unwrap_or_default();
    let log = String::from_utf8_lossy(&log);
    if !status.success() {
        // The exit status (or the signal) too: a ptxas that dies prints nothing.
        let log = log.trim_end();
        let sep = if log.is_empty() { "" } else { "\n" };
        return Err(PtxasError::Failed {
            ptxas: ptxas.display().to_string(),
            arch: target.name(),
            log: format!("{log}{sep}({status})"),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An executable shell script standing in for ptxas.
    fn fake(dir: &Path, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join("ptxas");
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn a_stuck_ptxas_is_stopped_at_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let p = fake(dir.path(), "sleep 30");
        let started = Instant::now();
        let e = assemble_with(&p, "", Target::Sm90a, Duration::from_millis(300)).unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert!(
            matches!(e, PtxasError::Timeout { arch: "sm_90a", .. }),
            "{e:?}"
        );
        assert!(e
            .to_string()
            .ends_with("-arch=sm_90a did not finish in 300ms and was stopped"));
    }

    #[test]
    fn the_log_of_a_failing_ptxas_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let p = fake(
            dir.path(),
            "echo 'ptxas fatal: bad PTX' >&2; echo more; exit 255",
        );
        let e = assemble_with(&p, "", Target::Sm90, DEFAULT_TIMEOUT).unwrap_err();
        let PtxasError::Failed { log, arch, .. } = e else {
            panic!("{e:?}")
        };
        assert_eq!(
            (log.as_str(), arch),
            ("ptxas fatal: bad PTX\nmore\n(exit status: 255)", "sm_90")
        );
        // One that dies silently says how it ended.
        let p = fake(dir.path(), "kill -SEGV $$");
        let e = assemble_with(&p, "", Target::Sm90, DEFAULT_TIMEOUT).unwrap_err();
        assert!(
            e.to_string().contains("failed:\n(signal: 11 (SIGSEGV)"),
            "{e}"
        );
        // Success without an ELF image is no cubin either.
        let p = fake(dir.path(), "echo hello > \"$4\"");
        let e = assemble_with(&p, "", Target::Sm90, DEFAULT_TIMEOUT).unwrap_err();
        assert!(
            e.to_string().contains("wrote no ELF image (6 bytes)"),
            "{e}"
        );
    }
}
