"""A fuzz run: Hypothesis draws programs, each is checked in its tier's modes in the
worker pool, divergences are written to disk the moment they are found, bucketed by
signature and explained (or not) by the known entries, and summarised.

The pieces: `config` (RunConfig), `generation` (Hypothesis), `state` (Run: buckets,
counts, saving), `corpus` (replayed first), `finish` (entry cases, minimization,
summary). This module is the scheduling loop (batches, split programs, probe runs,
derived programs) and re-exports the names callers use.
"""

from __future__ import annotations

import os
import unittest
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hypothesis import Phase
from hypothesis.database import ReadOnlyDatabase
from hypothesis.errors import FlakyFailure
from hypothesis.statistics import collector

from harness.campaign.cells import (
    CellLedger,
    checked_cells,
    checked_output_cells,
    error_kind,
    lean,
    lost_cells,
    trouble_cells,
    typed_cells,
    value_types,
)
from harness.campaign.config import LARGE_MODES, RunConfig
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
from harness.campaign.known_queries import (
    error_trouble_modes,
    hang_entries,
    hang_mode_names,
    known_hang_modes,
    known_raise_ops,
    known_raise_outputs,
    known_trouble,
)
from harness.campaign.state import Bucket, Run, case_document, coverage_keys, spec_pattern
from harness.campaign.sweep import Sweep
from harness.judge.check import CheckResult, check_program, evaluate, localise_values, probe_mode
from harness.report.markup import write as atomic_write
from harness.report.summary import RunSummary
from harness.run import compat
from harness.run.modes import Observation
from harness.run.modes_multiprocess import LARGE_BLOCK_BYTES, block_bytes
from harness.run.pool import Completed, Pool
from harness.run.together import together_modes
from oracles import Prediction, predict
from programs.model import Program
from programs.serialize import program_id

__all__ = [
    "GENERATION", "Bucket", "Run", "RunConfig", "RunSummary", "atomic_write", "case_document", "check_sync",
    "coverage_keys", "example_database", "fuzz", "fuzz_program", "hypothesis_shrink", "hypothesis_test",
    "load_corpus", "replay_corpus", "seeded_programs", "spec_pattern", "tier_modes", "handling",
]


class _BudgetSpent(Exception):
    """Raised inside the Hypothesis test to end the run when the time budget is spent.
    Hypothesis stops at it (only the generate phase runs, so nothing is shrunk) and still
    reports the run's statistics."""


@dataclass(frozen=True)
class _Probe:
    """Job tag: a probe run of this diverging result (puts value divergences on the op
    that first goes wrong); `parent` as _Late's."""

    result: CheckResult
    parent: str | None = None


@dataclass(frozen=True)
class _Late:
    """Job tag: a late part (a costly mode) of the program with id `parent`, maybe cut to
    some of its outputs: recorded as that program's part, whatever other program it
    equals (a cut program can be one the run draws too)."""

    parent: str


@dataclass(frozen=True)
class _Predicted:
    """Job tag: a whole program whose prediction the scheduler already made (to decide
    whether to batch it): judged with it, not predicted again."""

    prediction: Prediction


@dataclass(frozen=True)
class _Batched:
    """Job tag: this program's jit part, compiled in a batch with others."""

    token: int


@dataclass(frozen=True)
class _Alone:
    """Job tag: the modes of a program that diverged when run together in one jit
    (harness/run/together.py), re-run alone; `kept` are its other observations, `parent`
    the first job's (`finish`)."""

    kept: tuple[Observation, ...]
    pred: Prediction
    parent: str | None


@dataclass(frozen=True)
class _Rest:
    """Job tag: the modes a crash or hang in an earlier mode of a job kept from running
    (`Completed.unrun`), run in a job of their own; `kept` are the first job's
    observations, `tag` its tag: the two are joined and handled as that job."""

    tag: Any
    kept: tuple[Observation, ...]


@dataclass(frozen=True)
class _Part:
    """Job tag: one part of a program split between a batch and a normal job (or its jit
    part re-run alone after the batch diverged)."""

    token: int


