"""Local ops (they name no mesh axis): const, the binary ops, neg, reduce_sum,
transpose, cast. jax 0.10.2 jax.numpy semantics on each device's block."""

from __future__ import annotations

from typing import Any, ClassVar, cast

import numpy as np

from oracles.devices import np_dtype
from oracles.ops.base import Ctx, ErrorTerms, OpDef
from oracles.prediction import ErrorKind, ValueType
from oracles.rounding import unit_roundoff
from programs.model import is_float, round_to

_F32_INTS = 2.0**24  # integers float32 holds exactly: int32 converts through it
_F64_INTS = 2.0**53  # those float64 holds: an integer converts to float64 directly


def _exact_ints(to: str) -> float:
    return _F64_INTS if to == "float64" else _F32_INTS


_INTS = {"int8": (True, 8), "int16": (True, 16), "int32": (True, 32), "uint8": (False, 8), "uint32": (False, 32),
         "int64": (True, 64), "uint64": (False, 64)}
# the lattice's float chain (bfloat16 and float16 meet at float32)
_FLOAT_RANK = {"bfloat16": 0, "float16": 0, "float32": 1, "float64": 2}


def _promote(a: str, b: str, x64: bool = False) -> str:
    """jnp's promotion of two strongly typed operands (jax 0.10.2 docs "Type promotion
    semantics", the lattice): bool gives way to anything; an integer and a float give the
    float; two different floats give the wider of float32 / float64 (bfloat16 with float16:
    float32); signed with signed (or unsigned with unsigned) the wider; unsigned with a
    wider signed that one, else a signed type twice as wide (uint8 and int8: int16). With
    jax_enable_x64 off, 64 bits are canonicalised to int32 (uint32 and int32: int32); with
    it on (`x64`), uint32 and int32 give int64, and uint64 with a signed integer meets at
    the default float, float64 (measured on jax 0.10.2)."""
    if a == b or b == "bool":
        return a
    if a == "bool":
        return b
    if is_float(a) or is_float(b):
        if not (is_float(a) and is_float(b)):
            return a if is_float(a) else b
        return {0: "float32", 1: "float32", 2: "float64"}[max(_FLOAT_RANK[a], _FLOAT_RANK[b])]
    (sa, wa), (sb, wb) = _INTS[a], _INTS[b]
    if sa == sb:
        return a if wa >= wb else b
    (ws, s), (wu, _) = ((wa, a), (wb, b)) if sa else ((wb, b), (wa, a))
    if ws > wu:
        return s
    if x64:
        return {8: "int16", 16: "int32", 32: "int64", 64: "float64"}[wu]
    return {8: "int16", 16: "int32", 32: "int32"}[wu]


def _convert(x: np.ndarray, src: str, to: str, ctx: Ctx) -> np.ndarray:
    """An operand as the op computes with it: an integer converted to a float dtype is
    rounded to it (deterministically, as XLA converts); a float promotes to a dtype that
    holds it exactly; an integer to a wider one exactly (bool as 0 / 1)."""
    if not is_float(to):
        return x.astype(np_dtype(to))
    x = x.astype(np.float64)
    return round_to(x, to) if ctx.rounding and not is_float(src) else x


def _convert_err(e: np.ndarray, x: np.ndarray, src: str, to: str) -> np.ndarray:
    """The error of a converted operand: an inexact integer, or one past 2**24 (which
    int32 -> bfloat16 may round twice, through float32), rounds differently in jax."""
    if is_float(src) or not is_float(to):
        return e
    ax = np.abs(x.astype(np.float64))
    return e + np.where((e > 0) | (ax > _exact_ints(to)), 2 * unit_roundoff(to) * (ax + e), 0.0)


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
        dt = self.dtype(ins, ctx)
        if is_float(dt):
            return np.full(shape, ctx.op.p("value"), dtype=np.float64)
        # jnp.full wraps a Python int into the dtype (-3 in uint8 is 253; bool: not zero)
        return np.full(shape, ctx.op.p("value"), dtype=np.int64).astype(np_dtype(dt))


