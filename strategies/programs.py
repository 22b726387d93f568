"""Hypothesis strategies that draw whole shard_map programs, valid by construction.

Construction, not filtering: we choose each argument's per-device block first and scale
it up by the mesh axes its spec names, so every in_spec divides its argument; each body
op is chosen among those whose requirements the current values meet (a psum_scatter only
where some dimension fits the group size, a psum only over axes the operand varies over
all or none of); out_specs name every axis an output varies along. Every choice comes
from `draw()`, and what was drawn is recorded with `hypothesis.event()` so a run's
statistics show coverage.

Body ops are drawn in `strategies/body.py` (with `local_ops.py`, `collectives.py`,
`nested.py`): each draw chooses an op's parameters, and the op's type (per-device shape,
dtype, varying axes) comes from the oracle's own rules for that kind, so the values
construction steers by are the ones the oracle predicts.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import replace

from hypothesis import event
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from programs.cells import CALL, FEATURE_KINDS, PAIRED, axis_class, op_cells
from programs.model import DTYPES, X64_DTYPE, Input, Mesh, Op, Program, Spec, is_float
from programs.ops import BINARY_OPS, COLLECTIVES, OP_KINDS
from strategies import reuse
from strategies.body import ACROSS, Body
from strategies.draws import NOT_DRAWN
from strategies.edges import (
    EDGE_FEATURES,
    close_argument,
    draw_edges,
    feature_mesh,
    feature_want,
    place_argument,
    scalar_arguments,
)
from strategies.explicit import axis_types, call_form, draw_reduced, out_spec_ur
from strategies.explicit_defects import EXPLICIT_DEFECTS, WRAP_DEFECTS, strict_explicit
from strategies.focus import FOCUS_SHARE, Focus, argument_constraint, draw_focus, focus_mesh, wanted
from strategies.forms import FORM_DEFECTS, call_fixes, call_mesh, draw_call_form
from strategies.invalid import DEFECTS, TRACED_DEFECTS, apply_defect
from strategies.invalid import ValueView as _V

AXIS_NAMES = ("data", "model", "pipe")  # distinctive, so error messages can be checked for them
AXIS_SIZES = (1, 2, 3, 4, 6, 8)
# every op kind the strategy draws: the op table's, in its order, but those NOT_DRAWN
ALL_KINDS = tuple(k for k in OP_KINDS if k not in NOT_DRAWN)
# the dtypes of a program that does not name float64 (one that does runs under jax_enable_x64)
_X32_DTYPES = tuple(d for d in DTYPES if d != X64_DTYPE)


def _check_devices(min_devices: int, max_devices: int, max_axes: int) -> None:
    if not 1 <= min_devices <= max_devices:
        raise InvalidArgument(
            f"Cannot have max_devices={max_devices} < min_devices={min_devices}; "
            "both must be >= 1. Pass e.g. meshes(min_devices=1, max_devices=8)."
        )
    if not 1 <= max_axes <= len(AXIS_NAMES):
        raise InvalidArgument(f"max_axes={max_axes} must be between 1 and {len(AXIS_NAMES)}")


@st.composite
def meshes(draw: st.DrawFn, *, min_devices: int = 1, max_devices: int = 8, max_axes: int = 3) -> Mesh:
    """A mesh of 1..`max_axes` axes using between `min_devices` and `max_devices` devices.

    - min_devices, max_devices: bounds on the product of the axis sizes.
    - max_axes: at most this many axes (named x, y, z).

    Sizes include 1 (size-1 axes) and non-powers of two (3, 6)::

        meshes(max_devices=8).example()  # Mesh(names=('x', 'y'), sizes=(2, 4), ...)
    """
    _check_devices(min_devices, max_devices, max_axes)
    n_axes = draw(st.integers(1, max_axes), label="mesh_rank")
    sizes: list[int] = []
    for _ in range(n_axes):
        room = max_devices // math.prod(sizes or [1])
        sizes.append(draw(reuse.sampled_from([s for s in AXIS_SIZES if s <= room]), label="axis_size"))
    if math.prod(sizes) < min_devices:
        sizes[0] *= -(-min_devices // math.prod(sizes))  # pragma: no cover - only for min_devices > 1
    mesh = Mesh(AXIS_NAMES[:n_axes], tuple(sizes))
    event(f"mesh rank: {n_axes}")
    event(f"mesh devices: {mesh.size}")
    if 1 in sizes:
        event("mesh: has a size-1 axis")
    if any(s in (3, 6) for s in sizes):
        event("mesh: non-power-of-two axis")
    return mesh


def _dim_choices(mesh: Mesh) -> list[int]:
    """Per-device dim sizes: small ones, and sizes of axis groups (so collectives that
    need a dimension equal to a group size have something to work with)."""
    out = {1, 2, 3, 4}
    out |= {s for s in mesh.sizes if s <= 8}
    out |= {a * b for a in mesh.sizes for b in mesh.sizes if a * b <= 8}
    return sorted(out)


# A large program's first argument has a per-device block of at least this many
# elements (4 MiB of float32 or int32): collectives over several processes move such a
# block in chunks (harness/run/modes_multiprocess.py), small programs never do.
LARGE_ELEMENTS = 1 << 20
_LARGE_MESHES = ((8,), (2, 4), (4, 2), (1, 8), (2, 2, 2), (2, 1, 4))  # every device: 4 in each process
_LARGE_MULTIPLE = 840  # lcm(1..8): the long dimension divides by every group size


def _uniform(n: int) -> float:
    """A drawn integer as a number in [0, 1), spread evenly whatever Hypothesis favours."""
    return int.from_bytes(hashlib.sha256(n.to_bytes(8, "big")).digest()[:8], "big") / 2**64


@st.composite
def _argument(draw: st.DrawFn, mesh: Mesh, manual: tuple[str, ...], i: int, large: bool = False,
              dtypes: tuple[str, ...] = _X32_DTYPES, rank: int | None = None, fit: int | None = None,
              fit_class: str | None = None, across: bool = False, split_all: bool = False) -> tuple[Input, Spec, _V]:
    """Argument `i`: its per-device shape (of rank `rank` when given), spec, then a dtype
    from `dtypes` (a one-dtype tuple fixes it). `fit`: a per-device dimension of that
    size (a focus op over a group of that size needs one: `_focused`), unless rank 0, at
    a position of the class `fit_class` (programs/cells.py `axis_class`) where given.
    `across`: the argument of a focus collective (strategies/body.py `ACROSS`): three
    times in four its spec splits it along every axis of `manual` (the axes ops may
    name), so its blocks differ along whichever of them the op names, and where its rank
    is drawn it is 1 or more (a rank-0 argument is the same on every device).
    `split_all`: split along every axis of `manual` always (where its rank allows)."""
    if rank is None:
        # (a focus collective's operand of rank 0 is the same on every device: `across`)
        low = 1 if large or fit or (across and draw(st.integers(0, 3), label="across_rank") != 0) else 0
        rank = draw(st.integers(low, 3), label="arg_rank")
    choices = _dim_choices(mesh)
    local = []
    for _ in range(rank):
        # Hypothesis draws the bound 0 far more often than 1 in 101: about 5% of
        # programs get a zero-size dimension (a known jax bug family; see
        # harness/data/known_divergences.toml), the rest stay free to show other bugs
        if not large and draw(st.integers(0, 100), label="zero_dim") == 0:
            local.append(0)
            event("input: zero-size dimension")
        else:
            local.append(draw(reuse.sampled_from(choices), label="dim"))
    at = [d for d in range(rank) if fit_class is None or fit_class == "negative" or axis_class(d, rank) == fit_class]
    if fit is not None and rank and not any(local[d] == fit for d in at):
        local[draw(reuse.sampled_from(at or list(range(rank))), label="fit_dim")] = fit
    if large:  # the last dimension long enough for a block of LARGE_ELEMENTS
        rest = math.prod(local[:-1])
        local[-1] = _LARGE_MULTIPLE * -(-LARGE_ELEMENTS // (_LARGE_MULTIPLE * rest))
        event("input: large block (>= 4 MiB per device)")
    # split dims by distinct axes: each axis used at most once per spec
    unused = list(manual)
    entries: list[tuple[str, ...] | None] = []
    for _d in range(rank):
        pattern = draw(reuse.sampled_from(["none", "one", "several"]), label="spec_entry")
        if pattern == "none" or not unused:
            entries.append(None)
            continue
        k = 1 if pattern == "one" else draw(st.integers(1, len(unused)), label="n_axes")
        axes = tuple(draw(reuse.permutations(unused), label="entry_axes")[:k])
        for a in axes:
            unused.remove(a)
        entries.append(axes)
        event("in_spec: several axes on one dim" if len(axes) > 1 else "in_spec: one axis")
    # trailing Nones are sometimes dropped (P('x') vs P('x', None)), sometimes written
    while entries and entries[-1] is None and draw(st.booleans(), label="trim_spec"):
        entries.pop()
    if unused and rank and (split_all or (across and draw(st.integers(0, 3), label="split_rest") != 0)):
        # (else a collective over axes of size > 1 often reads an operand that is the
        # same block along all of them, which hides a wrong group, order or permutation)
        d = next((d for d, e in enumerate(entries) if e), 0)
        while len(entries) <= d:
            entries.append(None)
        entries[d] = (*(entries[d] or ()), *unused)
        unused = []
    if unused:
        event("in_spec: an axis left unmentioned")
    spec = Spec(tuple(entries))
    gshape = tuple(n * (mesh.group_size(entries[d]) if d < len(entries) and entries[d] else 1) for d, n in enumerate(local))
    dtype = dtypes[0] if len(dtypes) == 1 else draw(reuse.sampled_from(dtypes), label="dtype")
    fill = draw(reuse.sampled_from(["small", "iota"]), label="fill")
    seed = draw(st.integers(0, 2**16), label="seed")
    event(f"input rank: {rank}")
    event(f"dtype: {dtype}")
    vma = frozenset(spec.axes())
    # a rank-0 iota would be 0 on every device (and in vmap's member 0), where a wrong
    # collective gives 0 too: it starts at 1..8 instead (from the seed an iota has no use
    # for, so the choice sequence is the same)
    offset = 1 + seed % 8 if fill == "iota" and rank == 0 else 0
    return Input(gshape, dtype, fill, seed, offset), spec, _V(tuple(local), dtype, vma)


def _output_spec(draw: st.DrawFn, body: Body, idx: int) -> Spec | None:
    """An out_spec for body value `idx` as an output, with its unreduced / reduced axes
    (None: jax cannot take it)."""
    spec = _out_spec(draw, body.vals[idx], body.usable, body.check_vma)
    return None if spec is None else out_spec_ur(body.mesh, body.manual, body.vals[idx], spec)


def _out_spec(draw: st.DrawFn, v: _V, manual: tuple[str, ...], check_vma: bool) -> Spec | None:
    """An out_spec valid for `v`: names every axis `v` varies along (when checked)."""
    r = len(v.shape)
    need = sorted(v.vma) if check_vma else []
    if need and r == 0:
        return None
    extra = [a for a in manual if a not in need and a not in v.unreduced and a not in v.reduced]
    chosen = list(need) + [a for a in extra if draw(st.booleans(), label="extra_out_axis")]
    if chosen and r == 0:
        return Spec(()) if not need else None
    order = draw(reuse.permutations(chosen), label="out_axis_order")
    entries: list[list[str]] = [[] for _ in range(r)]
    for a in order:
        entries[draw(st.integers(0, r - 1), label="out_dim")].append(a)
    ent = [tuple(e) if e else None for e in entries]
    keep = max([d + 1 for d, e in enumerate(ent) if e] + [0])
    keep = draw(st.integers(keep, r), label="out_spec_len")
    return Spec(tuple(ent[:keep]))


def _check_program_args(
    max_args: int, max_ops: int, max_outputs: int, kinds: tuple[str, ...], invalid: float, defects: tuple[str, ...]
) -> None:
    if not 0.0 <= invalid <= 1.0:
        raise InvalidArgument(f"invalid={invalid} must be a probability between 0 and 1")
    unknown_defects = set(defects) - set(DEFECTS)
    if unknown_defects or not defects:
        raise InvalidArgument(f"defects={sorted(unknown_defects) or defects} must be non-empty names from {sorted(DEFECTS)}")
    if max_args < 1 or max_ops < 1 or max_outputs < 1:
        raise InvalidArgument(
            f"max_args={max_args}, max_ops={max_ops}, max_outputs={max_outputs} must all be >= 1"
        )
    unknown = set(kinds) - set(ALL_KINDS)
    if unknown:
        raise InvalidArgument(f"kinds contains unknown op kinds {sorted(unknown)}; known: {ALL_KINDS}")


# Swarm testing (Groce et al., "Swarm Testing", ISSTA 2012): each program enables a
# random half of the op kinds and of these features, so some programs are dense in a few
# kinds instead of every program thin in all of them. Drawn with st.booleans, one per
# kind and feature, so Hypothesis shrinks and replays them like any other choice (a
# disabled feature shrinks to enabled: the default program).
# (the forms: "call_form" the call's style, spec and axis_names forms and the grad_remat
# policy; "arg_forms" an op's axes, perm or groups in another form; "empty_axes" a
# collective over no axes: strategies/forms.py; the edges: strategies/edges.py)
SWARM_FEATURES = ("partial_manual", "check_vma_false", "wrap", "free_axis", "float64", "call_form", "arg_forms", "empty_axes",
                  *EDGE_FEATURES)


@st.composite
def swarm(draw: st.DrawFn, kinds: tuple[str, ...]) -> tuple[tuple[str, ...], frozenset[str]]:
    """(the op kinds this program draws from, the features it may use): each kind and
    each feature of SWARM_FEATURES on or off by a coin (all kinds when the coins leave
    none)."""
    on = tuple(k for k in kinds if not draw(st.booleans(), label=f"swarm_off:{k}"))
    features = frozenset(f for f in SWARM_FEATURES if not draw(st.booleans(), label=f"swarm_off:{f}"))
    if not on:
        on = kinds
    event(f"swarm: {len(on)} of {len(kinds)} op kinds")
    for f in SWARM_FEATURES:
        event(f"swarm: {f} {'on' if f in features else 'off'}")
    return on, features


def _manual_axes(draw: st.DrawFn, mesh: Mesh, features: frozenset[str] = frozenset(SWARM_FEATURES)) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(manual, usable): the manual axes (sometimes a strict subset: partial manual), and
    those specs and ops may name (sometimes one manual axis left free for vmap_spmd)."""
    manual = mesh.names
    if len(mesh.names) >= 2 and "partial_manual" in features and draw(st.integers(0, 3), label="partial_manual") == 0:
        # partial manual: axis_names a strict subset; the other axes stay automatic
        k = draw(st.integers(1, len(mesh.names) - 1), label="n_manual")
        manual = tuple(sorted(draw(reuse.permutations(list(mesh.names)), label="manual_axes")[:k], key=mesh.names.index))
        event("partial manual (axis_names a strict subset)")
    usable = manual  # the manual axes specs and ops may name
    big = [a for a in manual if mesh.axis_size(a) > 1]
    if len(manual) >= 2 and big and "free_axis" in features and draw(st.integers(0, 4), label="spmd_reserve") == 2:
        # one manual axis no spec and no op names: vmap can split its batch over it
        # (the vmap_spmd mode needs such an axis)
        reserved = draw(reuse.sampled_from(big), label="reserved_axis")
        usable = tuple(a for a in manual if a != reserved)
        event("a manual axis left free (vmap spmd_axis_name)")
    return manual, usable


