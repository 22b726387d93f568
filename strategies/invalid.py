"""Deliberately invalid programs: a valid program plus exactly one named defect.

Each defect is one function that takes the valid program (and construction's view of its
values) and breaks exactly one rule of shard_map, or returns None when the program offers
no place for it. The defect's name is recorded on the program (`Program.defect`) and as a
Hypothesis `event()`. The oracle is never consulted here: it must independently predict
the error (or, for the `*_unchecked` variants, that the program runs).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace

from hypothesis import strategies as st

from programs.model import FLOAT_DTYPES, Mesh, Op, Program, Spec
from strategies import reuse
from strategies.explicit_defects import EXPLICIT_DEFECTS
from strategies.forms import FORM_DEFECTS

UNKNOWN_AXIS = "absent"


@dataclass(frozen=True)
class ValueView:
    """What construction knows about a value: per-device shape, dtype, varying axes."""

    shape: tuple[int, ...]
    dtype: str
    vma: frozenset[str]
    unreduced: frozenset[str] = frozenset()  # (pcast to='unreduced' / 'reduced', all_gather to='reduced')
    reduced: frozenset[str] = frozenset()


Defect = Callable[[st.DrawFn, Program, list[ValueView]], Program | None]


def _pick(draw: st.DrawFn, xs: list, label: str):  # type: ignore[no-untyped-def, type-arg]
    return None if not xs else draw(reuse.sampled_from(xs), label=label)


def _set(t: tuple, i: int, v: object) -> tuple:  # type: ignore[type-arg]
    return t[:i] + (v,) + t[i + 1 :]


def _append(p: Program, ops: list[Op]) -> Program:
    return replace(p, body=p.body + tuple(ops))


def _spec_kind(which: str, kind: str) -> Defect:
    """An in_spec/out_spec that is a bare string, a plain tuple, or None."""

    def defect(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
        specs = p.in_specs if which == "in" else p.out_specs
        i = draw(st.integers(0, len(specs) - 1), label="spec_index")
        s = specs[i]
        axis = s.axes()[0] if s.axes() else draw(reuse.sampled_from(p.mesh.names), label="axis")
        if kind == "str":
            bad = Spec(((axis,),), "str")  # 'x' instead of P('x')
        elif kind == "tuple":
            bad = Spec(s.entries if s.axes() else ((axis,),), "tuple")  # ('x', None) instead of P(...)
        else:
            bad = Spec((), "none")
        return replace(p, in_specs=_set(p.in_specs, i, bad)) if which == "in" else replace(p, out_specs=_set(p.out_specs, i, bad))

    return defect


def _structure(which: str, extra: bool) -> Defect:
    def defect(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
        specs = p.in_specs if which == "in" else p.out_specs
        new = specs + (Spec(()),) if extra else specs[:-1]
        return replace(p, in_specs=new) if which == "in" else replace(p, out_specs=new)

    return defect


def in_spec_too_long(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    i = draw(st.integers(0, len(p.inputs) - 1), label="arg")
    s = p.in_specs[i]
    rank = len(p.inputs[i].shape)
    k = draw(st.integers(rank + 1, rank + 2), label="spec_len")
    return replace(p, in_specs=_set(p.in_specs, i, Spec(s.entries + (None,) * (k - len(s.entries)))))


def out_spec_too_long(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    k = draw(st.integers(0, len(p.outputs) - 1), label="output")
    s = p.out_specs[k]
    rank = len(vals[p.outputs[k]].shape)
    extra: tuple[tuple[str, ...] | None, ...] = (None,) * (rank - len(s.entries))
    unused = [a for a in p.manual_axes if a not in s.axes()]
    last = (draw(reuse.sampled_from(unused), label="axis"),) if unused and draw(st.booleans(), label="named") else None
    return replace(p, out_specs=_set(p.out_specs, k, Spec(s.entries + extra + (last,))))


def in_spec_indivisible(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    spots = [
        (i, d, p.mesh.group_size(e))
        for i, s in enumerate(p.in_specs)
        for d, e in enumerate(s.entries)
        if e and p.mesh.group_size(e) > 1
    ]
    spot = _pick(draw, spots, "dim")
    if spot is None:
        return None
    i, d, n = spot
    x = p.inputs[i]
    size = x.shape[d] + draw(st.integers(1, n - 1), label="remainder")
    return replace(p, inputs=_set(p.inputs, i, replace(x, shape=_set(x.shape, d, size))))


def in_spec_duplicate_axis(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    spots = [(i, d) for i, s in enumerate(p.in_specs) for d, e in enumerate(s.entries) if e]
    spot = _pick(draw, spots, "dim")
    if spot is None:
        return None
    i, d = spot
    s, x = p.in_specs[i], p.inputs[i]
    a = draw(reuse.sampled_from(s.entries[d]), label="axis")  # type: ignore[arg-type]
    d2 = draw(st.integers(0, len(s.entries) - 1), label="second_dim")
    e2 = (s.entries[d2] or ()) + (a,)
    # keep every dimension divisible, so the duplicate is the only defect
    shape = _set(x.shape, d2, x.shape[d2] * p.mesh.axis_size(a))
    return replace(
        p,
        in_specs=_set(p.in_specs, i, Spec(_set(s.entries, d2, e2))),
        inputs=_set(p.inputs, i, replace(x, shape=shape)),
    )


def out_spec_duplicate_axis(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    spots = [(k, d) for k, s in enumerate(p.out_specs) for d, e in enumerate(s.entries) if e]
    spot = _pick(draw, spots, "dim")
    if spot is None:
        return None
    k, d = spot
    s = p.out_specs[k]
    a = draw(reuse.sampled_from(s.entries[d]), label="axis")  # type: ignore[arg-type]
    d2 = draw(st.integers(0, len(s.entries) - 1), label="second_dim")
    return replace(p, out_specs=_set(p.out_specs, k, Spec(_set(s.entries, d2, (s.entries[d2] or ()) + (a,)))))


def _unknown_spec_axis(which: str) -> Defect:
    def defect(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
        specs = p.in_specs if which == "in" else p.out_specs
        rank_of = [len(x.shape) for x in p.inputs] if which == "in" else [len(vals[o].shape) for o in p.outputs]
        spots = [i for i in range(len(specs)) if rank_of[i] > 0]
        i = _pick(draw, spots, "spec_index")
        if i is None:
            return None
        s = specs[i]
        entries = s.entries + (None,) * (rank_of[i] - len(s.entries))
        d = draw(st.integers(0, rank_of[i] - 1), label="dim")
        new = Spec(_set(entries, d, (entries[d] or ()) + (UNKNOWN_AXIS,)))
        return replace(p, in_specs=_set(p.in_specs, i, new)) if which == "in" else replace(p, out_specs=_set(p.out_specs, i, new))

    return defect


def _collective_over(draw: st.DrawFn, p: Program, vals: list[ValueView], axis: str) -> Op:
    kind = draw(reuse.sampled_from(["psum", "pmax", "all_gather", "ppermute", "axis_index", "psum_scatter"]), label="kind")
    j = draw(st.integers(0, len(vals) - 1), label="operand")
    if kind == "all_gather":
        return Op.make(kind, (j,), axes=(axis,), axis=0, tiled=False)
    if kind == "ppermute":
        return Op.make(kind, (j,), axes=(axis,), perm=((0, 0),))
    if kind == "axis_index":
        return Op.make(kind, (), axes=(axis,))
    if kind == "psum_scatter":
        return Op.make(kind, (j,), axes=(axis,), scatter_dimension=0, tiled=True)
    return Op.make(kind, (j,), axes=(axis,))


def collective_unknown_axis(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    return _append(p, [_collective_over(draw, p, vals, UNKNOWN_AXIS)])


def collective_not_manual(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    """axis_names leaves out one mesh axis the program never uses; a collective names it."""
    used = {a for s in p.in_specs + p.out_specs for a in s.axes()}
    used |= {a for op in p.body for k in ("axes", "inner_axes") for a in (op.p(k) or ())}  # type: ignore[union-attr]
    free = [a for a in p.mesh.names if a not in used]
    if free and len(p.mesh.names) >= 2:
        a = draw(reuse.sampled_from(free), label="auto_axis")
    else:
        # add an axis the program never uses (size 2 where the devices allow, else 1)
        a = "extra"
        size = 2 if p.mesh.size * 2 <= 8 and draw(st.booleans(), label="extra_size") else 1
        mesh = Mesh(p.mesh.names + (a,), p.mesh.sizes + (size,), p.mesh.axis_types + ("auto",))
        p = replace(p, mesh=mesh)
    # (the axes the program left automatic stay so: a nested shard_map over one of them
    # would otherwise become a second error)
    manual = tuple(n for n in p.mesh.names if n != a and (p.axis_names is None or n in p.axis_names))
    if not manual:
        return None
    q = replace(p, axis_names=manual)
    return _append(q, [_collective_over(draw, p, vals, a)])


def _drop_varying_axis(check_vma: bool) -> Defect:
    def defect(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
        spots = [k for k, o in enumerate(p.outputs) if vals[o].vma and p.out_specs[k].axes()]
        k = _pick(draw, spots, "output")
        if k is None or not p.check_vma:
            return None
        s = p.out_specs[k]
        a = draw(reuse.sampled_from(sorted(vals[p.outputs[k]].vma & set(s.axes()))), label="axis")
        entries = tuple(None if e is None else (tuple(x for x in e if x != a) or None) for e in s.entries)
        return replace(p, out_specs=_set(p.out_specs, k, Spec(entries)), check_vma=check_vma)

    return defect


def collective_mixed_vma(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    """psum / pmean / psum_scatter over two axes of an operand varying over only one of
    them, or pcast(to='varying') over an axis it already varies along."""
    if not p.check_vma or len(p.manual_axes) < 2:
        return None
    a, b = draw(reuse.permutations(list(p.manual_axes)), label="axes")[:2]
    base = len(p.inputs) + len(p.body)
    kind = draw(reuse.sampled_from(["psum", "psum_scatter", "pmean", "pcast"]), label="kind")
    ops = [Op.make("axis_index", (), axes=(a,))]
    if kind == "pcast":  # to varying, over an axis the operand already varies along
        axes = (a,) if draw(st.booleans(), label="all_varying") else (a, b)
        ops.append(Op.make("pcast", (base,), axes=axes, to="varying"))
    elif kind == "psum_scatter":
        n = p.mesh.group_size((a, b))
        ops.append(Op.make("const", (), shape=(n,), dtype="int32", value=1))
        ops.append(Op.make("add", (base + 1, base)))
        ops.append(Op.make("psum_scatter", (base + 2,), axes=(a, b), scatter_dimension=0, tiled=True))
    else:
        ops.append(Op.make(kind, (base,), axes=(a, b)))
    return _append(p, ops)


def _shape_defect(kind: str) -> Defect:
    """psum_scatter / all_to_all / pswapaxes on a dimension whose size does not fit."""

    def defect(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
        axes_opts = [(a,) for a in p.manual_axes if p.mesh.axis_size(a) > 1]
        spots = []
        for j, v in enumerate(vals):
            if kind == "psum_scatter" and v.dtype == "bool":
                continue  # a bool psum_scatter breaks a second rule (oracles/ops/reductions.py)
            for ax in axes_opts:
                n = p.mesh.group_size(ax)
                for d, size in enumerate(v.shape):
                    if kind != "pswapaxes" and size % n != 0:
                        spots.append((j, ax, d, True))
                    if size != n:
                        spots.append((j, ax, d, False))
        spot = _pick(draw, spots, "spot")
        if spot is None:
            return None
        j, ax, d, tiled = spot
        if kind == "psum_scatter":
            return _append(p, [Op.make(kind, (j,), axes=ax, scatter_dimension=d, tiled=tiled)])
        if kind == "all_to_all":
            c = draw(st.integers(0, len(vals[j].shape) - 1), label="concat_axis")
            return _append(p, [Op.make(kind, (j,), axes=ax, split_axis=d, concat_axis=c, tiled=tiled)])
        if tiled:
            return None
        return _append(p, [Op.make(kind, (j,), axes=ax, axis=d)])

    return defect


def axis_out_of_range(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    j = draw(st.integers(0, len(vals) - 1), label="operand")
    r = len(vals[j].shape)
    ax = (draw(reuse.sampled_from(p.manual_axes), label="axis"),)
    kind = draw(reuse.sampled_from(["all_gather", "all_gather_tiled", "psum_scatter", "all_to_all"]), label="kind")
    if kind == "all_gather":
        return _append(p, [Op.make("all_gather", (j,), axes=ax, axis=r + 1, tiled=False)])
    if kind == "all_gather_tiled":
        return _append(p, [Op.make("all_gather", (j,), axes=ax, axis=r, tiled=True)])
    if r == 0:
        return None
    n = p.mesh.group_size(ax)
    if kind == "psum_scatter":
        return _append(p, [Op.make("psum_scatter", (j,), axes=ax, scatter_dimension=r, tiled=True)])
    splits = [d for d in range(r) if vals[j].shape[d] % n == 0]  # only the concat axis is wrong
    if not splits:
        return None
    return _append(p, [Op.make("all_to_all", (j,), axes=ax, split_axis=splits[0], concat_axis=r, tiled=True)])


def _axis_and_operand(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> tuple[str, int, int] | None:
    """A manual axis of size > 1 (its size) and an operand value, or None."""
    axes_opts = [a for a in p.manual_axes if p.mesh.axis_size(a) > 1]
    if not axes_opts:
        return None
    a = draw(reuse.sampled_from(axes_opts), label="axis")
    return a, p.mesh.axis_size(a), draw(st.integers(0, len(vals) - 1), label="operand")


def bad_permutation(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    pick = _axis_and_operand(draw, p, vals)
    if pick is None:
        return None
    a, n, j = pick
    how = draw(reuse.sampled_from(["dup_source", "dup_dest", "out_of_range", "pshuffle_repeat"]), label="how")
    if how == "dup_source":
        perm = ((0, 0), (0, 1))
    elif how == "dup_dest":
        perm = ((0, 1), (1, 1))
    elif how == "out_of_range":
        perm = ((0, n),)
    else:
        return _append(p, [Op.make("pshuffle", (j,), axes=(a,), perm=(0,) * n)])
    return _append(p, [Op.make("ppermute", (j,), axes=(a,), perm=perm)])


def bad_groups(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    pick = _axis_and_operand(draw, p, vals)
    if pick is None:
        return None
    a, n, j = pick
    groups = ((0,) + tuple(range(n - 1)),) if draw(st.booleans(), label="overlap") else (tuple(range(n - 1)),)
    kind = draw(reuse.sampled_from(["pmax", "pmin"]), label="kind")
    return _append(p, [Op.make(kind, (j,), axes=(a,), groups=groups)])


def transform_integer_operand(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    """jax.grad or jax.jvp of an integer argument (the strategy differentiates floats only):
    grad refuses a non-float input, jvp a float tangent (x * 0.5 + 1) for an integer primal."""
    ints = [j for j, x in enumerate(p.inputs) if x.dtype not in ("bool", *FLOAT_DTYPES) and not vals[j].unreduced and not vals[j].reduced]
    j = _pick(draw, ints, "operand")
    if j is None:
        return None
    t = draw(reuse.sampled_from(["grad", "jvp"]), label="transform")
    return _append(p, [Op.make("transform", (j,), transform=t, custom="none", steps=(("neg", (0,), ()),))])


DEFECTS: dict[str, Defect] = {
    "in_spec_str": _spec_kind("in", "str"),
    "in_spec_tuple": _spec_kind("in", "tuple"),
    "out_spec_str": _spec_kind("out", "str"),
    "out_spec_tuple": _spec_kind("out", "tuple"),
    "out_spec_none": _spec_kind("out", "none"),
    "in_specs_extra": _structure("in", True),
    "in_specs_missing": _structure("in", False),
    "out_specs_extra": _structure("out", True),
    "out_specs_missing": _structure("out", False),
    "in_spec_too_long": in_spec_too_long,
    "out_spec_too_long": out_spec_too_long,
    "in_spec_indivisible": in_spec_indivisible,
    "in_spec_duplicate_axis": in_spec_duplicate_axis,
    "out_spec_duplicate_axis": out_spec_duplicate_axis,
    "in_spec_unknown_axis": _unknown_spec_axis("in"),
    "out_spec_unknown_axis": _unknown_spec_axis("out"),
    "collective_unknown_axis": collective_unknown_axis,
    "collective_not_manual": collective_not_manual,
    "out_spec_drops_varying_axis": _drop_varying_axis(True),
    "out_spec_drops_varying_axis_unchecked": _drop_varying_axis(False),
    "collective_mixed_vma": collective_mixed_vma,
    "psum_scatter_bad_size": _shape_defect("psum_scatter"),
    "all_to_all_bad_size": _shape_defect("all_to_all"),
    "pswapaxes_bad_size": _shape_defect("pswapaxes"),
    "axis_out_of_range": axis_out_of_range,
    "bad_permutation": bad_permutation,
    "bad_groups": bad_groups,
    "transform_integer_operand": transform_integer_operand,
    **EXPLICIT_DEFECTS,  # explicit meshes, reduced / unreduced (strategies/explicit_defects.py)
    **FORM_DEFECTS,  # forms of the call and of an op's arguments jax rejects (strategies/forms.py)
}


# The defects jax finds only once it has traced the body: the out_specs are checked
# against the body's results, and an op's own error (a collective's axis, size or
# permutation) is raised as that op is traced, after the ops before it. An invalid program
# with one of these has its body ops typed, so they check their cells by error
# (harness/campaign/cells.py `by_error`); under the others (spec types, in_specs, an
# unknown out_spec axis) jax stops before the body. tests/test_invalid.py checks
# this against the oracle's trace. (`out_spec_drops_varying_axis_unchecked` is no error:
# jax runs it with check_vma off.)
TRACED_DEFECTS = frozenset({
    "out_spec_none", "out_specs_extra", "out_specs_missing", "out_spec_too_long", "out_spec_duplicate_axis",
    "collective_unknown_axis", "collective_not_manual", "out_spec_drops_varying_axis",
    "collective_mixed_vma", "psum_scatter_bad_size",
    "all_to_all_bad_size", "pswapaxes_bad_size", "axis_out_of_range", "bad_permutation", "bad_groups",
    "transform_integer_operand",
    # (jax checks an out_spec's reduced axes with the replication check, after the body)
    "out_spec_drops_reduced",
    # (an op's axis names as a list: raised as the op is traced; out_specs as a list:
    # checked against the body's results)
    "axes_list", "out_specs_list", "nested_in_specs_omitted",
})


def apply_defect(draw: st.DrawFn, p: Program, vals: list[ValueView], names: tuple[str, ...]) -> Program | None:
    """Try defects (in a drawn order) until one applies; record its name."""
    # sampled_from, small integers and st.randoms all favour the first names strongly
    # (Hypothesis leans to "simple" choices); the drawn program's hash spreads the
    # defects evenly and is still a function of what was drawn
    h = int(hashlib.sha256(repr(p).encode() + repr(p.inputs).encode()).hexdigest(), 16)
    for attempt in range(6):
        name = names[(h >> (8 * attempt)) % len(names)]
        q = DEFECTS[name](draw, p, vals)
        if q is not None:
            return replace(q, defect=name)
    return None
