#!/usr/bin/env bash
# Session 46's builds (after `cargo build --release`): gpu-out/ms-new, the mma.sync (sm_90)
# GEMMs without a producer warp (256 threads, 255 registers), and its fp8 variants
# (tools/gpu/build_fp8.sh into gpu-out/ms-new/fp8), and the sm_90a kernels the LLVM pipeline
# change touched; without gpu-out/ms-old, first the same examples built at fd82f2d (a
# producer warp: 288 threads, 168 registers) from a worktree (a release build of its
# tile-compile, several minutes on 2 cores). Then gpu-out/plain (tools/gpu/build_plain.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
tc=${TILE_COMPILE:-target/release/tile-compile}
o=${1:-gpu-out/ms-new}
rm -rf "$o"
mkdir -p "$o"
examples="gemm_bf16 gemm_nt_bf16 gemm_tn_bf16 gemm_f16 batched_gemm gemm_fp8_e4m3 grouped_gemm \
    grouped_gemm_contiguous gemm_bias_relu"
if [ ! -d gpu-out/ms-old ]; then
    # The producer-warp builds: fd82f2d's tile-compile, built in a worktree of its own.
    old=/tmp/tilec-fd82f2d
    [ -d "$old" ] || git worktree add --detach "$old" fd82f2d
    (cd "$old" && cargo build --release -p tilec-tools --bin tile-compile)
    mkdir -p gpu-out/ms-old
    for e in $examples; do
        "$old/target/release/tile-compile" examples/$e.tile --target sm_90 \
            -o gpu-out/ms-old/$e-sm90 >/dev/null
    done
    echo fd82f2d >gpu-out/ms-old/REV
fi
for e in $examples; do
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
bash tools/gpu/build_plain.sh >/dev/null
ls "$o" "$o/fp8"
