#!/usr/bin/env bash
# On the GPU machine: check and time the GEMM family built by tools/gpu/build_family.sh.
# Correctness on ragged and square shapes for every example and target, and of the swap-AB
# tiles on small-M shapes (poisoned C, guard, f32 reference); then, on sm_90a (unless
# FAMILY_CHECK_ONLY=1): NN, NT and TN against cuBLAS on the same stored operands over
# bench.py's 21 shapes, and batched 8 × 4096³ (the --tile auto build, against torch.bmm)
# and f16 8192³, 3 rounds each.
#
# Usage: bash gpu-out/family/family.sh [DIR] (DIR defaults to the script's folder).
set -uo pipefail
d=${1:-$(dirname "$0")}
run() { python3 "$d/run.py" "$@" 2>&1 | sed -n '/^ *M /,$p'; }
shapes="129,257,72 1000,1000,1000 256,512,128 2048,1024,4096"
status=0
# check NN_EXAMPLE SHAPES TARGETS...: every layout, f16 and the batch, on each target.
check() {
    local nn=$1 sh=$2 t spec e
    shift 2
    for t in "$@"; do
        for spec in "$nn:" "gemm_nt_bf16:--b-layout nk" "gemm_tn_bf16:--a-layout km" \
            "gemm_f16:" "batched_gemm:--batch 3"; do
            e=${spec%%:*}
            echo "== $e $t ${spec#*:}"
            # shellcheck disable=SC2086
            run "$d/$e-$t/$e.json" --shapes $sh ${spec#*:} || status=1
        done
    done
}
check gemm_bf16 "$shapes" sm90a sm90
# The swap-AB tiles (BM = 16, computed as Cᵀ = Bᵀ · Aᵀ) at M = 1, 16, 17, 40 and ragged N
# and K.
check gemm "1,4096,4096 16,4000,4096 17,257,72 40,1000,1000 16,4096,4000 129,257,72" \
    sm90a-w16x64 sm90a-w16x128
if [ "${FAMILY_CHECK_ONLY:-0}" = 1 ]; then exit $status; fi
# NN, NT and TN against cuBLAS on the same stored operands, interleaved per shape, over
# bench.py's 21 shapes (3 rounds, medians).
python3 "$d/bench.py" --no-triton --repeat 3 --json "$d/layouts.json" \
    --tilec nn="$d/gemm_bf16-sm90a/gemm_bf16.json" \
    --tilec nt="$d/gemm_nt_bf16-sm90a/gemm_nt_bf16.json" --layout nt=nt \
    --tilec tn="$d/gemm_tn_bf16-sm90a/gemm_tn_bf16.json" --layout tn=tn \
    --cublas-layouts nn nt tn 2>&1 | sed -n '/^ *M /,$p' || status=1
for round in 1 2 3; do
    echo "== batched and f16, round $round (sm90a)"
    run "$d/batched_gemm-sm90a-auto/batched_gemm.json" --shapes 4096,4096,4096 --time --batch 8 \
        || status=1
    run "$d/gemm_f16-sm90a/gemm_f16.json" --shapes 8192,8192,8192 --time || status=1
done
exit $status
