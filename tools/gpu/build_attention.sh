#!/usr/bin/env bash
# Build the attention examples for a GPU run of tools/gpu/attention.py, into OUT (default
# gpu-out/attention; git-ignored, so name it in the device call's `carry`):
#
#   OUT/TARGET/attention_fwd_dD.{ptx,cubin,json}    non-causal, head dim D (the cubin from
#                                                   tilec's ptxas, which tools/gpu/run.py
#                                                   loads instead of JIT-compiling the PTX)
#   OUT/TARGET/attention_fwd_causal_dD.{ptx,json}   causal
#
# for TARGET in sm_90a, sm_90 and D in 64, 128, 256 (the examples are written for 128; the
# other head dims are the same text with 128 replaced). ptxas -v's report of each goes to
# OUT/TARGET/NAME.ptxas. OUT/sm_90a-persistent/ holds D = 64 and 128 made persistent
# (`persistent{schedule=static group_m=8}` before `tile-assign-layouts`, through tile-opt):
# the launcher starts min(tiles, SMs) CTAs, each looping over (query block, head, batch)
# tiles. OUT/sm_90a-lookahead/ and OUT/sm_90a-persistent-lookahead/ are the same builds with
# `--mma-lookahead true` (the next key block's Q·Kᵀ issued before this block's softmax);
# OUT/sm_90a-ftz/ and OUT/sm_90a-ftz-lookahead/ add `--ftz` (f32 subnormals flushed), and
# OUT/sm_90a-ftz-nomasks/ `--specialize-masks false` (masks applied in every block);
# OUT/sm_90a-ftz-fusion/ adds `--fp-fusion` (fused multiply-adds) to `--ftz`, and
# OUT/sm_90a-ftz-smemq/ `--invariant-a smem` (Q staged in shared memory, not registers).
#
# Usage: tools/gpu/build_attention.sh [OUT] (after `cargo build --release`; uses
# target/release/tile-compile, or TILE_COMPILE).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-gpu-out/attention}
tc=${TILE_COMPILE:-target/release/tile-compile}
rm -rf "$out"
mkdir -p "$out/sm_90a" "$out/sm_90"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for e in attention_fwd attention_fwd_causal; do
    for d in 64 128 256; do
        sed -e "s/x128x/x${d}x/g" -e "s/<128x/<${d}x/g" -e "s/@$e(/@${e}_d$d(/" \
            "examples/$e.tile" >"$tmp/${e}_d$d.tile"
        for t in sm_90a sm_90; do
            "$tc" "$tmp/${e}_d$d.tile" --target "$t" -o "$out/$t" --emit cubin --ptxas \
                >"$tmp/p" 2>&1 || { cat "$tmp/p"; exit 1; }
            mv "$tmp/p" "$out/$t/${e}_d$d.ptxas"
        done
        for v in "lookahead --mma-lookahead true" "ftz --ftz" \
            "ftz-lookahead --ftz --mma-lookahead true" "ftz-nomasks --ftz --specialize-masks false" \
            "ftz-fusion --ftz --fp-fusion" "ftz-smemq --ftz --invariant-a smem"; do
            set -- $v
            mkdir -p "$out/sm_90a-$1"
            "$tc" "$tmp/${e}_d$d.tile" --target sm_90a -o "$out/sm_90a-$1" --emit cubin \
                --ptxas "${@:2}" >"$tmp/p" 2>&1 || { cat "$tmp/p"; exit 1; }
            mv "$tmp/p" "$out/sm_90a-$1/${e}_d$d.ptxas"
        done
    done
done
to=${TILE_OPT:-target/release/tile-opt}
mkdir -p "$out/sm_90a-persistent"
for e in attention_fwd attention_fwd_causal; do
    for d in 64 128; do
        "$to" "$tmp/${e}_d$d.tile" -o "$tmp/p.tile" \
            --pass-pipeline='persistent{schedule=static group_m=8},tile-assign-layouts{target=sm_90a}'
        "$tc" "$tmp/p.tile" --target sm_90a -o "$out/sm_90a-persistent" --emit cubin --ptxas \
            >"$out/sm_90a-persistent/${e}_d$d.ptxas" 2>&1
        mkdir -p "$out/sm_90a-persistent-lookahead"
        "$tc" "$tmp/p.tile" --target sm_90a -o "$out/sm_90a-persistent-lookahead" --emit cubin \
            --ptxas --mma-lookahead true >"$out/sm_90a-persistent-lookahead/${e}_d$d.ptxas" 2>&1
    done
done
grep -H "spill stores\|Used" "$out"/*/*.ptxas
