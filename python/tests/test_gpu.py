"""The package on a GPU with PyTorch (marked `gpu`; skipped elsewhere, or an error with
TILEC_REQUIRE_GPU=1): launches on torch's current stream, a stream of the caller's, a CUDA
graph, the cubin path, persistent grids, argument errors on real tensors, and a kernel
registered as a custom operator that torch.compile(fullgraph=True) traces and opcheck
accepts."""

import os

import pytest

import tilec
from conftest import example

pytestmark = pytest.mark.gpu

if os.environ.get("TILEC_REQUIRE_GPU"):
    import torch
else:
    torch = pytest.importorskip("torch")


def rel_err(got, want):
    return ((got.float() - want).norm() / want.norm()).item()


@pytest.fixture(scope="module")
def vadd():
    return tilec.compile(example("vadd.tile"), target="sm_90a")


def test_vadd(vadd):
    x, y = torch.randn(5000, device="cuda"), torch.randn(5000, device="cuda")
    z = torch.full_like(x, float("nan"))
    assert vadd(x, y, z, 5000) == (5, 1, 1)
    torch.cuda.synchronize()
    assert torch.equal(z, x + y)
    # A strided view: the strides reach the kernel.
    xs = torch.randn(10000, device="cuda")[::2]
    vadd(X=xs, Y=y, Z=z, N=5000)
    torch.cuda.synchronize()
    assert torch.equal(z, xs + y)


