//! Code the root crate's test binaries share.

use std::path::{Path, PathBuf};

/// A CUDA tool (`ptxas`, `nvdisasm`): `$ENV` when set, else the copy the `nvidia-cuda-*`
/// wheels put in `.venv` (scripts/install-deps.sh).
///
/// # Errors
/// Neither exists: the message says to run scripts/install-deps.sh.
pub fn nv_tool(name: &str, env: &str) -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(env).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/lib");
    for py in std::fs::read_dir(&lib).into_iter().flatten().flatten() {
        let p = py.path().join("site-packages/nvidia/cu13/bin").join(name);
        if p.exists() {
            return Ok(p);
        }
    }
    Err(format!(
        "{name} not found under {}: run scripts/install-deps.sh",
        lib.display()
    ))
}
