#!/usr/bin/env bash
# Session 44: every dot-free example at 1, 2, 4 and 8 warps (forced), and softmax, RMSNorm
# and LayerNorm at 1024 and 2048 columns at 2 and 4 warps, into gpu-out/warps/TAG/sm_90a
# (TAG: e-nwW, cC-nwW), for the question of auto_warps' lower bound. With `run`, times them.
set -uo pipefail
cd "$(dirname "$0")/../.."
o=gpu-out/warps
if [ "${1:-}" = run ]; then
    res=${OUT:-/tmp/out}
    for r in 1; do
        python3 tools/gpu/kernels.py $o/e-nw*/sm_90a --time --no-check --no-inductor --dir-tags \
            --json $res/warps-e-$r.json 2>&1 | grep -E "^time|fail"
        for c in 1024 2048; do
            python3 tools/gpu/kernels.py $o/c$c-nw*/sm_90a --time --no-check --no-inductor \
                --dir-tags --shapes $((65536 * 1024 / c))x$c --json $res/warps-c$c-$r.json 2>&1 |
                grep -E "^time|fail"
        done
    done
    exit 0
fi
tc=target/release/tile-compile
rm -rf $o
plain=(vadd softmax softmax_rows softmax_online rmsnorm layernorm rmsnorm_rows layernorm_rows
    transpose col_sums col_sums_split scale_bias_act embedding)
for w in 1 2 4 8; do
    for e in "${plain[@]}"; do
        $tc examples/$e.tile --target sm_90a --num-warps $w -o $o/e-nw$w/sm_90a >/dev/null 2>&1 ||
            echo "$e at $w warps: not built"
    done
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for c in 1024 2048; do
    for w in 2 4; do
        for e in softmax rmsnorm layernorm; do
            sed "s/4096/$c/g" examples/$e.tile >$tmp/$e.tile
            $tc $tmp/$e.tile --target sm_90a --num-warps $w -o $o/c$c-nw$w/sm_90a >/dev/null
        done
    done
done
du -sh $o
