#!/usr/bin/env python3
"""Measure the error of tilec's math lowerings on a CUDA GPU, in ulps of the f32 result.

    python3 tools/gpu/accuracy.py DIR [--json OUT] [--n 4194304]

DIR holds `acc_OP.ptx` + `acc_OP.json` for OP in exp, exp2, tanh, sqrt, rsqrt: the
kernel `y = tile.OP(x)` over a 1-D f32 tensor, compiled by tile-compile (the plain
launch). Each op runs on --n random inputs per range below, plus the range's ends and
special values; the reference is torch's float64 op on the same inputs. The error of y is
|y − ref| / ulp(ref), ulp(ref) the spacing of f32 at ref (numpy.spacing; subnormal
references count in units of the smallest subnormal). Prints the largest error per op and
range, with its input, and NaN/inf disagreements (which count as failures).
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Kernel  # noqa: E402

RANGES = {
    "exp": [(-87.0, 88.0), (-1.0, 1.0), (-103.0, -87.0)],
    "exp2": [(-126.0, 127.0), (-1.0, 1.0)],
    "tanh": [(-10.0, 10.0), (-1.0, 1.0), (-0.35, 0.35), (-1e-3, 1e-3)],
    "sqrt": [(0.0, 1e6), (0.0, 1.0), (1e-30, 1e-20)],
    "rsqrt": [(1e-6, 1e6), (0.5, 2.0)],
}
SPECIALS = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.0, -1.0, 0.3, -0.3]
REF = {"exp": torch.exp, "exp2": torch.exp2, "tanh": torch.tanh, "sqrt": torch.sqrt,
       "rsqrt": torch.rsqrt}


def ulps(y, ref):
    y = y.double().cpu().numpy()
    r = ref.cpu().numpy()
    r32 = r.astype(np.float32)
    sp = np.spacing(np.abs(r32)).astype(np.float64)
    sp = np.maximum(sp, np.float64(np.finfo(np.float32).smallest_subnormal))
    err = np.abs(y - r) / sp
    both_nan = np.isnan(y) & np.isnan(r)
    same_inf = np.isinf(y) & np.isinf(r) & (np.sign(y) == np.sign(r))
    err[both_nan | same_inf] = 0.0
    # A finite reference beyond f32's range rounds to inf: the result must be inf too.
    over = np.isinf(r32) & ~np.isinf(r)
    err[over & np.isinf(y) & (np.sign(y) == np.sign(r))] = 0.0
    return err


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--json")
    ap.add_argument("--n", type=int, default=1 << 22)
    a = ap.parse_args()
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(1)
    out, bad = [], 0
    for op, ranges in RANGES.items():
        k = Kernel(os.path.join(a.dir, "acc_%s.json" % op))
        for lo, hi in ranges:
            x = torch.rand(a.n, generator=gen, device=dev, dtype=torch.float64) * (hi - lo) + lo
            x = torch.cat([x, torch.tensor([lo, hi] + SPECIALS, device=dev, dtype=torch.float64)])
            x32 = x.float()
            y = torch.full_like(x32, float("nan"))
            launch, _ = k.prepare({"X": x32, "Y": y}, {"N": x32.numel()},
                                  torch.cuda.current_stream().cuda_stream)
            launch()
            torch.cuda.synchronize()
            ref = REF[op](x32.double())
            e = ulps(y, ref)
            finite = ~np.isnan(e)
            i = int(np.nanargmax(e)) if finite.any() else 0
            worst = float(e[i])
            nan_bad = int(np.isnan(e).sum())
            bad += nan_bad
            row = dict(op=op, lo=lo, hi=hi, n=int(x32.numel()), max_ulp=worst,
                       at=float(x32[i].item()), got=float(y[i].item()),
                       ref=float(ref[i].item()), nan_mismatch=nan_bad)
            out.append(row)
            print("%-5s [%10.3g, %10.3g]  max %8.2f ulp at x = %.9g (got %.9g, f64 %.9g)%s"
                  % (op, lo, hi, worst, row["at"], row["got"], row["ref"],
                     "  NaN mismatches: %d" % nan_bad if nan_bad else ""))
    if a.json:
        json.dump(out, open(a.json, "w"), indent=1)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
