#!/usr/bin/env bash
# Session 46's builds (after `cargo build --release`): gpu-out/ms-new, the mma.sync (sm_90)
# GEMMs without a producer warp (256 threads, 255 registers), and its fp8 variants
# (tools/gpu/build_fp8.sh into gpu-out/ms-new/fp8), and the sm_90a kernels the LLVM pipeline
# change touched. Then rebuild gpu-out/plain (tools/gpu/build_plain.sh). gpu-out/ms-old holds the same examples
# built at fd82f2d (a producer warp: 288 threads, 168 registers) by the same loop; its REV
# file names the commit.
set -euo pipefail
cd "$(dirname "$0")/../.."
tc=${TILE_COMPILE:-target/release/tile-compile}
o=${1:-gpu-out/ms-new}
rm -rf "$o"
mkdir -p "$o"
for e in gemm_bf16 gemm_nt_bf16 gemm_tn_bf16 gemm_f16 batched_gemm gemm_fp8_e4m3 grouped_gemm \
    grouped_gemm_contiguous gemm_bias_relu; do
    "$tc" examples/$e.tile --target sm_90 -o "$o/$e-sm90" >/dev/null
done
# sm_90a kernels whose PTX the LLVM pipeline's two added passes changed (now default<O3>'s).
for e in grouped_gemm grouped_gemm_contiguous gemm_splitk gemm_splitk_last_slice; do
    "$tc" examples/$e.tile --target sm_90a -o "$o/$e-sm90a" >/dev/null
done
git rev-parse --short HEAD >"$o/REV"
bash tools/gpu/build_fp8.sh "$o/fp8" >/dev/null
if [ -d gpu-out/ms-old/gemm_fp8_e4m3-sm90 ]; then
    cp -r gpu-out/ms-old/gemm_fp8_e4m3-sm90 "$o/fp8/old-bf16-sm90"
fi
cp tools/gpu/run.py tools/gpu/bench.py tools/gpu/fp8.py tools/gpu/grouped.py "$o/"
ls "$o" "$o/fp8"