class _Scheduler:
    """Feeds programs to the pool and turns finished jobs into recorded results.

    Batching: a value-tier program the oracle expects to run has its jit mode compiled
    together with others (same device count); its other modes run as a normal job and the
    two parts are joined. A batched result that diverges is re-run alone first (never
    report a batch-only result). Parts are keyed by a submission token, not the program
    id, as Hypothesis may draw the same program twice."""

    def __init__(self, run: Run, pool: Pool | None) -> None:
        self.run, self.cfg, self.pool = run, run.cfg, pool
        self.parts: dict[int, tuple[int, list[Observation], Prediction]] = {}  # token -> parts left, observations, prediction
        self.queues: dict[int, list[tuple[Program, int]]] = {}  # device count -> (program, token) waiting
        self.tokens = iter(range(1 << 62))
        # late parts: the costly modes of programs whose other modes already went out
        # (`submit`), sent when more than LATE_BOUND wait, one per SWEEP_LATE_EVERY
        # programs while the sweep runs, and the rest at the end, the most worth first
        # (`best_late`)
        self.late: list[tuple[Program, tuple[str, ...], str, frozenset[str]]] = []  # (part, its mode, the parent's id, its cells)
        self.sweeping = False
        self.since_late = 0  # sweep programs submitted since the last late part went out
        self.out_of_time = False  # the budget is spent: late parts not yet out are dropped
        self.limit: int | None = None  # with the sweep: the programs drawn in all (max_examples)
        self.hangs = hang_entries(self.cfg.suppressions, run.jax_version)  # entries saying jax may hang
        self.hang_names = hang_mode_names(self.hangs)  # the modes they name (None: every mode)
        self.crashes = hang_entries(self.cfg.suppressions, run.jax_version, "crash")  # entries saying jax may crash
        self.crash_names = hang_mode_names(self.crashes, "crash")

    def check(self, p: Program, reused: bool = False) -> None:
        """One drawn (or replayed) program: skipped when drawn again, else submitted."""
        run = self.run
        if self.cfg.budget_s is not None and run.elapsed() > self.cfg.budget_s:
            self.out_of_time = True
            raise _BudgetSpent
        if self.limit is not None and not reused and len(run.generated_ids) >= self.limit:
            raise _BudgetSpent  # (the sweep's programs count toward max_examples)
        pid = program_id(p)
        if reused:
            run.database_replayed += 1
        else:
            run.generated_ids.append(pid)
            run.stream_index.setdefault(pid, len(run.generated_ids) - 1)
        if pid in run.elsewhere:
            return  # drawn again, and another shard's
        if pid in run.checked or pid in run.derived.ids:
            # Hypothesis drew the same program again, or one an earlier program's derived
            # program (without its known bug) already is: its result is known
            run.repeats += 1
            return
        if not reused and self.cfg.shard is not None and not self.cfg.shard.owns(pid):
            # another shard checks it; its cells are claimed here too, so every later
            # program gets the tier it gets in the unsharded run
            run.elsewhere.add(pid)
            tier_modes(p, self.cfg, run.cells, self.sweeping, run.jax_version)
            for m in COSTLY_MODES:
                run.cells.cut.pop((pid, m), None)
            return
        run.checked.add(pid)
        if self.pool is None:
            run.record(check_program(p, tier_modes(p, self.cfg, run.cells, self.sweeping, run.jax_version)))
        else:
            self.submit(p)
        self.runnable_part(p)
        self.submit_derived()
        run.progress()

    def runnable_part(self, p: Program) -> None:
        """A valid program holding an op XLA:CPU cannot run (sendrecv, pbroadcast,
        ragged_all_to_all: 12% of seed 0's first 600 programs) gets no value mode, so its
        other ops' cells were checked abstractly only: the program without the outputs
        such an op reaches (`cpu_runnable_part`) is a derived program, tiered like any
        other (its value modes only: the whole program had its abstract check)."""
        q = cpu_runnable_part(p)
        if q is not None and not self.run.is_known(q):
            modes = tuple(m for m in tier_modes(q, self.cfg, self.run.cells, self.sweeping, self.run.jax_version) if m != "abstract")
            if modes:
                self.run.derived.queue(q, p, modes)

    def submit(self, p: Program) -> None:
        assert self.pool is not None
        modes = tier_modes(p, self.cfg, self.run.cells, self.sweeping, self.run.jax_version)
        late = tuple(m for m in modes if m in COSTLY_MODES) if len(modes) > 1 else ()
        if late:
            # the costly modes (eager: ~0.45 s a lean sweep program, as much as the others together) go
            # in late parts, recorded on their own: the other modes' verdict comes first.
            # A part claimed for its cells runs the program cut to the outputs that bring
            # it new cells (CellLedger.claim), without dead ops (lean_part); one chosen by
            # program id (the share) runs it whole, dead ops too
            modes = tuple(m for m in modes if m not in late)
            for m in late:
                if (program_id(p), m) in self.run.cells.cut:  # claimed for its cells there: the lean part
                    self.queue_late(p, m, self.run.cells.cut.pop((program_id(p), m)))
                else:
                    self.late.append((p, (m,), program_id(p), checked_cells(p)))
        self._submit(p, modes)
        self.submit_late()

    def queue_late(self, p: Program, mode: str, keep: tuple[int, ...] | None = None) -> None:
        """A late part of `p` in `mode`: `p` cut to the outputs `keep` (all: None) without
        its dead ops (`lean_part`), with the cells it checks (a valid program cut: its kept
        outputs'). A valid program's outputs a known entry says jax raises, crashes or
        hangs on in that mode (`known_raise_outputs`) go in a part of their own: one such
        output made the whole part fail, and jax checked none of the others (the part
        of its own still shows the known bug, which blocks its op's cells)."""
        keep = tuple(range(len(p.outputs))) if keep is None else keep
        parts = [keep]
        types, fails = value_types(p)
        if not fails and self.cfg.suppressions:
            bad = known_raise_outputs(self.cfg.suppressions, p, types, self.run.jax_version, mode)
            parts = [ks for ks in (tuple(k for k in keep if k not in bad), tuple(k for k in keep if k in bad)) if ks]
        for ks in parts:
            whole = len(ks) == len(p.outputs)
            # (an invalid program's cut keeps its error, with one output more where it needs
            # one, or is not made: the part's own cells)
            q = lean(p, None if whole else ks)
            self.late.append((q, (mode,), program_id(p), checked_cells(q)))

    def submit_late(self, everything: bool = False) -> None:
        """The late parts beyond LATE_BOUND, or while the sweep runs one for every
        SWEEP_LATE_EVERY programs, or (`everything`) all of them."""
        assert self.pool is not None
        if everything:
            n = len(self.late)
        elif self.sweeping:
            self.since_late += 1
            if self.since_late < SWEEP_LATE_EVERY or not self.late:
                return
            self.since_late, n = 0, 1
        else:
            n = len(self.late) - LATE_BOUND
        for _ in range(n):
            self.wait_for_free_worker()
            # the derived programs the results so far gave go first: their modes are cheap
            # (a costly one is a late part itself), and would wait behind every late part
            # (fuzz seed 0, 60 s: a smap sweep program's derived one, due at 33 s, went
            # out at 60 s, after the eager parts)
            self.submit_derived()
            if not self.late:
                return
            if not everything and self.cfg.budget_s is not None and self.run.elapsed() > self.cfg.budget_s:
                self.out_of_time = True  # (the rest is dropped at the end: `drain`)
                return
            q, modes, parent, _ = self.late.pop(self.best_late())
            q = self.recut(q, modes)
            self.pool.submit(q, modes, tag=_Late(parent), limit_s=KNOWN_HANG_LIMIT_S if self.hang_modes(q, modes) else None)

    def recut(self, q: Program, modes: tuple[str, ...]) -> Program:
        """The late part `q` as it goes out: cut again to the outputs that still bring its
        modes a pair no part has checked yet, where it has some that do not. A part was
        cut to the pairs its program claimed when it was queued, but a part sent before
        it may have checked them since, among the pairs of its ops besides those it was
        claimed for (seed 22's sweep: 122 of 698 eager outputs brought nothing new by the
        time their part went out, 19% of the eager arguments, ops and outputs). A part
        whose every output brings nothing is sent as it is: it is the least worth
        (`best_late`) and goes out only when time is left."""
        checks = self.run.cells.checks
        keep = tuple(k for k, cs in enumerate(checked_output_cells(q)) if any((c, m) not in checks for c in cs for m in modes))
        return lean(q, keep) if 0 < len(keep) < len(q.outputs) else q

    def best_late(self) -> int:
        """The index of the late part to send next: the one with the most cells its mode
        has not checked yet (claimed for it, or checked by no part since) per unit of its
        cost (arguments, ops and outputs: eager compiles about one of each), the earliest
        of equals. The parts the budget leaves unsent are then the least worth; what is
        drawn does not change (the claims were made when the parts were queued)."""
        checks = self.run.cells.checks

        def worth(k: int) -> float:
            q, modes, _, cells = self.late[k]
            fresh = sum(1 for c in cells for m in modes if (c, m) not in checks)
            return fresh / (len(q.inputs) + len(q.body) + len(q.outputs))

        return max(range(len(self.late)), key=lambda k: (worth(k), -k))

    def hang_modes(self, p: Program, modes: tuple[str, ...]) -> tuple[str, ...]:
        """The modes of `modes` a known entry says jax may hang in on `p` (known_hang_modes)."""
        if not self.hangs or (self.hang_names is not None and not self.hang_names.intersection(modes)):
            return ()  # (no trace: a late eager part, say)
        return known_hang_modes(self.hangs, p, value_types(p)[0], modes)

    def crash_last(self, p: Program, modes: tuple[str, ...]) -> tuple[str, ...]:
        """`modes` with those a known entry says jax may crash in on `p` last: a crash
        kills the worker, and the modes after it in the job never run (seed 3: a sweep
        program crashed in gspmd, a known partial-manual all_gather abort, and smap never
        checked its seven cells; the sweep counted them claimed)."""
        if not self.crashes or (self.crash_names is not None and not self.crash_names.intersection(modes)):
            return modes
        crash = known_hang_modes(self.crashes, p, value_types(p)[0], modes, "crash")
        return (*(m for m in modes if m not in crash), *crash) if crash else modes

    def _submit(self, p: Program, modes: tuple[str, ...], batch: bool = True) -> None:
        assert self.pool is not None
        modes = self.crash_last(p, modes)
        hang = self.hang_modes(p, modes)
        if hang:
            # the modes a known entry says may hang on `p` go in a part of their own with
            # a short limit (a hang costs KNOWN_HANG_LIMIT_S, not the pool's 30 s); joined
            # with the rest like a batch's parts
            pred, rest = predict(p), tuple(m for m in modes if m not in hang)
            token = next(self.tokens)
            self.parts[token] = (1 + bool(rest), [], pred)
            if rest:
                self.wait_for_free_worker()
                self.pool.submit(p, rest, tag=_Part(token))
            self.wait_for_free_worker()
            self.pool.submit(p, hang, tag=_Part(token), limit_s=KNOWN_HANG_LIMIT_S)
            return
        # no batch while the sweep runs: a batched program's modes are all recorded when
        # its batch (8 programs on as many devices) is full, and the sweep's 60 s are about
        # each pair's first check coming soon (seeds 1 and 2, 60 s, warm cache: batched,
        # every cheap mode missed 36-47 pairs, 96.7-97.5% in all; unbatched, 98.9-100%)
        pred = predict(p) if batch and self.cfg.batch > 1 and "jit" in modes and not self.sweeping else None
        # a program the oracle expects to fail, or one with the features of a known jax
        # bug, would only make its batch fail and be bisected: it runs alone
        if pred is None or pred.error is not None or known_trouble(self.cfg.suppressions, p, pred, self.run.jax_version, "jit"):
            together, pred = self.together(p, modes, pred)
            self.wait_for_free_worker()
            self.pool.submit(p, modes, tag=None if pred is None else _Predicted(pred), together=together)
            return
        rest = tuple(m for m in modes if m != "jit")
        token = next(self.tokens)
        self.parts[token] = (1 + bool(rest), [], pred)
        if rest:
            self.wait_for_free_worker()
            self.pool.submit(p, rest, tag=_Part(token), together=self.together(p, rest, pred)[0])
        self.queues.setdefault(p.mesh.size, []).append((p, token))
        if len(self.queues[p.mesh.size]) >= self.cfg.batch:
            self.flush(p.mesh.size)

    def together(self, p: Program, modes: tuple[str, ...], pred: Prediction | None) -> tuple[tuple[str, ...], Prediction | None]:
        """The modes of `modes` the worker runs in one jit first (harness/run/together.py),
        and the prediction, made here when needed: not those a known entry says jax goes
        wrong in on `p` (they would make the whole jit fail, or crash the worker), nor
        those it says may crash there (`crash_last`: they run last, alone)."""
        mine = together_modes(p, modes) if self.cfg.together else ()
        if not mine:
            return (), pred
        pred = pred if pred is not None else predict(p)
        if pred.error is not None:
            return (), pred
        entries, version = self.cfg.suppressions, self.run.jax_version
        crash = set(known_hang_modes(self.crashes, p, value_types(p)[0], mine, "crash")) if self.crashes else set()
        mine = tuple(m for m in mine if m not in crash and not known_trouble(entries, p, pred, version, m))
        return (mine if len(mine) > 1 else ()), pred

    def submit_derived(self) -> None:
        """The programs without their known bugs (see Run.record), checked like any other.
        While the sweep runs, like the sweep's own programs, only in the modes of theirs
        in which they bring a pair no program was sent with or one jax left unchecked
        (`claim`, lean; the sweep's draws stay blind to them), a costly mode's part cut
        to the outputs that bring it one: seed 0, 60 s, cold, the derived programs'
        cheap modes took 12.6 s of the workers' time while the sweep ran, against the
        sweep programs' own 24.8 s."""
        while self.run.derived.pending:
            q, modes = self.run.derived.pending.pop(0)
            if self.pool is None:
                self.run.record(check_program(q, modes))
                continue
            cut: dict[str, tuple[int, ...] | None] = {}
            queued = modes
            if self.sweeping:
                mine = claim(q, self.cfg, self.run.cells, modes, True, self.run.jax_version, derived=True)
                modes = tuple(m for m in modes if m in mine)
                cut = {m: self.run.cells.cut.pop((program_id(q), m), None) for m in modes if m in COSTLY_MODES}
            # a rewrite makes cells its parent lacks (Run.derived.new): in the run's other
            # modes too, where they are a pair no program was sent with. A mode the
            # parent's divergences did not name never ran them (fuzz seed 8, 60 s, cold: a
            # vmap_spmd rewrite put the axes of an int16 ppermute in mesh order, and
            # `ppermute|axes=several>1&dtype=int16` was checked in every mode but eager,
            # the parent's eager part being clean). Only those: the parent's own cells left
            # open in a mode are the draws' (the sweep's foci; claimed for every derived
            # program, seed 1's eager parts doubled and its late parts went unsent)
            extra = tuple(m for m in self.cfg.modes if m not in queued)
            checks = self.run.cells.checks  # (a derived program's pairs are never `scheduled`: open until checked)
            new = frozenset(c for c in self.run.derived.new.get(program_id(q), ()) if any((c, m) not in checks for m in extra))
            if extra and new:
                more = claim(q, self.cfg, self.run.cells, extra, True, self.run.jax_version, derived=True, only=new)
                cut.update({m: self.run.cells.cut.pop((program_id(q), m), None) for m in more if m in COSTLY_MODES})
                self.run.derived.modes.setdefault(program_id(q), set()).update(more)
                modes = tuple(m for m in self.cfg.modes if m in modes or m in more)
            if not modes:
                continue
            # a costly mode (eager) goes in a late part, without dead ops, sent by its worth
            # like any other (`best_late`): not ahead of the programs still to draw
            late = tuple(m for m in modes if m in COSTLY_MODES)
            for m in late:
                self.queue_late(q, m, cut.get(m))
            rest = tuple(m for m in modes if m not in late)
            if rest:
                # (like any program: modes a known entry says may crash last, those it says
                # may hang with their short limit; seed 3, 60 s: the program without a
                # crashing negative all_to_all held a zero-size tiled all_gather, and its
                # grad hung for the pool's 30 s. Never batched: its result would wait for
                # its batch to fill, after later programs')
                self._submit(q, rest, batch=False)

    def flush(self, size: int) -> None:
        assert self.pool is not None
        batch, self.queues[size] = self.queues.get(size, []), []
        if batch:
            self.wait_for_free_worker()
            self.pool.submit_batch([p for p, _ in batch], [_Batched(t) for _, t in batch])

    def wait_for_free_worker(self) -> None:
        assert self.pool is not None
        while self.pool.free() == 0:
            for c in self.pool.wait(1.0):
                self.handle(c)
                self.run.progress()

    def handle(self, c: Completed) -> None:
        """A finished job: a program's modes, a part of a split program, a batched jit
        result, a re-confirmation alone, or a probe run."""
        assert self.pool is not None
        tag = c.tag
        for o in c.observations:
            runs, secs = self.run.mode_time.get(o.mode, (0, 0.0))
            self.run.mode_time[o.mode] = (runs + 1, secs + o.elapsed_s)
        if isinstance(tag, _Rest):
            c = Completed(c.program, [*tag.kept, *c.observations], tag.tag, c.unrun)
            tag = c.tag
        if c.unrun:
            if self.cfg.budget_s is None or self.run.elapsed() <= self.cfg.budget_s:
                # a crash or hang kills the worker with the job's later modes: they run in
                # a job of their own (fuzz seed 28, 60 s, cold: a sweep program crashed in
                # gspmd, a known partial-manual all_gather abort, before vmap_spmd ran, and
                # the program without the all_gather lost the nested shard_map of its
                # result: `shard_map|dtype=bool` was never checked in vmap_spmd). Each
                # such job has fewer modes than the last: a crash in each ends them
                p, rest = c.program, c.unrun
                self.pool.submit(p, rest, tag=_Rest(tag, tuple(c.observations)),
                                 limit_s=KNOWN_HANG_LIMIT_S if self.hang_modes(p, rest) else None)
                return
            # (past the budget: Run.record checks them on the program without the known bug)
            self.run.unrun.setdefault(program_id(c.program), set()).update(c.unrun)
        if isinstance(tag, _Probe):
            self.probe_or_record(localise_values(tag.result, c.observations[0]), tag.parent)
        elif isinstance(tag, _Batched):
            res = evaluate(c.program, c.observations, self.parts[tag.token][2])
            if res.divergences:
                self.run.batch_reconfirmed += 1
                self.pool.submit(c.program, ("jit",), tag=_Part(tag.token))
            else:
                self.join(c.program, tag.token, c.observations, res)
        elif isinstance(tag, _Part):
            self.join(c.program, tag.token, c.observations)
        elif isinstance(tag, _Alone):
            self.finish(c.program, [*tag.kept, *c.observations], tag.pred, parent=tag.parent)
        elif isinstance(tag, _Predicted):
            self.finish(c.program, c.observations, tag.prediction)
        elif isinstance(tag, _Late):
            self.finish(c.program, c.observations, parent=tag.parent)
        else:
            self.finish(c.program, c.observations)

    def join(self, p: Program, token: int, obs: list[Observation], res: CheckResult | None = None) -> None:
        """`res`: these observations already evaluated (reused when they are all there is)."""
        left, have, pred = self.parts[token]
        if left == 1:
            del self.parts[token]
            self.finish(p, have + obs, pred, res if not have else None)
            return
        self.parts[token] = (left - 1, have + obs, pred)

    def finish(self, p: Program, observations: list[Observation], pred: Prediction | None = None,
               res: CheckResult | None = None, parent: str | None = None) -> None:
        """`parent`: `p` is a late part of the program with that id (`_Late`). A divergence
        of a mode run together with others in one jit is never reported as it is: those
        modes run again alone first (`_Alone`), and their results decide."""
        assert self.pool is not None
        res = res if res is not None else evaluate(p, observations, pred)
        wrong = {m for d in res.divergences for m in d.mode.split(",")}
        again = tuple(o.mode for o in observations if o.together and o.mode in wrong)
        if again:
            self.run.batch_reconfirmed += 1
            kept = tuple(o for o in observations if o.mode not in again)
            self.pool.submit(p, again, tag=_Alone(kept, res.prediction, parent))
            return
        self.probe_or_record(res, parent)

    def probe_or_record(self, res: CheckResult, parent: str | None) -> None:
        """Submit the next probe run `res` needs (one per batch member its value
        divergences need, `probe_mode`), or record it when it needs none."""
        assert self.pool is not None
        probe = probe_mode(res)
        if probe is None:
            self.run.record(res, parent=parent)
            return
        if not res.probed:
            self.run.save_case(res)  # on disk before the probe run, in case anything dies
        self.pool.submit(probe.program, (probe.mode,), tag=_Probe(res, parent))

    def drain(self) -> None:
        """Everything still queued or running, derived programs included."""
        if self.pool is None:
            self.submit_derived()
            return
        for size_ in list(self.queues):
            self.flush(size_)
        while self.pool.busy() or self.parts or self.run.derived.pending or self.late:
            self.submit_derived()
            if self.late:  # (the last ones, and a derived program's costly mode: a late part of its own)
                if self.out_of_time:
                    self.run.late_dropped += len(self.late)
                    self.late.clear()
                else:
                    self.submit_late(everything=True)
            for c in self.pool.drain():
                self.handle(c)
            if self.parts and not self.pool.busy():
                break  # a part was lost (cannot happen unless a worker misbehaved)


