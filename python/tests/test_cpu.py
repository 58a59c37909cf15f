"""The package without a GPU: compile in process, the manifest, the disk cache, errors with
their locations, every host-side argument check, and no-GPU behaviour at launch."""

import json
import os
import pathlib
import threading

import pytest

import tilec
from conftest import example

VADD = example("vadd.tile")
GEMM = example("gemm_bf16.tile")


class Cai:
    """A device array as `__cuda_array_interface__` describes it (no memory behind it)."""

    def __init__(self, ptr, typestr, shape, strides=None):
        self.__cuda_array_interface__ = {
            "data": (ptr, False),
            "typestr": typestr,
            "shape": tuple(shape),
            "strides": strides,
            "version": 3,
        }


def test_compile_gives_ptx_and_a_manifest():
    k = tilec.compile(VADD, target="sm_90a")
    assert k.name == "vadd"
    assert ".entry vadd" in k.ptx and ".target sm_90a" in k.ptx
    assert k.cubin is None
    assert k.manifest["kernel"] == "vadd"
    assert k.params == ["X", "Y", "Z", "N"]
    assert [p["kind"] for p in k.manifest["params"]] == ["tensor_pointer"] * 3 + ["scalar"]
    assert k.manifest["grid"]["text"][0] == "ceildiv(N, 1024)"


def test_options_reach_the_compiler():
    k = tilec.compile(GEMM, target="sm_90a", epilogue="tma", stages=3)
    kinds = {p["name"]: p["kind"] for p in k.manifest["params"]}
    assert kinds["C"] == "tensor_map"
    k90 = tilec.compile(GEMM, target="sm_90")
    assert k90.manifest["target"] == "sm_90" and "wgmma" not in k90.ptx


def test_cubin():
    k = tilec.compile(VADD, target="sm_90a", cubin=True)
    assert k.cubin[:4] == b"\x7fELF"
    assert k.manifest["cubin_file"] == "vadd.cubin"


def test_cache_hit_miss_and_corrupt(private_cache):
    assert tilec.compile(VADD).cache == "miss"
    k = tilec.compile(VADD)
    assert k.cache == "hit"
    assert tilec.compile(VADD, target="sm_90").cache == "miss"
    assert tilec.compile(VADD, cache=False).cache == "off"
    entries = list(pathlib.Path(private_cache).glob("*.tilec"))
    assert len(entries) == 2
    for e in entries:
        e.write_bytes(e.read_bytes()[:-10] + b"corrupted!")
    k2 = tilec.compile(VADD)
    assert k2.cache == "corrupt" and k2.ptx == k.ptx
    assert tilec.compile(VADD).cache == "hit"


def test_cubins_are_cached(private_cache):
    a = tilec.compile(VADD, cubin=True)
    b = tilec.compile(VADD, cubin=True)
    assert (a.cache, b.cache) == ("miss", "hit")
    assert a.cubin == b.cubin


def test_compile_errors_keep_their_locations():
    src = "tile.kernel @k() {grid = [1]} {\n  %a = tile.neg %b : f32\n  tile.return\n}\n"
    with pytest.raises(tilec.CompileError) as e:
        tilec.compile(src, file="bad.tile")
    assert str(e.value).startswith("bad.tile:2:17: error: use of undefined value '%b'")
    assert e.value.diagnostics == [("bad.tile", 2, 17, "error", "use of undefined value '%b'")]


def test_unsupported_shapes_are_compile_errors_not_crashes():
    src = GEMM.replace("tile<128x64xbf16>", "tile<128x60xbf16>")
    assert src != GEMM
    with pytest.raises(tilec.CompileError) as e:
        tilec.compile(src, file="g.tile")
    assert "g.tile:" in str(e.value)


def test_bad_options_are_value_errors():
    with pytest.raises(ValueError, match="stages"):
        tilec.compile(VADD, stages=99)
    with pytest.raises(ValueError, match="unknown target 'sm_80'"):
        tilec.compile(VADD, target="sm_80")
    with pytest.raises(ValueError, match="no_such_option"):
        tilec.compile(VADD, no_such_option=1)


