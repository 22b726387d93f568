"""Candidate edits for an invalid program: the smallest changes that could make it valid.

`candidates(p, error)` proposes single edits aimed at the check the oracle says fails
(`error`, a `PredictedError`): name the axis in the out_spec or drop it, reduce over it
(psum / pmean), pcast the operand, change an in_spec so that it divides, reorder a tuple
of axes, fix a perm or its groups, and so on. Nothing here decides that an edit works:
`harness/report/fixes.py` keeps only those the oracle calls valid and real jax then runs
with outputs that agree with the oracle. No jax here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from oracles.interpreter import trace
from oracles.prediction import ErrorKind, PredictedError, ValueType
from programs.body_text import axes_src
from programs.forms import form_of, with_form
from programs.model import Mesh, Op, ParamValue, Program, Spec, SpecEntry


@dataclass(frozen=True)
class Edit:
    """One proposed edit: what it does in the user's terms, and the edited program."""

    title: str
    program: Program


def _set(t: tuple, i: int, v: object) -> tuple:  # type: ignore[type-arg]
    return t[:i] + (v,) + t[i + 1 :]


def _spec(entries: tuple[SpecEntry, ...]) -> Spec:
    # trailing Nones say nothing: P('x', None) and P('x') are the same spec
    while entries and entries[-1] is None:
        entries = entries[:-1]
    return Spec(entries)


def _specs(p: Program, which: str) -> tuple[Spec, ...]:
    return p.in_specs if which == "in_specs" else p.out_specs


def _with_spec(p: Program, which: str, i: int, s: Spec) -> Program:
    if which == "in_specs":
        return replace(p, in_specs=_set(p.in_specs, i, s))
    return replace(p, out_specs=_set(p.out_specs, i, s))


def _without_axis(s: Spec, a: str, first_only: bool = False) -> Spec:
    out: list[SpecEntry] = []
    done = False
    for e in s.entries:
        if e is None:
            out.append(None)
            continue
        kept = []
        for x in e:
            if x == a and not (first_only and done):
                done = True
                continue
            kept.append(x)
        out.append(tuple(kept) or None)
    return _spec(tuple(out))


def _renamed_axis(s: Spec, a: str, b: str) -> Spec:
    return Spec(tuple(None if e is None else tuple(b if x == a else x for x in e) for e in s.entries))


def _with_axes_on(s: Spec, d: int, axes: tuple[str, ...], rank: int) -> Spec:
    entries = s.entries + (None,) * max(0, rank - len(s.entries))
    return _spec(_set(entries, d, (entries[d] or ()) + axes))


def _insert_before(p: Program, i: int, new: Op, operand_slot: int = 0) -> Program:
    """`new` (reading values before op i) inserted before body op i, whose operand
    `operand_slot` now reads it; every later value is renumbered."""
    n_in = len(p.inputs)
    at = n_in + i

    def shift(v: int) -> int:
        return v + 1 if v >= at else v

    body = list(p.body[:i]) + [new]
    for j, op in enumerate(p.body[i:]):
        ops = tuple(shift(v) for v in op.operands)
        if j == 0:
            ops = _set(ops, operand_slot, at)
        body.append(replace(op, operands=ops))
    return replace(p, body=tuple(body), outputs=tuple(shift(o) for o in p.outputs))


def _append_on_output(p: Program, k: int, make: Op) -> Program:
    """`make` (reading output k's value) appended; output k becomes its result."""
    return replace(p, body=p.body + (make,), outputs=_set(p.outputs, k, len(p.inputs) + len(p.body)))


def _with_param(op: Op, name: str, v: ParamValue) -> Op:
    d = op.param_dict
    if v is None:
        d.pop(name, None)
    else:
        d[name] = v
    return Op.make(op.kind, op.operands, **d)


def _with_op(p: Program, i: int, op: Op) -> Program:
    return replace(p, body=_set(p.body, i, op))


