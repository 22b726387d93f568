"""Ops about the device and its types: axis_index, pcast, ragged_all_to_all and the
nested shard_map (jax 0.10.2 `jax/_src/lax/parallel.py`, `jax/_src/shard_map.py`)."""

from __future__ import annotations

import numpy as np

from oracles.devices import assemble_local, group_index, split_local
from oracles.ops.base import Collective, Ctx, ErrorTerms, OpDef, state_of, vma_of
from oracles.prediction import ErrorKind, ValueType


class AxisIndex(Collective):
    """axis_index(axes): the device's index in its group, major axis first; int32 scalar
    varying over the named axes."""

    kind = "axis_index"

    def shape(self, ins: list[ValueType], ctx: Ctx) -> tuple[int, ...]:
        return ()

    def dtype(self, ins: list[ValueType], ctx: Ctx) -> str:
        return "int32"

    def vma(self, ins: list[ValueType], ctx: Ctx) -> frozenset[str]:
        return frozenset(self.axes(ctx))

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        return group_index(ctx.mesh, self.axes(ctx)).astype(np.int32)


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


class NestedShardMap(OpDef):
    """A shard_map inside the body over `inner_axes`, axes the outer one left automatic
    (partial manual), with the mesh from context: each device's block is split again by
    `in_spec` over the inner axes, the inner op runs with the outer manual axes plus the
    inner ones manual, and `out_spec` concatenates the results back; the inner axes are
    automatic again afterwards, so the result does not vary over them (the out_spec must
    name every inner axis the inner result varies over).

    Without an in_spec the call leaves in_specs out, and jax infers them from the
    operand's sharding type (jax 0.10.2 `jax.shard_map`'s docstring: "If ``Infer``, all
    mesh axes must be of type `Explicit`"; `_shmap_checks` raises TypeError otherwise,
    before anything else of the nested call): every inner axis must be Explicit, and the
    operand, a body value no spec splits over an axis the outer call leaves free, is
    replicated over them, so the inferred in_spec splits nothing (measured on 0.10.2:
    psum over the inner axis of the whole block, n times it)."""

    kind = "shard_map"

    def _entries(self, ctx: Ctx, key: str) -> tuple[tuple[str, ...] | None, ...]:
        if ctx.op.p(key) is None:  # (in_spec left out: inferred, the operand's type replicated)
            return ()
        return ctx.op.spec_param(key).entries

    def _inner(self, ins: list[ValueType], ctx: Ctx) -> tuple[OpDef, Ctx, ValueType]:
        axes = tuple(ctx.op.p("inner_axes"))  # type: ignore[arg-type]
        manual = tuple(a for a in ctx.mesh.names if a in ctx.manual or a in axes)
        op = ctx.op.inner_op()
        ictx = Ctx(ctx.mesh, manual, ctx.check_vma, ctx.op_index, op, ctx.rounding, ctx.x64)
        ent = self._entries(ctx, "in_spec")
        x = ins[0]
        local = tuple(n // ctx.mesh.group_size(ent[d]) if d < len(ent) and ent[d] else n for d, n in enumerate(x.shape))
        vma = None if x.vma is None else x.vma | {a for e in ent if e for a in e}
        from oracles.ops import OPS  # the table of every kind (this module is in it)

        return OPS[op.kind], ictx, ValueType(local, x.dtype, frozenset(vma) if vma is not None else None)

    def check(self, ins: list[ValueType], ctx: Ctx) -> None:
        axes = tuple(ctx.op.p("inner_axes"))  # type: ignore[arg-type]
        for a in axes:
            if a not in ctx.mesh.names or a in ctx.manual:
                raise ctx.fail(ErrorKind.UNBOUND_AXIS, f"nested shard_map over {a!r}, which is not an automatic axis here", a)
        auto = [a for a in axes if ctx.mesh.axis_type(str(a)) != "explicit"]
        if ctx.op.p("in_spec") is None and auto:
            raise ctx.fail(ErrorKind.SPEC_TYPE, f"nested shard_map: in_specs left out, but its axes {auto} are not Explicit: "
                           "jax infers in_specs only over Explicit axes; pass in_specs=P(...)", "in_specs")
        ent = self._entries(ctx, "in_spec")
        for d, e in enumerate(ent):
            if e and (d >= len(ins[0].shape) or ins[0].shape[d] % ctx.mesh.group_size(e)):
                raise ctx.fail(ErrorKind.IN_SPEC_DIVISIBILITY, f"nested shard_map: in_spec {ent} does not divide {ins[0].shape}")
        d, ictx, t = self._inner(ins, ctx)
        d.check([t], ictx)
        if ctx.check_vma:
            out_vma = d.vma([t], ictx)
            named = {a for e in self._entries(ctx, "out_spec") if e for a in e}
            missing = sorted((out_vma & set(axes)) - named)
            if missing:
                raise ctx.fail(ErrorKind.OUT_SPEC_REPLICATION, f"nested shard_map: the inner result varies over {missing}", *missing)

    def shape(self, ins: list[ValueType], ctx: Ctx) -> tuple[int, ...]:
        d, ictx, t = self._inner(ins, ctx)
        small = d.shape([t], ictx)
        out = self._entries(ctx, "out_spec")
        return tuple(n * ctx.mesh.group_size(out[k]) if k < len(out) and out[k] else n for k, n in enumerate(small))

    def dtype(self, ins: list[ValueType], ctx: Ctx) -> str:
        d, ictx, t = self._inner(ins, ctx)
        return d.dtype([t], ictx)

    def vma(self, ins: list[ValueType], ctx: Ctx) -> frozenset[str]:
        d, ictx, t = self._inner(ins, ctx)
        return d.vma([t], ictx) - frozenset(ctx.op.p("inner_axes"))  # type: ignore[arg-type]

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        d, ictx, t = self._inner(ins, ctx)
        y = d.value([split_local(xs[0], ctx.mesh, self._entries(ctx, "in_spec"))], [t], ictx)
        return assemble_local(y, ctx.mesh, self._entries(ctx, "out_spec"))

    def rounds_integers(self, ins: list[ValueType], ctx: Ctx) -> bool:
        d, ictx, t = self._inner(ins, ctx)
        return d.rounds_integers([t], ictx)

    def error(self, xs: list[np.ndarray], errs: list[np.ndarray], v: np.ndarray, ins: list[ValueType], ctx: Ctx) -> ErrorTerms:
        """The inner op's error terms on the split blocks, put back by the out_spec."""
        d, ictx, t = self._inner(ins, ctx)
        ent_in, ent_out = self._entries(ctx, "in_spec"), self._entries(ctx, "out_spec")
        x, e = split_local(xs[0], ctx.mesh, ent_in), split_local(errs[0], ctx.mesh, ent_in)
        y = d.value([x], [t], ictx)
        prop, mag, terms = d.error([x], [e], y, [t], ictx)
        full = [assemble_local(np.broadcast_to(np.asarray(a, dtype=np.float64), y.shape).copy(), ctx.mesh, ent_out) for a in (prop, mag)]
        return full[0], full[1], terms


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
