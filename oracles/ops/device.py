"""Ops about the device and its types: axis_index, axis_size, pcast and ragged_all_to_all
(jax 0.10.2 `jax/_src/lax/parallel.py`, `jax/_src/shard_map.py`)."""

from __future__ import annotations

import numpy as np

from oracles.devices import group_index, np_dtype
from oracles.ops.base import Collective, Ctx, ErrorTerms, state_of, vma_of
from oracles.prediction import ErrorKind, ValueType


class AxisIndex(Collective):
    """axis_index(axes): the device's index in its group, major axis first; int32 scalar
    varying over the named axes. Over no axes, `()`, the group is the device alone and
    the index is 0: jax 0.10.2 (parallel.py `axis_index`) starts a tuple's index at
    `lax.asarray(0)` and adds nothing, so the result is that Python 0 as jax types it, a
    weak int32 (a weak int64 under jax_enable_x64), as for axis_size; each named axis
    adds an int32 `axis_index_p`, which the weak start gives way to (measured on jax
    0.10.2: axis_index(('data',)) is int32 under jax_enable_x64 too)."""

    kind = "axis_index"

    def shape(self, ins: list[ValueType], ctx: Ctx) -> tuple[int, ...]:
        return ()

    def dtype(self, ins: list[ValueType], ctx: Ctx) -> str:
        return "int64" if ctx.x64 and not self.axes(ctx) else "int32"

    def vma(self, ins: list[ValueType], ctx: Ctx) -> frozenset[str]:
        return frozenset(self.axes(ctx))

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        return group_index(ctx.mesh, self.axes(ctx)).astype(np_dtype(self.dtype(ins, ctx)))


class Pcast(Collective):
    """pcast(x, axes, to=): the same values, retyped over `axes` (parallel.py `pcast`,
    `_pcast_funcs`, jax 0.10.2). From the operand's one state over every named axis
    (`state_of`): invarying -> varying (pvary), invarying -> reduced (preduced),
    varying -> unreduced (vary_unreduced_cast), reduced -> varying (reduced_vary_cast);
    any other pair is "Unsupported pcast". With check_vma=False every axis is invarying
    to jax (nothing is tracked): to='varying' and 'reduced' are identities, 'unreduced'
    is unsupported."""

    kind = "pcast"

    TRANSITIONS = (("invarying", "varying"), ("invarying", "reduced"), ("varying", "unreduced"), ("reduced", "varying"))

    def check_params(self, ins: list[ValueType], ctx: Ctx) -> None:
        to = ctx.op.p("to")
        if to == "varying" and ctx.op.p("repair"):
            # a known entry's repair (oracles/rewrites.py vary_after): jax types the operand
            # invariant along axes the oracle says it varies along; the identity here
            return
        if to not in ("varying", "reduced", "unreduced"):
            raise ctx.fail(ErrorKind.COLLECTIVE_PARAM, f"pcast: to={to!r} is not one of varying, reduced, unreduced", "to")
        axes = self.axes(ctx)
        frm = state_of(ins[0], axes, ctx)
        if (frm, to) not in self.TRANSITIONS:
            # no facts: jax 0.10.2 says only "Unsupported pcast from=varying,
            # to='varying'", without the axis. Naming it would be nicer, but nothing
            # documents that it must, so a missing axis is message quality, not a
            # divergence: the error's kind and phrase are what is checked (a decision
            # recorded with the known-divergence audit)
            raise ctx.fail(ErrorKind.COLLECTIVE_VMA, f"pcast(to={to!r}) over {axes}: the operand is {frm} over them")

    def vma(self, ins: list[ValueType], ctx: Ctx) -> frozenset[str]:
        axes = frozenset(self.axes(ctx))
        v = vma_of(ins)
        return v - axes if ctx.op.p("to") == "unreduced" else v | axes if ctx.op.p("to") == "varying" else v

    def ur(self, ins: list[ValueType], ctx: Ctx) -> tuple[frozenset[str], frozenset[str]]:
        axes, x, to = frozenset(self.axes(ctx)), ins[0], ctx.op.p("to")
        if to == "unreduced":
            return x.unreduced | axes, x.reduced
        if to == "reduced":
            return x.unreduced, x.reduced | axes
        return x.unreduced, x.reduced - axes

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        return xs[0]


