//! GPU targets tilec compiles for, and what each has. Sources: PTX ISA 8.x/9.x, §9.7.15
//! (wgmma: sm_90a only), §9.7.9.25 (cp.async.bulk.tensor: sm_90+), §9.7.13.x
//! (clusterlaunchcontrol.try_cancel: sm_100+, PTX ISA 8.6; `.multicast::cluster::all`
//! needs an `a` target), and the CUDA programming guide's per-architecture limits.

use crate::diag::DiagKind;
use crate::types::ScalarType;
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
    /// Whether `cp.async.bulk.tensor`'s `.multicast::cluster` form is for this target: the
    /// architecture-specific targets (ptxas advises against it on plain sm_90; CCCL enables
    /// it on sm_90a only).
    pub fn has_tma_multicast(self) -> bool {
        matches!(self, Target::Sm90a | Target::Sm100a)
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
        self.max_smem_per_block_at(1)
    }
    /// The most dynamic shared memory each CTA may use so that `ctas` CTAs are resident on
    /// one SM at once, in bytes: the SM's 228 KiB shared by the CTAs, less the 1 KiB the
    /// hardware reserves per CTA (CUDA occupancy rules for compute capability 9.0 and 10.0).
    /// `ctas` 0 counts as 1.
    pub fn max_smem_per_block_at(self, ctas: u64) -> u64 {
        (233_472 / ctas.max(1)).saturating_sub(1024)
    }
    /// The most threads resident on one SM: 2,048 (64 warps; CUDA occupancy rules for
    /// compute capability 9.0 and 10.0).
    pub fn max_threads_per_sm(self) -> u64 {
        2048
    }
    /// The most CTAs resident on one SM: 32 (CUDA occupancy rules for compute capability
    /// 9.0 and 10.0).
    pub fn max_ctas_per_sm(self) -> u64 {
        32
    }
    /// The most registers per thread a CTA of `threads` threads can have resident with every
    /// thread at the same count: the 65,536-register file over the warps, which the
    /// hardware allocates in groups of 4, rounded down to the allocation unit of 8, and at
    /// most 255, the ISA's limit (a thread of 255 takes the unit of 256: CUDA occupancy
    /// rules for compute capability 9.0 and 10.0). The plain launch and the mma.sync GEMM
    /// pass it as `.maxnreg`, so ptxas uses what the code needs instead of spilling to
    /// reach an occupancy target of its own.
    pub fn register_cap(self, threads: u64) -> u64 {
        let warps = threads.div_ceil(32).max(1);
        let alloc = warps.div_ceil(4) * 4;
        (65_536 / (alloc * 32) / 8 * 8).min(255)
    }
    /// The `setmaxnreg` counts, per thread, of a warp-specialized CTA of one producer
    /// warpgroup and `consumers` consumer warpgroups, `ctas` of which are to be resident on
    /// one SM (PTX ISA §9.7.19.5, `setmaxnreg`): the producer keeps 40; the consumers share
    /// what it frees, `R + (R − 40) / consumers` rounded down to 8 and at most 256, `R` the
    /// count every thread starts with, [`Target::register_cap`] of the `ctas` CTAs'
    /// threads (one CTA of two consumer warpgroups: 40 and 232; two CTAs of one: 40 and
    /// 216). `None` on a target without `setmaxnreg`, with no consumer or no CTA, or where
    /// `R` is not above 40.
    pub fn setmaxnreg_split(self, consumers: u64, ctas: u64) -> Option<(u64, u64)> {
        const PRODUCER: u64 = 40;
        if !self.has_setmaxnreg() || consumers == 0 || ctas == 0 {
            return None;
        }
        let r = self.register_cap(128 * (consumers + 1) * ctas);
        (r > PRODUCER).then(|| {
            let c = (r + (r - PRODUCER) / consumers) / 8 * 8;
            (PRODUCER, c.min(256))
        })
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

/// A GEMM main loop's tile as `tile-to-gpu` pipelines it: a BM×BN accumulator, BK elements
/// of K per ring stage, and how each operand is stored (in global and in shared memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmTile {
    /// Rows of the output tile (M).
    pub bm: u64,
    /// Columns of the output tile (N).
    pub bn: u64,
    /// K elements per stage.
    pub bk: u64,
    /// The element type of A.
    pub elem: ScalarType,
    /// The element type of B: `elem`, except that the two 8-bit floats mix (e4m3 x e5m2).
    pub b_elem: ScalarType,
    /// The accumulator's element type.
    pub acc: ScalarType,
    /// A is stored M×K (K contiguous); otherwise K×M.
    pub a_k_major: bool,
    /// B is stored N×K (K contiguous, `nn.Linear`'s weight); otherwise K×N.
    pub b_k_major: bool,
}

