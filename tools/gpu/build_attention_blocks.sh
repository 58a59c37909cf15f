#!/usr/bin/env bash
# Build the attention examples with other query and key block sizes
# (tools/gpu/attention_blocks.py) for a GPU run of tools/gpu/attention.py, into OUT
# (default gpu-out/attention-blocks; git-ignored, so name it in the device call's `carry`):
#
#   OUT/sm_90a/attention_fwd[_causal]_qBQ_kBK_d128.{cubin,json,ptxas}
#
# for (BQ, BK) in (64, 64), (64, 128), (128, 64), (128, 128), head dim 128, with
# tile-compile's defaults and any further options given after OUT (e.g. --ftz).
#
# Usage: tools/gpu/build_attention_blocks.sh [OUT [TILE-COMPILE OPTIONS]] (after
# `cargo build --release`; uses target/release/tile-compile, or TILE_COMPILE).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-gpu-out/attention-blocks}
shift || true
tc=${TILE_COMPILE:-target/release/tile-compile}
rm -rf "$out"
mkdir -p "$out/sm_90a"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for e in attention_fwd attention_fwd_causal; do
    for blocks in "64 64" "64 128" "128 64" "128 128"; do
        set -- $blocks "$@"
        name="${e}_q$1_k$2_d128"
        python3 tools/gpu/attention_blocks.py "examples/$e.tile" "$1" "$2" >"$tmp/$name.tile"
        shift 2
        "$tc" "$tmp/$name.tile" --target sm_90a -o "$out/sm_90a" --emit cubin --ptxas "$@" \
            >"$tmp/p" 2>&1 || { cat "$tmp/p"; exit 1; }
        mv "$tmp/p" "$out/sm_90a/$name.ptxas"
    done
done
