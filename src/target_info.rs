//! [`TargetInfo`]: what a target can compile, asked without compiling anything.

use tilec_dialect::{DiagKind, GemmTile, ScalarType, Target, TileRefusal};
use tilec_passes::tile_to_gpu::{ring_bytes, BARRIER_REGION_BYTES};

/// The deepest shared-memory ring `tile-to-gpu` builds ([`crate::Options::stages`]).
pub const MAX_STAGES: u32 = 8;

/// Legality queries for one target: which GEMM tiles `tile-to-gpu` lowers, and how deep a
/// ring fits in shared memory. The answers are the pass's own checks
/// ([`Target::check_gemm_tile`], and the ring's shared memory), so a tile this accepts
/// passes `tile-to-gpu`'s table, and one it refuses fails there with the same reason.
///
/// ```
/// use tilec::{dialect::{ScalarType, Target}, TargetInfo};
/// let info = TargetInfo::new(Target::Sm90);
/// // mma.sync on sm_90: one tile, 128x256, with K tiles of 32, 64 or 128 bf16 elements.
/// let tiles = info.legal_gemm_tiles(ScalarType::BF16, ScalarType::BF16, true, false);
/// assert!(tiles.iter().all(|t| (t.bm, t.bn) == (128, 256)));
/// assert_eq!(tiles.len(), 3);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetInfo {
    target: Target,
}

impl TargetInfo {
    /// The queries for `target`.
    pub fn new(target: Target) -> Self {
        TargetInfo { target }
    }

    /// The target.
    pub fn target(&self) -> Target {
        self.target
    }

    /// Shared memory a CTA may use, in bytes.
    pub fn max_smem_per_block(&self) -> u64 {
        self.target.max_smem_per_block()
    }

    /// The deepest ring of `tile`'s stages (2 to [`MAX_STAGES`]) that fits in shared memory
    /// beside the barriers, or `None` when not even two stages fit. Buffers of the kernel's
    /// epilogue (a TMA store's staging ring, reductions) come on top.
    pub fn max_stages(&self, tile: &GemmTile) -> Option<u32> {
        let room = self.max_smem_per_block() - BARRIER_REGION_BYTES;
        let stages = (room / tile.stage_bytes().max(1)).min(u64::from(MAX_STAGES)) as u32;
        (stages >= 2).then_some(stages)
    }

    /// Whether `tile-to-gpu` lowers `tile` with a ring of `stages`.
    ///
    /// # Errors
    /// The table's refusal ([`Target::check_gemm_tile`]), or a
    /// [`DiagKind::ResourceLimit`] of shared memory for the ring, or `stages` outside 2 to
    /// [`MAX_STAGES`] ([`DiagKind::Unsupported`]).
    pub fn check_gemm(&self, tile: &GemmTile, stages: u32) -> Result<(), TileRefusal> {
        if !(2..=MAX_STAGES).contains(&stages) {
            return Err(TileRefusal {
                kind: DiagKind::Unsupported,
                message: format!("{stages} stages: the ring has 2 to {MAX_STAGES}"),
            });
        }
        self.target.check_gemm_tile(tile)?;
        let needed = ring_bytes(tile, u64::from(stages));
        let limit = self.max_smem_per_block();
        if needed > limit {
            return Err(TileRefusal {
                kind: DiagKind::ResourceLimit {
                    resource: "shared memory bytes per block",
                    needed,
                    limit,
                },
                message: format!(
                    "{stages} stages of {}x{}x{} {} need {needed} bytes of shared memory; {} \
                     has {limit} per block",
                    tile.bm, tile.bn, tile.bk, tile.elem, self.target
                ),
            });
        }
        Ok(())
    }

    /// Every GEMM tile `tile-to-gpu` lowers for these operand types and majors with at least
    /// two stages, with an f32 accumulator: M tiles 64, 128 and 256, N tiles from 8 to 256 in
    /// steps of 8, K tiles of 16 to 256 elements; in that order (M, then N, then K).
    pub fn legal_gemm_tiles(
        &self,
        elem: ScalarType,
        b_elem: ScalarType,
        a_k_major: bool,
        b_k_major: bool,
    ) -> Vec<GemmTile> {
        let mut v = vec![];
        for bm in [64, 128, 256] {
            for bn in (8..=256).step_by(8) {
                for bk in [16, 32, 64, 128, 256] {
                    let t = GemmTile {
                        bm,
                        bn,
                        bk,
                        elem,
                        b_elem,
                        acc: ScalarType::F32,
                        a_k_major,
                        b_k_major,
                    };
                    if self.check_gemm(&t, 2).is_ok() {
                        v.push(t);
                    }
                }
            }
        }
        v
    }
}
