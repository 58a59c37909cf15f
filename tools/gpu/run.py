#!/usr/bin/env python3
"""Launch a tilec kernel from its manifest on a CUDA GPU, check it against torch, time it.

    python3 tools/gpu/run.py MANIFEST.json [--shapes M,N,K ...] [--time] [--iters 50]
                             [--json OUT] [--seed 0] [--launch-ex] [--tol 1e-2]

The manifest format is docs/manifest.md (schema version 1). The cubin named by `cubin_file`
(`tile-compile --emit cubin`: tilec's ptxas), or else the PTX named by `ptx_file` (the driver
JIT-compiles it, with the driver's own ptxas, which may be older), relative to the manifest,
is loaded with cuModuleLoadData, the `.entry` named by `kernel` is looked up, its dynamic shared memory limit is raised
to `dynamic_shared_memory_bytes`, the grid is evaluated from `grid`, and the kernel is launched
with cuLaunchKernelEx (with a cluster-dimension attribute when `cluster` != [1,1,1]; with
--launch-ex also for cluster [1,1,1], otherwise plain cuLaunchKernel).

Binding convention (the problem is a GEMM, C[M,N] = A[M,K] @ B[K,N]):
  * each manifest parameter binds by its `role` field if present, else by its `name`;
  * tensor parameters (kind `tensor_map` or `tensor_pointer`) with role A, B, C get A (M x K),
    B (K x N), C (M x N); all row-major (last dimension contiguous), dtype from the parameter;
    --a-layout km stores A as K x M, --b-layout nk stores B as N x K (x · Wᵀ), --batch B
    gives each a leading dimension of B and binds the scalar `batch`;
  * scalar parameters with role M, N, K get the problem sizes (dtype i32, i64, u32, u64 or
    index); any other scalar is an error;
  * a `tensor_map` parameter is encoded with cuTensorMapEncodeTiled over the whole tensor:
    global dims and byte strides innermost first, boxDim = reversed `box`, element strides 1,
    `swizzle` (none, 32B, 64B, 128B), `interleave` (none), `l2_promotion` (none, 64B, 128B,
    256B), `fill` zero -> CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE (out-of-bounds reads give zero);
    it is passed by value (128 bytes);
  * a `tensor_pointer` parameter becomes base pointer, rank sizes, rank strides (u64,
    elements), as docs/manifest.md lists.
TMA needs 16-byte aligned row pitches: a tensor read through a tensor map whose row is not a
multiple of 16 bytes is stored with its pitch rounded up and the padding filled with NaN (so a
read beyond the logical bounds would poison the result).

Split-K kernels (a manifest with a `split_k` field, docs/manifest.md): the kernel adds its
partial tiles into an f32 workspace (`split_k.workspace`, M x N, allocated here) instead of
writing C. The launch is then the sequence: zero the workspace, launch the kernel with
S = `split_k.arg` K slices (grid z), convert the workspace into the bf16 C (torch, on the same
stream) — all three inside the launch closure, so --time (and bench.py) time the whole
sequence. S is --split if given, else chosen per shape: S = min(ceil(K / k_tile),
SMs // output tiles) (at least 1), then lowered so that no slice is empty.

A tensor parameter named S (examples/gemm_rowsum.tile) gets an M x 1 f32 tensor, zeroed before the
launch; it must hold the row sums of the product (relative error <= --tol against float64 sums).

Checks per case: A, B random (torch, seeded, fresh per case); C poisoned with a NaN bit pattern
and followed by a poisoned guard region; after the launch, the relative Frobenius error against
a float32 torch.matmul reference (TF32 off) must be <= --tol, every C element must have been
written (no NaN left) and the guard must be intact. --time then times the kernel and
torch.matmul (cuBLAS) on the same inputs with CUDA events (warm-up, median of --iters >= 20).
Exit status 1 if any case fails.
"""
import argparse
import contextlib
import ctypes
import json
import math
import os
import statistics
import sys

import torch

try:  # cuda-python >= 12.x
    from cuda.bindings import driver as cu
except ImportError:  # older cuda-python
    from cuda import cuda as cu


# ------------------------------------------------------------------------------------------
# driver helpers

