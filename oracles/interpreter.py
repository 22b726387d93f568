"""The lockstep interpreter: predict what `jax.shard_map` does with a program.

`predict(program)` runs, in order, the checks jax makes before tracing (specs against
the mesh and the arguments), the body op by op on every device at once (each op's check,
shape, vma and value rule from `oracles/ops/`), and the checks jax makes after tracing
(out_specs against the outputs, replication). It never imports jax.

Semantics follow jax 0.10.2's docs/notebooks/shard_map.md ("API Specification": in_specs
split, out_specs concatenate, an axis missing from an out_spec promises replication, which
check_vma=True verifies statically).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oracles.checks import (
    check_call_form,
    check_in_specs,
    check_out_specs,
    check_spec_types_and_axes,
)
from oracles.devices import assemble_global, np_dtype, split_global
from oracles.effects import effect_predictions
from oracles.explicit import (
    FreeSharding,
    ShardingType,
    check_arg_shardings,
    check_out_ur,
    check_typed_closures,
    check_unreduced_specs,
    free_placed,
    free_shardings,
    out_sharding,
)
from oracles.ops import OPS, Ctx
from oracles.prediction import (
    OracleError,
    OutputPrediction,
    PredictedError,
    Prediction,
    ValueType,
)
from oracles.rounding import combine, integral, is_clean
from programs.model import Program


@dataclass
class _State:
    types: list[ValueType]
    values: list[np.ndarray]
    err: list[np.ndarray]  # per element: how far jax's value may be from the oracle's (oracles/rounding.py)
    clean: list[bool]  # no error and every element an integer


def tolerance(st: _State, v: int) -> tuple[bool, float, float, np.ndarray | None]:
    """(exact, rtol, atol, unchecked) for value `v`. `unchecked`: True at the elements
    whose error bound is infinite (a float cast past an integer's range, a value that
    may overflow: no value is predicted there), None where there is none; atol is
    infinite only where every element is. Over the other elements: exact when none
    carries an error (jax must match bit for bit), otherwise the largest error bound,
    plus the float64 oracle's own rounding."""
    err = st.err[v]
    bad = ~np.isfinite(err)
    unchecked = bad if bad.any() else None
    if unchecked is not None and bad.all():
        return False, 0.0, float("inf"), None
    err = np.where(bad, 0.0, err)
    vals = np.where(bad, 0.0, st.values[v].astype(np.float64))
    if not np.any(err):
        return True, 0.0, 0.0, unchecked
    worst = float(np.max(err))
    scale = float(np.max(np.abs(vals), initial=0.0))
    # (a float64 result: its bound already holds the oracle's own rounding, SAFETY_F64;
    # 1e-12 would be 10**4 of its roundings: a few units of the last place instead)
    own = 4 * 2.0**-53 if st.types[v].dtype == "float64" else 1e-12
    return False, 0.0, worst + own * max(1.0, scale), unchecked


_NO_ERR = np.zeros(0)  # the error bound `trace(errors=False)` leaves in place of each


def trace(
    p: Program, with_values: bool = True, batch: int = 0, inputs: list[np.ndarray] | None = None,
    errors: bool = True,
) -> tuple[_State, PredictedError | None]:
    """Run every check and the body. Returns the state reached and the error, if any.
    `inputs` replaces the arguments' values (float64 for float arguments: derivatives,
    which also take casts as real arithmetic, not rounding: `Ctx.rounding`).
    `errors=False` leaves out the error bounds (`st.err`, `st.clean` hold placeholders):
    the derivatives' displaced points need only the values, and the bounds cost as much
    as the values again (oracles/derivatives.py)."""
    st = _State([], [], [], [])
    mesh = p.mesh
    manual = p.manual_axes
    rounding = inputs is None
    try:
        p = check_call_form(p)  # (the specs as jax reads them; in_specs left out only on Explicit axes)
        check_spec_types_and_axes(p, p.in_specs, "in_specs")
        check_spec_types_and_axes(p, p.out_specs, "out_specs")
        check_unreduced_specs(p, p.in_specs, "in_specs")
        check_unreduced_specs(p, p.out_specs, "out_specs")
        locals_ = check_in_specs(p)
        check_arg_shardings(p)
        check_typed_closures(p)
        for x, s, local in zip(p.inputs, p.in_specs, locals_):
            vma = frozenset(a for a in s.axes() if a in manual) if p.check_vma else None
            ur = (frozenset(s.unreduced), frozenset(s.reduced)) if p.check_vma else (frozenset(), frozenset())
            st.types.append(ValueType(local, x.dtype, vma, *ur))
            if with_values:
                g = x.materialize(batch) if inputs is None else inputs[len(st.values)]
                g = g.astype(np_dtype(x.dtype))
                v = split_global(g, mesh, s.entries)
                st.values.append(v)
                st.err.append(np.zeros(v.shape))
                st.clean.append(bool(np.all(integral(v))))
        for i, op in enumerate(p.body):
            ctx = Ctx(mesh, manual, p.check_vma, i, op, rounding, p.x64)
            d = OPS[op.kind]
            ins = [st.types[j] for j in op.operands]
            d.check(ins, ctx)
            ur = d.ur(ins, ctx) if p.check_vma else (frozenset(), frozenset())
            t = ValueType(d.shape(ins, ctx), d.dtype(ins, ctx), d.vma(ins, ctx) if p.check_vma else None, *ur)
            st.types.append(t)
            if with_values:
                xs = [st.values[j] for j in op.operands]
                with np.errstate(invalid="ignore", over="ignore"):
                    v = d.value(xs, ins, ctx)
                    if not errors:
                        st.values.append(v)
                        st.err.append(_NO_ERR)
                        st.clean.append(False)
                        continue
                    prop, mag, terms = d.error(xs, [st.err[j] for j in op.operands], v, ins, ctx)
                    clean = all(st.clean[j] for j in op.operands) and not d.rounds_integers(ins, ctx)
                    e = combine(v, t.dtype, prop, mag, terms, clean)
                st.values.append(v)
                st.err.append(e)
                st.clean.append(is_clean(v, e))
        check_out_specs(p, [st.types[o] for o in p.outputs])
        check_out_ur(p, [st.types[o] for o in p.outputs])
    except OracleError as e:
        return st, e.error
    return st, None


