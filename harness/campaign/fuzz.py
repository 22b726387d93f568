"""A fuzz run: Hypothesis draws programs, each is checked in its tier's modes in the
worker pool, divergences are written to disk the moment they are found, bucketed by
signature and explained (or not) by the known entries, and summarised.

The pieces: `config` (RunConfig), `generation` (Hypothesis), `plan` (the planner: what
runs when, in which modes, cut how), `state` (Run: buckets, counts, saving, and the
results fed back), `corpus` (replayed first), `finish` (entry cases, minimization,
summary). This module executes the plans (batches, split programs, late parts, probe
runs, crashes and timeouts re-run alone, derived programs) and re-exports the names
callers use.

A run with a budget keeps its promise (harness/campaign/config.py: the budget plus a
grace): generation stops at the budget; at `RunConfig.stop_s` the pool's deadline kills
every job still running and sends nothing more (harness/run/pool.py); the known
entries' own cases and minimization get what is left before it, and an alarm ends them
there should anything block; what was left over is counted as not done; the summary is
written in the grace's last part.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import unittest
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from hypothesis import Phase
from hypothesis.database import ReadOnlyDatabase
from hypothesis.errors import FlakyFailure
from hypothesis.statistics import collector

from harness.campaign.config import RunConfig
from harness.campaign.corpus import check_sync, load_corpus, replay_corpus
from harness.campaign.database import run_database
from harness.campaign.finish import check_entry_cases, minimize_buckets, share_failures, summarise
from harness.campaign.generation import (
    GENERATION,
    example_database,
    fuzz_program,
    handling,
    hypothesis_shrink,
    hypothesis_test,
    seeded_programs,
)
from harness.campaign.plan import (
    Part,
    PartKind,
    Plan,
    Planner,
    again_alone,
    late_due,
    next_late,
    probe_part,
)
from harness.campaign.state import (
    Admission,
    Bucket,
    Run,
    case_document,
    coverage_keys,
    spec_pattern,
)
from harness.campaign.sweep import Sweep
from harness.judge.check import CheckResult, check_program, evaluate, localise_values
from harness.report.markup import write as atomic_write
from harness.report.summary import FLAKY, SLOW, AloneRerun, RunSummary
from harness.run import compat
from harness.run.modes import Observation
from harness.run.pool import Completed, Pool
from oracles import Prediction
from programs.model import Program
from programs.serialize import program_id

__all__ = [
    "GENERATION", "Bucket", "Run", "RunConfig", "RunSummary", "atomic_write", "case_document", "check_sync",
    "coverage_keys", "example_database", "fuzz", "fuzz_program", "handling", "hypothesis_shrink", "hypothesis_test",
    "load_corpus", "replay_corpus", "seeded_programs", "spec_pattern",
]


class _BudgetSpent(Exception):
    """Raised inside the Hypothesis test to end the run when the time budget is spent.
    Hypothesis stops at it (only the generate phase runs, so nothing is shrunk) and still
    reports the run's statistics."""


class _OutOfTime(BaseException):
    """The run's time is up (`Run.stop_at`) while its known entries' cases or its
    minimization run: raised by an alarm, so that nothing (a blocking wait, Hypothesis'
    replay of the stream) runs past it. A BaseException: Hypothesis lets it through."""


