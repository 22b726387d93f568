"""A fuzz run's configuration: one validated type whose defaults are the CLI's (the CLI,
the benchmarks and library callers all build one)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from harness.campaign.shard import Shard
from harness.judge.known import KnownDivergence
from harness.report.console import Console
from harness.run.modes import DEFAULT_MODES
from programs.errors import ConfigError


def cores() -> int:
    """The cores this process may run on (the default worker count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 2


# With the multiprocess mode, this share of programs is large (a >= 4 MiB block per
# device); each is checked in abstract, jit and multiprocess only (harness/campaign/plan.py
# `ValueTier.tier`).
LARGE_SHARE = 0.05
LARGE_MODES = ("abstract", "jit", "multiprocess")


NO_LIMIT = 10**9  # max_examples when only the budget bounds a run (the progress line shows no cap)

# A run with a time budget ends within the budget plus this grace, whatever jax does
# (`RunConfig.grace_s`): the jobs still running when it ends, the known entries' own
# cases and the minimization of new buckets get what is left of it, and what does not
# fit is reported as not done. Its last REPORT_SHARE, and at least REPORT_MIN_S, is kept
# for closing the workers, writing the reports and exiting: every job still running then
# is killed (`RunConfig.stop_s`). (A run whose every job hangs, on 2 cores others kept
# busy, took 4.6 s from that point to its exit: closing the pool 1.4 s, the reports 1.8 s,
# the interpreter's exit with jax imported 1.5 s.)
GRACE_MIN_S = 10.0
GRACE_SHARE = 0.1
REPORT_SHARE = 0.2
REPORT_MIN_S = 5.0

# A crash or timeout no known entry explains is run again alone on its worker, with this
# many times the run's timeout, before it is reported (harness/campaign/plan.py
# `Planner.confirm`): under load (every core busy, a job queued behind it) a large
# program's eager run can take past the limit what it takes in seconds alone, and a
# worker can die of what another job did to the machine.
ALONE_LIMIT_FACTOR = 2.0


@dataclass
class RunConfig:
    seed: int = 0
    max_examples: int = 200
    budget_s: float | None = None
    grace: float | None = None  # seconds past the budget the run may take (None: max(GRACE_MIN_S, GRACE_SHARE of it))
    report_dir: Path = Path("reports/run")
    modes: tuple[str, ...] = DEFAULT_MODES
    suppressions: list[KnownDivergence] = field(default_factory=list)  # harness/data/known_divergences.toml
    progress: TextIO = sys.stderr
    verbosity: int = 0  # the console's level (harness/report/console.py): 0 news only, 1 (-v) known buckets too, 2 (-vv) everything
    workers: int = field(default_factory=lambda: cores())  # 0: run in this process (no crash safety)
    timeout_s: float = 30.0
    python: str | None = None  # interpreter for the workers (default: this one)
    worker_env: dict[str, str] = field(default_factory=dict)
    invalid: float = 0.25  # share of programs with one deliberate defect
    defects: tuple[str, ...] = ()  # the defects to draw from (empty: all, strategies/invalid.py)
    corpus: Path | None = None  # persistent failing cases: replayed first, added to
    value_share: float = 0.25  # share of programs that go on from the abstract tier to every mode
    batch: int = 8  # programs per combined jit in the value tier (1: no batching)
    together: bool = True  # a program's jit, vmap, vmap_spmd, grad, grad_remat in one jit (harness/run/together.py)
    minimize_budget_s: float = 30.0  # per new bucket, after the run; 0 disables
    minimize_total_s: float = 0.0  # for all new buckets together (0: no limit); most frequent first
    large: float | None = None  # share of large programs (>= 4 MiB per device); None: LARGE_SHARE with multiprocess, else 0
    shard: Shard | None = None  # check only this shard's slice of the program stream (harness/campaign/shard.py)
    database: str | None = None  # a shared Hypothesis example database (harness/campaign/database.py)
    sweep: bool = True  # first every cell of the table, a few per program (strategies/focus.py); they count toward max_examples
    started: float | None = None  # time.monotonic() the budget counts from (the CLI: the process start); None: the run's start

    @property
    def grace_s(self) -> float | None:
        """How long past its budget a run may take, at most: `grace` where given, else
        max(GRACE_MIN_S, GRACE_SHARE of the budget); None without a budget."""
        if self.budget_s is None:
            return None
        if self.grace is not None:
            return self.grace
        return max(GRACE_MIN_S, GRACE_SHARE * self.budget_s)

    @property
    def stop_s(self) -> float | None:
        """Seconds into the run (from `started`) at which every job still running is
        killed and nothing more is sent: the budget and its grace but the part kept for
        the reports (REPORT_SHARE of the grace, at least REPORT_MIN_S). None without a
        budget."""
        if self.budget_s is None or self.grace_s is None:
            return None
        return self.budget_s + self.grace_s - max(REPORT_MIN_S, REPORT_SHARE * self.grace_s)

    @property
    def drain_s(self) -> float | None:
        """Seconds into the run until which the checks of programs drawn before the budget
        ended may still run: half of what `stop_s` leaves after the budget, so that the
        known entries' own cases and minimization get the other half. None without a budget."""
        if self.budget_s is None or self.stop_s is None:
            return None
        return self.budget_s + max(0.0, self.stop_s - self.budget_s) / 2

    @property
    def console(self) -> Console:
        """The run's console: progress and findings on `progress`, at `verbosity`."""
        return Console(self.progress, self.verbosity)

    @property
    def large_share(self) -> float:
        """The share of programs drawn large (strategies/programs.py `large`): by default
        only when the multiprocess mode runs, whose transport moves large blocks in chunks."""
        if self.large is not None:
            return self.large
        return LARGE_SHARE if "multiprocess" in self.modes else 0.0

    def __post_init__(self) -> None:
        """Every number in range, or a ConfigError (a UsageError and a ValueError) naming
        the field, its `shardfuzz fuzz` option, the value and the rule."""

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
        if self.large is not None and not 0.0 <= self.large <= 1.0:
            raise bad("large", "--large", "a share between 0 and 1")
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