class RaggedAllToAll(Collective):
    """ragged_all_to_all(operand, output, input_offsets, send_sizes, output_offsets,
    recv_sizes): sender j writes operand_j[input_offsets_j[i] : + send_sizes_j[i]] into
    device i's copy of `output` at output_offsets_j[i] (parallel.py docstring). The
    result has the output's shape and dtype; it holds data received from every device of
    the group, so it varies over the named axes (jax 0.10.2 types it as the output
    buffer alone; see known_divergences.toml). Values: one offset/size per peer."""

    kind = "ragged_all_to_all"

    def check_params(self, ins: list[ValueType], ctx: Ctx) -> None:
        for name, t in zip(("input_offsets", "send_sizes", "output_offsets", "recv_sizes"), ins[2:]):
            if t.dtype != "int32":
                raise ctx.fail(ErrorKind.COLLECTIVE_PARAM, f"ragged_all_to_all: {name} must be integer type", name)
            if len(t.shape) != 1 or t.shape[0] < 1:
                raise ctx.fail(
                    ErrorKind.COLLECTIVE_PARAM, f"ragged_all_to_all: {name} must be rank 1 with positive size, got {t.shape}", name
                )

    def shape(self, ins: list[ValueType], ctx: Ctx) -> tuple[int, ...]:
        return ins[1].shape

    def dtype(self, ins: list[ValueType], ctx: Ctx) -> str:
        return ins[1].dtype

    def vma(self, ins: list[ValueType], ctx: Ctx) -> frozenset[str]:
        return vma_of(ins[:2]) | frozenset(self.axes(ctx))

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        operand, output, in_off, send, out_off, _recv = (self.grouped(x, ctx) for x in xs)
        n = operand.shape[0]
        if in_off.shape[-1] != n:
            raise NotImplementedError("ragged_all_to_all values: one offset/size per peer only")
        result = output.copy()
        rest = operand.shape[1 : self.lo(ctx)]
        for r in np.ndindex(*rest):
            for j in range(n):  # sender
                for i in range(n):  # receiver
                    a, s, b = int(in_off[(j, *r, i)]), int(send[(j, *r, i)]), int(out_off[(j, *r, i)])
                    result[(i, *r)][b : b + s] = operand[(j, *r)][a : a + s]
        return self.ungrouped(result, ctx)

    def error(self, xs: list[np.ndarray], errs: list[np.ndarray], v: np.ndarray, ins: list[ValueType], ctx: Ctx) -> ErrorTerms:
        """Rows move, nothing is rounded: the operand's and output's errors, moved by the
        (integer, exact) offsets and sizes."""
        return self.value([errs[0], errs[1], *xs[2:]], ins, ctx), 0.0, 1


class AxisSize(Collective):
    """axis_size(axes): the number of devices in the group, the product of the named
    axes' sizes for a tuple (parallel.py docstring, jax 0.10.2: `psum(1, axes)`, a Python
    int that jax types as a weak int32 scalar, a weak int64 under jax_enable_x64, measured
    on jax 0.10.2). The same on every device: invariant."""

    kind = "axis_size"

    def shape(self, ins: list[ValueType], ctx: Ctx) -> tuple[int, ...]:
        return ()

    def dtype(self, ins: list[ValueType], ctx: Ctx) -> str:
        return "int64" if ctx.x64 else "int32"

    def vma(self, ins: list[ValueType], ctx: Ctx) -> frozenset[str]:
        return frozenset()

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        return np.full(tuple(ctx.mesh.sizes), self.n(ctx), dtype=np.int64 if ctx.x64 else np.int32)
