#!/usr/bin/env bash
# Session 43: every owed GPU run, in priority order, from step FIRST (default 1) until
# DEADLINE seconds (default 570) have passed; prints "NEXT n" with the first step not run.
set -u
cd "$(dirname "$0")/../.."
first=${1:-1}
deadline=${2:-570}
o=gpu-out/s43
res=${OUT:-/tmp/out}
out=/tmp/s43res
mkdir -p "$out" "$res"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
(while true; do
    nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >>"$out/smi-${first//,/-}.log"
    sleep 2
done) &
smi=$!
g=$o/grouped k=$o/clusters t=$o/tiles tn=$o/tiles-nt p=gpu-out/plain kp=tools/gpu/kernels.py
nn="" nt=""
for x in t128x256 t128x128 t64x128 t64x64 t16x64 t16x128; do
    nn="$nn --tilec $x=$t/$x/gemm.json"
    nt="$nt --tilec $x=$tn/$x/gemm_nt_bf16.json --layout $x=nt"
done
steps=(
  "150|plain|python3 $kp $p/sm_90a $p/sm_90 2>&1 | tail -30"
  "150|diff|python3 tools/gpu/difftest.py gpu-out/diff --json $out/diff.json 2>&1 | tail -12"
  "100|cluster_check|for cl in 1 2 1x2 2x2; do for s in '1000 1500 200' '130 2000 64' '2048 4096 1024' '4096 1024 4096'; do printf '%-5s %-16s ' \$cl \"\$s\"; timeout 20 python3 $k/tile_errors.py $k/c\$cl/gemm_bf16.json \$s 2>&1 | grep -o 'nan [0-9.a-z]* err [0-9.a-z]*' | awk '{if(\$4 !~ /^[0-9.]+\$/)b++; if(\$2>n)n=\$2; if(\$4>e)e=\$4; t++} END{print t, \"tiles, max unwritten\", n+0, \"max err\", e+0, \"non-numeric\", b+0}'; done; done"
  "200|cluster_bench|python3 $k/bench.py --no-triton --repeat 3 --tilec c1=$k/c1/gemm_bf16.json --tilec c2=$k/c2/gemm_bf16.json --tilec c1x2=$k/c1x2/gemm_bf16.json --tilec c2x2=$k/c2x2/gemm_bf16.json --json $out/clusters.json 2>&1 | tail -30"
  "240|norms|python3 $kp $p/sm_90a --only softmax,rmsnorm,layernorm --time --no-check --shapes 32768x4096 --json $out/norms-4096.json 2>&1 | tail -8; python3 $kp $p/w1024/sm_90a --only softmax,rmsnorm,layernorm --time --no-check --shapes 65536x1024 --tag /w1024 --json $out/norms-1024.json 2>&1 | tail -8; python3 $kp $p/w8192-8/sm_90a --only softmax,rmsnorm,layernorm --time --no-check --shapes 16384x8192 --tag /w8192 --json $out/norms-8192.json 2>&1 | tail -8; python3 $kp $p/w32768-16/sm_90a --only softmax,rmsnorm,layernorm --time --no-check --shapes 8192x32768 --tag /w32768 --json $out/norms-32768.json 2>&1 | tail -8"
  "330|regret_nn|python3 tools/gpu/bench.py --no-triton --repeat 3 $nn --json $out/tiles-nn.json 2>&1 | tail -30"
  "300|norm_variants|for r in 1 2; do for w in 1024:65536 4096:32768 8192:16384; do python3 $kp gpu-out/nv/c\${w%:*}-*/sm_90a --only layernorm,rmsnorm --time --no-check --no-inductor --dir-tags --shapes \${w#*:}x\${w%:*} --json $out/nv-\${w%:*}-\$r.json 2>&1 | grep time; done; done"
  "200|ctile|python3 $k/bench.py --no-triton --repeat 3 --tilec t1=$o/ctile/t1/gemm.json --tilec t2=$o/ctile/t2/gemm.json --tilec t1x2=$o/ctile/t1x2/gemm.json --json $out/ctile.json 2>&1 | tail -26"
  "300|fp8|python3 $o/fp8/fp8.py $o/fp8 --check 2>&1 | tail -40; python3 $o/fp8/fp8.py $o/fp8 --time --iters 20 --time-variants promote-bf16-sm90a,promote-bf16-sm90a-c2,promote-bf16-sm90a-c1x2,e4m3-bf16-sm90a,e4m3-bf16-sm90a-c2,e4m3-bf16-sm90a-c1x2 --json $out/fp8.json 2>&1 | tail -40"
  "240|attention|python3 $o/att/attention.py $o/att/A --time"
  "150|grouped|python3 $g/grouped.py --ragged $g/ragged/grouped_gemm.json --contiguous $g/contiguous/grouped_gemm_contiguous.json --json $out/grouped.json"
  "330|regret_nt|python3 tools/gpu/bench.py --no-triton --repeat 3 $nt --cublas-layouts nt --json $out/tiles-nt.json 2>&1 | tail -30"
)
n=${#steps[@]}
# FIRST is a step number (run from it on) or a comma-separated list of steps.
if [[ $first == *,* ]]; then
    IFS=, read -ra order <<<"$first"
else
    order=($(seq "$first" "$n"))
fi
for i in "${order[@]}"; do
    IFS='|' read -r max name cmd <<<"${steps[$((i - 1))]}"
    left=$((deadline - SECONDS))
    if [ "$left" -lt 60 ]; then break; fi
    [ "$max" -gt "$left" ] && max=$left
    echo "=== step $i $name ($(date -u +%H:%M:%S), limit ${max}s)"
    timeout "$max" bash -c "$cmd" 2>&1 | tee "$out/step$i-$name.txt"
    echo "=== step $i done after ${SECONDS}s"
done
kill $smi
echo "LAST $i"
tar czf "$res/res-${first//,/-}.tgz" -C /tmp s43res
