"""Release qualification: the same programs against any jax, and what changed between two.

    shardfuzz qualify --corpus DIR --python A [--python B ...] --report DIR
                      [--fuzz-seed S --fuzz-examples N] [--workers N] [--timeout S]

For each interpreter (one jax installation each: see scripts/envs.py) a worker pool runs
every corpus case (JSON files under DIR, recursively) and, optionally, N programs drawn
from `strategies.programs` with Hypothesis seed S, in the abstract, jit and eager modes.
The oracle runs once per case, here (it needs no jax). Each case gets one verdict per jax
version:

- pass: jax agrees with the oracle in every mode;
- fail: a divergence no known-divergence entry explains (its signatures are listed);
- known: every divergence is a known one (reports/known_divergences.toml);
- unsupported: the program uses a feature this jax lacks or defines differently
  (`harness.run.compat.unsupported_features`), and nothing diverged where it ran.

Writes REPORT/qualify.json (the table, each version's jax_version and counts, the
changes), REPORT/qualify.junit.xml (one testcase per case x version) and
REPORT/qualify.html (the table, then the cases whose verdict changed from the first
version listed to the last: regressions, fixes, other changes), plus REPORT/cases/ (the
failing cases, replayable) and REPORT/fuzz/ (the drawn programs).

Exit codes: 0 no regression; 1 the last version listed regresses against the first (a
case that passes on the first fails on the last); 2 bad input (one line naming it).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.usage import UsageError
from programs.model import Program

SCHEMA = 1
MODES = ("abstract", "jit", "eager")
VERDICTS = ("pass", "fail", "known", "unsupported")


@dataclass(frozen=True)
class Case:
    name: str  # path under the corpus without .json, or fuzz/s<seed>-<i>-<id>
    program: Program
    reason: str = ""
    source: str = "corpus"  # corpus | fuzz


@dataclass
class Cell:
    """One case on one jax version."""

    verdict: str
    signatures: list[str] = field(default_factory=list)  # unexplained divergences
    known: list[str] = field(default_factory=list)  # ids of the known divergences seen
    unsupported: list[str] = field(default_factory=list)  # why a mode did not run it
    message: str = ""  # the first unexplained divergence, in words
    case_file: str = ""  # REPORT/cases/... for a failing cell
    statuses: dict[str, str] = field(default_factory=dict)  # mode -> ok/error/crash/timeout/unsupported

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "statuses": self.statuses,
            "signatures": self.signatures,
            "known": self.known,
            "unsupported": self.unsupported,
            "message": self.message,
            "case_file": self.case_file,
        }


@dataclass
class Column:
    """One interpreter: its jax and every case's verdict on it."""

    label: str
    python: str
    jax_version: str = "?"
    cells: dict[str, Cell] = field(default_factory=dict)
    elapsed_s: float = 0.0

    def counts(self) -> dict[str, int]:
        c = Counter(cell.verdict for cell in self.cells.values())
        return {v: c.get(v, 0) for v in VERDICTS}


# ---------------------------------------------------------------------------- input


def load_corpus(root: Path) -> list[Case]:
    """Every *.json under `root` (recursively, sorted), as a Case; a file that is not a
    program is bad input, named."""
    from programs.serialize import ProgramFormatError, from_json

    if not root.exists():
        raise UsageError(f"--corpus {root}: no such directory")
    if not root.is_dir():
        raise UsageError(f"--corpus {root}: not a directory")
    cases = []
    for f in sorted(root.rglob("*.json")):
        try:
            p = from_json(f.read_text(encoding="utf-8"))
        except (ProgramFormatError, UnicodeDecodeError) as e:
            raise UsageError(f"--corpus: {f}: {e}") from None
        name = f.relative_to(root).with_suffix("").as_posix()
        reason = dict(p.notes).get("reason")
        cases.append(Case(name, p, str(reason) if reason is not None else ""))
    if not cases:
        raise UsageError(f"--corpus {root}: no *.json case files there")
    return cases


def draw_programs(seed: int, n: int, invalid: float = 0.25) -> list[Program]:
    """N programs, the same ones for the same seed (and Hypothesis version), collected
    first so every jax version runs exactly the same list."""
    from harness.campaign.fuzz import seeded_programs

    return seeded_programs(n, seed, invalid)


def fuzz_cases(seed: int, n: int) -> list[Case]:
    from programs.serialize import program_id

    seen: set[str] = set()
    cases = []
    for i, p in enumerate(draw_programs(seed, n)):
        pid = program_id(p)
        if pid in seen:
            continue
        seen.add(pid)
        cases.append(Case(f"fuzz/s{seed}-{i:04d}-{pid}", p, f"drawn by strategies.programs (seed {seed}, example {i})", "fuzz"))
    return cases


