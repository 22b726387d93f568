"""The corpus: every failing case kept across runs, replayed first by the next run (a
case that no longer shows its signatures is reported fixed)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.campaign.state import Run
from harness.judge.check import CheckResult, check_in_pool
from harness.report.console import VERBOSE
from harness.run.pool import Pool
from programs.errors import ProgramFormatError
from programs.model import Program
from programs.serialize import program_from_dict


def check_sync(run: Run, pool: Pool | None, p: Program) -> CheckResult:
    """One program in the run's modes, start to finish (probe included), outside the
    pipelined loop."""
    return check_in_pool(pool, p, run.cfg.modes)


def load_corpus(corpus: Path) -> list[tuple[Path, Program, set[str]]]:
    """Every case file in the corpus (recursively): its program and the signatures it
    showed when it was saved. A malformed file raises ProgramFormatError naming it."""
    out = []
    for f in sorted(corpus.rglob("*.json")):
        try:
            doc = json.loads(f.read_text())
        except json.JSONDecodeError as e:
            raise ProgramFormatError(f"{f}: line {e.lineno}: not valid JSON ({e.msg})") from None
        if not isinstance(doc, dict) or "program" not in doc:
            continue  # not a case file (e.g. a summary)
        try:
            p = program_from_dict(doc["program"])
        except ProgramFormatError as e:
            raise ProgramFormatError(f"{f}: {e}") from None
        out.append((f, p, {d["signature"] for d in doc.get("divergences", []) if "signature" in d}))
    return out


def replay_corpus(run: Run, pool: Pool | None) -> None:
    """Yesterday's failures first: each corpus case is re-checked; one whose recorded
    signatures no longer appear is reported as fixed."""
    assert run.cfg.corpus is not None
    cases = load_corpus(run.cfg.corpus)
    run.cfg.console.say(f"replaying {len(cases)} corpus cases from {run.cfg.corpus}")
    for i, (f, p, old) in enumerate(cases):
        if run.over_budget():  # (the rest is not done: a result past the budget may be cut short)
            run.left_undone(corpus_cases=len(cases) - i)
            break
        res = check_sync(run, pool, p)
        if run.time_is_up():  # (its check may have been cut short: no `fixed` verdict; what it found is kept)
            if res.divergences:
                run.record(res, from_corpus=True)
            run.left_undone(corpus_cases=len(cases) - i)
            break
        now = {d.signature for d in res.divergences}
        if old and not (old & now):
            run.fixed.append({"case": str(f), "signatures": sorted(old)})
            run.cfg.console.say(f"  fixed: {f.name} ({', '.join(sorted(old))})", VERBOSE)
        run.corpus_replayed += 1
        run.record(res, from_corpus=True)
        run.progress()