impl GemmTile {
    /// Bytes of one ring stage (an A tile and a B tile).
    pub fn stage_bytes(&self) -> u64 {
        (self.bm * self.elem.size_bytes() + self.bn * self.b_elem.size_bytes()) * self.bk
    }

    /// Bytes of K per stage (the row of a K-major stage): BK times the element size.
    pub fn bk_bytes(&self) -> u64 {
        self.bk * self.elem.size_bytes()
    }

    /// The tile of the transposed product, Cᵀ = Bᵀ · Aᵀ (swap-AB): BN×BM, with B's tile
    /// as the MMA's A (K-major where B is stored N×K) and A's as its B (N×K where A is
    /// stored M×K).
    pub fn swapped(&self) -> GemmTile {
        GemmTile {
            bm: self.bn,
            bn: self.bm,
            bk: self.bk,
            elem: self.b_elem,
            b_elem: self.elem,
            acc: self.acc,
            a_k_major: self.b_k_major,
            b_k_major: self.a_k_major,
        }
    }
}

/// Bytes of K one MMA instruction consumes, for every element type tilec lowers: wgmma
/// m64nNk16 and mma.sync m16n8k16 (16-bit), k32 (e4m3, e5m2), k8 (tf32) all take 32
/// bytes of each row of A and column of B (PTX ISA, "Matrix shape" of `wgmma` and `mma`).
/// A K-major operand's fragments are therefore the same bytes for every element type.
pub const MMA_K_BYTES: u64 = 32;

/// The K of one MMA instruction for operands of `elem` ([`MMA_K_BYTES`] / size): 16 for
/// bf16/f16, 32 for e4m3/e5m2, 8 for tf32 (f32 data).
pub fn mma_k(elem: ScalarType) -> u64 {
    MMA_K_BYTES / elem.size_bytes().max(1)
}

/// Bytes of a streaming multiprocessor's register file (65,536 32-bit registers).
pub const REGISTER_FILE_BYTES: u64 = 262_144;

