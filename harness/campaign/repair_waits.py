"""Divergences that wait for a repaired program: differential root-causing in a run.

A checked program's divergence that no known entry's signature matches may still be a
known bug under another guise (a wrong shape raised at the op after the buggy one, a
mode the entry does not list). When the program also holds known bugs, its program
without them (harness/campaign/derived.py, a rewrite or the program without dead buggy
ops: every output kept) is checked anyway; the divergence waits for that result:

- the repaired program ran in the divergence's modes and shows nothing new there (at
  its output, or anywhere for a divergence of no output): it is known, by the entry that
  explains what the repaired program still shows there, else the first entry repaired;
- the repaired program shows something new there: the divergence is new;
- what the repaired program shows there waits in turn for its own repaired program: the
  divergence waits with it (each repair removes at least one known bug, so this ends);
- the run ends first: it is new (`Run.settle_waits`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.judge.check import CheckResult
from harness.judge.compare import Divergence
from harness.judge.known import Explained, KnownDivergence
from harness.judge.repair import keeps_outputs, overlaps
from programs.model import Program
from programs.serialize import program_id


@dataclass(frozen=True)
class Waiting:
    """A divergence of program `parent` (its case at `path`) waiting for a repaired
    program; `entries`: the known entries its parent's repair removed."""

    divergence: Divergence
    parent: str
    path: Path
    from_corpus: bool
    entries: tuple[KnownDivergence, ...]


class RepairWaits:
    """The divergences waiting, by the id of the repaired program they wait for."""

    def __init__(self) -> None:
        self.by_program: dict[str, list[Waiting]] = {}

    def __len__(self) -> int:
        return sum(len(ws) for ws in self.by_program.values())

    def defer(self, ws: Sequence[Waiting], repaired: Sequence[tuple[Program, tuple[str, ...]]], p: Program
              ) -> list[Waiting]:
        """Each of `ws` waits for the repaired programs of `p` (queued in their modes)
        that keep its outputs and run in one of its modes; returns those that wait for
        none (to be filed now)."""
        left = []
        for w in ws:
            targets = [q for q, modes in repaired
                       if keeps_outputs(q, p) and set(modes) & set(w.divergence.mode.split(","))]
            for q in targets[:1]:
                self.by_program.setdefault(program_id(q), []).append(w)
            if not targets:
                left.append(w)
        return left

    def settle(self, res: CheckResult, explained: Sequence[Explained], deferred: Sequence[Divergence]
               ) -> list[tuple[Waiting, KnownDivergence | None]]:
        """The waits of the repaired program `res` is a result of, decided by it: each
        with the entry that explains it, or None (new). `deferred`: its own divergences
        that now wait for its own repaired programs (`defer` ran first): a wait that
        overlaps one waits with it. A wait on a mode this result did not run is kept."""
        qid = program_id(res.program)
        ws = self.by_program.pop(qid, [])
        ran = {o.mode for o in res.observations if o.status != "unsupported"}
        decided: list[tuple[Waiting, KnownDivergence | None]] = []
        kept: list[Waiting] = []
        for w in ws:
            d = w.divergence
            if not ran & set(d.mode.split(",")):
                kept.append(w)
            elif any(x.entry is None and overlaps(d, x.divergence) and x.divergence not in deferred for x in explained):
                decided.append((w, None))
            elif (target := self._target_of(qid, [e for e in deferred if overlaps(d, e)])) is not None:
                self.by_program[target].append(w)
            else:
                # (the entry repaired only where it is a bug's: harness/judge/repair.py _removed_by)
                fallback = w.entries[0] if w.entries and not w.entries[0].policy else None
                by = next((x.entry for x in explained if x.entry is not None and overlaps(d, x.divergence)), fallback)
                decided.append((w, by))
        if kept:
            self.by_program[qid] = kept
        return decided

    def _target_of(self, parent: str, divs: Sequence[Divergence]) -> str | None:
        """The repaired program one of `divs` (divergences of program `parent`) waits for."""
        for target, ws in self.by_program.items():
            if any(w.parent == parent and w.divergence in divs for w in ws):
                return target
        return None

    def pop_all(self) -> list[Waiting]:
        """Every wait left (the run is over: none will be decided)."""
        out = [w for ws in self.by_program.values() for w in ws]
        self.by_program.clear()
        return out
