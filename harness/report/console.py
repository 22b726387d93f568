"""The console: what a person reads while a command runs and when it ends.

Three levels, chosen with `-v` (each level prints what the one below does, and more):

- 0 (default): news only. The progress line; each bucket no known entry explains as it
  is found (new, or still failing from the corpus: one line naming its signature, its
  case file and the command that replays it); at the end the counts, one line for the
  crashes and timeouts that did not happen again alone (slow, flaky: not failures), one
  for the work the run's time left over (not done), one for the known divergences (how
  many, and the entries that explained them), one for the cells, and the verdict with
  the exit code and the report files.
- 1 (`-v`): also each known bucket as it is found and, at the end, every known bucket
  with its count, each slow or flaky run, and where the workers' time went.
- 2 (`-vv`): also the known entries nothing matched in this run.

The report files (summary.json, junit.xml, index.html, cases/) hold everything at every
level. Every figure here is read from the frozen records the reports read (`RunSummary`,
its `Counts`, `CellCoverage`, `WorkerTime`, `BucketSummary`), so the console and the
files cannot disagree.

Progress: on a terminal one line redrawn in place twice a second; anywhere else (a CI
log, a file) a plain line at a rate that falls as the run goes on (`progress_due`), so an
eight-hour run writes tens of progress lines, not thousands.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from harness.judge.known import Explained
from harness.report.summary import AloneRerun, BucketSummary, RunSummary

QUIET, VERBOSE, VERY_VERBOSE = 0, 1, 2

CLEAR_LINE = "\r\x1b[K"  # back to column 0 and clear it: the live progress line's own line

# Not on a terminal: the first progress line after this many seconds, then every
# max(LOG_MIN_S, elapsed / LOG_GROWTH) seconds, never more than LOG_MAX_S apart (a log
# reader still sees a run alive every ten minutes); 8 hours: about 65 lines.
LOG_MIN_S, LOG_GROWTH, LOG_MAX_S = 30.0, 5.0, 600.0
LIVE_S = 0.5  # a terminal's line is redrawn this often


def is_live(stream: TextIO) -> bool:
    """Whether `stream` is a terminal (its progress line is redrawn in place)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty()) if callable(isatty) else False


def progress_due(now: float, last: float, live: bool) -> bool:
    """Whether a progress line is due at `now` seconds into the run, the last one having
    been written at `last` (0: none yet)."""
    if live:
        return now - last >= LIVE_S
    return now - last >= min(LOG_MAX_S, max(LOG_MIN_S, last / LOG_GROWTH))


@dataclass(frozen=True)
class Progress:
    """Where a fuzz run stands: the figures of its progress line."""

    checked: int  # programs checked so far
    max_examples: int | None  # None: only a time budget bounds the run
    elapsed_s: float
    budget_s: float | None
    failing_buckets: int  # buckets no known entry explains (new or still failing)
    known_buckets: int

    def line(self) -> str:
        rate = self.checked / self.elapsed_s if self.elapsed_s > 0 else 0.0
        cap = "" if self.max_examples is None else f"/{self.max_examples}"
        budget = f"/{self.budget_s:.0f}s" if self.budget_s else "s"
        return (f"[{self.checked:>5}{cap}] {rate:5.1f} programs/s, {self.failing_buckets} new / "
                f"{self.known_buckets} known buckets, {self.elapsed_s:.0f}{budget}")


def found_line(b: BucketSummary) -> str:
    """One line for a bucket as it is found: what, where its case is, how to replay it."""
    if b.known:
        return f"known ({b.suppressed_by}) {b.signature}  {b.case}"
    tag = "NEW" if b.new else "STILL"
    message = (b.message.strip().splitlines() or [""])[0]
    message = f": {message[:160]}{'...' if len(message) > 160 else ''}" if message else ""
    return f"{tag} {b.signature}{message}  saved {b.case}  (shardfuzz replay {b.case})"


