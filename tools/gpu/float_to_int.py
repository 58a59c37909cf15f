#!/usr/bin/env python3
"""Run the float-to-int plain kernel (tests/lit/lowering/plain_float_to_int.tile) on a GPU
with the inputs whose conversion the interpreter defines specially, and compare.

    tile-compile tests/lit/lowering/plain_float_to_int.tile --target sm_90a -o gpu-out/toint/sm_90a
    tile-compile tests/lit/lowering/plain_float_to_int.tile --target sm_90 -o gpu-out/toint/sm_90
    python3 tools/gpu/float_to_int.py gpu-out/toint

The interpreter (dialect/src/interp.rs) converts f32 to i32 toward zero, saturating at
the i32 range, with NaN to 0. Y is poisoned first. Prints each mismatch and a count; exit
status 1 if any.
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Kernel  # noqa: E402


def expected(x):
    if math.isnan(x):
        return 0
    if x >= 2.0 ** 31:
        return 2 ** 31 - 1
    if x <= -(2.0 ** 31):
        return -(2 ** 31)
    return int(x)  # toward zero


def main():
    d = sys.argv[1]
    special = [float("nan"), float("inf"), float("-inf"), 3e9, -3e9, 2.0 ** 31, -(2.0 ** 31),
               2147483520.0, -2147483520.0, 2.5, -2.5, 0.999, -0.999, 1.0, -1.0, 0.0, -0.0,
               1e-30, 16777217.0, 123456.7, -7.9]
    g = torch.Generator().manual_seed(7)
    rand = (torch.rand(128 - len(special), generator=g) * 2 - 1) * 1e6
    xs = torch.tensor(special + rand.tolist(), dtype=torch.float32)
    bad = 0
    for target in ("sm_90", "sm_90a"):
        k = Kernel(os.path.join(d, target, "to_int.json"))
        X = xs.cuda()
        Y = torch.full((128,), 0x5A5A5A5A, dtype=torch.int32, device="cuda")
        launch, _ = k.prepare({"X": X, "Y": Y}, {}, torch.cuda.current_stream().cuda_stream)
        launch()
        torch.cuda.synchronize()
        for x, y in zip(xs.tolist(), Y.cpu().tolist()):
            if y != expected(x):
                bad += 1
                print("MISMATCH %s: %r -> %d, interpreter %d" % (target, x, y, expected(x)))
    print("f32 -> i32: 128 inputs (%d special) x 2 targets, %d mismatch(es)"
          % (len(special), bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
