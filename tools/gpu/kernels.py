#!/usr/bin/env python3
"""Check and time tilec's kernels without a dot (plain launch) on a CUDA GPU.

    python3 tools/gpu/kernels.py DIR [DIR ...] [--time] [--json OUT] [--seed 0]

Each DIR holds `tile-compile` outputs (NAME.ptx + NAME.json) for one target. Every manifest
whose kernel has a case table below is loaded with run.py's `Kernel` (which binds torch
tensors and scalars to the manifest's parameters by name) and run on each case:

  * inputs are fresh random tensors (seeded per case), some of them strided views (a row
    pitch wider than the row, so the kernel's slow path runs) and ragged sizes;
  * every output is a view into a wider buffer filled with a NaN bit pattern; after the
    launch every element of the view must be written (no poison left) and everything
    outside it untouched (the pitch gaps and a guard after the end); a kernel that adds
    into its output (`zero_out`, e.g. col_sums_split's atomic adds) gets zeros inside the
    view, and only the reference comparison tells a missing add;
  * the result is compared with a float64 reference computed by torch from the same
    inputs: ||out - ref|| / ||ref|| must be at most the case's tolerance.

--time also times, at the bandwidth shapes, the tilec kernel, torch eager, torch.compile
(Inductor's Triton kernel), quack-kernels (CuTe DSL) where it is importable and has the
kernel, and a device-to-device copy of the same bytes, interleaved, with CUDA events
(warm-up, median of 50), and prints GB/s (bytes read + written once). quack's LayerNorm
takes f32 weight and bias: it gets f32 copies of tilec's bf16 ones (made before timing).
Exit status 1 if any check fails.
"""
import argparse
import json
import math
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Kernel  # noqa: E402

DEV = torch.device("cuda")
POISON = {torch.bfloat16: 0x7FA1, torch.float16: 0x7E01, torch.float32: 0x7FC0DEAD}
INT_VIEW = {torch.bfloat16: torch.int16, torch.float16: torch.int16, torch.float32: torch.int32}


def poisoned(shape, dtype, pad):
    """An output view of `shape` into a wider poisoned buffer: (view, buffer, pad)."""
    rows = shape[0] if len(shape) == 2 else 1
    cols = shape[-1]
    buf = torch.empty((rows * (cols + pad) + 64,), dtype=dtype, device=DEV)
    bits = buf.view(INT_VIEW[dtype])
    bits.fill_(POISON[dtype])
    grid = buf[: rows * (cols + pad)].view(rows, cols + pad)
    view = grid[:, :cols]
    if len(shape) == 1:
        view = view[0]
    return view, buf


def written(view, buf, dtype):
    """(every element of view written, nothing outside it written)."""
    bits = buf.view(INT_VIEW[dtype])
    p = POISON[dtype]
    mask = torch.ones_like(bits, dtype=torch.bool)
    inside = torch.zeros_like(bits, dtype=torch.bool)
    idx = torch.arange(view.numel(), device=DEV)
    if view.dim() == 1:
        offs = idx * view.stride(0)
    else:
        r, c = idx // view.shape[1], idx % view.shape[1]
        offs = r * view.stride(0) + c * view.stride(1)
    offs = offs + (view.data_ptr() - buf.data_ptr()) // buf.element_size()
    inside[offs] = True
    all_written = bool((bits[offs] != p).all().item()) if view.numel() else True
    untouched = bool((bits[mask & ~inside] == p).all().item())
    return all_written, untouched


def randn(shape, dtype, gen, pad=0, scale=1.0):
    """Random tensor; with pad > 0 a strided view (row pitch = cols + pad)."""
    if pad and len(shape) == 2:
        big = torch.randn(shape[0], shape[1] + pad, generator=gen, device=DEV) * scale
        return big.to(dtype)[:, : shape[1]]
    return (torch.randn(*shape, generator=gen, device=DEV) * scale).to(dtype)


def rel_err(out, ref):
    out, ref = out.double(), ref.double()
    den = ref.norm().item()
    return (out - ref).norm().item() / (den if den > 0 else 1.0)