impl Target {
    /// Whether tilec lowers a GEMM main loop with tile `t` on this target; the error names
    /// the limit the tile breaks. Stages are laid out in bytes, so the table speaks of BK's
    /// bytes (BK × element size); an MMA instruction takes [`MMA_K_BYTES`] of K. The table
    /// (wgmma: PTX ISA §9.7.15, m64nNk{16,32,8} with N a multiple of 8 up to 256,
    /// shared-memory operands in boxes of one swizzle span: 128 bytes, or 64 for a K-major
    /// operand with 64-byte rows, or 64 or 32 for a B stored K×N whose N is not a multiple
    /// of 64; mma.sync: m16n8k{16,32,8} over 2 × 4 warps of 64 × 64):
    ///
    /// | | sm_90a (wgmma) | sm_90, sm_100, sm_100a (mma.sync) |
    /// | --- | --- | --- |
    /// | A, B / accumulator | bf16, f16, tf32 (f32 data), e4m3/e5m2 (mixed) / f32 | the same |
    /// | operand majors | any for 16-bit; only A M×K, B N×K for tf32, fp8 | the same |
    /// | BM | 64 or 128 (one or two consumer warpgroups); 8 to 56 swapped (below) | 128 |
    /// | BN | 8 to 256 in steps of 8; a multiple of 16 when B is stored K×N | 256 |
    /// | BK × element size | 64, 128 or 256 bytes | 64, 128 or 256 bytes |
    ///
    /// and, before any of these, the accumulator must fit the register file
    /// ([`REGISTER_FILE_BYTES`]). wgmma's and ldmatrix's transposes exist for 16-bit
    /// elements only (PTX ISA: `imm-trans-a/b` "only for .f16/.bf16"; `ldmatrix .trans` moves
    /// b16), hence K-major only for the others. Shared memory (the ring's stages) is checked
    /// by the pass, which knows the ring depth and the kernel's other buffers. f32 operands
    /// reach this table only as tf32, which the dot must ask for (`precision = "tf32"`).
    ///
    /// An M tile below wgmma's 64 rows (decode shapes: M = 16) is computed as Cᵀ = Bᵀ · Aᵀ
    /// ([`Target::swaps_ab`]): the tile must then be legal swapped ([`GemmTile::swapped`]):
    /// BN becomes the wgmma M (64 or 128), BM its N, and B's tile its A operand, which
    /// for operands other than 16-bit must be K-major (B stored N×K).
    ///
    /// # Errors
    /// A message naming the broken limit, e.g. "a 256x256 f32 accumulator needs 256 KiB of
    /// registers, not less than the 256 KiB register file of an SM, ...".
    pub fn check_gemm_tile(self, t: &GemmTile) -> Result<(), TileRefusal> {
        let acc_bytes = t.bm * t.bn * t.acc.size_bytes();
        if acc_bytes >= REGISTER_FILE_BYTES {
            return Err(TileRefusal {
                kind: DiagKind::ResourceLimit {
                    resource: "accumulator bytes per CTA",
                    needed: acc_bytes,
                    limit: REGISTER_FILE_BYTES - 1,
                },
                message: format!(
                    "a {}x{} {} accumulator needs {} KiB of registers, not less than the {} KiB \
                     register file of an SM, which must also hold addresses and the epilogue",
                    t.bm,
                    t.bn,
                    t.acc,
                    acc_bytes / 1024,
                    REGISTER_FILE_BYTES / 1024
                ),
            });
        }
        let pair_ok = match t.elem {
            ScalarType::BF16 | ScalarType::F16 | ScalarType::F32 => t.b_elem == t.elem,
            ScalarType::E4M3 | ScalarType::E5M2 => t.b_elem.is_fp8(),
            _ => false,
        };
        if !pair_ok || t.acc != ScalarType::F32 {
            return Err(TileRefusal::unsupported(format!(
                "the MMA on {self} takes bf16, f16, tf32 or e4m3/e5m2 inputs with an f32 \
                 accumulator, found {} x {} inputs with a {} accumulator",
                t.elem, t.b_elem, t.acc
            )));
        }
        if t.elem.size_bytes() != 2 && !(t.a_k_major && t.b_k_major) {
            let name = if t.elem == ScalarType::F32 {
                "tf32".to_string()
            } else {
                t.elem.to_string()
            };
            return Err(TileRefusal::unsupported(format!(
                "{name} operands must both be K-major: A stored M×K and B stored N×K (load B \
                 as N×K and transpose it for the dot, as torch._scaled_mm's mat2); {} transposes \
                 only 16-bit operands in shared memory, found A {} and B {}",
                if self.has_wgmma() {
                    "wgmma (imm-trans-a/b)"
                } else {
                    "ldmatrix (.trans)"
                },
                if t.a_k_major { "M×K" } else { "K×M" },
                if t.b_k_major { "N×K" } else { "K×N" },
            )));
        }
        if ![64, 128, 256].contains(&t.bk_bytes()) {
            let e = t.elem.size_bytes();
            return Err(TileRefusal::unsupported(format!(
                "the K tile must be 64, 128 or 256 bytes (a 64-byte, a 128-byte or two \
                 128-byte swizzle spans: {}, {} or {} elements of {}), found {}",
                64 / e,
                128 / e,
                256 / e,
                t.elem,
                t.bk
            )));
        }
        if self.swaps_ab(t) {
            return self.check_gemm_tile(&t.swapped()).map_err(|r| TileRefusal {
                message: format!(
                    "an M tile of {} is computed as the transposed product, a {}x{} tile: {}",
                    t.bm, t.bn, t.bm, r.message
                ),
                ..r
            });
        }
        if self.has_wgmma() {
            if t.bm != 64 && t.bm != 128 {
                return Err(TileRefusal::unsupported(format!(
                    "the M tile must be 64 or 128 (64 rows per consumer warpgroup, 1 or 2 \
                     warpgroups), found {}",
                    t.bm
                )));
            }
            if !t.bn.is_multiple_of(8) || !(8..=256).contains(&t.bn) {
                return Err(TileRefusal::unsupported(format!(
                    "the N tile {} is not a legal wgmma N (a multiple of 8 from 8 to 256)",
                    t.bn
                )));
            }
            if !t.b_k_major && !t.bn.is_multiple_of(16) {
                return Err(TileRefusal::unsupported(format!(
                    "the N tile {} of a B stored K×N must be a multiple of 16 (its rows are \
                     swizzled in spans of at least 32 bytes); a B stored N×K takes any \
                     multiple of 8",
                    t.bn
                )));
            }
        } else if t.bm != 128 || t.bn != 256 {
            return Err(TileRefusal::unsupported(format!(
                "on {self} (ldmatrix + mma.sync, 2 x 4 warps of 64 x 64) the tile must be \
                 128x256, found {}x{}",
                t.bm, t.bn
            )));
        }
        Ok(())
    }
}

