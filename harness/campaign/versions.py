"""Qualification's data across versions: a case, its verdict on one jax (`Cell`), one
interpreter's column of verdicts (`Column`), and what changed between versions: the
first-to-last changes, the regression ranges in version order, and the known entries a
version no longer shows."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.judge.known import case_path
from harness.report.qualify_report import VERDICTS
from programs.model import Program


@dataclass(frozen=True)
class Case:
    name: str  # path under the corpus without .json, or fuzz/s<seed>-<i>-<id>
    program: Program
    reason: str = ""
    source: str = "corpus"  # corpus | fuzz


@dataclass
class Cell:
    """One case on one jax version."""

    verdict: str
    signatures: list[str] = field(default_factory=list)  # unexplained divergences
    known: list[str] = field(default_factory=list)  # ids of the known divergences seen
    unsupported: list[str] = field(default_factory=list)  # why a mode did not run it
    message: str = ""  # the first unexplained divergence, in words
    case_file: str = ""  # REPORT/cases/... for a failing cell
    statuses: dict[str, str] = field(default_factory=dict)  # mode -> ok/error/crash/timeout/unsupported

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "statuses": self.statuses,
            "signatures": self.signatures,
            "known": self.known,
            "unsupported": self.unsupported,
            "message": self.message,
            "case_file": self.case_file,
        }


@dataclass
class Column:
    """One interpreter: its jax and every case's verdict on it."""

    label: str
    python: str
    jax_version: str = "?"
    cells: dict[str, Cell] = field(default_factory=dict)
    elapsed_s: float = 0.0

    def counts(self) -> dict[str, int]:
        c = Counter(cell.verdict for cell in self.cells.values())
        return {v: c.get(v, 0) for v in VERDICTS}


# verdicts that show a bug on that version (known: the bug is a known entry's)
BAD = frozenset({"fail", "known"})


def changes(cases: list[Case], first: Column, last: Column) -> dict[str, list[dict[str, Any]]]:
    """Cases whose verdict differs between the first and the last version: regressions
    (pass -> fail: these set the exit code), fixes (fail -> pass or known), and other
    changes (to or from unsupported or known)."""
    out: dict[str, list[dict[str, Any]]] = {"regressions": [], "fixes": [], "other": []}
    for c in cases:
        a, b = first.cells.get(c.name), last.cells.get(c.name)
        if a is None or b is None or a.verdict == b.verdict:
            continue
        row = {
            "case": c.name,
            "reason": c.reason,
            "first": a.verdict,
            "last": b.verdict,
            "signatures": b.signatures if b.verdict == "fail" else a.signatures,
            "message": b.message if b.verdict == "fail" else a.message,
        }
        if a.verdict == "pass" and b.verdict == "fail":
            out["regressions"].append(row)
        elif a.verdict == "fail" and b.verdict in ("pass", "known"):
            out["fixes"].append(row)
        else:
            out["other"].append(row)
    return out


def version_key(col: Column) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", col.jax_version)) or (0,)


def _bug_modes(cell: Cell) -> set[str]:
    """The modes a cell's bug shows in: its unexplained divergences' modes (fail), or,
    for a known bug (whose modes the cell does not keep), every mode it ran."""
    modes = {s.split("|")[1] for s in cell.signatures if s.count("|") == 2}
    return modes or {m for m, st in cell.statuses.items() if st != "unsupported"}


def _unran(good: Cell, bad: Cell) -> list[str]:
    """The modes the bad cell's bug shows in that the good cell's jax could not run: its
    pass says nothing there (jax 0.9.2 passes an unreduced program whose eager mode it
    cannot run; 0.10.2's bug is in eager)."""
    return sorted(m for m in _bug_modes(bad) if good.statuses.get(m) == "unsupported")


def ranges(cases: list[Case], cols: list[Column]) -> list[dict[str, Any]]:
    """For each case that shows a bug on some version (fail, or known: a known entry
    names the bug): where it came and went, in version order. Each transition between
    neighbouring versions that ran it (unsupported ones skipped) is 'broken in B (passes
    on A)' or 'fixed by B (fails on A)', marked '(known)' where the bad side's bug is a
    known entry's; where the passing version could not run a mode the bug shows in
    (`_unran`), 'first seen in B (passes on A, which could not run M)' or 'not seen by B,
    which could not run M', since its pass proves nothing there. Also whether the last
    version fails (unexplained) a case that an earlier one passes in the modes the failure
    is in (the exit code)."""
    ordered = sorted(cols, key=version_key)
    out = []
    for c in cases:
        seen = [(col.jax_version, col.cells[c.name].verdict) for col in ordered
                if c.name in col.cells and col.cells[c.name].verdict not in ("unsupported", "error")]
        if not any(v in BAD for _, v in seen):
            continue
        cells = {col.jax_version: col.cells[c.name] for col in ordered if c.name in col.cells}
        events = []
        for (va, a), (vb, b) in zip(seen, seen[1:]):
            if a not in BAD and b in BAD:
                unran = _unran(cells[va], cells[vb])
                events.append({"event": "broken" if not unran else "seen", "in": vb, "last_good": va, "known": b == "known", "unran": unran})
            elif a in BAD and b not in BAD:
                unran = _unran(cells[vb], cells[va])
                events.append({"event": "fixed" if not unran else "unseen", "by": vb, "last_bad": va, "known": a == "known", "unran": unran})
        last_fails = bool(seen) and seen[-1][1] == "fail"

        def words(e: dict[str, Any]) -> str:
            k = " (known)" if e["known"] else ""
            could_not = f", which could not run {', '.join(e['unran'])}" if e["unran"] else ""
            if e["event"] in ("broken", "seen"):
                return f"{'broken' if e['event'] == 'broken' else 'first seen'} in {e['in']}{k} (passes on {e['last_good']}{could_not})"
            return f"{'fixed' if e['event'] == 'fixed' else 'not seen'} by {e['by']}{could_not} (fails on {e['last_bad']}{k})"

        text = "; ".join(words(e) for e in events)
        if not events:
            k = " (known)" if all(v == "known" for _, v in seen) else ""
            text = f"fails on every version that ran it{k} ({seen[0][0]} .. {seen[-1][0]})"
        last = cells[seen[-1][0]] if seen else None
        passed_there = any(v == "pass" and last is not None and not _unran(cells[ver], last) for ver, v in seen[:-1])
        out.append({"case": c.name, "events": events, "text": text,
                    "last_fails_after_pass": last_fails and passed_there})
    return out


def entries_fixed(sups: list[Any], col: Column, corpus: str) -> list[str]:
    """The known entries whose range covers this jax but whose own case (when it is in
    the corpus) no longer shows their bug here: fixed on this version, stale entries."""
    if not corpus:
        return []
    root = Path(corpus).resolve()
    out = []
    for e in sups:
        try:
            name = case_path(e).resolve().relative_to(root).with_suffix("").as_posix()
        except ValueError:
            continue  # its case is not in this corpus
        cell = col.cells.get(name)
        if cell is not None and e.covers(col.jax_version) and e.id not in cell.known:
            out.append(e.id)
    return out
