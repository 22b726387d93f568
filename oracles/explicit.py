"""Explicit meshes and reduced / unreduced values: the checks and types they add
(jax 0.10.2 `jax/_src/shard_map.py` `_shard_map` (the in_specs-vs-argument check),
`_check_unreduced`, `_shard_shaped_array`, `_unshard_shaped_array`; docs/notebooks/
explicit-sharding.md "sharding in types"; `jax.typeof(out)` shows `float32[8@x,4]`).

- Under a mesh whose every axis is Explicit, with every axis manual, each in_spec (padded
  to its argument's rank) must be the argument's own sharding: a NumPy argument (or a
  Python scalar) is unsharded (P()), so a split in_spec needs `jax.sharding.reshard`
  first; one placed (`programs.model.Place`: committed, device_put or reshard to a
  NamedSharding) has that sharding's Explicit axes, and must be placed by the in_spec.
- Outside the body, `jax.typeof(out).sharding.spec` shows the out_spec's Explicit axes
  (Auto axes are not part of the type) and its unreduced / reduced axes.
- A spec's unreduced / reduced axes are allowed only when every mesh axis is manual and
  each of them is Explicit; an out_spec's must be exactly the output's (with check_vma).
"""

from __future__ import annotations

from oracles.prediction import ErrorKind, OracleError, PredictedError, ValueType
from programs.model import Op, Program, Spec

ShardingType = tuple[tuple[tuple[str, ...], ...], tuple[str, ...], tuple[str, ...]]
FreeSharding = tuple[tuple[str, ...], ...]  # per dimension, the free Explicit axes a value is split over


def _fail(kind: ErrorKind, why: str, *facts: str, output: int | None = None) -> OracleError:
    return OracleError(PredictedError(kind, tuple(facts), why, output=output))


def check_unreduced_specs(p: Program, specs: tuple[Spec, ...], which: str) -> None:
    """`_check_unreduced`: unreduced/reduced only in full manual mode and over Explicit
    axes (NotImplementedError for partial manual, ValueError for an Auto axis)."""
    explicit = set(p.explicit_axes)
    for i, s in enumerate(specs):
        if not (s.unreduced or s.reduced):
            continue
        if set(p.manual_axes) != set(p.mesh.names):
            raise _fail(ErrorKind.UNSUPPORTED, f"{which}[{i}]={s!r}: unreduced/reduced only in full manual mode", "full manual")
        for key, axes in (("unreduced", s.unreduced), ("reduced", s.reduced)):
            auto = [a for a in axes if a not in explicit]
            if auto:
                raise _fail(
                    ErrorKind.UNREDUCED_TYPE,
                    f"{which}[{i}]={s!r}: {key} axes {auto} are not Explicit; make them AxisType.Explicit",
                    key,
                    "Explicit",
                )


def argument_sharding(p: Program, i: int) -> Spec:
    """The sharding argument `i` reaches the shard_map with: its reshard spec, or
    unsharded (a NumPy array), or its explicit_axes in_sharding."""
    if p.reshard:
        return p.reshard_spec(i)
    # explicit_axes(f, in_sharding=) reshards each argument to its spec inside (auto_axes:
    # to its own sharding's axes still Explicit inside: a NumPy argument's P())
    if p.wrap == "explicit_axes":
        return p.wrap_specs[i]
    place = p.inputs[i].place
    if place is not None and place.how != "scalar":
        # committed, device_put or reshard to a NamedSharding: its type is that sharding
        # over the Explicit axes (Auto axes are not part of a type; a Python scalar, like
        # a NumPy array, is unsharded)
        explicit = set(p.explicit_axes)
        return Spec(tuple(tuple(a for a in e if a in explicit) or None if e else None for e in place.spec.entries))
    return Spec(())


def _padded(s: Spec, rank: int) -> tuple[tuple[str, ...] | None, ...]:
    return tuple(s.entries) + (None,) * (rank - len(s.entries))


def check_arg_shardings(p: Program) -> None:
    """Every axis manual and Explicit: each (P) in_spec must equal its argument's
    sharding (ValueError "in_specs passed to shard_map: ... does not match the specs of
    the input")."""
    if not p.mesh.names or set(p.manual_axes) != set(p.mesh.names) or len(p.explicit_axes) != len(p.mesh.names):
        return
    for i, (x, s) in enumerate(zip(p.inputs, p.in_specs)):
        if s.kind != "P" or x.closure is not None:  # (a closed-over value is no argument)
            continue
        arg = argument_sharding(p, i)
        rank = len(x.shape)
        if _padded(s, rank) != _padded(arg, rank) or (s.unreduced, s.reduced) != (arg.unreduced, arg.reduced):
            raise _fail(
                ErrorKind.IN_SPEC_ARG_SHARDING,
                f"in_specs[{i}]={s!r} does not match args[{i}]'s sharding {arg!r} under an all-Explicit mesh; "
                "reshard the argument first (jax.sharding.reshard) or leave in_specs out",
                "does not match",
            )


