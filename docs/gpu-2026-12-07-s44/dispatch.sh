#!/usr/bin/env bash
# Session 44: on an H200, session 43's owed H200 steps (all.sh STEPS, default 6,9: regret
# NN and fp8); on any other GPU, the warps experiment (warps.sh run).
set -u
cd "$(dirname "$0")/../.."
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $name"
if [[ $name == *H200* ]]; then
    bash docs/gpu-2026-12-07-s43/all.sh "${1:-6,9}" 560
else
    timeout 420 bash docs/gpu-2026-12-07-s44/warps.sh run
fi
