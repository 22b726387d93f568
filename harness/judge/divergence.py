"""Divergences: the judge's verdict type. A divergence has a kind, the mode, a message in
the form `out[1] (mode=jit): ... but oracle predicts ...`, the output or op at fault, and
a structured signature (`kind|mode|where`, never message text) that buckets equal bugs.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from programs.model import Program


class DivergenceKind(str, Enum):
    WRONG_ERROR = "wrong_error"  # jax raised, but not the predicted error
    MISSING_ERROR = "missing_error"  # the oracle predicts an error, jax ran
    UNEXPECTED_ERROR = "unexpected_error"  # jax raised, the oracle predicts success
    SHAPE = "shape"
    DTYPE = "dtype"
    VALUE = "value"
    VMA = "vma"
    SHARDING = "sharding"  # jax.typeof(out).sharding: Explicit axes, unreduced, reduced
    LOWERING = "lowering"
    CRASH = "crash"
    TIMEOUT = "timeout"
    MODE_DISAGREEMENT = "mode_disagreement"


@dataclass(frozen=True)
class Divergence:
    kind: DivergenceKind
    mode: str
    message: str
    where: str  # the op kind or check at fault, or the error kind: part of the signature
    output: int | None = None
    op_index: int | None = None
    bad_devices: tuple[tuple[int, ...], ...] = ()
    max_abs_diff: float | None = None
    device_diffs: tuple[float, ...] = ()  # max |jax - oracle| per bad device, same order
    raised_at: int | None = None  # wrong_error: the body op jax was at when it raised (len(body): after the body; None: unknown)
    members: tuple[int, ...] = ()  # vmap: the batch members whose values differ (Input.member)

    @property
    def signature(self) -> str:
        """Structured bucket key: kind | mode | where. Never derived from message text."""
        return f"{self.kind.value}|{self.mode}|{self.where}"


def producer(p: Program, value: int) -> str:
    op = p.op_of(value)
    return "input" if op is None else op.kind



def short(a: np.ndarray) -> str:
    """An array in one short line, for a divergence's message."""
    return np.array2string(np.asarray(a), threshold=12, edgeitems=2).replace("\n", "")

