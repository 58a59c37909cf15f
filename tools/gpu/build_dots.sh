#!/usr/bin/env bash
# Build plain-launch dot kernels for a GPU run of tools/gpu/dots.py, into OUT (default
# gpu-out/dots; git-ignored, so name it in the device call's `carry`): C = A · B summed
# over a K loop as a frontend may write it (each K step a dot into zeros added to the
# carried sum), which is not tile-to-gpu's pipelined form, so `tile.dot` is lowered by the
# generic path (mma.sync fragments, B staged through shared memory). One kernel per
# (BM, BK, BN, dtype, B major) below, for sm_90a and sm_90; B is stored K×N ("kn") or
# N×K ("nk", loaded as stored and transposed in the loop).
#
# Usage: tools/gpu/build_dots.sh [OUT] (after `cargo build --release`; uses
# target/release/tile-compile, or TILE_COMPILE).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-gpu-out/dots}
tc=${TILE_COMPILE:-target/release/tile-compile}
rm -rf "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for spec in 64:32:64:bf16:kn 48:24:40:bf16:kn 128:64:128:f16:nk 16:16:8:bf16:nk \
    64:64:256:bf16:kn 32:48:96:f16:nk; do
    IFS=: read -r bm bk bn t major <<<"$spec"
    name="dot_${bm}x${bk}x${bn}_${t}_${major}"
    if [ "$major" = kn ]; then
        b="%b = tile.load %B, %k, %col : tile<${bk}x${bn}x${t}>"
    else
        b="%w = tile.load %B, %col, %k : tile<${bn}x${bk}x${t}>
    %b = tile.transpose %w : tile<${bk}x${bn}x${t}>"
    fi
    cat >"$tmp/$name.tile" <<TILE
tile.kernel @$name(%A: tensor<?x?x$t>, %B: tensor<?x?x$t>, %C: tensor<?x?xf32>, %M: index, %N: index, %K: index) {grid = [ceildiv(%N, $bn), ceildiv(%M, $bm)]} {
  %pid_n = tile.program_id {dim = 0} : index
  %pid_m = tile.program_id {dim = 1} : index
  %c0 = tile.constant {value = 0} : index
  %cbk = tile.constant {value = $bk} : index
  %cbm = tile.constant {value = $bm} : index
  %cbn = tile.constant {value = $bn} : index
  %row = tile.muli %pid_m, %cbm : index
  %col = tile.muli %pid_n, %cbn : index
  %zero = tile.zeros : tile<${bm}x${bn}xf32>
  %acc = tile.for %c0, %K, %cbk, %zero : tile<${bm}x${bn}xf32> {
  ^bb0(%k: index, %c: tile<${bm}x${bn}xf32>):
    %a = tile.load %A, %row, %k : tile<${bm}x${bk}x$t>
    $b
    %z = tile.zeros : tile<${bm}x${bn}xf32>
    %p = tile.dot %a, %b, %z : tile<${bm}x${bn}xf32>
    %s = tile.add %c, %p : tile<${bm}x${bn}xf32>
    tile.yield %s
  }
  tile.store %C, %row, %col, %acc
  tile.return
}
TILE
    for tg in sm_90a sm_90; do
        "$tc" "$tmp/$name.tile" --target "$tg" --no-simplify -o "$out/$tg" >/dev/null
    done
done
ls "$out"/*
