#!/usr/bin/env bash
# Session 44: the differential run at this commit (500 programs × sm_90, sm_90a; 262 of them
# now at 2 warps), then, on an H200 only, session 43's owed steps 6 and 9 (regret NN, fp8).
set -u
cd "$(dirname "$0")/../.."
res=${OUT:-/tmp/out}
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $name"
timeout 200 python3 tools/gpu/difftest.py gpu-out/diff --json $res/diff.json 2>&1 | tail -12
if [[ $name == *H200* ]]; then
    bash docs/gpu-2026-12-07-s43/all.sh 6,9 $((560 - SECONDS))
fi
