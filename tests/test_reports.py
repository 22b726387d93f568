"""The run reports: junit.xml for CI and index.html for people (harness/reports.py).

A synthetic run (no jax, no fuzzing): a summary with a new value bucket on a 2x4 mesh, a
known bucket, a bucket whose case file is missing, and a fixed entry. The page is also
rendered in real headless Chromium, which must log nothing to the console.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from helpers import chromium

from harness.report.console import summary_lines
from harness.report.reports import write_reports as _write_reports
from harness.report.summary import SUMMARY_SCHEMA, RunSummary, bucket_from_json, counts_of
from programs.model import Input, Mesh, Op, Program, Spec
from programs.serialize import program_to_dict


def typed(d: dict[str, Any]) -> RunSummary:
    """A hand-made summary document read back through RunSummary.from_json (as a real
    summary.json is), with the counts derived from its buckets by the one definition."""
    doc: dict[str, Any] = {
        "schema": SUMMARY_SCHEMA, "jax_version": "?", "seed": 0, "modes": [], "codegen": "fast", "repeats_skipped": 0,
        "accidentally_invalid": 0, "elapsed_s": 0.0, "buckets": [], "fixed": [], "batch_reconfirmed": 0,
        "corpus_replayed": 0, "database_replayed": 0, "programs_digest": "", "unseen_suppressions": [],
        "known_entries": [], "programs_with_known": 0, "derived_checked": 0, "checked_in_full": 0,
        "statistics": {}, "coverage": [], **d,
    }
    buckets = [bucket_from_json(b) for b in doc["buckets"]]
    counts = counts_of(buckets, doc["fixed"], int(doc.get("programs_run", 0)),
                       int(doc.get("programs_with_divergences", doc.get("failing_programs", 0))), int(doc.get("failing_programs", 0)))
    doc.update({k: v for k, v in counts.__dict__.items()})
    return RunSummary.from_json(doc)


def write_reports(summary: dict[str, Any], report: Path) -> tuple[Path, Path]:
    return _write_reports(typed(summary), report)


NEW_SIG = "value|jit|psum"
KNOWN_SIG = "vma|eager|all_gather"
MISSING_SIG = "crash|jit|crash"
FIXED_SIG = "shape|abstract|ppermute"
# coordinates on the 2x4 mesh where jax and the oracle disagree, with |diff| for each
BAD = [(0, 1), (1, 3)]
DIFFS = [2.0, 8.0]


def psum_program() -> Program:
    mesh = Mesh(("x", "y"), (2, 4))
    return Program(
        mesh=mesh,
        inputs=(Input((4, 8), "float32", "iota"),),
        in_specs=(Spec((("x",), ("y",))),),
        body=(Op.make("psum", (0,), axes=("x", "y")),),
        outputs=(1,),
        out_specs=(Spec(),),
    )


def gather_program() -> Program:
    return Program(
        mesh=Mesh(("x",), (4,)),
        inputs=(Input((8,), "int32"),),
        in_specs=(Spec((("x",),)),),
        body=(Op.make("all_gather", (0,), axes=("x",), axis=0, tiled=True),),
        outputs=(1,),
        out_specs=(Spec(),),
    )


def write_case(path: Path, p: Program, divergences: list[dict[str, Any]]) -> str:
    doc = {"program": program_to_dict(p), "jax_version": "0.0.test", "divergences": divergences}
    path.write_text(json.dumps(doc))
    return str(path)


def divergence(sig: str, **kw: Any) -> dict[str, Any]:
    kind, mode, where = sig.split("|")
    d = {
        "signature": sig,
        "kind": kind,
        "mode": mode,
        "where": where,
        "message": f"{sig} happened",
        "output": 0,
        "op_index": None,
        "bad_devices": [],
        "max_abs_diff": None,
        "device_diffs": [],
    }
    d.update(kw)
    return d


@pytest.fixture
def run_dir(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    report = tmp_path / "run"
    cases = report / "cases"
    cases.mkdir(parents=True)
    new_case = write_case(
        cases / "new.json",
        psum_program(),
        [
            divergence(
                NEW_SIG,
                bad_devices=[list(c) for c in BAD],
                device_diffs=DIFFS,
                max_abs_diff=max(DIFFS),
                message="out[0] (mode=jit): values differ <at> 2 of 8 devices",
            )
        ],
    )
    known_case = write_case(cases / "known.json", gather_program(), [divergence(KNOWN_SIG)])
    fixed_case = write_case(cases / "fixed.json", gather_program(), [divergence(FIXED_SIG)])

    def bucket(sig: str, case: str, suppressed_by: str | None, message: str) -> dict[str, Any]:
        kind, mode, _ = sig.split("|")
        return {
            "signature": sig,
            "kind": kind,
            "mode": mode,
            "count": 3,
            "case": case,
            "suppressed_by": suppressed_by,
            "message": message,
        }

    summary: dict[str, Any] = {
        "jax_version": "0.0.test",
        "seed": 7,
        "modes": ["abstract", "jit", "eager"],
        "programs_run": 123,
        "failing_programs": 3,
        "divergences": 4,
        "suppressed": 3,
        "elapsed_s": 12.5,
        "buckets": [
            bucket(NEW_SIG, new_case, None, "out[0] (mode=jit): values <differ> & more\x1b[31m"),
            bucket(MISSING_SIG, str(cases / "gone.json"), None, "worker crashed"),
            bucket(KNOWN_SIG, known_case, "gather-vma", "vma differs"),
        ],
        "unseen_suppressions": ["stale-one"],
        "statistics": {"op: psum": 0.5, "op: add": 0.25, "mesh rank: 2": 1.0},
        "coverage": [
            {
                "collective": "psum",
                "mesh_rank": 2,
                "dtype": "float32",
                "mode": "jit",
                "spec": "one-axis",
                "count": 3,
            },
            {
                "collective": "psum",
                "mesh_rank": 2,
                "dtype": "int32",
                "mode": "eager",
                "spec": "one-axis",
                "count": 2,
            },
            {
                "collective": "all_gather",
                "mesh_rank": 1,
                "dtype": "int32",
                "mode": "jit",
                "spec": "replicated",
                "count": 1,
            },
        ],
        "fixed": [{"signatures": [FIXED_SIG], "case": fixed_case}],  # as fuzz.replay_corpus writes it
    }
    return summary, report


def articles(page: str) -> dict[str, str]:
    """Each bucket's <article> by its signature."""
    out = {}
    for part in page.split("<article")[1:]:
        sig = re.search(r'<div class="sig">(.*?)</div>', part)
        assert sig is not None
        out[sig.group(1)] = part.split("</article>")[0]
    return out


