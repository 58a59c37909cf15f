"""A transformer block on tilec kernels, checked against eager PyTorch and timed against
eager and torch.compile.

    python3 examples/transformer_block/block.py [--tokens 8192] [--dim 4096] [--heads 32]
        [--ffn 11008] [--reps 50] [--json OUT] [--breakdown]

The block (bf16, weights stored [out, in] as nn.Linear keeps them, pre-norm):
    h = x + Wo · attention(split(Wqkv · rmsnorm(x)))
    y = h + Wdown · (silu(Wgate · rmsnorm(h)) * (Wup · rmsnorm(h)))
Each operation runs on a tilec kernel where one has landed; the others fall back to torch,
and the printout says which. The projections are the NT GEMM (examples/gemm_nt_bf16.tile);
the norms examples/rmsnorm.tile; SwiGLU's gate and the residual adds the kernels beside
this file. Attention falls back to torch's scaled_dot_product_attention until tilec's
attention kernel lands.

Timing: CUDA events around each whole block, after warm-up, median of --reps runs, on
random normal inputs; the outputs compared with eager by relative Frobenius error.
"""

import argparse
import json
import pathlib
import statistics
import sys

import torch
import torch.nn.functional as F

import tilec

HERE = pathlib.Path(__file__).resolve().parent
EXAMPLES = HERE.parent
EPS = 1e-6


def source(path):
    return (path).read_text()


class Weights:
    def __init__(self, dim, heads, ffn, device="cuda", dtype=torch.bfloat16):
        g = torch.Generator(device=device).manual_seed(0)

        def w(out, inp):
            return (torch.randn(out, inp, generator=g, device=device, dtype=torch.float32)
                    / inp ** 0.5).to(dtype)

        self.heads = heads
        self.norm1 = (1 + 0.1 * torch.randn(dim, generator=g, device=device)).to(dtype)
        self.norm2 = (1 + 0.1 * torch.randn(dim, generator=g, device=device)).to(dtype)
        self.wqkv = w(3 * dim, dim)
        self.wo = w(dim, dim)
        self.wgate_up = w(2 * ffn, dim)  # gate rows first, then up
        self.wdown = w(dim, ffn)


