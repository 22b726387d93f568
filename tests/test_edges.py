"""How a program meets its shard_map (programs/model.py `Place`, `CLOSURES`, `Effect`,
`Program.donate`), tested without jax: the model and its JSON, validation, the oracle's
hand-worked predictions (argument shardings on Explicit meshes, closed-over values, each
effect's per-device calls, derivatives), the cells, the strategies, the emitted source."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from helpers import P, iota, op, prog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oracles import ErrorKind, predict
from oracles.derivatives import directional_derivative
from oracles.effects import call_matches, device_calls
from oracles.rewrites import REWRITES
from programs.cells import feature_cells, feature_unreachable, place_class
from programs.emit import to_python
from programs.errors import ProgramFormatError
from programs.graph import drop_unused_inputs, live_ops, slice_outputs
from programs.model import Effect, Input, Mesh, Place, Program, Spec
from programs.serialize import from_json, program_id, to_json
from programs.source import canonical, from_source
from programs.validate import validate

XY = Mesh(("x", "y"), (2, 4))
EX = Mesh(("x", "y"), (2, 4), ("explicit", "explicit"))


def placed(x: Input, how: str, spec: Spec | None = None) -> Input:
    return replace(x, place=Place(how, spec if spec is not None else Spec()))


def closed(x: Input, kind: str) -> Input:
    return replace(x, closure=kind)


# ---------------------------------------------------------------- model and JSON


def test_a_program_without_edges_keeps_its_json_and_id() -> None:
    """Old cases load unchanged: no new key is written where no feature is used."""
    p = prog(XY, [iota(8)], [P("x")], [op("neg", 0)], [1], [P("x")])
    d = json.loads(to_json(p))
    assert not {"effects", "donate"} & set(d) and not {"place", "closure"} & set(d["inputs"][0])
    q = replace(p, inputs=(placed(iota(8), "committed", P("y")),))
    assert program_id(q) != program_id(p) and from_json(to_json(q)) == q


def test_every_edge_round_trips_through_json() -> None:
    p = replace(prog(XY, [placed(iota(8), "device_put", P(("y", "x"))), closed(iota(2, dtype="float32"), "outer"),
                          placed(iota(dtype="float32"), "scalar"), closed(iota(3), "numpy")],
                     [P("x"), P(), P(), P()], [op("neg", 0)], [4], [P("x")]),
                effects=(Effect("callback", 4), Effect("print", 1)), donate=(0, 1))
    assert from_json(to_json(p)) == p


@pytest.mark.parametrize("edit, phrase", [
    (lambda p: replace(p, inputs=(placed(iota(8), "scalar"),)), "Python scalar"),
    (lambda p: replace(p, inputs=(placed(iota(8), "committed", P("z")),)), "not an axis of the mesh"),
    (lambda p: replace(p, inputs=(placed(iota(6), "committed", P("y")),)), "do not divide"),
    (lambda p: replace(p, inputs=(placed(iota(8), "reshard", P("y")),)), "Explicit axes only"),
    (lambda p: replace(p, inputs=(closed(iota(8), "outer"),)), "in_spec P()"),
    (lambda p: replace(p, donate=(3,)), "donate"),
])
def test_a_bad_edge_is_one_line_naming_it(edit, phrase) -> None:  # type: ignore[no-untyped-def]
    p = prog(XY, [iota(8)], [P("x")], [op("neg", 0)], [1], [P("x")])
    with pytest.raises(ProgramFormatError, match=phrase):
        validate(edit(p)) if phrase != "donate" else from_json(to_json(edit(p)))


# ---------------------------------------------------------------- the oracle


def test_a_placement_changes_no_value_on_an_auto_mesh() -> None:
    """jax reshards each argument to its in_spec: every placement gives the in_spec's blocks."""
    base = prog(XY, [iota(8, 4)], [P("x")], [op("neg", 0)], [1], [P("x")])
    want = predict(base).outputs[0].device_values
    for how, spec in (("committed", P("y", "x")), ("device_put", P()), ("committed", P(None, "y"))):
        got = predict(replace(base, inputs=(placed(iota(8, 4), how, spec),))).outputs[0].device_values
        assert np.array_equal(got, want)


