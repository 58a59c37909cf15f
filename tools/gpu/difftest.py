#!/usr/bin/env python3
"""Run the random plain-launch programs of tests/differential.rs on a CUDA GPU.

    TILEC_DIFFTEST_OUT=DIR cargo test --release --test differential   # writes DIR
    python3 tools/gpu/difftest.py DIR [--json OUT]

DIR holds index.json, pNNN.bin (X, Y and the reference interpreter's Z, little-endian f32,
row-major M×N), pNNN.tile, and sm_90/ and sm_90a/ with pNNN.ptx + pNNN.json. Each program
runs once per target on its X and Y, Z poisoned with NaN first (zeros for a program that
adds into Z with tile.atomic_add: index.json's "atomic"), and is compared with the
interpreter's Z: every element written, and |gpu - ref| <= tol · max(1, max |ref|), with
tol = 1e-5, or 8e-3 (one bf16 ulp) for programs that round through bf16 (an approximate
exp2 or another order of additions can move a value across a bf16 rounding boundary).
Prints the mismatches and a count; exit status 1 if any.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Kernel  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--json")
    a = ap.parse_args()
    index = json.load(open(os.path.join(a.dir, "index.json")))
    dev = torch.device("cuda")
    bad, runs, results = 0, 0, []
    for e in index:
        seed, m, n = e["seed"], e["m"], e["n"]
        stem = "p%03d" % seed
        raw = np.fromfile(os.path.join(a.dir, stem + ".bin"), dtype="<f4")
        x, y, ref = (torch.from_numpy(raw[i * m * n:(i + 1) * m * n].copy()).view(m, n)
                     for i in range(3))
        src = open(os.path.join(a.dir, stem + ".tile")).read()
        tol = 8e-3 if "bf16" in src else 1e-5
        for target in ("sm_90", "sm_90a"):
            k = Kernel(os.path.join(a.dir, target, stem + ".json"))
            X, Y = x.to(dev), y.to(dev)
            # A program that adds into Z (tile.atomic_add) starts from zeros, as the
            # interpreter's Z does; the others from NaN, so that every element must be written.
            atomic = e.get("atomic", False)
            Z = torch.full((m, n), 0.0 if atomic else float("nan"), device=dev)
            launch, _ = k.prepare({"X": X, "Y": Y, "Z": Z}, {"M": m, "N": n},
                                  torch.cuda.current_stream().cuda_stream)
            launch()
            torch.cuda.synchronize()
            z = Z.cpu()
            written = not torch.isnan(z).any().item() or torch.isnan(ref).any().item()
            scale = max(1.0, ref.abs().max().item()) if ref.numel() else 1.0
            err = (z - ref).abs().max().item() / scale if ref.numel() else 0.0
            ok = written and err <= tol
            runs += 1
            if not ok:
                bad += 1
                print("MISMATCH %s %s %dx%d: written %s, max error %.3e (tol %.0e)"
                      % (stem, target, m, n, written, err, tol))
            results.append(dict(seed=seed, target=target, m=m, n=n, ok=ok, err=err, tol=tol))
    if a.json:
        json.dump(results, open(a.json, "w"), indent=1)
    print("%d programs x 2 targets: %d runs, %d mismatch(es)" % (len(index), runs, bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
