"""Configuration cells of one op and of a program: the marginal classes a fuzz run must
reach (harness/campaign/cells.py counts them per mode; strategies/focus.py draws toward
them). Pure functions of the program: no jax, no oracle."""

from __future__ import annotations

from typing import cast

from programs.forms import forms_of, names
from programs.graph import cone, live_ops
from programs.model import CLOSURES, EFFECT_KINDS, PLACE_HOWS, Mesh, Op, Program, Spec, is_float
from programs.ops import LOCAL_OPS


def axis_class(axis: object, rank: int | None) -> str:
    if not isinstance(axis, int) or isinstance(axis, bool):
        return "none"
    if axis < 0:
        return "negative"
    if axis == 0:
        return "first"
    # the last dimension, or (untiled all_gather) the new one after it
    return "last" if rank is None or axis >= rank - 1 else "middle"


def _axes_class(axes: tuple[str, ...], mesh: Mesh) -> str:
    if len(axes) == 1:
        return "one"
    if any(a in mesh.names for a in axes) and list(axes) != sorted(axes, key=lambda a: mesh.names.index(a) if a in mesh.names else -1):
        return "out_of_mesh_order"
    if any(a in mesh.names and mesh.axis_size(a) == 1 for a in axes):
        return "with_size_1"
    return "several>1"


def _perm_class(op: Op, n: int) -> str:
    pairs: list[tuple[int, int]]
    if op.kind == "pshuffle":
        pairs = list(enumerate(cast("tuple[int, ...]", op.p("perm"))))
    else:
        pairs = [(s, d) for s, d in cast("tuple[tuple[int, int], ...]", op.p("perm"))]
    if all(s == d for s, d in pairs):
        return "identity"
    if len(pairs) < n:
        return "partial"
    if all(d == (s + 1) % n for s, d in pairs) or all(d == (s - 1) % n for s, d in pairs):
        return "cyclic"
    return "full"


def op_cells(mesh: Mesh, op: Op, rank: int | None, dtype: str) -> set[str]:
    """The cells of one op on `mesh` (its operand's rank and the result's dtype given);
    a nested shard_map's with those of the one op inside it."""
    out = _own_cells(mesh, op, rank, dtype)
    if op.kind == "shard_map":
        out |= _own_cells(mesh, op.inner_op(), rank, dtype)
        # (in_specs given or left out, inferred from the operand's type; the inner axes'
        # types: Explicit where the outer call leaves Explicit axes free)
        out.add(f"shard_map|in_spec={'inferred' if op.p('in_spec') is None else 'given'}")
        kinds = {mesh.axis_type(a) for a in names(op.p("inner_axes"))}
        out.add(f"shard_map|inner_axes={'mixed' if len(kinds) > 1 else kinds.pop() if kinds else 'none'}")
    return out


# Pair cells (pairwise coverage of classes that interact in one op: a bug of one dtype at
# one rank, of a tiled gather on its last axis), "kind|a=x&b=y": every rank at the base
# dtype (base choice: the marginal rank cells are often first reached at a rare dtype,
# the marginal dtype cells at any rank), every pair of one op's parameter classes, and
# every dtype of a collective over several axes all of size > 1 (its replica groups span
# mesh axes: a reduction or gather lowered per dtype over them; the marginal dtype cells
# are mostly reached over one axis, the most common tuple)
PAIRED = ("tiled", "axis", "scatter_dimension", "split_axis", "concat_axis")
BASE_DTYPE = "float32"
SEVERAL = "several>1"  # the axis-tuple class paired with every dtype


def _own_cells(mesh: Mesh, op: Op, rank: int | None, dtype: str) -> set[str]:
    k = op.kind
    out = {f"{k}|dtype={dtype}", f"{k}|rank={min(rank, 3) if rank is not None else '?'}"}
    out.add(f"{k}|wrap={op.p('wrap') or 'plain'}")
    if rank is not None and dtype == BASE_DTYPE and k != "cast":  # (a cast's dtype cell is its result's)
        out.add(f"{k}|rank={min(rank, 3)}&dtype={dtype}")
    if k in LOCAL_OPS:
        return out
    axes = tuple(cast("tuple[str, ...]", op.p("axes") or ()))
    if axes:
        cls = _axes_class(axes, mesh)
        out.add(f"{k}|axes={cls}")
        if cls == SEVERAL and op.operands:  # (axis_index, axis_size: no operand, always int32)
            out.add(f"{k}|axes={cls}&dtype={dtype}")
    if op.p("to") is not None:
        out.add(f"{k}|to={op.p('to')}")
    params = [f"{n}={op.p(n) if n == 'tiled' else axis_class(op.p(n), rank)}" for n in PAIRED if op.p(n) is not None]
    out.update(f"{k}|{c}" for c in params)
    out.update(f"{k}|{a}&{b}" for i, a in enumerate(params) for b in params[i + 1:])
    if k == "all_to_all" and op.p("split_axis") is not None:
        out.add(f"{k}|split{'!=' if op.p('split_axis') != op.p('concat_axis') else '=='}concat")
    if op.p("axes") == ():
        out.add(f"{k}|axes=empty")  # (a collective over no axes: a group of one)
    for source, form in forms_of(op).items():
        out.add(f"{k}|{source}_form={form}")  # (an argument in another form: programs/forms.py)
    if op.p("groups") is not None:
        out.add(f"{k}|groups=yes")
    if op.p("perm") is not None and axes and all(a in mesh.names for a in axes):
        out.add(f"{k}|perm={_perm_class(op, mesh.group_size(axes))}")
    return out


