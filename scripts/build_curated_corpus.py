"""Write the curated regression corpus: harness/data/corpus/curated/*.json.

    python scripts/build_curated_corpus.py [--out harness/data/corpus/curated] [--check]

Small hand-built programs that together cover every op kind in `programs.ops.SYNTAX`,
every `oracles.prediction.ErrorKind` (invalid programs built the way
`strategies/invalid.py` builds each defect) and the mesh shapes that matter (size-1 axes,
non-powers of two, three axes, partial-manual `axis_names`, check_vma=False). Every case
runs in the abstract, jit and eager modes under `shardfuzz qualify`. Each carries a
one-line reason in `Program.notes` as ("reason", "...") and, for an invalid program, the
error kind the oracle must predict as ("expect", "<ErrorKind value>") (or "ok").

The script checks each case against the oracle before writing it (the predicted error
kind must be the one the case is for), removes stale files, and writes one JSON file per
case. `--check` writes nothing and exits 1 when the files on disk differ from what it
would write.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracles import ErrorKind, predict  # noqa: E402
from programs.forms import with_form  # noqa: E402
from programs.model import CallForm, Effect, Input, Mesh, Op, Place, Program, Spec  # noqa: E402
from programs.serialize import to_json  # noqa: E402

OUT = ROOT / "harness" / "data" / "corpus" / "curated"


def P(*entries: object) -> Spec:
    """P('x', None, ('x', 'y')) as a program Spec."""
    return Spec(tuple(None if e is None else (e,) if isinstance(e, str) else tuple(e) for e in entries))  # type: ignore[arg-type]


def op(kind: str, *operands: int, **params: object) -> Op:
    return Op.make(kind, tuple(operands), **params)  # type: ignore[arg-type]


def iota(*shape: int, dtype: str = "int32") -> Input:
    return Input(tuple(shape), dtype, "iota")


def small(*shape: int, dtype: str = "float32", seed: int = 0) -> Input:
    return Input(tuple(shape), dtype, "small", seed)


def prog(
    mesh: Mesh,
    inputs: list[Input],
    in_specs: list[Spec],
    body: list[Op],
    outputs: list[int],
    out_specs: list[Spec],
    *,
    check_vma: bool = True,
    axis_names: tuple[str, ...] | None = None,
    defect: str | None = None,
) -> Program:
    return Program(mesh, tuple(inputs), tuple(in_specs), tuple(body), tuple(outputs), tuple(out_specs),
                   axis_names, check_vma, defect)


X2 = Mesh(("x",), (2,))
X3 = Mesh(("x",), (3,))
X4 = Mesh(("x",), (4,))
XY = Mesh(("x", "y"), (2, 4))
XY22 = Mesh(("x", "y"), (2, 2))
X1Y2 = Mesh(("x", "y"), (1, 2))
XYZ = Mesh(("x", "y", "z"), (2, 2, 2))


@dataclass(frozen=True)
class Case:
    """One curated case: its file name (without `.json`), the program, why it is in the
    corpus, and the error kind the oracle must predict for it (None: a valid program)."""

    name: str
    program: Program
    reason: str
    expect: ErrorKind | None = None


# the valid program the spec defects below break, one rule each
_VALID = prog(X2, [iota(4, 2)], [P("x")], [op("neg", 0)], [1], [P("x")])


def local_ops() -> list[Case]:
    """Local ops (no named axis): arithmetic across dtypes, consts, casts, transposes, a static argument."""
    return [
        Case("local_binary_mixed_dtypes",
            prog(X2, [iota(4, 3), small(4, 3)], [P("x"), P("x")],
                 [op("add", 0, 1), op("sub", 2, 0), op("mul", 3, 1), op("max", 4, 0), op("min", 5, 2)],
                 [6], [P("x")]),
            "add/sub/mul/max/min of an int32 and a float32 block: float32 results, exact values"),
        Case("local_const_neg_cast",
            prog(X2, [small(2, 2, dtype="int32", seed=3)], [P(None, "x")],
                 [op("const", shape=(), dtype="int32", value=3), op("mul", 0, 1), op("neg", 2),
                  op("cast", 3, dtype="float32"), op("cast", 4, dtype="int32")],
                 [5, 4], [P(None, "x"), P(None, "x")]),
            "a scalar const broadcast into a block, neg, and casts int32 -> float32 -> int32"),
        Case("local_transpose_reduce_sum",
            prog(X2, [iota(4, 3, 2, dtype="float32")], [P("x")],
                 [op("transpose", 0, perm=(2, 0, 1)), op("reduce_sum", 1, axis=-1)],
                 [2], [P(None, "x")]),
            "transpose moves the split dimension; reduce_sum with a negative axis on the block"),
        Case("local_rank0_replicated",
            prog(X2, [small(dtype="float32", seed=5)], [P()],
                 [op("const", shape=(), dtype="float32", value=2), op("mul", 0, 1)],
                 [2], [P()]),
            "a rank-0 replicated argument and a scalar const: nothing varies, out_specs P()"),
        Case("in_spec_none_static",
            prog(X2, [iota(4)], [Spec((), "none")], [op("neg", 0)], [1], [P()]),
            "an in_specs entry of None: a static argument (the docstring: 'If None, inputs will be "
            "treated as static'), which every device sees whole and invariant, as P() would give it"),
    ]


def reductions() -> list[Case]:
    """psum, pmean, pmax and pmin: over one or several axes, of invariant operands, with axis_index_groups."""
    return [
        Case("psum_one_of_two_axes",
            prog(XY, [iota(8, 4)], [P("x", "y")], [op("psum", 0, axes=("y",))], [1], [P("x")]),
            "psum over the minor axis of a 2x4 mesh: varies over x only, out_spec names x"),
        Case("psum_invariant_operand",
            prog(X4, [iota(3)], [P()], [op("psum", 0, axes=("x",))], [1], [P()]),
            "psum of a replicated operand: implicitly pvary'd, so 4 times the value"),
        Case("pmean_two_axes_int",
            prog(XY, [iota(8, 4)], [P("y", "x")], [op("pmean", 0, axes=("x", "y"))], [1], [P()]),
            "pmean over both axes of an int32 block gives float32; axes named minor-major in the spec"),
        Case("pmax_pmin",
            prog(XY, [small(4, 8, dtype="int32", seed=7)], [P("x", "y")],
                 [op("pmax", 0, axes=("x",)), op("pmin", 0, axes=("y",)), op("sub", 1, 2)],
                 [3], [P("x", "y")]),
            "pmax over x and pmin over y of the same block, combined"),
        Case("pmax_groups_unchecked",
            prog(X4, [iota(4, 2)], [P("x")], [op("pmax", 0, axes=("x",), groups=((0, 1), (2, 3)))],
                 [1], [P("x")], check_vma=False),
            "pmax with axis_index_groups (two groups of two) under check_vma=False"),
        Case("psum_groups_unchecked",
            prog(X4, [iota(4)], [P("x")], [op("psum", 0, axes=("x",), groups=((0, 2), (1, 3)))],
                 [1], [P("x")], check_vma=False),
            "psum with interleaved axis_index_groups under check_vma=False"),
    ]


def gathers_and_scatters() -> list[Case]:
    """all_gather (tiled, untiled, to='invarying') and psum_scatter (tiled, untiled)."""
    return [
        Case("all_gather_tiled",
            prog(XY, [iota(4, 4)], [P("x", "y")], [op("all_gather", 0, axes=("y",), axis=1, tiled=True)],
                 [1], [P("x", "y")]),
            "tiled all_gather along dimension 1 over y: every device of a row holds the row"),
        Case("all_gather_untiled_negative_axis",
            prog(X3, [iota(6, 2)], [P("x")], [op("all_gather", 0, axes=("x",), axis=-1, tiled=False)],
                 [1], [P("x")]),
            "untiled all_gather with axis=-1 on a size-3 axis inserts a new last dimension"),
        Case("all_gather_to_invarying",
            prog(X2, [iota(4)], [P("x")], [op("all_gather", 0, axes=("x",), axis=0, tiled=True, to="invarying")],
                 [1], [P()]),
            "all_gather(to='invarying') is invariant over x, so out_specs P() is accepted (jax >= 0.9)"),
        Case("psum_scatter_tiled",
            prog(XY, [iota(4, 8)], [P(None, "y")], [op("psum_scatter", 0, axes=("y",), scatter_dimension=0, tiled=True)],
                 [1], [P("y", None)]),
            "tiled psum_scatter: sum over y, device k keeps row block k"),
        Case("psum_scatter_untiled",
            prog(X2, [iota(4, 3)], [P("x")], [op("psum_scatter", 0, axes=("x",), scatter_dimension=0, tiled=False)],
                 [1], [P("x")]),
            "untiled psum_scatter removes the scattered dimension (its size equals the group size)"),
    ]


def movement() -> list[Case]:
    """all_to_all, pswapaxes, ppermute, pshuffle, pcast and ragged_all_to_all: values moved between devices."""
    return [
        Case("all_to_all_tiled",
            prog(X2, [iota(4, 4)], [P("x")], [op("all_to_all", 0, axes=("x",), split_axis=1, concat_axis=0, tiled=True)],
                 [1], [P(None, "x")]),
            "tiled all_to_all: split dimension 1, concatenate along 0 (a distributed transpose)"),
        Case("all_to_all_untiled",
            prog(X4, [iota(4, 4, dtype="float32")], [P("x")],
                 [op("all_to_all", 0, axes=("x",), split_axis=1, concat_axis=0, tiled=False)],
                 [1], [P("x")]),
            "untiled all_to_all on a size-4 axis: the split dimension is removed, a new one inserted"),
        Case("pswapaxes",
            prog(X2, [iota(2, 2, 3)], [P("x")], [op("pswapaxes", 0, axes=("x",), axis=1)], [1], [P("x")]),
            "pswapaxes swaps block dimension 1 (size 2) with the mesh axis"),
        Case("ppermute_cycle",
            prog(X4, [iota(8)], [P("x")], [op("ppermute", 0, axes=("x",), perm=((0, 1), (1, 2), (2, 3), (3, 0)))],
                 [1], [P("x")]),
            "ppermute by one step around a 4-cycle"),
        Case("ppermute_partial_zeros",
            prog(X3, [iota(3, 2, dtype="float32")], [P("x")], [op("ppermute", 0, axes=("x",), perm=((2, 0),))],
                 [1], [P("x")]),
            "a partial ppermute: devices that are no destination get zeros"),
        Case("cast_partly_past_range_ppermute",
            prog(XY, [iota(8, dtype="float32")], [P("y")],
                 [op("const", shape=(), dtype="float32", value=40), op("mul", 0, 1), op("cast", 2, dtype="uint8"),
                  op("ppermute", 3, axes=("y",), perm=((3, 0), (0, 1), (1, 2), (2, 3)))], [4], [P("y")]),
            "40 * [0..7] cast to uint8 leaves 280 past the dtype's range (no value predicted there: jax documents the "
            "cast as C++'s static_cast), then a cyclic ppermute over y: every other element is predicted and compared"),
        Case("pshuffle",
            prog(X4, [iota(4)], [P("x")], [op("pshuffle", 0, axes=("x",), perm=(2, 0, 3, 1))], [1], [P("x")]),
            "pshuffle: device i receives the block of device perm[i]"),
        Case("pcast_to_varying",
            prog(X4, [iota(4)], [P()], [op("pcast", 0, axes=("x",), to="varying"), op("add", 1, 0)], [2], [P("x")]),
            "pcast(to='varying'): a replicated value, typed as varying over x, may be output with P('x')"),
        Case("ragged_all_to_all_rows",
            prog(X4, [iota(8, 3)], [P("x")],
                 [op("const", shape=(4,), dtype="int32", value=0), op("const", shape=(4,), dtype="int32", value=1),
                  op("axis_index", axes=("x",)), op("add", 1, 3), op("const", shape=(4, 3), dtype="int32", value=0),
                  op("ragged_all_to_all", 0, 5, 1, 2, 4, 2, axes=("x",))],
                 [6], [P("x")], check_vma=False),
            "ragged_all_to_all: each device sends its first row to every peer, written at the sender's index "
            "(values need a GPU; on CPU abstract and lowering check shapes; check_vma=False because jax 0.10.2 "
            "types the result as its output buffer, see known/ragged_vma.json)"),
        Case("pbroadcast_from_source",
            prog(XY, [iota(4, 8)], [P("x", "y")], [op("pbroadcast", 0, axes=("y",), source=3)], [1], [P("x", "y")]),
            "pbroadcast over y from source 3: every device gets the block of device 3 of its y group (values and "
            "lowering need a GPU: jax 0.10.2 lowers pbroadcast for GPU only; on CPU abstract checks shapes and types)"),
        Case("sendrecv_partial",
            prog(XY, [iota(4, 8)], [P("x", "y")], [op("sendrecv", 0, axes=("y",), perm=((0, 1), (1, 2), (2, 3)))], [1],
                 [P("x", "y")], check_vma=False),
            "psend then precv along y, pairs 0->1->2->3: device j+1 of each y group gets block j, device 0 zeros "
            "(values and lowering need a GPU; check_vma=False because jax 0.10.2 types precv's result invariant, "
            "see known/precv_vma.json)"),
    ]


def nesting() -> list[Case]:
    """A nested shard_map over an axis the outer one left automatic, and collectives under lax.scan / lax.cond."""
    return [
        Case("nested_shard_map_psum",
            prog(XY, [iota(4, 8)], [P("x")],
                 [op("shard_map", 0, inner_axes=("y",), in_spec=(None, ("y",)), out_spec=(), inner="psum",
                     inner_params=(("axes", ("y",)),), check_vma=True)],
                 [1], [P("x")], axis_names=("x",)),
            "a nested shard_map over y, which the outer one (axis_names={'x'}) left automatic: column pairs "
            "split over y are summed by an inner psum, out_spec P()"),
        Case("scan_and_cond_wrapped_collectives",
            prog(XY, [iota(4, 8)], [P("x", "y")],
                 [op("psum", 0, axes=("y",), wrap="scan"), op("ppermute", 1, axes=("x",), perm=((0, 1), (1, 0)), wrap="cond")],
                 [2], [P("x")]),
            "psum inside a lax.scan body and ppermute inside both lax.cond branches: the same values as unwrapped"),
        Case("switch_while_fori_wrapped_collectives",
            prog(XY, [iota(4, 8, dtype="float32")], [P("x", "y")],
                 [op("psum", 0, axes=("y",), wrap="switch"), op("ppermute", 1, axes=("x",), perm=((0, 1), (1, 0)), wrap="while"),
                  op("all_gather", 2, axes=("y",), axis=1, tiled=True, wrap="fori"), op("sub", 2, 0, wrap="fori")],
                 [3, 4], [P("x", "y"), P("x", "y")]),
            "psum in all three lax.switch branches, ppermute in a lax.while_loop run once, all_gather and a sub closing "
            "over the input in lax.fori_loop(0, 1): the same values as unwrapped"),
        Case("map_vmap_checkpoint_wrapped_collectives",
            prog(XY, [iota(4, 16, dtype="float32")], [P("x", "y")],
                 [op("psum_scatter", 0, axes=("y",), scatter_dimension=1, tiled=True, wrap="map"),
                  op("psum", 1, axes=("x",), wrap="vmap"), op("all_to_all", 0, axes=("y",), split_axis=1, concat_axis=0, tiled=True, wrap="checkpoint"),
                  op("mul", 3, 3, wrap="vmap")],
                 [2, 4], [P(None, "y"), P("y", "x")]),
            "psum_scatter in lax.map over a length-1 axis, psum inside jax.vmap (the batch axis unnamed), all_to_all "
            "under jax.checkpoint: the same values as unwrapped"),
    ]


def _steps(*ops: Op) -> tuple[tuple[object, ...], ...]:
    return tuple((o.kind, o.operands, o.params) for o in ops)


def transforms() -> list[Case]:
    """jax.jvp / jax.vjp / jax.grad of sub-bodies with collectives, plain and custom, and their errors."""
    return [
        Case("transform_vjp_psum",
            prog(XY, [iota(4, 8, dtype="float32")], [P("x", "y")],
                 [op("transform", 0, transform="vjp", custom="none", steps=_steps(op("mul", 0, 0), op("psum", 1, axes=("y",))))],
                 [1], [P("x", "y")]),
            "jax.vjp of c * c summed over y, pulled back with its own output: psum of a varying value transposes to "
            "pvary, so each device gets 2 c * psum(c * c)"),
        Case("transform_jvp_custom_jvp_all_gather",
            prog(XY, [iota(4, 8, dtype="float32")], [P("x", "y")],
                 [op("transform", 0, transform="jvp", custom="custom_jvp",
                     steps=_steps(op("neg", 0), op("all_gather", 1, axes=("x",), axis=0, tiled=True), op("mul", 2, 2)))],
                 [1], [P("x", "y")]),
            "jax.jvp of a custom_jvp whose rule is 3x the derivative of (-c) gathered over x, squared: tangent x * 0.5 + 1"),
        Case("transform_grad_custom_vjp_invariant",
            prog(XY, [iota(4, dtype="float32")], [P()],
                 [op("transform", 0, transform="grad", custom="custom_vjp",
                     steps=_steps(op("pcast", 0, axes=("x",), to="varying"), op("mul", 1, 0), op("pmean", 2, axes=("y",))))],
                 [1], [P()]),
            "jax.grad of a custom_vjp (bwd 3x the true pullback) of an invariant value: the copies' terms add up, "
            "the result is invariant again"),
        Case("transform_grad_psum_unchecked",
            prog(X4, [iota(8, dtype="float32")], [P("x")],
                 [op("transform", 0, transform="grad", custom="none", steps=_steps(op("psum", 0, axes=("x",))))],
                 [1], [P("x")], check_vma=False),
            "jax.grad of psum with check_vma=False: every device's copy is its own variable, psum transposes to psum "
            "(4 on each device, not 1)"),
    ]


def axis_index_and_meshes() -> list[Case]:
    """axis_index, and the meshes that matter: size-1 axes, three axes, partial-manual axis_names, check_vma=False."""
    return [
        Case("axis_index_two_axes",
            prog(XY, [iota(2, 4)], [P("x", "y")], [op("axis_index", axes=("x", "y")), op("add", 0, 1)],
                 [2], [P("x", "y")]),
            "axis_index over (x, y) is the row-major device index, added to each block"),
        Case("axis_size_two_axes",
            prog(XY, [iota(2, 4)], [P("x", "y")],
                 [op("axis_size", axes=("x", "y")), op("axis_size", axes=("y",)), op("mul", 0, 2)],
                 [1, 3], [P(), P("x", "y")]),
            "axis_size over (x, y) is 8 (the product), over y 4: an invariant int32 scalar, multiplied into each block"),
        Case("size1_axis_collectives",
            prog(X1Y2, [iota(2, 2)], [P("x", "y")],
                 [op("psum", 0, axes=("x",)), op("all_gather", 1, axes=("x",), axis=0, tiled=True),
                  op("ppermute", 2, axes=("y",), perm=((0, 1), (1, 0)))],
                 [3], [P("x", "y")]),
            "collectives over a size-1 axis are identities; the ppermute over y swaps"),
        Case("three_axes_multi_axis_spec",
            prog(XYZ, [iota(8, 2)], [P(("x", "z"), "y")], [op("psum", 0, axes=("x", "z")), op("neg", 1)],
                 [2], [P(None, "y")]),
            "a 2x2x2 mesh; one dimension split over (x, z), psum over the same two axes"),
        Case("partial_manual_axis_names",
            prog(XY22, [iota(4, 2)], [P("x")], [op("psum", 0, axes=("x",))], [1], [P()],
                 axis_names=("x",)),
            "axis_names=('x',): y stays automatic; the eager mode of this is missing before jax 0.7"),
        Case("unchecked_replication",
            prog(X2, [iota(4)], [P("x")], [op("neg", 0)], [1], [P()], check_vma=False),
            "check_vma=False and out_specs P() of a varying value: jax returns device 0's block"),
    ]


def spec_errors() -> list[Case]:
    """Invalid programs whose in_specs / out_specs break a rule shard_map checks before tracing: one ErrorKind each."""
    return [
        Case("err_spec_type",
            replace(_VALID, in_specs=(Spec((("x",),), "str"),), defect="in_spec_str"),
            "in_specs=('x',): a bare string where a PartitionSpec is needed", ErrorKind.SPEC_TYPE),
        Case("err_in_specs_structure",
            replace(_VALID, in_specs=(P("x"), P()), defect="in_specs_extra"),
            "two in_specs for a one-argument function", ErrorKind.IN_SPECS_STRUCTURE),
        Case("err_out_specs_structure",
            replace(_VALID, out_specs=(), defect="out_specs_missing"),
            "no out_spec for the one output", ErrorKind.OUT_SPECS_STRUCTURE),
        Case("err_spec_unknown_axis",
            replace(_VALID, in_specs=(P("absent"),), defect="in_spec_unknown_axis"),
            "an in_spec names 'absent', which is not a mesh axis", ErrorKind.SPEC_UNKNOWN_AXIS),
        Case("err_spec_duplicate_axis",
            prog(X2, [iota(4, 2)], [P("x")], [op("neg", 0)], [1], [P("x", "x")], defect="out_spec_duplicate_axis"),
            "an out_spec maps mesh axis x to two dimensions", ErrorKind.SPEC_DUPLICATE_AXIS),
        Case("err_in_spec_rank",
            replace(_VALID, in_specs=(P("x", None, None),), defect="in_spec_too_long"),
            "an in_spec with three entries for a rank-2 argument", ErrorKind.IN_SPEC_RANK),
        Case("err_in_spec_divisibility",
            replace(_VALID, inputs=(iota(3, 2),), defect="in_spec_indivisible"),
            "a dimension of size 3 split over an axis of size 2", ErrorKind.IN_SPEC_DIVISIBILITY),
    ]


def body_errors() -> list[Case]:
    """Invalid programs whose body breaks a rule (unbound axes, collective vma, shapes, parameters): one ErrorKind each."""
    return [
        Case("err_unbound_axis",
            prog(X2, [iota(4)], [P("x")], [op("all_gather", 0, axes=("absent",), axis=0, tiled=False)],
                 [1], [P("x")], defect="collective_unknown_axis"),
            "all_gather over 'absent', an axis no mesh binds", ErrorKind.UNBOUND_AXIS),
        Case("err_collective_vma",
            prog(XY22, [iota(4)], [P("x")], [op("psum", 0, axes=("x", "y"))], [1], [P()],
                 defect="collective_mixed_vma"),
            "psum over (x, y) of a value varying over x only (an error from jax 0.9; older jax pvarys)",
            ErrorKind.COLLECTIVE_VMA),
        Case("err_dtype_bool_sub",
            prog(X2, [iota(2, dtype="bool")], [P("x")], [op("sub", 0, 0)], [1], [P("x")]),
            "sub of two bool blocks: lax.sub does not accept dtype bool (a TypeError while tracing)", ErrorKind.DTYPE),
        Case("err_collective_shape",
            prog(X2, [iota(2, 3)], [P("x")], [op("psum_scatter", 0, axes=("x",), scatter_dimension=1, tiled=True)],
                 [1], [P("x")], defect="psum_scatter_bad_size"),
            "tiled psum_scatter of a dimension of size 3 over an axis of size 2", ErrorKind.COLLECTIVE_SHAPE),
        Case("err_collective_param",
            prog(X2, [iota(4, 2)], [P("x")], [op("all_gather", 0, axes=("x",), axis=3, tiled=False)],
                 [1], [P("x")], defect="axis_out_of_range"),
            "untiled all_gather with axis=3 for a rank-2 block", ErrorKind.COLLECTIVE_PARAM),
        Case("err_unsupported_groups_checked",
            prog(X4, [iota(4)], [P("x")], [op("psum", 0, axes=("x",), groups=((0, 1), (2, 3)))],
                 [1], [P("x")]),
            "psum with axis_index_groups under check_vma=True is not implemented", ErrorKind.UNSUPPORTED),
        Case("err_local_shape",
            prog(X2, [iota(4), iota(3)], [P(), P()], [op("add", 0, 1)], [2], [P()]),
            "add of blocks of shapes (4,) and (3,), which do not broadcast", ErrorKind.LOCAL_SHAPE),
        Case("err_transform_integer",
            prog(X2, [iota(4)], [P("x")], [op("transform", 0, transform="grad", custom="none", steps=_steps(op("neg", 0)))],
                 [1], [P("x")], defect="transform_integer_operand"),
            "jax.grad of an int32 block: grad requires real- or complex-valued inputs (a TypeError)", ErrorKind.TRANSFORM),
    ]


def out_spec_errors() -> list[Case]:
    """Invalid programs whose out_specs do not fit the body's outputs: one ErrorKind each."""
    return [
        Case("err_out_spec_rank",
            prog(X2, [iota(4)], [P("x")], [op("neg", 0)], [1], [P("x", None)], defect="out_spec_too_long"),
            "an out_spec with two entries for a rank-1 output", ErrorKind.OUT_SPEC_RANK),
        Case("err_out_spec_replication",
            replace(_VALID, out_specs=(P(),), defect="out_spec_drops_varying_axis"),
            "out_specs P() for an output that varies over x, with check_vma=True",
            ErrorKind.OUT_SPEC_REPLICATION),
    ]


