#!/usr/bin/env bash
# Build the GEMM family's examples for a GPU run of tools/gpu/family.sh, into OUT (default
# gpu-out/family; git-ignored, so name it in the device call's `carry`): OUT/E-T/ holds
# E.ptx and E.json for each example E of gemm_bf16 (NN), gemm_nt_bf16 (x · Wᵀ),
# gemm_tn_bf16 (Aᵀ · B), gemm_f16 and batched_gemm, and T = sm90a, sm90; and, for the
# examples whose tile sizes are constants (gemm, gemm_nt_bf16, gemm_tn_bf16, gemm_f16,
# batched_gemm), T = sm90a-w16x64 and sm90a-w16x128: the swap-AB tiles of the tile heuristic
# (BM = 16, BN = 64 or 128, 8 stages, schedule none, direct store), as `--tile auto` picks
# them for M = 16; and batched_gemm-sm90a-auto, the `--tile auto` build for 8 x 4096³.
#
# Usage: tools/gpu/build_family.sh [OUT] (after `cargo build --release`; uses
# target/release/tile-compile, or TILE_COMPILE).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-gpu-out/family}
tc=${TILE_COMPILE:-target/release/tile-compile}
rm -rf "$out"
mkdir -p "$out"
for e in gemm_bf16 gemm_nt_bf16 gemm_tn_bf16 gemm_f16 batched_gemm; do
    for t in sm_90a sm_90; do
        "$tc" "examples/$e.tile" --target "$t" -o "$out/$e-${t/_/}" >/dev/null
    done
done
for e in gemm gemm_nt_bf16 gemm_tn_bf16 gemm_f16 batched_gemm; do
    for bn in 64 128; do
        "$tc" "examples/$e.tile" --target sm_90a -o "$out/$e-sm90a-w16x$bn" -D BM=16 \
            -D BN=$bn --stages 8 --schedule none --epilogue-store direct >/dev/null
    done
done
# The batched timing of family.sh: the --tile auto choice for 8 x 4096^3 (128x256, static,
# TMA store).
"$tc" examples/batched_gemm.tile --target sm_90a -o "$out/batched_gemm-sm90a-auto" \
    --tile auto --problem M=4096,N=4096,K=4096,BATCH=8 >/dev/null
cp tools/gpu/run.py tools/gpu/bench.py tools/gpu/family.sh "$out/"
echo "built $out"
