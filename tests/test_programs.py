"""The program model: JSON round trip, validation of case files, emitted scripts."""

from __future__ import annotations

import ast
import json

import pytest
from helpers import P, iota, op, prog
from hypothesis import given
from hypothesis import strategies as st

from programs import ProgramFormatError, from_json, to_json, to_python
from programs.emit import REPRO_MODES, reproducer_mode
from programs.model import Mesh
from programs.serialize import program_id
from strategies import programs


@given(programs())
def test_json_round_trip(p) -> None:  # type: ignore[no-untyped-def]
    q = from_json(to_json(p))
    assert q == p
    assert program_id(q) == program_id(p)


@given(programs(max_ops=4), st.sampled_from(REPRO_MODES))
def test_emitted_script_is_python(p, mode) -> None:  # type: ignore[no-untyped-def]
    ast.parse(to_python(p, mode=mode))
    ast.parse(repr(p))


def test_reproducer_mode_of_a_divergence() -> None:
    assert reproducer_mode("eager,grad") == "eager"
    assert reproducer_mode("grad_remat") == "grad_remat"
    assert reproducer_mode("probe") == "jit"


def _doc() -> dict:  # type: ignore[type-arg]
    p = prog(Mesh(("x",), (2,)), [iota(4)], [P("x")], [op("psum", 0, axes=("x",))], [1], [P()])
    return json.loads(to_json(p))


@pytest.mark.parametrize(
    "mutate, phrase",
    [
        (lambda d: d["body"][0].update(kind="pfoo"), "unknown op 'pfoo'"),
        (lambda d: d.update(schema=99), "version 99"),
        (lambda d: d["body"][0].update(operands=[5]), "not defined before this op"),
        (lambda d: d["inputs"][0].update(dtype="complex64"), "dtype"),
        (lambda d: d.pop("mesh"), "missing field 'mesh'"),
        (lambda d: d["body"][0]["params"].pop("axes"), "params missing ['axes']"),
        (lambda d: d.update(outputs=[7]), "value 7 is not defined"),
        (lambda d: d["inputs"][0].update(fill="small", offset=3), "only an iota argument has an offset"),
        (lambda d: d["inputs"][0].update(offset="3"), "offset: expected an integer"),
    ],
)
def test_bad_case_files_name_the_problem(mutate, phrase) -> None:  # type: ignore[no-untyped-def]
    d = _doc()
    mutate(d)
    with pytest.raises(ProgramFormatError, match=phrase.replace("[", r"\[").replace("]", r"\]")):
        from_json(json.dumps(d))


def test_not_json() -> None:
    with pytest.raises(ProgramFormatError, match="not valid JSON"):
        from_json("{nope")


def test_spec_repr_is_what_users_write() -> None:
    assert repr(P("x", None, ("x", "y"))) == "P('x', None, ('x', 'y'))"
    assert repr(P()) == "P()"


def test_a_batch_member_is_a_plain_program_with_the_same_values() -> None:
    """`Program.member(b)`'s arguments are what vmap's batch gives member b (the probe of
    a vmap divergence in member b runs it); an iota's offset survives JSON and source."""
    import numpy as np

    from programs.model import Input
    from programs.source import canonical, from_source

    base = prog(Mesh(("x",), (2,)), [iota(4)], [P("x")], [op("psum", 0, axes=("x",))], [1], [P()])
    p = base.__class__(base.mesh, (Input((), "int32", "iota"), Input((2, 2), "float32", "small", 5)),
                       (P(), P("x")), (op("psum", 0, axes=("x",)),), (2,), (P(),))
    for b in range(3):
        q = p.member(b)
        for x, y in zip(p.inputs, q.inputs, strict=True):
            assert np.array_equal(x.materialize(b), y.materialize())
    q = p.member(2)
    assert q.inputs[0].offset == 200 and q.inputs[0].materialize() == 200 and q.inputs[1].seed == 5 + 2 * 7919
    assert from_json(to_json(q)) == q and program_id(q) != program_id(p)
    assert "offset" not in to_json(p)  # (a program without one keeps its JSON and its id)
    assert canonical(from_source(to_python(q))) == canonical(q)


def test_a_weak_value_never_meets_a_narrower_dtype_in_a_binary_op() -> None:
    """lax.axis_size is a Python int (weak int32) and pmean of it a Python float (weak
    float32): jax keeps a narrower operand's dtype when one meets it (pmean(axis_size) *
    a bfloat16 is bfloat16), where the oracle, whose types carry no weakness, promotes to
    float32; so construction never pairs them."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from harness.judge.check import check_program
    from programs.model import Input, Mesh, Op, Program, Spec
    from strategies.body import Body
    from strategies.invalid import ValueView

    mesh = Mesh(("x",), (2,))

    @settings(max_examples=1, database=None)
    @given(st.just(None))
    def build(_: None) -> None:  # (push records Hypothesis events: inside a test)
        vals = [ValueView((), "bfloat16", frozenset()), ValueView((), "float32", frozenset()), ValueView((), "int8", frozenset())]
        b = Body(mesh, ("x",), True, vals)
        n = b.push(Op.make("axis_size", (), axes=("x",)))
        assert n is not None
        m = b.push(Op.make("pmean", (n,), axes=("x",)))
        assert m is not None and {n, m} <= b.weak and b.vals[m].dtype == "float32"
        assert b.mixes_weak(m, 0) and b.mixes_weak(0, m) and not b.mixes_weak(m, 1)
        assert b.mixes_weak(n, 2) and not b.mixes_weak(n, 0)  # (int32 with bfloat16: bfloat16 in both)

    build()
    # what jax does (the rule's reason): the product stays bfloat16
    p = Program(mesh, (Input((), "bfloat16", "small"),), (Spec(()),),
                (Op.make("axis_size", (), axes=("x",)), Op.make("pmean", (1,), axes=("x",)), Op.make("mul", (2, 0))), (3,), (Spec(()),))
    [obs] = check_program(p, ("abstract",)).observations
    assert obs.status == "ok" and obs.value_types[3][1] == "bfloat16", obs