# the case groups, in the order their cases are written (a new case goes in its group)
def explicit_and_reduced() -> list[Case]:
    """Explicit and mixed meshes (jax.set_mesh, reshard, the output's sharding type) and the
    reduced / unreduced types (pcast transitions, all_gather(to='reduced'), psum of an
    unreduced value, unreduced / reduced out_specs), with the errors they add."""
    ex = Mesh(("x", "y"), (2, 4), ("explicit", "explicit"))
    mixed = Mesh(("x", "y"), (2, 4), ("explicit", "auto"))
    ex2 = Mesh(("x",), (2,), ("explicit",))
    ur = Spec((None,), "P", ("x",))
    red = Spec((None,), "P", (), ("x",))
    return [
        Case("explicit_mesh_resharded",
            replace(prog(ex, [iota(8, 4)], [P("x")], [op("neg", 0)], [1], [P("x", "y")]), reshard=True),
            "an all-Explicit mesh: the argument resharded to P('x') first; jax.typeof(out) is int32[8@x,16@y]"),
        Case("explicit_mesh_from_context",
            replace(prog(mixed, [iota(8, 4)], [P("x")], [op("psum", 0, axes=("x",))], [1], [P(None, "y")]), mesh_context=True),
            "mesh from jax.set_mesh (no mesh=), mixed Explicit/Auto: no reshard needed; only Explicit axes are in the output's type"),
        Case("explicit_mesh_not_resharded",
            prog(ex, [iota(8, 4)], [P("x")], [op("neg", 0)], [1], [P("x")], defect="missing_reshard"),
            "all-Explicit, every axis manual: an unsharded NumPy argument is not P('x'), so jax refuses the in_spec",
            ErrorKind.IN_SPEC_ARG_SHARDING),
        Case("unreduced_psum",
            replace(prog(ex2, [iota(4)], [P("x")], [op("pcast", 0, axes=("x",), to="unreduced"), op("psum", 1, axes=("x",))],
                         [2], [P()]), reshard=True),
            "pcast(to='unreduced') of a varying block, then psum: the sum of the per-device parts"),
        Case("unreduced_out_spec",
            replace(prog(ex2, [iota(4)], [P("x")], [op("pcast", 0, axes=("x",), to="unreduced"), op("add", 1, 1)],
                         [2], [ur]), reshard=True),
            "an unreduced output (out_specs P(None, unreduced={'x'})): each device's block is its part of the sum"),
        Case("reduced_round_trip",
            replace(prog(ex2, [iota(4)], [P("x")],
                         [op("psum", 0, axes=("x",)), op("pcast", 1, axes=("x",), to="reduced"), op("pcast", 2, axes=("x",), to="varying")],
                         [2, 3], [red, P("x")]), reshard=True),
            "pcast invarying -> reduced -> varying; the reduced value is output with P(None, reduced={'x'})"),
        Case("all_gather_to_reduced",
            replace(prog(ex2, [iota(4)], [P("x")], [op("all_gather", 0, axes=("x",), axis=0, tiled=True, to="reduced")],
                         [1], [red]), reshard=True),
            "all_gather(to='reduced'): the gathered value typed as reduced over x"),
        Case("unreduced_out_spec_auto_axis",
            prog(Mesh(("x",), (2,)), [iota(4)], [P("x")], [op("pcast", 0, axes=("x",), to="unreduced")], [1], [ur],
                 defect="unreduced_spec_auto_axis"),
            "out_specs unreduced over an Auto axis: jax allows unreduced / reduced only over Explicit axes",
            ErrorKind.UNREDUCED_TYPE),
        Case("mixed_mesh_compiler_layout",
            replace(prog(Mesh(("x", "y"), (2, 4), ("explicit", "auto")), [iota(8)], [P(("y", "x"))], [op("neg", 0)], [1], [P(("y", "x"))]),
                    mesh_context=True),
            "a mixed mesh, out_specs P(('y', 'x')) with x Explicit: the type is int32[8@x]; under jit the compiler lays the output "
            "out along Auto y as it chooses (measured: whole along y), so the global value and x's layout are what is compared"),
        Case("auto_axes_around_the_call",
            replace(prog(Mesh(("x", "y"), (2, 4), ("auto", "explicit")), [iota(8, 4)], [P("x")], [op("psum", 0, axes=("y",))], [1], [P("x")]),
                    mesh_context=True, wrap="auto_axes", wrap_axes=("x",), wrap_specs=(P(None, "y"),)),
            "jax.sharding.auto_axes(f, axes='x', out_sharding=P(None, 'y')) around the call on an all-Explicit mesh: inside, x is "
            "Auto; the result is resharded to P(None, 'y'), typed int32[8,4@y]"),
        Case("explicit_axes_around_the_call",
            replace(prog(Mesh(("x", "y"), (2, 4), ("explicit", "auto")), [iota(8, 4)], [P("x")], [op("neg", 0)], [1], [P("x")]),
                    mesh_context=True, wrap="explicit_axes", wrap_axes=("x",), wrap_specs=(P("x"),)),
            "jax.sharding.explicit_axes(f, axes='x', in_sharding=P('x')) around the call on an all-Auto mesh: inside, x is "
            "Explicit (int32[4@x,4] per call); outside the result's type has no Explicit axis (int32[8,4])"),
        Case("explicit_axes_in_sharding_unsharded",
            replace(prog(Mesh(("x", "y"), (2, 4), ("explicit", "explicit")), [iota(8, 4)], [P("x")], [op("neg", 0)], [1], [P("x")],
                         defect="explicit_axes_in_sharding"),
                    mesh_context=True, wrap="explicit_axes", wrap_axes=("x", "y"), wrap_specs=(P(),)),
            "explicit_axes making every axis Explicit with in_sharding=P() for an in_spec P('x'): the argument's sharding is not "
            "its in_spec, so jax refuses the in_spec",
            ErrorKind.IN_SPEC_ARG_SHARDING),
        Case("pcast_unsupported_transition",
            prog(X2, [iota(4)], [P()], [op("pcast", 0, axes=("x",), to="unreduced")], [1], [P("x")]),
            "pcast(to='unreduced') of an invariant value: only a varying value becomes unreduced",
            ErrorKind.COLLECTIVE_VMA),
    ]


