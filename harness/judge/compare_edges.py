"""The effects of the body and the donation around it, against the prediction
(oracles/effects.py): each call a jax.debug.callback / jax.debug.print made must be one
device's (its coordinates along the manual axes and its block of the value; under vmap,
one batch member's), and each donated argument must afterwards be deleted or hold its
value. How many calls, and in which order, is not predicted (jax's docstring: they
"could be dropped, duplicated, or potentially reordered")."""

from __future__ import annotations

import numpy as np

from harness.judge.divergence import Divergence, DivergenceKind, short
from harness.run.observation import EffectCall, Observation
from oracles.effects import call_matches, device_calls
from oracles.prediction import EffectPrediction, Prediction
from programs.model import Program


def _fits(p: Program, e: EffectPrediction, c: EffectCall) -> bool:
    if e.blocks is None:
        return True
    value = c.value
    if c.printed:  # (a printed value's numbers, flat: in the block's shape where they are as many)
        shape = e.blocks.shape[len(p.mesh.sizes):]
        if value.size != int(np.prod(shape, dtype=np.int64)):
            return False
        value = value.reshape(shape)
    return call_matches(p, e, c.coords, value)


def compare_effects(p: Program, members: list[Prediction], obs: Observation) -> list[Divergence]:
    """Each call against the calls the effect may make in any of `members` (the plain
    prediction; under vmap, each batch member's): the first call of each effect that is
    none of them is a divergence."""
    if not p.effects or not members or len(members[0].effects) != len(p.effects):
        return []
    out = []
    bad: set[int] = set()
    for n, c in enumerate(obs.calls):
        if c.effect in bad or not 0 <= c.effect < len(p.effects):
            continue
        if any(_fits(p, m.effects[c.effect], c) for m in members):
            continue
        bad.add(c.effect)
        e = members[0].effects[c.effect]
        kind = p.effects[c.effect].kind
        near = [blk for _, cs, blk in device_calls(p, e) if cs == c.coords] if e.blocks is not None else []
        want = f"that device's block {short(near[0])}" if near else f"the coordinates of a device along {list(e.manual)}"
        out.append(Divergence(
            DivergenceKind.VALUE, obs.mode,
            f"(mode={obs.mode}) jax.debug.{kind} of value {e.value} (effect {c.effect}), call {n}: coordinates "
            f"{list(c.coords)} along {list(e.manual)} with value {short(c.value)}, but oracle predicts {want}",
            f"debug_{kind}", op_index=e.value - len(p.inputs) if e.value >= len(p.inputs) else None))
    return out


def compare_donation(p: Program, obs: Observation) -> list[Divergence]:
    """Each donated argument after the call: deleted and unreadable, or intact."""
    out = []
    for d in obs.donated:
        if d.intact:
            continue
        what = "is deleted, yet reading it gave values" if d.deleted else "is not deleted, yet no longer holds its value"
        out.append(Divergence(
            DivergenceKind.VALUE, obs.mode,
            f"(mode={obs.mode}) donated argument {d.index} {what}, but oracle predicts it deleted (reading it raises) "
            "or unchanged", "donation"))
    return out
