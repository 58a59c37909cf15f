#!/usr/bin/env python3
"""fp8 GEMMs on the GPU: tilec's examples/gemm_fp8_e4m3.tile (tools/gpu/build_fp8.sh builds
its variants) against an fp64 reference and against torch._scaled_mm, on the same inputs.

    python3 tools/gpu/fp8.py DIR [--check] [--accuracy] [--time] [--json OUT]

DIR holds build_fp8.sh's folders (e4m3-bf16-sm90a, e4m3-f32-sm90a, mixed-f32-sm90a, and the
sm90 ones). Inputs: X = randn, quantized as a tensor compiler does with per-tensor scales:
s = amax(X) / fmax (448 for e4m3, 57344 for e5m2), X_q = clamp(X / s) in fp8 (round to
nearest even, saturating: the values are clamped into range first). A is M x K, B is N x K
(K contiguous in both, torch._scaled_mm's mat2 = B.t()). TMA needs 16-byte row pitches: rows
of K not a multiple of 16 are padded, the padding filled with NaN bytes (0x7F, e4m3's NaN).

--check: every variant on ragged shapes; C poisoned (all-ones bits) with a poisoned guard
behind it; the relative Frobenius error against the fp64 product of the quantized inputs,
times sa * sb, must be <= 1e-2 for a bf16 C and <= 1e-3 for an f32 C; every element written;
the guard intact.

--accuracy: f32 C at M = N = 1024 and K from 1024 to 65536: the error of tilec and of
_scaled_mm (out_dtype f32, use_fast_accum False and True) against fp64, per element
(relative Frobenius and max |err| / max |ref|).

--time: bf16 C, tilec (sm_90a; per-tensor scales, and --rowwise also the row-wise example,
examples/gemm_fp8_rowwise.tile, against _scaled_mm with M x 1 and 1 x N scales) against
_scaled_mm (use_fast_accum False, and True) at
8192^3 and the 21 shapes of tools/gpu/bench.py (M,N,K), CUDA events, 5 warm-ups, the median
of --iters; the kernel torch ran is read with torch.profiler and printed.

--interleave V1,V2,...: the variants (folders of DIR) on --shapes (default 8192x8192x8192;
`bench`: the 21 shapes),
interleaved: --reps rounds, each timing every variant and then _scaled_mm (use_fast_accum
False) once, on the same inputs; prints each variant's median over the rounds, the spread
(min-max of its rounds) and the ratio _scaled_mm / tilec of the medians. Each variant's
output is checked first (written, guard intact, bf16 error <= 1e-2 on 256 rows).
"""
import argparse
import glob
import json
import math
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as tr  # noqa: E402
from bench import default_shapes  # noqa: E402

FMAX = {torch.float8_e4m3fn: 448.0, torch.float8_e5m2: 57344.0}
NAN_BYTE = {torch.float8_e4m3fn: 0x7F, torch.float8_e5m2: 0x7F}


