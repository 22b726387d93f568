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

from oracles.checks import check_in_specs, check_out_specs, check_spec_types_and_axes
from oracles.devices import assemble_global, split_global
from oracles.ops import OPS, Ctx
from oracles.prediction import (
    OracleError,
    OutputPrediction,
    PredictedError,
    Prediction,
    ValueType,
)
from programs.model import Program

EXACT_LIMIT = 2.0**22  # float32 integer arithmetic is exact well below 2**24


@dataclass
class _State:
    types: list[ValueType]
    values: list[np.ndarray]
    exact: list[bool]
    scale: list[float]


def _fan_in(kind: str, ins: list[ValueType], ctx: Ctx) -> int:
    """How many terms one output element sums (for the exactness bound)."""
    if kind in ("psum", "pmean", "psum_scatter"):
        return ctx.mesh.group_size(tuple(ctx.op.p("axes")))  # type: ignore[arg-type]
    if kind == "reduce_sum":
        return max(1, ins[0].shape[int(ctx.op.p("axis"))])  # type: ignore[arg-type]
    return 1


def trace(
    p: Program, with_values: bool = True, batch: int = 0, inputs: list[np.ndarray] | None = None
) -> tuple[_State, PredictedError | None]:
    """Run every check and the body. Returns the state reached and the error, if any.
    `inputs` replaces the arguments' values (float64 for float arguments: derivatives)."""
    st = _State([], [], [], [])
    mesh = p.mesh
    manual = p.manual_axes
    try:
        check_spec_types_and_axes(p, p.in_specs, "in_specs")
        check_spec_types_and_axes(p, p.out_specs, "out_specs")
        locals_ = check_in_specs(p)
        for x, s, local in zip(p.inputs, p.in_specs, locals_):
            vma = frozenset(a for a in s.axes() if a in manual) if p.check_vma else None
            st.types.append(ValueType(local, x.dtype, vma))
            if with_values:
                g = x.materialize(batch) if inputs is None else inputs[len(st.values)]
                g = g.astype(np.int32 if x.dtype == "int32" else np.float64)
                st.values.append(split_global(g, mesh, s.entries))
                st.exact.append(True)
                st.scale.append(float(np.max(np.abs(g), initial=0)))
        for i, op in enumerate(p.body):
            ctx = Ctx(mesh, manual, p.check_vma, i, op)
            d = OPS[op.kind]
            ins = [st.types[j] for j in op.operands]
            d.check(ins, ctx)
            t = ValueType(d.shape(ins, ctx), d.dtype(ins, ctx), d.vma(ins, ctx) if p.check_vma else None)
            st.types.append(t)
            if with_values:
                v = d.value([st.values[j] for j in op.operands], ins, ctx)
                st.values.append(v)
                scale = max([float(np.max(np.abs(v), initial=0))] + [st.scale[j] * _fan_in(op.kind, ins, ctx) for j in op.operands])
                exact = (
                    all(st.exact[j] for j in op.operands)
                    and (d.exact_op or t.dtype == "int32")
                    and (t.dtype == "int32" or (scale <= EXACT_LIMIT and bool(np.all(np.mod(v, 1) == 0))))
                )
                st.exact.append(exact)
                st.scale.append(scale)
        check_out_specs(p, [st.types[o] for o in p.outputs])
    except OracleError as e:
        return st, e.error
    return st, None


def predict(p: Program, batch: int = 0, values: bool = True) -> Prediction:
    """The oracle's full prediction for one program (for member `batch` of a vmapped
    batch of its inputs; 0 is the plain program). `values=False` predicts errors, shapes,
    dtypes and varying axes only (all the abstract tier compares), at a fraction of the
    cost; its outputs' `device_values` and `global_value` are None."""
    st, err = trace(p, with_values=values, batch=batch)
    manual = p.manual_axes
    region = any(p.mesh.axis_size(a) > 1 for a in manual)
    if err is not None:
        return Prediction(err, (), tuple(st.types), manual, region)
    outs = []
    n_ops = len(p.body)
    for k, (o, s) in enumerate(zip(p.outputs, p.out_specs)):
        t = st.types[o]
        gshape = tuple(
            n * p.mesh.group_size(s.entries[d]) if d < len(s.entries) and s.entries[d] else n
            for d, n in enumerate(t.shape)
        )
        if not values:
            outs.append(OutputPrediction(k, t.shape, gshape, t.dtype, t.vma, None, None, False, 0.0, 0.0))
            continue
        data = st.values[o]
        m = len(p.mesh.sizes)
        named = set(s.axes())
        replicated_ok = True
        for ai, a in enumerate(p.mesh.names):
            if a not in named and p.mesh.sizes[ai] > 1:
                first = np.take(data, [0], axis=ai)
                if not np.array_equal(np.broadcast_to(first, data.shape), data):
                    replicated_ok = False
        glob = assemble_global(data, p.mesh, s.entries) if replicated_ok else None
        exact = st.exact[o]
        rtol = 0.0 if exact else 1e-5 * (1 + n_ops)
        atol = 0.0 if exact else rtol * max(1.0, st.scale[o])
        outs.append(
            OutputPrediction(k, t.shape, gshape, t.dtype, t.vma, data[(slice(None),) * m], glob, exact, rtol, atol)
        )
    return Prediction(None, tuple(outs), tuple(st.types), manual, region)
