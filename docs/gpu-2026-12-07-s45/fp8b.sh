#!/usr/bin/env bash
# Session 45, second fp8 call: 128x192 promotion that releases each k tile's stage once its
# add's wait retires it (p192*, this tree) against the form that released the stage one k
# tile later (p192*-before, the first call's PTX), beside n192, p128 and the 128x256
# example, interleaved (fp8.py --interleave); and the checks of --tile auto's fp8 builds.
# Builds: gpu-out/fp8b, gpu-out/fp8c (build.sh here; the *-before variants only if present).
set -u
cd "$(dirname "$0")/../.."
res=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader
timeout 120 python3 tools/gpu/fp8.py gpu-out/fp8c --check --json $res/fp8c-check.json 2>&1 | tail -34
timeout 120 python3 tools/gpu/fp8.py gpu-out/fp8b --check --json $res/fp8b-check.json 2>&1 | grep -v ' ok$' | tail -12
v=""
for x in p192 p192-before p192s5 p192c1x2 p192c1x2-before p192c2 n192 p128 e4m3; do
    [ -d gpu-out/fp8b/$x-bf16-sm90a ] && v="$v${v:+,}$x-bf16-sm90a"
done
timeout 300 python3 tools/gpu/fp8.py gpu-out/fp8b --interleave $v --shapes 8192x8192x8192,8192x14336x4096,4096x4096x4096,16384x16384x16384,1024x4096x4096 --reps 7 --iters 20 --json $res/fp8b-interleave.json 2>&1 | grep -v '^# .*written True guard True$'
