"""tilec from Python: compile tile IR in process, launch on PyTorch's current stream.

    import tilec, torch
    k = tilec.compile(open("examples/vadd.tile").read(), target="sm_90a")
    x, y = torch.randn(5000, device="cuda"), torch.randn(5000, device="cuda")
    z = torch.empty_like(x)
    k(x, y, z, 5000)            # or k(X=x, Y=y, Z=z, N=5000)

``compile`` releases the GIL and caches its results on disk (``$TILEC_CACHE_DIR``, else
``~/.cache/tilec``). A ``Kernel`` takes torch tensors, objects with
``__cuda_array_interface__``, DLPack producers (``__dlpack__``, read without torch; the
caller orders the producer's work before the launch's stream), and Python ints and
floats; it checks each against the manifest (dtype, rank, device, the alignment TMA
needs) and launches through ``tilec-runtime`` on ``stream`` (default: torch's current
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
    BuildError,
    CompileError,
    LaunchError,
    NoDriverError,
    __version__,
    device_count,
)

__all__ = [
    "ArgumentError",
    "BuildError",
    "Builder",
    "GridExpr",
    "Value",
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

if HAS_COMPILER:
    from .builder import Builder, GridExpr, Value

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
        if name == "constants":
            if not isinstance(value, dict):
                raise TypeError(f"constants must be a dict of name: int, found {value!r}")
            for k, v in sorted(value.items()):
                if isinstance(v, bool) or not isinstance(v, int):
                    raise TypeError(f"constant {k!r} must be an int, found {v!r}")
                out.append(("define", f"{k}={v}"))
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif value is None:
            continue
        out.append((name, str(value)))
    return out


def compile(
    source: Any,
    target: str = "sm_90a",
    *,
    file: str = "<string>",
    cubin: bool = False,
    cache: bool = True,
    device: Optional[int] = None,
    **options: Any,
) -> "Kernel":
    """Compile tile IR ``source`` (text, or a :class:`Builder`'s module) for ``target``
    (``sm_90a``, ``sm_90``, ``sm_100``, ``sm_100a``) and return a :class:`Kernel`.

    ``options`` are ``tilec::Options``' fields by name: ``kernel`` (which kernel of a
    module), ``stages``, ``epilogue`` (``direct`` or ``tma``), ``promote``, ``invariant_a``
    (``auto``, ``smem`` or ``registers``), ``ftz``, ``fp_fusion``, ``schedule``,
    ``persistent_kernels`` (``dots`` or ``all``), ``ctas_per_sm``, ``warp_specialize``,
    ``defer_mma``, ``cluster``, ``group_m``, ``num_warps``, ``opt_level``, ``simplify``
    (every name of ``tilec::Options::NAMES``), and
    ``constants`` (a dict binding kernel constants, ``{"BM": 64}``, as ``tile-compile -D``
    does; the manifest's ``constants`` records them). ``cubin=True``
    assembles the PTX with ptxas (the ``nvidia-cuda-nvcc`` wheel, or ``$PTXAS``) so that
    loading skips the driver's JIT. ``file`` names the source in diagnostics (a
    Builder's ops are located where they were built instead).

    Raises ``CompileError`` (its message holds ``file:line:col`` diagnostics; its
    ``diagnostics`` attribute lists them) or ``ValueError`` for unknown options.
    """
    if not HAS_COMPILER:
        raise CompileError(
            "this tilec build has no compiler (the runtime-only build): load kernels "
            "compiled ahead of time with tilec.load"
        )
    if "emit" in options:
        raise ValueError("option 'emit': tilec.compile gives PTX, and a cubin with cubin=True")
    if cubin:
        _find_ptxas()
    salt = _build_identity() if cache else None
    if isinstance(source, _tilec.Builder):
        r = _tilec.compile_module(source, _options(target, options), cubin, salt)
    elif isinstance(source, str):
        r = _tilec.compile(source, file, _options(target, options), cubin, salt)
    else:
        raise TypeError(f"source must be a str or a tilec.Builder, found {type(source).__name__}")
    return Kernel(r["name"], r["ptx"], r["manifest"], r["cubin"], device=device, cache=r["cache"])


def isolated_compile(
    source: Any, target: str = "sm_90a", *, timeout: Optional[float] = 600, **kw: Any
) -> "Kernel":
    """As :func:`compile`, in a child Python process: an LLVM fatal error or a crash ends
    the child, and is raised here as ``CompileError``. ``timeout`` is in seconds. A
    :class:`Builder` is sent as its printed module, so diagnostics point at that text."""
    if HAS_COMPILER and isinstance(source, _tilec.Builder):
        source = str(source)
    if not isinstance(source, str):
        raise TypeError(f"source must be a str, found {type(source).__name__}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(
            timeout, (int, float)) or not timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds, found {timeout!r}")
    device = kw.pop("device", None)
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
        if r.get("kind") == "value":
            raise ValueError(r["error"])
        if r.get("kind") == "type":
            raise TypeError(r["error"])
        err = CompileError(r["error"])
        err.diagnostics = [tuple(d) for d in r.get("diagnostics", [])]
        raise err
    cubin = bytes.fromhex(r["cubin"]) if r["cubin"] else None
    return Kernel(r["name"], r["ptx"], r["manifest"], cubin, device=device)


def load(directory: str, name: str, *, device: Optional[int] = None) -> "Kernel":
    """The kernel ``name`` that ``tile-compile -o directory`` wrote: ``name.json``, and the
    cubin it names, else the PTX. Raises ``OSError`` for a missing file and ``ValueError``
    for a manifest that does not read (or names files outside ``directory``)."""
    def beside(file: str) -> str:
        if os.path.basename(file) != file or file in ("", ".", ".."):
            raise ValueError(f"{name}.json names '{file}', which is not a file beside it")
        return os.path.join(directory, file)

    with open(beside(f"{name}.json")) as f:
        manifest = f.read()
    _tilec.check_manifest(manifest)
    m = json.loads(manifest)
    with open(beside(m["ptx_file"])) as f:
        ptx = f.read()
    cubin = None
    if m.get("cubin_file"):
        with open(beside(m["cubin_file"]), "rb") as f:
            cubin = f.read()
    return Kernel(m["kernel"], ptx, manifest, cubin, device=device)


def _int(name: str, what: str, v: Any, lo: int, hi: int) -> int:
    """``v`` as an int in [lo, hi], or ArgumentError naming the argument."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise ArgumentError(f"'{name}': {what} must be an int, found {type(v).__name__}")
    if not lo <= v <= hi:
        raise ArgumentError(f"'{name}': {what} {v} is out of range [{lo}, {hi}]")
    return v


_U64 = (1 << 64) - 1
_I64 = (1 << 63) - 1


def _cai_tensor(name: str, t: Any, cai: Any) -> Tuple[int, str, list, list, int]:
    """The tensor an ``__cuda_array_interface__`` (version 2 or 3) describes."""
    if not isinstance(cai, dict):
        raise ArgumentError(f"'{name}': __cuda_array_interface__ is not a dict")
    for key in ("data", "typestr", "shape"):
        if key not in cai:
            raise ArgumentError(f"'{name}': __cuda_array_interface__ has no '{key}'")
    if cai.get("mask") is not None:
        raise ArgumentError(f"'{name}': masked arrays cannot be passed to a kernel")
    typestr = cai["typestr"]
    if not isinstance(typestr, str) or len(typestr) < 3:
        raise ArgumentError(f"'{name}': typestr {typestr!r} is not a numpy type string")
    if typestr[0] == ">" and typestr[2:] != "1":
        raise ArgumentError(f"'{name}': big-endian data ({typestr!r}) cannot be passed")
    dtype = _CAI_DTYPES.get(typestr[1:])
    if dtype is None:
        raise ArgumentError(f"'{name}': tilec has no dtype for typestr {typestr!r}")
    data = cai["data"]
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise ArgumentError(f"'{name}': 'data' must be a (pointer, read-only) pair")
    ptr = _int(name, "the data pointer", data[0], 0, _U64)
    shape_in = cai["shape"]
    if not isinstance(shape_in, (tuple, list)):
        raise ArgumentError(f"'{name}': 'shape' must be a tuple")
    shape = [_int(name, "a size", d, 0, _I64) for d in shape_in]
    size = _ITEMSIZE[dtype]
    if cai.get("strides") is None:
        strides, acc = [], 1
        for d in reversed(shape):
            strides.insert(0, acc)
            acc *= d
    else:
        st = cai["strides"]
        if not isinstance(st, (tuple, list)) or len(st) != len(shape):
            raise ArgumentError(f"'{name}': 'strides' must be a tuple as long as 'shape'")
        st = [_int(name, "a stride", s, -_I64, _I64) for s in st]
        if any(s % size for s in st):
            raise ArgumentError(f"'{name}': strides {st} (bytes) are not whole elements")
        strides = [s // size for s in st]
    dev = getattr(getattr(t, "device", None), "id", 0)
    device = _int(name, "the device", dev, 0, (1 << 31) - 1)
    return (ptr, dtype, shape, strides, device)


def _tensor(name: str, t: Any) -> Tuple[int, str, list, list, int]:
    """(ptr, dtype, shape, strides in elements, device; -1 for host) of a tensor-like."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(t, torch.Tensor):
        dt = str(t.dtype).replace("torch.", "")
        if dt not in _TORCH_DTYPES:
            raise ArgumentError(f"'{name}': tilec has no dtype for torch.{dt}")
        dev = t.device.index if t.device.type == "cuda" else -1
        if dev is None:
            dev = torch.cuda.current_device()
        return (t.data_ptr(), _TORCH_DTYPES[dt], list(t.shape), list(t.stride()), dev)
    if hasattr(t, "__cuda_array_interface__"):
        return _cai_tensor(name, t, t.__cuda_array_interface__)
    if hasattr(t, "__dlpack__") and hasattr(t, "__dlpack_device__"):
        return _tilec.dlpack_tensor(name, t)
    raise ArgumentError(
        f"'{name}': expected a tensor (torch, __cuda_array_interface__ or DLPack), "
        f"found {type(t).__name__}"
    )


def _stream(stream: Any) -> int:
    """A ``CUstream`` handle from a torch stream, an object with ``cuda_stream``, or an
    int."""
    if hasattr(stream, "cuda_stream"):
        stream = stream.cuda_stream
    return _int("stream", "the stream handle", stream, 0, _U64)


def _grid(grid: Any) -> Tuple[int, int, int]:
    if isinstance(grid, int) and not isinstance(grid, bool):
        grid = (grid,)
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise ArgumentError(f"grid {grid!r} is not a tuple of 1 to 3 ints")
    dims = [_int("grid", "a dimension", g, 1, (1 << 31) - 1) for g in grid]
    return tuple(dims + [1] * (3 - len(dims)))


class Kernel:
    """A compiled kernel: ``name``, ``ptx``, ``cubin`` (bytes or None), ``manifest`` (a
    dict), and a call that launches it.

    A split-K kernel (``manifest["split_k"]``) takes the finalize's output by the name
    ``split_k.finalize.to`` (``C``): the launch zeroes the f32 workspace, runs the kernel
    with the caller's slice count S, and rounds the workspace into it, all on the stream.
    Without the workspace argument, it is allocated with torch (the output's shape).

    ``kernel(*args, grid=None, stream=None, **kwargs)``: positional arguments bind to the
    manifest's parameters in order, keyword arguments by name (a kernel parameter named
    ``grid`` or ``stream`` takes that keyword; the launch then uses the defaults). ``grid``
    replaces a persistent kernel's CTA count (``(x, 1, 1)``). ``stream`` is a ``torch.cuda.Stream``, a
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
        _tilec.check_manifest(manifest)
        if device is not None:
            device = _int("device", "the device ordinal", device, 0, (1 << 31) - 1)
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
        named += self._workspaces(named)
        dtypes = {p["name"]: p["dtype"] for p in self.manifest["params"]}
        out = []
        for k, v in named:
            if isinstance(v, bool) and dtypes.get(k) != "i1":
                raise ArgumentError(f"'{k}' takes {dtypes.get(k, 'a value')}, found a bool")
            if isinstance(v, (bool, int, float)):
                out.append((k, v))
            elif isinstance(v, (str, bytes, type(None))):
                raise ArgumentError(f"'{k}': cannot pass {type(v).__name__} to a kernel")
            else:
                out.append((k, _tensor(k, v)))
        return out

    def _workspaces(self, named: list) -> list:
        """A split-K kernel's workspaces that the call leaves out: f32 torch tensors of the
        finalize output's shape, on its device (the launch zeroes them)."""
        sk = self.manifest.get("split_k")
        given = {k for k, _ in named}
        missing = [w for w in (sk or {}).get("workspace", []) if w not in given]
        if not missing:
            return []
        if not sk.get("finalize"):
            # An ordered reduction writes the output itself; its workspace's shape depends
            # on S (a rank-3 workspace holds one partial per slice).
            raise ArgumentError(
                f"kernel '{self.name}' reduces its K slices in order: pass its workspace "
                f"{', '.join(missing)} (f32: S x M x N for a rank-3 parameter, else M x N) and "
                f"its flags {', '.join(sk.get('flags', []))} (i32, one per output tile)"
            )
        to = sk["finalize"]["to"]
        out = dict(named).get(to)
        torch = sys.modules.get("torch")
        if torch is None or not isinstance(out, torch.Tensor):
            raise ArgumentError(
                f"kernel '{self.name}' is split-K: pass its workspace "
                f"{', '.join(missing)} (f32, the output's shape), or pass the output '{to}' "
                f"as a torch tensor and the workspace is allocated"
            )
        return [(w, torch.empty(out.shape, dtype=torch.float32, device=out.device))
                for w in missing]

    def _controls(self, kwargs: Dict[str, Any], names: Sequence[str]) -> list:
        """Pops the call's own keywords (``grid``, ``stream``, ``device``, ``sm_count``)
        from ``kwargs``, unless the kernel has a parameter of that name: then the value is
        the kernel's, and the control keeps its default."""
        params = set(self.params)
        return [kwargs.pop(n) if n in kwargs and n not in params else None for n in names]

    def check(self, *args: Any, **kwargs: Any) -> dict:
        """``check(*args, device=0, sm_count=132, **kwargs)``: every check a launch makes on
        the host, without a GPU. Raises ``ArgumentError`` as the call would, else returns
        the launch configuration (grid, block, cluster, dynamic_shared_memory_bytes) for
        ``device`` with ``sm_count`` SMs."""
        device, sm_count = self._controls(kwargs, ["device", "sm_count"])
        device = 0 if device is None else _int("device", "the ordinal", device, 0, (1 << 31) - 1)
        sms = 132 if sm_count is None else _int("sm_count", "the count", sm_count, 1, 1 << 20)
        return _tilec.bind(self.manifest_json, self.bind(args, kwargs), device, sms)

    def __call__(self, *args: Any, **kwargs: Any) -> Tuple[int, int, int]:
        """``kernel(*args, grid=None, stream=None, **kwargs)``; returns the grid launched."""
        grid, stream = self._controls(kwargs, ["grid", "stream"])
        bound = self.bind(args, kwargs)
        devices = {v[4] for _, v in bound if isinstance(v, tuple) and v[4] >= 0}
        device = self._device if self._device is not None else min(devices, default=0)
        if stream is None:
            torch = sys.modules.get("torch")
            if torch is not None and torch.cuda.is_available():
                stream = torch.cuda.current_stream(device).cuda_stream
            else:
                stream = 0
        stream = _stream(stream)
        if grid is not None:
            grid = _grid(grid)
        return self.launcher(device).launch(bound, stream, grid)