def _axis_names_with(p: Program, a: str) -> tuple[str, ...] | None:
    names = set(p.axis_names or ()) | {a}
    return None if names >= set(p.mesh.names) else tuple(n for n in p.mesh.names if n in names)


def _axis_names_src(p: Program) -> str:
    return "every mesh axis (axis_names left out)" if p.axis_names is None else f"axis_names={set(p.axis_names)!r}"


def _op_axes(op: Op) -> tuple[str, ...]:
    return tuple(str(a) for a in (op.p("axes") or ()))  # type: ignore[union-attr]


def _types(p: Program) -> list[ValueType]:
    st, _ = trace(p, with_values=False)
    return st.types


# ---- spec checks ---------------------------------------------------------------


def _dtype_edits(p: Program, err: PredictedError) -> Iterator[Edit]:
    """An op refused its operand's dtype (the error's fact, e.g. bool): make each argument of
    that dtype an integer or a float instead."""
    bad = err.facts[0] if err.facts else None
    for i, x in enumerate(p.inputs):
        if x.dtype == bad:
            for dt in ("int32", "float32"):
                inputs = _set(p.inputs, i, replace(x, dtype=dt))
                yield Edit(f"make argument a{i} {dt} instead of {bad}", replace(p, inputs=inputs))


def _transform_edits(p: Program, i: int, op: Op, err: PredictedError) -> Iterator[Edit]:
    """A derivative transform jax refused: jvp of a custom_vjp gets a custom_jvp rule or
    becomes a vjp; grad / jvp of an integer: the integer arguments become float32, or the
    transform differentiates a float32 cast of its operand (a cast op before it)."""
    if op.p("custom") == "custom_vjp" and op.p("transform") == "jvp":
        for k, v, title in (("custom", "custom_jvp", "a custom_jvp rule instead of custom_vjp"),
                            ("custom", "none", "no custom rule"), ("transform", "vjp", "jax.vjp instead of jax.jvp")):
            yield Edit(title, replace(p, body=_set(p.body, i, Op.make("transform", op.operands, **{**op.param_dict, k: v}))))
        return
    yield from _dtype_edits(p, err)


def _spec_type(p: Program) -> Iterator[Edit]:
    for which in ("in_specs", "out_specs"):
        for i, s in enumerate(_specs(p, which)):
            if s.kind in ("str", "tuple"):
                good = Spec(s.entries)
                yield Edit(f"write {which}[{i}] as the PartitionSpec {good!r} instead of {s!r}", _with_spec(p, which, i, good))
                if good.entries:
                    yield Edit(f"write {which}[{i}] as P() (replicated) instead of {s!r}", _with_spec(p, which, i, Spec(())))
                types = _types(replace(p, out_specs=_set(p.out_specs, i, good))) if which == "out_specs" else []
                if which == "out_specs" and len(types) == p.n_values:
                    for opt in _out_spec_options(p, types[p.outputs[i]]) if i < len(p.outputs) else []:
                        if opt != good:
                            yield Edit(f"write out_specs[{i}] as {opt!r} (the axes out[{i}] varies along) instead of {s!r}",
                                       _with_spec(p, which, i, opt))


def _unknown_axis(p: Program) -> Iterator[Edit]:
    manual = p.manual_axes
    for which in ("in_specs", "out_specs"):
        for i, s in enumerate(_specs(p, which)):
            for a in dict.fromkeys(s.axes()):
                if a in manual:
                    continue
                if a in p.mesh.names:
                    q = replace(p, axis_names=_axis_names_with(p, a))
                    yield Edit(f"make {a!r} manual: add it to axis_names ({_axis_names_src(q)})", q)
                yield Edit(f"drop {a!r} from {which}[{i}] ({s!r} -> {_without_axis(s, a)!r})", _with_spec(p, which, i, _without_axis(s, a)))
                for b in manual:
                    if b not in s.axes():
                        yield Edit(f"name the mesh axis {b!r} instead of {a!r} in {which}[{i}]", _with_spec(p, which, i, _renamed_axis(s, a, b)))


