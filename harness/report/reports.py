"""Run reports: `junit.xml` for CI systems and `index.html` for the person reading a run.

`write_reports(summary, report_dir)` turns the dict a run writes to summary.json (see
`harness.campaign.fuzz.summarise`) into both files. The HTML page is one self-contained file (inline
CSS, no script, no external resource; a Content-Security-Policy says so, so a stray
reference shows up as a console error in the render test) that answers the morning
questions: what is new, what is known, what got fixed, how to reproduce each, and what the
run covered.

Case files are read back to show the program, the reproducer and the per-device diff grid.
A case file that is missing or unreadable is shown as such: a report never fails because
of one bad case file.
"""

from __future__ import annotations

import html
import itertools
import json
import math
import os
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.report.reproducer import divergence_mode, reproducer
from programs.model import Program, Spec
from programs.serialize import program_from_dict

# Characters XML 1.0 cannot hold at all (jax messages may carry ANSI escapes or NULs):
# ElementTree writes them through unescaped, which makes the whole file unparsable.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: object) -> str:
    return _NOT_XML.sub("\ufffd", str(text))


def _esc(text: object) -> str:
    return html.escape(_clean(text), quote=True)


def _write(path: Path, text: str) -> None:
    """Temporary file and rename, as summary.json is written: never half a report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_reports(summary: dict[str, Any], report_dir: Path) -> tuple[Path, Path]:
    """Writes report_dir/junit.xml and report_dir/index.html; returns their paths."""
    report_dir = Path(report_dir)
    junit, page = report_dir / "junit.xml", report_dir / "index.html"
    _write(junit, junit_xml(summary))
    _write(page, html_page(summary, report_dir))
    return junit, page


# ---------------------------------------------------------------------------------- JUnit


def junit_xml(summary: dict[str, Any]) -> str:
    """One testsuite: a failing testcase per new bucket, a skipped one per known bucket and
    a passing 'run' testcase, so CI shows new divergences as test failures."""
    buckets: list[dict[str, Any]] = summary.get("buckets") or []
    new = [b for b in buckets if not b.get("suppressed_by")]
    root = ET.Element("testsuites")
    suite = ET.SubElement(
        root,
        "testsuite",
        name="shardfuzz",
        tests=str(len(buckets) + 1),
        failures=str(len(new)),
        errors="0",
        skipped=str(len(buckets) - len(new)),
        time=str(summary.get("elapsed_s", 0)),
    )
    props = ET.SubElement(suite, "properties")
    for key in ("jax_version", "seed", "modes", "programs_run"):
        value = summary.get(key)
        value = ",".join(map(str, value)) if isinstance(value, list) else value
        ET.SubElement(props, "property", name=key, value=_clean(value))
    for b in buckets:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"shardfuzz.{_clean(b.get('kind', '?'))}",
            # unique: one bucket per (signature, known entry), so a known bucket names its entry
            name=_clean(b.get("signature", "?") + (f" [known: {b['suppressed_by']}]" if b.get("suppressed_by") else "")),
        )
        if b.get("suppressed_by"):
            ET.SubElement(case, "skipped", message=_clean(f"known: {b['suppressed_by']}"))
            continue
        failure = ET.SubElement(
            case, "failure", message=_clean(b.get("message", "")), type=_clean(b.get("kind", ""))
        )
        lines = [
            str(b.get("message", "")),
            "",
            f"programs: {b.get('count', '?')}",
            f"case: {b.get('case', '')}",
        ]
        if b.get("minimized_case"):
            lines.append(f"minimized: {b['minimized_case']}")
        lines.append(f"replay: shardfuzz replay {b.get('minimized_case') or b.get('case', '')}")
        failure.text = _clean("\n".join(lines))
    run = ET.SubElement(
        suite, "testcase", classname="shardfuzz", name="run", time=str(summary.get("elapsed_s", 0))
    )
    out = ET.SubElement(run, "system-out")
    out.text = _clean(
        f"{summary.get('programs_run', 0)} programs run, {summary.get('failing_programs', 0)} failing, "
        f"jax {summary.get('jax_version', '?')}, seed {summary.get('seed', '?')}"
    )
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


# ------------------------------------------------------------------------------ case files


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


# ------------------------------------------------------------------------------- the page

_CSS = """
:root{--new:#c62828;--known:#b08800;--fixed:#2e7d32;--muted:#57606a;--line:#d0d7de;--code:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1f2328;background:#fff}
main{max-width:1180px;margin:0 auto;padding:18px 28px 80px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:34px 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:16px 0 6px}
.sub{color:var(--muted);margin-bottom:14px}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace}
.tiles{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.tile{border:1px solid var(--line);border-radius:6px;padding:6px 14px;min-width:112px}
.tile b{display:block;font-size:22px}.tile span{color:var(--muted);font-size:12px}
.tile.new b{color:var(--new)}.tile.known b{color:var(--known)}.tile.fixed b{color:var(--fixed)}
.tile.zero b{color:var(--muted)}
.toc{margin:6px 0 0;padding-left:20px}.toc li{margin:2px 0}
.bucket{border:1px solid var(--line);border-left:6px solid var(--new);border-radius:6px;margin:14px 0;padding:10px 16px}
.bucket.known{border-left-color:var(--known)}.bucket.fixed{border-left-color:var(--fixed)}
.sig{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:15px;font-weight:600;word-break:break-all}
.meta{color:var(--muted);margin:2px 0 6px}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;background:#eef1f4;margin-right:4px}
.badge.new{background:#ffebe9;color:var(--new)}.badge.known{background:#fff8c5;color:#7d5e00}.badge.fixed{background:#dafbe1;color:var(--fixed)}
pre{background:var(--code);border:1px solid var(--line);border-radius:4px;padding:8px 10px;overflow-x:auto;font-size:12.5px;margin:4px 0}
pre.msg{white-space:pre-wrap;word-break:break-word;background:#fff}
.fault{background:#ffebe9;color:var(--new)}
.problem{color:var(--new);font-weight:600}
details{margin:6px 0}summary{cursor:pointer;color:#0969da}
table{border-collapse:collapse;margin:4px 0 10px}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:right}th{background:#f6f8fa}
td.name,th.name{text-align:left}
table.grid td{width:74px;height:44px;text-align:center;vertical-align:middle;padding:2px;font-size:12px;line-height:1.2}
table.grid td small{display:block;color:var(--muted);font-size:10.5px}
table.grid td.ok{background:#f6f8fa;color:#8c959f}
table.grid td.bad{color:#fff;font-weight:600}table.grid td.bad small{color:#ffe}
.grids{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
.grids caption{caption-side:top;text-align:left;color:var(--muted);font-size:12px}
td.gap{background:#fff4e5;color:#b26a00}
.bar{display:inline-block;height:9px;background:#54aeff;vertical-align:middle;margin-right:6px}
.pivots{display:flex;flex-wrap:wrap;gap:8px 28px;align-items:flex-start}
table.stats td.name:last-child{min-width:150px}
"""

# The page loads nothing: this policy makes any accidental external reference a console
# error (caught by the render test) instead of a silent network request.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def html_page(summary: dict[str, Any], report_dir: Path) -> str:
    buckets: list[dict[str, Any]] = summary.get("buckets") or []
    new = [b for b in buckets if not b.get("suppressed_by")]
    known = [b for b in buckets if b.get("suppressed_by")]
    fixed: list[dict[str, Any]] = summary.get("fixed") or []
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_esc(_CSP)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>shardfuzz: {len(new)} new, {len(known)} known — jax {_esc(summary.get('jax_version', '?'))}</title>",
        f"<style>{_CSS}</style></head><body><main>",
        _header(summary, new, known, fixed),
        _section("New", "new", new, report_dir, "No new divergences."),
        _section("Known", "known", known, report_dir, "No known divergences seen in this run."),
        _fixed_section(fixed, report_dir),
        _coverage(summary),
        _statistics(summary.get("statistics") or {}),
        "</main></body></html>",
    ]
    return _clean("\n".join(parts)) + "\n"


def _tile(value: object, label: str, cls: str = "") -> str:
    return f'<div class="tile {cls}"><b>{_esc(value)}</b><span>{_esc(label)}</span></div>'


def _header(
    s: dict[str, Any],
    new: list[dict[str, Any]],
    known: list[dict[str, Any]],
    fixed: list[dict[str, Any]],
) -> str:
    modes = ", ".join(map(str, s.get("modes") or []))
    unseen = s.get("unseen_suppressions") or []
    out = [
        "<header><h1>shardfuzz run</h1>",
        f'<div class="sub">jax {_esc(s.get("jax_version", "?"))} · seed {_esc(s.get("seed", "?"))}'
        f" · modes {_esc(modes or '?')} · {_esc(s.get('elapsed_s', '?'))} s</div>",
        '<div class="tiles">',
        _tile(len(new), "new buckets", "new" if new else "zero"),
        _tile(len(known), "known buckets", "known" if known else "zero"),
        _tile(len(fixed), "fixed", "fixed" if fixed else "zero"),
        _tile(s.get("programs_run", 0), "programs run"),
        _tile(s.get("failing_programs", 0), "failing programs"),
        _tile(s.get("divergences", 0), "new divergences"),
        _tile(s.get("suppressed", 0), "known divergences"),
    ]
    if s.get("accidentally_invalid"):
        out.append(_tile(s["accidentally_invalid"], "accidentally invalid"))
    out.append("</div>")
    if unseen:
        ids = ", ".join(f"<code>{_esc(u)}</code>" for u in unseen)
        out.append(
            f"<p><b>Unseen suppressions</b> ({len(unseen)}; nothing in this run matched them): {ids}</p>"
        )
    else:
        out.append("<p><b>Unseen suppressions</b>: none</p>")
    entries = s.get("known_entries") or []
    if entries:
        rows = "".join(
            f'<tr><td class="mono">{_esc(e["id"])}</td><td><span class="badge {"fixed" if e["status"] == "fixed" else "known"}">'
            f'{_esc(e["status"])}</span></td><td>{_esc(e["count"])}</td><td class="mono">{_esc(e["jax_versions"])}</td>'
            f'<td class="mono">{_esc(e["case"])}</td><td>{_esc(e["link"])}</td></tr>'
            for e in entries
        )
        out.append('<details><summary><b>Known entries</b>: ' + ", ".join(
            f"{sum(1 for e in entries if e['status'] == st)} {st}" for st in ("matched", "unseen", "fixed", "not_this_version"))
            + '</summary><table><tr><th>entry</th><th>status</th><th>divergences explained</th><th>jax_versions</th>'
            f'<th>own case</th><th>link</th></tr>{rows}</table></details>')
    if new:
        items = "".join(
            f'<li><a href="#new-{i}" class="mono">{_esc(b.get("signature", "?"))}</a> × {_esc(b.get("count", "?"))}</li>'
            for i, b in enumerate(new)
        )
        out.append(f'<ul class="toc">{items}</ul>')
    out.append("</header>")
    return "\n".join(out)


def _section(
    title: str, cls: str, buckets: list[dict[str, Any]], report_dir: Path, empty: str
) -> str:
    out = [f'<section id="{cls}"><h2>{title} ({len(buckets)})</h2>']
    if not buckets:
        out.append(f"<p>{_esc(empty)}</p>")
    for i, b in enumerate(buckets):
        out.append(_bucket(b, f"{cls}-{i}", cls, report_dir))
    out.append("</section>")
    return "\n".join(out)


def _bucket(b: dict[str, Any], anchor: str, cls: str, report_dir: Path) -> str:
    sig = str(b.get("signature", "?"))
    case = load_case(b.get("case"), sig, report_dir)
    # show the minimized program when there is a readable one, else the original
    shown, label, problems = case, "program", []
    if b.get("minimized_case"):
        small = load_case(b["minimized_case"], sig, report_dir)
        if small.problem is None:
            shown, label = small, "minimized program"
        else:
            problems.append(small)
    if shown is case and case.problem:
        problems.append(case)
    badges = [
        f'<span class="badge">{_esc(b.get("kind", "?"))}</span>',
        f'<span class="badge">mode {_esc(b.get("mode", "?"))}</span>',
    ]
    if b.get("suppressed_by"):
        badges.insert(0, f'<span class="badge known">known: {_esc(b["suppressed_by"])}</span>')
    else:
        badges.insert(0, '<span class="badge new">new</span>')
    out = [
        f'<article class="bucket {cls}" id="{_esc(anchor)}">',
        f'<div class="sig">{_esc(sig)}</div>',
        f'<div class="meta">{"".join(badges)} {_esc(b.get("count", "?"))} program(s)</div>',
        f'<pre class="msg">{_esc(b.get("message", ""))}</pre>',
    ]
    out.extend(_problem(c) for c in problems)
    out.extend(_case_body(shown, label, str(b.get("mode", "jit")), sig))
    if shown is not case:
        out.append(f'<div class="meta">original case: <code>{_esc(case.path)}</code></div>')
    out.append("</article>")
    return "\n".join(out)


def _problem(case: CaseView) -> str:
    return (
        f'<p class="problem">case file <code>{_esc(case.path or "(none)")}</code> could not be read: '
        f"{_esc(case.problem)}</p>"
    )


def _case_body(
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
        fill = "iota" if x.fill == "iota" else f"small(seed={x.seed})"
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
    top = max(finite, default=0.0)
    names, sizes = p.mesh.names, p.mesh.sizes
    device = {c: i for i, c in enumerate(p.mesh.coords())}

    def cell(c: tuple[int, ...]) -> str:
        where = ", ".join(f"{n}={i}" for n, i in zip(names, c, strict=True))
        attrs = f'data-coord="{",".join(map(str, c))}"'
        if c not in by_coord:
            return f'<td class="ok" {attrs} title="device {device[c]} ({_esc(where)}): agrees">·<small>dev {device[c]}</small></td>'
        v = by_coord[c]
        # darker red for a larger difference; inf, nan and unknown are full red
        shade = 0.35 + 0.65 * v / top if v is not None and math.isfinite(v) and top > 0 else 1.0
        text = "differs" if v is None else _fmt(v)
        return (
            f'<td class="bad" {attrs} style="background:rgba(198,40,40,{shade:.2f})" '
            f'title="device {device[c]} ({_esc(where)}): |diff|={_esc(text)}">{_esc(text)}<small>dev {device[c]}</small></td>'
        )

    def table(lead: tuple[int, ...]) -> str:
        rest_names, rest_sizes = names[len(lead) :], sizes[len(lead) :]
        caption = ", ".join(f"{n}={i}" for n, i in zip(names[: len(lead)], lead, strict=True))
        rows = []
        if not rest_sizes:
            rows.append(f"<tr>{cell(())}</tr>")
        elif len(rest_sizes) == 1:
            rows.append(
                f"<tr><th>{_esc(rest_names[0])}</th>{''.join(f'<th>{j}</th>' for j in range(rest_sizes[0]))}</tr>"
            )
            rows.append(
                "<tr><th></th>" + "".join(cell(lead + (j,)) for j in range(rest_sizes[0])) + "</tr>"
            )
        else:
            head = f"{rest_names[0]} \\ {rest_names[1]}"
            rows.append(
                f"<tr><th>{_esc(head)}</th>{''.join(f'<th>{j}</th>' for j in range(rest_sizes[1]))}</tr>"
            )
            for i in range(rest_sizes[0]):
                row = "".join(cell(lead + (i, j)) for j in range(rest_sizes[1]))
                rows.append(f"<tr><th>{i}</th>{row}</tr>")
        cap = f"<caption>{_esc(caption)}</caption>" if caption else ""
        return f'<table class="grid">{cap}{"".join(rows)}</table>'

    n_lead = max(0, len(sizes) - 2)
    tables = [table(lead) for lead in itertools.product(*(range(s) for s in sizes[:n_lead]))]
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


def _fixed_section(fixed: list[dict[str, Any]], report_dir: Path) -> str:
    out = [f'<section id="fixed"><h2>Fixed ({len(fixed)})</h2>']
    if not fixed:
        out.append("<p>Nothing that failed before passes now.</p>")
    for i, f in enumerate(fixed):
        sigs = list(f.get("signatures") or ["?"])  # (a fixed case is written with all its signatures)
        sig = ", ".join(sigs)
        case = load_case(f.get("case"), sigs[0], report_dir)
        out += [
            f'<article class="bucket fixed" id="fixed-{i}"><div class="sig">{_esc(sig)}</div>',
            '<div class="meta"><span class="badge fixed">fixed</span> no longer diverges</div>',
        ]
        if case.problem:
            out.append(_problem(case))
        # no diff grid: it would show the old failure, which no longer happens
        out.extend(_case_body(case, "program that diverged before", "jit", sig, with_grid=False))
        out.append("</article>")
    out.append("</section>")
    return "\n".join(out)


# ------------------------------------------------------------------- coverage, statistics


def _pivot(rows: list[dict[str, Any]], column: str, label: str) -> str:
    """Counts collective × `column`, summed over the other columns; an empty cell is a
    combination the run never exercised, shaded so gaps stand out."""
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for r in rows:
        counts[(str(r.get("collective", "?")), str(r.get(column, "?")))] += int(r.get("count", 0))
    collectives = sorted({c for c, _ in counts}, key=lambda c: (c == "none", c))
    cols = sorted({v for _, v in counts})
    head = "".join(f"<th>{_esc(c)}</th>" for c in cols)
    body = []
    for c in collectives:
        cells = "".join(
            '<td class="gap">0</td>' if not counts.get((c, v)) else f"<td>{counts[(c, v)]}</td>"
            for v in cols
        )
        total = sum(counts.get((c, v), 0) for v in cols)
        body.append(f'<tr><td class="name mono">{_esc(c)}</td>{cells}<td><b>{total}</b></td></tr>')
    return (
        f'<table class="pivot" data-pivot="{_esc(column)}"><caption>collective × {_esc(label)}</caption>'
        f'<tr><th class="name">collective</th>{head}<th>total</th></tr>{"".join(body)}</table>'
    )


def _coverage(s: dict[str, Any]) -> str:
    rows = [r for r in s.get("coverage") or [] if isinstance(r, dict)]
    out = ['<section id="coverage"><h2>Coverage</h2>']
    if not rows:
        out.append("<p>No coverage recorded.</p></section>")
        return "\n".join(out)
    out.append(
        '<p class="meta">Programs per collective (× mode: checked in that mode; the other tables sum over modes, '
        "so a program counts once per mode). Shaded 0: never exercised.</p>"
    )
    out.append('<div class="pivots">')
    for column, label in (
        ("mode", "mode"),
        ("mesh_rank", "mesh rank"),
        ("dtype", "dtype"),
        ("spec", "in_spec pattern"),
    ):
        out.append(_pivot(rows, column, label))
    out.append("</div></section>")
    return "\n".join(out)


def _statistics(stats: dict[str, Any]) -> str:
    """Event shares as one small table per event prefix ('op', 'mesh rank', ...), groups
    in name order and rows sorted by share, so the rare draws of each kind sit at the
    bottom of their table."""
    out = ['<section id="statistics"><h2>Statistics</h2>']
    if not stats:
        out.append("<p>No statistics recorded.</p></section>")
        return "\n".join(out)
    out.append(
        '<p class="meta">Share of generated programs in which each Hypothesis event occurred.</p>'
    )
    groups: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for name, share in stats.items():
        group, _, rest = name.partition(": ")
        groups[group if rest else "other"].append((rest or name, float(share)))
    out.append('<div class="pivots">')
    for group in sorted(groups, key=lambda g: (g == "other", g)):
        rows = []
        for name, share in sorted(groups[group], key=lambda r: (-r[1], r[0])):
            rows.append(
                f'<tr><td class="name">{_esc(name)}</td><td class="name"><span class="bar" '
                f'style="width:{share * 90:.0f}px"></span>{100 * share:.1f}%</td></tr>'
            )
        out.append(
            f'<table class="stats"><tr><th class="name">{_esc(group)}</th><th class="name">share</th></tr>'
            f"{''.join(rows)}</table>"
        )
    out.append("</div></section>")
    return "\n".join(out)