@contextmanager
def _alarm_at(when: float | None) -> Iterator[None]:
    """Raise _OutOfTime at time.monotonic() `when` (None: never) in this block; only
    in the main thread (elsewhere the pool's deadline alone bounds the block), and only
    when `when` is still ahead (past it, the block's own checks of the time end it)."""
    if when is None or when <= time.monotonic() or threading.current_thread() is not threading.main_thread():
        yield
        return

    def ring(signum: int, frame: object) -> None:
        raise _OutOfTime

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(0.001, when - time.monotonic()))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class _Feedback:
    """Turns finished jobs into recorded results (Run.record), or into the job each
    needs next, straight to the pool: the modes a crash kept from running, a batched jit
    re-run alone, modes run together re-run alone, crashes and timeouts re-run alone
    with a longer limit, a probe run. The parts of one program split between jobs are
    joined by their token first (`groups`: parts left, observations, prediction), as
    Hypothesis may draw the same program twice. A job the pool cancelled when the time
    was up counts as not done; what it and the program's other parts observed before
    is recorded."""

    def __init__(self, run: Run, pool: Pool, planner: Planner) -> None:
        self.run, self.pool, self.planner = run, pool, planner
        self.groups: dict[int, tuple[int, list[Observation], Prediction | None]] = {}
        self.tokens = iter(range(1 << 62))

    def group(self, joined: Sequence[Part]) -> int | None:
        """A token for the `joined` parts of one plan (None: none)."""
        if not joined:
            return None
        token = next(self.tokens)
        self.groups[token] = (len(joined), [], joined[0].prediction)
        return token

    def resubmit(self, part: Part) -> None:
        self.pool.submit(part.program, part.modes, tag=part, limit_s=part.limit_s, together=part.together,
                         alone=part.alone)

    def handle(self, c: Completed) -> None:
        """A finished job, fed back as its part's kind says."""
        part, run = c.tag, self.run
        assert isinstance(part, Part)
        if c.cancelled:
            if part.kind is not PartKind.ALONE:
                run.left_undone(jobs=1)
            ran = [o for o in c.observations if o.mode not in c.cancelled]
            if not ran and not part.kept and part.kind is PartKind.WHOLE:
                return  # (nothing of it ran: not a checked program)
            c = replace(c, observations=ran, cancelled=())
        run.time_modes(c.observations)
        obs = [*part.kept, *c.observations]
        if c.unrun:
            if not run.over_budget():
                # a crash or hang kills the worker with the job's later modes: they run in
                # a job of their own, joined with this one's
                self.resubmit(self.planner.rest(part, obs, c.unrun))
                return
            # (past the budget: Run.record checks them on the program without the known bug)
            run.unrun.setdefault(program_id(c.program), set()).update(c.unrun)
        if part.kind is PartKind.PROBE:
            assert part.probe_of is not None
            if not obs:  # (cancelled: the divergences stay on the output)
                self.run.record(part.probe_of, parent=part.parent)
                return
            self.probe_or_record(localise_values(part.probe_of, obs[0]), part.parent)
        elif part.kind is PartKind.ALONE:
            self.confirmed(part, obs)
        elif part.kind is PartKind.BATCHED:
            res = evaluate(c.program, obs, part.prediction)
            if res.divergences:
                run.batch_reconfirmed += 1
                self.resubmit(replace(part, kind=PartKind.SPLIT))  # (its jit alone)
            else:
                self.join(part, obs, res)
        elif part.kind is PartKind.SPLIT:
            self.join(part, obs)
        else:
            self.finish(c.program, obs, part.prediction, parent=part.parent)

    def join(self, part: Part, obs: list[Observation], res: CheckResult | None = None) -> None:
        """`res`: these observations already evaluated (reused when they are all there is)."""
        assert part.group is not None
        left, have, pred = self.groups[part.group]
        if left == 1:
            del self.groups[part.group]
            if have or obs:  # (else every part was cancelled before it ran)
                self.finish(part.program, have + obs, pred, res if not have else None)
            return
        self.groups[part.group] = (left - 1, have + obs, pred)

    def finish(self, p: Program, observations: list[Observation], pred: Prediction | None = None,
               res: CheckResult | None = None, parent: str | None = None) -> None:
        """`parent`: `p` is a late part of the program with that id. A divergence of a
        mode run together with others in one jit is never reported as it is: those modes
        run again alone first (`again_alone`), and their results decide."""
        res = res if res is not None else evaluate(p, observations, pred)
        again = again_alone(res, parent)
        if again is not None:
            self.run.batch_reconfirmed += 1
            self.resubmit(again)
            return
        confirm = self.planner.confirm(res, parent)
        if confirm is not None:
            self.run.save_unconfirmed(res)  # (on disk before it runs again)
            self.resubmit(confirm)
            return
        self.probe_or_record(res, parent)

    def confirmed(self, part: Part, again: list[Observation]) -> None:
        """An ALONE part's result: what each crashed or timed-out mode did alone takes
        the place of what it did first, and the program is judged on that. A timeout
        that finished alone is recorded `slow`, a crash that did not happen again
        `flaky` (neither a failure); a mode the time left no re-run for keeps what it
        did first (counted not done)."""
        first = part.confirm_of
        assert first is not None
        run, alone = self.run, {o.mode: o for o in again}
        planned = {o.mode for o in part.kept} | set(part.modes)
        case = str(run.case_path(first.program))
        for o in first.observations:
            if o.mode not in planned:
                continue
            n = alone.get(o.mode)
            if n is None:
                run.left_undone(reruns=1)
            elif n.status not in ("crash", "timeout"):
                run.reruns.append(AloneRerun(SLOW if o.status == "timeout" else FLAKY, o.mode, program_id(first.program),
                                             case, o.error_message.split(";")[0][:200], round(n.elapsed_s, 2)))
        merged = [alone.get(o.mode, o) for o in first.observations]
        self.probe_or_record(evaluate(first.program, merged, first.prediction), part.parent)

    def probe_or_record(self, res: CheckResult, parent: str | None) -> None:
        """Submit the next probe run `res` needs, or record it when it needs none."""
        probe = probe_part(res, parent)
        if probe is None:
            self.run.record(res, parent=parent)
            return
        if not res.probed:
            self.run.save_case(res)  # on disk before the probe run, in case anything dies
        self.resubmit(probe)


