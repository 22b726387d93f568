"""Flaky is not a bug: a crash or timeout no known entry explains is run again alone on
its worker, with a longer limit, before it is reported (harness/campaign/plan.py
`Planner.confirm`, `PartKind.ALONE`; harness/run/pool.py jobs `alone`). A timeout that
then finishes is `slow`, a crash that does not happen again `flaky`: reported in every
report, never a failure. Real workers and real jax; the first eager run of the run
hangs or aborts by an injected fault (harness/run/faults.py `hang_once_in_eager`,
`abort_once_in_eager`), every later one runs."""

from __future__ import annotations

import html
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

from helpers import P, iota, op, prog, psum_program

from harness.campaign.config import ALONE_LIMIT_FACTOR, RunConfig
from harness.campaign.fuzz import fuzz
from harness.campaign.known_queries import KnownQueries
from harness.campaign.plan import PartKind, Planner
from harness.judge.check import evaluate
from harness.judge.known import KnownDivergence
from harness.judge.known_features import OpFeature, Pattern
from harness.report.console import exit_code, summary_lines
from harness.report.summary import FLAKY, SLOW, RunSummary
from harness.run.observation import Observation
from harness.run.pool import Job, Pool
from oracles import predict
from programs.model import Mesh

XY = Mesh(("x", "y"), (2, 4))


def _run(tmp_path: Path, fault: str) -> RunSummary:
    """One program in eager, on one worker with a 3 s limit; `fault` makes the run's first
    eager run hang (or abort) once."""
    return fuzz(RunConfig(seed=0, max_examples=1, modes=("eager",), workers=1, timeout_s=3.0, report_dir=tmp_path / "r",
                          progress=io.StringIO(), minimize_budget_s=0, value_share=1.0, batch=1, suppressions=[],
                          worker_env={"SHARDFUZZ_FAULTS": fault, "SHARDFUZZ_FAULT_STATE": str(tmp_path)}),
                fixed=[psum_program(1)])


