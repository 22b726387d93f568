"""The oracle, tested without jax against hand-worked examples.

Examples marked [shard_map.md] come from jax 0.10.2 docs/notebooks/shard_map.md
("Collectives tutorial"); [parallel.py] from the docstrings in jax/_src/lax/parallel.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import P, iota, op, prog
from hypothesis import given
from hypothesis import strategies as st

from oracles import ErrorKind, predict
from oracles.devices import assemble_global, split_global
from programs.model import Mesh
from programs.ops import WRAPS

X4 = Mesh(("i",), (4,))
XY = Mesh(("x", "y"), (2, 4))
DOC_X = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])




def run1(p):  # type: ignore[no-untyped-def]
    pr = predict(p)
    assert pr.error is None, pr.error
    return pr.outputs


def _collective_on(x: np.ndarray, mesh: Mesh, spec, kind: str, check_vma: bool = True, **params):  # type: ignore[no-untyped-def]
    """Apply one op to a global array sharded by `spec`: returns per-device blocks."""
    from oracles.ops import OPS, Ctx
    from oracles.prediction import ValueType
    from programs.model import Op

    data = split_global(x, mesh, spec.entries)
    o = Op.make(kind, (0,), **params)
    ctx = Ctx(mesh, mesh.names, check_vma, 0, o)
    t = ValueType(data.shape[len(mesh.sizes) :], "int32", frozenset(spec.axes()))
    OPS[kind].check([t], ctx)
    return OPS[kind].value([data], [t], ctx), OPS[kind].shape([t], ctx), OPS[kind].vma([t], ctx)


def test_psum_doc_example() -> None:
    # [shard_map.md] f1: psum over 'i' of blocks [3 1 4 1] [5 9 2 6] [5 3 5 8] [9 7 1 2]
    v, shape, vma = _collective_on(DOC_X, X4, P("i"), "psum", axes=("i",))
    assert shape == (4,)
    for d in range(4):
        assert v[d].tolist() == [22, 20, 12, 17]
    assert vma == frozenset()


def test_all_gather_doc_example() -> None:
    # [shard_map.md] f2: all_gather, tiled=False, stacks the four blocks
    v, shape, vma = _collective_on(DOC_X, X4, P("i"), "all_gather", axes=("i",), axis=0, tiled=False)
    assert shape == (4, 4)
    assert v[2].tolist() == DOC_X.reshape(4, 4).tolist()
    assert vma == frozenset({"i"})  # all_gather keeps the axis varying (to='varying')
    v, shape, _ = _collective_on(DOC_X, X4, P("i"), "all_gather", axes=("i",), axis=0, tiled=True)
    assert shape == (16,) and v[0].tolist() == DOC_X.tolist()


def test_psum_scatter_doc_example() -> None:
    # [shard_map.md] f5: psum_scatter tiled: AFTER [22] [20] [12] [17]
    v, shape, vma = _collective_on(DOC_X, X4, P("i"), "psum_scatter", axes=("i",), scatter_dimension=0, tiled=True)
    assert shape == (1,)
    assert [v[d].tolist() for d in range(4)] == [[22], [20], [12], [17]]
    assert vma == frozenset({"i"})


def test_all_to_all_doc_example() -> None:
    # [shard_map.md] f7: all_to_all split 0 concat 0 tiled
    v, shape, _ = _collective_on(DOC_X, X4, P("i"), "all_to_all", axes=("i",), split_axis=0, concat_axis=0, tiled=True)
    assert [v[d].tolist() for d in range(4)] == [[3, 5, 5, 9], [1, 9, 3, 7], [4, 2, 5, 1], [1, 6, 8, 2]]
    assert shape == (4,)


def test_ppermute_doc_example_shift_right() -> None:
    # [shard_map.md] f6: ppermute with perm [(i, (i+1) % 4)] shifts blocks right
    perm = tuple((i, (i + 1) % 4) for i in range(4))
    v, _, _ = _collective_on(DOC_X, X4, P("i"), "ppermute", axes=("i",), perm=perm)
    assert [v[d].tolist() for d in range(4)] == [[9, 7, 1, 2], [3, 1, 4, 1], [5, 9, 2, 6], [5, 3, 5, 8]]


def test_ppermute_partial_fills_zeros() -> None:
    # [parallel.py] ppermute: devices that are no destination get zeros
    v, _, _ = _collective_on(DOC_X, X4, P("i"), "ppermute", axes=("i",), perm=((0, 1),))
    assert v[0].tolist() == [0, 0, 0, 0] and v[1].tolist() == [3, 1, 4, 1] and v[2].sum() == 0


def test_pshuffle_is_ppermute_with_pairs_perm_i_to_i() -> None:
    # [parallel.py] pshuffle(x, perm) == ppermute(x, zip(perm, range(n))): out[i] = x[perm[i]]
    v, _, _ = _collective_on(DOC_X, X4, P("i"), "pshuffle", axes=("i",), perm=(2, 0, 3, 1))
    blocks = DOC_X.reshape(4, 4)
    assert [v[d].tolist() for d in range(4)] == [blocks[2].tolist(), blocks[0].tolist(), blocks[3].tolist(), blocks[1].tolist()]


def test_psum_with_axis_index_groups() -> None:
    # [parallel.py] psum docstring: groups [[0, 1], [2, 3]] over arange(4) -> [1 1 5 5]
    x = np.arange(4)
    v, _, _ = _collective_on(x, X4, P("i"), "psum", check_vma=False, axes=("i",), groups=((0, 1), (2, 3)))
    assert v.reshape(4).tolist() == [1, 1, 5, 5]


def test_all_gather_with_groups_not_drawn_but_pmax_groups() -> None:
    x = np.arange(4)
    v, _, _ = _collective_on(x, X4, P("i"), "pmax", axes=("i",), groups=((0, 2), (1, 3)))
    assert v.reshape(4).tolist() == [2, 3, 2, 3]


def test_grouped_pmax_varies_only_when_its_operand_does() -> None:
    # groups {0,2},{1,3} of a varying operand: the two groups hold different maxima, so the
    # result still varies along i; of an operand invariant along i, every group takes the max
    # of equal values and the result is invariant (and equal everywhere)
    x = np.arange(4)
    _, _, vma = _collective_on(x, X4, P("i"), "pmax", axes=("i",), groups=((0, 2), (1, 3)))
    assert vma == frozenset({"i"})
    v, _, vma = _collective_on(np.array([7, 1]), X4, P(), "pmin", axes=("i",), groups=((0, 2), (1, 3)))
    assert vma == frozenset()
    assert all(v[d].tolist() == [7, 1] for d in range(4))


def test_axis_index_multi_axis_is_major_first() -> None:
    p = prog(XY, [iota(2)], [P()], [op("axis_index", axes=("x", "y")), op("axis_index", axes=("y", "x"))], [1, 2], [P(("x", "y")), P(("x", "y"))])
    # rank-0 outputs cannot take a non-empty out_spec: expect the rank error
    assert predict(p).error.kind == ErrorKind.OUT_SPEC_RANK


def test_axis_index_values() -> None:
    from oracles.devices import group_index

    assert group_index(XY, ("x", "y")).tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert group_index(XY, ("y", "x")).tolist() == [[0, 2, 4, 6], [1, 3, 5, 7]]


def test_psum_of_invariant_multiplies_by_axis_size() -> None:
    # [shard_map.md] "psum of an invariant value": pvary then sum -> n * x
    p = prog(XY, [iota(3)], [P()], [op("psum", 0, axes=("y",))], [1], [P()])
    (o,) = run1(p)
    assert o.global_value.tolist() == [0, 4, 8]
    assert o.vma == frozenset()


def test_psum_mixed_vma_is_an_error() -> None:
    p = prog(XY, [iota(4)], [P("x")], [op("psum", 0, axes=("x", "y"))], [1], [P()])
    assert predict(p).error.kind == ErrorKind.COLLECTIVE_VMA


def test_pmean_of_int_is_float32() -> None:
    p = prog(X4, [iota(8)], [P("i")], [op("pmean", 0, axes=("i",))], [1], [P()])
    (o,) = run1(p)
    assert o.dtype == "float32"
    assert o.global_value.tolist() == [3.0, 4.0]  # mean of [0,1],[2,3],[4,5],[6,7]


def test_replication_error_names_the_axis() -> None:
    # [shard_map.md] out_specs=P() for a value varying over 'i' is rejected with check_vma
    p = prog(X4, [iota(8)], [P("i")], [op("neg", 0)], [1], [P()])
    e = predict(p).error
    assert e.kind == ErrorKind.OUT_SPEC_REPLICATION and e.facts == ("i",)
    # ... and runs with check_vma=False, each device's block concatenated nowhere
    p2 = prog(X4, [iota(8)], [P("i")], [op("neg", 0)], [1], [P()], check_vma=False)
    (o,) = run1(p2)
    assert o.global_value is None  # blocks differ: no single global value
    assert o.device_values[3].tolist() == [-6, -7]


def test_divisibility_error() -> None:
    p = prog(XY, [iota(6)], [P("y")], [op("neg", 0)], [1], [P("y")])
    e = predict(p).error
    assert e.kind == ErrorKind.IN_SPEC_DIVISIBILITY and e.facts == ("args[0]", "(of size 6)")


def test_all_gather_invarying_drops_axis() -> None:
    p = prog(XY, [iota(8)], [P("x")], [op("all_gather", 0, axes=("x",), axis=0, tiled=True, to="invarying")], [1], [P()])
    (o,) = run1(p)
    assert o.vma == frozenset() and o.global_value.tolist() == list(range(8))


def test_untiled_all_to_all_moves_dim() -> None:
    # split dim must equal the group size; it is removed and a new one inserted at concat
    p = prog(XY, [iota(16, 3)], [P("y")], [op("all_to_all", 0, axes=("y",), split_axis=0, concat_axis=1, tiled=False)], [1], [P("y")])
    (o,) = run1(p)
    assert o.local_shape == (3, 4) and o.global_shape == (12, 4)


@given(st.data())
def test_split_then_assemble_is_identity(data: st.DataObject) -> None:
    from strategies import meshes

    mesh = data.draw(meshes())
    rank = data.draw(st.integers(0, 3))
    unused = list(mesh.names)
    entries = []
    local = []
    for _ in range(rank):
        k = data.draw(st.integers(0, len(unused)))
        axes = tuple(unused[:k])
        unused = unused[k:]
        entries.append(axes or None)
        local.append(data.draw(st.integers(0, 3)))
    shape = tuple(n * (mesh.group_size(e) if e else 1) for n, e in zip(local, entries))
    x = np.arange(int(np.prod(shape))).reshape(shape)
    blocks = split_global(x, mesh, tuple(entries))
    assert blocks.shape == tuple(mesh.sizes) + tuple(local)
    np.testing.assert_array_equal(assemble_global(blocks, mesh, tuple(entries)), x)


@pytest.mark.parametrize("kind", ["psum", "pmax", "pmin"])
def test_reductions_remove_the_axis_from_vma(kind: str) -> None:
    p = prog(XY, [iota(4, 8)], [P("x", "y")], [op(kind, 0, axes=("y",))], [1], [P("x")])
    (o,) = run1(p)
    assert o.vma == frozenset({"x"})


def test_ragged_all_to_all_doc_example() -> None:
    # [parallel.py] ragged_all_to_all docstring, axis of size 2 -> [1 3 0 0] and [2 2 4 0]
    from oracles.ops import OPS, Ctx
    from oracles.prediction import ValueType
    from programs.model import Op

    mesh = Mesh(("x",), (2,))
    arrays = [
        np.array([[1, 2, 2], [3, 4, 0]], np.int32),  # operand
        np.zeros((2, 4), np.int32),  # output
        np.array([[0, 1], [0, 1]], np.int32),  # input_offsets
        np.array([[1, 2], [1, 1]], np.int32),  # send_sizes
        np.array([[0, 0], [1, 2]], np.int32),  # output_offsets
        np.array([[1, 1], [2, 1]], np.int32),  # recv_sizes
    ]
    o = Op.make("ragged_all_to_all", (0, 1, 2, 3, 4, 5), axes=("x",))
    ctx = Ctx(mesh, ("x",), True, 0, o)
    ts = [ValueType((3,), "int32", frozenset({"x"})), ValueType((4,), "int32", frozenset())] + [
        ValueType((2,), "int32", frozenset())
    ] * 4
    d = OPS["ragged_all_to_all"]
    d.check(ts, ctx)
    assert d.value(arrays, ts, ctx).tolist() == [[1, 3, 0, 0], [2, 2, 4, 0]]
    assert d.shape(ts, ctx) == (4,) and d.vma(ts, ctx) == frozenset({"x"})


def _nested(inner: str, in_spec: tuple, out_spec: tuple, **params):  # type: ignore[no-untyped-def, type-arg]
    from dataclasses import replace

    o = op("shard_map", 0, inner_axes=("y",), in_spec=in_spec, out_spec=out_spec, inner=inner,
           inner_params=tuple(sorted(op(inner, 0, **params).params)), check_vma=True)
    p = prog(XY, [iota(4, 8)], [P("x")], [o], [1], [P("x")])
    return replace(p, axis_names=("x",))  # y stays automatic for the outer shard_map


def test_nested_shard_map_psum_by_hand() -> None:
    # outer: x manual, each x-device holds rows [2x, 2x+2) of arange(32).reshape(4, 8);
    # inner over y: columns split in 4 pairs, psum over y adds the pairs, out_spec P()
    (o,) = run1(_nested("psum", (None, ("y",)), (), axes=("y",)))
    assert o.global_shape == (4, 2) and o.vma == frozenset({"x"})
    x = np.arange(32).reshape(4, 8)
    want = x[:, 0:2] + x[:, 2:4] + x[:, 4:6] + x[:, 6:8]  # rows 0-1: [[12, 16], [44, 48]]
    assert o.global_value.tolist() == want.tolist()
    assert want[:2].tolist() == [[12, 16], [44, 48]]


def test_nested_shard_map_ppermute_by_hand() -> None:
    # inner ppermute shifts the column pairs right by one along y; out_spec puts them back
    (o,) = run1(_nested("ppermute", (None, ("y",)), (None, ("y",)), axes=("y",), perm=((0, 1), (1, 2), (2, 3), (3, 0))))
    x = np.arange(32).reshape(4, 8)
    assert o.global_value.tolist() == np.roll(x, 2, axis=1).tolist()


def test_nested_shard_map_must_name_what_varies() -> None:
    # neg keeps the inner value varying over y: an out_spec without y is rejected
    pr = predict(_nested("neg", (None, ("y",)), ()))
    assert pr.error is not None and pr.error.kind == ErrorKind.OUT_SPEC_REPLICATION and "y" in pr.error.facts


def test_axis_size_by_hand() -> None:
    # [parallel.py] axis_size docstring: mesh (4, 2), axis_size(('i', 'j')) == 8; here
    # (2, 4): 'y' has 4 devices, ('x', 'y') 8; a rank-0 int32, the same on every device
    body = [op("axis_size", axes=("y",)), op("axis_size", axes=("x", "y")), op("add", 0, 2)]
    p = prog(XY, [iota(4, 8)], [P("x", "y")], body, [1, 2, 3], [P(), P(), P("x", "y")])
    size_y, size_xy, plus = run1(p)
    assert size_y.local_shape == () and size_y.dtype == "int32" and size_y.vma == frozenset()
    assert size_y.global_value.tolist() == 4 and size_xy.global_value.tolist() == 8
    assert plus.global_value.tolist() == (np.arange(32).reshape(4, 8) + 8).tolist()


def test_axis_size_names_a_bound_axis() -> None:
    pr = predict(prog(XY, [iota(4, 8)], [P("x", "y")], [op("axis_size", axes=("z",))], [1], [P()]))
    assert pr.error is not None and pr.error.kind == ErrorKind.UNBOUND_AXIS and "z" in pr.error.facts


def test_pbroadcast_doc_example() -> None:
    # [parallel.py] pbroadcast docstring: psum(where(axis_index == source, x, 0)): every
    # device gets the source's block; blocks [3 1 4 1] [5 9 2 6] [5 3 5 8] [9 7 1 2]
    v, shape, vma = _collective_on(DOC_X, X4, P("i"), "pbroadcast", axes=("i",), source=2)
    assert shape == (4,) and [v[d].tolist() for d in range(4)] == [[5, 3, 5, 8]] * 4
    assert vma == frozenset({"i"})  # typed like its operand (jax's ppermute rule)


def test_pbroadcast_over_one_and_two_axes_by_hand() -> None:
    x = np.arange(32).reshape(4, 8)  # device (i, j) of XY holds x[2i:2i+2, 2j:2j+2]
    p = prog(XY, [iota(4, 8)], [P("x", "y")], [op("pbroadcast", 0, axes=("y",), source=3)], [1], [P("x", "y")])
    (o,) = run1(p)
    # along y every device gets column block 3 (columns 6, 7) of its own rows
    assert o.global_value.tolist() == np.tile(x[:, 6:8], (1, 4)).tolist() and o.vma == frozenset({"x", "y"})
    # over ('x', 'y') the group index is 4 * i + j: source 5 is device (1, 1), x[2:4, 2:4]
    p = prog(XY, [iota(4, 8)], [P("x", "y")], [op("pbroadcast", 0, axes=("x", "y"), source=5)], [1], [P("x", "y")])
    (o,) = run1(p)
    assert o.global_value.tolist() == np.tile(x[2:4, 2:4], (2, 4)).tolist()


def test_pbroadcast_source_must_be_a_group_index() -> None:
    p = prog(XY, [iota(4, 8)], [P("x", "y")], [op("pbroadcast", 0, axes=("y",), source=4)], [1], [P("x", "y")])
    pr = predict(p)
    assert pr.error is not None and pr.error.kind == ErrorKind.COLLECTIVE_PARAM and "source" in pr.error.facts


def test_sendrecv_is_ppermute_by_hand() -> None:
    # [parallel.py] precv docstring: a destination gets its source's block; an index that
    # is no destination gets zeros. Blocks [3 1 4 1] [5 9 2 6] [5 3 5 8] [9 7 1 2]; pairs
    # 0 -> 1 and 1 -> 2: device 1 gets block 0, device 2 block 1, devices 0 and 3 zeros
    v, shape, vma = _collective_on(DOC_X, X4, P("i"), "sendrecv", axes=("i",), perm=((0, 1), (1, 2)))
    assert shape == (4,) and [v[d].tolist() for d in range(4)] == [[0] * 4, [3, 1, 4, 1], [5, 9, 2, 6], [0] * 4]
    # received from another device: varying over the axis (jax 0.10.2 types it invariant:
    # known entry precv-result-typed-invariant)
    assert vma == frozenset({"i"})


def test_sendrecv_of_a_replicated_value_varies_and_needs_the_axis_in_out_specs() -> None:
    # every device sends the same block, but a device that is no destination gets zeros:
    # the result varies over y, so out_specs=P('x') (y left out) is an error
    body = [op("sendrecv", 0, axes=("y",), perm=((0, 1),))]
    (o,) = run1(prog(XY, [iota(2, 8)], [P("x")], body, [1], [P("x", "y")]))
    assert o.vma == frozenset({"x", "y"})
    blocks = np.arange(16).reshape(2, 8)
    assert o.global_value.tolist() == np.concatenate([np.zeros_like(blocks), blocks, 0 * blocks, 0 * blocks], axis=1).tolist()
    pr = predict(prog(XY, [iota(2, 8)], [P("x")], body, [1], [P("x")]))
    assert pr.error is not None and pr.error.kind == ErrorKind.OUT_SPEC_REPLICATION


def test_pbroadcast_makes_an_invariant_operand_vary() -> None:
    # auto pcast (shard_map.md), as for every collective but psum/pmean: no error, and
    # every device of the group holds the one (replicated) block
    p = prog(XY, [iota(2, 8)], [P("x")], [op("pbroadcast", 0, axes=("y",), source=1)], [1], [P("x", "y")])
    (o,) = run1(p)
    assert o.vma == frozenset({"x", "y"}) and o.global_value.tolist() == np.tile(np.arange(16).reshape(2, 8), (1, 4)).tolist()


@pytest.mark.parametrize("wrap", WRAPS)
def test_a_wrapped_op_means_the_op(wrap: str) -> None:
    # every wrapper (programs/ops.py WRAPS) runs the op once on the same operands: blocks
    # [0 1 2 3] [4 5 6 7] [8 9 10 11] [12 13 14 15]; psum over i is [24 28 32 36] on every
    # device (invariant), and psum - block (the block closed over as the second operand)
    # is [24 27 30 33] [20 23 26 29] [16 19 22 25] [12 15 18 21] (varying over i)
    p = prog(X4, [iota(16)], [P("i")], [op("psum", 0, axes=("i",), wrap=wrap), op("sub", 1, 0, wrap=wrap)], [1, 2], [P(), P("i")])
    pr = predict(p)
    assert pr.error is None, pr.error
    out, diff = pr.outputs
    assert out.global_value is not None and out.global_value.tolist() == [24, 28, 32, 36]
    assert diff.global_value is not None
    assert diff.global_value.tolist() == [24, 27, 30, 33, 20, 23, 26, 29, 16, 19, 22, 25, 12, 15, 18, 21]
    assert pr.value_types[1].vma == frozenset() and pr.value_types[2].vma == frozenset({"i"})
