"""After the programs: the known entries' own cases (fixed or unseen), minimization of
the new buckets, and the summary every report renders.

With a budget, each runs only while the run's time lasts (`Run.stop_at`: the pool
cancels every job past it, and fuzz.py's alarm ends anything still running there): what
is planned is counted as not done first, and each piece taken off that count as it is
done, so an end at any point leaves the count right."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

from harness.campaign.cells import unreachable
from harness.campaign.corpus import check_sync
from harness.campaign.database import run_database
from harness.campaign.generation import hypothesis_shrink
from harness.campaign.minimize import (
    minimize_case,
    minimized_reproducer,
    modes_for,
    pool_check,
    size,
)
from harness.campaign.state import Run, case_document
from harness.judge.check import CheckResult, check_program, evaluate
from harness.judge.known import KnownDivergence, case_path, entry_case_shows, entry_modes, statuses
from harness.report.console import VERBOSE
from harness.report.markup import write as atomic_write
from harness.report.reports import write_reports
from harness.report.summary import (
    BLOCKED_WHY,
    BucketSummary,
    CellCheck,
    CoverageCell,
    FixedCase,
    ModeTime,
    RunSummary,
    counts_of,
)
from harness.run.pool import Completed, Pool
from programs.errors import ProgramFormatError
from programs.model import Program
from programs.serialize import from_json, program_from_dict, program_id
from strategies.focus import CELLS


def check_entry_cases(run: Run, pool: Pool | None) -> None:
    """Each known entry nothing matched in this run: does its own case still show its
    bug on this jax? No: the entry is reported `fixed` (stale); yes: `unseen`."""
    todo = []
    for e in run.cfg.suppressions:
        if e.id in run.entry_matches or not e.covers(run.jax_version):
            continue
        try:
            q = from_json(case_path(e).read_text())  # (a bare program or a case file)
        except (OSError, ValueError, KeyError, ProgramFormatError):
            continue  # (validated when the file was loaded: a case gone since is left unseen)
        todo.append((e, q, entry_modes(e, run.cfg.modes)))
    if not todo:
        return
    run.left_undone(entry_cases=len(todo))  # (each taken off as it is checked)
    if run.time_is_up():
        run.cfg.console.say(f"the time was up: the own cases of {len(todo)} known entries were not checked")
        return
    run.cfg.console.say(f"checking the own cases of {len(todo)} known entries this run did not match")

    def shows(e: KnownDivergence, res: CheckResult) -> None:
        run.entry_shows[e.id] = entry_case_shows(e, res.program, res.divergences, res.prediction, run.jax_version)
        run.left_undone(entry_cases=-1)

    def take(done: list[Completed]) -> None:
        for c in done:
            if not c.cancelled:  # (cancelled when the time was up: the entry stays unseen)
                shows(todo[c.tag][0], evaluate(c.program, c.observations))

    if pool is None:
        for e, q, modes in todo:
            if run.time_is_up():
                return
            shows(e, check_program(q, modes))
        return
    for i, (_e, q, modes) in enumerate(todo):
        while pool.free() == 0 and not pool.expired():
            take(pool.wait(1.0))
        pool.submit(q, modes, tag=i)
    take(pool.drain())


SAVE_S = 2.0  # kept, under a budget, for checking and saving a minimized program before the alarm


def minimize_buckets(run: Run, pool: Pool | None) -> None:
    """Shrink each new bucket's program while it keeps the bucket's signature; the
    minimized case and its standalone reproducer are saved beside the original."""
    if pool is None:
        return
    todo = sorted((b for b in run.buckets.values() if not b.suppressed_by), key=lambda b: -b.count)
    done: dict[str, tuple[Program, Path]] = {}  # case -> its minimized program and file
    started = time.monotonic()
    written: list[str] = []  # cases whose minimized files were written, once per bucket
    run.left_undone(minimizations=len(todo))  # (each taken off as it is done)
    for i, b in enumerate(todo):
        case = Path(b.case)
        try:
            p = program_from_dict(json.loads(case.read_text())["program"])
        except (OSError, ValueError, KeyError):
            run.left_undone(minimizations=-1)  # (its case is gone: nothing to do)
            continue
        if run.cfg.minimize_total_s > 0 and time.monotonic() - started > run.cfg.minimize_total_s:
            run.cfg.console.say(f"minimization budget ({run.cfg.minimize_total_s:.0f}s) spent: {len(todo) - i} buckets left "
                                "unminimized (their cases are saved; `shardfuzz minimize CASE` does one by hand)")
            break
        # with a budget: what is left of the run's time (the alarm at `stop_at` ends it)
        left_s = None if run.stop_at is None else run.stop_at - SAVE_S - time.monotonic()
        if left_s is not None and left_s <= 0:
            run.cfg.console.say(f"the time was up: {len(todo) - i} buckets left unminimized (their cases are saved; "
                                "`shardfuzz minimize CASE` does one by hand)")
            break
        budget_s = run.cfg.minimize_budget_s if left_s is None else min(run.cfg.minimize_budget_s, left_s)
        run.cfg.console.say(f"minimizing [{i + 1}/{len(todo)}] {b.signature} ...")
        if b.case in done:
            # several buckets from one case (one bug seen by several modes): the program
            # minimized for the first often shows this signature too: one check, not a search
            small, path = done[b.case]
            if b.signature in {d.signature for d in check_sync(run, pool, small).divergences}:
                b.minimized_case, b.minimized_size = str(path), list(size(small))
                run.left_undone(minimizations=-1)
                run.cfg.console.say(f"  the case's minimized program shows it too: {path}")
                continue
        t0 = time.monotonic()
        n_hyp, original = 0, p
        # drawn by this run's Hypothesis stream: Hypothesis shrinks it first (a sweep
        # program was drawn by a run of its own, which the shrink search does not replay)
        if program_id(p) in set(run.generated_ids) and program_id(p) not in run.swept_ids:
            db = run_database(run.cfg.database, run.cfg.corpus)
            check = pool_check(pool, modes_for(b.signature, run.cfg.modes))
            shrunk, n_hyp = hypothesis_shrink(run.cfg, program_id(p), b.signature, check, budget_s / 2, db)
            if shrunk is not None:
                run.cfg.console.say(f"  Hypothesis shrinking: {size(p)} -> {size(shrunk)} in {n_hyp} checks", VERBOSE)
                p = shrunk
        left = max(budget_s / 2, budget_s - (time.monotonic() - t0))
        if run.stop_at is not None:
            left = min(left, run.stop_at - SAVE_S - time.monotonic())
        best, n = minimize_case(pool, p, b.signature, run.cfg.modes, max(0.0, left))
        n += n_hyp
        base = case.with_suffix("")
        k = sum(1 for c in written if c == b.case)  # a second bucket of one case: its own files
        written.append(b.case)
        stem = f"{base}.min" if k == 0 else f"{base}.min{k + 1}"
        out_json, out_py = Path(f"{stem}.json"), Path(f"{stem}.py")
        sig_div = [d for d in check_sync(run, pool, best).divergences if d.signature == b.signature]
        atomic_write(out_json, case_document(best, tuple(sig_div), run.jax_version, {"minimized_from": str(case)}))
        atomic_write(out_py, minimized_reproducer(best, b.signature, title=f"shardfuzz reproducer: {b.signature}"))
        b.minimized_case = str(out_json)
        b.minimized_size = list(size(best))
        done.setdefault(b.case, (best, out_json))
        run.left_undone(minimizations=-1)
        run.cfg.console.say(f"  {size(original)} -> {size(best)} in {n} checks: {out_py}")
        if run.cfg.corpus is not None:
            atomic_write(run.cfg.corpus / out_json.name, out_json.read_text())


def share_failures(run: Run) -> None:
    """Without minimization: each new bucket's program drawn by this run still goes into
    the run's example database (as Hypothesis drew it: its generation replayed up to the
    program, nothing run), so other runs and shards replay it first."""
    db = run_database(run.cfg.database, run.cfg.corpus)
    if db is None:
        return
    drawn, saved = set(run.generated_ids), 0
    for b in run.buckets.values():
        if b.suppressed_by or not b.new:
            continue
        try:
            pid = program_id(program_from_dict(json.loads(Path(b.case).read_text())["program"]))
        except (OSError, ValueError, KeyError):
            continue
        if pid in drawn:
            found, _ = hypothesis_shrink(run.cfg, pid, b.signature, lambda p: set(), 0.0, db)
            saved += found is not None
    if saved:
        run.cfg.console.say(f"saved {saved} failing programs to the example database (other runs replay them first)")


def _events(stats: list[dict[str, Any]]) -> dict[str, float]:
    """Share of generated programs in which each `event()` occurred (Hypothesis' own
    per-test-case statistics, aggregated the way its statistics report does)."""
    counts: Counter[str] = Counter()
    n = 0
    for s in stats:
        for tc in (s.get("generate-phase") or {}).get("test-cases", []):
            if tc.get("status") != "valid":
                continue
            n += 1
            counts.update(set(tc.get("events", [])))
    return {k: round(v / n, 4) for k, v in sorted(counts.items())} if n else {}


def cell_checks(run: Run) -> tuple[CellCheck, ...]:
    """Every cell of the coverage table (strategies/cell_table.txt) and every other cell
    any program held, in every mode of the run: its checks and first hit, or (never
    checked) why it cannot be reached here."""
    seen = sorted({c for c, _ in run.cells.checks} | {pair.rsplit("@", 1)[0] for pair in run.cells.scheduled}
                  | set(CELLS))
    out = []
    for c in seen:
        for m in run.cfg.modes:
            n = run.cells.checks.get((c, m), 0)
            if n:
                i, t = run.cells.first[(c, m)]
                out.append(CellCheck(c, m, n, i, t))
            else:
                out.append(CellCheck(c, m, 0, why=unreachable(c, m, ur_gaps=run.ur_gaps) or _not_drawn(run, c) or _blocked(run, c, m)
                                     or _stopped(run, c, m)))
    return tuple(out)


_KNOWN_TAIL = "(a known bucket of this report; its rewrite, when it has one, is checked)"


def _blocked(run: Run, cell: str, mode: str) -> str:
    """Why no program checked `cell` in `mode` although some held it there: jax diverged
    there each time, as known entries explain (harness/campaign/state.py `_block_known`), or ''."""
    ids = run.cells.blocked.get((cell, mode))
    if not ids:
        return ""
    what = "ran without the error the oracle predicts" if cell.endswith("|by_error") else "raised, crashed or hung"
    return (f"{BLOCKED_WHY}in every program that held it, jax {what} in {mode}, as "
            f"{', '.join(sorted(ids))} explains {_KNOWN_TAIL}")


def _stopped(run: Run, cell: str, mode: str) -> str:
    """Why no program checked `cell` in `mode` although one held it there: a crash or hang
    in another mode stopped its job first, and the known entry that explains it says jax
    fails in `mode` too (harness/campaign/state.py `_block_stopped`), or ''."""
    marks = run.cells.stopped.get((cell, mode))
    if not marks:
        return ""
    ids = sorted({m.rsplit("@", 1)[0] for m in marks})
    at = sorted({m.rsplit("@", 1)[1] for m in marks})
    return (f"{BLOCKED_WHY}the program that held it crashed or hung in {', '.join(at)} before {mode} ran, and "
            f"{', '.join(ids)} says jax fails in {mode} there too {_KNOWN_TAIL}")


def _not_drawn(run: Run, cell: str) -> str:
    """Why this run draws no program that could check `cell` (its options), or ''."""
    if cell.endswith("|by_error") and run.cfg.invalid == 0:
        return "the run draws no invalid program (--invalid 0)"
    if not cell.endswith("|by_error") and run.cfg.invalid == 1:
        return "the run draws only invalid programs (--invalid 1)"
    return ""


def summarise(run: Run, stats: list[dict[str, Any]]) -> RunSummary:
    """The run as a RunSummary (harness/report/summary.py), written to summary.json and
    rendered as junit.xml and index.html from the same value."""
    cfg = run.cfg
    ordered = sorted(run.buckets.values(), key=lambda b: (b.suppressed_by is not None, -b.count))
    policy = {e.id for e in cfg.suppressions if e.policy}
    buckets = tuple(
        BucketSummary(b.signature, b.kind, b.mode, b.count, b.case, b.message, b.suppressed_by, b.new,
                      b.first_seen_at, b.minimized_case, tuple(b.minimized_size) if b.minimized_size else None,
                      b.first_seen_s, b.first_seen_index, policy=b.suppressed_by in policy)
        for b in ordered
    )
    fixed = tuple(FixedCase(str(f["case"]), tuple(f["signatures"])) for f in run.fixed)
    seen = {b.suppressed_by for b in buckets if b.suppressed_by}
    not_done = run.not_done.plus(late_parts=run.late_dropped)
    summary = RunSummary(
        jax_version=run.jax_version,
        seed=cfg.seed,
        modes=tuple(cfg.modes),
        codegen=cfg.worker_env.get("SHARDFUZZ_CODEGEN", os.environ.get("SHARDFUZZ_CODEGEN", "fast")),
        counts=counts_of(buckets, fixed, run.n, run.n_with_divergences, run.n_failing_programs, run.reruns, not_done),
        repeats_skipped=run.repeats,
        accidentally_invalid=run.accidents,
        elapsed_s=round(run.elapsed(), 2),
        buckets=buckets,
        fixed=fixed,
        batch_reconfirmed=run.batch_reconfirmed,
        corpus_replayed=run.corpus_replayed,
        database_replayed=run.database_replayed,
        programs_digest=hashlib.sha256(" ".join(run.generated_ids).encode()).hexdigest()[:16],
        unseen_suppressions=tuple(sorted(s.id for s in cfg.suppressions if s.id not in seen)),
        known_entries=statuses(cfg.suppressions, dict(run.entry_matches), run.entry_shows, run.jax_version),
        programs_with_known=run.with_known,
        derived_checked=run.derived_checked,
        # a program is checked in full when no known entry explained any of its
        # divergences, or their repairs left nothing unchecked (harness/judge/known.py
        # checked_in_full)
        checked_in_full=run.n - run.with_known + run.in_full_by_rewrite,
        statistics=_events(stats),
        coverage=tuple(CoverageCell(c, r, dt, m, sp, n) for (c, r, dt, m, sp), n in sorted(run.coverage.items())),
        cells=cell_checks(run),
        shard=str(cfg.shard) if cfg.shard is not None else "",
        programs_drawn=len(run.generated_ids),
        programs_swept=len(run.swept_ids),
        reruns=tuple(run.reruns),
        left_over=not_done,
        mode_time=ModeTime.totals((m, n, t) for m, (n, t) in run.mode_time.items()),
        cache_entries=run.cache_entries,
    )
    atomic_write(cfg.report_dir / "summary.json", json.dumps(summary.to_json(), indent=1))
    write_reports(summary, cfg.report_dir)
    return summary
