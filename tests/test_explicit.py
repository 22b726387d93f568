"""Explicit meshes and reduced / unreduced values: the oracle's rules against hand-worked
examples (no jax: jax 0.10.2 `shard_map.py` `_shard_map`, `_check_unreduced`,
`_unshard_shaped_array`, `parallel.py` `pcast`, `unreduced_psum`, `all_gather_reduced`),
the defects for them, the draws, and the program model's round trip."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oracles import ErrorKind, predict
from programs.emit import to_python
from programs.model import Input, Mesh, Op, Program, Spec
from programs.serialize import from_json, to_json
from strategies import programs
from strategies.explicit_defects import EXPLICIT_DEFECTS, strict_explicit
from tests.test_invalid import EXPECTED

X2E = Mesh(("x",), (2,), ("explicit",))
XYE = Mesh(("x", "y"), (2, 4), ("explicit", "explicit"))
X2A = Mesh(("x",), (2,))
UR = Spec((None,), "P", ("x",))
RED = Spec((None,), "P", (), ("x",))
SPLIT = Spec((("x",),))


def prog(mesh: Mesh, body: list[Op], outputs: list[int], out_specs: list[Spec], *, in_spec: Spec = SPLIT,
         shape: tuple[int, ...] = (4,), reshard: bool = True) -> Program:
    return Program(mesh, (Input(shape, "int32", "iota"),), (in_spec,), tuple(body), tuple(outputs), tuple(out_specs),
                   reshard=reshard)


def pcast(x: int, to: str, axes: tuple[str, ...] = ("x",)) -> Op:
    return Op.make("pcast", (x,), axes=axes, to=to)


def test_unreduced_psum_sums_the_parts() -> None:
    # iota(4) split over x=2: device 0 holds [0, 1], device 1 [2, 3]; unreduced, they are
    # the parts of [2, 4]; psum adds them and the result is invariant, unreduced over nothing
    p = prog(X2E, [pcast(0, "unreduced"), Op.make("psum", (1,), axes=("x",))], [2], [Spec(())])
    pred = predict(p)
    assert pred.error is None
    t = pred.value_types[1]
    assert (t.vma, t.unreduced, t.reduced) == (frozenset(), frozenset({"x"}), frozenset())
    assert (pred.value_types[2].vma, pred.value_types[2].unreduced) == (frozenset(), frozenset())
    assert pred.outputs[0].global_value.tolist() == [2, 4]


def test_unreduced_output_has_parts_and_no_global_value() -> None:
    p = prog(X2E, [pcast(0, "unreduced")], [1], [UR])
    out = predict(p).outputs[0]
    assert out.device_values.tolist() == [[0, 1], [2, 3]]  # each device's part of the sum
    assert out.global_value is None  # jax assembles none (only the parts)
    assert out.sharding == (((),), ("x",), ())  # jax.typeof(out).sharding.spec: P(None, unreduced={'x'})


def test_reduced_round_trip_types() -> None:
    body = [Op.make("psum", (0,), axes=("x",)), pcast(1, "reduced"), pcast(2, "varying")]
    pred = predict(prog(X2E, body, [2, 3], [RED, Spec((("x",),))]))
    assert pred.error is None
    assert (pred.value_types[2].reduced, pred.value_types[2].vma) == (frozenset({"x"}), frozenset())
    assert (pred.value_types[3].reduced, pred.value_types[3].vma) == (frozenset(), frozenset({"x"}))
    assert pred.outputs[1].global_value.tolist() == [2, 4, 2, 4]  # psum [0,1]+[2,3], then one block per device


def test_all_gather_to_reduced() -> None:
    p = prog(X2E, [Op.make("all_gather", (0,), axes=("x",), axis=0, tiled=True, to="reduced")], [1], [RED])
    pred = predict(p)
    assert pred.error is None
    t = pred.value_types[1]
    assert (t.shape, t.vma, t.reduced) == ((4,), frozenset(), frozenset({"x"}))
    assert pred.outputs[0].global_value.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize(
    "body, in_spec",
    [
        ([pcast(0, "unreduced")], Spec(())),  # invarying -> unreduced
        ([pcast(0, "reduced")], Spec((("x",),))),  # varying -> reduced
        ([pcast(0, "unreduced"), pcast(1, "varying")], Spec((("x",),))),  # unreduced -> varying
        ([pcast(0, "unreduced"), pcast(1, "unreduced")], Spec((("x",),))),  # unreduced -> unreduced
    ],
)
def test_pcast_transitions_jax_does_not_have(body: list[Op], in_spec: Spec) -> None:
    pred = predict(prog(X2E, body, [len(body)], [Spec(())], in_spec=in_spec))
    assert pred.error is not None and pred.error.kind == ErrorKind.COLLECTIVE_VMA
    assert pred.error.op_index == len(body) - 1


def test_all_gather_to_reduced_needs_a_varying_operand() -> None:
    p = prog(X2E, [Op.make("all_gather", (0,), axes=("x",), axis=0, tiled=True, to="reduced")], [1], [RED], in_spec=Spec(()))
    assert predict(p).error.kind == ErrorKind.COLLECTIVE_VMA


def test_add_of_unreduced_and_plain_is_a_type_error() -> None:
    p = prog(X2E, [pcast(0, "unreduced"), Op.make("add", (1, 0))], [2], [UR])
    err = predict(p).error
    assert err is not None and err.kind == ErrorKind.UNREDUCED_TYPE and err.op_index == 1


def test_unreduced_out_spec_needs_explicit_axes_and_full_manual() -> None:
    auto = prog(X2A, [pcast(0, "unreduced")], [1], [UR], reshard=False)
    assert predict(auto).error.kind == ErrorKind.UNREDUCED_TYPE
    partial = replace(prog(XYE, [pcast(0, "unreduced")], [1], [UR]), axis_names=("x",))
    assert predict(partial).error.kind == ErrorKind.UNSUPPORTED


def test_out_spec_must_say_the_outputs_reduced_axes() -> None:
    body = [Op.make("psum", (0,), axes=("x",)), pcast(1, "reduced")]
    assert predict(prog(X2E, body, [2], [Spec((None,))])).error.kind == ErrorKind.OUT_SPEC_REPLICATION
    # an out_spec calling an invariant output reduced: the reduced axes are not the output's
    assert predict(prog(X2E, body[:1], [1], [RED])).error.kind == ErrorKind.UNREDUCED_TYPE


def test_all_explicit_full_manual_wants_resharded_arguments() -> None:
    p = prog(XYE, [Op.make("neg", (0,))], [1], [Spec((("x",),))], shape=(8, 4), reshard=False)
    err = predict(p).error
    assert err is not None and err.kind == ErrorKind.IN_SPEC_ARG_SHARDING
    assert predict(replace(p, reshard=True)).error is None
    # P() needs nothing (the argument is unsharded), and partial manual is not checked
    assert predict(replace(p, in_specs=(Spec(()),), out_specs=(Spec(()),))).error is None
    assert predict(replace(p, axis_names=("x",))).error is None


def test_output_sharding_type_shows_explicit_axes_only() -> None:
    p = prog(XYE, [Op.make("neg", (0,))], [1], [Spec((("x",), ("y",)))], shape=(8, 4))
    assert predict(p).outputs[0].sharding == ((("x",), ("y",)), (), ())  # int32[8@x,16@y]
    mixed = replace(p, mesh=Mesh(("x", "y"), (2, 4), ("explicit", "auto")), reshard=False)
    assert predict(mixed).outputs[0].sharding == ((("x",), ()), (), ())  # int32[8@x,16]: Auto axes are not in the type
    auto = replace(p, mesh=Mesh(("x", "y"), (2, 4)), reshard=False)
    assert predict(auto).outputs[0].sharding == (((), ()), (), ())


def test_reshard_spec_keeps_explicit_axes() -> None:
    p = replace(prog(XYE, [], [0], [Spec((("x", "y"),))], in_spec=Spec((("y", "x"),)), shape=(8,)),
                mesh=Mesh(("x", "y"), (2, 4), ("auto", "explicit")))
    assert p.reshard_spec(0) == Spec((("x",),)) or p.reshard_spec(0) == Spec((("y",),))
    assert p.reshard_spec(0) == Spec((("y",),))  # x is Auto: jax.sharding.reshard refuses it


def test_round_trip_and_emit() -> None:
    p = replace(prog(X2E, [pcast(0, "unreduced")], [1], [UR]), mesh_context=True)
    q = from_json(to_json(p))
    assert q == p and q.out_specs[0].unreduced == ("x",) and q.mesh_context and q.reshard
    src = to_python(p)
    assert "jax.set_mesh(mesh)" in src and "f = shard_map(body, in_specs=" in src
    assert "jax.sharding.reshard(a0, P('x'))" in src and "unreduced={'x'}" in src
    plain = prog(X2A, [Op.make("neg", (0,))], [1], [Spec((("x",),))], reshard=False)
    assert "mesh_context" not in to_json(plain) and "unreduced" not in to_json(plain)  # older ids unchanged


_DEFECT_HOSTS = {
    "missing_reshard": prog(XYE, [Op.make("neg", (0,))], [1], [Spec((("x",),))], shape=(8, 4)),
    # (the defect commits the argument to another sharding and drops the reshard)
    "placement_mismatch": prog(XYE, [Op.make("neg", (0,))], [1], [Spec((("x",),))], shape=(8, 4)),
    "out_spec_drops_reduced": prog(X2E, [Op.make("psum", (0,), axes=("x",)), pcast(1, "reduced")], [2], [RED]),
    # (a second Explicit axis: with none left there is no mesh context, and reshard would fail first)
    "unreduced_spec_auto_axis": prog(Mesh(("x", "y"), (2, 1), ("explicit", "explicit")), [pcast(0, "unreduced")], [1], [UR]),
    # explicit_axes making both axes of an all-Auto mesh Explicit, in_sharding = the in_spec
    "explicit_axes_in_sharding": replace(prog(XYE, [Op.make("neg", (0,))], [1], [Spec((("x",),))], shape=(8, 4), reshard=False),
                                         mesh_context=True, wrap="explicit_axes", wrap_axes=("x", "y"), wrap_specs=(Spec((("x",),)),)),
}


@pytest.mark.parametrize("defect", sorted(EXPLICIT_DEFECTS))
@settings(max_examples=5, database=None)
@given(data=st.data())
def test_explicit_defect_is_predicted(defect: str, data: st.DataObject) -> None:
    host = _DEFECT_HOSTS[defect]
    assert predict(host).error is None
    bad = EXPLICIT_DEFECTS[defect](data.draw, host, [])
    assert bad is not None
    err = predict(bad).error
    assert err is not None and err.kind == EXPECTED[defect] and err.why


@settings(max_examples=40, database=None, suppress_health_check=list(HealthCheck), deadline=None)
@given(programs(max_ops=4))
def test_drawn_explicit_programs_are_valid(p: Program) -> None:
    """Construction: every drawn program the oracle calls valid, Explicit ones included."""
    err = predict(p, values=False).error
    assert err is None, (p, err)
    if strict_explicit(p) and any(s.axes() for s in p.in_specs):
        # every axis manual and Explicit: each splitting in_spec needs its argument resharded
        # (by reshard, or by explicit_axes' in_sharding)
        assert p.reshard or p.wrap == "explicit_axes"
    for k, s in enumerate(p.out_specs):
        t = predict(p, values=False).value_types[p.outputs[k]]
        assert (set(s.unreduced), set(s.reduced)) == (set(t.unreduced), set(t.reduced))


def test_unreduced_values_match_numpy_sum() -> None:
    """The value rule, on a 2x4 mesh: psum over both axes of an unreduced value is the
    sum of all eight parts."""
    body = [pcast(0, "unreduced", ("x", "y")), Op.make("psum", (1,), axes=("x", "y"))]
    p = Program(XYE, (Input((8, 4), "int32", "iota"),), (Spec((("x",), ("y",))),), tuple(body), (2,), (Spec(()),), reshard=True)
    out = predict(p).outputs[0]
    full = np.arange(32).reshape(8, 4)
    want = sum(full[4 * i : 4 * i + 4, j : j + 1] for i in range(2) for j in range(4))
    assert out.global_value.tolist() == want.tolist()
