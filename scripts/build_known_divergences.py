"""Writes reports/known_divergences.toml from the entries below.

Each entry's reproducer is generated from a minimized case in reports/corpus/known/
(`programs.emit.to_python`), so the TOML and the corpus never disagree. Edit the entries
here, run `python scripts/build_known_divergences.py`, commit both.
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from programs import from_json, to_python  # noqa: E402 - after the sys.path line


def repro_grad(name):
    src = repro(name)
    return src.replace("  outs = jax.jit(f)(a0)", "  outs = jax.jit(jax.grad(lambda a: f(a)[0].sum()))(a0),")

def repro_gspmd(name):
    return repro(name).replace("import jax.numpy as jnp", "import jax.numpy as jnp\njax.config.update('jax_use_shardy_partitioner', False)  # the GSPMD partitioner")

def repro_vmap(name):
    return repro(name).replace("  outs = jax.jit(f)(a0)", "  outs = jax.jit(jax.vmap(f))(np.stack([a0, a0]))")

def repro(name, mode='jit'):
    return to_python(from_json((ROOT / 'reports/corpus/known' / f'{name}.json').read_text()), title=f"shardfuzz reproducer: {name}", mode=mode)
entries = [
 dict(id="negative-scatter-dimension",
      signatures=["unexpected_error|*|psum_scatter->*", "unexpected_error|*|lowering->ValueError", "mode_disagreement|*|*", "wrong_error|*|*->ValueError", "shape|*|*"],
      when=["psum_scatter:scatter_dimension<0"],
      reason="jax.lax.psum_scatter forwards a negative scatter_dimension unnormalised to the reduce_scatter primitive; lowering fails StableHLO verification ('value is non-negative'). all_gather normalises its axis; psum_scatter should too. Under jit the failure only shows if the value is live; eager always lowers it, hence the mode disagreement; under vmap the batching rule raises IndexError('tuple index out of range'). Found by shardfuzz (seed 1).",
      link="https://github.com/jax-ml/jax/issues/20125 (fixed upstream by jax-ml/jax#38998, after 0.10.2)",
      reproducer=repro('neg_scatter')),
 dict(id="negative-all-to-all-axes",
      signatures=["unexpected_error|*|*", "crash|*|crash", "mode_disagreement|*|*", "wrong_error|*|*", "shape|*|*", "value|*|*"],
      when=["all_to_all:split_axis<0"],
      reason="jax.lax.all_to_all with a negative split_axis reaches XLA as garbage ('split dimension has size 25769803777') or segfaults the process (SIGSEGV, seen under jit on an 8-device mesh). Found by shardfuzz (seed 1).",
      link="https://github.com/jax-ml/jax/issues/19720 (fixed upstream by jax-ml/jax#38998, after 0.10.2)",
      reproducer=repro('neg_split')),
 dict(id="negative-all-to-all-concat-axis",
      signatures=["unexpected_error|*|*", "crash|*|crash", "mode_disagreement|*|*", "shape|*|*", "value|*|*", "wrong_error|*|*"],
      when=["all_to_all:concat_axis<0"],
      reason="jax.lax.all_to_all with a negative concat_axis fails StableHLO verification ('concat_dimension ... non-negative'); untiled, the abstract shape comes out wrong (the new axis lands at the wrong position: (1, 8) for split_axis=1, concat_axis=-2 on a (1, 8) block over 8 devices, where concat_axis=0 gives (8, 1)). Found by shardfuzz (seeds 0, 1).",
      link="https://github.com/jax-ml/jax/issues/19720 (fixed upstream by jax-ml/jax#38998, after 0.10.2)",
      reproducer=repro('neg_concat')),
 dict(id="zero-size-output-blocks",
      signatures=["shape|*|device_block", "unexpected_error|eager|read_output->ValueError", "wrong_error|eager|*->ValueError", "mode_disagreement|*|*"],
      when=["zero_size"],
      reason="A shard_map output with a zero-size dimension does not honour its out_spec: under jit the result comes back with sharding P() and every device holds the whole (empty) global array; eagerly the sharding says P('x') but each device still holds the whole array, so np.asarray(out) raises 'could not broadcast input array from shape (4,0) into shape (2,0)'. Found by shardfuzz (seed 1). No upstream issue found.",
      link="",
      reproducer=repro('zero_jit', 'eager')),
 dict(id="zero-size-tiled-all-gather",
      signatures=["unexpected_error|*|all_gather->ValueError", "unexpected_error|*|lowering->ValueError", "mode_disagreement|*|*"],
      when=["zero_size", "all_gather:tiled==True"],
      reason="A tiled all_gather along a dimension of size 0 fails StableHLO verification ('dimension size of operand at all_gather_dim cannot be zero') instead of returning an empty array; untiled, or along a non-empty dimension, it works. Found by shardfuzz (seed 0). No upstream issue found.",
      link="",
      reproducer=repro('zero_ag_tiled')),
 dict(id="zero-size-lowering",
      signatures=["unexpected_error|*|lowering->JaxRuntimeError", "unexpected_error|*|psum_scatter->ValueError", "missing_error|*|collective_shape", "mode_disagreement|*|*"],
      when=["zero_size"],
      reason="Programs with zero-size arrays fail to compile in ways valid programs never do: 'func.call op expected at least one operand of @xla.sdy.manual_computation_body to be produced by a xla.sdy.GlobalToLocalShape CustomCallOp' (Shardy export: under jit, and in the grad modes' backward pass, e.g. jnp.maximum of an empty int32 block and a float32 scalar, whose transpose yields an empty cotangent), and psum_scatter of an empty block fails StableHLO verification ('result dimension size at scatter_dimension cannot be zero'), while an untiled psum_scatter over a size-0 dimension (which must equal the axis size) passes eval_shape unchecked. Found by shardfuzz (seed 0). No upstream issue found.",
      link="",
      reproducer=repro('zero_jit', 'eager')),
 dict(id="unbound-axis-assertion",
      signatures=["wrong_error|*|unbound_axis->AssertionError"],
      when=["collective_axis_not_in_mesh"],
      reason="psum, pmean, pmax, pmin, psum_scatter, all_to_all and ppermute over an axis name that is not in the mesh raise a bare AssertionError with no message inside shard_map; the documented behaviour (and jax outside shard_map, and all_gather / axis_index inside it) is NameError 'unbound axis name'. Found by shardfuzz (invalid programs, defect collective_unknown_axis).",
      link="docs/notebooks/shard_map.md; jax/_src/lax/parallel.py _check_axis_names",
      reproducer=repro('unbound_assert')),
 dict(id="in-spec-none-accepted",
      signatures=["missing_error|*|spec_type", "wrong_error|*|spec_type->*", "mode_disagreement|*|*"],
      when=["in_spec_none"],
      reason="An in_spec of None (for one argument, or in_specs=None for all) is accepted and treated as replicated, although in_specs is documented as a pytree of PartitionSpecs and jax's own check has a TypeError for in_specs=None ('did you mean in_specs=P()?') that the guard `in_specs is not None` makes unreachable. Found by shardfuzz (defect in_spec_none).",
      link="jax/_src/shard_map.py _shmap_checks / _check_specs",
      reproducer=repro('in_spec_none')),
 dict(id="ppermute-perm-range-unchecked",
      signatures=["missing_error|*|collective_param", "wrong_error|*|collective_param->IndexError", "mode_disagreement|*|*"],
      when=["ppermute"],
      reason="ppermute does not check at trace time that perm indices lie inside the axis: jax.eval_shape accepts perm=[(0, 2)] on a size-2 axis, jit raises a bare IndexError('list index out of range') while lowering, and a dead ppermute under jit is never checked at all. Found by shardfuzz (defect bad_permutation).",
      link="",
      reproducer=repro('ppermute_range')),
 dict(id="axis-index-groups-not-checked-against-axis-size",
      signatures=["missing_error|*|collective_param", "wrong_error|*|collective_param->*", "mode_disagreement|*|*"],
      when=["pmax:groups"],
      reason="axis_index_groups is validated only for covering 0..sum(len(g))-1, not the axis: groups ((0, 1),) over an axis of size 3 pass tracing and eval_shape, then fail in XLA's HLO verifier (JaxRuntimeError RET_CHECK num_flattened_ids) or StableHLO verification ('replica id #1 not seen') when lowered. Found by shardfuzz (defect bad_groups).",
      link="jax/_src/lax/parallel.py _validate_reduce_axis_index_groups",
      reproducer=repro('groups_incomplete')),
 dict(id="axis-index-groups-not-checked-against-axis-size-pmin",
      signatures=["missing_error|*|collective_param", "wrong_error|*|collective_param->*", "mode_disagreement|*|*"],
      when=["pmin:groups"],
      reason="As axis-index-groups-not-checked-against-axis-size, for pmin.",
      link="",
      reproducer=repro('groups_incomplete')),
 dict(id="duplicate-in-spec-axis-unchecked-abstract",
      signatures=["missing_error|*|spec_duplicate_axis", "mode_disagreement|*|*"],
      when=["in_spec_duplicate_axis"],
      reason="An in_spec naming a mesh axis twice (P('x', 'x'), P(('x', 'x'))) is accepted by jax.eval_shape of the shard_map; jit and eager raise DuplicateSpecError (jit only when the argument is used). Found by shardfuzz (defect in_spec_duplicate_axis).",
      link="",
      reproducer=repro('dup_same_entry')),
 dict(id="all-to-all-axis-out-of-range-indexerror",
      signatures=["wrong_error|*|collective_param->IndexError"],
      when=["all_to_all"],
      reason="all_to_all with split_axis or concat_axis out of range raises a bare IndexError('list index out of range') from its shape rule; all_gather reports the same mistake as ValueError('axis 5 is out of bounds for array of dimension 3'). Found by shardfuzz (defect axis_out_of_range).",
      link="",
      reproducer=repro('a2a_axis_oob')),
 dict(id="psum-scatter-axis-out-of-range-indexerror",
      signatures=["wrong_error|*|collective_param->IndexError"],
      when=["psum_scatter"],
      reason="psum_scatter with scatter_dimension out of range raises a bare IndexError('tuple index out of range') instead of a ValueError naming the axis. Found by shardfuzz (defect axis_out_of_range).",
      link="",
      reproducer=repro('ps_axis_oob')),
 dict(id="pmax-no-differentiation-rule",
      signatures=["unexpected_error|grad*|*->NotImplementedError", "wrong_error|grad*|*->NotImplementedError", "mode_disagreement|grad*|raise:grad*"],
      when=["pmax"],
      reason="jax.lax.pmax has no differentiation rule (NotImplementedError: Differentiation rule for 'pmax' not implemented), although max is differentiable almost everywhere and jnp.maximum / jnp.max are; the oracle predicts the derivative (finite differences, away from ties). A jax limitation, listed so the grad mode still checks every other program.",
      link="",
      reproducer=repro_grad('pmax_grad')),
 dict(id="pmin-no-differentiation-rule",
      signatures=["unexpected_error|grad*|*->NotImplementedError", "wrong_error|grad*|*->NotImplementedError", "mode_disagreement|grad*|raise:grad*"],
      when=["pmin"],
      reason="As pmax-no-differentiation-rule, for pmin.",
      link="",
      reproducer=repro_grad('pmax_grad')),
 dict(id="vmap-out-spec-rank-error-garbled",
      signatures=["wrong_error|vmap|out_spec_rank->ValueError", "wrong_error|vmap|out_spec_replication->ValueError"],
      when=[],
      reason="Under jax.vmap, an out_spec error (an out_spec longer than its output's rank, or one that leaves out an axis the output varies along) does not give shard_map's message ('out_specs entry which is too long ...' / 'require replication which can't be statically inferred') but an internal pytree error from the batching rule ('pytree structure error: different lengths of tuple at key path broadcast_prefix prefix_tree'), which names neither the out_spec nor the output. Found by shardfuzz (defects out_spec_too_long and out_spec_drops_varying_axis, mode vmap).",
      link="",
      reproducer=repro_vmap('vmap_out_rank')),
 dict(id="eager-partial-manual-check-vma-false",
      signatures=["unexpected_error|eager|*->ValueError", "wrong_error|eager|*->ValueError", "mode_disagreement|eager|raise:eager", "mode_disagreement|*|raise:*eager*"],
      when=["partial_manual", "check_vma==False"],
      reason="Eager (un-jitted) shard_map with axis_names a strict subset of the mesh and check_vma=False fails on collectives (axis_index, pmax, psum, ...): the per-primitive shard_map that eager mode builds for each op names the automatic axes in its out_specs ('shard_map out_specs argument must refer to an axis marked as manual (frozenset({'model'})), but: out_specs refers to 'data''), so the program's own result or error never appears. The same programs run under jit, eval_shape and vmap. Found by shardfuzz (partial-manual programs and the collective_not_manual defect).",
      link="jax/_src/shard_map.py ShardMapTrace.process_primitive / _prim_applier",
      reproducer=repro('eager_partial_manual', 'eager')),
 dict(id="ragged-all-to-all-typed-as-its-output-buffer",
      signatures=["vma|*|ragged_all_to_all", "missing_error|*|out_spec_replication", "unexpected_error|*|*->ValueError", "wrong_error|*|*->ValueError"],
      when=["ragged_all_to_all"],
      reason="With check_vma=True, ragged_all_to_all's result takes the varying axes of its `output` buffer alone (its abstract eval is output.update(...)); the result holds rows received from every device of the axis, so it varies over the named axis, and an out_spec that leaves that axis out would be accepted and return one device's rows. Found by shardfuzz (abstract and lowering modes; XLA:CPU cannot run ragged_all_to_all, so values are checked only where a GPU is available).",
      link="jax/_src/lax/parallel.py _ragged_all_to_all_effectful_abstract_eval",
      reproducer=repro('ragged_vma')),
 dict(id="gspmd-partial-manual-all-to-all-abort",
      signatures=["crash|gspmd|crash"],
      when=["partial_manual", "pswapaxes"],
      reason="With the GSPMD partitioner (jax_use_shardy_partitioner=False), a partial-manual shard_map (axis_names a strict subset of the mesh) whose body does pswapaxes (an all_to_all) aborts the process inside XLA compilation (SIGABRT: hlo_sharding_util.cc Check failed: sharding.IsManualSubgroup()); Shardy compiles and runs it. Found by shardfuzz (gspmd mode), minimized to one op.",
      link="",
      reproducer=repro_gspmd('gspmd_partial_manual_all_to_all')),
 dict(id="ppermute-multi-axis-order",
      signatures=["value|*|*", "vma|*|*"],
      when=["ppermute:axes_order==unordered"],
      reason="ppermute over a tuple of mesh axes listed out of mesh order, e.g. axis_name=('y', 'x') on a ('x', 'y') mesh, numbers the devices in mesh order, while axis_index(('y', 'x')) and all_gather(..., ('y', 'x')) number them in the listed order (major first). The perm pairs are documented as indices into the mapped axis, i.e. axis_index values, so the wrong devices receive the data. Found by shardfuzz (seed 0). No upstream issue found.",
      link="",
      reproducer=repro('ppermute_order')),
 dict(id="pshuffle-multi-axis-order",
      signatures=["value|*|*", "vma|*|*"],
      when=["pshuffle:axes_order==unordered"],
      reason="pshuffle is ppermute underneath and inherits its device numbering for axes listed out of mesh order (see ppermute-multi-axis-order). Found by shardfuzz (seed 0).",
      link="",
      reproducer=repro('ppermute_order')),
 dict(id="grouped-reduction-claims-invariance",
      signatures=["missing_error|*|out_spec_replication", "vma|*|pmax", "unexpected_error|*|*->ValueError", "wrong_error|*|*->ValueError", "mode_disagreement|*|*"],
      when=["pmax:groups"],
      reason="With check_vma=True, pmax/pmin with axis_index_groups of more than one group type their result as invariant over the named axes although each group holds a different value; out_specs=P() is then accepted and jax silently returns one group's answer; later collectives then see the wrong varying axes (a psum over them is rejected as mixing varying and invariant axes). The oracle keeps the axes varying (documented semantics: groups reduce separately) and predicts the replication error. Found by shardfuzz.",
      link="",
      reproducer=repro('groups_vma')),
 dict(id="grouped-reduction-claims-invariance-pmin",
      signatures=["missing_error|*|out_spec_replication", "vma|*|pmin", "unexpected_error|*|*->ValueError", "wrong_error|*|*->ValueError", "mode_disagreement|*|*"],
      when=["pmin:groups"],
      reason="As grouped-reduction-claims-invariance, for pmin.",
      link="",
      reproducer=repro('groups_vma')),
]
out = ['# Known divergences between jax and the documented shard_map semantics shardfuzz checks.',
       '# Each entry: the divergence signatures it covers (kind|mode|where, shell patterns), the',
       '# program features that must hold (`when`: structured, never message text), the reason,',
       '# a link, and a minimized standalone reproducer. Suppressed divergences are counted and',
       '# reported; an entry no run matches is reported as unseen.', '']
def q(s): return '"' + s.replace('\\','\\\\').replace('"','\\"') + '"'
for e in entries:
    out.append('[[divergence]]')
    out.append(f'id = {q(e["id"])}')
    out.append('signatures = [' + ', '.join(q(s) for s in e['signatures']) + ']')
    out.append('when = [' + ', '.join(q(s) for s in e['when']) + ']')
    out.append('jax_versions = "*"')
    out.append(f'reason = {q(e["reason"])}')
    out.append(f'link = {q(e["link"])}')
    out.append("reproducer = '''\n" + e['reproducer'] + "'''")
    out.append('')
(ROOT / 'reports/known_divergences.toml').write_text('\n'.join(out))
