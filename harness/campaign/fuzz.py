"""A fuzz run: Hypothesis draws programs, each is checked in every mode, divergences are
written to disk the moment they are found, bucketed by signature, and summarised.

Hypothesis drives generation (seeded, so a run is repeatable) and collects the run's
statistics (`event()` counts) through its own statistics hook; shardfuzz does not
shrink inside the run (a failing example must not stop it: every bucket is wanted).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import unittest
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase
from hypothesis.statistics import collector

from harness.campaign.minimize import (
    minimize_case,
    minimized_reproducer,
    modes_for,
    pool_check,
    size,
)
from harness.judge.check import CheckResult, check_program, evaluate, localise_values, needs_probe
from harness.judge.compare import Divergence
from harness.judge.known import (
    KnownDivergence,
    derived_program,
    entry_case_shows,
    entry_modes,
    explain_all,
    known_trouble,
    statuses,
)
from harness.report.reports import write_reports
from harness.report.summary import BucketSummary, CoverageCell, FixedCase, RunSummary, counts_of
from harness.run import compat
from harness.run.modes import DEFAULT_MODES, Observation
from harness.run.pool import Completed, Pool
from oracles import Prediction, predict
from programs.model import Program
from programs.serialize import ProgramFormatError, program_from_dict, program_id, program_to_dict
from strategies import programs
from strategies.invalid import DEFECTS

# How a run drives Hypothesis: generation only (a failing example must not stop the run,
# so nothing is shrunk inside it; minimization comes after), no deadline, no database.
GENERATION = settings(
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
    derandomize=False,
    print_blob=False,
)


_HANDLERS: list[Callable[[Program], None]] = []


def fuzz_program(p: Program) -> None:
    """The one Hypothesis test function behind every fuzz run, database replay and
    shrink search: one function, so they all share one key in the corpus's example
    database (Hypothesis keys saved examples by the test function)."""
    _HANDLERS[-1](p)


@contextmanager
def _handling(fn: Callable[[Program], None]) -> Iterator[None]:
    _HANDLERS.append(fn)
    try:
        yield
    finally:
        _HANDLERS.pop()


def example_database(corpus: Path) -> DirectoryBasedExampleDatabase:
    """The corpus directory is also Hypothesis' example database (in `.hypothesis/`)."""
    return DirectoryBasedExampleDatabase(str(corpus / ".hypothesis"))


def hypothesis_test(cfg: RunConfig, phases: list[Phase], database: Any = None) -> Callable[[], None]:
    """`fuzz_program` under Hypothesis with the run's strategy, seed and example count
    (the same ones always draw the same programs in the same order)."""
    wrapped = given(programs(invalid=cfg.invalid, defects=cfg.defects or tuple(DEFECTS)))(fuzz_program)
    return settings(
        GENERATION, max_examples=cfg.max_examples, phases=phases, database=database, verbosity=Verbosity.quiet
    )(seed(cfg.seed)(wrapped))


class _Reproduced(Exception):
    """Raised in a shrink search when a program shows the signature: a 'failure' to
    Hypothesis, which then shrinks it."""


def hypothesis_shrink(
    cfg: RunConfig, target_id: str, signature: str, check: Callable[[Program], set[str]], budget_s: float,
    database: Any = None,
) -> tuple[Program | None, int]:
    """Hypothesis' own shrinker on a program the run drew: replay the run's generation
    (same seed, strategy and example count: cheap, nothing runs) up to the program with
    id `target_id`, then let Hypothesis shrink its choice sequence, every candidate
    checked through real jax for `signature`. The smallest program that still shows it
    (None when the target is not reached) and the checks spent; with a database, the
    shrunk example is saved there, and later runs replay it first."""
    state: dict[str, Any] = {"found": False, "checks": 0, "best": None, "t0": time.monotonic()}

    def handle(p: Program) -> None:
        if not state["found"]:
            hit = state["found"] = program_id(p) == target_id
            state["t0"] = time.monotonic()  # the budget is for shrinking, not for the replay
        elif time.monotonic() - state["t0"] > budget_s:
            hit = False  # out of time: every candidate passes, so Hypothesis stops shrinking
        else:
            state["checks"] += 1
            hit = signature in check(p)
        if hit:
            if state["best"] is None or size(p) <= size(state["best"]):
                state["best"] = p
            raise _Reproduced  # (one raise site: one failure to Hypothesis)

    with _handling(handle):
        try:
            hypothesis_test(cfg, [Phase.generate, Phase.shrink], database)()
        except _Reproduced:
            pass
        except Exception:  # noqa: BLE001 - e.g. Flaky: keep the smallest program seen to reproduce
            pass
    return state["best"], state["checks"]


