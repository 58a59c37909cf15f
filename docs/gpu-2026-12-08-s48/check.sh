#!/usr/bin/env bash
# Session 48's GPU check (not run: no device was lent in session 48): session 47's check.sh
# (every dot-free example on sm_90a and sm_90, the differential run, the attention builds)
# on builds of 649aec3 or later, then the norms' bandwidth (session 43's step 5).
# It checks fceba5c, e2e3b0e and a9cec9b (session 47) and b313756 and 649aec3 (session 48:
# vector and slow paths one asm per vector, thread coordinates as bit fields, code
# generation at CodeGenOptLevel::Default, reduction partials read as vectors).
# Build: cargo build --release; bash docs/gpu-2026-12-07-s44/build43.sh;
#   git rev-parse --short HEAD > gpu-out/plain/REV;
#   TILEC_DIFFTEST_OUT=gpu-out/diff cargo test --release --test differential
# Carry gpu-out/plain, gpu-out/diff, gpu-out/s43.
set -u
cd "$(dirname "$0")/../.."
res=${OUT:-/tmp/out}
bash docs/gpu-2026-12-07-s47/check.sh
timeout 250 bash docs/gpu-2026-12-07-s43/all.sh 5, 240 >"$res/norms.txt" 2>&1
tail -40 "$res/norms.txt"
