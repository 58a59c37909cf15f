#!/usr/bin/env bash
# Build the plain-launch examples for a GPU run of tools/gpu/kernels.py, into OUT
# (default gpu-out/plain; git-ignored, so name it in the device call's `carry`):
#
#   OUT/sm_90/, OUT/sm_90a/   every dot-free example, PTX + manifest, for both targets;
#   OUT/wN/sm_90a/            softmax, RMSNorm and LayerNorm with the row tile widened from
#                             4096 to N (1024, 8192 and 32768), warps as tile-compile
#                             chooses them, timed with `kernels.py --shapes ... --tag /wN`;
#   OUT/wN-W/sm_90a/          the same with W warps (8192 with 8; 32768 with 16 and 32);
#   OUT/w8192-8-sK/sm_90a/    RMSNorm and LayerNorm at 8192 columns and 8 warps with
#                             tile-strip-mine-stores forced to K = 2, 4 strips (LayerNorm:
#                             116 registers a thread unstripped, 2 CTAs an SM; 84 and 72
#                             with 2 and 4 strips, 3 CTAs), for the occupancy question.
#
# Usage: tools/gpu/build_plain.sh [OUT] (after `cargo build --release`; uses
# target/release/tile-compile, or TILE_COMPILE).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-gpu-out/plain}
tc=${TILE_COMPILE:-target/release/tile-compile}
plain=(vadd softmax softmax_rows softmax_online rmsnorm layernorm rmsnorm_rows layernorm_rows
    transpose col_sums col_sums_split scale_bias_act embedding)
rm -rf "$out"
for t in sm_90 sm_90a; do
    for e in "${plain[@]}"; do
        "$tc" "examples/$e.tile" --target "$t" -o "$out/$t" >/dev/null
    done
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for v in 1024:0 8192:0 8192:8 32768:0 32768:16 32768:32; do
    width=${v%:*}
    warps=${v#*:}
    dir="$out/w$width"
    [ "$warps" != 0 ] && dir="$dir-$warps"
    for e in softmax rmsnorm layernorm; do
        sed "s/4096/$width/g" "examples/$e.tile" >"$tmp/$e.tile"
        "$tc" "$tmp/$e.tile" --target sm_90a --num-warps "$warps" -o "$dir/sm_90a" >/dev/null
    done
done
for k in 2 4; do
    for e in rmsnorm layernorm; do
        sed "s/4096/8192/g" "examples/$e.tile" >"$tmp/$e.tile"
        "${TILE_OPT:-target/release/tile-opt}" "$tmp/$e.tile" -o "$tmp/$e-s.tile" \
            --pass-pipeline="tile-strip-mine-stores{num-warps=8 strips=$k}"
        "$tc" "$tmp/$e-s.tile" --target sm_90a --num-warps 8 -o "$out/w8192-8-s$k/sm_90a" >/dev/null
    done
done
for w in 8 16; do
    for e in rmsnorm layernorm; do
        "$tc" "examples/$e.tile" --target sm_90a --num-warps "$w" -o "$out/nw$w/sm_90a" >/dev/null
    done
done
for r in 96 80 64; do
    mkdir -p "$out/r$r/sm_90a"
    cp "$out/sm_90a/layernorm.json" "$out/r$r/sm_90a/"
    sed -E "s/^\.maxnreg [0-9]+$/.maxnreg $r/" "$out/sm_90a/layernorm.ptx" >"$out/r$r/sm_90a/layernorm.ptx"
    grep -q "^\.maxnreg $r$" "$out/r$r/sm_90a/layernorm.ptx"
done
echo "built $out"
