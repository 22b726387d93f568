"""The qualification summary as a type: what `shardfuzz qualify` hands to every renderer.

`qualify.json`, the console summary, `qualify.junit.xml` and `qualify.html` all read one
`QualifySummary` (built by harness/campaign/qualify.py), as a fuzz run's reports read one
`RunSummary` (summary.py). The JSON form is written and read through the same type
(`to_dict` / `from_dict`); `from_dict` checks every field it reads and raises
SummaryFormatError naming the first one that is wrong (`versions[1].counts.fail: ...`), so
that `qualify --rejudge` stops on a damaged qualify.json before it judges anything.

Schema 1. A version's counts may lack `error` (reports written before shardfuzz's own
crash on a case became an `error` cell): it reads as 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from programs.errors import SummaryFormatError

QUALIFY_SCHEMA = 1

# error: shardfuzz could not judge the case there (its oracle or judge crashed: a shardfuzz
# bug, never a jax verdict; the traceback is in REPORT/internal-errors/)
VERDICTS = ("pass", "fail", "known", "unsupported", "error")
# a range's events: a bug came (broken) or went (fixed) between neighbouring versions; seen
# and unseen where the passing side could not run a mode the bug shows in
EVENTS = ("broken", "seen", "fixed", "unseen")


# ---------------------------------------------------------------------------- reading


class _Reader:
    """Typed reads of one JSON object, each failure naming its path in the document."""

    def __init__(self, d: Any, where: str) -> None:
        if not isinstance(d, Mapping):
            raise SummaryFormatError(f"{where or 'the document'}: expected an object, got {_shown(d)}")
        self.d = d
        self.where = where

    def _at(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def raw(self, key: str) -> Any:
        if key not in self.d:
            raise SummaryFormatError(f"{self._at(key)}: missing")
        return self.d[key]

    def text(self, key: str) -> str:
        v = self.raw(key)
        if not isinstance(v, str):
            raise SummaryFormatError(f"{self._at(key)}: expected a string, got {_shown(v)}")
        return v

    def integer(self, key: str, default: int | None = None) -> int:
        if default is not None and key not in self.d:
            return default
        v = self.raw(key)
        if isinstance(v, bool) or not isinstance(v, int):
            raise SummaryFormatError(f"{self._at(key)}: expected an integer, got {_shown(v)}")
        return v

    def number(self, key: str) -> float:
        v = self.raw(key)
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise SummaryFormatError(f"{self._at(key)}: expected a number, got {_shown(v)}")
        return float(v)

    def flag(self, key: str) -> bool:
        v = self.raw(key)
        if not isinstance(v, bool):
            raise SummaryFormatError(f"{self._at(key)}: expected true or false, got {_shown(v)}")
        return v

    def one_of(self, key: str, allowed: Sequence[str]) -> str:
        v = self.text(key)
        if v not in allowed:
            raise SummaryFormatError(f"{self._at(key)}: {v!r} is not one of {', '.join(allowed)}")
        return v

    def items(self, key: str) -> list[tuple[str, Any]]:
        """A list's items with their paths."""
        v = self.raw(key)
        if not isinstance(v, list):
            raise SummaryFormatError(f"{self._at(key)}: expected a list, got {_shown(v)}")
        return [(f"{self._at(key)}[{i}]", x) for i, x in enumerate(v)]

    def texts(self, key: str) -> tuple[str, ...]:
        out = []
        for where, x in self.items(key):
            if not isinstance(x, str):
                raise SummaryFormatError(f"{where}: expected a string, got {_shown(x)}")
            out.append(x)
        return tuple(out)

    def objects(self, key: str) -> list[_Reader]:
        return [_Reader(x, where) for where, x in self.items(key)]

    def mapping(self, key: str) -> list[tuple[str, Any]]:
        """An object's (key, value) pairs, in order."""
        v = self.raw(key)
        if not isinstance(v, Mapping):
            raise SummaryFormatError(f"{self._at(key)}: expected an object, got {_shown(v)}")
        return list(v.items())

    def sub(self, key: str) -> _Reader:
        return _Reader(self.raw(key), self._at(key))


