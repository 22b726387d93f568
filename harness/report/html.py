"""`index.html`: one self-contained page per run (inline CSS, no script, no external
resource; a Content-Security-Policy says so, so a stray reference shows up as a console
error in the render test) that answers the morning questions: what is new, what is known,
what got fixed, how to reproduce each, and what the run covered. Every count on it comes
from the run's `Counts` (harness/report/summary.py), as on the console and in JUnit."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.report.cases import case_body, load_case, problem_html
from harness.report.markup import clean as _clean
from harness.report.markup import esc as _esc
from harness.report.summary import AloneRerun, BucketSummary, CoverageCell, FixedCase, RunSummary

_CSS = """
:root{--new:#c62828;--known:#b08800;--fixed:#2e7d32;--muted:#57606a;--line:#d0d7de;--code:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1f2328;background:#fff}
main{max-width:1180px;margin:0 auto;padding:18px 28px 80px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:34px 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:16px 0 6px}
.sub{color:var(--muted);margin-bottom:14px}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace}
.tiles{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.tile{border:1px solid var(--line);border-radius:6px;padding:6px 14px;min-width:112px}
.tile b{display:block;font-size:22px}.tile span{color:var(--muted);font-size:12px}
.tile.new b{color:var(--new)}.tile.known b{color:var(--known)}.tile.fixed b{color:var(--fixed)}
.tile.zero b{color:var(--muted)}
.toc{margin:6px 0 0;padding-left:20px}.toc li{margin:2px 0}
.bucket{border:1px solid var(--line);border-left:6px solid var(--new);border-radius:6px;margin:14px 0;padding:10px 16px}
.bucket.known{border-left-color:var(--known)}.bucket.fixed{border-left-color:var(--fixed)}
.sig{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:15px;font-weight:600;word-break:break-all}
.meta{color:var(--muted);margin:2px 0 6px}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;background:#eef1f4;margin-right:4px}
.badge.new{background:#ffebe9;color:var(--new)}.badge.known{background:#fff8c5;color:#7d5e00}.badge.fixed{background:#dafbe1;color:var(--fixed)}
pre{background:var(--code);border:1px solid var(--line);border-radius:4px;padding:8px 10px;overflow-x:auto;font-size:12.5px;margin:4px 0}
pre.msg{white-space:pre-wrap;word-break:break-word;background:#fff}
.fault{background:#ffebe9;color:var(--new)}
.problem{color:var(--new);font-weight:600}
details{margin:6px 0}summary{cursor:pointer;color:#0969da}
table{border-collapse:collapse;margin:4px 0 10px}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:right}th{background:#f6f8fa}
td.name,th.name{text-align:left}
table.grid td{width:74px;height:44px;text-align:center;vertical-align:middle;padding:2px;font-size:12px;line-height:1.2}
table.grid td small{display:block;color:var(--muted);font-size:10.5px}
table.grid td.ok{background:#f6f8fa;color:#8c959f}
table.grid td.bad{color:#fff;font-weight:600}table.grid td.bad small{color:#ffe}
.grids{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
.grids caption{caption-side:top;text-align:left;color:var(--muted);font-size:12px}
td.gap{background:#fff4e5;color:#b26a00}
.bar{display:inline-block;height:9px;background:#54aeff;vertical-align:middle;margin-right:6px}
.pivots{display:flex;flex-wrap:wrap;gap:8px 28px;align-items:flex-start}
table.stats td.name:last-child{min-width:150px}
"""

# The page loads nothing: this policy makes any accidental external reference a console
# error (caught by the render test) instead of a silent network request.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def html_page(summary: RunSummary, report_dir: Path) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_esc(_CSP)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>shardfuzz: {summary.counts.new_buckets} new, {summary.counts.known_buckets} known — "
        f"jax {_esc(summary.jax_version)}</title>",
        f"<style>{_CSS}</style></head><body><main>",
        _header(summary),
        _section("New", "new", summary.new, report_dir, "No new divergences."),
        _section("Still failing", "still", summary.still, report_dir, "Nothing from the corpus still fails."),
        _section("Known", "known", summary.known, report_dir, "No known divergences seen in this run."),
        _section("Policy (jax's choice, not a bug)", "policy", summary.policy, report_dir,
                 "No divergence of a policy entry (a jax limitation, feature request or message wording) in this run."),
        _fixed_section(summary.fixed, report_dir),
        _alone_section(summary.reruns),
        _coverage(summary.coverage),
        _cells(summary),
        _statistics(summary.statistics),
        "</main></body></html>",
    ]
    return _clean("\n".join(parts)) + "\n"


def _tile(value: object, label: str, cls: str = "") -> str:
    return f'<div class="tile {cls}"><b>{_esc(value)}</b><span>{_esc(label)}</span></div>'


def _header(s: RunSummary) -> str:
    c = s.counts
    out = [
        "<header><h1>shardfuzz run</h1>",
        f'<div class="sub">jax {_esc(s.jax_version)} · seed {_esc(s.seed)} · modes {_esc(", ".join(s.modes) or "?")}'
        f" · {_esc(s.elapsed_s)} s{_shards(s)}</div>",
        f'<p class="counts">{_esc(c.line())}</p>',
        *([f'<p class="meta">worker time: {_esc(s.worker_time.line())}</p>'] if s.mode_time else []),
        *([f'<p class="meta">{_esc(s.left_over.line())}</p>'] if s.left_over.total else []),
        '<div class="tiles">',
        _tile(c.new_buckets, "new buckets", "new" if c.new_buckets else "zero"),
        _tile(c.still_failing_buckets, "still failing buckets", "new" if c.still_failing_buckets else "zero"),
        _tile(c.known_buckets, "known buckets", "known" if c.known_buckets else "zero"),
        _tile(c.fixed_cases, "fixed", "fixed" if c.fixed_cases else "zero"),
        _tile(c.programs_run, "programs run"),
        _tile(c.failing_programs, "failing programs"),
        _tile(c.divergences, "divergences (unexplained)"),
        _tile(c.suppressed, "known divergences"),
        _tile(c.policy, "policy divergences"),
    ]
    if c.slow or c.flaky:
        out.append(_tile(c.slow, "slow (passed alone)"))
        out.append(_tile(c.flaky, "flaky (passed alone)"))
    if c.not_done:
        out.append(_tile(c.not_done, "not done (time up)"))
    if s.accidentally_invalid:
        out.append(_tile(s.accidentally_invalid, "accidentally invalid"))
    out.append("</div>")
    unseen = s.unseen_suppressions
    ids = ", ".join(f"<code>{_esc(u)}</code>" for u in unseen)
    out.append(f"<p><b>Unseen known entries</b> ({len(unseen)}; nothing in this run matched them): {ids}</p>"
               if unseen else "<p><b>Unseen known entries</b>: none</p>")
    out.append(_entries(s))
    if s.new:
        items = "".join(f'<li><a href="#new-{i}" class="mono">{_esc(b.signature)}</a> × {_esc(b.count)}</li>'
                        for i, b in enumerate(s.new))
        out.append(f'<ul class="toc">{items}</ul>')
    out.append("</header>")
    return "\n".join(out)


def _shards(s: RunSummary) -> str:
    """Which shard this is (--shard), or which reports were merged into it."""
    if s.merged_from:
        return f" · merged from {len(s.merged_from)} reports: {_esc(', '.join(s.merged_from))}"
    return f" · shard {_esc(s.shard)}" if s.shard else ""


def _entries(s: RunSummary) -> str:
    """Every known entry's status in this run (matched, unseen, fixed, not this version)."""
    if not s.known_entries:
        return ""
    rows = "".join(
        f'<tr><td class="name mono">{_esc(e.id)}</td><td><span class="badge {"fixed" if e.status == "fixed" else "known"}">'
        f'{_esc(e.status)}</span></td><td>{_esc(e.count)}</td><td class="mono">{_esc(e.jax_versions)}</td>'
        f'<td class="name mono">{_esc(e.case)}</td><td class="name">{_esc(e.link)}</td></tr>'
        for e in s.known_entries
    )
    tally = ", ".join(f"{sum(1 for e in s.known_entries if e.status == st)} {st}"
                      for st in ("matched", "unseen", "fixed", "not_this_version"))
    return (f'<details id="entries"><summary><b>Known entries</b>: {tally}</summary><table>'
            '<tr><th class="name">entry</th><th>status</th><th>divergences explained</th><th>jax_versions</th>'
            f'<th class="name">own case</th><th class="name">link</th></tr>{rows}</table></details>')


def _section(title: str, cls: str, buckets: Sequence[BucketSummary], report_dir: Path, empty: str) -> str:
    out = [f'<section id="{cls}"><h2>{title} ({len(buckets)})</h2>']
    if not buckets:
        out.append(f"<p>{_esc(empty)}</p>")
    for i, b in enumerate(buckets):
        out.append(_bucket(b, f"{cls}-{i}", cls, report_dir))
    out.append("</section>")
    return "\n".join(out)


def _bucket(b: BucketSummary, anchor: str, cls: str, report_dir: Path) -> str:
    case = load_case(b.case, b.signature, report_dir)
    # show the minimized program when there is a readable one, else the original
    shown, label, problems = case, "program", []
    if b.minimized_case:
        small = load_case(b.minimized_case, b.signature, report_dir)
        if small.problem is None:
            shown, label = small, "minimized program"
        else:
            problems.append(small)
    if shown is case and case.problem:
        problems.append(case)
    status = (f'<span class="badge known">known: {_esc(b.suppressed_by)}</span>' if b.known
              else f'<span class="badge">policy: {_esc(b.suppressed_by)}</span>' if b.is_policy
              else '<span class="badge new">new</span>' if b.new else '<span class="badge new">still failing</span>')
    badges = [status, f'<span class="badge">{_esc(b.kind)}</span>', f'<span class="badge">mode {_esc(b.mode)}</span>']
    out = [
        f'<article class="bucket {cls}" id="{_esc(anchor)}">',
        f'<div class="sig">{_esc(b.signature)}</div>',
        f'<div class="meta">{"".join(badges)} {_esc(b.count)} program(s)</div>',
        f'<pre class="msg">{_esc(b.message)}</pre>',
    ]
    out.extend(problem_html(c) for c in problems)
    out.extend(case_body(shown, label, b.mode, b.signature))
    if shown is not case:
        out.append(f'<div class="meta">original case: <code>{_esc(case.path)}</code></div>')
    out.append("</article>")
    return "\n".join(out)


def _alone_section(reruns: Sequence[AloneRerun]) -> str:
    """Crashes and timeouts that did not happen again when run alone: not failures."""
    if not reruns:
        return ""
    rows = "".join(
        f'<tr><td class="name"><span class="badge">{_esc(r.verdict)}</span></td><td class="name mono">{_esc(r.mode)}</td>'
        f'<td class="name">{_esc(r.under_load)}</td><td>{r.alone_s:.1f}</td><td class="name mono">{_esc(r.case)}</td></tr>'
        for r in reruns)
    return ('<section id="alone"><h2>Slow and flaky (' + str(len(reruns)) + ')</h2>'
            "<p>Crashes and timeouts no known entry explains are run again alone on their worker with a longer limit "
            "before they are reported. These did not happen again: a timeout that finished alone is <i>slow</i>, a crash "
            "that did not happen again <i>flaky</i>. Neither is a failure.</p>"
            '<table><tr><th class="name">verdict</th><th class="name">mode</th><th class="name">first</th>'
            f'<th>seconds alone</th><th class="name">case</th></tr>{rows}</table></section>')


def _fixed_section(fixed: Sequence[FixedCase], report_dir: Path) -> str:
    out = [f'<section id="fixed"><h2>Fixed ({len(fixed)})</h2>']
    if not fixed:
        out.append("<p>Nothing that failed before passes now.</p>")
    for i, f in enumerate(fixed):
        sig = ", ".join(f.signatures)  # (a fixed case is written with all the signatures it showed)
        case = load_case(f.case, f.signatures[0] if f.signatures else "?", report_dir)
        out += [
            f'<article class="bucket fixed" id="fixed-{i}"><div class="sig">{_esc(sig)}</div>',
            '<div class="meta"><span class="badge fixed">fixed</span> no longer diverges</div>',
        ]
        if case.problem:
            out.append(problem_html(case))
        # no diff grid: it would show the old failure, which no longer happens
        out.extend(case_body(case, "program that diverged before", "jit", sig, with_grid=False))
        out.append("</article>")
    out.append("</section>")
    return "\n".join(out)


# ------------------------------------------------------------------- coverage, statistics


def _pivot(rows: Sequence[CoverageCell], column: str, label: str) -> str:
    """Counts collective × `column`, summed over the other columns; an empty cell is a
    combination the run never exercised, shaded so gaps stand out."""
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for r in rows:
        counts[(r.collective, str(getattr(r, column)))] += r.count
    collectives = sorted({c for c, _ in counts}, key=lambda c: (c == "none", c))
    cols = sorted({v for _, v in counts})
    head = "".join(f"<th>{_esc(c)}</th>" for c in cols)
    body = []
    for c in collectives:
        cells = "".join(
            '<td class="gap">0</td>' if not counts.get((c, v)) else f"<td>{counts[(c, v)]}</td>"
            for v in cols
        )
        total = sum(counts.get((c, v), 0) for v in cols)
        body.append(f'<tr><td class="name mono">{_esc(c)}</td>{cells}<td><b>{total}</b></td></tr>')
    return (
        f'<table class="pivot" data-pivot="{_esc(column)}"><caption>collective × {_esc(label)}</caption>'
        f'<tr><th class="name">collective</th>{head}<th>total</th></tr>{"".join(body)}</table>'
    )


def _coverage(rows: Sequence[CoverageCell]) -> str:
    out = ['<section id="coverage"><h2>Coverage</h2>']
    if not rows:
        out.append("<p>No coverage recorded.</p></section>")
        return "\n".join(out)
    out.append(
        '<p class="meta">Programs per collective (× mode: checked in that mode; the other tables sum over modes, '
        "so a program counts once per mode). Shaded 0: never exercised.</p>"
    )
    out.append('<div class="pivots">')
    for column, label in (
        ("mode", "mode"),
        ("mesh_rank", "mesh rank"),
        ("dtype", "dtype"),
        ("spec", "in_spec pattern"),
    ):
        out.append(_pivot(rows, column, label))
    out.append("</div></section>")
    return "\n".join(out)


def _statistics(stats: Mapping[str, float]) -> str:
    """Event shares as one small table per event prefix ('op', 'mesh rank', ...), groups
    in name order and rows sorted by share, so the rare draws of each kind sit at the
    bottom of their table."""
    out = ['<section id="statistics"><h2>Statistics</h2>']
    if not stats:
        out.append("<p>No statistics recorded.</p></section>")
        return "\n".join(out)
    out.append(
        '<p class="meta">Share of generated programs in which each Hypothesis event occurred.</p>'
    )
    groups: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for name, share in stats.items():
        group, _, rest = name.partition(": ")
        groups[group if rest else "other"].append((rest or name, float(share)))
    out.append('<div class="pivots">')
    for group in sorted(groups, key=lambda g: (g == "other", g)):
        rows = []
        for name, share in sorted(groups[group], key=lambda r: (-r[1], r[0])):
            rows.append(
                f'<tr><td class="name">{_esc(name)}</td><td class="name"><span class="bar" '
                f'style="width:{share * 90:.0f}px"></span>{100 * share:.1f}%</td></tr>'
            )
        out.append(
            f'<table class="stats"><tr><th class="name">{_esc(group)}</th><th class="name">share</th></tr>'
            f"{''.join(rows)}</table>"
        )
    out.append("</div></section>")
    return "\n".join(out)


def _cells(s: RunSummary) -> str:
    """Configuration cells × mode: the program index of the first check (its time in the
    title), shaded where no check reached it, with the reason when it cannot be reached."""
    if not s.cells:
        return ""
    modes = list(dict.fromkeys(c.mode for c in s.cells))
    by = {(c.cell, c.mode): c for c in s.cells}
    names = list(dict.fromkeys(c.cell for c in s.cells))
    missed = [c for c in s.cells if not c.checks and not c.why]
    out = ['<section id="cells"><h2>Configuration cells</h2>',
           f'<p class="meta">{_esc(s.cell_coverage.line())} (a reason in each cell\'s title)'
           + ("; the first not reached: " + ", ".join(f"<code>{_esc(c.cell)} × {_esc(c.mode)}</code>" for c in missed[:40]) if missed else "") + "</p>",
           '<details><summary>every cell</summary><table class="cells"><tr><th class="name">cell</th>'
           + "".join(f"<th>{_esc(m)}</th>" for m in modes) + "</tr>"]
    for n in names:
        row = [f'<tr><td class="name mono">{_esc(n)}</td>']
        for m in modes:
            c = by.get((n, m))
            if c is None or not c.checks:
                why = c.why if c is not None else ""
                row.append(f'<td class="gap" title="{_esc(why or "not reached")}">{"n/a" if why else "0"}</td>')
            else:
                row.append(f'<td title="{c.checks} checks; first at {c.first_s}s">#{c.first_program}</td>')
        out.append("".join(row) + "</tr>")
    out.append("</table></details></section>")
    return "\n".join(out)
