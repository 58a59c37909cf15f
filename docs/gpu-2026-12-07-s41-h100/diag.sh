#!/usr/bin/env bash
# Session 41: the static cluster GEMM before (clusters/: remote stage release with
# .release.cluster) and after (clusters2/: default .release.cta), against no cluster.
cd "$(dirname "$0")/../.."
k=gpu-out/s41/clusters n=gpu-out/s41/clusters2
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
for m in $k/c1 $k/c2 $n/c2 $n/c1x2 $n/c2x2 $n/c4; do
    echo "== $m"
    timeout 40 python3 $k/run.py $m/gemm_bf16.json --shapes 16,4096,4096 8192,8192,8192 --time 2>&1 | grep -v "^#" | tail -4
done
