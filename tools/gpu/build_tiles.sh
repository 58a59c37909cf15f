#!/usr/bin/env bash
# Build a GEMM example whose tile sizes are kernel constants (default examples/gemm.tile;
# examples/gemm_nt_bf16.tile for x · Wᵀ) once per candidate configuration of tilec's GEMM
# tile heuristic (tilec::gemm_heuristic's sm_90a table), into OUT (default gpu-out/tiles;
# git-ignored, so name it in the device call's `carry`):
#
#   OUT/tBMxBN/KERNEL.{ptx,cubin,json}
#
# for the tiles 128x256 (4 stages, static, TMA store), 128x128 (4, static, TMA), 64x128
# (6, none, TMA), 64x64 (8, none, TMA), and the swap-AB tiles 16x64 and 16x128 (8, none,
# direct store: tile-to-gpu computes an M tile below 64 as Cᵀ = Bᵀ · Aᵀ, whose epilogue
# stores from the registers). tools/gpu/bench.py times them all on the
# benchmark shapes (--tilec t128x256=OUT/t128x256/gemm.json ...), and tools/gpu/regret.py
# compares each shape's `tile-choose` choice with the fastest of them.
#
# Usage: tools/gpu/build_tiles.sh [OUT [EXAMPLE]] (after `cargo build --release`; uses
# target/release/tile-compile, or TILE_COMPILE).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-gpu-out/tiles}
example=${2:-examples/gemm.tile}
tc=${TILE_COMPILE:-target/release/tile-compile}
rm -rf "$out"
mkdir -p "$out"
for cfg in "128 256 4 static tma" "128 128 4 static tma" "64 128 6 none tma" \
    "64 64 8 none tma" "16 64 8 none direct" "16 128 8 none direct"; do
    set -- $cfg
    dir="$out/t$1x$2"
    "$tc" "$example" --target sm_90a -o "$dir" --emit cubin -D BM="$1" -D BN="$2" \
        --stages "$3" --schedule "$4" --epilogue-store "$5" --ptxas >"$dir.ptxas" 2>&1 \
        || { cat "$dir.ptxas"; exit 1; }
    mv "$dir.ptxas" "$dir/ptxas.log"
done
grep -H "registers\|spill" "$out"/*/ptxas.log