class Binary(OpDef):
    """Elementwise binary op with NumPy broadcasting of the blocks; vma is the union
    (jax inserts the pvary that makes the operands agree, with auto_pcast)."""

    fn: ClassVar[str]

    def shape(self, ins: list[ValueType], ctx: Ctx) -> tuple[int, ...]:
        return _broadcast_shape(ins[0].shape, ins[1].shape, ctx)

    def dtype(self, ins: list[ValueType], ctx: Ctx) -> str:
        return _promote(ins[0].dtype, ins[1].dtype, ctx.x64)

    def check(self, ins: list[ValueType], ctx: Ctx) -> None:
        if self.fn == "subtract" and ins[0].dtype == ins[1].dtype == "bool":
            # lax.sub accepts integers and floats only (jnp.subtract of two bools)
            raise ctx.fail(ErrorKind.DTYPE, "sub of two bool operands: lax.sub does not accept dtype bool", "bool")

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        m = len(ctx.mesh.sizes)
        to = self.dtype(ins, ctx)
        r = len(self.shape(ins, ctx))
        a, b = (pad_rank(_convert(x, i.dtype, to, ctx), m, r) for x, i in zip(xs, ins))
        return getattr(np, self.fn)(a, b).astype(np_dtype(to))

    def error(self, xs: list[np.ndarray], errs: list[np.ndarray], v: np.ndarray, ins: list[ValueType], ctx: Ctx) -> ErrorTerms:
        """add/sub: the errors add; mul: |a| eb + |b| ea + ea eb; both round once (at
        most |v| plus the propagated error). max/min: the larger error, no rounding
        (both are 1-Lipschitz in each operand)."""
        m = len(ctx.mesh.sizes)
        to = self.dtype(ins, ctx)
        r = len(self.shape(ins, ctx))
        a, b = (pad_rank(_convert(x, i.dtype, to, ctx).astype(np.float64), m, r) for x, i in zip(xs, ins))
        ea, eb = (pad_rank(_convert_err(e, x, i.dtype, to), m, r) for e, x, i in zip(errs, xs, ins))
        if self.fn in ("maximum", "minimum"):
            return np.maximum(ea, eb), 0.0, 1
        if self.fn == "multiply":
            prop = np.abs(a) * eb + np.abs(b) * ea + ea * eb
        else:
            prop = ea + eb
        return prop, np.abs(v.astype(np.float64)) + prop, 1


def pad_rank(x: np.ndarray, m: int, r: int) -> np.ndarray:
    """Insert size-1 local dims so that NumPy broadcasting aligns local shapes right."""
    local = x.shape[m:]
    return x.reshape(x.shape[:m] + (1,) * (r - len(local)) + local)


class Add(Binary):
    """Also the unreduced rule (lax.py `_add_ur_rule`, jax 0.10.2): two operands
    unreduced over the same axes give a sum unreduced over them (a sum of parts is the
    part of the sum); unreduced over different axes, or one unreduced and the other not,
    is a ShardingTypeError (it would need communication)."""

    kind, fn = "add", "add"

    def ur(self, ins: list[ValueType], ctx: Ctx) -> tuple[frozenset[str], frozenset[str]]:
        us = [t.unreduced for t in ins]
        if any(t.reduced for t in ins) or not any(us):
            return super().ur(ins, ctx)
        if us[0] != us[1]:
            raise ctx.fail(
                ErrorKind.UNREDUCED_TYPE,
                f"add of operands unreduced over {sorted(us[0])} and {sorted(us[1])}: they must be unreduced over the same axes",
            )
        return us[0], frozenset()


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

    def check(self, ins: list[ValueType], ctx: Ctx) -> None:
        if ins[0].dtype == "bool":
            raise ctx.fail(ErrorKind.DTYPE, "neg of a bool operand: lax.neg does not accept dtype bool", "bool")

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

    def dtype(self, ins: list[ValueType], ctx: Ctx) -> str:
        # jnp.sum sums narrow integers in the default integer type, as NumPy does:
        # bool, int8, int16 -> int32; uint8 -> uint32; under jax_enable_x64 every
        # integer narrower than 64 bits in int64 / uint64 (measured on jax 0.10.2)
        dt = ins[0].dtype
        if ctx.x64 and (dt == "bool" or (dt in _INTS and _INTS[dt][1] < 64)):
            return "int64" if dt == "bool" or _INTS[dt][0] else "uint64"
        return {"bool": "int32", "int8": "int32", "int16": "int32", "uint8": "uint32"}.get(dt, dt)

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        m = len(ctx.mesh.sizes)
        a = int(ctx.op.p("axis")) % len(ins[0].shape)  # type: ignore[arg-type]
        return np.sum(xs[0], axis=m + a, dtype=np_dtype(self.dtype(ins, ctx)))

    def error(self, xs: list[np.ndarray], errs: list[np.ndarray], v: np.ndarray, ins: list[ValueType], ctx: Ctx) -> ErrorTerms:
        """A sum of n terms (jnp.sum accumulates bfloat16 and float16 in float32, which
        the any-accumulator bound admits): n roundings of at most the sum of |terms|."""
        m = len(ctx.mesh.sizes)
        a = int(ctx.op.p("axis")) % len(ins[0].shape)  # type: ignore[arg-type]
        n = ins[0].shape[a]
        mag = np.sum(np.abs(xs[0].astype(np.float64)) + errs[0], axis=m + a)
        return np.sum(errs[0], axis=m + a), mag, max(n, 1)


