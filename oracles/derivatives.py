"""The grad oracle: directional derivatives <u, J v> by finite differences of the
float64 forward interpreter, never by jax.

Central differences with Richardson extrapolation are exact for the quadratic pieces
the generated ops make and accurate to O(h^4) elsewhere; comparing two step sizes tells a
smooth point from a kink (a max/min tie, an int cast jumping), where no derivative is
predicted. The transpose rules are checked by the same number: jax's vjp must give
<J^T u, v> = <u, J v>.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from oracles.devices import assemble_global
from oracles.interpreter import trace
from oracles.rounding import unit_roundoff
from programs.graph import cone
from programs.model import Program
from programs.points import cotangent, grad_point, tangents


@dataclass(frozen=True)
class DirectionalDerivative:
    value: float  # <u, J v>
    tolerance: float  # how far an implementation in the program's dtypes may be from it
    smooth: bool  # False: the point is at a kink; no derivative is predicted


def _at(p: Program, point: list[np.ndarray], v: list[np.ndarray | None], t: float, errors: bool = False) -> Any:
    """The forward interpreter's state at point + t v (with its error bounds: `errors`)."""
    moved = [a if d is None else a + t * d for a, d in zip(point, v)]
    st, err = trace(p, inputs=moved, errors=errors)
    if err is not None:
        raise ValueError(f"the grad oracle needs a valid program: {err}")
    return st