def check(ret, what):
    """cuda-python returns (CUresult, values...): raise on error, return the values."""
    if isinstance(ret, tuple):
        err, vals = ret[0], ret[1:]
    else:
        err, vals = ret, ()
    if int(err) != 0:
        _, name = cu.cuGetErrorName(err)
        _, msg = cu.cuGetErrorString(err)
        raise RuntimeError("%s failed: %s (%s)" % (
            what, name.decode() if isinstance(name, bytes) else name,
            msg.decode() if isinstance(msg, bytes) else msg))
    if not vals:
        return None
    return vals[0] if len(vals) == 1 else vals


TORCH_DTYPE = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32,
               "i32": torch.int32, "i64": torch.int64,
               "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
# TMA moves bytes: the 8-bit floats travel as UINT8 (docs/manifest.md).
TMAP_DTYPE = {
    "bf16": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
    "f16": "CU_TENSOR_MAP_DATA_TYPE_FLOAT16",
    "f32": "CU_TENSOR_MAP_DATA_TYPE_FLOAT32",
    "e4m3": "CU_TENSOR_MAP_DATA_TYPE_UINT8",
    "e5m2": "CU_TENSOR_MAP_DATA_TYPE_UINT8",
}
SWIZZLE = {"none": "CU_TENSOR_MAP_SWIZZLE_NONE", "32B": "CU_TENSOR_MAP_SWIZZLE_32B",
           "64B": "CU_TENSOR_MAP_SWIZZLE_64B", "128B": "CU_TENSOR_MAP_SWIZZLE_128B"}
L2PROMO = {"none": "CU_TENSOR_MAP_L2_PROMOTION_NONE", "64B": "CU_TENSOR_MAP_L2_PROMOTION_L2_64B",
           "128B": "CU_TENSOR_MAP_L2_PROMOTION_L2_128B", "256B": "CU_TENSOR_MAP_L2_PROMOTION_L2_256B"}
INTERLEAVE = {"none": "CU_TENSOR_MAP_INTERLEAVE_NONE", "16B": "CU_TENSOR_MAP_INTERLEAVE_16B",
              "32B": "CU_TENSOR_MAP_INTERLEAVE_32B"}
SCALAR_CTYPE = {"i32": ctypes.c_int32, "u32": ctypes.c_uint32, "i64": ctypes.c_int64,
                "u64": ctypes.c_uint64, "index": ctypes.c_int64, "f32": ctypes.c_float}


