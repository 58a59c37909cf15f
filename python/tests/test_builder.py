"""tilec.Builder without a GPU: kernels built without text compile to the same PTX as the
shipped examples, every tile op has a method, and every mistake is a located BuildError
(or the caller's own exception), never a crash."""

import threading

import pytest

import tilec
from conftest import example

pytestmark = pytest.mark.skipif(not tilec.HAS_COMPILER, reason="runtime-only build")


def build_gemm(b):
    """examples/gemm_bf16.tile, op for op."""
    params = [("A", "tensor<?x?xbf16>"), ("B", "tensor<?x?xbf16>"), ("C", "tensor<?x?xbf16>"),
              ("M", "index"), ("N", "index"), ("K", "index")]

    @b.kernel("gemm_bf16", params)
    def _(b, A, B, C, M, N, K):
        b.grid(b.arg(N).ceil_div(256), b.arg(M).ceil_div(128))
        pid_n, pid_m = b.program_id(0), b.program_id(1)
        c0, c64, c128, c256 = (b.constant_index(v) for v in (0, 64, 128, 256))
        row, col = b.muli(pid_m, c128), b.muli(pid_n, c256)
        zero = b.zeros([128, 256], "f32")

        def body(b, k, c):
            a = b.load(A, [row, k], [128, 64])
            w = b.load(B, [k, col], [64, 256])
            return b.dot(a, w, c)

        (acc,) = b.for_loop(c0, K, c64, [zero], body)
        b.store(C, [row, col], b.convert(acc, "bf16"))


def build_vadd(b):
    @b.kernel("vadd", {"X": "tensor<?xf32>", "Y": "tensor<?xf32>", "Z": "tensor<?xf32>",
                       "N": "index"})
    def _(b, X, Y, Z, N):
        b.grid(b.arg(N).ceil_div(1024))
        off = b.muli(b.program_id(0), b.constant_index(1024))
        b.store(Z, [off], b.add(b.load(X, [off], [1024]), b.load(Y, [off], [1024])))


@pytest.mark.parametrize("target", ["sm_90a", "sm_90", "sm_100"])
def test_a_built_gemm_compiles_as_the_example_does(target):
    b = tilec.Builder()
    build_gemm(b)
    built = tilec.compile(b, target=target)
    text = tilec.compile(example("gemm_bf16.tile"), target=target)
    assert built.ptx == text.ptx
    assert built.manifest == text.manifest
    assert ("wgmma.mma_async" in built.ptx) == (target == "sm_90a")


def test_the_printed_module_reads_back():
    b = tilec.Builder()
    build_vadd(b)
    printed = str(b)
    assert printed.startswith("tile.kernel @vadd(%X: tensor<?xf32>")
    assert "{grid = [ceildiv(%N, 1024)]}" in printed
    assert tilec.compile(printed).ptx == tilec.compile(b).ptx == tilec.compile(
        example("vadd.tile")).ptx


def test_values_carry_their_types():
    b = tilec.Builder()
    seen = {}

    @b.kernel("k", [("X", "tensor<?x?xf32>"), ("N", "index")])
    def _(b, X, N):
        b.grid(4)
        c = b.constant_index(0)
        t = b.load(X, [c, c], [16, 32])
        seen["t"], seen["r"], seen["X"] = t, b.reduce(t, 0, "max"), X
        seen["T"] = b.transpose(t)
        seen["s"] = b.extract_slice(t, [8, 16], [8, 16])
        b.store(X, [c, c], t)

    assert seen["t"].type == "tile<16x32xf32>"
    assert seen["r"].type == "tile<1x32xf32>"
    assert seen["T"].type == "tile<32x16xf32>"
    assert seen["s"].type == "tile<8x16xf32>"
    assert "tile.extract_slice" in str(b) and "offsets = [8, 16]" in str(b)
    assert seen["X"].type == "tensor<?x?xf32>"
    assert seen["t"] == seen["t"] and seen["t"] != seen["r"]
    assert b.kernels == ["k"]


