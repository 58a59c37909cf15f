#!/usr/bin/env bash
# Build the grouped GEMMs of #17 item 5 for a GPU run of tools/gpu/grouped.py, into OUT
# (default gpu-out/grouped; git-ignored, so name it in the device call's `carry`), sm_90a,
# 128x256 tiles, the default pipeline (static persistent, direct store):
#
#   OUT/ragged/grouped_gemm.*                         examples/grouped_gemm.tile
#   OUT/contiguous/grouped_gemm_contiguous.*          examples/grouped_gemm_contiguous.tile
#   OUT/ragged_none/grouped_gemm.*                    one tile per CTA (--schedule none)
#   OUT/ragged_16x128/grouped_gemm.*                  BM 16 (swap-AB: the mask read in the
#                                                     transposed accumulator), BN 128
#   OUT/grouped.py, OUT/run.py                        the harness, so OUT alone is carried
#
# Then, on the device: python3 OUT/grouped.py --ragged OUT/ragged/grouped_gemm.json
#   --contiguous OUT/contiguous/grouped_gemm_contiguous.json [--json OUT/grouped.json], and
#   the same with --ragged OUT/ragged_none/... and OUT/ragged_16x128/... (no --contiguous).
#
# Usage: tools/gpu/build_grouped.sh [OUT] (after `cargo build --release`; uses
# target/release/tile-compile, or TILE_COMPILE).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-gpu-out/grouped}
tc=${TILE_COMPILE:-target/release/tile-compile}
rm -rf "$out"
mkdir -p "$out"
build() { # LABEL EXAMPLE SCHEDULE [tile-compile options...]
    local dir="$out/$1" ex=$2 sched=$3
    shift 3
    "$tc" "examples/$ex.tile" --target sm_90a -o "$dir" --emit cubin --schedule "$sched" "$@" \
        --ptxas >"$dir.ptxas" 2>&1 || { cat "$dir.ptxas"; exit 1; }
    mv "$dir.ptxas" "$dir/ptxas.log"
    rm -f "$dir"/*.ptx
}
build ragged grouped_gemm static
build contiguous grouped_gemm_contiguous static
build ragged_none grouped_gemm none
build ragged_16x128 grouped_gemm static -D BM=16 -D BN=128
cp tools/gpu/grouped.py tools/gpu/run.py "$out/"
ls -la "$out"/*/
