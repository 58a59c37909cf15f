#!/usr/bin/env bash
# Build the swap-AB GEMMs of #17 (an M tile below wgmma's 64 rows, computed by tile-to-gpu
# as Cᵀ = Bᵀ · Aᵀ) for a GPU run of tools/gpu/bench.py, into OUT (default gpu-out/swap;
# git-ignored, so name it in the device call's `carry`), all sm_90a with --epilogue-store
# direct and --schedule none:
#
#   OUT/w16x64/gemm.*, OUT/w16x128/gemm.*          examples/gemm.tile, BM = 16, BN = 64 / 128
#   OUT/wf16x64/, OUT/wf16x128/                    examples/gemm_splitk_last_slice.tile, the
#                                                  same tiles, split-K (last slice reduces)
#   OUT/wn16x64/, OUT/wn16x128/                    examples/gemm_nt_bf16.tile (A · Wᵀ)
#   OUT/t64x64/gemm.*, OUT/f64x128/                the unswapped baselines of
#                                                  tools/gpu/build_tiles.sh (64x64, TMA
#                                                  store) and build_splitk.sh (f64x128)
#   OUT/tn64x64/gemm_nt_bf16.*                     the A · Wᵀ baseline (64x64, TMA store)
#
# 8 stages, except the 64x128 baseline (6), as build_tiles.sh.
#
# Usage: tools/gpu/build_swap.sh [OUT] (after `cargo build --release`; uses
# target/release/tile-compile, or TILE_COMPILE).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-gpu-out/swap}
tc=${TILE_COMPILE:-target/release/tile-compile}
rm -rf "$out"
mkdir -p "$out"
build() { # LABEL EXAMPLE BM BN STAGES EPILOGUE
    local dir="$out/$1"
    "$tc" "examples/$2.tile" --target sm_90a -o "$dir" --emit cubin -D BM="$3" -D BN="$4" \
        --stages "$5" --schedule none --epilogue-store "$6" --ptxas >"$dir.ptxas" 2>&1 \
        || { cat "$dir.ptxas"; exit 1; }
    mv "$dir.ptxas" "$dir/ptxas.log"
}
build w16x64 gemm 16 64 8 direct
build w16x128 gemm 16 128 8 direct
build wf16x64 gemm_splitk_last_slice 16 64 8 direct
build wf16x128 gemm_splitk_last_slice 16 128 8 direct
build wn16x64 gemm_nt_bf16 16 64 8 direct
build wn16x128 gemm_nt_bf16 16 128 8 direct
build t64x64 gemm 64 64 8 tma
build f64x128 gemm_splitk_last_slice 64 128 6 direct
build tn64x64 gemm_nt_bf16 64 64 8 tma
grep -H "registers\|spill" "$out"/*/ptxas.log