class Transpose(OpDef):
    """jnp.transpose(x, perm): jax.numpy's form of numpy.transpose, whose docs allow
    negative axes ("Negative indices can also be used to specify axes"; jnp.transpose's
    own docstring names 0 <= i < ndim, and jax 0.10.2 takes negative ones as numpy
    does, measured): perm, each axis taken modulo the rank, is a permutation of the
    operand's axes."""

    kind = "transpose"

    @staticmethod
    def perm(ins: list[ValueType], ctx: Ctx) -> tuple[int, ...]:
        r = len(ins[0].shape)
        perm = ctx.op.p("perm")
        axes = [a for a in perm if isinstance(a, int)] if isinstance(perm, tuple) else []
        return tuple(a % r if -r <= a < r else a for a in axes)

    def check(self, ins: list[ValueType], ctx: Ctx) -> None:
        perm = tuple(ctx.op.p("perm"))  # type: ignore[arg-type]
        if sorted(self.perm(ins, ctx)) != list(range(len(ins[0].shape))):
            raise ctx.fail(ErrorKind.LOCAL_SHAPE, f"transpose: perm={perm} for rank {len(ins[0].shape)}")

    def shape(self, ins: list[ValueType], ctx: Ctx) -> tuple[int, ...]:
        return tuple(ins[0].shape[i] for i in self.perm(ins, ctx))

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        m = len(ctx.mesh.sizes)
        perm = list(range(m)) + [m + i for i in self.perm(ins, ctx)]
        return xs[0].transpose(perm)


class Cast(OpDef):
    """x.astype(dtype). float->int truncates toward zero; to a float dtype rounds to
    nearest even (XLA's convert), which the oracle does too, so a cast of an exact value
    is exact, even where it rounds; widening bfloat16 or float16 to float32 is exact."""

    kind = "cast"

    def dtype(self, ins: list[ValueType], ctx: Ctx) -> str:
        return str(ctx.op.p("dtype"))

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        dt = self.dtype(ins, ctx)
        if dt == "bool":
            return xs[0] != 0
        if not is_float(dt):
            if xs[0].dtype.kind != "f":
                return xs[0].astype(np_dtype(dt))  # integer to integer wraps
            # float to integer truncates; past the integer's range the value is saturated
            # (XLA's runtime convert; measured on jax 0.10.2: 300.0 -> int8 127, -3.0 ->
            # uint8 0) but not predicted: `error` says it is undefined there
            info = np.iinfo(cast("type[np.integer[Any]]", np_dtype(dt)))
            return np.clip(np.trunc(xs[0].astype(np.float64)), info.min, info.max).astype(np_dtype(dt))
        x = xs[0].astype(np.float64)
        # rounded to the target first: the float64 oracle must see what the dtype holds
        return round_to(x, dt) if ctx.rounding else x

    def error(self, xs: list[np.ndarray], errs: list[np.ndarray], v: np.ndarray, ins: list[ValueType], ctx: Ctx) -> ErrorTerms:
        """To an integer: how far truncation can move over [x - e, x + e]. To a float:
        an inexact operand (or an integer past 2**24, converted through float32) may
        round to a neighbour: up to 2 u (|x| + e) more."""
        dt, src = self.dtype(ins, ctx), ins[0].dtype
        e, x = errs[0], xs[0].astype(np.float64)
        if dt == "bool":
            return np.where((e > 0) & (np.abs(x) <= e), 1.0, 0.0), 0.0, 1  # zero may be within reach
        if not is_float(dt):
            if not is_float(src):
                return e, 0.0, 1
            with np.errstate(invalid="ignore"):
                t, lo, hi = np.trunc(x), np.trunc(x - e), np.trunc(x + e)
                width = np.maximum(np.abs(hi - t), np.abs(lo - t))
                # a float whose truncation the integer dtype cannot hold (or NaN): jax
                # documents the cast as C++'s static_cast (lax.convert_element_type),
                # undefined there, and XLA gives no one answer (jax 0.10.2: the runtime
                # saturates -1.0 -> uint8 to 0, jit's constant folding gives 255): no
                # value is predicted for those elements (OutputPrediction.unchecked)
                info = np.iinfo(cast("type[np.integer[Any]]", np_dtype(dt)))
                inside = (lo >= info.min) & (hi <= info.max)
            return np.where(inside, np.where(e > 0, width, 0.0), np.inf), 0.0, 1
        if (dt == "float32" and src in ("bfloat16", "float16")) or (dt == "float64" and is_float(src)):
            return e, 0.0, 1  # float32 holds every bfloat16 and float16 number, float64 every float
        inexact = (e > 0) | ((np.abs(x) > _exact_ints(dt)) if not is_float(src) else False)
        return e, np.where(inexact, 2 * (np.abs(x) + e), 0.0), 1
