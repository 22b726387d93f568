"""The transformation modes and program features only they reach: vmap with
spmd_axis_name, the same program written with jax.smap, ops inside lax.scan / lax.cond.
Each runs clean on real jax and catches an injected fault the plain path also shows."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import P, iota, op, prog

from harness.judge.check import evaluate
from harness.judge.compare import DivergenceKind
from harness.run.pool import Pool
from programs.model import Input, Mesh, Program

XY = Mesh(("x", "y"), (2, 4))
X4 = Mesh(("x",), (4,))


def _run(p: Program, modes: tuple[str, ...], fault: str = "") -> list:  # type: ignore[type-arg]
    pool = Pool(1, env={"SHARDFUZZ_FAULTS": fault} if fault else None)
    try:
        pool.submit(p, modes)
        (c,) = pool.drain()
    finally:
        pool.close()
    assert all(o.status in ("ok", "error") for o in c.observations), c.observations
    return list(evaluate(c.program, c.observations).divergences)


# spmd axis y is free (no spec, no op names it): the batch of 4 is split over it
SPMD = prog(XY, [iota(4, 6)], [P("x")], [op("all_gather", 0, axes=("x",), axis=0, tiled=False), op("psum", 1, axes=("x",))], [2], [P()])
# one axis, each spec naming it on one dimension: a jax.smap form exists
SMAP = prog(X4, [iota(8, 3), Input((3,), "float32", "small", 5)], [P("x"), P()],
            [op("psum", 0, axes=("x",)), op("all_gather", 0, axes=("x",), axis=1, tiled=True), op("cast", 2, dtype="float32"), op("add", 4, 1)],
            [3, 5], [P(None, "x"), P()])
SCAN = prog(XY, [Input((4, 8), "float32", "small", 3)], [P("x", "y")], [op("psum", 0, axes=("y",), wrap="scan"), op("neg", 1, wrap="cond")], [2], [P("x")])


def _nested(inner: str, in_spec: tuple, out_spec: tuple, **params) -> Program:  # type: ignore[no-untyped-def, type-arg]
    from dataclasses import replace

    o = op("shard_map", 0, inner_axes=("y",), in_spec=in_spec, out_spec=out_spec, inner=inner,
           inner_params=tuple(sorted(op(inner, 0, **params).params)), check_vma=True)
    p = prog(XY, [Input((4, 8), "float32", "small", 2)], [P("x")], [o], [1], [P("x")])
    return replace(p, axis_names=("x",))  # y stays automatic for the outer shard_map


NESTED = _nested("psum", (None, ("y",)), (), axes=("y",))
# check_vma=False, output varying over the manual x and not named: no global value, and
# jax lays the output out over the automatic y: each block must be a tile of the predicted
NESTED_UNCHECKED = replace(
    prog(XY, [Input((2, 8), "float32", "small", 4)], [P(None)],
         [op("shard_map", 0, inner_axes=("y",), in_spec=(None, ("y",)), out_spec=(None, ("y",)), inner="psum",
             inner_params=(("axes", ("y",)),), check_vma=False), op("axis_index", axes=("x",)), op("add", 1, 2)],
         [3], [P(None)], check_vma=False),
    axis_names=("x",),
)
NESTED_BAD = _nested("neg", (None, ("y",)), ())  # varies over y, out_spec does not say so


def test_spmd_axis_and_smap_form() -> None:
    assert SPMD.spmd_axis() == "y"
    assert SCAN.spmd_axis() is None  # both axes are named
    assert SMAP.smap_form() == ("x", (0, None), (1, None))
    assert isinstance(SPMD.smap_form(), str)  # a 2-axis mesh, both manual with size > 1


@pytest.mark.parametrize(("p", "modes"), [
        (SPMD, ("vmap_spmd", "vmap")),
        (SMAP, ("smap", "jit")),
        (SCAN, ("jit", "eager", "vmap", "grad")),
        (NESTED, ("abstract", "jit", "eager", "vmap", "grad", "lowering")),
        (NESTED_BAD, ("abstract", "jit")),  # the error jax raises is the one predicted
        (NESTED_UNCHECKED, ("jit", "gspmd")),
    ],)
def test_mode_runs_clean(p: Program, modes: tuple[str, ...]) -> None:
    assert _run(p, modes) == []


@pytest.mark.parametrize(
    ("p", "mode", "fault"),
    [
        (SPMD, "vmap_spmd", "all_gather_batching_doubles"),  # the batching rule, split over y
        (SMAP, "smap", "psum_counts_device0_twice"),
        (SCAN, "jit", "psum_counts_device0_twice"),  # psum inside a scan body
        (NESTED, "jit", "psum_counts_device0_twice"),  # psum inside a nested shard_map
        (NESTED, "grad", "psum_transpose_doubles"),
        (NESTED_UNCHECKED, "jit", "psum_counts_device0_twice"),  # caught by the tile check
    ],
)
def test_mode_catches_fault(p: Program, mode: str, fault: str) -> None:
    divs = _run(p, (mode,), fault)
    assert any(d.kind == DivergenceKind.VALUE and d.mode == mode for d in divs), divs


def test_lowering_error_is_not_put_on_an_unrelated_eager_error() -> None:
    """A lowering-time error is put on the op where eager raised the same exception type,
    but not on an eager error raised before any op ran (at the inputs: another error)."""
    from harness.run.modes import Observation

    p = SCAN
    eager_at_input = Observation("eager", "ValueError", "out_specs must refer to a manual axis", status="error")
    lowering = Observation("lowering", "ValueError", "verifier error", status="error",
                           value_types={i: ((), "float32", None) for i in range(p.n_values)})
    wheres = {d.mode: d.where for d in evaluate(p, [eager_at_input, lowering]).divergences}
    assert wheres["eager"] == "input->ValueError" and wheres["lowering"] == "lowering->ValueError"
    eager_at_op = Observation("eager", "ValueError", "verifier error", status="error",
                              value_types={i: ((), "float32", None) for i in range(len(p.inputs) + 1)})
    wheres = {d.mode: d.where for d in evaluate(p, [eager_at_op, lowering]).divergences}
    assert wheres["lowering"] == wheres["eager"] == "neg->ValueError"  # the second op, neg, never recorded
