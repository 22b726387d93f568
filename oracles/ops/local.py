"""Local ops (they name no mesh axis): const, the binary ops, neg, reduce_sum,
transpose, cast. jax 0.10.2 jax.numpy semantics on each device's block."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from oracles.devices import np_dtype
from oracles.ops.base import Ctx, OpDef
from oracles.prediction import ErrorKind, ValueType


def _promote(a: str, b: str) -> str:
    return "int32" if a == b == "int32" else "float32"


def _broadcast_shape(a: tuple[int, ...], b: tuple[int, ...], ctx: Ctx) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise ctx.fail(
            ErrorKind.LOCAL_SHAPE, f"{ctx.op.kind}: shapes {a} and {b} do not broadcast"
        ) from None


class Const(OpDef):
    """jnp.full(shape, value, dtype): the same block on every device, varying over nothing."""

    kind = "const"

    def shape(self, ins: list[ValueType], ctx: Ctx) -> tuple[int, ...]:
        return tuple(ctx.op.p("shape"))  # type: ignore[arg-type]

    def dtype(self, ins: list[ValueType], ctx: Ctx) -> str:
        return str(ctx.op.p("dtype"))

    def vma(self, ins: list[ValueType], ctx: Ctx) -> frozenset[str]:
        return frozenset()

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        shape = tuple(ctx.mesh.sizes) + self.shape(ins, ctx)
        return np.full(shape, ctx.op.p("value"), dtype=np_dtype(self.dtype(ins, ctx)))


class Binary(OpDef):
    """Elementwise binary op with NumPy broadcasting of the blocks; vma is the union
    (jax inserts the pvary that makes the operands agree, with auto_pcast)."""

    fn: ClassVar[str]

    def shape(self, ins: list[ValueType], ctx: Ctx) -> tuple[int, ...]:
        return _broadcast_shape(ins[0].shape, ins[1].shape, ctx)

    def dtype(self, ins: list[ValueType], ctx: Ctx) -> str:
        return _promote(ins[0].dtype, ins[1].dtype)

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        m = len(ctx.mesh.sizes)
        dt = np_dtype(self.dtype(ins, ctx))
        r = len(self.shape(ins, ctx))
        a, b = (_pad_rank(x.astype(dt), m, r) for x in xs)
        return getattr(np, self.fn)(a, b).astype(dt)


def _pad_rank(x: np.ndarray, m: int, r: int) -> np.ndarray:
    """Insert size-1 local dims so that NumPy broadcasting aligns local shapes right."""
    local = x.shape[m:]
    return x.reshape(x.shape[:m] + (1,) * (r - len(local)) + local)


class Add(Binary):
    kind, fn = "add", "add"


class Sub(Binary):
    kind, fn = "sub", "subtract"


class Mul(Binary):
    kind, fn = "mul", "multiply"


class Max(Binary):
    kind, fn = "max", "maximum"


class Min(Binary):
    kind, fn = "min", "minimum"


class Neg(OpDef):
    kind = "neg"

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        return np.negative(xs[0])


class ReduceSum(OpDef):
    """jnp.sum(x, axis=a): removes local dim a; int32 sums wrap (jnp.sum keeps int32)."""

    kind = "reduce_sum"

    def check(self, ins: list[ValueType], ctx: Ctx) -> None:
        r = len(ins[0].shape)
        a = int(ctx.op.p("axis"))  # type: ignore[arg-type]
        if not -r <= a < r:
            raise ctx.fail(ErrorKind.LOCAL_SHAPE, f"reduce_sum: axis={a} out of range for rank {r}")

    def shape(self, ins: list[ValueType], ctx: Ctx) -> tuple[int, ...]:
        s = list(ins[0].shape)
        del s[int(ctx.op.p("axis")) % len(s)]  # type: ignore[arg-type]
        return tuple(s)

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        m = len(ctx.mesh.sizes)
        a = int(ctx.op.p("axis")) % len(ins[0].shape)  # type: ignore[arg-type]
        return np.sum(xs[0], axis=m + a, dtype=xs[0].dtype)


class Transpose(OpDef):
    kind = "transpose"

    def check(self, ins: list[ValueType], ctx: Ctx) -> None:
        perm = tuple(ctx.op.p("perm"))  # type: ignore[arg-type]
        if sorted(perm) != list(range(len(ins[0].shape))):
            raise ctx.fail(ErrorKind.LOCAL_SHAPE, f"transpose: perm={perm} for rank {len(ins[0].shape)}")

    def shape(self, ins: list[ValueType], ctx: Ctx) -> tuple[int, ...]:
        return tuple(ins[0].shape[i] for i in ctx.op.p("perm"))  # type: ignore[union-attr]

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        m = len(ctx.mesh.sizes)
        perm = list(range(m)) + [m + i for i in ctx.op.p("perm")]  # type: ignore[union-attr]
        return xs[0].transpose(perm)


class Cast(OpDef):
    """x.astype(dtype). float->int truncates toward zero (our values are integers)."""

    kind = "cast"

    def dtype(self, ins: list[ValueType], ctx: Ctx) -> str:
        return str(ctx.op.p("dtype"))

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        dt = self.dtype(ins, ctx)
        if dt == "int32" and xs[0].dtype != np.int32:
            return np.trunc(xs[0].astype(np.float32)).astype(np.int32)
        if dt == "float32":
            # round to float32 first: the float64 oracle must see what float32 holds
            return xs[0].astype(np.float32).astype(np.float64)
        return xs[0].astype(np_dtype(dt))
