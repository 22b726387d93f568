"""Semantics-preserving rewrites: the same program without a form jax gets wrong.

A known jax divergence (reports/known_divergences.toml) may name one of these. The
program that shows the bug is reported as known for what the bug causes, and its
rewrite, which means exactly the same thing by the oracle's rules, is then checked in
every mode like any other program: everything else the program does is still checked.

Each rewrite takes a program and returns the rewritten program, or None when it has
nothing to rewrite. They use the oracle's own shape rules (an axis is canonicalised
against the operand rank the oracle computes), so a rewrite cannot disagree with the
oracle about what the program means.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from oracles.interpreter import trace
from programs.model import Op, ParamValue, Program


def _ranks(p: Program) -> list[int]:
    """The rank of every value the oracle types: all of them, or for an invalid program
    those made before its error (every one where the error is in the out_specs)."""
    st, _ = trace(p, with_values=False)
    return [len(t.shape) for t in st.types]


def _with(op: Op, **params: ParamValue) -> Op:
    return Op.make(op.kind, op.operands, **{**op.param_dict, **params})


def nonnegative_axes(p: Program) -> Program | None:
    """psum_scatter's scatter_dimension, all_to_all's split_axis / concat_axis and pswapaxes'
    axis, when
    negative, become their non-negative equivalents (axis % rank of the operand).
    jax 0.10.2 forwards these unnormalised (jax-ml/jax#20125, #19720).

    An invalid program is rewritten too, where the oracle types the operand (its error
    comes later) and the axis is in range (-rank <= axis < 0): an out-of-range axis is
    the defect itself, and stays. Its rewrite fails the same way without the crash (fuzz
    seed 0: eager segfaulted at a negative split_axis of an invalid sweep program, and
    the program sliced without that op was valid: its other all_to_alls' cells were
    never checked by error in eager)."""
    ranks = _ranks(p)
    body, changed = list(p.body), False
    for i, op in enumerate(p.body):
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


def mesh_order_axes(p: Program) -> Program | None:
    """ppermute / pshuffle over a tuple of axes listed out of mesh order: the axes in
    mesh order, with every perm index renumbered so the same devices exchange data
    (the perm's indices are axis_index values over the listed axes, major first)."""
    sizes = p.mesh.shape
    body, changed = list(p.body), False
    for i, op in enumerate(p.body):
        if op.kind not in ("ppermute", "pshuffle"):
            continue
        listed = tuple(op.p("axes"))  # type: ignore[arg-type]
        ordered = tuple(sorted(listed, key=p.mesh.names.index))
        if listed == ordered or any(a not in sizes for a in listed):
            continue

        def new(k: int, listed: tuple[str, ...] = listed, ordered: tuple[str, ...] = ordered) -> int:
            return _renumber(k, listed, ordered, sizes)

        if op.kind == "ppermute":
            perm: ParamValue = tuple(sorted((new(int(s)), new(int(d))) for s, d in op.p("perm")))  # type: ignore[union-attr, misc]
        else:  # out[i] = x[perm[i]]  ->  out[new(i)] = x[new(perm[i])]
            old = [int(x) for x in op.p("perm")]  # type: ignore[union-attr]
            shuffled = [0] * len(old)
            for k, src in enumerate(old):
                shuffled[new(k)] = new(src)
            perm = tuple(shuffled)
        body[i], changed = _with(op, axes=ordered, perm=perm), True
    return replace(p, body=tuple(body)) if changed else None


REWRITES: dict[str, Callable[[Program], Program | None]] = {
    "nonnegative_axes": nonnegative_axes,
    "mesh_order_axes": mesh_order_axes,
}