def test_an_explicit_argument_placed_otherwise_than_its_in_spec_is_refused() -> None:
    """All-Explicit, every axis manual: the argument's sharding is its type and must be the
    in_spec (jax 0.10.2: 'in_specs passed to shard_map: P('x',) does not match the specs of
    the input: P('y',)')."""
    p = prog(EX, [placed(iota(8, 4), "committed", P("y"))], [P("x")], [op("neg", 0)], [1], [P("x")])
    assert predict(p).error is not None and predict(p).error.kind == ErrorKind.IN_SPEC_ARG_SHARDING  # type: ignore[union-attr]
    ok = replace(p, inputs=(placed(iota(8, 4), "committed", P("x", None)),))  # (trailing Nones: the same sharding)
    assert predict(ok).error is None
    assert predict(ok).outputs[0].sharding == ((("x",), ()), (), ())
    # a Python scalar is unsharded, as a NumPy argument
    s = prog(EX, [placed(iota(), "scalar")], [P()], [op("neg", 0)], [1], [P()])
    assert predict(s).error is None


def test_a_closed_over_value_is_whole_and_invariant_on_every_device() -> None:
    """psum over x of a value closed over: 2 (the size of x) times it on every device; its
    type has no varying axis, and the program means what the same value passed with
    in_spec P() means."""
    c = closed(Input((2,), "int32", "iota", offset=5), "outer")
    p = prog(XY, [iota(8), c], [P("x"), P()], [op("psum", 1, axes=("x",))], [2], [P()])
    pr = predict(p)
    assert pr.value_types[1].vma == frozenset() and pr.value_types[1].shape == (2,)
    assert np.array_equal(pr.outputs[0].global_value, [10, 12])
    passed = REWRITES["passed_closures"](p)
    assert passed is not None and passed.inputs[1].closure is None
    assert np.array_equal(predict(passed).outputs[0].device_values, pr.outputs[0].device_values)


def test_the_derivative_of_a_closed_over_value() -> None:
    """out = psum(c, 'x') (mesh x:2): d out / d c = 2. An "outer" value the grad modes
    differentiate has that derivative; a NumPy constant none (its tangent is 0)."""
    def one(kind: str | None) -> Program:
        c = replace(Input((1,), "float32", "iota", offset=3), closure=kind)
        return prog(Mesh(("x",), (2,)), [c], [P()], [op("psum", 0, axes=("x",))], [1], [P()])

    outer, numpy_ = directional_derivative(one("outer"), [0]), directional_derivative(one("numpy"), [0])
    passed = directional_derivative(one(None), [0])
    assert outer.smooth and abs(outer.value - passed.value) <= outer.tolerance and abs(outer.value) > 0
    assert numpy_.value == 0.0


def test_each_effect_call_is_one_devices_coordinates_and_block() -> None:
    """callback(axis_index('x'), axis_index('y'), a0) with a0 = iota(8) split over (x, y):
    device (i, j) holds [4 i + j]; a call pairing x=1 with device (0, 1)'s block is none."""
    p = replace(prog(XY, [iota(8)], [P(("x", "y"))], [op("neg", 0)], [1], [P(("x", "y"))]), effects=(Effect("callback", 0),))
    e = predict(p).effects[0]
    calls = device_calls(p, e)
    assert len(calls) == 8 and calls[5][1] == (1, 1) and calls[5][2].tolist() == [5]
    assert call_matches(p, e, (1, 1), np.array([5]))
    assert not call_matches(p, e, (1, 1), np.array([1]))  # (device (0, 1)'s block: the eager bug's pairing)
    assert not call_matches(p, e, (2, 0), np.array([8]))


def test_a_partial_manual_effect_passes_the_manual_coordinates_only() -> None:
    p = replace(prog(XY, [iota(8)], [P("x")], [op("neg", 0)], [1], [P("x")]), axis_names=("x",), effects=(Effect("print", 1),))
    e = predict(p).effects[0]
    assert e.manual == ("x",)
    assert call_matches(p, e, (1,), np.array([-4, -5, -6, -7]))


