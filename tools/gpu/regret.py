#!/usr/bin/env python3
"""The tile heuristic's regret: for each shape of a tools/gpu/bench.py JSON, the TFLOP/s of
the tile `tile-choose` picks against the fastest candidate measured in the same run.

    python3 tools/gpu/regret.py BENCH.json CHOICES.md [--markdown] [--cublas cublas-nt]

BENCH.json comes from `bench.py --tilec t128x256=... --tilec t128x128=... ...` on the
outputs of tools/gpu/build_tiles.sh (labels `tBMxBN`); CHOICES.md is `tile-choose`'s table
for the same shapes (`tile-choose > CHOICES.md`). For x · Wᵀ, build_tiles.sh's NT outputs
timed with `--layout tBMxBN=nt --cublas-layouts nt` compare with `--cublas cublas-nt`.
Needs no GPU. Prints, per shape, the
chosen tile, its TFLOP/s, the fastest tile and its TFLOP/s, the ratio (the regret is
1 - ratio), the chosen tile's ratio to cuBLAS, then how many shapes are within 5% of their
fastest candidate and the geometric mean over shapes of the chosen tile's ratio to cuBLAS.
Exit status 1 when a shape of the table has no measurement of its chosen tile.
"""
import argparse
import json
import math
import re
import sys


def choices(path):
    out = {}
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or not cells[1].isdigit():
            continue
        batch, m, n, k = (int(c) for c in cells[:4])
        bm, bn, _ = cells[4].split("x")
        out[(m, n, k)] = f"t{bm}x{bn}"
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench")
    ap.add_argument("choices")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--cublas", default="cublas", help="the bench backend to compare with")
    a = ap.parse_args()
    d = json.load(open(a.bench))
    ch = choices(a.choices)
    rows, bad, within, ratios = [], 0, 0, []
    for r in d["rows"]:
        key = (r["M"], r["N"], r["K"])
        # The candidates are build_tiles.sh's labels (tBMxBN), not other backends (triton).
        res = {b: v for b, v in r["results"].items()
               if re.fullmatch(r"t\d+x\d+", b) and isinstance(v, dict) and v.get("ok")
               and "tflops" in v}
        if key not in ch:
            continue
        c = ch[key]
        if c not in res:
            print("%dx%dx%d: the chosen %s was not measured" % (*key, c), file=sys.stderr)
            bad += 1
            continue
        best = max(res, key=lambda b: res[b]["tflops"])
        ratio = res[c]["tflops"] / res[best]["tflops"]
        within += ratio >= 0.95
        cub = r["results"].get(a.cublas, {}).get("tflops")
        vs = res[c]["tflops"] / cub if cub else float("nan")
        if cub:
            ratios.append(vs)
        rows.append((key, c, res[c]["tflops"], best, res[best]["tflops"], ratio, vs))
    sep = " | " if a.markdown else "  "
    if a.markdown:
        print("| M | N | K | chosen | TFLOP/s | fastest | TFLOP/s | chosen/fastest | chosen/cuBLAS |")
        print("| ---: | ---: | ---: | --- | ---: | --- | ---: | ---: | ---: |")
    for (m, n, k), c, ct, b, bt, ratio, vs in rows:
        cells = [str(m), str(n), str(k), c, "%.1f" % ct, b, "%.1f" % bt, "%.3f" % ratio,
                 "%.3f" % vs]
        print(("| " if a.markdown else "") + sep.join(cells) + (" |" if a.markdown else ""))
    g = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
    print("within 5%% of the fastest candidate: %d of %d shapes; chosen/cuBLAS geometric mean "
          "%.3f over %d shapes" % (within, len(rows), g, len(ratios)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
