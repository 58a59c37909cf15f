#!/usr/bin/env bash
# Session 46's GPU call: ms.sh (the mma.sync GEMMs without a producer warp, on any GPU);
# on an H200 then session 43's owed steps (norms 5, attention 10, regret NN 6, grouped 11)
# until the call's deadline (DEADLINE seconds, default 575). Carry gpu-out/ms-new, gpu-out/ms-old, and for the H200 steps
# gpu-out/s43 and gpu-out/plain (docs/gpu-2026-12-07-s44/build43.sh).
set -u
cd "$(dirname "$0")/../.."
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $name"
bash docs/gpu-2026-12-07-s46/ms.sh
echo "=== ms.sh rc $? after ${SECONDS}s"
if [[ $name == *H200* ]]; then
    bash docs/gpu-2026-12-07-s43/all.sh 5,10,6,11 $((${DEADLINE:-575} - SECONDS))
fi