def test_isolated_compile():
    k = tilec.isolated_compile(VADD, target="sm_90")
    assert k.manifest["target"] == "sm_90" and ".entry vadd" in k.ptx
    with pytest.raises(tilec.CompileError) as e:
        tilec.isolated_compile("tile.kernel @k(", target="sm_90a")
    assert "<string>:1:" in str(e.value)


def test_compiles_from_threads_agree():
    want = tilec.compile(GEMM, cache=False).ptx
    got = [None] * 4

    def work(i):
        got[i] = tilec.compile(GEMM, cache=False).ptx

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got == [want] * 4


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_compile_after_fork():
    want = tilec.compile(VADD, cache=False).ptx
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        ok = tilec.compile(VADD, cache=False).ptx == want
        os.write(w, b"1" if ok else b"0")
        os._exit(0)
    os.close(w)
    assert os.read(r, 1) == b"1"
    os.waitpid(pid, 0)


def test_load_reads_tile_compiles_output(tmp_path):
    k = tilec.compile(VADD, cubin=True)
    (tmp_path / "vadd.ptx").write_text(k.ptx)
    (tmp_path / "vadd.cubin").write_bytes(k.cubin)
    (tmp_path / "vadd.json").write_text(k.manifest_json)
    k2 = tilec.load(str(tmp_path), "vadd")
    assert (k2.ptx, k2.cubin, k2.manifest) == (k.ptx, k.cubin, k.manifest)


def vadd_args(n=5000, **change):
    args = {
        "X": Cai(0x10000, "<f4", [n]),
        "Y": Cai(0x20000, "<f4", [n]),
        "Z": Cai(0x30000, "<f4", [n]),
        "N": n,
    }
    args.update(change)
    return args


def test_check_gives_the_launch_configuration():
    k = tilec.compile(VADD)
    c = k.check(**vadd_args())
    assert c["grid"] == (5, 1, 1) and c["block"][0] > 0
    assert k.check(*vadd_args().values()) == c


def gemm_args(m=256, n=512, kk=128, **change):
    args = {
        "A": Cai(0x100000, "<i2", [m, kk]),
        "B": Cai(0x200000, "<i2", [kk, n]),
        "C": Cai(0x300000, "<i2", [m, n]),
        "M": m,
        "N": n,
        "K": kk,
    }
    args.update(change)
    return args


def test_argument_errors():
    k = tilec.compile(VADD)
    cases = [
        (dict(N=None), "needs argument 'N'"),
        (dict(W=1), "'W' is not a parameter of kernel 'vadd'"),
        (dict(X=Cai(0x10000, "<i4", [5000])), "'X' takes a tensor of f32, found i32"),
        (dict(X=Cai(0x10000, "<f4", [50, 100])), "'X' takes a tensor of rank 1"),
        (dict(X=Cai(0x10002, "<f4", [5000])), "not aligned"),
        (dict(X=3), "'X' takes a tensor, found an integer"),
        (dict(N=2.5), "'N' takes an integer, found a float"),
        (dict(N=1 << 70), "does not fit a 64-bit integer"),
        (dict(X=[1.0, 2.0]), "expected a tensor"),
        (dict(X=Cai(0x10000, "<c8", [5000])), "no dtype"),
    ]
    for change, message in cases:
        args = vadd_args(**{k_: v for k_, v in change.items() if v is not None})
        if change.get("N", 0) is None:
            del args["N"]
        with pytest.raises(tilec.ArgumentError, match=None) as e:
            k.check(**args)
        assert message in str(e.value), (change, str(e.value))
    with pytest.raises(tilec.ArgumentError, match="given twice"):
        k.check(Cai(0x10000, "<f4", [5]), X=Cai(0x10000, "<f4", [5]))
    with pytest.raises(tilec.ArgumentError, match="takes 4 arguments"):
        k.check(*vadd_args().values(), 7)