# the wrappers beyond scan and cond, drawn as one family (one more draw only when it is
# chosen, so that programs without them draw as before)
_MORE_WRAPS = ("switch", "while", "fori", "map", "vmap", "checkpoint")


def _wrappable(body: Body, i: int) -> tuple[bool, bool]:
    """(whether op i may run inside scan or cond, and whether inside the other wrappers)."""
    op = body.ops[i]
    n_in = len(body.vals) - len(body.ops)
    touches_ur = any(body.vals[j].unreduced or body.vals[j].reduced for j in (*op.operands, n_in + i))
    # (scan stacks its ys with dynamic_update_slice, which refuses unreduced ones)
    some = 1 <= len(op.operands) <= 2 and not touches_ur
    # the other wrappers carry or stack the first operand as a jax array: not a Python
    # number or weak value (lax.axis_size's int), whose types the oracle does not model
    # through a loop carry (sendrecv too: under jax.vmap jax raises for precv, the known
    # entry precv-batching-rule-out-shape; the others run it)
    plain = not any(j in body.python_numbers or j in body.weak for j in (*op.operands, n_in + i))
    return some, some and plain


def _wrap_some(draw: st.DrawFn, body: Body) -> None:
    for i, op in enumerate(body.ops):
        # now and then an op runs inside lax.scan, cond, switch, while_loop, fori_loop,
        # map, jax.vmap or jax.checkpoint (same meaning; see programs/ops.py WRAPS);
        # middle values, as Hypothesis favours the bounds
        some, plain = _wrappable(body, i)
        if some:
            k = draw(st.integers(0, 15), label="wrap")
            w = {5: "scan", 10: "cond"}.get(k)
            if k in (2, 13) and plain:
                w = draw(reuse.sampled_from(_MORE_WRAPS), label="wrap_more")
            if w is not None:
                body.ops[i] = Op.make(op.kind, op.operands, **op.param_dict, wrap=w)
                event(f"wrapped in {w}")


