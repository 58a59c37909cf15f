"""The child process of ``tilec.isolated_compile``: one compile request (JSON on standard
input: source, target, keyword arguments), its result as JSON on standard output."""

import json
import sys

from . import CompileError, compile


def main() -> None:
    req = json.load(sys.stdin)
    try:
        k = compile(req["source"], req["target"], **req["kw"])
    except CompileError as e:
        out = {"error": str(e), "diagnostics": list(getattr(e, "diagnostics", []))}
    except ValueError as e:
        out = {"error": str(e), "kind": "value"}
    except TypeError as e:
        out = {"error": str(e), "kind": "type"}
    else:
        out = {
            "name": k.name,
            "ptx": k.ptx,
            "manifest": k.manifest_json,
            "cubin": k.cubin.hex() if k.cubin else "",
        }
    json.dump(out, sys.stdout)


main()
