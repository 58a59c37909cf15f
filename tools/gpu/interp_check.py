#!/usr/bin/env python3
"""Run the GEMM-epilogue cases of tests/gpu_cases.rs on a GPU and compare every output
with the reference interpreter's.

    TILEC_GPU_CASES=DIR cargo test --release --test gpu_cases   # writes DIR
    python3 tools/gpu/interp_check.py DIR [--json OUT]

Each DIR/NAME holds case.json (arguments: tensors with dtype, shape and role; scalars with
their values), ARG.in.bin and ARG.want.bin (little-endian f32, row-major) per tensor, and
sm_90a/ and sm_90/ with the PTX and kernel.json. Each case runs once per target from the
initial contents (stored tensors poisoned with NaN, atomic targets zeroed), and each
output tensor must be written everywhere and within tol · max(1, max |want|) of the
interpreter, tol = 8e-3 (one bf16 ulp) for bf16 outputs, 1e-4 for f32 (the interpreter
sums K in order; the GPU in its MMA's order). Prints each case and a count; exit status 1
on any mismatch.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Kernel, TORCH_DTYPE  # noqa: E402


def load(path, shape):
    return torch.from_numpy(np.fromfile(path, dtype="<f4").copy()).view(*shape)


def on_gpu(t, dtype):
    """`t` as `dtype` on the GPU, its row pitch rounded up to 16 bytes (a TMA operand's
    needs; the padding is NaN)."""
    esz = torch.tensor([], dtype=dtype).element_size()
    cols = t.shape[-1]
    pitch = -(-cols // (16 // esz)) * (16 // esz)
    store = torch.full(tuple(t.shape[:-1]) + (pitch,), float("nan"), dtype=dtype, device="cuda")
    view = store[..., :cols]
    view.copy_(t.to(dtype))
    return view


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--json")
    a = ap.parse_args()
    bad, runs, results = 0, 0, []
    for name in sorted(os.listdir(a.dir)):
        d = os.path.join(a.dir, name)
        case = json.load(open(os.path.join(d, "case.json")))
        for target in ("sm_90a", "sm_90"):
            k = Kernel(os.path.join(d, target, "kernel.json"))
            tensors, scalars, outs = {}, {}, []
            for arg in case["args"]:
                if arg["kind"] == "scalar":
                    scalars[arg["name"]] = arg["value"]
                    continue
                init = load(os.path.join(d, arg["name"] + ".in.bin"), arg["shape"])
                tensors[arg["name"]] = on_gpu(init, TORCH_DTYPE[arg["dtype"]])
                if arg["role"] != "input":
                    outs.append(arg)
            launch, _ = k.prepare(tensors, scalars, torch.cuda.current_stream().cuda_stream)
            launch()
            torch.cuda.synchronize()
            ok, worst = True, 0.0
            for arg in outs:
                want = load(os.path.join(d, arg["name"] + ".want.bin"), arg["shape"]).double()
                got = tensors[arg["name"]].double().cpu()
                tol = 8e-3 if arg["dtype"] == "bf16" else 1e-4
                written = not torch.isnan(got).any().item()
                scale = max(1.0, want.abs().max().item())
                err = (got - want).abs().max().item() / scale
                worst = max(worst, err)
                if not written or err > tol:
                    ok = False
                    print("MISMATCH %s %s %s: written %s, max error %.3e (tol %.0e)"
                          % (name, target, arg["name"], written, err, tol))
            runs += 1
            bad += 0 if ok else 1
            print("%-28s %-7s %s  max rel error %.2e" % (name, target, "ok" if ok else "BAD", worst))
            results.append(dict(case=name, target=target, ok=ok, err=worst))
    if a.json:
        json.dump(results, open(a.json, "w"), indent=1)
    print("%d runs, %d mismatch(es)" % (runs, bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
