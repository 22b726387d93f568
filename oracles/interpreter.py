"""The lockstep interpreter: predict what `jax.shard_map` does with a program.

`predict(program)` runs, in order, the checks jax makes before tracing (specs against
the mesh and the arguments), the body op by op on every device at once (each op's check,
shape, vma and value rule from `oracles/ops.py`), and the checks jax makes after tracing
(out_specs against the outputs, replication). It never imports jax.

Semantics follow jax 0.10.2's docs/notebooks/shard_map.md ("API Specification": in_specs
split, out_specs concatenate, an axis missing from an out_spec promises replication, which
check_vma=True verifies statically).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oracles.devices import assemble_global, split_global
from oracles.ops import OPS, Ctx
from oracles.prediction import (
    ErrorKind,
    OracleError,
    OutputPrediction,
    PredictedError,
    Prediction,
    ValueType,
)
from programs.model import Program, Spec

EXACT_LIMIT = 2.0**22  # float32 integer arithmetic is exact well below 2**24


def _spec_errors(
    specs: tuple[Spec, ...], ranks: list[int] | None, shapes: list[tuple[int, ...]] | None, p: Program, which: str
) -> None:
    """Checks one list of specs (in_specs or out_specs) against the mesh and the values."""
    mesh = p.mesh
    for i, s in enumerate(specs):
        path = f"{which}[{i}]"
        if s.kind != "P":
            raise OracleError(
                PredictedError(
                    ErrorKind.SPEC_TYPE,
                    (which,),
                    f"{path} is {s!r}, which is not a PartitionSpec; wrap it as P(...)",
                )
            )
        for a in s.axes():
            if a not in mesh.names:
                raise OracleError(
                    PredictedError(
                        ErrorKind.SPEC_UNKNOWN_AXIS,
                        (a,),
                        f"{path}={s!r} names axis {a!r}, but the mesh axes are {mesh.names}",
                    )
                )
        seen: set[str] = set()
        for a in s.axes():
            if a in seen:
                raise OracleError(
                    PredictedError(
                        ErrorKind.SPEC_DUPLICATE_AXIS,
                        (a,),
                        f"{path}={s!r} uses mesh axis {a!r} more than once",
                    )
                )
            seen.add(a)
    for i, s in enumerate(specs):
        path = f"{which}[{i}]"
        argpath = f"args[{i}]" if which == "in_specs" else f"[{i}]"
        if ranks is not None and len(s.entries) > ranks[i]:
            kind = ErrorKind.IN_SPEC_RANK if which == "in_specs" else ErrorKind.OUT_SPEC_RANK
            raise OracleError(
                PredictedError(
                    kind,
                    (argpath, str(ranks[i])),
                    f"{path}={s!r} has {len(s.entries)} entries but {argpath} has rank {ranks[i]}",
                )
            )
        if shapes is not None:
            for d, e in enumerate(s.entries):
                if e and shapes[i][d] % mesh.group_size(e) != 0:
                    raise OracleError(
                        PredictedError(
                            ErrorKind.IN_SPEC_DIVISIBILITY,
                            (argpath, str(shapes[i][d]), str(mesh.group_size(e))),
                            f"{argpath} dimension {d} has size {shapes[i][d]}, not divisible by "
                            f"{mesh.group_size(e)} (the size of mesh axes {e})",
                        )
                    )


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


def trace(p: Program, with_values: bool = True) -> tuple[_State, PredictedError | None]:
    """Run every check and the body. Returns the state reached and the error, if any."""
    st = _State([], [], [], [])
    mesh = p.mesh
    manual = p.manual_axes
    try:
        if len(p.in_specs) != len(p.inputs):
            raise OracleError(
                PredictedError(
                    ErrorKind.IN_SPECS_STRUCTURE,
                    ("in_specs",),
                    f"in_specs has {len(p.in_specs)} entries but there are {len(p.inputs)} arguments",
                )
            )
        _spec_errors(p.in_specs, [len(x.shape) for x in p.inputs], [x.shape for x in p.inputs], p, "in_specs")
        for x, s in zip(p.inputs, p.in_specs):
            entries = s.entries
            local = tuple(
                n // mesh.group_size(entries[d]) if d < len(entries) and entries[d] else n
                for d, n in enumerate(x.shape)
            )
            vma = frozenset(a for a in s.axes() if a in manual) if p.check_vma else None
            st.types.append(ValueType(local, x.dtype, vma))
            if with_values:
                g = x.materialize()
                g = g.astype(np.int32 if x.dtype == "int32" else np.float64)
                st.values.append(split_global(g, mesh, entries))
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
        if len(p.out_specs) != len(p.outputs):
            raise OracleError(
                PredictedError(
                    ErrorKind.OUT_SPECS_STRUCTURE,
                    ("out_specs",),
                    f"out_specs has {len(p.out_specs)} entries but the body returns {len(p.outputs)} values",
                )
            )
        out_types = [st.types[o] for o in p.outputs]
        _spec_errors(p.out_specs, [len(t.shape) for t in out_types], None, p, "out_specs")
        if p.check_vma:
            for k, (t, s) in enumerate(zip(out_types, p.out_specs)):
                missing = sorted((t.vma or frozenset()) - set(s.axes()))
                if missing:
                    raise OracleError(
                        PredictedError(
                            ErrorKind.OUT_SPEC_REPLICATION,
                            (repr(s), *(repr(a) for a in missing)),
                            f"out_specs[{k}]={s!r} leaves out {missing}, but output {k} varies "
                            f"along them (vma={sorted(t.vma or ())}); name them in the out_spec, "
                            "reduce over them (psum) or pass check_vma=False",
                        )
                    )
    except OracleError as e:
        return st, e.error
    return st, None


def predict(p: Program) -> Prediction:
    """The oracle's full prediction for one program."""
    st, err = trace(p)
    manual = p.manual_axes
    region = any(p.mesh.axis_size(a) > 1 for a in manual)
    if err is not None:
        return Prediction(err, (), tuple(st.types), manual, region)
    outs = []
    n_ops = len(p.body)
    for k, (o, s) in enumerate(zip(p.outputs, p.out_specs)):
        t = st.types[o]
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
        gshape = tuple(
            n * p.mesh.group_size(s.entries[d]) if d < len(s.entries) and s.entries[d] else n
            for d, n in enumerate(t.shape)
        )
        exact = st.exact[o]
        rtol = 0.0 if exact else 1e-5 * (1 + n_ops)
        atol = 0.0 if exact else rtol * max(1.0, st.scale[o])
        outs.append(
            OutputPrediction(k, t.shape, gshape, t.dtype, t.vma, data[(slice(None),) * m], glob, exact, rtol, atol)
        )
    return Prediction(None, tuple(outs), tuple(st.types), manual, region)
