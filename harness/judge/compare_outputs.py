"""Each output a mode returned, against the oracle's prediction: global shape and dtype,
then each device's block (or, where jax laid an output out along automatic axes, the
global value or aligned tiles); under vmap, the batch against the per-member predictions.
"""

from __future__ import annotations

import functools

import numpy as np

from harness.judge.divergence import Divergence, DivergenceKind, producer, short
from harness.run.modes import MODES
from harness.run.observation import Observation, ObservedOutput
from oracles import predict
from oracles.devices import assemble_local
from oracles.explicit import out_sharding
from oracles.prediction import OutputPrediction, Prediction
from programs.model import Mesh, Program, Spec


def compare_output(p: Program, k: int, o: ObservedOutput, e: OutputPrediction, mode: str) -> list[Divergence]:
    """Output `k` of a mode that returns it: its global shape and dtype, then (where the
    mode read them back) each device's block."""
    where = producer(p, p.outputs[k])
    if o.global_shape != e.global_shape:
        return [
            Divergence(
                DivergenceKind.SHAPE,
                mode,
                f"out[{k}] (mode={mode}): shape={o.global_shape}, but oracle predicts {e.global_shape}",
                where,
                output=k,
            )
        ]
    if o.dtype != e.dtype:
        return [
            Divergence(
                DivergenceKind.DTYPE,
                mode,
                f"out[{k}] (mode={mode}): dtype={o.dtype}, but oracle predicts {e.dtype}",
                where,
                output=k,
            )
        ]
    if o.sharding is not None and e.sharding is not None and o.sharding != e.sharding:
        return [
            Divergence(
                DivergenceKind.SHARDING,
                mode,
                f"out[{k}] (mode={mode}): jax.typeof(out).sharding={_sharding_str(o.sharding)}, "
                f"but oracle predicts {_sharding_str(e.sharding)}",
                where,
                output=k,
            )
        ]
    if o.device_values is None:
        return []
    assert e.device_values is not None  # a value mode's prediction has the blocks
    if compiler_layout(p):
        return _compare_compiler_layout(p, k, o, e, mode, where)
    if _auto_layout(p, o.device_values, e.device_values):
        return _compare_auto_layout(p, k, o, e, mode, where)
    return _compare_blocks(p, k, o, e, mode, where)


def _sharding_str(s: tuple[tuple[tuple[str, ...], ...], tuple[str, ...], tuple[str, ...]]) -> str:
    """P('x', None, unreduced={'y'}) for (dims, unreduced, reduced)."""
    parts = ["None" if not e else repr(e[0]) if len(e) == 1 else repr(e) for e in s[0]]
    parts += [f"{key}={set(axes)}" for key, axes in (("unreduced", s[1]), ("reduced", s[2])) if axes]
    return "P(" + ", ".join(parts) + ")"


def _same(g: np.ndarray, w: np.ndarray, e: OutputPrediction, unchecked: np.ndarray | None = None) -> bool:
    """`g` against `w` within `e`'s tolerance, but at the elements `unchecked` (a
    device's block of `e.unchecked`: no value predicted there). Where `e` has such
    elements and the caller compares something else than one device's block (a tile, the
    global value), no value is compared, as where none is predicted."""
    if np.isinf(e.atol):
        return True  # may overflow (oracles/rounding.py): shape and dtype are checked, not values
    if e.unchecked is not None:
        if unchecked is None:
            return True
        g, w = g[~unchecked], w[~unchecked]
    g, w = g.astype(np.float64), w.astype(np.float64)
    return np.array_equal(g, w) if e.exact else bool(np.allclose(g, w, rtol=e.rtol, atol=e.atol))


def batch_atol(outs: list[OutputPrediction]) -> float:
    """The atol of one output's batch under vmap (its members' predictions, stacked): the
    largest, or inf (no value compared) where a member has elements of no predicted
    value (`OutputPrediction.unchecked`)."""
    return float("inf") if any(o.unchecked is not None for o in outs) else max(o.atol for o in outs)


