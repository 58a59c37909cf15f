//! GPU targets tilec compiles for, and what each has. Sources: PTX ISA 8.x/9.x, §9.7.15
//! (wgmma: sm_90a only), §9.7.9.25 (cp.async.bulk.tensor: sm_90+), §9.7.13.x
//! (clusterlaunchcontrol.try_cancel: sm_100+, PTX ISA 8.6; `.multicast::cluster::all`
//! needs an `a` target), and the CUDA programming guide's per-architecture limits.

use std::fmt;

/// A compilation target (`ptxas -arch` value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// Hopper, portable subset (no wgmma, no setmaxnreg).
    Sm90,
    /// Hopper with architecture-specific features: wgmma, setmaxnreg.
    Sm90a,
    /// Blackwell, portable subset: try_cancel (no multicast).
    Sm100,
    /// Blackwell with architecture-specific features (try_cancel multicast).
    Sm100a,
}

/// The most CTAs a launch may have along x, y and z (CUDA's limits on compute capability 9.0
/// and 10.0: `maxGridSize`).
pub const MAX_GRID: [u64; 3] = [2_147_483_647, 65_535, 65_535];

/// The most bytes of kernel parameters a PTX entry may take at PTX ISA version
/// `(major, minor)`: 4,352 below 8.1, 32,764 from 8.1 (PTX ISA, "Kernel parameter
/// attributes"; ptxas: "too much parameter space").
pub fn max_param_bytes(ptx_version: (u32, u32)) -> u64 {
    if ptx_version >= (8, 1) {
        32_764
    } else {
        4_352
    }
}

impl Target {
    /// Every target.
    pub const ALL: [Target; 4] = [Target::Sm90, Target::Sm90a, Target::Sm100, Target::Sm100a];

    /// Parse `sm_90a` etc.
    pub fn from_name(s: &str) -> Option<Target> {
        Self::ALL.into_iter().find(|t| t.name() == s)
    }
    /// The spelling (`sm_90a`).
    pub fn name(self) -> &'static str {
        match self {
            Target::Sm90 => "sm_90",
            Target::Sm90a => "sm_90a",
            Target::Sm100 => "sm_100",
            Target::Sm100a => "sm_100a",
        }
    }
    /// The comma-separated list of target names (for messages).
    pub fn names() -> String {
        Self::ALL.map(Target::name).join(", ")
    }
    /// Whether `wgmma.mma_async` exists (sm_90a only).
    pub fn has_wgmma(self) -> bool {
        self == Target::Sm90a
    }
    /// Whether `setmaxnreg` exists (sm_90a; sm_100a too, but tilec uses it only with wgmma).
    pub fn has_setmaxnreg(self) -> bool {
        matches!(self, Target::Sm90a | Target::Sm100a)
    }
    /// Whether `clusterlaunchcontrol.try_cancel` exists.
    pub fn has_try_cancel(self) -> bool {
        matches!(self, Target::Sm100 | Target::Sm100a)
    }
    /// Whether packed two-lane f32 arithmetic exists (`add`/`sub`/`mul`/`fma` `.f32x2`,
    /// sm_100 and later; PTX ISA 8.6): the only vector arithmetic LLVM's SLP vectorizer
    /// can form on NVPTX for the lowering's f32 code.
    pub fn has_f32x2(self) -> bool {
        matches!(self, Target::Sm100 | Target::Sm100a)
    }
    /// Whether the `.multicast::cluster::all` form of try_cancel exists.
    pub fn has_try_cancel_multicast(self) -> bool {
        self == Target::Sm100a
    }
    /// The PTX ISA version that introduced the target, as (major, minor): sm_90 7.8,
    /// sm_90a 8.0, sm_100 and sm_100a 8.6 (PTX ISA, "Release notes").
    pub fn isa_min_ptx_version(self) -> (u32, u32) {
        match self {
            Target::Sm90 => (7, 8),
            Target::Sm90a => (8, 0),
            Target::Sm100 | Target::Sm100a => (8, 6),
        }
    }
    /// The lowest PTX ISA version tilec emits for the target, as (major, minor): the
    /// target's own ([`Target::isa_min_ptx_version`]), and at least 8.0, which the TMA and
    /// mbarrier `expect_tx` forms every kernel uses need (`cp.async.bulk.tensor`, PTX ISA
    /// 8.0). Kernels that need more raise it (8.1 for `red.global.add.v2.f32` and large
    /// parameter spaces).
    pub fn min_ptx_version(self) -> (u32, u32) {
        self.isa_min_ptx_version().max((8, 0))
    }
    /// The most dynamic shared memory one CTA may use, in bytes (227 KiB on both).
    pub fn max_smem_per_block(self) -> u64 {
        232_448
    }
    /// The most registers per thread a CTA of `threads` threads can have resident with every
    /// thread at the same count: the 65,536-register file over the warps, which the
    /// hardware allocates in groups of 4, at most 255, rounded down to the allocation unit
    /// of 8 (CUDA occupancy rules for compute capability 9.0 and 10.0). The plain launch
    /// passes it as `.maxnreg`, so ptxas uses what the code needs instead of spilling to
    /// reach an occupancy target of its own.
    pub fn register_cap(self, threads: u64) -> u64 {
        let warps = threads.div_ceil(32).max(1);
        let alloc = warps.div_ceil(4) * 4;
        (65_536 / (alloc * 32)).min(255) / 8 * 8
    }
    /// The MMA instruction family tilec uses on this target.
    pub fn mma_kind(self) -> &'static str {
        if self.has_wgmma() {
            "wgmma"
        } else {
            "mma_sync"
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
