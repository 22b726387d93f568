"""The oracle's prediction as Python literals for the generated script: the expected error
(types, phrases, facts), every body value's type, each output's shape, dtype and blocks
(vmap: the batch), the lowering facts and the finite-difference <u, J v>.
"""

from __future__ import annotations

import math

import numpy as np

from harness.judge.compare_facts import expected_shardings
from harness.judge.compare_outputs import batch_atol, compiler_layout, fixed_dims, window_index
from harness.judge.errors import ERROR_TABLE
from harness.report.reproducer.mode_choice import VALUE_MODES, auto_axes, batch_size
from oracles import predict
from oracles.derivatives import defined_outputs, directional_derivative, second_derivative
from oracles.effects import device_calls
from oracles.prediction import Prediction
from programs.model import Program, is_float
from programs.ops import WRAP_COPIES
from programs.points import DERIVATIVE_MODES


def _num(v: float | int) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "np.nan"
        if math.isinf(v):
            return "np.inf" if v > 0 else "-np.inf"
        return repr(v)
    return str(int(v))


def array_literal(a: np.ndarray) -> str:
    """An array literal: integer and bool values as int64 (uint32 past 2**31 included),
    everything else as float64 (the oracle's own precision)."""
    a = np.asarray(a)
    dt = "int64" if a.dtype.kind in "iub" else "float64"
    items = ", ".join(_num(v) for v in a.reshape(-1).tolist())
    return f"np.array([{items}], dtype=np.{dt}).reshape({tuple(a.shape)!r})"


def _tol(x: float) -> str:
    """A tolerance as source: infinite (the values may overflow) as float('inf')."""
    return "float('inf')" if np.isinf(x) else repr(x)


def _mask(m: np.ndarray | None) -> str:
    """An output's elements of no predicted value (OutputPrediction.unchecked) as source."""
    return "None" if m is None else f"{array_literal(m)}.astype(bool)"


def doc_text(s: str) -> str:
    """Text for the generated file's docstring: backslashes and triple quotes escaped."""
    return s.replace("\\", "\\\\").replace('"""', "'''")


def summary(p: Program, pred: Prediction, mode: str) -> str:
    """One line: what jax must do."""
    if pred.error is not None:
        sig = ERROR_TABLE[pred.error.kind]
        return f"{'/'.join(sig.types)} ({pred.error.kind.value}: {pred.error.why})"
    outs = ", ".join(f"{o.dtype}{list(o.global_shape)}" for o in pred.outputs)
    what = {"abstract": "shapes, dtypes and varying axes", "lowering": "one manual region per the specs" if pred.expect_region
            else "no manual region (every manual axis has size 1)", "grad": "<u, J v> by jvp and vjp",
            "grad_remat": "<u, J v> by jvp and vjp", "jvp": "<u, J v> by jax.jvp", "linearize": "<u, J v> by jax.linearize",
            "hessian": "v^T H v by jax.hessian and <u, J v> by jax.jacfwd"}.get(mode, "per-device values")
    return f"{len(pred.outputs)} output(s) {outs}; {what}"


def types_literal(p: Program, pred: Prediction) -> list[str]:
    n_in = len(p.inputs)
    # a value a known entry's repair retypes (a pcast marked repair=True after it: jax types
    # it invariant where it varies, oracles/rewrites.py vary_after) keeps jax's type there:
    # its varying axes are not checked, the ops after the repair are
    retyped = {op.operands[0] for op in p.body if op.kind == "pcast" and op.p("repair")}
    rows = []
    for i, t in enumerate(pred.value_types):
        name = f"a{i}" if i < n_in else f"v{i - n_in}"
        vma = None if t.vma is None or i in retyped else sorted(t.vma)
        rows.append(f"  ({name!r}, {tuple(t.shape)!r}, {t.dtype!r}, {vma!r}),")
    return ["# every body value's per-device type inside the body: name, shape, dtype, varying manual axes",
            "EXPECTED_TYPES = [", *rows, "]"]


