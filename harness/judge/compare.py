"""The comparator: the only place that decides what counts as a failure.

`compare(program, prediction, observation)` returns the divergences between what the
oracle predicted and what jax did in one mode; `compare_modes` finds modes that disagree
with each other. Each divergence has a kind, the mode, the output or op at fault, a
message in the form `out[1] (mode=jit): ... but oracle predicts ...`, and a structured
signature that buckets equal bugs together.

Here: errors (crash, timeout, the predicted error, an unexpected one) and which check
applies to which mode. The checks themselves: `compare_outputs.py` (each output, the
vmap batch) and `compare_facts.py` (body value types, lowering, derivatives); the
`Divergence` type is in `divergence.py`, re-exported here.
"""

from __future__ import annotations

from dataclasses import replace

from harness.judge.compare_edges import compare_donation, compare_effects
from harness.judge.compare_facts import compare_grad, compare_lowering, compare_types
from harness.judge.compare_outputs import batch_members, compare_batched, compare_output
from harness.judge.divergence import Divergence, DivergenceKind, producer
from harness.judge.errors import matches
from harness.run.observation import Observation
from oracles.prediction import PredictedError, Prediction
from programs.graph import cone
from programs.model import Program
from programs.points import DERIVATIVE_MODES

__all__ = ["Divergence", "DivergenceKind", "compare", "compare_modes", "producer"]


def compare(p: Program, pred: Prediction, obs: Observation) -> list[Divergence]:
    mode = obs.mode
    if obs.status in ("crash", "timeout"):
        kind = DivergenceKind.CRASH if obs.status == "crash" else DivergenceKind.TIMEOUT
        return [Divergence(kind, mode, f"(mode={mode}) {obs.status}: {obs.error_message}", obs.status)]
    if obs.status == "unsupported":
        return []
    if obs.facts.get("process_errors"):  # the multiprocess mode: the two processes did not agree
        return [Divergence(DivergenceKind.MODE_DISAGREEMENT, mode,
                           f"(mode={mode}) the processes disagree: " + "; ".join(
                               f"process {i}: {e}" for i, e in enumerate(obs.facts["process_errors"])), "processes")]
    if pred.error is not None:
        return _compare_error(p, pred.error, obs)
    if obs.raised:
        return [_unexpected_error(p, obs)]
    return _compare_run(p, pred, obs)


def _compare_error(p: Program, e: PredictedError, obs: Observation) -> list[Divergence]:
    """The oracle predicts an error: jax must raise it, of a type and with a phrase of its
    kind, its message naming every fact."""
    mode = obs.mode
    if not obs.raised:
        return [
            Divergence(
                DivergenceKind.MISSING_ERROR,
                mode,
                f"(mode={mode}) jax raised nothing, but oracle predicts {e.kind.value}: {e.why}",
                e.kind.value,
                op_index=e.op_index,
            )
        ]
    ok, why = matches(e.kind, obs.error_type or "", obs.error_message)
    missing = [f for f in e.facts if f not in obs.error_message] if ok else []
    if ok and not missing:
        return []
    detail = why if not ok else f"the message does not name {missing}"
    # the op being traced when jax raised (its result never recorded), when the
    # mode records types op by op: a wrong error may come from an earlier op; every value
    # recorded: jax raised after the body (while lowering or compiling it, at any op, dead
    # ones too, or checking the out_specs): len(p.body)
    first = next((i for i in range(p.n_values) if i not in obs.value_types), p.n_values) if obs.value_types else None
    raised_at = first - len(p.inputs) if first is not None and first >= len(p.inputs) else None
    return [
        Divergence(
            DivergenceKind.WRONG_ERROR,
            mode,
            f"(mode={mode}) {detail}; jax said {obs.error_type}: {obs.error_message[:300]!r}, "
            f"but oracle predicts {e.kind.value}: {e.why}",
            f"{e.kind.value}->{obs.error_type}",
            op_index=e.op_index,
            raised_at=raised_at,
        )
    ]


