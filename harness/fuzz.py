"""A fuzz run: Hypothesis draws programs, each is checked in every mode, divergences are
written to disk the moment they are found, bucketed by signature, and summarised.

Hypothesis drives generation (seeded, so a run is repeatable) and collects the run's
statistics (`event()` counts) through its own statistics hook; shardfuzz does not
shrink inside the run (a failing example must not stop it: every bucket is wanted).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from hypothesis import HealthCheck, Phase, event, given, seed, settings
from hypothesis.statistics import collector

from harness import compat
from harness.check import CheckResult, evaluate
from harness.modes import DEFAULT_MODES, MODES
from harness.pool import Pool
from harness.reports import write_reports
from harness.compare import Divergence
from harness.suppressions import Suppression, find
from programs.model import Program
from programs.serialize import program_id, program_to_dict
from strategies import programs

SUMMARY_SCHEMA = 1


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


@dataclass
class RunConfig:
    seed: int = 0
    max_examples: int = 100
    budget_s: float | None = None
    report_dir: Path = Path("reports/run")
    modes: tuple[str, ...] = DEFAULT_MODES
    suppressions: list[Suppression] = field(default_factory=list)
    progress: TextIO = sys.stderr
    workers: int = 2  # 0: run in this process (no crash safety)
    timeout_s: float = 30.0
    python: str | None = None  # interpreter for the workers (default: this one)
    worker_env: dict[str, str] = field(default_factory=dict)
    invalid: float = 0.25  # share of programs with one deliberate defect


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


def _safe(sig: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in sig)[:80]


class Run:
    def __init__(self, cfg: RunConfig) -> None:
        self.cfg = cfg
        self.buckets: dict[tuple[str, str | None], Bucket] = {}
        self.n = 0
        self.n_failing_programs = 0
        self.t0 = time.monotonic()
        self.last_progress = 0.0
        self.jax_version = compat.jax_version()
        self.coverage: Counter[tuple[str, int, str, str, str]] = Counter()
        self.accidents = 0

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def record(self, res: CheckResult) -> None:
        self.n += 1
        p = res.program
        if res.prediction.error is not None and p.defect is None:
            self.accidents += 1
            event("strategy: drew an invalid program by accident")
        for key in coverage_keys(res):
            self.coverage[key] += 1
        if not res.divergences:
            return
        self.n_failing_programs += 1
        # first thing: the failing program goes to disk
        h = program_id(p)
        path = self.cfg.report_dir / "cases" / f"{_safe(res.divergences[0].signature)}-{h}.json"
        atomic_write(path, case_document(p, res.divergences, self.jax_version))
        for d in res.divergences:
            sup = find(self.cfg.suppressions, d.signature, self.jax_version, p)
            key = (d.signature, sup.id if sup else None)
            b = self.buckets.get(key)
            if b is None:
                b = Bucket(d.signature, d.kind.value, d.mode, case=str(path), message=d.message,
                           suppressed_by=sup.id if sup else None)
                self.buckets[key] = b
                tag = f"known ({sup.id})" if sup else "NEW"
                print(f"\n[{tag}] {d.signature}: {d.message[:300]}\n  saved {path}", file=self.cfg.progress)
            b.count += 1
            if len(b.programs) < 5:
                b.programs.append(str(path))

    def progress(self, force: bool = False) -> None:
        now = self.elapsed()
        if not force and now - self.last_progress < 5.0:
            return
        self.last_progress = now
        rate = self.n / now if now > 0 else 0.0
        budget = f"/{self.cfg.budget_s:.0f}s" if self.cfg.budget_s else "s"
        new = sum(1 for b in self.buckets.values() if not b.suppressed_by)
        print(
            f"[{self.n:>5}/{self.cfg.max_examples}] {rate:5.1f} programs/s, "
            f"{new} new / {len(self.buckets) - new} known buckets, {now:.0f}{budget}",
            file=self.cfg.progress,
            flush=True,
        )


def fuzz(cfg: RunConfig) -> dict[str, Any]:
    run = Run(cfg)
    stats: list[dict[str, Any]] = []
    cfg.report_dir.mkdir(parents=True, exist_ok=True)
    pool = Pool(cfg.workers, cfg.python, cfg.timeout_s, cfg.worker_env) if cfg.workers > 0 else None
    if pool is not None and pool.info.get("jax_version"):
        run.jax_version = pool.info["jax_version"]

    def wait_for_free_worker() -> None:
        assert pool is not None
        while pool.free() == 0:
            for c in pool.wait(1.0):
                run.record(evaluate(c.program, c.observations))
                run.progress()

    @settings(
        max_examples=cfg.max_examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        derandomize=False,
        print_blob=False,
    )
    @seed(cfg.seed)
    @given(programs(invalid=cfg.invalid))
    def one(p: Program) -> None:
        if cfg.budget_s is not None and run.elapsed() > cfg.budget_s:
            raise _BudgetSpent
        if pool is None:
            run.record(evaluate(p, [MODES[m].run(p) for m in cfg.modes]))
        else:
            wait_for_free_worker()
            pool.submit(p, cfg.modes)
        run.progress()

    try:
        with collector.with_value(stats.append):
            one()
    except _BudgetSpent:
        pass
    finally:
        if pool is not None:
            for c in pool.drain():
                run.record(evaluate(c.program, c.observations))
            pool.close()
    run.progress(force=True)
    return summarise(run, stats)


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


def summarise(run: Run, stats: list[dict[str, Any]]) -> dict[str, Any]:
    cfg = run.cfg
    buckets = sorted(run.buckets.values(), key=lambda b: (b.suppressed_by is not None, -b.count))
    unsuppressed = sum(b.count for b in buckets if not b.suppressed_by)
    suppressed = sum(b.count for b in buckets if b.suppressed_by)
    seen = {b.suppressed_by for b in buckets if b.suppressed_by}
    summary = {
        "schema": SUMMARY_SCHEMA,
        "jax_version": run.jax_version,
        "seed": cfg.seed,
        "modes": list(cfg.modes),
        "programs_run": run.n,
        "failing_programs": run.n_failing_programs,
        "divergences": unsuppressed,
        "suppressed": suppressed,
        "accidentally_invalid": run.accidents,
        "elapsed_s": round(run.elapsed(), 2),
        "buckets": [
            {
                "signature": b.signature,
                "kind": b.kind,
                "mode": b.mode,
                "count": b.count,
                "case": b.case,
                "suppressed_by": b.suppressed_by,
                "message": b.message,
            }
            for b in buckets
        ],
        "unseen_suppressions": sorted(s.id for s in cfg.suppressions if s.id not in seen),
        "statistics": _events(stats),
        "coverage": [
            {"collective": c, "mesh_rank": r, "dtype": dt, "mode": m, "spec": sp, "count": n}
            for (c, r, dt, m, sp), n in sorted(run.coverage.items())
        ],
    }
    atomic_write(cfg.report_dir / "summary.json", json.dumps(summary, indent=1))
    write_reports(summary, cfg.report_dir)
    return summary