def edges() -> list[Case]:
    """How a program meets its shard_map (programs/model.py Place, CLOSURES, Effect,
    Program.donate): arguments placed otherwise than their in_specs (jax reshards them),
    values the body closes over (invariant along every manual axis), jax.debug.callback /
    print in the body (each call one device's coordinates and block), donation."""
    xy = Mesh(("x", "y"), (2, 4))
    ex = Mesh(("x", "y"), (2, 4), ("explicit", "explicit"))

    def placed(x: Input, how: str, spec: Spec | None = None) -> Input:
        return replace(x, place=Place(how, spec if spec is not None else Spec()))

    return [
        Case("placed_committed_other_axes",
            prog(xy, [placed(iota(8, 4), "committed", P("y", "x"))], [P("x")], [op("psum", 0, axes=("x",))], [1], [P()]),
            "the argument committed to P('y', 'x') before the call, its in_spec P('x'): jax reshards it, the values are the in_spec's"),
        Case("placed_device_put_free_axis",
            prog(xy, [placed(iota(8, 4), "device_put", P(None, "y"))], [P("x")], [op("neg", 0)], [1], [P("x")], axis_names=("x",)),
            "jax.device_put to P(None, 'y') inside the call, y left automatic (partial manual): the block is its in_spec's"),
        Case("placed_python_scalar",
            prog(X2, [iota(4), placed(iota(dtype="int32"), "scalar")], [P("x"), P()], [op("mul", 0, 1)], [2], [P("x")]),
            "a Python int argument (weakly typed int32) times an int32 block"),
        Case("placed_committed_explicit_in_spec",
            prog(ex, [placed(iota(8, 4), "committed", P("x"))], [P("x")], [op("neg", 0)], [1], [P("x", "y")]),
            "an all-Explicit mesh: the argument committed to its in_spec's sharding needs no reshard; jax.typeof(out) is int32[8@x,16@y]"),
        Case("placed_committed_explicit_other",
            prog(ex, [placed(iota(8, 4), "committed", P("y"))], [P("x")], [op("neg", 0)], [1], [P("x")], defect="placement_mismatch"),
            "an all-Explicit mesh, every axis manual: an argument committed to P('y') is not its in_spec P('x'), so jax refuses the in_spec",
            ErrorKind.IN_SPEC_ARG_SHARDING),
        Case("closed_over_numpy_constant",
            prog(xy, [iota(8), replace(iota(2), closure="numpy")], [P(("x", "y")), P()], [op("psum", 1, axes=("x",)), op("add", 0, 2)],
                 [3], [P(("x", "y"))]),
            "the body closes over a NumPy constant (jnp.asarray(C1)): invariant along every manual axis, whole on every device"),
        Case("closed_over_outer_value",
            prog(xy, [iota(8, dtype="float32"), replace(iota(1, dtype="float32"), closure="outer")], [P("x"), P()],
                 [op("mul", 0, 1), op("psum", 2, axes=("x",))], [3], [P()]),
            "the body closes over a value of the called function (traced under jit, batched under vmap, differentiated under grad)"),
        Case("effect_callback_per_device",
            replace(prog(Mesh(("x",), (4,)), [iota(8)], [P("x")], [op("neg", 0)], [1], [P("x")]), effects=(Effect("callback", 1),)),
            "jax.debug.callback(f, axis_index('x'), v0): each call one device's coordinate and its block of v0 (jax promises "
            "no number of calls and no order)"),
        Case("effect_print_of_an_argument",
            replace(prog(X2, [iota(4, 2)], [P("x")], [op("psum", 0, axes=("x",))], [1], [P()]), effects=(Effect("print", 0),)),
            "jax.debug.print(..., axis_index('x'), a0): each printed line one device's coordinate and its block of a0"),
        Case("donated_committed_argument",
            replace(prog(xy, [placed(iota(8, 4, dtype="float32"), "committed", P("x"))], [P("x")], [op("neg", 0)], [1], [P("x")]),
                    donate=(0,)),
            "jax.jit(f, donate_argnums=0) of an argument committed to its in_spec: the values are those without donation, and "
            "the argument is deleted afterwards or holds its value"),
    ]