def seeded_programs(n: int, s: int, invalid: float = 0.25) -> list[Program]:
    """The first `n` programs a run with seed `s` would draw (same order, same ids)."""
    out: list[Program] = []

    @settings(GENERATION, max_examples=n)
    @seed(s)
    @given(programs(invalid=invalid))
    def collect(p: Program) -> None:
        out.append(p)

    collect()
    return out


class _BudgetSpent(Exception):
    """Raised inside the Hypothesis test to end the run when the time budget is spent.
    Hypothesis stops at it (only the generate phase runs, so nothing is shrunk) and still
    reports the run's statistics."""


@dataclass
class Bucket:
    signature: str
    kind: str
    mode: str
    count: int = 0
    case: str = ""
    message: str = ""
    suppressed_by: str | None = None
    programs: list[str] = field(default_factory=list)
    minimized_case: str | None = None
    minimized_size: list[int] | None = None
    new: bool = True  # False when known, or when the first program in the bucket came from the corpus
    first_seen_at: int = 0  # programs checked when the bucket was first seen


@dataclass
class RunConfig:
    seed: int = 0
    max_examples: int = 100
    budget_s: float | None = None
    report_dir: Path = Path("reports/run")
    modes: tuple[str, ...] = DEFAULT_MODES
    suppressions: list[KnownDivergence] = field(default_factory=list)  # reports/known_divergences.toml
    progress: TextIO = sys.stderr
    workers: int = 2  # 0: run in this process (no crash safety)
    timeout_s: float = 30.0
    python: str | None = None  # interpreter for the workers (default: this one)
    worker_env: dict[str, str] = field(default_factory=dict)
    invalid: float = 0.25  # share of programs with one deliberate defect
    defects: tuple[str, ...] = ()  # the defects to draw from (empty: all, strategies/invalid.py)
    corpus: Path | None = None  # persistent failing cases: replayed first, added to
    value_share: float = 1.0  # share of programs that go on from the abstract tier to every mode
    batch: int = 1  # programs per combined jit in the value tier (1: no batching)
    minimize_budget_s: float = 30.0  # per new bucket, after the run; 0 disables
    minimize_total_s: float = 0.0  # for all new buckets together (0: no limit); most frequent first

    def __post_init__(self) -> None:
        """Every number in range, or a ConfigError (a UsageError and a ValueError) naming
        the field, its `shardfuzz fuzz` option, the value and the rule."""
        from harness.usage import ConfigError

        def bad(name: str, option: str, rule: str) -> ConfigError:
            return ConfigError(f"RunConfig.{name}={getattr(self, name)!r} ({option}) must be {rule}")

        if self.max_examples < 1:
            raise bad("max_examples", "--max-examples", ">= 1")
        if self.budget_s is not None and not self.budget_s > 0:
            raise bad("budget_s", "--budget", "> 0 seconds, or None for no time limit")
        if self.workers < 0:
            raise bad("workers", "--workers", ">= 0 (0: in this process)")
        if not self.timeout_s > 0:
            raise bad("timeout_s", "--timeout", "> 0 seconds")
        for name, option in (("invalid", "--invalid"), ("value_share", "--value-share")):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise bad(name, option, "a share between 0 and 1")
        if self.batch < 1:
            raise bad("batch", "--batch", ">= 1 (1: no batching)")
        if not self.minimize_budget_s >= 0:
            raise bad("minimize_budget_s", "--minimize-budget", ">= 0 seconds (0: off)")
        if not self.minimize_total_s >= 0:
            raise bad("minimize_total_s", "--minimize-total", ">= 0 seconds (0: no limit)")
        if not self.modes:
            raise bad("modes", "--modes", "at least one mode")


