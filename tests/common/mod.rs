//! Code the root crate's test binaries share.

use std::path::{Path, PathBuf};

/// A CUDA tool (`ptxas`, `nvdisasm`): `$ENV` when set, else the copy the `nvidia-cuda-*`
/// wheels put in `.venv` (scripts/install-deps.sh).
///
/// # Errors
/// Neither exists: the message says to run scripts/install-deps.sh.
#[allow(dead_code)]
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

/// A small deterministic generator (xorshift64), so that the tests' random inputs
/// reproduce. (Each test binary includes this module and uses some of it, hence the
/// `dead_code` allowances.)
#[allow(dead_code)]
pub struct Rng(pub u64);

#[allow(dead_code)]
impl Rng {
    /// The next 64 bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in `0..n` (`n` > 0; the modulo bias is irrelevant here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Uniform in `[-scale, scale)`, on a 2^-23 grid.
    pub fn f32(&mut self, scale: f32) -> f32 {
        ((self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
    }
}
