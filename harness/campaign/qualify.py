"""Release qualification: the same programs against any jax, and what changed between two.

    shardfuzz qualify --corpus DIR --python A [--python B ...] --report DIR
                      [--fuzz-seed S --fuzz-examples N] [--workers N] [--timeout S]

For each interpreter (one jax installation each: see scripts/envs.py) a worker pool runs
every corpus case (JSON files under DIR, recursively) and, optionally, N programs drawn
from `strategies.programs` with Hypothesis seed S, in every mode (see below).
The oracle runs once per case, here (it needs no jax). Each case gets one verdict per jax
version:

- pass: jax agrees with the oracle in every mode;
- fail: a divergence no known-divergence entry explains (its signatures are listed);
- known: every divergence is a known one (harness/data/known_divergences.toml);
- unsupported: no mode could run it: the program uses a feature this jax lacks or
  defines differently (`harness.run.compat.unsupported_features`); a mode that cannot run
  a program (or that this jax lacks) is listed in the cell while the others decide.

Writes REPORT/qualify.json (the table, each version's jax_version and counts, the
changes), REPORT/qualify.junit.xml (one testcase per case x version) and
REPORT/qualify.html (the table, then the cases whose verdict changed from the first
version listed to the last: regressions, fixes, other changes), plus REPORT/cases/ (the
failing cases, replayable) and REPORT/fuzz/ (the drawn programs).

Every case runs in every mode of a fuzz run (`--modes` to choose), each where that jax
supports it. For each failing case the report gives, in version order, where it broke and
where it was fixed ("broken in 0.6.0 (passes on 0.5.3)", "fixed by 0.9.2 (fails on
0.6.0)"), in qualify.json (`ranges`), the console and the HTML page.

Exit codes: 0 no regression; 1 the last version fails a case that some earlier version
passes; 2 bad input (one line naming it).
"""

from __future__ import annotations

import json
import re
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.campaign import envs
from harness.campaign.fuzz import seeded_programs
from harness.campaign.qualify_judge import Judge, Step
from harness.campaign.versions import (
    Case,
    Cell,
    Column,
    changes,
    entries_fixed,
    ranges,
    version_key,
)
from harness.report.markup import write as _write
from harness.report.qualify_report import VERDICTS, html_page, junit_xml, table_lines
from harness.run.observation import observation_from_dict, observation_to_dict
from harness.run.pool import Pool
from oracles import predict
from programs.errors import ProgramFormatError, UsageError, WorkerStartError
from programs.model import Program
from programs.serialize import from_json, program_from_dict, program_id, program_to_dict

__all__ = ["VERDICTS", "Case", "Cell", "Column", "changes", "entries_fixed", "html_page", "junit_xml", "qualify", "ranges", "table_lines"]

SCHEMA = 1
# every mode a fuzz run has (the ones an old jax lacks come out unsupported, per mode)
from harness.run.modes import DEFAULT_MODES as MODES  # noqa: E402

# ---------------------------------------------------------------------------- input


def load_corpus(root: Path) -> list[Case]:
    """Every *.json under `root` (recursively, sorted), as a Case; a file that is not a
    program is bad input, named."""
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
    return seeded_programs(n, seed, invalid)


def fuzz_cases(seed: int, n: int) -> list[Case]:
    seen: set[str] = set()
    cases = []
    for i, p in enumerate(draw_programs(seed, n)):
        pid = program_id(p)
        if pid in seen:
            continue
        seen.add(pid)
        cases.append(Case(f"fuzz/s{seed}-{i:04d}-{pid}", p, f"drawn by strategies.programs (seed {seed}, example {i})", "fuzz"))
    return cases


# ---------------------------------------------------------------------------- running


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:120]


def _case_doc(res: Any, jax_version: str, case: Case) -> str:
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


@dataclass(frozen=True)
class Crash:
    """shardfuzz itself failed on a case (the oracle predicting it, or the judge): the
    case's cell on that column is `error`, never a jax verdict, and the run goes on."""

    error: str  # "TypeError: ..." (first line)
    traceback: str


def _crash(e: BaseException) -> Crash:
    first = (str(e).strip().splitlines() or [""])[0][:300]
    return Crash(f"{type(e).__name__}: {first}", "".join(traceback.format_exception(e)))


def _predict(program: Program) -> Any:
    """The oracle's prediction, or the Crash it raised (a shardfuzz bug, kept per case)."""
    try:
        return predict(program)
    except Exception as e:  # (the oracle's bug on this case: the other cases still run)
        return _crash(e)


