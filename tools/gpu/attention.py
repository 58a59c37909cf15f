#!/usr/bin/env python3
"""Check tilec's attention forward kernels on a CUDA GPU against an fp32 SDPA reference.

    python3 tools/gpu/attention.py DIR [DIR ...] [--time] [--seed 0]

Each DIR holds tools/gpu/build_attention.sh outputs for one target
(attention_fwd[_causal]_dD.{ptx,json}), or tools/gpu/attention_blocks.py's variants
(attention_fwd[_causal]_qBQ_kBK_dD). Every manifest is loaded with run.py's `Kernel`
and run on each case (B, H, HKV, SQ, SKV): ragged sequence lengths (not multiples of the
64-row block), grouped-query attention (HKV < H), causal (top-left, as torch's
is_causal) for the `_causal` kernels.

Per case:
  * Q, K, V are random bf16 (seeded), laid out [B·H, S, D] and [B·HKV, S, D];
  * O is poisoned (a NaN bit pattern) with a poisoned guard after it; after the launch no
    NaN may be left and the guard must be intact;
  * the reference is torch's SDPA on the fp32 copies of the same inputs (math backend,
    TF32 off); the error is ||O - ref|| / ||ref||;
  * the same inputs go through torch's bf16 SDPA with the cuDNN and the flash backends
    (where torch runs them), against the same reference; the check passes when tilec's
    error is at most 1.01 times the larger of theirs (and at most 2e-2 when neither runs).

--time also times each kernel on the shapes of SHAPES with its head dim (#19's: B, H, S, D),
against torch's bf16 SDPA with the cuDNN and the flash (FA2) backends, with run.py's
`time_events` (CUDA events, 5 warm-up launches, median of 20), and prints TFLOP/s
(4·B·H·S²·D, halved when causal) and tilec's speed relative to each. Exit status 1 if any
check fails.

--launch B,H,S only launches each kernel of head dim D twice on that shape (random inputs,
no checks, no timing): for a profiler, e.g.

    ncu --clock-control none --launch-skip 1 --launch-count 1 -k regex:attention_fwd \
        python3 tools/gpu/attention.py DIR --launch 4,32,4096
"""
import argparse
import math
import os
import re
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Kernel, time_events  # noqa: E402

DEV = torch.device("cuda")
CASES = [(1, 2, 2, 64, 64), (2, 4, 4, 200, 333), (1, 8, 2, 1000, 1000), (2, 3, 1, 77, 513),
         (1, 4, 4, 513, 130), (2, 16, 16, 1024, 1024)]
GUARD = 4096


def sdpa(q, k, v, causal, backend):
    with sdpa_kernel([backend]):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                              enable_gqa=q.shape[1] != k.shape[1])


def inputs(case, d, seed):
    b, h, hkv, sq, skv = case
    g = torch.Generator(device=DEV).manual_seed(seed)
    q = torch.randn(b, h, sq, d, device=DEV, dtype=torch.bfloat16, generator=g)
    k = torch.randn(b, hkv, skv, d, device=DEV, dtype=torch.bfloat16, generator=g)
    v = torch.randn(b, hkv, skv, d, device=DEV, dtype=torch.bfloat16, generator=g)
    return q, k, v


def run_kernel(kern, q, k, v, out):
    b, h, sq, d = q.shape
    hkv, skv = k.shape[1], k.shape[2]
    tensors = {"Q": q.reshape(b * h, sq, d), "K": k.reshape(b * hkv, skv, d),
               "V": v.reshape(b * hkv, skv, d), "O": out}
    scalars = {"B": b, "H": h, "HKV": hkv, "SQ": sq, "SKV": skv, "scale": 1.0 / math.sqrt(d)}
    launch, _ = kern.prepare(tensors, scalars, torch.cuda.current_stream().cuda_stream)
    return launch