def _shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


# ---------------------------------------------------------------------------- the types


@dataclass(frozen=True)
class VerdictCounts:
    """How many cases got each verdict on one jax version (one field per verdict)."""

    passed: int = 0
    failed: int = 0
    known: int = 0
    unsupported: int = 0
    error: int = 0

    def of(self, verdict: str) -> int:
        """The count of one verdict by its name (`VERDICTS`)."""
        return int(getattr(self, _COUNT_FIELD[verdict]))

    @property
    def total(self) -> int:
        return sum(self.of(v) for v in VERDICTS)

    @staticmethod
    def tally(verdicts: Sequence[str]) -> VerdictCounts:
        return VerdictCounts(**{_COUNT_FIELD[v]: sum(1 for x in verdicts if x == v) for v in VERDICTS})

    def to_dict(self) -> dict[str, int]:
        return {v: self.of(v) for v in VERDICTS}

    @staticmethod
    def _read(r: _Reader) -> VerdictCounts:
        return VerdictCounts(**{_COUNT_FIELD[v]: r.integer(v, 0 if v == "error" else None) for v in VERDICTS})


_COUNT_FIELD = {"pass": "passed", "fail": "failed", "known": "known", "unsupported": "unsupported", "error": "error"}


@dataclass(frozen=True)
class FuzzSource:
    """The drawn programs a qualification ran besides its corpus."""

    seed: int
    examples: int


@dataclass(frozen=True)
class VersionRow:
    """One interpreter's jax and its counts."""

    label: str  # "jax 0.10.2" ("jax 0.10.2 #2" for a second interpreter with that jax)
    python: str
    jax_version: str
    counts: VerdictCounts
    elapsed_s: float
    entries_fixed: tuple[str, ...] = ()  # known entries whose own case no longer shows their bug here

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "python": self.python, "jax_version": self.jax_version,
                "counts": self.counts.to_dict(), "elapsed_s": self.elapsed_s, "entries_fixed": list(self.entries_fixed)}

    @staticmethod
    def _read(r: _Reader) -> VersionRow:
        return VersionRow(r.text("label"), r.text("python"), r.text("jax_version"),
                          VerdictCounts._read(r.sub("counts")), r.number("elapsed_s"), r.texts("entries_fixed"))


@dataclass(frozen=True)
class BisectStep:
    """One release `--bisect` tried between two neighbouring versions that disagree on
    `cases`: the label of the column it ran, or why its environment could not be built."""

    low: str
    high: str
    release: str
    cases: tuple[str, ...]
    label: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"low": self.low, "high": self.high, "release": self.release, "cases": list(self.cases)}
        if self.error is not None:
            d["error"] = self.error
        if self.label is not None:
            d["label"] = self.label
        return d

    @staticmethod
    def _read(r: _Reader) -> BisectStep:
        return BisectStep(r.text("low"), r.text("high"), r.text("release"), r.texts("cases"),
                          r.text("label") if "label" in r.d else None, r.text("error") if "error" in r.d else None)


@dataclass(frozen=True)
class VerdictCell:
    """One case on one jax version."""

    verdict: str  # one of VERDICTS
    statuses: tuple[tuple[str, str], ...] = ()  # (mode, ok/error/crash/timeout/unsupported), in run order
    signatures: tuple[str, ...] = ()  # unexplained divergences
    known: tuple[str, ...] = ()  # ids of the known divergences seen
    unsupported: tuple[str, ...] = ()  # why a mode did not run it
    message: str = ""  # the first unexplained divergence, in words (or shardfuzz's own error)
    case_file: str = ""  # REPORT/cases/... for a failing cell, REPORT/internal-errors/... for an error

    @property
    def modes(self) -> tuple[str, ...]:
        """The modes it was run in (or found unsupported in), in run order."""
        return tuple(m for m, _ in self.statuses)

    def status(self, mode: str) -> str | None:
        return dict(self.statuses).get(mode)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "statuses": dict(self.statuses), "signatures": list(self.signatures),
                "known": list(self.known), "unsupported": list(self.unsupported), "message": self.message,
                "case_file": self.case_file}

    @staticmethod
    def _read(r: _Reader) -> VerdictCell:
        statuses = []
        for mode, st in r.mapping("statuses"):
            if not isinstance(st, str):
                raise SummaryFormatError(f"{r.where}.statuses.{mode}: expected a string, got {_shown(st)}")
            statuses.append((str(mode), st))
        return VerdictCell(r.one_of("verdict", VERDICTS), tuple(statuses), r.texts("signatures"), r.texts("known"),
                           r.texts("unsupported"), r.text("message"), r.text("case_file"))