# ---- the kernels ---------------------------------------------------------------------
# Each: dtype, cases [(shape, pad)], inputs(shape, gen, pad) -> (tensors, scalars),
# reference(tensors, scalars) -> float64 tensor, output name, tolerance, bandwidth shapes.

def softmax_ref(t, s):
    return torch.softmax(t["X"].double(), dim=-1)


def rmsnorm_ref(t, s):
    x = t["X"].double()
    r = torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + s["eps"])
    return x * r * t["W"].double()


def layernorm_ref(t, s):
    x = t["X"].double()
    return torch.nn.functional.layer_norm(
        x, (x.shape[-1],), t["W"].double(), t["B"].double(), eps=s["eps"])


def quack_fn(name):
    """quack-kernels' kernel for `name` as a closure over the tensors, or None."""
    try:
        import quack  # noqa: F401
        from quack.rmsnorm import layernorm_fwd
    except Exception:  # noqa: BLE001
        return None

    def make(t, s):
        x = t["X"]
        if name == "softmax":
            return lambda: quack.softmax(x)
        if name == "rmsnorm":
            return lambda: quack.rmsnorm(x, t["W"], eps=s["eps"])
        w, b = t["W"].float(), t["B"].float()
        return lambda: layernorm_fwd(x, w, b, eps=s["eps"])
    return make


def matrix_inputs(dtype, extra=None):
    def make(shape, gen, pad):
        M, N = shape
        t = {"X": randn((M, N), dtype, gen, pad, scale=3.0)}
        s = {"M": M, "N": N}
        if extra:
            extra(t, s, shape, gen)
        return t, s
    return make


def norm_weights(bias):
    def extra(t, s, shape, gen):
        N = shape[1]
        t["W"] = (1 + 0.1 * torch.randn(N, generator=gen, device=DEV)).to(torch.bfloat16)
        if bias:
            t["B"] = (0.1 * torch.randn(N, generator=gen, device=DEV)).to(torch.bfloat16)
        s["eps"] = 1e-6
    return extra


def vadd_inputs(shape, gen, pad):
    (N,) = shape
    return {"X": randn((N,), torch.float32, gen), "Y": randn((N,), torch.float32, gen)}, {"N": N}


def transpose_inputs(shape, gen, pad):
    M, N = shape
    return {"X": randn((M, N), torch.float32, gen, pad)}, {"M": M, "N": N}


def col_sums_inputs(shape, gen, pad):
    M, N = shape
    return {"X": randn((M, N), torch.float32, gen, pad)}, {"M": M, "N": N}


def sba_inputs(shape, gen, pad):
    M, N = shape
    t = {"X": randn((M, N), torch.bfloat16, gen, pad, scale=3.0),
         "B": randn((N,), torch.bfloat16, gen)}
    return t, {"M": M, "N": N, "s": 0.75}


