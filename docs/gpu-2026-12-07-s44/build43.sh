#!/usr/bin/env bash
# Session 44: session 43's builds (gpu-out/s43, gpu-out/plain) at this commit, for its all.sh, without the differential set.
set -euo pipefail
cd "$(dirname "$0")/../.."
o=gpu-out/s43
tc=target/release/tile-compile
rm -rf $o
mkdir -p $o/clusters
for cl in 1 2 1x2 2x2; do
    extra="--cluster $cl"
    [ $cl = 1 ] && extra=""
    $tc examples/gemm_bf16.tile --target sm_90a --schedule static $extra --emit cubin \
        -o $o/clusters/c$cl >/dev/null
done
cp tools/gpu/bench.py tools/gpu/run.py tools/gpu/tile_errors.py $o/clusters/
# gemm.tile at the heuristic's 128x256 (4 stages, static, TMA store), cluster 1, 2, 1x2.
for cl in 1 2 1x2; do
    extra="--cluster $cl"
    [ $cl = 1 ] && extra=""
    $tc examples/gemm.tile --target sm_90a -D BM=128 -D BN=256 --stages 4 --schedule static \
        --epilogue-store tma $extra --emit cubin -o $o/ctile/t$cl >/dev/null
done
# The example's 128x256 with the TMA-store epilogue in clusters 2 and 1x2.
for cl in 2 1x2; do
    $tc examples/gemm_bf16.tile --target sm_90a --schedule static --cluster $cl \
        --epilogue-store tma --emit cubin -o $o/ctile/bt$cl >/dev/null
done
# fp8: build_fp8.sh's variants, and the promoted 128x128 and the 128x256 example in clusters.
tools/gpu/build_fp8.sh $o/fp8 >/dev/null
to128='s/{value = 256}/{value = 128}/; s/ceildiv(%N, 256)/ceildiv(%N, 128)/; s/128x256/128x128/g; s/256x128xe4m3/128x128xe4m3/'
sed -e "$to128" examples/gemm_fp8_e4m3.tile >/tmp/n128.tile
for cl in 2 1x2; do
    $tc /tmp/n128.tile --target sm_90a --promote on --schedule static --cluster $cl \
        -o $o/fp8/promote-bf16-sm90a-c$cl >/dev/null
    $tc examples/gemm_fp8_e4m3.tile --target sm_90a --schedule static --cluster $cl \
        -o $o/fp8/e4m3-bf16-sm90a-c$cl >/dev/null
done
cp tools/gpu/fp8.py tools/gpu/run.py $o/fp8/
bash docs/gpu-2026-12-07-s43/variants.sh >/dev/null
tools/gpu/build_plain.sh gpu-out/plain
tools/gpu/build_tiles.sh $o/tiles
tools/gpu/build_tiles.sh $o/tiles-nt examples/gemm_nt_bf16.tile
tools/gpu/build_grouped.sh $o/grouped
mkdir -p $o/att/A
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
du -sh $o gpu-out/plain
