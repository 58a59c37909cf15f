#!/usr/bin/env bash
# Session 43's last device call: which TMA-store cluster build faults; the norms after the
# strip pass's halving rule (correctness, then the four shapes at tile-compile's own warps).
set -u
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/cuda/bin
o=gpu-out/s43 k=gpu-out/s43/clusters kp=tools/gpu/kernels.py p=gpu-out/plain
out=${OUT:-/tmp/out}
mkdir -p "$out"
{
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
# Each build in its own process: a fault must not poison the next.
for t in t1 t2 t1x2 bt2 bt1x2; do
    echo "== $t"
    timeout 30 python3 $k/tile_errors.py $o/ctile/$t/*.json 1000 1500 200 2>&1 | tail -4
done
for d in sm_90a sm_90 w8192/sm_90a w32768/sm_90a; do
    python3 $kp $p/$d --only layernorm,rmsnorm --tag /${d%%/*} 2>&1 | grep -v "^ok"
done
python3 $kp $p/sm_90a --only softmax,rmsnorm,layernorm --time --no-check --shapes 32768x4096 \
    --json $out/n4096.json | grep time
python3 $kp $p/w1024/sm_90a --only softmax,rmsnorm,layernorm --time --no-check \
    --shapes 65536x1024 --tag /w1024 --json $out/n1024.json | grep time
python3 $kp $p/w8192/sm_90a --only softmax,rmsnorm,layernorm --time --no-check \
    --shapes 16384x8192 --tag /w8192 --json $out/n8192.json | grep time
python3 $kp $p/w32768/sm_90a --only softmax,rmsnorm,layernorm --time --no-check \
    --shapes 8192x32768 --tag /w32768 --json $out/n32768.json | grep time
python3 $kp $p/w32768/sm_90a $p/w32768-16/sm_90a --only softmax,rmsnorm,layernorm --time \
    --no-check --no-inductor --dir-tags --shapes 8192x32768 --json $out/n32768w.json | grep time
if command -v compute-sanitizer >/dev/null; then
    echo "== compute-sanitizer t1x2"
    timeout 100 compute-sanitizer python3 $k/tile_errors.py $o/ctile/t1x2/gemm.json 256 512 128 \
        2>&1 | head -40
else
    echo "no compute-sanitizer"
fi
} 2>&1 | tee "$out/final.txt"
