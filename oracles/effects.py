"""Effects in the body and around it: what jax.debug.callback / jax.debug.print calls
and jit donation may do (jax 0.10.2).

- `jax.debug.callback` (docstring): it "follows existing JAX transformation *pure*
  operational semantics, which are therefore unaware of side-effects. This means the
  effect could be dropped, duplicated, or potentially reordered in the presence of
  higher-order primitives and transformations." shard_map is one, so the oracle predicts
  no number of calls and no order: each call that is made passes the coordinates of one
  device along the manual axes (`jax.lax.axis_index` of each, in mesh order) and that
  same device's block of the value (`call_matches`). Under vmap the batching rule calls
  it once per batch member ("Unrolls the debug callback across the mapped axis",
  debugging.py `debug_batching_rule`): a call is one member's.
  `jax.debug.print` is the same callback with formatting: each printed line is parsed
  back into its coordinates and values.
- `jax.jit(f, donate_argnums=...)` (docstring): donated "argument buffers can be
  overwritten by the computation and marked deleted in the caller ... You should not
  reuse buffers that you donate to a computation; JAX will raise an error if you try
  to." The values are those without donation (donation changes no semantics), and each
  donated argument is afterwards either deleted (reading it raises) or unchanged: JAX
  may copy a donated argument it cannot reuse (one it must reshard: the buffer is not the
  one the computation takes), so which of the two is not predicted.
"""

from __future__ import annotations

import numpy as np

from oracles.prediction import EffectPrediction
from programs.model import Program


def effect_predictions(p: Program, values: list[np.ndarray] | None,
                       tolerance: list[tuple[bool, float, np.ndarray | None]] | None) -> tuple[EffectPrediction, ...]:
    """One `EffectPrediction` per effect of `p`, from the traced values (each
    mesh.sizes + block shape) and their tolerances (exact, atol, unchecked)."""
    manual = tuple(a for a in p.mesh.names if a in p.manual_axes)
    out = []
    for k, e in enumerate(p.effects):
        if values is None or tolerance is None:
            out.append(EffectPrediction(k, e.kind, e.value, manual, None, False, float("inf")))
            continue
        exact, atol, unchecked = tolerance[k]
        out.append(EffectPrediction(k, e.kind, e.value, manual, values[e.value], exact, atol, unchecked))
    return tuple(out)


def device_calls(p: Program, e: EffectPrediction) -> list[tuple[tuple[int, ...], tuple[int, ...], np.ndarray]]:
    """Every call `e` may make: per device (mesh order), (its mesh coordinates, its
    coordinates along the manual axes, its block)."""
    assert e.blocks is not None
    pos = [p.mesh.names.index(a) for a in e.manual]
    out = []
    for c in p.mesh.coords():
        full = tuple(int(x) for x in c)
        out.append((full, tuple(full[i] for i in pos), e.blocks[full]))
    return out


def call_matches(p: Program, e: EffectPrediction, coords: tuple[int, ...], value: np.ndarray) -> bool:
    """Whether a call passing `coords` and `value` is one device's (`device_calls`):
    the coordinates of a device and its block, within the value's tolerance."""
    got = np.asarray(value).astype(np.float64)
    for full, c, block in device_calls(p, e):
        if c != coords or got.shape != block.shape:
            continue
        want = np.asarray(block).astype(np.float64)
        keep = np.ones(want.shape, bool) if e.unchecked is None else ~np.asarray(e.unchecked[full])
        if e.exact:
            same = bool(np.all(~keep | (got == want) | (np.isnan(got) & np.isnan(want))))
        else:
            same = bool(np.all(~keep | (np.abs(got - want) <= e.atol) | (np.isnan(got) & np.isnan(want))))
        if same:
            return True
    return False
