"""The draw of a derivative transform (an op of kind "transform"): jax.jvp, jax.vjp or
jax.grad of a short sub-body of local ops and linear collectives, plain or as a
custom_jvp / custom_vjp with a known rule (programs/ops.py TRANSFORM_SOURCE)."""

from __future__ import annotations

import hashlib
import math
from itertools import permutations
from typing import TYPE_CHECKING

from hypothesis import event
from hypothesis import strategies as st

from oracles.ops import OPS, Ctx
from oracles.prediction import OracleError, ValueType
from programs.model import Op, ParamValue, is_float
from programs.ops import CUSTOMS, TRANSFORM_STEP_KINDS, TRANSFORMS
from strategies import reuse

if TYPE_CHECKING:
    from strategies.body import Body

# the oracle's Jacobian has one column per operand element over every device: kept small
MAX_ELEMENTS = 256
MAX_STEPS = 3


def _spread(draw: st.DrawFn, options: list[str] | tuple[str, ...] | range, label: str):  # type: ignore[no-untyped-def]
    """One of `options`, evenly (Hypothesis favours the first of a sampled_from strongly:
    jvp was drawn nine times as often as grad); a hash of the drawn integer, as `large`."""
    n = draw(st.integers(0, 9999), label=label)
    h = int.from_bytes(hashlib.sha256(n.to_bytes(8, "big")).digest()[:8], "big")
    return options[h % len(options)]


def _suitable(body: Body, i: int) -> bool:
    v = body.vals[i]
    return (is_float(v.dtype) and i not in body.python_numbers and i not in body.weak and not v.unreduced and not v.reduced
            and body.mesh.size * math.prod(v.shape) <= MAX_ELEMENTS)


def _step_params(body: Body, draw: st.DrawFn, kind: str, cur: ValueType, k: int) -> tuple[tuple[int, ...], dict[str, ParamValue]] | None:
    """(operands, params) of one step of `kind` reading value k (of type `cur`), or None
    where the value does not allow it."""
    r = len(cur.shape)
    if kind == "neg":
        return (k,), {}
    if kind == "mul":
        return (k, draw(reuse.sampled_from([k, 0]), label="step_mul_by")), {}
    if kind == "reduce_sum":
        return ((k,), {"axis": draw(st.integers(0, r - 1), label="step_axis")}) if r else None
    if kind == "transpose":
        return ((k,), {"perm": tuple(draw(reuse.permutations(list(range(r))), label="step_perm"))}) if r >= 2 else None
    if not body.usable:
        return None
    axes = tuple(draw(reuse.sampled_from([p for n in range(1, len(body.usable) + 1) for p in permutations(body.usable, n)]), label="step_axes"))
    n = body.mesh.group_size(axes)
    vma = cur.vma or frozenset()
    if kind in ("psum", "pmean", "psum_scatter") and body.check_vma:
        inside = tuple(a for a in axes if a in vma)
        axes = inside or axes  # all or none of the named axes in the operand's vma
        n = body.mesh.group_size(axes)
    if kind in ("psum", "pmean"):
        return (k,), {"axes": axes}
    if kind == "all_gather":
        tiled = r > 0 and draw(st.booleans(), label="step_tiled")
        params: dict[str, ParamValue] = {"axes": axes, "axis": draw(st.integers(0, r - 1 if tiled else r), label="step_axis"), "tiled": tiled}
        # (jax.lax.all_gather's to= forms: its result varying, or invarying over the axes)
        to = draw(reuse.sampled_from([None, None, "varying", "invarying"]), label="step_to")
        if to is not None:
            params["to"] = to
            event(f"transform step: all_gather to={to}")
        return (k,), params
    if kind in ("psum_scatter", "all_to_all"):
        tiled = draw(st.booleans(), label="step_tiled")
        dims = [d for d in range(r) if (cur.shape[d] % n == 0 if tiled else cur.shape[d] == n)]
        if not dims:
            return None
        d = draw(reuse.sampled_from(dims), label="step_dim")
        if kind == "psum_scatter":
            return (k,), {"axes": axes, "scatter_dimension": d, "tiled": tiled}
        return (k,), {"axes": axes, "split_axis": d, "concat_axis": draw(st.integers(0, r - 1), label="step_concat"), "tiled": tiled}
    if kind == "ppermute":
        shift = draw(st.integers(0, max(0, n - 1)), label="step_shift")
        m = draw(st.integers(1, n), label="step_pairs")
        return (k,), {"axes": axes, "perm": tuple((i, (i + shift) % n) for i in range(m))}
    if kind == "pshuffle":
        return (k,), {"axes": axes, "perm": tuple(draw(reuse.permutations(list(range(n))), label="step_perm"))}
    if kind == "pswapaxes":
        dims = [d for d in range(r) if cur.shape[d] == n]
        return ((k,), {"axes": axes, "axis": draw(reuse.sampled_from(dims), label="step_dim")}) if dims else None
    # pcast to varying over axes the value does not vary along yet
    free = tuple(a for a in axes if a not in vma) if body.check_vma else axes
    return ((k,), {"axes": free, "to": "varying"}) if free else None


def draw_transform(body: Body, draw: st.DrawFn, idx: int) -> bool:
    """A transform of a float operand whose blocks over every device hold at most
    MAX_ELEMENTS elements: 1..MAX_STEPS steps, each typed by the oracle's rules for its
    kind (a step they reject is left out), then jvp / vjp / grad, plain or custom (never
    jvp of a custom_vjp: jax refuses it, see oracles/ops/transform.py)."""
    ok = [i for i in range(len(body.vals)) if _suitable(body, i)]
    if not ok:
        return False
    if idx not in ok:
        idx = draw(reuse.sampled_from(ok), label="transform_operand")
    types = [ValueType(*_fields(body, idx))]
    steps: list[tuple[str, tuple[int, ...], tuple[tuple[str, ParamValue], ...]]] = []
    for _ in range(_spread(draw, range(1, MAX_STEPS + 1), "n_steps")):
        kind = _spread(draw, TRANSFORM_STEP_KINDS, "step_kind")
        k = len(types) - 1
        made = _step_params(body, draw, kind, types[k], k)
        if made is None:
            continue
        step = Op.make(kind, made[0], **made[1])
        ctx = Ctx(body.mesh, body.manual, body.check_vma, len(body.ops), step, x64=body.x64)
        d, ins = OPS[kind], [types[j] for j in step.operands]
        try:
            d.check(ins, ctx)
            t = ValueType(d.shape(ins, ctx), d.dtype(ins, ctx), d.vma(ins, ctx) if body.check_vma else None)
        except (OracleError, NotImplementedError):
            continue
        if body.mesh.size * math.prod(t.shape) > 4 * MAX_ELEMENTS:
            continue  # (all_gather grows the value: the Jacobian stays small)
        types.append(t)
        steps.append((step.kind, step.operands, step.params))
        event(f"transform step: {kind}")
    if not steps:
        return False
    transform = _spread(draw, TRANSFORMS, "transform")
    custom = _spread(draw, [c for c in CUSTOMS if not (transform == "jvp" and c == "custom_vjp")], "custom")
    op = Op.make("transform", (idx,), transform=transform, custom=custom, steps=tuple(steps))
    if body.push(op) is None:
        return False
    event(f"transform: {transform}")
    event(f"transform custom: {custom}")
    event(f"transform steps: {len(steps)}")
    return True


def _fields(body: Body, i: int) -> tuple[tuple[int, ...], str, frozenset[str] | None]:
    v = body.vals[i]
    return v.shape, v.dtype, (frozenset(v.vma) if body.check_vma else None)
