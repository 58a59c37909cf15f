#!/usr/bin/env bash
# Session 44: softmax, RMSNorm, LayerNorm at 4,096 and 8,192 columns: as built (base), with
# every global store .cs (st), with every global load and store .cs (ldst), and persistent
# (--persistent-kernels all), from gpu-out/hint (made by hand with sed on the PTX; see
# docs/performance.md, session 44).
cd "$(dirname "$0")/../.."
res=${OUT:-/tmp/out}
o=gpu-out/hint
for w in 4096:32768 8192:16384; do
    c=${w%:*} r=${w#*:}
    python3 tools/gpu/kernels.py $o/*-$c/sm_90a --only softmax,rmsnorm,layernorm --time --no-check \
        --no-inductor --dir-tags --shapes ${r}x$c --json $res/hint-$c.json 2>&1 | grep -E "^time|fail"
done
python3 tools/gpu/kernels.py $o/pers-4096/sm_90a --only softmax,rmsnorm,layernorm 2>&1 | grep -E "FAIL|failure"