# How a program meets its shard_map (programs/model.py `Place`, `CLOSURES`, `Effect`,
# `Program.donate`): cells of the program, not of an op, "feature|dimension=class":
# - place|how=scalar / committed / device_put / reshard, place|spec=<PLACE_CLASSES> (a
#   placement's sharding class), place|typed=yes (a sharding over an Explicit axis: part of
#   the argument's type);
# - closure|kind=numpy / outer (an "outer" one is a traced value under jit, a batched one
#   under vmap and vmap_spmd, the differentiated variable under grad: the modes say
#   which), closure|differentiated=yes (a float one, which the grad modes differentiate);
# - effect|kind=callback / print, effect|value=argument / result;
# - donate|arg=committed / uncommitted.
# Each counts only for an argument the program uses (a live op reads it, or an output or
# an effect is it).
FEATURE_KINDS = ("place", "closure", "effect", "donate")
# the sharding class of a placement, against the argument's in_spec: replicated (P()), its
# in_spec's, its in_spec's axes in another order or on other dimensions, other manual
# axes, axes the shard_map leaves automatic (Auto or Explicit)
PLACE_CLASSES = ("replicated", "in_spec", "order", "other", "free_auto", "free_explicit")


def every_feature_cell() -> tuple[str, ...]:
    """Every feature cell there is (`feature_cells` makes no other)."""
    return (*(f"place|how={h}" for h in PLACE_HOWS), *(f"place|spec={c}" for c in PLACE_CLASSES),
            "place|typed=yes", *(f"closure|kind={k}" for k in CLOSURES), "closure|differentiated=yes",
            *(f"effect|kind={k}" for k in EFFECT_KINDS), "effect|value=argument", "effect|value=result",
            "donate|arg=committed", "donate|arg=uncommitted")


def place_class(p: Program, i: int) -> str:
    """The sharding class (`PLACE_CLASSES`) of argument `i`'s placement (not a scalar)."""
    x = p.inputs[i]
    assert x.place is not None and x.place.how != "scalar"
    s, ins = x.place.spec, p.in_specs[i]
    mesh, manual = p.outer_mesh(), set(p.manual_axes)
    free = [a for a in s.axes() if a not in manual]
    if free:
        return "free_explicit" if any(mesh.axis_type(a) == "explicit" for a in free) else "free_auto"
    if not s.axes():
        return "replicated"
    rank = len(x.shape)

    def padded(sp: Spec) -> tuple[tuple[str, ...] | None, ...]:
        return tuple(sp.entries) + (None,) * (rank - len(sp.entries))

    if padded(s) == padded(ins):
        return "in_spec"
    return "order" if sorted(s.axes()) == sorted(ins.axes()) else "other"


# the modes that compare what a feature cell's feature does (programs/model.py; harness/run
# /modes_*.py): an effect's calls are read after jit, eager and vmap runs; donation by the
# jit modes; a host placement (committed, scalar) is made by every mode but the grad ones
# (their arguments are the grad point's)
_EFFECT_MODES = ("jit", "gspmd", "eager", "vmap", "vmap_spmd")
_DONATE_MODES = ("jit", "gspmd")


def feature_unreachable(cell: str, mode: str) -> str | None:
    """Why the feature cell `cell` (`FEATURE_KINDS`) can never be checked in `mode`, or
    None (also for a cell of an op)."""
    kind, _, dim = cell.partition("|")
    if kind not in FEATURE_KINDS:
        return None
    if mode == "multiprocess":
        return "the multiprocess mode's rank processes run the plain call: no placement, closure, effect or donation"
    if kind == "effect" and mode not in _EFFECT_MODES:
        return f"{mode} compares no jax.debug.callback / print calls (only {', '.join(_EFFECT_MODES)} do)"
    if kind == "donate" and mode not in _DONATE_MODES:
        return f"{mode} does not jit the call with donate_argnums (only {', '.join(_DONATE_MODES)} do)"
    if mode == "smap" and kind in ("closure", "effect"):
        return "the smap mode runs the plain body (no closure, no effect: Program.smap_form)"
    if mode in ("grad", "grad_remat") and dim == "how=scalar":
        return "the grad modes differentiate arrays: a Python scalar argument is passed as one"
    if mode in ("grad", "grad_remat") and dim in ("how=reshard", "typed=yes", "spec=free_explicit"):
        return "the grad modes run no program with Explicit axes (shardfuzz), and jax.sharding.reshard names Explicit axes only"
    return None