def test_an_effect_keeps_its_value_live_and_is_renumbered_by_cuts() -> None:
    p = replace(prog(XY, [iota(8), iota(8)], [P("x"), P("x")], [op("neg", 0), op("neg", 1)], [2], [P("x")]),
                effects=(Effect("print", 3),))
    assert live_ops(p) == frozenset({0, 1})
    q = drop_unused_inputs(slice_outputs(p, (0,)))
    assert q.effects == (Effect("print", 3),) and len(q.inputs) == 2


# ---------------------------------------------------------------- cells


def test_the_feature_cells_of_a_program() -> None:
    p = replace(prog(XY, [placed(iota(8, 4), "committed", P("y")), closed(iota(2, dtype="float32"), "outer")],
                     [P("x"), P()], [op("neg", 0), op("neg", 1)], [2, 3], [P("x"), P()]),
                effects=(Effect("callback", 2),), donate=(0,))
    assert feature_cells(p) == {"place|how=committed", "place|spec=other", "closure|kind=outer", "closure|differentiated=yes",
                                "effect|kind=callback", "effect|value=result", "donate|arg=committed"}
    free = replace(p, axis_names=("x",), inputs=(placed(iota(8, 4), "device_put", P("x", "y")), p.inputs[1]))
    assert place_class(free, 0) == "free_auto"
    assert feature_unreachable("donate|arg=committed", "eager") and feature_unreachable("effect|kind=print", "grad")
    assert feature_unreachable("closure|kind=outer", "grad") is None and feature_unreachable("psum|dtype=int32", "grad") is None


# ---------------------------------------------------------------- strategies and source


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_a_drawn_program_with_edges_is_valid_and_reads_back_from_its_source(data: st.DataObject) -> None:
    from strategies.programs import programs

    p = data.draw(programs(max_args=3, max_ops=4))
    validate(p)
    if p.defect is None:
        assert predict(p, values=False).error is None
    assert canonical(from_source(to_python(p))) == canonical(p)


def test_a_feature_focus_is_held_by_its_program() -> None:
    from harness.campaign.sweep import draw_group
    from strategies.focus import Focus

    for cell in ("place|how=scalar", "closure|kind=numpy", "effect|kind=print", "donate|arg=committed"):
        got = [draw_group(7919 * d + 5, ((Focus(cell, "spmd"),),), ())[0] for d in range(3)]
        assert any(q is not None and cell in feature_cells(q) for q in got), cell


def test_a_free_explicit_placement_joins_the_types() -> None:
    """All-Explicit mesh, axis_names={'x'}: an argument placed P('y') (y free) keeps y in
    the body's types and the output's (jax 0.10.2, measured: float32[8@(x,y),8] for
    out_specs P('x')); reduce_sum drops the summed dimension's axes, an untiled all_gather's
    new dimension is unsplit (the others keep theirs), transpose permutes."""
    ex3 = Mesh(("x", "y"), (2, 4), ("explicit", "explicit"))

    def out_type(spec: Spec, ops: list) -> object:  # type: ignore[type-arg]
        x = placed(Input((8, 8), "float32", "iota"), "committed", spec)
        p = replace(prog(ex3, [x], [P("x")], ops, [1], [P("x")]), axis_names=("x",))
        pr = predict(p)
        assert pr.error is None, pr.error
        return pr.outputs[0].sharding[0]  # type: ignore[index]

    assert out_type(P("y"), [op("neg", 0)]) == (("x", "y"), ())
    assert out_type(P(None, "y"), [op("reduce_sum", 0, axis=0)]) == (("x", "y"),)
    assert out_type(P(None, "y"), [op("reduce_sum", 0, axis=1)]) == (("x",),)
    assert out_type(P(None, "y"), [op("transpose", 0, perm=(1, 0))]) == (("x", "y"), ())
    assert out_type(P("x", "y"), [op("all_gather", 0, axes=("x",), axis=0, tiled=False)]) == (("x",), (), ("y",))
    # on a mesh with an Auto axis the free Explicit axes are never drawn (strategies/edges.py)
    mixed = Mesh(("x", "y"), (2, 4), ("auto", "explicit"))
    q = replace(prog(mixed, [placed(Input((8, 8), "float32", "iota"), "committed", P("y"))], [P("x")], [op("neg", 0)], [1], [P("x")]),
                axis_names=("x",))
    assert predict(q).outputs[0].sharding is None  # (jax leaves y out there, against _unshard_shaped_array: not predicted)
