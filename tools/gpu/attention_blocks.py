#!/usr/bin/env python3
"""Write examples/attention_fwd.tile or attention_fwd_causal.tile with other block sizes.

    python3 tools/gpu/attention_blocks.py EXAMPLE BQ BK [D] > OUT.tile

The examples compute a 64-row query block per program against 64-key blocks of K and V,
with head dim 128. This rewrites the tile shapes for BQ query rows (one consumer
warpgroup per 64 rows), BK keys per loop trip and head dim D: the frontend's choice of
blocks, as a tensor compiler would vary it. The kernel's symbol gets `_qBQ_kBK_dD`
appended, so that a launch manifest names its variant (tools/gpu/attention.py reads the
head dim from it). Prints to standard output; exit status 2 on
an unknown example or a block size that is not a positive multiple of 16.
"""
import re
import sys


def tile_type(dims, elem, kv, bq, bk, d):
    """The example's tile type `DIMSxELEM` with BQ, BK and D substituted: Q-like tiles
    ([1x]64x128) become [1x]BQxD, K and V tiles [1x]BKxD, Kᵀ DxBK, scores 64x64 BQxBK, and
    the row statistics 64x1 BQx1."""
    rows = bk if kv else bq
    new = {"1x64x128": "1x%dx%d" % (rows, d), "64x128": "%dx%d" % (rows, d),
           "128x64": "%dx%d" % (d, bk), "64x64": "%dx%d" % (bq, bk), "64x1": "%dx1" % bq}
    return "%sx%s" % (new.get(dims, dims), elem)


def rewrite(text, bq, bk, d):
    """The example's text with BQ, BK and D substituted (see the module docs)."""
    kv_names = ("%k3", "%v3", "%k ", "%v ")
    out = []
    for line in text.splitlines():
        if line.startswith("//"):
            out.append(line)
            continue
        defines = line.strip().split(" = ")[0] + " " if " = " in line else ""
        kv = any(defines.startswith(n) for n in kv_names)
        line = line.replace("{grid = [ceildiv(%SQ, 64)", "{grid = [ceildiv(%%SQ, %d)" % bq)
        line = line.replace("%c64 = tile.constant {value = 64}",
                            "%%c64 = tile.constant {value = %d} : index\n"
                            "  %%cbk = tile.constant {value = %d}" % (bq, bk))
        # The key loop's step; the causal loop's end stays the query block's.
        line = re.sub(r"(tile\.for %c0, %\w+), %c64", r"\1, %cbk", line)
        # One substitution per type, so that a rewritten shape is not rewritten again
        # (D = 64 gives the same texts as the example's block sizes).
        line = re.sub(r"tile<([0-9x]+)x(\w+)>",
                      lambda m: "tile<%s>" % tile_type(m.group(1), m.group(2), kv, bq, bk, d),
                      line)
        line = re.sub(r"tile\.kernel @(\w+)\(", r"tile.kernel @\1_q%d_k%d_d%d(" % (bq, bk, d), line)
        out.append(line)
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) not in (4, 5):
        sys.stderr.write(__doc__)
        sys.exit(2)
    path = sys.argv[1]
    try:
        bq, bk = int(sys.argv[2]), int(sys.argv[3])
        d = int(sys.argv[4]) if len(sys.argv) == 5 else 128
    except ValueError:
        sys.exit("attention_blocks.py: BQ, BK and D must be integers")
    if min(bq, bk, d) < 16 or bq % 16 or bk % 16 or d % 16:
        sys.exit("attention_blocks.py: BQ, BK and D must be positive multiples of 16")
    if not re.search(r"attention_fwd(_causal)?\.tile$", path):
        sys.stderr.write("attention_blocks.py: %s is not an attention example\n" % path)
        sys.exit(2)
    with open(path) as f:
        sys.stdout.write(rewrite(f.read(), bq, bk, d))


if __name__ == "__main__":
    main()