class _Executor:
    """Runs the planner's plans (harness/campaign/plan.py): takes their claims into the
    run's ledger, sends their parts to the pool (in process: checks them here), and hands
    each finished job to `feedback`. Batched jit parts wait in `queues` (per device
    count) until a batch is full; late parts wait in `late`, sent by their worth."""

    def __init__(self, run: Run, pool: Pool | None, planner: Planner) -> None:
        self.run, self.cfg, self.pool, self.planner = run, run.cfg, pool, planner
        self.feedback = _Feedback(run, pool, planner) if pool is not None else None
        self.queues: dict[int, list[Part]] = {}
        self.late: list[Part] = []
        self.sweeping = False
        self.since_late = 0  # sweep programs submitted since the last late part went out
        self.out_of_time = False  # the budget is spent: late parts not yet out are dropped
        self.limit: int | None = None  # with the sweep: the programs drawn in all (max_examples)

    def check(self, p: Program, reused: bool = False) -> None:
        """One drawn (or replayed) program: planned and executed, unless skipped."""
        run = self.run
        if run.over_budget():
            self.out_of_time = True
            raise _BudgetSpent
        if self.limit is not None and not reused and len(run.generated_ids) >= self.limit:
            raise _BudgetSpent  # (the sweep's programs count toward max_examples)
        admitted = run.admit(p, reused)
        if admitted is Admission.ELSEWHERE:
            run.cells.take(self.planner.elsewhere(p, run.cells, self.sweeping).claims)
        elif admitted is Admission.CHECK:
            self.execute(self.planner.plan(p, run.cells, self.sweeping, run.is_known))
            self.submit_derived()
            run.progress()

    def execute(self, plan: Plan) -> None:
        """The plan's claims, then its parts (the late ones queued), then its derived programs."""
        self.run.cells.take(plan.claims)
        if self.feedback is None:
            for part in plan.parts:
                self.run.record(check_program(part.program, part.modes))
        else:
            self.send(plan.parts)
            self.submit_late()
        for q, modes in plan.derived:
            self.run.derived.queue(q, plan.program, modes)

    def send(self, parts: Sequence[Part]) -> None:
        assert self.feedback is not None
        group = self.feedback.group([x for x in parts if x.joined])
        for x in parts:
            if x.late:
                self.late.append(x)
            elif x.kind is PartKind.BATCHED:
                size = x.program.mesh.size
                self.queues.setdefault(size, []).append(replace(x, group=group))
                if len(self.queues[size]) >= self.cfg.batch:
                    self.flush(size)
            else:
                self.wait_for_free_worker()
                self.feedback.resubmit(replace(x, group=group) if x.joined else x)

    def submit_derived(self) -> None:
        """The programs without their known bugs (see Run.record), and the CPU-runnable
        parts, planned like any other (`Planner.derived`)."""
        run = self.run
        while run.derived.pending:
            q, modes = run.derived.pending.pop(0)
            if self.feedback is None:
                run.record(check_program(q, modes))
                continue
            plan = self.planner.derived(q, modes, run.derived.new.get(program_id(q), frozenset()), run.cells, self.sweeping)
            run.cells.take(plan.claims)
            run.derived.ran(q, plan.modes)
            self.send(plan.parts)

    def submit_late(self, everything: bool = False) -> None:
        """The late parts due (`late_due`), the most worth first (`next_late`)."""
        assert self.feedback is not None
        n, self.since_late = late_due(len(self.late), self.sweeping, self.since_late, everything)
        for _ in range(n):
            self.wait_for_free_worker()
            # the derived programs the results so far gave go first: their modes are cheap
            # (a costly one is a late part itself), and would wait behind every late part
            self.submit_derived()
            if not self.late:
                return
            if not everything and self.run.over_budget():
                self.out_of_time = True  # (the rest is dropped at the end: `drain`)
                return
            part = self.late.pop(next_late(self.late, self.run.cells))
            self.feedback.resubmit(self.planner.outgoing(part, self.run.cells))

    def flush(self, size: int) -> None:
        assert self.pool is not None
        batch, self.queues[size] = self.queues.get(size, []), []
        if batch:
            self.wait_for_free_worker()
            self.pool.submit_batch([x.program for x in batch], list(batch))

    def wait_for_free_worker(self) -> None:
        """Until a worker has room (past the pool's deadline: at once, the part is then
        cancelled without being sent)."""
        assert self.pool is not None and self.feedback is not None
        while self.pool.free() == 0 and not self.pool.expired():
            for c in self.pool.wait(1.0):
                self.feedback.handle(c)
                self.run.progress()

    def drain(self) -> None:
        """Everything still queued or running, derived programs included."""
        if self.pool is None or self.feedback is None:
            self.submit_derived()
            return
        for size_ in list(self.queues):
            self.flush(size_)
        while self.pool.busy() or self.feedback.groups or self.run.derived.pending or self.late:
            self.submit_derived()
            if self.late:  # (the last ones, and a derived program's costly mode: a late part of its own)
                if self.out_of_time:
                    self.run.late_dropped += len(self.late)
                    self.late.clear()
                else:
                    self.submit_late(everything=True)
            for c in self.pool.drain():
                self.feedback.handle(c)
            if self.feedback.groups and not self.pool.busy():
                break  # a part was lost (cannot happen unless a worker misbehaved)