def check_interpreter(python: str) -> str:
    """The interpreter's path, or bad input naming it: missing, or without jax/numpy."""
    path = shutil.which(python) if os.sep not in python else python
    if path is None or not Path(path).is_file() or not os.access(path, os.X_OK):
        raise UsageError(f"--python {python}: no such interpreter")
    try:
        r = subprocess.run(
            [path, "-c", "import jax, numpy; print(jax.__version__)"],
            capture_output=True, text=True, timeout=180,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UsageError(f"--python {python}: cannot run it ({e})") from None
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["import failed"])[-1]
        raise UsageError(f"--python {python}: cannot import jax and numpy there ({last})")
    return path


# ---------------------------------------------------------------------------- running


def verdict(res: Any, sups: list[Any], jax_version: str) -> Cell:
    """The verdict on one CheckResult (harness.judge.check) under the known divergences."""
    from harness.judge.known import find

    unexplained, known = [], []
    for d in res.divergences:
        s = find(sups, d, res.divergences, res.program, res.prediction, jax_version)
        if s is None:
            unexplained.append(d)
        elif s.id not in known:
            known.append(s.id)
    unsupported = [f"{o.mode}: {o.error_message}" for o in res.observations if o.status == "unsupported"]
    statuses = {o.mode: o.status for o in res.observations}
    if unexplained:
        sigs = list(dict.fromkeys(d.signature for d in unexplained))
        return Cell("fail", sigs, known, unsupported, unexplained[0].message, statuses=statuses)
    if known:
        return Cell("known", [], known, unsupported, statuses=statuses)
    if unsupported:
        return Cell("unsupported", [], [], unsupported, statuses=statuses)
    return Cell("pass", statuses=statuses)


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:120]


def _case_doc(res: Any, jax_version: str, case: Case) -> str:
    from programs.serialize import program_to_dict

    return json.dumps(
        {
            "program": program_to_dict(res.program),
            "jax_version": jax_version,
            "qualify_case": case.name,
            "divergences": [
                {"signature": d.signature, "kind": d.kind.value, "mode": d.mode, "where": d.where, "message": d.message}
                for d in res.divergences
            ],
        },
        indent=1,
    )


def run_column(
    col: Column,
    cases: list[Case],
    preds: dict[str, Any],
    sups: list[Any],
    workers: int,
    timeout_s: float,
    report: Path,
    progress: Any = sys.stderr,
    taken: tuple[str, ...] = (),
) -> None:
    """Every case through one interpreter's workers; fills col.cells. The column is
    labelled 'jax VERSION' ('jax VERSION #2' when `taken` already has that label)."""
    from harness.judge.check import evaluate
    from harness.run.pool import Pool, WorkerStartError

    t0 = time.monotonic()
    try:
        pool = Pool(max(1, min(workers, len(cases))), python=col.python, timeout_s=timeout_s)
    except WorkerStartError as e:
        raise UsageError(f"--python {col.python}: {e}") from None
    col.jax_version = str(pool.info.get("jax_version", "?"))
    label = f"jax {col.jax_version}"
    n = sum(1 for x in taken if x == label or x.startswith(label + " #"))
    col.label = label if n == 0 else f"{label} #{n + 1}"
    print(f"{col.label} ({col.python}): jax {col.jax_version}, {len(cases)} cases", file=progress, flush=True)
    by_name = {c.name: c for c in cases}

    def record(done: list[Any]) -> None:
        for c in done:
            case = by_name[c.tag]
            res = evaluate(c.program, c.observations, preds[case.name])
            cell = verdict(res, sups, col.jax_version)
            if cell.verdict == "fail":
                path = report / "cases" / _safe(col.label) / f"{_safe(case.name)}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(_case_doc(res, col.jax_version, case))
                cell.case_file = str(path)
            col.cells[case.name] = cell

    try:
        for case in cases:
            while pool.free() == 0:
                record(pool.wait(1.0))
            pool.submit(case.program, MODES, tag=case.name)
        record(pool.drain())
    finally:
        pool.close()
    col.elapsed_s = time.monotonic() - t0
    counts = col.counts()
    print(f"  {col.label}: " + ", ".join(f"{counts[v]} {v}" for v in VERDICTS) + f" ({col.elapsed_s:.0f}s)",
          file=progress, flush=True)


