#!/usr/bin/env python3
"""Compare ptxas's view of the PTX in precise-output snapshots against a git revision.

    python3 tools/precise/sass_compare.py [--rev HEAD] [FILE ...]

For each snapshot FILE (default: every tests/precise/**/*.tile that differs from REV), each
`// ==== PTX @name ====` section, old (at REV) and new (the working tree), is assembled
with ptxas for the file's target (the `.sm_XX[a].` part of its name) and disassembled with
nvdisasm. Prints registers, spill-store bytes, the SASS instruction count and a hash of
the SASS text (addresses removed), and SAME or DIFF. ptxas and nvdisasm come from $PTXAS_DIR
or the repository's .venv (scripts/install-deps.sh). Exit status 1 if a section got worse:
more registers, more spills or more instructions.
"""
import argparse
import glob
import hashlib
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def tool_dir():
    d = os.environ.get("PTXAS_DIR")
    if d:
        return d
    hits = glob.glob(os.path.join(ROOT, ".venv/lib/python3*/site-packages/nvidia/cu*/bin"))
    if not hits:
        sys.exit("no ptxas: run scripts/install-deps.sh or set PTXAS_DIR")
    return hits[0]


def sections(text):
    parts = re.split(r"^// ==== (.*) ====$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def body(section):
    lines = section.strip("\n").split("\n")
    return "\n".join(l[3:] if l.startswith("// ") else l[2:] for l in lines)


def stats(bindir, ptx, arch):
    with tempfile.TemporaryDirectory() as d:
        src, cubin = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        open(src, "w").write(ptx)
        r = subprocess.run([os.path.join(bindir, "ptxas"), "-arch=" + arch, "-v", src,
                            "-o", cubin], capture_output=True, text=True)
        if r.returncode:
            return None
        regs = sum(int(x) for x in re.findall(r"Used (\d+) registers", r.stderr))
        spill = sum(int(x) for x in re.findall(r"(\d+) bytes spill stores", r.stderr))
        dis = subprocess.run([os.path.join(bindir, "nvdisasm"), cubin],
                             capture_output=True, text=True).stdout
        n = len(re.findall(r"^\s+/\*[0-9a-f]{4,}\*/", dis, flags=re.M))
        h = hashlib.md5(re.sub(r"/\*[0-9a-f]+\*/", "", dis).encode()).hexdigest()[:8]
        return regs, spill, n, h


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    files = a.files or [f for f in subprocess.run(
        ["git", "-C", ROOT, "diff", "--name-only", a.rev, "--", "tests/precise"],
        capture_output=True, text=True).stdout.split() if f.endswith(".tile")]
    bindir = tool_dir()
    worse = 0
    for f in files:
        m = re.search(r"\.(sm_\d+a?)\.", os.path.basename(f))
        if not m:
            continue
        old = subprocess.run(["git", "-C", ROOT, "show", "%s:%s" % (a.rev, f)],
                             capture_output=True, text=True).stdout
        so, sn = sections(old), sections(open(os.path.join(ROOT, f)).read())
        for k in sn:
            if not k.startswith("PTX"):
                continue
            o = stats(bindir, body(so[k]), m.group(1)) if k in so else None
            n = stats(bindir, body(sn[k]), m.group(1))
            bad = o is not None and n is not None and any(x > y for x, y in zip(n[:3], o[:3]))
            worse += bad
            print("%-4s %s %s: old %s new %s" % ("SAME" if o == n else "DIFF", f, k, o, n)
                  + ("  WORSE" if bad else ""))
    sys.exit(1 if worse else 0)


if __name__ == "__main__":
    main()