def test_junit_counts_new_known_and_run(run_dir: tuple[dict[str, Any], Path]) -> None:
    summary, report = run_dir
    junit, _ = write_reports(summary, report)
    assert junit == report / "junit.xml"
    root = ET.parse(junit).getroot()  # parses despite the escape character in a message
    suites = list(root.iter("testsuite"))
    assert [s.get("name") for s in suites] == ["shardfuzz"]
    cases = list(suites[0].iter("testcase"))
    assert len(cases) == 4  # three buckets and "run"
    assert suites[0].get("tests") == "4"
    assert suites[0].get("failures") == "2" and suites[0].get("skipped") == "1"
    by_name = {c.get("name"): c for c in cases}
    new = by_name[NEW_SIG]
    assert new.get("classname") == "shardfuzz.value"
    failure = new.find("failure")
    assert failure is not None and "values <differ> & more" in (failure.get("message") or "")
    assert "new.json" in (failure.text or "")
    assert len(by_name) == len(cases)  # unique names: a known bucket names its entry
    skipped = by_name[f"{KNOWN_SIG} [known: gather-vma]"].find("skipped")
    assert skipped is not None and skipped.get("message") == "known: gather-vma"
    run = by_name["run"]
    assert run.find("failure") is None and run.find("skipped") is None
    assert "123 programs" in (run.findtext("system-out") or "")


