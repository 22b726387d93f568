"""`shardfuzz merge REPORT_DIR... --report OUT`: the reports of a run's shards (or of runs
on several machines) as one report, through the same `RunSummary` and writers as a run.

- buckets are one per (signature, explaining entry), as in a run; their counts are summed,
  and the first sighting is kept: the bucket's case, message and minimized case come from
  the shard whose program comes first in the program stream (`first_seen_index`: the same
  position in every shard), so the merged report names the case the unsharded run names;
- every count of `Counts` is summed (shards check disjoint programs), and the bucket counts
  are recounted from the merged buckets (`counts_of`, the one definition);
- coverage and configuration cells are summed per key; statistics (shares of drawn
  programs) are averaged, weighted by the programs each report drew;
- known entries: matched (counts summed) if any report matched them, else fixed if any
  report found their case fixed, else unseen;
- every case file is copied into OUT/cases/, so OUT is a self-contained report.

Reports of different jax versions, seeds or mode lists are not shards of one run: that is
bad input (exit 2), as is a directory without a readable summary.json.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from harness.judge.known import EntryStatus
from harness.report.markup import write as atomic_write
from harness.report.reports import write_reports
from harness.report.summary import (
    BucketSummary,
    CellCheck,
    CoverageCell,
    FixedCase,
    ModeTime,
    NotDone,
    RunSummary,
    counts_of,
)
from programs.errors import SummaryFormatError, UsageError


def read_report(d: Path) -> RunSummary:
    """REPORT_DIR/summary.json as a RunSummary, or a UsageError naming the directory."""
    f = d / "summary.json"
    try:
        return RunSummary.from_json(json.loads(f.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise UsageError(f"{d}: no summary.json there (is it a `shardfuzz fuzz --report` directory?)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{f}: cannot be read ({e})") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"{f}: line {e.lineno}: not valid JSON ({e.msg}); re-run that shard") from None
    except SummaryFormatError as e:
        raise UsageError(f"{f}: {e}") from None


def _same(reports: Sequence[tuple[Path, RunSummary]], what: str, value: object) -> None:
    first_dir, first = reports[0]
    for d, s in reports[1:]:
        if getattr(s, what) != getattr(first, what):
            raise UsageError(
                f"{d}: {what} {getattr(s, what)!r} differs from {first_dir}'s {getattr(first, what)!r}: "
                f"merge the shards of one run (one {value}), or merge each group apart"
            )


def _copy_cases(reports: Sequence[tuple[Path, RunSummary]], out: Path) -> dict[str, str]:
    """Every file of each REPORT_DIR/cases/ into OUT/cases/ (cases are named by program
    id, so shards never clash; a corpus case replayed by every shard is one file);
    returns the old recorded path -> the new one, for each bucket's case and minimized case."""
    dest = out / "cases"
    dest.mkdir(parents=True, exist_ok=True)
    moved: dict[str, str] = {}
    for d, s in reports:
        src = d / "cases"
        if src.is_dir() and src.resolve() != dest.resolve():
            for f in sorted(src.iterdir()):
                if f.is_file() and not (dest / f.name).exists():
                    shutil.copy2(f, dest / f.name)
        for p in [x for b in s.buckets for x in (b.case, b.minimized_case)] + [r.case for r in s.reruns]:
            if p:
                moved[p] = str(dest / Path(p).name) if (dest / Path(p).name).exists() else p
    return moved


def _first_sighting(b: BucketSummary) -> tuple[int, float]:
    return (b.first_seen_index, b.first_seen_s)


def merge_buckets(reports: Sequence[RunSummary]) -> tuple[BucketSummary, ...]:
    """One bucket per (signature, entry): counts summed, the first sighting kept (ties:
    the earlier report), new only if new in every report (one report that saw it in its
    corpus replay makes it still failing)."""
    groups: dict[tuple[str, str | None], list[BucketSummary]] = {}
    for s in reports:
        for b in s.buckets:
            groups.setdefault((b.signature, b.suppressed_by), []).append(b)
    out = []
    for bs in groups.values():
        first = min(bs, key=_first_sighting)  # (min is stable: ties keep the earlier report)
        mini = first if first.minimized_case else next((b for b in bs if b.minimized_case), first)
        out.append(replace(first, count=sum(b.count for b in bs), new=all(b.new for b in bs),
                           minimized_case=mini.minimized_case, minimized_size=mini.minimized_size))
    return tuple(sorted(out, key=lambda b: (b.suppressed_by is not None, -b.count, b.signature)))


def _entries(reports: Sequence[RunSummary]) -> tuple[EntryStatus, ...]:
    order = {"matched": 0, "fixed": 1, "unseen": 2, "not_this_version": 3}
    by: dict[str, list[EntryStatus]] = {}
    for s in reports:
        for e in s.known_entries:
            by.setdefault(e.id, []).append(e)
    out = []
    for es in by.values():
        best = min(es, key=lambda e: order.get(e.status, 9))
        out.append(replace(best, count=sum(e.count for e in es)))
    return tuple(out)


