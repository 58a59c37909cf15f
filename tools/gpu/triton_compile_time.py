#!/usr/bin/env python3
"""Time Triton's compilation of the matmul in triton_matmul.py for sm_90a, on this CPU, no GPU.

    python3 tools/gpu/triton_compile_time.py [--config 1] [--all-configs] [--runs 20]
                                             [--process 20] [--json OUT]

The kernel is `matmul_tma_persistent_kernel` of tools/gpu/triton_matmul.py (bf16 in, f32
accumulator, bf16 out, TMA descriptors, persistent), compiled with
`triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))`: Triton's NVIDIA backend
picks sm_90a for capability 90 and runs its own ptxas, so this is the whole source -> cubin
path, the equivalent of `tile-compile ... --target sm_90a --ptxas` (tilec's path ends at PTX;
its `--ptxas` step is a check, not part of `tilec::compile`).

Measured:
  * in process: the first compile (cold: Triton's lazy initialisation, NVIDIA backend load) and
    the median of --runs further compiles with the cache bypassed (`always_compile`), with
    Triton's own per-stage times (source -> ttir -> ttgir -> llir -> ptx -> cubin) from its
    compilation listener;
  * whole process (--process N): N runs of `python3 THIS --once` (interpreter start, `import
    triton`, one compile with an empty cache), median wall time, to set beside whole-process
    `tile-compile`.

--all-configs compiles every autotuning config once and prints its shared memory, to check that
each fits the 227 KB (232448 bytes) a Hopper CTA may use.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# A fresh, private cache so nothing is served from an earlier run.
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton-ct-"))

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

import triton_matmul as tm  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
SMS = 132  # H200


def source(cfg):
    bm, bn, bk, _st, _w, sub = cfg
    cbn = bn // 2 if sub else bn
    sig = {
        "a_desc": "tensordesc<bf16[%d, %d]>" % (bm, bk),
        "b_desc": "tensordesc<bf16[%d, %d]>" % (bk, bn),
        "c_desc": "tensordesc<bf16[%d, %d]>" % (bm, cbn),
        "M": "i32", "N": "i32", "K": "i32",
        "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr",
        "GROUP_M": "constexpr", "EPILOGUE_SUBTILE": "constexpr", "NUM_SMS": "constexpr",
    }
    consts = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": tm.GROUP_M,
              "EPILOGUE_SUBTILE": sub, "NUM_SMS": SMS}
    return ASTSource(fn=tm.matmul_tma_persistent_kernel, signature=sig, constexprs=consts)


def compile_once(cfg):
    _bm, _bn, _bk, st, w, _sub = cfg
    t0 = time.perf_counter()
    k = triton.compile(source(cfg), target=TARGET, options={"num_stages": st, "num_warps": w})
    return time.perf_counter() - t0, k


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", type=int, default=1, help="1-based row of triton_matmul.CONFIG_TABLE")
    ap.add_argument("--all-configs", action="store_true")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--process", type=int, default=0, help="also time N whole-process compiles")
    ap.add_argument("--once", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--json")
    args = ap.parse_args()
    cfg = tm.CONFIG_TABLE[args.config - 1]

    if args.once:
        compile_once(cfg)
        return

    stage_log = []

    def listener(src, metadata, metadata_group, times, cache_hit):
        stage_log.append((times, cache_hit))
    triton.knobs.compilation.listener = listener
    triton.knobs.compilation.always_compile = True

    out = {"triton": triton.__version__, "target": "cuda:90 (sm_90a)", "config": cfg}
    print("# Triton %s, target GPUTarget('cuda', 90, 32), kernel %s, config %d %s"
          % (triton.__version__, tm.matmul_tma_persistent_kernel.__name__, args.config, cfg))

    if args.all_configs:
        rows = []
        for i, c in enumerate(tm.CONFIG_TABLE, 1):
            dt, k = compile_once(c)
            shared = k.metadata.shared
            rows.append({"config": i, "params": c, "shared_bytes": shared, "fits": shared <= 232448,
                         "compile_s": dt, "has_wgmma": "wgmma" in k.asm["ptx"],
                         "has_tma": "cp.async.bulk.tensor" in k.asm["ptx"]})
            print("config %d %-28s shared %6d B %-8s wgmma %s tma %s compile %.0f ms"
                  % (i, c, shared, "fits" if shared <= 232448 else "TOO BIG", rows[-1]["has_wgmma"],
                     rows[-1]["has_tma"], dt * 1e3))
        out["all_configs"] = rows

    stage_log.clear()
    first, k = compile_once(cfg)
    times = []
    for _ in range(args.runs):
        dt, k = compile_once(cfg)
        times.append(dt)
    med = statistics.median(times)
    out.update(first_ms=first * 1e3, median_ms=med * 1e3, min_ms=min(times) * 1e3,
               max_ms=max(times) * 1e3, runs=args.runs, shared_bytes=k.metadata.shared,
               ptx_lines=k.asm["ptx"].count("\n"))
    # Per-stage medians over the repeated runs (Triton's listener, microseconds).
    per_stage = {}
    for t, hit in stage_log[1:]:
        assert not hit
        per_stage.setdefault("ast->ttir (+setup)", []).append(t.ir_initialization)
        for name, us in t.lowering_stages:
            per_stage.setdefault(name, []).append(us)
    out["stage_median_ms"] = {k_: statistics.median(v) / 1e3 for k_, v in per_stage.items()}
    print("in process: first compile %.1f ms; median of %d recompiles %.1f ms (min %.1f, max %.1f)"
          % (first * 1e3, args.runs, med * 1e3, min(times) * 1e3, max(times) * 1e3))
    for name, ms in out["stage_median_ms"].items():
        print("  %9.2f ms  %s" % (ms, name))

    if args.process:
        walls = []
        for _ in range(args.process):
            env = dict(os.environ, TRITON_CACHE_DIR=tempfile.mkdtemp(prefix="triton-ct-"))
            t0 = time.perf_counter()
            subprocess.run([sys.executable, os.path.abspath(__file__), "--once", "--config", str(args.config)],
                           check=True, env=env)
            walls.append(time.perf_counter() - t0)
        out.update(process_median_ms=statistics.median(walls) * 1e3, process_runs=args.process,
                   process_min_ms=min(walls) * 1e3)
        print("whole process (python start + import triton + compile, empty cache): median of %d %.1f ms (min %.1f)"
              % (args.process, statistics.median(walls) * 1e3, min(walls) * 1e3))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
