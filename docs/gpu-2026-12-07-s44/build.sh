#!/usr/bin/env bash
# Session 44's device builds: gpu-out/s44/ctile (gemm.tile at 128x256, 4 stages, static,
# TMA-store epilogue, clusters 1, 2, 1x2: the out-of-grid store guard) and gpu-out/plain.
set -euo pipefail
cd "$(dirname "$0")/../.."
o=gpu-out/s44
tc=target/release/tile-compile
rm -rf $o
mkdir -p $o/ctile
for cl in 1 2 1x2; do
    extra="--cluster $cl"
    [ $cl = 1 ] && extra=""
    $tc examples/gemm.tile --target sm_90a -D BM=128 -D BN=256 --stages 4 --schedule static \
        --epilogue-store tma $extra --emit cubin -o $o/ctile/t$cl >/dev/null
done
cp tools/gpu/bench.py tools/gpu/run.py tools/gpu/tile_errors.py $o/ctile/
tools/gpu/build_plain.sh gpu-out/plain
du -sh $o gpu-out/plain
