"""The run summary as a type: what a fuzz run hands to every renderer.

`summary.json`, the console summary, `junit.xml` and `index.html` all read one
`RunSummary`, and every count in them comes from one `Counts`, defined once here, so the
four can never disagree (tests/test_reports.py checks them on a real run). The JSON form
is written and read through the same type (`to_json` / `from_json`).

Schema 2 (schema 1 was the untyped dict): `failing_programs` now counts programs with a
divergence no known entry explains (schema 1 counted any divergence: that figure is now
`programs_with_divergences`); new: `new_buckets`, `still_failing_buckets`,
`known_buckets`, `fixed_cases`, `known_entries`, `programs_with_known`,
`derived_checked`, `checked_in_full`, `cells` (per configuration cell and mode: checks,
first hit, or why it cannot be reached); a bucket's `new` is false for known buckets.
Later in schema 2, each read back with its default when absent: `policy` and
`policy_buckets` (divergences and buckets a known entry of class `policy` explains: jax's
limitations, feature requests and message wording, counted apart from known bugs and never
failing a run) and a bucket's `policy`; `reruns` (crashes and timeouts re-run alone that
did not happen again: `slow`, `flaky`), `left_over` (the work a run's time left over, by
kind; it holds what was `late_dropped`), and their counts (`slow`, `flaky`, `not_done`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

from harness.judge.known import EntryStatus
from programs.errors import SummaryFormatError

SUMMARY_SCHEMA = 2


@dataclass(frozen=True)
class BucketSummary:
    """One bucket: divergences with one signature, explained by one entry (or none)."""

    signature: str
    kind: str
    mode: str
    count: int
    case: str
    message: str = ""
    suppressed_by: str | None = None  # the known entry that explains it; None: unexplained
    new: bool = True  # unexplained and first seen in this run's generation (not the corpus)
    first_seen_at: int = 0  # programs checked when it was first seen
    minimized_case: str | None = None
    minimized_size: tuple[int, ...] | None = None
    first_seen_s: float = 0.0  # seconds into the run when it was first seen
    first_seen_index: int = -1  # position in the program stream of its first program (-1: corpus or derived)
    policy: bool = False  # its entry is of class policy: jax's choice, not a bug (never an upstream report)

    @property
    def explained(self) -> bool:
        """A known entry explains it (a bug's or a policy's)."""
        return self.suppressed_by is not None

    @property
    def known(self) -> bool:
        """A known jax bug explains it."""
        return self.explained and not self.policy

    @property
    def is_policy(self) -> bool:
        """A known entry of class policy explains it."""
        return self.explained and self.policy

    @property
    def still_failing(self) -> bool:
        """Unexplained, and first seen when the corpus was replayed."""
        return not self.explained and not self.new


@dataclass(frozen=True)
class FixedCase:
    """A corpus case that no longer shows any of the signatures it was saved with."""

    case: str
    signatures: tuple[str, ...]


@dataclass(frozen=True)
class CoverageCell:
    collective: str
    mesh_rank: int
    dtype: str
    mode: str
    spec: str
    count: int


@dataclass(frozen=True)
class CellCheck:
    """One configuration cell (harness/campaign/cells.py) in one mode: the checks that
    reached it, and the program index and run time of the first (-1: none; then `why`
    says why it cannot be reached here, or is empty when this run just did not reach it)."""

    cell: str
    mode: str
    checks: int
    first_program: int = -1
    first_s: float = -1.0
    why: str = ""


# `why` of a cell no program checked in a mode because jax diverged there each time, as a
# known entry explains (harness/campaign/finish.py `_blocked`): blocked, not unreachable
BLOCKED_WHY = "known divergence: "


@dataclass(frozen=True)
class CellCoverage:
    """The run's (cell, mode) pairs (`RunSummary.cells`), each counted once: checked,
    reachable but not reached (`missed`), blocked by a known divergence, or unreachable
    here (a reason given). The one definition the console, summary.json, JUnit and the
    HTML report print."""

    checked: int
    missed: int
    blocked: int
    unreachable: int
    missed_by_mode: tuple[tuple[str, int], ...]  # most first
    last_first_s: float  # run time by which every checked pair had its first check

    @staticmethod
    def of(cells: Sequence[CellCheck]) -> CellCoverage:
        checked = [c for c in cells if c.checks]
        missed = [c for c in cells if not c.checks and not c.why]
        blocked = sum(1 for c in cells if not c.checks and c.why.startswith(BLOCKED_WHY))
        by_mode: dict[str, int] = {}
        for c in missed:
            by_mode[c.mode] = by_mode.get(c.mode, 0) + 1
        return CellCoverage(len(checked), len(missed), blocked, len(cells) - len(checked) - len(missed) - blocked,
                            tuple(sorted(by_mode.items(), key=lambda kv: (-kv[1], kv[0]))),
                            max((c.first_s for c in checked), default=0.0))

    @property
    def reachable(self) -> int:
        return self.checked + self.missed

    def line(self) -> str:
        """The one sentence every renderer prints."""
        share = f" ({100 * self.checked / self.reachable:.1f}%)" if self.reachable else ""
        out = (f"{self.checked} of {self.reachable} reachable (cell, mode) pairs checked{share}, the last first "
               f"reached at {self.last_first_s:.0f}s; {self.blocked} blocked by known divergences; "
               f"{self.unreachable} cannot be reached here")
        if self.missed_by_mode:
            out += "; not reached: " + ", ".join(f"{m} {n}" for m, n in self.missed_by_mode)
        return out


@dataclass(frozen=True)
class ModeTime:
    """One mode's share of the workers' time in the run's checks: the jobs that ran it
    and the seconds they spent in it (each worker's own timing of the mode, a batched
    jit's time shared among its programs). The known entries' own cases and the
    minimization after the budget are not counted."""

    mode: str
    runs: int
    seconds: float

    @staticmethod
    def totals(parts: Iterable[tuple[str, int, float]]) -> tuple[ModeTime, ...]:
        """(mode, runs, seconds) parts summed per mode, in mode order."""
        by: dict[str, tuple[int, float]] = {}
        for mode, runs, secs in parts:
            n, t = by.get(mode, (0, 0.0))
            by[mode] = (n + runs, t + secs)
        return tuple(ModeTime(m, n, round(t, 2)) for m, (n, t) in sorted(by.items()))


@dataclass(frozen=True)
class WorkerTime:
    """Where the workers' time went (`RunSummary.mode_time`), and how many executables
    the compilation cache held when the run started (-1: no cache): the one sentence
    every renderer prints. On a machine's first run every executable compiles: eager
    shard_map compiles each primitive, argument and output of a program on its own, so
    such a run checks fewer (cell, mode) pairs in its budget, and the cache count tells
    a reader which kind of run it was (docs/execution.md)."""

    modes: tuple[ModeTime, ...]
    cache_entries: int = -1

    def line(self) -> str:
        total = sum(m.seconds for m in self.modes)
        out = f"{total:.0f}s in checks: " + ", ".join(
            f"{m.mode} {m.seconds:.1f}s ({m.runs} runs)" for m in sorted(self.modes, key=lambda m: (-m.seconds, m.mode)))
        if self.cache_entries == 0:
            out += ("; the compilation cache was empty: every executable was compiled (a machine's first run "
                    "checks fewer pairs in its budget than the runs after it)")
        elif self.cache_entries > 0:
            out += f"; the compilation cache held {self.cache_entries} executables at the start"
        else:
            out += "; no compilation cache (--compile-cache none, or it could not be written)"
        return out


# `AloneRerun.verdict`: a timeout that finished alone, a crash that did not happen again alone
SLOW, FLAKY = "slow", "flaky"


@dataclass(frozen=True)
class AloneRerun:
    """A crash or timeout no known entry explains, run again alone on its worker with a
    longer limit before it was reported (harness/campaign/plan.py `PartKind.ALONE`), that
    did not happen again: `slow` (it timed out under load and finished alone) or `flaky`
    (it crashed and did not alone). Neither is a failure; what the mode did alone is
    judged like any result."""

    verdict: str  # SLOW or FLAKY
    mode: str
    program: str  # the program id
    case: str  # its case file, saved when it crashed or timed out
    under_load: str  # what happened first ("timed out after 30s", "worker died (exit code -6, SIGABRT)")
    alone_s: float  # how long the mode took alone

    def line(self) -> str:
        what = "timed out" if self.verdict == SLOW else "crashed"
        return (f"{self.verdict} {self.mode}: {what} under load ({self.under_load}), ran alone in "
                f"{self.alone_s:.1f}s  {self.case}")


@dataclass(frozen=True)
class NotDone:
    """The work a run's time left over (`--budget`: the budget and its grace), each kind
    with its one definition. Nothing here is a failure; each is work the run did not do."""

    late_parts: int = 0  # late parts (a program's costly modes, eager) never sent: the budget ended first
    jobs: int = 0  # jobs (a program's modes, a probe run) killed or never sent when the time was up
    reruns: int = 0  # crashes and timeouts reported without their re-run alone (the time was up)
    entry_cases: int = 0  # known entries' own cases not checked (their status stays `unseen`)
    minimizations: int = 0  # new buckets not minimized (their cases are saved)
    corpus_cases: int = 0  # corpus cases not replayed

    @property
    def total(self) -> int:
        return sum(int(getattr(self, f.name)) for f in fields(self))

    def plus(self, **more: int) -> NotDone:
        """These counts added (a field name that does not exist raises TypeError)."""
        return NotDone(**{f.name: int(getattr(self, f.name)) + more.pop(f.name, 0) for f in fields(self)}, **more)

    @staticmethod
    def sum(parts: Iterable[NotDone]) -> NotDone:
        out = NotDone()
        for p in parts:
            out = out.plus(**asdict(p))
        return out

    def line(self) -> str:
        """The one sentence every renderer prints (when `total` is not 0)."""
        said = [(self.late_parts, "late parts (eager) not sent"), (self.jobs, "jobs killed or not sent"),
                (self.reruns, "crashes or timeouts not re-run alone (reported as found)"),
                (self.entry_cases, "known entries' own cases not checked"),
                (self.minimizations, "new buckets not minimized"), (self.corpus_cases, "corpus cases not replayed")]
        return "not done (the time was up): " + ", ".join(f"{n} {what}" for n, what in said if n)


@dataclass(frozen=True)
class Counts:
    """Every count a report shows, each with its one definition."""

    programs_run: int  # distinct drawn programs checked (repeats and derived programs not counted)
    programs_with_divergences: int  # ... with at least one divergence, known or not
    failing_programs: int  # ... with at least one divergence no known entry explains
    divergences: int  # divergences no known entry explains
    suppressed: int  # divergences a known bug's entry explains
    new_buckets: int  # unexplained buckets first seen in this run's generation
    still_failing_buckets: int  # unexplained buckets first seen in the corpus replay
    known_buckets: int  # buckets a known bug's entry explains
    fixed_cases: int  # corpus cases that no longer diverge
    policy: int = 0  # divergences a policy entry explains (jax's limitation, feature request or wording)
    policy_buckets: int = 0  # buckets a policy entry explains
    slow: int = 0  # timeouts that finished when run again alone (AloneRerun): not failures
    flaky: int = 0  # crashes that did not happen again alone (AloneRerun): not failures
    not_done: int = 0  # pieces of work the run's time left over (NotDone.total)

    @property
    def failing_buckets(self) -> int:
        return self.new_buckets + self.still_failing_buckets

    def line(self) -> str:
        """The one sentence every renderer prints."""
        alone = f"; {self.slow} slow, {self.flaky} flaky (passed alone: not failures)" if self.slow or self.flaky else ""
        left = f"; {self.not_done} not done" if self.not_done else ""
        return (
            f"{self.programs_run} programs run, {self.failing_programs} failing "
            f"({self.programs_with_divergences} with any divergence); {self.divergences} divergences in "
            f"{self.new_buckets} new and {self.still_failing_buckets} still-failing buckets; "
            f"{self.suppressed} known in {self.known_buckets} known buckets; "
            f"{self.policy} policy in {self.policy_buckets} policy buckets; {self.fixed_cases} fixed{alone}{left}"
        )


@dataclass(frozen=True)
class RunSummary:
    jax_version: str
    seed: int
    modes: tuple[str, ...]
    codegen: str
    counts: Counts
    repeats_skipped: int
    accidentally_invalid: int
    elapsed_s: float
    buckets: tuple[BucketSummary, ...]
    fixed: tuple[FixedCase, ...]
    batch_reconfirmed: int  # results of a shared jit (a batch of programs, or a program's modes together) that diverged, re-run alone
    corpus_replayed: int
    database_replayed: int
    programs_digest: str
    unseen_suppressions: tuple[str, ...]
    known_entries: tuple[EntryStatus, ...]
    programs_with_known: int
    derived_checked: int
    checked_in_full: int
    statistics: Mapping[str, float] = field(default_factory=dict)
    coverage: tuple[CoverageCell, ...] = ()
    cells: tuple[CellCheck, ...] = ()
    shard: str = ""  # "K/N" for one shard of a run (--shard); "" for a whole run
    programs_drawn: int = 0  # programs Hypothesis drew (every shard draws the whole stream)
    merged_from: tuple[str, ...] = ()  # `shardfuzz merge`: the report directories merged, in order
    programs_swept: int = 0  # of programs_drawn, the sweep's (every cell of the table, strategies/focus.py, then each cell outside it a program held first)
    mode_time: tuple[ModeTime, ...] = ()  # the workers' time per mode (WorkerTime)
    cache_entries: int = -1  # executables in the compilation cache at the start (-1: no cache)
    reruns: tuple[AloneRerun, ...] = ()  # crashes and timeouts that did not happen again alone (slow, flaky)
    left_over: NotDone = NotDone()  # the work the run's time left over (Counts.not_done: its total)
    schema: int = SUMMARY_SCHEMA

    @property
    def late_dropped(self) -> int:
        """Programs whose costly modes (eager) never ran: the budget ended first."""
        return self.left_over.late_parts

    @property
    def slow(self) -> tuple[AloneRerun, ...]:
        return tuple(r for r in self.reruns if r.verdict == SLOW)

    @property
    def flaky(self) -> tuple[AloneRerun, ...]:
        return tuple(r for r in self.reruns if r.verdict == FLAKY)

    @property
    def cell_coverage(self) -> CellCoverage:
        return CellCoverage.of(self.cells)

    @property
    def worker_time(self) -> WorkerTime:
        return WorkerTime(self.mode_time, self.cache_entries)

    @property
    def new(self) -> tuple[BucketSummary, ...]:
        return tuple(b for b in self.buckets if not b.explained and b.new)

    @property
    def still(self) -> tuple[BucketSummary, ...]:
        return tuple(b for b in self.buckets if b.still_failing)

    @property
    def known(self) -> tuple[BucketSummary, ...]:
        """Buckets a known jax bug explains."""
        return tuple(b for b in self.buckets if b.known)

    @property
    def policy(self) -> tuple[BucketSummary, ...]:
        """Buckets a policy entry explains (jax's choice: never an upstream bug report)."""
        return tuple(b for b in self.buckets if b.is_policy)

    @property
    def failing(self) -> tuple[BucketSummary, ...]:
        """Buckets no known entry explains: what makes the exit status 1."""
        return tuple(b for b in self.buckets if not b.explained)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"schema": self.schema}
        for f in fields(self):
            if f.name in ("schema", "counts"):
                continue
            v = getattr(self, f.name)
            d[f.name] = dict(v) if f.name == "statistics" else _plain(v)
        d.update(asdict(self.counts))  # the counts at the top level, as schema 1 had them
        if self.cells:
            d["cell_coverage"] = _plain(self.cell_coverage)  # (derived from `cells`: not read back)
        if self.mode_time:
            d["worker_time"] = self.worker_time.line()  # (derived: not read back)
        d["late_dropped"] = self.late_dropped  # (schema 2 had it; now left_over's: not read back)
        return d

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> RunSummary:
        """Read a summary.json document (raises SummaryFormatError naming what is missing)."""
        try:
            if d.get("schema") != SUMMARY_SCHEMA:
                raise SummaryFormatError(f"summary schema {d.get('schema')!r}; this shardfuzz reads {SUMMARY_SCHEMA}")
            counts = Counts(**{f.name: int(d[f.name] if f.default is MISSING else d.get(f.name, f.default))
                               for f in fields(Counts)})
            left = d.get("left_over") or {"late_parts": int(d.get("late_dropped", 0))}
            return RunSummary(
                jax_version=str(d["jax_version"]), seed=int(d["seed"]), modes=tuple(d["modes"]),
                codegen=str(d["codegen"]), counts=counts, repeats_skipped=int(d["repeats_skipped"]),
                accidentally_invalid=int(d["accidentally_invalid"]), elapsed_s=float(d["elapsed_s"]),
                buckets=tuple(bucket_from_json(b) for b in d["buckets"]),
                fixed=tuple(FixedCase(str(f["case"]), tuple(f["signatures"])) for f in d["fixed"]),
                batch_reconfirmed=int(d["batch_reconfirmed"]), corpus_replayed=int(d["corpus_replayed"]),
                database_replayed=int(d["database_replayed"]), programs_digest=str(d["programs_digest"]),
                unseen_suppressions=tuple(d["unseen_suppressions"]),
                known_entries=tuple(EntryStatus(**e) for e in d["known_entries"]),
                programs_with_known=int(d["programs_with_known"]), derived_checked=int(d["derived_checked"]),
                checked_in_full=int(d["checked_in_full"]), statistics=dict(d["statistics"]),
                coverage=tuple(CoverageCell(**c) for c in d["coverage"]),
                cells=tuple(CellCheck(**c) for c in d.get("cells", [])),
                shard=str(d.get("shard", "")), programs_drawn=int(d.get("programs_drawn", 0)),
                merged_from=tuple(str(x) for x in d.get("merged_from", ())),
                programs_swept=int(d.get("programs_swept", 0)),
                mode_time=tuple(ModeTime(str(m["mode"]), int(m["runs"]), float(m["seconds"])) for m in d.get("mode_time", [])),
                cache_entries=int(d.get("cache_entries", -1)),
                reruns=tuple(AloneRerun(str(r["verdict"]), str(r["mode"]), str(r["program"]), str(r["case"]),
                                        str(r["under_load"]), float(r["alone_s"])) for r in d.get("reruns", [])),
                left_over=NotDone(**{k: int(v) for k, v in left.items()}),
            )
        except (KeyError, TypeError, ValueError) as e:
            if isinstance(e, SummaryFormatError):
                raise
            raise SummaryFormatError(f"not a shardfuzz summary (schema {SUMMARY_SCHEMA}): {type(e).__name__}: {e}") from None


def bucket_from_json(b: Mapping[str, Any]) -> BucketSummary:
    size = b.get("minimized_size")
    return BucketSummary(
        signature=str(b["signature"]), kind=str(b["kind"]), mode=str(b["mode"]), count=int(b["count"]),
        case=str(b["case"]), message=str(b.get("message", "")), suppressed_by=b.get("suppressed_by"),
        new=bool(b.get("new", True)), first_seen_at=int(b.get("first_seen_at", 0)),
        minimized_case=b.get("minimized_case"), minimized_size=tuple(size) if size is not None else None,
        first_seen_s=float(b.get("first_seen_s", 0.0)), first_seen_index=int(b.get("first_seen_index", -1)),
        policy=bool(b.get("policy", False)),
    )


def _plain(v: Any) -> Any:
    """Frozen dataclasses and tuples as JSON values."""
    if hasattr(v, "__dataclass_fields__"):
        return {k: _plain(x) for k, x in asdict(v).items()}
    if isinstance(v, Sequence) and not isinstance(v, str):
        return [_plain(x) for x in v]
    return v


def counts_of(buckets: Sequence[BucketSummary], fixed: Sequence[FixedCase], programs_run: int,
              programs_with_divergences: int, failing_programs: int, reruns: Sequence[AloneRerun] = (),
              not_done: NotDone = NotDone()) -> Counts:
    return Counts(
        programs_run=programs_run,
        programs_with_divergences=programs_with_divergences,
        failing_programs=failing_programs,
        divergences=sum(b.count for b in buckets if not b.explained),
        suppressed=sum(b.count for b in buckets if b.known),
        new_buckets=sum(1 for b in buckets if not b.explained and b.new),
        still_failing_buckets=sum(1 for b in buckets if b.still_failing),
        known_buckets=sum(1 for b in buckets if b.known),
        fixed_cases=len(fixed),
        policy=sum(b.count for b in buckets if b.is_policy),
        policy_buckets=sum(1 for b in buckets if b.is_policy),
        slow=sum(1 for r in reruns if r.verdict == SLOW),
        flaky=sum(1 for r in reruns if r.verdict == FLAKY),
        not_done=not_done.total,
    )
