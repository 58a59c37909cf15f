#!/usr/bin/env bash
# Installs what tilec needs on a Debian 12 machine, skipping what is already there:
# LLVM/MLIR 22 (Debian's packages: the libraries melior links, FileCheck for the tests),
# and ptxas/nvdisasm (PyPI's nvidia-cuda-nvcc / nvidia-cuda-nvdisasm) in ./.venv.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(llvm-22-dev libmlir-22-dev mlir-22-tools libclang-22-dev libpolly-22-dev libzstd-dev
      libz3-dev libxml2-dev zlib1g-dev libffi-dev libedit-dev libncurses-dev python3-venv)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi

# Pinned: the precise-output tests (tests/precise) record ptxas's register and spill report,
# which another ptxas release may change.
cuda="13.5.37"
have="$(.venv/bin/pip show nvidia-cuda-nvcc 2>/dev/null | sed -n 's/^Version: //p' || true)"
if [ "$have" != "$cuda" ] || ! ls .venv/lib/python3*/site-packages/nvidia/cu13/bin/ptxas >/dev/null 2>&1; then
  python3 -m venv .venv
  .venv/bin/pip install -q "nvidia-cuda-nvcc==$cuda" "nvidia-cuda-nvdisasm==$cuda"
fi
ls .venv/lib/python3*/site-packages/nvidia/cu13/bin/ptxas >/dev/null
echo "install-deps: LLVM/MLIR 22 in /usr/lib/llvm-22, ptxas in $(ls -d .venv/lib/python3*/site-packages/nvidia/cu13/bin)"