def _outputs(draw: st.DrawFn, body: Body, n_in: int, max_outputs: int,
             first: tuple[int, ...] = ()) -> tuple[list[int], list[Spec]]:
    """The outputs and their out_specs; the first ones are the values `first` (a scalar
    that varies, which no out_spec can take, through a psum over its axes)."""
    n_out = draw(st.integers(1, max_outputs), label="n_outputs")
    outputs, out_specs = [], []
    firsts = list(first)
    for n, f in enumerate(firsts):
        if body.check_vma and body.vals[f].vma and not body.vals[f].shape:
            v = body.vals[f]
            if not (v.unreduced or v.reduced):
                firsts[n] = body.push(Op.make("psum", (f,), axes=tuple(sorted(v.vma))))
    # the body values no op reads (sinks): an op none of the outputs depends on is dead
    # (jit drops it, and its cells count for nothing; with outputs drawn among all
    # values about half the ops were dead), so the outputs take the sinks first, as
    # many as max_outputs allows
    read = {j for o in body.ops for j in o.operands}
    sinks = [j for j in range(n_in, len(body.vals)) if j not in read and j not in firsts]
    n_out = max(n_out, len(firsts), min(len(sinks) + len(firsts), max_outputs))
    for k in range(n_out):
        # favour body values (the last one most)
        lo = n_in if body.ops else 0
        idx = draw(st.integers(lo, len(body.vals) - 1), label="output")
        if draw(st.booleans(), label="output_last"):
            idx = len(body.vals) - 1
        if sinks and draw(st.integers(0, 3), label="output_sink") != 0:
            idx = sinks.pop(draw(st.integers(0, len(sinks) - 1), label="sink"))
        if k < len(firsts):
            idx = firsts[k]
        spec = _output_spec(draw, body, idx)
        if spec is None:
            continue
        outputs.append(idx)
        out_specs.append(spec)
    if not outputs:
        # every candidate was a scalar varying value: reduce the last plain one over its axes
        last = max(j for j, w in enumerate(body.vals) if not (w.unreduced or w.reduced))
        v = body.vals[last]
        i = body.push(Op.make("psum", (last,), axes=tuple(sorted(v.vma))))
        assert i is not None, "psum over every axis a value varies along is always valid"
        outputs.append(i)
        out_specs.append(Spec(()))
    event(f"outputs: {len(outputs)}")
    return outputs, out_specs


def _program(body: Body, inputs: list[Input], in_specs: list[Spec], outputs: list[int], out_specs: list[Spec]) -> Program:
    """The program `body` built (axis_names only when not every mesh axis is manual)."""
    return Program(
        mesh=body.mesh,
        inputs=tuple(inputs),
        in_specs=tuple(in_specs),
        body=tuple(body.ops),
        outputs=tuple(outputs),
        out_specs=tuple(out_specs),
        axis_names=None if body.manual == body.mesh.names else body.manual,
        check_vma=body.check_vma,
    )


def _maybe_invalid(draw: st.DrawFn, program: Program, body: Body, invalid: float, defects: tuple[str, ...]) -> Program:
    """`program`, or with probability `invalid` the same with one named defect."""
    # Hypothesis leans to small integers (a drawn st.integers(0, 9999) < 2500 came out
    # true for 86% of programs at invalid=0.25); the drawn program's hash is uniform and
    # still a function of what was drawn. Bits above those apply_defect uses.
    roll = int(hashlib.sha256(repr(program).encode()).hexdigest(), 16) >> 128
    chosen = invalid > 0 and roll % 10000 < invalid * 10000
    if program.wrap is not None:
        # a wrapper's specs are per output / argument: its own defect, else the defect goes
        # on the program as drawn, without the wrapper (the mesh outside it)
        ours = tuple(d for d in defects if d in WRAP_DEFECTS)
        bad = apply_defect(draw, program, body.vals, ours) if chosen and ours else None
        if bad is not None:
            event(f"defect: {bad.defect}")
            return bad
        if not chosen:
            return program
        outer = replace(program, mesh=program.outer_mesh(), wrap=None, wrap_axes=(), wrap_specs=())
        needs = strict_explicit(outer) and any(s.kind == "P" and s.axes() for s in outer.in_specs)
        program = replace(outer, reshard=program.reshard or needs)
    if (strict_explicit(program) or any(s.unreduced or s.reduced for s in program.out_specs)
            or any(v.unreduced or v.reduced for v in body.vals)):
        # an argument resharded or an unreduced out_spec fails in its own way first
        # (reshard, _check_unreduced) under most other defects: only these apply
        defects = tuple(d for d in defects if d in EXPLICIT_DEFECTS)
    else:
        defects = tuple(d for d in defects if d not in EXPLICIT_DEFECTS) or defects
    if chosen and defects:
        bad = apply_defect(draw, program, body.vals, defects)
        if bad is None:
            event("defect: none applicable")
        else:
            event(f"defect: {bad.defect}")
            # (reshard is optional here: another defect's specs may not fit the arguments)
            return bad if bad.defect in EXPLICIT_DEFECTS else replace(bad, reshard=False)
    return program


