#!/usr/bin/env bash
# Build the in-kernel split-K GEMMs of #17 item 3 for a GPU run of tools/gpu/bench.py, into
# OUT (default gpu-out/splitk; git-ignored, so name it in the device call's `carry`), all
# sm_90a with --epilogue-store direct:
#
#   OUT/g64x64/gemm.*                          examples/gemm.tile, 64x64, direct store (the
#                                              unsplit baseline of the split kernels)
#   OUT/s64x64/gemm_splitk.*                   serial chain (examples/gemm_splitk_serial.tile)
#   OUT/f64x64/, OUT/f64x128/                  last slice (examples/gemm_splitk_last_slice.tile)
#   OUT/o64x64/                                last to arrive (examples/gemm_splitk.tile)
#   OUT/fp64x64/                               last slice, static persistent
#
# 64x64 tiles use 8 stages and 64x128 6, as tools/gpu/build_tiles.sh; --schedule none except
# fp64x64. bench.py labels them (--tilec f64x64=OUT/f64x64/gemm_splitk_last_slice.json ...)
# and takes the slice count from the launcher rule or `--split LABEL=S`.
#
# Usage: tools/gpu/build_splitk.sh [OUT] (after `cargo build --release`; uses
# target/release/tile-compile, or TILE_COMPILE).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-gpu-out/splitk}
tc=${TILE_COMPILE:-target/release/tile-compile}
rm -rf "$out"
mkdir -p "$out"
build() { # LABEL EXAMPLE BM BN STAGES SCHEDULE
    local dir="$out/$1"
    "$tc" "examples/$2.tile" --target sm_90a -o "$dir" --emit cubin -D BM="$3" -D BN="$4" \
        --stages "$5" --schedule "$6" --epilogue-store direct --ptxas >"$dir.ptxas" 2>&1 \
        || { cat "$dir.ptxas"; exit 1; }
    mv "$dir.ptxas" "$dir/ptxas.log"
}
build g64x64 gemm 64 64 8 none
build s64x64 gemm_splitk_serial 64 64 8 none
build f64x64 gemm_splitk_last_slice 64 64 8 none
build f64x128 gemm_splitk_last_slice 64 128 6 none
build o64x64 gemm_splitk 64 64 8 none
build fp64x64 gemm_splitk_last_slice 64 64 8 static
