#!/usr/bin/env bash
# Session 47's GPU call: session 46's ms.sh (the mma.sync GEMMs without a producer warp),
# then on any GPU the plain kernels' check (session 43's step 1: every dot-free example on
# sm_90a and sm_90, ragged and strided, against torch; gpu-out/plain built at 1dbad7c or
# later, whose slow paths compute each element's address in the access's asm), then on an
# H200 session 43's steps 5, 10, 6, 11 until DEADLINE seconds (default 575).
# Carry gpu-out/ms-new, gpu-out/ms-old, gpu-out/plain, gpu-out/s43.
set -u
cd "$(dirname "$0")/../.."
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $name; plain built at $(cat gpu-out/plain/REV 2>/dev/null)"
bash docs/gpu-2026-12-07-s46/ms.sh
echo "=== ms.sh rc $? after ${SECONDS}s"
steps=1
[[ $name == *H200* ]] && steps=1,5,10,6,11
bash docs/gpu-2026-12-07-s43/all.sh $steps $((${DEADLINE:-575} - SECONDS))