def sba_ref(t, s):
    v = t["X"].double() * s["s"] + t["B"].double()
    silu = v / (1 + torch.exp(-v))
    gelu = 0.5 * v * (1 + torch.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
    return {"Y": silu, "G": gelu}


def emb_inputs(shape, gen, pad):
    T, D = shape
    V = 1000
    ids = torch.randint(-3, V + 3, (T,), generator=gen, device=DEV, dtype=torch.int32)
    return {"Ids": ids, "E": randn((V, D), torch.bfloat16, gen, pad)}, {"T": T, "D": D}


def emb_ref(t, s):
    ids = t["Ids"].long()
    ok = (ids >= 0) & (ids < t["E"].shape[0])
    rows = t["E"].double()[ids.clamp(0, t["E"].shape[0] - 1)]
    return rows * ok[:, None]


KERNELS = {
    "embedding": dict(
        out="Y", dtype=torch.bfloat16, inputs=emb_inputs, ref=emb_ref, tol=0.0,
        out_shape=lambda t: (t["Ids"].shape[0], t["E"].shape[1]),
        cases=[((16, 256), 0), ((5, 300), 3), ((1, 1), 0), ((4000, 777), 0)],
        # No bandwidth row yet: the bytes a gather moves are the rows it picks, not the
        # table (the generic count here would count the table once).
        torch_fn=None, bw=[]),
    "scale_bias_act": dict(
        out=["Y", "G"], dtype=torch.bfloat16, inputs=sba_inputs, ref=sba_ref, tol=1e-2,
        cases=[((8, 256), 0), ((3, 100), 5), ((1, 1), 0), ((1000, 777), 0)],
        torch_fn=lambda t, s: (torch.nn.functional.silu(t["X"] * s["s"] + t["B"]),
                               torch.nn.functional.gelu(t["X"] * s["s"] + t["B"],
                                                        approximate="tanh")),
        bw=[((16384, 8192),)]),
    "vadd": dict(
        out="Z", dtype=torch.float32, inputs=vadd_inputs,
        ref=lambda t, s: t["X"].double() + t["Y"].double(), tol=1e-7,
        cases=[((1,), 0), ((1000,), 0), ((1024,), 0), ((4097,), 0), ((1 << 20 | 3,), 0)],
        torch_fn=lambda t, s: torch.add(t["X"], t["Y"]),
        bw=[((1 << 28,),)]),
    "transpose": dict(
        out="Y", dtype=torch.float32, inputs=transpose_inputs,
        out_shape=lambda t: (t["X"].shape[1], t["X"].shape[0]),
        ref=lambda t, s: t["X"].double().t(), tol=0.0,
        cases=[((64, 64), 0), ((70, 130), 3), ((1, 5), 0), ((1000, 777), 0)],
        torch_fn=lambda t, s: t["Y"].copy_(t["X"].t()),
        bw=[((8192, 8192),)]),
    "col_sums": dict(
        out="S", dtype=torch.float32, inputs=col_sums_inputs,
        out_shape=lambda t: (1, t["X"].shape[1]),
        ref=lambda t, s: t["X"].double().sum(dim=0, keepdim=True), tol=1e-6,
        cases=[((64, 256), 0), ((70, 130), 3), ((1, 5), 0), ((5000, 1000), 0)],
        torch_fn=lambda t, s: torch.sum(t["X"], dim=0, keepdim=True, out=t["S"]),
        bw=[((16384, 8192),)]),
    "col_sums_split": dict(
        out="S", dtype=torch.float32, inputs=col_sums_inputs, zero_out=True,
        out_shape=lambda t: (1, t["X"].shape[1]),
        ref=lambda t, s: t["X"].double().sum(dim=0, keepdim=True), tol=1e-6,
        cases=[((64, 256), 0), ((70, 130), 3), ((1, 5), 0), ((5000, 1000), 0),
               ((100000, 300), 0)],
        torch_fn=lambda t, s: torch.sum(t["X"], dim=0, keepdim=True, out=t["S"]),
        bw=[((262144, 512),)]),
    "softmax": dict(
        out="Y", dtype=torch.bfloat16, inputs=matrix_inputs(torch.bfloat16), ref=softmax_ref,
        tol=1e-2,
        cases=[((1, 1), 0), ((3, 100), 0), ((17, 4096), 0), ((64, 1000), 8), ((5, 4095), 1),
               ((300, 4096), 0)],
        torch_fn=lambda t, s: torch.softmax(t["X"], dim=-1), quack="softmax",
        bw=[((32768, 4096),)]),
    "softmax_rows": dict(
        out="Y", dtype=torch.float32, inputs=matrix_inputs(torch.float32), ref=softmax_ref,
        tol=1e-5,
        cases=[((4, 1024), 0), ((5, 1000), 0), ((130, 7), 3), ((1, 1), 0), ((1001, 1024), 0)],
        torch_fn=lambda t, s: torch.softmax(t["X"], dim=-1),
        bw=[((65536, 1024),)]),
    "softmax_online": dict(
        out="Y", dtype=torch.bfloat16, inputs=matrix_inputs(torch.bfloat16), ref=softmax_ref,
        tol=1e-2,
        cases=[((3, 5000), 0), ((2, 2048), 0), ((7, 100), 5), ((1, 10000), 0),
               ((40, 32768), 0)],
        torch_fn=lambda t, s: torch.softmax(t["X"], dim=-1),
        bw=[((8192, 32768),)]),
    "rmsnorm": dict(
        out="Y", dtype=torch.bfloat16, inputs=matrix_inputs(torch.bfloat16, norm_weights(False)),
        ref=rmsnorm_ref, tol=1e-2,
        cases=[((1, 1), 0), ((3, 100), 0), ((17, 4096), 0), ((64, 1000), 8), ((5, 4095), 1)],
        torch_fn=lambda t, s: torch.nn.functional.rms_norm(
            t["X"], (t["X"].shape[-1],), t["W"], s["eps"]), quack="rmsnorm",
        bw=[((32768, 4096),)]),
    "layernorm": dict(
        out="Y", dtype=torch.bfloat16, inputs=matrix_inputs(torch.bfloat16, norm_weights(True)),
        ref=layernorm_ref, tol=1e-2,
        cases=[((1, 2), 0), ((3, 100), 0), ((17, 4096), 0), ((64, 1000), 8), ((5, 4095), 1)],
        torch_fn=lambda t, s: torch.nn.functional.layer_norm(
            t["X"], (t["X"].shape[-1],), t["W"], t["B"], s["eps"]), quack="layernorm",
        bw=[((32768, 4096),)]),
}
# Four rows of at most 1024 per program: the one-row kernels' inputs, references and
# comparisons, on their own cases and bandwidth shape.
for _name in ("rmsnorm", "layernorm"):
    KERNELS[_name + "_rows"] = dict(
        KERNELS[_name],
        cases=KERNELS[_name]["cases"][:1] + [((3, 100), 0), ((17, 1024), 0), ((64, 1000), 8),
                                             ((5, 1023), 1), ((4001, 777), 0)],
        bw=[((65536, 1024),)])


def out_shape(spec, tensors):
    if "out_shape" in spec:
        return tuple(spec["out_shape"](tensors))
    return tuple(tensors["X"].shape)


def outputs(spec):
    o = spec["out"]
    return o if isinstance(o, list) else [o]


def run_check(k, spec, shape, pad, seed):
    gen = torch.Generator(device=DEV)
    gen.manual_seed(seed)
    tensors, scalars = spec["inputs"](shape, gen, pad)
    tensors = dict(tensors)
    bufs = {}
    for name in outputs(spec):
        tensors[name], bufs[name] = poisoned(out_shape(spec, tensors), spec["dtype"], pad)
        if spec.get("zero_out"):  # a kernel that adds into its output: zeros inside the guard
            tensors[name].zero_()
    launch, grid = k.prepare(tensors, scalars, torch.cuda.current_stream().cuda_stream)
    launch()
    torch.cuda.synchronize()
    refs = spec["ref"](tensors, scalars)
    if not isinstance(refs, dict):
        refs = {outputs(spec)[0]: refs}
    ok, worst, all_w, all_u = True, 0.0, True, True
    for name in outputs(spec):
        w, u = written(tensors[name], bufs[name], spec["dtype"])
        err = rel_err(tensors[name].float(), refs[name]) if w else float("nan")
        ok = ok and w and u and err <= spec["tol"]
        worst = max(worst, err) if err == err else float("nan")
        all_w, all_u = all_w and w, all_u and u
    return ok, worst, all_w, all_u, grid


def time_ms(fn, iters=50, warmup=10):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    st = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    en = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        st[i].record()
        fn()
        en[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(st, en))


def bench(k, spec, shape, seed, rounds=3, inductor=True):
    gen = torch.Generator(device=DEV)
    gen.manual_seed(seed)
    tensors, scalars = spec["inputs"](shape, gen, 0)
    tensors = dict(tensors)
    for name in outputs(spec):
        tensors[name] = torch.empty(out_shape(spec, tensors), dtype=spec["dtype"], device=DEV)
    launch, _ = k.prepare(tensors, scalars, torch.cuda.current_stream().cuda_stream)
    nbytes = sum(v.numel() * v.element_size() for v in tensors.values())
    src = torch.empty(nbytes // 2, dtype=torch.uint8, device=DEV)
    dst = torch.empty_like(src)
    fns = {"tilec": launch,
           "torch": lambda: spec["torch_fn"](tensors, scalars),
           "copy": lambda: dst.copy_(src)}
    try:
        if not inductor:
            raise RuntimeError("skipped (--no-inductor)")
        compiled = torch.compile(lambda: spec["torch_fn"](tensors, scalars))
        compiled()
        fns["inductor"] = compiled
    except Exception as e:  # noqa: BLE001
        if inductor:
            print("  torch.compile failed: %s" % e)
    make = quack_fn(spec["quack"]) if spec.get("quack") else None
    if make is not None:
        try:
            f = make(tensors, scalars)
            f()
            torch.cuda.synchronize()
            fns["quack"] = f
        except Exception as e:  # noqa: BLE001
            print("  quack failed: %s" % e)
    times = {n: [] for n in fns}
    for _ in range(rounds):  # interleaved
        for n, f in fns.items():
            times[n].append(time_ms(f))
    res = {}
    for n, ts in times.items():
        ms = statistics.median(ts)
        b = nbytes if n != "copy" else 2 * src.numel()
        res[n] = {"ms": ms, "GBps": b / ms / 1e6, "spread_ms": max(ts) - min(ts)}
    return res, nbytes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shapes", help="time these shapes (MxN,...) instead of the kernel's own")
    ap.add_argument("--no-check", action="store_true", help="time only")
    ap.add_argument("--no-inductor", action="store_true", help="skip torch.compile")
    ap.add_argument("--tag", default="", help="a label for this run's rows (a variant name)")
    ap.add_argument("--only", help="these kernels only (comma-separated names)")
    ap.add_argument("--dir-tags", action="store_true",
                    help="label each directory's rows with its name (its parent's for sm_*)")
    a = ap.parse_args()
    override = None
    if a.shapes:
        override = [(tuple(int(x) for x in sh.split("x")),) for sh in a.shapes.split(",")]
    failures, results = 0, []
    for d in a.dirs:
        for f in sorted(os.listdir(d)):
            if not f.endswith(".json"):
                continue
            m = json.load(open(os.path.join(d, f)))
            spec = KERNELS.get(m.get("kernel"))
            if spec is None or (a.only and m.get("kernel") not in a.only.split(",")):
                continue
            k = Kernel(os.path.join(d, f))
            tag = "%s/%s%s" % (m["target"], m["kernel"], a.tag)
            if a.dir_tags:
                base = os.path.basename(os.path.normpath(d))
                if base.startswith("sm_"):
                    base = os.path.basename(os.path.dirname(os.path.normpath(d)))
                tag += "/" + base
            for i, (shape, pad) in enumerate([] if a.no_check else spec["cases"]):
                try:
                    ok, err, w, u, grid = run_check(k, spec, shape, pad, a.seed + i)
                except Exception as e:  # noqa: BLE001
                    ok, err, w, u, grid = False, float("nan"), False, False, None
                    print("  %s %s: %s" % (tag, shape, e))
                failures += not ok
                print("%-4s %-24s shape %-14s pad %d  rel err %.2e  written %s  untouched %s"
                      % ("ok" if ok else "FAIL", tag, "x".join(map(str, shape)), pad, err, w, u))
                results.append(dict(kernel=tag, shape=shape, pad=pad, ok=ok, rel_err=err,
                                    regs=k.num_regs))
            if a.time:
                for (shape,) in override or spec["bw"]:
                    res, nbytes = bench(k, spec, shape, a.seed, inductor=not a.no_inductor)
                    line = "  ".join("%s %.3f ms %.0f GB/s" % (n, r["ms"], r["GBps"])
                                     for n, r in res.items())
                    print("time %-24s %-12s %s" % (tag, "x".join(map(str, shape)), line))
                    results.append(dict(kernel=tag, shape=shape, bytes=nbytes, timing=res,
                                        regs=k.num_regs))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    print("%d failure(s)" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
