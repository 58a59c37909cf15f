#!/usr/bin/env python3
"""Small manifest-driven driver for the reference bf16 GEMM (lowering/reference/gemm_bf16_sm90.*).

Runs on the GPU machine (needs torch + libcuda; everything else is ctypes against the driver API):
  python3 lowering/reference/check_sm90.py gpu-out/sm90/gemm_bf16_sm90.json \
      --shapes 8192,8192,8192 129,257,72 [--time] [--c-layouts row,col]

For each shape: random bf16 A[M,K], B[K,N] (fresh per shape), C poisoned with NaN plus a NaN guard
region after it; launch from the manifest; check every element was written, the guard is intact,
and report ||C - ref||_F / ||ref||_F against float32 torch.matmul of the same bf16 inputs
(cuBLAS bf16 is measured against the same reference). --time: median of CUDA-event timings,
TFLOP/s for the kernel and for torch.matmul (cuBLAS) on the same inputs.

Tensor maps follow docs/manifest.md: dims/byte strides from the tensor passed (innermost first),
boxDim = box reversed, element strides 1, the manifest's swizzle/interleave/L2 promotion, OOB fill
NONE (zeros). TMA needs 16-byte row strides: when a row of B or A would not be, the tensor is
stored in a buffer with a padded row stride and passed as a strided view (ordinary row-major).
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import sys

import torch

cuda = ctypes.CDLL("libcuda.so.1")
CU_DT = {"bf16": 9, "f16": 6, "f32": 7}
SWZ = {"none": 0, "32B": 1, "64B": 2, "128B": 3}
L2P = {"none": 0, "64B": 1, "128B": 2, "256B": 3}
ILV = {"none": 0}
ELT = {"bf16": 2, "f16": 2, "f32": 4}


def ck(r, what):
    if r != 0:
        name = ctypes.c_char_p()
        cuda.cuGetErrorName(r, ctypes.byref(name))
        raise RuntimeError(f"{what} failed: {r} {name.value}")


def load(manifest_path):
    man = json.load(open(manifest_path))
    ptx = open(os.path.join(os.path.dirname(manifest_path), man["ptx_file"]), "rb").read() + b"\0"
    torch.cuda.init()
    torch.empty(1, device="cuda")  # primary context current on this thread
    mod = ctypes.c_void_p()
    log = ctypes.create_string_buffer(1 << 16)
    opts = (ctypes.c_int * 2)(5, 6)  # CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
    vals = (ctypes.c_void_p * 2)(ctypes.addressof(log), 1 << 16)
    r = cuda.cuModuleLoadDataEx(ctypes.byref(mod), ptx, 2, opts, vals)
    if r != 0:
        print(log.value.decode(errors="replace"))
    ck(r, "cuModuleLoadDataEx")
    fn = ctypes.c_void_p()
    ck(cuda.cuModuleGetFunction(ctypes.byref(fn), mod, man["kernel"].encode()), "cuModuleGetFunction")
    ck(cuda.cuFuncSetAttribute(fn, 8, ctypes.c_int(man["dynamic_shared_memory_bytes"])), "set max dyn smem")
    info = {}
    for name, a in (("regs", 4), ("local_bytes", 3), ("max_threads", 0)):
        v = ctypes.c_int()
        ck(cuda.cuFuncGetAttribute(ctypes.byref(v), a, fn), "cuFuncGetAttribute")
        info[name] = v.value
    return man, fn, info


class TensorMap:
    def __init__(self, t, p):
        assert t.dim() == p["rank"] == 2
        self.raw = (ctypes.c_ubyte * 192)()
        self.addr = (ctypes.addressof(self.raw) + 63) & ~63
        es = ELT[p["dtype"]]
        dims = (ctypes.c_uint64 * 2)(t.shape[1], t.shape[0])                    # innermost first
        assert t.stride(1) == 1
        strides = (ctypes.c_uint64 * 1)(t.stride(0) * es)                      # bytes, rank-1 of them
        box = (ctypes.c_uint32 * 2)(*reversed(p["box"]))
        estr = (ctypes.c_uint32 * 2)(1, 1)
        ck(cuda.cuTensorMapEncodeTiled(ctypes.c_void_p(self.addr), CU_DT[p["dtype"]], 2,
                                       ctypes.c_void_p(t.data_ptr()), dims, strides, box, estr,
                                       ILV[p.get("interleave", "none")], SWZ[p["swizzle"]],
                                       L2P[p.get("l2_promotion", "none")], 0), "cuTensorMapEncodeTiled")


def eval_expr(e, scal):
    if isinstance(e, int):
        return e
    if "arg" in e:
        return scal[e["arg"]]
    (k, (a, b)), = e.items()
    a, b = eval_expr(a, scal), eval_expr(b, scal)
    return {"ceildiv": lambda: -(-a // b), "mul": lambda: a * b, "add": lambda: a + b, "min": lambda: min(a, b)}[k]()


def make_launch(man, fn, tensors, scal):
    keep, ptrs = [], []
    for p in man["params"]:
        k = p["kind"]
        if k == "tensor_map":
            tm = TensorMap(tensors[p["name"]], p)
            keep.append(tm)
            ptrs.append(tm.addr)
        elif k == "tensor_pointer":
            t = tensors[p["name"]]
            vals = [ctypes.c_uint64(t.data_ptr())] + [ctypes.c_uint64(s) for s in t.shape] + \
                   [ctypes.c_uint64(s) for s in t.stride()]
            keep += vals
            ptrs += [ctypes.addressof(v) for v in vals]
        else:
            v = {"i64": ctypes.c_int64, "i32": ctypes.c_int32}[p["dtype"]](scal[p["name"]])
            keep.append(v)
            ptrs.append(ctypes.addressof(v))
    argv = (ctypes.c_void_p * len(ptrs))(*ptrs)
    g = man["grid"]
    grid = [eval_expr(g[d], scal) for d in "xyz"]
    blk = man["block"]
    smem = man["dynamic_shared_memory_bytes"]

    def launch():
        stream = torch.cuda.current_stream().cuda_stream
        ck(cuda.cuLaunchKernel(fn, grid[0], grid[1], grid[2], blk[0], blk[1], blk[2], smem,
                               ctypes.c_void_p(stream), argv, None), "cuLaunchKernel")
    launch.keep = (keep, argv)
    launch.grid = grid
    return launch


def tma_view(rows, cols, dtype=torch.bfloat16):
    """rows x cols row-major tensor whose row stride is a multiple of 16 bytes (padded if needed)."""
    ld = -(-cols // 8) * 8
    buf = torch.randn(rows, ld, device="cuda").to(dtype)
    return buf[:, :cols]


def timeit(f, reps):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        f()
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1))
    return statistics.median(ts), min(ts), max(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("--shapes", nargs="+", default=["129,257,72", "1000,1000,1000"])
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--c-layouts", default="row", help="comma list of row,col (col = C stored column-major)")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    man, fn, info = load(a.manifest)
    print(f"loaded {man['kernel']} ({man['target']}, PTX {man['ptx_version']}): driver JIT regs={info['regs']} "
          f"local_bytes={info['local_bytes']} max_threads={info['max_threads']}", flush=True)
    rows = []
    ok_all = True
    for s in a.shapes:
        M, N, K = map(int, s.split(","))
        for lay in a.c_layouts.split(","):
            torch.manual_seed(hash((M, N, K, lay)) & 0xFFFF)
            A = tma_view(M, K)
            B = tma_view(K, N)
            guard = 4096
            buf = torch.full((M * N + guard,), float("nan"), device="cuda", dtype=torch.bfloat16)
            C = buf[:M * N].view(M, N) if lay == "row" else buf[:M * N].view(N, M).t()
            launch = make_launch(man, fn, {"A": A, "B": B, "C": C}, {"M": M, "N": N, "K": K})
            launch()
            torch.cuda.synchronize()
            ref = torch.matmul(A.float(), B.float())
            unwritten = int(torch.isnan(C).sum())
            guard_ok = bool(torch.isnan(buf[M * N:]).all())
            Cf = C.float()
            finite = torch.isfinite(Cf)
            err = float(torch.linalg.norm(torch.where(finite, Cf - ref, torch.zeros_like(ref))) / torch.linalg.norm(ref))
            cub = torch.matmul(A, B)
            err_cublas = float(torch.linalg.norm(cub.float() - ref) / torch.linalg.norm(ref))
            ok = unwritten == 0 and guard_ok and err < 1e-2 and math.isfinite(err)
            ok_all &= ok
            row = dict(M=M, N=N, K=K, C=lay, grid=launch.grid, unwritten=unwritten, guard_ok=guard_ok,
                       rel_err=err, rel_err_cublas=err_cublas, ok=ok)
            if a.time and lay == "row":
                flop = 2.0 * M * N * K
                t, tmin, tmax = timeit(launch, a.reps)
                tc, _, _ = timeit(lambda: torch.matmul(A, B), a.reps)
                row.update(ms=t, ms_min=tmin, ms_max=tmax, tflops=flop / t / 1e9, ms_cublas=tc,
                           tflops_cublas=flop / tc / 1e9)
                # re-check after the timed runs (catches races that show up only sometimes)
                C.fill_(float("nan"))
                launch()
                torch.cuda.synchronize()
                row["rel_err_after_timing"] = float(torch.linalg.norm(C.float() - ref) / torch.linalg.norm(ref))
                row["unwritten_after_timing"] = int(torch.isnan(C).sum())
            rows.append(row)
            print(json.dumps(row), flush=True)
            del A, B, buf, C, ref, cub
            torch.cuda.empty_cache()
    out = os.environ.get("OUT")
    if out:
        json.dump(dict(info=info, rows=rows), open(os.path.join(out, "check_sm90.json"), "w"), indent=1)
    print()
    print(f"{'M':>6} {'N':>6} {'K':>6} C   unwritten guard rel_err   cublas_err ok   ms      TFLOP/s  cuBLAS TFLOP/s")
    for r in rows:
        print(f"{r['M']:>6} {r['N']:>6} {r['K']:>6} {r['C']:<3} {r['unwritten']:>9} {str(r['guard_ok']):<5} "
              f"{r['rel_err']:.3e} {r['rel_err_cublas']:.3e}  {str(r['ok']):<4} "
              + (f"{r['ms']:.4f} {r['tflops']:8.1f} {r['tflops_cublas']:8.1f}" if "ms" in r else ""))
    print("ALL OK" if ok_all else "FAILURES")
    sys.exit(0 if ok_all else 1)


if __name__ == "__main__":
    main()