def _generate(sched: _Executor, fixed: Iterable[Program] | None, stats: list[dict[str, Any]]) -> None:
    """The corpus, then the example database's shrunk examples (read-only: a replay never
    deletes them), then generation (which draws exactly what a run without a corpus
    would), or the `fixed` programs in order."""
    cfg = sched.cfg
    if cfg.corpus is not None:
        replay_corpus(sched.run, sched.pool)
    db = run_database(cfg.database, cfg.corpus)
    if db is not None:  # (shared: what other runs and shards saved is checked first)
        with handling(lambda p: sched.check(p, reused=True)):
            try:
                hypothesis_test(cfg, [Phase.reuse], ReadOnlyDatabase(db))()
            except unittest.SkipTest:
                pass  # nothing saved yet
        if sched.run.database_replayed:
            cfg.console.say(f"replayed {sched.run.database_replayed} saved examples from the example database first")
    if fixed is not None:
        for p in fixed:
            sched.check(p)
        return
    if cfg.sweep:
        # every cell of the table first, a few per program (harness/campaign/sweep.py
        # `sweep_groups`), their costly modes once the sweep is out
        sched.limit, sched.sweeping = cfg.max_examples, True
        run, planner = sched.run, sched.planner
        sweep = Sweep(cfg.seed, cfg.defects, cfg.invalid, stats.append, run.cells, cfg.modes,
                      trouble=planner.value_tier.error_trouble, lost=planner.value_tier.raise_lost)

        def swept() -> None:
            sched.sweeping = True
            for d in sweep.draws():
                sched.check(d.program)
                run.swept_ids.add(program_id(d.program))
            sched.sweeping = False

        swept()
        cfg.console.say(f"swept {len(sched.run.swept_ids)} programs (every cell of the table), then Hypothesis' stream")

        def check(p: Program) -> None:
            # a cell the stream's program held first, outside the table, is a focus of a
            # sweep program drawn at once (Sweep.new_cells: the programs drawn decide it).
            # Seed 3, 60 s: a stream program at 55 s held pmin|wrap=switch|by_error beside
            # a pbroadcast (no mode but abstract runs it), and seven modes missed it
            sched.check(p)
            if sweep.new_cells():
                swept()
    else:
        check = sched.check
    with collector.with_value(stats.append), handling(check):
        hypothesis_test(cfg, [Phase.generate])()


