#!/usr/bin/env bash
# Session 44: correctness of every dot-free example at the new default warps (vadd now 2),
# sm_90a and sm_90 (kernels.py: ragged cases, poisoned outputs, guards), then the 1,024-column
# norms at their new defaults beside torch eager and Inductor.
set -u
cd "$(dirname "$0")/../.."
res=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name --format=csv,noheader
p=gpu-out/plain
timeout 200 python3 tools/gpu/kernels.py $p/sm_90a $p/sm_90 2>&1 | grep -v Warning | tail -30
timeout 120 python3 tools/gpu/kernels.py $p/w1024/sm_90a 2>&1 | grep -v Warning | tail -8
python3 tools/gpu/kernels.py $p/w1024/sm_90a --only softmax,rmsnorm,layernorm --time --no-check \
    --shapes 65536x1024 --tag /w1024 --json $res/norms-1024-new.json 2>&1 | grep -E "^time|fail"