def _generate(sched: _Scheduler, fixed: Iterable[Program] | None, stats: list[dict[str, Any]]) -> None:
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
            print(f"replayed {sched.run.database_replayed} saved examples from the example database first",
                  file=cfg.progress, flush=True)
    if fixed is not None:
        for p in fixed:
            sched.check(p)
        return
    if cfg.sweep:
        # every cell of the table first, a few per program (harness/campaign/sweep.py
        # `sweep_groups`), their costly modes once the sweep is out
        sched.limit, sched.sweeping = cfg.max_examples, True
        run = sched.run

        def trouble(p: Program) -> dict[str, frozenset[int]]:
            return error_trouble(cfg, p, run.jax_version)

        def lost(p: Program) -> dict[str, frozenset[str]]:
            return raise_lost(cfg, p, run.jax_version)

        sweep = Sweep(cfg.seed, cfg.defects, cfg.invalid, stats.append, run.cells, cfg.modes, trouble=trouble, lost=lost)

        def swept() -> None:
            sched.sweeping = True
            for d in sweep.draws():
                sched.check(d.program)
                run.swept_ids.add(program_id(d.program))
            sched.sweeping = False

        swept()
        print(f"swept {len(sched.run.swept_ids)} programs (every cell of the table), then Hypothesis' stream",
              file=cfg.progress, flush=True)

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
    a new one and left open."""
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
    sched = _Scheduler(run, pool)
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
        sched.drain()
    run.progress(force=True)
    try:
        check_entry_cases(run, pool)
        if cfg.minimize_budget_s > 0:
            minimize_buckets(run, pool)
        else:
            share_failures(run)
    finally:
        if pool is not None and own_pool:
            pool.close()
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


def cpu_runnable_part(p: Program) -> Program | None:
    """`p` without the outputs that an op XLA:CPU cannot run by value reaches (and the
    ops only they need), when `p` is valid, holds such an op, and keeps at least one
    output that an op computes; else None. (XLA:CPU, as `cells.applies` assumes: the
    workers' backend.)"""
    from programs.graph import cone, slice_outputs
    from programs.ops import NO_CPU_VALUES

    if p.defect is not None:
        return None
    n_in = len(p.inputs)
    bad = {i for i, op in enumerate(p.body) if {o.kind for o in op.with_nested()} & NO_CPU_VALUES}
    if not bad:
        return None
    keep = tuple(k for k, o in enumerate(p.outputs) if not (cone(p, o) & bad))
    if not keep or not any(o >= n_in for o in (p.outputs[k] for k in keep)):
        return None
    if typed_cells(p)[1]:
        return None  # (the oracle expects an error: the error is the whole program's)
    return slice_outputs(p, keep)


# Value modes that cost far more than the others: eager shard_map compiles every
# primitive of the body on its own (measured on 80 seed-0 programs, all modes, one
# process: eager 554 ms a program, jit 25, gspmd 21, grad 19, lowering 17, vmap 16).
# The share chosen by program id runs them on COSTLY_SHARE of its programs; a program
# that brings a cell new to such a mode runs it there always.
# A mode a known entry says may hang on a program (a `timeout` signature whose features
# it holds) runs with this limit instead of the pool's timeout_s (30 s): a hang is still
# observed, and explained, but costs a worker this long. Measured with the fast codegen,
# 2 cores under a run's load: the slowest grad of 169 seed-6 programs took 0.49 s with
# an empty compilation cache (grad_remat 0.34 s), 0.27 s warm; seed 4, 0.27 s. The
# known hangs (negative-scatter-dimension: MLIR's verifier loops) had cost 8 s each,
# one or two a minute at seeds 2 and 4. Four cold 60 s runs (seeds 0, 1, 22, 24), 466
# grad and 466 grad_remat runs: the slowest took 0.59 and 0.38 s (99th percentile 0.33
# and 0.28 s), and three known hangs held a worker at 4 s each, its core idle (a 30 s
# hang left the machine 27-48% idle): 2 s is still 3.4 times the slowest.
KNOWN_HANG_LIMIT_S = 2.0
COSTLY_MODES = frozenset({"eager"})
COSTLY_SHARE = 0.25
LATE_BOUND = 2  # late parts (a program's costly modes) waiting before they go out first
# During the sweep, one late part goes out per SWEEP_LATE_EVERY programs. Measured (seed 0,
# 60 s, 2 cores, compound sweep of 197 programs), (cell, mode) pairs checked by 60 s of
# 9044 reachable: one per 5, 7792 (176 swept, eager 464); one per 10, 7838 (all swept,
# eager 309); none, 7643 (eager 126). A sweep program's cheap modes bring ~40 new pairs in
# ~0.4 s, its eager part ~15 in ~1 s, so eager waits for most of the sweep.
SWEEP_LATE_EVERY = 10


def error_trouble(cfg: RunConfig, p: Program, jax_version: str) -> dict[str, frozenset[int]]:
    """Per mode of the run, the ops of the invalid program `p` at which a known entry of
    the run says jax (of `jax_version`, the workers') raises another error than the one
    the oracle predicts, or none (harness/judge/known.py `error_trouble_modes`; a mode
    not there: no trouble): what the sweep's draws by error and the value tier's claim
    (`tier_modes`) both ask."""
    if not cfg.suppressions:
        return {}
    return error_trouble_modes(cfg.suppressions, p, value_types(p)[0], jax_version, cfg.modes,  # type: ignore[return-value]
                               error_kind(p))


def raise_lost(cfg: RunConfig, p: Program, jax_version: str) -> dict[str, frozenset[str]]:
    """Per mode, the cells of the valid program `p` no run of it checks there, as the
    run's known entries say (harness/campaign/cells.py `lost_cells`): what the value
    tier's claim leaves open and the sweep's draws hold only in the other modes."""
    if not cfg.suppressions:
        return {}
    return lost_cells(p, known_raise_ops(cfg.suppressions, p, value_types(p)[0], jax_version, cfg.modes))


def claim(p: Program, cfg: RunConfig, ledger: CellLedger, modes: tuple[str, ...], lean: bool = False,
          jax_version: str | None = None, derived: bool = False, only: frozenset[str] | None = None) -> tuple[str, ...]:
    """The modes of `modes` the value tier runs `p` in for its cells (`CellLedger.claim`),
    claimed: none where it brings no pair no program before it was sent with. Only a
    valid program checks a cell by value; an invalid one checks its cells by error
    (`CELL|by_error`, as Run.record counts them). See `tier_modes`. `derived`: a program
    the results gave (without a known bug), not the draws: neither its cells nor its
    pairs go where the sweep's draws read them (`CellLedger.seen`, `scheduled`). `only`:
    those of its cells alone."""
    fails = typed_cells(p)[1]
    cells = checked_cells(p) if only is None else checked_cells(p) & only
    if not derived:
        ledger.seen |= cells
    lost = None if fails or jax_version is None else raise_lost(cfg, p, jax_version)
    if fails and jax_version is not None:
        # in a mode jax is known to answer with another error at some ops, the program
        # checks none of its cells by error but theirs (the entry blocks those); in the
        # other modes, all of them (seed 2, 60 s: a program by error whose eager and grad
        # troubles were at ops of three kinds claimed nothing at all, and its
        # reduce_sum|wrap=scan|by_error, new in the stream at 51 s, was missed in the
        # seven modes that had no trouble with it)
        trouble = error_trouble(cfg, p, jax_version)
        if trouble:
            lost = {m: cells - trouble_cells(p, ops) for m, ops in trouble.items()}
    # per output, the cells it brings (an invalid program's by error): a costly mode runs
    # the outputs that bring it new ones
    parts = tuple(cs & cells for cs in checked_output_cells(p))
    return ledger.claim(p, cells, modes, COSTLY_MODES, parts, lean, lost, schedule=not derived)


def tier_modes(p: Program, cfg: RunConfig, ledger: CellLedger | None = None, lean: bool = False,
               jax_version: str | None = None) -> tuple[str, ...]:
    """Tiers: every program is checked abstractly (errors, shapes, dtypes, varying axes:
    no compile); every value mode also runs a program that brings a configuration cell
    (harness/campaign/cells.py; an invalid program's cells by error) no earlier
    value-tier program had, and a share chosen by program id. A costly mode
    (`COSTLY_MODES`) runs a claimed program only where it brings that mode a new cell,
    and a quarter of the share. While the sweep runs (`lean`), a claimed program runs
    only the modes it brings a new cell (and abstract): the sweep is there to reach
    every (cell, mode) pair soon, the stream after it runs every mode. It depends on the
    programs drawn so far, in order, and on which of their claims came back unchecked
    (jax raised in that mode: `CellLedger.reopen`, claimed again), never on what the
    programs are: the same seed draws the same programs.

    With `jax_version` (the workers'), an invalid program that a known entry says jax
    answers with another error, or none, at some ops in some modes (`error_trouble`)
    claims, in those modes, only those ops' own cells (`trouble_cells`: the entry
    blocks them): it checks none of the others by error there, and they stay open for a
    later program (the sweep draws their foci again). In the other modes it claims them
    all."""
    if block_bytes(p) >= LARGE_BLOCK_BYTES:  # a large program: the transport's chunked path, not every mode
        return tuple(m for m in cfg.modes if m in LARGE_MODES)
    if cfg.value_share >= 1.0 or "abstract" not in cfg.modes:
        return cfg.modes
    if ledger is not None:
        claimed = claim(p, cfg, ledger, cfg.modes, lean, jax_version)
        if claimed:
            return claimed
    h = int(program_id(p), 16) % 10000
    if h < cfg.value_share * 10000:
        costly = h < cfg.value_share * COSTLY_SHARE * 10000
        return tuple(m for m in cfg.modes if costly or m not in COSTLY_MODES)
    return ("abstract",)
