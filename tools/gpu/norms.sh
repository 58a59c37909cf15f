#!/usr/bin/env bash
# One device call: softmax, RMSNorm and LayerNorm at issue #13's four bandwidth shapes, and
# the register experiments of LayerNorm (warps per CTA; PTX register caps), with
# tools/gpu/kernels.py. Needs tools/gpu/build_plain.sh's output in gpu-out/plain (name
# gpu-out in the call's `carry`); if .whl holds quack-kernels' wheels (and
# tools/gpu/install_quack.sh exists), installs them first so that kernels.py times quack.
#
# Usage (on the GPU machine, from the repository root): tools/gpu/norms.sh [OUT.json-prefix]
set -uo pipefail
cd "$(dirname "$0")/../.."
g=gpu-out/plain
pre=${1:-${OUT:-/tmp}/norms}
if [ -d .whl ] && [ -x tools/gpu/install_quack.sh ]; then
    tools/gpu/install_quack.sh && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
    python3 -c "import quack; print('quack', getattr(quack, '__version__', '?'))" ||
        echo "quack: import failed"
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
k=tools/gpu/kernels.py
# Variants: correctness on their own cases, then time at 32768x4096 (no Inductor).
python3 $k $g/r96/sm_90a --tag /r96 --json "$pre-r96.json"
python3 $k $g/r80/sm_90a --tag /r80 --json "$pre-r80.json"
python3 $k $g/nw8/sm_90a --tag /nw8 --json "$pre-nw8.json"
python3 $k $g/nw16/sm_90a --tag /nw16 --json "$pre-nw16.json"
for round in 1 2; do
    python3 $k $g/sm_90a $g/r96/sm_90a $g/r80/sm_90a $g/r64/sm_90a $g/nw8/sm_90a \
        $g/nw16/sm_90a --only layernorm,rmsnorm --time --no-check --no-inductor \
        --shapes 32768x4096 --json "$pre-regs$round.json"
done
# The four shapes, with torch eager, Inductor and (if importable) quack beside.
python3 $k $g/sm_90a --only softmax,rmsnorm,layernorm --time --no-check --shapes 32768x4096 \
    --json "$pre-4096.json"
python3 $k $g/w1024/sm_90a --only softmax,rmsnorm,layernorm --time --no-check \
    --shapes 65536x1024 --tag /w1024 --json "$pre-1024.json"
python3 $k $g/w8192-8/sm_90a --only softmax,rmsnorm,layernorm --time --no-check \
    --shapes 16384x8192 --tag /w8192 --json "$pre-8192.json"
python3 $k $g/w32768-16/sm_90a --only softmax,rmsnorm,layernorm --time --no-check \
    --shapes 8192x32768 --tag /w32768 --json "$pre-32768.json"
# 16384x8192 with 2 and 4 forced strips beside the unstripped build (the occupancy question).
for round in 1 2; do
    python3 $k $g/w8192-8/sm_90a $g/w8192-8-s2/sm_90a $g/w8192-8-s4/sm_90a \
        --only rmsnorm,layernorm --time --no-check --no-inductor --shapes 16384x8192 \
        --json "$pre-8192-strips$round.json"
done