def _cells(reports: Sequence[RunSummary]) -> tuple[CellCheck, ...]:
    by: dict[tuple[str, str], CellCheck] = {}
    for s in reports:
        for c in s.cells:
            old = by.get((c.cell, c.mode))
            if old is None:
                by[(c.cell, c.mode)] = c
                continue
            hits = [x for x in (old, c) if x.checks]
            first = min(hits, key=lambda x: x.first_s) if hits else old
            by[(c.cell, c.mode)] = CellCheck(c.cell, c.mode, old.checks + c.checks, first.first_program, first.first_s,
                                            "" if hits else old.why)
    return tuple(by.values())


def _statistics(reports: Sequence[RunSummary]) -> dict[str, float]:
    weights = [max(s.programs_drawn, 1) for s in reports]
    total = sum(weights)
    keys = sorted({k for s in reports for k in s.statistics})
    return {k: round(sum(w * s.statistics.get(k, 0.0) for w, s in zip(weights, reports, strict=True)) / total, 4)
            for k in keys}


def merge(dirs: Sequence[Path], out: Path) -> RunSummary:
    """The reports in `dirs` as one, written to `out` (summary.json, junit.xml, index.html,
    cases/)."""
    if not dirs:
        raise UsageError("merge: name at least one report directory")
    reports = [(Path(d), read_report(Path(d))) for d in dirs]
    seen: dict[str, Path] = {}
    for d, s in reports:
        if s.shard and s.shard in seen:
            raise UsageError(f"{d}: shard {s.shard} is also {seen[s.shard]}'s: each shard once (remove one)")
        if s.shard:
            seen[s.shard] = d
    counts = {s.shard.split("/")[1] for _, s in reports if s.shard}
    if len(counts) > 1:
        raise UsageError(f"merge: shards of different counts N ({', '.join(sorted(counts))}): "
                         "merge the shards of one --shard K/N run")
    _same(reports, "jax_version", "jax version")
    _same(reports, "seed", "seed")
    _same(reports, "modes", "list of --modes")
    out.mkdir(parents=True, exist_ok=True)
    moved = _copy_cases(reports, out)
    sums = [s for _, s in reports]
    buckets = tuple(replace(b, case=moved.get(b.case, b.case),
                            minimized_case=moved.get(b.minimized_case, b.minimized_case) if b.minimized_case else None)
                    for b in merge_buckets(sums))
    fixed = tuple({f.case: FixedCase(moved.get(f.case, f.case), f.signatures) for s in sums for f in s.fixed}.values())
    seen_ids = {b.suppressed_by for b in buckets if b.suppressed_by}
    cov: Counter[tuple[str, int, str, str, str]] = Counter()
    for s in sums:
        for c in s.coverage:
            cov[(c.collective, c.mesh_rank, c.dtype, c.mode, c.spec)] += c.count

    def total(name: str) -> int:
        return sum(int(getattr(s, name)) for s in sums)

    def count(name: str) -> int:
        return sum(int(getattr(s.counts, name)) for s in sums)

    digests = sorted({s.programs_digest for s in sums})
    reruns = tuple(replace(r, case=moved.get(r.case, r.case)) for s in sums for r in s.reruns)
    not_done = NotDone.sum(s.left_over for s in sums)
    first = sums[0]
    merged = RunSummary(
        jax_version=first.jax_version, seed=first.seed, modes=first.modes,
        codegen=first.codegen if len({s.codegen for s in sums}) == 1 else "mixed",
        counts=counts_of(buckets, fixed, count("programs_run"), count("programs_with_divergences"),
                         count("failing_programs"), reruns, not_done),
        repeats_skipped=total("repeats_skipped"), accidentally_invalid=total("accidentally_invalid"),
        elapsed_s=max(s.elapsed_s for s in sums),  # the shards ran side by side
        buckets=buckets, fixed=fixed, batch_reconfirmed=total("batch_reconfirmed"),
        corpus_replayed=total("corpus_replayed"), database_replayed=total("database_replayed"),
        programs_digest=digests[0] if len(digests) == 1 else "+".join(digests),
        unseen_suppressions=tuple(sorted(set.intersection(*(set(s.unseen_suppressions) for s in sums)) - seen_ids)),
        known_entries=_entries(sums), programs_with_known=total("programs_with_known"),
        derived_checked=total("derived_checked"), checked_in_full=total("checked_in_full"),
        statistics=_statistics(sums),
        coverage=tuple(CoverageCell(c, r, dt, m, sp, n) for (c, r, dt, m, sp), n in sorted(cov.items())),
        cells=_cells(sums), shard="", programs_drawn=max(s.programs_drawn for s in sums),
        merged_from=tuple(str(d) for d, _ in reports),
        programs_swept=max(s.programs_swept for s in sums),  # (every shard draws the whole sweep)
        reruns=reruns, left_over=not_done,
        mode_time=ModeTime.totals((m.mode, m.runs, m.seconds) for s in sums for m in s.mode_time),
        cache_entries=min(s.cache_entries for s in sums),  # (the coldest shard's)
    )
    atomic_write(out / "summary.json", json.dumps(merged.to_json(), indent=1))
    write_reports(merged, out)
    return merged


def missing_shards(reports: Sequence[RunSummary]) -> list[str]:
    """The shards K/N of a --shard run that none of the reports is (empty when complete,
    or when the reports are not shards)."""
    have = {s.shard for s in reports if s.shard}
    if not have:
        return []
    n = int(next(iter(have)).split("/")[1])
    return [f"{k}/{n}" for k in range(n) if f"{k}/{n}" not in have]