def test_page_shows_every_bucket_grid_and_coverage(run_dir: tuple[dict[str, Any], Path]) -> None:
    summary, report = run_dir
    _, page_path = write_reports(summary, report)
    page = page_path.read_text()
    for sig in (NEW_SIG, KNOWN_SIG, MISSING_SIG, FIXED_SIG):
        assert sig in page
    arts = articles(page)
    assert set(arts) == {NEW_SIG, KNOWN_SIG, MISSING_SIG, FIXED_SIG}

    new = arts[NEW_SIG]
    for (i, j), d in zip(BAD, DIFFS, strict=True):
        cell = re.search(rf'<td class="bad" data-coord="{i},{j}"[^>]*>([^<]*)<', new)
        assert cell is not None, f"no bad cell for device ({i}, {j})"
        assert cell.group(1) == f"{d:g}"
    assert len(re.findall(r'<td class="ok" data-coord=', new)) == 8 - len(BAD)
    assert html.escape("jax.lax.psum(a0, ('x', 'y'))") in new  # the program
    assert "<details>" in new and "xla_force_host_platform_device_count" in new  # reproducer
    assert "values &lt;differ&gt; &amp; more" in new  # escaped, never raw
    assert "<differ>" not in page

    assert "could not be read" in arts[MISSING_SIG] and "gone.json" in arts[MISSING_SIG]
    assert "known: gather-vma" in arts[KNOWN_SIG]
    assert "jax.lax.all_gather" in arts[FIXED_SIG]
    assert "stale-one" in page

    # coverage pivots: psum is counted 3 (jit) + 2 (eager), all on rank-2 meshes
    mode_table = re.search(r'<table class="pivot" data-pivot="mode">.*?</table>', page, re.S)
    rank_table = re.search(r'<table class="pivot" data-pivot="mesh_rank">.*?</table>', page, re.S)
    assert mode_table is not None and rank_table is not None
    assert re.search(r"psum</td><td>2</td><td>3</td><td><b>5</b>", mode_table.group(0))
    assert re.search(r'psum</td><td class="gap">0</td><td>5</td>', rank_table.group(0))
    for column in ("dtype", "spec"):
        assert f'data-pivot="{column}"' in page
    assert page.index("mesh rank") < page.index(">op<")  # statistics grouped, groups sorted


def test_page_is_self_contained(run_dir: tuple[dict[str, Any], Path]) -> None:
    summary, report = run_dir
    _, page_path = write_reports(summary, report)
    page = page_path.read_text()
    refs = re.findall(r"""(?:src|href)\s*=\s*["']?([^"'\s>]*)""", page, re.I)
    assert all(r.startswith("#") for r in refs), refs  # in-page anchors only
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", page, re.I)
    assert "<link" not in page and "@import" not in page and "url(" not in page


def test_minimized_case_and_optional_keys(run_dir: tuple[dict[str, Any], Path]) -> None:
    summary, report = run_dir
    small = Program(
        mesh=Mesh(("x", "y"), (2, 4)),
        inputs=(Input((2, 4), "float32", "iota"),),
        in_specs=(Spec((("x",), ("y",))),),
        body=(Op.make("neg", (0,)), Op.make("psum", (1,), axes=("y",))),
        outputs=(2,),
        out_specs=(Spec((("x",),)),),
    )
    summary["buckets"][0]["minimized_case"] = write_case(
        report / "cases" / "small.json",
        small,
        [divergence(NEW_SIG, bad_devices=[[1, 1]], device_diffs=[4.0])],
    )
    del summary["fixed"]
    page = write_reports(summary, report)[1].read_text()
    new = articles(page)[NEW_SIG]
    assert "minimized program" in new and html.escape("jax.lax.psum(v0, 'y')") in new
    assert re.search(r'<td class="bad" data-coord="1,1"', new)
    assert "Fixed (0)" in page

    # a bare summary (older runs, or a run with nothing in it) still gives both files
    junit, html_path = write_reports({}, report / "empty")
    assert ET.parse(junit).getroot().find("testsuite") is not None
    assert "No new divergences" in html_path.read_text()


