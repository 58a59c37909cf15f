#!/usr/bin/env bash
# Build GEMM variants for a GPU run of tools/gpu/bench.py and run.py, into OUT (default
# gpu-out/gemm; git-ignored, so name it in the device call's `carry`):
#
#   OUT/new-sm90a/, new-sm90/, new-tma/   examples/gemm_bf16.tile from this tree's
#                                          tile-compile: sm_90a, sm_90, sm_90a with
#                                          --epilogue-store tma
#   OUT/old-sm90a/, old-sm90/, old-tma/    the same three, as the precise-output snapshots of
#                                          commit BASE hold them (PTX and manifest are the
#                                          compiler's output, byte for byte), to time a
#                                          change of the lowering against the build before
#                                          it in one run
#   OUT/tanh-T/, OUT/exp-T/ (T = sm90a, sm90)  the example with its epilogue replaced by
#                                          tanh(acc / 32) or exp(acc / 32), checked with
#                                          `run.py --scale 0.03125 --epilogue tanh|exp`
#
# Usage: tools/gpu/build_gemm.sh [OUT] [BASE] (after `cargo build --release`; uses
# target/release/tile-compile, or TILE_COMPILE; BASE defaults to HEAD).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-gpu-out/gemm}
base=${2:-HEAD}
tc=${TILE_COMPILE:-target/release/tile-compile}
rm -rf "$out"
mkdir -p "$out"
"$tc" examples/gemm_bf16.tile --target sm_90a -o "$out/new-sm90a" >/dev/null
"$tc" examples/gemm_bf16.tile --target sm_90 -o "$out/new-sm90" >/dev/null
"$tc" examples/gemm_bf16.tile --target sm_90a --epilogue-store tma -o "$out/new-tma" >/dev/null
for v in old-sm90a:examples/gemm_bf16.sm_90a old-sm90:examples/gemm_bf16.sm_90 \
    old-tma:options/gemm_bf16.sm_90a.epilogue-tma; do
    dir="$out/${v%%:*}"
    mkdir -p "$dir"
    git show "$base:tests/precise/${v#*:}.tile" | python3 -c '
import re, sys
dest = sys.argv[1]
sec, out = None, {}
for line in sys.stdin.read().splitlines():
    m = re.match(r"^// ==== (manifest|PTX) @(\S+) ====$", line)
    if m:
        sec = m.group(1)
        out[sec] = []
        continue
    if line.startswith("// ==== "):
        sec = None
    elif sec:
        out[sec].append(line[3:] if line.startswith("// ") else line[2:])
open(dest + "/gemm_bf16.ptx", "w").write("\n".join(out["PTX"]) + "\n")
open(dest + "/gemm_bf16.json", "w").write("\n".join(out["manifest"]) + "\n")
' "$dir"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in tanh exp; do
    python3 - "$f" >"$tmp/gemm_bf16.tile" <<'EOF'
import sys
f = sys.argv[1]
src = open("examples/gemm_bf16.tile").read()
old = "%out = tile.convert %acc : tile<128x256xbf16>"
assert old in src
print(src.replace(old, "\n  ".join([
    "%sc = tile.constant {value = 0.03125} : f32",
    "%sp = tile.splat %sc : tile<128x256xf32>",
    "%m = tile.mul %acc, %sp : tile<128x256xf32>",
    "%t = tile." + f + " %m : tile<128x256xf32>",
    "%out = tile.convert %t : tile<128x256xbf16>",
])), end="")
EOF
    "$tc" "$tmp/gemm_bf16.tile" --target sm_90a -o "$out/$f-sm90a" >/dev/null
    "$tc" "$tmp/gemm_bf16.tile" --target sm_90 -o "$out/$f-sm90" >/dev/null
done
echo "built $out"
