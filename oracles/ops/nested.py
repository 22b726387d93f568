"""The nested shard_map (kind "shard_map"): a shard_map inside the body over axes the outer
one left automatic (jax 0.10.2 `jax/_src/shard_map.py`). Its inner op is a plain kind
(`programs.ops.NESTED_INNER`), typed and valued by that kind's own class
(oracles/ops/registry.py `PLAIN_OPS`)."""

from __future__ import annotations

from typing import cast

import numpy as np

from oracles.devices import assemble_local, split_local
from oracles.ops.base import Ctx, ErrorTerms, OpDef
from oracles.ops.registry import PLAIN_OPS
from oracles.prediction import ErrorKind, ValueType


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
        return PLAIN_OPS[op.kind], ictx, ValueType(local, x.dtype, frozenset(vma) if vma is not None else None)

    def check(self, ins: list[ValueType], ctx: Ctx) -> None:
        axes = tuple(cast("tuple[str, ...]", ctx.op.p("inner_axes")))
        for a in axes:
            if a not in ctx.mesh.names or a in ctx.manual:
                raise ctx.fail(ErrorKind.UNBOUND_AXIS, f"nested shard_map over {a!r}, which is not an automatic axis here", a)
        auto = [a for a in axes if ctx.mesh.axis_type(str(a)) != "explicit"]
        if ctx.op.p("in_spec") is None and auto:
            raise ctx.fail(ErrorKind.SPEC_TYPE, f"nested shard_map: in_specs left out, but its axes {auto} are not Explicit: "
                           "jax infers in_specs only over Explicit axes; pass in_specs=P(...)", "in_specs")
        ent = self._entries(ctx, "in_spec")
        for dim, e in enumerate(ent):
            if e and (dim >= len(ins[0].shape) or ins[0].shape[dim] % ctx.mesh.group_size(e)):
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
