"""A budget is a promise: `shardfuzz fuzz --budget B` ends within B plus its grace
(max(10 s, 10% of B)) and writes its summary whatever jax does; the work its time left
over is reported as not done. The pool's deadline cancels every job running or waiting
and every job sent after it (harness/run/pool.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from helpers import P, iota, op, prog, psum_program

from harness.campaign.config import RunConfig
from harness.judge.check import evaluate
from harness.report.summary import NotDone, RunSummary
from harness.run.pool import CANCELLED, Pool
from programs.model import Mesh

ROOT = Path(__file__).parent.parent
XY = Mesh(("x", "y"), (2, 4))


def test_a_budget_run_whose_every_job_hangs_ends_within_its_grace_and_writes_its_summary(tmp_path: Path) -> None:
    """Every shard_map hangs (the fault `hang_in_shard_map`), so no job ever finishes and
    every known entry's own case would wait out the 30 s limit: `--budget 15` ends
    within 15 + 10 s (a few seconds of slack for this test's own process start) and its
    summary says what was not done. (With --budget 60 the same holds within 90 s.)"""
    rep = tmp_path / "rep"
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "harness.cli", "fuzz", "--budget", "15", "--report", str(rep), "--workers", "2"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120,
                       env={**os.environ, "SHARDFUZZ_FAULTS": "hang_in_shard_map"})
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr[-2000:]
    assert took < 30.0, (took, r.stderr[-2000:])
    s = RunSummary.from_json(json.loads((rep / "summary.json").read_text()))
    assert s.elapsed_s <= 25.0, s.elapsed_s
    assert (rep / "junit.xml").is_file() and (rep / "index.html").is_file()
    left = s.left_over
    # no job finishes: every known entry's own case is left, and every drawn program's jobs
    # (on a busy machine the budget may end before the sweep draws its first)
    assert left.entry_cases > 0, left
    assert left.jobs + left.late_parts >= (1 if s.programs_drawn else 0), left
    assert s.counts.not_done == left.total and s.counts.programs_run == 0
    assert left.line() in r.stdout, r.stdout[-2000:]
    # an entry whose case was not checked is not called fixed
    assert not [e.id for e in s.known_entries if e.status == "fixed"]


def test_past_the_deadline_every_job_is_cancelled_and_the_pool_stays_usable() -> None:
    hang = prog(XY, [iota(8)], [P("y")], [op("pswapaxes", 0, axes=("y",), axis=0)], [1], [P("y")])
    fine = psum_program(1)
    pool = Pool(1, timeout_s=60.0, env={"SHARDFUZZ_FAULTS": "hang_in_pswapaxes"})
    try:
        pool.submit(hang, ("abstract", "jit"), tag="running")
        pool.submit(fine, ("jit",), tag="queued")
        pool.deadline = time.monotonic() + 2.0
        t0 = time.monotonic()
        done = pool.drain()
        assert time.monotonic() - t0 < 10.0  # (not the hung job's 60 s limit)
        assert [(c.tag, c.cancelled) for c in done] == [("running", ("abstract", "jit")), ("queued", ("jit",))]
        for c in done:
            assert all(o.status == "unsupported" and o.error_message == CANCELLED for o in c.observations)
            assert not evaluate(c.program, c.observations).divergences  # (nothing found in what did not run)
        pool.submit(fine, ("jit",), tag="late")  # (after the deadline: cancelled, never sent)
        (late,) = pool.drain()
        assert (late.tag, late.cancelled) == ("late", ("jit",)) and pool.cancelled == 3
        pool.deadline = None  # the pool runs again
        pool.submit(fine, ("jit",), tag="again")
        (again,) = pool.drain()
    finally:
        pool.close()
    assert again.cancelled == () and [o.status for o in again.observations] == ["ok"]


def test_the_grace_and_the_stop_follow_the_budget() -> None:
    assert RunConfig().grace_s is None and RunConfig().stop_s is None
    assert RunConfig(budget_s=15).grace_s == 10.0 and RunConfig(budget_s=600).grace_s == 60.0
    # the jobs stop early enough to leave time for the reports: at least 5 s, a fifth of the grace
    assert RunConfig(budget_s=60).stop_s == 65.0 and RunConfig(budget_s=3600).stop_s == 3600 + 360 - 72


def test_not_done_counts_add_and_render_in_one_line() -> None:
    left = NotDone(late_parts=2).plus(jobs=3, entry_cases=4)
    assert left.total == 9 and NotDone.sum([left, NotDone(reruns=1)]).total == 10
    assert left.line() == ("not done (the time was up): 2 late parts (eager) not sent, 3 jobs killed or not sent, "
                           "4 known entries' own cases not checked")