def changes(cases: list[Case], first: Column, last: Column) -> dict[str, list[dict[str, Any]]]:
    """Cases whose verdict differs between the first and the last version: regressions
    (pass -> fail: these set the exit code), fixes (fail -> pass or known), and other
    changes (to or from unsupported or known)."""
    out: dict[str, list[dict[str, Any]]] = {"regressions": [], "fixes": [], "other": []}
    for c in cases:
        a, b = first.cells.get(c.name), last.cells.get(c.name)
        if a is None or b is None or a.verdict == b.verdict:
            continue
        row = {
            "case": c.name,
            "reason": c.reason,
            "first": a.verdict,
            "last": b.verdict,
            "signatures": b.signatures if b.verdict == "fail" else a.signatures,
            "message": b.message if b.verdict == "fail" else a.message,
        }
        if a.verdict == "pass" and b.verdict == "fail":
            out["regressions"].append(row)
        elif a.verdict == "fail" and b.verdict in ("pass", "known"):
            out["fixes"].append(row)
        else:
            out["other"].append(row)
    return out


def entries_fixed(sups: list[Any], col: Column, corpus: str) -> list[str]:
    """The known entries whose range covers this jax but whose own case (when it is in
    the corpus) no longer shows their bug here: fixed on this version, stale entries."""
    from harness.judge.known import case_path

    if not corpus:
        return []
    root = Path(corpus).resolve()
    out = []
    for e in sups:
        try:
            name = case_path(e).resolve().relative_to(root).with_suffix("").as_posix()
        except ValueError:
            continue  # its case is not in this corpus
        cell = col.cells.get(name)
        if cell is not None and e.covers(col.jax_version) and e.id not in cell.known:
            out.append(e.id)
    return out


def qualify(
    cases: list[Case],
    pythons: list[str],
    report: Path,
    *,
    sups: list[Any],
    workers: int = 2,
    timeout_s: float = 60.0,
    corpus: str = "",
    fuzz: dict[str, int] | None = None,
    progress: Any = sys.stderr,
) -> dict[str, Any]:
    """Run, write the three reports, return the qualify.json document."""
    from oracles import predict

    preds = {c.name: predict(c.program) for c in cases}
    cols: list[Column] = []
    for py in pythons:
        col = Column("", py)
        run_column(col, cases, preds, sups, workers, timeout_s, report, progress, tuple(c.label for c in cols))
        cols.append(col)
    ch = changes(cases, cols[0], cols[-1])
    fixed = {col.label: entries_fixed(sups, col, corpus) for col in cols}
    doc = {
        "schema": SCHEMA,
        "modes": list(MODES),
        "corpus": corpus,
        "fuzz": fuzz,
        "versions": [
            {"label": c.label, "python": c.python, "jax_version": c.jax_version, "counts": c.counts(),
             "elapsed_s": round(c.elapsed_s, 1), "entries_fixed": fixed[c.label]}
            for c in cols
        ],
        "first": cols[0].label,
        "last": cols[-1].label,
        "cases": [
            {
                "case": c.name,
                "source": c.source,
                "reason": c.reason,
                "verdicts": {col.label: col.cells[c.name].to_json() for col in cols if c.name in col.cells},
            }
            for c in cases
        ],
        "changes": ch,
        "exit_code": 1 if ch["regressions"] else 0,
    }
    report.mkdir(parents=True, exist_ok=True)
    _write(report / "qualify.json", json.dumps(doc, indent=1))
    _write(report / "qualify.junit.xml", junit_xml(doc))
    _write(report / "qualify.html", html_page(doc))
    return doc


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# ---------------------------------------------------------------------------- reports

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: object) -> str:
    return _NOT_XML.sub("\ufffd", str(text))


def junit_xml(doc: dict[str, Any]) -> str:
    """One testsuite per jax version, one testcase per case: a failure for fail, skipped
    for known and unsupported (with why), nothing for pass."""
    root = ET.Element("testsuites", name="shardfuzz qualify")
    for v in doc["versions"]:
        counts = v["counts"]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=_clean(f"qualify {v['label']}"),
            tests=str(sum(counts.values())),
            failures=str(counts["fail"]),
            errors="0",
            skipped=str(counts["known"] + counts["unsupported"]),
            time=str(v.get("elapsed_s", 0)),
        )
        props = ET.SubElement(suite, "properties")
        for key in ("jax_version", "python"):
            ET.SubElement(props, "property", name=key, value=_clean(v[key]))
        classname = "qualify.jax_" + re.sub(r"\W", "_", v["label"].removeprefix("jax "))
        for c in doc["cases"]:
            cell = c["verdicts"].get(v["label"])
            if cell is None:
                continue
            tc = ET.SubElement(suite, "testcase", classname=classname, name=_clean(c["case"]))
            if cell["verdict"] == "fail":
                f = ET.SubElement(tc, "failure", message=_clean(", ".join(cell["signatures"])), type="divergence")
                f.text = _clean("\n".join([cell["message"], f"reason: {c['reason']}", f"case: {cell['case_file']}"]))
            elif cell["verdict"] == "known":
                ET.SubElement(tc, "skipped", message=_clean("known: " + ", ".join(cell["known"])))
            elif cell["verdict"] == "unsupported":
                ET.SubElement(tc, "skipped", message=_clean("unsupported: " + "; ".join(cell["unsupported"])[:500]))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _e(text: object) -> str:
    return html.escape(_clean(text), quote=True)