def test_tma_layout_errors():
    k = tilec.compile(GEMM)
    # bf16 has no __cuda_array_interface__ typestr: pass the runtime's tuple form.
    def t(ptr, shape, strides=None):
        if strides is None:
            strides = [shape[1], 1]
        return (ptr, "bf16", list(shape), list(strides), 0)

    ok = {"A": t(0x100000, [256, 128]), "B": t(0x200000, [128, 512]),
          "C": t(0x300000, [256, 512]), "M": 256, "N": 512, "K": 128}
    cfg = tilec._tilec.bind(k.manifest_json, list(ok.items()))
    assert cfg["dynamic_shared_memory_bytes"] > 48 * 1024
    cases = [
        (dict(A=t(0x100000, [256, 128], [1, 256])), "innermost"),
        (dict(A=t(0x100000, [256, 129], [129, 1])), "16 bytes"),
        (dict(A=t(0x100002, [256, 128])), "16"),
        (dict(A=(0x100000, "bf16", [256, 128], [128, 1], -1)), "host memory"),
        (dict(A=(0x100000, "bf16", [256, 128], [128, 1], 1)), "cuda:1"),
    ]
    for change, message in cases:
        args = dict(ok, **change)
        with pytest.raises(tilec.ArgumentError) as e:
            tilec._tilec.bind(k.manifest_json, list(args.items()))
        assert message in str(e.value), (change, str(e.value))


def test_no_gpu_errors_at_launch_not_import():
    try:
        n = tilec.device_count()
    except tilec.NoDriverError:
        n = None
    if n:
        pytest.skip("a GPU is present")
    k = tilec.compile(VADD)
    with pytest.raises(tilec.LaunchError) as e:
        k(**vadd_args())
    assert "driver" in str(e.value) or "device" in str(e.value)


def test_manifest_is_json_and_stubs_ship():
    k = tilec.compile(VADD)
    assert json.loads(k.manifest_json) == k.manifest
    pkg = pathlib.Path(tilec.__file__).parent
    assert (pkg / "__init__.pyi").is_file() and (pkg / "py.typed").is_file()


def test_malformed_array_interfaces_are_argument_errors():
    k = tilec.compile(VADD)

    class Raw:
        def __init__(self, cai):
            self.__cuda_array_interface__ = cai

    good = {"data": (0x10000, False), "typestr": "<f4", "shape": (5000,), "version": 3}
    cases = [
        ({k_: v for k_, v in good.items() if k_ != "typestr"}, "has no 'typestr'"),
        (dict(good, data=(None, False)), "the data pointer must be an int"),
        (dict(good, data=(4096.5, False)), "the data pointer must be an int"),
        (dict(good, shape="8"), "'shape' must be a tuple"),
        (dict(good, shape=(True,)), "a size must be an int"),
        (dict(good, strides=(4.0,)), "a stride must be an int"),
        (dict(good, strides=(2 ** 70,)), "out of range"),
        (dict(good, typestr=">f4"), "big-endian"),
        (dict(good, typestr=5), "not a numpy type string"),
        (dict(good, mask=object()), "masked"),
        ([1, 2], "is not a dict"),
    ]
    for cai, message in cases:
        with pytest.raises(tilec.ArgumentError) as e:
            k.check(**vadd_args(X=Raw(cai)))
        assert "'X'" in str(e.value) and message in str(e.value), (cai, str(e.value))


def test_impossible_tensors_and_scalars_are_refused():
    k = tilec.compile(VADD)
    for change, message in [
        (dict(X=Cai(0, "<f4", [5000])), "null"),
        (dict(X=Cai(2 ** 64 - 4, "<f4", [1000])), "address space"),
        (dict(N=True), "'N' takes i64, found a bool"),
        (dict(N="8"), "cannot pass str"),
        (dict(N=None), "cannot pass NoneType"),
    ]:
        with pytest.raises(tilec.ArgumentError) as e:
            k.check(**vadd_args(**change))
        assert message in str(e.value), (change, str(e.value))
    for bad in [dict(device=-1), dict(sm_count=0), dict(device="0")]:
        with pytest.raises((tilec.ArgumentError, ValueError)):
            k.check(**vadd_args(), **bad)


