"""Rewrites and slices mean what the program means (by the oracle, no jax)."""

from __future__ import annotations

import numpy as np
from helpers import P, iota, op, prog
from hypothesis import given

from oracles import predict
from oracles.rewrites import (
    REWRITES,
    local_empty_axes,
    mesh_order_axes,
    nonnegative_axes,
    unwrap,
    vary_after,
)
from programs.graph import cone, live_ops, slice_outputs
from programs.model import Mesh
from strategies import programs

XY = Mesh(("x", "y"), (2, 4))


def _same_outputs(p, q) -> None:  # type: ignore[no-untyped-def]
    a, b = predict(p), predict(q)
    assert (a.error is None) == (b.error is None)
    for x, y in zip(a.outputs, b.outputs):
        assert x.global_shape == y.global_shape and x.dtype == y.dtype and x.vma == y.vma
        np.testing.assert_array_equal(x.device_values, y.device_values)


def test_nonnegative_axes_hand_example() -> None:
    p = prog(XY, [iota(8, 4)], [P("x")], [op("psum_scatter", 0, axes=("y",), scatter_dimension=-1, tiled=True),
                                          op("all_to_all", 0, axes=("y",), split_axis=-1, concat_axis=-2, tiled=True)],
             [1, 2], [P("x", "y"), P("x", "y")])
    q = nonnegative_axes(p)
    assert q is not None
    assert q.body[0].p("scatter_dimension") == 1
    assert (q.body[1].p("split_axis"), q.body[1].p("concat_axis")) == (1, 0)
    _same_outputs(p, q)
    assert nonnegative_axes(q) is None  # nothing left to rewrite


def _same_error(p, q) -> None:  # type: ignore[no-untyped-def]
    """The same error at an op of the same kind (a rewrite that puts several ops in one's
    place moves the later ones) or at the same output."""
    a, b = predict(p).error, predict(q).error
    assert a is not None and b is not None
    assert (a.kind, a.output, a.op_index is None) == (b.kind, b.output, b.op_index is None)
    if a.op_index is not None and b.op_index is not None:
        assert p.body[a.op_index].kind == q.body[b.op_index].kind


def test_nonnegative_axes_rewrites_an_invalid_program_where_the_axis_is_in_range() -> None:
    """An invalid program's in-range negative axes become non-negative, and it fails the
    same way (eager can segfault at a negative split_axis of a program whose out_spec
    drops a varying axis; without the rewrite its other all_to_alls' cells are never
    checked by error in eager). An out-of-range axis is a defect of
    its own: it stays."""
    drops = prog(XY, [iota(8, 4), iota(8, 4)], [P("x"), P("x")],
                 [op("all_to_all", 0, axes=("y",), split_axis=-1, concat_axis=-2, tiled=True), op("neg", 1)],
                 [2, 3], [P("x", "y"), P()])  # output 1 varies along x: the defect is after the body
    q = nonnegative_axes(drops)
    assert q is not None and (q.body[0].p("split_axis"), q.body[0].p("concat_axis")) == (1, 0)
    assert predict(drops).error.output == 1  # type: ignore[union-attr]
    _same_error(drops, q)
    out_of_range = prog(XY, [iota(8, 4)], [P("x")],
                        [op("all_to_all", 0, axes=("y",), split_axis=-1, concat_axis=-3, tiled=True)], [1], [P("x", "y")])
    q = nonnegative_axes(out_of_range)
    assert q is not None and (q.body[0].p("split_axis"), q.body[0].p("concat_axis")) == (1, -3)
    _same_error(out_of_range, q)
    # an op after the error has no operand rank the oracle gives: it stays as it is
    after = prog(XY, [iota(8, 4)], [P("x")],
                 [op("all_to_all", 0, axes=("y",), split_axis=0, concat_axis=-3, tiled=True),
                  op("all_to_all", 1, axes=("y",), split_axis=-1, concat_axis=0, tiled=True)], [2], [P("x", "y")])
    assert predict(after).error.op_index == 0  # type: ignore[union-attr]
    assert nonnegative_axes(after) is None


def test_mesh_order_axes_hand_example() -> None:
    # over ('y', 'x'), index i = iy * 2 + ix; shift by one in that numbering
    perm = tuple((i, (i + 1) % 8) for i in range(8))
    p = prog(XY, [iota(8)], [P(("x", "y"))], [op("ppermute", 0, axes=("y", "x"), perm=perm),
                                              op("pshuffle", 0, axes=("y", "x"), perm=(1, 2, 3, 4, 5, 6, 7, 0))],
             [1, 2], [P(("x", "y")), P(("x", "y"))])
    q = mesh_order_axes(p)
    assert q is not None and q.body[0].p("axes") == ("x", "y") and q.body[1].p("axes") == ("x", "y")
    # device (ix=0, iy=0) is 0 in both numberings; (ix=1, iy=0) is 1 over (y, x), 4 over (x, y)
    assert (0, 4) in q.body[0].p("perm")  # type: ignore[operator]
    _same_outputs(p, q)