def attention(qkv, batch, heads):
    t, three_d = qkv.shape
    d = three_d // 3
    s = t // batch
    q, k, v = qkv.view(batch, s, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return o.transpose(1, 2).reshape(t, d)


def eager_block(x, w, batch):
    def rms(v, weight):
        vf = v.float()
        return (vf * torch.rsqrt(vf.pow(2).mean(-1, keepdim=True) + EPS) * weight.float()).to(
            v.dtype)

    h = x + F.linear(attention(F.linear(rms(x, w.norm1), w.wqkv), batch, w.heads), w.wo)
    gu = F.linear(rms(h, w.norm2), w.wgate_up)
    gate, up = gu.chunk(2, dim=-1)
    return h + F.linear(F.silu(gate) * up, w.wdown)


class TilecBlock:
    """The block with each operation on a tilec kernel where one exists."""

    def __init__(self, dim, target="sm_90a"):
        def build(path, **opts):
            return tilec.compile(source(path), target=target, file=str(path), **opts)

        self.gemm = build(EXAMPLES / "gemm_nt_bf16.tile")
        self.rmsnorm = build(EXAMPLES / "rmsnorm.tile") if dim <= 4096 else None
        self.swiglu = build(HERE / "swiglu.tile")
        self.add = build(HERE / "residual_add.tile")
        self.ops = {
            "rmsnorm": "tilec (examples/rmsnorm.tile)" if self.rmsnorm else "torch (dim > 4096)",
            "QKV projection": "tilec (examples/gemm_nt_bf16.tile)",
            "attention": "torch (scaled_dot_product_attention; tilec's attention has not landed)",
            "output projection": "tilec (examples/gemm_nt_bf16.tile)",
            "residual add": "tilec (transformer_block/residual_add.tile)",
            "gate-up projection": "tilec (examples/gemm_nt_bf16.tile)",
            "SwiGLU": "tilec (transformer_block/swiglu.tile)",
            "down projection": "tilec (examples/gemm_nt_bf16.tile)",
        }

    def linear(self, x, weight):
        m, k = x.shape
        n = weight.shape[0]
        y = torch.empty(m, n, device=x.device, dtype=x.dtype)
        self.gemm(x, weight, y, m, n, k)
        return y

    def norm(self, x, weight):
        m, n = x.shape
        if self.rmsnorm is None:
            vf = x.float()
            return (vf * torch.rsqrt(vf.pow(2).mean(-1, keepdim=True) + EPS)
                    * weight.float()).to(x.dtype)
        y = torch.empty_like(x)
        self.rmsnorm(x, weight, y, m, n, EPS)
        return y

    def residual(self, x, r):
        y = torch.empty_like(x)
        self.add(x, r, y, x.shape[0], x.shape[1])
        return y

    def __call__(self, x, w, batch):
        h = self.residual(x, self.linear(attention(self.linear(self.norm(x, w.norm1), w.wqkv),
                                                   batch, w.heads), w.wo))
        gu = self.linear(self.norm(h, w.norm2), w.wgate_up)
        f = gu.shape[1] // 2
        act = torch.empty(gu.shape[0], f, device=gu.device, dtype=gu.dtype)
        self.swiglu(gu[:, :f], gu[:, f:], act, gu.shape[0], f)
        return self.residual(h, self.linear(act, w.wdown))


def time_ms(fn, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def breakdown(block, w, x, batch, reps):
    """Each operation timed on its own: tilec's kernel, eager torch and torch.compile."""
    def rms(v, weight):
        vf = v.float()
        return (vf * torch.rsqrt(vf.pow(2).mean(-1, keepdim=True) + EPS) * weight.float()).to(
            v.dtype)

    def swiglu(gu):
        gate, up = gu.chunk(2, dim=-1)
        return F.silu(gate) * up

    n = block.norm(x, w.norm1)
    qkv = block.linear(n, w.wqkv)
    att = attention(qkv, batch, w.heads)
    gu = block.linear(n, w.wgate_up)
    f = gu.shape[1] // 2
    act = torch.empty(gu.shape[0], f, device=x.device, dtype=x.dtype)
    rows = []
    cases = [
        ("rmsnorm", lambda: block.norm(x, w.norm1), lambda: rms(x, w.norm1), rms, (x, w.norm1)),
        ("QKV projection", lambda: block.linear(n, w.wqkv), lambda: F.linear(n, w.wqkv),
         F.linear, (n, w.wqkv)),
        ("attention", None, lambda: attention(qkv, batch, w.heads),
         lambda q: attention(q, batch, w.heads), (qkv,)),
        ("output projection", lambda: block.linear(att, w.wo), lambda: F.linear(att, w.wo),
         F.linear, (att, w.wo)),
        ("residual add", lambda: block.residual(x, n), lambda: x + n, torch.add, (x, n)),
        ("gate-up projection", lambda: block.linear(n, w.wgate_up),
         lambda: F.linear(n, w.wgate_up), F.linear, (n, w.wgate_up)),
        ("SwiGLU", lambda: block.swiglu(gu[:, :f], gu[:, f:], act, gu.shape[0], f),
         lambda: swiglu(gu), swiglu, (gu,)),
        ("down projection", lambda: block.linear(act, w.wdown), lambda: F.linear(act, w.wdown),
         F.linear, (act, w.wdown)),
    ]
    for name, tilec_fn, eager_fn, fn, args in cases:
        compiled = torch.compile(fn)
        t = time_ms(tilec_fn, reps) if tilec_fn else None
        rows.append((name, t, time_ms(eager_fn, reps), time_ms(lambda: compiled(*args), reps)))
    print(f"{'operation':<20}{'tilec ms':>10}{'eager ms':>10}{'compile ms':>12}")
    for name, t, e, c in rows:
        ts = f"{t:>10.3f}" if t is not None else f"{'torch':>10}"
        print(f"{name:<20}{ts}{e:>10.3f}{c:>12.3f}")
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--dim", type=int, default=4096)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--ffn", type=int, default=11008)
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--breakdown", action="store_true",
                   help="also time each operation alone: tilec, eager, torch.compile")
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("error: this demonstration needs a CUDA GPU")
    tokens = a.batch * a.seq
    w = Weights(a.dim, a.heads, a.ffn)
    x = torch.randn(tokens, a.dim, device="cuda", dtype=torch.bfloat16)
    block = TilecBlock(a.dim)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, tilec {tilec.__version__}")
    print(f"block: {a.batch}x{a.seq} tokens, dim {a.dim}, {a.heads} heads, ffn {a.ffn}, bf16")
    print("operations:")
    for op, where in block.ops.items():
        print(f"  {op:<20} {where}")

    want = eager_block(x, w, a.batch).float()
    got = block(x, w, a.batch).float()
    torch.cuda.synchronize()
    err = ((got - want).norm() / want.norm()).item()
    print(f"relative error against eager: {err:.2e}")
    compiled = torch.compile(lambda v: eager_block(v, w, a.batch))
    err_c = ((compiled(x).float() - want).norm() / want.norm()).item()
    print(f"torch.compile's relative error against eager: {err_c:.2e}")

    t_eager = time_ms(lambda: eager_block(x, w, a.batch), a.reps)
    t_comp = time_ms(lambda: compiled(x), a.reps)
    t_tilec = time_ms(lambda: block(x, w, a.batch), a.reps)
    print(f"{'':<16}{'ms (median)':>12}")
    for name, t in [("eager", t_eager), ("torch.compile", t_comp), ("tilec", t_tilec)]:
        print(f"{name:<16}{t:>12.3f}")
    rows = breakdown(block, w, x, a.batch, a.reps) if a.breakdown else []
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(vars(a), err=err, err_compile=err_c, eager_ms=t_eager,
                           compile_ms=t_comp, tilec_ms=t_tilec, ops=block.ops,
                           breakdown=rows), f, indent=1)
    if not err < 2e-2:
        sys.exit(f"error: the block's output differs from eager by {err:.2e}")


if __name__ == "__main__":
    main()
