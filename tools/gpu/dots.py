#!/usr/bin/env python3
"""Check plain-launch `tile.dot` kernels (tools/gpu/build_dots.sh) on a CUDA GPU.

    python3 tools/gpu/dots.py DIR [DIR ...]

Each manifest dot_BMxBKxBN_T_MAJOR.json is run with run.py's `Kernel` on ragged and exact
problem sizes: A (M×K) and B (K×N, or N×K for MAJOR nk) random in T (bf16 or f16), C (f32)
poisoned with NaN. The result must have no NaN left and a relative Frobenius error of at
most 1e-4 against torch's f32 product of the same (rounded) inputs, TF32 off (both sum
exact products of 16-bit values in f32; only the order differs). Exit status 1 if any
check fails.
"""
import os
import re
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Kernel  # noqa: E402

DT = {"bf16": torch.bfloat16, "f16": torch.float16}


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    failed = 0
    for d in sys.argv[1:]:
        for f in sorted(os.listdir(d)):
            m = re.fullmatch(r"dot_(\d+)x(\d+)x(\d+)_(bf16|f16)_(kn|nk)\.json", f)
            if not m:
                continue
            bm, bk, bn = int(m.group(1)), int(m.group(2)), int(m.group(3))
            dt, nk = DT[m.group(4)], m.group(5) == "nk"
            k = Kernel(os.path.join(d, f))
            for (mm, nn, kk) in [(bm, bn, bk), (100, 77, 90), (257, 130, 3 * bk + 5), (1, 1, 1)]:
                g = torch.Generator(device="cuda").manual_seed(mm * 7 + nn * 3 + kk)
                a = torch.randn(mm, kk, device="cuda", generator=g).to(dt)
                b = torch.randn(kk, nn, device="cuda", generator=g).to(dt)
                bs = b.t().contiguous() if nk else b
                c = torch.full((mm, nn), float("nan"), device="cuda")
                launch, _ = k.prepare({"A": a, "B": bs, "C": c}, {"M": mm, "N": nn, "K": kk},
                                      torch.cuda.current_stream().cuda_stream)
                launch()
                torch.cuda.synchronize()
                want = a.float() @ b.float()
                nan = int(torch.isnan(c).sum())
                err = ((c - want).norm() / want.norm().clamp_min(1e-30)).item()
                ok = nan == 0 and err <= 1e-4
                failed += not ok
                print("%s %-32s M,N,K=%-14s err %.2e nan %d %s" % (
                    "ok  " if ok else "FAIL", os.path.join(os.path.basename(d), f),
                    "%d,%d,%d" % (mm, nn, kk), err, nan, "" if ok else "<---"), flush=True)
    print("%d failure(s)" % failed)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
