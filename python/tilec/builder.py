"""``tilec.Builder``: tile IR built without text, checked op by op.

A frontend builds kernels with methods that mirror ``tilec_dialect::Builder``: each op is
checked where it is made (operand kinds and types, the op's verifier rule) and a refusal
raises ``BuildError`` located at the op (``SCOPE:ID:0``; see :meth:`Builder.scope`).
Structured ops take Python callables that fill their regions::

    import tilec
    b = tilec.Builder()

    @b.kernel("softmax", [("X", "tensor<?x?xf32>"), ("Y", "tensor<?x?xf32>"), ("M", "index")])
    def _(b, X, Y, M):
        b.grid(b.arg(M))
        row, c0 = b.program_id(0), b.constant_index(0)
        x = b.load(X, [row, c0], [1, 256], padding=float("-inf"))
        e = b.exp(b.sub(x, b.broadcast(b.reduce(x, 1, "max"), [1, 256])))
        y = b.div(e, b.broadcast(b.reduce(e, 1, "add"), [1, 256]))
        b.store(Y, [row, c0], y)

    kernel = tilec.compile(b, target="sm_90a")

Types are spelled as in IR text: ``"index"``, ``"f32"``, ``"tensor<?x?xbf16>"``,
``"tile<64x64xf32>"``. Values are :class:`Value` handles of this builder's module;
``str(b)`` prints the module.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Optional, Sequence, Tuple, Union

from . import _tilec

GridExpr = _tilec.GridExpr
Value = _tilec.Value

# The element-wise ops with a method each: tile.<name>.
INT_OPS = ("addi", "subi", "muli", "divi", "remi", "ceildiv", "mini", "maxi")
FLOAT_BINARY_OPS = ("add", "sub", "mul", "div", "max", "min")
FLOAT_UNARY_OPS = ("neg", "abs", "exp", "exp2", "log", "sqrt", "rsqrt", "tanh", "relu")

Params = Union[Sequence[Tuple[str, str]], "dict[str, str]"]


class Builder(_tilec.Builder):
    """Builds a module of tile IR kernels (see the module's documentation)."""

    def kernel(
        self, name: str, params: Params, body: Optional[Callable[..., None]] = None
    ) -> Any:
        """Builds ``tile.kernel @name``: ``params`` are (name, type) pairs or a dict;
        ``body(builder, *args)`` builds the body and calls :meth:`grid`. Without ``body``,
        returns a decorator that builds the kernel from the function it decorates (and
        returns that function)."""
        if isinstance(params, dict):
            params = list(params.items())
        if body is None:
            def decorate(f: Callable[..., None]) -> Callable[..., None]:
                _tilec.Builder.kernel(self, name, list(params), f)
                return f

            return decorate
        _tilec.Builder.kernel(self, name, list(params), body)
        return None

    @contextlib.contextmanager
    def scope(self, name: str) -> Iterator["Builder"]:
        """Locates the ops built inside the ``with`` block in ``name`` (``name:ID:0``): a
        frontend names its node, and an error about any op built for it names the node."""
        outer = self._scope()
        self._set_scope(name)
        try:
            yield self
        finally:
            self._set_scope(outer)


def _binary(op: str, doc: str) -> Callable[[Builder, Value, Value], Value]:
    def method(self: Builder, a: Value, b: Value) -> Value:
        return self._binary("tile." + op, a, b)

    method.__name__ = method.__qualname__ = op
    method.__doc__ = doc
    return method


def _unary(op: str) -> Callable[[Builder, Value], Value]:
    def method(self: Builder, a: Value) -> Value:
        return self._unary("tile." + op, a)

    method.__name__ = method.__qualname__ = op
    method.__doc__ = f"``tile.{op}`` of a float scalar or tile; the result has its type."
    return method


for _op in INT_OPS:
    setattr(Builder, _op, _binary(
        _op, f"``tile.{_op}`` of two integer scalars of one type; the result has their type."))
for _op in FLOAT_BINARY_OPS:
    setattr(Builder, _op, _binary(
        _op, f"``tile.{_op}`` of two float scalars or tiles of one type (broadcast first)."))
for _op in FLOAT_UNARY_OPS:
    setattr(Builder, _op, _unary(_op))
del _op
