#!/usr/bin/env bash
# Session 41's device builds, into gpu-out/s41 (carried).
set -euo pipefail
cd "$(dirname "$0")/../.."
o=gpu-out/s41
tc=target/release/tile-compile
tools/gpu/build_cluster_debug.sh $o/cluster-debug
tools/gpu/build_grouped.sh $o/grouped
mkdir -p $o/att/A $o/att/B $o/att/C
tmp=$(mktemp -d)
for e in attention_fwd attention_fwd_causal; do
    for d in 64 128 256; do
    n=${e}_q128_k128_d$d
    python3 tools/gpu/attention_blocks.py examples/$e.tile 128 128 $d > $tmp/$n.tile
    common="--target sm_90a --emit cubin --ptxas --ftz --fp-fusion --warp-specialize true --defer-mma true"
    $tc $tmp/$n.tile $common -o $o/att/A > $o/att/A/$n.ptxas 2>&1 || echo "A $n failed"
    done
done
rm -rf $tmp
cp tools/gpu/attention.py tools/gpu/run.py $o/att/
grep -H "Used\|spill" $o/att/*/*.ptxas || true
tools/gpu/build_gemm.sh $o/gemm 0e22302
cp tools/gpu/bench.py tools/gpu/run.py $o/gemm/
tools/gpu/build_family.sh $o/family
tools/gpu/build_tiles.sh $o/tiles
tools/gpu/build_tiles.sh $o/tiles-nt examples/gemm_nt_bf16.tile
tools/gpu/build_plain.sh gpu-out/plain
du -sh $o $o/* gpu-out/plain