impl Target {
    /// Whether a GEMM tile `t` is computed swapped, as Cᵀ = Bᵀ · Aᵀ (see
    /// [`Target::check_gemm_tile`]): on wgmma, an M tile below 64 that is a multiple of 8
    /// (wgmma's N step) while the N tile is at least 64.
    pub fn swaps_ab(self, t: &GemmTile) -> bool {
        self.has_wgmma() && t.bm < 64 && t.bm > 0 && t.bm.is_multiple_of(8) && t.bn >= 64
    }
}

/// Why a GEMM tile is refused ([`Target::check_gemm_tile`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileRefusal {
    /// [`DiagKind::ResourceLimit`] for an accumulator the registers cannot hold,
    /// [`DiagKind::Unsupported`] for a shape or type the MMA has no form for.
    pub kind: DiagKind,
    /// The broken limit, in words.
    pub message: String,
}

impl TileRefusal {
    fn unsupported(message: String) -> Self {
        TileRefusal {
            kind: DiagKind::Unsupported,
            message,
        }
    }
}

impl fmt::Display for TileRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tile(bm: u64, bn: u64, bk: u64, b_k_major: bool) -> GemmTile {
        GemmTile {
            bm,
            bn,
            bk,
            elem: ScalarType::BF16,
            b_elem: ScalarType::BF16,
            acc: ScalarType::F32,
            a_k_major: true,
            b_k_major,
        }
    }

    fn typed(elem: ScalarType, b_elem: ScalarType, bk: u64, a_k: bool, b_k: bool) -> GemmTile {
        GemmTile {
            elem,
            b_elem,
            a_k_major: a_k,
            ..tile(128, 256, bk, b_k)
        }
    }

    #[test]
    fn register_splits_and_shared_memory_per_occupancy() {
        let t = Target::Sm90a;
        // One CTA: two consumer warpgroups get 232 (the 384 threads start at 168); one gets
        // 256, the most setmaxnreg takes.
        assert_eq!(t.setmaxnreg_split(2, 1), Some((40, 232)));
        assert_eq!(t.setmaxnreg_split(1, 1), Some((40, 256)));
        // Two CTAs of one consumer warpgroup fill the register file exactly.
        assert_eq!(t.setmaxnreg_split(1, 2), Some((40, 216)));
        assert_eq!((40 + 216) * 128 * 2, 65_536);
        assert_eq!(t.setmaxnreg_split(1, 3), Some((40, 120)));
        assert_eq!(t.setmaxnreg_split(2, 4), None);
        assert_eq!(t.setmaxnreg_split(1, 0), None);
        assert_eq!(Target::Sm90.setmaxnreg_split(1, 1), None);
        assert_eq!(t.max_smem_per_block_at(1), t.max_smem_per_block());
        assert_eq!(t.max_smem_per_block_at(2), 115_712);
        assert_eq!(t.max_smem_per_block_at(0), 232_448);
    }

    #[test]
    fn wgmma_table() {
        let t = Target::Sm90a;
        // Every BN from 8 to 256 in steps of 8 for a B stored N×K, BM 64 and 128, BK 64/128.
        for bm in [64, 128] {
            for bk in [32, 64, 128] {
                for bn in (8..=256).step_by(8) {
                    assert_eq!(
                        t.check_gemm_tile(&tile(bm, bn, bk, true)),
                        Ok(()),
                        "{bm}x{bn}x{bk}"
                    );
                    let kn = t.check_gemm_tile(&tile(bm, bn, bk, false));
                    assert_eq!(kn.is_ok(), bn % 16 == 0, "{bm}x{bn}x{bk} K×N: {kn:?}");
                }
            }
        }
        let e = |bm, bn, bk| {
            t.check_gemm_tile(&tile(bm, bn, bk, true))
                .unwrap_err()
                .message
        };
        assert!(
            e(128, 260, 64).contains("not a legal wgmma N"),
            "{}",
            e(128, 260, 64)
        );
        assert!(e(128, 12, 64).contains("not a legal wgmma N"));
        assert!(e(192, 128, 64).contains("M tile must be 64 or 128"));
        assert!(e(128, 256, 16).contains("K tile must be 64, 128 or 256 bytes"));
        assert_eq!(
            e(256, 256, 64),
            "a 256x256 f32 accumulator needs 256 KiB of registers, not less than the 256 KiB \
             register file of an SM, which must also hold addresses and the epilogue"
        );
        let mut mixed = tile(128, 256, 64, false);
        mixed.elem = ScalarType::F32;
        assert!(t
            .check_gemm_tile(&mixed)
            .unwrap_err()
            .message
            .contains("found f32 x bf16 inputs"));
    }

    #[test]
    fn m_tiles_below_64_swap_ab() {
        use ScalarType::{E4M3, E5M2};
        let t = Target::Sm90a;
        // Every M tile from 8 to 56 in steps of 8 against N tiles of 64 and 128, both B
        // majors: the swapped product is a BN×BM wgmma tile.
        for bm in (8..64).step_by(8) {
            for bn in [64, 128] {
                for b_k in [false, true] {
                    let x = tile(bm, bn, 64, b_k);
                    assert!(t.swaps_ab(&x), "{bm}x{bn}");
                    assert_eq!(t.check_gemm_tile(&x), Ok(()), "{bm}x{bn} b_k {b_k}");
                    let s = x.swapped();
                    assert_eq!((s.bm, s.bn, s.a_k_major, s.b_k_major), (bn, bm, b_k, true));
                    assert_eq!(s.swapped(), x);
                    assert_eq!(s.stage_bytes(), x.stage_bytes());
                }
            }
        }
        // Not swapped: an M tile of 64, one that is no multiple of 8, an N tile below 64,
        // and mma.sync targets.
        assert!(!t.swaps_ab(&tile(64, 64, 64, true)));
        assert!(!t.swaps_ab(&tile(12, 64, 64, true)));
        assert!(!t.swaps_ab(&tile(16, 32, 64, true)));
        assert!(!Target::Sm90.swaps_ab(&tile(16, 64, 64, true)));
        let e = t
            .check_gemm_tile(&tile(16, 32, 64, true))
            .unwrap_err()
            .message;
        assert!(e.contains("M tile must be 64 or 128"), "{e}");
        // fp8 swaps with both operands K-major, as it computes unswapped; the swapped
        // tile's own limits name the transposed product.
        let fp8 = |bn, b_k| GemmTile {
            bm: 16,
            bn,
            ..typed(E4M3, E5M2, 128, true, b_k)
        };
        assert_eq!(t.check_gemm_tile(&fp8(128, true)), Ok(()));
        let e = t.check_gemm_tile(&fp8(128, false)).unwrap_err().message;
        assert!(e.starts_with("e4m3 operands must both be K-major"), "{e}");
        let e = t.check_gemm_tile(&fp8(96, true)).unwrap_err().message;
        assert_eq!(
            e,
            "an M tile of 16 is computed as the transposed product, a 96x16 tile: the M tile \
             must be 64 or 128 (64 rows per consumer warpgroup, 1 or 2 warpgroups), found 96"
        );
    }

    #[test]
    fn element_types_bytes_and_majors() {
        use ScalarType::{E4M3, E5M2, F32, I32};
        for t in Target::ALL {
            let refusal = |tile: GemmTile| t.check_gemm_tile(&tile).unwrap_err().message;
            // fp8 (mixed too) and tf32: K-major only, BK of 64, 128 or 256 bytes.
            for (a, b) in [(E4M3, E4M3), (E4M3, E5M2), (E5M2, E4M3), (E5M2, E5M2)] {
                for bk in [64, 128, 256] {
                    assert_eq!(t.check_gemm_tile(&typed(a, b, bk, true, true)), Ok(()));
                }
                let e = refusal(typed(a, b, 32, true, true));
                assert!(e.contains("64, 128 or 256 elements of"), "{e}");
                for (ak, bk_) in [(false, true), (true, false), (false, false)] {
                    let e = refusal(typed(a, b, 128, ak, bk_));
                    assert!(e.contains("operands must both be K-major"), "{e}");
                }
            }
            for bk in [16, 32, 64] {
                assert_eq!(t.check_gemm_tile(&typed(F32, F32, bk, true, true)), Ok(()));
            }
            let e = refusal(typed(F32, F32, 32, true, false));
            assert!(e.starts_with("tf32 operands must both be K-major"), "{e}");
            let e = refusal(typed(E4M3, ScalarType::BF16, 128, true, true));
            assert!(e.contains("found e4m3 x bf16 inputs"), "{e}");
            let e = refusal(typed(I32, I32, 64, true, true));
            assert!(e.contains("found i32 x i32 inputs"), "{e}");
            let fp8 = typed(E4M3, E4M3, 128, true, true);
            assert_eq!(fp8.bk_bytes(), 128);
            assert_eq!(fp8.stage_bytes(), (128 + 256) * 128);
        }
        assert_eq!(
            (mma_k(ScalarType::BF16), mma_k(E4M3), mma_k(F32)),
            (16, 32, 8)
        );
    }

    #[test]
    fn mma_sync_table() {
        for t in [Target::Sm90, Target::Sm100, Target::Sm100a] {
            for b_k in [false, true] {
                for bk in [32, 64, 128] {
                    assert_eq!(t.check_gemm_tile(&tile(128, 256, bk, b_k)), Ok(()));
                }
                let e = t
                    .check_gemm_tile(&tile(64, 128, 64, b_k))
                    .unwrap_err()
                    .message;
                assert!(e.contains("the tile must be 128x256, found 64x128"), "{e}");
            }
        }
    }

    #[test]
    fn stage_bytes() {
        assert_eq!(tile(128, 256, 64, false).stage_bytes(), 49_152);
        assert_eq!(tile(128, 256, 128, true).stage_bytes(), 98_304);
    }
}