def _compare_auto_layout(p: Program, k: int, o: ObservedOutput, e: OutputPrediction, mode: str, where: str) -> list[Divergence]:
    """Along automatic axes (partial manual) jax chooses the layout; a nested shard_map
    may leave the output split over one. The global value decides, or where there is
    none (check_vma=False, blocks differ), each device's block must be one aligned tile
    of the block the oracle predicts for it."""
    blocks, want = o.device_values, e.device_values
    assert blocks is not None and want is not None
    if o.global_value is not None and e.global_value is not None:
        if _same(o.global_value, e.global_value, e):
            return []
        g64, w64 = o.global_value.astype(np.float64), e.global_value.astype(np.float64)
        return [Divergence(DivergenceKind.VALUE, mode, f"out[{k}] (mode={mode}): global value {short(g64)}, but oracle predicts {short(w64)}",
                           where, output=k, max_abs_diff=float(np.max(np.abs(g64 - w64), initial=0)))]
    bad = [c for c in p.mesh.coords() if not any(_same(blocks[c], t, e) for t in _tiles(want[c], blocks[c].shape))]
    if not bad:
        return []
    return [Divergence(DivergenceKind.VALUE, mode, f"out[{k}] (mode={mode}): at devices {bad[:4]} the block {short(blocks[bad[0]])} "
                       f"is no tile of the predicted block {short(want[bad[0]])}", where, output=k, bad_devices=tuple(bad))]


def compiler_layout(p: Program) -> bool:
    """Whether jax promises an output's layout only along its Explicit axes: a mesh with
    Explicit axes and an Auto axis of size > 1 (a mixed mesh, always under jax.set_mesh).
    There jit types each output by its out_spec's Explicit axes and lets the compiler lay
    it out along the Auto ones (jax 0.10.2 `_unshard_shaped_array`, core
    `modify_spec_for_auto_manual`: 'PartitionSpec can only mention mesh axes that are
    Explicit'; measured: a P(('pipe', 'data')) output, 'data' Explicit, came back split
    over 'data' alone, whole along 'pipe'; eagerly it keeps the whole out_spec).
    With auto_axes / explicit_axes around the call the wrapper reshards each result
    (`layout_of`), and the same holds for the spec it reshards to."""
    return p.wrap is not None or (bool(p.explicit_axes) and any(t == "auto" and n > 1 for t, n in zip(p.mesh.axis_types, p.mesh.sizes)))


def layout_of(p: Program, k: int, rank: int) -> tuple[Spec, Mesh]:
    """The spec output `k` is laid out by and the mesh it lives on: its out_spec on the
    mesh; with auto_axes around the call its out_sharding on the mesh outside
    (`reshard(out, out_sharding)`); with explicit_axes its sharding type's axes that stay
    Explicit outside (jax 0.10.2 pjit.py `_explicit_axes`: reshard to
    `modify_spec_for_auto_manual(typeof(o).sharding.spec, outer mesh)`)."""
    if p.wrap == "auto_axes":
        return p.wrap_specs[k], p.outer_mesh()
    if p.wrap == "explicit_axes":
        dims = out_sharding(p, k, rank)[0]
        return Spec(tuple(d or None for d in dims)), p.outer_mesh()
    return p.out_specs[k], p.mesh


def fixed_dims(p: Program, k: int, rank: int) -> tuple[int, ...]:
    """The dimensions of output `k` whose layout its spec (`layout_of`) and sharding type
    fix: those the spec splits over Explicit axes only (an Auto axis there, or no axis,
    leaves the compiler free to split it or not)."""
    spec, mesh = layout_of(p, k, rank)
    entries = tuple(spec.entries) + (None,) * rank
    return tuple(d for d in range(rank) if entries[d] and all(mesh.axis_type(a) == "explicit" for a in entries[d]))  # type: ignore[union-attr]


