"""Forms: how the shard_map call and each op's parameters are written (jax 0.10.2's
signatures and docstrings; the oracle says which forms jax takes).

- `draw_arg_forms`: after a collective is drawn, sometimes its axis names as a string, a
  1-tuple or a list (a list only where jax takes one: oracles/ops/base.py LIST_AXES),
  its perm or axis_index_groups as a tuple, a list of lists or a NumPy array
  (programs/forms.py); `empty_axes`: whether a collective is drawn over no axes, `()`.
- `draw_call_form`: the call's style (a call, a decorator, functools.partial), one spec
  for every argument / output where they are equal, in_specs left out where jax infers
  them (every manual axis Explicit), axis_names as a frozenset, and the grad_remat
  mode's jax.checkpoint policy (programs/model.py CallForm, `Program.remat_policy`).
  Each keeps the program's meaning.
- `FORM_DEFECTS`: the forms jax must reject, one defect each: an axis name list where
  jax hashes it, in_specs or out_specs as a list, in_specs left out over an Auto axis.
- `call_focused`: a program around foci of the program's own cells (kind "call",
  programs/cells.py `call_cells`): its mesh, manual axes and flags are what they fix.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from hypothesis import event
from hypothesis import strategies as st

from oracles.ops.base import LIST_AXES
from programs.forms import ARG_FORMS, form_of, names, with_form
from programs.model import CallForm, Mesh, Op, Program
from programs.ops import OP_TABLE
from programs.points import REMAT_POLICIES
from strategies import reuse

if TYPE_CHECKING:
    from strategies.body import Body
    from strategies.focus import Focus
    from strategies.invalid import ValueView

# the collectives drawn over no axes, `()` (jax 0.10.2: psum, pmean, all_gather tiled,
# psum_scatter, all_to_all, ppermute, pshuffle, pswapaxes, pcast, axis_index and
# axis_size run it as a group of one; pmax and pmin raise, and untiled all_gather and
# psum_scatter skip their shape rule: known divergences)
EMPTY_AXES_KINDS = ("psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "all_to_all", "ppermute", "pshuffle",
                    "pswapaxes", "pcast", "axis_index", "axis_size")


def _allowed(op_kind: str, source: str, n_axes: int, groups: object = None) -> list[str]:
    """The forms argument `source` of a `op_kind` op may be drawn in, valid ones only."""
    arg = next((a for a in OP_TABLE[op_kind].call.args if a.source == source), None)
    if arg is None:
        return []
    if source == "axes":
        out = ["tuple"] if n_axes == 1 and arg.form == "axes" else []
        if arg.form != "axes" and n_axes == 1:
            out.append("str")  # (pbroadcast writes a tuple: a name as a string is its other form)
        if op_kind in LIST_AXES and n_axes >= 1:
            out.append("list")
        return out
    out = ["tuple", "array"]
    if arg.form == "pairs":
        out.append("list")  # (a list of lists; the plain form is a list of tuples)
    if source == "groups" and isinstance(groups, tuple) and len({len(g) for g in groups}) > 1:  # type: ignore[arg-type]
        out.remove("array")  # (groups of different sizes are no array)
    return out


def draw_arg_forms(draw: st.DrawFn, b: Body, i: int) -> None:
    """Now and then op `i`'s axes, perm and groups in another form than the plain one
    (`_allowed`: those jax takes), or the form `b.want` names (a focus's:
    `axes_form`, `perm_form`, `groups_form`)."""
    op = b.ops[i]
    for source in ARG_FORMS:
        v = op.p(source)
        if v is None or (source == "axes" and not v):
            continue
        options = _allowed(op.kind, source, len(v) if isinstance(v, tuple) else 0, op.p("groups"))  # type: ignore[arg-type]
        want = b.want.get(f"{source}_form")
        if want is not None:
            form = want if want in options else None
        elif options and draw(st.integers(0, 3), label=f"{source}_form_on") == 0:
            form = draw(reuse.sampled_from(options), label=f"{source}_form")
        else:
            form = None
        if form is not None:
            op = with_form(op, source, form)
            if form_of(op, source) is not None:
                event(f"form: {op.kind} {source} as {form}")
    b.ops[i] = op


def draw_call_form(draw: st.DrawFn, p: Program, fix: dict[str, str] | None = None) -> Program:
    """`p` written in a drawn call form (or the classes `fix` names: a call focus's), its
    meaning kept: the style; one spec for all arguments / outputs where every spec is
    the same P; in_specs left out where jax infers them as they are (a valid program,
    every manual axis Explicit, arguments resharded to their in_specs); axis_names as a
    frozenset; a jax.checkpoint policy for grad_remat."""
    fix = fix or {}

    def pick(dim: str, options: list[str], label: str, rarely: int = 2) -> str:
        if dim in fix:
            return fix[dim] if fix[dim] in options else options[0]
        if len(options) == 1 or draw(st.integers(0, rarely), label=f"{label}_on") != 0:
            return options[0]
        return draw(reuse.sampled_from(options[1:]), label=label)

    style = pick("style", ["call", "decorator", "partial"], "call_style")
    single_in = ["tuple"] + (["single"] if _one_spec(p.in_specs, len(p.inputs)) else [])
    single_out = ["tuple"] + (["single"] if _one_spec(p.out_specs, len(p.outputs)) else [])
    # (a form a defect wrote, which jax rejects, stays)
    in_form = p.form.in_specs if p.form.in_specs != "tuple" else pick(
        "in_specs", single_in + (["omitted"] if _inferable(p) else []), "in_specs_form")
    out_form = p.form.out_specs if p.form.out_specs != "tuple" else pick("out_specs", single_out, "out_specs_form")
    names = pick("axis_names", ["set", "frozenset"], "axis_names_form") if p.axis_names is not None else "set"
    q = replace(p, form=CallForm(style, in_form, out_form, names))
    if in_form == "omitted":
        if not q.reshard and any(s.axes() for s in q.in_specs):
            q = replace(q, reshard=True)  # (jax infers an in_spec from the argument's sharding type)
        q = replace(q, in_specs=q.inferred_in_specs())  # (the same specs, as jax writes them: P(None) is P())
    if q.form.changed():
        event("call form: " + ", ".join(f"{k}={v}" for k, v in sorted(q.form.changed().items())))
    policy = fix.get("remat_policy")
    if policy is None and draw(st.integers(0, 3), label="remat_policy_on") == 0:
        policy = draw(reuse.sampled_from(REMAT_POLICIES), label="remat_policy")
    if policy in REMAT_POLICIES:
        q = replace(q, remat_policy=policy)
        event(f"grad_remat policy: {policy}")
    return q


def _one_spec(specs: tuple, n: int) -> bool:  # type: ignore[type-arg]
    """Whether one P can stand for every spec: as many as the values, all the same P."""
    return len(specs) == n > 0 and all(s.kind == "P" for s in specs) and len(set(specs)) == 1


# the defects (besides the in_spec* ones) that change what the arguments are or how they
# arrive (strategies/explicit_defects.py)
_ARGUMENT_DEFECTS = frozenset({"missing_reshard", "explicit_axes_in_sharding", "unreduced_spec_auto_axis"})


def _inferable(p: Program) -> bool:
    """Whether jax infers `p`'s in_specs as they are: a valid program, every manual axis
    Explicit, no unreduced / reduced spec and no wrapper, each in_spec naming only
    (manual, Explicit) axes, so the argument resharded to it has that type."""
    # (an invalid program's defect elsewhere: after the in_specs, which stay what they are)
    spec_defect = p.defect is not None and (p.defect.startswith("in_spec") or p.defect in _ARGUMENT_DEFECTS)
    return (not spec_defect and p.wrap is None and bool(p.manual_axes)
            and all(p.mesh.axis_type(a) == "explicit" for a in p.manual_axes)
            and len(p.in_specs) == len(p.inputs)
            and all(s.kind == "P" and not (s.unreduced or s.reduced) for s in p.in_specs))


# ------------------------------------------------------------------ defects: forms jax rejects


def axes_list(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    """One more collective, a copy of one that hashes its axis names (oracles/ops/base.py
    LIST_AXES are the ones that do not), given them as a list (jax: TypeError,
    "unhashable type: 'list'"), after the body: jax traces every op before it."""
    spots = [i for i, op in enumerate(p.body) if op.p("axes") and op.kind not in LIST_AXES
             and any(a.source == "axes" for a in OP_TABLE[op.kind].call.args) and op.kind not in ("sendrecv", "ragged_all_to_all")]
    if not spots:
        return None
    i = draw(reuse.sampled_from(spots), label="list_axes_op")
    return replace(p, body=p.body + (with_form(p.body[i], "axes", "list"),))


def _specs_list(which: str):  # type: ignore[no-untyped-def]
    def defect(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
        """in_specs / out_specs as a list: no pytree prefix of the arguments' / results'
        tuple (jax: ValueError "pytree structure error")."""
        if getattr(p.form, which) != "tuple" or (which == "in_specs" and not p.in_specs):
            return None
        return replace(p, form=replace(p.form, **{which: "list"}))

    return defect


def in_specs_omitted(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    """in_specs left out while a manual axis is Auto: jax infers in_specs only on Explicit
    ones (TypeError from `_shmap_checks`). The program's in_specs become what jax would
    infer (Program.inferred_in_specs), as a program written so states."""
    if not any(p.mesh.axis_type(a) != "explicit" for a in p.manual_axes) or p.wrap is not None or p.form.in_specs != "tuple":
        return None
    q = replace(p, form=replace(p.form, in_specs="omitted"))
    return replace(q, in_specs=q.inferred_in_specs())


def nested_in_specs_omitted(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    """One more nested shard_map, a copy of one over Auto axes, with its in_specs left out
    (jax infers them only over Explicit axes: TypeError), after the body."""
    spots = [op for op in p.body if op.kind == "shard_map" and op.p("in_spec") is not None
             and any(p.mesh.axis_type(a) != "explicit" for a in names(op.p("inner_axes")))]
    if not spots:
        return None
    op = draw(reuse.sampled_from(spots), label="nested_omitted_op")
    return replace(p, body=p.body + (Op.make(op.kind, op.operands, **{k: v for k, v in op.params if k != "in_spec"}),))


FORM_DEFECTS = {
    "axes_list": axes_list,
    "in_specs_list": _specs_list("in_specs"),
    "out_specs_list": _specs_list("out_specs"),
    "in_specs_omitted": in_specs_omitted,
    "nested_in_specs_omitted": nested_in_specs_omitted,
}


# ------------------------------------------------------------------ call foci


def call_fixes(foci: tuple[Focus, ...]) -> dict[str, str]:
    """The classes a group of call foci fixes (the first one's where they disagree)."""
    out: dict[str, str] = {}
    for f in foci:
        if f.kind == "call":
            for d, v in f.parts:
                out.setdefault(d, v)
    return out


def call_mesh(draw: st.DrawFn, fix: dict[str, str], mesh: Mesh) -> tuple[Mesh, tuple[str, ...]]:
    """(the mesh with the axis types the foci fix, the manual axes): every axis Explicit
    for in_specs left out (jax infers them only there), some for "mixed"; a strict
    subset manual for "manual=subset" (the last axis, the focus mesh's free one, stays
    manual: vmap_spmd splits over it)."""
    n = len(mesh.names)
    types = fix.get("types", "explicit" if fix.get("in_specs") == "omitted" else "auto")
    if types == "explicit":
        kinds = ("explicit",) * n
    elif types == "mixed" and n > 1:
        first = draw(st.integers(0, n - 1), label="call_mixed_auto")
        kinds = tuple("auto" if i == first else "explicit" for i in range(n))
    else:
        kinds = ("auto",) * n
    manual = mesh.names
    if (fix.get("manual") == "subset" or "axis_names" in fix) and n > 1:  # (axis_names written only for a subset)
        k = draw(st.integers(1, n - 1), label="call_n_manual")
        manual = tuple(sorted(draw(reuse.permutations(list(mesh.names[:-1])), label="call_manual")[: k - 1] + [mesh.names[-1]],
                              key=mesh.names.index))
        if fix.get("in_specs") == "omitted":  # (the manual axes Explicit; the others as drawn)
            kinds = tuple("explicit" if a in manual else t for a, t in zip(mesh.names, kinds))
    return Mesh(mesh.names, mesh.sizes, kinds), manual
