"""How far jax's floating-point result may be from the oracle's: per-dtype precision and
the one rule that turns an op's error terms into a bound.

The oracle computes float values in float64 as real arithmetic on the numbers the
arguments hold (exact for everything the generated programs make but a division), and
carries beside every value a per-element bound on |jax - oracle| (`err`). Each op says
(`OpDef.error`) how the errors of its operands reach its result (`prop`), and how much it
rounds: `terms` roundings of at most `mag` each. The rounding term is then

    u(dtype) * terms * mag      (u: the dtype's unit roundoff, 2**-p)

except where rounding cannot happen: the operands are *clean* (no error, every element an
integer), the result is an integer and `mag` (the largest partial sum any order of
evaluation can reach) is at most 2**p, so every intermediate is an integer the dtype
holds exactly. The bound admits every order of summation and every accumulator at least
as wide as the dtype: XLA:CPU reduces bfloat16 and float16 all-reduces and jnp.sum in
float32 (measured on jax 0.10.2: psum of [256, 1 x 7] in bfloat16 gives 264, the exact
263 rounded once; a chain of bfloat16 adds under jit gives 256, rounded at each step),
and `xla_allow_excess_precision` (default on) lets fused elementwise code keep float32
intermediates. A sum of n terms rounds n - 1 times plus once into the dtype (so
`terms` = n, the group size: the classical gamma_{n-1} bound, Higham, "Accuracy and
Stability of Numerical Algorithms", 2nd ed., eq. 4.4, plus the final conversion); a
pointwise op rounds once. A value that may exceed the dtype's largest finite number
gets an infinite bound: its output is checked for shape and dtype only.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from programs.model import is_float, storage

# precision p (significand bits, the implicit one included): integers up to 2**p are exact
_PRECISION = {"float32": 24, "bfloat16": 8, "float16": 11, "float64": 53}
SAFETY = 1.01  # double rounding through float32 (u + u_f32) and the oracle's own float64 rounding
# a float64 result: the oracle computes in float64 too, so its own rounding is as large
# as jax's, op for op: the bound admits both
SAFETY_F64 = 2 * SAFETY


def precision(dtype: str) -> int:
    return _PRECISION[dtype]


def unit_roundoff(dtype: str) -> float:
    """u = 2**-p: round to nearest is within u * |x| of x (0 for integers: no rounding)."""
    return 2.0 ** -_PRECISION[dtype] if is_float(dtype) else 0.0


def max_finite(dtype: str) -> float:
    return float(ml_dtypes.finfo(storage(dtype)).max) if is_float(dtype) else float("inf")


def smallest_normal(dtype: str) -> float:
    """Below it XLA:CPU may flush to zero: an absolute error of at most this much."""
    return float(ml_dtypes.finfo(storage(dtype)).smallest_normal) if is_float(dtype) else 0.0


def integral(v: np.ndarray) -> np.ndarray:
    """Per element: whether it holds an integer (always, for an integer array)."""
    if v.dtype.kind in "iub":
        return np.ones(v.shape, dtype=bool)
    return np.mod(v, 1) == 0


def is_clean(v: np.ndarray, err: np.ndarray) -> bool:
    """No error anywhere and every element an integer (see the module docstring)."""
    return bool(np.all(err == 0)) and bool(np.all(integral(v)))


def combine(
    v: np.ndarray, dtype: str, prop: np.ndarray | float, mag: np.ndarray | float, terms: int, clean_operands: bool
) -> np.ndarray:
    """The error bound of one op's result `v` (per element, shape v.shape)."""
    prop = np.broadcast_to(np.asarray(prop, dtype=np.float64), v.shape)
    u = unit_roundoff(dtype)
    if u == 0.0:
        return np.array(prop, dtype=np.float64)  # integer arithmetic wraps exactly
    mag = np.broadcast_to(np.asarray(mag, dtype=np.float64), v.shape)
    rounds = mag > 0
    if clean_operands:
        rounds = rounds & ~(integral(v) & (mag <= 2.0 ** _PRECISION[dtype]))
    safety = SAFETY_F64 if dtype == "float64" else SAFETY
    rnd = np.where(rounds, safety * u * terms * mag + terms * smallest_normal(dtype), 0.0)
    err = prop + rnd
    err = np.where(np.isnan(err), np.inf, err)
    # may overflow to inf (or already did, in a wider oracle): nothing is predicted there
    return np.where(np.abs(v.astype(np.float64)) + err >= max_finite(dtype), np.inf, err)