@st.composite
def programs(
    draw: st.DrawFn,
    *,
    max_devices: int = 8,
    max_axes: int = 3,
    max_args: int = 3,
    max_ops: int = 8,
    max_outputs: int = 3,
    check_vma: bool | None = None,
    kinds: tuple[str, ...] = ALL_KINDS,
    invalid: float = 0.0,
    defects: tuple[str, ...] = tuple(DEFECTS),
    large: float = 0.0,
    use_swarm: bool = True,
    focus: float = FOCUS_SHARE,
) -> Program:
    """A valid shard_map program.

    - max_devices, max_axes: bounds on the mesh (see `meshes`).
    - max_args: 1..max_args arguments of rank 0..3, of any dtype in DTYPES, small
      integers; float64 only in programs with the swarm feature "float64" (then the
      first argument is float64 and the program runs under jax_enable_x64).
    - max_ops: 1..max_ops body ops, local ops mixed with every collective.
    - max_outputs: 1..max_outputs outputs with valid out_specs.
    - check_vma: fixed flag, or None to draw it (True three times in four).
    - kinds: the op kinds to draw from (default: all).
    - invalid: probability that the program carries exactly one named defect (recorded
      in `Program.defect`); defects: the defect names to choose from (default: all in
      `strategies.invalid.DEFECTS`).
    - large: probability that the program is large: every device of the mesh, one
      argument whose per-device block holds at least `LARGE_ELEMENTS` (4 MiB), no all_gather (which would multiply
      it by the group size). 0 draws exactly what earlier versions drew.
    - use_swarm: swarm testing (`swarm`): each program draws from a random subset of
      `kinds` and of SWARM_FEATURES; False: every kind and feature every time.
    - focus: the share of programs drawn around one configuration cell (a drawn focus:
      strategies/focus.py), for the modes few other programs reach; 0: none.

    Example::

        @given(programs(max_ops=4))
        def test_shapes(p): ...
    """
    _check_program_args(max_args, max_ops, max_outputs, kinds, invalid, defects)
    if not 0.0 <= large <= 1.0:
        raise InvalidArgument(f"large={large!r} must be a probability between 0 and 1 (e.g. large=0.05)")
    if not 0.0 <= focus <= 1.0:
        raise InvalidArgument(f"focus={focus!r} must be a probability between 0 and 1 (e.g. focus=0.5)")
    # a share of programs is drawn around one configuration cell (strategies/focus.py)
    f = draw_focus(draw, focus, kinds) if focus > 0 else None
    if f is not None and f.by_error and invalid == 0:
        f = Focus(f.cell.removesuffix("|by_error"), f.profile)  # (a strategy without defects: the cell by value)
    enabled, features = draw(swarm(kinds), label="swarm") if use_swarm else (kinds, frozenset(SWARM_FEATURES))
    if f is not None:
        return _focused(draw, f, kinds, max_args, max_outputs, defects)
    # (a hash of the drawn number: Hypothesis draws small integers far more often than a
    # uniform draw would, which would make `large` mean much more than its share)
    big = large > 0 and _uniform(draw(st.integers(0, 9999), label="large")) < large
    # a large program uses 8 devices (multiprocess: 4 in each process)
    if big and max_devices >= 8:
        sizes = draw(reuse.sampled_from([s for s in _LARGE_MESHES if len(s) <= max_axes]), label="large_mesh")
        mesh = Mesh(AXIS_NAMES[: len(sizes)], sizes)
        event(f"mesh rank: {len(sizes)}")
        event("mesh devices: 8")
    else:
        mesh = draw(meshes(max_devices=max_devices, max_axes=max_axes), label="mesh")
    manual, usable = _manual_axes(draw, mesh, features)
    if not big:  # Auto, Explicit or mixed axes (strategies/explicit.py)
        mesh = axis_types(draw, mesh, manual)
    if check_vma is not None:
        vma_flag = check_vma
    elif "check_vma_false" in features:
        vma_flag = draw(reuse.sampled_from([True, True, True, False]), label="check_vma")
    else:
        vma_flag = True
    event(f"check_vma: {vma_flag}")
    # float64 under jax_enable_x64 (`Program.x64`): the first argument is float64, the
    # others and casts may be (shrinks to a program without it)
    x64 = "float64" in features and draw(st.integers(0, 3), label="x64") == 3
    if x64:
        event("float64 (jax_enable_x64)")
    if big:  # (no all_gather: it would multiply the large block by the group size)
        kinds = tuple(k for k in kinds if k != "all_gather")
        enabled = tuple(k for k in enabled if k != "all_gather") or kinds
    n_args = 1 if big else draw(st.integers(1, max_args), label="n_args")
    inputs, in_specs, vals = [], [], []
    for i in range(n_args):
        dts = ((X64_DTYPE,) if i == 0 else DTYPES) if x64 else _X32_DTYPES
        x, s, v = draw(_argument(mesh, usable, i, large=big, dtypes=dts), label=f"arg{i}")
        inputs.append(x)
        in_specs.append(s)
        vals.append(v)
    body = Body(mesh, manual, vma_flag, vals, usable, x64=x64)
    if not big:  # (before the ops: a Python scalar is weak, which the ops' draws respect)
        inputs = scalar_arguments(draw, inputs, in_specs, body, features)
    body.features = features
    n_ops = draw(st.integers(1, max_ops), label="n_ops")
    for _ in range(n_ops):
        for _attempt in range(4):
            kind = draw(reuse.sampled_from(enabled), label="op_kind")
            if body.try_op(draw, kind):
                break
    if draw(st.integers(0, 2), label="reduced") == 0:
        draw_reduced(draw, body)  # a chain through the reduced / unreduced types
    if manual != mesh.names and "shard_map" in enabled and draw(st.integers(0, 2), label="nested") != 0:
        body.try_op(draw, "shard_map")  # partial manual: about half get a nested shard_map
    if "transform" in enabled and draw(st.integers(0, 3), label="transform_more") == 0:
        body.try_op(draw, "transform")  # a derivative transform in about an eighth of the programs more
    if "wrap" in features:
        _wrap_some(draw, body)
    outputs, out_specs = _outputs(draw, body, len(inputs), max_outputs)
    for o in body.ops:
        if o.kind in COLLECTIVES:
            event(f"collective: {o.kind}")
    program = _program(body, inputs, in_specs, outputs, out_specs)
    program = call_form(draw, program)  # jax.set_mesh or mesh=, and reshard
    program = _maybe_invalid(draw, program, body, invalid, defects)
    # placements, closures, effects, donation (strategies/edges.py); none on an invalid
    # program (a defect is one mistake: its Python scalars become NumPy arguments again)
    if program.defect is not None:  # (a committed placement is the placement_mismatch defect's own)
        program = replace(program, inputs=tuple(replace(x, place=None) if x.place is not None and x.place.how == "scalar" else x
                                                 for x in program.inputs))
    elif not big:
        program = draw_edges(draw, program, body, features)
    # (the call's forms, its meaning kept: strategies/forms.py; a program with edges is
    # called from a function of its own, in the plain form: programs/emit.py `_called_src`)
    if "call_form" in features and not program.has_edges():
        program = draw_call_form(draw, program)
    return program


# the chain of strategies/explicit.py `draw_reduced` that holds each (kind, to=) cell
_UR_CHAIN = {("pcast", "unreduced"): ("unreduced_psum", "unreduced_add"), ("pcast", "reduced"): ("reduced_varying",),
             ("all_gather", "reduced"): ("all_gather_reduced",)}


def _appended(body: Body, before: int, kind: str) -> Iterator[tuple[int, set[str]]]:
    """(value index, cells) of each op of `kind` (or a nested shard_map of it) appended
    to the body since its op `before`."""
    n_in = len(body.vals) - len(body.ops)
    for i in range(before, len(body.ops)):
        op = body.ops[i]
        if op.kind == kind or (op.kind == "shard_map" and op.p("inner") == kind):
            rank = len(body.vals[op.operands[0]].shape) if op.operands else None
            yield n_in + i, op_cells(body.mesh, op, rank, body.vals[n_in + i].dtype)