def test_launch_controls_are_checked_before_the_driver():
    k = tilec.compile(VADD)
    for kw, message in [
        (dict(grid=(0,)), "out of range"),
        (dict(grid="12"), "not a tuple"),
        (dict(grid=(1, 2, 3, 4)), "not a tuple"),
        (dict(grid=(2.5,)), "must be an int"),
        (dict(stream="12"), "must be an int"),
        (dict(stream=3.5), "must be an int"),
        (dict(stream=-1), "out of range"),
    ]:
        with pytest.raises(tilec.ArgumentError) as e:
            k(**vadd_args(), **kw)
        assert message in str(e.value), (kw, str(e.value))


def test_parameters_named_like_the_call_keywords_are_the_kernels():
    src = VADD.replace("%N", "%stream").replace("@vadd", "@vadd_s")
    k = tilec.compile(src)
    args = {k_: v for k_, v in vadd_args().items() if k_ != "N"}
    assert k.check(**args, stream=5000)["grid"] == (5, 1, 1)


def test_grid_expressions_nest_boundedly():
    e = "%N"
    for _ in range(40):
        e = f"add({e}, 1)"
    with pytest.raises(tilec.CompileError) as err:
        tilec.compile(VADD.replace("ceildiv(%N, 1024)", e), file="deep.tile", cache=False)
    assert str(err.value).startswith("deep.tile:2:1: error: grid dimension 0 nests 40")


def test_manifests_and_files_are_checked(tmp_path):
    k = tilec.compile(VADD)
    m = json.loads(k.manifest_json)
    for change, message in [
        (dict(block=[0, 1, 1]), "block"),
        (dict(cluster=[1, 0, 1]), "cluster"),
        (dict(grid_limits=[2 ** 40, 1, 1]), "grid_limits"),
        (dict(params=m["params"] + m["params"][:1]), "named twice"),
        (dict(ptx_file="/etc/passwd"), "not a file name"),
        (dict(ptx_file="../x.ptx"), "not a file name"),
    ]:
        with pytest.raises(ValueError) as e:
            tilec.Kernel("vadd", k.ptx, json.dumps(dict(m, **change)))
        assert message in str(e.value), (change, str(e.value))
    (tmp_path / "vadd.json").write_text(json.dumps(dict(m, ptx_file="../vadd.ptx")))
    with pytest.raises(ValueError, match="not a file"):
        tilec.load(str(tmp_path), "vadd")
    with pytest.raises(ValueError, match="not a file"):
        tilec.load(str(tmp_path), "../vadd")
    with pytest.raises(OSError):
        tilec.load(str(tmp_path), "missing")


