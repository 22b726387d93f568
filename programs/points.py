"""Where derivatives are taken: shared by the grad mode (jax side) and the oracle.

Float arguments are moved off the integers (a deterministic fraction per element) so
that casts to int32 and max/min ties are not hit at the point; tangents and cotangents
are deterministic small values, rounded to float32 so both sides see the same numbers.
"""

from __future__ import annotations

import numpy as np

from programs.model import Program


def _f32(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float32).astype(np.float64)


def grad_point(p: Program) -> list[np.ndarray]:
    """Arguments for the grad mode: float ones shifted by a fraction in [0.1, 0.4)."""
    out = []
    for i, x in enumerate(p.inputs):
        a = x.materialize()
        if x.dtype == "float32":
            frac = np.random.default_rng(x.seed + 31 * i + 1).uniform(0.1, 0.4, size=a.shape)
            a = _f32(a.astype(np.float64) + frac)
        out.append(a)
    return out


def tangents(p: Program) -> list[np.ndarray | None]:
    """A direction v for every float argument (None for int arguments)."""
    return [
        _f32(np.random.default_rng(1000 + i).uniform(-1, 1, size=x.shape)) if x.dtype == "float32" else None
        for i, x in enumerate(p.inputs)
    ]


def cotangent(k: int, shape: tuple[int, ...]) -> np.ndarray:
    """A weight u for output k (of its global shape)."""
    return _f32(np.random.default_rng(2000 + k).uniform(-1, 1, size=shape))
