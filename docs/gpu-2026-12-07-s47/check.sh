#!/usr/bin/env bash
# Session 47's check of the slow-path change after 5c2d619 (fceba5c: slow paths in loops predicated):
# every dot-free example on sm_90a and sm_90 (kernels.py), the differential run
# (gpu-out/diff), the attention builds (gpu-out/s43/att/A, correctness and time).
# Carry gpu-out/plain, gpu-out/diff, gpu-out/s43.
set -u
cd "$(dirname "$0")/../.."
res=${OUT:-/tmp/out}
mkdir -p "$res"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
echo "plain built at $(cat gpu-out/plain/REV)"
python3 tools/gpu/kernels.py gpu-out/plain/sm_90a gpu-out/plain/sm_90 >"$res/plain.txt" 2>&1
echo "plain: $(grep -c '^ok' "$res/plain.txt") ok; $(tail -1 "$res/plain.txt")"
grep -v '^ok' "$res/plain.txt" | head -20
python3 tools/gpu/difftest.py gpu-out/diff --json "$res/diff.json" 2>&1 | tail -3
timeout 120 python3 gpu-out/s43/att/attention.py gpu-out/s43/att/A --time >"$res/attention.txt" 2>&1
grep -E "^gpu-out|time \(|passed|FAIL" "$res/attention.txt" | cut -c1-160