def test_a_ptxas_that_writes_no_cubin_is_an_error(monkeypatch, tmp_path):
    fake = tmp_path / "ptxas"
    fake.write_text('#!/bin/sh\nwhile [ "$1" != "-o" ]; do shift; done\necho garbage > "$2"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PTXAS", str(fake))
    with pytest.raises(tilec.CompileError, match="wrote no ELF image"):
        tilec.compile(VADD, cubin=True)
    monkeypatch.setenv("PTXAS", "/bin/true")
    with pytest.raises(tilec.CompileError, match="kernel.cubin"):
        tilec.compile(VADD, cubin=True)


def test_option_errors_keep_their_type_in_a_child():
    with pytest.raises(ValueError, match="no_such_option"):
        tilec.isolated_compile(VADD, no_such_option=1)
    with pytest.raises(ValueError, match="emit"):
        tilec.compile(VADD, emit="mlir")
    with pytest.raises(ValueError, match="timeout"):
        tilec.isolated_compile(VADD, timeout="5")
    with pytest.raises(TypeError):
        tilec.compile(123)


def test_split_k_arguments():
    k = tilec.compile(example("gemm_bf16_splitk_64x64.tile"), target="sm_90a")
    assert k.manifest["split_k"]["finalize"] == {
        "op": "convert", "from": "W", "to": "C", "dtype": "bf16"}
    a, b = Cai(1 << 20, "<f2", (300, 256)), Cai(2 << 20, "<f2", (256, 128))
    w, c = Cai(3 << 20, "<f4", (300, 128)), Cai(4 << 20, "<f2", (300, 128))
    scalars = dict(M=300, N=128, K=256, S=2)
    # No workspace and no torch output: the error says what to pass.
    with pytest.raises(tilec.ArgumentError, match="is split-K: pass its workspace W"):
        k.check(A=a, B=b, C=c, **scalars)
    f16 = tilec.compile(example("gemm_bf16_splitk_64x64.tile").replace("bf16", "f16"))
    assert f16.manifest["split_k"]["finalize"]["dtype"] == "f16"
    cfg = f16.check(A=a, B=b, W=w, C=c, **scalars)
    assert cfg["grid"] == (min(2 * 5 * 2, 132), 1, 1)
    with pytest.raises(tilec.ArgumentError, match="the split-K finalize writes W's shape"):
        f16.check(A=a, B=b, W=w, C=Cai(4 << 20, "<f2", (300, 64)), **scalars)


def test_ordered_split_k_arguments():
    # The one-step in-kernel reduction: W holds one partial per slice, F one counter per
    # output tile; the kernel writes C, and no program waits, so any S binds.
    # The f16 form, whose operands __cuda_array_interface__ can describe ("<f2").
    k = tilec.compile(example("gemm_splitk.tile").replace("bf16", "f16"), target="sm_90a")
    sk = k.manifest["split_k"]
    assert (sk["reduction"], sk["workspace"], sk["flags"], sk["finalize"]) == (
        "ordered", ["W"], ["F"], None)
    assert "waits" not in sk
    a, b = Cai(1 << 20, "<f2", (300, 256)), Cai(2 << 20, "<f2", (256, 128))
    c = Cai(4 << 20, "<f2", (300, 128))
    f = Cai(5 << 20, "<i4", (10,))
    scalars = dict(M=300, N=128, K=256, S=4)
    with pytest.raises(tilec.ArgumentError, match="reduces its K slices in order: pass its "
                       "workspace W"):
        k.check(A=a, B=b, C=c, F=f, **scalars)
    w = Cai(3 << 20, "<f4", (4, 300, 128))
    cfg = k.check(A=a, B=b, C=c, W=w, F=f, **scalars)
    assert cfg["grid"] == (min(2 * 5 * 4, 132), 1, 1)
    # The serial reduction waits: a plain (not persistent) grid must stay resident.
    serial = tilec.compile(example("gemm_splitk_serial.tile").replace("bf16", "f16"),
                           target="sm_90a", schedule="none")
    assert serial.manifest["split_k"]["waits"] is True
    w2 = Cai(3 << 20, "<f4", (300, 128))
    assert serial.check(A=a, B=b, C=c, W=w2, F=f, **scalars)["grid"] == (2, 5, 4)
    with pytest.raises(tilec.ArgumentError, match="could wait for one that is not resident"):
        serial.check(A=a, B=b, C=c, W=w2, F=f, M=300, N=128, K=4096, S=20)


class DLPackArray:
    """A DLPack producer over ctypes (no memory behind it): a DLManagedTensor in a
    "dltensor" capsule, as dlpack.h lays them out."""

    def __init__(self, ptr, code, bits, shape, strides=None, device=(2, 0), lanes=1,
                 offset=0):
        import ctypes as c

        class Device(c.Structure):
            _fields_ = [("type", c.c_int32), ("id", c.c_int32)]

        class DataType(c.Structure):
            _fields_ = [("code", c.c_uint8), ("bits", c.c_uint8), ("lanes", c.c_uint16)]

        class Tensor(c.Structure):
            _fields_ = [("data", c.c_void_p), ("device", Device), ("ndim", c.c_int32),
                        ("dtype", DataType), ("shape", c.POINTER(c.c_int64)),
                        ("strides", c.POINTER(c.c_int64)), ("byte_offset", c.c_uint64)]

        class Managed(c.Structure):
            _fields_ = [("dl_tensor", Tensor), ("manager_ctx", c.c_void_p),
                        ("deleter", c.c_void_p)]

        n = len(shape)
        self._shape = (c.c_int64 * n)(*shape)
        self._strides = (c.c_int64 * n)(*strides) if strides is not None else None
        self._m = Managed()
        t = self._m.dl_tensor
        t.data, t.ndim, t.byte_offset = ptr, n, offset
        t.device = Device(*device)
        t.dtype = DataType(code, bits, lanes)
        t.shape = c.cast(self._shape, c.POINTER(c.c_int64))
        if self._strides is not None:
            t.strides = c.cast(self._strides, c.POINTER(c.c_int64))
        self.device = device
        new = c.pythonapi.PyCapsule_New
        new.restype, new.argtypes = c.py_object, [c.c_void_p, c.c_char_p, c.c_void_p]
        self._new = lambda: new(c.addressof(self._m), b"dltensor", None)

    def __dlpack__(self, stream=None):
        return self._new()

    def __dlpack_device__(self):
        return self.device


def test_dlpack_producers_without_torch():
    vadd = tilec.compile(VADD, target="sm_90a")
    x = DLPackArray(0x10000, 2, 32, [5000])
    y = DLPackArray(0x20000, 2, 32, [10000], strides=[2], offset=64)
    z = DLPackArray(0x30000, 2, 32, [5000])
    assert vadd.check(x, y, z, 5000)["grid"] == (5, 1, 1)
    assert tilec._tilec.dlpack_tensor("Y", y) == (0x20040, "f32", [10000], [2], 0)
    bf = DLPackArray(0x40000, 4, 16, [64, 32])
    assert tilec._tilec.dlpack_tensor("A", bf) == (0x40000, "bf16", [64, 32], [32, 1], 0)
    # Each bad one names the argument.
    with pytest.raises(tilec.ArgumentError, match="'X' takes a tensor of f32, found f16"):
        vadd.check(DLPackArray(0x10000, 2, 16, [5000]), y, z, 5000)
    with pytest.raises(tilec.ArgumentError, match="'X' is in host memory"):
        vadd.check(DLPackArray(0x10000, 2, 32, [5000], device=(1, 0)), y, z, 5000)
    with pytest.raises(tilec.ArgumentError, match="'X': a DLPack vector type"):
        vadd.check(DLPackArray(0x10000, 2, 32, [5000], lanes=4), y, z, 5000)
    with pytest.raises(tilec.ArgumentError, match="no dtype for DLPack type code 5 with 64"):
        vadd.check(DLPackArray(0x10000, 5, 64, [5000]), y, z, 5000)

    class Consumed(DLPackArray):
        def __dlpack__(self, stream=None):
            return "not a capsule"

    with pytest.raises(tilec.ArgumentError, match="no unconsumed \"dltensor\" capsule"):
        vadd.check(Consumed(0x10000, 2, 32, [5000]), y, z, 5000)


def test_constants_bind_kernel_constants():
    src = example("gemm.tile")
    k = tilec.compile(src, target="sm_90a", constants={"BM": 64, "BN": 128}, cache=False)
    assert k.manifest["constants"] == {"BK": 64, "BM": 64, "BN": 128}
    assert k.manifest["block"] == [256, 1, 1]
    default = tilec.compile(src, target="sm_90a", cache=False)
    assert default.manifest["constants"] == {"BK": 64, "BM": 128, "BN": 256}
    fixed = tilec.compile(GEMM, target="sm_90a", cache=False)
    assert "constants" not in fixed.manifest
    with pytest.raises(tilec.CompileError, match="constant 'BX' is bound, but kernel '@gemm'"):
        tilec.compile(src, target="sm_90a", constants={"BX": 1}, cache=False)
    with pytest.raises(TypeError, match="constant 'BM' must be an int"):
        tilec.compile(src, target="sm_90a", constants={"BM": "64"})
    with pytest.raises(TypeError, match="constants must be a dict"):
        tilec.compile(src, target="sm_90a", constants=[("BM", 64)])