def _error_cell(crash: Crash, report: Path, col: Column, case: Case, stage: str) -> Cell:
    """The `error` cell of a case shardfuzz could not judge; its traceback goes to
    REPORT/internal-errors/COLUMN/CASE.txt."""
    path = report / "internal-errors" / _safe(col.label or "oracle") / f"{_safe(case.name)}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"case {case.name}, {stage}\n\n{crash.traceback}")
    msg = f"shardfuzz could not judge it ({stage}): {crash.error} (a shardfuzz bug, not a jax one)"
    return Cell("error", message=msg, case_file=str(path))


def _settle(out: Any, report: Path, col: Column, case: Case) -> Cell:
    """A case's outcome as its cell; a failing one's check goes to REPORT/cases/."""
    cell = out.cell
    if cell.verdict == "fail" and out.result is not None:
        path = report / "cases" / _safe(col.label) / f"{_safe(case.name)}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_case_doc(out.result, col.jax_version, case))
        cell.case_file = str(path)
    return cell


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
    modes: tuple[str, ...] = MODES,
) -> None:
    """Every case through one interpreter's workers; fills col.cells. The column is
    labelled 'jax VERSION' ('jax VERSION #2' when `taken` already has that label)."""
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
    judge = Judge(preds, sups, col.jax_version)
    obs_dir = report / "observations"
    obs_dir.mkdir(parents=True, exist_ok=True)
    obs_file = (obs_dir / f"{_safe(col.label)}.jsonl").open("w", encoding="utf-8")
    obs_file.write(json.dumps({"column": {"label": col.label, "python": col.python, "jax_version": col.jax_version}}) + "\n")

    def record(done: list[Any]) -> None:
        for c in done:
            step = c.tag
            case = by_name[step.case]
            # what jax did in each step (the case, its probe run, its derived programs),
            # saved before judging: `qualify --rejudge` judges it again
            obs_file.write(json.dumps({"case": case.name, "stage": step.stage, "depth": step.depth,
                                       "source": case.source, "reason": case.reason,
                                       "program": program_to_dict(c.program),
                                       "observations": [observation_to_dict(o) for o in c.observations]}) + "\n")
            obs_file.flush()
            try:
                jobs, out = judge.done(step, c.program, c.observations)
            except Exception as e:  # (shardfuzz's bug on this case: an error cell, the run goes on)
                col.cells[case.name] = _error_cell(_crash(e), report, col, case, f"judging its {step.stage} run")
                continue
            for j in jobs:
                pool.submit(j.program, j.modes, tag=j.step)
            if out is not None:
                col.cells[case.name] = _settle(out, report, col, case)

    last = [time.monotonic()]

    def tick() -> None:  # progress on long columns, every 15 s
        if time.monotonic() - last[0] >= 15:
            last[0] = time.monotonic()
            n = col.counts()
            print(f"  {col.label}: {len(col.cells)}/{len(cases)} cases, " + ", ".join(f"{n[v]} {v}" for v in VERDICTS)
                  + f" ({time.monotonic() - t0:.0f}s)", file=progress, flush=True)

    try:
        for case in cases:
            while pool.free() == 0:
                record(pool.wait(1.0))
                tick()
            if isinstance(preds[case.name], Crash):  # (the oracle cannot predict it: nothing to compare)
                col.cells[case.name] = _error_cell(preds[case.name], report, col, case, "predicting it")
                continue
            j = judge.start(case.name, case.program, modes)
            pool.submit(j.program, j.modes, tag=j.step)
        done = pool.drain()
        while done:  # (a probe or derived program submitted while draining)
            record(done)
            tick()
            done = pool.drain()
    finally:
        pool.close()
        obs_file.close()
    col.elapsed_s = time.monotonic() - t0
    counts = col.counts()
    print(f"  {col.label}: " + ", ".join(f"{counts[v]} {v}" for v in VERDICTS) + f" ({col.elapsed_s:.0f}s)",
          file=progress, flush=True)


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
    modes: tuple[str, ...] = MODES,
    bisect_envs: Path | None = None,
    bisect_max: int = 12,
) -> dict[str, Any]:
    """Run, write the three reports, return the qualify.json document. With
    `bisect_envs`, every range wider than one release is narrowed (see `bisect`)."""
    preds = {c.name: _predict(c.program) for c in cases}
    cols: list[Column] = []
    for py in pythons:
        col = Column("", py)
        run_column(col, cases, preds, sups, workers, timeout_s, report, progress, tuple(c.label for c in cols), modes)
        cols.append(col)
    given = list(cols)
    bisected: list[dict[str, Any]] = []
    if bisect_envs is not None:
        bisected = bisect(cases, cols, preds, sups, workers, timeout_s, report, progress, modes,
                          bisect_envs, bisect_max)
    return write_reports(cases, cols, given, report, sups=sups, corpus=corpus, fuzz=fuzz, modes=modes,
                         bisected=bisected)


