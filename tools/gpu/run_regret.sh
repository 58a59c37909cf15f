#!/usr/bin/env bash
# The #17 tile-regret run on the device: every candidate tile of tools/gpu/build_tiles.sh
# (built here into gpu-out/tiles and, with examples/gemm_nt_bf16.tile, gpu-out/tiles-nt;
# name both in the device call's `carry`) timed by tools/gpu/bench.py on the 21 benchmark
# shapes, A·B against torch.matmul and A·Wᵀ against F.linear's cuBLAS, in one process
# each. Writes OUT/tiles-nn.json, OUT/tiles-nt.json and OUT/smi.log (SM clock, power and
# temperature every 2 s). Then, on this machine: `tile-choose > choices.md` and
# `python3 tools/gpu/regret.py OUT/tiles-nn.json choices.md --markdown` (and the nt JSON
# with `--cublas cublas-nt`).
#
# Usage (device): OUT=DIR bash tools/gpu/run_regret.sh
set -u
cd "$(dirname "$0")/../.."
out=${OUT:?set OUT}
nvidia-smi --query-gpu=name,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv
(while true; do
    nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader \
        >>"$out/smi.log"
    sleep 2
done) &
smi=$!
nn=() nt=()
for t in t128x256 t128x128 t64x128 t64x64 t16x64 t16x128; do
    nn+=(--tilec "$t=gpu-out/tiles/$t/gemm.json")
    nt+=(--tilec "$t=gpu-out/tiles-nt/$t/gemm_nt_bf16.json" --layout "$t=nt")
done
python3 tools/gpu/bench.py --no-triton --repeat 3 "${nn[@]}" --json "$out/tiles-nn.json" \
    2>&1 | tail -30
python3 tools/gpu/bench.py --no-triton --repeat 3 "${nt[@]}" --cublas-layouts nt \
    --json "$out/tiles-nt.json" 2>&1 | tail -30
kill "$smi"
