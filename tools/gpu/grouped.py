#!/usr/bin/env python3
"""Grouped GEMMs for mixture-of-experts layers on a CUDA GPU: check tilec's builds of
examples/grouped_gemm.tile (groups of any size, cumulative ends `Offs`) and
examples/grouped_gemm_contiguous.tile (groups padded to the tile, a group id per row)
against torch, then time them against the best torch path in the same process.

    python3 tools/gpu/grouped.py --ragged DIR/grouped_gemm.json \
        [--contiguous DIR/grouped_gemm_contiguous.json] [--pad 128] [--iters 50] [--json OUT]

Checks (every case): A and B random (seeded), C poisoned with NaN and followed by a NaN
guard; after the launch every row of every group must be written (no NaN), the guard
intact, and the relative Frobenius error of each group against a float32 product of its
rows <= --tol. The ragged cases include empty groups (first, middle, last), groups smaller
than a tile and boundaries inside a row tile. The contiguous layout's padding rows are not
checked (their output is unspecified), but a tile of padding only must be zeros.

Timing (issue #17's shape, and --sizes): CUDA events, warm-up, median of --iters, TFLOP/s
over the real rows (2·ΣM·N·K). The torch baseline is torch._grouped_mm (A, B as G×K×N, the
cumulative ends), when this torch has it and takes these operands, else a loop of
torch.matmul over the groups; both are timed when available, and the ratio is against the
faster. Exit status 1 if a check fails.
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Kernel, time_events  # noqa: E402

# Issue #17's MoE layer: 8 experts, one empty, 32768 rows, N = 4096, K = 7168.
ISSUE_SIZES = [0, 512, 1024, 2048, 4096, 6144, 8192, 10752]

CHECK_CASES = [
    # (group sizes, N, K)
    ([70, 0, 129, 5, 64], 256, 192),
    ([0, 3, 64, 0], 512, 64),
    ([200, 56, 1], 264, 320),
    ([1000], 256, 256),
    ([0, 0, 0], 256, 64),
    ([300, 700, 1, 0, 1500, 129], 1024, 512),
]


def ends_of(sizes, dev):
    e, out = 0, []
    for s in sizes:
        e += s
        out.append(e)
    return torch.tensor(out, dtype=torch.int32, device=dev)


def poisoned(rows, n, dev, guard=4096):
    buf = torch.full((rows * n + guard,), float("nan"), dtype=torch.bfloat16, device=dev)
    return buf, buf[: rows * n].view(rows, n)


def group_errors(C, A, B, sizes):
    """Relative Frobenius error of each non-empty group's rows against float32 products."""
    errs, start = [], 0
    for g, s in enumerate(sizes):
        if s:
            ref = A[start:start + s].float() @ B[g].float()
            got = C[start:start + s].float()
            errs.append(((got - ref).norm() / ref.norm().clamp_min(1e-30)).item())
        start += s
    return errs


def run_ragged(k, sizes, n, kk, seed, dev):
    gen = torch.Generator(device=dev).manual_seed(seed)
    m, g = sum(sizes), len(sizes)
    # At least one row: a tensor map cannot describe an empty tensor.
    A = torch.randn(max(m, 1), kk, generator=gen, device=dev).to(torch.bfloat16)
    B = torch.randn(g, kk, n, generator=gen, device=dev).to(torch.bfloat16)
    buf, C = poisoned(m, n, dev)
    offs = ends_of(sizes, dev)
    stream = torch.cuda.current_stream().cuda_stream
    launch, grid = k.prepare({"A": A, "B": B, "C": C, "Offs": offs},
                             {"G": g, "M": m, "N": n, "K": kk}, stream)
    return launch, grid, (A, B, C, buf, offs)


def check_ragged(k, sizes, n, kk, seed, tol, dev):
    launch, grid, (A, B, C, buf, offs) = run_ragged(k, sizes, n, kk, seed, dev)
    launch()
    torch.cuda.synchronize()
    m = sum(sizes)
    unwritten = int(torch.isnan(C.float()).sum().item()) if m else 0
    guard_ok = bool(torch.isnan(buf[m * n:].float()).all().item())
    errs = group_errors(C, A, B, sizes)
    ok = unwritten == 0 and guard_ok and all(e <= tol for e in errs)
    print("ragged %-36s N=%-5d K=%-5d grid=%s: max err %.2e, unwritten %d, guard %s  %s"
          % (sizes, n, kk, grid, max(errs, default=0.0), unwritten,
             "ok" if guard_ok else "BROKEN", "PASS" if ok else "FAIL"))
    return ok


