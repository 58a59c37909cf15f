#!/usr/bin/env python3
"""A persistent Triton matmul with TMA descriptors, the comparison point for tilec's GEMM.

    C[M, N] (bf16) = A[M, K] (bf16) @ B[K, N] (bf16), accumulated in f32.

All three row-major (last dimension contiguous), the same layout tools/gpu/run.py gives tilec's
kernel, so one set of inputs serves tilec, cuBLAS and this kernel.

Structure (after Triton's own tutorial 09, "persistent matmul", TMA variant):
  * host-side TMA descriptors (`triton.tools.tensor_descriptor.TensorDescriptor`, Triton >= 3.4;
    the device image has Triton 3.6.0): A with block [BM, BK], B with block [BK, BN] (B is read
    K-major as stored, no transpose copy), C with block [BM, BN] (or [BM, BN/2] when the epilogue
    is split in two);
  * a persistent grid of min(#SMs, #tiles) programs, each walking tiles start, start + #SMs, ...
    in grouped order (GROUP_M M-tiles per group, for L2 reuse of B);
  * a K loop of `desc.load` + `tl.dot` into an f32 accumulator, software-pipelined by Triton
    (`num_stages` shared-memory stages), and a TMA-store epilogue after the conversion to bf16.

Autotuned per (M, N, K) over CONFIGS below (6 configs; Triton drops any that does not fit
the 227 KB of shared memory):

  | # | BM  | BN  | BK  | stages | warps | split epilogue | meant for |
  | 1 | 128 | 256 | 64  | 3      | 8     | yes            | large M and N (tilec's tile) |
  | 2 | 128 | 256 | 64  | 4      | 8     | yes            | same, deeper ring |
  | 3 | 128 | 128 | 64  | 4      | 8     | no             | mid-size shapes, more tiles |
  | 4 | 128 | 128 | 128 | 3      | 8     | no             | long K |
  | 5 | 64  | 256 | 64  | 4      | 4     | no             | small M (decode), wide N |
  | 6 | 64  | 128 | 64  | 5      | 4     | no             | small M, few tiles |

All use GROUP_M = 8. `python3 tools/gpu/triton_matmul.py` (on a GPU) checks the kernel against
torch.matmul on a few shapes and prints each chosen config.
"""
import triton
import triton.language as tl

# (BM, BN, BK, stages, warps, epilogue_subtile); documented in the table above.
CONFIG_TABLE = [
    (128, 256, 64, 3, 8, True),
    (128, 256, 64, 4, 8, True),
    (128, 128, 64, 4, 8, False),
    (128, 128, 128, 3, 8, False),
    (64, 256, 64, 4, 4, False),
    (64, 128, 64, 5, 4, False),
]
GROUP_M = 8


def _set_block_shapes(nargs):
    """Autotune pre-hook: give the host descriptors the block shapes of the config in use."""
    bm, bn, bk = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["BLOCK_K"]
    nargs["a_desc"].block_shape = [bm, bk]
    nargs["b_desc"].block_shape = [bk, bn]
    nargs["c_desc"].block_shape = [bm, bn // 2] if nargs["EPILOGUE_SUBTILE"] else [bm, bn]


def make_configs():
    return [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": GROUP_M,
                       "EPILOGUE_SUBTILE": sub},
                      num_stages=st, num_warps=w, pre_hook=_set_block_shapes)
        for (bm, bn, bk, st, w, sub) in CONFIG_TABLE
    ]


@triton.jit
def _tile_coords(tile_id, num_pid_in_group, num_pid_m, GROUP_M: tl.constexpr):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def matmul_tma_persistent_kernel(a_desc, b_desc, c_desc, M, N, K,
                                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                 GROUP_M: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr,
                                 NUM_SMS: tl.constexpr):
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    num_pid_in_group = GROUP_M * num_pid_n
    # The epilogue's tile id trails the loop's by one trip of the flattened loop.
    tile_id_c = start_pid - NUM_SMS
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_in_group, num_pid_m, GROUP_M)
        offs_m = pid_m * BLOCK_M
        offs_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_K
            a = a_desc.load([offs_m, offs_k])
            b = b_desc.load([offs_k, offs_n])
            acc = tl.dot(a, b, acc)
        tile_id_c += NUM_SMS
        pid_m, pid_n = _tile_coords(tile_id_c, num_pid_in_group, num_pid_m, GROUP_M)
        offs_cm = pid_m * BLOCK_M
        offs_cn = pid_n * BLOCK_N
        if EPILOGUE_SUBTILE:
            acc = tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2))
            acc = tl.permute(acc, (0, 2, 1))
            acc0, acc1 = tl.split(acc)
            c_desc.store([offs_cm, offs_cn], acc0.to(c_desc.dtype))
            c_desc.store([offs_cm, offs_cn + BLOCK_N // 2], acc1.to(c_desc.dtype))
        else:
            c_desc.store([offs_cm, offs_cn], acc.to(c_desc.dtype))


# The autotuned kernel used by bench.py; one tuning per (M, N, K).
matmul_tma_persistent = triton.autotune(configs=make_configs(), key=["M", "N", "K"])(
    matmul_tma_persistent_kernel)


class TritonMatmul:
    """C = A @ B through the autotuned persistent kernel, with descriptors built once.

    `prepare(A, B, C)` returns a zero-argument launch closure (descriptors reused across
    launches, as for tilec's tensor maps), so timing measures the kernel and its launch only.
    """

    def __init__(self, num_sms=None):
        import torch
        self.num_sms = num_sms or torch.cuda.get_device_properties(
            torch.cuda.current_device()).multi_processor_count

    def prepare(self, A, B, C):
        from triton.tools.tensor_descriptor import TensorDescriptor
        M, K = A.shape
        K2, N = B.shape
        assert K == K2 and tuple(C.shape) == (M, N)
        dummy = [1, 1]  # the autotune pre-hook sets the real block shapes
        a_desc = TensorDescriptor(A, list(A.shape), list(A.stride()), dummy)
        b_desc = TensorDescriptor(B, list(B.shape), list(B.stride()), dummy)
        c_desc = TensorDescriptor(C, list(C.shape), list(C.stride()), dummy)
        nsm = self.num_sms

        def grid(meta):
            return (min(nsm, triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])),)

        def launch():
            matmul_tma_persistent[grid](a_desc, b_desc, c_desc, M, N, K, NUM_SMS=nsm)
        return launch

    @staticmethod
    def best_config(M, N, K):
        """The config autotuning chose for this (M, N, K), as a dict (None before tuning)."""
        for key, cfg in matmul_tma_persistent.cache.items():
            if tuple(key[:3]) == (M, N, K):
                d = dict(cfg.kwargs)
                d.update(num_stages=cfg.num_stages, num_warps=cfg.num_warps)
                return d
        return None


def matmul(A, B):
    import torch
    C = torch.empty(A.shape[0], B.shape[1], dtype=A.dtype, device=A.device)
    TritonMatmul().prepare(A, B, C)()
    return C


if __name__ == "__main__":
    import torch
    torch.manual_seed(0)
    for (M, N, K) in [(128, 256, 64), (1000, 1000, 1000), (16, 4096, 4096), (2048, 2048, 2048)]:
        A = torch.randn(M, K, device="cuda").bfloat16()
        B = torch.randn(K, N, device="cuda").bfloat16()
        C = matmul(A, B)
        ref = A.float() @ B.float()
        rel = float((C.float() - ref).norm() / ref.norm())
        print("%5d %5d %5d rel_err %.2e config %s" % (M, N, K, rel, TritonMatmul.best_config(M, N, K)))