@pytest.mark.parametrize("target,epilogue,cubin", [
    ("sm_90a", "direct", False), ("sm_90a", "tma", False), ("sm_90", "direct", False),
    ("sm_90a", "tma", True),
])
def test_gemm(target, epilogue, cubin):
    k = tilec.compile(example("gemm_bf16.tile"), target=target, epilogue=epilogue, cubin=cubin)
    for m, n, kk in [(1000, 712, 312), (128, 256, 64), (4096, 4096, 4096)]:
        a = torch.randn(m, kk, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(kk, n, device="cuda", dtype=torch.bfloat16)
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        k(a, b, c, m, n, kk)
        want = a.float() @ b.float()
        assert rel_err(c, want) < 1e-2, (m, n, kk)


@pytest.mark.parametrize("target,tile", [("sm_90a", "64x128"), ("sm_90", "128x256")])
def test_split_k(target, tile):
    """The launch zeroes the workspace (allocated here when left out), runs the kernel and
    rounds the workspace into C, each time, on torch's stream and inside a CUDA graph."""
    k = tilec.compile(example(f"gemm_bf16_splitk_{tile}.tile"), target=target)
    for m, n, kk, s in [(1000, 712, 1000, 3), (256, 128, 8192, 16), (77, 8, 64, 1)]:
        a = torch.randn(m, kk, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(kk, n, device="cuda", dtype=torch.bfloat16)
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        want = a.float() @ b.float()
        for _ in range(2):
            k(A=a, B=b, M=m, N=n, K=kk, S=s, C=c)
        assert rel_err(c, want) < 1e-2, (m, n, kk, s)
        w = torch.full((m, n), float("nan"), device="cuda")
        c.fill_(float("nan"))
        g = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.cuda.graph(g, stream=side):
            k(A=a, B=b, W=w, M=m, N=n, K=kk, S=s, C=c)
        g.replay()
        g.replay()
        torch.cuda.synchronize()
        assert rel_err(c, want) < 1e-2, (m, n, kk, s)
        assert rel_err(w, want) < 1e-5


def test_a_built_kernel_and_a_dlpack_producer():
    """A kernel made with tilec.Builder runs, and a tensor given only as a DLPack producer
    (read by tilec, not torch) reaches it."""
    b = tilec.Builder()

    @b.kernel("scaled_rows", [("X", "tensor<?x?xf32>"), ("Y", "tensor<?x?xf32>"),
                              ("M", "index")])
    def _(b, X, Y, M):
        b.grid(b.arg(M).ceil_div(4))
        row = b.muli(b.program_id(0), b.constant_index(4))
        c0 = b.constant_index(0)
        x = b.load(X, [row, c0], [4, 512])
        m = b.broadcast(b.reduce(b.abs(x), 1, "max"), [4, 512])
        b.store(Y, [row, c0], b.div(x, m))

    k = tilec.compile(b, target="sm_90a")

    class Producer:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__()

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    x = torch.randn(1001, 512, device="cuda")
    y = torch.full_like(x, float("nan"))
    k(Producer(x), Producer(y), 1001)
    torch.cuda.synchronize()
    want = x / x.abs().amax(dim=1, keepdim=True)
    assert torch.allclose(y, want, rtol=1e-6, atol=0)


def test_nn_linear_layout():
    k = tilec.compile(example("gemm_nt_bf16.tile"), target="sm_90a")
    lin = torch.nn.Linear(512, 768, bias=False, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(300, 512, device="cuda", dtype=torch.bfloat16)
    y = torch.empty(300, 768, device="cuda", dtype=torch.bfloat16)
    k(x, lin.weight, y, 300, 768, 512)
    assert rel_err(y, (x.float() @ lin.weight.float().t())) < 1e-2


def test_streams_and_graphs():
    k = tilec.compile(example("gemm_bf16.tile"), target="sm_90a", epilogue="tma")
    m, n, kk = 512, 384, 256
    a = torch.randn(m, kk, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(kk, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    want = a.float() @ b.float()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        c.fill_(float("nan"))
        k(a, b, c, m, n, kk)  # torch's current stream is s here
    s.synchronize()
    assert rel_err(c, want) < 1e-2
    c.fill_(float("nan"))
    k(a, b, c, m, n, kk, stream=s)
    s.synchronize()
    assert rel_err(c, want) < 1e-2
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        k(a, b, c, m, n, kk)
    c.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    assert rel_err(c, want) < 1e-2


def test_persistent_grid_override():
    k = tilec.compile(example("gemm_bf16.tile"), target="sm_90a")
    assert k.manifest["persistent"]["schedule"] == "static"
    a = torch.randn(1024, 512, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16)
    c = torch.full((1024, 1024), float("nan"), device="cuda", dtype=torch.bfloat16)
    assert k(a, b, c, 1024, 1024, 512, grid=(3,)) == (3, 1, 1)
    assert rel_err(c, a.float() @ b.float()) < 1e-2
    with pytest.raises(tilec.ArgumentError, match="persistent"):
        tilec.compile(example("vadd.tile"))(a[0].float(), a[0].float(), a[0].float(), 512,
                                             grid=(1,))


def test_argument_errors_on_real_tensors(vadd):
    k = tilec.compile(example("gemm_bf16.tile"), target="sm_90a")
    a = torch.randn(256, 128, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(128, 512, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(256, 512, device="cuda", dtype=torch.bfloat16)
    cases = [
        ((a.float(), b, c), "'A' takes a tensor of bf16, found f32"),
        ((a.cpu(), b, c), "host memory"),
        ((a[0], b, c), "rank 2"),
        ((a.t().contiguous().t(), b, c), "innermost"),
        ((torch.randn(256 * 128 + 1, device="cuda", dtype=torch.bfloat16)[1:].view(256, 128),
          b, c), "16"),
    ]
    for (aa, bb, cc), message in cases:
        with pytest.raises(tilec.ArgumentError) as e:
            k(aa, bb, cc, 256, 512, 128)
        assert message in str(e.value), str(e.value)
    with pytest.raises(tilec.ArgumentError, match="needs argument 'K'"):
        k(a, b, c, 256, 512)
    with pytest.raises(tilec.ArgumentError, match="not a parameter"):
        k(a, b, c, 256, 512, 128, bias=a)


def test_custom_op_traces_under_torch_compile(vadd):
    op = tilec.library.kernel_op(
        "tilec_test::vadd",
        vadd,
        inputs=["X", "Y"],
        outputs={"Z": lambda X, Y: (X.shape, X.dtype)},
        scalars={"N": lambda X, Y: X.shape[0]},
    )
    x, y = torch.randn(3000, device="cuda"), torch.randn(3000, device="cuda")
    assert torch.equal(op(x, y), x + y)

    @torch.compile(fullgraph=True)
    def f(a, b):
        return op(a, b) * 2

    assert torch.equal(f(x, y), (x + y) * 2)
    torch.library.opcheck(op, (x, y))