def forms_and_flags() -> list[Case]:
    """The call's forms (programs/model.py CallForm), the parameters' forms
    (programs/forms.py), collectives over no axes, a nested shard_map inferring its
    in_specs, and the flags the derivative modes run under."""
    xy_e = Mesh(("x", "y"), (2, 4), ("explicit", "explicit"))
    two = prog(XY, [iota(8, 8), small(8, 8, seed=2)], [P("x", "y"), P("x", "y")], [op("mul", 0, 1), op("psum", 2, axes=("x",))],
               [3], [P(None, "y")])
    perm = ((0, 1), (1, 2), (2, 3), (3, 0))
    nested = {"inner_axes": ("y",), "out_spec": (), "inner": "psum", "inner_params": (("axes", ("y",)),), "check_vma": True}
    return [
        Case("call_decorator_one_spec_for_all", replace(two, form=CallForm(style="decorator", in_specs="single", out_specs="single")),
             "jax.shard_map(mesh=..., in_specs=P('x', 'y'), out_specs=P(None, 'y'))(body): the decorator form, one spec a prefix of "
             "every argument and output"),
        Case("call_partial_frozenset_axis_names",
             replace(prog(XY, [iota(8, 8)], [P("x")], [op("psum", 0, axes=("x",))], [1], [P()], axis_names=("x",)),
                     form=CallForm(style="partial", axis_names="frozenset")),
             "functools.partial(jax.shard_map, ..., axis_names=frozenset({'x'}))(body): 'y' left automatic"),
        Case("call_in_specs_inferred", replace(prog(xy_e, [iota(8, 8)], [P("x", "y")], [op("psum", 0, axes=("y",))], [1], [P("x")]),
                                               mesh_context=True, reshard=True, form=CallForm(in_specs="omitted")),
             "in_specs left out on an all-Explicit mesh: jax infers them from the resharded argument's type, P('x', 'y')"),
        Case("call_in_specs_omitted_auto", replace(two, in_specs=(P(), P()), form=CallForm(in_specs="omitted"), defect="in_specs_omitted"),
             "in_specs left out over Auto axes: jax infers them only over Explicit ones (TypeError)", ErrorKind.SPEC_TYPE),
        Case("call_in_specs_list", replace(two, form=CallForm(in_specs="list"), defect="in_specs_list"),
             "in_specs=[P(...), P(...)], a list: no pytree prefix of the arguments' tuple", ErrorKind.IN_SPECS_STRUCTURE),
        Case("call_out_specs_list", replace(two, form=CallForm(out_specs="list"), defect="out_specs_list"),
             "out_specs=[P(None, 'y')], a list: no pytree prefix of the body's result tuple", ErrorKind.OUT_SPECS_STRUCTURE),
        Case("nested_in_specs_inferred",
             replace(prog(Mesh(("x", "y"), (2, 4), ("explicit", "explicit")), [iota(8, 4)], [P("x")], [op("shard_map", 0, **nested)],
                          [1], [P("x")], axis_names=("x",)), mesh_context=True, reshard=True),
             "a nested shard_map over the free Explicit 'y' with in_specs left out: inferred from its operand's type (replicated "
             "over 'y'), psum over 'y' of the whole block"),
        Case("nested_in_specs_omitted_auto",
             replace(prog(XY, [iota(8, 4)], [P("x")], [op("shard_map", 0, **nested)], [1], [P("x")], axis_names=("x",),
                          defect="nested_in_specs_omitted"), mesh_context=True),
             "a nested shard_map over the Auto 'y' with in_specs left out: TypeError", ErrorKind.SPEC_TYPE),
        Case("arg_forms",
             prog(XY, [iota(8, 8)], [P("x", "y")],
                  [with_form(op("psum", 0, axes=("y",)), "axes", "list"), with_form(op("pmean", 0, axes=("x",)), "axes", "tuple"),
                   with_form(op("ppermute", 0, axes=("y",), perm=perm), "perm", "array"),
                   with_form(op("pshuffle", 0, axes=("y",), perm=(1, 2, 3, 0)), "perm", "tuple"), op("transpose", 0, perm=(-1, 0))],
                  [1, 2, 3, 4, 5], [P("x"), P(None, "y"), P("x", "y"), P("x", "y"), P("y", "x")]),
             "axis names as a list (psum takes one) and a 1-tuple, a perm as a NumPy array and a tuple, negative transpose axes"),
        Case("arg_forms_groups_array_unchecked",
             prog(XY, [iota(8, 8)], [P("x", "y")], [with_form(op("psum", 0, axes=("y",), groups=((0, 1), (2, 3))), "groups", "array")],
                  [1], [P("x", "y")], check_vma=False),
             "axis_index_groups as a NumPy array (check_vma=False: psum takes groups only then)"),
        Case("axes_list_pmax", prog(XY, [iota(8, 8)], [P("x", "y")], [op("neg", 0), with_form(op("pmax", 1, axes=("y",)), "axes", "list")],
                                    [2], [P("x")], defect="axes_list"),
             "pmax(x, ['y']): jax hashes its axis names, and a list is not hashable (TypeError)", ErrorKind.COLLECTIVE_PARAM),
        Case("collectives_over_no_axes",
             prog(XY, [iota(8, 8)], [P("x", "y")],
                  [op("psum", 0, axes=()), op("all_to_all", 0, axes=(), split_axis=0, concat_axis=1, tiled=True),
                   op("ppermute", 0, axes=(), perm=((0, 0),)), op("pcast", 0, axes=(), to="varying"), op("axis_size", axes=()),
                   op("add", 0, 5)],
                  [1, 2, 3, 4, 6], [P("x", "y")] * 5),
             "psum, all_to_all, ppermute and pcast over axis_name=(): a group of one, the operand itself; axis_size(()) is 1"),
        Case("unchecked_remat_policy",
             replace(prog(XY, [small(8, 8, seed=3)], [P("x", "y")], [op("mul", 0, 0), op("psum", 1, axes=("x", "y"))], [1, 2],
                          [P("x", "y"), P()], check_vma=False), remat_policy="dots_saveable"),
             "check_vma=False (the derivative modes run it: out[1] keeps its out_spec's promise) and grad_remat's "
             "jax.checkpoint policy dots_saveable"),
    ]


