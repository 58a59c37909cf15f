#!/usr/bin/env python3
"""tilec vs cuBLAS vs Triton on bf16 GEMMs, in one process on one GPU.

    python3 tools/gpu/bench.py [--tilec [LABEL=]MANIFEST.json ...] [--no-triton]
                               [--shapes M,N,K ...] [--iters 50] [--json OUT.json]
                               [--plot OUT.png] [--seed 0]
    python3 tools/gpu/bench.py --plot-from OUT.json --plot OUT.png      (no GPU needed)

C[M,N] (bf16) = A[M,K] (bf16) @ B[K,N] (bf16), f32 accumulation, all row-major. Operand
layouts (--layout LABEL=L, L one of nn, nt, tn; default nn): nt stores B as N x K (the
weight of nn.Linear: C = A @ Bstored^T), tn stores A as K x M. The stored tensors of every
layout hold the same matrices, so all backends compute the same C. Backends, each on the
same random inputs:
  * tilec: every --tilec manifest (PTX + manifest from `tile-compile`), launched through
    tools/gpu/run.py's `Kernel` (cuModuleLoadData, tensor maps, cuLaunchKernel), the same code
    path as `run.py --time`; several manifests may be given, each labelled (LABEL=PATH, else
    the manifest's folder name), so variants are compared in one run;
    a split-K manifest (`split_k`) is launched as run.py does: workspace zeroed, kernel with S
    K slices (--split, else chosen per shape), workspace converted into C — the whole sequence
    is one launch here, so it is what is timed (and captured in the CUDA graph);
  * cublas: `torch.matmul(A, B, out=C)`; with --cublas-layouts also cublas-nt
    (`torch.matmul(A, Bnk.t())`, what F.linear runs) and cublas-tn, on the stored forms; a
    tilec backend's ratio is to the cuBLAS of its own layout;
  * triton: tools/gpu/triton_matmul.py (persistent, TMA descriptors, autotuned per shape over
    its 6 configs).

Per shape:
  1. inputs: `copies` sets of (A, B, C), A and B drawn from N(0, 1) then rounded to bf16,
     fresh per shape (seeded). copies = max(2, ceil(3 * L2 / bytes(A + B + C))), with the L2
     size read off the device and the total held under --max-copy-bytes, so a launch never
     finds its inputs in L2 from the previous launch;
  2. correctness, before any timing: for each backend, C of set 0 is poisoned (all bits set:
     NaN), the kernel runs once on set 0, and the relative Frobenius error against an f32
     torch.matmul reference (TF32 off) must be < --tol (1e-2) with every element written;
     a failing backend is not timed and is left out of the geometric means;
  3. timing: warm-up launches, then a CUDA graph of R launches cycling through the input sets
     (R a multiple of `copies`, chosen so one replay lasts >= ~2 ms; this keeps Python's launch
     overhead out of the small shapes), replayed --iters (>= 50) times, each replay timed with
     CUDA events; time per launch = median replay time / R. If a backend cannot be captured
     in a graph, its launches are timed one by one with events (median of --iters), and the
     row says so.

Prints a table (TFLOP/s per backend, ratio to cuBLAS, geometric means over the shapes every
backend passed), writes --json (all numbers, the chosen Triton config per shape, device info)
and a PNG plot (matplotlib) of TFLOP/s per shape, and ratio to cuBLAS, for every backend.
TFLOP/s = 2*M*N*K / time.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SQUARE = [1024, 2048, 4096, 8192, 16384]
LLAMA_NK = [(4096, 4096), (14336, 4096), (4096, 14336), (128256, 4096)]
LLAMA_M = [16, 128, 1024, 8192]


def default_shapes():
    shapes = [(s, s, s) for s in SQUARE]
    for (n, k) in LLAMA_NK:
        for m in LLAMA_M:
            shapes.append((m, n, k))
    return shapes


def parse_tilec(specs):
    out = []
    for s in specs:
        if "=" in s:
            label, path = s.split("=", 1)
        else:
            path = s
            label = "tilec" if not out else "tilec:" + os.path.basename(os.path.dirname(os.path.abspath(s)))
        out.append((label, path))
    return out


# ------------------------------------------------------------------------------------------
# GPU part (torch, cuda-python and triton are imported only here)

def layout_for(specs, label):
    """--layout entries 'LABEL=L' (nn, nt, tn); nn when none names the label."""
    for spec in specs or []:
        lab, _, val = spec.rpartition("=")
        if lab == label:
            if val not in ("nn", "nt", "tn"):
                raise SystemExit("--layout %s: the layout must be nn, nt or tn" % spec)
            return val
    return "nn"


def operands(layout, A, B, Bnk, Akm):
    """The stored operands a backend of `layout` is given (views of one set)."""
    return {"nn": (A, B), "nt": (A, Bnk), "tn": (Akm, B)}[layout]


def split_for(specs, label):
    """--split entries: 'S' (every split-K manifest) or 'LABEL=S'; 0 = choose per shape."""
    s = 0
    for spec in specs or []:
        lab, eq, val = spec.rpartition("=")
        if not eq:
            s = int(val) if s == 0 else s
        elif lab == label:
            return int(val)
    return s


def run_bench(args):
    import torch
    import run as tilec_run  # tools/gpu/run.py: Kernel, check, cu
    cu = tilec_run.cu

    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    l2 = int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)
    info = {"device": torch.cuda.get_device_name(), "sms": props.multi_processor_count,
            "l2_bytes": l2, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    try:
        import triton
        info["triton"] = triton.__version__
    except Exception as e:  # noqa: BLE001
        info["triton"] = "unavailable: %s" % e
    print("# %s, %d SMs, L2 %.1f MiB, torch %s, triton %s" % (
        info["device"], info["sms"], l2 / 2**20, info["torch"], info["triton"]), flush=True)

    backends = []  # (label, kind, object)
    for label, path in parse_tilec(args.tilec):
        try:
            k = tilec_run.Kernel(path)
            k.split_override = split_for(args.split, label)
            print("# %s: %s (%s, block %s, %d B smem, %d regs, persistent %s)" % (
                label, path, k.m["target"], k.m["block"], k.smem, k.num_regs, k.m.get("persistent")), flush=True)
            backends.append((label, "tilec", k))
            info.setdefault("tilec", {})[label] = {"manifest": path, "num_regs": k.num_regs,
                                                   "persistent": k.m.get("persistent"), "block": k.m["block"],
                                                   "smem": k.smem}
        except Exception as e:  # noqa: BLE001
            print("# %s: cannot load %s: %s" % (label, path, e), flush=True)
            info.setdefault("tilec_errors", {})[label] = str(e)
    backends.append(("cublas", "cublas", None))
    for lay in args.cublas_layouts or []:
        if lay != "nn":
            backends.append(("cublas-" + lay, "cublas", None))
    layouts = {label: layout_for(args.layout, label) for label, _, _ in backends}
    for lay in args.cublas_layouts or []:
        layouts["cublas-" + lay] = lay
    if not args.no_triton:
        try:
            import triton_matmul
            backends.append(("triton", "triton", triton_matmul.TritonMatmul(props.multi_processor_count)))
            layouts["triton"] = "nn"  # A[M,K] · B[K,N] only
        except Exception as e:  # noqa: BLE001
            print("# triton: unavailable: %s" % e, flush=True)
            info["triton_error"] = str(e)

    labels = [b[0] for b in backends]
    side = torch.cuda.Stream()
    rows = []
    result = {"info": info, "backends": labels + (["tilec-best"] if args.best_of else []), "rows": rows,
              "layouts": layouts}

    def save():
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)

    def make_launch(kind, obj, A, B, C, M, N, K, stream, layout="nn"):
        """A zero-argument launch on `stream` (tilec binds its stream at prepare time)."""
        if kind == "tilec":
            launch, _grid = obj.prepare({"A": A, "B": B, "C": C}, {"M": M, "N": N, "K": K},
                                        stream.cuda_stream)
            return launch
        if kind == "cublas":
            # A transposed view is cuBLAS's T operand mode (no copy).
            if layout == "nt":
                return lambda: torch.matmul(A, B.t(), out=C)
            if layout == "tn":
                return lambda: torch.matmul(A.t(), B, out=C)
            return lambda: torch.matmul(A, B, out=C)
        return obj.prepare(A, B, C)

    for si, (M, N, K) in enumerate(args.shapes):
        flops = 2.0 * M * N * K
        need = set(layouts.values())
        set_bytes = 2 * (M * K + K * N + M * N + ("nt" in need) * N * K + ("tn" in need) * K * M)
        copies = max(2, math.ceil(3 * l2 / set_bytes))
        copies = max(1, min(copies, args.max_copy_bytes // set_bytes))
        row = {"M": M, "N": N, "K": K, "copies": copies, "results": {}}
        rows.append(row)
        print("[%2d/%d] %d x %d x %d: %d input sets (%.1f MiB each)" % (
            si + 1, len(args.shapes), M, N, K, copies, set_bytes / 2**20), flush=True)
        gen = torch.Generator(device=dev)
        gen.manual_seed(args.seed * 1000003 + si)
        sets = []
        for _ in range(copies):
            A = torch.randn(M, K, generator=gen, device=dev, dtype=torch.float32).to(torch.bfloat16)
            B = torch.randn(K, N, generator=gen, device=dev, dtype=torch.float32).to(torch.bfloat16)
            C = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
            Bnk = B.t().contiguous() if "nt" in need else None
            Akm = A.t().contiguous() if "tn" in need else None
            sets.append((A, B, C, Bnk, Akm))
        A0, B0, C0, Bnk0, Akm0 = sets[0]
        prev_tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        ref = torch.matmul(A0.float(), B0.float())
        torch.backends.cuda.matmul.allow_tf32 = prev_tf32
        ref_norm = float(torch.linalg.vector_norm(ref))

        for label, kind, obj in backends:
            res = {}
            row["results"][label] = res
            try:
                # 1. correctness on set 0, C poisoned first, before any timing.
                a_, b_ = operands(layouts[label], A0, B0, Bnk0, Akm0)
                fn0 = make_launch(kind, obj, a_, b_, C0, M, N, K, torch.cuda.current_stream(), layouts[label])
                if kind == "triton":
                    fn0()  # the first call of a shape autotunes (every config writes C): then poison
                    torch.cuda.synchronize()
                C0.view(torch.int16).fill_(-1)
                torch.cuda.synchronize()
                fn0()
                torch.cuda.synchronize()
                if kind == "tilec":
                    tilec_run.check(cu.cuCtxSynchronize(), "%s kernel execution" % label)
                out = C0.float()
                written = not bool(torch.isnan(out).any())
                rel = float(torch.linalg.vector_norm(torch.nan_to_num(out, nan=0.0) - ref) / max(ref_norm, 1e-30))
                split = getattr(fn0, "split", None)  # split-K: the K slices S of this shape
                del out, fn0
                if split:
                    res["split"] = split
                # An ordered split-K kernel leaves its flags zero (None for other kernels).
                flags_ok = obj.check_flags() if kind == "tilec" else None
                res.update(rel_err=rel if written else float("nan"), all_written=written,
                           ok=bool(written and rel < args.tol and flags_ok is not False))
                if flags_ok is False:
                    print("    %-18s FAILED: the split-K flags are not zero after the launch" % label, flush=True)
                if kind == "triton":
                    res["config"] = obj.best_config(M, N, K)
                if not res["ok"]:
                    print("    %-18s FAILED correctness: rel_err %.3e, all written %s" % (label, rel, written), flush=True)
            except Exception as e:  # noqa: BLE001
                res.update(ok=False, error="%s: %s" % (type(e).__name__, e))
                print("    %-18s ERROR %s" % (label, res["error"]), flush=True)
                try:
                    torch.cuda.synchronize()
                except Exception:  # noqa: BLE001
                    pass
        # 2. timing: --repeat rounds, backends interleaved within each round.
        if not args.check_only:
            launches = {}
            for label, kind, obj in backends:
                if row["results"][label].get("ok"):
                    launches[label] = [
                        make_launch(kind, obj, *operands(layouts[label], A, B, Bnk, Akm), C, M, N, K, side,
                                    layouts[label])
                        for (A, B, C, Bnk, Akm) in sets]
            for rep in range(args.repeat):
                for label in list(launches):
                    res = row["results"][label]
                    try:
                        ms, method, reps = time_backend(torch, launches[label], side, args.iters)
                        res.setdefault("ms_rounds", []).append(ms)
                        res.update(method=method, launches_per_replay=reps)
                    except Exception as e:  # noqa: BLE001
                        res.update(ok=False, error="timing: %s: %s" % (type(e).__name__, e))
                        print("    %-18s ERROR %s" % (label, res["error"]), flush=True)
                        del launches[label]
                        try:
                            torch.cuda.synchronize()
                        except Exception:  # noqa: BLE001
                            pass
            torch.cuda.synchronize()
            for label, kind, obj in backends:
                if label in launches and kind == "tilec" and obj.check_flags() is False:
                    row["results"][label].update(ok=False, error="split-K flags not zero after timing")
                    print("    %-18s FAILED: the split-K flags are not zero after timing" % label, flush=True)
            for label in launches:
                res = row["results"][label]
                if res.get("ms_rounds") and res.get("ok"):
                    res["ms"] = statistics.median(res["ms_rounds"])
                    res["tflops"] = flops / res["ms"] / 1e9
                    res["spread"] = (max(res["ms_rounds"]) - min(res["ms_rounds"])) / res["ms"]
            del launches
        for label in labels:
            r = row["results"][label]
            lay = layouts[label]
            cub = row["results"].get("cublas" if lay == "nn" else "cublas-" + lay, {}).get("ms")
            if not cub:
                cub = row["results"].get("cublas", {}).get("ms")
            if cub and r.get("ms"):
                r["ratio_to_cublas"] = cub / r["ms"]
        if args.best_of:
            # The fastest of the given tilec tile programs that passed (an autotuning step
            # over a small documented set, like Triton's configs).
            cands = [(row["results"][l]["ms"], l) for l in args.best_of
                     if row["results"].get(l, {}).get("ms") and row["results"][l].get("ok")]
            if cands:
                ms, l = min(cands)
                row["results"]["tilec-best"] = dict(row["results"][l], config=l)
        for label in labels + (["tilec-best"] if args.best_of else []):
            r = row["results"].get(label, {})
            if not r.get("ms") and r.get("ok"):
                print("    %-18s correct, rel_err %.2e" % (label, r["rel_err"]), flush=True)
            if r.get("ms"):
                print("    %-18s %9.4f ms %8.1f TFLOP/s  x%.2f of cuBLAS  rel_err %.2e  spread %.1f%%  (%s, %d/replay)%s" % (
                    label, r["ms"], r["tflops"], r.get("ratio_to_cublas", float("nan")), r["rel_err"],
                    100 * r.get("spread", 0.0), r["method"], r["launches_per_replay"],
                    ("  config %s" % r["config"]) if r.get("config") else ""), flush=True)
        del sets, A0, B0, C0, Bnk0, Akm0, ref
        torch.cuda.empty_cache()
        save()

    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        info["nvidia_smi_after"] = q.stdout.strip()
    except Exception as e:  # noqa: BLE001
        info["nvidia_smi_after"] = "unavailable: %s" % e
    save()
    return result


def time_backend(torch, fns, stream, iters, warmup_ms=30.0, replay_ms=2.0, max_reps=512):
    """Median time of one launch (ms): CUDA-graph replays of R launches cycling through fns."""
    n = len(fns)

    def eager_round():
        for f in fns:
            f()

    with torch.cuda.stream(stream):
        # Warm-up and a rough per-launch estimate (eager: an upper bound for small kernels).
        eager_round()
        stream.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(stream)
        eager_round()
        e1.record(stream)
        e1.synchronize()
        est = max(e0.elapsed_time(e1) / n, 1e-4)
        for _ in range(max(1, int(warmup_ms / (est * n)))):
            eager_round()
        stream.synchronize()
    reps = n * max(1, min(max_reps // n, math.ceil(replay_ms / (est * n))))
    try:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=stream):
            for i in range(reps):
                fns[i % n]()
        method = "graph"
    except Exception as e:  # noqa: BLE001
        print("      (graph capture failed: %s; timing launches one by one)" % e, flush=True)
        torch.cuda.synchronize()
        g = None
        method = "events"
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    with torch.cuda.stream(stream):
        if g is not None:
            for _ in range(3):
                g.replay()
            for i in range(iters):
                starts[i].record(stream)
                g.replay()
                ends[i].record(stream)
        else:
            reps = 1
            for i in range(iters):
                starts[i].record(stream)
                fns[i % n]()
                ends[i].record(stream)
    stream.synchronize()
    times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    del g
    return statistics.median(times) / reps, method, reps


# ------------------------------------------------------------------------------------------
# report (no GPU needed)

def gmean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def summarize(result):
    labels = result["backends"]
    rows = result["rows"]
    lines = []
    hdr = "%6s %6s %6s " % ("M", "N", "K") + "".join(
        "| %16s %6s " % (l[:16], "ratio") for l in labels)
    lines.append(hdr)
    full = []  # shapes every backend passed and timed
    for r in rows:
        cells = []
        for l in labels:
            x = r["results"].get(l, {})
            if x.get("tflops"):
                cells.append("| %16.1f %6.2f " % (x["tflops"], x.get("ratio_to_cublas", float("nan"))))
            elif x.get("error"):
                cells.append("| %16s %6s " % ("ERROR", ""))
            elif x and not x.get("ok", True):
                cells.append("| %16s %6s " % ("WRONG", ""))
            else:
                cells.append("| %16s %6s " % ("-", ""))
        lines.append("%6d %6d %6d " % (r["M"], r["N"], r["K"]) + "".join(cells))
        if all(r["results"].get(l, {}).get("tflops") for l in labels):
            full.append(r)
    g = {}
    for l in labels:
        g[l] = {"gmean_tflops": gmean([r["results"][l]["tflops"] for r in full]),
                "gmean_ratio": gmean([r["results"][l].get("ratio_to_cublas") for r in full]),
                "shapes": len(full)}
    if full:
        lines.append("%20s " % ("geomean (%d shapes)" % len(full)) + "".join(
            "| %16.1f %6.2f " % (g[l]["gmean_tflops"], g[l]["gmean_ratio"]) for l in labels))
    return "\n".join(lines), g


def markdown_table(result):
    labels = result["backends"]
    others = [l for l in labels if l != "cublas"]
    head = "| M | N | K | cuBLAS TFLOP/s | " + " | ".join("%s TFLOP/s | ratio" % l for l in others) + " |"
    sep = "| ---: | ---: | ---: | ---: | " + " | ".join("---: | ---:" for _ in others) + " |"
    out = [head, sep]
    for r in result["rows"]:
        c = r["results"].get("cublas", {})
        cells = ["%d" % r["M"], "%d" % r["N"], "%d" % r["K"], "%.1f" % c["tflops"] if c.get("tflops") else "-"]
        for l in others:
            x = r["results"].get(l, {})
            if x.get("tflops"):
                cells += ["%.1f" % x["tflops"], "%.2f" % x.get("ratio_to_cublas", float("nan"))]
            else:
                cells += ["ERROR" if x.get("error") else ("WRONG" if x else "-"), ""]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def plot(result, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = result["backends"]
    rows = result["rows"]
    names = ["%dx%dx%d" % (r["M"], r["N"], r["K"]) for r in rows]
    x = list(range(len(rows)))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(10, 0.45 * len(rows) + 3), 9), sharex=True,
                                   gridspec_kw={"height_ratios": [3, 2]})
    markers = {"cublas": "o", "triton": "s"}
    for i, l in enumerate(labels):
        ys = [r["results"].get(l, {}).get("tflops") or float("nan") for r in rows]
        color = "C%d" % (i % 10)
        ax1.plot(x, ys, marker=markers.get(l, "^v<>Dp"[i % 6]), linestyle="-", linewidth=1, label=l, color=color)
        if l != "cublas":
            rs = [r["results"].get(l, {}).get("ratio_to_cublas") or float("nan") for r in rows]
            ax2.plot(x, rs, marker=markers.get(l, "^v<>Dp"[i % 6]), linestyle="-", linewidth=1, label=l,
                     color=color)
    ax1.set_yscale("log")
    ax1.set_ylabel("TFLOP/s (bf16, log scale)")
    info = result.get("info", {})
    ax1.set_title("bf16 GEMM C = A @ B on %s (%s): tilec vs cuBLAS vs Triton" % (
        info.get("device", "?"), info.get("date", "")[:10]))
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend()
    ax2.axhline(1.0, color="gray", linewidth=1)
    ax2.axhline(0.9, color="gray", linewidth=0.8, linestyle=":")
    ax2.set_ylabel("ratio to cuBLAS")
    ax2.grid(True, alpha=0.3)
    ax2.legend()
    ax2.set_xticks(x)
    ax2.set_xticklabels(names, rotation=60, ha="right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tilec", action="append", default=[], metavar="[LABEL=]MANIFEST",
                    help="a tilec manifest (repeatable)")
    ap.add_argument("--no-triton", action="store_true")
    ap.add_argument("--layout", action="append", default=[], metavar="LABEL=L",
                    help="a tilec backend's operand layout: nn (default), nt (B stored N x K), tn (A stored K x M)")
    ap.add_argument("--cublas-layouts", nargs="+", choices=["nn", "nt", "tn"],
                    help="also time cuBLAS on these stored layouts (labels cublas-nt, cublas-tn)")
    ap.add_argument("--split", nargs="+", metavar="[LABEL=]S",
                    help="split-K manifests: K slices S, for all or for one label (default: chosen per shape)")
    ap.add_argument("--best-of", nargs="+", metavar="LABEL",
                    help="also report 'tilec-best': per shape the fastest correct of these tilec labels")
    ap.add_argument("--shapes", nargs="+", help="M,N,K ... (default: the issue-7 list)")
    ap.add_argument("--iters", type=int, default=50, help="timed replays per backend and shape (>= 50)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="timing rounds per shape, backends interleaved; the row keeps the median and the spread")
    ap.add_argument("--check-only", action="store_true", help="correctness only, no timing (e.g. under ncu)")
    ap.add_argument("--tol", type=float, default=1e-2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-copy-bytes", type=int, default=12 * 2**30,
                    help="cap on the bytes of all rotated input sets of one shape")
    ap.add_argument("--json")
    ap.add_argument("--plot", help="PNG path")
    ap.add_argument("--plot-from", help="re-plot/re-print a JSON written earlier (no GPU)")
    ap.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    args = ap.parse_args()
    if args.plot_from:
        with open(args.plot_from) as f:
            result = json.load(f)
    else:
        if args.iters < 50:
            ap.error("--iters must be >= 50")
        args.shapes = ([tuple(int(v) for v in s.split(",")) for s in args.shapes]
                       if args.shapes else default_shapes())
        result = run_bench(args)
    text, g = summarize(result)
    result["geomean"] = g
    if args.json and not args.plot_from:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    print()
    print(text)
    if args.markdown:
        print()
        print(markdown_table(result))
    if args.plot:
        try:
            plot(result, args.plot)
            print("wrote %s" % args.plot)
        except Exception as e:  # noqa: BLE001
            print("plot failed (%s); re-plot elsewhere with --plot-from" % e)
    bad = [(r["M"], r["N"], r["K"], l) for r in result["rows"] for l, x in r["results"].items()
           if not x.get("ok", False)]
    if bad:
        print("not ok: %s" % bad)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
