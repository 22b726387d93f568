"""The forms an op's parameters may be written in: an axis name as a string, a 1-tuple or
a list; a permutation or axis_index_groups as a list, a tuple or a NumPy array.

An op keeps its parameters' values (programs/model.py `Op.params`: axes, perm, groups as
tuples); its optional parameter `forms` (pairs of (argument, form), programs/ops.py)
says how the call writes the ones that are not in their plain form. The lowering
(harness/run/lowering.py) passes `arg_value`, the reproducer (programs/emit.py) writes
`arg_source`, programs/source.py reads the form back from the text: the three cannot
disagree. Which forms jax accepts is the oracle's (oracles/ops/base.py `Collective`);
a form is recorded only where it differs from the plain one, so a program without forms
keeps its JSON and its id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from programs.ops import OP_TABLE, Arg, python_value

if TYPE_CHECKING:  # (programs/body_text.py writes arguments by `arg_source`, below the model)
    from programs.model import Op, ParamValue

# per argument (an op table `Arg.source`), the forms it may be written in besides its
# plain one (`python_value` of its `Arg.form`)
AXES_FORMS = ("str", "tuple", "list")  # 'x'; ('x',) / ('x', 'y'); ['x'] / ['x', 'y']
SEQUENCE_FORMS = ("list", "tuple", "array")  # [...], (...), np.array([...]): perm, groups
ARG_FORMS: dict[str, tuple[str, ...]] = {"axes": AXES_FORMS, "perm": SEQUENCE_FORMS, "groups": SEQUENCE_FORMS}


def forms_of(op: Op) -> dict[str, str]:
    """Argument -> the form `op` writes it in, for the arguments not in their plain form."""
    raw = op.p("forms")
    if not isinstance(raw, tuple):
        return {}
    return {str(kv[0]): str(kv[1]) for kv in raw if isinstance(kv, tuple) and len(kv) == 2}


def names(v: ParamValue) -> tuple[str, ...]:
    """A parameter holding axis names (axes, inner_axes) as a tuple of them (none: ())."""
    return tuple(str(a) for a in v) if isinstance(v, tuple) else ()


def form_of(op: Op, source: str) -> str | None:
    """The form `op` writes argument `source` in, or None (its plain form)."""
    return forms_of(op).get(source)


def with_form(op: Op, source: str, form: str | None) -> Op:
    """`op` with argument `source` written in `form` (None, or a form that writes it as
    its plain form does: the plain form, recorded as nothing)."""
    forms = forms_of(op)
    forms.pop(source, None)
    arg = next((a for a in OP_TABLE[op.kind].call.args if a.source == source), None)
    if form is not None and arg is not None and op.p(source) is not None:
        probe = type(op).make(op.kind, op.operands, **{**op.param_dict, "forms": ((source, form),)})
        if form == "array" or _shape_of(arg_value(arg, probe)) != _shape_of(python_value(arg.form, op.p(source))):
            forms[source] = form
    params = {k: v for k, v in op.params if k != "forms"}
    if forms:
        params["forms"] = tuple(sorted(forms.items()))
    return type(op).make(op.kind, op.operands, **params)


def _nested(v: ParamValue, form: str) -> object:
    """A tuple of tuples (perm pairs, groups) or of ints (a pshuffle perm) in `form`."""
    assert isinstance(v, tuple)
    if form == "array":
        return np.array([list(x) if isinstance(x, tuple) else x for x in v], dtype=np.int64)
    if form == "tuple":
        return tuple(tuple(x) if isinstance(x, tuple) else x for x in v)
    return [list(x) if isinstance(x, tuple) else x for x in v]


def arg_value(a: Arg, op: Op) -> object:
    """The Python value the call receives for template argument `a` of `op` (its plain
    form, `python_value`, unless `op` writes it in another)."""
    v = op.p(a.source)
    form = form_of(op, a.source)
    if form is None or v is None:
        return python_value(a.form, v)
    if a.source == "axes":
        assert isinstance(v, tuple)
        return v[0] if form == "str" and len(v) == 1 else list(v) if form == "list" else tuple(v)
    return _nested(v, form)


def arg_source(a: Arg, op: Op) -> str:
    """`arg_value` as source text (NumPy as np, sets sorted: the same in every process)."""
    v = arg_value(a, op)
    if isinstance(v, np.ndarray):
        return f"np.array({v.tolist()!r})"
    if isinstance(v, (set, frozenset)):
        return "{" + ", ".join(repr(x) for x in sorted(v, key=repr)) + "}" if v else "set()"
    return repr(v)


def form_from(a: Arg, value: object, array: bool) -> str | None:
    """The form a value read from source is written in (programs/source.py: `array` when
    it was `np.array(...)`), or None where it is the plain form."""
    if array:
        return "array"
    plain = python_value(a.form, _freeze_read(value))
    if type(value) is type(plain) and _shape_of(value) == _shape_of(plain):
        return None
    if a.source == "axes":
        return "str" if isinstance(value, str) else "list" if isinstance(value, list) else "tuple"
    return "list" if isinstance(value, list) else "tuple"


def _freeze_read(v: object) -> ParamValue:
    if isinstance(v, str):
        return (v,)
    if isinstance(v, (list, tuple)):
        return tuple(_freeze_read(x) if isinstance(x, (list, tuple)) else x for x in v)  # type: ignore[misc]
    return v  # type: ignore[return-value]


def _shape_of(v: object) -> object:
    """The container types of a value, nested (a list of tuples vs a tuple of lists)."""
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_shape_of(x) for x in v))
    return type(v).__name__
