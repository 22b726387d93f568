"""`shardfuzz explain`: the spec checker a developer reaches for first.

Prints the mesh, each argument's global and per-device shape, the type (shape, dtype,
varying axes) after every body op, each output's shapes, and, for a program jax must
reject, which check fails and why, next to what jax actually said. Given what jax's
abstract run saw (each body value's shape, dtype and varying axes, read with jax.typeof
while tracing), every value shows jax's type beside the oracle's and marks a mismatch.
"""

from __future__ import annotations

from collections.abc import Mapping

from oracles.interpreter import trace
from oracles.prediction import ValueType
from programs.body_text import op_source, value_names
from programs.model import Program

# value index -> (per-device shape, dtype, varying axes or None): Observation.value_types
Observed = Mapping[int, tuple[tuple[int, ...], str, "frozenset[str] | None"]]


def _vma(v: frozenset[str] | None) -> str:
    if v is None:
        return "(untracked: check_vma=False)"
    return "{" + ", ".join(sorted(v)) + "}" if v else "{} (invariant)"


def _jax_side(i: int, t: ValueType | None, observed: Observed | None) -> str:
    """What jax saw for value i, and whether it agrees with the oracle's type `t`."""
    if observed is None:
        return ""
    if i not in observed:
        return "\n      jax: (not traced)"
    shape, dtype, vma = observed[i]
    mine = f"{dtype}{list(shape)} varies over {_vma(vma)}"
    if t is None:
        return f"\n      jax: {mine}   <- MISMATCH: the oracle stops before this value"
    bad = [w for w, ok in (("shape", tuple(shape) == t.shape), ("dtype", dtype == t.dtype),
                           ("vma", vma is None or t.vma is None or vma == t.vma)) if not ok]
    return f"\n      jax: {mine}" + (f"   <- MISMATCH ({', '.join(bad)})" if bad else "   (agrees)")


def explain_lines(p: Program, observed: Observed | None = None) -> list[str]:
    """The explanation, line by line; `observed`: what jax's abstract run saw, if run."""
    st, err = trace(p, with_values=False)
    names = value_names(p)
    mesh = p.mesh
    lines = [
        f"mesh: {dict(zip(mesh.names, mesh.sizes))} ({mesh.size} devices), manual axes {p.manual_axes}, "
        f"check_vma={p.check_vma}",
    ]
    if p.defect:
        lines.append(f"defect (drawn on purpose): {p.defect}")
    lines.append("arguments:")
    for i, (x, s) in enumerate(zip(p.inputs, p.in_specs)):
        local = st.types[i].shape if i < len(st.types) else "?"
        vma = _vma(st.types[i].vma) if i < len(st.types) else "?"
        lines.append(f"  {names[i]}: global {x.dtype}{list(x.shape)}  in_spec {s!r}  per-device {local}  varies over {vma}"
                     + _jax_side(i, st.types[i] if i < len(st.types) else None, observed))
    lines.append("body:")
    n_in = len(p.inputs)
    for j, op in enumerate(p.body):
        i = n_in + j
        src = op_source(op, names)
        if i < len(st.types):
            t = st.types[i]
            lines.append(f"  {names[i]} = {src}\n      -> {t.dtype}{list(t.shape)} varies over {_vma(t.vma)}"
                         + _jax_side(i, t, observed))
        else:
            lines.append(f"  {names[i]} = {src}\n      -> (not reached)" + _jax_side(i, None, observed))
    if err is None:
        lines.append("outputs:")
        for k, (o, s) in enumerate(zip(p.outputs, p.out_specs)):
            t = st.types[o]
            g = tuple(
                n * mesh.group_size(s.entries[d]) if d < len(s.entries) and s.entries[d] else n
                for d, n in enumerate(t.shape)
            )
            lines.append(f"  out[{k}] = {names[o]}  out_spec {s!r}  per-device {t.shape}  global {g}  {t.dtype}")
        lines.append("verdict: valid; jax must run it")
    else:
        where = f" (at {names[n_in + err.op_index]})" if err.op_index is not None else ""
        lines.append(f"verdict: jax must reject it: {err.kind.value}{where}")
        lines.append(f"  why: {err.why}")
        if err.facts:
            lines.append(f"  the message must name: {', '.join(err.facts)}")
    return lines
