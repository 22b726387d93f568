"""A run's state: the buckets, the counts behind the summary, the saving of every failing
program (to disk before anything else), and the live progress line. `Run.record` is where
each checked program's result is fed back: its cells into the ledger (checked, reopened,
blocked: harness/campaign/blocking.py), its divergences explained by the known entries
(by cause), and the program without its known bug queued to be checked too
(harness/campaign/derived.py)."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from harness.campaign.blocking import block_known, block_stopped
from harness.campaign.cells import CellLedger, by_error, program_cells
from harness.campaign.config import NO_LIMIT, RunConfig
from harness.campaign.derived import DerivedQueue
from harness.campaign.known_queries import KnownQueries
from harness.campaign.repair_waits import RepairWaits, Waiting
from harness.judge.check import CheckResult
from harness.judge.compare import Divergence
from harness.judge.known import (
    Explained,
    KnownDivergence,
    checked_in_full,
    derived_program,
    explain_all,
)
from harness.report.console import Progress
from harness.report.markup import write as atomic_write
from harness.report.summary import AloneRerun, BucketSummary, NotDone
from harness.run import compat
from harness.run.observation import Observation
from programs.model import Program
from programs.serialize import program_id, program_to_dict


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
    first_seen_s: float = 0.0  # seconds into the run when it was first seen
    first_seen_index: int = -1  # the first program's position in the program stream (-1: the corpus)


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
                **({"members": list(d.members)} if d.members else {}),
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


class CaseFiles:
    """The failing programs' case files, in the report (and the corpus, when there is one)."""

    def __init__(self, cfg: RunConfig) -> None:
        self.cfg = cfg
        self.divergences: dict[str, list[Divergence]] = {}  # program id -> the divergences its case holds

    def save(self, res: CheckResult, jax_version: str, from_corpus: bool = False) -> Path:
        """The failing program goes to disk first, named by its program id (so a later
        re-labelling overwrites it), atomically: into the corpus (when there is one)
        and then the report, so a case in the report is always in the corpus too. A
        program recorded in parts keeps the divergences of its other parts' modes."""
        pid = program_id(res.program)
        divs = self.divergences[pid] = self._with_earlier(res)
        doc = case_document(res.program, tuple(divs), jax_version)
        if self.cfg.corpus is not None and not from_corpus:
            atomic_write(self.cfg.corpus / f"{pid}.json", doc)
        path = self.path(res.program)
        atomic_write(path, doc)
        return path

    def save_unconfirmed(self, res: CheckResult, jax_version: str) -> Path:
        """A crash or timeout about to be run again alone (harness/campaign/plan.py
        `PartKind.ALONE`) goes to disk first, into the report only: the corpus gets it
        when it is recorded, not when it turns out slow or flaky. The case keeps the
        divergences earlier parts of the program recorded."""
        path = self.path(res.program)
        atomic_write(path, case_document(res.program, tuple(self._with_earlier(res)), jax_version))
        return path

    def _with_earlier(self, res: CheckResult) -> list[Divergence]:
        """`res`'s divergences after those earlier parts of its program recorded in other modes."""
        modes = {d.mode for d in res.divergences}
        return [d for d in self.divergences.get(program_id(res.program), []) if d.mode not in modes] + list(res.divergences)

    def path(self, p: Program) -> Path:
        """Where `p`'s case goes in the report."""
        return self.cfg.report_dir / "cases" / f"{program_id(p)}.json"


class Admission(Enum):
    """What becomes of a drawn program (`Run.admit`)."""

    CHECK = "check"
    SKIP = "skip"
    ELSEWHERE = "elsewhere"  # another shard checks it; its cells are claimed here too


