"""The transformation modes and program features only they reach: vmap with
spmd_axis_name, the same program written with jax.smap, ops inside lax.scan / lax.cond and
the other wrappers (switch, while_loop, fori_loop, map, jax.vmap, jax.checkpoint).
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

# every wrapper beyond scan and cond around a collective or a local op; y is free, so the
# vmap_spmd mode splits its batch over it
WRAPPED = prog(XY, [Input((4, 6), "float32", "small", 2)], [P("x")],
               [op("psum", 0, axes=("x",), wrap="switch"), op("ppermute", 0, axes=("x",), perm=((0, 1), (1, 0)), wrap="fori"),
                op("all_gather", 2, axes=("x",), axis=0, tiled=True, wrap="checkpoint"),
                op("psum_scatter", 0, axes=("x",), scatter_dimension=0, tiled=True, wrap="map"),
                op("psum", 2, axes=("x",), wrap="vmap"), op("add", 1, 5, wrap="checkpoint")],
               [6, 4, 3], [P(), P("x"), P("x")])
# lax.while_loop has no reverse-mode derivative (the grad modes list it as a gap); with
# the wrappers other than fori (vmap-spmd-fori-closure-carry-vma) under vmap_spmd too
WHILE = prog(XY, [Input((4, 6), "float32", "small", 2)], [P("x")],
             [op("psum", 0, axes=("x",), wrap="while"), op("mul", 1, 0, wrap="while"),
              op("psum_scatter", 2, axes=("x",), scatter_dimension=0, tiled=True, wrap="map"),
              op("all_gather", 3, axes=("x",), axis=1, tiled=False, wrap="switch"), op("neg", 4, wrap="vmap"),
              op("pmax", 5, axes=("x",), wrap="checkpoint")],
             [2, 6], [P("x"), P()])

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
    # a nested shard_map names the automatic y: jax.smap over x holds it (the mesh from context)
    assert NESTED.smap_form() == ("x", (0,), (0,))
    assert isinstance(replace(NESTED, axis_names=None).smap_form(), str)  # y manual too, of size 4


@pytest.mark.parametrize(("p", "modes"), [
        (SPMD, ("vmap_spmd", "vmap")),
        (SMAP, ("smap", "jit")),
        (SCAN, ("jit", "eager", "vmap", "grad")),
        (WRAPPED, ("abstract", "jit", "eager", "vmap", "grad", "grad_remat", "lowering")),
        (WHILE, ("abstract", "jit", "eager", "vmap", "vmap_spmd", "lowering")),
        (NESTED, ("abstract", "jit", "eager", "vmap", "smap", "grad", "lowering")),
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
        (WRAPPED, "jit", "psum_counts_device0_twice"),  # psum inside switch branches and a vmap
        (WRAPPED, "grad", "psum_transpose_doubles"),  # through the fori / map / vmap / remat rules
        (WHILE, "vmap_spmd", "psum_counts_device0_twice"),  # psum in a while_loop body
        (NESTED, "jit", "psum_counts_device0_twice"),  # psum inside a nested shard_map
        (NESTED, "grad", "psum_transpose_doubles"),
        (NESTED, "smap", "psum_counts_device0_twice"),  # psum inside a nested shard_map inside jax.smap
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


def test_the_grad_modes_list_a_while_loop_as_a_gap() -> None:
    """jax has no reverse-mode derivative of lax.while_loop: the grad modes do not run a
    program with wrap='while' (a gap with its reason; the other modes check it)."""
    from harness.run.compat import unsupported_features

    assert any("while_loop" in f for f in unsupported_features(WHILE, "grad"))
    assert any("while_loop" in f for f in unsupported_features(WHILE, "grad_remat"))
    assert not unsupported_features(WHILE, "jit") and not unsupported_features(WRAPPED, "grad")


def test_the_probe_leaves_out_unreduced_values_and_still_finds_the_op_going_wrong() -> None:
    """The probe runs with check_vma=False, where jax refuses pcast(to='unreduced') of a
    value it types invariant: it leaves out the ops the oracle types unreduced (and those
    reading them), so a wrong psum elsewhere in the body is still put on the psum (else
    every probe fails and the divergence stays on the output's producer: a wrong
    ppermute is bucketed as value|jit|transpose)."""
    from harness.judge.check import check_in_pool
    from harness.run.modes import probe_program, probe_values

    x4e = Mesh(("x",), (4,), ("explicit",))
    p = Program(x4e, (Input((8,), "float32", "small", 3),), (P("x"),),
                (op("psum", 0, axes=("x",)), op("pcast", 0, axes=("x",), to="unreduced"), op("psum", 2, axes=("x",)),
                 op("neg", 1)), (4,), (P(),), reshard=True)
    assert probe_values(p) == (1, 4)  # not the unreduced pcast (2), nor the psum reading it (3)
    q = probe_program(p)
    assert [o.kind for o in q.body] == ["psum", "neg"] and q.body[1].operands == (1,) and q.outputs == (1, 2)
    pool = Pool(1, env={"SHARDFUZZ_FAULTS": "psum_counts_device0_twice"})
    try:
        divs = check_in_pool(pool, p, ("jit",)).divergences
    finally:
        pool.close()
    assert [(d.kind, d.where) for d in divs] == [(DivergenceKind.VALUE, "psum")], divs
