"""The derivative modes under every flag (grad and grad_remat with check_vma=False, jvp,
linearize, hessian, a named checkpoint policy) and the call's and parameters' forms, on
real jax: each runs clean, and each catches an injected fault in the one configuration
it breaks (harness/run/narrow_faults.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import P, op, prog

from harness.judge.check import evaluate
from harness.judge.compare import DivergenceKind
from harness.run.pool import Pool
from programs.forms import with_form
from programs.model import CallForm, Input, Mesh, Program

XY = Mesh(("x", "y"), (2, 4))
XY_EXPLICIT = Mesh(("x", "y"), (2, 4), ("explicit", "explicit"))


def f32(*shape: int, seed: int = 3) -> Input:
    return Input(tuple(shape), "float32", "small", seed)


def _run(p: Program, modes: tuple[str, ...], fault: str = "") -> list:  # type: ignore[type-arg]
    pool = Pool(1, env={"SHARDFUZZ_FAULTS": fault} if fault else None)
    try:
        pool.submit(p, modes)
        (c,) = pool.drain()
    finally:
        pool.close()
    assert all(o.status in ("ok", "error") for o in c.observations), c.observations
    return list(evaluate(c.program, c.observations).divergences)


# check_vma=False: out[0] P() breaks its promise (no derivative), out[1] keeps it
UNCHECKED = prog(XY, [f32(8, 8)], [P("x", "y")], [op("mul", 0, 0), op("psum", 1, axes=("x", "y")), op("psum", 1, axes=("y",))],
                 [1, 2, 3], [P(), P(), P("x")], check_vma=False)
CHECKED = prog(XY, [f32(8, 8), f32(4, 2, seed=5)], [P("x", "y"), P()],
               [op("mul", 0, 1), op("all_gather", 2, axes=("y",), axis=1, tiled=True), op("mul", 3, 3), op("psum", 4, axes=("x",))],
               [5], [P(None, "y")])
FORMS = replace(prog(XY, [f32(8, 8)], [P("x", "y")],
                     [with_form(op("ppermute", 0, axes=("y",), perm=((0, 1), (1, 2), (2, 3), (3, 0))), "perm", "array"),
                      with_form(op("pmean", 1, axes=("y",)), "axes", "list"), op("psum", 0, axes=())],
                     [1, 2, 3], [P("x", "y"), P("x"), P("x", "y")]),
                form=CallForm(style="decorator", out_specs="tuple"), remat_policy="dots_saveable")
INFERRED = replace(prog(XY_EXPLICIT, [f32(8, 8)], [P("x", "y")], [op("mul", 0, 0)], [1], [P("x", "y")]),
                   reshard=True, mesh_context=True, form=CallForm(in_specs="omitted", style="partial"))
DERIVATIVES = ("grad", "grad_remat", "jvp", "linearize", "hessian")


@pytest.mark.parametrize(("p", "modes"), [
    (UNCHECKED, DERIVATIVES + ("jit", "vmap")),
    (CHECKED, DERIVATIVES),
    (FORMS, ("abstract", "jit", "eager", "vmap") + DERIVATIVES),
    (INFERRED, ("abstract", "jit", "eager", "vmap", "lowering")),
])
def test_mode_runs_clean(p: Program, modes: tuple[str, ...]) -> None:
    assert _run(p, modes) == []


@pytest.mark.parametrize(("p", "mode", "fault"), [
    (CHECKED, "hessian", "psum_transpose_doubles"),  # forward over reverse meets the transpose
    (CHECKED, "linearize", "narrow_linearize_plus_one"),
    (UNCHECKED, "grad", "narrow_shard_map_unchecked_derivative"),  # out[1] and out[2] keep their promise
    (UNCHECKED, "jvp", "narrow_shard_map_unchecked_derivative"),
    (FORMS, "grad_remat", "narrow_checkpoint_dots_saveable"),
    (FORMS, "jit", "narrow_ppermute_perm_array_transposed"),
    (FORMS, "jit", "narrow_pmean_axes_list"),
    (FORMS, "jit", "narrow_psum_empty_axes"),
    (FORMS, "jit", "narrow_shard_map_decorator"),
])
def test_mode_catches_fault(p: Program, mode: str, fault: str) -> None:
    divs = _run(p, (mode,), fault)
    assert any(d.kind == DivergenceKind.VALUE and d.mode == mode for d in divs), divs


def test_inferred_in_specs_that_drop_an_axis_are_caught() -> None:
    """The narrow fault infers the argument's in_spec without its last axis: jax then
    rejects the in_spec, not the argument's sharding (an unexpected error)."""
    divs = _run(INFERRED, ("jit",), "narrow_inferred_in_spec_drops_axis")
    assert any(d.kind == DivergenceKind.UNEXPECTED_ERROR for d in divs), divs