@dataclass(frozen=True)
class Console:
    """Lines for people, at a verbosity level, on one stream (stderr for progress)."""

    stream: TextIO = field(default_factory=lambda: sys.stderr)
    verbosity: int = QUIET

    @property
    def live(self) -> bool:
        return is_live(self.stream)

    def say(self, text: str, level: int = QUIET) -> None:
        """Print `text` when the verbosity is at least `level` (over a live progress line,
        which the next tick draws again below it)."""
        if self.verbosity >= level:
            print(f"{CLEAR_LINE if self.live else ''}{text}", file=self.stream, flush=True)

    def found(self, b: BucketSummary) -> None:
        """A bucket seen for the first time in this run: a known one from -v up."""
        self.say(found_line(b), VERBOSE if b.known else QUIET)

    def progress(self, p: Progress, last: float, force: bool = False) -> float:
        """Write the progress line if one is due (or `force`: the run's last); returns when
        the last line was written (`last`, or `p.elapsed_s`)."""
        live = self.live
        if not force and not progress_due(p.elapsed_s, last, live):
            return last
        if live:
            print(f"{CLEAR_LINE}{p.line()}", end="\n" if force else "", file=self.stream, flush=True)
        else:
            print(p.line(), file=self.stream, flush=True)
        return p.elapsed_s


def exit_code(s: RunSummary) -> int:
    """`shardfuzz fuzz` and `merge`: 1 when a bucket no known entry explains exists, else 0."""
    return 1 if s.failing else 0


def _by_entry(buckets: Sequence[BucketSummary]) -> list[tuple[str, int]]:
    """Each entry that explained some of `buckets`, with its divergences, most first."""
    per: dict[str, int] = {}
    for b in buckets:
        assert b.suppressed_by is not None
        per[b.suppressed_by] = per.get(b.suppressed_by, 0) + b.count
    return sorted(per.items(), key=lambda kv: (-kv[1], kv[0]))


def known_line(s: RunSummary, verbosity: int = QUIET) -> str:
    """The known divergences in one line: how many, in how many buckets, and each entry
    that explained some (with its divergences), most first."""
    c = s.counts
    ranked = _by_entry(s.known)
    out = f"known: {c.suppressed} divergences in {c.known_buckets} buckets"
    if ranked:
        out += f", from {len(ranked)} entries: " + ", ".join(f"{e} x{n}" for e, n in ranked)
    if c.known_buckets and verbosity < VERBOSE:
        out += " (-v lists the buckets)"
    if s.unseen_suppressions:
        out += f"; {len(s.unseen_suppressions)} entries not seen in this run"
        out += "" if verbosity >= VERY_VERBOSE else " (-vv lists them)"
    return out


def policy_line(s: RunSummary, verbosity: int = QUIET) -> str:
    """The divergences policy entries explain (jax's limitations, feature requests and
    message wording: not bugs, never failing a run, never to report upstream), in one line."""
    c = s.counts
    ranked = _by_entry(s.policy)
    out = (f"policy (jax's choice, not a bug; not to be reported upstream): {c.policy} divergences in "
           f"{c.policy_buckets} buckets, from " + ", ".join(f"{e} x{n}" for e, n in ranked))
    return out + ("" if verbosity >= VERBOSE else " (-v lists the buckets)")
def alone_line(reruns: Sequence[AloneRerun], verbosity: int = QUIET) -> str:
    """The crashes and timeouts that did not happen again alone, in one line: how many of
    each, and (below -v) the first few cases."""
    slow = sum(1 for r in reruns if r.verdict == "slow")
    out = (f"re-run alone with a longer limit, not failures: {slow} slow (timed out, then finished alone), "
           f"{len(reruns) - slow} flaky (crashed, then not alone)")
    if verbosity < VERBOSE:
        out += ": " + limited([f"{r.verdict} {r.mode} {r.case}" for r in reruns], verbosity, at_most=3)
    return out


def verdict_line(s: RunSummary, report: Path) -> str:
    """What the exit code will be and why, and where the reports are."""
    files = f"reports: {report / 'summary.json'}, {report / 'junit.xml'}, {report / 'index.html'}"
    c = s.counts
    if exit_code(s) == 0:
        return f"exit 0: nothing diverged that a known entry does not explain; {files}"
    first = s.failing[0].minimized_case or s.failing[0].case
    return (f"exit 1: {c.failing_buckets} buckets no known entry explains ({c.new_buckets} new, "
            f"{c.still_failing_buckets} still failing); {files}; next: shardfuzz replay {first}   |   "
            f"shardfuzz explain {first}")


