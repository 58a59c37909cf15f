#!/usr/bin/env bash
# Build the runtime's GPU test (runtime/tests/gpu.rs) and its kernels into OUT (default
# gpu-out/runtime; git-ignored, so name it in the device call's `carry`):
#
#   OUT/gpu                     the test binary (no MLIR in it; needs only libcuda there);
#   OUT/kernels/vadd/           examples/vadd.tile for sm_90a;
#   OUT/kernels/for_bounds/     tests/lit/lowering/for_bounds.tile's loop count, sm_90a;
#   OUT/kernels/gemm_tma/       examples/gemm_bf16.tile, sm_90a, --epilogue-store tma;
#   OUT/kernels/gemm_sm90/      examples/gemm_bf16.tile for sm_90 (PTX for the driver's JIT);
#   OUT/kernels/gemm_cubin/     examples/gemm_bf16.tile, sm_90a, --emit cubin;
#   OUT/kernels/splitk/         examples/gemm_bf16_splitk_64x128.tile for sm_90a;
#   OUT/kernels/splitk_ordered/ examples/gemm_splitk.tile, sm_90a, direct epilogue, no schedule;
#   OUT/kernels/splitk_last_slice/ examples/gemm_splitk_last_slice.tile, sm_90a, direct
#                               epilogue, static persistent.
#
# On the GPU machine: TILEC_RUNTIME_KERNELS=OUT/kernels OUT/gpu
# Usage: tools/gpu/build_runtime.sh [OUT] (after `cargo build --release`; uses
# target/release/tile-compile, or TILE_COMPILE).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-gpu-out/runtime}
tc=${TILE_COMPILE:-target/release/tile-compile}
rm -rf "$out"
k="$out/kernels"
"$tc" examples/vadd.tile --target sm_90a -o "$k/vadd" 2>/dev/null
"$tc" tests/lit/lowering/for_bounds.tile --target sm_90a -o "$k/for_bounds" 2>/dev/null
"$tc" examples/gemm_bf16.tile --target sm_90a --epilogue-store tma -o "$k/gemm_tma" 2>/dev/null
"$tc" examples/gemm_bf16.tile --target sm_90 -o "$k/gemm_sm90" 2>/dev/null
"$tc" examples/gemm_bf16.tile --target sm_90a --emit cubin -o "$k/gemm_cubin" 2>/dev/null
"$tc" examples/gemm_bf16_splitk_64x128.tile --target sm_90a -o "$k/splitk" 2>/dev/null
"$tc" examples/gemm_splitk.tile --target sm_90a --epilogue-store direct --schedule none \
    -o "$k/splitk_ordered" 2>/dev/null
"$tc" examples/gemm_splitk_last_slice.tile --target sm_90a --epilogue-store direct \
    -o "$k/splitk_last_slice" 2>/dev/null
bin=$(cargo test --release -p tilec-runtime --test gpu --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "gpu" and m["executable"]:
        print(m["executable"])')
cp "$bin" "$out/gpu"
echo "wrote $out: $(du -sh "$out" | cut -f1)"
