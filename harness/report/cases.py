"""Case files as the report shows them: the program, the divergence, the faulting line,
the per-device difference grid and the asserting reproducer.

A case file that is missing or unreadable is shown as such (`CaseView.problem`): a report
never fails because of one bad case file.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.report.markup import esc as _esc
from harness.report.reproducer import divergence_mode, reproducer
from programs.model import Program, Spec
from programs.serialize import program_from_dict


@dataclass(frozen=True)
class CaseView:
    """What the page shows of one case file, or why it cannot show it (`problem`)."""

    path: str
    program: Program | None = None
    divergence: dict[str, Any] | None = None
    problem: str | None = None


def _resolve(path: str, report_dir: Path) -> Path:
    """The path as the run recorded it (relative to where it ran), else the same file name
    under report_dir/cases, so a report directory that was moved still finds its cases."""
    p = Path(path)
    if p.exists() or p.is_absolute():
        return p
    moved = report_dir / "cases" / p.name
    return moved if moved.exists() else p


def load_case(path: str | None, signature: str, report_dir: Path) -> CaseView:
    if not path:
        return CaseView("", problem="no case file recorded")
    try:
        doc = json.loads(_resolve(path, report_dir).read_text(encoding="utf-8"))
        program = program_from_dict(doc["program"])
        divs = [d for d in doc.get("divergences") or [] if isinstance(d, dict)]
    except Exception as e:  # noqa: BLE001 - any broken case file is shown, never fatal
        return CaseView(path, problem=f"{type(e).__name__}: {e}")
    mine = [d for d in divs if d.get("signature") == signature] or divs
    return CaseView(path, program, mine[0] if mine else None)



def problem_html(case: CaseView) -> str:
    return (
        f'<p class="problem">case file <code>{_esc(case.path or "(none)")}</code> could not be read: '
        f"{_esc(case.problem)}</p>"
    )


def case_body(
    case: CaseView, label: str, mode: str, title: str, with_grid: bool = True
) -> list[str]:
    """Program, replay command, reproducer and (for value divergences) the device grid."""
    if case.program is None:
        return []
    p, d = case.program, case.divergence or {}
    out = [f"<h3>{_esc(label)}</h3>", f"<pre>{_program_text(p, d)}</pre>"]
    grid = _grid(p, d) if with_grid else ""
    if grid:
        out.append(grid)
    out.append(
        f'<div class="meta">case <code>{_esc(case.path)}</code> · replay: <code>shardfuzz replay {_esc(case.path)}</code></div>'
    )
    try:
        # (a mode disagreement: a mode on its wrong side)
        repro = reproducer(p, mode=divergence_mode(p, str(d.get("kind", "")), mode), title=f"shardfuzz reproducer: {title}")
    except Exception as e:  # noqa: BLE001 - an op emit does not know must not lose the page
        repro = f"# no reproducer: {type(e).__name__}: {e}"
    out.append(
        "<details><summary>asserting reproducer (jax + numpy only; exit 1 <code>BUG:</code> while jax diverges, "
        f"0 <code>FIXED:</code> once it agrees)</summary><pre>{_esc(repro)}</pre></details>"
    )
    return out


def _spec_list(specs: Sequence[Spec]) -> str:
    return ", ".join(repr(s) for s in specs)


def _program_text(p: Program, d: dict[str, Any]) -> str:
    """The call (mesh, inputs, specs) then the body, with the faulting line marked."""
    mesh = ", ".join(f"{n}={s}" for n, s in zip(p.mesh.names, p.mesh.sizes, strict=True))
    types = set(p.mesh.axis_types)
    head = [f"# mesh: {mesh}" + ("" if types == {"auto"} else f"  axis_types={p.mesh.axis_types}")]
    for i, x in enumerate(p.inputs):
        fill = (f"iota(offset={x.offset})" if x.offset else "iota") if x.fill == "iota" else f"small(seed={x.seed})"
        spec = repr(p.in_specs[i]) if i < len(p.in_specs) else "?"
        head.append(f"# a{i}: {x.dtype}{list(x.shape)} {fill}, in_spec {spec}")
    head.append(f"# out_specs: ({_spec_list(p.out_specs)}), check_vma={p.check_vma}")
    if p.axis_names is not None:
        head.append(f"# axis_names: {set(p.axis_names)}")
    if p.defect:
        head.append(f"# defect: {p.defect}")
    lines = [_esc(h) for h in head]
    op_index, output = d.get("op_index"), d.get("output")
    fault_value, note = None, ""
    if isinstance(op_index, int):
        fault_value, note = len(p.inputs) + op_index, "diverges here"
    elif isinstance(output, int) and 0 <= output < len(p.outputs):
        fault_value, note = p.outputs[output], f"out[{output}] differs"
    for j, line in enumerate(repr(p).split("\n")):
        value = len(p.inputs) + j - 1  # line 0 is `def body(...)`; line j+1 defines op j
        if j > 0 and value == fault_value and j <= len(p.body):
            lines.append(f'<span class="fault">{_esc(line)}   # ← {_esc(note)}</span>')
        else:
            lines.append(_esc(line))
    return "\n".join(lines)


def _fmt(x: object) -> str:
    return f"{x:.3g}" if isinstance(x, float) else str(x)


@dataclass(frozen=True)
class _GridData:
    """A value divergence's per-device differences, over the mesh."""

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    by_coord: dict[tuple[int, ...], float | None]  # bad device -> |diff| (None: not recorded)
    device: dict[tuple[int, ...], int]  # coordinate -> device index
    top: float  # the largest finite |diff|