@dataclass(frozen=True)
class CaseRow:
    """One case and its verdict on each version that ran it (in version order)."""

    case: str
    source: str  # corpus | fuzz
    reason: str
    verdicts: tuple[tuple[str, VerdictCell], ...]  # (version label, its cell)

    def cell(self, label: str) -> VerdictCell | None:
        """Its cell on the version labelled `label`, or None when that version did not run it."""
        return next((c for lab, c in self.verdicts if lab == label), None)

    @property
    def cells(self) -> tuple[VerdictCell, ...]:
        return tuple(c for _, c in self.verdicts)

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.case, "source": self.source, "reason": self.reason,
                "verdicts": {lab: c.to_dict() for lab, c in self.verdicts}}

    @staticmethod
    def _read(r: _Reader) -> CaseRow:
        where = f"{r.where}.verdicts"
        return CaseRow(r.text("case"), r.text("source"), r.text("reason"),
                       tuple((str(lab), VerdictCell._read(_Reader(c, f"{where}[{lab!r}]")))
                             for lab, c in r.mapping("verdicts")))


@dataclass(frozen=True)
class Change:
    """A case whose verdict differs between the first version and the last."""

    case: str
    reason: str
    first: str  # its verdict on the first version
    last: str  # ... on the last
    signatures: tuple[str, ...]  # the failing side's unexplained divergences
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.case, "reason": self.reason, "first": self.first, "last": self.last,
                "signatures": list(self.signatures), "message": self.message}

    @staticmethod
    def _read(r: _Reader) -> Change:
        return Change(r.text("case"), r.text("reason"), r.one_of("first", VERDICTS), r.one_of("last", VERDICTS),
                      r.texts("signatures"), r.text("message"))


@dataclass(frozen=True)
class Changes:
    """What changed from the first version to the last: regressions (pass -> fail: these
    set the exit code), fixes (fail -> pass or known), and other changes (to or from
    unsupported or known)."""

    regressions: tuple[Change, ...] = ()
    fixes: tuple[Change, ...] = ()
    other: tuple[Change, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"regressions": [c.to_dict() for c in self.regressions], "fixes": [c.to_dict() for c in self.fixes],
                "other": [c.to_dict() for c in self.other]}

    @staticmethod
    def _read(r: _Reader) -> Changes:
        return Changes(*(tuple(Change._read(x) for x in r.objects(k)) for k in ("regressions", "fixes", "other")))


@dataclass(frozen=True)
class RangeEvent:
    """A case's bug came or went between two neighbouring versions that ran it."""

    event: str  # one of EVENTS
    at: str  # the later version: broken or first seen in it, fixed or not seen by it
    before: str  # the earlier one: the last that passed (broken, seen) or failed (fixed, unseen)
    known: bool  # the bad side's bug is a known entry's
    unran: tuple[str, ...]  # the bug's modes the passing side could not run (seen, unseen)

    @property
    def came(self) -> bool:
        """The bug came (broken, seen) rather than went (fixed, unseen)."""
        return self.event in ("broken", "seen")

    def words(self) -> str:
        k = " (known)" if self.known else ""
        could_not = f", which could not run {', '.join(self.unran)}" if self.unran else ""
        if self.came:
            return f"{'broken' if self.event == 'broken' else 'first seen'} in {self.at}{k} (passes on {self.before}{could_not})"
        return f"{'fixed' if self.event == 'fixed' else 'not seen'} by {self.at}{could_not} (fails on {self.before}{k})"

    def to_dict(self) -> dict[str, Any]:
        at, before = ("in", "last_good") if self.came else ("by", "last_bad")
        return {"event": self.event, at: self.at, before: self.before, "known": self.known, "unran": list(self.unran)}

    @staticmethod
    def _read(r: _Reader) -> RangeEvent:
        event = r.one_of("event", EVENTS)
        at, before = ("in", "last_good") if event in ("broken", "seen") else ("by", "last_bad")
        return RangeEvent(event, r.text(at), r.text(before), r.flag("known"), r.texts("unran"))