def outputs_literal(p: Program, pred: Prediction, mode: str) -> list[str]:
    """EXPECTED_OUTPUTS: per output, what the mode compares."""
    rows = []
    if mode in ("vmap", "vmap_spmd"):
        n = batch_size(p, mode)
        members = [pred] + [predict(p, batch=b) for b in range(1, n)]
        for k, e in enumerate(pred.outputs):
            wants = [m.outputs[k].global_value for m in members]
            exact = all(m.outputs[k].exact for m in members)
            atol = batch_atol([m.outputs[k] for m in members])
            value = "None" if any(w is None for w in wants) else array_literal(np.stack(wants))  # type: ignore[arg-type]
            rows.append(f"  dict(shape={(n,) + e.global_shape!r}, dtype={e.dtype!r}, value={value}, "
                        f"exact={exact}, rtol={e.rtol!r}, atol={_tol(atol)}),")
        head = f"# each output: the batch of {n} (the oracle run once per batch member, stacked on axis 0)"
    elif mode in VALUE_MODES:
        mixed = compiler_layout(p)
        auto = bool(auto_axes(p)) or mixed
        for e in pred.outputs:
            exact = e.exact
            glob = array_literal(e.global_value) if auto and e.global_value is not None else "None"
            sharding = None if e.sharding is None else ([list(d) for d in e.sharding[0]], sorted(e.sharding[1]), sorted(e.sharding[2]))
            windows = "None"
            if mixed and e.global_value is not None:  # each device's part of the global value along the fixed dimensions
                dims = fixed_dims(p, e.index, len(e.global_shape))
                windows = repr({c: window_index(p, e.index, e.global_shape, c, dims) for c in p.mesh.coords()})
            rows.append(f"  dict(shape={e.global_shape!r}, dtype={e.dtype!r}, blocks={array_literal(e.device_values)}, "  # type: ignore[arg-type]
                        f"value={glob}, exact={exact}, rtol={e.rtol!r}, atol={_tol(e.atol)}, unchecked={_mask(e.unchecked)}, "
                        f"spec={p.out_specs[e.index]!r}, "
                        f"sharding={sharding!r}, windows={windows}),")
        head = "# each output: global shape, dtype, blocks[mesh coordinate] = that device's block"
    else:
        for e in pred.outputs:
            rows.append(f"  dict(shape={e.global_shape!r}, dtype={e.dtype!r}),")
        head = "# each output: global shape and dtype"
    return [head, "EXPECTED_OUTPUTS = [", *rows, "]"]


def lowering_literal(p: Program, pred: Prediction) -> list[str]:
    """What compare's lowering check expects (harness/judge/compare_facts.py compare_lowering)."""
    manual = tuple(pred.manual_axes)
    nested: list[list[str]] = []
    for op in p.body:
        axes = op.p("inner_axes") if op.kind == "shard_map" else ()
        inner = sorted(str(a) for a in axes) if isinstance(axes, tuple) else []
        if inner and any(p.mesh.axis_size(a) > 1 for a in inner):
            nested += [inner] * (WRAP_COPIES[str(op.p("wrap"))] if op.p("wrap") else 1)  # one region per copy (cond branches, loop init)
    # (the shard_map's own arguments: with values the body closes over, jax puts those it
    # makes region arguments first, `closed` at most: harness/judge/compare_facts.py)
    passed = p.passed
    want_in = expected_shardings(tuple(p.in_specs[i] for i in passed), [len(pred.value_types[i].shape) for i in passed], manual)
    want_out = expected_shardings(p.out_specs, [len(o.local_shape) for o in pred.outputs], manual)
    blocks = [list(pred.value_types[i].shape) for i in passed]
    return [
        "# the Shardy lowering: one sdy.manual_computation over exactly the manual axes (none when every",
        "# manual axis has size 1), one more per nested shard_map, and its shardings and block shapes",
        "EXPECTED_LOWERING = dict(",
        f"  regions={1 if pred.expect_region else 0}, manual_axes={sorted(manual)!r}, nested={nested!r},",
        f"  in_shardings={want_in!r}, out_shardings={want_out!r}, block_shapes={blocks!r},",
        *([f"  closed={len(p.inputs) - len(passed)},  # values the body closes over: region arguments before the others"]
          if len(passed) < len(p.inputs) else []),
        ")",
    ]


