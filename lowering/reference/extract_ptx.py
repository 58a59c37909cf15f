#!/usr/bin/env python3
"""Extract the PTX text from the output of `mlir-opt ... --gpu-module-to-binary='format=isa'`.

The pass replaces each `gpu.module @NAME` by `gpu.binary @NAME [#gpu.object<..., assembly = "...">]`
(MLIR 22 prints the ISA under the `assembly = "..."` key; older releases printed it as the
bare string operand of `#gpu.object<#target, "...">`). The string is an MLIR string literal:
escapes are `\\`, `\"`, and `\XX` (two hex digits, e.g. `\0A` for newline, `\09` for tab).

Usage: extract_ptx.py BINARY.mlir [-o OUT.ptx] [--module NAME]
Reads stdin when BINARY.mlir is `-`; writes stdout unless -o is given.
"""
import argparse
import re
import sys


def _read_mlir_string(text, start):
    """Decode the MLIR string literal whose opening quote is at text[start]."""
    assert text[start] == '"'
    out = bytearray()
    i = start + 1
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            return out.decode("utf-8"), i + 1
        if ch == "\\":
            nxt = text[i + 1]
            if nxt in '\\"':
                out += nxt.encode()
                i += 2
                continue
            if nxt == "n":
                out += b"\n"
                i += 2
                continue
            if nxt == "t":
                out += b"\t"
                i += 2
                continue
            out.append(int(text[i + 1:i + 3], 16))
            i += 3
            continue
        out += ch.encode("utf-8")
        i += 1
    raise ValueError("unterminated MLIR string literal")


def extract(text, module=None):
    """Return {module_name: ptx} for every gpu.binary in `text`."""
    found = {}
    for m in re.finditer(r"gpu\.binary\s+@([\w$.]+)", text):
        name = m.group(1)
        if module is not None and name != module:
            continue
        # The object attribute follows; find its assembly string (MLIR 22) or first string.
        rest_start = m.end()
        nxt = re.search(r"gpu\.binary\s+@", text[rest_start:])
        rest_end = rest_start + nxt.start() if nxt else len(text)
        seg = text[rest_start:rest_end]
        k = seg.find('assembly = "')
        if k >= 0:
            q = rest_start + k + len("assembly = ")
        else:
            k = seg.find('"')
            if k < 0:
                continue
            q = rest_start + k
        ptx, _ = _read_mlir_string(text, q)
        found[name] = ptx
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input")
    ap.add_argument("-o", "--output")
    ap.add_argument("--module", help="gpu.binary name (default: the only one)")
    a = ap.parse_args()
    text = sys.stdin.read() if a.input == "-" else open(a.input, encoding="utf-8").read()
    found = extract(text, a.module)
    if not found:
        sys.exit("extract_ptx: no gpu.binary with an ISA string found")
    if len(found) > 1 and a.module is None:
        sys.exit("extract_ptx: several gpu.binary ops (%s); pass --module" % ", ".join(found))
    ptx = next(iter(found.values()))
    if ".version" not in ptx or ".target" not in ptx:
        sys.exit("extract_ptx: the extracted text is not PTX (format=isa expected)")
    if a.output:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(ptx)
    else:
        sys.stdout.write(ptx)


if __name__ == "__main__":
    main()