def atomic_write(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def case_document(p: Program, divs: tuple[Divergence, ...], jax_version: str, extra: dict[str, Any] | None = None) -> str:
    doc: dict[str, Any] = {
        "program": program_to_dict(p),
        "jax_version": jax_version,
        "divergences": [
            {
                "signature": d.signature,
                "kind": d.kind.value,
                "mode": d.mode,
                "where": d.where,
                "message": d.message,
                "output": d.output,
                "op_index": d.op_index,
                "bad_devices": [list(c) for c in d.bad_devices],
                "max_abs_diff": d.max_abs_diff,
                "device_diffs": list(d.device_diffs),
            }
            for d in divs
        ],
    }
    doc.update(extra or {})
    return json.dumps(doc, indent=1)


def spec_pattern(p: Program) -> str:
    """The richest in_spec pattern the program uses: multi-axis > one axis > replicated."""
    entries = [e for s in p.in_specs for e in s.entries if e]
    if any(len(e) > 1 for e in entries):
        return "multi-axis"
    return "one-axis" if entries else "replicated"


def coverage_keys(res: CheckResult) -> set[tuple[str, int, str, str, str]]:
    """(collective, mesh rank, dtype, mode, spec pattern) for every collective the program
    ran (or had checked) in every mode; 'none' when it has no collective."""
    p = res.program
    dtypes = {x.dtype for x in p.inputs} or {"none"}
    keys = set()
    for o in res.observations:
        if o.status not in ("ok", "error"):
            continue
        for c in p.collectives() or ("none",):
            for dt in dtypes:
                keys.add((c, len(p.mesh.names), dt, o.mode, spec_pattern(p)))
    return keys


class Run:
    def __init__(self, cfg: RunConfig) -> None:
        self.cfg = cfg
        self.buckets: dict[tuple[str, str | None], Bucket] = {}
        self.n = 0
        self.n_failing_programs = 0  # programs with a divergence no known entry explains
        self.n_with_divergences = 0  # drawn programs with any divergence
        self.t0 = time.monotonic()
        self.last_progress = 0.0
        self.jax_version = compat.jax_version()
        self.coverage: Counter[tuple[str, int, str, str, str]] = Counter()
        self.accidents = 0
        self.fixed: list[dict[str, Any]] = []
        self.corpus_replayed = 0
        self.database_replayed = 0
        self.checked: set[str] = set()  # program ids checked in this run
        self.repeats = 0  # programs drawn again (the same id) and not checked again
        self.batch_reconfirmed = 0
        self.generated_ids: list[str] = []  # in generation order: the run's determinism check
        # known divergences explain only what they cause: the program without the known
        # bugs (each entry's rewrite, or the outputs no buggy op reaches) is checked too
        self.derived_pending: list[tuple[Program, tuple[str, ...]]] = []
        self.derived_ids: set[str] = set()  # derived programs (not counted in programs_run)
        self.derived_checked = 0
        self.with_known = 0  # programs (drawn or derived) with a divergence a known entry explains
        self.in_full_by_rewrite = 0  # ... whose derived program keeps every output (a rewrite)
        self.entry_matches: Counter[str] = Counter()  # entry id -> divergences it explained
        self.entry_shows: dict[str, bool] = {}  # entry id -> its own case showed the bug here

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def save_case(self, res: CheckResult, from_corpus: bool = False) -> Path:
        """The failing program goes to disk first, named by its program id (so a later
        re-labelling overwrites it), atomically: into the corpus (when there is one)
        and then the report, so a case in the report is always in the corpus too."""
        name = f"{program_id(res.program)}.json"
        doc = case_document(res.program, res.divergences, self.jax_version)
        if self.cfg.corpus is not None and not from_corpus:
            atomic_write(self.cfg.corpus / name, doc)
        path = self.cfg.report_dir / "cases" / name
        atomic_write(path, doc)
        return path

    def record(self, res: CheckResult, from_corpus: bool = False) -> None:
        p = res.program
        derived = program_id(p) in self.derived_ids
        if derived:
            self.derived_checked += 1
        else:
            self.n += 1
        if res.prediction.error is not None and p.defect is None:
            self.accidents += 1  # (results arrive after their Hypothesis test case: no event())
        for key in coverage_keys(res):
            self.coverage[key] += 1
        if not res.divergences:
            return
        path = self.save_case(res, from_corpus)  # (again, if a probe run re-labelled it)
        explained = explain_all(self.cfg.suppressions, res.divergences, p, res.prediction, self.jax_version)
        if not derived:
            self.n_with_divergences += 1
        if any(x.entry is None for x in explained):
            self.n_failing_programs += 1  # (a derived program's new divergence is its parent's failure)
        used = list({x.entry.id: x.entry for x in explained if x.entry is not None}.values())
        if used:
            q = derived_program(used, p, res.prediction)
            if not derived:
                self.with_known += 1
                self.in_full_by_rewrite += q is not None and q.outputs == p.outputs and len(q.body) == len(p.body)
            if q is not None and program_id(q) not in self.checked and program_id(q) not in self.derived_ids:
                self.derived_ids.add(program_id(q))
                modes = tuple(dict.fromkeys(o.mode for o in res.observations if o.mode != "probe"))
                self.derived_pending.append((q, modes or self.cfg.modes))
        for x in explained:
            d, sup = x.divergence, x.entry
            if sup is not None:
                self.entry_matches[sup.id] += 1
            key = (d.signature, sup.id if sup else None)
            b = self.buckets.get(key)
            if b is None:
                b = Bucket(d.signature, d.kind.value, d.mode, case=str(path), message=d.message,
                           suppressed_by=sup.id if sup else None, new=not from_corpus and sup is None,
                           first_seen_at=self.n)
                self.buckets[key] = b
                if sup:
                    print(f"[known: {sup.id}] {d.signature}", file=self.cfg.progress)
                else:
                    print(f"\n[NEW] {d.signature}: {d.message[:300]}\n  saved {path}", file=self.cfg.progress)
            b.count += 1
            if len(b.programs) < 5:
                b.programs.append(str(path))

    def progress(self, force: bool = False) -> None:
        """A live line on a terminal (redrawn twice a second), plain lines every 5 s
        otherwise (CI logs, files)."""
        live = getattr(self.cfg.progress, "isatty", lambda: False)()
        now = self.elapsed()
        if not force and now - self.last_progress < (0.5 if live else 5.0):
            return
        self.last_progress = now
        rate = self.n / now if now > 0 else 0.0
        budget = f"/{self.cfg.budget_s:.0f}s" if self.cfg.budget_s else "s"
        new = sum(1 for b in self.buckets.values() if not b.suppressed_by)
        line = (
            f"[{self.n:>5}/{self.cfg.max_examples}] {rate:5.1f} programs/s, "
            f"{new} new / {len(self.buckets) - new} known buckets, {now:.0f}{budget}"
        )
        if live:
            print(f"\r{line}\x1b[K", end="\n" if force else "", file=self.cfg.progress, flush=True)
        else:
            print(line, file=self.cfg.progress, flush=True)


def fuzz(cfg: RunConfig, fixed: Iterable[Program] | None = None, pool: Pool | None = None) -> RunSummary:
    """One fuzz run: programs drawn by Hypothesis (or the `fixed` programs, in order:
    benchmarks), each checked in its tier's modes in the worker pool; then the new
    buckets are minimized and the reports written. A `pool` passed in (already started:
    benchmarks measure the steady state) is used instead of a new one and left open."""
    run = Run(cfg)
    stats: list[dict[str, Any]] = []
    cfg.report_dir.mkdir(parents=True, exist_ok=True)
    own_pool = pool is None
    if pool is None and cfg.workers > 0:
        pool = Pool(cfg.workers, cfg.python, cfg.timeout_s, cfg.worker_env)
    if pool is not None and pool.info.get("jax_version"):
        run.jax_version = pool.info["jax_version"]

    # Batching: a value-tier program the oracle expects to run has its jit mode compiled
    # together with others (same device count); its other modes run as a normal job and
    # the two parts are joined. A batched result that diverges is re-run alone first.
    # submission token -> (parts left, observations, the oracle's prediction, computed
    # once); a token, not the program id, as Hypothesis may draw the same program twice
    parts: dict[int, tuple[int, list[Observation], Prediction]] = {}
    queues: dict[int, list[tuple[Program, int]]] = {}  # device count -> (program, token) waiting
    tokens = iter(range(1 << 62))

    def finish(p: Program, observations: list[Observation], pred: Prediction | None = None,
               res: CheckResult | None = None) -> None:
        assert pool is not None
        res = res if res is not None else evaluate(p, observations, pred)
        if needs_probe(res):
            run.save_case(res)  # on disk before the probe run, in case anything dies
            pool.submit(p, ("probe",), tag=res)
        else:
            run.record(res)

    def join(p: Program, token: int, obs: list[Observation], res: CheckResult | None = None) -> None:
        """`res`: these observations already evaluated (reused when they are all there is)."""
        left, have, pred = parts[token]
        if left == 1:
            del parts[token]
            finish(p, have + obs, pred, res if not have else None)
            return
        parts[token] = (left - 1, have + obs, pred)

    def handle(c: Completed) -> None:
        """A finished job: a program's modes, a part of a split program, a batched jit
        result, a re-confirmation alone, or a probe run (which puts a value divergence on
        the op that first goes wrong)."""
        assert pool is not None
        if isinstance(c.tag, CheckResult):
            run.record(localise_values(c.tag, c.observations[0]))
        elif isinstance(c.tag, tuple) and c.tag[0] == "batch":
            res = evaluate(c.program, c.observations, parts[c.tag[1]][2])
            if res.divergences:
                run.batch_reconfirmed += 1
                pool.submit(c.program, ("jit",), tag=("part", c.tag[1]))  # never report a batch-only result
            else:
                join(c.program, c.tag[1], c.observations, res)
        elif isinstance(c.tag, tuple) and c.tag[0] == "part":
            join(c.program, c.tag[1], c.observations)
        else:
            finish(c.program, c.observations)

    def wait_for_free_worker() -> None:
        assert pool is not None
        while pool.free() == 0:
            for c in pool.wait(1.0):
                handle(c)
                run.progress()

    def flush(size: int) -> None:
        assert pool is not None
        batch, queues[size] = queues.get(size, []), []
        if batch:
            wait_for_free_worker()
            pool.submit_batch([p for p, _ in batch], [("batch", t) for _, t in batch])

    def submit(p: Program) -> None:
        assert pool is not None
        modes = tier_modes(p, cfg)
        pred = predict(p) if cfg.batch > 1 and "jit" in modes else None
        # a program the oracle expects to fail, or one with the features of a known jax
        # bug, would only make its batch fail and be bisected: it runs alone
        if pred is not None and pred.error is None and not known_trouble(cfg.suppressions, p, pred, run.jax_version, "jit"):
            rest = tuple(m for m in modes if m != "jit")
            token = next(tokens)
            parts[token] = (1 + bool(rest), [], pred)
            if rest:
                wait_for_free_worker()
                pool.submit(p, rest, tag=("part", token))
            queues.setdefault(p.mesh.size, []).append((p, token))
            if len(queues[p.mesh.size]) >= cfg.batch:
                flush(p.mesh.size)
        else:
            wait_for_free_worker()
            pool.submit(p, modes)

    def submit_derived() -> None:
        """The programs without their known bugs (see Run.record), checked like any other."""
        while run.derived_pending:
            q, modes = run.derived_pending.pop(0)
            if pool is None:
                run.record(check_program(q, modes))
            else:
                wait_for_free_worker()
                pool.submit(q, modes)

    def check(p: Program, reused: bool = False) -> None:
        if cfg.budget_s is not None and run.elapsed() > cfg.budget_s:
            raise _BudgetSpent
        pid = program_id(p)
        if reused:
            run.database_replayed += 1
        else:
            run.generated_ids.append(pid)
        if pid in run.checked:  # Hypothesis drew the same program again: its result is known
            run.repeats += 1
            return
        run.checked.add(pid)
        if pool is None:
            run.record(check_program(p, tier_modes(p, cfg)))
        else:
            submit(p)
        submit_derived()
        run.progress()

    try:
        if cfg.corpus is not None:
            replay_corpus(run, pool)
            # the shrunk examples earlier runs saved in the corpus's Hypothesis example
            # database, replayed (read-only: a replay never deletes them) before
            # generation, which then draws exactly what a run without a corpus would
            with _handling(lambda p: check(p, reused=True)):
                try:
                    hypothesis_test(cfg, [Phase.reuse], ReadOnlyDatabase(example_database(cfg.corpus)))()
                except unittest.SkipTest:
                    pass  # nothing saved yet
        if fixed is not None:
            for p in fixed:
                check(p)
        else:
            with collector.with_value(stats.append), _handling(check):
                hypothesis_test(cfg, [Phase.generate])()
    except _BudgetSpent:
        pass
    finally:
        if pool is not None:
            for size_ in list(queues):
                flush(size_)
            while pool.busy() or parts or run.derived_pending:
                submit_derived()
                for c in pool.drain():
                    handle(c)
                if parts and not pool.busy():
                    break  # a part was lost (cannot happen unless a worker misbehaved)
    run.progress(force=True)
    try:
        check_entry_cases(run, pool)
        if cfg.minimize_budget_s > 0:
            minimize_buckets(run, pool)
    finally:
        if pool is not None and own_pool:
            pool.close()
    return summarise(run, stats)


def tier_modes(p: Program, cfg: RunConfig) -> tuple[str, ...]:
    """Tiers: every program is checked abstractly (errors, shapes, dtypes, varying axes:
    no compile); a share chosen by program id (so repeatable) also runs every value mode."""
    if cfg.value_share >= 1.0 or "abstract" not in cfg.modes:
        return cfg.modes
    if int(program_id(p), 16) % 10000 < cfg.value_share * 10000:
        return cfg.modes
    return ("abstract",)


def check_sync(run: Run, pool: Pool | None, p: Program) -> CheckResult:
    """One program, start to finish (probe included), outside the pipelined loop."""
    if pool is None:
        return check_program(p, run.cfg.modes)
    pool.submit(p, run.cfg.modes)
    (c,) = pool.drain()
    res = evaluate(c.program, c.observations)
    if needs_probe(res):
        pool.submit(p, ("probe",))
        res = localise_values(res, pool.drain()[0].observations[0])
    return res


def load_corpus(corpus: Path) -> list[tuple[Path, Program, set[str]]]:
    """Every case file in the corpus (recursively): its program and the signatures it
    showed when it was saved. A malformed file raises ProgramFormatError naming it."""
    out = []
    for f in sorted(corpus.rglob("*.json")):
        try:
            doc = json.loads(f.read_text())
        except json.JSONDecodeError as e:
            raise ProgramFormatError(f"{f}: line {e.lineno}: not valid JSON ({e.msg})") from None
        if not isinstance(doc, dict) or "program" not in doc:
            continue  # not a case file (e.g. a summary)
        try:
            p = program_from_dict(doc["program"])
        except ProgramFormatError as e:
            raise ProgramFormatError(f"{f}: {e}") from None
        out.append((f, p, {d["signature"] for d in doc.get("divergences", []) if "signature" in d}))
    return out


def replay_corpus(run: Run, pool: Pool | None) -> None:
    """Yesterday's failures first: each corpus case is re-checked; one whose recorded
    signatures no longer appear is reported as fixed."""
    assert run.cfg.corpus is not None
    cases = load_corpus(run.cfg.corpus)
    print(f"replaying {len(cases)} corpus cases from {run.cfg.corpus}", file=run.cfg.progress, flush=True)
    for f, p, old in cases:
        res = check_sync(run, pool, p)
        now = {d.signature for d in res.divergences}
        if old and not (old & now):
            run.fixed.append({"case": str(f), "signatures": sorted(old)})
            print(f"  fixed: {f.name} ({', '.join(sorted(old))})", file=run.cfg.progress)
        run.corpus_replayed += 1
        run.record(res, from_corpus=True)
        run.progress()


def check_entry_cases(run: Run, pool: Pool | None) -> None:
    """Each known entry nothing matched in this run: does its own case still show its
    bug on this jax? No: the entry is reported `fixed` (stale); yes: `unseen`."""
    from harness.judge.known import case_path

    todo = []
    for e in run.cfg.suppressions:
        if e.id in run.entry_matches or not e.covers(run.jax_version):
            continue
        try:
            q = program_from_dict(json.loads(case_path(e).read_text()).get("program") or json.loads(case_path(e).read_text()))
        except (OSError, ValueError, KeyError, ProgramFormatError):
            continue  # (validated when the file was loaded: a case gone since is left unseen)
        todo.append((e, q, entry_modes(e, run.cfg.modes)))
    if not todo:
        return
    print(f"checking the own cases of {len(todo)} known entries nothing matched", file=run.cfg.progress, flush=True)
    results = []
    if pool is None:
        results = [(e, check_program(q, modes)) for e, q, modes in todo]
    else:
        for i, (_e, q, modes) in enumerate(todo):
            while pool.free() == 0:
                results.extend((todo[c.tag][0], evaluate(c.program, c.observations)) for c in pool.wait(1.0))
            pool.submit(q, modes, tag=i)
        results.extend((todo[c.tag][0], evaluate(c.program, c.observations)) for c in pool.drain())
    for e, res in results:
        run.entry_shows[e.id] = entry_case_shows(e, res.program, res.divergences, res.prediction, run.jax_version)


def minimize_buckets(run: Run, pool: Pool | None) -> None:
    """Shrink each new bucket's program while it keeps the bucket's signature; the
    minimized case and its standalone reproducer are saved beside the original."""
    if pool is None:
        return
    todo = sorted((b for b in run.buckets.values() if not b.suppressed_by), key=lambda b: -b.count)
    done: dict[str, tuple[Program, Path]] = {}  # case -> its minimized program and file
    started = time.monotonic()
    written: list[str] = []  # cases whose minimized files were written, once per bucket
    for i, b in enumerate(todo):
        case = Path(b.case)
        try:
            p = program_from_dict(json.loads(case.read_text())["program"])
        except (OSError, ValueError, KeyError):
            continue
        if run.cfg.minimize_total_s > 0 and time.monotonic() - started > run.cfg.minimize_total_s:
            print(f"minimization budget ({run.cfg.minimize_total_s:.0f}s) spent: {len(todo) - i} buckets left "
                  "unminimized (their cases are saved; `shardfuzz minimize CASE` does one by hand)",
                  file=run.cfg.progress, flush=True)
            break
        print(f"minimizing [{i + 1}/{len(todo)}] {b.signature} ...", file=run.cfg.progress, flush=True)
        if b.case in done:
            # several buckets from one case (one bug seen by several modes): the program
            # minimized for the first often shows this signature too: one check, not a search
            small, path = done[b.case]
            if b.signature in {d.signature for d in check_sync(run, pool, small).divergences}:
                b.minimized_case, b.minimized_size = str(path), list(size(small))
                print(f"  the case's minimized program shows it too: {path}", file=run.cfg.progress, flush=True)
                continue
        t0 = time.monotonic()
        n_hyp, original = 0, p
        if program_id(p) in set(run.generated_ids):  # drawn by this run: Hypothesis shrinks it first
            db = example_database(run.cfg.corpus) if run.cfg.corpus is not None else None
            check = pool_check(pool, modes_for(b.signature, run.cfg.modes))
            shrunk, n_hyp = hypothesis_shrink(run.cfg, program_id(p), b.signature, check,
                                              run.cfg.minimize_budget_s / 2, db)
            if shrunk is not None:
                print(f"  Hypothesis shrinking: {size(p)} -> {size(shrunk)} in {n_hyp} checks", file=run.cfg.progress, flush=True)
                p = shrunk
        left = max(run.cfg.minimize_budget_s / 2, run.cfg.minimize_budget_s - (time.monotonic() - t0))
        best, n = minimize_case(pool, p, b.signature, run.cfg.modes, left)
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
        print(f"  {size(original)} -> {size(best)} in {n} checks: {out_py}", file=run.cfg.progress, flush=True)
        if run.cfg.corpus is not None:
            atomic_write(run.cfg.corpus / out_json.name, out_json.read_text())


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


def summarise(run: Run, stats: list[dict[str, Any]]) -> RunSummary:
    """The run as a RunSummary (harness/report/summary.py), written to summary.json and
    rendered as junit.xml and index.html from the same value."""
    cfg = run.cfg
    ordered = sorted(run.buckets.values(), key=lambda b: (b.suppressed_by is not None, -b.count))
    buckets = tuple(
        BucketSummary(b.signature, b.kind, b.mode, b.count, b.case, b.message, b.suppressed_by, b.new,
                      b.first_seen_at, b.minimized_case, tuple(b.minimized_size) if b.minimized_size else None)
        for b in ordered
    )
    fixed = tuple(FixedCase(str(f["case"]), tuple(f["signatures"])) for f in run.fixed)
    seen = {b.suppressed_by for b in buckets if b.suppressed_by}
    summary = RunSummary(
        jax_version=run.jax_version,
        seed=cfg.seed,
        modes=tuple(cfg.modes),
        codegen=cfg.worker_env.get("SHARDFUZZ_CODEGEN", os.environ.get("SHARDFUZZ_CODEGEN", "fast")),
        counts=counts_of(buckets, fixed, run.n, run.n_with_divergences, run.n_failing_programs),
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
        # divergences, or one did and its rewrite (every output kept) was checked
        checked_in_full=run.n - run.with_known + run.in_full_by_rewrite,
        statistics=_events(stats),
        coverage=tuple(CoverageCell(c, r, dt, m, sp, n) for (c, r, dt, m, sp), n in sorted(run.coverage.items())),
    )
    atomic_write(cfg.report_dir / "summary.json", json.dumps(summary.to_json(), indent=1))
    write_reports(summary, cfg.report_dir)
    return summary