_CSS = """
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1f2328}
main{max-width:1280px;margin:0 auto;padding:18px 28px 60px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:30px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
.sub{color:#57606a}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;font-size:12.5px}
table{border-collapse:collapse;margin:6px 0 14px}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
td.v{text-align:center;font-weight:600;white-space:nowrap}
.pass{background:#dafbe1;color:#1a7f37}.fail{background:#ffebe9;color:#c62828}
.known{background:#fff8c5;color:#7d5e00}.unsupported{background:#eef1f4;color:#57606a}
td.num{text-align:right}
.change{border:1px solid #d0d7de;border-left:6px solid #c62828;border-radius:6px;margin:10px 0;padding:8px 14px}
.change.fix{border-left-color:#1a7f37}.change.other{border-left-color:#8c959f}
.why{color:#57606a}
pre{background:#f6f8fa;border:1px solid #d0d7de;border-radius:4px;padding:6px 8px;white-space:pre-wrap;word-break:break-word;font-size:12px;margin:4px 0}
"""


def html_page(doc: dict[str, Any]) -> str:
    versions = doc["versions"]
    labels = [v["label"] for v in versions]
    out = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>shardfuzz qualify: {_e(', '.join(labels))}</title><style>{_CSS}</style></head><body><main>",
        "<h1>shardfuzz release qualification</h1>",
        f"<div class='sub'>{len(doc['cases'])} cases from {_e(doc.get('corpus') or '-')}"
        + (f" and {doc['fuzz']['examples']} drawn programs (seed {doc['fuzz']['seed']})" if doc.get("fuzz") else "")
        + f"; modes {_e(', '.join(doc['modes']))}; first {_e(doc['first'])}, last {_e(doc['last'])}: "
        + ("<b class='fail'>regression</b>" if doc["exit_code"] else "no regression")
        + "</div>",
        "<h2>Versions</h2><table><tr><th>version</th><th>python</th>"
        + "".join(f"<th>{v}</th>" for v in VERDICTS) + "<th>time</th></tr>",
    ]
    for v in versions:
        out.append(
            f"<tr><td>{_e(v['label'])}</td><td class='mono'>{_e(v['python'])}</td>"
            + "".join(f"<td class='num {k}'>{v['counts'][k]}</td>" for k in VERDICTS)
            + f"<td class='num'>{v.get('elapsed_s', 0):.0f}s</td></tr>"
        )
    out.append("</table>")
    out.append(_changes_html(doc))
    out.append("<h2>Every case</h2><table><tr><th>case</th>" + "".join(f"<th>{_e(x)}</th>" for x in labels) + "<th>reason</th></tr>")
    for c in doc["cases"]:
        row = [f"<tr><td class='mono'>{_e(c['case'])}</td>"]
        for x in labels:
            cell = c["verdicts"].get(x)
            if cell is None:
                row.append("<td></td>")
                continue
            tip = "; ".join(cell["signatures"] or cell["known"] or cell["unsupported"])
            row.append(f"<td class='v {cell['verdict']}' title='{_e(tip)}'>{cell['verdict']}</td>")
        row.append(f"<td class='why'>{_e(c['reason'])}</td></tr>")
        out.append("".join(row))
    out.append("</table></main></body></html>")
    return "\n".join(out) + "\n"


def _changes_html(doc: dict[str, Any]) -> str:
    ch = doc["changes"]
    out = [f"<h2>What changed from {_e(doc['first'])} to {_e(doc['last'])}</h2>"]
    if doc["first"] == doc["last"]:
        out.append("<p class='sub'>One version only: nothing to compare.</p>")
        return "\n".join(out)
    for key, title, cls in (
        ("regressions", "Regressions (pass on the first, fail on the last)", ""),
        ("fixes", "Fixes (fail on the first, pass or known on the last)", "fix"),
        ("other", "Other changes (known or unsupported on one side)", "other"),
    ):
        rows = ch[key]
        out.append(f"<h3>{title}: {len(rows)}</h3>")
        for r in rows:
            out.append(
                f"<div class='change {cls}'><b class='mono'>{_e(r['case'])}</b>: "
                f"<span class='{r['first']}'>{r['first']}</span> &rarr; <span class='{r['last']}'>{r['last']}</span>"
                f"<div class='why'>{_e(r['reason'])}</div>"
                + (f"<div class='mono'>{_e(', '.join(r['signatures']))}</div>" if r["signatures"] else "")
                + (f"<pre>{_e(r['message'])}</pre>" if r["message"] else "")
                + "</div>"
            )
    return "\n".join(out)


