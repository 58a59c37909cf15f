"""Writes a kernel whose regions nest as deep as the parser allows (128 levels, the kernel's
body included) to stdout: `deep_nest.py for` nests 127 tile.for loops around a load and an
add; `deep_nest.py mask` nests 127 tile.if around a bounds-masked select and its store."""
import sys

DEPTH = 127
kind = sys.argv[1]
out = []
ind = "  "
if kind == "for":
    out += ["tile.kernel @deep(%X: tensor<?xf32>, %n: index) {grid = [1]} {",
            "  %c0 = tile.constant {value = 0} : index",
            "  %c1 = tile.constant {value = 1} : index",
            "  %z = tile.zeros : tile<128xf32>"]
    v = "%z"
    for d in range(DEPTH):
        out.append(f"{ind}%r{d} = tile.for %c0, %n, %c1, {v} : tile<128xf32> {{")
        out.append(f"{ind}^bb0(%i{d}: index, %a{d}: tile<128xf32>):")
        ind += "  "
        v = f"%a{d}"
    out.append(f"{ind}%x = tile.load %X, %i{DEPTH - 1} : tile<128xf32>")
    out.append(f"{ind}%y = tile.add %x, {v} : tile<128xf32>")
    v = "%y"
    for d in reversed(range(DEPTH)):
        out.append(f"{ind}tile.yield {v}")
        ind = ind[:-2]
        out.append(f"{ind}}}")
        v = f"%r{d}"
    out += ["  tile.store %X, %c0, %r0", "  tile.return", "}"]
else:
    out += ["tile.kernel @deep(%X: tensor<?x?xf32>, %Y: tensor<?x?xf32>, %n: index, "
            "%kv: index, %p: i1) {grid = [1]} {",
            "  %c0 = tile.constant {value = 0} : index"]
    for d in range(DEPTH):
        out.append(f"{ind}tile.if %p {{")
        ind += "  "
    out += [ind + line for line in [
        "%x = tile.load %X, %c0, %kv : tile<64x64xf32>",
        "%left = tile.subi %n, %kv : index",
        "%cols = tile.iota {dim = 1} : tile<64x64xindex>",
        "%lim = tile.splat %left : tile<64x64xindex>",
        '%valid = tile.cmpi %cols, %lim {predicate = "slt"} : tile<64x64xi1>',
        "%ninf = tile.constant {value = -inf} : f32",
        "%ninf_t = tile.splat %ninf : tile<64x64xf32>",
        "%sm = tile.select %valid, %x, %ninf_t : tile<64x64xf32>",
        "tile.store %Y, %c0, %kv, %sm"]]
    for d in range(DEPTH):
        out.append(f"{ind}tile.yield")
        ind = ind[:-2]
        out += [f"{ind}}} {{", f"{ind}  tile.yield", f"{ind}}}"]
    out += ["  tile.return", "}"]
print("\n".join(out))
