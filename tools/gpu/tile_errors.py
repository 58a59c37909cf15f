#!/usr/bin/env python3
"""Per-tile error map of a GEMM kernel on a CUDA GPU: which output tiles (and which quarter
of each) are wrong or unwritten, to tell a scheduling fault from a data fault.

    python3 tools/gpu/tile_errors.py MANIFEST M N K [--tile 128x256] [--seed 1]

A (M x K) and B (K x N) are random bf16 (16-byte row pitches, as run.py makes them), C is
poisoned with NaN; after one launch (run.py's `Kernel`, cuLaunchKernelEx, the manifest's
grid and cluster) each BM x BN tile of C is compared with A·B in f32. Each tile prints the
fraction of NaN left (unwritten), its relative Frobenius error, and the error of its four
quarters (rows first/second half x columns first/second half).
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402


def rel(t, r):
    return ((t - r).nan_to_num(0).norm() / r.norm().clamp_min(1e-6)).item()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("manifest")
    ap.add_argument("M", type=int)
    ap.add_argument("N", type=int)
    ap.add_argument("K", type=int)
    ap.add_argument("--tile", default="128x256", help="BMxBN of the map")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    bm, bn = map(int, a.tile.split("x"))
    k = run.Kernel(a.manifest, launch_ex=True)
    dev = torch.device("cuda")
    g = torch.Generator(device=dev)
    g.manual_seed(a.seed)
    A = run.make_tma_friendly((a.M, a.K), torch.bfloat16, g, dev)
    B = run.make_tma_friendly((a.K, a.N), torch.bfloat16, g, dev)
    C = torch.full((a.M, a.N), float("nan"), dtype=torch.bfloat16, device=dev)
    launch, grid = k.prepare({"A": A, "B": B, "C": C}, {"M": a.M, "N": a.N, "K": a.K},
                             torch.cuda.current_stream().cuda_stream)
    launch()
    torch.cuda.synchronize()
    ref = A.float() @ B.float()
    c = C.float()
    print("# %s: grid %s, cluster %s, M N K = %d %d %d" % (a.manifest, grid, k.m.get("cluster"),
                                                          a.M, a.N, a.K))
    for i in range(0, a.M, bm):
        cells = []
        for j in range(0, a.N, bn):
            t, r = c[i:i + bm, j:j + bn], ref[i:i + bm, j:j + bn]
            hm, hn = max(1, t.shape[0] // 2), max(1, t.shape[1] // 2)
            q = [rel(t[x:x + hm, y:y + hn], r[x:x + hm, y:y + hn]) for x in (0, hm) for y in (0, hn)]
            cells.append("nan %.2f err %.3f [%s]" % (torch.isnan(t).float().mean().item(), rel(t, r),
                                                     " ".join("%.2f" % v for v in q)))
        print(" | ".join(cells))


if __name__ == "__main__":
    main()