def summary_lines(s: RunSummary, report: Path, verbosity: int = QUIET) -> list[str]:
    """The end-of-run summary of a fuzz run (or a merge of shards) at `verbosity`."""
    lines = [
        "",
        f"shardfuzz: jax {s.jax_version}, seed {s.seed}, modes {','.join(s.modes)}, {s.elapsed_s:.0f}s "
        f"({s.repeats_skipped} programs drawn again, not rechecked; {s.derived_checked} derived programs checked: "
        f"without a known bug, or without an op XLA:CPU cannot run)",
        f"  {s.counts.line()}",
    ]
    if s.cells:
        lines.append(f"  cells: {s.cell_coverage.line()}")
    if s.mode_time and verbosity >= VERBOSE:
        lines.append(f"  worker time: {s.worker_time.line()}")
    if s.reruns:
        lines.append(f"  {alone_line(s.reruns, verbosity)}")
        if verbosity >= VERBOSE:
            lines += [f"    {r.line()}" for r in s.reruns]
    if s.left_over.total:
        lines.append(f"  {s.left_over.line()}")
    for b in s.failing:
        tag = "NEW  " if b.new else "STILL"
        mini = f"  minimized: {b.minimized_case} {list(b.minimized_size or ())}" if b.minimized_case else ""
        lines.append(f"  {tag} {b.signature}  x{b.count}  {b.case}{mini}")
    if s.fixed:
        if verbosity >= VERBOSE:
            lines += [f"  FIXED {', '.join(fx.signatures)}  {fx.case}" for fx in s.fixed]
        else:
            lines.append(f"  FIXED: {len(s.fixed)} corpus cases no longer diverge: {', '.join(fx.case for fx in s.fixed)}")
    lines.append(f"  {known_line(s, verbosity)}")
    if verbosity >= VERBOSE:
        lines += [f"  known {b.signature}  x{b.count}  ({b.suppressed_by})" for b in s.known]
    if s.policy:
        lines.append(f"  {policy_line(s, verbosity)}")
        if verbosity >= VERBOSE:
            lines += [f"  policy {b.signature}  x{b.count}  ({b.suppressed_by})" for b in s.policy]
    if verbosity >= VERY_VERBOSE and s.unseen_suppressions:
        lines.append(f"  known divergences not seen in this run: {', '.join(s.unseen_suppressions)}")
    if s.accidentally_invalid:
        lines.append(f"  note: {s.accidentally_invalid} drawn programs were invalid by accident (strategy bug)")
    stale = [e.id for e in s.known_entries if e.status == "fixed"]
    if stale:
        lines.append(f"  known entries FIXED on this jax (their own case passes; narrow or retire them): {', '.join(stale)}")
    lines.append(f"  {verdict_line(s, report)}")
    return lines


def print_summary(s: RunSummary, report: Path, verbosity: int = QUIET, stream: TextIO | None = None) -> None:
    """Print `summary_lines` (on stdout unless `stream` is given)."""
    print("\n".join(summary_lines(s, report, verbosity)), file=stream or sys.stdout, flush=True)


def limited(items: Sequence[str], verbosity: int, at_most: int = 8) -> str:
    """A comma-separated list, cut to `at_most` names below -v ("... and N more")."""
    if verbosity >= VERBOSE or len(items) <= at_most:
        return ", ".join(items)
    return f"{', '.join(items[:at_most])} ... and {len(items) - at_most} more (-v lists them)"


def divergence_lines(explained: Sequence[Explained], verbosity: int = QUIET) -> list[str]:
    """`shardfuzz replay`'s divergences: each one no known entry explains as
    `DIVERGES: SIGNATURE` and its message; the known ones one line per entry naming their
    signatures, or from -v each with its message."""
    lines: list[str] = []
    per: dict[str, list[str]] = {}
    for x in explained:
        d = x.divergence
        if x.entry is None or verbosity >= VERBOSE:
            label = "DIVERGES" if x.entry is None else f"{'policy' if x.entry.policy else 'known'} ({x.entry.id})"
            lines += [f"{label}: {d.signature}", f"  {d.message}"]
        else:
            per.setdefault(x.entry.id, []).append(d.signature)
    policy = {x.entry.id for x in explained if x.entry is not None and x.entry.policy}
    lines += [f"{'policy' if e in policy else 'known'} ({e}): {', '.join(sigs)}" for e, sigs in per.items()]
    return lines