def test_three_axis_mesh_draws_one_table_per_index_of_the_first_axis(tmp_path: Path) -> None:
    p = Program(
        mesh=Mesh(("x", "y", "z"), (2, 2, 2)),
        inputs=(Input((), "int32"),),
        in_specs=(Spec(),),
        body=(Op.make("psum", (0,), axes=("z",)),),
        outputs=(1,),
        out_specs=(Spec(),),
    )
    case = write_case(
        tmp_path / "c.json", p, [divergence(NEW_SIG, bad_devices=[[1, 0, 1]], device_diffs=[1.0])]
    )
    b = {
        "signature": NEW_SIG,
        "kind": "value",
        "mode": "jit",
        "count": 1,
        "case": case,
        "suppressed_by": None,
        "message": "m",
    }
    page = write_reports({"buckets": [b]}, tmp_path)[1].read_text()
    assert page.count('<table class="grid">') == 2
    assert "<caption>x=0</caption>" in page and "<caption>x=1</caption>" in page
    assert re.search(r'<td class="bad" data-coord="1,0,1"', page)


# ------------------------------------------------------------------ real browser rendering


def render(page: Path, tmp: Path) -> tuple[Path, list[str]]:
    """Screenshot `page` in headless Chromium; return the screenshot and the console lines.

    With --enable-logging=stderr Chromium logs every console message as
    `[...:INFO:CONSOLE:1] "message", source: URL (line)` (older builds: `CONSOLE(1)`),
    whatever its level: console.error does not say "error". The report has no script, so
    any console line at all (an uncaught exception, a CSP violation for an external
    reference, console.error) is a problem."""
    shot = tmp / "shot.png"
    cmd = [
        chromium("render the HTML report"),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=2000",
        f"--screenshot={shot}",
        "--window-size=1280,2000",
        page.resolve().as_uri(),
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    console = [line for line in res.stderr.splitlines() if re.search(r":CONSOLE[(:]", line)]
    return shot, console


def test_console_check_catches_errors(tmp_path: Path) -> None:
    """The check below can fail: a thrown error and a console.error are both seen."""
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><html><body><p>bad</p><script>console.error('quiet');"
        'throw new Error("x")</script></body></html>'
    )
    _, console = render(page, tmp_path)
    assert any("Uncaught" in line and "x" in line for line in console), console
    assert any("quiet" in line for line in console), console


def test_console_check_catches_external_references(run_dir: tuple[dict[str, Any], Path]) -> None:
    """The report's Content-Security-Policy turns an external reference into a console line."""
    summary, report = run_dir
    _, page = write_reports(summary, report)
    text = page.read_text().replace("<main>", '<main><img src="https://example.invalid/x.png">', 1)
    page.write_text(text)
    _, console = render(page, report)
    assert any("example.invalid" in line for line in console), console


def test_page_renders_in_chromium_without_console_messages(
    run_dir: tuple[dict[str, Any], Path],
) -> None:
    summary, report = run_dir
    _, page = write_reports(summary, report)
    shot, console = render(page, report)
    assert shot.exists() and shot.stat().st_size > 10_000
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert console == [], console


