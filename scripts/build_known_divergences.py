"""Writes harness/data/known_divergences.toml from the entries below.

Each entry has its own minimized case in harness/data/corpus/known/, and its reproducer is
generated from that case (`harness.report.reproducer.reproducer`: an asserting script
that exits 1 while jax shows the entry's own signature, 0 once it is fixed or repaired),
so the TOML and the corpus never disagree. Edit the entries here, run
`python scripts/build_known_divergences.py`, commit both. The fields
(harness/judge/known.py): `signatures` ('kind|mode|where': the kind literal, the mode
literal or a comma list, `*` only beside a literal `where`; any exception type `->*`
only with a rewrite repair), `when` (program features, output features that must hold
on the divergent output, op features that must hold on the op at fault, value
features), `jax_versions` (a PEP 440 range: where the bug is known to be), `repair` (how
the program without the bug is made: a rewrite of oracles/rewrites.py that keeps every
op, `without_op` or `without_mode`; a divergence is known when the repaired program no
longer shows it), `abort` (the check a crash or internal error stops at: its identity,
whatever op was drawn), `class` (`bug`, or `policy` for jax's limitations, feature
requests and message wording, with the `decision` checked against jax's docs), `case`,
`link` (the upstream issue or fix, or 'none found: <what was searched>').
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from harness.judge.known_features import Pattern  # noqa: E402
from harness.report.reproducer import Own, reproducer  # noqa: E402
from programs import from_json  # noqa: E402 - after the sys.path line


def own_signature(e: dict, mode: str) -> Own:  # type: ignore[type-arg]
    """The entry's signatures that name `mode`, as the (kind, where) pairs its reproducer
    counts as its bug, and its abort."""
    return Own.of([Pattern.parse(x) for x in e["signatures"]], e.get("abort", ""), mode)


# Ranges are measured: python scripts/entry_ranges.py over jax 0.5.3, 0.6.0, 0.8.1, 0.9.2,
# 0.10.2, 0.11.2 and 0.12.0 (scripts/envs.py builds them; 0.11+ on Python 3.13), each
# entry's own case in the modes it names. A range runs from the oldest measured release
# that shows the bug to before the minor release after the newest one that does (the
# releases in between and after are not measured: `shardfuzz qualify --bisect` narrows).
ALL_MEASURED = ">=0.5,<0.13"  # shows on every measured release, 0.5.3 .. 0.12.0
UNTIL_0_10 = ">=0.5,<0.11"  # shows on 0.5.3 .. 0.10.2; not on 0.11.2 or 0.12.0 (fixed in 0.11)
SINCE_0_6 = ">=0.6,<0.13"  # shows on 0.6.0 .. 0.12.0; not on 0.5.3
SINCE_0_7 = ">=0.7,<0.13"  # shows on 0.7.1 .. 0.12.0; the feature is absent before 0.7 (jax.smap)
SINCE_0_8 = ">=0.8,<0.13"  # shows on 0.8.1 .. 0.12.0; not on 0.5.3 or 0.6.0
SINCE_0_9 = ">=0.9,<0.13"  # shows on 0.9.2 .. 0.12.0; not on 0.5.3, 0.6.0 or 0.8.1
SINCE_0_8_UNTIL_0_11 = ">=0.8,<0.12"  # shows on 0.8.1 .. 0.11.2; not on 0.5.3, 0.6.0 or 0.12.0
SINCE_0_6_UNTIL_0_8 = ">=0.6,<0.9"  # shows on 0.6.0 and 0.8.1; not on 0.5.3 or 0.9.2 and later
ONLY_0_5 = "==0.5.*"  # shows on 0.5.3; not on 0.6.0 or later
UNTIL_0_6 = ">=0.5,<0.7"  # shows on 0.5.3 and 0.6.0; not on 0.8.1 or later
UNTIL_0_8 = ">=0.5,<0.9"  # shows on 0.5.3, 0.6.0 and 0.8.1; not on 0.9.2 or later
SINCE_PRECV = ">=0.9,<0.13"  # shows on 0.9.2 and 0.12.0; 0.6.0 has no psend/precv (0.7, 0.8 not measured)
SINCE_0_10 = ">=0.10,<0.13"  # shows on 0.10.2 and 0.12.0; not on 0.9.2
NONE = "none found: searched jax-ml/jax issues for "
# the modes, named: no pattern names every mode and any op at once
EVERY = "abstract,eager,jit,gspmd,vmap,vmap_spmd,smap,grad,grad_remat,lowering,multiprocess"
RUN = "eager,jit,gspmd,vmap,vmap_spmd,smap,grad,grad_remat,multiprocess"  # the modes that run the program
TRACE = "abstract,jit,gspmd,vmap,vmap_spmd,smap,grad,grad_remat,lowering,multiprocess"  # every mode but eager
# the wrong and missing errors a wrongly shaped value causes: shape and axis checks of later ops
SHAPE_ERRORS = [p for e in ("collective_param", "collective_shape", "local_shape", "out_spec_rank")
                for p in (f"wrong_error|{EVERY}|{e}->*", f"missing_error|*|{e}")]
RANGE_EAGER_SIZE_1 = ">=0.10.2,<0.13"  # AssertionError on 0.10.2, 0.11.2, 0.12.0; 0.10.0 and 0.10.1 run it (0.9.2: eager unreduced not implemented)

E = dict
entries = [
 E(id="mixed-mesh-size-1-explicit-type", repair="without_op", case="mixed_size1_explicit_type", mode="jit", jax_versions=SINCE_0_9,
   # (eager: under explicit_axes, whose reshard back to the mesh outside is compiled)
   signatures=["sharding|jit,gspmd|*", "sharding|eager|*"],
   when=["out_spec_size_1_explicit_with_auto"],
   reason="On a mixed mesh (here 'data' Auto of size 3, 'model' Explicit of size 1) under jax.set_mesh, a jit output whose out_spec names the size-1 Explicit axis and an Auto axis comes back laid out along the Auto axis alone (P('data')), and jax.typeof(out) then loses the Explicit axis: float32[3,1] where tracing (and eager) type it float32[3@model,1], as the out_spec's Explicit axes say (_unshard_shaped_array). A size-1 Explicit axis alone in the out_spec keeps its type on 0.10.2. The same under jax.sharding.explicit_axes around the call, whose axes are Auto outside it, eagerly too (_explicit_axes reshards the result to modify_spec_for_auto_manual of its type, e.g. P('pipe', None), traced float32[4@pipe,1], and the compiled reshard returns P('data'): float32[4,1]; harness/data/corpus/known/mixed_size1_explicit_axes.json; 0.9.2, 0.10.2, 0.12.0). And under jax.sharding.auto_axes(axes='model', out_sharding=P('model')) around the call on a mesh with 'data' Auto of size 2 and 'model' Explicit of size 1 outside: a shard_map out_spec naming 'data' lays the output out along it, and eager and jit type the result float32[2,1] where tracing says float32[2@model,1] (with out_spec P() it keeps the type; without the shard_map too; harness/data/corpus/known/mixed_size1_auto_axes.json, found by tests/test_differential.py, 0.10.2). A free Auto axis does it too: under explicit_axes(axes='model') on a mesh with 'data' Auto of size 2 left free by a partial-manual shard_map and out_spec P('pipe', 'model') of size-1 axes, jit, GSPMD and eager type the output P(None, None, None) where tracing says P('pipe', None, None); with 'data' of size 1 it keeps the type (harness/data/corpus/known/mixed_size1_explicit_free_auto.json, 0.10.2). Only the sharding type is excused; values and blocks are checked.",
   link=NONE + "'size 1 explicit axis typeof jit', 'mixed mesh auto explicit out sharding type'"),
 E(id="mixed-mesh-zero-size-output-type", repair="without_op", case="mixed_zero_size_type", mode="jit", jax_versions=SINCE_0_9,
   signatures=["sharding|jit,gspmd,smap|*"],
   when=["mixed_mesh", "value:zero_size"],
   reason="On a mixed mesh under jax.set_mesh, a zero-size jit output split over an Explicit axis ('data' of size 2, out_spec P('data')) comes back with sharding P() and jax.typeof(out) float32[4,0] instead of float32[4@data,0] (what tracing and eager give, and what an all-Explicit mesh keeps). Only the zero-size output's sharding type is excused.",
   link=NONE + "'zero size explicit sharding type jit', 'empty array mixed mesh sharding'"),
 E(id="explicit-axes-zero-size-output-type", repair="without_op", case="explicit_axes_zero_size_type", mode="jit", jax_versions=">=0.10.2,<0.13",
   signatures=["sharding|jit,gspmd,eager|*"],
   when=["explicit_axes_call", "mixed_mesh_or_outside", "value:zero_size"],
   reason="Under jax.set_mesh of a mixed mesh ('data' Auto of size 3, 'model' Explicit of size 2), a shard_map inside jax.sharding.explicit_axes(axes='data') whose zero-size output (bool[4,0,12]) is split over ('model', 'data') comes back with sharding P(None, None, None) and loses 'model' from its type, in jit, under GSPMD and eagerly; eval_shape types it P(None, None, 'model'), as the oracle does, and the same program with a non-zero-size argument ((12, 2, 2) or (12, 4, 2) for (12, 0, 2)) gives P(None, None, 'model') in every mode. The explicit_axes form of mixed-mesh-zero-size-output-type, where eager loses it too (0.10.2 and 0.12.0 measured). Only the zero-size output's sharding type is excused.",
   link=NONE + "'zero size explicit_axes sharding type', 'empty array explicit sharding lost'"),
 E(id="mixed-mesh-unreduced-out-spec", repair="without_op", case="mixed_unreduced_out_spec", mode="jit", jax_versions=SINCE_0_10,
   signatures=["unexpected_error|jit,gspmd,lowering|*->ValueError"],
   when=["mixed_mesh", "unreduced_or_reduced_out_spec"],
   reason="A full-manual shard_map on a mixed mesh (an Auto axis beside the Explicit ones, of any size) with an out_spec unreduced (or reduced) over an Explicit axis, which _check_unreduced allows, fails under jit with jax's internal guard 'Using *pspec is dangerous when PartitionSpec has non-empty unreduced/reduced set. Please use *spec.partitions' (0.10.2, 0.12.0; 0.9.2 runs it); on an all-Explicit mesh it runs. Eager fails too, as eager-unreduced-intermediate says.",
   link=NONE + "'Using *pspec is dangerous', 'unreduced out_specs mixed mesh auto'"),
 E(id="mixed-mesh-unreduced-out-spec-0-9", repair="without_op", case="mixed_unreduced_out_spec_0_9", mode="jit", jax_versions="==0.9.*",
   signatures=["sharding|jit,gspmd|*", "unexpected_error|gspmd|*->NotImplementedError", "unexpected_error|gspmd|*->AssertionError", "crash|gspmd|crash"],
   when=["mixed_mesh", "unreduced_or_reduced_out_spec"],
   reason="jax 0.9.2, the same program as mixed-mesh-unreduced-out-spec (a full-manual shard_map on a mixed mesh, out_spec unreduced over an Explicit axis): jit runs it but jax.typeof(out) loses the unreduced set (P(None) where tracing, eval_shape and the lowering say P(None, unreduced={'pipe'})), and with GSPMD it fails with NotImplementedError \"device_indices_map doesn't work with unreduced. Please file a bug\" (or AssertionError 'Unexpected XLA sharding override', or aborts: hlo_sharding.h 'Check failed: IsTiledLeaf()'); on an all-Explicit mesh 0.9.2 runs it with the unreduced type. 0.10.2 raises instead (mixed-mesh-unreduced-out-spec).",
   link=NONE + "'device_indices_map doesn't work with unreduced', 'Unexpected XLA sharding override unreduced'"),
 E(id="mixed-mesh-size-1-explicit-type-0-9", repair="without_op", case="mixed_size1_explicit_type_0_9", mode="jit", jax_versions="==0.9.*",
   signatures=["sharding|jit,gspmd|*"],
   when=["mixed_mesh_or_outside", "out_spec_size_1_explicit"],
   reason="jax 0.9.2, broader than mixed-mesh-size-1-explicit-type: on a mixed mesh (here 'data' Auto, 'model' Explicit, both of size 1) a jit output whose out_spec names the size-1 Explicit axis comes back typed without it (P(None, None, None, None) where tracing and eager say P(None, 'model', None, None)), with or without an Auto axis in the out_spec, and inside explicit_axes when the mesh outside is mixed; on an all-Explicit mesh 0.9.2 keeps the type, and 0.10.2 keeps it unless the out_spec also names an Auto axis of size > 1. A free Auto axis does it too: under explicit_axes(axes='model') on a mesh with 'data' Auto of size 2 left free by a partial-manual shard_map and out_spec P('pipe', 'model') of size-1 axes, jit, GSPMD and eager type the output P(None, None, None) where tracing says P('pipe', None, None); with 'data' of size 1 it keeps the type (harness/data/corpus/known/mixed_size1_explicit_free_auto.json, 0.10.2). Only the sharding type is excused; values and blocks are checked.",
   link=NONE + "'size 1 explicit axis typeof jit', 'mixed mesh explicit size 1 out sharding'"),
 E(id="explicit-axes-size-1-explicit-type-0-9", repair="without_op", case="explicit_axes_size1_explicit_type_0_9", mode="eager", jax_versions="==0.9.*",
   signatures=["sharding|eager|*"],
   when=["explicit_axes_call", "mixed_mesh_or_outside", "out_spec_size_1_explicit"],
   reason="jax 0.9.2, mixed-mesh-size-1-explicit-type-0-9 inside jax.sharding.explicit_axes, which reshards its results by their types (pjit.py _explicit_axes): there eager loses the size-1 Explicit axis too (P(None, None) where tracing says P(None, 'model'); the mesh outside mixed: 'pipe' Auto of size 1, made Explicit inside). 0.10.2 keeps it. Only the sharding type is excused.",
   link=NONE + "'explicit_axes size 1 explicit axis typeof'"),
 E(id="gspmd-auto-axes-out-sharding-type", repair="without_mode", case="gspmd_auto_axes_out_sharding", mode="gspmd", jax_versions=SINCE_0_9,
   signatures=["sharding|gspmd|*"],
   when=["auto_axes_call"],
   reason="With jax_use_shardy_partitioner=False (GSPMD), a jit of jax.sharding.auto_axes(f, axes='data', out_sharding=P()) around the shard_map gives a result typed by the shard_map's own out_spec (P('data', None)) instead of the out_sharding it asked for (P(None, None), as tracing, eager, jit with Shardy and the lowering say). Only the sharding type is excused; values and blocks are checked. (0.9.2, 0.10.2 and 0.12.0; older jax has no auto_axes.)",
   link=NONE + "'auto_axes out_sharding gspmd', 'auto_axes typeof shardy partitioner False'"),
 E(id="gspmd-zero-size-output-manual-sharding", repair="without_op", case="gspmd_zero_size_manual", mode="gspmd", jax_versions=SINCE_0_9,
   signatures=["unexpected_error|gspmd|read_output->AssertionError", "unexpected_error|gspmd|read_output->JaxRuntimeError",
               # under jax.set_mesh jit itself converts the compiled output sharding with the context mesh
               "unexpected_error|gspmd|lowering->AssertionError"],
   when=["value:zero_size"],
   reason="With GSPMD, a jitted shard_map with a zero-size output beside another output returns the zero-size one with GSPMDSharding({manual}): the manual sharding leaks out of the region, and reading it fails (0.9.2, 0.10.2: AssertionError in get_num_ways_dim_sharded 'assert not hlo_sharding.is_manual()'; 0.12.0: 'INVALID_ARGUMENT: Manual sharding does not support UniqueIndexDomains'). With one output, or with Shardy, it reads back empty; 0.5.3 and 0.6.0 run it. Under jax.set_mesh (the shard_map's mesh from the context) the jit call itself fails: it converts the compiled GSPMDSharding({manual}) to a NamedSharding of the context mesh (sharding_impls._gspmd_to_named_sharding_via_mesh, parse_flatten_op_sharding) and raises AssertionError 'Unhandled OpSharding type. Please open a bug report!' (this entry's own case with mesh_context=True). A jax.debug.callback reading the zero-size value leaks it too, with a single output (harness/data/corpus/known/gspmd_zero_size_callback_manual.json: callback(a0) and a0 * a0 of a float32[0] argument; without the callback it runs). Only the zero-size output is excused.",
   link=NONE + "'GSPMDSharding manual zero size output', 'is_manual get_num_ways_dim_sharded', 'Unhandled OpSharding type'"),
 E(id="grad-of-varying-scalar-cotangent-vma-0-6", repair="without_op", case="regressions/grad_of_varying_scalar_cotangent_vma", mode="jit", jax_versions="==0.6.*",
   # (an invalid program holding one raises it first, instead of its own error: wrong_error)
   signatures=["unexpected_error|*|transform->ValueError", f"wrong_error|{EVERY}|*->ValueError"],
   when=["check_vma==True", "transform:transform==grad"],
   reason="jax 0.6.0: jax.grad of a varying scalar inside a check_vma shard_map (the transform op's grad: jax.grad(lambda c: f(c).sum())) raises ValueError 'unexpected JAX type (e.g. shape/dtype) for argument to vjp function: got float32[], but expected float32[]{data}': grad seeds the cotangent 1.0 without the output's varying axes. 0.8.1 and later return the derivative.",
   link=NONE + "'unexpected JAX type for argument to vjp function shard_map grad', 'grad varying output vma cotangent'"),
 E(id="unreduced-size-1-jit-sharding-override-0-9", repair="without_op", case="unreduced_size_1_jit_override_0_9", mode="jit", jax_versions="==0.9.*",
   signatures=["unexpected_error|jit,gspmd|*->AssertionError"],
   when=["unreduced_size_1_out_spec"],
   reason="jax 0.9.2: a jitted shard_map whose out_spec is unreduced over an Explicit axis of size 1 (here the one-axis mesh 'data' of size 1) fails with AssertionError 'Unexpected XLA sharding override: (XLA) GSPMDSharding({replicated}) != NamedSharding(..., spec=P(None, unreduced={'data'})) (User sharding)': XLA drops the unreduced annotation of a size-1 axis and jax's output check refuses it. Tracing and the lowering run it; 0.10.2 runs it under jit.",
   link=NONE + "'Unexpected XLA sharding override unreduced', 'unreduced size 1 axis jit'"),
 E(id="unreduced-size-1-axis-jit-lowering", repair="without_op", case="unreduced_size_1_jit_lowering", mode="jit", jax_versions=SINCE_0_10,
   signatures=["unexpected_error|jit,lowering|*->AssertionError"],
   when=["pcast:to==unreduced", "manual_size_1"],
   reason="The jit form of eager-unreduced-size-1-axis: a shard_map whose manual axes all have size 1 (no manual region is lowered) returning pcast(to='unreduced') of a computed value fails under jit and while lowering with the internal AssertionError 'Expected last op to be sdy.sharding_constraint, but got: stablehlo.subtract and output type=u32[4]{U:data}' (0.10.2, 0.12.0; 0.9.2 fails differently: unreduced-size-1-jit-sharding-override-0-9).",
   link=NONE + "'Expected last op to be sdy.sharding_constraint unreduced jit'"),
 E(id="negative-scatter-dimension", case="neg_scatter", mode="jit", repair="nonnegative_axes", jax_versions=UNTIL_0_10,
   # jax raises at the psum_scatter (or while lowering, naming no op), or an op after it that
   # reads the wrongly scattered block (its cone); a wrong error's `where` is the predicted
   # kind, its scope the op jax raised at: the rewrite, checked whole, decides
   signatures=[f"unexpected_error|{EVERY}|psum_scatter->*", f"unexpected_error|{EVERY}|lowering->ValueError",
               f"wrong_error|{EVERY}|*->ValueError", "wrong_error|vmap,vmap_spmd|*->IndexError",
               "wrong_error|vmap,vmap_spmd|*->TypeError", f"shape|{EVERY}|psum_scatter",
               "timeout|grad,grad_remat|timeout",
               # an untiled one that scatters the wrong dimension hands a nested shard_map
               # after it a block its in_specs do not divide
               # (harness/data/corpus/known/neg_scatter_nested_shard_map.json)
               f"unexpected_error|{EVERY}|shard_map->ValueError"],
   when=["psum_scatter:scatter_dimension<0"],
   reason="jax.lax.psum_scatter forwards a negative scatter_dimension unnormalised to the reduce_scatter primitive: lowering fails StableHLO verification ('value is non-negative'), under vmap the batching rule raises IndexError, or scatters the wrong dimension, and in a fori loop the carry check then raises TypeError ('carry input and carry output must have equal types': int32[2] against int32[1]) before an invalid program's own defect (an untiled scatter_dimension=-1 psum_scatter in a fori, out_specs with extra entries: harness/data/corpus/known/neg_scatter_vmap_fori_invalid.json), the abstract shape of later ops can be wrong, and in the grad modes after an all_to_all inside lax.scan the backward pass hangs (harness/data/corpus/known/neg_scatter_scan_grad_hang.json). Under vmap an untiled one with scatter_dimension=-2 scatters the wrong dimension (int32[2] for a (2, 3) block over an axis of size 2, where the oracle and eval_shape give (3,)), and a nested shard_map over a size-3 axis after it raises that its argument is not divisible (harness/data/corpus/known/neg_scatter_nested_shard_map.json, 2 ops: jit and eager raise at the psum_scatter; the rewrite runs in every mode on 0.10.2, and 0.12.0 runs the program itself). The rewrite (the same axis, non-negative) is checked in full.",
   link="https://github.com/jax-ml/jax/issues/20125 (fixed upstream by jax-ml/jax#38998: 0.11.2 and 0.12.0 accept negative axes)"),
 # jax.lax.all_to_all with a negative axis goes wrong in two places, each its own entry:
 # the primitive hands the unnormalised axis to XLA (every all_to_all), and untiled
 # all_to_all's own axis arithmetic (_all_to_all_is_async) compares and expands the raw
 # negative axis (a wrong abstract shape, then the shape checks of later ops)
 E(id="negative-all-to-all-split-axis", case="neg_split", mode="jit", repair="nonnegative_axes", jax_versions=UNTIL_0_10,
   signatures=[f"unexpected_error|{EVERY}|all_to_all->*", f"unexpected_error|{EVERY}|lowering->*", f"crash|{EVERY}|crash",
               f"wrong_error|{EVERY}|*->MLIRError", f"wrong_error|{EVERY}|*->ValueError", f"value|{EVERY}|all_to_all",
               "value|grad,grad_remat|*all_to_all*",
               # the garbage size can make XLA hang in the grad modes instead of raising
               # (harness/data/corpus/known/neg_split_grad_hang.json)
               "timeout|grad,grad_remat|timeout"],
   when=["all_to_all:split_axis<0"],
   reason="jax.lax.all_to_all with a negative split_axis reaches XLA unnormalised: garbage sizes ('split dimension has size 25769803777'), a segfault under jit, or wrong values. Eagerly the all_to_all runs, and fails verification (MLIRError, or ValueError 'Cannot lower jaxpr with verifier errors'), before a later op's defect is traced (harness/data/corpus/known/neg_split_eager_invalid.json: a dead all_to_all, then a psum naming a non-manual axis). In the grad modes the size XLA reads is uninitialised memory ('split dimension has size 140728018265312, expected to be a multiple of split_count 6'): the same program can raise that MLIRError or hang past the job's time limit (harness/data/corpus/known/neg_split_grad_hang.json, untiled split_axis=-1 over a size-6 axis). The untiled form's wrong abstract shape is negative-all-to-all-split-axis-untiled-shape. The rewrite (the same axis, non-negative) is checked in full.",
   link="https://github.com/jax-ml/jax/issues/19720 (fixed upstream by jax-ml/jax#38998: 0.11.2 and 0.12.0 accept negative axes)"),
 E(id="negative-all-to-all-split-axis-untiled-shape", case="neg_split_downstream_swap", mode="abstract", repair="nonnegative_axes",
   jax_versions=UNTIL_0_10,
   # a wrong abstract shape: later ops' shape checks fail (their errors in the all_to_all's
   # cone), an invalid program's shape error goes missing, or the primitive's own assert fires
   signatures=[*SHAPE_ERRORS, f"wrong_error|{EVERY}|*->AssertionError", f"unexpected_error|{EVERY}|*->ValueError",
               f"unexpected_error|{EVERY}|*->TypeError", f"unexpected_error|{EVERY}|all_to_all->AssertionError",
               f"shape|{EVERY}|all_to_all"],
   when=["all_to_all:split_axis<0", "all_to_all:tiled==False"],
   reason="Untiled jax.lax.all_to_all with a negative split_axis: its axis arithmetic (jax/_src/lax/parallel.py _all_to_all_is_async: `split_axis < concat_axis`, then expand_dims at concat_axis) compares the raw negative axis, so the result has the wrong abstract shape (over a size-1 axis, split_axis=-1 keeps the operand's shape: a following pswapaxes raises 'all_to_all requires the size of the mapped axis ... 2 and 1'; harness/data/corpus/known/neg_split_downstream_swap.json), which hides a later op's shape error (missing_error) or makes it fail, or the primitive gets the wrong split axis and fails an internal assert (AssertionError '(1, 6)'), before an invalid program's own defect is reached. The rewrite (the same axis, non-negative) is checked in full.",
   link="https://github.com/jax-ml/jax/issues/19720 (fixed upstream by jax-ml/jax#38998: 0.11.2 and 0.12.0 accept negative axes)"),
 E(id="negative-all-to-all-concat-axis", case="neg_concat", mode="jit", repair="nonnegative_axes", jax_versions=UNTIL_0_10,
   signatures=[f"unexpected_error|{EVERY}|all_to_all->*", f"unexpected_error|{EVERY}|lowering->*", f"crash|{EVERY}|crash",
               f"wrong_error|{EVERY}|*->MLIRError", f"wrong_error|{EVERY}|*->ValueError", f"value|{EVERY}|all_to_all",
               "value|grad,grad_remat|*all_to_all*",
               # the backward pass's all_to_all gets the negative axis as its split axis, and
               # XLA can hang on it as on negative-all-to-all-split-axis's
               # (harness/data/corpus/known/neg_concat_grad_hang.json)
               "timeout|grad,grad_remat|timeout"],
   when=["all_to_all:concat_axis<0"],
   reason="jax.lax.all_to_all with a negative concat_axis fails StableHLO verification ('concat_dimension ... non-negative'); eagerly its verification error (MLIRError, or ValueError 'Cannot lower jaxpr with verifier errors') comes before a later op's defect is traced. In the grad modes the backward pass's all_to_all (the transpose swaps the axes) gets the negative axis as its split axis, and compiling can hang instead of raising: harness/data/corpus/known/neg_concat_grad_hang.json (a tiled all_to_all with split_axis=1, concat_axis=-1 beside a negation in a fori_loop and one in jax.checkpoint) hangs past the job's time limit in grad on 0.10.2, every replay (the same program with concat_axis=1 runs at once; without the fori_loop grad raises the verifier error). The untiled form's wrong abstract shape is negative-all-to-all-concat-axis-untiled-shape. The rewrite (the same axis, non-negative) is checked in full.",
   link="https://github.com/jax-ml/jax/issues/19720 (fixed upstream by jax-ml/jax#38998: 0.11.2 and 0.12.0 accept negative axes)"),
 E(id="negative-all-to-all-concat-axis-untiled-shape", case="neg_concat_downstream_sub", mode="abstract", repair="nonnegative_axes",
   jax_versions=UNTIL_0_10,
   signatures=[*SHAPE_ERRORS, f"wrong_error|{EVERY}|*->AssertionError", f"unexpected_error|{EVERY}|*->ValueError",
               f"unexpected_error|{EVERY}|*->TypeError", f"unexpected_error|{EVERY}|all_to_all->AssertionError",
               f"shape|{EVERY}|all_to_all"],
   when=["all_to_all:concat_axis<0", "all_to_all:tiled==False"],
   reason="Untiled jax.lax.all_to_all with a negative concat_axis: its axis arithmetic (jax/_src/lax/parallel.py _all_to_all_is_async: `split_axis < concat_axis`, expand_dims at the raw negative concat_axis) puts the new axis at the wrong position, so the abstract shape is wrong and later shapes, errors and values go wrong (all_to_all(x, 'data', 2, -3, tiled=False) of an int8[1,1,2] block is typed (1,2,1) where the oracle, and jax for the rewrite with concat_axis=0, give (2,1,1); a dead `sub` of it and an int8[2,4,1] constant then raises 'sub got incompatible shapes for broadcasting' in every mode but eager: harness/data/corpus/known/neg_concat_downstream_sub.json), or hands the primitive the wrong split axis and its internal assert fails (AssertionError '(1, 6)' for split_axis=0, concat_axis=-2), before an invalid program's own defect is reached. The rewrite (the same axis, non-negative) is checked in full.",
   link="https://github.com/jax-ml/jax/issues/19720 (fixed upstream by jax-ml/jax#38998: 0.11.2 and 0.12.0 accept negative axes)"),
 E(id="zero-size-output-blocks", repair="without_op", case="zero_jit", mode="eager", jax_versions=SINCE_0_8,
   signatures=["shape|*|device_block", "unexpected_error|*|read_output->ValueError"],
   when=["value:zero_size"],
   reason="A shard_map output with a zero-size dimension does not honour its out_spec: under jit the result comes back with sharding P() and every device holds the whole (empty) global array; eagerly the sharding says P('x') but each device still holds the whole array, so np.asarray(out) raises 'could not broadcast input array from shape (4,0) into shape (2,0)' (or, partial-manual, the blocks come back whole); under jax.set_mesh jit and vmap with spmd_axis_name fail that way too. Only the zero-size output is excused.",
   link=NONE + "'shard_map zero size output sharding', 'empty array shard_map out_specs'"),
 E(id="zero-size-tiled-all-gather", repair="without_op", case="zero_ag_tiled", mode="jit", jax_versions=ALL_MEASURED,
   # wrong_error: an invalid program whose defect is at a later op, where jax (eagerly) raises
   # at this all_gather first; the scope is the op jax raised at
   signatures=["unexpected_error|*|all_gather->ValueError", "unexpected_error|*|transform->ValueError", "unexpected_error|*|lowering->ValueError", f"wrong_error|{EVERY}|*->ValueError",
               "timeout|grad,grad_remat|timeout"],
   when=["all_gather:tiled==True", "all_gather:zero_size==True"],
   reason="A tiled all_gather of a zero-size operand fails StableHLO verification ('dimension size of operand at all_gather_dim cannot be zero') instead of returning an empty array; untiled it works. In an invalid program whose defect comes later, that error replaces the predicted one. In the grad modes (its transpose, a zero-size psum_scatter, fails verification too) lowering sometimes hangs instead of raising, waiting in MLIR's module verifier as zero-size-psum-scatter's does: harness/data/corpus/known/zero_ag_tiled_grad_hang.json (a bfloat16[0] tiled all_gather and a psum, each in a nested shard_map) hangs in grad on 0.10.2 in most runs, in workers forked or spawned alike, and raises the verifier error in the others.",
   link=NONE + "'all_gather zero size dimension', 'all_gather_dim cannot be zero'"),
 E(id="zero-size-shardy-export", repair="without_op", case="zero_grad_lowering", mode="grad", jax_versions=SINCE_0_8,
   abort="expected at least one operand of @xla.sdy.manual_computation_body*GlobalToLocalShape",
   signatures=["unexpected_error|*|lowering->JaxRuntimeError"],
   when=["any:zero_size==True"],
   reason="A program with a zero-size value can fail to compile: 'func.call op expected at least one operand of @xla.sdy.manual_computation_body to be produced by a xla.sdy.GlobalToLocalShape CustomCallOp' (Shardy export; e.g. in the grad modes' backward pass, jnp.maximum of an empty int32 block and a float32 scalar, whose transpose yields an empty cotangent).",
   link=NONE + "'GlobalToLocalShape CustomCallOp', 'manual_computation_body zero size'"),
 E(id="zero-size-psum-scatter", repair="without_op", case="zero_psum_scatter", mode="jit", jax_versions=ALL_MEASURED,
   signatures=["unexpected_error|*|psum_scatter->ValueError", "unexpected_error|*|lowering->ValueError", "missing_error|*|collective_shape",
               "timeout|grad,grad_remat|timeout",
               # eager runs each op as it comes: in an invalid program whose defect jax checks at
               # the end (an out_spec), this op raises first (zero_psum_scatter_eager_invalid.json)
               "wrong_error|eager|*->ValueError"],
   when=["psum_scatter:zero_size==True"],
   reason="psum_scatter of a zero-size block fails StableHLO verification ('result dimension size at scatter_dimension cannot be zero'), and an untiled psum_scatter over a size-0 dimension (which must equal the axis size) passes eval_shape unchecked. In the grad modes, where that psum_scatter sits under jax.checkpoint beside a lax.fori_loop, lowering hangs instead of raising: the process waits in MLIR's module verifier (mlir.py lower_jaxpr_to_module, ctx.module.operation.verify()) using no CPU (harness/data/corpus/known/zero_psum_scatter_grad_hang.json; its emitted grad script hangs on 0.10.2; without the checkpoint or without the loop it raises the verifier error).",
   link=NONE + "'psum_scatter zero size', 'reduce_scatter scatter_dimension cannot be zero'"),
 E(id="unbound-axis-assertion", decision="bug, not message quality: a bare AssertionError is an internal assert firing, not a user error; jax's documented NameError 'unbound axis name' is what all_gather and axis_index raise for the same mistake.", repair="without_op", case="unbound_assert", mode="jit", jax_versions=SINCE_0_9,
   signatures=["wrong_error|*|unbound_axis->AssertionError"],
   when=["collective_axis_not_in_mesh", "any:unknown_axis"],
   reason="psum, pmean, pmax, pmin, psum_scatter, all_to_all and ppermute over an axis name that is not in the mesh raise a bare AssertionError with no message inside shard_map; the documented behaviour (and jax outside shard_map, and all_gather / axis_index inside it) is NameError 'unbound axis name'.",
   link=NONE + "'shard_map unbound axis AssertionError', 'psum unknown axis name AssertionError'"),
 E(id="unbound-axis-keyerror", repair="without_op", case="unbound_keyerror_0_8", mode="jit", jax_versions=SINCE_0_6_UNTIL_0_8,
   signatures=["wrong_error|*|unbound_axis->KeyError"],
   when=["collective_axis_not_in_mesh", "any:unknown_axis"],
   reason="Before unbound-axis-assertion: on jax 0.6.0 and 0.8.1 a collective over an axis name that is not in the mesh raises a bare KeyError naming the axis ('absent') instead of NameError 'unbound axis name' (which 0.5.3 raised). Found by shardfuzz qualify on 0.6.0.",
   link=NONE + "'shard_map unbound axis KeyError', 'psum unknown axis name KeyError'"),
 E(id="vmap-spmd-static-argument", repair="without_mode", case="vmap_spmd_static_arg", mode="vmap_spmd", jax_versions=SINCE_0_8,
   signatures=["unexpected_error|vmap_spmd|*->AssertionError"],
   when=["in_spec_none"],
   reason="jax.vmap(shard_map, spmd_axis_name=A) of a shard_map with a static argument (in_specs entry None, documented as 'treated as static') fails with an internal AssertionError ('ManualAxisType(varying=...)') in the batching rule; plain vmap, jit and eager run it.",
   link=NONE + "'shard_map in_specs None static vmap spmd_axis_name'"),
 # ppermute's perm is checked only when lowering (jax/_src/lax/parallel.py
 # _pcollectives_lowering_common): where and how it is refused are jax's choices
 E(id="ppermute-perm-out-of-range-indexerror", repair="without_op", case="ppermute_range", mode="jit", jax_versions=ALL_MEASURED,
   klass="policy",
   signatures=[f"wrong_error|{EVERY}|collective_param->IndexError"],
   when=["ppermute"],
   reason="ppermute with a perm index outside the axis (perm=[(0, 2)] on a size-2 axis): jit raises a bare IndexError('list index out of range') while lowering, where the oracle's catalogue expects a ValueError naming the perm.",
   decision="policy (message quality): the jax.lax.ppermute docstring says the perm's integers are indices into the axis but documents no exception; an out-of-range index is refused, only as IndexError (numpy's own AxisError is an IndexError too). Not a wrong result.",
   link=NONE + "'ppermute perm out of range IndexError'"),
 E(id="ppermute-perm-checked-when-lowering", repair="without_op", case="ppermute_perm_checked_when_lowering", mode="abstract",
   jax_versions=ALL_MEASURED, klass="policy",
   # abstract (eval_shape) never lowers; jit checks the out_specs at the end of tracing,
   # before lowering: an invalid program's other defect is named first
   signatures=["missing_error|*|collective_param", f"wrong_error|{TRACE}|collective_param->ValueError"],
   when=["ppermute"],
   reason="ppermute checks its perm (sources and destinations unique, indices inside the axis) only when it is lowered (_pcollectives_lowering_common), not while tracing: jax.eval_shape accepts perm=[(0, 0), (0, 1)] or [(0, 2)], a dead ppermute under jit is never checked, and in a program whose out_specs are also wrong (out_specs=P(None) of a value varying along a size-1 'data' axis) jit, vmap and the grad modes report the out_specs error, checked at the end of tracing, where eager (which lowers each op as it comes) reports the perm (found at scale as 'wrong_error|grad|collective_param', minimized to harness/data/corpus/known/ppermute_perm_checked_when_lowering.json).",
   decision="policy (when a mistake is reported): the jax.lax.ppermute docstring states the perm's constraints ('Any two pairs should not have the same source index or the same destination index') but not when they are checked; checking them when lowering is jax's design, and the error raised is right (a ValueError naming the perm) once the op is lowered.",
   link="jax/_src/lax/parallel.py _pcollectives_lowering_common; " + NONE + "'ppermute perm checked at lowering', 'eval_shape ppermute duplicate source'"),
 E(id="axis-index-groups-not-checked-pmax", repair="without_op", case="groups_incomplete", mode="jit", jax_versions=ALL_MEASURED,
   signatures=["missing_error|*|collective_param", "wrong_error|*|collective_param->JaxRuntimeError",
               "wrong_error|*|collective_param->ValueError", "wrong_error|*|collective_param->MLIRError"],
   when=["pmax:groups"],
   reason="axis_index_groups is validated only for covering 0..sum(len(g))-1, not the axis: pmax with groups ((0, 1),) over an axis of size 3 passes tracing and eval_shape, then fails in XLA's HLO verifier (RET_CHECK num_flattened_ids) or StableHLO verification ('replica id #1 not seen').",
   link="jax/_src/lax/parallel.py _validate_reduce_axis_index_groups; " + NONE + "'axis_index_groups axis size not checked'"),
 E(id="axis-index-groups-not-checked-pmin", repair="without_op", case="groups_incomplete_pmin", mode="jit", jax_versions=ALL_MEASURED,
   signatures=["missing_error|*|collective_param", "wrong_error|*|collective_param->JaxRuntimeError",
               "wrong_error|*|collective_param->ValueError", "wrong_error|*|collective_param->MLIRError"],
   when=["pmin:groups"],
   reason="As axis-index-groups-not-checked-pmax, for pmin (the same validation).",
   link="jax/_src/lax/parallel.py _validate_reduce_axis_index_groups; " + NONE + "'axis_index_groups axis size not checked'"),
 E(id="duplicate-in-spec-axis-unchecked-abstract", repair="without_mode", case="dup_same_entry", mode="abstract", jax_versions=ALL_MEASURED,
   # (eager raises DuplicateSpecError, the right error: the mode left out is the repair)
   signatures=[f"missing_error|{TRACE}|spec_duplicate_axis"],
   when=["in_spec_duplicate_axis"],
   reason="An in_spec naming a mesh axis twice (P('x', 'x'), P(('x', 'x'))) is accepted by jax.eval_shape of the shard_map and by jit's lowering, and by jit, vmap and grad when that argument is unused; running it eagerly (or jit with the argument used) raises DuplicateSpecError.",
   link=NONE + "'DuplicateSpecError eval_shape shard_map'"),
 E(id="all-to-all-axis-out-of-range-indexerror", repair="without_op", case="a2a_axis_oob", mode="jit", jax_versions=UNTIL_0_10,
   signatures=["wrong_error|*|collective_param->IndexError"],
   when=["all_to_all"],
   klass="policy",
   reason="all_to_all with split_axis or concat_axis out of range raises a bare IndexError('list index out of range') from its shape rule; all_gather reports the same mistake as ValueError('axis 5 is out of bounds for array of dimension 3').",
   decision="policy (message quality): the jax.lax.all_to_all docstring documents split_axis and concat_axis as positional axes of x but no exception for an out-of-range one; the mistake is refused while tracing, as an IndexError (numpy's AxisError for the same mistake is an IndexError too). Not a wrong result.",
   link=NONE + "'all_to_all split_axis out of range IndexError'"),
 E(id="psum-scatter-axis-out-of-range-indexerror", repair="without_op", case="ps_axis_oob", mode="jit", jax_versions=UNTIL_0_10,
   signatures=["wrong_error|*|collective_param->IndexError"],
   when=["psum_scatter"],
   klass="policy",
   reason="psum_scatter with scatter_dimension out of range raises a bare IndexError('tuple index out of range') instead of a ValueError naming the axis.",
   decision="policy (message quality): the jax.lax.psum_scatter docstring documents scatter_dimension as a positional dimension of x but no exception for an out-of-range one; refused while tracing, as an IndexError. Not a wrong result.",
   link=NONE + "'psum_scatter scatter_dimension out of range IndexError'"),
 E(id="pmax-no-differentiation-rule", repair="without_op", case="pmax_grad", mode="grad", jax_versions=ALL_MEASURED,  # seen on 0.6.0, 0.8.1, 0.9.2, 0.10.2
   signatures=["unexpected_error|grad,grad_remat|*->NotImplementedError", "wrong_error|grad,grad_remat|*->NotImplementedError"],
   when=["pmax"],
   klass="policy",
   reason="jax.lax.pmax has no differentiation rule (NotImplementedError: Differentiation rule for 'pmax' not implemented), although max is differentiable almost everywhere and jnp.maximum / jnp.max are; the oracle predicts the derivative (finite differences, away from ties).",
   decision="policy (a missing feature, jax-ml/jax#7167, open since 2021): the jax.lax.pmax docstring promises no derivative, and jax refuses with an explicit NotImplementedError naming the missing rule, never a wrong value; the workaround jax's maintainers give there (stop_gradient on the argument) confirms it is a feature gap.",
   link="https://github.com/jax-ml/jax/issues/7167 (open)"),
 E(id="pmin-no-differentiation-rule", repair="without_op", case="pmin_grad", mode="grad", jax_versions=ALL_MEASURED,  # seen on 0.6.0, 0.8.1, 0.9.2, 0.10.2
   signatures=["unexpected_error|grad,grad_remat|*->NotImplementedError", "wrong_error|grad,grad_remat|*->NotImplementedError"],
   when=["pmin"],
   klass="policy",
   reason="As pmax-no-differentiation-rule, for pmin.",
   decision="policy, as pmax-no-differentiation-rule (jax-ml/jax#7167): no derivative is documented, and jax refuses with an explicit NotImplementedError.",
   link="https://github.com/jax-ml/jax/issues/7167 (open; the same for pmin)"),
 E(id="vmap-out-spec-rank-error-garbled", repair="without_mode", case="vmap_out_rank", mode="vmap", jax_versions=SINCE_0_8,
   signatures=["wrong_error|vmap|out_spec_rank->ValueError", "wrong_error|vmap|out_spec_replication->ValueError"],
   when=[],
   klass="policy",
   reason="Under jax.vmap, shard_map's out_specs rank and replication errors come out as an internal pytree ValueError instead of the documented message naming the output and the spec.",
   decision="policy (message quality): the error is raised, at the right time and as the right type (ValueError); only its wording (a pytree prefix error) does not name the output and spec as shard_map's own message does. The shard_map docs promise no wording.",
   link=NONE + "'vmap shard_map out_specs error message'"),
 E(id="eager-partial-manual-check-vma-false", decision="bug: eager's per-primitive shard_map fails its own out_specs check (an internal spec built from every mesh axis), at whatever op comes first; no doc limits eager shard_map to full manual or check_vma=True, and jit runs the program.", repair="without_mode", case="eager_partial_manual", mode="eager", jax_versions=SINCE_0_8_UNTIL_0_11,
   # (its identity is the check it fails, whatever op eager was at: even returning an argument)
   abort="out_specs argument must refer to an axis marked as manual",
   signatures=["unexpected_error|eager|*->ValueError", "wrong_error|eager|*->ValueError"],
   when=["partial_manual", "check_vma==False"],
   reason="Eager (un-jitted) shard_map with axis_names a strict subset of the mesh and check_vma=False runs each primitive in a shard_map whose out_specs name every mesh axis, the automatic ones too, and fails its own spec check: ValueError 'shard_map out_specs argument must refer to an axis marked as manual (frozenset({'model'})), but: out_specs refers to 'data'' (ShardMapTrace.process_primitive), at whatever op comes first; jit runs the same program.",
   link="jax/_src/shard_map.py ShardMapTrace.process_primitive; " + NONE + "'eager shard_map partial manual check_vma=False'"),
 E(id="ragged-all-to-all-typed-as-its-output-buffer", repair="vary_after", case="ragged_vma", mode="abstract", jax_versions=SINCE_0_6,
   # the wrong type starts at the op; the checks and ops after it read it: the repair (a
   # pcast to varying after it, checked whole) decides what it caused
   signatures=["vma|*|ragged_all_to_all", "missing_error|*|out_spec_replication", "missing_error|*|collective_vma",
               f"unexpected_error|{EVERY}|*->ValueError", f"wrong_error|{EVERY}|*->ValueError"],
   when=["ragged_all_to_all"],
   reason="ragged_all_to_all's result is typed with the varying axes of its output buffer alone, although it receives data from every device of the axis (the operand's values); out_specs that leave the axis out are then accepted and later collectives see the wrong varying axes.",
   link="jax/_src/lax/parallel.py _ragged_all_to_all_effectful_abstract_eval; " + NONE + "'ragged_all_to_all vma'"),
 E(id="precv-result-typed-invariant", repair="vary_after", case="precv_vma", mode="abstract", jax_versions=SINCE_PRECV,
   # the wrong type starts at the sendrecv (psend + precv) op; the checks that read it later
   # (out_specs replication, psum's operand) then accept what they must reject, and the
   # ops that check an operand's type (pcast(to='unreduced'), pbroadcast) refuse it
   signatures=["vma|*|sendrecv", "missing_error|*|out_spec_replication", "missing_error|*|collective_vma",
               f"unexpected_error|{EVERY}|*->ValueError", f"wrong_error|{EVERY}|*->ValueError",
               # pcast(to='reduced') of the wrongly invariant result: an internal assert
               "unexpected_error|*|pcast->AssertionError"],
   when=["sendrecv"],
   reason="jax.lax.precv types its result from out_shape alone (_precv_abstract_eval returns a ShapedArray with no varying axes), although each device receives another device's block (precv docstring: ppermute's meaning): the result is typed invariant over the axes it was received along and over every axis the sent value varied along, so out_specs that leave those axes out are accepted and later ops see the wrong varying axes (pcast(to='unreduced') of it raises 'Unsupported pcast from=invarying'; pcast(to='reduced') an AssertionError 'ManualAxisType(varying=frozenset(), ..., reduced={data})'). XLA:CPU cannot lower psend/precv, so on CPU only the types are checked.",
   link="jax/_src/lax/parallel.py precv, _precv_abstract_eval; " + NONE + "'precv vma', 'psend precv shard_map'"),
 # one abort, one entry: GSPMD's partitioner stops at the same check whichever collective
 # was drawn (pswapaxes, all_gather, all_to_all, a psum_scatter in a derivative transform)
 E(id="gspmd-partial-manual-manual-subgroup-abort", repair="without_op", case="gspmd_partial_manual_all_gather", mode="gspmd",
   jax_versions=ALL_MEASURED, abort="hlo_sharding_util.cc:*] Check failed: sharding.IsManualSubgroup()",
   signatures=["crash|gspmd|crash"],
   # (the collectives seen reaching it: what its repair leaves out, and the programs whose
   # gspmd mode runs last; the abort, not the op, is what matches)
   when=["partial_manual", "pswapaxes | all_gather | all_to_all | psum_scatter"],
   reason="With jax_use_shardy_partitioner=False (GSPMD), a partial-manual shard_map (axis_names a strict subset of the mesh) whose body holds a collective GSPMD partitions over a manual subgroup aborts the process at hlo_sharding_util.cc 'Check failed: sharding.IsManualSubgroup()' (line 2714 on 0.10.2); Shardy runs the same programs. Seen with pswapaxes (harness/data/corpus/known/gspmd_partial_manual_all_to_all.json), all_gather (gspmd_partial_manual_all_gather.json), all_to_all (gspmd_partial_manual_a2a.json), and a psum_scatter inside jax.grad / jax.vjp under auto_axes / explicit_axes (gspmd_manual_subgroup_psum_scatter_grad.json, _vjp.json): one check, one root cause, whatever the collective. The program's other modes check it.",
   link=NONE + "'IsManualSubgroup', 'GSPMD partial manual all_to_all', 'IsManualSubgroup all_gather'"),
 # jax 0.5 and 0.6 partition with GSPMD by default (jax_use_shardy_partitioner=False), so
 # plain jit aborts on the same programs as the gspmd mode; measured on 0.5.3, 0.6.0; 0.8.1 runs them under jit (Shardy)
 E(id="gspmd-partial-manual-manual-subgroup-abort-jit-0-6", repair="without_op", case="regressions/gspmd_partial_manual_all_to_all_jit_0_6",
   mode="jit", jax_versions=UNTIL_0_6, abort="IsManualSubgroup()",
   signatures=["crash|jit|crash"],
   when=["partial_manual", "pswapaxes | all_gather | all_to_all"],
   reason="gspmd-partial-manual-manual-subgroup-abort under plain jit, where GSPMD is the default partitioner (jax 0.5, 0.6): the process aborts at 'Check failed: sharding.IsManualSubgroup()' (pswapaxes, all_gather) or 'Check failed: target.IsManualSubgroup()' (all_to_all); hlo_verifier's 'In kFlattenedID mode, replica groups should contain 4 flattened IDs, but found 3' (seen on 0.6.0) is another check, not this entry.",
   link=NONE + "'IsManualSubgroup', 'GSPMD partial manual all_to_all'"),
 # one abort, one entry: XLA:CPU stops at the same check for every bfloat16 all-reduce or
 # reduce-scatter it compiles in a partial-manual region, whichever op or transpose made it
 E(id="bf16-partial-manual-allreduce-abort", repair="without_op", case="bf16_partial_manual_allreduce", mode="jit",
   jax_versions=ALL_MEASURED, abort="hlo_instruction.cc:*] Invalid binary instruction opcode copy",
   signatures=[f"crash|{RUN}|crash"],
   # (the ops its repair leaves out: those that make such an all-reduce, forward or backward)
   when=["bfloat16", "any:allreduce_dtype==bfloat16 | all_gather:dtype==bfloat16 | transform:cotangent_sum_dtype==bfloat16"],
   reason="XLA:CPU aborts compiling a bfloat16 all-reduce or reduce-scatter inside a partial-manual shard_map region (axis_names a strict subset of the mesh's axes) at hlo_instruction.cc 'Invalid binary instruction opcode copy' (line 1615 on 0.10.2), in every mode that compiles it, with Shardy and GSPMD, check_vma either way; float16 and float32 run, a full-manual shard_map runs bfloat16 too, and so do all_gather, all_to_all and ppermute of bfloat16 there. The same abort, whatever makes the all-reduce: psum, pmean, pmax, pmin, psum_scatter of bfloat16 (harness/data/corpus/known/bf16_partial_manual_allreduce.json); jax.vjp of a step that makes its bfloat16 operand vary along a manual axis, whose transpose sums the cotangent over it (bf16_partial_manual_vjp.json); the transpose of a bfloat16 all_gather, a reduce-scatter (bf16_partial_manual_all_gather_grad.json); the cotangent of a bfloat16 argument whose in_spec leaves out a manual axis, summed over it (bf16_partial_manual_grad_replicated.json); and jax.smap, a shard_map over one axis with every other mesh axis automatic, of a bfloat16 all-reduce on a mesh with another axis (bf16_smap_allreduce.json; 0.7.1 .. 0.12.0, jax.smap is absent from 0.6.2). The program's other modes check it.",
   link=NONE + "'Invalid binary instruction opcode copy', 'bfloat16 psum partial manual', 'bf16 all-reduce CPU abort', 'smap bfloat16 psum'"),
 E(id="psum-batching-rule-0-8", repair="without_op", case="regressions/psum_batching_0_8", mode="vmap", jax_versions="==0.8.*",
   signatures=["unexpected_error|vmap,vmap_spmd|*->TypeError"],
   when=["psum"],
   reason="On jax 0.8, vmap of a psum batched through lax.scan or spmd_axis_name raises TypeError in psum's batching rule; fixed by 0.10.",
   link=NONE + "'psum batching rule TypeError vmap scan'"),
 E(id="pmean-batching-rule-0-8", repair="without_op", case="regressions/pmean_batching_0_8", mode="vmap", jax_versions="==0.8.*",
   signatures=["unexpected_error|vmap,vmap_spmd|*->TypeError"],
   when=["pmean"],
   reason="On jax 0.8, pmean (psum underneath) batched through lax.scan or spmd_axis_name raises TypeError (_psum_invariant_abstract_eval() got an unexpected keyword argument 'axis_index_groups'), as psum-batching-rule-0-8; fixed by 0.10. Found by shardfuzz qualify on 0.8.1.",
   link=NONE + "'psum batching rule TypeError vmap scan', '_psum_invariant_abstract_eval axis_index_groups'"),
 E(id="eager-nested-shard-map-invariant-operand", repair="without_op", case="eager_nested_invariant", mode="eager", jax_versions=SINCE_0_8,
   signatures=["unexpected_error|eager|shard_map->ValueError", "wrong_error|eager|*->ValueError"],
   when=["shard_map"],
   reason="Eagerly, a nested shard_map over axes the outer body left automatic fails on an operand invariant over the outer manual axes ('not evenly divisible'); jit runs it.",
   link=NONE + "'nested shard_map eager not evenly divisible'"),
 E(id="size-1-manual-nested-allreduce", repair="without_op", case="size1_manual_nested_allreduce", mode="jit", jax_versions=SINCE_0_8,
   # its identity is the RET_CHECK, whichever all-reduce after the nested shard_map jax was at
   abort="Cross-partition allreduce must be in (partial) manual partitioning mode",
   signatures=[f"unexpected_error|{RUN}|*->JaxRuntimeError", "unexpected_error|lowering|lowering->JaxRuntimeError"],
   when=["shard_map", "manual_size_1"],
   reason="With every outer manual axis of size 1 (no manual region) and a nested shard_map, an all-reduce (psum, pmax, ...) fails in XLA's SPMD partitioner: RET_CHECK failure (spmd_partitioner.cc:3698 on 0.10.2) 'hlo->sharding().IsManualSubgroup() Cross-partition allreduce must be in (partial) manual partitioning mode', in jit, GSPMD, vmap, smap and eagerly at the all-reduce (e.g. a pmax over the size-1 manual 'model' after a nested pmin over 'data', harness/data/corpus/known/size1_manual_allreduce_eager_pmax.json).",
   link=NONE + "'Cross-partition allreduce must be in (partial) manual partitioning mode'"),
 E(id="vmap-spmd-cond-closure-vma", repair="unwrap", case="vmap_spmd_cond_closure", mode="vmap_spmd", jax_versions=SINCE_0_6,
   signatures=["unexpected_error|vmap_spmd|*->ValueError"],
   when=["any:wrap==cond"],
   reason="jax.vmap with spmd_axis_name over a shard_map whose body runs a lax.cond closing over a body value fails with an internal vma ValueError; plain vmap runs it.",
   link=NONE + "'vmap spmd_axis_name cond shard_map vma'"),
 E(id="vmap-spmd-scan-closure-vma", repair="unwrap", case="vmap_spmd_scan_closure", mode="vmap_spmd", jax_versions=SINCE_0_6,
   signatures=["unexpected_error|vmap_spmd|*->ValueError"],
   when=["any:wrap==scan"],
   reason="jax.vmap with spmd_axis_name over a shard_map whose body runs a lax.scan closing over an invariant body value: the batching rule makes the carry vary over the spmd axis but not the closed-over value, and jax raises 'Primitive add requires varying manual axes to match' (internal vma error); plain vmap, jit and eager run it. As vmap-spmd-cond-closure-vma, for scan. Found by shardfuzz.",
   link=NONE + "'vmap spmd_axis_name scan closure shard_map vma', 'requires varying manual axes to match'"),
 E(id="vmap-spmd-while-closure-vma", repair="unwrap", case="vmap_spmd_while_closure", mode="vmap_spmd", jax_versions=SINCE_0_6,
   signatures=["unexpected_error|vmap_spmd|*->ValueError"],
   when=["any:wrap==while"],
   reason="jax.vmap with spmd_axis_name over a shard_map whose body runs a lax.while_loop closing over an invariant body value (mul(c, a0): c a constant made in the body, a0 the carried argument, which the batch makes vary over the spmd axis): the while batching rule makes the carry vary over the spmd axis but not the closed-over value, and jax raises 'Primitive mul requires varying manual axes to match, but got [frozenset({'data'}), frozenset({'model', 'data'})]. Please open an issue' (an internal check), even though the value is dead; plain vmap, jit and eager run it. As vmap-spmd-scan-closure-vma, for while_loop. Measured on 0.6.0, 0.10.2 and 0.12.0 (0.5.x not measured). Found by shardfuzz.",
   link=NONE + "'vmap spmd_axis_name while_loop closure shard_map vma', 'requires varying manual axes to match while_loop'"),
 E(id="precv-batching-rule-out-shape", repair="without_op", case="precv_vmap_batcher", mode="abstract", jax_versions=SINCE_PRECV,
   # jax raises at the sendrecv; in an invalid program whose defect comes later, that error
   # replaces the predicted one (wrong_error, scoped by the op jax raised at)
   signatures=["unexpected_error|*|sendrecv->TypeError", f"wrong_error|{EVERY}|*->TypeError"],
   when=["sendrecv:wrap==vmap"],
   reason="jax.vmap of jax.lax.precv raises TypeError '_ppermute_batcher() got an unexpected keyword argument 'out_shape'': precv_p (and psend_p) register ppermute's batching rule (batching.fancy_primitive_batchers[precv_p] = _ppermute_batcher), whose signature has no out_shape, the parameter precv_p binds (and for psend it would bind ppermute_p, returning the array instead of a token). Any batching of psend/precv fails: here a jax.vmap inside the body (wrap='vmap'); the vmap and vmap_spmd modes (jax.vmap of the whole shard_map) reach the same rule, but on CPU they report sendrecv unsupported (XLA:CPU cannot lower psend/precv), so only the abstract mode sees it here. Measured on 0.9.2, 0.10.2 and 0.12.0 (0.6.0 has no psend/precv).",
   link="jax/_src/lax/parallel.py _ppermute_batcher, precv_p; " + NONE + "'precv vmap', '_ppermute_batcher out_shape', 'psend precv batching'"),
 E(id="vmap-spmd-fori-closure-carry-vma", repair="unwrap", case="vmap_spmd_fori_closure", mode="vmap_spmd", jax_versions=SINCE_0_6,
   signatures=["unexpected_error|vmap_spmd|*->ValueError"],
   when=["any:wrap==fori"],
   reason="jax.vmap with spmd_axis_name over a shard_map whose body runs a lax.fori_loop with static bounds (lowered as a lax.scan) whose body computes its carry from a value the loop forwards unchanged (or closes over): the scan batching rule makes the initial carry vary over the spmd axis but not the body's output, and jax raises 'Scan carry input and output got mismatched varying manual axes ... Please open an issue' (an internal check); plain vmap, jit, eager and the grad modes run it, and so does lax.while_loop of the same body. Found by shardfuzz (wrap='fori', issue 15).",
   link=NONE + "'Scan carry input and output got mismatched varying manual axes vmap spmd_axis_name fori_loop'"),
E(id="vmap-spmd-checkpoint-closure-vma", repair="unwrap", case="vmap_spmd_checkpoint_closure", mode="vmap_spmd", jax_versions=SINCE_0_6,
   signatures=["unexpected_error|vmap_spmd|*->ValueError"],
   when=["any:wrap==checkpoint"],
   reason="jax.vmap with spmd_axis_name over a shard_map whose body applies jax.checkpoint to a binary op that closes over a body value (sub(c, a0): c a constant made in the body, a0 an argument the batch makes vary over the spmd axis): inside the checkpoint the implicit pvary is not inserted and jax raises 'Primitive sub requires varying manual axes to match, but got [frozenset({'model'}), frozenset()]. Please open an issue' (an internal check), even though the value is dead; plain vmap, jit, eager and grad run it, and vmap_spmd runs the same op without the checkpoint (0.10.2; scripts/entry_ranges.py: shows on 0.6.0 .. 0.12.0, not on 0.5.3). As vmap-spmd-inner-vmap-closure-vma, for jax.checkpoint. Found by shardfuzz.",
   link=NONE + "'vmap spmd_axis_name checkpoint shard_map requires varying manual axes to match', 'remat closure spmd_axis_name vma'"),
E(id="vmap-spmd-inner-vmap-closure-vma", repair="unwrap", case="vmap_spmd_inner_vmap_closure", mode="vmap_spmd", jax_versions=SINCE_0_6,
   signatures=["unexpected_error|vmap_spmd|*->ValueError"],
   when=["any:wrap==vmap"],
   reason="jax.vmap with spmd_axis_name over a shard_map whose body applies jax.vmap to a binary op that closes over a body value of other varying axes (add(c, x) with c invariant over x, x varying): the implicit pvary misses the spmd axis and jax raises 'Primitive add requires varying manual axes to match ... Please open an issue' (an internal check); plain vmap, jit, eager and the grad modes run it. Found by shardfuzz (wrap='vmap', issue 15).",
   link=NONE + "'vmap spmd_axis_name nested vmap shard_map requires varying manual axes to match'"),
E(id="vmap-spmd-wrapped-transform-vma", repair="unwrap", case="vmap_spmd_wrapped_transform", mode="vmap_spmd", jax_versions=SINCE_0_6,
   signatures=["unexpected_error|vmap_spmd|transform->ValueError"],
   when=["transform:wrap"],
   reason="jax.vmap with spmd_axis_name over a shard_map whose body runs a derivative transform (jax.grad, jax.vjp, jax.jvp) inside a wrapper (lax.map here; lax.scan, fori_loop, while_loop, cond, switch and jax.checkpoint alike, measured by hand on 0.10.2): the transform's own constants (grad's cotangent seed, a jvp tangent made inside) do not vary over the spmd axis while the batched operand does, and jax raises 'Primitive mul requires varying manual axes to match, but got [frozenset(), frozenset({...})] ... Please open an issue' (an internal check; under a jax.vmap wrapper 'pvary is a invariant->variant collective'); the same transform unwrapped, plain vmap, jit, eager and the grad modes run it. The wrapped-constant cases of vmap-spmd-scan-closure-vma and -cond-closure-vma, reached through a transform. Measured (scripts/entry_ranges.py): 0.6.0, 0.9.2, 0.10.2 and 0.12.0 show it, 0.5.3 runs the case; on 0.8.1 the case raises psum's batching TypeError first ('_psum_invariant_abstract_eval() got an unexpected keyword argument axis_index_groups', as psum-batching-rule-0-8). Found by shardfuzz.",
   link=NONE + "'vmap spmd_axis_name grad inside scan shard_map', 'requires varying manual axes to match grad lax.map'"),
# jax 0.5.x: the same programs, an older symptom (shard_map's replication checking,
 # check_rep, before vma): measured on 0.5.3 only, not on 0.6.0
 E(id="ragged-all-to-all-no-replication-rule-0-5", repair="without_op", case="ragged_no_rule_0_5", mode="abstract", jax_versions=ONLY_0_5,
   # (an invalid program holding one raises it first, instead of its own error: wrong_error, scoped to the op raising)
   klass="policy",
   signatures=["unexpected_error|*|ragged_all_to_all->NotImplementedError", f"wrong_error|{EVERY}|*->NotImplementedError"],
   when=["check_vma==True", "ragged_all_to_all"],
   reason="jax 0.5 has no replication rule for ragged_all_to_all: under shard_map's check_rep (check_vma) every program holding one raises NotImplementedError ('No replication rule for ragged_all_to_all ... pass check_rep=False'); 0.6.0 types it.",
   decision="policy (a limitation): jax 0.5's replication checking covered the primitives it had rules for and refused the others with a NotImplementedError naming the workaround (check_rep=False); no wrong result.",
   link=NONE + "'No replication rule for ragged_all_to_all'"),
 E(id="pbroadcast-no-replication-rule-0-5", repair="without_op", case="regressions/pbroadcast_no_rule_0_5", mode="abstract", jax_versions=ONLY_0_5,
   klass="policy",
   signatures=["unexpected_error|*|pbroadcast->NotImplementedError", f"wrong_error|{EVERY}|*->NotImplementedError"],
   when=["check_vma==True", "pbroadcast"],
   reason="jax 0.5 has no replication rule for pbroadcast: under check_rep every program holding one raises NotImplementedError ('No replication rule for pbroadcast'); 0.6.0 types it.",
   decision="policy (a limitation), as ragged-all-to-all-no-replication-rule-0-5: an explicit NotImplementedError for a primitive jax 0.5's check_rep had no rule for.",
   link=NONE + "'No replication rule for pbroadcast'"),
 E(id="vmap-spmd-cond-closure-rep-0-5", repair="unwrap", case="regressions/vmap_spmd_cond_closure_0_5", mode="vmap_spmd", jax_versions=ONLY_0_5,
   signatures=["unexpected_error|vmap_spmd|*->Exception"],
   when=["any:wrap==cond"],
   reason="As vmap-spmd-cond-closure-vma, with 0.5's replication types: jax.vmap with spmd_axis_name over a body whose lax.cond closes over a body value raises a bare Exception ('Primitive mul requires argument replication types to match'); plain vmap runs it.",
   link=NONE + "'requires argument replication types to match vmap spmd_axis_name'"),
 E(id="vmap-spmd-static-argument-lowering-0-6", repair="without_mode", case="regressions/vmap_spmd_static_arg_0_6", mode="vmap_spmd", jax_versions=UNTIL_0_6,
   signatures=["unexpected_error|vmap_spmd|lowering->ValueError"],
   when=["in_spec_none"],
   reason="As vmap-spmd-static-argument, before 0.8: vmap(shard_map, spmd_axis_name=A) with a static argument (in_specs None) traces, but the batched body fails StableHLO verification ('size of operand dimension 0 (2) is not equal to 1 or size of result dimension 0 (1)').",
   link=NONE + "'shard_map in_specs None static vmap spmd_axis_name'"),
 E(id="vmap-spmd-nested-shard-map", repair="without_op", case="vmap_spmd_nested_shard_map", mode="vmap_spmd", jax_versions=SINCE_0_9,
   # (a program with many nested shard_maps: the verifier's errors can hang it instead,
   # harness/data/corpus/known/vmap_spmd_nested_shard_map_hang.json)
   signatures=["unexpected_error|vmap_spmd|*->ValueError", "timeout|vmap_spmd|timeout"],
   when=["shard_map"],
   reason="jax.vmap with spmd_axis_name over a shard_map holding a nested shard_map lowers to a module Shardy's verifier rejects "
          "('operates on axis \"model\" which is already bound by a parent sdy.manual_computation op'; with an Explicit axis also "
          "'stablehlo.convert op requires the same shape' on a tensor<0x...>): ValueError 'Cannot lower jaxpr with verifier "
          "errors'. With many nested shard_maps the process instead waits in that verification (mlir.py "
          "lower_jaxpr_to_module, ctx.module.operation.verify()) with its CPU idle, past any time limit: the same invalid "
          "module, which the program without the nested shard_maps does not make.",
   link=NONE + "'vmap spmd_axis_name nested shard_map'"),
 E(id="all-to-all-untiled-transpose-shape", repair="without_op", case="all_to_all_untiled_transpose", mode="grad", jax_versions=SINCE_0_9,
   # (a derivative transform in the body, jax.grad / jax.vjp of steps holding the all_to_all,
   # transposes it in every mode: harness/data/corpus/known/a2a_untiled_transform.json; in an
   # invalid program its cotangent error comes before the program's own: a wrong error, at
   # the transform, or anywhere in the grad modes, which differentiate every op)
   signatures=["unexpected_error|grad,grad_remat|lowering->ValueError", "unexpected_error|grad,grad_remat|*->ValueError",
               "unexpected_error|*|transform->ValueError", f"wrong_error|{EVERY}|*->ValueError"],
   # an untiled all_to_all that jax transposes: inside jax.vjp / jax.grad in the body, or
   # anywhere in the grad modes (they differentiate the whole body)
   when=["all_to_all:tiled==False",
         "transform:transform==vjp | transform:transform==grad | all_to_all@grad,grad_remat,hessian"],
   reason="all_to_all's transpose rule (_all_to_all_transpose_rule) calls all_to_all with split_axis and concat_axis swapped and the same tiled=False, but untiled all_to_all removes the split axis and inserts a new one at concat_axis, which is not its own inverse with the axes swapped: the cotangent has the wrong shape whenever split_axis != concat_axis ('Expected cotangent type float32[1,1,3,6] but got float32[1,3,1,6]'). Forward, jvp and vmap are right. In an invalid program, a derivative transform in the body (jax.grad / jax.vjp), or the grad modes, transpose the untiled all_to_all while jax traces, and its wrongly shaped cotangent raises ValueError 'Expected cotangent type float32[1,1,3,1]{V:data} but got float32[1,1,1,3]{V:data}' before jax checks the program's own defect (an out_specs structure defect: harness/data/corpus/known/a2a_untiled_transform_invalid.json; also the grad modes of a program with a repeated ppermute source). Measured on 0.9.2, 0.10.2 and 0.12.0.",
   link="jax/_src/lax/parallel.py _all_to_all_transpose_rule; " + NONE + "'all_to_all transpose tiled=False cotangent'"),
 E(id="all-to-all-untiled-transpose-dot-general", repair="without_op", case="regressions/all_to_all_untiled_transpose_0_8", mode="grad", jax_versions=UNTIL_0_8,
   signatures=["unexpected_error|grad,grad_remat|lowering->TypeError", "unexpected_error|grad,grad_remat|*->TypeError",
               "shape|*|transform"],
   when=["all_to_all:tiled==False"],
   reason="The transpose-rule bug of all-to-all-untiled-transpose-shape before 0.9: the wrongly shaped cotangent reaches the next op's transpose, and jax raises TypeError there ('dot_general requires contracting dimensions to have the same shape, got (6,) and (18,).') instead of the cotangent type check of 0.9+. A derivative transform in the body whose last step is that all_to_all returns the wrongly shaped cotangent itself (0.8.1: jax.grad of a float32[1,3] gives a float32[1,1], harness/data/corpus/known/a2a_untiled_transform.json).",
   link="jax/_src/lax/parallel.py _all_to_all_transpose_rule; " + NONE + "'all_to_all transpose tiled=False', 'dot_general requires contracting dimensions shard_map'"),
 E(id="ppermute-multi-axis-order", case="ppermute_order", mode="jit", repair="mesh_order_axes", jax_versions=UNTIL_0_10,
   # the ppermute is the first op going wrong (a derivative transform's step: the transform)
   # the ppermute is the first op going wrong (a derivative transform's step: the transform);
   # where the probe cannot look inside a wrapper, an op after it: the rewrite decides
   signatures=["value|*|ppermute", "value|grad,grad_remat|*ppermute*", "value|*|transform", f"value|{RUN}|*"],
   when=["ppermute:axes_order==unordered"],
   reason="ppermute over a tuple of mesh axes listed out of mesh order, e.g. axis_name=('y', 'x') on an ('x', 'y') mesh, numbers the devices in mesh order, while axis_index(('y', 'x')) and all_gather(..., ('y', 'x')) number them in the listed order (major first); the perm pairs are axis_index values, so the wrong devices receive the data. The rewrite (axes in mesh order, perm renumbered) is checked in full. Later jax raises for this form (issue 15).",
   link=NONE + "'ppermute tuple axis_name order', 'ppermute multiple axes wrong devices'"),
 E(id="pshuffle-multi-axis-order", case="pshuffle_order", mode="jit", repair="mesh_order_axes", jax_versions=UNTIL_0_10,
   # the pshuffle is the first op going wrong (a derivative transform's step: the transform)
   signatures=["value|*|pshuffle", "value|grad,grad_remat|*pshuffle*", "value|*|transform", f"value|{RUN}|*"],
   when=["pshuffle:axes_order==unordered"],
   reason="pshuffle is ppermute underneath and numbers devices the same way for axes listed out of mesh order (see ppermute-multi-axis-order). The rewrite is checked in full.",
   link=NONE + "'pshuffle multiple axes order'"),
 # the wrong type starts at the grouped op; the checks and ops after it read it (an
 # out_specs P() accepted, a psum refused, a derivative transposed as if invariant): the
 # repair (a pcast to varying right after it, checked whole) decides what it caused
 *[E(id=f"grouped-{k}-claims-invariance", repair="vary_after", case=f"groups_vma_typed_{k}_0_6", mode="jit",
     jax_versions=SINCE_0_6,
     signatures=["missing_error|*|out_spec_replication", "missing_error|*|collective_vma", f"vma|*|{k}",
                 f"unexpected_error|{EVERY}|*->ValueError", f"wrong_error|{EVERY}|*->ValueError", f"value|{RUN}|*"],
     when=[f"{k}:n_groups>1"],
     reason="With check_vma=True, pmax with axis_index_groups of more than one group types its result as invariant over the named axes (jax.typeof shows no varying axes) although each group holds a different value: out_specs=P() is then accepted and jax returns one group's answer (harness/data/corpus/known/groups_vma.json), later collectives see the wrong varying axes (a psum over them is rejected as mixing varying and invariant axes), and a derivative taken after it transposes it as invariant: a grouped pmax in jax.vmap, then jax.grad of a pshuffle of it, gives -9 where -4.5 is right (harness/data/corpus/known/groups_vma_vmap_grad.json; with pcast(v0, 'data', to='varying') after the pmax jax gives -4.5). Shows on 0.6.0, 0.6.2, 0.7.1, 0.8.1, 0.10.2, 0.11.2, 0.12.0; 0.5.3 exposes no varying-axes type."
     if k == "pmax" else "As grouped-pmax-claims-invariance, for pmin.",
     link=NONE + f"'axis_index_groups vma invariant {k}'") for k in ("pmax", "pmin")],
 # old releases' bugs that later releases fixed: each entry's case is the regression case
 # (harness/data/corpus/regressions/, with its bisected range), so qualify names the bug there
 E(id="vmap-spmd-binop-vma-0-6", repair="without_op", case="regressions/vmap_spmd_rank0_mul_vma", mode="vmap_spmd", jax_versions=">=0.6,<0.10",
   signatures=["unexpected_error|vmap_spmd|*->ValueError"],
   when=["spmd_axis", "any:operands>1"],
   reason="vmap(shard_map, spmd_axis_name=A) makes a batched operand vary over A but not the other operand of a binary op (a constant, a replicated argument), and jax 0.6.0 .. 0.9.2 raise 'Primitive mul requires varying manual axes to match' instead of inserting the pvary (a batching-rule bug, fixed by 0.10.0: bisected).",
   link=NONE + "'vmap spmd_axis_name requires varying manual axes to match'"),
 E(id="vmap-spmd-pmean-vma-0-6", repair="without_op", case="regressions/vmap_spmd_pmean_div_vma", mode="vmap_spmd", jax_versions=">=0.6,<0.10,!=0.8.*",
   signatures=["unexpected_error|vmap_spmd|pmean->ValueError"],
   when=["spmd_axis", "pmean"],
   reason="vmap(shard_map, spmd_axis_name=A) of a pmean: the batching rule makes the sum vary over A but not the divisor, and jax 0.6.0 .. 0.9.2 raise 'Primitive div requires varying manual axes to match' (0.8 fails earlier: pmean-batching-rule-0-8); fixed by 0.10.0 (bisected).",
   link=NONE + "'vmap spmd_axis_name pmean div varying manual axes'"),
 E(id="vmap-spmd-pmean-rep-0-5", repair="without_op", case="regressions/vmap_spmd_pmean_varying_rep_types", mode="vmap_spmd", jax_versions=ONLY_0_5,
   signatures=["unexpected_error|vmap_spmd|*->Exception"],
   when=["spmd_axis", "pmean"],
   reason="vmap-spmd-pmean-vma-0-6 on jax 0.5.3, whose replication checker says it differently: Exception 'Primitive div requires argument replication types to match'.",
   link=NONE + "'requires argument replication types to match vmap spmd_axis_name pmean'"),
 E(id="spec-unknown-axis-keyerror-0-6", repair="without_mode", case="regressions/in_spec_unknown_axis_keyerror", mode="jit", jax_versions=">=0.4,<0.6.1",
   signatures=["wrong_error|*|spec_unknown_axis->KeyError", "wrong_error|eager|spec_unknown_axis->ValueError"],
   when=[],
   reason="jax 0.5.3 and 0.6.0 do not check up front that a spec names only mesh axes: the name falls through to a later lookup, a bare KeyError (the axis name) under tracing, and in eager on 0.5.3 NamedSharding's ValueError ('Resource axis: a of PartitionSpec(...) is not found in mesh'), which does not say which in_specs/out_specs entry is wrong; fixed by 0.6.1 (bisected), which raises the ValueError naming the spec.",
   link=NONE + "'shard_map in_specs unknown axis KeyError'"),
 E(id="out-spec-too-long-unchecked-0-6", repair="without_mode", case="regressions/out_spec_too_long_trailing_none", mode="jit", jax_versions=">=0.4,<0.6.1",
   signatures=["missing_error|*|out_spec_rank"],
   when=[],
   reason="out_specs longer than the output's rank (trailing None entries) are accepted silently on jax 0.5.3 and 0.6.0: only the named entries are checked; fixed by 0.6.1 (bisected).",
   link="the same check for in_specs came with jax-ml/jax#18951; " + NONE + "'out_specs too long'"),
 E(id="collective-over-auto-axis-vma-valueerror", repair="without_mode", case="regressions/collective_over_auto_axis", mode="jit", jax_versions=">=0.6,<0.8.2",
   signatures=["wrong_error|*|unbound_axis->ValueError"],
   when=["partial_manual"],
   reason="A collective over a mesh axis that axis_names leaves automatic raises an internal ValueError ('Axes mentioned in `vma` field of ShapedArray should be of type `Manual`') on jax 0.6.0 .. 0.8.1 instead of the unbound-axis NameError; fixed by 0.8.2 (bisected).",
   link=NONE + "'Axes mentioned in vma field of ShapedArray should be of type Manual'"),
 E(id="eager-partial-manual-out-specs-nameerror", repair="without_mode", case="regressions/eager_partial_manual_out_specs_structure_nameerror", mode="eager",
   jax_versions=">=0.8.2,<0.13,!=0.10.2,!=0.11.*",
   signatures=["wrong_error|eager|out_specs_structure->NameError"],
   when=["partial_manual"],
   reason="Eager partial-manual shard_map whose out_specs do not match its outputs raises NameError 'Found an unbound axis name' on jax 0.8.2 .. 0.10.1 instead of the out_specs structure ValueError (jit raises the right one); broken in 0.8.2, fixed by 0.10.2 (bisected), and broken again in 0.12.0 (passes on 0.11.2: qualify of the corpus over 0.10.2, 0.11.2, 0.12.0).",
   link=NONE + "'eager shard_map partial manual unbound axis name out_specs'"),
 E(id="vmap-spmd-binop-rep-0-5", repair="without_op", case="regressions/vmap_spmd_add_axis_index_rep", mode="vmap_spmd", jax_versions=ONLY_0_5,
   signatures=["unexpected_error|vmap_spmd|*->Exception"],
   when=["spmd_axis", "any:operands>1"],
   reason="vmap-spmd-binop-vma-0-6 on jax 0.5.3, whose replication checker says it differently: Exception 'Primitive add requires argument replication types to match'.",
   link=NONE + "'requires argument replication types to match vmap spmd_axis_name'"),
 E(id="all-to-all-axis-out-of-range-unnamed", repair="without_op", case="a2a_axis_oob_0_11", mode="jit", jax_versions=">=0.11,<0.13",
   signatures=["wrong_error|*|collective_param->ValueError"],
   when=["all_to_all"],
   klass="policy",
   reason="all-to-all-axis-out-of-range-indexerror as jax 0.11.2 and 0.12.0 have it: the right exception type now, but the message ('axis 1 is out of bounds for array of dimension 1') does not say whether split_axis or concat_axis is out of range.",
   decision="policy (message quality): a ValueError raised while tracing; only the wording leaves the axis unnamed.",
   link=NONE + "'all_to_all concat_axis out of bounds message'"),
 E(id="psum-scatter-axis-out-of-range-unnamed", repair="without_op", case="ps_axis_oob_0_11", mode="jit", jax_versions=">=0.11,<0.13",
   signatures=["wrong_error|*|collective_param->ValueError"],
   when=["psum_scatter"],
   klass="policy",
   reason="psum-scatter-axis-out-of-range-indexerror as jax 0.11.2 and 0.12.0 have it: a ValueError now, whose message ('axis 1 is out of bounds for array of dimension 1') does not name scatter_dimension.",
   decision="policy (message quality): a ValueError raised while tracing; only the wording leaves the parameter unnamed.",
   link=NONE + "'psum_scatter scatter_dimension out of bounds message'"),
 # Reduced / unreduced body values under eager shard_map (measured with each case's eager mode
 # on 0.9.2, 0.10.0, 0.10.1, 0.10.2, 0.11.2, 0.12.0: every one raises; jit runs them all)
 E(id="eager-unreduced-intermediate", decision="bug, re-checked as a policy candidate (eager unreduced with partial manual): on 0.10.2 the partial-manual path raises NotImplementedError 'unreduced/reduced can only be passed to out_specs when shard_map is in full manual mode ... Please file a bug at https://github.com/jax-ml/jax/issues' (shard_map.py _check_unreduced_specs, applied to eager's per-primitive intermediates), so jax itself calls it a bug; only the nested-shard_map path's 'Eager shard_map + unreduced/reduced + partial manual is not implemented. Please wrap your shard_map in jax.jit' (and 0.9.2's, which the eager mode reports unsupported) is a refusal on purpose, and this entry does not match it.", repair="without_op", case="eager_unreduced_auto", mode="eager", jax_versions=SINCE_0_9,
   signatures=["unexpected_error|eager|pcast->ValueError", "unexpected_error|eager|pcast->NotImplementedError",
               "unexpected_error|eager|psum->ValueError", "unexpected_error|eager|psum->NotImplementedError"],
   when=["pcast:to==unreduced", "explicit_full_manual==False"],
   reason="Eager shard_map runs the body one primitive at a time, each in a shard_map whose out_specs carry the intermediate's type; a value made unreduced by pcast(to='unreduced') then hits the rule meant for user specs ('unreduced in out_specs P(None, unreduced={x}) can only be used when the mesh ... contains axis names all of type Explicit', 0.10-0.12; 'Eager shard_map + unreduced/reduced + partial manual is not supported' partial manual), unless every axis is manual and Explicit. jax.jit runs the same program with the oracle's values. (0.9.2 does not implement eager unreduced / reduced at all, NotImplementedError 'wrap your shard_map in jax.jit': the eager mode reports those programs unsupported there, harness/run/compat.py _eager_ur.)",
   link=NONE + "'eager shard_map unreduced', 'unreduced in out_specs can only be used when the mesh'"),
 E(id="eager-reduced-intermediate", repair="without_op", case="eager_reduced_auto", mode="eager", jax_versions=SINCE_0_9,
   # (wrong_error: an invalid program whose defect jax checks after the body, eager raising at the pcast first)
   signatures=["unexpected_error|eager|pcast->ValueError", "unexpected_error|eager|pcast->NotImplementedError",
               "wrong_error|eager|*->ValueError"],
   when=["pcast:to==reduced", "explicit_full_manual==False"],
   reason="As eager-unreduced-intermediate, for a value made reduced by pcast(to='reduced') ('reduced in out_specs ... can only be used when the mesh ... Explicit'; on a mixed mesh the internal guard 'Using *pspec is dangerous when PartitionSpec has non-empty unreduced/reduced set', raised at the pcast, also in an invalid program before its out_specs replication error).",
   link=NONE + "'eager shard_map reduced pcast'"),
 E(id="eager-all-gather-reduced-intermediate", repair="without_op", case="eager_all_gather_reduced_auto", mode="eager", jax_versions=SINCE_0_9,
   signatures=["unexpected_error|eager|all_gather->ValueError", "unexpected_error|eager|all_gather->NotImplementedError",
               "unexpected_error|eager|pcast->ValueError", "unexpected_error|eager|pcast->NotImplementedError",
               # (an invalid program whose defect jax checks after the body, eager raising at the all_gather first)
               "wrong_error|eager|*->ValueError"],
   when=["all_gather:to==reduced", "explicit_full_manual==False"],
   reason="As eager-unreduced-intermediate, for the reduced result of all_gather(to='reduced').",
   link=NONE + "'eager shard_map all_gather reduced'"),
 # measured with the case's gspmd mode: runs on 0.9.2, 0.10.0, 0.10.1; fails on 0.10.2, 0.11.2, 0.12.0
 E(id="gspmd-unreduced-output", repair="without_op", case="gspmd_unreduced_output", mode="gspmd", jax_versions=">=0.10.2,<0.13",
   signatures=["unexpected_error|gspmd|lowering->AssertionError"],
   when=["unreduced_out_spec", "pcast:to==unreduced"],
   reason="With jax_use_shardy_partitioner=False (GSPMD), a shard_map whose output is unreduced (out_specs P(None, unreduced={'x'}) on an Explicit mesh) fails while lowering with an internal AssertionError ('Expected last op to be sdy.sharding_constraint, but got: stablehlo.custom_call and output type=i32[2]{U:x}'); Shardy runs it with the oracle's per-device parts, and GSPMD did up to 0.10.1.",
   link=NONE + "'Expected last op to be sdy.sharding_constraint', 'gspmd unreduced'"),
 E(id="eager-unreduced-size-1-axis", repair="without_op", case="eager_unreduced_size_1", mode="eager", jax_versions=RANGE_EAGER_SIZE_1,
   signatures=["unexpected_error|eager|pcast->AssertionError"],
   when=["pcast:to==unreduced", "manual_size_1"],
   reason="Eager shard_map on an all-Explicit mesh whose manual axes all have size 1 fails at pcast(to='unreduced') with an internal AssertionError ('Expected last op to be sdy.sharding_constraint, but got: stablehlo.broadcast_in_dim and output type=f32[1,2]{U:x}'); the same program on a size-2 axis, and under jax.jit, runs.",
   link=NONE + "'Expected last op to be sdy.sharding_constraint broadcast_in_dim unreduced'"),

 # ---- how a program meets its shard_map: closures, effects (issue 56 items 2 and 6) ----
 E(id="vmap-spmd-outer-closure", case="vmap_spmd_outer_closure", mode="vmap_spmd", jax_versions=">=0.10.2,<0.13",
   signatures=["unexpected_error|vmap_spmd|*->AssertionError", "unexpected_error|vmap_spmd|*->ValueError", "shape|vmap_spmd|*"],
   when=["closure==outer"], repair="passed_closures",
   reason="jax.vmap(f, spmd_axis_name=A) where f makes a shard_map whose body closes over a value of f that the vmap batches (a1 below: f's argument, not the shard_map's): jax raises AssertionError 'ManualAxisType(varying=frozenset({A}), ...)' in batching.py _batch_jaxpr2 (core.get_mat); where the closed-over value meets a collective it may instead fail to lower ('size of operand dimension 0 (2) is not equal to 1 or size of result dimension 0 (1)'); and a body that returns the closed-over value itself gives it batched twice (float32[4,4] for a batch of 2 split over A of size 2: the batch axis split over A once more, fuzz seed 0, 60 s, as jax-ml/jax#17874 reports). The same value given to the shard_map as an argument with in_spec P() (the rewrite) runs, and so do plain vmap, jit, eager and the grad modes. A closed-over value is invariant along every manual axis (shard_map.md: the body sees it whole on every device), so the program is valid. Measured on 0.10.2 and 0.12.0 (0.11 not measured). Found by shardfuzz (closure features, issue 56).",
   link="jax-ml/jax#17874 (shard_map with a closed over argument produces the wrong batched axis size when using spmd_axis_name; open), the same closure-under-spmd_axis_name batching path"),
 E(id="gspmd-partial-manual-debug-callback", case="gspmd_partial_manual_callback", mode="gspmd", jax_versions=">=0.10.2,<0.13",
   signatures=["unexpected_error|gspmd|*->JaxRuntimeError"],
   when=["effects", "partial_manual"], repair="without_effects",
   reason="jax.debug.callback (or jax.debug.print) inside a partial-manual shard_map (axis_names a strict subset of the mesh axes), jit with the GSPMD partitioner (jax_use_shardy_partitioner=False): compiling raises 'UNIMPLEMENTED: PartitionId instruction is not supported for SPMD partitioning since the meaning is ambiguous'. The partial-auto lowering of a debug callback (debugging.py _debug_callback_partial_auto) runs it under lax.axis_index of the automatic axes in a nested shard_map, which GSPMD cannot partition; Shardy (the default) runs it, as do eager and a full-manual shard_map under GSPMD. The program without its effects (the rewrite) runs. Measured on 0.10.2 and 0.12.0 (0.11 not measured). Found by shardfuzz (effect features, issue 56).",
   link="jax-ml/jax#25887 (fix jax.debug.print/callback under partial auto: the axis_index-in-cond lowering, fixed for Shardy) and jax-ml/jax#25705 (open: debug.print in a partial-auto shard_map under GSPMD)"),
 E(id="eager-debug-callback-block-pairs", case="eager_callback_block_pairs", mode="eager", jax_versions=">=0.10.2,<0.13",
   signatures=["value|eager|debug_callback", "value|eager|debug_print"],
   when=["effects"], repair="without_effects",
   reason="An eager (un-jitted) shard_map calls jax.debug.callback / jax.debug.print once per element of zip(*[list(arg) for arg in args]) (debugging.py _debug_callback_eager_rule, _debug_print_eager_rule): each argument contributes one block per distinct value along the axes it varies over, so arguments varying over different axes are paired wrongly and the rest are dropped. Here callback(axis_index('data'), axis_index('model'), a0) with a0 split over both axes: the calls pass (0, 0, a0 of device (0, 0)) and (1, 1, a0 of device (0, 1)); no device holds the second. jax's docstring allows a callback to be dropped, duplicated or reordered, not to receive values of different devices in one call; jit runs one call per device with that device's values. The program without its effects (the rewrite) runs. Measured on 0.10.2 and 0.12.0 (0.11 not measured). Found by shardfuzz (effect features, issue 56).",
   link=NONE + "'_debug_callback_eager_rule', 'eager shard_map debug callback wrong device values', 'debug print eager shard_map blocks'"),
 E(id="vmap-device-put-explicit-sharding", case="vmap_device_put_explicit", mode="vmap", jax_versions=">=0.10.2,<0.13",
   signatures=["unexpected_error|vmap|*->ValueError", "unexpected_error|vmap_spmd|*->ValueError"],
   when=["device_put_explicit"], repair="committed_placements",
   reason="jax.vmap of a function that calls jax.device_put(x, NamedSharding(mesh, P('x'))) on a mesh whose axis 'x' is Explicit: the batching rule applies the unbatched spec to the batched array, so 'x' lands on the batch dimension and jax raises 'Sharding spec ('x',) implies that array axis 0 is partitioned 4 times, but does not evenly divide the dimension size 2' (or shards the batch dimension where it divides). jax.vmap of the same device_put on an Auto mesh, and of jax.sharding.reshard on the Explicit one, put the batch dimension first. Here the shard_map's argument is placed that way inside the called function; committed before the call (the rewrite), vmap runs it. Minimal: jax.jit(jax.vmap(lambda a: jax.device_put(a, NamedSharding(mesh, P('x')))))(np.zeros((3, 4))) with mesh = jax.make_mesh((2,), ('x',), axis_types=(AxisType.Explicit,)) under jax.set_mesh. Measured on 0.10.2 and 0.12.0. Found by shardfuzz (placement features, issue 56).",
   link=NONE + "'vmap device_put NamedSharding explicit', 'device_put batching rule sharding batch dimension', 'implies that array axis 0 is partitioned vmap'"),
 E(id="all-gather-untiled-free-explicit-type", case="all_gather_untiled_free_explicit", mode="jit", jax_versions=">=0.10.2,<0.13",
   signatures=["sharding|*|all_gather", "unexpected_error|*|all_gather->ValueError"],
   when=["free_explicit_placement", "all_gather:tiled==False"], repair="without_free_explicit",
   reason="On a mesh whose axes are all Explicit, a partial-manual shard_map (axis_names={'x'}) whose argument is placed over the free Explicit axis 'y' (its block typed float32[4,8@y]{V:x}: the free axis' sharding joins the body's types) and an untiled all_gather over 'x' (a new leading dimension): jax types the result float32[2,4@y,8], the sharding still at the old dimension index (the new dimension not accounted for); the output's type says P('x', 'y', None) where its last dimension is the one split over 'y' (P('x', None, 'y')). Where the old index is the new dimension's size (a value split over 'y' on dimension 0) jax raises instead: 'Sharding spec ('y',) implies that array axis 0 is partitioned 4 times, but does not evenly divide the dimension size 2'. A tiled all_gather keeps the dimensions and is typed right; so is the untiled one without the free Explicit placement (the rewrite). Measured on 0.10.2 and 0.12.0. Found by shardfuzz (placement features, issue 56).",
   link=NONE + "'all_gather tiled=False explicit sharding', 'all_gather sharding rule new axis explicit', 'partial manual shard_map explicit free axis all_gather'"),
 E(id="psum-scatter-free-explicit-assertion", case="psum_scatter_free_explicit", mode="jit", jax_versions=">=0.10.2,<0.11",
   signatures=["unexpected_error|*|psum_scatter->AssertionError", "unexpected_error|*|lowering->AssertionError",
               "unexpected_error|*|psum_scatter->ValueError", "unexpected_error|*|lowering->ValueError"],
   when=["free_explicit_placement", "psum_scatter"], repair="without_free_explicit",
   reason="On a mesh whose axes are all Explicit, a partial-manual shard_map (axis_names={'x'}) whose argument is placed over the free Explicit axis 'y' (placed P('x', 'y'): its block typed float32[4,8@y]{V:x}) and a psum_scatter over 'x' of it: jit and eager raise AssertionError '(0, P(None, 'y'))' on 0.10.2, ValueError 'Length of sharding.spec (2) must be equal to [the] ndim (0)' of a scalar aval on 0.12.0 (abstract evaluation types it); the same psum_scatter without the free Explicit placement (the rewrite) runs. Measured on 0.10.2; on 0.12.0 the psum_scatter raises the ValueError without the free Explicit placement too (in a partial-manual shard_map on an all-Explicit mesh), a broader bug this entry does not explain. Found by shardfuzz (placement features, issue 56).",
   link=NONE + "'psum_scatter explicit sharding AssertionError', 'reduce_scatter explicit axis partial manual shard_map'"),
 E(id="eager-debug-callback-explicit-mesh", case="eager_callback_explicit_constant", mode="eager", jax_versions=">=0.10.2,<0.13",
   # (the lowering of a callback in a shard_map that leaves an Explicit axis free closes over
   # its operands the same way: harness/data/corpus/known/debug_callback_free_explicit_lowering.json)
   signatures=["unexpected_error|eager|*->NotImplementedError", "unexpected_error|*|lowering->NotImplementedError"],
   when=["effects", "explicit_axis"], repair="without_effects", klass="policy",
   reason="An eager (un-jitted) shard_map on a mesh with an Explicit axis, whose body calls jax.debug.callback (or print) of a value the body makes itself (jnp.full((), 1) here: nothing is closed over): jax raises NotImplementedError 'Closing over inputs to shard_map where the input is sharded on `Explicit` axes is not implemented. As a workaround, please pass those inputs as an argument to shard_map', the eager callback rule treating the body's own value as a closed-over input. jit runs it, and so does eager without the callback (the rewrite). Measured on 0.10.2 and 0.12.0. The same NotImplementedError comes from the lowering (jit, GSPMD, vmap, the derivative modes, lowering) of a callback in a shard_map that leaves an Explicit axis out of its manual axes: the partial-manual rule (debugging.py _debug_callback_partial_auto) runs the callback in a nested shard_map(in_specs=()) that closes over the callback's operands, typed on the Explicit axes (harness/data/corpus/known/debug_callback_free_explicit_lowering.json: an Explicit mesh data=2, model=2, manual 'model', a callback of -x; with the free axis Auto it runs; measured on 0.10.2). Found by shardfuzz (effect features, issue 56, fuzz seed 1, 300 s).",
   decision="policy (a limitation, not a wrong result): jax refuses with an explicit NotImplementedError, the documented limitation for values closed over on Explicit axes (shard_map's closure check, jax-ml/jax#29162), which its eager debug callback rule reaches with the body's own values; it never gives a wrong value, jit runs the same program, and the message names the workaround. Its wording (a closure where there is none) is a message-quality matter.",
   link=NONE + "'eager shard_map debug callback Explicit', 'Closing over inputs to shard_map where the input is sharded on Explicit axes debug'; related: jax-ml/jax#29162 (the limitation for real closures)"),
 E(id="debug-callback-several-free-axes", case="debug_callback_several_free_axes", mode="jit", jax_versions=">=0.10.2,<0.13",
   signatures=["unexpected_error|*|lowering->TypeError"],
   when=["effects", "several_free_axes"], repair="without_effects",
   reason="jax.debug.callback (or jax.debug.print) in the body of a shard_map that leaves two or more mesh axes out of its "
          "manual axes fails to lower with TypeError 'axis_index() takes 1 positional argument but 2 were given', in every mode "
          "that lowers the shard_map (jit, GSPMD, vmap, the derivative modes, lowering; eager runs it): its lowering rule for "
          "a partial-manual context (jax/_src/debugging.py _debug_callback_partial_auto) calls lax.axis_index(*partial_auto), "
          "spreading the list of free axes as positional arguments, where axis_index takes one axis name or a tuple of them. "
          "With one free axis it runs. The program without the effects (the rewrite) runs in every mode. Measured on 0.10.2.",
   decision="bug: a TypeError from jax's own internal call, for a program the shard_map and debug.callback docs allow "
            "(callbacks are documented inside shard_map, and partial-manual shard_map with axis_names is documented).",
   link="jax/_src/debugging.py _debug_callback_partial_auto; " + NONE + "'debug.callback partial auto axis_index positional', 'debug.print shard_map axis_names TypeError axis_index'"),
 E(id="eager-debug-callback-size-1-manual-free-explicit", case="eager_debug_callback_size1_manual_free_explicit", mode="eager",
   jax_versions=">=0.10.2,<0.13",
   signatures=["unexpected_error|eager|*->ValueError"],
   when=["effects", "a_manual_axis_size_1", "free_explicit_axis"], repair="without_effects",
   reason="An eager (un-jitted) shard_map with a manual axis of size 1, on a mesh with an Explicit axis it leaves free, "
          "whose body calls jax.debug.callback or print: jax raises ValueError 'For primitive unstack, context mesh "
          "AbstractMesh('data': 2, 'model': 1, axis_types=(Explicit, Manual)) should match the aval mesh AbstractMesh('data': 2, "
          "'model': 1, axis_types=(Explicit, Explicit)) for shape int32[1@model]': the eager callback unstacks the value "
          "along the size-1 manual axis with a type that still names it Explicit (also beside a manual axis of size 8: "
          "'axis_types=(Manual, Manual, Explicit)'). With the manual axis of size 2, or the free "
          "axis Auto, eager runs it (or raises eager-debug-callback-explicit-mesh's NotImplementedError); without the callback "
          "(the rewrite) it runs. Measured on 0.10.2.",
   decision="bug: an internal consistency error (two meshes jax itself made disagree) for a program the docs allow; not "
            "a documented limitation.",
   link=NONE + "'For primitive unstack, context mesh should match the aval mesh', 'eager shard_map debug print Explicit size 1'"),
 E(id="ppermute-perm-array-rejected", case="ppermute_perm_array_0_12", mode="jit", jax_versions=">=0.12,<0.13", klass="policy",
   repair="without_op",
   signatures=["unexpected_error|*|ppermute->TypeError", f"wrong_error|{EVERY},jvp,linearize,hessian|*->TypeError"],
   when=["ppermute:perm_form==array"],
   reason="jax 0.12.0's ppermute refuses a perm given as a NumPy array: TypeError '`perm` passed to `jax.lax.ppermute` must be "
          "a list or a tuple. Got perm of type <class 'numpy.ndarray'>' (parallel.py _ppermute_is_async), in every mode; "
          "0.10.2 takes the array as the pairs it holds (the oracle's reading). Measured on 0.10.2 and 0.12.0.",
   decision="policy: the docstring asks for 'perm: list of pairs of ints', and 0.12 enforces that type with an explicit "
            "TypeError naming it; an API tightening, not a wrong result.",
   link="jax/_src/lax/parallel.py _ppermute_is_async (0.12.0)"),
 E(id="axis-name-list-accepted", case="pmax_axes_list_0_12", mode="jit", jax_versions=">=0.12,<0.13", klass="policy",
   repair="without_op",
   signatures=["missing_error|*|collective_param"],
   when=["any:axes_form==list"],
   reason="jax 0.12.0 takes a list of axis names where 0.10.2 refuses it as unhashable: pmax(x, ['x']) runs (parallel.py: "
          "'axis_name = tuple(axis_name)' for a tuple or a list), where the oracle predicts 0.10.2's error for an axis_name "
          "that is not a hashable object. Measured on 0.10.2 and 0.12.0.",
   decision="policy: the docstring still asks for 'hashable Python object[s]'; accepting a list as a tuple of names is a "
            "leniency, with the tuple's meaning, never a wrong result.",
   link="jax/_src/lax/parallel.py pmax / psum (0.12.0: tuple(axis_name) of a list)"),
 E(id="pmax-pmin-mixed-vma-axes-rejected", case="pmax_mixed_vma_axes_0_12", mode="jit", jax_versions=">=0.12,<0.13", klass="policy",
   repair="without_op",
   signatures=["unexpected_error|*|pmax->ValueError", "unexpected_error|*|pmin->ValueError", f"wrong_error|{EVERY},jvp,linearize,hessian|*->ValueError"],
   when=["pmax:axes_vma==mixed | pmin:axes_vma==mixed"],
   reason="jax 0.12.0's pmax and pmin over several axes refuse an operand that varies along some of them and is invariant "
          "along others: ValueError 'jax.lax.pmax can only accept axis_name which corresponds to one of varying, unreduced, "
          "reduced or invarying state of the input. Got input type: float32[1,1]{V:data}, axes: ('data', 'model') and input "
          "state: {'invarying', 'varying'}', in every mode, and before an invalid program's own defect (a wrong error). "
          "0.10.2 reduces it as the oracle does (the invariant axes' copies are equal, so the reduction over them is the "
          "operand). Measured on 0.10.2 and 0.12.0.",
   decision="policy: an explicit refusal whose message names the rule (each axis must be in one state); the docs do not "
            "promise mixed states, and no wrong value results. The workaround is a pcast to varying first.",
   link="jax/_src/lax/parallel.py (0.12.0) pmax / pmin state check"),
 E(id="debug-callback-empty-manual-region", case="debug_callback_empty_manual_region", mode="grad", jax_versions=">=0.10.2,<0.13",
   abort="spmd_partitioner.cc:*side-effect HLO cannot have a replicated sharding",
   signatures=["unexpected_error|grad,grad_remat,jvp,linearize,hessian|lowering->JaxRuntimeError"],
   when=["effects"], repair="without_effects",
   reason="jax.debug.callback (or jax.debug.print) in a full-manual shard_map, with Shardy (the default), where the "
          "region holding the callback ends up with no operands and no results: the callback reads no argument of the "
          "shard_map (only axis_index, a constant, a value closed over, a zero-size value jax folds to a constant) and "
          "the shard_map's outputs are not used, as in jax.grad / jax.vjp / jax.linearize, whose forward shard_map jit's "
          "DCE strips to the callback alone (and jax.jvp where no output depends on a differentiated argument). Its "
          "lowering (debugging.py debug_callback_lowering, fully manual + Shardy) gives the custom-call the replicated "
          "<@empty_mesh, []> sharding of callback._get_sdy_array_list_for_callbacks and relies on the enclosing "
          "sdy.manual_computation to make it manual; with no operands and no results nothing does, and in a module of "
          "more than one partition XLA's SPMD partitioner aborts: 'INTERNAL: RET_CHECK failure (spmd_partitioner.cc:6466 "
          "on 0.10.2) !HasReplicatedSharding(hlo->sharding()) || CanSideEffectingHaveReplicatedSharding(hlo) side-effect "
          "HLO cannot have a replicated sharding'. The same without AD: jax.jit(lambda v: (g(), v * 2)[1]) of a sharded v, "
          "g = jax.shard_map(lambda: (jax.debug.callback(cb), ())[1], in_specs=(), out_specs=()). GSPMD "
          "(jax_use_shardy_partitioner=False, MANUAL OpSharding) runs both, a callback reading an argument keeps the "
          "operand and runs, and the program without its effects (the rewrite) runs in every mode. Measured on 0.10.2. "
          "Found by shardfuzz (effect features, issue 56).",
   decision="bug: an internal RET_CHECK from XLA for a program the docs allow: jax.debug.callback is documented to "
            "follow the transformations' pure semantics ('the effect could be dropped, duplicated, or potentially "
            "reordered'), to be 'innocuous' and to 'change the JAX computation as little as possible', and its lowering "
            "says a fully manual shard_map 'has per-device semantics, so we run the callback on each device'; the same "
            "program compiles without the callback, with an argument read by it, or under GSPMD.",
   link="jax/_src/debugging.py debug_callback_lowering, jax/_src/callback.py _get_sdy_array_list_for_callbacks; "
        + NONE + "'side-effect HLO cannot have a replicated sharding', 'debug callback shard_map grad RET_CHECK', "
        "'CanSideEffectingHaveReplicatedSharding'"),
 E(id="pcast-reduced-closed-over-value", case="pcast_reduced_closed_over", mode="jit", jax_versions=">=0.10.2,<0.13",
   signatures=["unexpected_error|*|pcast->AssertionError"],
   when=["closure", "pcast:to==reduced"], repair="passed_closures",
   reason="jax.lax.pcast(c, 'x', to='reduced') of a value c the shard_map body closes over (a value of the called function, traced by jit: invariant along every manual axis, as an argument with in_spec P() is) on an all-Explicit mesh: jax raises AssertionError 'ManualAxisType(varying=frozenset(), unreduced=frozenset(), reduced=frozenset({'x'}))' in jit, abstract evaluation and lowering; the same value given to the shard_map as an argument with in_spec P() (the rewrite) is cast to reduced and back. Minimal: jax.jit(lambda a, c: jax.shard_map(lambda ab: ab + jax.lax.pcast(jax.lax.pcast(c, 'x', to='reduced'), 'x', to='varying'), in_specs=P('x'), out_specs=P('x'))(a)) under jax.set_mesh of an Explicit mesh. Measured on 0.10.2 and 0.12.0. The same for a NumPy constant the body closes over (jnp.asarray(C) in the body, or a Python float), on any mesh (an Auto mesh of 8, no set_mesh: AssertionError 'ManualAxisType(... reduced=frozenset({'data'}))' in abstract, jit, GSPMD, the derivative modes and lowering; harness/data/corpus/known/pcast_reduced_closed_over_numpy.json, measured on 0.10.2); a value the body makes itself (jnp.zeros, c + c) is cast, so the constant's type, made outside the manual context, is what _preduced_abstract_eval trips on (core.get_mat `assert mat.empty`).",
   link=NONE + "'pcast reduced closed over shard_map AssertionError ManualAxisType', 'closure reduced pcast shard_map'"),
 # ---- (end of the block) ----
]

# ---- issue 56 (the call's forms, the parameters' forms, transformations under every flag) ----
# The derivative modes jvp, linearize and hessian (harness/run/modes_transformed.py) meet the
# grad modes' known bugs. One root cause, one entry: the entries below name them in their
# signatures too, all three where the bug is in the forward pass or a JVP rule, hessian alone
# (forward over reverse) where it is in a transpose rule.
_DERIVATIVE_TOO = {
    "jvp,linearize,hessian": ("negative-scatter-dimension", "negative-all-to-all-split-axis", "negative-all-to-all-concat-axis",
                              "zero-size-tiled-all-gather", "zero-size-shardy-export", "pmax-no-differentiation-rule",
                              "pmin-no-differentiation-rule", "bf16-partial-manual-allreduce-abort",
                              "ppermute-multi-axis-order", "pshuffle-multi-axis-order",
                              # (a jax.grad / jax.vjp in the body transposes it in every mode)
                              "all-to-all-untiled-transpose-shape",
                              # (the untiled shape rule is the forward pass's)
                              "negative-all-to-all-split-axis-untiled-shape", "negative-all-to-all-concat-axis-untiled-shape"),
    "hessian": ("all-to-all-untiled-transpose-dot-general",),
}
for _modes, _ids in _DERIVATIVE_TOO.items():
    for _e in entries:
        if _e["id"] in _ids:
            _e["signatures"] = [s.replace("grad,grad_remat", f"grad,grad_remat,{_modes}") for s in _e["signatures"]]
# every mode with the derivative modes: the patterns below name them (no pattern names every
# mode and any op at once)
EVERY_D = EVERY + ",jvp,linearize,hessian"
entries += [
 # (measured on jax 0.10.2 and 0.12.0, the cases in every mode: pmax / pmin over () and a negative
 # pswapaxes axis run on 0.12.0; the others show on both)
 *[E(id=f"{k}-empty-axes", case=f"{k}_empty_axes", mode="jit", jax_versions=">=0.10,<0.11", repair="without_op",
     signatures=[f"unexpected_error|*|{k}->ValueError", f"wrong_error|{EVERY_D}|*->ValueError"],
     when=[f"{k}:n_axes==0", "check_vma==True"],
     reason=f"jax.lax.{k} over no axes, axis_name=(), raises ValueError 'psum is a variant->invariant collective ... Got axes=()' "
            f"under check_vma, in every mode: psum and pmean return their operand there (parallel.py: 'if not axes: return x'), "
            f"{k} binds {k}_p with axes=() and its abstract eval (the psum_invariant rule) finds none of the (no) axes varying; "
            "over no axes the reduction is the operand itself, as the oracle predicts (a group of one).",
     link="https://github.com/jax-ml/jax/issues/19720 (degenerate axis_name=() behaves inconsistently across collectives)")
   for k in ("pmax", "pmin")],
 E(id="all-gather-untiled-empty-axes", case="all_gather_untiled_empty_axes", mode="jit", jax_versions=SINCE_0_10,
   # (the op as the local ops of its meaning: what follows its wrong shape, later shape
   # checks and the out_specs' rank, is checked there)
   repair="local_empty_axes",
   signatures=["shape|*|all_gather", f"unexpected_error|{EVERY_D}|*->ValueError", f"wrong_error|{EVERY_D}|*->ValueError",
               f"missing_error|{EVERY_D}|*", "value|*|all_gather", "lowering|lowering|*"],
   when=["all_gather:n_axes==0", "all_gather:tiled==False"],
   reason="jax.lax.all_gather(x, (), axis=k, tiled=False) returns x itself: _all_gather shortcuts an empty axis_name ('if not "
          "axis_name: return x') before the untiled shape rule its docstring states ('a new axis of size axis_size in position "
          "axis'), so the result lacks the new dimension of size 1 (a group of one), and later shapes, the out_specs' rank check "
          "and values follow the wrong shape.",
   link="https://github.com/jax-ml/jax/issues/19720 (degenerate axis_name=() behaves inconsistently across collectives)"),
 E(id="psum-scatter-untiled-empty-axes", case="psum_scatter_untiled_empty_axes", mode="jit", jax_versions=SINCE_0_10,
   # (the op as the local ops of its meaning: what follows its wrong shape, later shape
   # checks and the out_specs' rank, is checked there)
   repair="local_empty_axes",
   signatures=["shape|*|psum_scatter", f"unexpected_error|{EVERY_D}|*->ValueError", f"wrong_error|{EVERY_D}|*->ValueError",
               f"missing_error|{EVERY_D}|*", "value|*|psum_scatter", "lowering|lowering|*"],
   when=["psum_scatter:n_axes==0", "psum_scatter:tiled==False"],
   reason="jax.lax.psum_scatter(x, (), scatter_dimension=d, tiled=False) returns x itself ('if not axes: return x'): untiled, the "
          "documented result removes the scatter dimension, which must have the group's size (1 over no axes); jax neither removes "
          "it nor checks its size, so a dimension of size 1 stays and one of another size raises nothing.",
   link="https://github.com/jax-ml/jax/issues/19720 (degenerate axis_name=() behaves inconsistently across collectives)"),
 E(id="pbroadcast-string-axis-name", case="pbroadcast_string_axis", mode="abstract", jax_versions=SINCE_0_10,
   repair="without_op",
   signatures=["unexpected_error|*|pbroadcast->NameError", f"wrong_error|{EVERY_D}|*->NameError"],
   when=["pbroadcast:forms"],
   reason="jax.lax.pbroadcast(x, 'data', 0), the axis name as a string (its docstring: 'axis_name: hashable Python object used to "
          "name a pmapped axis'), checks each character of it as an axis name: NameError 'Found an unbound axis name: d' (the "
          "message also names ppermute); given ('data',) it runs. The oracle takes the string as the one axis it names.",
   link=NONE + "'pbroadcast axis_name string', 'pbroadcast unbound axis name ppermute'"),
 E(id="negative-pswapaxes-axis", case="pswapaxes_negative_axis", mode="jit", repair="nonnegative_axes", jax_versions=">=0.10,<0.11",
   # (a negative axis of -1 reaches XLA as a huge split dimension: MLIRError 'split dimension has
   # size 25769803777, expected to be a multiple of split_count 4')
   signatures=["unexpected_error|*|pswapaxes->ValueError", "unexpected_error|*|lowering->ValueError", f"wrong_error|{EVERY_D}|*->ValueError",
               f"wrong_error|{EVERY_D}|*->MLIRError",
               "unexpected_error|*|pswapaxes->MLIRError", "unexpected_error|*|lowering->MLIRError",
               "value|*|pswapaxes", "crash|*|crash", "timeout|*|timeout"],
   when=["pswapaxes:axis<0"],
   reason="jax.lax.pswapaxes with a negative axis binds all_to_all with it as split and concat axis unnormalised: lowering fails "
          "StableHLO verification ('split_dimension ... non-negative'); the pswapaxes form of negative-all-to-all-split-axis (the "
          "same root cause: all_to_all forwards negative axes, jax-ml/jax#19720), recorded apart because that entry names "
          "all_to_all ops only. The rewrite (the same axis, non-negative) is checked in full.",
   link="https://github.com/jax-ml/jax/issues/19720 (fixed upstream by jax-ml/jax#38998 for all_to_all)"),
]
# ---- end of issue 56's block ----

HEADER = """# Known divergences between jax and the documented shard_map semantics shardfuzz checks,
# built by scripts/build_known_divergences.py (edit there). An entry names the divergences
# its bug may cause (harness/judge/known.py: the kind literal, the mode where the bug
# shows, the buggy op in the divergent value's dependency cone, or for an error the op
# that raises; a crash by the check it aborts at), and explains one when its repair (the
# program without the bug: a rewrite that keeps every op, the program without the buggy
# op, or the mode left out) no longer shows it (harness/judge/repair.py): whatever the
# repaired program still shows is new. Class `policy`: jax's limitations, feature requests
# and message wording, reported apart, never as bugs. Each entry has its own case, an
# asserting reproducer of its own signature (exit 1 while the bug is there, 0 once jax is
# fixed or the bug repaired) and a version range.
"""


def bug_decision(e: dict) -> str:  # type: ignore[type-arg]
    """Why a bug entry is a bug (re-checked against jax's docs; a policy entry says its own)."""
    kinds = {sig.split("|")[0] for sig in e["signatures"]}
    if e.get("abort") and "crash" in kinds:
        return ("bug: a process abort inside XLA is never documented behaviour, and the same program runs elsewhere "
                "(the reason says where)")
    if kinds & {"value", "vma", "shape", "sharding"}:
        return ("bug: the result contradicts the documented semantics (the op's docstring and the shard_map docs' "
                "types and layouts), not only its wording")
    if kinds <= {"missing_error"}:
        return "bug: a mistake the docs say is an error is accepted (jax checks it elsewhere, or in another mode)"
    if "crash" in kinds or "timeout" in kinds:
        return "bug: a crash or hang is never documented behaviour"
    return ("bug: jax fails with an internal error (an assertion, a verifier failure, a batching or lowering rule, "
            "or a wrong exception from inside jax) on a program its docs allow, or that another mode runs")


def q(s: str) -> str:
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'


def main() -> None:
    out = [HEADER]
    for e in entries:
        # an entry's own case: harness/data/corpus/known/NAME, or a regression case (regressions/NAME)
        case = f"corpus/{e['case']}.json" if "/" in e["case"] else f"corpus/known/{e['case']}.json"
        p = from_json((ROOT / "harness" / "data" / case).read_text())
        out.append('[[divergence]]')
        out.append(f'id = {q(e["id"])}')
        out.append('signatures = [' + ', '.join(q(s) for s in e['signatures']) + ']')
        out.append('when = [' + ', '.join(q(s) for s in e['when']) + ']')
        out.append(f'jax_versions = {q(e["jax_versions"])}')
        out.append(f'repair = {q(e["repair"])}')
        out.append(f'class = {q(e.get("klass", "bug"))}')
        if e.get("abort"):
            out.append(f'abort = {q(e["abort"])}')
        out.append(f'case = {q(case)}')
        out.append(f'reason = {q(e["reason"])}')
        out.append(f'decision = {q(e.get("decision") or bug_decision(e))}')
        out.append(f'link = {q(e["link"])}')
        out.append(f'mode = {q(e["mode"])}')
        what = ("jax's policy (a limitation, feature request or message wording; not a bug to report upstream)"
                if e.get("klass") == "policy" else "reproducer")
        script = reproducer(p, mode=e["mode"], title=f"shardfuzz {what}: {e['id']}", own=own_signature(e, e["mode"]))
        out.append("reproducer = '''\n" + script.replace("'''", '"""') + "'''")
        out.append('')
    (ROOT / 'harness/data/known_divergences.toml').write_text('\n'.join(out))
    print(f"wrote {len(entries)} entries to harness/data/known_divergences.toml")


if __name__ == "__main__":
    main()
