"""A run's state: the buckets, the counts behind the summary, the saving of every failing
program (to disk before anything else), and the live progress line. `Run.record` is where
each checked program's divergences are explained by the known entries (by cause) and where
the program without its known bug is queued to be checked too."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import KeysView, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.campaign.cells import CellLedger, by_error, checked_cells, ops_cells, program_cells
from harness.campaign.config import NO_LIMIT, RunConfig
from harness.judge.check import CheckResult
from harness.judge.compare import Divergence, DivergenceKind
from harness.judge.known import (
    Explained,
    KnownDivergence,
    checked_in_full,
    derived_program,
    error_trouble_modes,
    explain_all,
    explains,
    raise_entries,
)
from harness.report.markup import write as atomic_write
from harness.run import compat
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


def _entry_cells(e: KnownDivergence, res: CheckResult, types: list[tuple[tuple[int, ...], str]], cells: frozenset[str]) -> frozenset[str]:
    """The cells of the ops a known entry's op features hold on in `res`'s program (`cells`,
    the program's own, for an entry scoped by the program alone), by error for an invalid
    program: what the entry blocks when jax diverged as it explains."""
    p = res.program
    own = ops_cells(p, e.feature_ops(p, res.prediction.value_types), types) if e.op_features else cells
    return own if res.prediction.error is None else by_error(own)


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
        self.swept_ids: set[str] = set()  # the sweep's programs (drawn: in generated_ids too)
        self.late_dropped = 0  # late parts (costly modes) not run: the budget ended first
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
        # known divergences explain only what they cause: the program without the known
        # bugs (each entry's rewrite, or the outputs no buggy op reaches) is checked too
        self.derived_pending: list[tuple[Program, tuple[str, ...]]] = []
        # derived program id -> the cells it checks that its parent does not (a rewrite's)
        self.derived_new: dict[str, frozenset[str]] = {}
        # derived programs (not counted in programs_run): id -> the modes it was queued in
        self.derived_modes: dict[str, set[str]] = {}
        self.derived_checked = 0
        self.with_known = 0  # programs (drawn or derived) with a divergence a known entry explains
        self.in_full_by_rewrite = 0  # ... checked in full all the same (harness/judge/known.py checked_in_full)
        self.entry_matches: Counter[str] = Counter()  # entry id -> divergences it explained
        self.entry_shows: dict[str, bool] = {}  # entry id -> its own case showed the bug here
        self.cells = CellLedger.new()  # configuration cells: scheduled, and checked per mode
        # a program whose costly modes run in a late part (harness/campaign/fuzz.py) is
        # recorded once per part: counted once, its case holding every part's divergences
        self.recorded: dict[str, int] = {}  # program id -> its index (self.n) when first recorded
        self.counted: set[tuple[str, str]] = set()  # (what, program id): "divergent", "failing", "known"
        self.case_divergences: dict[str, list[Any]] = {}  # program id -> the divergences its case holds
        # program id -> the modes a crash or hang in an earlier mode of its job kept from
        # running (harness/run/pool.py `Completed.unrun`): `record` reopens their cells and
        # checks them on the program without the crash's known bug
        self.unrun: dict[str, set[str]] = {}

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

    def save_case(self, res: CheckResult, from_corpus: bool = False) -> Path:
        """The failing program goes to disk first, named by its program id (so a later
        re-labelling overwrites it), atomically: into the corpus (when there is one)
        and then the report, so a case in the report is always in the corpus too. A
        program recorded in parts keeps the divergences of its other parts' modes."""
        pid = program_id(res.program)
        name = f"{pid}.json"
        modes = {d.mode for d in res.divergences}
        divs = [d for d in self.case_divergences.get(pid, []) if d.mode not in modes] + list(res.divergences)
        self.case_divergences[pid] = divs
        doc = case_document(res.program, divs, self.jax_version)
        if self.cfg.corpus is not None and not from_corpus:
            atomic_write(self.cfg.corpus / name, doc)
        path = self.cfg.report_dir / "cases" / name
        atomic_write(path, doc)
        return path

    @property
    def derived_ids(self) -> KeysView[str]:
        """The derived programs' ids."""
        return self.derived_modes.keys()

    def is_known(self, q: Program) -> bool:
        """Whether `q` was already checked, drawn or derived."""
        return program_id(q) in self.checked or program_id(q) in self.derived_ids

    def queue_derived(self, q: Program, parent: Program, modes: tuple[str, ...]) -> None:
        """Check `q`, a program derived from `parent` (without its known bugs, or its
        part XLA:CPU can run), in `modes`; counted in derived_checked, not programs_run,
        and placed at its parent in the stream."""
        self.derived_modes.setdefault(program_id(q), set()).update(modes)
        new = checked_cells(q) - checked_cells(parent)
        if new:
            self.derived_new[program_id(q)] = self.derived_new.get(program_id(q), frozenset()) | new
        self.stream_index.setdefault(program_id(q), self.stream_index.get(program_id(parent), -1))
        self.derived_pending.append((q, modes))

    def _block_known(self, res: CheckResult, explained: Sequence[Explained], checked: list[str],
                     types: list[tuple[tuple[int, ...], str]], cells: frozenset[str]) -> None:
        """The cells a mode did not check because jax diverged there as a known entry
        explains (every divergence of that mode explained): those of the ops the entry's
        op features hold on (`cells`, the program's own as `record` counts them, for an
        entry scoped by the program alone). The summary gives them as why a cell no
        program checked was not checked."""
        p, valid = res.program, res.prediction.error is None
        mine: dict[str, frozenset[str]] = {}  # entry id -> the cells it blocks in this program
        raised = []
        for m in {o.mode for o in res.observations if o.mode != "probe"} - set(checked):
            here = [x.entry for x in explained if x.divergence.mode == m]
            if not here or any(e is None for e in here):
                continue
            raised.append(m)
            # a crash or hang names no op: every entry that explains it (each says jax may
            # crash or hang at its own ops: two all_to_all entries, a negative split_axis and
            # a negative concat_axis, both in one program) blocks its ops' cells, not only
            # the entry `find` put it on
            for x in explained:
                if x.divergence.mode == m and x.divergence.kind in (DivergenceKind.CRASH, DivergenceKind.TIMEOUT):
                    here += [e for e in self.cfg.suppressions
                             if e not in here and explains(e, x.divergence, p, res.prediction, self.jax_version)]
            for e in here:
                assert e is not None
                if e.id not in mine:
                    mine[e.id] = _entry_cells(e, res, types, cells)
                self.cells.block(mine[e.id], m, e.id)
        if valid and raised:
            # jax raised at the first op at fault, and never reached the others a known entry
            # says it raises at in that mode: their cells are blocked by their entries as
            # well (no program checks them there; the program without the bugs drops or
            # rewrites them: fuzz seed 3, 60 s, a sweep program of negative-axis all_to_alls
            # left `all_to_all|split_axis=middle&concat_axis=negative` missed in every mode)
            for e, ms, ops in raise_entries(self.cfg.suppressions, p, res.prediction.value_types, self.jax_version, raised):
                if e.op_features:  # (an entry of program features alone names no op)
                    for m in ms:
                        self.cells.block(ops_cells(p, ops, types), m, e.id)
        if not valid and raised:
            # so with an invalid program: the ops another entry says jax answers with
            # another error, or none, at in that mode (the value tier claimed their cells
            # by error there as blocked by it: fuzz.py `claim`) are blocked by it (fuzz
            # seed 7, 60 s: a program by error of a grouped pmin, which jax does not check,
            # held four ragged_all_to_all cells by error that
            # ragged-all-to-all-typed-as-its-output-buffer names; abstract and lowering
            # missed the error, explained at the pmin, and the four were left missed)
            assert res.prediction.error is not None  # (invalid: the oracle predicts an error)
            kind = res.prediction.error.kind.value
            for e in self.cfg.suppressions:
                for m, ops in error_trouble_modes([e], p, res.prediction.value_types, self.jax_version, raised, kind).items():
                    self.cells.block(by_error(ops_cells(p, ops, types)), str(m), e.id)

    def record(self, res: CheckResult, from_corpus: bool = False, parent: str | None = None) -> None:
        """`parent`: `res` is a late part of the program with that id (the program's
        costly modes, maybe on the program cut to some of its outputs:
        harness/campaign/fuzz.py), the same program again: counted once."""
        p = res.program
        pid = parent or program_id(p)
        derived = pid in self.derived_ids
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
            return
        path = self.save_case(res, from_corpus)  # (again, if a probe run re-labelled it)
        explained = explain_all(self.cfg.suppressions, res.divergences, p, res.prediction, self.jax_version)
        if not derived and self._first("divergent", pid):
            self.n_with_divergences += 1
        if any(x.entry is None for x in explained) and self._first("failing", pid):
            self.n_failing_programs += 1  # (a derived program's new divergence is its parent's failure)
        self._block_known(res, explained, checked, types, own)
        self._block_stopped(res, explained, unrun, types, own)
        used = list({x.entry.id: x.entry for x in explained if x.entry is not None}.values())
        if used:
            q = derived_program(used, p, res.prediction)
            if not derived and self._first("known", pid):
                self.with_known += 1
                self.in_full_by_rewrite += checked_in_full(explained, p, q)
            self._queue_derived_per_mode(res, explained, unrun)
        for x in explained:
            d, sup = x.divergence, x.entry
            if sup is not None:
                self.entry_matches[sup.id] += 1
            key = (d.signature, sup.id if sup else None)
            b = self.buckets.get(key)
            if b is None:
                b = Bucket(d.signature, d.kind.value, d.mode, case=str(path), message=d.message,
                           suppressed_by=sup.id if sup else None, new=not from_corpus and sup is None,
                           first_seen_at=self.n, first_seen_s=round(self.elapsed(), 2),
                           first_seen_index=-1 if from_corpus else self.stream_index.get(pid, -1))
                self.buckets[key] = b
                if sup:
                    print(f"[known: {sup.id}] {d.signature}", file=self.cfg.progress)
                else:
                    print(f"\n[NEW] {d.signature}: {d.message[:300]}\n  saved {path}", file=self.cfg.progress)
            b.count += 1
            if len(b.programs) < 5:
                b.programs.append(str(path))

    def _block_stopped(self, res: CheckResult, explained: Sequence[Explained], unrun: set[str],
                       types: list[tuple[tuple[int, ...], str]], cells: frozenset[str]) -> None:
        """The modes a crash or hang in another mode kept from running (`unrun`), where a
        known entry that explains it says jax fails in them too (a crash, hang or raise
        signature naming the mode): its ops' cells there are given that as why no program
        checked them (the program without the bug rewrites or drops those ops; seed 0: a
        sweep program of negative concat_axis all_to_alls crashed in jit before vmap_spmd
        ran, and vmap_spmd's negative concat_axis cells were left missed)."""
        if not unrun:
            return
        for x in explained:
            d = x.divergence
            if d.kind not in (DivergenceKind.CRASH, DivergenceKind.TIMEOUT):
                continue
            for e in self.cfg.suppressions:
                if not explains(e, d, res.program, res.prediction, self.jax_version):
                    continue
                for m in unrun:
                    if any(pat.kind in ("crash", "timeout", "unexpected_error") and (pat.modes is None or m in pat.modes)
                           for pat in e.patterns):
                        self.cells.stop(_entry_cells(e, res, types, cells), m, e.id, d.mode)

    def _queue_derived_per_mode(self, res: CheckResult, explained: Sequence[Explained], unrun: set[str]) -> None:
        """The program without its known bugs, per mode: each mode's derived program
        drops only the bugs of the entries that explained its own divergences (an
        entry for a grad-only bug at an op does not cost vmap the rest of the program),
        and runs in the modes whose entries give that same program. A mode a crash or
        hang kept from running (`unrun`) goes with the mode it happened in. A rewrite
        checks the rewritten program whole: in every mode the program ran in."""
        p = res.program
        ran = tuple(dict.fromkeys(o.mode for o in res.observations if o.mode != "probe"))
        per_mode: dict[str, dict[str, KnownDivergence]] = {}
        for x in explained:
            # (a mode disagreement is put on the entry of the program's first other
            # divergence, whatever its mode: the modes' own divergences say which is theirs)
            if x.entry is not None and x.divergence.kind != DivergenceKind.MODE_DISAGREEMENT:
                for m in x.divergence.mode.split(","):
                    if m in ran:
                        per_mode.setdefault(m, {})[x.entry.id] = x.entry
        for o in res.observations:
            if o.status in ("crash", "timeout") and o.mode in per_mode:
                for m in unrun:
                    per_mode.setdefault(m, {}).update(per_mode[o.mode])
        groups: dict[str, tuple[Program, set[str]]] = {}
        for m, entries in per_mode.items():
            q = derived_program(list(entries.values()), p, res.prediction)
            if q is None or program_id(q) in self.checked:
                continue
            modes = groups.setdefault(program_id(q), (q, set()))[1]
            modes.add(m)
            if any(e.rewrite is not None for e in entries.values()):
                modes.update(ran)
        for q, modes in groups.values():
            # a derived program already queued runs again only in the modes it was not
            # queued in: a costly mode's late part (eager) raises long after the other
            # modes' part gave the same derived program (fuzz seed 0, 60 s: `mul|wrap=cond`
            # never checked in eager, its program's derived one run in every other mode)
            new = modes - self.derived_modes.get(program_id(q), set())
            if new:
                self.queue_derived(q, p, tuple(m for m in dict.fromkeys((*self.cfg.modes, *ran)) if m in new))

    def _first(self, what: str, pid: str) -> bool:
        """Whether program `pid` is counted as `what` for the first time (and count it)."""
        key = (what, pid)
        if key in self.counted:
            return False
        self.counted.add(key)
        return True

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
            f"[{self.n:>5}{'' if self.cfg.max_examples >= NO_LIMIT else f'/{self.cfg.max_examples}'}] {rate:5.1f} programs/s, "
            f"{new} new / {len(self.buckets) - new} known buckets, {now:.0f}{budget}"
        )
        if live:
            print(f"\r{line}\x1b[K", end="\n" if force else "", file=self.cfg.progress, flush=True)
        else:
            print(line, file=self.cfg.progress, flush=True)