def _focus_reduced(draw: st.DrawFn, body: Body, f: Focus, to: str, want: str, wants: set[str]) -> int | None:
    """A focus on `to=reduced` / `to=unreduced` (ops the plain collective draws never
    make): the value ending a closed chain through that type (`draw_reduced`), whose
    cone holds the op with the cell (its result is not an output over Auto axes). By
    error, the chain stays open: its end is the unreduced / reduced value itself, an
    output whose out_spec (over the Explicit axes of the focus mesh, `_focused`) names
    those axes, which the defect then drops (jax finds it after tracing the body)."""
    chains = _UR_CHAIN.get((f.kind, to))
    if chains is None:
        return None
    best: tuple[int, int] | None = None
    for _ in range(3):
        before = len(body.ops)
        draw_reduced(draw, body, draw(reuse.sampled_from(chains), label="ur_chain"), closed=not f.by_error)
        end = len(body.vals) - 1
        if bool(body.vals[end].unreduced or body.vals[end].reduced) != f.by_error:
            continue
        for _i, cells in _appended(body, before, f.kind):
            if want in cells:
                score = len(wants & cells)
                if score == len(wants):
                    return end
                if best is None or score > best[0]:
                    best = (score, end)
    return None if best is None else best[1]


def _focus_axes(mesh: Mesh, usable: tuple[str, ...], cls: str | None) -> tuple[str, ...] | None:
    """Axes of the usable ones that make the axis-tuple class `cls` (programs/cells.py
    `_axes_class`) on `mesh`, or None (drawn: "one", or no such tuple): every
    usable axis, in mesh order, or reversed for "out_of_mesh_order"."""
    ordered = tuple(a for a in mesh.names if a in usable)
    if cls is None or cls == "one" or len(ordered) < 2:
        return None
    ones = [mesh.axis_size(a) == 1 for a in ordered]
    if cls == "out_of_mesh_order":
        return ordered[::-1]
    if (cls == "with_size_1") == any(ones):
        return ordered
    return None


def _takes_all(body: Body, kind: str, j: int, axes: tuple[str, ...]) -> bool:
    """Whether value `j` lets a `kind` op over all of `axes` be drawn (else
    strategies/body.py `try_op` and the collective draws narrow the axes or fail):
    pcast (pvary) adds only axes it does not vary along; under check_vma psum, pmean and
    psum_scatter take axes it varies along all or none of; psum_scatter and all_to_all
    need a dimension the group size divides, pswapaxes one equal to it."""
    v = body.vals[j]
    inside = set(axes) & set(v.vma)
    n = body.n(axes)
    if kind == "pcast":
        return not inside
    if kind in ("psum", "pmean", "psum_scatter") and body.check_vma and inside and inside != set(axes):
        return False
    if kind in ("psum_scatter", "all_to_all"):
        return any(d % n == 0 for d in v.shape)
    if kind == "pswapaxes":
        return n in v.shape
    return True


def _focus_operand(draw: st.DrawFn, body: Body, f: Focus, extra: tuple[Focus, ...] = (),
                   axes: tuple[str, ...] | None = None) -> int | None:
    """A value the focus op may read: of the dtype or rank the focus (or its `extra`
    foci) names (a cast to the dtype made first when no value has it); over `axes`, one
    that keeps them all where some value does (`_takes_all`)."""
    want_rank, want_dtype = wanted((f, *extra))
    ok = [j for j, v in enumerate(body.vals) if not (v.unreduced or v.reduced)
          and (want_dtype is None or v.dtype == want_dtype)
          and (want_rank is None or min(len(v.shape), 3) == want_rank)
          and not (f.kind == "cast" and j in body.python_numbers)]
    # (a cast of a value that takes them all, where no value of the dtype does: the rare
    # dtypes are the first argument's only, and its shape or varying axes may not fit)
    recast = False
    if axes is not None:
        fit = [j for j in ok if _takes_all(body, f.kind, j, axes)]
        if f.kind in ACROSS:  # (one that varies along them all: strategies/body.py `ACROSS`)
            fit = body.varying(draw, fit, axes, label="focus_varying")
        if not fit and ok and f.kind == "pcast" and body.check_vma:
            # (pvary adds only axes a value does not vary along: the psum of one over them
            # is invariant there, of the same shape)
            j = draw(reuse.sampled_from(ok), label="focus_psum_from")
            inside = tuple(a for a in axes if a in body.vals[j].vma)
            r = body.push(Op.make("psum", (j,), axes=inside)) if inside else None
            if r is not None and (want_dtype is None or body.vals[r].dtype == want_dtype):
                fit = [r]
        recast = bool(ok) and not fit and want_dtype is not None
        ok = fit or ok
    if (not ok or recast) and want_dtype is not None and (want_dtype in body.dtypes or want_dtype in _PROMOTED):
        src = [j for j, v in enumerate(body.vals) if not (v.unreduced or v.reduced) and j not in body.python_numbers
               and (want_rank is None or min(len(v.shape), 3) == want_rank)]
        if axes is not None:  # (a cast keeps the shape and the varying axes)
            src = [j for j in src if _takes_all(body, f.kind, j, axes)] or ([] if recast else src)
        if src:
            j = draw(reuse.sampled_from(src), label="focus_cast_from")
            c = _promoted(draw, body, j, want_dtype) if want_dtype in _PROMOTED else body.push(Op.make("cast", (j,), dtype=want_dtype))
            ok = ok if c is None else [c]
    if axes is None and f.kind in ("psum_scatter", "all_to_all", "pswapaxes"):
        # (one with a dimension some usable axis splits or swaps, where a value has one:
        # any value, and the op failed at every draw of a body whose arguments fit only first)
        ok = [j for j in ok if any(_takes_all(body, f.kind, j, (a,)) for a in body.usable)] or ok
    if axes is None and f.kind in ACROSS:  # (one that varies along some usable axis)
        ok = body.varying(draw, ok, label="focus_varying")
    return draw(reuse.sampled_from(ok), label="focus_operand") if ok else None


# dtypes only an op's result has, never an argument's or a cast's (programs/model.py
# `_STORAGE`): int16 is int8 + uint8 (jnp's promotion), int64 an int32 sum under x64,
# uint64 a uint32 sum under x64 (oracles/ops/local.py: jnp.sum widens to 64 bits)
_PROMOTED = ("int16", "int64", "uint64")
_X64_ONLY = ("int64", "uint64")


def _promoted(draw: st.DrawFn, body: Body, j: int, dtype: str) -> int | None:
    """A value of `dtype` (one of _PROMOTED) made from value `j`, or None."""
    def cast(to: str) -> int | None:
        return j if body.vals[j].dtype == to else body.push(Op.make("cast", (j,), dtype=to))

    if dtype == "int16":
        a, b = cast("int8"), cast("uint8")
        return None if a is None or b is None else body.push(Op.make("add", (a, b)))
    a = cast("int32" if dtype == "int64" else "uint32") if body.x64 else None
    if a is None or not body.try_op(draw, "reduce_sum", operand=a):
        return None
    return len(body.vals) - 1 if body.vals[-1].dtype == dtype else None


