#!/usr/bin/env bash
# GPU check of examples/gemm_rowsum.tile (C and its row sums from one kernel) beside
# examples/gemm_bf16.tile, on sm_90a and sm_90 PTX built into DIR by:
#   T=target/release/tile-compile
#   $T examples/gemm_rowsum.tile --target sm_90a -o DIR/rowsum-sm90a   (and sm_90 -> rowsum-sm90)
#   $T examples/gemm_bf16.tile --target sm_90a -o DIR/bf16-sm90a        (and sm_90 -> bf16-sm90)
# Ragged shapes are checked (C poisoned, S zeroed, both against torch in f32/f64); then
# 8192^3 is timed old/new/new/old (gemm_bf16, gemm_rowsum, gemm_rowsum, gemm_bf16) in one
# process each, to give the cost of the fused row sums. JSON rows go to OUT.
# Usage: tools/gpu/gemm_rowsum.sh DIR OUT
set -euo pipefail
dir=$1; out=$2
cd "$(dirname "$0")/../.."
ragged="1,1,1 37,300,130 129,257,65 1000,777,500 4096,4096,4096 300,5000,64"
for t in sm90a sm90; do
  python3 tools/gpu/run.py "$dir/rowsum-$t/gemm_rowsum.json" --shapes $ragged --json "$out/check-rowsum-$t.json"
done
for t in sm90a sm90; do
  i=0
  for k in bf16 rowsum rowsum bf16; do
    i=$((i+1))
    name=gemm_$k; [ $k = bf16 ] && name=gemm_bf16
    python3 tools/gpu/run.py "$dir/$k-$t/$name.json" --shapes 8192,8192,8192 --time --iters 50 \
      --json "$out/time-$t-$i-$k.json" | tail -1
  done
done