def check_typed_closures(p: Program) -> None:
    """A value of the called function the body closes over (programs/model.py `CLOSURES`
    "outer") whose type carries an Explicit sharding, even a replicated one (a jax array on
    a mesh with an Explicit axis: resharded, device_put, committed, or donated, which makes
    it a jax array under the mesh context): jax 0.10.2 raises NotImplementedError 'Closing
    over inputs to shard_map where the input is sharded on `Explicit` axes is not
    implemented. As a workaround, please pass those inputs as an argument to shard_map'
    (jax-ml/jax#29162). A NumPy argument traced by jit is untyped: closing over it runs."""
    if "explicit" not in p.outer_mesh().axis_types:
        return
    for i, x in enumerate(p.inputs):
        if x.closure == "outer" and (p.reshard or i in p.donate or (x.place is not None and x.place.how != "scalar")):
            raise _fail(ErrorKind.UNSUPPORTED, f"inputs[{i}] is closed over with an Explicit sharding type; jax does not "
                        "implement that: pass it to the shard_map as an argument", "Explicit")


def check_out_ur(p: Program, out_types: list[ValueType]) -> None:
    """`_unshard_shaped_array` (check_vma): an out_spec's unreduced / reduced axes are
    exactly the output's, after the implicit cast (`add_implicit_pvary_and_unreduced`,
    auto_pcast) of an output varying over axes the out_spec calls unreduced."""
    if not p.check_vma:
        return
    for k, (t, s) in enumerate(zip(out_types, p.out_specs)):
        if s.kind != "P":
            continue
        extra = set(s.unreduced) - t.unreduced
        cast = extra if extra and extra <= (t.vma or frozenset()) else set()
        for key, want, got in (("unreduced", s.unreduced, t.unreduced | cast), ("reduced", s.reduced, t.reduced)):
            if set(want) != set(got):
                raise _fail(
                    ErrorKind.UNREDUCED_TYPE,
                    f"out_specs[{k}]={s!r}: {key}={sorted(want)}, but output {k} is {key} over {sorted(got)}",
                    key,
                    output=k,
                )


def out_sharding(p: Program, k: int, rank: int, free: FreeSharding | None = None) -> ShardingType:
    """What `jax.typeof(out_k).sharding.spec` shows: the out_spec's Explicit axes per
    dimension of the output's rank, then (`free`: the output value's free Explicit
    sharding, `free_shardings`) the free Explicit axes it is split over; and its
    unreduced / reduced axes."""
    s = p.out_specs[k]
    explicit = set(p.explicit_axes)
    dims = tuple(tuple(a for a in e if a in explicit) if e else () for e in _padded(s, rank))
    if free is not None:
        dims = tuple(d + f for d, f in zip(dims, free))
    if p.wrap is None:
        return dims, s.unreduced, s.reduced
    outer = {a for a, t in zip(p.mesh.names, p.outer_mesh().axis_types) if t == "explicit"}
    if p.wrap == "auto_axes":
        # jax 0.10.2 pjit.py `_auto_axes`: the result is `reshard(out, out_sharding)` on
        # the mesh outside, so it is typed by out_sharding (its Explicit axes there)
        w = p.wrap_specs[k]
        return tuple(tuple(a for a in e if a in outer) if e else () for e in _padded(w, rank)), (), ()
    # `_explicit_axes`: reshard(out, modify_spec_for_auto_manual(typeof(out).sharding.spec,
    # outer mesh)): the axes made Explicit only inside leave the type
    keep = lambda axes: tuple(a for a in axes if a in outer)  # noqa: E731
    return tuple(keep(d) for d in dims), keep(s.unreduced), keep(s.reduced)