def _focus_op(draw: st.DrawFn, body: Body, f: Focus, extra: tuple[Focus, ...] = ()) -> int | None:
    """The index of a value made by an op with the focus's cell, drawn among the ops of
    its kind on a matching operand (a few tries); None when none came out with it. With
    `extra` foci (of other dimensions: a sweep's compound focus), the first op that also
    has all their cells, else the one with most (a wrapper's is applied afterwards)."""
    want = f.cell.removesuffix("|by_error")
    wants = {g.cell.removesuffix("|by_error") for g in extra if g.dimension != "wrap"}
    cast_to = _cast_to((f, *extra))
    best: tuple[int, int] | None = None  # (extra cells it has, value index)
    to = next((g.reduced_type for g in (f, *extra) if g.reduced_type is not None), None)
    if to is not None:
        # (by error on an Explicit focus mesh: with reduced values only the Explicit-axis
        # defects apply, `_maybe_invalid`)
        return _focus_reduced(draw, body, f, to, want, wants)
    cls = next((c for g in (f, *extra) if (c := g.fixes("axes")) is not None), None)
    axes = () if cls == "empty" else _focus_axes(body.mesh, body.usable, cls)
    # the one psum with a bool result is over no axes (oracles/ops/reductions.py: psum
    # returns its operand as it is there; over any axis it sums a bool as int32)
    empty = f.kind == "psum" and wanted((f, *extra))[1] == "bool"
    if f.kind == "pcast" and axes is None and len(body.usable) == 1:
        axes = body.usable  # (pvary needs a value invariant along the one axis: `_takes_all`)
    for n in range(6):
        idx = _focus_operand(draw, body, f, extra, axes if n % 2 == 0 or cls == "empty" else None)
        if idx is None:
            break
        before = len(body.ops)
        if cast_to is not None:
            ok = cast_to in body.dtypes and body.vals[idx].dtype != cast_to and body.push(Op.make("cast", (idx,), dtype=cast_to)) is not None
        else:
            # every other try over the axes of the focus's axis-tuple class (the others
            # drawn); the parameters drawn in the classes the foci name (`Body.want`)
            body.want = _steering((f, *extra))
            if f.kind in BINARY_OPS and (d := wanted((f, *extra))[1]) is not None:
                body.want["dtype"] = d  # (the binary op's partner of that dtype: strategies/local_ops.py)
            try:
                ok = body.try_op(draw, f.kind, operand=idx, axes=() if empty else axes if n % 2 == 0 or cls == "empty" else None)
            finally:
                body.want = {}
        if not ok:
            continue
        for at, cells in _appended(body, before, f.kind):
            if want in cells or (f.dimension == "wrap" and f"{f.kind}|wrap=plain" in cells):
                score = len(wants & cells)
                if score == len(wants):
                    return at
                if best is None or score > best[0]:
                    best = (score, at)
                break
    return None if best is None else best[1]


def _cast_to(foci: tuple[Focus, ...]) -> str | None:
    """The dtype a cast focus among `foci` casts to (a cast's dtype cell is its result's)."""
    return next((g.value for g in foci if g.kind == "cast" and g.dimension == "dtype"), None)


def _steering(foci: tuple[Focus, ...]) -> dict[str, str]:
    """The parameter classes the foci name, for the collective draws (`Body.want`):
    axis positions and tiled (programs/cells.py `PAIRED`), perm, and all_to_all's
    split!=concat / split==concat (as "split": "!=" / "==")."""
    out: dict[str, str] = {}
    for g in foci:
        for d, v in g.parts:
            if d in PAIRED or d in ("perm", "in_spec") or d.endswith("_form"):
                out[d] = v
            elif g.dimension in ("split!=concat", "split==concat") or d in ("split!", "split"):
                out["split"] = "!=" if "!=" in g.cell else "=="
    return out


# the least rank of a value the kind's op takes, where it is above 0 (strategies/local_ops.py;
# the kinds of _FITS get a dimension of the group size, so a rank of 1 or more, anyway)
_MIN_RANK = {"transpose": 2, "reduce_sum": 1}


def _takeable_rank(draw: st.DrawFn, kind: str, rank: int | None) -> int | None:
    """`rank`, or where it is drawn (None) and the focus kind takes no value of a low rank,
    a rank it takes, 2 or 3 for a transpose."""
    if rank is None and kind in _MIN_RANK:
        return draw(st.integers(_MIN_RANK[kind], 3), label=f"{kind}_rank")
    return rank


_FITS = ("psum_scatter", "all_to_all", "pswapaxes")
_FIT_PARAM = {"psum_scatter": "scatter_dimension", "all_to_all": "split_axis", "pswapaxes": "axis"}  # the parameter naming that dimension  # the kinds `_takes_all` needs a dimension of the group size for


@st.composite
def programs_around(draw: st.DrawFn, f: Focus | tuple[Focus | tuple[Focus, ...], ...], *, max_args: int = 3, max_outputs: int = 3,
                    defects: tuple[str, ...] = (), avoid: tuple[str, ...] = ()) -> Program:
    """A program drawn around the focus `f` (what `programs` draws for its focused share),
    or around every focus of a sweep group (harness/campaign/sweep.py `sweep_groups`): each
    focus op is an output. A group's member may be a compound focus, a tuple of foci of
    one kind and other dimensions: one op drawn to have all their cells (as many as it
    can). A `|by_error` focus's defect comes from `defects` (default: all). The ops drawn
    besides the foci's are of no kind in `avoid` (the sweep's draws after one whose op of
    such a kind jax is known to go wrong at: harness/campaign/sweep.py)."""
    group = f if isinstance(f, tuple) else (f,)
    first = group[0] if isinstance(group[0], Focus) else group[0][0]
    if first.kind in FEATURE_KINDS:
        return _featured(draw, group, tuple(k for k in ALL_KINDS if k not in avoid), max_args, max_outputs)
    return _focused(draw, f, tuple(k for k in ALL_KINDS if k not in avoid), max_args, max_outputs, defects or tuple(DEFECTS))


def _featured(draw: st.DrawFn, foci: tuple[Focus | tuple[Focus, ...], ...], kinds: tuple[str, ...], max_args: int,
              max_outputs: int) -> Program:
    """A valid program around a group of foci on how a program meets its shard_map
    (programs/cells.py `FEATURE_KINDS`: place, closure, effect, donate): a mesh that can
    hold them all (strategies/edges.py `feature_mesh`: a free manual axis for vmap_spmd,
    an automatic one for a placement over it, an Explicit one for reshard), an argument
    fit for each compound focus on a placement or a closure (a rank-0 float32 for a Python
    scalar, one split along the usable axes for a placement by or around its in_spec, a
    replicated one for a closure), a few ops, then each argument's placement or closure,
    and the effects and donation asked for (strategies/edges.py)."""
    group = [(g,) if isinstance(g, Focus) else tuple(g) for g in foci]
    want = feature_want(group)
    # (a placement over an Explicit axis needs an Explicit mesh, which the grad modes do not
    # run: beside foci they would check, it waits for a program of its own, the sweep's
    # next group, so that the others are checked in every mode of their profile)
    typed = [a for a in want.get("place", ()) if a.get("typed") == "yes" or a.get("how") == "reshard" or a.get("spec") == "free_explicit"]
    if typed and len(typed) < sum(len(v) for v in want.values()):
        want = {**want, "place": tuple(a for a in want["place"] if a not in typed)}
    mesh, manual, usable = feature_mesh(draw, want, AXIS_NAMES)
    # one argument per placement or closure asked for (a Python scalar has no sharding: a
    # compound asking for both is two arguments)
    per_arg: list[tuple[str, dict[str, str]]] = []
    for a in want.get("place", ()):
        if a.get("how") == "scalar" and len(a) > 1:
            per_arg += [("place", {"how": "scalar"}), ("place", {k: v for k, v in a.items() if k != "how"})]
        else:
            per_arg.append(("place", a))
    per_arg += [("closure", a) for a in want.get("closure", ())]
    n_args = max(draw(st.integers(1, max_args), label="n_args"), len(per_arg)) + 1  # (one more, float32: grad differentiates it)
    inputs, in_specs, vals = [], [], []
    for i in range(n_args):
        kind, ask = per_arg[i] if i < len(per_arg) else ("", {})
        rank: int | None = None
        axes, split, dts = usable, False, _X32_DTYPES
        if kind == "place" and ask.get("how") == "scalar":
            rank, axes, dts = 0, (), ("float32",)
        elif kind == "place" and ask.get("spec") in ("in_spec", "order"):
            rank, split = draw(st.integers(1, 3), label="featured_rank"), True
        elif kind == "place" and ask.get("spec") in ("other", "free_auto", "free_explicit"):
            rank = draw(st.integers(1, 3), label="featured_rank")
            if ask.get("spec") == "other":
                axes = ()  # (an in_spec naming none of the axes a placement may name: any it names are others)
        elif kind == "closure":
            axes = ()
            dts = ("float32",) if ask.get("differentiated") == "yes" else dts
        if i == n_args - 1:
            dts = ("float32",)
        x, sp, v = draw(_argument(mesh, axes, i, dtypes=dts, rank=rank, split_all=split), label=f"arg{i}")
        inputs.append(x)
        in_specs.append(sp)
        vals.append(v)
    body = Body(mesh, manual, True, vals, usable)
    scalars = frozenset(i for i, (k, a) in enumerate(per_arg) if k == "place" and a.get("how") == "scalar")
    if scalars:
        inputs = scalar_arguments(draw, inputs, in_specs, body, frozenset({"placement"}), only=scalars)
    enabled = tuple(k for k in kinds if k not in ("shard_map", "transform", "sendrecv", "pbroadcast", "ragged_all_to_all"))
    for _ in range(draw(st.integers(1, 4), label="n_ops")):
        body.try_op(draw, draw(reuse.sampled_from(enabled or kinds), label="op_kind"))
    outputs, out_specs = _outputs(draw, body, len(inputs), max_outputs)
    floats = [j for j, v in enumerate(body.vals) if is_float(v.dtype) and not (v.vma and not v.shape)]
    if not any(is_float(body.vals[o].dtype) for o in outputs) and floats:  # (the grad modes check a float output)
        j = draw(reuse.sampled_from(floats), label="float_output")
        if (spec := _output_spec(draw, body, j)) is not None:
            outputs.append(j)
            out_specs.append(spec)
    read = {j for o in body.ops for j in o.operands} | set(outputs)
    for i in range(len(per_arg)):  # (a feature counts for an argument the program uses: an output, where no op reads it)
        if i not in read and (spec := _output_spec(draw, body, i)) is not None:
            outputs.append(i)
            out_specs.append(spec)
    program = _program(body, inputs, in_specs, outputs, out_specs)
    if strict_explicit(program):  # (every axis manual and Explicit: a splitting in_spec needs its argument resharded)
        program = replace(program, reshard=any(sp.axes() for sp in in_specs))
    for i, (kind, ask) in enumerate(per_arg):
        if kind == "closure":
            program = close_argument(draw, program, i, ask)
        elif kind == "place" and ask.get("how") != "scalar":
            program = place_argument(draw, program, i, ask)
    return draw_edges(draw, program, body, frozenset(), {k: v for k, v in want.items() if k in ("effect", "donate")})


