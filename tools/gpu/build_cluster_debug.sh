#!/usr/bin/env bash
# Build the static-cluster GEMM three ways for tools/gpu/tile_errors.py, into OUT (default
# gpu-out/cluster-debug; name it in the device call's carry): e1 a cluster launch with no
# multicast and no peer release, e2 peer releases only (each CTA copies its whole stage),
# e3 the full multicast, each for `--cluster 1x2` (B shared) and `2` (A shared). Built
# through tile-opt, so that each variant can be edited before tile-compile lowers it.
# Then on the device, for each: python3 OUT/tile_errors.py OUT/eN-C/gemm_bf16.json 512 1024 256
set -euo pipefail
cd "$(dirname "$0")/../.."
o=${1:-gpu-out/cluster-debug}
rm -rf "$o"
mkdir -p "$o"
for c in "1x2:cluster=1 cluster-y=2:1" "2:cluster=2 cluster-y=1:0"; do
    IFS=: read -r name popt d <<<"$c"
    target/release/tile-opt examples/gemm_bf16.tile -o "$o/e3-$name.tile" \
        --pass-pipeline="persistent{schedule=static group_m=8 $popt},tile-to-gpu{target=sm_90a}"
    sed -e "s/ {multicast = $d}//" -e "s/ {peer_dims = \[$d\]}//" \
        -e 's/{arrive_count = 16}/{arrive_count = 8}/' "$o/e3-$name.tile" >"$o/e1-$name.tile"
    sed -e "s/ {multicast = $d}//" "$o/e3-$name.tile" >"$o/e2-$name.tile"
    for e in e1 e2 e3; do
        target/release/tile-compile "$o/$e-$name.tile" --target sm_90a --emit cubin \
            -o "$o/$e-$name" >/dev/null
    done
done
cp tools/gpu/run.py tools/gpu/tile_errors.py "$o/"
echo "built $o"
