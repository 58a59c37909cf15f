"""Registering a tilec kernel as a PyTorch custom operator (``torch.library.custom_op``),
with a fake (meta) implementation, so that ``torch.compile(fullgraph=True)`` traces
through it and ``torch.library.opcheck`` passes.

    op = tilec.library.kernel_op(
        "mylib::vadd", kernel,
        inputs=["X", "Y"],
        outputs={"Z": lambda X, Y: (X.shape, X.dtype)},
        scalars={"N": lambda X, Y: X.shape[0]},
    )
    z = op(x, y)

The operator's arguments are ``inputs`` (tensors, in order); it allocates each output with
``torch.empty`` from its ``(shape, dtype)`` rule (zeroed for the manifest's
``atomic_outputs``, which the kernel adds into), computes each scalar from the inputs, and
launches the kernel on torch's current stream. The fake implementation allocates the same
outputs on the meta device without launching.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Sequence, Tuple


def kernel_op(
    name: str,
    kernel: Any,
    *,
    inputs: Sequence[str],
    outputs: Dict[str, Callable[..., Tuple[Any, Any]]],
    scalars: Dict[str, Callable[..., Any]] = None,
) -> Callable[..., Any]:
    """Register ``kernel`` (a :class:`tilec.Kernel`) as the custom operator ``name``
    (``namespace::op``) and return it. Every manifest parameter must be named once among
    ``inputs``, ``outputs`` and ``scalars``; raises ``ValueError`` otherwise."""
    import torch

    scalars = dict(scalars or {})
    named = list(inputs) + list(outputs) + list(scalars)
    params = list(kernel.params)
    missing = [p for p in params if p not in named]
    extra = [p for p in named if p not in params]
    if missing or extra or len(set(named)) != len(named):
        raise ValueError(
            f"kernel '{kernel.name}' has parameters {params}; the operator names "
            f"inputs {list(inputs)}, outputs {list(outputs)}, scalars {list(scalars)}"
            + (f" (missing {missing})" if missing else "")
            + (f" (not parameters: {extra})" if extra else "")
        )
    zeroed = set(kernel.manifest.get("atomic_outputs", []))
    n_in = len(inputs)
    single = len(outputs) == 1

    def allocate(args, device):
        out = {}
        for o, rule in outputs.items():
            shape, dtype = rule(*args)
            make = torch.zeros if o in zeroed else torch.empty
            out[o] = make(tuple(shape), dtype=dtype, device=device)
        return out

    def result(out):
        vals = tuple(out.values())
        return vals[0] if single else vals

    arg_names = ", ".join(f"Tensor {i}" for i in inputs)
    ret = "Tensor" if single else "(" + ", ".join("Tensor" for _ in outputs) + ")"

    def impl(*args):
        if len(args) != n_in:
            raise TypeError(f"{name} takes {n_in} tensors, {len(args)} given")
        out = allocate(args, args[0].device if args else "cuda")
        values = dict(zip(inputs, args))
        values.update(out)
        values.update({s: int(f(*args)) for s, f in scalars.items()})
        kernel(**{p: values[p] for p in params})
        return result(out)

    def fake(*args):
        return result(allocate(args, args[0].device if args else "meta"))

    lib_ns, _, op_name = name.partition("::")
    if not op_name:
        raise ValueError(f"'{name}' is not namespace::name")
    lib = torch.library.Library(lib_ns, "FRAGMENT")
    lib.define(f"{op_name}({arg_names}) -> {ret}")
    lib.impl(op_name, impl, "CUDA")
    torch.library.register_fake(name, fake, lib=lib)
    op = getattr(getattr(torch.ops, lib_ns), op_name)
    op._tilec_library = lib  # keeps the registration alive with the op
    return op