GROUPS = (local_ops, reductions, gathers_and_scatters, movement, nesting, transforms, axis_index_and_meshes,
          spec_errors, body_errors, out_spec_errors, explicit_and_reduced, edges, forms_and_flags)


def cases() -> dict[str, tuple[Program, str, ErrorKind | None]]:
    """name -> (program, reason, the error kind the oracle must predict or None), every
    group's cases in order; a name used twice is a bug in this script."""
    c: dict[str, tuple[Program, str, ErrorKind | None]] = {}
    for group in GROUPS:
        for case in group():
            assert case.name not in c, case.name
            c[case.name] = (case.program, case.reason, case.expect)
    return c


def build() -> dict[str, str]:
    """file name -> JSON text; checks every case against the oracle."""
    out: dict[str, str] = {}
    problems = []
    for name, (p, reason, expect) in cases().items():
        pred = predict(p)
        got = None if pred.error is None else pred.error.kind
        if got != expect:
            problems.append(f"{name}: oracle predicts {got}, the case is for {expect}: {pred.error}")
        notes = (("expect", expect.value if expect else "ok"), ("reason", reason))
        out[f"{name}.json"] = to_json(replace(p, notes=notes)) + "\n"
    if problems:
        raise SystemExit("\n".join(problems))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    a = ap.parse_args(argv)
    files = build()
    on_disk = {f.name: f.read_text() for f in a.out.glob("*.json")} if a.out.exists() else {}
    if a.check:
        stale = sorted(set(on_disk) ^ set(files) | {n for n in files if on_disk.get(n) not in (None, files[n])})
        for n in stale:
            print(f"{a.out / n}: differs from what {Path(__file__).name} writes", file=sys.stderr)
        return 1 if stale else 0
    a.out.mkdir(parents=True, exist_ok=True)
    for n in set(on_disk) - set(files):
        (a.out / n).unlink()
    for n, text in files.items():
        (a.out / n).write_text(text)
    print(f"{len(files)} cases in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
