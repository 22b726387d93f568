"""float64 under jax_enable_x64, and `hypothesis.target()` toward new configuration cells.

A program that names float64 (an argument, a cast, a const) runs with jax_enable_x64 on
(`Program.x64`); jax's default types are then 64-bit. The oracle's rules, hand-worked
(no jax), are facts measured on jax 0.10.2 (XLA:CPU): jnp.sum of an int32 is int64, of a
uint8 uint64; uint32 + int32 is int64; float32 + float64 is float64; pmean of an int32
is float32 but of an int64 float64; lax.axis_size is a weak int64. The differential part
runs such programs through real jax in a worker.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import P, iota, op, prog

from harness.judge.check import evaluate
from harness.run.pool import Pool
from oracles import predict
from oracles.ops.local import _promote
from oracles.rounding import precision, unit_roundoff
from programs.emit import to_python
from programs.model import Input, Mesh, Program
from programs.serialize import from_json, to_json

X4 = Mesh(("x",), (4,))
XY = Mesh(("x", "y"), (2, 4))


def _out(p: Program, k: int = 0):  # type: ignore[no-untyped-def]
    pr = predict(p)
    assert pr.error is None, pr.error
    return pr.outputs[k]


def test_a_program_naming_float64_runs_under_x64() -> None:
    f64 = prog(X4, [iota(8, dtype="float64")], [P("x")], [op("neg", 0)], [1], [P("x")])
    cast = prog(X4, [iota(8)], [P("x")], [op("cast", 0, dtype="float64")], [1], [P("x")])
    plain = prog(X4, [iota(8)], [P("x")], [op("cast", 0, dtype="float32")], [1], [P("x")])
    assert f64.x64 and cast.x64 and not plain.x64
    assert "jax_enable_x64" in to_python(f64) and "jax_enable_x64" not in to_python(plain)
    assert from_json(to_json(f64)) == f64  # float64 is a dtype case files may name


def test_promotion_with_and_without_x64() -> None:
    assert _promote("uint32", "int32") == "int32" and _promote("uint32", "int32", x64=True) == "int64"
    assert _promote("float32", "float64", x64=True) == "float64"
    assert _promote("bfloat16", "float16", x64=True) == "float32"
    assert _promote("float64", "int8", x64=True) == "float64"
    assert _promote("uint64", "int8", x64=True) == "float64"  # they meet at the default float
    assert _promote("uint8", "int8", x64=True) == "int16"


def test_default_types_are_64_bit_under_x64() -> None:
    # a0 float64 (makes the program x64), a1 int32 / uint8: jnp.sum gives int64 / uint64
    for dt, want in (("int32", "int64"), ("uint8", "uint64"), ("bool", "int64")):
        p = prog(X4, [iota(4, dtype="float64"), iota(4, 2, dtype=dt)], [P("x"), P("x")],
                 [op("reduce_sum", 1, axis=1)], [2], [P("x")])
        assert _out(p).dtype == want
        q = prog(X4, [iota(4, 2, dtype=dt)], [P("x")], [op("reduce_sum", 0, axis=1)], [1], [P("x")])
        assert _out(q).dtype == {"int32": "int32", "uint8": "uint32", "bool": "int32"}[dt]
    # pmean: an int32 gives float32 even under x64, an int64 (the sum above) float64
    p = prog(X4, [iota(4, dtype="float64"), iota(4, 2)], [P("x"), P("x")],
             [op("reduce_sum", 1, axis=1), op("pmean", 2, axes=("x",)), op("pmean", 1, axes=("x",))], [3, 4], [P(), P()])
    assert (_out(p, 0).dtype, _out(p, 1).dtype) == ("float64", "float32")
    # axis_size: a weak int64 under x64 (alone as an output, int64)
    p = prog(X4, [iota(4, dtype="float64")], [P("x")], [op("axis_size", axes=("x",))], [1], [P()])
    assert _out(p).dtype == "int64" and int(np.asarray(_out(p).global_value)) == 4


def test_float64_rounding_bound() -> None:
    assert precision("float64") == 53 and unit_roundoff("float64") == 2.0**-53
    # psum of iota over 4 devices: integers, exact in float64 (bit for bit)
    p = prog(X4, [iota(4, 3, dtype="float64")], [P("x")], [op("psum", 0, axes=("x",))], [1], [P()])
    o = _out(p)
    assert o.exact and np.array_equal(o.global_value, np.arange(12).reshape(4, 3).reshape(4, 1, 3).sum(0))
    # pmean of 1..: a division rounds, and the bound is float64's, not float32's
    # (values 0, 1, 4 on the three devices: 5 / 3)
    p = prog(Mesh(("x",), (3,)), [Input((3, 1), "float64", "iota")], [P("x")], [op("mul", 0, 0), op("pmean", 1, axes=("x",))], [2], [P()])
    o = _out(p)
    assert not o.exact and 0 < o.atol < 1e-14


F64_PROGRAMS = [
    # every float64 value goes through a collective or a local op, and int64 results too
    prog(XY, [iota(4, 8, dtype="float64"), iota(4, 8, dtype="int32")], [P("x", "y"), P("x", "y")],
         [op("psum", 0, axes=("y",)), op("reduce_sum", 1, axis=1), op("pmean", 3, axes=("x", "y")),
          op("all_gather", 0, axes=("y",), axis=0, tiled=True), op("cast", 1, dtype="float64"), op("mul", 0, 6)],
         [2, 4, 5, 7], [P("x"), P(), P("x", "y"), P("x", "y")]),
    prog(X4, [Input((8, 4), "float64", "small", 3), iota(8, dtype="float32")], [P("x"), P("x")],
         [op("all_to_all", 0, axes=("x",), split_axis=1, concat_axis=0, tiled=True),
          op("ppermute", 0, axes=("x",), perm=((0, 1), (1, 2), (2, 3), (3, 0))),
          op("psum_scatter", 0, axes=("x",), scatter_dimension=1, tiled=True),
          op("axis_size", axes=("x",)), op("add", 1, 5), op("pmax", 0, axes=("x",))],
         [2, 3, 4, 6, 7], [P("x"), P("x"), P("x"), P("x"), P()]),
]


@pytest.mark.parametrize(("p", "modes"), [
    (F64_PROGRAMS[0], ("abstract", "jit", "eager", "vmap", "grad")),
    (F64_PROGRAMS[1], ("abstract", "jit", "gspmd", "vmap")),  # (pmax has no derivative in jax)
])
def test_float64_programs_agree_with_jax(p: Program, modes: tuple[str, ...]) -> None:
    assert p.x64 and predict(p).error is None
    pool = Pool(1)
    try:
        pool.submit(p, modes)
        (c,) = pool.drain()
    finally:
        pool.close()
    assert all(o.status == "ok" for o in c.observations), [(o.mode, o.status, o.error_message) for o in c.observations]
    assert [o.dtype for o in next(o for o in c.observations if o.mode == "jit").outputs] == [o.dtype for o in predict(p).outputs]
    assert list(evaluate(c.program, c.observations).divergences) == []


def test_strategy_draws_float64_programs_typed_under_x64() -> None:
    # the stream a fuzz run draws (seed 0, no defects: 78 of its first 600 programs with
    # defects are x64; half the stream is focused, strategies/focus.py)
    from harness.campaign.generation import seeded_programs

    drawn = seeded_programs(300, 0, invalid=0.0)
    x64 = [p for p in drawn if p.x64]
    assert 0.03 < len(x64) / len(drawn) < 0.4, len(x64)
    assert all(p.inputs[0].dtype == "float64" for p in x64)
    assert all(x.dtype != "float64" for p in drawn if not p.x64 for x in p.inputs)
    assert all(predict(p, values=False).error is None for p in x64)  # typed by the same rules


def test_target_scores_new_cells_and_the_stream_is_repeatable() -> None:
    from hypothesis import Phase
    from hypothesis.database import InMemoryExampleDatabase

    from harness.campaign.config import RunConfig
    from harness.campaign.generation import CellNovelty, handling, hypothesis_test, seeded_programs
    from programs.serialize import program_id

    p = F64_PROGRAMS[0]
    nov = CellNovelty()
    first = nov.score(p)
    assert first > 5 and "psum|dtype=float64" in nov.seen and nov.score(p) == 0
    # the run's generation, with targets, draws what seeded_programs draws, with or
    # without a database (the shrink search's replay has one)
    want = [program_id(q) for q in seeded_programs(80, 3)]
    cfg = RunConfig(seed=3, max_examples=80)
    for db in (None, InMemoryExampleDatabase()):
        got: list[str] = []
        with handling(lambda q, got=got: got.append(program_id(q))):  # type: ignore[misc]
            hypothesis_test(cfg, [Phase.generate], db)()
        assert got == want


def test_by_error_cells_of_modes_that_run_no_defect_are_unreachable() -> None:
    from harness.campaign.cells import unreachable

    assert unreachable("psum|rank=2|by_error", "vmap_spmd") and unreachable("psum|rank=2|by_error", "smap")
    assert unreachable("psum|rank=2|by_error", "jit") is None and unreachable("psum|rank=2", "smap") is None