def quantize(shape, dtype, gen, dev, rowwise=False):
    """(X_q with a 16-byte row pitch, its scale: a 1x1 f32 tensor, or rowwise one per row,
    rows x 1)."""
    x = torch.randn(*shape, generator=gen, dtype=torch.float32, device=dev)
    if rowwise:
        # Rows of different magnitudes, so that a wrong row's scale shows.
        x = x * torch.rand(shape[0], 1, generator=gen, device=dev).add(0.1) * 4
        s = x.abs().amax(dim=1, keepdim=True).clamp_min(1e-12) / FMAX[dtype]
    else:
        s = x.abs().amax().clamp_min(1e-12) / FMAX[dtype]
    rows, cols = shape
    pitch = -(-cols // 16) * 16
    store = torch.full((rows, pitch), NAN_BYTE[dtype], dtype=torch.uint8, device=dev)
    q = store.view(dtype)[:, :cols]
    q.copy_((x / s).clamp(-FMAX[dtype], FMAX[dtype]).to(dtype))
    return q, (s.float().contiguous() if rowwise else s.reshape(1, 1).float())


class Case:
    def __init__(self, k, M, N, K, seed):
        self.k, self.M, self.N, self.K = k, M, N, K
        dev = torch.device("cuda")
        gen = torch.Generator(device=dev)
        gen.manual_seed(seed)
        dt = {k.role(p): tr.TORCH_DTYPE[p["dtype"]] for p in k.m["params"]
              if p["kind"] != "scalar"}
        self.rowwise = "rowwise" in k.m["kernel"]
        self.A, self.sa = quantize((M, K), dt["A"], gen, dev, self.rowwise)
        self.B, sb = quantize((N, K), dt["B"], gen, dev, self.rowwise)
        self.sb = sb.reshape(1, N).contiguous() if self.rowwise else sb
        self.cdt = dt["C"]
        guard = 4096
        self.cbuf = torch.empty(M * N + guard, dtype=self.cdt, device=dev)
        self.ibits = {2: torch.int16, 4: torch.int32}[self.cbuf.element_size()]
        self.C = self.cbuf[:M * N].view(M, N)
        tensors = {"A": self.A, "B": self.B, "C": self.C, "SA": self.sa, "SB": self.sb}
        stream = torch.cuda.current_stream().cuda_stream
        self.launch, self.grid = k.prepare(tensors, {"M": M, "N": N, "K": K}, stream)

    def ref(self, rows=None):
        a = self.A if rows is None else self.A[:rows]
        sa = self.sa if rows is None or not self.rowwise else self.sa[:rows]
        return (a.double() @ self.B.double().t()) * sa.double() * self.sb.double()

    def run_checked(self):
        self.cbuf.view(self.ibits).fill_(-1)
        torch.cuda.synchronize()
        self.launch()
        torch.cuda.synchronize()
        out = self.C.double()
        written = not bool(torch.isnan(out).any())
        guard_ok = bool((self.cbuf[self.M * self.N:].view(self.ibits) == -1).all())
        return out, written, guard_ok


def rel_err(out, ref):
    d = torch.nan_to_num(out.double(), nan=0.0) - ref
    return float(torch.linalg.vector_norm(d) / torch.linalg.vector_norm(ref).clamp_min(1e-300))


def max_err(out, ref):
    return float((out.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-300))


def scaled_mm(c, out_dtype, fast):
    return torch._scaled_mm(c.A, c.B.t(), scale_a=c.sa, scale_b=c.sb, out_dtype=out_dtype,
                            use_fast_accum=fast)


def check(dirs, seed):
    shapes = [(1, 1, 1), (100, 200, 300), (128, 256, 128), (129, 257, 130), (1000, 1000, 1000),
              (255, 513, 4099), (2048, 2048, 2048), (4096, 4096, 4096)]
    rows, ok_all = [], True
    for d in dirs:
        man = glob.glob(os.path.join(d, "*.json"))[0]
        k = tr.Kernel(man)
        for i, (M, N, K) in enumerate(shapes):
            c = Case(k, M, N, K, seed * 1000003 + i)
            out, written, guard_ok = c.run_checked()
            ref = c.ref()
            e = rel_err(out, ref)
            tol = 1e-2 if c.cdt == torch.bfloat16 else 1e-3
            ok = written and guard_ok and e <= tol
            ok_all &= ok
            row = {"variant": os.path.basename(d), "M": M, "N": N, "K": K, "rel_err": e,
                   "written": written, "guard_ok": guard_ok, "ok": ok}
            rows.append(row)
            print("%-18s %5d %5d %5d  rel %.3e  written %s guard %s  %s" % (
                row["variant"], M, N, K, e, written, guard_ok, "ok" if ok else "FAIL"), flush=True)
    return rows, ok_all


def accuracy(d, seed):
    man = glob.glob(os.path.join(d, "*.json"))[0]
    k = tr.Kernel(man)
    rows = []
    print("%-18s %6s  %10s %10s  %10s %10s  %10s %10s" % (
        "variant", "K", "tilec", "max", "scaled", "max", "fast", "max"))
    for i, K in enumerate([1024, 4096, 16384, 65536]):
        c = Case(k, 1024, 1024, K, seed * 7919 + i)
        out, written, guard_ok = c.run_checked()
        ref = c.ref()
        s0 = scaled_mm(c, torch.float32, False).double()
        s1 = scaled_mm(c, torch.float32, True).double()
        row = {"variant": os.path.basename(d), "M": 1024, "N": 1024, "K": K,
               "tilec_rel": rel_err(out, ref), "tilec_max": max_err(out, ref),
               "scaled_mm_rel": rel_err(s0, ref), "scaled_mm_max": max_err(s0, ref),
               "fast_accum_rel": rel_err(s1, ref), "fast_accum_max": max_err(s1, ref),
               "written": written, "guard_ok": guard_ok}
        rows.append(row)
        print("%-18s %6d  %.3e  %.3e  %.3e  %.3e  %.3e  %.3e" % (
            row["variant"], K, row["tilec_rel"], row["tilec_max"], row["scaled_mm_rel"],
            row["scaled_mm_max"], row["fast_accum_rel"], row["fast_accum_max"]), flush=True)
    return rows


def torch_kernel_name(c):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        scaled_mm(c, torch.bfloat16, False)
        torch.cuda.synchronize()
    names = [e.key for e in prof.key_averages() if e.device_type.name == "CUDA"]
    return names


def _time_or_nan(fn, iters):
    """The median time of fn, or NaN (printed) when torch refuses the call."""
    try:
        return tr.time_events(fn, iters)
    except RuntimeError as e:
        print("# torch refused:", str(e).splitlines()[0], flush=True)
        return float("nan")


def timing(d, iters, seed):
    man = glob.glob(os.path.join(d, "*.json"))[0]
    k = tr.Kernel(man)
    rows = []
    shapes = [(8192, 8192, 8192)] + [s for s in default_shapes() if s != (8192, 8192, 8192)]
    print("%6s %6s %6s  %9s %8s  %9s %8s  %6s  %9s %8s  %6s" % (
        "M", "N", "K", "tilec_ms", "TFLOP/s", "scaled_ms", "TFLOP/s", "ratio", "fast_ms",
        "TFLOP/s", "ratio"))
    for i, (M, N, K) in enumerate(shapes):
        c = Case(k, M, N, K, seed * 31 + i)
        out, written, guard_ok = c.run_checked()
        e = rel_err(out, c.ref()) if M * N * K <= 2**36 else rel_err(out[:256], c.ref(256))
        t = tr.time_events(c.launch, iters)
        buf = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        ts, tf = (_time_or_nan(lambda f=f: scaled_mm(c, torch.bfloat16, f), iters)
                  for f in (False, True))
        del buf
        fl = 2.0 * M * N * K
        row = {"M": M, "N": N, "K": K, "rel_err": e, "written": written, "guard_ok": guard_ok,
               "tilec_ms": t, "scaled_mm_ms": ts, "fast_accum_ms": tf,
               "tilec_tflops": fl / t / 1e9, "scaled_mm_tflops": fl / ts / 1e9,
               "fast_accum_tflops": fl / tf / 1e9, "ratio": ts / t, "ratio_fast": tf / t}
        if i == 0:
            row["torch_kernels"] = torch_kernel_name(c)
            print("# torch._scaled_mm ran:", row["torch_kernels"], flush=True)
        rows.append(row)
        print("%6d %6d %6d  %9.4f %8.1f  %9.4f %8.1f  %6.3f  %9.4f %8.1f  %6.3f  rel %.1e%s" % (
            M, N, K, t, row["tilec_tflops"], ts, row["scaled_mm_tflops"], row["ratio"], tf,
            row["fast_accum_tflops"], row["ratio_fast"], e,
            "" if written and guard_ok else "  NOT WRITTEN/GUARD"), flush=True)
        del c
        torch.cuda.empty_cache()
    def geo(key):
        xs = [r[key] for r in rows[1:] if r[key] == r[key]]
        return math.exp(statistics.mean(math.log(x) for x in xs)) if xs else float("nan")
    g, gf = geo("ratio"), geo("ratio_fast")
    print("# geomean over the 21 shapes: tilec / _scaled_mm %.3f, / fast_accum %.3f" % (g, gf))
    return rows, g, gf


def interleave(root, variants, shapes, iters, reps, seed):
    rows = []
    for si, (M, N, K) in enumerate(shapes):
        cases = {}
        for v in variants:
            man = glob.glob(os.path.join(root, v, "*.json"))[0]
            c = Case(tr.Kernel(man), M, N, K, seed * 31 + si)
            out, written, guard_ok = c.run_checked()
            e = rel_err(out[:256], c.ref(256))
            ok = written and guard_ok and e <= 1e-2
            print("# %s %dx%dx%d: rel %.1e written %s guard %s%s" % (
                v, M, N, K, e, written, guard_ok, "" if ok else "  FAIL"), flush=True)
            cases[v] = c
        ref = cases[variants[0]]
        t = {v: [] for v in variants}
        ts = []
        for _ in range(reps):
            for v in variants:
                t[v].append(tr.time_events(cases[v].launch, iters))
            ts.append(tr.time_events(lambda: scaled_mm(ref, torch.bfloat16, False), iters))
        sm = statistics.median(ts)
        fl = 2.0 * M * N * K
        print("%dx%dx%d: _scaled_mm %.4f ms (%.4f-%.4f), %.0f TFLOP/s" % (
            M, N, K, sm, min(ts), max(ts), fl / sm / 1e9), flush=True)
        for v in variants:
            m = statistics.median(t[v])
            print("  %-32s %.4f ms (%.4f-%.4f) %6.0f TFLOP/s  ratio %.3f" % (
                v, m, min(t[v]), max(t[v]), fl / m / 1e9, sm / m), flush=True)
            rows.append({"variant": v, "M": M, "N": N, "K": K, "ms": m, "rounds": t[v],
                         "scaled_mm_ms": sm, "scaled_mm_rounds": ts, "ratio": sm / m})
        del cases, ref
        torch.cuda.empty_cache()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--accuracy", action="store_true")
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--rowwise", action="store_true")
    ap.add_argument("--accuracy-variants", default="e4m3-f32-sm90a,mixed-f32-sm90a,e4m3-f32-sm90",
                    help="folders of DIR that --accuracy runs (f32 C)")
    ap.add_argument("--time-variants", default="e4m3-bf16-sm90a",
                    help="folders of DIR that --time runs (bf16 C, sm_90a)")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--interleave", help="comma-separated variants to time interleaved")
    ap.add_argument("--shapes", default="8192x8192x8192",
                    help="MxNxK,... for --interleave, or 'bench' for the 21 shapes")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--json")
    args = ap.parse_args()
    print("# %s, torch %s" % (torch.cuda.get_device_name(), torch.__version__), flush=True)
    res, ok = {}, True
    if args.check:
        dirs = sorted(glob.glob(os.path.join(args.dir, "*-sm90*")))
        res["check"], ok = check(dirs, args.seed)
    if args.accuracy:
        res["accuracy"] = []
        for v in args.accuracy_variants.split(","):
            res["accuracy"] += accuracy(os.path.join(args.dir, v), args.seed)
    if args.time:
        res["time"] = {}
        for v in args.time_variants.split(","):
            print("# timing", v, flush=True)
            rows, g, gf = timing(os.path.join(args.dir, v), args.iters, args.seed)
            res["time"][v] = {"rows": rows, "geomean": g, "geomean_fast": gf}
    if args.interleave:
        shapes = (default_shapes() if args.shapes == "bench" else
                  [tuple(int(x) for x in sh.split("x")) for sh in args.shapes.split(",")])
        res["interleave"] = interleave(args.dir, args.interleave.split(","), shapes,
                                       args.iters, args.reps, args.seed)
    if args.rowwise:
        rows, g, gf = timing(os.path.join(args.dir, "rowwise-bf16-sm90a"), args.iters, args.seed)
        res["time_rowwise"] = {"rows": rows, "geomean": g, "geomean_fast": gf}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
