#!/usr/bin/env bash
# Session 43: LayerNorm / RMSNorm variants (warps per CTA, forced strips, register caps) at
# 1024, 4096 and 8192 columns, into gpu-out/nv/cN-TAG/sm_90a, for the occupancy question.
set -euo pipefail
cd "$(dirname "$0")/../.."
tc=target/release/tile-compile
to=target/release/tile-opt
o=gpu-out/nv
rm -rf $o
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# width:warps:strips
for v in 1024:1:0 1024:2:0 1024:4:0 1024:8:0 4096:4:0 4096:4:2 4096:4:4 4096:8:0 4096:8:2 \
    8192:8:0 8192:8:2 8192:8:4 8192:16:0 8192:16:2 8192:4:4; do
    IFS=: read -r w nw k <<<"$v"
    d=$o/c$w-nw$nw-s$k/sm_90a
    for e in layernorm rmsnorm; do
        sed "s/4096/$w/g" examples/$e.tile >$tmp/$e.tile
        if [ $k != 0 ]; then
            $to $tmp/$e.tile -o $tmp/$e-s.tile \
                --pass-pipeline="tile-strip-mine-stores{num-warps=$nw strips=$k}"
            mv $tmp/$e-s.tile $tmp/$e.tile
        fi
        $tc $tmp/$e.tile --target sm_90a --num-warps $nw -o $d >/dev/null
    done
done
for r in 96 88; do
    for w in 4096 8192; do
        nw=$((w / 1024))
        [ $w = 4096 ] && nw=4
        src=$o/c$w-nw$nw-s0/sm_90a
        d=$o/c$w-nw$nw-r$r/sm_90a
        mkdir -p $d
        for e in layernorm rmsnorm; do
            cp $src/$e.json $d/
            sed -E "s/^\.maxnreg [0-9]+$/.maxnreg $r/" $src/$e.ptx >$d/$e.ptx
        done
    done
done
p=.venv/lib/python3.11/site-packages/nvidia/cu13/bin/ptxas
for d in $o/*/sm_90a; do
    for e in layernorm rmsnorm; do
        printf '%-22s %-10s %s\n' "$(basename "$(dirname $d)")" $e \
            "$($p -arch=sm_90a -v $d/$e.ptx -o /dev/null 2>&1 | grep -o 'Used [0-9]* registers\|[0-9]* bytes spill stores' | tr '\n' ' ')"
    done
done
