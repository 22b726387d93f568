"""The console (harness/report/console.py): by default a run prints what is new or still
failing and one line for the known divergences, however many there are; -v adds the
known buckets, -vv the known entries nothing matched; a log gets a bounded number of
progress lines. Real runs of the `shardfuzz` command, and `RunSummary` values."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

from harness.judge.known import EntryStatus
from harness.report.console import (
    LOG_MAX_S,
    Console,
    Progress,
    found_line,
    summary_lines,
)
from harness.report.summary import BucketSummary, RunSummary, counts_of

ROOT = Path(__file__).resolve().parent.parent

# a short real run whose programs hit known jax bugs (seed 0's sweep starts with them)
RUN = ("fuzz", "--seed", "0", "--max-examples", "10", "--modes", "abstract,jit", "--workers", "1", "--minimize-budget", "0")


def sf(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=600)


def lines(r: subprocess.CompletedProcess[str], progress: bool = True) -> list[str]:
    """What the command printed, without its progress lines unless `progress` (their
    number depends on how long the run took)."""
    return [ln for ln in (r.stdout + r.stderr).splitlines() if progress or not re.match(r"\[\s*\d+/", ln)]


def test_a_default_run_prints_one_line_for_the_known_and_vv_lists_them(tmp_path: Path) -> None:
    """The same run by default and with -vv: by default no known bucket has a line of its
    own (one `known:` line names the entries and counts); -vv prints each known bucket as
    it is found and with its count at the end (what -v adds), and every known entry
    nothing matched. The reports are the same whatever the level."""
    runs = {v: sf(*RUN, "--report", str(tmp_path / f"r{v}"), *(["-" + "v" * v] if v else [])) for v in (0, 2)}
    for r in runs.values():
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    s = RunSummary.from_json(json.loads((tmp_path / "r0" / "summary.json").read_text()))
    assert s.known and s.unseen_suppressions and not s.failing  # (what this test is about is there)
    for v in (2,):  # the reports keep everything at every level
        other = RunSummary.from_json(json.loads((tmp_path / f"r{v}" / "summary.json").read_text()))
        assert other.programs_digest == s.programs_digest and other.counts == s.counts
        assert [(b.signature, b.suppressed_by, b.count) for b in other.buckets] == [(b.signature, b.suppressed_by, b.count) for b in s.buckets]

    quiet = lines(runs[0])
    assert len(quiet) < 25, "\n".join(quiet)
    assert not [ln for ln in quiet if any(b.signature in ln for b in s.known)], "\n".join(quiet)
    known = [ln for ln in quiet if ln.startswith("  known: ")]
    assert len(known) == 1 and f"{s.counts.suppressed} divergences in {s.counts.known_buckets} buckets" in known[0]
    named = known[0].split(" entries: ", 1)[1].split(" (-v", 1)[0].split(", ")
    per_entry = {e: sum(b.count for b in s.known if b.suppressed_by == e) for e in {b.suppressed_by for b in s.known}}
    assert sorted(named) == sorted(f"{e} x{n}" for e, n in per_entry.items()), known[0]
    assert f"; {len(s.unseen_suppressions)} entries not seen in this run (-vv lists them)" in known[0]
    assert any(ln.startswith("  exit 0: ") and str(tmp_path / "r0" / "summary.json") in ln for ln in quiet)

    loud = runs[2]
    for b in s.known:  # as found (stderr) and with its count (stdout)
        assert f"known ({b.suppressed_by}) {b.signature}  " in loud.stderr, loud.stderr
        assert f"  known {b.signature}  x{b.count}  ({b.suppressed_by})" in loud.stdout.splitlines()
    unseen = [ln for ln in loud.stdout.splitlines() if ln.startswith("  known divergences not seen in this run: ")]
    assert len(unseen) == 1 and unseen[0].split(": ", 1)[1].split(", ") == list(s.unseen_suppressions)
    # (+1: the worker time, a -v line)
    assert len(lines(loud, progress=False)) == len(lines(runs[0], progress=False)) + 2 * len(s.known) + 1 + 1


def test_a_new_bucket_is_one_line_as_found_naming_its_case_and_how_to_replay_it(tmp_path: Path) -> None:
    """Without the known list every bug the run meets is new: each new bucket gets one
    line as it is found (its signature, the saved case, the replay command), the end
    lists them, and the verdict says exit 1 and what to run next."""
    empty = tmp_path / "none.toml"
    empty.write_text("")
    r = sf(*RUN, "--report", str(tmp_path / "rep"), "--suppressions", str(empty))
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    s = RunSummary.from_json(json.loads((tmp_path / "rep" / "summary.json").read_text()))
    assert s.new and not s.known
    found = [ln for ln in r.stderr.splitlines() if ln.startswith("NEW ")]
    assert len(found) == len(s.new), r.stderr
    for b in s.new:
        mine = [ln for ln in found if ln.startswith(f"NEW {b.signature}")]
        assert len(mine) == 1 and f"saved {b.case}" in mine[0] and f"(shardfuzz replay {b.case})" in mine[0], found
        assert f"  NEW   {b.signature}  x{b.count}  {b.case}" in r.stdout.splitlines()
    verdict = [ln for ln in r.stdout.splitlines() if ln.startswith("  exit 1: ")]
    assert len(verdict) == 1 and f"{len(s.new)} buckets no known entry explains ({len(s.new)} new" in verdict[0]
    assert f"next: shardfuzz replay {s.new[0].case}" in verdict[0]


def _big_summary(known_buckets: int, entries: int, unseen: int) -> RunSummary:
    """A run with many known buckets (as a 200-program run has about 150) and many entries
    nothing matched."""
    buckets = tuple(BucketSummary(f"vma|jit|op{i}", "vma", "jit", 2, f"cases/{i}.json", suppressed_by=f"entry-{i % entries}",
                                  new=False) for i in range(known_buckets))
    return RunSummary(
        jax_version="0.10.2", seed=0, modes=("abstract", "jit"), codegen="fast",
        counts=counts_of(buckets, (), 200, 60, 0), repeats_skipped=0, accidentally_invalid=0, elapsed_s=250.0,
        buckets=buckets, fixed=(), batch_reconfirmed=0, corpus_replayed=0, database_replayed=0, programs_digest="x",
        unseen_suppressions=tuple(f"unseen-{i}" for i in range(unseen)),
        known_entries=tuple(EntryStatus(f"unseen-{i}", "unseen", 0, "", "", "") for i in range(unseen)),
        programs_with_known=60, derived_checked=0, checked_in_full=140)


def test_the_end_summary_is_a_few_lines_however_many_known_buckets(tmp_path: Path) -> None:
    """150 known buckets from 25 entries and 60 entries not seen: the default summary stays
    a few lines; -v adds one line per known bucket, -vv one line naming every unseen entry."""
    s = _big_summary(150, 25, 60)
    quiet, verbose, very = (summary_lines(s, tmp_path, v) for v in (0, 1, 2))
    assert len(quiet) <= 6, quiet
    known = [ln for ln in quiet if ln.startswith("  known: ")]
    assert len(known) == 1 and "300 divergences in 150 buckets, from 25 entries: " in known[0]
    assert all(f"entry-{i} x12" in known[0] for i in range(25)) and "60 entries not seen in this run (-vv" in known[0]
    assert len(verbose) == len(quiet) + 150 and all(f"  known {b.signature}  x2  ({b.suppressed_by})" in verbose for b in s.known)
    assert len(very) == len(verbose) + 1 and very[-2].endswith(", ".join(f"unseen-{i}" for i in range(60)))
    assert quiet[-1].startswith("  exit 0: ")


def test_known_buckets_as_found_only_from_v_and_new_ones_always() -> None:
    """`Console.found`: a known bucket is printed from -v up, a new or still-failing one
    at every level, each on one line."""
    known = BucketSummary("vma|jit|pmax", "vma", "jit", 1, "c/k.json", suppressed_by="grouped-pmax", new=False)
    new = BucketSummary("value|jit|psum", "value", "jit", 1, "c/n.json", message="out[0] differs\nat device 3")
    still = BucketSummary("value|jit|psum", "value", "jit", 1, "c/s.json", new=False)
    for v, want in ((0, 2), (1, 3), (2, 3)):
        out = io.StringIO()
        c = Console(out, v)
        for b in (known, new, still):
            c.found(b)
        assert len(out.getvalue().splitlines()) == want, out.getvalue()
    assert found_line(new) == "NEW value|jit|psum: out[0] differs  saved c/n.json  (shardfuzz replay c/n.json)"
    assert found_line(still).startswith("STILL value|jit|psum  saved c/s.json")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _ticks(stream: io.StringIO, seconds: float, step: float) -> int:
    """Progress lines written when a run of `seconds` asks every `step` seconds (as the
    fuzz loop does after each program), the last one forced."""
    c, last, t = Console(stream), 0.0, 0.0
    while t < seconds:
        last = c.progress(Progress(int(t), 200, t, None, 0, 0), last)
        t += step
    c.progress(Progress(int(t), 200, t, None, 0, 0), last, force=True)
    return stream.getvalue().count("\n")


def test_progress_in_a_log_is_bounded_and_on_a_terminal_redrawn() -> None:
    """Not a terminal: a 4-minute run writes at most 10 progress lines, an 8-hour one at
    most 100 and never goes 10 minutes without one. A terminal: one line redrawn in place
    (carriage return, no newline) until the last."""
    assert _ticks(io.StringIO(), 250, 0.1) <= 10
    log = io.StringIO()
    assert 40 <= _ticks(log, 8 * 3600, 0.5) <= 100
    stamps = [float(ln.rsplit(", ", 1)[1].rstrip("s")) for ln in log.getvalue().splitlines()]
    assert max(b - a for a, b in zip([0.0, *stamps], stamps, strict=False)) <= LOG_MAX_S + 1
    tty = _Terminal()
    _ticks(tty, 10, 0.1)
    assert tty.getvalue().count("\n") == 1 and tty.getvalue().count("\r") >= 18


def test_replay_prints_one_line_per_known_entry_and_v_each_divergence() -> None:
    """`shardfuzz replay` on a known entry's own case: by default one line per entry
    naming its signatures, no message; with -v each divergence and its message."""
    case = "harness/data/corpus/known/groups_vma.json"
    quiet, loud = (sf("replay", *v, "--modes", "abstract,jit", case) for v in ((), ("-v",)))
    assert quiet.returncode == loud.returncode == 0, quiet.stderr + loud.stderr
    entry = [ln for ln in quiet.stdout.splitlines() if ln.startswith("known (")]
    assert entry == ["known (grouped-pmax-claims-invariance): missing_error|abstract|out_spec_replication, "
                     "missing_error|jit|out_spec_replication"], quiet.stdout
    assert "jax raised nothing" not in quiet.stdout
    each = [ln for ln in loud.stdout.splitlines() if ln.startswith("known (")]
    assert each == ["known (grouped-pmax-claims-invariance): missing_error|abstract|out_spec_replication",
                    "known (grouped-pmax-claims-invariance): missing_error|jit|out_spec_replication"], loud.stdout
    assert loud.stdout.count("jax raised nothing, but oracle predicts out_spec_replication") == 2
    assert quiet.stdout.splitlines()[-1] == loud.stdout.splitlines()[-1]  # (the same verdict)