# ---------------------------------------------------------------------------- CLI


def table_lines(doc: dict[str, Any]) -> list[str]:
    w = max(len(v["label"]) for v in doc["versions"])
    lines = [f"{'version':<{w}}  " + "  ".join(f"{v:>11}" for v in VERDICTS)]
    for v in doc["versions"]:
        lines.append(f"{v['label']:<{w}}  " + "  ".join(f"{v['counts'][k]:>11}" for k in VERDICTS))
    return lines


def cmd_qualify(a: argparse.Namespace) -> int:
    from harness.judge.known import KnownDivergencesError, load

    if a.fuzz_examples < 0:
        raise UsageError(f"--fuzz-examples={a.fuzz_examples} must be >= 0")
    if a.workers < 1:
        raise UsageError(f"--workers={a.workers} must be >= 1")
    cases = load_corpus(Path(a.corpus))
    pythons = [check_interpreter(py) for py in a.python]
    try:
        sups = load(Path(a.suppressions) if a.suppressions else None)
    except KnownDivergencesError as e:
        raise UsageError(str(e)) from None
    report = Path(a.report)
    try:
        report.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--report {a.report}: cannot write there ({e.strerror})") from None
    fuzz = None
    if a.fuzz_examples:
        seed = 0 if a.fuzz_seed is None else a.fuzz_seed
        drawn = fuzz_cases(seed, a.fuzz_examples)
        for c in drawn:
            from programs.serialize import to_json

            f = report / f"{c.name}.json"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(to_json(c.program))
        cases += drawn
        fuzz = {"seed": seed, "examples": a.fuzz_examples}
    doc = qualify(cases, pythons, report, sups=sups, workers=a.workers, timeout_s=a.timeout,
                  corpus=str(a.corpus), fuzz=fuzz)
    print("\n".join(table_lines(doc)))
    ch = doc["changes"]
    if len(doc["versions"]) > 1:
        print(f"{doc['first']} -> {doc['last']}: {len(ch['regressions'])} regressions, {len(ch['fixes'])} fixes, "
              f"{len(ch['other'])} other changes")
    for r in ch["regressions"]:
        print(f"  REGRESSION {r['case']}: {', '.join(r['signatures'])}")
    for col in doc["versions"]:
        if col.get("entries_fixed"):
            print(f"  {col['label']}: known entries fixed there (their own case passes): {', '.join(col['entries_fixed'])}")
        fails = [c["case"] for c in doc["cases"] if c["verdicts"].get(col["label"], {}).get("verdict") == "fail"]
        if fails:
            print(f"  {col['label']} fails {len(fails)}: {', '.join(fails[:8])}{' ...' if len(fails) > 8 else ''}")
    print(f"  report: {report / 'qualify.html'}")
    return int(doc["exit_code"])


def register(sub: Any) -> None:
    """Add the `qualify` subcommand to shardfuzz's subparsers."""
    q = sub.add_parser("qualify", help="run a corpus against several jax installations and compare them")
    from harness.usage import at_least, positive

    q.add_argument("--corpus", required=True, help="directory of JSON cases (searched recursively; required)")
    q.add_argument("--python", action="append", required=True,
                   help="an interpreter with jax installed (repeat; the first and last are compared; required)")
    q.add_argument("--report", default="reports/qualify", help="directory for qualify.json/.junit.xml/.html")
    q.add_argument("--fuzz-seed", type=int, default=None, help="also run programs drawn with this seed (default: none)")
    q.add_argument("--fuzz-examples", type=at_least(0, what="0: none"), default=0, help="how many programs to draw (0: none)")
    cores = len(os.sched_getaffinity(0))
    q.add_argument("--workers", type=at_least(1), default=cores,
                   help=f"worker processes per version (default: the number of cores, here {cores})")
    q.add_argument("--timeout", type=positive(float, "seconds"), default=60.0, help="per-mode timeout in a worker, seconds")
    q.add_argument("--suppressions", default=None, help="known divergences TOML (default: reports/known_divergences.toml)")
    q.set_defaults(fn=cmd_qualify)