def encode_tensor_map(param, t):
    """CUtensorMap for 2-D+ tensor t (row-major, any pitch) per the manifest parameter."""
    rank = t.dim()
    assert param.get("rank", rank) == rank, "rank mismatch for %s" % param["name"]
    esz = t.element_size()
    dims = [cu.cuuint64_t(int(d)) for d in reversed(t.shape)]
    strides = [cu.cuuint64_t(int(s) * esz) for s in reversed(t.stride()[:-1])]
    assert t.stride()[-1] == 1, "tensor-map tensors need a unit innermost stride"
    box = [cu.cuuint32_t(int(b)) for b in reversed(param["box"])]
    estr = [cu.cuuint32_t(1)] * rank
    fill = param.get("fill", "zero")
    if fill not in ("zero", "none"):
        raise ValueError("unsupported fill %r" % fill)
    tmap = check(cu.cuTensorMapEncodeTiled(
        getattr(cu.CUtensorMapDataType, TMAP_DTYPE[param["dtype"]]),
        rank, t.data_ptr(), dims, strides, box, estr,
        getattr(cu.CUtensorMapInterleave, INTERLEAVE[param.get("interleave", "none")]),
        getattr(cu.CUtensorMapSwizzle, SWIZZLE[param.get("swizzle", "none")]),
        getattr(cu.CUtensorMapL2promotion, L2PROMO[param.get("l2_promotion", "none")]),
        cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        "cuTensorMapEncodeTiled(%s)" % param["name"])
    return tmap


def tensor_map_bytes(tmap):
    """The 128 bytes of a CUtensorMap as a ctypes buffer (the launch copies them by value)."""
    buf = (ctypes.c_uint8 * 128)()
    if hasattr(tmap, "getPtr"):
        ctypes.memmove(buf, int(tmap.getPtr()), 128)
    else:
        words = [int(w) for w in tmap.opaque]
        ctypes.memmove(buf, (ctypes.c_uint64 * 16)(*words), 128)
    return buf


def eval_expr(e, env):
    if isinstance(e, int):
        return e
    if isinstance(e, dict):
        (k, v), = e.items()
        if k == "arg":
            return int(env[v])
        a, b = (eval_expr(x, env) for x in v)
        if k == "ceildiv":
            return -(-a // b)
        if k == "mul":
            return a * b
        if k == "add":
            return a + b
        if k == "min":
            return min(a, b)
        if k == "max":
            return max(a, b)
    raise ValueError("bad grid expression %r" % (e,))


# ------------------------------------------------------------------------------------------

class Kernel:
    def __init__(self, manifest_path, launch_ex=False):
        self.path = manifest_path
        with open(manifest_path) as f:
            self.m = json.load(f)
        if self.m.get("schema_version") != 1:
            raise ValueError("unsupported manifest schema_version %r" % self.m.get("schema_version"))
        image = self.m.get("cubin_file") or self.m["ptx_file"]
        ptx_path = os.path.join(os.path.dirname(os.path.abspath(manifest_path)), image)
        with open(ptx_path, "rb") as f:
            ptx = f.read()
        self.launch_ex = launch_ex or tuple(self.m.get("cluster", [1, 1, 1])) != (1, 1, 1)
        torch.cuda.init()
        check(cu.cuInit(0), "cuInit")
        dev = check(cu.cuDeviceGet(torch.cuda.current_device()), "cuDeviceGet")
        self.ctx = check(cu.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        check(cu.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        self._image = ctypes.create_string_buffer(ptx)  # NUL-terminated PTX text, or the ELF
        self.module = check(cu.cuModuleLoadData(ctypes.addressof(self._image)), "cuModuleLoadData")
        self.func = check(cu.cuModuleGetFunction(self.module, self.m["kernel"].encode()),
                          "cuModuleGetFunction")
        self.smem = int(self.m.get("dynamic_shared_memory_bytes", 0))
        if self.smem > 48 * 1024:
            check(cu.cuFuncSetAttribute(
                self.func, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                self.smem), "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")
        self.num_regs = check(cu.cuFuncGetAttribute(
            cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, self.func), "cuFuncGetAttribute")
        self.sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
        # Clusters the device can hold at once (cuOccupancyMaxActiveClusters): the SMs of a
        # GPC not filling a whole cluster stay idle, so a persistent launch of SMs / cluster
        # size clusters may not all be resident.
        self.max_clusters = 0
        cl = self.m.get("cluster", [1, 1, 1])
        if cl[0] * cl[1] * cl[2] > 1:
            try:
                cfg = cu.CUlaunchConfig()
                cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = cl[0] * self.sms, cl[1], cl[2]
                cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = self.m["block"]
                cfg.sharedMemBytes = self.smem
                a = cu.CUlaunchAttribute()
                a.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
                a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z = cl
                cfg.attrs = [a]
                cfg.numAttrs = 1
                err, n = cu.cuOccupancyMaxActiveClusters(self.func, cfg)
                if err == cu.CUresult.CUDA_SUCCESS:
                    self.max_clusters = int(n)
            except Exception as e:  # an older cuda-python: fall back to SMs / cluster size
                print("# cuOccupancyMaxActiveClusters: %s" % e, file=sys.stderr)
        self.split_k = self.m.get("split_k")
        self.split_override = 0  # split-K: S to use (0: choose per shape, see choose_split)

    def role(self, p):
        return p.get("role", p["name"])

    def grid(self, env):
        g = self.m["grid"]
        dims = [eval_expr(g[d], env) if d in g else 1 for d in ("x", "y", "z")]
        pers = self.m.get("persistent")
        if pers and pers.get("schedule", "static") == "static":
            # Static persistent: min(tiles, SMs x CTAs per SM) CTAs along x. Other
            # schedules (clc: try_cancel stealing) launch the tile grid as given.
            # A cluster of cx x cy CTAs takes adjacent tiles: (clusters * cx, cy, 1) CTAs.
            cx, cy = (int(c) for c in self.m.get("cluster", [1, 1, 1])[:2])
            tiles = -(-dims[0] // cx) * -(-dims[1] // cy) * dims[2]
            fit = self.sms * int(pers.get("ctas_per_sm", 1)) // (cx * cy)
            if self.max_clusters:
                fit = min(fit, self.max_clusters)
            n = min(tiles, max(1, fit))
            dims = [n * cx, cy, 1]
        limits = self.m.get("grid_limits", [2**31 - 1, 65535, 65535])
        for axis, (d, lim) in enumerate(zip(dims, limits)):
            if not 1 <= d <= lim:
                raise SystemExit(f"grid {dims}: dimension {'xyz'[axis]} is {d}, outside 1..{lim}")
        return dims

    def choose_split(self, scalars):
        """Split-K: the number of K slices S for this shape (the manifest's split_k)."""
        sk = self.split_k
        kt = max(1, -(-int(scalars["K"]) // int(sk.get("k_tile") or 64)))
        if self.split_override:
            return int(self.split_override)
        env = dict(scalars)
        env[sk["arg"]] = 1
        g = self.m["grid"]
        tiles = eval_expr(g["x"], env) * eval_expr(g["y"], env)
        s = max(1, min(kt, self.sms // max(tiles, 1)))
        per = -(-kt // s)  # k tiles per slice
        return -(-kt // per)  # no empty slice

    def prepare(self, tensors, scalars, stream):
        """Build the kernel-parameter array (void**) and the launch closure."""
        if self.split_k:
            return self.prepare_split(tensors, scalars, stream)
        return self.prepare_one(tensors, scalars, stream)

    def prepare_split(self, tensors, scalars, stream):
        """Split-K: workspace(s) zeroed, the kernel, the workspace converted into C; or, for
        an ordered reduction, the kernel alone (it writes C)."""
        sk = self.split_k
        if not sk.get("arg"):
            raise ValueError("split_k manifest without 'arg' (grid z is not a plain scalar argument)")
        C = tensors["C"]
        M, N = C.shape
        tensors = dict(tensors)
        if sk.get("reduction") == "ordered":
            return self.prepare_ordered(tensors, scalars, stream, M, N)
        wss = []
        for w in sk["workspace"]:
            tensors[w] = torch.empty((M, N), dtype=torch.float32, device=C.device)
            wss.append(tensors[w])
        scalars = dict(scalars)
        scalars[sk["arg"]] = self.choose_split(scalars)
        kernel, grid = self.prepare_one(tensors, scalars, stream)
        fin = sk.get("finalize") or {}
        src = tensors[fin.get("from", sk["workspace"][0])]
        ext = torch.cuda.ExternalStream(int(stream)) if int(stream) != 0 else None

        def on_stream():
            cur = torch.cuda.current_stream()
            if ext is None or int(cur.cuda_stream) == int(stream):
                return contextlib.nullcontext()
            return torch.cuda.stream(ext)

        def launch():
            with on_stream():
                for w in wss:
                    w.zero_()
            kernel()
            with on_stream():
                C.copy_(src)
        launch.keep = kernel.keep + [wss]
        launch.split = scalars[sk["arg"]]
        return launch, grid

    def prepare_ordered(self, tensors, scalars, stream, M, N):
        """Ordered split-K: W (any contents; M x N, or S x M x N for a rank-3 workspace) and
        the flags (zeroed here once: every launch leaves them zero, which `check_flags`
        verifies) allocated; S slices; a kernel whose programs wait (`waits`) keeps each
        program of a tile resident with the others (S x tiles <= SMs when S > 1, unless
        static persistent)."""
        sk = self.split_k
        dev = tensors["C"].device
        scalars = dict(scalars)
        scalars[sk["arg"]] = self.choose_split(scalars)
        slices = scalars[sk["arg"]]
        rank = {p["name"]: p.get("rank", 2) for p in self.m["params"]}
        for w in sk["workspace"]:
            # M x N running sums, or S x M x N partials (one slice each).
            shape = (slices, M, N) if rank.get(w) == 3 else (M, N)
            tensors[w] = torch.empty(shape, dtype=torch.float32, device=dev)
        g = self.m["grid"]
        tiles = eval_expr(g["x"], scalars) * eval_expr(g["y"], scalars)
        static = (self.m.get("persistent") or {}).get("schedule") == "static"
        if sk.get("waits") and slices > 1 and not static and tiles * slices > self.sms:
            raise ValueError("ordered split-K: %d tiles x S = %d programs exceed the %d SMs; a slice "
                             "could wait for one that is not resident" % (tiles, tiles * slices, self.sms))
        flags = [torch.zeros(max(tiles, 1), dtype=torch.int32, device=dev) for _ in sk["flags"]]
        self.flags = getattr(self, "flags", []) + flags
        for f, t in zip(sk["flags"], flags):
            tensors[f] = t
        kernel, grid = self.prepare_one(tensors, scalars, stream)
        kernel.keep.append([tensors[w] for w in sk["workspace"]] + flags)
        kernel.split = scalars[sk["arg"]]
        return kernel, grid

    def check_flags(self):
        """Ordered split-K: every flag tensor prepared so far is zero again after the launches
        (None for other kernels)."""
        flags = getattr(self, "flags", None)
        if not flags:
            return None
        return all(int(f.abs().max()) == 0 for f in flags)

    def prepare_one(self, tensors, scalars, stream):
        holders = []
        for p in self.m["params"]:
            kind, role = p["kind"], self.role(p)
            if kind == "tensor_map":
                holders.append(tensor_map_bytes(encode_tensor_map(p, tensors[role])))
            elif kind == "tensor_pointer":
                t = tensors[role]
                assert TORCH_DTYPE[p["dtype"]] == t.dtype
                holders.append(ctypes.c_uint64(t.data_ptr()))
                holders += [ctypes.c_uint64(int(s)) for s in t.shape]
                holders += [ctypes.c_uint64(int(s)) for s in t.stride()]
            elif kind == "scalar":
                holders.append(SCALAR_CTYPE[p["dtype"]](scalars[role]))
            else:
                raise ValueError("unknown param kind %r" % kind)
        ptrs = (ctypes.c_void_p * len(holders))(*[ctypes.addressof(h) for h in holders])
        gx, gy, gz = self.grid(scalars)
        bx, by, bz = self.m["block"]
        cl = self.m.get("cluster", [1, 1, 1])
        keep = [holders, ptrs]
        if self.launch_ex:
            cfg = cu.CUlaunchConfig()
            cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = gx, gy, gz
            cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = bx, by, bz
            cfg.sharedMemBytes = self.smem
            cfg.hStream = cu.CUstream(stream)
            attrs = []
            if tuple(cl) != (1, 1, 1):
                a = cu.CUlaunchAttribute()
                a.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
                a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z = cl
                attrs.append(a)
            cfg.attrs = attrs
            cfg.numAttrs = len(attrs)
            keep.append(cfg)

            func = self.func

            def launch():
                check(cu.cuLaunchKernelEx(cfg, func, ctypes.addressof(ptrs), 0), "cuLaunchKernelEx")
        else:
            hs = cu.CUstream(stream)

            def launch():
                check(cu.cuLaunchKernel(self.func, gx, gy, gz, bx, by, bz, self.smem, hs,
                                        ctypes.addressof(ptrs), 0), "cuLaunchKernel")
        launch.keep = keep  # the parameter buffers must outlive every launch
        return launch, (gx, gy, gz)


def make_tma_friendly(shape, dtype, gen, device, pad_value=float("nan")):
    """Random tensor of `shape` (rank >= 2), row pitch rounded up to 16 bytes (padding =
    NaN)."""
    esz = torch.tensor([], dtype=dtype).element_size()
    cols = shape[-1]
    per16 = 16 // esz
    pitch = -(-cols // per16) * per16
    store = torch.full(tuple(shape[:-1]) + (pitch,), pad_value, dtype=dtype, device=device)
    t = store[..., :cols]
    t.copy_(torch.randn(*shape, generator=gen, dtype=torch.float32, device=device).to(dtype))
    return t


def time_events(fn, iters, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


class Unsupported(Exception):
    """A shape the kernel's manifest cannot take (reported as SKIP, not as a failure)."""


def run_case(k, M, N, K, args, case_idx):
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(args.seed * 1000003 + case_idx)
    dt = {}
    for p in k.m["params"]:
        if p["kind"] in ("tensor_map", "tensor_pointer"):
            dt[k.role(p)] = TORCH_DTYPE[p["dtype"]]
    kinds = {k.role(p): p["kind"] for p in k.m["params"]}
    # Stored shapes: A M x K (--a-layout mk) or K x M (km), B K x N (kn) or N x K (nk), with
    # a leading batch dimension under --batch.
    lead = (args.batch,) if args.batch else ()
    shapes = {"A": lead + ((M, K) if args.a_layout == "mk" else (K, M)),
              "B": lead + ((K, N) if args.b_layout == "kn" else (N, K))}
    tensors = {}
    for r in ("A", "B"):
        if kinds.get(r) == "tensor_map":
            tensors[r] = make_tma_friendly(shapes[r], dt[r], gen, dev)
        else:
            tensors[r] = torch.randn(shapes[r], generator=gen, dtype=torch.float32,
                                     device=dev).to(dt[r])
    # The product's operands as the math sees them (views; no copies).
    A_m = tensors["A"] if args.a_layout == "mk" else tensors["A"].transpose(-1, -2)
    B_m = tensors["B"] if args.b_layout == "kn" else tensors["B"].transpose(-1, -2)
    cshape = lead + (M, N)
    crows = args.batch * M if args.batch else M
    # C with a poisoned guard region behind it (all-ones bits: NaN in bf16/f16/f32).
    # C written through a tensor map (the TMA-store epilogue) needs a 16-byte row pitch: its
    # rows are padded like A's and B's, the padding poisoned too and checked untouched (TMA
    # must clip every box at N).
    guard = 4096
    cdt = dt.get("C", TORCH_DTYPE[((k.split_k or {}).get("finalize") or {}).get("dtype", "bf16")])
    esz = torch.tensor([], dtype=cdt).element_size()
    cpitch = N
    if kinds.get("C") == "tensor_map":
        cpitch = -(-N // (16 // esz)) * (16 // esz)
        if cpitch != N:
            # TMA stores write whole 16-byte chunks: a row whose length is not a multiple of
            # 16 bytes gets its padding, up to the next 16-byte boundary, overwritten (seen on
            # the H200: every padding element of every row). A C that is a view into a wider
            # tensor would lose its neighbours' data, so such shapes are not launched.
            raise Unsupported("C is stored with TMA (the tma epilogue): N x %d bytes must be a multiple of 16 (N = %d)" % (esz, N))
    cbuf = torch.empty(crows * cpitch + guard, dtype=cdt, device=dev)
    ibits = {2: torch.int16, 4: torch.int32}[cbuf.element_size()]

    def poison():
        cbuf.view(ibits).fill_(-1)
    C = cbuf[:crows * cpitch].view(*(lead + (M, cpitch)))[..., :N]
    tensors["C"] = C
    if "bias" in kinds:
        # A fused epilogue's bias: one f32 per column (a 1 x N tensor), bound by name.
        tensors["bias"] = torch.randn((1, N), generator=gen, dtype=torch.float32,
                                      device=dev).to(dt["bias"])
    if kinds.get("S", "scalar") != "scalar":
        # An epilogue reduction's output (examples/gemm_rowsum.tile): the row sums of A·B,
        # an M x 1 f32 tensor that the kernel's atomic adds gather into (zeroed here).
        tensors["S"] = torch.zeros((M, 1), dtype=dt["S"], device=dev)
    scalars = {"M": M, "N": N, "K": K}
    if args.batch:
        scalars["batch"] = args.batch
    stream = torch.cuda.current_stream().cuda_stream
    launch, grid = k.prepare(tensors, scalars, stream)

    poison()
    torch.cuda.synchronize()
    launch()
    check(cu.cuStreamSynchronize(cu.CUstream(stream)), "kernel execution")
    torch.cuda.synchronize()

    prev_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    ref = torch.matmul(A_m.float(), B_m.float())
    torch.backends.cuda.matmul.allow_tf32 = prev_tf32
    # --epilogue: what the kernel applies after the product (checked, not timed on cuBLAS's
    # side: the cuBLAS column stays a plain matmul).
    if args.scale != 1.0:
        ref = ref * args.scale
    if "bias" in tensors:
        ref = ref + tensors["bias"].float()
    if args.epilogue == "relu":
        ref = torch.relu(ref)
    elif args.epilogue == "tanh":
        ref = torch.tanh(ref)
    elif args.epilogue == "exp":
        ref = torch.exp(ref)
    out = C.float()
    all_written = not bool(torch.isnan(out).any())
    guard_ok = bool((cbuf[crows * cpitch:].view(ibits) == -1).all())
    if cpitch != N:
        pad = cbuf[:crows * cpitch].view(crows, cpitch)[:, N:]
        guard_ok = guard_ok and bool((pad.contiguous().view(ibits) == -1).all())
    diff = torch.nan_to_num(out, nan=0.0) - ref
    rel = float(torch.linalg.vector_norm(diff) / torch.linalg.vector_norm(ref).clamp_min(1e-30))
    if not all_written:
        rel = float("nan")
    ok = all_written and guard_ok and rel <= args.tol
    row = {"M": M, "N": N, "K": K, "grid": grid, "split": getattr(launch, "split", None), "rel_err": rel, "all_written": all_written,
           "guard_ok": guard_ok, "ok": ok}
    if "S" in tensors:
        # Against the float64 row sums of the f32 reference product.
        sref = ref.double().sum(dim=1, keepdim=True)
        sd = tensors["S"].double() - sref
        srel = float(torch.linalg.vector_norm(sd) / torch.linalg.vector_norm(sref).clamp_min(1e-30))
        row["rowsum_rel_err"] = srel
        row["ok"] = ok = ok and srel <= args.tol
    if args.time:
        flops = 2.0 * M * N * K * max(args.batch, 1)
        # Fresh poison is not needed for timing; the kernel overwrites C each launch.
        t_ms = time_events(launch, args.iters)
        cref = torch.empty(*cshape, dtype=cdt, device=dev)
        # cuBLAS on the same stored operands: transposed views are its T/N operand modes
        # (torch.matmul(x, W.t()) is what F.linear runs); batched: torch.bmm.
        prev_tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = args.tf32
        if args.batch:
            t_ref = time_events(lambda: torch.bmm(A_m, B_m, out=cref), args.iters)
        else:
            t_ref = time_events(lambda: torch.matmul(A_m, B_m, out=cref), args.iters)
        torch.backends.cuda.matmul.allow_tf32 = prev_tf32
        row.update({"tilec_ms": t_ms, "tilec_tflops": flops / t_ms / 1e9,
                    "cublas_ms": t_ref, "cublas_tflops": flops / t_ref / 1e9,
                    "ratio": t_ref / t_ms})
        # Re-check after the timing loop: the same output must still be there.
        out2 = C.float()
        if k.m.get("split_k"):
            # Split-K adds S partial tiles with float atomics in whatever order the CTAs
            # arrive: with S >= 3 the sums differ in the last bits from launch to launch
            # (fp32 addition is not associative). Same tolerance as the first check.
            d2 = torch.nan_to_num(out2, nan=0.0) - ref
            rel2 = float(torch.linalg.vector_norm(d2) / torch.linalg.vector_norm(ref).clamp_min(1e-30))
            row["rerun_rel_err"] = rel2
            if rel2 > args.tol or bool(torch.isnan(out2).any()):
                row["ok"] = False
                row["rerun_mismatch"] = True
        elif not torch.equal(torch.nan_to_num(out2, nan=0.0), torch.nan_to_num(out, nan=0.0)):
            row["ok"] = False
            row["rerun_mismatch"] = True
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("manifest")
    ap.add_argument("--shapes", nargs="+", default=["1024,1024,1024"], help="M,N,K ...")
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tol", type=float, default=1e-2)
    ap.add_argument("--launch-ex", action="store_true", help="use cuLaunchKernelEx even without clusters")
    ap.add_argument("--epilogue", choices=["none", "relu", "tanh", "exp"], default="none",
                    help="the kernel's activation after (scale *) A@B (+ bias when the manifest has a 'bias' tensor)")
    ap.add_argument("--scale", type=float, default=1.0, help="the kernel's scale of A@B in the reference")
    ap.add_argument("--split", type=int, default=0,
                    help="split-K manifests: the number of K slices S (0: choose per shape)")
    ap.add_argument("--a-layout", choices=["mk", "km"], default="mk",
                    help="how the kernel's A is stored: M x K (default) or K x M (A transposed)")
    ap.add_argument("--b-layout", choices=["kn", "nk"], default="kn",
                    help="how the kernel's B is stored: K x N (default) or N x K (nn.Linear's weight)")
    ap.add_argument("--tf32", action="store_true",
                    help="time cuBLAS with TF32 allowed (for tf32 kernels, examples/gemm_tf32.tile)")
    ap.add_argument("--batch", type=int, default=0,
                    help="batched kernels: the batch size (3-D A, B, C; the scalar 'batch')")
    args = ap.parse_args()
    if args.time and args.iters < 20:
        ap.error("--iters must be >= 20 for a median")
    k = Kernel(args.manifest, launch_ex=args.launch_ex)
    k.split_override = args.split
    print("# %s: kernel %s, %s, block %s, cluster %s, dyn smem %d B, %d regs (driver JIT), %d SMs, launch %s"
          % (args.manifest, k.m["kernel"], k.m["target"], k.m["block"], k.m.get("cluster"), k.smem,
             k.num_regs, k.sms, "cuLaunchKernelEx" if k.launch_ex else "cuLaunchKernel"), flush=True)
    if k.max_clusters:
        print("# at most %d clusters resident (cuOccupancyMaxActiveClusters)" % k.max_clusters,
              flush=True)
    rows = []
    failed = False
    hdr = "%6s %6s %6s  %9s  %7s  %9s %8s  %9s %8s  %6s  %s" % (
        "M", "N", "K", "rel_err", "written", "tilec_ms", "TFLOP/s", "cublas_ms", "TFLOP/s", "ratio", "status")
    lines = []
    for i, s in enumerate(args.shapes):
        M, N, K = (int(x) for x in s.split(","))
        try:
            row = run_case(k, M, N, K, args, i)
        except Unsupported as e:  # a documented limit of the kernel, not a failure
            row = {"M": M, "N": N, "K": K, "ok": True, "skipped": str(e)}
        except Exception as e:  # report and continue with the other shapes
            row = {"M": M, "N": N, "K": K, "ok": False, "error": str(e)}
        rows.append(row)
        failed |= not row["ok"]
        if "skipped" in row:
            line = "%6d %6d %6d  SKIP %s" % (M, N, K, row["skipped"])
        elif "error" in row:
            line = "%6d %6d %6d  ERROR %s" % (M, N, K, row["error"])
        else:
            tm = ("%9.4f %8.1f  %9.4f %8.1f  %6.2f" % (row["tilec_ms"], row["tilec_tflops"], row["cublas_ms"],
                                                     row["cublas_tflops"], row["ratio"])
                  if args.time else "%9s %8s  %9s %8s  %6s" % ("-", "-", "-", "-", "-"))
            line = "%6d %6d %6d  %9.2e  %7s  %s  %s%s" % (
                M, N, K, row["rel_err"], "yes" if row["all_written"] else "NO", tm,
                "ok" if row["ok"] else "FAIL" + ("" if row.get("guard_ok", True) else " (guard overwritten)")
                + (" (output changed after the timing loop)" if row.get("rerun_mismatch") else ""),
                ("  S=%d grid=%s" % (row["split"], row["grid"])) if row.get("split") else "")
            if "rowsum_rel_err" in row:
                line += "  row sums rel_err %.2e" % row["rowsum_rel_err"]
        lines.append(line)
        print(line, flush=True)
    print()
    print(hdr)
    for l in lines:
        print(l)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"manifest": args.manifest, "kernel": k.m["kernel"], "num_regs": k.num_regs,
                       "device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