def window_index(p: Program, k: int, shape: tuple[int, ...], c: tuple[int, ...], dims: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """(start, stop) per dimension of the part of output `k`'s global value device `c`
    must hold a tile of: along each fixed dimension the slice the out_spec gives it
    (major axis first), elsewhere all of it."""
    index = [(0, n) for n in shape]
    spec = layout_of(p, k, len(shape))[0]
    for d in dims:
        axes = spec.entries[d] or ()
        n, i = 1, 0
        for a in axes:
            size = p.mesh.axis_size(a)
            i = i * size + c[p.mesh.names.index(a)]
            n *= size
        m = shape[d] // n
        index[d] = (i * m, (i + 1) * m)
    return tuple(index)


def _window(p: Program, k: int, g: np.ndarray, c: tuple[int, ...], dims: tuple[int, ...]) -> np.ndarray:
    return g[tuple(slice(a, b) for a, b in window_index(p, k, g.shape, c, dims))]


def _compare_compiler_layout(p: Program, k: int, o: ObservedOutput, e: OutputPrediction, mode: str, where: str) -> list[Divergence]:
    """A mixed mesh (`compiler_layout`): what jax promises is the global value, and each
    device's block being an aligned tile of its slice along the fixed dimensions
    (`fixed_dims`) and of the whole elsewhere. Without a global value (unreduced, or
    check_vma=False blocks that differ), each block must be a tile of its predicted one."""
    blocks = o.device_values
    assert blocks is not None and e.device_values is not None
    if o.global_value is None or e.global_value is None:
        s = p.out_specs[k]
        if p.wrap is not None and not (s.unreduced or s.reduced) and o.global_value is not None:
            return _compare_wrapped_groups(p, k, o, e, mode, where)
        if _auto_layout(p, blocks, e.device_values):
            return _compare_auto_layout(p, k, o, e, mode, where)
        if e.global_value is None and not (s.unreduced or s.reduced):
            return _compare_any_replica(p, k, o, e, mode, where)
        return _compare_blocks(p, k, o, e, mode, where)
    if not _same(o.global_value, e.global_value, e):
        g64, w64 = o.global_value.astype(np.float64), e.global_value.astype(np.float64)
        return [Divergence(DivergenceKind.VALUE, mode, f"out[{k}] (mode={mode}): global value {short(g64)}, but oracle predicts {short(w64)}",
                           where, output=k, max_abs_diff=float(np.max(np.abs(g64 - w64), initial=0)))]
    dims = fixed_dims(p, k, e.global_value.ndim)
    bad = []
    for c in p.mesh.coords():
        got, w = blocks.get(c), _window(p, k, e.global_value, c, dims)
        if got is None or got.ndim != w.ndim or any(m > n or (m and n % m) for m, n in zip(got.shape, w.shape)):
            return [Divergence(DivergenceKind.SHAPE, mode, f"out[{k}] (mode={mode}): device {c} holds a block of shape "
                               f"{None if got is None else got.shape}, which does not tile {w.shape}, its part of the global value "
                               f"{o.global_shape} along dimensions {list(dims)} (out_spec {p.out_specs[k]!r}, mixed mesh)",
                               "device_block", output=k, bad_devices=(c,))]
        if got.size and not any(_same(got, t, e) for t in _tiles(w, got.shape)):  # (an empty block: nothing to compare)
            bad.append(c)
    if not bad:
        return []
    c = bad[0]
    got = blocks.get(c)
    return [Divergence(DivergenceKind.VALUE, mode, f"out[{k}] (mode={mode}): at devices {bad[:4]} the block "
                       f"{None if got is None else short(got)} is no aligned tile of the part of the global value "
                       f"out_spec {p.out_specs[k]!r} gives them along dimensions {list(dims)} (mixed mesh)",
                       where, output=k, bad_devices=tuple(bad))]


def _compare_any_replica(p: Program, k: int, o: ObservedOutput, e: OutputPrediction, mode: str, where: str) -> list[Divergence]:
    """A mixed mesh (`compiler_layout`, no wrapper) and an output with no one global
    value (check_vma=False, blocks that differ along an axis its out_spec leaves out):
    the output's type says it is replicated along that axis, so which device's values
    jax keeps there is not promised, and along the Auto axes the compiler chooses the
    layout. Each device's block must be an aligned tile (its window along the fixed
    dimensions, `fixed_dims`) of the array the blocks of some one replica assemble to
    (measured on jax 0.10.2: out_spec P(('pipe', 'data')), 'pipe' Explicit of size 1,
    'data' Auto of size 4, 'model' left out: jit gives every device model 0's whole
    array, typed P('pipe'); eagerly each device keeps its own block)."""

    blocks, want = o.device_values, e.device_values
    assert blocks is not None and want is not None
    rank = want.ndim - len(p.mesh.sizes)
    entries = tuple(p.out_specs[k].entries) + (None,) * (rank - len(p.out_specs[k].entries))
    groups = assemble_local(want, p.mesh, entries[:rank]) if any(entries[:rank]) else want
    options = list({groups[c].tobytes() + str(groups[c].shape).encode(): groups[c] for c in p.mesh.coords()}.values())
    dims = fixed_dims(p, k, rank)
    bad = []
    for c in p.mesh.coords():
        got = blocks.get(c)
        wins = [_window(p, k, g, c, dims) for g in options]
        if got is None or not any(got.ndim == w.ndim and all(m <= n and (not m or n % m == 0) for m, n in zip(got.shape, w.shape))
                                  for w in wins):
            return [Divergence(DivergenceKind.SHAPE, mode, f"out[{k}] (mode={mode}): device {c} holds a block of shape "
                               f"{None if got is None else got.shape}, which does not tile {wins[0].shape}, a replica's part "
                               f"along dimensions {list(dims)} (out_spec {p.out_specs[k]!r}, mixed mesh)",
                               "device_block", output=k, bad_devices=(c,))]
        if got.size and not any(_same(got, t, e) for w in wins if w.ndim == got.ndim for t in _tiles(w, got.shape)):
            bad.append(c)
    if not bad:
        return []
    got = blocks.get(bad[0])
    return [Divergence(DivergenceKind.VALUE, mode, f"out[{k}] (mode={mode}): at devices {bad[:4]} the block "
                       f"{None if got is None else short(got)} is no aligned tile of any replica's array along dimensions "
                       f"{list(dims)} (out_spec {p.out_specs[k]!r}, mixed mesh)", where, output=k, bad_devices=tuple(bad))]


def _compare_wrapped_groups(p: Program, k: int, o: ObservedOutput, e: OutputPrediction, mode: str, where: str) -> list[Divergence]:
    """auto_axes / explicit_axes around the call, and an output with no one global value
    (check_vma=False, blocks that differ along an axis its out_spec leaves out): the
    wrapper reshards it to `layout_of`, gathering along the axes the out_spec names
    within each group of devices that agree on the others, so device c holds an aligned
    tile of its own group's array (the predicted blocks of the devices that differ from c
    only along the named axes, assembled by the out_spec), windowed along the fixed
    dimensions (measured on jax 0.10.2: out_spec P('model', None), 'data' left out,
    auto_axes(axes='model', out_sharding=P()): every device holds its 'data' group's
    (12, 1), where the out_spec's blocks are (6, 1))."""
    blocks, want = o.device_values, e.device_values
    assert blocks is not None and want is not None
    rank = want.ndim - len(p.mesh.sizes)
    entries = tuple(p.out_specs[k].entries) + (None,) * (rank - len(p.out_specs[k].entries))
    # (an out_spec naming no axis, a rank-0 output among them: each device's own block)
    groups = assemble_local(want, p.mesh, entries[:rank]) if any(entries[:rank]) else want
    dims = fixed_dims(p, k, rank)
    bad = []
    for c in p.mesh.coords():
        got, w = blocks.get(c), _window(p, k, groups[c], c, dims)
        if got is None or got.ndim != w.ndim or any(m > n or (m and n % m) for m, n in zip(got.shape, w.shape)):
            return [Divergence(DivergenceKind.SHAPE, mode, f"out[{k}] (mode={mode}): device {c} holds a block of shape "
                               f"{None if got is None else got.shape}, which does not tile {w.shape}, its part of its group's "
                               f"array along dimensions {list(dims)} (out_spec {p.out_specs[k]!r}, {p.wrap} around the call)",
                               "device_block", output=k, bad_devices=(c,))]
        if got.size and not any(_same(got, t, e) for t in _tiles(w, got.shape)):
            bad.append(c)
    if not bad:
        return []
    got = blocks.get(bad[0])
    return [Divergence(DivergenceKind.VALUE, mode, f"out[{k}] (mode={mode}): at devices {bad[:4]} the block "
                       f"{None if got is None else short(got)} is no aligned tile of their group's array along dimensions "
                       f"{list(dims)} (out_spec {p.out_specs[k]!r}, {p.wrap} around the call)",
                       where, output=k, bad_devices=tuple(bad))]


def _compare_blocks(p: Program, k: int, o: ObservedOutput, e: OutputPrediction, mode: str, where: str) -> list[Divergence]:
    """Each device's block against the one the oracle predicts for it: one divergence
    naming every wrong device (or the first device whose block has the wrong shape)."""
    blocks, wants = o.device_values, e.device_values
    assert blocks is not None and wants is not None
    bad: list[tuple[int, ...]] = []
    diffs: list[float] = []
    first: tuple[tuple[int, ...], np.ndarray, np.ndarray] | None = None
    for c in p.mesh.coords():
        got = blocks.get(c)
        want = wants[c]
        if got is None or got.shape != want.shape:
            return [
                Divergence(
                    DivergenceKind.SHAPE,
                    mode,
                    f"out[{k}] (mode={mode}): device {c} holds a block of shape "
                    f"{None if got is None else got.shape}, but oracle predicts {want.shape} "
                    f"(global shape {o.global_shape}, out_spec {p.out_specs[k]!r})",
                    "device_block",
                    output=k,
                    bad_devices=(c,),
                )
            ]
        mask = None if e.unchecked is None else e.unchecked[c]
        if not _same(got, want, e, mask):
            bad.append(c)
            first = first or (c, got, want)
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            if mask is not None:
                diff = diff[~mask]  # (the elements with no predicted value are not compared)
            diffs.append(float(np.nanmax(np.where(np.isnan(diff), np.inf, diff), initial=0)))
    if first is None:
        return []
    c, got, want = first
    worst = max(diffs)
    tol = "exactly" if e.exact else f"within rtol={e.rtol:g}, atol={e.atol:g}"
    if e.unchecked is not None and e.unchecked[c].any():
        tol += f"; {int(e.unchecked[c].sum())} of its {e.unchecked[c].size} elements not compared: no value predicted there"
    return [
        Divergence(
            DivergenceKind.VALUE,
            mode,
            f"out[{k}] (mode={mode}): values differ at {len(bad)} of {p.mesh.size} devices "
            f"{bad[:4]}{'...' if len(bad) > 4 else ''}; at device {c} jax gives "
            f"{short(got)}, but oracle predicts {short(want)} "
            f"({tol}; max |diff|={worst:g})",
            where,
            output=k,
            bad_devices=tuple(bad),
            max_abs_diff=worst,
            device_diffs=tuple(diffs),
        )
    ]


def _tiles(w: np.ndarray, shape: tuple[int, ...]) -> list[np.ndarray]:
    """Every aligned tile of `shape` in `w`."""
    counts = [n // max(m, 1) for n, m in zip(w.shape, shape)]
    out = []
    for idx in np.ndindex(*counts):
        out.append(w[tuple(slice(i * m, (i + 1) * m) for i, m in zip(idx, shape))])
    return out


def _auto_layout(p: Program, blocks: dict[tuple[int, ...], np.ndarray], want: np.ndarray) -> bool:
    """Whether jax split an output along automatic axes where the oracle's blocks are
    whole (partial manual; the blocks divide the predicted ones evenly)."""
    auto = [a for a in p.mesh.names if a not in p.manual_axes and p.mesh.axis_size(a) > 1]
    if not auto:
        return False
    diff = False
    for c in p.mesh.coords():
        got, w = blocks.get(c), want[c]
        if got is None or got.ndim != w.ndim or any(n % max(g, 1) for g, n in zip(got.shape, w.shape)):
            return False
        diff = diff or got.shape != w.shape
    return diff


@functools.lru_cache(maxsize=32)
def _member(p: Program, b: int) -> Prediction:
    """The prediction for batch member `b` (vmap and vmap_spmd ask for the same ones)."""
    return predict(p, batch=b)


def compare_batched(p: Program, pred: Prediction, obs: Observation) -> list[Divergence]:
    """vmap: each output is the batch of the per-member predictions, stacked on axis 0."""
    n_batch = MODES[obs.mode].batch_size(p)  # type: ignore[attr-defined]
    members = [pred] + [_member(p, b) for b in range(1, n_batch)]
    out = []
    for k, o in enumerate(obs.outputs):
        e = pred.outputs[k]
        where = producer(p, p.outputs[k])
        want_shape = (n_batch,) + e.global_shape
        if o.global_shape != want_shape or o.dtype != e.dtype:
            kind = DivergenceKind.SHAPE if o.global_shape != want_shape else DivergenceKind.DTYPE
            out.append(
                Divergence(
                    kind,
                    obs.mode,
                    f"out[{k}] (mode={obs.mode}): {o.dtype}{list(o.global_shape)}, but oracle predicts {e.dtype}{list(want_shape)}",
                    where,
                    output=k,
                )
            )
            continue
        wants = [m.outputs[k].global_value for m in members]
        if any(w is None for w in wants) or o.global_value is None:
            continue  # not replicated where the out_spec says so (check_vma=False): no global value
        want = np.stack(wants).astype(np.float64)  # type: ignore[arg-type]
        got = o.global_value.astype(np.float64)
        exact = all(m.outputs[k].exact for m in members)
        # (a member with elements of no predicted value: the batch's values are not compared)
        tol = batch_atol([m.outputs[k] for m in members])
        ok = bool(np.isinf(tol)) or (np.array_equal(got, want) if exact else bool(np.allclose(got, want, rtol=e.rtol, atol=tol)))
        if not ok:
            bad = [b for b in range(n_batch)
                   if not (np.array_equal(got[b], want[b]) if exact else np.allclose(got[b], want[b], rtol=e.rtol, atol=tol))]
            out.append(
                Divergence(
                    DivergenceKind.VALUE,
                    obs.mode,
                    f"out[{k}] (mode={obs.mode}): batch members {bad} differ; jax gives {short(got[bad[0]] if bad else got)}, "
                    f"but oracle predicts {short(want[bad[0]] if bad else want)}",
                    where,
                    output=k,
                    max_abs_diff=float(np.max(np.abs(got - want), initial=0)),
                    members=tuple(bad),
                )
            )
    return out
