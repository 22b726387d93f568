"""Where derivatives are taken: shared by the grad mode (jax side) and the oracle.

Float arguments are moved off the integers (a deterministic fraction per element) so
that casts to int32 and max/min ties are not hit at the point; tangents and cotangents
are deterministic small values, rounded to the dtype of the argument (tangent) or the
output (cotangent) they belong to, so both sides see the same numbers.
"""

from __future__ import annotations

import math

import numpy as np

from programs.model import Program, is_float, round_to


def grad_point(p: Program) -> list[np.ndarray]:
    """Arguments for the grad mode: float ones shifted by a fraction in [0.1, 0.4) and
    rounded to their dtype (float64 arrays holding exactly what the dtype holds)."""
    out = []
    for i, x in enumerate(p.inputs):
        a = x.materialize()
        # (a NumPy constant the body closes over is the constant itself, in every mode)
        if is_float(x.dtype) and x.closure != "numpy":
            frac = np.random.default_rng(x.seed + 31 * i + 1).uniform(0.1, 0.4, size=a.shape)
            a = round_to(a.astype(np.float64) + frac, x.dtype)
        out.append(a)
    return out


def tangents(p: Program) -> list[np.ndarray | None]:
    """A direction v for every float argument (None for int arguments; zero for a NumPy
    constant the body closes over: no transformation differentiates it)."""
    return [
        (np.zeros(x.shape) if x.closure == "numpy" else round_to(np.random.default_rng(1000 + i).uniform(-1, 1, size=x.shape), x.dtype))
        if is_float(x.dtype) else None
        for i, x in enumerate(p.inputs)
    ]


def cotangent(k: int, shape: tuple[int, ...], dtype: str = "float32") -> np.ndarray:
    """A weight u for output k (of its global shape and dtype)."""
    return round_to(np.random.default_rng(2000 + k).uniform(-1, 1, size=shape), dtype)


# The modes that differentiate the whole shard_map at the grad point (harness/run/
# modes_transformed.py): grad and grad_remat (<u, J v> by jvp and by vjp), jvp and
# linearize (each output's <u_k, J_k v>), hessian (v^T H v of s = <u, outputs> by
# jax.hessian, and <jax.jacfwd(s), v>). Each runs only programs with a float argument.
DERIVATIVE_MODES = ("grad", "grad_remat", "jvp", "linearize", "hessian")
# the modes whose derivative goes through a transpose (jax defines none for while_loop)
REVERSE_MODES = ("grad", "grad_remat", "hessian")
# the hessian mode builds the dense Hessian of s over every float argument element
HESSIAN_MAX_ELEMENTS = 256
# jax.checkpoint policies a program's grad_remat run may name (`Program.remat_policy`):
# the named ones of jax.checkpoint_policies that take no argument
REMAT_POLICIES = ("nothing_saveable", "everything_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable")


def used_float_args(p: Program) -> list[int]:
    """The float arguments an op reads or an output is (the hessian mode differentiates
    those: an unused one adds zero rows to the Hessian, and its size alone)."""
    n_in = len(p.inputs)
    used = {j for op in p.body for j in op.operands if j < n_in} | {o for o in p.outputs if o < n_in}
    return [i for i, x in enumerate(p.inputs) if is_float(x.dtype) and i in used]


def float_elements(p: Program) -> int:
    """How many elements the used float arguments hold together (the hessian mode's
    size, `used_float_args`)."""
    return sum(math.prod(p.inputs[i].shape) for i in used_float_args(p))