def write_reports(
    cases: list[Case],
    cols: list[Column],
    given: list[Column],
    report: Path,
    *,
    sups: list[Any],
    corpus: str,
    fuzz: dict[str, int] | None,
    modes: tuple[str, ...],
    bisected: list[dict[str, Any]],
) -> dict[str, Any]:
    """The qualify.json document from judged columns (`given`: the --python order, whose
    first and last are compared), written with its JUnit and HTML forms."""
    ch = changes(cases, given[0], given[-1])
    rng = ranges(cases, cols)
    fixed = {col.label: entries_fixed(sups, col, corpus) for col in cols}
    doc = {
        "schema": SCHEMA,
        "modes": list(modes),
        "corpus": corpus,
        "fuzz": fuzz,
        "versions": [
            {"label": c.label, "python": c.python, "jax_version": c.jax_version, "counts": c.counts(),
             "elapsed_s": round(c.elapsed_s, 1), "entries_fixed": fixed[c.label]}
            for c in sorted(cols, key=version_key)
        ],
        "first": given[0].label,
        "last": given[-1].label,
        "bisect": bisected,
        "cases": [
            {
                "case": c.name,
                "source": c.source,
                "reason": c.reason,
                "verdicts": {col.label: col.cells[c.name].to_json() for col in sorted(cols, key=version_key)
                             if c.name in col.cells},
            }
            for c in cases
        ],
        "changes": ch,
        "ranges": rng,
        # 1 when the last version fails a case that some earlier version passes
        # (else 3 when shardfuzz could not judge some case: a shardfuzz bug, the run is incomplete)
        "exit_code": 1 if any(r["last_fails_after_pass"] for r in rng) else 3 if any(
            cell.verdict == "error" for col in cols for cell in col.cells.values()) else 0,
    }
    report.mkdir(parents=True, exist_ok=True)
    _write(report / "qualify.json", json.dumps(doc, indent=1))  # (markup.write: atomic)
    _write(report / "qualify.junit.xml", junit_xml(doc))
    _write(report / "qualify.html", html_page(doc))
    return doc


def _gaps(cases: list[Case], cols: list[Column]) -> dict[tuple[str, str], list[str]]:
    """(last good or bad version, first version after the change) -> the cases whose
    verdict changes between those two neighbouring versions (from `ranges`)."""
    out: dict[tuple[str, str], list[str]] = {}
    for r in ranges(cases, cols):
        for e in r["events"]:
            if e["event"] not in ("broken", "fixed"):
                continue  # (first seen / not seen: one side could not run the bug's modes; nothing to bisect)
            key = (e["last_good"], e["in"]) if e["event"] == "broken" else (e["last_bad"], e["by"])
            out.setdefault(key, []).append(r["case"])
    return out