def _focused(draw: st.DrawFn, foci: Focus | tuple[Focus | tuple[Focus, ...], ...], kinds: tuple[str, ...], max_args: int, max_outputs: int,
             defects: tuple[str, ...]) -> Program:
    """A program around the focus `foci` (one, or a sweep group: strategies/focus.py):
    the first focus's profile mesh (Auto, passed as mesh=) and flags, the first
    arguments of the foci's ranks or dtypes, a few ops, then each focus op, made an
    output; invalid (one defect) for `|by_error` cells, valid otherwise."""
    group = [(g,) if isinstance(g, Focus) else tuple(g) for g in ((foci,) if isinstance(foci, Focus) else foci)]
    every = [g for c in group for g in c]
    f = group[0][0]
    if f.kind == CALL:
        return _call_focused(draw, tuple(every), kinds, max_args, max_outputs, defects)
    # (an Auto mesh passed as mesh=: the grad and multiprocess modes do not run a
    # program under a mesh context, harness/run/compat.py `_explicit_mode_gaps`)
    mesh, usable = focus_mesh(draw, f, AXIS_NAMES)
    # a reduced / unreduced focus by error: every axis Explicit, so an out_spec can name
    # the open chain's reduced axes and the defect drop them (the one Explicit-axis
    # defect jax finds after tracing the body, so the chain's cells count by error)
    explicit = any(g.by_error and g.reduced_type is not None for g in every)
    if explicit:
        mesh = Mesh(mesh.names, mesh.sizes, ("explicit",) * len(mesh.names))
    manual = mesh.names
    if f.kind == "shard_map" and any(g.fixes("in_spec") == "inferred" or g.fixes("inner_axes") == "explicit" for g in every):
        # (in_specs left out: jax infers them only over Explicit axes, the last one here)
        mesh = Mesh(mesh.names, mesh.sizes, mesh.axis_types[:-1] + ("explicit",))
    if f.kind == "shard_map":
        manual = mesh.names[:-1]  # a nested shard_map's axes are Auto outside it: the last axis is
    vma_flag = not any(g.needs_check_vma_off for g in every)
    x64 = any(g.fixes("dtype") in (X64_DTYPE, *_X64_ONLY) for g in every)
    rank, dtype = argument_constraint(f, x64, group[0][1:])
    # (a transpose needs rank 2 or more: from a drawn rank, a third of its focus programs
    # had no value it could take)
    rank = _takeable_rank(draw, f.kind, rank)
    # a sweep group's other (compound) foci of a rank or dtype: the next arguments take them
    others = [c for c in group[1:] if any(d in ("rank", "dtype") or v == "middle" for g in c for d, v in g.parts)]
    # (of a rank their op takes: else a focus such as transpose|dtype=int8|by_error, its
    # argument drawn of rank 0 or 1, is never held, and the sweep gives it up in every mode)
    more = [(_takeable_rank(draw, c[0].kind, r), d) for c in others for r, d in [argument_constraint(c[0], x64, c[1:])]]
    # a psum_scatter, all_to_all or pswapaxes over every usable axis (`_focus_axes`) needs
    # a dimension of the group's size (a multiple, tiled): the first argument has one
    fit = None
    if f.kind in _FITS and (axes := _focus_axes(mesh, usable, f.fixes("axes"))) is not None:
        fit = mesh.group_size(axes)
    elif f.kind in _FITS and usable:
        # over one axis (the smap profile's mesh has one; the class "one"): a dimension of
        # the size of one usable axis (without it, half the focus programs of these kinds
        # held no such op at all: no dimension of the argument fit the group)
        fit = mesh.axis_size(usable[0] if len(usable) == 1 else draw(reuse.sampled_from(usable), label="fit_axis"))
    if f.kind == "shard_map":  # (a nested one puts its Auto axis on a dimension it divides)
        fit = mesh.axis_size(mesh.names[-1])
    # the dimension the focus op splits or swaps (its position's class, where a focus names it)
    fit_class = _steering(tuple(group[0])).get(_FIT_PARAM.get(f.kind, ""))
    n_args = draw(st.integers(1, max_args), label="n_args")
    if not is_float(dtype):
        n_args = max(n_args, 2)  # a float argument too: grad differentiates it
    if more:
        n_args = max(n_args, 2 + len(more))  # (argument 1 stays float32)
    inputs, in_specs, vals = [], [], []
    scalars: list[int] = []  # arguments drawn of rank 1 for a varying scalar (their sum)
    # a cast to float32 needs an operand of another dtype (its first argument's: else
    # arguments 0 and 1 are both float32, and `cast|dtype=float32` is seldom held)
    cast_to = _cast_to(group[0])
    for i in range(n_args):
        dts: tuple[str, ...] = ((dtype or "float32",) if i == 0 else ("float32",) if i == 1 else (DTYPES if x64 else _X32_DTYPES))
        if i == 0 and cast_to == "float32" and wanted(group[0])[1] is None:
            dts = tuple(d for d in (DTYPES if x64 else _X32_DTYPES) if d != cast_to)
        r, fits, at_class = (rank, fit, fit_class) if i == 0 else (None, None, None)
        if i >= 2 and i - 2 < len(more):
            r, d = more[i - 2]
            dts = (d or ("float64" if x64 else "float32"),)
            if others[i - 2][0].kind in _FITS:
                # (its op splits or swaps a dimension of the group's size too: without one,
                # a sweep group's second pswapaxes of a dtype held in a third of its draws)
                fits, at_class = fit, _steering(others[i - 2]).get(_FIT_PARAM.get(others[i - 2][0].kind, ""))
        across = f.kind in ACROSS and (i == 0 or 0 <= i - 2 < len(more))
        if across and r == 0 and len(dts) == 1 and usable:
            # a scalar that differs along the usable axes: the sum of a rank-1 argument
            # split along them all, cast back to its dtype where jnp.sum widens it (a
            # rank-0 argument is the same on every device)
            r = 1
            scalars.append(i)
        x, s, v = draw(_argument(mesh, usable, i, dtypes=dts, rank=r, fit=fits, fit_class=at_class, across=across,
                                 split_all=i in scalars), label=f"arg{i}")
        inputs.append(x)
        in_specs.append(s)
        vals.append(v)
    body = Body(mesh, manual, vma_flag, vals, usable, x64=x64)
    for i in scalars:
        j = body.push(Op.make("reduce_sum", (i,), axis=0))
        if j is not None and body.vals[j].dtype != body.vals[i].dtype:
            body.push(Op.make("cast", (j,), dtype=body.vals[i].dtype))
    enabled = tuple(k for k in kinds if k not in ("shard_map", "transform", "sendrecv", "pbroadcast", "ragged_all_to_all"))
    for _ in range(draw(st.integers(0, 3), label="n_ops")):
        body.try_op(draw, draw(reuse.sampled_from(enabled or kinds), label="op_kind"))
    ats = []
    for c in group:
        at = _focus_op(draw, body, c[0], c[1:])
        event(f"focus: {'drawn' if at is not None else 'not drawn'}")
        w = next((g for g in c if g.dimension == "wrap"), None)
        if at is not None and w is not None and w.value != "plain":
            some, plain = _wrappable(body, at - len(inputs))
            if some and (plain or w.value in ("scan", "cond")):
                op = body.ops[at - len(inputs)]
                body.ops[at - len(inputs)] = Op.make(op.kind, op.operands, **op.param_dict, wrap=w.value)
        if at is not None and at not in ats:
            ats.append(at)
    outputs, out_specs = _outputs(draw, body, len(inputs), max(max_outputs, len(ats)), first=tuple(ats))
    if not any(is_float(body.vals[o].dtype) for o in outputs):
        # a float output too: the grad modes check a program only through one (a sweep
        # group of six axis_index foci made six int32 outputs, and the grad modes never
        # ran it: those foci were given up in every seed-0 and seed-1 sweep)
        floats = [j for j, v in enumerate(body.vals) if is_float(v.dtype) and not (v.unreduced or v.reduced)
                  and not (body.check_vma and v.vma and not v.shape)]
        if floats:
            j = draw(reuse.sampled_from([j for j in floats if j >= len(inputs)] or floats), label="float_output")
            spec = _output_spec(draw, body, j)
            if spec is not None:
                outputs.append(j)
                out_specs.append(spec)
    read = {x for op in body.ops for x in op.operands} | set(outputs)
    unread = [i for i, x in enumerate(inputs) if is_float(x.dtype) and i not in read]
    if unread and not any(is_float(x.dtype) and i in read for i, x in enumerate(inputs)):
        # a float argument read too: the hessian mode differentiates the used ones only
        # (programs/points.py `used_float_args`), so it checks no program without one
        spec = _output_spec(draw, body, unread[0])
        if spec is not None:
            outputs.append(unread[0])
            out_specs.append(spec)
    program = _program(body, inputs, in_specs, outputs, out_specs)
    if explicit:  # (every axis manual and Explicit: a splitting in_spec needs its argument resharded)
        program = replace(program, reshard=any(s.kind == "P" and s.axes() for s in in_specs))
    if f.by_error:
        # the focus ops check their cells by error only where jax traces the body before
        # it finds the defect (a spec-type or in_specs defect stops it before any op)
        defects = tuple(d for d in defects if d in TRACED_DEFECTS) or defects
    program = _maybe_invalid(draw, program, body, 1.0 if f.by_error else 0.0, defects)
    return draw_call_form(draw, program)  # (the call's form, its meaning kept: the call cells ride along)