def _outs(p: Program, point: list[np.ndarray], v: list[np.ndarray | None], t: float, out_idx: list[int],
          st: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """(the chosen outputs at point + t v, flattened and concatenated; their weights u);
    `st`: the state there, when already interpreted."""
    st = _at(p, point, v, t) if st is None else st
    outs, ws = [], []
    for k in out_idx:
        data = st.values[p.outputs[k]]
        glob = assemble_global(data, p.mesh, p.out_specs[k].entries)
        outs.append(glob.astype(np.float64).ravel())
        ws.append(cotangent(k, glob.shape, st.types[p.outputs[k]].dtype).ravel())
    return np.concatenate(outs) if outs else np.zeros(0), np.concatenate(ws) if ws else np.zeros(0)


def _g(p: Program, point: list[np.ndarray], v: list[np.ndarray | None], t: float, out_idx: list[int]) -> float:
    """<u, outputs at point + t v>."""
    o, w = _outs(p, point, v, t, out_idx)
    return float(w @ o)


def _estimate(p: Program, point: list[np.ndarray], v: list[np.ndarray | None], out_idx: list[int], h: float,
              g0: float) -> tuple[np.ndarray, bool, np.ndarray]:
    """Richardson-extrapolated central difference of the outputs with step h (J v), and
    whether the two step sizes inside it agree on <u, J v> (no kink within [-h, h])."""
    os = {}
    for t in (-h, -h / 2, h / 2, h):
        os[t], w = _outs(p, point, v, t, out_idx)
    d1 = (os[h] - os[-h]) / (2 * h)
    d2 = (os[h / 2] - os[-h / 2]) / h
    jv = (4 * d2 - d1) / 3
    rich = float(w @ jv)
    return jv, abs(float(w @ d1) - float(w @ d2)) <= 1e-2 * max(1.0, abs(rich), abs(g0) * 1e-2), w


def _may_overflow(p: Program, st: Any, out_idx: list[int]) -> bool:
    """Whether a value the chosen outputs depend on may overflow its dtype in state `st`
    (its error bound is infinite, oracles/rounding.py `combine`): jax computes inf or nan
    there, and its derivatives with it (e.g. float16 * uint32 4294967295), where the
    float64 differences stay finite. No derivative is predicted then, as no value is."""
    n_in = len(p.inputs)
    ops = frozenset().union(*(cone(p, p.outputs[k]) for k in out_idx))
    return any(bool(np.any(np.isinf(st.err[n_in + i]))) for i in ops)


# relative error of the derivative in float32 (measured: the default grad tolerance since
# the mode exists), and per further op, in units of the lowest precision's unit roundoff
F32_RTOL = 2e-3
LOW_PRECISION_UNITS = 4.0


def directional_derivative(p: Program, out_idx: list[int], steps: tuple[float, ...] = (1e-2, 1e-3, 1e-4)) -> DirectionalDerivative:
    """(`_directional_derivative`, computed once per program, outputs and steps: the grad
    and grad_remat modes check the same number, 13 forward interpretations each.)"""
    return _directional_derivative(p, tuple(out_idx), steps)


@functools.lru_cache(maxsize=64)
def _directional_derivative(p: Program, out_idx_t: tuple[int, ...], steps: tuple[float, ...]) -> DirectionalDerivative:
    """<u, J v> at the grad point, from the smallest step; smooth only when every step
    agrees with itself and the last two agree with each other. (A max/min tie between
    two elements that lies within the largest step but not the smallest fools a
    single-step check.)

    The tolerance: float32 implementations within 2e-3 of the scale; a program computing
    in bfloat16 or float16 computes J v in that precision (jvp and vjp keep the primal's
    dtype), so each op may add a few units of its roundoff, relative to the magnitude
    sum |u| . |J v| (cancellation in <u, J v> does not cancel the error)."""
    out_idx = list(out_idx_t)
    point = grad_point(p)
    v = tangents(p)
    st0 = _at(p, point, v, 0.0, errors=True)  # (its bounds: `_may_overflow`)
    o0, w = _outs(p, point, v, 0.0, out_idx, st0)
    g0 = float(w @ o0)
    ests = [_estimate(p, point, v, out_idx, h, g0) for h in steps]
    jv = ests[-1][0]
    rich, prev = float(w @ jv), float(w @ ests[-2][0])
    scale = max(1.0, abs(rich), abs(g0) * 1e-2)
    smooth = all(ok for _, ok, _ in ests) and abs(rich - prev) <= 1e-3 * scale and not _may_overflow(p, st0, out_idx)
    st, _ = trace(p, with_values=False)
    u = max([unit_roundoff(t.dtype) for t in st.types] + [0.0])
    if u <= unit_roundoff("float32"):
        return DirectionalDerivative(rich, F32_RTOL * scale, smooth)
    rtol = max(F32_RTOL, LOW_PRECISION_UNITS * u * (1 + len(p.body)))
    return DirectionalDerivative(rich, rtol * max(scale, float(np.abs(w) @ np.abs(jv))), smooth)


# --- outputs whose derivative jax defines, per-output and second derivatives ---------


def _blocks_agree(data: np.ndarray, p: Program, k: int) -> bool:
    """Whether output k's per-device blocks (`data`: mesh.sizes + local shape) are the
    same along every mesh axis its out_spec leaves out (what an unmentioned axis
    promises, shard_map.md)."""
    named = set(p.out_specs[k].axes())
    for ai, a in enumerate(p.mesh.names):
        if a in named or p.mesh.sizes[ai] == 1:
            continue
        first = np.take(data, [0], axis=ai)
        scale = max(1.0, float(np.max(np.abs(data), initial=0.0)))
        if not np.allclose(np.broadcast_to(first, data.shape), data, rtol=0.0, atol=1e-9 * scale):
            return False
    return True


@functools.lru_cache(maxsize=64)
def defined_outputs(p: Program, out_idx: tuple[int, ...]) -> tuple[int, ...]:
    """The outputs of `out_idx` whose derivative jax defines at the grad point.

    With check_vma every output (jax checks each out_spec's promise). With
    check_vma=False jax checks nothing: an out_spec that leaves out an axis the output's
    blocks differ along breaks its promise, and then jax gives no defined derivative
    (jax 0.10.2, measured: the jvp tangent is one device's block, the vjp the mean over
    the blocks, `_shard_map_transpose` dividing an unmapped output's cotangent by the
    devices it leaves out). An output whose blocks and whose blocks' derivatives along
    the tangent agree there keeps its promise: its derivative is that of the documented
    function (the transposes with check_vma=False: psum to psum, the cotangent of an
    unmentioned axis divided by its size and an input's psummed over its unmentioned
    axes, which together give the true derivative of a replicated output)."""
    if p.check_vma:
        return out_idx
    point, v, h = grad_point(p), tangents(p), 1e-3
    base, up, down = (_at(p, point, v, t) for t in (0.0, h, -h))
    keep = []
    for k in out_idx:
        o = p.outputs[k]
        d = (up.values[o].astype(np.float64) - down.values[o].astype(np.float64)) / (2 * h)
        if _blocks_agree(base.values[o].astype(np.float64), p, k) and _blocks_agree(d, p, k):
            keep.append(k)
    return tuple(keep)


@dataclass(frozen=True)
class SecondDerivative:
    value: float  # d^2/dt^2 <u, outputs(x + t v)> at t = 0: v^T H v of s(x) = <u, outputs(x)>
    tolerance: float
    smooth: bool


@functools.lru_cache(maxsize=64)
def second_derivative(p: Program, out_idx: tuple[int, ...], steps: tuple[float, ...] = (1e-2, 1e-3)) -> SecondDerivative:
    """The second directional derivative of s(x) = <u, outputs(x)> along v at the grad
    point (the hessian mode's v^T H v), by Richardson-extrapolated central second
    differences of the float64 forward interpreter: exact for the piecewise-quadratic
    pieces the ops make (a product of two products is quartic: O(h^4) there), smooth
    only where both steps agree (a max/min tie or a cast's jump within a step is a
    kink: no value predicted)."""
    point, v = grad_point(p), tangents(p)
    idx = list(out_idx)
    g0 = _g(p, point, v, 0.0, idx)

    def d2(h: float) -> float:
        return (_g(p, point, v, h, idx) - 2 * g0 + _g(p, point, v, -h, idx)) / (h * h)

    ests = [(4 * d2(h / 2) - d2(h)) / 3 for h in steps]
    value = ests[-1]
    scale = max(1.0, abs(value), abs(g0) * 1e-2)
    smooth = abs(ests[-1] - ests[-2]) <= 1e-3 * scale
    st, _ = trace(p, with_values=False)
    u = max([unit_roundoff(t.dtype) for t in st.types] + [0.0])
    rtol = F32_RTOL if u <= unit_roundoff("float32") else max(F32_RTOL, LOW_PRECISION_UNITS * u * (1 + len(p.body)))
    return SecondDerivative(value, rtol * scale, smooth)
