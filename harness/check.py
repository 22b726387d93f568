"""Check one program: predict, run it in each mode, compare. The unit of a fuzz run."""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness.compare import Divergence, DivergenceKind, compare, compare_modes
from harness.modes import MODES, Observation
from oracles import predict
from oracles.prediction import Prediction
from programs.model import Program


@dataclass(frozen=True, eq=False)
class CheckResult:
    program: Program
    prediction: Prediction
    observations: tuple[Observation, ...]
    divergences: tuple[Divergence, ...]


def evaluate(p: Program, observations: list[Observation], pred: Prediction | None = None) -> CheckResult:
    """Compare observations (from any process) against the oracle's prediction."""
    pred = pred if pred is not None else predict(p)
    divs: list[Divergence] = []
    for o in observations:
        divs.extend(compare(p, pred, o))
    divs = _localise(divs)
    divs.extend(compare_modes(p, observations))
    return CheckResult(p, pred, tuple(observations), tuple(divs))


def _localise(divs: list[Divergence]) -> list[Divergence]:
    """An error jax raised only when lowering (jit compiles the whole body at once) is put
    on the op that the eager mode, which runs op by op, raised the same exception at."""
    at_op = {
        d.where.split("->")[1]: d.where.split("->")[0]
        for d in divs
        if d.kind == DivergenceKind.UNEXPECTED_ERROR and not d.where.startswith(("lowering", "read_output"))
    }
    out = []
    for d in divs:
        if d.kind == DivergenceKind.UNEXPECTED_ERROR and d.where.startswith("lowering->"):
            exc = d.where.split("->")[1]
            if exc in at_op:
                d = replace(d, where=f"{at_op[exc]}->{exc}")
        out.append(d)
    return out


def check_program(p: Program, modes: tuple[str, ...]) -> CheckResult:
    """Everything in this process (no crash safety): for tests, replay and explain."""
    return evaluate(p, [MODES[m].run(p) for m in modes])
