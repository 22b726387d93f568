"""How qualify judges one case on one jax: the same steps a fuzz run takes.

1. `main`: the case in every mode, compared with the oracle;
2. `probe`: when a value went wrong, the probe run that puts it on the op that first
   goes wrong (harness/judge/check.py `probe_mode`), so a known entry scoped to an op
   explains only that op's damage;
3. `derived`: when known entries explain every divergence, the program without those
   bugs (harness/judge/known.py `derived_program`: an entry's rewrite, checked whole, or
   the outputs no buggy op reaches) goes through the same steps, up to `MAX_DEPTH`
   times. A divergence there is the case's failure: a known bug never excuses the rest
   of the program.

`Judge` is driven by whoever runs jax: `run_column` (a worker pool) submits each `Job` it
returns and hands back what the workers saw; `qualify --rejudge` hands back the saved
observations of the same steps. Every step's observations are saved, so a rejudge sees
exactly what the run saw.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from harness.campaign.versions import Cell
from harness.judge.check import evaluate, localise_values, probe_mode
from harness.judge.known import derived_program, explain_all, find
from oracles import predict
from programs.model import Program

MAX_DEPTH = 3  # derived programs of derived programs: each removes at least one known bug


@dataclass(frozen=True)
class Step:
    """One job of a case's judgement: its `main` run, the `probe` run of its program at
    `depth`, or its `derived` program at `depth` (1: the case without its known bugs)."""

    case: str
    stage: str  # main | probe | probe:MEMBER | derived
    depth: int = 0


@dataclass(frozen=True)
class Job:
    program: Program
    modes: tuple[str, ...]
    step: Step


@dataclass(frozen=True)
class Outcome:
    """The case's verdict, and the check whose divergences it reports (the derived
    program's, when that is where the unexplained divergence is)."""

    cell: Cell
    result: Any  # harness.judge.check.CheckResult


def verdict(res: Any, sups: list[Any], jax_version: str) -> Cell:
    """The verdict on one CheckResult (harness.judge.check) under the known divergences."""
    unexplained, known = [], []
    for d in res.divergences:
        s = find(sups, d, res.divergences, res.program, res.prediction, jax_version)
        if s is None:
            unexplained.append(d)
        elif s.id not in known:
            known.append(s.id)
    unsupported = [f"{o.mode}: {o.error_message}" for o in res.observations if o.status == "unsupported"]
    statuses = {o.mode: o.status for o in res.observations}
    if unexplained:
        sigs = list(dict.fromkeys(d.signature for d in unexplained))
        return Cell("fail", sigs, known, unsupported, unexplained[0].message, statuses=statuses)
    if known:
        return Cell("known", [], known, unsupported, statuses=statuses)
    # unsupported: no mode could run it here (a feature this jax lacks); a mode that does
    # not apply (vmap_spmd without a free axis, grad without a float argument, ...) or
    # that this jax lacks is listed in the cell, and the modes that ran decide
    if unsupported and all(st == "unsupported" for st in statuses.values()):
        return Cell("unsupported", [], [], unsupported, statuses=statuses)
    return Cell("pass", [], [], unsupported, statuses=statuses)


class Judge:
    """The steps of every case of one column (one jax version)."""

    def __init__(self, preds: dict[str, Any], sups: list[Any], jax_version: str) -> None:
        self.preds, self.sups, self.jax_version = preds, sups, jax_version
        self._probing: dict[tuple[str, int], Any] = {}  # (case, depth) -> result awaiting its probe
        self._top: dict[str, Cell] = {}  # case -> the verdict on the case itself (depth 0)

    def start(self, name: str, program: Program, modes: tuple[str, ...]) -> Job:
        return Job(program, modes, Step(name, "main"))

    def done(self, step: Step, program: Program, observations: list[Any]) -> tuple[list[Job], Outcome | None]:
        """What the workers saw for `step`: the next jobs of this case, or its outcome."""
        if step.stage.startswith("probe"):
            res = self._probing.pop((step.case, step.depth))
            if not observations:  # (none: a rejudge of a run that did not need this probe)
                return self._conclude(step.case, step.depth, res)
            res = localise_values(res, observations[0])
        else:
            pred = self.preds[step.case] if step.depth == 0 else predict(program)
            res = evaluate(program, observations, pred)
        probe = probe_mode(res)
        if probe is not None:
            # one probe run per batch member the divergences need (`probe_mode`); member
            # 0's is stage "probe", so the observations saved before members had probes still read
            self._probing[(step.case, step.depth)] = res
            stage = "probe" if probe.member == 0 else f"probe:{probe.member}"
            return [Job(probe.program, (probe.mode,), Step(step.case, stage, step.depth))], None
        return self._conclude(step.case, step.depth, res)

    def cut_short(self, step: Step) -> Outcome | None:
        """`step` (a derived program) cannot be run: a rejudge whose saved run lacks it.
        The case's outcome from what is known so far, saying so."""
        top = self._top.get(step.case)
        if top is None:
            return None
        note = "the program without its known bugs was not run in the saved report (qualify it again to check it)"
        return Outcome(replace(top, message=note), None)

    def _conclude(self, name: str, depth: int, res: Any) -> tuple[list[Job], Outcome | None]:
        cell = verdict(res, self.sups, self.jax_version)
        if depth == 0:
            self._top[name] = cell
        top = self._top[name]
        if cell.verdict == "known" and depth < MAX_DEPTH:
            explained = explain_all(self.sups, res.divergences, res.program, res.prediction, self.jax_version)
            used = list({x.entry.id: x.entry for x in explained if x.entry is not None}.values())
            q = derived_program(used, res.program, res.prediction)
            if q is not None:
                ran = tuple(dict.fromkeys(o.mode for o in res.observations
                                          if o.status != "unsupported" and not o.mode.startswith("probe")))
                return [Job(q, ran or ("abstract",), Step(name, "derived", depth + 1))], None
        if depth == 0:
            return [], Outcome(cell, res)
        known = list(dict.fromkeys(top.known + cell.known))
        if cell.verdict == "fail":
            msg = f"the program without its known bugs ({', '.join(top.known)}) still diverges: {cell.message}"
            return [], Outcome(Cell("fail", cell.signatures, known, top.unsupported, msg, statuses=top.statuses), res)
        return [], Outcome(replace(top, known=known), None)
