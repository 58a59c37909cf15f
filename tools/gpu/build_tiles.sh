#!/usr/bin/env bash
# Build a GEMM example whose tile sizes are kernel constants (default examples/gemm.tile;
# examples/gemm_nt_bf16.tile for x · Wᵀ) once per candidate configuration of tilec's GEMM
# tile heuristic (tilec::gemm_heuristic's sm_90a table), into OUT (default gpu-out/tiles;
# git-ignored, so name it in the device call's `carry`):
#
#   OUT/tBMxBN/KERNEL.{ptx,cubin,json}
#
# for the tiles 128x256 (4 stages, static, TMA store), 128x128 (4, static, TMA), 64x128
# (6, none, TMA) and 64x64 (8, none, TMA). tools/gpu/bench.py times them all on the
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
for cfg in "128 256 4 static" "128 128 4 static" "64 128 6 none" "64 64 8 none"; do
    set -- $cfg
    dir="$out/t$1x$2"
    "$tc" "$example" --target sm_90a -o "$dir" --emit cubin -D BM="$1" -D BN="$2" \
        --stages "$3" --schedule "$4" --epilogue-store tma --ptxas >"$dir.ptxas" 2>&1 \
        || { cat "$dir.ptxas"; exit 1; }
    mv "$dir.ptxas" "$dir/ptxas.log"
done
grep -H "registers\|spill" "$out"/*/ptxas.log