# the call foci whose cell exists only by error: the defect that writes the form jax rejects
_FORM_DEFECT_OF = {("in_specs", "list"): "in_specs_list", ("out_specs", "list"): "out_specs_list",
                   ("in_specs", "omitted"): "in_specs_omitted"}


def _call_focused(draw: st.DrawFn, foci: tuple[Focus, ...], kinds: tuple[str, ...], max_args: int, max_outputs: int,
                  defects: tuple[str, ...]) -> Program:
    """A program around foci of the program's own cells (kind "call", programs/cells.py
    `call_cells`): the focus mesh with the axis types and manual axes they fix
    (strategies/forms.py `call_mesh`), check_vma as they fix it, a few ops of any kind,
    then the call written as they fix it (`draw_call_form`); invalid for a `|by_error`
    focus, by the defect that writes the form it names where jax rejects that form."""
    f = foci[0]
    fix = call_fixes(foci)
    mesh, _ = focus_mesh(draw, f, AXIS_NAMES)
    mesh, manual = call_mesh(draw, fix, mesh)
    free = mesh.names[-1]  # (the focus mesh's last axis, even: vmap_spmd splits over it)
    usable = tuple(a for a in manual if a != free) or manual
    vma_flag = fix.get("check_vma", "True") != "False"
    n_args = draw(st.integers(1, max_args), label="n_args")
    inputs, in_specs, vals = [], [], []
    for i in range(n_args):
        x, s, v = draw(_argument(mesh, usable, i, dtypes=("float32",) if i == 0 else _X32_DTYPES), label=f"arg{i}")
        inputs.append(x)
        in_specs.append(s)
        vals.append(v)
    body = Body(mesh, manual, vma_flag, vals, usable)
    enabled = tuple(k for k in kinds if k not in ("shard_map", "transform", "sendrecv", "pbroadcast", "ragged_all_to_all"))
    for _ in range(draw(st.integers(1, 4), label="n_ops")):
        body.try_op(draw, draw(reuse.sampled_from(enabled or kinds), label="op_kind"))
    outputs, out_specs = _outputs(draw, body, len(inputs), max_outputs)
    program = _program(body, inputs, in_specs, outputs, out_specs)
    program = call_form(draw, program)  # (jax.set_mesh or mesh=, and reshard where an Explicit axis needs it)
    if "mesh" in fix:
        program = replace(program, mesh_context=fix["mesh"] == "context" or program.wrap is not None)
    form_defect = next((_FORM_DEFECT_OF[(d, v)] for d, v in fix.items() if (d, v) in _FORM_DEFECT_OF
                        and not (d == "in_specs" and v == "omitted" and fix.get("types", "explicit") == "explicit")), None)
    if form_defect is not None:  # (its cell exists by error only: the form jax rejects is the defect)
        bad = FORM_DEFECTS[form_defect](draw, program, body.vals)
        if bad is not None:
            event(f"defect: {form_defect}")
            return draw_call_form(draw, replace(bad, defect=form_defect), {d: v for d, v in fix.items() if (d, v) not in _FORM_DEFECT_OF})
    if f.by_error and fix.get("in_specs") == "omitted":
        # (a defect jax finds after the in_specs it infers: on an all-Explicit mesh
        # `_maybe_invalid` would take only the Explicit-axis ones, which change them)
        bad = apply_defect(draw, program, body.vals, tuple(d for d in defects if d in TRACED_DEFECTS) or tuple(TRACED_DEFECTS))
        if bad is not None:
            event(f"defect: {bad.defect}")
            return draw_call_form(draw, bad, fix)
    program = _maybe_invalid(draw, program, body, 1.0 if f.by_error else 0.0, defects)
    return draw_call_form(draw, program, fix)
