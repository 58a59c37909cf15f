"""tilec from Python: compile tile IR in process, launch on PyTorch's current stream.

    import tilec, torch
    k = tilec.compile(open("examples/vadd.tile").read(), target="sm_90a")
    x, y = torch.randn(5000, device="cuda"), torch.randn(5000, device="cuda")
    z = torch.empty_like(x)
    k(x, y, z, 5000)            # or k(X=x, Y=y, Z=z, N=5000)

``compile`` releases the GIL and caches its results on disk (``$TILEC_CACHE_DIR``, else
``~/.cache/tilec``). A ``Kernel`` takes torch tensors, objects with
``__cuda_array_interface__`` or DLPack capsules' producers (through torch), and Python
ints and floats; it checks each against the manifest (dtype, rank, device, the alignment
TMA needs) and launches through ``tilec-runtime`` on ``stream`` (default: torch's current
stream for the tensors' device). Errors are ``CompileError`` (with ``file:line:col``),
``ArgumentError``, ``LaunchError`` and ``NoDriverError`` (no GPU: at launch, never at
import).

``tilec.isolated_compile`` compiles in a child process, for untrusted input: an LLVM fatal
error then ends the child, not the caller.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from typing import Any, Dict, Optional, Sequence, Tuple

from . import _tilec, library
from ._tilec import (
    ArgumentError,
    CompileError,
    LaunchError,
    NoDriverError,
    __version__,
    device_count,
)

__all__ = [
    "ArgumentError",
    "library",
    "CompileError",
    "Kernel",
    "LaunchError",
    "NoDriverError",
    "__version__",
    "compile",
    "device_count",
    "isolated_compile",
    "load",
]

HAS_COMPILER: bool = _tilec.HAS_COMPILER

# torch dtype names (without "torch.") to tilec's.
_TORCH_DTYPES = {
    "float32": "f32",
    "float16": "f16",
    "bfloat16": "bf16",
    "int32": "i32",
    "int64": "i64",
    "bool": "i1",
    "float8_e4m3fn": "e4m3",
    "float8_e5m2": "e5m2",
}

# __cuda_array_interface__ typestrs (byte order stripped) to tilec's.
_CAI_DTYPES = {"f4": "f32", "f2": "f16", "i4": "i32", "i8": "i64", "b1": "i1"}

_ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "i1": 1, "e4m3": 1, "e5m2": 1}


def _build_identity() -> str:
    """What distinguishes this build's output: the extension's path, size and mtime."""
    st = os.stat(_tilec.__file__)
    return f"{_tilec.__file__}:{st.st_size}:{st.st_mtime_ns}"


def _find_ptxas() -> None:
    """Point PTXAS at the nvidia-cuda-nvcc wheel of this Python, when it is installed."""
    if os.environ.get("PTXAS"):
        return
    for base in sys.path:
        cand = os.path.join(base, "nvidia", "cu13", "bin", "ptxas")
        if os.path.isfile(cand):
            os.environ["PTXAS"] = cand
            return


def _options(target: str, options: Dict[str, Any]) -> list:
    out = [("target", str(target))]
    for name, value in options.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif value is None:
            continue
        out.append((name, str(value)))
    return out


def compile(
    source: str,
    target: str = "sm_90a",
    *,
    file: str = "<string>",
    cubin: bool = False,
    cache: bool = True,
    device: Optional[int] = None,
    **options: Any,
) -> "Kernel":
    """Compile tile IR ``source`` for ``target`` (``sm_90a``, ``sm_90``, ``sm_100``,
    ``sm_100a``) and return a :class:`Kernel`.

    ``options`` are ``tilec::Options``' fields by name: ``kernel`` (which kernel of a
    module), ``stages``, ``epilogue`` (``direct`` or ``tma``), ``promote``, ``schedule``,
    ``cluster``, ``group_m``, ``num_warps``, ``opt_level``, ``simplify``. ``cubin=True``
    assembles the PTX with ptxas (the ``nvidia-cuda-nvcc`` wheel, or ``$PTXAS``) so that
    loading skips the driver's JIT. ``file`` names the source in diagnostics.

    Raises ``CompileError`` (its message holds ``file:line:col`` diagnostics; its
    ``diagnostics`` attribute lists them) or ``ValueError`` for unknown options.
    """
    if not HAS_COMPILER:
        raise CompileError(
            "this tilec build has no compiler (the runtime-only build): load kernels "
            "compiled ahead of time with tilec.load"
        )
    if cubin:
        _find_ptxas()
    r = _tilec.compile(
        source, file, _options(target, options), cubin, _build_identity() if cache else None
    )
    return Kernel(r["name"], r["ptx"], r["manifest"], r["cubin"], device=device, cache=r["cache"])


def isolated_compile(
    source: str, target: str = "sm_90a", *, timeout: Optional[float] = 600, **kw: Any
) -> "Kernel":
    """As :func:`compile`, in a child Python process: an LLVM fatal error or a crash ends
    the child, and is raised here as ``CompileError``. ``timeout`` is in seconds."""
    request = json.dumps({"source": source, "target": target, "kw": kw})
    try:
        p = subprocess.run(
            [sys.executable, "-m", "tilec._child"],
            input=request.encode(),
            capture_output=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise CompileError(f"the compile did not finish in {timeout} s") from None
    if p.returncode != 0:
        tail = p.stderr.decode(errors="replace").strip()[-4000:]
        raise CompileError(f"the compiler process ended with status {p.returncode}:\n{tail}")
    r = json.loads(p.stdout)
    if "error" in r:
        err = CompileError(r["error"])
        err.diagnostics = [tuple(d) for d in r.get("diagnostics", [])]
        raise err
    cubin = bytes.fromhex(r["cubin"]) if r["cubin"] else None
    return Kernel(r["name"], r["ptx"], r["manifest"], cubin)


def load(directory: str, name: str, *, device: Optional[int] = None) -> "Kernel":
    """The kernel ``name`` that ``tile-compile -o directory`` wrote: ``name.json``, and the
    cubin it names, else the PTX."""
    with open(os.path.join(directory, f"{name}.json")) as f:
        manifest = f.read()
    m = json.loads(manifest)
    with open(os.path.join(directory, m["ptx_file"])) as f:
        ptx = f.read()
    cubin = None
    if m.get("cubin_file"):
        with open(os.path.join(directory, m["cubin_file"]), "rb") as f:
            cubin = f.read()
    return Kernel(m["kernel"], ptx, manifest, cubin, device=device)


def _tensor(name: str, t: Any) -> Tuple[int, str, list, list, int]:
    """(ptr, dtype, shape, strides in elements, device; -1 for host) of a tensor-like."""
    torch = sys.modules.get("torch")
    if torch is not None and not isinstance(t, torch.Tensor) and hasattr(t, "__dlpack__"):
        if not hasattr(t, "__cuda_array_interface__"):
            t = torch.from_dlpack(t)
    if torch is not None and isinstance(t, torch.Tensor):
        dt = str(t.dtype).replace("torch.", "")
        if dt not in _TORCH_DTYPES:
            raise ArgumentError(f"'{name}': tilec has no dtype for torch.{dt}")
        dev = t.device.index if t.device.type == "cuda" else -1
        if dev is None:
            dev = torch.cuda.current_device()
        return (t.data_ptr(), _TORCH_DTYPES[dt], list(t.shape), list(t.stride()), dev)
    cai = getattr(t, "__cuda_array_interface__", None)
    if cai is not None:
        typestr = cai["typestr"].lstrip("<>|=")
        dtype = _CAI_DTYPES.get(typestr)
        if dtype is None:
            raise ArgumentError(f"'{name}': tilec has no dtype for typestr {cai['typestr']!r}")
        shape = list(cai["shape"])
        size = _ITEMSIZE[dtype]
        if cai.get("strides") is None:
            strides, acc = [], 1
            for d in reversed(shape):
                strides.insert(0, acc)
                acc *= d
        else:
            if any(s % size for s in cai["strides"]):
                raise ArgumentError(f"'{name}': strides {cai['strides']} are not whole elements")
            strides = [s // size for s in cai["strides"]]
        device = int(getattr(getattr(t, "device", None), "id", 0))
        return (int(cai["data"][0]), dtype, shape, strides, device)
    raise ArgumentError(
        f"'{name}': expected a tensor (torch, __cuda_array_interface__ or DLPack), "
        f"found {type(t).__name__}"
    )


class Kernel:
    """A compiled kernel: ``name``, ``ptx``, ``cubin`` (bytes or None), ``manifest`` (a
    dict), and a call that launches it.

    ``kernel(*args, grid=None, stream=None, **kwargs)``: positional arguments bind to the
    manifest's parameters in order, keyword arguments by name. ``grid`` replaces a
    persistent kernel's CTA count (``(x, 1, 1)``). ``stream`` is a ``torch.cuda.Stream``, a
    raw ``CUstream`` int, or None for torch's current stream on the tensors' device. The
    module is loaded on the first call, per device.
    """

    def __init__(
        self,
        name: str,
        ptx: str,
        manifest: str,
        cubin: Optional[bytes] = None,
        *,
        device: Optional[int] = None,
        cache: str = "off",
    ) -> None:
        self.name = name
        self.ptx = ptx
        self.cubin = cubin
        self.manifest_json = manifest
        self.manifest: Dict[str, Any] = json.loads(manifest)
        self.cache = cache
        self._device = device
        self._launchers: Dict[int, Any] = {}
        self._lock = threading.Lock()

    @property
    def params(self) -> Sequence[str]:
        """The parameter names, in order."""
        return [p["name"] for p in self.manifest["params"]]

    def __repr__(self) -> str:
        return f"<tilec.Kernel {self.name} for {self.manifest['target']}>"

    def launcher(self, device: int = 0) -> Any:
        """The kernel loaded on ``device`` (loaded on first use)."""
        with self._lock:
            if device not in self._launchers:
                self._launchers[device] = _tilec.Launcher(
                    self.manifest_json, self.ptx, self.cubin, device
                )
            return self._launchers[device]

    def bind(self, args: Sequence[Any], kwargs: Dict[str, Any]) -> list:
        """(name, value) pairs for the extension: positional by order, then by name."""
        params = self.params
        if len(args) > len(params):
            raise ArgumentError(
                f"kernel '{self.name}' takes {len(params)} arguments "
                f"({', '.join(params)}), {len(args)} given"
            )
        named = list(zip(params, args))
        for k, v in kwargs.items():
            if k in params[: len(args)]:
                raise ArgumentError(f"argument '{k}' is given twice")
            named.append((k, v))
        out = []
        for k, v in named:
            if isinstance(v, (bool, int, float)):
                out.append((k, v))
            else:
                out.append((k, _tensor(k, v)))
        return out

    def check(self, *args: Any, device: int = 0, sm_count: int = 132, **kwargs: Any) -> dict:
        """Every check a launch makes on the host, without a GPU: raises ``ArgumentError``
        as the call would, else returns the launch configuration (grid, block, cluster,
        dynamic_shared_memory_bytes) for ``device`` with ``sm_count`` SMs."""
        return _tilec.bind(self.manifest_json, self.bind(args, kwargs), device, sm_count)

    def __call__(
        self, *args: Any, grid: Optional[Tuple[int, int, int]] = None, stream: Any = None,
        **kwargs: Any
    ) -> Tuple[int, int, int]:
        bound = self.bind(args, kwargs)
        devices = {v[4] for _, v in bound if isinstance(v, tuple) and v[4] >= 0}
        device = self._device if self._device is not None else min(devices, default=0)
        if stream is None:
            torch = sys.modules.get("torch")
            if torch is not None and torch.cuda.is_available():
                stream = torch.cuda.current_stream(device).cuda_stream
            else:
                stream = 0
        elif hasattr(stream, "cuda_stream"):
            stream = stream.cuda_stream
        if grid is not None:
            grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        return self.launcher(device).launch(bound, int(stream), grid)
