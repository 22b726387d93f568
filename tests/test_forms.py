"""The forms of the call and of the parameters, and the derivatives under every flag:
the oracle on hand-worked examples (no jax), the program model's JSON and source forms,
and the cells each form makes.

The semantics followed (jax 0.10.2): `jax.shard_map`'s signature and docstring (f
optional: a decorator; in_specs "If ``Infer``, all mesh axes must be of type `Explicit`";
specs are pytree prefixes; axis_names a set), the collectives' "axis_name: hashable
Python object" (a list is not hashable; psum, pmean, axis_index and axis_size take one),
numpy.transpose's negative axes, and shard_map.md's out_specs promise (with check_vma
off an unmentioned axis promises equal blocks; jax defines no derivative of an output
that breaks it).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from helpers import P, op, prog

from oracles import ErrorKind, predict, trace
from oracles.derivatives import defined_outputs, directional_derivative, second_derivative
from programs.cells import call_cells, program_cells
from programs.emit import to_python
from programs.errors import ProgramFormatError
from programs.forms import arg_value, form_of, with_form
from programs.model import CallForm, Input, Mesh, Spec
from programs.ops import OP_TABLE
from programs.points import cotangent, grad_point, tangents
from programs.serialize import from_json, program_id, to_json
from programs.source import canonical, from_source
from programs.validate import validate

XY = Mesh(("x", "y"), (2, 4))
XY_EXPLICIT = Mesh(("x", "y"), (2, 4), ("explicit", "explicit"))


def f32(*shape: int, seed: int = 3) -> Input:
    return Input(tuple(shape), "float32", "small", seed)


def iota(*shape: int) -> Input:
    return Input(tuple(shape), "int32", "iota")


def outputs(p):  # type: ignore[no-untyped-def]
    pred = predict(p)
    assert pred.error is None, pred.error
    return pred.outputs


# ------------------------------------------------------------------ parameter forms


def test_a_list_of_axis_names_is_rejected_where_jax_hashes_it() -> None:
    """pmax hashes its axis names (a primitive parameter): a list raises TypeError, the
    collective_param kind, at the op; psum turns a list into a tuple first."""
    bad = prog(XY, [iota(8, 8)], [P("x", "y")], [op("neg", 0), with_form(op("pmax", 1, axes=("y",)), "axes", "list")], [2], [P("x")])
    err = predict(bad).error
    assert err is not None and err.kind == ErrorKind.COLLECTIVE_PARAM and err.op_index == 1
    ok = prog(XY, [iota(8, 8)], [P("x", "y")], [with_form(op("psum", 0, axes=("y",)), "axes", "list")], [1], [P("x")])
    plain = prog(XY, [iota(8, 8)], [P("x", "y")], [op("psum", 0, axes=("y",))], [1], [P("x")])
    assert np.array_equal(outputs(ok)[0].global_value, outputs(plain)[0].global_value)


def test_collectives_over_no_axes_are_a_group_of_one() -> None:
    """psum, pcast, axis_index and axis_size over (): the operand, itself, 0 and 1."""
    x = iota(8, 8)
    want = x.materialize()
    for body in ([op("psum", 0, axes=())], [op("pcast", 0, axes=(), to="varying")],
                 [op("axis_index", axes=()), op("add", 0, 1)], [op("axis_size", axes=()), op("sub", 0, 1), op("add", 2, 1)]):
        p = prog(XY, [x], [P("x", "y")], body, [len(body)], [P("x", "y")])
        assert np.array_equal(outputs(p)[0].global_value, want), body


def test_all_gather_untiled_over_no_axes_adds_a_dimension_of_one() -> None:
    """all_gather's documented shape rule: untiled, a new dimension of the group's size,
    1 over (): (4, 2) -> (4, 1, 2) at axis 1 (jax 0.10.2 returns the operand: a known
    divergence)."""
    p = prog(XY, [iota(8, 8)], [P("x", "y")], [op("all_gather", 0, axes=(), axis=1, tiled=False)], [1], [P("x", None, "y")])
    (o,) = outputs(p)
    assert o.local_shape == (4, 1, 2)
    assert np.array_equal(o.global_value[:, 0, :], iota(8, 8).materialize())


def test_perm_and_groups_forms_keep_the_values() -> None:
    """A perm as an array or a tuple, groups as a tuple: the same permutation."""
    perm = ((0, 1), (1, 2), (2, 3), (3, 0))
    base = prog(XY, [iota(8, 8)], [P("x", "y")], [op("ppermute", 0, axes=("y",), perm=perm)], [1], [P("x", "y")])
    want = outputs(base)[0].global_value
    for form in ("array", "tuple", "list"):
        p = replace(base, body=(with_form(base.body[0], "perm", form),))
        assert form_of(p.body[0], "perm") == form
        assert np.array_equal(outputs(p)[0].global_value, want)
    arg = next(a for a in OP_TABLE["ppermute"].call.args if a.source == "perm")
    assert isinstance(arg_value(arg, with_form(base.body[0], "perm", "array")), np.ndarray)
    assert arg_value(arg, with_form(base.body[0], "perm", "tuple")) == perm


def test_a_plain_form_is_recorded_as_nothing() -> None:
    """with_form of the form a parameter is written in anyway records nothing: the op
    (and so the program's JSON and id) stays the same."""
    o = op("psum", 0, axes=("x", "y"))
    assert with_form(o, "axes", "tuple") == o
    assert with_form(op("pbroadcast", 0, axes=("x",), source=0), "axes", "tuple").p("forms") is None


def test_transpose_takes_negative_axes() -> None:
    """numpy.transpose's docs: negative axes count from the end: (-1, 0) is (1, 0)."""
    x = iota(4, 8)
    neg = prog(XY, [x], [P(None, "y")], [op("transpose", 0, perm=(-1, 0))], [1], [P("y")])
    pos = prog(XY, [x], [P(None, "y")], [op("transpose", 0, perm=(1, 0))], [1], [P("y")])
    assert np.array_equal(outputs(neg)[0].global_value, outputs(pos)[0].global_value)
    assert np.array_equal(outputs(pos)[0].global_value, x.materialize().T)
    bad = prog(XY, [x], [P(None, "y")], [op("transpose", 0, perm=(-1, 1))], [1], [P("y")])
    assert predict(bad).error.kind == ErrorKind.LOCAL_SHAPE  # type: ignore[union-attr]


# ------------------------------------------------------------------ the call's forms


def _two_args(mesh: Mesh = XY):  # type: ignore[no-untyped-def]
    return prog(mesh, [iota(8, 8), iota(8, 8)], [P("x", "y"), P("x", "y")], [op("add", 0, 1), op("psum", 2, axes=("x",))],
                [3], [P(None, "y")])


def test_call_styles_and_one_spec_for_all_keep_the_values() -> None:
    base = _two_args()
    want = outputs(base)[0].global_value
    for form in (CallForm(style="decorator"), CallForm(style="partial"), CallForm(in_specs="single", out_specs="single")):
        assert np.array_equal(outputs(replace(base, form=form))[0].global_value, want), form


def test_specs_as_a_list_are_a_structure_error() -> None:
    """A list is no pytree prefix of the arguments' tuple: in_specs fail before the body
    (nothing traced), out_specs after it (every op typed)."""
    base = _two_args()
    st, err = trace(replace(base, form=CallForm(in_specs="list")), with_values=False)
    assert err is not None and err.kind == ErrorKind.IN_SPECS_STRUCTURE and len(st.types) == 0
    st, err = trace(replace(base, form=CallForm(out_specs="list")), with_values=False)
    assert err is not None and err.kind == ErrorKind.OUT_SPECS_STRUCTURE and len(st.types) == len(base.inputs) + len(base.body)


def test_in_specs_left_out_are_inferred_on_explicit_axes_only() -> None:
    """On an all-Explicit mesh, with the arguments resharded to their in_specs, leaving
    in_specs out changes nothing; over an Auto manual axis it is a TypeError (spec_type)
    before any other check."""
    explicit = replace(_two_args(XY_EXPLICIT), reshard=True, mesh_context=True)
    omitted = replace(explicit, form=CallForm(in_specs="omitted"))
    assert omitted.inferred_in_specs() == explicit.in_specs
    assert np.array_equal(outputs(omitted)[0].global_value, outputs(explicit)[0].global_value)
    auto = replace(_two_args(), in_specs=(Spec(()), Spec(())), form=CallForm(in_specs="omitted"))
    err = predict(auto).error
    assert err is not None and err.kind == ErrorKind.SPEC_TYPE and "in_specs" in err.facts


def test_in_specs_left_out_must_be_what_jax_infers() -> None:
    """A case file whose in_specs are left out states them as jax infers them."""
    p = replace(_two_args(XY_EXPLICIT), mesh_context=True, form=CallForm(in_specs="omitted"))  # (not resharded: P())
    with pytest.raises(ProgramFormatError, match="must be what jax infers"):
        validate(p)
    validate(replace(p, in_specs=p.inferred_in_specs()))


def _nested(types: tuple[str, ...], in_spec: object = None):  # type: ignore[no-untyped-def]
    mesh = Mesh(("x", "y"), (2, 4), types)
    params = {"inner_axes": ("y",), "out_spec": (), "inner": "psum", "inner_params": (("axes", ("y",)),), "check_vma": True}
    if in_spec is not None:
        params["in_spec"] = in_spec
    p = prog(mesh, [iota(8, 4)], [P("x")], [op("shard_map", 0, **params)], [1], [P("x")])  # type: ignore[arg-type]
    return replace(p, axis_names=("x",), mesh_context=True)


def test_a_nested_shard_map_infers_its_in_specs_over_explicit_axes() -> None:
    """Inferred from the operand's type, replicated over the inner axis 'y' (size 4): psum
    over 'y' of the whole block is 4 times it; over an Auto 'y' a TypeError at the op."""
    (o,) = outputs(_nested(("explicit", "explicit")))
    assert np.array_equal(o.global_value, 4 * iota(8, 4).materialize())
    err = predict(_nested(("explicit", "auto"))).error
    assert err is not None and err.kind == ErrorKind.SPEC_TYPE and err.op_index == 0
    assert predict(_nested(("explicit", "auto"), in_spec=())).error is None  # (given: fine over Auto)


# ------------------------------------------------------------------ derivatives


def test_only_outputs_keeping_their_promise_have_a_derivative_without_check_vma() -> None:
    """check_vma=False: out[0] (P(), but its blocks differ along 'x' and 'y') breaks the
    promise and has no derivative; out[1] splits both axes; out[2], psum over both, is
    the same everywhere."""
    body = [op("mul", 0, 0), op("psum", 1, axes=("x", "y"))]
    p = prog(XY, [f32(8, 8)], [P("x", "y")], body, [1, 1, 2], [P(), P("x", "y"), P()], check_vma=False)
    assert defined_outputs(p, (0, 1, 2)) == (1, 2)
    assert defined_outputs(replace(p, check_vma=True), (0, 1, 2)) == (0, 1, 2)
    x, v, u = grad_point(p)[0], tangents(p)[0], cotangent(1, (8, 8))
    d = directional_derivative(p, [1])
    assert d.smooth and abs(d.value - float(np.sum(u * 2 * x * v))) < 1e-6


def test_second_directional_derivative_of_a_product() -> None:
    """s(x) = <u, x * x>: v^T H v = 2 sum(u v^2) (hand-worked), exact by second differences."""
    p = prog(Mesh(("i",), (4,)), [f32(8)], [P("i")], [op("mul", 0, 0)], [1], [P("i")])
    v, u = tangents(p)[0], cotangent(0, (8,))
    s = second_derivative(p, (0,))
    assert s.smooth and abs(s.value - float(2 * np.sum(u * v * v))) < 1e-6
    linear = prog(Mesh(("i",), (4,)), [f32(8)], [P("i")], [op("psum", 0, axes=("i",))], [1], [P()])
    assert abs(second_derivative(linear, (0,)).value) < 1e-6


# ------------------------------------------------------------------ the model: JSON, source, cells


def _featured():  # type: ignore[no-untyped-def]
    p = _two_args(XY_EXPLICIT)
    p = replace(p, reshard=True, mesh_context=True, remat_policy="dots_saveable",
                form=CallForm(style="partial", in_specs="omitted", out_specs="single"))
    return replace(p, body=(p.body[0], with_form(p.body[1], "axes", "list")))


def test_a_program_without_the_features_keeps_its_json_and_id() -> None:
    p = _two_args()
    text = to_json(p)
    assert "form" not in text and "remat_policy" not in text and "forms" not in text
    assert program_id(from_json(text)) == program_id(p)


def test_the_features_round_trip_through_json_and_source() -> None:
    p = _featured()
    validate(p)
    assert from_json(to_json(p)) == p
    src = to_python(p)
    assert "partial(shard_map," in src and "in_specs=" not in src.split("partial(shard_map,")[1].split("\n")[0]
    assert "['x']" in src and "REMAT_POLICY = jax.checkpoint_policies.dots_saveable" in src
    assert from_source(src) == canonical(p)
    arr = replace(p, body=(op("ppermute", 0, axes=("y",), perm=((0, 1), (1, 0), (2, 3), (3, 2))),), outputs=(2,))
    arr = replace(arr, body=(with_form(arr.body[0], "perm", "array"),))
    assert "np.array([[0, 1], [1, 0], [2, 3], [3, 2]])" in to_python(arr)
    assert from_source(to_python(arr)) == canonical(arr)


def test_cells_of_the_call_and_of_the_forms() -> None:
    p = _featured()
    cells = call_cells(p)
    assert {"call|style=partial", "call|in_specs=omitted", "call|out_specs=single", "call|remat_policy=dots_saveable",
            "call|mesh=context", "call|manual=all&types=explicit", "call|check_vma=True"} <= cells
    every = program_cells(p)
    assert "psum|axes_form=list" in every and cells <= every
    empty = prog(XY, [iota(8, 8)], [P("x", "y")], [op("psum", 0, axes=())], [1], [P("x", "y")])
    assert "psum|axes=empty" in program_cells(empty)
    assert "shard_map|in_spec=inferred" in program_cells(_nested(("explicit", "explicit")))
    assert "shard_map|inner_axes=explicit" in program_cells(_nested(("explicit", "explicit")))


def test_the_derivative_modes_run_unchecked_programs_and_say_what_they_cannot_reach() -> None:
    """grad, grad_remat, jvp, linearize and hessian run check_vma=False programs (no
    longer a gap); smap writes the program as jax.smap and checks no call cell; the
    derivative modes run no Explicit-axis program; hessian only small ones."""
    from harness.campaign.cells import applies, unreachable

    unchecked = prog(XY, [f32(8, 8)], [P("x", "y")], [op("mul", 0, 0)], [1], [P("x", "y")], check_vma=False)
    assert all(applies(unchecked, m) for m in ("grad", "grad_remat", "jvp", "linearize", "hessian"))
    assert not applies(prog(XY, [f32(64, 64)], [P("x", "y")], [op("mul", 0, 0)], [1], [P("x", "y")]), "hessian")
    assert unreachable("call|check_vma=False", "grad") is None
    assert unreachable("call|style=decorator", "smap") is not None
    assert unreachable("call|in_specs=omitted", "jvp") is not None and unreachable("call|in_specs=omitted", "jit") is None
    assert unreachable("psum|groups=yes", "grad") is None  # (groups need check_vma=False, which grad now runs)
