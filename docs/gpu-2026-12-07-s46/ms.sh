#!/usr/bin/env bash
# Session 46, on the GPU: the mma.sync (sm_90) GEMMs without a producer warp (gpu-out/ms-new,
# docs/gpu-2026-12-07-s46/build.sh) against the producer-warp builds of fd82f2d
# (gpu-out/ms-old). Correctness first (poisoned C, guard, f32 reference; ragged shapes; every
# operand layout, f16, the batch, the bias+ReLU epilogue, fp8, grouped), then timings
# interleaved in one process: bench.py (old, new, cuBLAS) over 7 of its shapes, 3 rounds; fp8
# old against new at 8192^3, 4096^3 and 2048^3. MS_CHECK_ONLY=1 stops after the checks.
set -u -o pipefail
cd "$(dirname "$0")/../.."
n=gpu-out/ms-new o=gpu-out/ms-old res=${OUT:-/tmp/out}
mkdir -p "$res"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
status=0
sh="129,257,72 1000,1000,1000 256,512,128 2048,1024,4096 1,4096,4096 4096,4096,4096"
run() { python3 $n/run.py "$@" 2>&1 | sed -n '/^ *M /,$p'; }
for spec in "gemm_bf16:" "gemm_nt_bf16:--b-layout nk" "gemm_tn_bf16:--a-layout km" \
    "gemm_f16:" "batched_gemm:--batch 3" "gemm_bias_relu:--epilogue relu"; do
    e=${spec%%:*}
    echo "== $e sm90 ${spec#*:}"
    # shellcheck disable=SC2086
    run $n/$e-sm90/$e.json --shapes $sh ${spec#*:} || status=1
done
echo "== grouped sm90"
timeout 120 python3 $n/grouped.py --ragged $n/grouped_gemm-sm90/grouped_gemm.json \
    --contiguous $n/grouped_gemm_contiguous-sm90/grouped_gemm_contiguous.json --iters 20 \
    2>&1 | tail -12 || status=1
echo "== grouped sm90a"
timeout 120 python3 $n/grouped.py --ragged $n/grouped_gemm-sm90a/grouped_gemm.json \
    --contiguous $n/grouped_gemm_contiguous-sm90a/grouped_gemm_contiguous.json --iters 20 \
    2>&1 | tail -12 || status=1
for e in gemm_splitk gemm_splitk_last_slice; do
    echo "== $e sm90a"
    run $n/$e-sm90a/$e.json --shapes $sh || status=1
done
echo "== softmax_online (plain)"
timeout 120 python3 tools/gpu/kernels.py gpu-out/plain/sm_90a gpu-out/plain/sm_90 \
    --only softmax_online 2>&1 | tail -8
echo "== fp8 check (sm90 variants)"
timeout 150 python3 $n/fp8.py $n/fp8 --check 2>&1 | grep -E "sm90 |FAIL" | grep -v "sm90a" | tail -40
echo "=== checks done after ${SECONDS}s, status $status"
if [ "${MS_CHECK_ONLY:-0}" = 1 ]; then exit $status; fi
timeout 240 python3 $n/bench.py --no-triton --repeat 3 --json "$res/ms-bench.json" \
    --shapes 8192,8192,8192 4096,4096,4096 2048,2048,2048 8192,8192,1024 1024,1024,1024 \
    4096,14336,4096 16,4096,4096 \
    --tilec old=$o/gemm_bf16-sm90/gemm_bf16.json --tilec new=$n/gemm_bf16-sm90/gemm_bf16.json \
    2>&1 | tail -40
echo "=== bench done after ${SECONDS}s"
timeout 120 python3 $n/fp8.py $n/fp8 --interleave old-bf16-sm90,e4m3-bf16-sm90 \
    --shapes 8192x8192x8192,4096x4096x4096,2048x2048x2048 --reps 5 \
    --json "$res/ms-fp8.json" 2>&1 | tail -12
echo "=== fp8 done after ${SECONDS}s"
exit $status