def fuzz(cfg: RunConfig, fixed: Iterable[Program] | None = None, pool: Pool | None = None) -> RunSummary:
    """One fuzz run: programs drawn by Hypothesis (or the `fixed` programs, in order:
    benchmarks), each checked in its tier's modes in the worker pool; then the known
    entries' own cases, minimization of the new buckets, and the reports. A `pool`
    passed in (already started: benchmarks measure the steady state) is used instead of
    a new one and left open. With a budget, the run ends within it and its grace (see
    the module doc)."""
    run = Run(cfg)
    run.cache_entries = cache_entries(cfg.worker_env.get("JAX_COMPILATION_CACHE_DIR"))
    stats: list[dict[str, Any]] = []
    cfg.report_dir.mkdir(parents=True, exist_ok=True)
    own_pool = pool is None
    if pool is None and cfg.workers > 0:
        pool = Pool(cfg.workers, cfg.python, cfg.timeout_s, cfg.worker_env)
    if pool is not None and pool.info.get("jax_version"):
        run.jax_version = pool.info["jax_version"]
    if pool is not None:
        run.ur_gaps = dict(pool.info.get("ur_gaps") or {})
    else:  # (the modes run in this process)
        run.ur_gaps = compat.ur_mode_gaps(cfg.modes)
    sched = _Executor(run, pool, Planner(cfg, run.known, pooled=pool is not None))
    deadline = pool.deadline if pool is not None else None
    try:
        if pool is not None:
            pool.deadline = run.stop_at
        try:
            _generate(sched, fixed, stats)
        except _BudgetSpent:
            pass
        except FlakyFailure as e:
            # the budget ended on a choice sequence Hypothesis had run before (its target
            # phase re-runs some): "inconsistent" only because the time is up
            if not all(isinstance(x, _BudgetSpent) for x in e.exceptions):
                raise
        finally:
            if pool is not None:  # (the drawn programs' checks get half of what is left)
                pool.deadline = run.drain_at
            sched.drain()
            if pool is not None:
                pool.deadline = run.stop_at
        run.progress(force=True)

        def minimize() -> None:
            if cfg.minimize_budget_s > 0:
                minimize_buckets(run, pool)
            elif not run.time_is_up():
                share_failures(run)

        for then in (lambda: check_entry_cases(run, pool), minimize):
            try:  # (each on its own: past the time, the next counts what it leaves, and returns)
                with _alarm_at(run.stop_at):
                    then()
            except _OutOfTime:
                pass  # (what was left is counted as not done where it was planned)
    finally:
        if pool is not None and own_pool:
            pool.close()
        elif pool is not None:
            pool.deadline = deadline  # (the caller's pool, left open as it came)
    if run.time_is_up():
        cfg.console.say(f"the time was up at {run.elapsed():.0f}s (--budget {cfg.budget_s:.0f}s and its grace): "
                        "what was left is reported as not done")
    return summarise(run, stats)


def cache_entries(directory: str | None) -> int:
    """The executables jax's compilation cache `directory` holds (-1: no cache)."""
    if not directory:
        return -1
    try:
        with os.scandir(directory) as it:
            return sum(1 for e in it if e.name.endswith("-cache"))
    except OSError:
        return 0  # (not made yet: jax makes it at the first write)
