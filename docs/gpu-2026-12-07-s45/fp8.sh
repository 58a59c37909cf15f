#!/usr/bin/env bash
# Session 45: fp8 promotion at 128x192 (two accumulators, the add after wait_group 0) beside
# the overlapped 128x128 form and the unpromoted tiles. Build: tools/gpu/build_fp8.sh, then
# promote192-s5 (--stages 5) and promote192-c1x2 (--cluster 1x2); carry gpu-out/fp8.
set -u
cd "$(dirname "$0")/../.."
res=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader
o=gpu-out/fp8
timeout 150 python3 tools/gpu/fp8.py $o --check --json $res/fp8-check.json 2>&1 | grep -v ' ok$' | tail -20
echo "check rc=${PIPESTATUS[0]}"
timeout 60 python3 tools/gpu/fp8.py $o --accuracy --accuracy-variants promote192-f32-sm90a,promote-f32-sm90a --json $res/fp8-acc.json 2>&1 | tail -12
timeout 330 python3 tools/gpu/fp8.py $o --time --iters 20 --time-variants promote192-bf16-sm90a,promote-bf16-sm90a,promote192-s5-bf16-sm90a,promote192-c1x2-bf16-sm90a,n192-bf16-sm90a,e4m3-bf16-sm90a --json $res/fp8-time.json 2>&1 | grep -E '^#|^  8192  8192  8192|^ 16384 16384'
