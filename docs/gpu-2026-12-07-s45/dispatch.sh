#!/usr/bin/env bash
# Session 45: fp8b.sh on any GPU; on an H200 also the fp8 21-shape table of the promoted
# 128x192 tile (#16), then session 43's owed steps (norms 5, attention 10, regret NN 6,
# grouped 11) until the call's deadline. Carry gpu-out/fp8b, gpu-out/fp8c, gpu-out/s43,
# gpu-out/plain (docs/gpu-2026-12-07-s44/build43.sh).
set -u
cd "$(dirname "$0")/../.."
res=${OUT:-/tmp/out}
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $name"
bash docs/gpu-2026-12-07-s45/fp8b.sh
echo "=== fp8b done after ${SECONDS}s"
if [[ $name == *H200* ]]; then
    timeout 150 python3 tools/gpu/fp8.py gpu-out/fp8b --time --iters 20 \
        --time-variants p192-bf16-sm90a,e4m3-bf16-sm90a --json $res/fp8-h200-time.json 2>&1 |
        grep -E '^#|^  8192   8192   8192'
    timeout 40 python3 tools/gpu/fp8.py gpu-out/fp8c --accuracy --accuracy-variants p192-f32-sm90a \
        --json $res/fp8-h200-acc.json 2>&1 | tail -5
    echo "=== fp8 H200 done after ${SECONDS}s"
    bash docs/gpu-2026-12-07-s43/all.sh 5,10,6,11 $((585 - SECONDS))
fi