def bisect(
    cases: list[Case],
    cols: list[Column],
    preds: dict[str, Any],
    sups: list[Any],
    workers: int,
    timeout_s: float,
    report: Path,
    progress: Any,
    modes: tuple[str, ...],
    env_root: Path,
    max_builds: int,
) -> list[dict[str, Any]]:
    """Narrow every regression range to one release: while two neighbouring versions
    disagree on a case and the package index offers releases between them, build an
    environment for the middle release (harness.campaign.envs, under `env_root`), run
    the cases of that gap there, and add its column to `cols`. Stops after `max_builds`
    environments. Returns one row per step (the gap, the release tried, the cases run,
    or why it could not be built)."""
    steps: list[dict[str, Any]] = []
    tried: set[str] = {c.jax_version for c in cols}
    builds = 0
    while builds < max_builds:
        gaps = _gaps(cases, cols)
        pick = None
        for (low, high), names in sorted(gaps.items(), key=lambda kv: -len(kv[1])):
            between = [v for v in envs.releases_between(low, high, [c.python for c in cols]) if v not in tried]
            if between:
                pick = (low, high, names, between[len(between) // 2])
                break
        if pick is None:
            break
        low, high, names, mid = pick
        tried.add(mid)
        builds += 1
        print(f"bisect: {len(names)} case(s) change between jax {low} and {high}; trying {mid}",
              file=progress, flush=True)
        try:
            got, py = envs.build(mid, env_root, envs.base_python_for(mid, sys.executable, None))
        except RuntimeError as e:
            print(f"  bisect: {e}", file=progress, flush=True)
            steps.append({"low": low, "high": high, "release": mid, "cases": names, "error": str(e)})
            continue
        col = Column("", str(py))
        subset = [c for c in cases if c.name in set(names)]
        run_column(col, subset, preds, sups, workers, timeout_s, report, progress, tuple(c.label for c in cols), modes)
        tried.add(col.jax_version)
        cols.append(col)
        steps.append({"low": low, "high": high, "release": got, "cases": names, "label": col.label})
    return steps


def rejudge(report: Path, out: Path, sups: list[Any]) -> dict[str, Any]:
    """Judge a finished qualify run again from what its workers saw
    (REPORT/observations/*.jsonl, written as each case finished), with this checkout's
    oracle and known entries: triage without running jax again. Writes the three reports
    (and the failing cases) to `out`."""
    prev_path = report / "qualify.json"
    files = sorted((report / "observations").glob("*.jsonl"))
    if not prev_path.is_file() or not files:
        raise UsageError(f"--rejudge {report}: not a qualify report with observations "
                         f"(needs qualify.json and observations/*.jsonl; run shardfuzz qualify first)")
    try:
        prev = json.loads(prev_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise UsageError(f"--rejudge {report}: cannot read qualify.json ({e})") from None
    cases: dict[str, Case] = {}
    preds: dict[str, Any] = {}
    cols: list[Column] = []
    for f in files:
        lines = f.read_text(encoding="utf-8").splitlines()
        try:
            meta = json.loads(lines[0])["column"]
        except (IndexError, KeyError, json.JSONDecodeError):
            raise UsageError(f"--rejudge: {f}: not an observations file (its first line names the column)") from None
        col = Column(meta["label"], meta["python"], meta["jax_version"])
        saved: dict[Step, tuple[Program, list[Any]]] = {}
        mains: list[str] = []  # the cases, in the order they finished
        for line in lines[1:]:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short when the run stopped: that case was not finished
            name = row["case"]
            step = Step(name, row.get("stage", "main"), int(row.get("depth", 0)))
            try:
                program = program_from_dict(row["program"])
            except ProgramFormatError as e:
                # a program this checkout rejects (a derived program an older shardfuzz
                # built wrongly): that step is missing, and its case is cut short there
                print(f"--rejudge: {f.name}: {name} ({step.stage}, depth {step.depth}): saved program "
                      f"not valid here, left out ({e})", file=sys.stderr)
                continue
            if step.stage == "main" and name not in cases:
                cases[name] = Case(name, program, row.get("reason", ""), row.get("source", "corpus"))
                preds[name] = _predict(program)
            if step.stage == "main":
                mains.append(name)
            saved[step] = (program, [observation_from_dict(o) for o in row["observations"]])
        judge = Judge(preds, sups, col.jax_version)
        for name in mains:
            if isinstance(preds[name], Crash):
                col.cells[name] = _error_cell(preds[name], out, col, cases[name], "predicting it")
                continue
            jobs = [judge.start(name, cases[name].program, ())]
            outcome = None
            while jobs and outcome is None:
                j = jobs.pop(0)
                got = saved.get(j.step)
                if got is None and j.step.stage.startswith("probe"):  # (the run needed no probe here)
                    got = (j.program, [])
                if got is None or got[0] != j.program:  # (new entries: another derived program)
                    outcome = judge.cut_short(j.step)
                    break
                try:
                    jobs, outcome = judge.done(j.step, got[0], got[1])
                except Exception as e:
                    col.cells[name] = _error_cell(_crash(e), out, col, cases[name], f"judging its {j.step.stage} run")
                    break
            if outcome is not None:
                col.cells[name] = _settle(outcome, out, col, cases[name])
        cols.append(col)
    by_label = {c.label: c for c in cols}
    given = [by_label[lab] for lab in (prev.get("first"), prev.get("last")) if lab in by_label] or cols
    order = {c["case"]: i for i, c in enumerate(prev.get("cases") or [])}  # the run's case order
    ordered = sorted(cases.values(), key=lambda c: order.get(c.name, len(order)))
    out.mkdir(parents=True, exist_ok=True)
    return write_reports(ordered, cols, given, out, sups=sups, corpus=str(prev.get("corpus", "")),
                         fuzz=prev.get("fuzz"), modes=tuple(prev.get("modes") or MODES),
                         bisected=list(prev.get("bisect") or []))
