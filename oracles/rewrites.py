"""Semantics-preserving rewrites: the same program without a form jax gets wrong.

A known jax divergence (harness/data/known_divergences.toml) may name one of these. The
program that shows the bug is reported as known for what the bug causes, and its
rewrite, which means exactly the same thing by the oracle's rules, is then checked in
every mode like any other program: everything else the program does is still checked.

Each rewrite takes a program and the body ops an entry's bug is at (`sites`: the ops its
features hold on; a rewrite that recognises its form by itself rewrites every instance)
and returns the rewritten program, or None when it has nothing to rewrite. They use the
oracle's own shape and type rules (an axis is canonicalised against the operand rank the
oracle computes; a retyping names the axes the oracle says the value varies along), so a
rewrite cannot disagree with the oracle about what the program means.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import cast

import numpy as np

from oracles.explicit import free_placed
from oracles.interpreter import trace
from oracles.prediction import ValueType
from programs.model import Input, Op, ParamValue, Program, Spec


def _ranks(p: Program) -> list[int]:
    """The rank of every value the oracle types: all of them, or for an invalid program
    those made before its error (every one where the error is in the out_specs)."""
    st, _ = trace(p, with_values=False)
    return [len(t.shape) for t in st.types]


def _with(op: Op, **params: ParamValue) -> Op:
    return Op.make(op.kind, op.operands, **{**op.param_dict, **params})


def nonnegative_axes(p: Program, sites: frozenset[int] | None = None) -> Program | None:
    """psum_scatter's scatter_dimension, all_to_all's split_axis / concat_axis and pswapaxes'
    axis, when
    negative, become their non-negative equivalents (axis % rank of the operand).
    jax 0.10.2 forwards these unnormalised (jax-ml/jax#20125, #19720).

    An invalid program is rewritten too, where the oracle types the operand (its error
    comes later) and the axis is in range (-rank <= axis < 0): an out-of-range axis is
    the defect itself, and stays. Its rewrite fails the same way without the crash (eager
    can segfault at a negative split_axis, and the program sliced without that op would
    be valid, so the other ops' cells by error would never be checked there)."""
    ranks = _ranks(p)
    body, changed = list(p.body), False
    for i, op in enumerate(p.body):
        if sites is not None and i not in sites:
            continue
        keys = {"psum_scatter": ("scatter_dimension",), "all_to_all": ("split_axis", "concat_axis"),
                # (pswapaxes binds all_to_all with its axis as both)
                "pswapaxes": ("axis",)}.get(op.kind, ())
        r = ranks[op.operands[0]] if op.operands and op.operands[0] < len(ranks) else 0
        fixed = {k: int(op.p(k)) % r for k in keys  # type: ignore[arg-type]
                 if isinstance(op.p(k), int) and -r <= int(op.p(k)) < 0}  # type: ignore[arg-type]
        if fixed:
            body[i], changed = _with(op, **fixed), True
    return replace(p, body=tuple(body)) if changed else None


def _renumber(index: int, listed: tuple[str, ...], ordered: tuple[str, ...], sizes: dict[str, int]) -> int:
    """A device's index in a group numbered over `listed` (major first) -> its index in
    the same group numbered over `ordered`."""
    coords = dict(zip(listed, np.unravel_index(index, [sizes[a] for a in listed])))
    return int(np.ravel_multi_index([coords[a] for a in ordered], [sizes[a] for a in ordered]))


def mesh_order_axes(p: Program, sites: frozenset[int] | None = None) -> Program | None:
    """ppermute / pshuffle over a tuple of axes listed out of mesh order: the axes in
    mesh order, with every perm index renumbered so the same devices exchange data
    (the perm's indices are axis_index values over the listed axes, major first)."""
    sizes = p.mesh.shape
    body, changed = list(p.body), False
    for i, op in enumerate(p.body):
        if op.kind not in ("ppermute", "pshuffle") or (sites is not None and i not in sites):
            continue
        listed = tuple(cast("tuple[str, ...]", op.p("axes")))
        ordered = tuple(sorted(listed, key=p.mesh.names.index))
        if listed == ordered or any(a not in sizes for a in listed):
            continue

        def new(k: int, listed: tuple[str, ...] = listed, ordered: tuple[str, ...] = ordered) -> int:
            return _renumber(k, listed, ordered, sizes)

        if op.kind == "ppermute":
            pairs = cast("tuple[tuple[int, int], ...]", op.p("perm"))
            perm: ParamValue = tuple(sorted((new(int(s)), new(int(d))) for s, d in pairs))
        else:  # out[i] = x[perm[i]]  ->  out[new(i)] = x[new(perm[i])]
            old = [int(x) for x in cast("tuple[int, ...]", op.p("perm"))]
            shuffled = [0] * len(old)
            for k, src in enumerate(old):
                shuffled[new(k)] = new(src)
            perm = tuple(shuffled)
        body[i], changed = _with(op, axes=ordered, perm=perm), True
    return replace(p, body=tuple(body)) if changed else None


def passed_closures(p: Program, sites: frozenset[int] | None = None) -> Program | None:
    """Values the body closes over (a value of the called function, or a NumPy constant:
    programs/model.py `CLOSURES`), given to the shard_map as arguments instead, with
    in_spec P(): the same value on every device, invariant along every manual axis (an
    outer value keeps its derivative; a constant becomes one more argument, the outputs'
    values unchanged)."""
    if not any(x.closure is not None for x in p.inputs):
        return None
    return replace(p, inputs=tuple(replace(x, closure=None) for x in p.inputs))


def without_effects(p: Program, sites: frozenset[int] | None = None) -> Program | None:
    """The program without its jax.debug.callback / print effects (they change no value
    and no type: the outputs are the same)."""
    return replace(p, effects=()) if p.effects else None


def committed_placements(p: Program, sites: frozenset[int] | None = None) -> Program | None:
    """Arguments `jax.device_put` inside the call, committed to the same sharding before it
    instead (programs/model.py `Place`: jax reshards each to its in_spec either way)."""
    if not any(x.place is not None and x.place.how == "device_put" for x in p.inputs):
        return None
    return replace(p, inputs=tuple(replace(x, place=replace(x.place, how="committed"))
                                   if x.place is not None and x.place.how == "device_put" else x for x in p.inputs))


def without_free_explicit(p: Program, sites: frozenset[int] | None = None) -> Program | None:
    """Each argument placed over an Explicit axis the shard_map leaves free, placed without
    that axis (jax reshards it to its in_spec either way: the values are the same; its
    sharding no longer joins the body's types, oracles/explicit.py `free_shardings`)."""
    if not free_placed(p):
        return None
    free = {a for a in p.explicit_axes if a not in p.manual_axes}

    def strip(x: Input) -> Input:
        if x.place is None or x.place.how == "scalar":
            return x
        s = x.place.spec
        return replace(x, place=replace(x.place, spec=Spec(tuple(tuple(a for a in e if a not in free) or None if e else None
                                                                for e in s.entries))))

    return replace(p, inputs=tuple(strip(x) for x in p.inputs))


def unwrap(p: Program, sites: frozenset[int] | None = None) -> Program | None:
    """Each op of `sites` (by default every op) that runs inside a wrapper of the same
    meaning (`wrap`: scan, cond, switch, while, fori, map, vmap, checkpoint; programs/ops.py
    WRAP_SOURCE) run as itself: the oracle gives the wrapper no meaning, so the program
    means the same; jax's batching rules of the wrappers under vmap with spmd_axis_name
    are what the known entries say goes wrong."""
    body, changed = list(p.body), False
    for i, op in enumerate(p.body):
        if op.p("wrap") is None or (sites is not None and i not in sites):
            continue
        body[i] = Op.make(op.kind, op.operands, **{k: v for k, v in op.param_dict.items() if k != "wrap"})
        changed = True
    return replace(p, body=tuple(body)) if changed else None


# The varying axes jax 0.10.2 gives the results it types wrongly, from the oracle's types
# of the operands (`vmas`) and the op: the typing bugs of the known entries
# (harness/data/known_divergences.toml). A grouped pmax / pmin is typed as the reduction over
# the whole axis (invariant over its axes, parallel.py _psum_invariant_abstract_eval);
# precv as out_shape alone (no varying axes, _precv_abstract_eval); ragged_all_to_all as
# its output buffer (_ragged_all_to_all_effectful_abstract_eval).
JAX_TYPED_VMA: dict[str, Callable[[Op, list[frozenset[str]]], frozenset[str]]] = {
    "pmax": lambda op, vmas: vmas[0] - frozenset(op.p("axes") or ()),  # type: ignore[arg-type]
    "pmin": lambda op, vmas: vmas[0] - frozenset(op.p("axes") or ()),  # type: ignore[arg-type]
    "sendrecv": lambda op, vmas: frozenset(),
    "ragged_all_to_all": lambda op, vmas: vmas[1] if len(vmas) > 1 else frozenset(),
}


def _insert_after(p: Program, i: int, new: Op) -> Program:
    """`p` with `new` (reading op i's result) right after body op i, every later reader
    of op i's result (ops and outputs) reading `new`'s instead, later values renumbered."""
    n_in = len(p.inputs)
    v = n_in + i

    def moved(x: int) -> int:
        return v + 1 if x == v else x + 1 if x > v else x

    body = [*p.body[: i + 1], new, *(replace(op, operands=tuple(moved(x) for x in op.operands)) for op in p.body[i + 1:])]
    return replace(p, body=tuple(body), outputs=tuple(moved(o) for o in p.outputs))


def vary_after(p: Program, sites: frozenset[int] | None = None) -> Program | None:
    """After each op of `sites` (by default every op of a kind in JAX_TYPED_VMA) whose
    result varies along manual axes that jax types it invariant over, a
    `jax.lax.pcast(v, axes, to='varying')` over those axes: jax then types the value as
    the oracle does, and every op after it is checked against the documented semantics.
    The pcast is marked `repair=True`: the oracle, whose types already say the value
    varies along those axes, treats it as the identity (types and values unchanged);
    jax, which types the value invariant there, accepts it. Only with check_vma=True
    (without it jax tracks no varying axes). An op already followed by such a repair is
    left alone."""
    if not p.check_vma:
        return None
    st, _ = trace(p, with_values=False)
    types = st.types
    n_in = len(p.inputs)
    order = {a: k for k, a in enumerate(p.mesh.names)}
    q, shift = p, 0
    for i, op in enumerate(p.body):
        if op.kind not in JAX_TYPED_VMA or (sites is not None and i not in sites) or n_in + i >= len(types):
            continue
        if any(o.kind == "pcast" and o.p("repair") and o.operands == (n_in + i,) for o in p.body):
            continue
        vmas = [types[x].vma or frozenset() for x in op.operands if x < len(types)]
        want = types[n_in + i].vma
        if want is None or len(vmas) < len(op.operands):
            continue
        missing = tuple(sorted((want - JAX_TYPED_VMA[op.kind](op, vmas)) & set(p.manual_axes), key=order.__getitem__))
        if not missing:
            continue
        q = _insert_after(q, i + shift, Op.make("pcast", (n_in + i + shift,), axes=missing, to="varying", repair=True))
        shift += 1
    return q if shift else None


def _as_local(op: Op, x: ValueType) -> tuple[Op, ...] | None:
    """The local ops (the first reading value -1, each later one the one before it, value -2
    the operand) that mean what an untiled all_gather or psum_scatter over no axes (a
    group of one) does to an operand of type `x`, or None for another op."""
    r = len(x.shape)
    if op.kind == "all_gather" and not op.p("axes") and not op.p("tiled") and op.p("to") != "reduced":
        # a new dimension of size 1 at `axis`: x * ones((1,) * (rank + 1)), whose new
        # leading dimension a transpose then moves to `axis` (x * 1 is x in every dtype)
        a = int(op.p("axis")) % (r + 1)  # type: ignore[arg-type]
        steps = [Op.make("const", (), shape=(1,) * (r + 1), dtype=x.dtype, value=1), Op.make("mul", (-2, -1))]
        if a:
            steps.append(Op.make("transpose", (-1,), perm=(*range(1, a + 1), 0, *range(a + 1, r + 1))))
        return tuple(steps)
    if op.kind == "psum_scatter" and not op.p("axes") and not op.p("tiled"):
        # the scatter dimension (of size 1) removed: the sum over it, in x's dtype (jnp.sum
        # sums narrow integers and bool in a wider type; one term, so the cast back is exact)
        d = int(op.p("scatter_dimension")) % r  # type: ignore[arg-type]
        return Op.make("reduce_sum", (-2,), axis=d), Op.make("cast", (-1,), dtype=x.dtype)
    return None


def local_empty_axes(p: Program, sites: frozenset[int] | None = None) -> Program | None:
    """An untiled all_gather or psum_scatter over no axes, a group of one, as the local ops
    that mean the same (`_as_local`): the same shape, dtype, varying axes and values. jax
    0.10.2 returns the operand itself for both (jax-ml/jax#19720: 'if not axis_name: return
    x' before the untiled shape rule), so the ops after them read the wrong shape;
    rewritten, those ops are checked against the documented semantics. Only where the
    oracle types the op and its operand is neither reduced nor unreduced."""
    st, _ = trace(p, with_values=False)
    types = st.types
    n_in = len(p.inputs)
    q, shift = p, 0
    for i, op in enumerate(p.body):
        if (sites is not None and i not in sites) or n_in + i >= len(types) or not op.operands:
            continue
        x = types[op.operands[0]]
        steps = None if x.reduced or x.unreduced else _as_local(op, x)
        if not steps:
            continue
        j = i + shift  # op i's place in q; each step takes the place after the one before
        for k, step in enumerate(steps):
            at = n_in + j + k  # the value this step makes
            step = replace(step, operands=tuple(op.operands[0] if o == -2 else at - 1 if o == -1 else o for o in step.operands))
            if k == 0:
                q = replace(q, body=(*q.body[:j], step, *q.body[j + 1:]))
            else:
                q = _insert_after(q, j + k - 1, step)
        shift += len(steps) - 1
    return q if q is not p else None


REWRITES: dict[str, Callable[[Program, frozenset[int] | None], Program | None]] = {
    "nonnegative_axes": nonnegative_axes,
    "mesh_order_axes": mesh_order_axes,
    "vary_after": vary_after,
    "local_empty_axes": local_empty_axes,
    "unwrap": unwrap,
    # (how a program meets its shard_map: programs/model.py)
    "passed_closures": passed_closures,
    "without_effects": without_effects,
    "committed_placements": committed_placements,
    "without_free_explicit": without_free_explicit,
}
