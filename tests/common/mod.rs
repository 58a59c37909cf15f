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

/// A GEMM kernel with a BM×BN×BK tile, A stored M×K (`a_t`: K×M) and B stored K×N (`b_t`:
/// N×K), transposed in the K loop where stored so.
#[allow(dead_code)]
pub fn gemm_source(bm: u64, bn: u64, bk: u64, a_t: bool, b_t: bool) -> String {
    let a = if a_t {
        format!(
            "    %at = tile.load %A, %k, %row : tile<{bk}x{bm}xbf16>\n    %a = tile.transpose \
             %at : tile<{bm}x{bk}xbf16>\n"
        )
    } else {
        format!("    %a = tile.load %A, %row, %k : tile<{bm}x{bk}xbf16>\n")
    };
    let b = if b_t {
        format!(
            "    %bt = tile.load %B, %col, %k : tile<{bn}x{bk}xbf16>\n    %b = tile.transpose \
             %bt : tile<{bk}x{bn}xbf16>\n"
        )
    } else {
        format!("    %b = tile.load %B, %k, %col : tile<{bk}x{bn}xbf16>\n")
    };
    format!(
        "tile.kernel @g(%A: tensor<?x?xbf16>, %B: tensor<?x?xbf16>, %C: tensor<?x?xbf16>, %M: \
         index, %N: index, %K: index) {{grid = [ceildiv(%N, {bn}), ceildiv(%M, {bm})]}} {{\n\
         \x20 %pid_n = tile.program_id {{dim = 0}} : index\n\
         \x20 %pid_m = tile.program_id {{dim = 1}} : index\n\
         \x20 %c0 = tile.constant {{value = 0}} : index\n\
         \x20 %cbk = tile.constant {{value = {bk}}} : index\n\
         \x20 %cbm = tile.constant {{value = {bm}}} : index\n\
         \x20 %cbn = tile.constant {{value = {bn}}} : index\n\
         \x20 %row = tile.muli %pid_m, %cbm : index\n\
         \x20 %col = tile.muli %pid_n, %cbn : index\n\
         \x20 %zero = tile.zeros : tile<{bm}x{bn}xf32>\n\
         \x20 %acc = tile.for %c0, %K, %cbk, %zero : tile<{bm}x{bn}xf32> {{\n\
         \x20 ^bb0(%k: index, %c: tile<{bm}x{bn}xf32>):\n{a}{b}\
         \x20   %d = tile.dot %a, %b, %c : tile<{bm}x{bn}xf32>\n\
         \x20   tile.yield %d\n\
         \x20 }}\n\
         \x20 %out = tile.convert %acc : tile<{bm}x{bn}xbf16>\n\
         \x20 tile.store %C, %row, %col, %out\n\
         \x20 tile.return\n\
         }}\n"
    )
}