def contiguous_inputs(sizes, pad, n, kk, seed, dev):
    gen = torch.Generator(device=dev).manual_seed(seed)
    ids, starts = [], []
    for g, s in enumerate(sizes):
        starts.append(len(ids))
        padded = -(-s // pad) * pad
        ids += [g if r < s else -1 for r in range(padded)]
    m = len(ids)
    A = torch.randn(max(m, 1), kk, generator=gen, device=dev).to(torch.bfloat16)
    B = torch.randn(len(sizes), kk, n, generator=gen, device=dev).to(torch.bfloat16)
    gid = torch.tensor(ids or [-1], dtype=torch.int32, device=dev)
    return A, B, gid, starts, m


def check_contiguous(k, sizes, pad, bm, n, kk, seed, tol, dev):
    A, B, gid, starts, m = contiguous_inputs(sizes, pad, n, kk, seed, dev)
    if m == 0:
        # No rows: the grid (ceil(M / BM) programs) is empty, and there is nothing to launch.
        print("contiguous %-32s pad %d: no rows, no launch  PASS" % (sizes, pad))
        return True
    buf, C = poisoned(m, n, dev)
    stream = torch.cuda.current_stream().cuda_stream
    launch, grid = k.prepare({"A": A, "B": B, "C": C, "Gid": gid}, {"M": m, "N": n, "K": kk},
                             stream)
    launch()
    torch.cuda.synchronize()
    errs, unwritten = [], 0
    for g, (s, r0) in enumerate(zip(sizes, starts)):
        if s:
            ref = A[r0:r0 + s].float() @ B[g].float()
            got = C[r0:r0 + s].float()
            unwritten += int(torch.isnan(got).sum().item())
            errs.append(((got - ref).norm() / ref.norm().clamp_min(1e-30)).item())
    # Tiles of padding only (their first row's id is -1) must be zeros.
    ids = gid.tolist()[:m]
    pad_tiles = [t for t in range(0, m, bm) if ids[t] < 0]
    zeros_ok = all(bool((C[t:t + bm].float() == 0).all().item()) for t in pad_tiles)
    guard_ok = bool(torch.isnan(buf[m * n:].float()).all().item())
    ok = unwritten == 0 and guard_ok and zeros_ok and all(e <= tol for e in errs)
    print("contiguous %-32s pad %d N=%-5d K=%-5d grid=%s: max err %.2e, unwritten %d, "
          "padding tiles %d %s, guard %s  %s"
          % (sizes, pad, n, kk, grid, max(errs, default=0.0), unwritten, len(pad_tiles),
             "zero" if zeros_ok else "NOT ZERO", "ok" if guard_ok else "BROKEN",
             "PASS" if ok else "FAIL"))
    return ok


def torch_paths(A, B, sizes, offs):
    """The torch baselines available here: name -> callable."""
    paths = {}
    starts = [sum(sizes[:g]) for g in range(len(sizes))]

    def loop():
        for g, s in enumerate(sizes):
            if s:
                torch.matmul(A[starts[g]:starts[g] + s], B[g])
    paths["matmul loop"] = loop
    gm = getattr(torch, "_grouped_mm", None)
    if gm is not None:
        for name, b in (("_grouped_mm", B),
                        ("_grouped_mm (B column-major)",
                         B.transpose(-2, -1).contiguous().transpose(-2, -1))):
            try:
                gm(A, b, offs=offs)
                torch.cuda.synchronize()
                paths[name] = (lambda b=b: gm(A, b, offs=offs))
                break
            except Exception as e:  # this torch or GPU does not take these operands
                print("# torch.%s: %s" % (name, str(e).splitlines()[0]), file=sys.stderr)
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ragged", required=True, help="manifest of grouped_gemm")
    ap.add_argument("--contiguous", help="manifest of grouped_gemm_contiguous")
    ap.add_argument("--pad", type=int, default=128, help="contiguous layout's padding unit")
    ap.add_argument("--bm", type=int, default=128, help="the contiguous build's BM")
    ap.add_argument("--sizes", default=",".join(map(str, ISSUE_SIZES)))
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--k", type=int, default=7168)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--tol", type=float, default=1e-2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json")
    args = ap.parse_args()
    dev = torch.device("cuda")
    print("# %s, torch %s" % (torch.cuda.get_device_name(), torch.__version__))
    ragged = Kernel(args.ragged)
    ok = True
    for i, (sizes, n, kk) in enumerate(CHECK_CASES):
        ok &= check_ragged(ragged, sizes, n, kk, args.seed + i, args.tol, dev)
    contiguous = Kernel(args.contiguous) if args.contiguous else None
    if contiguous:
        for i, (sizes, n, kk) in enumerate(CHECK_CASES):
            for pad in sorted({args.bm, 2 * args.bm}):
                ok &= check_contiguous(contiguous, sizes, pad, args.bm, n, kk,
                                       args.seed + 100 + i, args.tol, dev)
    # Timing: the issue's layer.
    sizes = [int(s) for s in args.sizes.split(",")]
    m, n, kk = sum(sizes), args.n, args.k
    flop = 2.0 * m * n * kk
    ok &= check_ragged(ragged, sizes, n, kk, args.seed + 1000, args.tol, dev)
    launch, grid, (A, B, C, _, offs) = run_ragged(ragged, sizes, n, kk, args.seed + 1000, dev)
    rows = {"date_shape": {"sizes": sizes, "N": n, "K": kk}, "device": torch.cuda.get_device_name(),
            "torch": torch.__version__, "ms": {}}
    t = time_events(launch, args.iters)
    rows["ms"]["tilec grouped_gemm"] = t
    print("tilec grouped_gemm   grid=%s: %.3f ms, %.1f TFLOP/s" % (grid, t, flop / t / 1e9))
    if contiguous:
        A2, B2, gid, _, m2 = contiguous_inputs(sizes, args.pad, n, kk, args.seed + 2000, dev)
        _, C2 = poisoned(m2, n, dev)
        stream = torch.cuda.current_stream().cuda_stream
        l2, g2 = contiguous.prepare({"A": A2, "B": B2, "C": C2, "Gid": gid},
                                    {"M": m2, "N": n, "K": kk}, stream)
        t2 = time_events(l2, args.iters)
        rows["ms"]["tilec grouped_gemm_contiguous"] = t2
        print("tilec contiguous     grid=%s: %.3f ms, %.1f TFLOP/s over the real rows (%d "
              "padded)" % (g2, t2, flop / t2 / 1e9, m2))
    best = None
    for name, fn in torch_paths(A, B, sizes, offs).items():
        tt = time_events(fn, args.iters)
        rows["ms"]["torch " + name] = tt
        print("torch %-24s: %.3f ms, %.1f TFLOP/s" % (name, tt, flop / tt / 1e9))
        best = tt if best is None else min(best, tt)
    if best:
        print("tilec / best torch: %.3f" % (best / t))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    print("ALL PASS" if ok else "SOME FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
