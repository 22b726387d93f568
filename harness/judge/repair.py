"""Differential root-causing: a known entry explains a divergence when its repair removes it.

Every entry of harness/data/known_divergences.toml carries a repair (harness/judge/known.py
`REPAIRS`): the same program without its bug. `explains` names the entries that may have
caused a divergence (its signature, scope and features); the repaired program, checked in
the divergence's mode, decides:

- a divergence is known when the repaired program no longer shows it (its signature) in
  that mode, as a divergence no entry explains there in turn;
- whatever the repaired program still shows is new, whatever its kind or op;
- an entry whose repair is `without_mode` (the bug is its mode's; the other modes check
  the program) matches only its exact signature, and nothing else is run for it.

`repair_jobs` says which repaired programs to check, in which modes (the pure part a
planner calls); `confirm` re-labels a check's explanations with what the repaired
programs showed; `judge` does both, recursively, with a `check` function the caller
gives (replay: a worker pool), up to `MAX_DEPTH` repairs deep.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from harness.judge.check import CheckResult
from harness.judge.divergence import Divergence, DivergenceKind
from harness.judge.known import Explained, KnownDivergence, derived_program, explain_all, whole
from oracles.prediction import Prediction
from programs.model import Program
from programs.serialize import program_id

MAX_DEPTH = 3  # repaired programs of repaired programs: each removes at least one known bug


def repair(e: KnownDivergence, p: Program, pred: Prediction) -> Program | None:
    """The program `p` without entry `e`'s bug (`pred`: the oracle's prediction for `p`):
    its rewrite (every op kept), or `p` without the ops its features hold on; None when
    the repair is the mode left out or leaves nothing to check."""
    return derived_program([e], p, pred)


@dataclass(frozen=True)
class RepairJob:
    """A repaired program to check: `program` (the parent without the bugs of `entries`)
    in `modes`; `whole`: it keeps every op and output of its parent (a rewrite)."""

    program: Program
    modes: tuple[str, ...]
    entries: tuple[str, ...]
    whole: bool


def repair_jobs(explained: Sequence[Explained], res: CheckResult) -> tuple[RepairJob, ...]:
    """The repaired programs a check's explained divergences need, one per distinct
    program: each mode's program drops only the bugs of the entries that explained that
    mode's own divergences; a rewrite runs in every mode the program ran in (it keeps
    every op: the whole program is checked again)."""
    p = res.program
    ran = tuple(dict.fromkeys(o.mode for o in res.observations
                              if o.mode not in ("probe",) and not o.mode.startswith("probe") and o.status != "unsupported"))
    per_mode: dict[str, dict[str, KnownDivergence]] = {}
    for x in explained:
        if x.entry is not None and x.divergence.kind != DivergenceKind.MODE_DISAGREEMENT:
            for m in x.divergence.mode.split(","):
                per_mode.setdefault(m, {})[x.entry.id] = x.entry
    groups: dict[str, tuple[Program, set[str], set[str], bool]] = {}
    for m, entries in per_mode.items():
        q = derived_program(list(entries.values()), p, res.prediction)
        if q is None:
            continue
        is_whole = whole(q, p)
        _, modes, ids, _ = groups.setdefault(program_id(q), (q, set(), set(), is_whole))
        modes.add(m)
        ids.update(entries)
        if is_whole:
            modes.update(ran)
    order = {m: i for i, m in enumerate(ran)}
    return tuple(RepairJob(q, tuple(sorted(modes, key=lambda m: order.get(m, len(order)))), tuple(sorted(ids)), w)
                 for q, modes, ids, w in groups.values())


@dataclass(frozen=True)
class Verdict:
    """A check judged by repair: each divergence with the entry whose repair removed it
    (None: new), and the repaired programs' own verdicts."""

    result: CheckResult
    judged: tuple[Explained, ...]
    repaired: tuple[tuple[RepairJob, Verdict], ...] = ()

    def new(self) -> tuple[Divergence, ...]:
        """Every divergence no entry's repair removed, here and in the repaired programs."""
        own = tuple(x.divergence for x in self.judged if x.entry is None)
        return own + tuple(d for _, v in self.repaired for d in v.new())

    def known(self) -> tuple[str, ...]:
        """The entries whose repair removed a divergence, here or in a repaired program."""
        out = [x.entry.id for x in self.judged if x.entry is not None]
        out += [k for _, v in self.repaired for k in v.known()]
        return tuple(dict.fromkeys(out))