def used_args(p: Program) -> set[int]:
    """The arguments a live op reads, an output is or an effect reads."""
    n_in = len(p.inputs)
    live = live_ops(p)
    return {j for i in live for j in p.body[i].operands if j < n_in} | {o for o in p.outputs if o < n_in} \
        | {e.value for e in p.effects if e.value < n_in}


def feature_cells(p: Program) -> frozenset[str]:
    """The cells of how `p` meets its shard_map (`FEATURE_KINDS`)."""
    if not p.has_edges():
        return frozenset()
    out: set[str] = set()
    used = used_args(p)
    mesh = p.outer_mesh()
    for i, x in enumerate(p.inputs):
        if i not in used:
            continue
        if x.place is not None:
            out.add(f"place|how={x.place.how}")
            if x.place.how != "scalar":
                out.add(f"place|spec={place_class(p, i)}")
                if any(mesh.axis_type(a) == "explicit" for a in x.place.spec.axes()):
                    out.add("place|typed=yes")  # (over an Explicit axis: part of the argument's type, oracles/explicit.py)
        if x.closure is not None:
            out.add(f"closure|kind={x.closure}")
            if x.closure == "outer" and is_float(x.dtype):
                out.add("closure|differentiated=yes")
        if i in p.donate:
            out.add(f"donate|arg={'committed' if x.place is not None and x.place.how == 'committed' else 'uncommitted'}")
    for e in p.effects:
        out |= {f"effect|kind={e.kind}", f"effect|value={'argument' if e.value < len(p.inputs) else 'result'}"}
    return frozenset(out)


CALL = "call"  # the pseudo-kind of the program's own cells (`call_cells`)


def call_cells(p: Program) -> frozenset[str]:
    """The program's own cells, kind "call": how its shard_map is called (the style, the
    in_specs / out_specs / axis_names forms, the mesh passed or from jax.set_mesh, the
    manual axes all or a subset with the mesh's axis types) and the flags it runs under
    (check_vma, the grad_remat policy). Every live op's cells come with them
    (`_cells_of`): a program checks its call cells through any of its outputs."""
    f = p.form
    kinds = set(p.mesh.axis_types)
    types = "mixed" if len(kinds) > 1 else kinds.pop()
    subset = p.axis_names is not None and set(p.axis_names) != set(p.mesh.names)
    out = {
        f"{CALL}|style={f.style}", f"{CALL}|in_specs={f.in_specs}", f"{CALL}|out_specs={f.out_specs}",
        f"{CALL}|check_vma={p.check_vma}", f"{CALL}|mesh={'context' if p.mesh_context else 'argument'}",
        f"{CALL}|manual={'subset' if subset else 'all'}&types={types}", f"{CALL}|remat_policy={p.remat_policy or 'none'}",
    }
    if p.axis_names is not None:
        out.add(f"{CALL}|axis_names={f.axis_names}")
    return frozenset(out)


def program_cells(p: Program, types: list[tuple[tuple[int, ...], str]] | None = None) -> frozenset[str]:
    """Every cell of the program's live ops (with the oracle's types of its values, when
    given: operand rank and result dtype); the op inside a live nested shard_map too; and
    how the program meets its shard_map (`feature_cells`)."""
    return _cells_of(p, live_ops(p), types) | feature_cells(p)


def output_cells(p: Program, types: list[tuple[tuple[int, ...], str]] | None = None) -> tuple[frozenset[str], ...]:
    """Per output, the cells of the ops it depends on (`program_cells` of the program
    cut to that output, programs/graph.py `slice_outputs`), with the program's
    `feature_cells` (a cut keeps its placements, closures, effects and donation)."""
    features = feature_cells(p)
    return tuple(_cells_of(p, cone(p, o), types) | features for o in p.outputs)


def ops_cells(p: Program, ops: frozenset[int], types: list[tuple[tuple[int, ...], str]] | None = None) -> frozenset[str]:
    """The cells of those body ops of `p` that are live (`program_cells`, restricted):
    the ops' own, not the program's call cells (no op is at fault for those)."""
    return _cells_of(p, ops & live_ops(p), types, call=False)


def _cells_of(p: Program, ops: frozenset[int], types: list[tuple[tuple[int, ...], str]] | None,
              call: bool = True) -> frozenset[str]:
    n_in = len(p.inputs)
    out: set[str] = set()
    for i in sorted(ops):
        op = p.body[i]
        if types is not None and n_in + i >= len(types):
            break  # past the op an invalid program fails at: never checked
        rank = len(types[op.operands[0]][0]) if types and op.operands and op.operands[0] < len(types) else None
        dtype = types[n_in + i][1] if types else "?"
        out |= op_cells(p.mesh, op, rank, dtype)
    # (the call's cells with any live op's, also where jax fails before the body: an
    # invalid program's call checked by error)
    return frozenset(out | call_cells(p)) if ops and call else frozenset(out)
