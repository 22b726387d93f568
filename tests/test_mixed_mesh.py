"""Mixed Explicit/Auto meshes and auto_axes / explicit_axes around the call, without jax:
the oracle's sharding types and argument shardings, the judge's comparison where the
compiler chooses the layout along Auto axes, the JSON / source forms, and the draws.
Hand-worked from jax 0.10.2 `_unshard_shaped_array`, core `modify_spec_for_auto_manual`
and pjit.py `_auto_axes` / `_explicit_axes` (measured layouts in harness/judge/compare_outputs.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from harness.judge.compare_outputs import (
    compare_output,
    compiler_layout,
    fixed_dims,
    layout_of,
    window_index,
)
from harness.judge.divergence import DivergenceKind
from harness.judge.known_features import PROGRAM_FEATURES
from harness.run.observation import ObservedOutput
from oracles import ErrorKind, predict
from programs import from_json, to_json, to_python
from programs.errors import ProgramFormatError
from programs.model import Input, Mesh, Op, Program, Spec
from programs.source import from_source
from programs.validate import validate

# 'data' Explicit (2), 'pipe' Auto (4): the mixed mesh of the measurements
MIXED = Mesh(("data", "pipe"), (2, 4), ("explicit", "auto"))
BOTH = Spec((("pipe", "data"),))


def prog(mesh: Mesh, out_spec: Spec, *, in_spec: Spec = BOTH, shape: tuple[int, ...] = (8,), **kw: object) -> Program:
    return Program(mesh, (Input(shape, "int32", "iota"),), (in_spec,), (Op.make("neg", (0,)),), (1,), (out_spec,), **kw)  # type: ignore[arg-type]


def observed(p: Program, blocks: dict[tuple[int, ...], np.ndarray], glob: np.ndarray) -> ObservedOutput:
    return ObservedOutput(tuple(glob.shape), str(glob.dtype), glob, blocks, None)


def test_mixed_sharding_type_keeps_the_explicit_axes_of_a_tuple() -> None:
    # P(('pipe', 'data')): the type is float32[8@data] (measured), Auto 'pipe' is not in it
    assert predict(prog(MIXED, BOTH)).outputs[0].sharding == ((("data",),), (), ())
    assert predict(prog(MIXED, Spec((("pipe",),)), in_spec=Spec((("pipe",),)))).outputs[0].sharding == (((),), (), ())


def test_mixed_mesh_full_manual_takes_unresharded_arguments() -> None:
    # the in_specs-vs-argument check is for meshes whose every axis is Explicit only
    assert predict(prog(MIXED, BOTH)).error is None


def test_compiler_layout_and_fixed_dims() -> None:
    p = prog(MIXED, BOTH)
    assert compiler_layout(p) and fixed_dims(p, 0, 1) == ()  # 'pipe' in the entry: the compiler may move it
    q = prog(MIXED, Spec((("data",), None)), in_spec=Spec((("data",), None)), shape=(4, 2))
    assert fixed_dims(q, 0, 2) == (0,)
    assert window_index(q, 0, (4, 2), (1, 3), (0,)) == ((2, 4), (0, 2))  # data=1: rows 2..3, all columns
    assert not compiler_layout(prog(Mesh(("data", "pipe"), (2, 4)), BOTH))  # all Auto: the old comparison
    assert not compiler_layout(prog(Mesh(("data", "pipe"), (2, 1), ("explicit", "auto")), BOTH))  # the Auto axis has size 1


def _blocks_whole_along_pipe(p: Program, glob: np.ndarray) -> dict[tuple[int, ...], np.ndarray]:
    """What jit gave for P(('pipe', 'data')) (measured): split over 'data' alone."""
    return {c: glob[4 * c[0] : 4 * c[0] + 4] for c in p.mesh.coords()}


def test_judge_accepts_the_compiler_layout_along_auto_axes() -> None:
    p = prog(MIXED, BOTH)
    e = predict(p).outputs[0]
    glob = -np.arange(8, dtype=np.int32)
    assert e.global_value is not None and e.global_value.tolist() == glob.tolist()
    # the out_spec's own layout (eager) and the compiler's (jit) both pass
    assert compare_output(p, 0, observed(p, {c: e.device_values[c] for c in p.mesh.coords()}, glob), e, "eager") == []
    assert compare_output(p, 0, observed(p, _blocks_whole_along_pipe(p, glob), glob), e, "jit") == []


def test_judge_rejects_a_wrong_global_value_or_block() -> None:
    p = prog(MIXED, BOTH)
    e = predict(p).outputs[0]
    glob = -np.arange(8, dtype=np.int32)
    wrong = glob.copy()
    wrong[3] = 7
    (d,) = compare_output(p, 0, observed(p, _blocks_whole_along_pipe(p, wrong), wrong), e, "jit")
    assert d.kind == DivergenceKind.VALUE and "global value" in d.message
    q = prog(MIXED, Spec((("data",),)), in_spec=Spec((("data",),)))
    eq = predict(q).outputs[0]
    swapped = {c: glob[4 * (1 - c[0]) : 4 * (1 - c[0]) + 4] for c in q.mesh.coords()}  # data's halves swapped: not its slice
    (d,) = compare_output(q, 0, observed(q, swapped, glob), eq, "jit")
    assert d.kind == DivergenceKind.VALUE and d.bad_devices and "no aligned tile" in d.message
    odd = {c: glob[:3] for c in q.mesh.coords()}  # a block that tiles nothing
    (d,) = compare_output(q, 0, observed(q, odd, glob), eq, "jit")
    assert d.kind == DivergenceKind.SHAPE and d.where == "device_block"


X2Y2E = Mesh(("x", "y"), (2, 2), ("explicit", "explicit"))


def auto_axes_prog(keep: bool) -> Program:
    """auto_axes(axes='x') on an all-Explicit 2x2 mesh: inside, 'x' is Auto."""
    inner = Mesh(("x", "y"), (2, 2), ("auto", "explicit"))
    spec = Spec((None, ("y",))) if keep else Spec(())
    return Program(inner, (Input((4, 2), "float32", "iota"),), (Spec((("x",),)),), (Op.make("psum", (0,), axes=("y",)),), (1,),
                   (Spec((("x",),)),), mesh_context=True, wrap="auto_axes", wrap_axes=("x",), wrap_specs=(spec,))


def test_auto_axes_outer_type_is_the_out_sharding() -> None:
    assert auto_axes_prog(True).outer_mesh() == X2Y2E
    assert predict(auto_axes_prog(True)).outputs[0].sharding == (((), ("y",)), (), ())  # float32[4,2@y] (measured)
    assert predict(auto_axes_prog(False)).outputs[0].sharding == (((), ()), (), ())
    p = auto_axes_prog(True)
    assert layout_of(p, 0, 2) == (Spec((None, ("y",))), X2Y2E) and fixed_dims(p, 0, 2) == (1,)


def test_explicit_axes_outer_type_drops_the_axes_explicit_only_inside() -> None:
    inner = Mesh(("x", "y"), (2, 2), ("explicit", "auto"))
    p = Program(inner, (Input((4, 2), "float32", "iota"),), (Spec((("x",),)),), (Op.make("neg", (0,)),), (1,), (Spec((("x",),)),),
                mesh_context=True, wrap="explicit_axes", wrap_axes=("x",), wrap_specs=(Spec((("x",),)),))
    assert p.outer_mesh() == Mesh(("x", "y"), (2, 2))
    assert predict(p).outputs[0].sharding == (((), ()), (), ())  # float32[4,2] outside (measured), P('x') inside


def test_explicit_axes_in_sharding_is_the_arguments_sharding() -> None:
    inner = X2Y2E  # explicit_axes(axes=('x', 'y')) on an all-Auto mesh: every axis Explicit and manual inside
    p = Program(inner, (Input((4, 2), "float32", "iota"),), (Spec((("x",),)),), (Op.make("neg", (0,)),), (1,), (Spec((("x",),)),),
                mesh_context=True, wrap="explicit_axes", wrap_axes=("x", "y"), wrap_specs=(Spec((("x",),)),))
    assert predict(p).error is None
    bad = replace(p, wrap_specs=(Spec(()),))
    err = predict(bad).error
    assert err is not None and err.kind == ErrorKind.IN_SPEC_ARG_SHARDING


def test_wrap_round_trips_and_old_cases_load() -> None:
    p = auto_axes_prog(True)
    assert from_json(to_json(p)) == p
    src = to_python(p)
    assert "f = jax.sharding.auto_axes(call, axes='x', out_sharding=(P(None, 'y'),))" in src
    assert "axis_types=(AxisType.Explicit, AxisType.Explicit)" in src  # the mesh outside
    assert from_source(src) == p
    plain = prog(MIXED, BOTH)
    assert '"wrap"' not in to_json(plain) and from_json(to_json(plain)).wrap is None


@pytest.mark.parametrize("change, phrase", [
    (dict(mesh_context=False), "mesh_context"),
    (dict(wrap_axes=("y",)), "Auto in program.mesh"),
    (dict(wrap_specs=()), "1 plain PartitionSpecs"),
    (dict(wrap_specs=(Spec((("x",),)),)), "not Explicit"),  # 'x' is Auto... outside it is Explicit: fine
])
def test_validate_wrap(change: dict[str, object], phrase: str) -> None:
    p = replace(auto_axes_prog(True), **change)  # type: ignore[arg-type]
    if phrase == "not Explicit":
        validate(p)  # out_sharding is resharded outside, where 'x' is Explicit
        with pytest.raises(ProgramFormatError, match="not Explicit"):
            validate(replace(p, wrap_specs=(Spec((("z",),)),)))
        return
    with pytest.raises(ProgramFormatError, match=phrase):
        validate(p)


def test_known_features_of_the_mixed_entries() -> None:
    size_1 = prog(Mesh(("data", "model"), (3, 1), ("auto", "explicit")), Spec((("data", "model"),)), in_spec=Spec((("data", "model"),)), shape=(3,))
    assert PROGRAM_FEATURES["out_spec_size_1_explicit_with_auto"](size_1)
    assert PROGRAM_FEATURES["mixed_mesh"](size_1)
    alone = replace(size_1, out_specs=(Spec((("model",),)),))
    assert not PROGRAM_FEATURES["out_spec_size_1_explicit_with_auto"](alone)  # keeps its type (measured)
    assert not PROGRAM_FEATURES["mixed_mesh"](prog(Mesh(("data", "pipe"), (2, 4)), BOTH))


def test_psum_over_no_axes_is_its_operand() -> None:
    """jax 0.10.2 `_psum_is_async`: `if not axes: return x` (a bool stays bool; psum over
    an axis sums a bool as int32)."""
    m = Mesh(("x",), (2,))
    p = Program(m, (Input((2,), "bool", "iota"),), (Spec((("x",),)),), (Op.make("psum", (0,), axes=()),), (1,), (Spec((("x",),)),))
    out = predict(p).outputs[0]
    assert out.dtype == "bool" and out.global_value is not None and out.global_value.tolist() == [False, True]
    q = replace(p, body=(Op.make("psum", (0,), axes=("x",)),), out_specs=(Spec(()),))
    assert predict(q).outputs[0].dtype == "int32" and predict(q).outputs[0].global_value.tolist() == [1]


def test_check_vma_false_blocks_resharded_by_auto_axes_may_each_keep_their_own() -> None:
    """qualify seed 3, s3-1850: check_vma=False, an output varying over 'data' that its
    out_spec P(None, 'model') leaves out, inside auto_axes(axes='data', out_sharding=P()).
    The global value is unspecified along 'data' (any device's block there), and the
    reshard to P() leaves each device with the whole value as it saw it: every device
    may hold a different one, each made of the blocks predicted at its grid positions.
    A block that is no such value is still a divergence."""
    mesh = Mesh(("data", "model"), (2, 2), ("auto", "explicit"))  # (inside auto_axes: 'data' Explicit outside)
    p = Program(mesh, (Input((2, 2), "int32", "iota"),), (Spec((("data",), ("model",))),), (Op.make("neg", (0,)),), (1,),
                (Spec((None, ("model",))),), check_vma=False, mesh_context=True, wrap="auto_axes", wrap_axes=("data",),
                wrap_specs=(Spec(()),))
    e = predict(p).outputs[0]
    assert e.global_value is None  # the blocks differ along 'data'
    rows = {d: np.concatenate([e.device_values[(d, m)] for m in range(2)], axis=1) for d in range(2)}
    assert not np.array_equal(rows[0], rows[1])
    own = {c: rows[c[0]] for c in mesh.coords()}  # each device the whole value, its own row along 'data'
    assert compare_output(p, 0, observed(p, own, rows[0]), e, "jit") == []
    bad = dict(own)
    bad[(1, 1)] = rows[1] + 1
    (d,) = compare_output(p, 0, observed(p, bad, rows[0]), e, "jit")
    assert d.kind == DivergenceKind.VALUE and (1, 1) in d.bad_devices
    mixed = dict(own)
    mixed[(1, 1)] = np.concatenate([rows[1][:, :1], rows[0][:, :1]], axis=1)  # column 1 from neither device at model=1
    assert compare_output(p, 0, observed(p, mixed, rows[0]), e, "jit") != []
def test_a_wrapped_output_without_one_global_value_is_each_groups_array() -> None:
    """check_vma=False, out_spec P('model') of a value that differs along 'data' (left
    out): no one global value. auto_axes(axes='model', out_sharding=P()) gathers it along
    'model' within each 'data' group, so device (d, m) holds its group's whole array
    (measured on jax 0.10.2: fuzz seed 0, 7289f623eb8a), not the out_spec's block."""
    mesh = Mesh(("data", "model"), (2, 2), ("explicit", "auto"))
    p = replace(prog(mesh, Spec((("model",),)), in_spec=Spec((("data",),)), shape=(4,), check_vma=False),
                mesh_context=True, reshard=True, wrap="auto_axes", wrap_axes=("model",), wrap_specs=(Spec(()),))
    e = predict(p).outputs[0]
    assert e.global_value is None and e.device_values is not None
    # device (d, m) holds -[2d, 2d + 1]; its group (devices (d, 0), (d, 1)) assembles to
    # -[2d, 2d + 1, 2d, 2d + 1]
    group = {d: -np.array([2 * d, 2 * d + 1] * 2, dtype=np.int32) for d in range(2)}
    right = {(d, m): group[d] for d in range(2) for m in range(2)}
    assert compare_output(p, 0, observed(p, right, group[0]), e, "jit") == []
    swapped = {(d, m): group[1 - d] for d in range(2) for m in range(2)}
    divs = compare_output(p, 0, observed(p, swapped, group[1]), e, "jit")
    assert [d.kind for d in divs] == [DivergenceKind.VALUE] and len(divs[0].bad_devices) == 4


def test_an_unwrapped_mixed_output_without_one_global_value_may_hold_any_replicas_array() -> None:
    """check_vma=False, a value that differs along 'model', out_spec P(('pipe', 'data'))
    leaving 'model' out, 'pipe' Explicit of size 1 and 'data' Auto on a mixed mesh: jit
    (measured on jax 0.10.2) gives every device model 0's whole (4,) array, typed
    P('pipe'); eagerly each device keeps its own (1,) block. The output's type says it is
    replicated along 'model', so which replica's values jax keeps is not promised, and
    along the Auto 'data' the compiler lays it out: both pass. A block of no replica's
    array does not."""
    mesh = Mesh(("data", "model", "pipe"), (4, 2, 1), ("auto", "auto", "explicit"))
    p = Program(mesh, (Input((2,), "int32", "iota"),), (Spec((("model",),)),), (Op.make("neg", (0,)),), (1,),
                (Spec((("pipe", "data"),)),), check_vma=False, reshard=True)
    assert compiler_layout(p)
    e = predict(p).outputs[0]
    assert e.global_value is None and e.device_values is not None
    whole = {m: np.full((4,), -m, dtype=np.int32) for m in range(2)}  # replica model=m: [-m] * 4
    jit = {c: whole[0] for c in mesh.coords()}
    assert compare_output(p, 0, observed(p, jit, whole[0]), e, "jit") == []
    eager = {c: e.device_values[c] for c in mesh.coords()}
    assert compare_output(p, 0, observed(p, eager, whole[0]), e, "eager") == []
    wrong = dict(jit)
    wrong[(1, 1, 0)] = whole[0] - 5
    (d,) = compare_output(p, 0, observed(p, wrong, whole[0]), e, "jit")
    assert d.kind == DivergenceKind.VALUE and (1, 1, 0) in d.bad_devices


def test_slicing_outputs_keeps_auto_axes_out_sharding_per_output() -> None:
    """A program without some outputs (derived_program, the minimizer) keeps auto_axes'
    out_sharding of the outputs it keeps: one spec per output."""
    from programs.graph import slice_outputs

    mesh = Mesh(("data", "model"), (2, 2), ("auto", "auto"))
    p = Program(mesh, (Input((2,), "int32", "iota"),), (Spec(()),), (Op.make("neg", (0,)), Op.make("neg", (1,))), (1, 2),
                (Spec(()), Spec(())), mesh_context=True, wrap="auto_axes", wrap_axes=("model",),
                wrap_specs=(Spec(()), Spec((("model",),))))
    q = slice_outputs(p, (1,))
    assert q.outputs == (2,) and q.wrap_specs == (Spec((("model",),)),)