def confirm(explained: Sequence[Explained], repaired: Sequence[tuple[RepairJob, Sequence[Explained]]]) -> tuple[Explained, ...]:
    """`explained` (a check's divergences with their candidate entries) re-labelled by the
    repaired programs' judged divergences: a divergence stays known unless a repaired
    program of its entry, checked in its mode, still shows its signature as new. A mode
    disagreement is known when every other divergence of the check still is."""
    out = []
    for x in explained:
        d, e = x.divergence, x.entry
        if e is None or d.kind == DivergenceKind.MODE_DISAGREEMENT:
            out.append(x)
            continue
        still = any(e.id in job.entries and set(d.mode.split(",")) & set(job.modes)
                    and any(y.entry is None and y.divergence.signature == d.signature for y in ys)
                    for job, ys in repaired)
        out.append(Explained(d, None) if still else x)
    own = [x for x in out if x.divergence.kind != DivergenceKind.MODE_DISAGREEMENT]
    if any(x.entry is None for x in own):
        out = [Explained(x.divergence, None) if x.divergence.kind == DivergenceKind.MODE_DISAGREEMENT else x for x in out]
    return tuple(out)


def judge(entries: Sequence[KnownDivergence], res: CheckResult, check: Callable[[Program, tuple[str, ...]], CheckResult],
          jax_version: str, depth: int = 0) -> Verdict:
    """`res` judged by repair (see the module doc): its divergences explained by cause,
    each explaining entry's repaired program checked with `check` in the modes it needs
    and judged the same way, and the explanations confirmed by what those showed."""
    explained = explain_all(entries, res.divergences, res.program, res.prediction, jax_version)
    if depth >= MAX_DEPTH or not any(x.entry is not None for x in explained):
        return Verdict(res, explained)
    done: list[tuple[RepairJob, Verdict]] = []
    for job in repair_jobs(explained, res):
        v = judge(entries, check(job.program, job.modes), check, jax_version, depth + 1)
        done.append((job, v))
    judged = attribute(confirm(explained, [(job, v.judged) for job, v in done]), res.program, done, explained)
    return replace(Verdict(res, judged), repaired=tuple(done))


def _modes(d: Divergence) -> set[str]:
    return set(d.mode.split(","))


def overlaps(a: Divergence, b: Divergence) -> bool:
    """Whether `b` is where `a` would show: a mode in common, and the same output (or
    either has none)."""
    return bool(_modes(a) & _modes(b)) and (a.output is None or b.output is None or a.output == b.output)


def keeps_outputs(q: Program, p: Program) -> bool:
    """Whether the repaired program `q` checks every output of `p` at the same index: a
    rewrite, or `p` without ops no output reads."""
    return len(q.outputs) == len(p.outputs) and q.out_specs == p.out_specs


def _removed_by(d: Divergence, p: Program, job: RepairJob, v: Verdict, fallback: KnownDivergence | None
                ) -> KnownDivergence | None:
    """The entry whose repair removed `d` in the repaired program `job` (judged `v`):
    None unless the repaired program keeps `d`'s output, ran in `d`'s modes, and shows
    nothing new there (at `d`'s output, or anywhere for a divergence of no output). The
    entry named is the one that explains what the repaired program still showed there (a
    repair may move where a bug shows), else `fallback` (the entry repaired), where the
    repaired program shows nothing new in those modes at all."""
    if not (job.whole or keeps_outputs(job.program, p)) or not (_modes(d) & set(job.modes)):
        return None
    if any(overlaps(d, n) for n in v.new()):
        return None
    for y in v.judged:
        if y.entry is not None and _modes(y.divergence) & _modes(d) and (d.output is None or y.divergence.output == d.output):
            return y.entry
    for sub_job, sub in v.repaired:
        e = _removed_by(d, v.result.program, sub_job, sub, None)
        if e is not None:
            return e
    # (the job's own entry only where the repaired program shows nothing new in those modes
    # at all, and only a bug's: a divergence no policy entry's signature names is never filed
    # as jax's choice by its repair alone, which may remove a bug beside the policy one)
    if fallback is None or fallback.policy:
        return None
    return fallback if not any(_modes(n) & _modes(d) for n in v.new()) else None


def attribute(judged: Sequence[Explained], p: Program, done: Sequence[tuple[RepairJob, Verdict]],
              explained: Sequence[Explained]) -> tuple[Explained, ...]:
    """Each divergence no entry's signature matched, but that a repaired program of `p`
    no longer shows (in its modes, at its output) while that program was repaired only of
    known bugs: known, by the entry whose repair removed it (a known bug showing under
    another guise: a wrong shape raised at the op after the buggy one, a mode the entry
    does not list). A mode disagreement left is then known when every other divergence is."""
    own_entries = {x.entry.id: x.entry for x in explained if x.entry is not None}
    out = []
    for x in judged:
        if x.entry is not None:
            out.append(x)
            continue
        e = next((got for job, v in done
                  if (got := _removed_by(x.divergence, p, job, v, own_entries.get(job.entries[0]))) is not None), None)
        out.append(Explained(x.divergence, e))
    own = [x for x in out if x.divergence.kind != DivergenceKind.MODE_DISAGREEMENT]
    if own and all(x.entry is not None for x in own):
        first = own[0].entry
        out = [Explained(x.divergence, first) if x.entry is None else x for x in out]
    return tuple(out)