def test_structured_ops():
    b = tilec.Builder()

    @b.kernel("flow", [("X", "tensor<?xf32>"), ("N", "index")])
    def _(b, X, N):
        b.grid(1)
        c0, c1 = b.constant_index(0), b.constant_index(1)
        big = b.cmpi("sgt", N, c1)
        (v,) = b.if_else(big, lambda b: b.addi(N, c1), lambda b: [c0])
        assert v.type == "index"

        def step(b, i):
            nxt = b.addi(i, c1)
            return b.cmpi("slt", nxt, v), [nxt]

        (last,) = b.while_loop([c0], step)
        (s,) = b.for_loop(c0, last, c1, c0, lambda b, i, acc: b.addi(acc, i))
        b.store(X, [s], b.splat(b.constant_float(1.5, "f32"), [16]))

    text = str(b)
    for op in ("tile.if", "tile.while", "tile.for", "tile.cmpi", "tile.splat"):
        assert op in text
    assert 'predicate = "sgt"' in text
    b.verify()


def test_extract_and_masked_stores_compile_as_the_text_does():
    b = tilec.Builder()

    @b.kernel("lower_rows", [("X", "tensor<?x?xf32>"), ("S", "tensor<?xf32>"),
                             ("Y", "tensor<?x?xf32>"), ("R", "index")])
    def _(b, X, S, Y, R):
        b.grid(b.arg(R))
        r, c0 = b.program_id(0), b.constant_index(0)
        s = b.extract(S, [r])
        assert s.type == "f32"
        x = b.load(X, [r, c0], [1, 256])
        y = b.mul(x, b.splat(s, [1, 256]))
        keep = b.cmpi("sle", b.iota([1, 256], "index", 1), b.splat(r, [1, 256]))
        b.store(Y, [r, c0], y, mask=keep)

    text = str(b)
    assert "tile.extract %S, %" in text and ": f32" in text
    assert text.count("tile.store %Y") == 1
    built = tilec.compile(b, target="sm_90a")
    again = tilec.compile(text, target="sm_90a")
    assert built.ptx == again.ptx
    assert "ld.global" in built.ptx


def test_every_tile_op_has_a_method():
    special = {
        "tile.kernel": "kernel", "tile.for": "for_loop", "tile.if": "if_else",
        "tile.while": "while_loop", "tile.constant": "constant_index",
        "tile.program_id": "program_id", "tile.num_programs": "num_programs",
    }
    # Terminators come with their structured op.
    implicit = {"tile.return", "tile.yield"}
    ops = tilec._tilec.tile_ops()
    assert "tile.dot" in ops and "tile.tma_load" not in ops
    missing = [op for op in ops if op not in implicit
               and not callable(getattr(tilec.Builder, special.get(op, op[5:]), None))]
    assert missing == []


def test_a_refused_op_is_located_at_its_scope():
    b = tilec.Builder()
    ids = []
    with pytest.raises(tilec.BuildError) as e:
        @b.kernel("bad", [("X", "tensor<?xf32>"), ("N", "index")])
        def _(b, X, N):
            b.grid(1)
            with b.scope("frontend.node7"):
                ids.append(b.next_op_id)
                b.add(X, N)

    assert isinstance(e.value, tilec.CompileError)
    (file, line, col, severity, message) = e.value.diagnostics[0]
    assert (file, col, severity) == ("frontend.node7", 0, "error")
    assert line == ids[0] == 2  # the kernel is op 1
    assert "'tile.add' operand types differ" in message
    assert str(e.value).startswith(f"frontend.node7:{line}:0: error:")
    # The refused kernel is not in the module; the builder goes on working.
    assert b.kernels == []
    build_vadd(b)
    assert b.kernels == ["vadd"]


def test_set_loc_gives_the_frontends_position():
    b = tilec.Builder()
    with pytest.raises(tilec.BuildError, match=r"^model\.py:12:5: error: .*tile\.exp"):
        @b.kernel("bad", [("N", "index")])
        def _(b, N):
            b.grid(1)
            b.set_loc("model.py", 12, 5)
            b.exp(N)


def test_the_callers_exception_comes_out_unchanged():
    b = tilec.Builder()

    class Mine(Exception):
        pass

    def body(b, X, N):
        b.grid(1)

        def inner(b, i):
            raise Mine("from a loop body")

        b.for_loop(N, N, N, None, inner)

    with pytest.raises(Mine, match="from a loop body"):
        b.kernel("k", [("X", "tensor<?xf32>"), ("N", "index")], body)
    assert b.kernels == []


