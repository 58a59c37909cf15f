#!/usr/bin/env bash
# Here, not on the GPU machine: make the parts that tools/gpu/install_quack.sh installs there.
#
# quack-kernels and the CuTe DSL it runs on (CUDA 13 flavour) do not fit in one device call:
# the DSL's compiler library alone is 237 MB unpacked (a 92 MB wheel), a call carries 64 MiB
# in all, and the tracked tree already takes about 31 MiB of that. So this downloads the
# wheels (no dependencies resolved: the list below is complete for that machine, whose
# python3 already has torch, cuda-bindings, typing-extensions, protobuf and einops), unpacks
# them into one site folder, drops what Linux x86-64 JIT use never touches (the DSL's
# aarch64/QNX link stubs and its IKET profiler package), packs that folder into one
# tar.xz (x86 BCJ filter, LZMA2 preset 9e, 256 MiB dictionary) and splits it into
# $PARTS parts of equal size, one a folder: .whl/1, .whl/2, ... Each folder holds its part
# and a MANIFEST (the same in all) with the archive's and every part's SHA-256 and size.
# Each part travels in its own device call (carry [".whl/1"], then [".whl/2"], ...);
# install_quack.sh explains the calls.
#
# Usage (from anywhere; writes <repo>/.whl): tools/gpu/pack_quack.sh
# Environment: PARTS (default 2), WORK (scratch folder, default a new one under /tmp,
# removed at the end unless KEEP=1). Needs pip with network access, unzip, tar, xz,
# sha256sum; takes about 4 minutes of one core for xz.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
parts=${PARTS:-2}
work=${WORK:-$(mktemp -d /tmp/quack-pack.XXXXXX)}
pkgs=(
    quack-kernels==0.6.5
    nvidia-cutlass-dsl==4.8.1
    nvidia-cutlass-dsl-libs-core==4.8.1
    nvidia-cutlass-dsl-libs-base==4.8.1
    nvidia-cutlass-dsl-libs-cu13==4.8.1
    apache-tvm-ffi==0.1.15.post2
)
# Not taken: nvidia-cutlass-dsl-libs-cu12 (nvidia-cutlass-dsl requires it, but the DSL picks
# the newest flavour the driver supports, cu13 there); torch-c-dlpack-ext (quack requires it,
# but its prebuilt addons stop at torch 2.9 and torch 2.10+ has the DLPack exchange API
# itself); einops, torch, cuda-bindings, protobuf, typing-extensions (already there).
plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
      --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
      --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
mkdir -p "$work/wheels"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${plat[@]}" -d "$work/wheels" "${pkgs[@]}"
n=$(ls "$work/wheels"/*.whl | wc -l)
[ "$n" -eq "${#pkgs[@]}" ] || { echo "pack_quack.sh: expected ${#pkgs[@]} wheels, got $n" >&2; exit 1; }

site=$work/site
rm -rf "$site"; mkdir -p "$site"
for w in "$work/wheels"/*.whl; do unzip -q -o "$w" -d "$site"; done
rm -rf "$site/nvidia_cutlass_dsl/cu13/lib/stubs" "$site/nvidia_cutlass_dsl/dsl_packages/iket"
find "$site" -name __pycache__ -prune -exec rm -rf {} +

archive=$work/quack_site.tar.xz
tar -C "$site" --sort=name --owner=0 --group=0 --numeric-owner --mtime=2026-01-01 -cf - . |
    xz -T1 --x86 --lzma2=preset=9e,dict=256MiB > "$archive"
size=$(stat -c %s "$archive")
chunk=$(( (size + parts - 1) / parts ))
(cd "$work" && rm -f quack_site.tar.xz.part* &&
    split -d -a 1 --numeric-suffixes=1 -b "$chunk" quack_site.tar.xz quack_site.tar.xz.part)

rm -rf "$repo/.whl"; mkdir -p "$repo/.whl"
{
    echo "# quack-kernels site archive for tools/gpu/install_quack.sh: $(printf '%s ' "${pkgs[@]}")"
    echo "archive quack_site.tar.xz $(sha256sum "$archive" | cut -d' ' -f1) $size"
    for i in $(seq 1 "$parts"); do
        p=$work/quack_site.tar.xz.part$i
        echo "part $i quack_site.tar.xz.part$i $(sha256sum "$p" | cut -d' ' -f1) $(stat -c %s "$p")"
    done
} > "$work/MANIFEST"
for i in $(seq 1 "$parts"); do
    mkdir -p "$repo/.whl/$i"
    mv "$work/quack_site.tar.xz.part$i" "$repo/.whl/$i/"
    cp "$work/MANIFEST" "$repo/.whl/$i/MANIFEST"
done
[ "${KEEP:-0}" = 1 ] && echo "kept $work" >&2 || rm -rf "$work"
du -b "$repo"/.whl/*/*