EFFECT_MODES = ("jit", "gspmd", "eager", "vmap", "vmap_spmd")  # (harness/judge/compare.py: the modes that compare calls)


def calls_literal(p: Program, pred: Prediction, mode: str) -> list[str]:
    """EXPECTED_CALLS: per effect, every call it may make (each device's coordinates along
    the manual axes and its block; under vmap, of every batch member)."""
    members = [pred] + ([predict(p, batch=b) for b in range(1, batch_size(p, mode))] if mode in ("vmap", "vmap_spmd") else [])
    rows = []
    for k, e in enumerate(pred.effects):
        calls = [f"({list(c)!r}, {array_literal(b)})" for m in members for _, c, b in device_calls(p, m.effects[k])]
        name = f"a{e.value}" if e.value < len(p.inputs) else f"v{e.value - len(p.inputs)}"
        rows.append(f"  dict(kind={e.kind!r}, value={name!r}, manual={list(e.manual)!r}, exact={e.exact}, rtol=0.0, "
                    f"atol={_tol(max(m.effects[k].atol for m in members))}, calls=[{', '.join(calls)}]),")
    return ["# each effect: the calls it may make, one per device (coordinates along the manual axes, block)",
            "EXPECTED_CALLS = [", *rows, "]"]


def grad_literal(p: Program, pred: Prediction, mode: str = "grad") -> list[str]:
    floats = tuple(k for k, o in enumerate(pred.outputs) if is_float(o.dtype))
    # (check_vma=False: only the outputs that keep their out_spec's promise have a
    # derivative; run() differentiates those)
    out_idx = list(defined_outputs(p, floats)) if floats else []
    d = directional_derivative(p, out_idx) if out_idx else None
    lines = [
        "# <u, J v> at the grad point, by finite differences (Richardson) of the forward semantics in",
        "# float64 (hessian: also v^T H v, by second differences); None where the point sits on a kink",
        "# (a max/min tie) or no output is a float (check_vma=False: one that keeps its out_spec's promise)",
    ]
    if d is None or not d.smooth:
        return lines + [f"EXPECTED_DERIVATIVE = None  # float outputs: {list(floats)}"]
    second = ""
    if mode == "hessian":
        s = second_derivative(p, tuple(out_idx))
        second = f", second={s.value!r}, second_tolerance={s.tolerance!r}" if s.smooth else ", second=None"
    return lines + [f"EXPECTED_DERIVATIVE = dict(outputs={out_idx!r}, value={d.value!r}, tolerance={d.tolerance!r}{second})"]


def error_literal(pred: Prediction) -> list[str]:
    e = pred.error
    if e is None:
        return ["EXPECTED_ERROR = None  # the program is valid: jax must run it"]
    sig = ERROR_TABLE[e.kind]
    return [
        "# jax must raise one of these types, its message naming one of the phrases and every fact",
        "EXPECTED_ERROR = dict(",
        f"  kind={e.kind.value!r}, types={sig.types!r}, phrases={sig.phrases!r}, facts={tuple(e.facts)!r},",
        f"  why={e.why!r},",
        ")",
    ]


def expectations(p: Program, pred: Prediction, mode: str) -> list[str]:
    lines = error_literal(pred) + [""] + types_literal(p, pred)
    if pred.error is None:
        lines += [""] + outputs_literal(p, pred, mode)
        if mode == "lowering":
            lines += [""] + lowering_literal(p, pred)
        if mode in DERIVATIVE_MODES:
            lines += [""] + grad_literal(p, pred, mode)
        if p.effects and mode in EFFECT_MODES:
            lines += [""] + calls_literal(p, pred, mode)
    return lines