def _out_type(p: Program, k: int, rank: int, free: list[FreeSharding | None] | None, o: int) -> ShardingType | None:
    """Output `k`'s sharding type (`out_sharding`); None (not predicted) where it is
    split over free Explicit axes past an op whose rule the oracle does not have."""
    if free is None:
        return out_sharding(p, k, rank)
    if free[o] is None or len(p.explicit_axes) != len(p.mesh.names):
        # (with an Auto axis on the mesh jax 0.10.2 leaves the free axes out of the output's
        # type, and eager out of the body's, where _unshard_shaped_array joins them:
        # not predicted; strategies/edges.py draws no such placement)
        return None
    return out_sharding(p, k, rank, free[o])


def predict(p: Program, batch: int = 0, values: bool = True) -> Prediction:
    """The oracle's full prediction for one program (for member `batch` of a vmapped
    batch of its inputs; 0 is the plain program). `values=False` predicts errors, shapes,
    dtypes and varying axes only (all the abstract tier compares), at a fraction of the
    cost; its outputs' `device_values` and `global_value` are None."""
    st, err = trace(p, with_values=values, batch=batch)
    if err is None:
        p = check_call_form(p)  # (one spec per output, as jax reads a single one)
    manual = p.manual_axes
    region = any(p.mesh.axis_size(a) > 1 for a in manual)
    if err is not None:
        return Prediction(err, (), tuple(st.types), manual, region)
    outs = []
    # (arguments placed over free Explicit axes: their sharding joins the outputs' types)
    free = free_shardings(p, st.types) if free_placed(p) else None
    for k, (o, s) in enumerate(zip(p.outputs, p.out_specs)):
        t = st.types[o]
        gshape = tuple(
            n * p.mesh.group_size(s.entries[d]) if d < len(s.entries) and s.entries[d] else n
            for d, n in enumerate(t.shape)
        )
        if not values:
            outs.append(OutputPrediction(k, t.shape, gshape, t.dtype, t.vma, None, None, False, 0.0, 0.0,
                                         _out_type(p, k, len(t.shape), free, o)))
            continue
        data = st.values[o]
        m = len(p.mesh.sizes)
        named = set(s.axes()) | set(s.unreduced)  # an unreduced output's parts differ by design
        replicated_ok = True
        for ai, a in enumerate(p.mesh.names):
            if a not in named and p.mesh.sizes[ai] > 1:
                first = np.take(data, [0], axis=ai)
                if not np.array_equal(np.broadcast_to(first, data.shape), data):
                    replicated_ok = False
        # an unreduced output's value is the sum of its parts over those axes; jax
        # gives only the parts (its blocks), so no global value is predicted
        glob = assemble_global(data, p.mesh, s.entries) if replicated_ok and not s.unreduced else None
        exact, rtol, atol, unchecked = tolerance(st, o)
        outs.append(
            OutputPrediction(
                k, t.shape, gshape, t.dtype, t.vma, data[(slice(None),) * m], glob, exact, rtol, atol,
                _out_type(p, k, len(t.shape), free, o), unchecked,
            )
        )
    effects = effect_predictions(
        p, st.values if values else None,
        [(lambda t: (t[0], t[2], t[3]))(tolerance(st, e.value)) for e in p.effects] if values else None)
    return Prediction(None, tuple(outs), tuple(st.types), manual, region, effects=effects)
