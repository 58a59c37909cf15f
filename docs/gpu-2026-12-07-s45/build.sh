#!/usr/bin/env bash
# Session 45's fp8 builds (after `cargo build --release`): gpu-out/fp8b (the 128x192
# promoted variants and the comparison kernels) and gpu-out/fp8c (`--tile auto` and f32-C
# builds). The `*-before` variants of fp8b.sh were the PTX of 54ea847 (stage released one k
# tile later); they are not rebuilt here, and fp8b.sh skips what is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
tc=${TILE_COMPILE:-target/release/tile-compile}
ex=examples/gemm_fp8.tile
o=gpu-out/fp8b c=gpu-out/fp8c
rm -rf $o $c
mkdir -p $o $c
q() { "$tc" "$@" >/dev/null; }
q $ex --target sm_90a -D BN=192 -o $o/p192-bf16-sm90a
q $ex --target sm_90a -D BN=192 --stages 5 -o $o/p192s5-bf16-sm90a
q $ex --target sm_90a -D BN=192 --cluster 1x2 -o $o/p192c1x2-bf16-sm90a
q $ex --target sm_90a -D BN=192 --cluster 2 -o $o/p192c2-bf16-sm90a
q $ex --target sm_90a -D BN=192 --promote off -o $o/n192-bf16-sm90a
q $ex --target sm_90a -D BN=128 -o $o/p128-bf16-sm90a
q $ex --target sm_90a -o $o/e4m3-bf16-sm90a
q $ex --target sm_90a --tile auto --problem M=8192,N=8192,K=8192 -o $c/auto8192-bf16-sm90a
q $ex --target sm_90a --tile auto --problem M=2048,N=2048,K=2048 -o $c/auto2048-bf16-sm90a
f32=$(mktemp --suffix=.tile)
trap 'rm -f "$f32"' EXIT
sed -e 's/%C: tensor<?x?xbf16>/%C: tensor<?x?xf32>/' -e '/%out = tile.convert %scaled/d' \
    -e 's/tile.store %C, %row, %col, %out/tile.store %C, %row, %col, %scaled/' $ex >"$f32"
q "$f32" --target sm_90a -D BN=192 -o $c/p192-f32-sm90a
q "$f32" --target sm_90a -D BN=192 --cluster 1x2 -o $c/p192c1x2-f32-sm90a
ls $o $c