@dataclass(frozen=True)
class Range:
    """When a case's bug came and went, in version order."""

    case: str
    events: tuple[RangeEvent, ...]
    text: str  # the events in words ("broken in 0.6.0 (passes on 0.5.3); fixed by 0.9.2 (...)")
    last_fails_after_pass: bool  # the last version fails it, unexplained, and an earlier one passes it

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.case, "events": [e.to_dict() for e in self.events], "text": self.text,
                "last_fails_after_pass": self.last_fails_after_pass}

    @staticmethod
    def _read(r: _Reader) -> Range:
        return Range(r.text("case"), tuple(RangeEvent._read(e) for e in r.objects("events")), r.text("text"),
                     r.flag("last_fails_after_pass"))


@dataclass(frozen=True)
class QualifySummary:
    """A whole qualification: qualify.json's one definition."""

    modes: tuple[str, ...]
    corpus: str
    fuzz: FuzzSource | None
    versions: tuple[VersionRow, ...]  # in version order
    first: str  # the label of the first --python given (compared with the last)
    last: str
    bisect: tuple[BisectStep, ...]
    cases: tuple[CaseRow, ...]  # in the run's case order
    changes: Changes
    ranges: tuple[Range, ...]
    # 1 when the last version fails a case that some earlier version passes; else 3 when
    # shardfuzz could not judge some case (a shardfuzz bug: the run is incomplete); else 0
    exit_code: int
    schema: int = QUALIFY_SCHEMA

    def version(self, label: str) -> VersionRow | None:
        return next((v for v in self.versions if v.label == label), None)

    def with_verdict(self, label: str, verdict: str) -> tuple[CaseRow, ...]:
        """The cases whose cell on version `label` has this verdict."""
        return tuple(c for c in self.cases if (cell := c.cell(label)) is not None and cell.verdict == verdict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "modes": list(self.modes),
            "corpus": self.corpus,
            "fuzz": None if self.fuzz is None else {"seed": self.fuzz.seed, "examples": self.fuzz.examples},
            "versions": [v.to_dict() for v in self.versions],
            "first": self.first,
            "last": self.last,
            "bisect": [b.to_dict() for b in self.bisect],
            "cases": [c.to_dict() for c in self.cases],
            "changes": self.changes.to_dict(),
            "ranges": [r.to_dict() for r in self.ranges],
            "exit_code": self.exit_code,
        }

    @staticmethod
    def from_dict(d: Any) -> QualifySummary:
        """Read a qualify.json document; raises SummaryFormatError naming the first field
        that is missing or of the wrong type."""
        r = _Reader(d, "")
        schema = r.raw("schema")
        if schema != QUALIFY_SCHEMA:
            raise SummaryFormatError(f"schema: {_shown(schema)}; this shardfuzz reads qualify schema {QUALIFY_SCHEMA}")
        fuzz = None
        if r.raw("fuzz") is not None:
            f = r.sub("fuzz")
            fuzz = FuzzSource(f.integer("seed"), f.integer("examples"))
        return QualifySummary(
            modes=r.texts("modes"),
            corpus=r.text("corpus"),
            fuzz=fuzz,
            versions=tuple(VersionRow._read(v) for v in r.objects("versions")),
            first=r.text("first"),
            last=r.text("last"),
            bisect=tuple(BisectStep._read(b) for b in r.objects("bisect")),
            cases=tuple(CaseRow._read(c) for c in r.objects("cases")),
            changes=Changes._read(r.sub("changes")),
            ranges=tuple(Range._read(x) for x in r.objects("ranges")),
            exit_code=r.integer("exit_code"),
            schema=QUALIFY_SCHEMA,
        )