def _duplicate_axis(p: Program) -> Iterator[Edit]:
    for which in ("in_specs", "out_specs"):
        for i, s in enumerate(_specs(p, which)):
            axes = s.axes()
            for a in dict.fromkeys(x for x in axes if axes.count(x) > 1):
                dims = [d for d, e in enumerate(s.entries) if e and a in e]
                for keep in dims:  # keep it on one dimension, drop it from the others
                    entries = tuple(
                        e if e is None or d == keep else (tuple(x for x in e if x != a) or None) for d, e in enumerate(s.entries)
                    )
                    e = s.entries[keep] or ()
                    if e.count(a) > 1:
                        entries = _set(entries, keep, tuple(x for n, x in enumerate(e) if x != a or n == e.index(a)))
                    new = _spec(entries)
                    yield Edit(f"name {a!r} once in {which}[{i}], on dimension {keep}: {s!r} -> {new!r}", _with_spec(p, which, i, new))


def _out_spec_options(p: Program, t: ValueType) -> list[Spec]:
    """Specs an output of type t could take: P(), and its varying axes on one dimension."""
    opts = [Spec(())]
    vma = tuple(a for a in p.mesh.names if a in (t.vma or ()))
    if vma and t.shape:
        opts.insert(0, Spec((vma,)))
    return opts


def _in_specs_structure(p: Program) -> Iterator[Edit]:
    n, m = len(p.inputs), len(p.in_specs)
    if m > n:
        for j in range(m):
            q = replace(p, in_specs=p.in_specs[:j] + p.in_specs[j + 1 :])
            if len(q.in_specs) == n:
                yield Edit(f"drop in_specs[{j}] ({p.in_specs[j]!r}): one spec per argument", q)
    elif m < n:
        extra = tuple(Spec(()) for _ in range(n - m))
        yield Edit(f"give the {n - m} argument(s) without a spec P() (replicated)", replace(p, in_specs=p.in_specs + extra))
        x = p.inputs[m]
        for a in p.manual_axes:
            if x.shape and x.shape[0] % p.mesh.axis_size(a) == 0 and n - m == 1:
                yield Edit(f"give args[{m}] the in_spec P({a!r}) (split over {a!r})", replace(p, in_specs=p.in_specs + (Spec(((a,),)),)))


def _out_specs_structure(p: Program) -> Iterator[Edit]:
    types = _types(p)
    if len(types) < p.n_values:
        return
    n, m = len(p.outputs), len(p.out_specs)
    for k, s in enumerate(p.out_specs[:n]):
        if s.kind == "none":
            for opt in _out_spec_options(p, types[p.outputs[k]]):
                yield Edit(f"out_specs[{k}] is None, an empty pytree: write {opt!r}", _with_spec(p, "out_specs", k, opt))
    if m > n:
        for j in range(m):
            q = replace(p, out_specs=p.out_specs[:j] + p.out_specs[j + 1 :])
            if len(q.out_specs) == n:
                yield Edit(f"drop out_specs[{j}] ({p.out_specs[j]!r}): one spec per output", q)
        for j in range(n, m):
            yield Edit(f"return one more value for out_specs[{j}]", replace(p, outputs=p.outputs + (p.outputs[-1],) * (m - n)))
            break
    elif m < n:
        for opt in _out_spec_options(p, types[p.outputs[m]]):
            if n - m == 1:
                yield Edit(f"give out[{m}] the out_spec {opt!r}", replace(p, out_specs=p.out_specs + (opt,)))
        if m > 0:
            yield Edit(f"return only the first {m} value(s), one per out_spec", replace(p, outputs=p.outputs[:m]))


def _truncations(s: Spec, rank: int) -> list[tuple[str, Spec]]:
    kept, dropped = s.entries[:rank], tuple(a for e in s.entries[rank:] if e for a in e)
    out = [("shorten", _spec(kept))]
    if dropped and rank > 0:
        out.insert(0, ("shorten, keeping its axes on the last dimension", _spec(_set(kept, rank - 1, (kept[rank - 1] or ()) + dropped))))
    return out


