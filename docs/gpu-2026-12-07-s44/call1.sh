#!/usr/bin/env bash
# Session 44, device call 1 (carry .whl/1 gpu-out/s44): quack part 1; the TMA-store guard
# (gemm.tile 128x256, TMA store, clusters 1, 2, 1x2) on one-row-tile and ragged shapes;
# then the 21-shape bench of the three.
set -u
cd "$(dirname "$0")/../.."
res=${OUT:-/tmp/out}
mkdir -p "$res"
tools/gpu/install_quack.sh > /dev/null || [ $? = 3 ] || echo "install_quack part 1 failed"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
k=gpu-out/s44/ctile
for cl in 1 2 1x2; do
    for s in '16 4096 4096' '128 4096 4096' '1000 1504 200' '130 2048 64' '4096 1024 4096' '300 5120 64'; do
        printf '%-5s %-16s ' $cl "$s"
        timeout 30 python3 $k/tile_errors.py $k/t$cl/gemm.json $s > "$res/tiles-$cl-${s// /x}.txt" 2>&1
        echo "rc=$? $(grep -o 'nan [0-9.a-z]* err [0-9.a-z]*' "$res/tiles-$cl-${s// /x}.txt" | awk '{if($4 !~ /^[0-9.]+$/)b++; if($2>n)n=$2; if($4>e)e=$4; t++} END{print t, "tiles, max unwritten", n+0, "max err", e+0, "non-numeric", b+0}')"
        tail -2 "$res/tiles-$cl-${s// /x}.txt" | grep -i -E "error|fault|illegal" | head -2
    done
done
timeout 300 python3 $k/bench.py --no-triton --repeat 3 --tilec t1=$k/t1/gemm.json \
    --tilec t2=$k/t2/gemm.json --tilec t1x2=$k/t1x2/gemm.json --json "$res/ctile.json" 2>&1 |
    tee "$res/ctile.txt" | tail -28