class Run:
    """One run's state: its counts, buckets and cases, its cell ledger (`cells`), its
    derived programs (`derived`), its known entries as the planner asks them (`known`),
    and the stream of programs drawn. `record` feeds each checked program's result back."""

    def __init__(self, cfg: RunConfig) -> None:
        self.cfg = cfg
        self.buckets: dict[tuple[str, str | None], Bucket] = {}
        self.n = 0
        self.n_failing_programs = 0  # programs with a divergence no known entry explains
        self.n_with_divergences = 0  # drawn programs with any divergence
        self.t0 = time.monotonic() if cfg.started is None else cfg.started  # (the budget counts from here)
        self.last_progress = 0.0
        self.jax_version = compat.jax_version()  # (the workers', once they start: `known` follows it)
        self.coverage: Counter[tuple[str, int, str, str, str]] = Counter()
        self.accidents = 0
        self.fixed: list[dict[str, Any]] = []
        self.corpus_replayed = 0
        self.swept_ids: set[str] = set()  # the sweep's programs (drawn: in generated_ids too)
        self.late_dropped = 0  # late parts (costly modes) not run: the budget ended first
        self.not_done = NotDone()  # the rest of the work the run's time left over (late parts: `late_dropped`)
        self.reruns: list[AloneRerun] = []  # crashes and timeouts that did not happen again alone
        self.mode_time: dict[str, tuple[int, float]] = {}  # mode -> (runs, seconds): the workers' own timing
        self.cache_entries = -1  # executables in the compilation cache at the start (-1: no cache)
        self.database_replayed = 0
        self.checked: set[str] = set()  # program ids checked in this run
        self.repeats = 0  # programs drawn again (the same id) and not checked again
        self.batch_reconfirmed = 0
        self.generated_ids: list[str] = []  # in generation order: the run's determinism check
        # program id -> its first position in the stream (a derived program: its parent's);
        # the same in every shard, so `merge` keeps the sighting the unsharded run makes first
        self.stream_index: dict[str, int] = {}
        self.elsewhere: set[str] = set()  # drawn programs another shard checks (--shard)
        self.derived = DerivedQueue(self.stream_index)  # programs without their known bugs, and CPU-runnable parts
        self.waits = RepairWaits()  # divergences no entry names, waiting for a repaired program's verdict
        self.derived_checked = 0
        self.with_known = 0  # programs (drawn or derived) with a divergence a known entry explains
        self.in_full_by_rewrite = 0  # ... checked in full all the same (harness/judge/known.py checked_in_full)
        self.entry_matches: Counter[str] = Counter()  # entry id -> divergences it explained
        self.entry_shows: dict[str, bool] = {}  # entry id -> its own case showed the bug here
        self.cells = CellLedger.new()  # configuration cells: scheduled, and checked per mode
        # a program whose costly modes run in a late part (harness/campaign/plan.py) is
        # recorded once per part: counted once, its case holding every part's divergences
        self.recorded: dict[str, int] = {}  # program id -> its index (self.n) when first recorded
        self.counted: set[tuple[str, str]] = set()  # (what, program id): "divergent", "failing", "known"
        self.cases = CaseFiles(cfg)  # the failing programs' case files
        # program id -> the modes a crash or hang in an earlier mode of its job kept from
        # running (harness/run/pool.py `Completed.unrun`): `record` reopens their cells and
        # checks them on the program without the crash's known bug
        self.unrun: dict[str, set[str]] = {}

    @property
    def jax_version(self) -> str:
        return self._jax_version

    @jax_version.setter
    def jax_version(self, version: str) -> None:
        """The jax the programs run on, and the known entries that cover it (`known`)."""
        self._jax_version = version
        self.known = KnownQueries.of(self.cfg.suppressions, version)

    @property
    def ur_gaps(self) -> dict[str, str]:
        """Mode -> why it runs no reduced / unreduced program here (the workers'
        compat.ur_mode_gaps): the ledger's, which its claims heed."""
        return self.cells.ur_gaps

    @ur_gaps.setter
    def ur_gaps(self, gaps: dict[str, str]) -> None:
        self.cells.ur_gaps = dict(gaps)

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def over_budget(self) -> bool:
        """Whether the run's time budget (if any) is spent."""
        return self.cfg.budget_s is not None and self.elapsed() > self.cfg.budget_s

    @property
    def stop_at(self) -> float | None:
        """The time.monotonic() at which every job still running is killed and nothing
        more is sent (RunConfig.stop_s; None: no budget)."""
        return None if self.cfg.stop_s is None else self.t0 + self.cfg.stop_s

    @property
    def drain_at(self) -> float | None:
        """The time.monotonic() until which the drawn programs' checks may still run after
        the budget (RunConfig.drain_s; None: no budget)."""
        return None if self.cfg.drain_s is None else self.t0 + self.cfg.drain_s

    def time_is_up(self) -> bool:
        """Whether `stop_at` has passed."""
        return self.stop_at is not None and time.monotonic() > self.stop_at

    def left_undone(self, **what: int) -> None:
        """Count work the run's time left over (NotDone's fields)."""
        self.not_done = self.not_done.plus(**what)

    def time_modes(self, observations: Sequence[Observation]) -> None:
        """The workers' own time per mode (`mode_time`)."""
        for o in observations:
            runs, secs = self.mode_time.get(o.mode, (0, 0.0))
            self.mode_time[o.mode] = (runs + 1, secs + o.elapsed_s)

    def is_known(self, q: Program) -> bool:
        """Whether `q` was already checked, drawn or derived."""
        return program_id(q) in self.checked or program_id(q) in self.derived.ids

    def admit(self, p: Program, reused: bool = False) -> Admission:
        """A drawn program (`reused`: replayed from the example database) into the
        stream: checked, skipped (drawn again, or one an earlier program's derived
        program already is: its result is known), or another shard's (--shard)."""
        pid = program_id(p)
        if reused:
            self.database_replayed += 1
        else:
            self.generated_ids.append(pid)
            self.stream_index.setdefault(pid, len(self.generated_ids) - 1)
        if pid in self.elsewhere:
            return Admission.SKIP  # (drawn again, and another shard's)
        if self.is_known(p):
            self.repeats += 1
            return Admission.SKIP
        if not reused and self.cfg.shard is not None and not self.cfg.shard.owns(pid):
            self.elsewhere.add(pid)
            return Admission.ELSEWHERE
        self.checked.add(pid)
        return Admission.CHECK

    def record(self, res: CheckResult, from_corpus: bool = False, parent: str | None = None) -> None:
        """`parent`: `res` is a late part of the program with that id (the program's
        costly modes, maybe on the program cut to some of its outputs:
        harness/campaign/plan.py `Part.late`), the same program again: counted once."""
        p = res.program
        pid = parent or program_id(p)
        derived = pid in self.derived.ids
        part = pid in self.recorded
        if not part:
            if derived:
                self.derived_checked += 1
            else:
                self.n += 1
        index = self.recorded.setdefault(pid, self.n)
        if res.prediction.error is not None and p.defect is None and not part:
            self.accidents += 1  # (results arrive after their Hypothesis test case: no event())
        for key in coverage_keys(res):
            self.coverage[key] += 1
        # a cell is checked by value by a valid program that ran; an invalid program checks
        # its cells by error (recorded apart: `CELL|by_error`), never by value
        valid = res.prediction.error is None
        # (a grad mode that found no float output checked no derivative: `skipped`)
        checked = [o.mode for o in res.observations if o.status == ("ok" if valid else "error") and o.mode != "probe"
                   and not (o.facts or {}).get("skipped")]
        types = [(t.shape, t.dtype) for t in res.prediction.value_types]
        own = program_cells(p, types)
        mine = own if valid else by_error(own)
        self.cells.record(mine, checked, index, round(self.elapsed(), 2))
        unrun = self.unrun.pop(program_id(p), set()) - {o.mode for o in res.observations}
        # (the modes it was sent to that did not check it: their pairs are claimed again)
        for m in ({o.mode for o in res.observations if o.mode != "probe"} | unrun) - set(checked):
            self.cells.reopen(mine, m, counted=not derived)
        if not res.divergences:
            self._settle(res, (), ())
            return
        path = self.cases.save(res, self.jax_version, from_corpus)  # (again, if a probe run re-labelled it)
        explained = explain_all(self.cfg.suppressions, res.divergences, p, res.prediction, self.jax_version)
        if not derived and self._first("divergent", pid):
            self.n_with_divergences += 1
        block_known(self.cells, self.known, res, explained, checked, types, own)
        block_stopped(self.cells, self.known, res, explained, unrun, types, own)
        used = list({x.entry.id: x.entry for x in explained if x.entry is not None}.values())
        waiting: list[Divergence] = []
        if used:
            q = derived_program(used, p, res.prediction)
            if not derived and self._first("known", pid):
                self.with_known += 1
                self.in_full_by_rewrite += checked_in_full(explained, p, q)
            repaired = self.derived.per_mode(res, explained, unrun, self.checked, self.cfg.modes)
            ws = [Waiting(x.divergence, pid, path, from_corpus, tuple(used)) for x in explained if x.entry is None]
            left = self.waits.defer(ws, repaired, p)
            waiting = [w.divergence for w in ws if w not in left]
        self._settle(res, explained, waiting)
        for x in explained:
            if x.divergence not in waiting:
                self._file(x.divergence, x.entry, path, from_corpus, pid)

    def _settle(self, res: CheckResult, explained: Sequence[Explained], waiting: Sequence[Divergence]) -> None:
        """File the divergences that waited for `res`, a repaired program (RepairWaits)."""
        for w, e in self.waits.settle(res, explained, waiting):
            self._file(w.divergence, e, w.path, w.from_corpus, w.parent)

    def settle_waits(self) -> None:
        """The run is over: every divergence still waiting for a repaired program is new."""
        for w in self.waits.pop_all():
            self._file(w.divergence, None, w.path, w.from_corpus, w.parent)

    def _file(self, d: Divergence, sup: KnownDivergence | None, path: Path, from_corpus: bool, pid: str) -> None:
        """Divergence `d` of program `pid` (its case at `path`) into its bucket: known by
        `sup`, or new (a derived program's new divergence is its parent's failure)."""
        if sup is not None:
            self.entry_matches[sup.id] += 1
        elif self._first("failing", pid):
            self.n_failing_programs += 1
        bucket = (d.signature, sup.id if sup else None)
        b = self.buckets.get(bucket)
        if b is None:
            b = Bucket(d.signature, d.kind.value, d.mode, case=str(path), message=d.message,
                       suppressed_by=sup.id if sup else None, new=not from_corpus and sup is None,
                       first_seen_at=self.n, first_seen_s=round(self.elapsed(), 2),
                       first_seen_index=-1 if from_corpus else self.stream_index.get(pid, -1))
            self.buckets[bucket] = b
            self.cfg.console.found(BucketSummary(b.signature, b.kind, b.mode, 1, b.case, b.message, b.suppressed_by, b.new))
        b.count += 1
        if len(b.programs) < 5:
            b.programs.append(str(path))

    def _first(self, what: str, pid: str) -> bool:
        """Whether program `pid` is counted as `what` for the first time (and count it)."""
        key = (what, pid)
        if key in self.counted:
            return False
        self.counted.add(key)
        return True

    def progress(self, force: bool = False) -> None:
        """The progress line (harness/report/console.py: redrawn on a terminal, at a
        falling rate in a log)."""
        new = sum(1 for b in self.buckets.values() if not b.suppressed_by)
        self.last_progress = self.cfg.console.progress(
            Progress(self.n, None if self.cfg.max_examples >= NO_LIMIT else self.cfg.max_examples, self.elapsed(),
                     self.cfg.budget_s, new, len(self.buckets) - new), self.last_progress, force)