def test_vary_after_retypes_a_grouped_pmax_as_the_oracle_does() -> None:
    """A pmax with two groups over 'y' varies along 'y' (each group its own maximum); jax
    types it invariant there (grouped-pmax-claims-invariance). The repair puts
    pcast(to='varying') over 'y' right after it, marked repair=True: the oracle's identity,
    so every output means the same; the ops after it read the pcast. Nothing to do twice,
    nor after an ungrouped pmax (typed invariant rightly)."""
    p = prog(XY, [iota(8, 4)], [P("x", "y")],
             [op("pmax", 0, axes=("y",), groups=((0, 1), (2, 3))), op("neg", 1)], [2], [P("x", "y")])
    q = vary_after(p)
    assert q is not None and [o.kind for o in q.body] == ["pmax", "pcast", "neg"]
    assert q.body[1].operands == (1,) and q.body[1].p("axes") == ("y",) and q.body[1].p("repair") is True
    assert q.body[1].p("to") == "varying" and q.body[2].operands == (2,) and q.outputs == (3,)
    _same_outputs(p, q)
    assert predict(q).value_types[2].vma == predict(p).value_types[1].vma
    assert vary_after(q) is None
    whole = prog(XY, [iota(8, 4)], [P("x", "y")], [op("pmax", 0, axes=("y",))], [1], [P("x")])
    assert vary_after(whole) is None
    assert vary_after(p, frozenset()) is None  # (no site: nothing)


def test_unwrap_runs_an_op_out_of_its_wrapper() -> None:
    p = prog(XY, [iota(8, 4)], [P("x", "y")], [op("neg", 0, wrap="fori"), op("psum", 1, axes=("y",), wrap="cond")],
             [2], [P("x")])
    q = unwrap(p, frozenset({0}))
    assert q is not None and q.body[0].p("wrap") is None and q.body[1].p("wrap") == "cond"
    _same_outputs(p, q)
    r = unwrap(p)
    assert r is not None and all(o.p("wrap") is None for o in r.body) and unwrap(r) is None


def test_local_empty_axes_means_the_group_of_one() -> None:
    """An untiled all_gather over no axes is its operand with a new dimension of size 1 at
    `axis` (x * ones, then a transpose for axis > 0); an untiled psum_scatter over no axes
    drops its scatter dimension of size 1 (a sum over it, cast back to the operand's
    dtype). The ops reading them read the replacement's last op; an op after them keeps
    its meaning (here a tiled all_gather that needs the new dimension)."""
    p = prog(XY, [iota(8, 4, dtype="int8"), iota(2, 1, 3, dtype="int16")], [P("x", "y"), P()],
             [op("all_gather", 0, axes=(), axis=1, tiled=False), op("psum_scatter", 1, axes=(), scatter_dimension=1, tiled=False),
              op("all_gather", 2, axes=("y",), axis=-1, tiled=True), op("all_gather", 0, axes=(), axis=0, tiled=False)],
             [4, 3, 5], [P("x", "y"), P(), P(None, "x", "y")])
    q = local_empty_axes(p)
    assert q is not None
    assert [o.kind for o in q.body] == ["const", "mul", "transpose", "reduce_sum", "cast", "all_gather", "const", "mul"]
    assert q.body[2].p("perm") == (1, 0, 2) and q.body[5].operands == (4,) and q.outputs == (7, 6, 9)
    _same_outputs(p, q)
    assert local_empty_axes(q) is None
    assert local_empty_axes(p, frozenset({3})) is not None and local_empty_axes(p, frozenset({2})) is None


@given(programs(max_ops=6, invalid=0.5))
def test_rewrites_preserve_the_oracles_meaning(p) -> None:  # type: ignore[no-untyped-def]
    for fn in REWRITES.values():
        q = fn(p)
        if q is not None:
            if predict(p).error is None:
                _same_outputs(p, q)
            else:
                _same_error(p, q)


def test_cone_and_slice() -> None:
    mesh = Mesh(("x",), (2,))
    p = prog(mesh, [iota(4), iota(2)], [P("x"), P()], [op("psum", 0, axes=("x",)), op("neg", 1), op("add", 2, 3)],
             [2, 3, 4], [P(), P(), P()])
    assert cone(p, 2) == {0} and cone(p, 3) == {1} and cone(p, 4) == {0, 1, 2} and cone(p, 0) == frozenset()
    assert live_ops(p) == {0, 1, 2}
    q = slice_outputs(p, (1,))
    assert len(q.body) == 1 and q.body[0].kind == "neg" and q.outputs == (2,) and q.out_specs == (P(),)
    np.testing.assert_array_equal(predict(q).outputs[0].device_values, predict(p).outputs[1].device_values)


@given(programs(max_ops=6))
def test_slices_keep_the_outputs_they_keep(p) -> None:  # type: ignore[no-untyped-def]
    pred = predict(p)
    if pred.error is not None or len(p.outputs) < 2:
        return
    q = slice_outputs(p, (len(p.outputs) - 1,))
    got = predict(q)
    assert got.error is None
    np.testing.assert_array_equal(got.outputs[0].device_values, pred.outputs[-1].device_values)
