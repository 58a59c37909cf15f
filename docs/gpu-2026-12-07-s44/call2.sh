#!/usr/bin/env bash
# Session 44, device call 2 (carry .whl/2 gpu-out/plain), at once after call 1: quack part 2,
# then softmax, RMSNorm and LayerNorm beside torch eager, Inductor and quack on the four
# norm shapes, tilec's kernels as tile-compile builds them (its own warps and strips).
set -u
cd "$(dirname "$0")/../.."
res=${OUT:-/tmp/out}
mkdir -p "$res"
e=$(tools/gpu/install_quack.sh --check) && eval "$e" || echo "install_quack failed"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
kp=tools/gpu/kernels.py p=gpu-out/plain o="--only softmax,rmsnorm,layernorm --time --no-check"
python3 $kp $p/sm_90a $o --shapes 32768x4096 --json $res/norms-4096.json 2>&1 | tail -8
python3 $kp $p/w1024/sm_90a $o --shapes 65536x1024 --tag /w1024 --json $res/norms-1024.json 2>&1 | tail -8
python3 $kp $p/w8192/sm_90a $o --shapes 16384x8192 --tag /w8192 --json $res/norms-8192.json 2>&1 | tail -8
python3 $kp $p/w32768/sm_90a $o --shapes 8192x32768 --tag /w32768 --json $res/norms-32768.json 2>&1 | tail -8
