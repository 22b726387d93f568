"""Lowering a Program to real jax: one table, keyed by op kind.

Each entry turns the op's operands (jax values inside the shard_map body) and its
parameters into the jax call a user would write. A test asserts that this table and the
oracle's op table (`oracles.ops.OPS`) cover exactly the same kinds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from programs.model import Op, ParamValue, Program, Spec


def _axes(op: Op) -> str | tuple[str, ...]:
    axes = tuple(op.p("axes"))  # type: ignore[arg-type]
    return axes[0] if len(axes) == 1 else axes


def _groups(op: Op) -> Any:
    g = op.p("groups")
    return None if g is None else [list(x) for x in g]  # type: ignore[union-attr]


def _lower_table() -> dict[str, Callable[[list[Any], Op], Any]]:
    import jax
    import jax.numpy as jnp

    lax = jax.lax

    def all_gather(a: list[Any], op: Op) -> Any:
        kw: dict[str, ParamValue] = {}
        if op.p("to") is not None:
            kw["to"] = op.p("to")
        return lax.all_gather(a[0], _axes(op), axis=op.p("axis"), tiled=op.p("tiled"), **kw)

    def nested(a: list[Any], op: Op) -> Any:
        inner = op.inner_op()
        fn = table[inner.kind]
        return jax.shard_map(  # no mesh: the one in context (the outer shard_map's)
            lambda b: fn([b], inner),
            in_specs=to_pspec(op.spec_param("in_spec")),
            out_specs=to_pspec(op.spec_param("out_spec")),
            axis_names=set(op.p("inner_axes")),  # type: ignore[arg-type]
            check_vma=bool(op.p("check_vma")),
        )(a[0])

    table: dict[str, Callable[[list[Any], Op], Any]] = {
        "shard_map": nested,
        "const": lambda a, op: jnp.full(tuple(op.p("shape")), op.p("value"), getattr(jnp, str(op.p("dtype")))),  # type: ignore[arg-type]
        "add": lambda a, op: a[0] + a[1],
        "sub": lambda a, op: a[0] - a[1],
        "mul": lambda a, op: a[0] * a[1],
        "max": lambda a, op: jnp.maximum(a[0], a[1]),
        "min": lambda a, op: jnp.minimum(a[0], a[1]),
        "neg": lambda a, op: -a[0],
        "reduce_sum": lambda a, op: jnp.sum(a[0], axis=op.p("axis")),
        "transpose": lambda a, op: jnp.transpose(a[0], tuple(op.p("perm"))),  # type: ignore[arg-type]
        "cast": lambda a, op: a[0].astype(getattr(jnp, str(op.p("dtype")))),
        "psum": lambda a, op: lax.psum(a[0], _axes(op), axis_index_groups=_groups(op)),
        "pmean": lambda a, op: lax.pmean(a[0], _axes(op), axis_index_groups=_groups(op)),
        "pmax": lambda a, op: lax.pmax(a[0], _axes(op), axis_index_groups=_groups(op)),
        "pmin": lambda a, op: lax.pmin(a[0], _axes(op), axis_index_groups=_groups(op)),
        "all_gather": all_gather,
        "psum_scatter": lambda a, op: lax.psum_scatter(
            a[0], _axes(op), scatter_dimension=op.p("scatter_dimension"), tiled=op.p("tiled")
        ),
        "all_to_all": lambda a, op: lax.all_to_all(
            a[0], _axes(op), op.p("split_axis"), op.p("concat_axis"), tiled=op.p("tiled")
        ),
        "ppermute": lambda a, op: lax.ppermute(a[0], _axes(op), perm=[tuple(x) for x in op.p("perm")]),  # type: ignore[union-attr]
        "pshuffle": lambda a, op: lax.pshuffle(a[0], _axes(op), perm=list(op.p("perm"))),  # type: ignore[arg-type]
        "pswapaxes": lambda a, op: lax.pswapaxes(a[0], _axes(op), op.p("axis")),
        "axis_index": lambda a, op: lax.axis_index(_axes(op)),
        "pcast": lambda a, op: lax.pcast(a[0], _axes(op), to=op.p("to")),
        "ragged_all_to_all": lambda a, op: lax.ragged_all_to_all(*a, axis_name=_axes(op)),
    }
    return table


def _wrapped(fn: Callable[[list[Any], Op], Any], wrap: Any) -> Callable[[list[Any], Op], Any]:
    """The op inside lax.scan (a length-1 loop applying it to the carry) or lax.cond
    (both branches apply it): the same meaning, through control flow (programs/ops.py)."""
    if wrap is None:
        return fn
    import jax

    def scanned(a: list[Any], op: Op) -> Any:
        _, ys = jax.lax.scan(lambda c, _: (c, fn([c, *a[1:]], op)), a[0], None, length=1)
        return ys[0]

    def conded(a: list[Any], op: Op) -> Any:
        return jax.lax.cond(True, lambda c: fn([c, *a[1:]], op), lambda c: fn([c, *a[1:]], op), a[0])

    return {"scan": scanned, "cond": conded}[str(wrap)]


_TABLE: dict[str, Callable[[list[Any], Op], Any]] | None = None


def lowering_table() -> dict[str, Callable[[list[Any], Op], Any]]:
    global _TABLE
    if _TABLE is None:
        _TABLE = _lower_table()
    return _TABLE


def to_pspec(s: Spec) -> Any:
    """A program Spec as the object shard_map receives (a P, or the deliberately wrong
    object an invalid program asks for)."""
    from jax.sharding import PartitionSpec as P

    parts = [None if e is None else (e[0] if len(e) == 1 else tuple(e)) for e in s.entries]
    if s.kind == "P":
        return P(*parts)
    if s.kind == "str":
        return parts[0] if parts else ""
    if s.kind == "tuple":
        return tuple(parts)
    return None


def make_body(p: Program, record: Callable[[int, Any], None] | None = None) -> Callable[..., Any]:
    """The shard_map body for `p`. `record(value_index, jax_value)` sees every value as it
    is made (at trace time), so modes can read `jax.typeof` of each."""
    table = lowering_table()
    n_in = len(p.inputs)

    def body(*args: Any) -> tuple[Any, ...]:
        vals = list(args)
        if record is not None:
            for i, v in enumerate(vals):
                record(i, v)
        for i, op in enumerate(p.body):
            v = _wrapped(table[op.kind], op.p("wrap"))([vals[j] for j in op.operands], op)
            vals.append(v)
            if record is not None:
                record(n_in + i, v)
        return tuple(vals[o] for o in p.outputs)

    return body