def test_bad_arguments():
    b = tilec.Builder()
    with pytest.raises(ValueError, match="unknown type 'f31'"):
        b.kernel("k", [("X", "f31")], lambda b, X: None)
    with pytest.raises(ValueError, match="malformed type 'tensor<4xf32>'"):
        b.kernel("k", [("X", "tensor<4xf32>")], lambda b, X: None)
    with pytest.raises(tilec.BuildError, match="has no grid"):
        b.kernel("k", [("N", "index")], lambda b, N: None)
    with pytest.raises(tilec.BuildError, match="outside a kernel body"):
        b.grid(4)

    other = tilec.Builder()

    def body(b, X, N):
        b.grid(1)
        with pytest.raises(TypeError, match="expected a tilec Value, found int"):
            b.addi(N, 1)
        with pytest.raises(TypeError, match="grid expression is an int or a GridExpr"):
            b.grid("4")
        with pytest.raises(ValueError, match="unknown element type 'f8'"):
            b.zeros([4], "f8")
        with pytest.raises(ValueError, match="unknown cmpi predicate"):
            b.cmpi("less", N, N)
        with pytest.raises(ValueError, match="unknown reduction"):
            b.reduce(b.zeros([4], "f32"), 0, "mean")
        with pytest.raises(tilec.BuildError, match="must be at top level"):
            b.kernel("inner", [("M", "index")], lambda b, M: b.grid(1))
        with pytest.raises(tilec.BuildError, match="cannot be compiled while a kernel"):
            tilec.compile(b)
        with pytest.raises(OverflowError):
            b.zeros([-1], "f32")
        with pytest.raises(tilec.BuildError, match="not an integer argument"):
            b.arg(X)
        with pytest.raises(TypeError, match=r"returns \(cond, next values\)"):
            b.while_loop([N], lambda b, n: n)

        def foreign(o, Y):
            o.grid(1)
            with pytest.raises(tilec.BuildError, match="belongs to another Builder"):
                o.dim(X, 0)

        other.kernel("f", [("Y", "tensor<?xf32>")], foreign)

    b.kernel("k", [("X", "tensor<?xf32>"), ("N", "index")], body)
    assert b.kernels == ["k"] and other.kernels == ["f"]
    with pytest.raises(tilec.BuildError, match="redefinition of kernel '@k'"):
        b.kernel("k", [("N", "index")], lambda b, N: b.grid(1))


def test_grid_expressions():
    b = tilec.Builder()

    @b.kernel("g", [("M", "index"), ("N", "i32")])
    def _(b, M, N):
        e = (2 * b.arg(M) + 1).min(b.arg(N).ceil_div(64)) * 3
        assert str(e) == "mul(min(add(mul(2, %M), 1), ceildiv(%N, 64)), 3)"
        b.grid(e, 2)

    assert "{grid = [mul(min(add(mul(2, %M), 1), ceildiv(%N, 64)), 3), 2]}" in str(b)


def test_another_thread_cannot_build_into_a_running_body():
    b = tilec.Builder()
    errors = []

    def body(b, N):
        b.grid(1)

        def other():
            try:
                b.constant_index(1)
            except tilec.BuildError as e:
                errors.append(str(e))

        t = threading.Thread(target=other)
        t.start()
        t.join()

    b.kernel("k", [("N", "index")], body)
    assert errors == ["this Builder is filling a kernel on another thread"]
    # Once the body returned, any thread may build.
    t = threading.Thread(target=build_vadd, args=(b,))
    t.start()
    t.join()
    assert b.kernels == ["k", "vadd"]


def test_a_compile_error_of_a_built_module_names_the_op():
    b = tilec.Builder()

    @b.kernel("k", [("X", "tensor<?x?xbf16>"), ("N", "index")])
    def _(b, X, N):
        b.grid(1)
        c = b.constant_index(0)
        with b.scope("too_big"):
            t = b.load(X, [c, c], [1024, 1024])
        b.store(X, [c, c], t)

    with pytest.raises(tilec.CompileError) as e:
        tilec.compile(b, target="sm_90a")
    (d,) = e.value.diagnostics
    assert d[0] == "too_big" and "registers per thread" in d[4], d


def test_isolated_compile_takes_a_builder():
    b = tilec.Builder()
    build_vadd(b)
    assert tilec.isolated_compile(b).ptx == tilec.compile(b).ptx