# ------------------------------------------------------------------ free Explicit axes
#
# Under partial manual, an argument placed (programs/model.py `Place`) over Explicit axes
# the shard_map leaves free keeps that sharding inside the body: jax 0.10.2 types its block
# `float32[4@y,8]{V:x}` (measured: P('y') placement, in_spec P('x'), axis_names={'x'}), and
# every op carries it on as sharding in types does outside shard_map (the Explicit-mesh
# rules, docs/notebooks/explicit-sharding.md): an elementwise op keeps its operands'
# sharding (one operand sharded on a dimension, the other not: the sharded one; the same
# sharding on both: it), reduce_sum drops the summed dimension's, transpose permutes,
# the collectives over manual axes keep every dimension's (a gathered, scattered, split or
# concatenated dimension keeps its free axes: its size changes by the manual group only),
# an untiled all_gather's new dimension is unsharded. An output's type is its out_spec's
# Explicit axes, then the free ones, per dimension (measured: float32[8@(x,y),8]).
# `free_shardings` gives each value's free sharding (per dimension, the free Explicit axes
# it is split over), or None for a value past an op these rules do not cover (the
# strategies draw no free Explicit placement there).


def _free_place(p: Program, i: int, rank: int) -> FreeSharding:
    pl = p.inputs[i].place
    free = {a for a in p.explicit_axes if a not in p.manual_axes}
    if pl is None or pl.how == "scalar" or not free:
        return ((),) * rank
    entries = tuple(pl.spec.entries) + (None,) * (rank - len(pl.spec.entries))
    return tuple(tuple(a for a in e if a in free) if e else () for e in entries[:rank])


def _norm(axis: object, rank: int) -> int:
    assert isinstance(axis, int)
    return axis + rank if axis < 0 else axis


def _elementwise(fs: list[FreeSharding], ranks: list[int], rank: int) -> FreeSharding | None:
    """numpy broadcasting: trailing dimensions aligned; two different non-empty shardings
    of one dimension are a conflict (None)."""
    out: list[tuple[str, ...]] = []
    for d in range(rank):
        got: tuple[str, ...] = ()
        for f, r in zip(fs, ranks):
            k = d - (rank - r)
            if 0 <= k < r and f[k]:
                if got and got != f[k]:
                    return None
                got = f[k]
        out.append(got)
    return tuple(out)


def _free_op(op: Op, ins: list[FreeSharding], in_ranks: list[int], out_rank: int) -> FreeSharding | None:
    """The free sharding of `op`'s result (None: no rule here)."""
    k = op.kind
    if op.p("wrap") in ("vmap", "map"):
        return None  # (an op mapped over a new leading axis: not covered)
    if not ins or k in ("const", "axis_index", "axis_size"):
        return ((),) * out_rank
    x, r = ins[0], in_ranks[0]
    if k in ("neg", "cast", "pcast", "psum", "pmean", "pmax", "pmin", "ppermute", "pshuffle", "psum_scatter"):
        return x if out_rank == r else None
    if k in ("add", "sub", "mul", "max", "min"):
        return _elementwise(ins, in_ranks, out_rank)
    if k == "reduce_sum":
        a = _norm(op.p("axis"), r)
        return x[:a] + x[a + 1:]
    if k == "transpose":
        perm = op.p("perm")
        return tuple(x[int(j)] for j in perm) if isinstance(perm, tuple) else None  # type: ignore[arg-type]
    if k == "all_gather":
        if op.p("tiled"):
            return x
        a = _norm(op.p("axis"), r + 1)
        return x[:a] + ((),) + x[a:]
    if k == "all_to_all" and op.p("tiled"):
        return x
    return None


def free_shardings(p: Program, types: list[ValueType]) -> list[FreeSharding | None]:
    """Each value's free Explicit sharding (see above), as far as `types` go."""
    n_in = len(p.inputs)
    out: list[FreeSharding | None] = [_free_place(p, i, len(types[i].shape)) for i in range(min(n_in, len(types)))]
    for j, op in enumerate(p.body):
        v = n_in + j
        if v >= len(types):
            break
        ins = [out[o] for o in op.operands]
        if any(f is None for f in ins):
            out.append(None)
            continue
        f = _free_op(op, [i for i in ins if i is not None], [len(types[o].shape) for o in op.operands], len(types[v].shape))
        if f is not None and any(a and types[v].shape[d] % _group(p, a) for d, a in enumerate(f)):
            f = None  # (a block that the free axes do not divide: not covered)
        out.append(f)
    return out


def _group(p: Program, axes: tuple[str, ...]) -> int:
    return p.mesh.group_size(axes)


def free_placed(p: Program) -> bool:
    """Whether an argument is placed over an Explicit axis the shard_map leaves free."""
    free = {a for a in p.explicit_axes if a not in p.manual_axes}
    return bool(free) and any(x.place is not None and x.place.how != "scalar" and set(x.place.spec.axes()) & free
                              for x in p.inputs)