def _cell(g: _GridData, c: tuple[int, ...]) -> str:
    where = ", ".join(f"{n}={i}" for n, i in zip(g.names, c, strict=True))
    attrs = f'data-coord="{",".join(map(str, c))}"'
    if c not in g.by_coord:
        return f'<td class="ok" {attrs} title="device {g.device[c]} ({_esc(where)}): agrees">·<small>dev {g.device[c]}</small></td>'
    v = g.by_coord[c]
    # darker red for a larger difference; inf, nan and unknown are full red
    shade = 0.35 + 0.65 * v / g.top if v is not None and math.isfinite(v) and g.top > 0 else 1.0
    text = "differs" if v is None else _fmt(v)
    return (
        f'<td class="bad" {attrs} style="background:rgba(198,40,40,{shade:.2f})" '
        f'title="device {g.device[c]} ({_esc(where)}): |diff|={_esc(text)}">{_esc(text)}<small>dev {g.device[c]}</small></td>'
    )


def _table(g: _GridData, lead: tuple[int, ...]) -> str:
    """One table over the last two mesh axes at index `lead` of the others."""
    rest_names, rest_sizes = g.names[len(lead):], g.sizes[len(lead):]
    caption = ", ".join(f"{n}={i}" for n, i in zip(g.names[: len(lead)], lead, strict=True))
    rows = []
    if not rest_sizes:
        rows.append(f"<tr>{_cell(g, ())}</tr>")
    elif len(rest_sizes) == 1:
        rows.append(f"<tr><th>{_esc(rest_names[0])}</th>{''.join(f'<th>{j}</th>' for j in range(rest_sizes[0]))}</tr>")
        rows.append("<tr><th></th>" + "".join(_cell(g, lead + (j,)) for j in range(rest_sizes[0])) + "</tr>")
    else:
        head = f"{rest_names[0]} \\ {rest_names[1]}"
        rows.append(f"<tr><th>{_esc(head)}</th>{''.join(f'<th>{j}</th>' for j in range(rest_sizes[1]))}</tr>")
        for i in range(rest_sizes[0]):
            rows.append(f"<tr><th>{i}</th>" + "".join(_cell(g, lead + (i, j)) for j in range(rest_sizes[1])) + "</tr>")
    cap = f"<caption>{_esc(caption)}</caption>" if caption else ""
    return f'<table class="grid">{cap}{"".join(rows)}</table>'


def _grid(p: Program, d: dict[str, Any]) -> str:
    """|jax - oracle| per device over the mesh: 1 axis one row, 2 axes a table, more axes
    one table per index of the leading axes. Devices that agree are neutral."""
    bad = d.get("bad_devices") or []
    if not bad:
        return ""
    diffs = list(d.get("device_diffs") or [])
    # None: the device differs but the case file has no number for it (older files)
    by_coord = {tuple(c): (float(diffs[k]) if k < len(diffs) else None) for k, c in enumerate(bad)}
    finite = [v for v in by_coord.values() if v is not None and math.isfinite(v)]
    names, sizes = p.mesh.names, p.mesh.sizes
    device = {c: i for i, c in enumerate(p.mesh.coords())}
    g = _GridData(tuple(names), tuple(sizes), by_coord, device, max(finite, default=0.0))
    n_lead = max(0, len(sizes) - 2)
    tables = [_table(g, lead) for lead in itertools.product(*(range(s) for s in sizes[:n_lead]))]
    where = f"out[{d['output']}]" if isinstance(d.get("output"), int) else "value"
    worst = d.get("max_abs_diff")
    title = (
        f"{where}: |jax − oracle| per device, mode {d.get('mode', '?')}: "
        f"{len(by_coord)} of {p.mesh.size} devices differ"
        + (f", max |diff| = {_fmt(worst)}" if worst is not None else "")
    )
    outside = [c for c in by_coord if c not in device]
    extra = (
        f'<p class="problem">bad devices outside the mesh: {_esc(outside)}</p>' if outside else ""
    )
    return f'<h3>{_esc(title)}</h3><div class="grids">{"".join(tables)}</div>{extra}'