def _unexpected_error(p: Program, obs: Observation) -> Divergence:
    """jax raised where the oracle predicts success."""
    # where: the op being traced when jax raised (the first value it never recorded)
    first_missing = next((i for i in range(p.n_values) if i not in obs.value_types), None)
    output = None
    if obs.phase.startswith("read_output"):
        # (reading output K back failed: the divergence is that output's)
        where, first_missing = "read_output", None
        k = obs.phase.partition(":")[2]
        output = int(k) if k.isdigit() else None
    else:
        where = "lowering" if first_missing is None else producer(p, first_missing)
    return Divergence(
        DivergenceKind.UNEXPECTED_ERROR,
        obs.mode,
        f"(mode={obs.mode}) jax raised {obs.error_type}: {obs.error_message[:400]!r}, "
        "but oracle predicts success" + (f" (reading out[{output}] back)" if output is not None else ""),
        f"{where}->{obs.error_type}",
        op_index=None if first_missing is None else first_missing - len(p.inputs),
        output=output,
    )


def _compare_run(p: Program, pred: Prediction, obs: Observation) -> list[Divergence]:
    """jax ran, as the oracle predicts: the body value types, then what the mode checks
    (the lowering, the outputs, the vmap batch, the derivatives)."""
    mode = obs.mode
    out = compare_types(p, pred, obs)
    if mode == "lowering" and obs.facts:
        out.extend(compare_lowering(p, pred, obs))
    if len(obs.outputs) != len(pred.outputs):
        out.append(
            Divergence(
                DivergenceKind.SHAPE,
                mode,
                f"(mode={mode}) {len(obs.outputs)} outputs, but oracle predicts {len(pred.outputs)}",
                "outputs",
            )
        )
        return out
    if mode in ("vmap", "vmap_spmd"):
        out += compare_effects(p, batch_members(p, pred, obs), obs)
        return out + _at_first_wrong_shape(p, out, compare_batched(p, pred, obs))
    if mode in DERIVATIVE_MODES:
        # (their effects' calls carry the primals at the grad point: not compared)
        return out + compare_grad(p, obs)
    out += compare_effects(p, [pred], obs) + compare_donation(p, obs)
    for k, (o, e) in enumerate(zip(obs.outputs, pred.outputs)):
        out.extend(_at_first_wrong_shape(p, out, compare_output(p, k, o, e, mode)))
    return out


def _at_first_wrong_shape(p: Program, types: list[Divergence], outs: list[Divergence]) -> list[Divergence]:
    """An output whose shape is wrong because a body value it depends on already had the
    wrong shape while tracing (compare_types stops at the first) is put on that value's
    op: one bug, one bucket, as value divergences are put on the first op that goes
    wrong (check.localise_values), not on the op that happens to make the output."""
    first = next((d.op_index for d in types if d.kind == DivergenceKind.SHAPE and d.op_index is not None), None)
    if first is None:
        return outs
    op = p.body[first]
    return [replace(d, where=op.kind) if d.kind == DivergenceKind.SHAPE and d.output is not None
            and first in cone(p, p.outputs[d.output]) else d for d in outs]


def compare_modes(p: Program, observations: list[Observation]) -> list[Divergence]:
    """Modes that disagree with each other on whether the program raises.

    (Disagreement on values is already caught mode by mode against the oracle; this
    catches an error that appears in one mode and not another.)"""
    raised = {o.mode: o.raised for o in observations if o.status in ("ok", "error")}
    if len(set(raised.values())) <= 1:
        return []
    yes = sorted(m for m, r in raised.items() if r)
    no = sorted(m for m, r in raised.items() if not r)
    return [
        Divergence(
            DivergenceKind.MODE_DISAGREEMENT,
            ",".join(yes),
            f"modes {yes} raise, modes {no} do not",
            f"raise:{','.join(yes)}",
        )
    ]