def test_cell_coverage_counts_every_pair_once_and_every_renderer_prints_its_line(tmp_path: Path) -> None:
    """`CellCoverage` (harness/report/summary.py) sorts each (cell, mode) pair into
    checked, missed (reachable, no check), blocked (a known divergence) or unreachable;
    the console, summary.json, junit.xml and index.html all give its one line."""
    from harness.report.summary import BLOCKED_WHY, CellCheck, CellCoverage

    cells = (CellCheck("psum|rank=0", "jit", 3, 1, 2.5), CellCheck("psum|rank=0", "eager", 1, 4, 9.0),
             CellCheck("psum|rank=1", "jit", 0), CellCheck("psum|rank=1", "eager", 0),
             CellCheck("pmax|rank=1", "eager", 0),
             CellCheck("psum|rank=2", "jit", 0, why=BLOCKED_WHY + "in every program ..."),
             CellCheck("sendrecv|rank=1", "jit", 0, why="sendrecv: XLA:CPU cannot run it"))
    cov = CellCoverage.of(cells)
    assert (cov.checked, cov.missed, cov.blocked, cov.unreachable, cov.reachable) == (2, 3, 1, 1, 5)
    assert cov.missed_by_mode == (("eager", 2), ("jit", 1)) and cov.last_first_s == 9.0
    line = cov.line()
    assert line.startswith("2 of 5 reachable (cell, mode) pairs checked (40.0%)") and "not reached: eager 2, jit 1" in line
    doc = json.loads(json.dumps(_summary_doc_with_cells(cells)))
    s = RunSummary.from_json(doc)
    assert s.cell_coverage == cov
    out = s.to_json()
    assert out["cell_coverage"]["checked"] == 2 and RunSummary.from_json(out) == s  # (derived: not read back)
    _every_renderer_prints(s, tmp_path, f"cells: {line}", line)


def test_worker_time_names_each_modes_share_and_the_cache_and_every_renderer_prints_its_line(tmp_path: Path) -> None:
    """`WorkerTime` (harness/report/summary.py): each mode's seconds and runs, the most
    first, and whether the compilation cache was empty (a machine's first run checks
    fewer pairs in its budget); summary.json, junit.xml, index.html and the console give
    its one line."""
    from harness.report.summary import ModeTime, WorkerTime

    modes = (ModeTime("jit", 10, 1.5), ModeTime("eager", 3, 4.25))
    line = WorkerTime(modes, 0).line()
    assert line.startswith("6s in checks: eager 4.2s (3 runs), jit 1.5s (10 runs)") and "cache was empty" in line
    assert "held 12 executables" in WorkerTime(modes, 12).line() and "no compilation cache" in WorkerTime(modes).line()
    doc = json.loads(json.dumps({**_summary_doc_with_cells(()), "mode_time": [{"mode": m.mode, "runs": m.runs,
                                                                               "seconds": m.seconds} for m in modes],
                                 "cache_entries": 0}))
    s = RunSummary.from_json(doc)
    assert s.worker_time == WorkerTime(modes, 0)
    out = s.to_json()
    assert out["worker_time"] == line and RunSummary.from_json(out) == s  # (derived: not read back)
    _every_renderer_prints(s, tmp_path, f"worker time: {line}", line, verbosity=1)
    assert not any("worker time" in ln for ln in summary_lines(s, tmp_path))  # (the default leaves it to -v)


def _every_renderer_prints(s: RunSummary, report: Path, console: str, line: str, verbosity: int = 0) -> None:
    """junit.xml and index.html hold `line`, and the console summary `console` (at
    `verbosity`: the worker time is a -v line)."""
    junit, page = _write_reports(s, report)
    assert line in junit.read_text() and html.escape(line) in page.read_text()
    assert any(console in ln for ln in summary_lines(s, report, verbosity))


def _summary_doc_with_cells(cells: tuple[Any, ...]) -> dict[str, Any]:
    from dataclasses import asdict

    counts = counts_of((), (), 2, 0, 0)
    return {"schema": SUMMARY_SCHEMA, "jax_version": "0.10.2", "seed": 0, "modes": ["jit", "eager"], "codegen": "fast",
            **asdict(counts), "repeats_skipped": 0, "accidentally_invalid": 0, "elapsed_s": 10.0, "buckets": [],
            "fixed": [], "batch_reconfirmed": 0, "corpus_replayed": 0, "database_replayed": 0, "programs_digest": "x",
            "unseen_suppressions": [], "known_entries": [], "programs_with_known": 0, "derived_checked": 0,
            "checked_in_full": 2, "statistics": {}, "coverage": [], "cells": [asdict(c) for c in cells]}