def check(kern, d, causal, case, seed):
    b, h, hkv, sq, skv = case
    q, k, v = inputs(case, d, seed)
    with sdpa_kernel([SDPBackend.MATH]):
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal,
                                             enable_gqa=h != hkv)
    n = b * h * sq * d
    buf = torch.empty(n + GUARD, device=DEV, dtype=torch.bfloat16)
    buf.view(torch.int16).fill_(0x7FA1)
    out = buf[:n].view(b * h, sq, d)
    launch = run_kernel(kern, q, k, v, out)
    launch()
    torch.cuda.synchronize()
    got = out.view(b, h, sq, d).float()
    unwritten = int(torch.isnan(got).sum())
    guard_ok = bool((buf[n:].view(torch.int16) == 0x7FA1).all())
    err = ((got - ref).norm() / ref.norm()).item()
    theirs = {}
    for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        try:
            o = sdpa(q, k, v, causal, be).float()
            theirs[name] = ((o - ref).norm() / ref.norm()).item()
        except RuntimeError:
            theirs[name] = None
    known = [e for e in theirs.values() if e is not None]
    # Equal to torch's to 1 % (the fifth digit of errors near 2e-3 is rounding noise).
    bound = 1.01 * max(known) if known else 2e-2
    ok = unwritten == 0 and guard_ok and err <= bound
    fmt = lambda e: "n/a" if e is None else "%.4e" % e  # noqa: E731
    print("  %-22s %s err %.4e  cudnn %s  flash %s  unwritten %d  guard %s  %s" % (
        case, "causal" if causal else "      ", err, fmt(theirs["cudnn"]), fmt(theirs["flash"]),
        unwritten, "ok" if guard_ok else "BROKEN", "ok" if ok else "FAIL"), flush=True)
    return ok


# #19's shapes (B, H, S, D); each kernel is timed on those of its head dim.
SHAPES = [(4, 32, 4096, 128), (8, 16, 2048, 128), (16, 16, 1024, 64), (2, 16, 8192, 128),
          (2, 16, 8192, 256)]


def bench(kern, d, causal):
    for (b, h, s, dd) in SHAPES:
        if dd != d:
            continue
        case = (b, h, h, s, s)
        q, k, v = inputs(case, d, 0)
        out = torch.empty(b * h, s, d, device=DEV, dtype=torch.bfloat16)
        launch = run_kernel(kern, q, k, v, out)
        flop = 4 * b * h * s * s * d / (2 if causal else 1)
        ours = time_events(launch, 20)
        line = "  time %s d=%d %s: tilec %.3f ms (%.0f TFLOP/s)" % (
            (b, h, s, d), d, "causal" if causal else "non-causal", ours, flop / ours / 1e9)
        for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                         ("fa2", SDPBackend.FLASH_ATTENTION)):
            try:
                t = time_events(lambda: sdpa(q, k, v, causal, be), 20)
                line += ", %s %.3f ms (%.0f TFLOP/s, tilec %.2fx)" % (
                    name, t, flop / t / 1e9, t / ours)
            except RuntimeError:
                line += ", %s n/a" % name
        print(line, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--launch", metavar="B,H,S",
                    help="only launch each kernel twice on this shape (for a profiler)")
    args = ap.parse_args()
    shape = None
    if args.launch:
        try:
            shape = tuple(int(x) for x in args.launch.split(","))
        except ValueError:
            shape = ()
        if len(shape) != 3 or min(shape) < 1:
            ap.error("--launch takes B,H,S: three positive integers, found %r" % args.launch)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    failed = 0
    for d_ in args.dirs:
        for f in sorted(os.listdir(d_)):
            mt = re.fullmatch(r"attention_fwd(_causal)?(?:_q\d+_k\d+)?_d(\d+)\.json", f)
            if not mt:
                continue
            causal, d = mt.group(1) is not None, int(mt.group(2))
            kern = Kernel(os.path.join(d_, f))
            if shape:
                b, h, s = shape
                q, k, v = inputs((b, h, h, s, s), d, args.seed)
                out = torch.empty(b * h, s, d, device=DEV, dtype=torch.bfloat16)
                launch = run_kernel(kern, q, k, v, out)
                launch()
                launch()
                torch.cuda.synchronize()
                print("%s: launched twice on %s" % (os.path.join(d_, f), (b, h, s, d)), flush=True)
                continue
            print("%s (%d registers)" % (os.path.join(d_, f), kern.num_regs), flush=True)
            for i, case in enumerate(CASES):
                failed += not check(kern, d, causal, case, args.seed + i)
            if args.time:
                bench(kern, d, causal)
    print("FAILED %d" % failed if failed else "all passed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