def test_an_eager_timeout_that_passes_alone_is_slow_and_the_run_is_green(tmp_path: Path) -> None:
    """The eager job times out under the short limit; run alone with the longer one it
    finishes, agreeing with the oracle: one `slow` run, no bucket, exit 0; summary.json,
    the console, JUnit (a passing testcase) and the HTML page all say so, from one count."""
    s = _run(tmp_path, "hang_once_in_eager")
    assert (tmp_path / "hang_once_in_eager").exists()  # (the fault did hang the first eager run)
    c = s.counts
    assert (c.slow, c.flaky, c.programs_run, c.failing_programs) == (1, 0, 1, 0), c
    assert not s.buckets and exit_code(s) == 0
    (r,) = s.reruns
    assert (r.verdict, r.mode) == (SLOW, "eager") and "timed out after 3s" in r.under_load, r
    assert Path(r.case).is_file()  # (saved before it ran again)
    rep = tmp_path / "r"
    doc = json.loads((rep / "summary.json").read_text())
    assert doc["slow"] == 1 and doc["flaky"] == 0 and doc["reruns"][0]["verdict"] == SLOW
    assert RunSummary.from_json(doc) == s
    lines = "\n".join(summary_lines(s, rep))
    assert c.line() in lines and "1 slow" in lines and "exit 0" in lines
    suite = ET.parse(rep / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "0"
    (case,) = [t for t in suite.iter("testcase") if t.get("classname") == "shardfuzz.slow"]
    assert case.find("failure") is None and case.find("skipped") is None
    assert {p.get("name"): p.get("value") for p in suite.iter("property")}["slow"] == "1"
    page = (rep / "index.html").read_text()
    assert "Slow and flaky (1)" in page and html.escape(c.line()) in page


def test_a_crash_that_does_not_happen_alone_is_flaky_and_the_run_is_green(tmp_path: Path) -> None:
    s = _run(tmp_path, "abort_once_in_eager")
    assert (tmp_path / "abort_once_in_eager").exists()
    assert (s.counts.slow, s.counts.flaky) == (0, 1) and not s.buckets and exit_code(s) == 0
    (r,) = s.reruns
    assert (r.verdict, r.mode) == (FLAKY, "eager") and "SIGABRT" in r.under_load, r


def test_a_crash_that_happens_again_alone_is_a_crash_bucket(tmp_path: Path) -> None:
    """Every pshuffle aborts: run again alone it aborts again, and is reported as found."""
    crash = prog(XY, [iota(8)], [P("y")], [op("pshuffle", 0, axes=("y",), perm=(1, 0, 3, 2))], [1], [P("y")])
    s = fuzz(RunConfig(seed=0, max_examples=1, modes=("jit",), workers=1, report_dir=tmp_path, progress=io.StringIO(),
                       minimize_budget_s=0, value_share=1.0, batch=1, suppressions=[],
                       worker_env={"SHARDFUZZ_FAULTS": "abort_in_pshuffle"}), fixed=[crash])
    assert [(b.kind, b.mode) for b in s.buckets] == [("crash", "jit")] and exit_code(s) == 1
    assert not s.reruns


# ------------------------------------------------------------------ the planner's part


def test_the_planner_runs_an_unexplained_crash_or_timeout_again_alone_with_a_longer_limit() -> None:
    p = psum_program(1)
    pred = predict(p)
    obs = (Observation("abstract", status="ok"), Observation("eager", status="timeout", error_message="timed out after 30s"),
           Observation("jit", status="crash", error_message="worker died"))
    res = evaluate(p, list(obs), pred)
    cfg = RunConfig(timeout_s=30.0)
    part = Planner(cfg, KnownQueries((), "")).confirm(res, "parent")
    assert part is not None
    assert (part.kind, part.modes, part.alone, part.parent) == (PartKind.ALONE, ("eager", "jit"), True, "parent")
    assert part.limit_s == ALONE_LIMIT_FACTOR * 30.0 and part.confirm_of is res and part.prediction is pred
    # a crash in its job leaves the rest to a job of its own: alone, with the same limit
    rest = Planner(cfg, KnownQueries((), "")).rest(part, (Observation("eager", status="ok"),), ("jit",))
    assert (rest.kind, rest.modes, rest.alone, rest.limit_s) == (PartKind.ALONE, ("jit",), True, part.limit_s)
    # nothing crashed or timed out, or no pool to run it alone in: none
    assert Planner(cfg, KnownQueries((), "")).confirm(evaluate(p, [Observation("abstract")], pred), None) is None
    assert Planner(cfg, KnownQueries((), ""), pooled=False).confirm(res, None) is None


def test_a_timeout_a_known_entry_explains_is_not_run_again() -> None:
    p = psum_program(1)
    hangs = KnownDivergence("psum-hangs", "r", (Pattern.parse("timeout|eager|timeout"),), "",
                            op_features=(OpFeature.parse("psum"),), case="c.json", link="none found")
    res = evaluate(p, [Observation("eager", status="timeout", error_message="timed out after 2s")], predict(p))
    assert [d.kind.value for d in res.divergences] == ["timeout"]
    planner = Planner(RunConfig(suppressions=[hangs]), KnownQueries.of([hangs], "0.10.2"))
    assert planner.confirm(res, None) is None
    assert Planner(RunConfig(), KnownQueries((), "")).confirm(res, None) is not None  # (unexplained: it is)


# ------------------------------------------------------------------ the pool's jobs alone


def test_a_job_alone_waits_for_an_idle_worker_and_nothing_is_queued_behind_it() -> None:
    fine = psum_program(1)
    pool = Pool(1, timeout_s=30.0)
    try:
        pool.submit(fine, ("abstract",), tag="first")
        pool.submit(fine, ("abstract",), tag="alone", alone=True, limit_s=90.0)
        # (it went out only once the worker was idle: the first is done)
        assert [c.tag for c in pool._pending] == ["first"] and [j.tag for j in pool.workers[0].queue] == ["alone"]
        assert pool.free() == 0  # (nothing goes behind it)
        pool.submit(fine, ("abstract",), tag="after")
        assert [c.tag for c in pool._pending] == ["first", "alone"]
        done = pool.drain()
    finally:
        pool.close()
    assert [c.tag for c in done] == ["first", "alone", "after"]
    # a job alone keeps a limit above the pool's; any other gets the pool's at most
    assert pool.limit_s(Job(0, fine, ("eager",), limit_s=90.0, alone=True)) == 90.0
    assert pool.limit_s(Job(0, fine, ("eager",), limit_s=90.0)) == 30.0
