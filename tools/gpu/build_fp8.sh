#!/usr/bin/env bash
# Build the fp8 GEMM variants that tools/gpu/fp8.py runs, into OUT (default gpu-out/fp8;
# git-ignored, so name it in the device call's `carry`):
#
#   OUT/e4m3-bf16-T/   examples/gemm_fp8_e4m3.tile (bf16 C), T = sm90a, sm90
#   OUT/e4m3-f32-T/    the same with an f32 C (the scaled accumulator stored as is), to
#                      measure accumulation error without bf16 rounding
#   OUT/mixed-f32-T/   A e4m3 x B e5m2, f32 C
#   OUT/rowwise-bf16-T/  examples/gemm_fp8_rowwise.tile (M x 1 and 1 x N scales)
#   OUT/n128-{bf16,f32}-sm90a/, OUT/promote-{bf16,f32}-sm90a/  the e4m3 kernel with a
#                      128x128 tile, without and with --promote (three accumulators: the
#                      next k tile's MMAs run during the add)
#   OUT/n192-bf16-sm90a/, OUT/promote192-{bf16,f32}-sm90a/  the same at 128x192, where only
#                      two accumulators fit (the add after wait_group 0); neither fits at
#                      128x256
#
# Usage: tools/gpu/build_fp8.sh [OUT] (after `cargo build --release`; uses
# target/release/tile-compile, or TILE_COMPILE).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-gpu-out/fp8}
tc=${TILE_COMPILE:-target/release/tile-compile}
rm -rf "$out"
mkdir -p "$out"
src=examples/gemm_fp8_e4m3.tile
f32=$(mktemp --suffix=.tile)
mixed=$(mktemp --suffix=.tile)
# f32 C: store the scaled accumulator, no conversion.
sed -e 's/%C: tensor<?x?xbf16>/%C: tensor<?x?xf32>/' \
    -e '/%out = tile.convert %scaled/d' \
    -e 's/tile.store %C, %row, %col, %out/tile.store %C, %row, %col, %scaled/' "$src" >"$f32"
sed -e 's/%B: tensor<?x?xe4m3>/%B: tensor<?x?xe5m2>/' \
    -e 's/tile<256x128xe4m3>/tile<256x128xe5m2>/' \
    -e 's/tile<128x256xe4m3>/tile<128x256xe5m2>/' "$f32" >"$mixed"
n128=$(mktemp --suffix=.tile)
n128f=$(mktemp --suffix=.tile)
n192=$(mktemp --suffix=.tile)
n192f=$(mktemp --suffix=.tile)
trap 'rm -f "$f32" "$mixed" "$n128" "$n128f" "$n192" "$n192f"' EXIT
to128='s/{value = 256}/{value = 128}/; s/ceildiv(%N, 256)/ceildiv(%N, 128)/; s/128x256/128x128/g; s/256x128xe4m3/128x128xe4m3/'
sed -e "$to128" "$src" >"$n128"
sed -e "$to128" "$f32" >"$n128f"
to192='s/{value = 256}/{value = 192}/; s/ceildiv(%N, 256)/ceildiv(%N, 192)/; s/128x256/128x192/g; s/256x128xe4m3/192x128xe4m3/'
sed -e "$to192" "$src" >"$n192"
sed -e "$to192" "$f32" >"$n192f"
"$tc" "$n128" --target sm_90a --promote off -o "$out/n128-bf16-sm90a" >/dev/null
"$tc" "$n128f" --target sm_90a --promote off -o "$out/n128-f32-sm90a" >/dev/null
"$tc" "$n128" --target sm_90a --promote on -o "$out/promote-bf16-sm90a" >/dev/null
"$tc" "$n128f" --target sm_90a --promote on -o "$out/promote-f32-sm90a" >/dev/null
"$tc" "$n192" --target sm_90a --promote off -o "$out/n192-bf16-sm90a" >/dev/null
"$tc" "$n192" --target sm_90a --promote on -o "$out/promote192-bf16-sm90a" >/dev/null
"$tc" "$n192f" --target sm_90a --promote on -o "$out/promote192-f32-sm90a" >/dev/null
for t in sm_90a sm_90; do
    tt=${t/_/}
    "$tc" "$src" --target "$t" -o "$out/e4m3-bf16-$tt" >/dev/null
    "$tc" "$f32" --target "$t" -o "$out/e4m3-f32-$tt" >/dev/null
    "$tc" "$mixed" --target "$t" -o "$out/mixed-f32-$tt" >/dev/null
    "$tc" examples/gemm_fp8_rowwise.tile --target "$t" -o "$out/rowwise-bf16-$tt" >/dev/null
done
ls "$out"/*/*.json
