#!/usr/bin/env bash
# Session 48: the check of session 47's last changes (fceba5c, e2e3b0e, a9cec9b) and of b313756 (vector paths and slow paths one asm per vector, thread coordinates as bit fields, code generation at Default):
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
# The norms' bandwidth (copy, softmax, RMSNorm, LayerNorm at the four shapes), as session 43's step 5.
timeout 250 bash docs/gpu-2026-12-07-s43/all.sh 5, 240 >"$res/norms.txt" 2>&1
tail -40 "$res/norms.txt"