def _in_spec_rank(p: Program) -> Iterator[Edit]:
    for i, (x, s) in enumerate(zip(p.inputs, p.in_specs)):
        if len(s.entries) > len(x.shape):
            for how, t in _truncations(s, len(x.shape)):
                yield Edit(f"{how} in_specs[{i}] to the rank {len(x.shape)} of args[{i}] ({s!r} -> {t!r})", _with_spec(p, "in_specs", i, t))


def _out_spec_rank(p: Program, err: PredictedError) -> Iterator[Edit]:
    k = err.output if err.output is not None else 0
    types = _types(p)
    t, s = types[p.outputs[k]], p.out_specs[k]
    for how, new in _truncations(s, len(t.shape)):
        yield Edit(f"{how} out_specs[{k}] to the rank {len(t.shape)} of out[{k}] ({s!r} -> {new!r})", _with_spec(p, "out_specs", k, new))
    if not t.shape and s.axes():
        axes = tuple(dict.fromkeys(s.axes()))
        g = Op.make("all_gather", (p.outputs[k],), axes=axes, axis=0, tiled=False)
        yield Edit(f"all_gather out[{k}] over {axes_src(axes)} so that it has a dimension to concatenate along", _append_on_output(p, k, g))


def _indivisible(p: Program) -> Iterator[Edit]:
    mesh = p.mesh
    for i, (x, s) in enumerate(zip(p.inputs, p.in_specs)):
        for d, e in enumerate(s.entries):
            if not e or x.shape[d] % mesh.group_size(e) == 0:
                continue
            n = mesh.group_size(e)
            yield Edit(f"do not split args[{i}] dimension {d} (size {x.shape[d]}): in_specs[{i}] {s!r} -> {_spec(_set(s.entries, d, None))!r}",
                       _with_spec(p, "in_specs", i, _spec(_set(s.entries, d, None))))
            for d2, size in enumerate(x.shape):
                if d2 != d and size % n == 0 and not (d2 < len(s.entries) and s.entries[d2]):
                    t = _with_axes_on(Spec(_set(s.entries, d, None)), d2, e, len(x.shape))
                    yield Edit(f"split args[{i}] along dimension {d2} (size {size}, divisible by {n}) instead: in_specs[{i}] {s!r} -> {t!r}",
                               _with_spec(p, "in_specs", i, t))
            if len(e) > 1:
                for a in e:
                    rest = tuple(b for b in e if b != a)
                    if x.shape[d] % mesh.group_size(rest) == 0:
                        t = _spec(_set(s.entries, d, rest))
                        yield Edit(f"split args[{i}] dimension {d} over {rest} only: in_specs[{i}] {s!r} -> {t!r}", _with_spec(p, "in_specs", i, t))
            up = (x.shape[d] // n + 1) * n
            yield Edit(f"pad args[{i}] dimension {d} from {x.shape[d]} to {up} (a multiple of {n})",
                       replace(p, inputs=_set(p.inputs, i, replace(x, shape=_set(x.shape, d, up)))))
            down = x.shape[d] // n * n
            if down > 0:
                yield Edit(f"trim args[{i}] dimension {d} from {x.shape[d]} to {down} (a multiple of {n})",
                           replace(p, inputs=_set(p.inputs, i, replace(x, shape=_set(x.shape, d, down)))))


def _replication(p: Program, err: PredictedError) -> Iterator[Edit]:
    k = err.output if err.output is not None else 0
    types = _types(p)
    t, s, v = types[p.outputs[k]], p.out_specs[k], p.outputs[k]
    missing = tuple(a for a in p.mesh.names if a in (t.vma or ()) and a not in s.axes())
    if not missing:
        return
    named = []
    for d in range(len(t.shape)):
        new = _with_axes_on(s, d, missing, len(t.shape))
        named.append(Edit(f"name {axes_src(missing)} in out_specs[{k}] on dimension {d}: {s!r} -> {new!r} (out[{k}] is concatenated over it)",
                          _with_spec(p, "out_specs", k, new)))
    yield from named[:1]
    for kind in ("psum", "pmean"):
        yield Edit(f"reduce out[{k}] over {axes_src(missing)} with {kind} before returning it (then it is replicated there)",
                   _append_on_output(p, k, Op.make(kind, (v,), axes=missing)))
    yield from named[1:]
    for d in range(len(t.shape)):
        g = Op.make("all_gather", (v,), axes=missing, axis=d, tiled=True, to="invarying")
        yield Edit(f"all_gather out[{k}] over {axes_src(missing)} (tiled, to='invarying') along dimension {d}", _append_on_output(p, k, g))


# ---- checks made while the body is traced ---------------------------------------


def _axis_edits(p: Program, i: int, op: Op, bad: tuple[str, ...]) -> Iterator[Edit]:
    axes = _op_axes(op)
    manual = p.manual_axes
    for a in bad:
        if a in p.mesh.names and a not in manual:
            q = replace(p, axis_names=_axis_names_with(p, a))
            yield Edit(f"make {a!r} manual: add it to axis_names ({_axis_names_src(q)})", q)
        for b in manual:
            if b not in axes:
                new = tuple(b if x == a else x for x in axes)
                yield Edit(f"name the manual axis {b!r} instead of {a!r} in {op.kind}: axes {axes_src(axes)} -> {axes_src(new)}", _with_op(p, i, _with_param(op, "axes", new)))
        if len(axes) > 1:
            new = tuple(x for x in axes if x != a)
            yield Edit(f"drop {a!r} from {op.kind}'s axes: {axes_src(axes)} -> {axes_src(new)}", _with_op(p, i, _with_param(op, "axes", new)))


def _vma_edits(p: Program, i: int, op: Op) -> Iterator[Edit]:
    types = _types(p)
    axes = _op_axes(op)
    if not op.operands:
        return
    x = types[op.operands[0]]
    varying = tuple(a for a in axes if a in (x.vma or ()))
    rest = tuple(a for a in axes if a not in varying)
    if op.kind == "pcast" and op.p("to") == "varying" and varying:
        if rest:
            yield Edit(f"pcast only over {axes_src(rest)}: the operand already varies over {axes_src(varying)}",
                       _with_op(p, i, _with_param(op, "axes", rest)))
        else:
            yield Edit("drop the pcast: the operand already varies over its axes",
                       _drop_op(p, i))
        return
    if varying and rest:
        cast = Op.make("pcast", (op.operands[0],), axes=rest, to="varying")
        yield Edit(f"pcast the operand to varying over {axes_src(rest)} first (it varies over {axes_src(varying)} only): then {op.kind} over {axes_src(axes)} is allowed",
                   _insert_before(p, i, cast))
        yield Edit(f"{op.kind} over {axes_src(varying)} only, the axes the operand varies along",
                   _with_op(p, i, _with_param(op, "axes", varying)))
        yield Edit(f"{op.kind} over {axes_src(rest)} only, the axes the operand is invariant along",
                   _with_op(p, i, _with_param(op, "axes", rest)))
    for perm in itertools.permutations(axes):
        if perm != axes:
            yield Edit(f"reorder {op.kind}'s axes: {axes_src(axes)} -> {axes_src(perm)}", _with_op(p, i, _with_param(op, "axes", perm)))
    if op.p("to") is not None:
        other = "invarying" if op.p("to") == "varying" else "varying"
        yield Edit(f"{op.kind} with to={other!r}", _with_op(p, i, _with_param(op, "to", other)))


def _drop_op(p: Program, i: int) -> Program:
    """Body op i removed, its readers reading its (first) operand instead."""
    n_in = len(p.inputs)
    at, src = n_in + i, p.body[i].operands[0]

    def m(v: int) -> int:
        return src if v == at else (v - 1 if v > at else v)

    body = p.body[:i] + tuple(replace(op, operands=tuple(m(v) for v in op.operands)) for op in p.body[i + 1 :])
    return replace(p, body=body, outputs=tuple(m(o) for o in p.outputs))


_INT_PARAMS = ("axis", "scatter_dimension", "split_axis", "concat_axis")


def _param_edits(p: Program, i: int, op: Op) -> Iterator[Edit]:
    """Other values of the op's integer and boolean parameters, a valid perm, groups."""
    types = _types(p)
    rank = len(types[op.operands[0]].shape) if op.operands else 0
    axes = _op_axes(op)
    n = p.mesh.group_size(axes) if all(a in p.mesh.names for a in axes) else 0
    for name in _INT_PARAMS:
        v = op.p(name)
        if v is None:
            continue
        hi = rank + 1 if op.kind == "all_gather" and not op.p("tiled") else rank
        for w in range(hi):
            if w != v:
                yield Edit(f"{op.kind} with {name}={w} instead of {v}", _with_op(p, i, _with_param(op, name, w)))
    if op.p("tiled") is not None:
        flip = not op.p("tiled")
        yield Edit(f"{op.kind} with tiled={flip}", _with_op(p, i, _with_param(op, "tiled", flip)))
    if op.kind == "ppermute" and n:
        perm = tuple((int(pr[0]), int(pr[1])) for pr in op.p("perm"))  # type: ignore[union-attr, index, arg-type]
        ok: list[tuple[int, int]] = []
        for s, d in perm:
            if 0 <= s < n and 0 <= d < n and all(s != a and d != b for a, b in ok):
                ok.append((s, d))
        if ok and tuple(ok) != perm:
            yield Edit(f"ppermute with perm={ok}: drop the pairs that repeat a source or a destination or leave 0..{n - 1}",
                       _with_op(p, i, _with_param(op, "perm", tuple(ok))))
        cycle = tuple((j, (j + 1) % n) for j in range(n))
        yield Edit(f"ppermute with perm={list(cycle)} (each device sends to the next one)", _with_op(p, i, _with_param(op, "perm", cycle)))
    if op.kind == "pshuffle" and n:
        for shuffle in (tuple(range(n)), tuple((j + 1) % n for j in range(n))):
            yield Edit(f"pshuffle with perm={list(shuffle)} (a permutation of 0..{n - 1})", _with_op(p, i, _with_param(op, "perm", shuffle)))
    if op.kind == "transpose":
        for order in (tuple(range(rank)), tuple(reversed(range(rank)))):
            yield Edit(f"transpose with perm={order} (a permutation of the operand's {rank} dimensions)", _with_op(p, i, _with_param(op, "perm", order)))
    if op.kind == "reduce_sum":
        for w in range(rank):
            if w != op.p("axis"):
                yield Edit(f"reduce_sum over axis={w} instead of {op.p('axis')}", _with_op(p, i, _with_param(op, "axis", w)))
    if op.p("groups") is not None:
        yield Edit(f"{op.kind} without axis_index_groups (over the whole group)", _with_op(p, i, _with_param(op, "groups", None)))
        if n >= 2 and n % 2 == 0:
            halves = (tuple(range(n // 2)), tuple(range(n // 2, n)))
            if halves != op.p("groups"):
                yield Edit(f"{op.kind} with axis_index_groups={[list(g) for g in halves]} (covering 0..{n - 1} once)",
                           _with_op(p, i, _with_param(op, "groups", halves)))


def _pad_operand(p: Program, op: Op) -> Iterator[Edit]:
    """A collective whose operand's dimension does not fit the group size: an argument
    operand padded (globally) so that its per-device dimension is a multiple of it."""
    axes = _op_axes(op)
    if not op.operands or op.operands[0] >= len(p.inputs) or not all(a in p.mesh.names for a in axes):
        return
    j, n = op.operands[0], p.mesh.group_size(axes)
    x, s = p.inputs[j], p.in_specs[j]
    for d, size in enumerate(x.shape):
        split = p.mesh.group_size(s.entries[d] or ()) if d < len(s.entries) else 1
        local = size // split
        exact = op.kind == "pswapaxes" or (op.kind == "psum_scatter" and not op.p("tiled"))  # the size must equal n
        if exact and local != n and d == op.p("axis", op.p("scatter_dimension")):
            yield Edit(f"give args[{j}] dimension {d} the size {n * split} (per device {n}, the group size {op.kind} needs)",
                       replace(p, inputs=_set(p.inputs, j, replace(x, shape=_set(x.shape, d, n * split)))))
        elif not exact and local % n:
            up = -(-local // n) * n * split
            yield Edit(f"pad args[{j}] dimension {d} from {size} to {up} (per device {up // split}, a multiple of the group size {n})",
                       replace(p, inputs=_set(p.inputs, j, replace(x, shape=_set(x.shape, d, up)))))


def _local_shape(p: Program, i: int, op: Op) -> Iterator[Edit]:
    """A binary op on mismatched per-device shapes: give an argument operand the other's."""
    types = _types(p)
    n_in = len(p.inputs)
    if len(op.operands) == 2:
        for slot in (1, 0):
            j, other = op.operands[slot], op.operands[1 - slot]
            if j >= n_in:
                continue
            want, s, x = types[other].shape, p.in_specs[j], p.inputs[j]
            glob = tuple(n * (p.mesh.group_size(s.entries[d] or ()) if d < len(s.entries) else 1) for d, n in enumerate(want))
            if len(glob) >= len(s.entries) and glob != x.shape:
                yield Edit(f"give args[{j}] the global shape {glob} (per device {want}, as the other operand of {op.kind})",
                           replace(p, inputs=_set(p.inputs, j, replace(x, shape=glob))))
    yield from _param_edits(p, i, op)


def _unreduced_spec(p: Program) -> Iterator[Edit]:
    """unreduced / reduced axes a spec may not name: make them Explicit (every mesh axis:
    jax wants them all so), or leave them out of the out_specs."""
    named = {a for s in p.out_specs for a in s.unreduced + s.reduced}
    if named:
        mesh = Mesh(p.mesh.names, p.mesh.sizes, ("explicit",) * len(p.mesh.names))
        yield Edit(f"make the mesh axes AxisType.Explicit, arguments resharded ({', '.join(sorted(named))} are unreduced / reduced)",
                   replace(p, mesh=mesh, reshard=True))
    yield Edit("drop unreduced= / reduced= from the out_specs",
               replace(p, out_specs=tuple(Spec(s.entries, s.kind) for s in p.out_specs)))


# the edits for an error about the whole program (specs, arguments), by kind
_PROGRAM_EDITS: dict[ErrorKind, Callable[[Program, PredictedError], Iterator[Edit]]] = {
    ErrorKind.SPEC_TYPE: lambda p, err: _spec_type(p),
    ErrorKind.SPEC_UNKNOWN_AXIS: lambda p, err: _unknown_axis(p),
    ErrorKind.SPEC_DUPLICATE_AXIS: lambda p, err: _duplicate_axis(p),
    ErrorKind.IN_SPECS_STRUCTURE: lambda p, err: _in_specs_structure(p),
    ErrorKind.OUT_SPECS_STRUCTURE: lambda p, err: _out_specs_structure(p),
    ErrorKind.IN_SPEC_RANK: lambda p, err: _in_spec_rank(p),
    ErrorKind.OUT_SPEC_RANK: _out_spec_rank,
    ErrorKind.IN_SPEC_DIVISIBILITY: lambda p, err: _indivisible(p),
    ErrorKind.OUT_SPEC_REPLICATION: _replication,
    ErrorKind.IN_SPEC_ARG_SHARDING: lambda p, err: iter(
        [Edit("reshard the arguments to their in_specs first (jax.sharding.reshard)", replace(p, reshard=True))]),
}


def _form_edits(p: Program, op: Op | None, i: int | None) -> Iterator[Edit]:
    """The forms jax rejects written in one it takes (programs/model.py CallForm,
    programs/forms.py): specs as a tuple, in_specs given, axis names as a tuple, a nested
    shard_map's in_specs given."""
    if p.form.in_specs in ("list", "omitted"):
        what = "pass in_specs=(P(...), ...)" if p.form.in_specs == "omitted" else "write in_specs as a tuple, not a list"
        yield Edit(what, replace(p, form=replace(p.form, in_specs="tuple")))
    if p.form.out_specs == "list":
        yield Edit("write out_specs as a tuple, not a list", replace(p, form=replace(p.form, out_specs="tuple")))
    if op is not None and i is not None and form_of(op, "axes") == "list":
        yield Edit(f"give {op.kind} its axis names as a tuple {axes_src(op.p('axes'))}", _with_op(p, i, with_form(op, "axes", None)))
    if op is not None and i is not None and op.kind == "shard_map" and op.p("in_spec") is None:
        yield Edit("pass the nested shard_map in_specs=P() (jax infers them only over Explicit axes)",
                   _with_op(p, i, Op.make(op.kind, op.operands, **{**op.param_dict, "in_spec": ()})))


def candidates(p: Program, err: PredictedError) -> list[Edit]:
    """Single edits aimed at the failing check, most direct first, each program once."""
    k = err.kind
    gen: Iterator[Edit]
    i = err.op_index
    op = p.body[i] if i is not None else None
    forms = list(_form_edits(p, op, i))
    whole = _PROGRAM_EDITS.get(k)  # (an error about the specs or arguments: no op at fault)
    if whole is not None:
        gen = whole(p, err)
    elif k == ErrorKind.UNREDUCED_TYPE and i is None:
        gen = _unreduced_spec(p)
    elif op is None or i is None:
        gen = iter(())
    elif k == ErrorKind.UNBOUND_AXIS:
        bad = tuple(a for a in _op_axes(op) if a not in p.manual_axes)
        gen = _axis_edits(p, i, op, bad)
    elif k == ErrorKind.COLLECTIVE_VMA and op.kind == "pcast":
        # another target the operand's state allows (oracles/ops/device.py Pcast.TRANSITIONS)
        others = [t for t in ("varying", "reduced", "unreduced") if t != op.p("to")]
        gen = itertools.chain(
            (Edit(f"pcast to={t!r} instead", replace(p, body=_set(p.body, i, Op.make("pcast", op.operands, **{**op.param_dict, "to": t}))))
             for t in others),
            _vma_edits(p, i, op),
        )
    elif k == ErrorKind.COLLECTIVE_VMA:
        gen = _vma_edits(p, i, op)
    elif k == ErrorKind.UNSUPPORTED:
        gen = itertools.chain(_param_edits(p, i, op), iter([Edit("pass check_vma=False (axis_index_groups needs it)", replace(p, check_vma=False))]))
    elif k == ErrorKind.LOCAL_SHAPE:
        gen = _local_shape(p, i, op)
    elif k == ErrorKind.DTYPE:
        gen = _dtype_edits(p, err)
    elif k == ErrorKind.TRANSFORM:
        gen = _transform_edits(p, i, op, err)
    elif k == ErrorKind.COLLECTIVE_SHAPE:
        gen = itertools.chain(_param_edits(p, i, op), _pad_operand(p, op))
    else:  # COLLECTIVE_PARAM
        gen = _param_edits(p, i, op)
    gen = itertools.chain(forms, gen)  # (a form jax rejects: its fix first)
    seen: set[Program] = set()
    out = []
    for e in gen:
        q = replace(e.program, defect=None, notes=())
        if q not in seen and q != replace(p, defect=None, notes=()):
            seen.add(q)
            out.append(Edit(e.title, q))
    return out
