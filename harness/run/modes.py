"""Modes: one way of running a program through real jax. Each has `run(program)`.

- `abstract`: `jax.eval_shape` of the shard_map (errors, shapes, dtypes; the vma of every
  body value read with `jax.typeof` while tracing). No compile.
- `eager`: the shard_map called directly, outside jit.
- `jit`: `jax.jit` of the shard_map (Shardy); `gspmd`: the same with the GSPMD partitioner.
- `smap`: the same program written with `jax.smap`; `lowering`: the Shardy lowering text.
- `vmap`, `vmap_spmd`, `grad`, `grad_remat`, `jvp`, `linearize`, `hessian`: under a jax
  transformation (the derivative modes: programs/points.py `DERIVATIVE_MODES`).
- `multiprocess`: `jit` on a mesh spanning 2 processes x 4 devices, collectives through
  gloo (`modes_multiprocess.py`; the worker keeps the two rank processes).
- `probe` (internal): every body value's blocks, to find the first op that goes wrong.

This module is the registry (`MODES`, `DEFAULT_MODES`) and the one import for callers:
it re-exports the `Observation` type and its wire format (`observation.py`), the base
class and its compile cache (`modes_base.py`); the modes themselves live in
`modes_direct.py` and `modes_transformed.py`.
"""

from __future__ import annotations

from harness.run.modes_base import COMPILED, COMPILED_MAX, Mode, structure_key
from harness.run.modes_direct import (
    PROBE_FOR,
    Abstract,
    Eager,
    Gspmd,
    Jit,
    Lowering,
    Probe,
    ProbeEager,
    ProbeGspmd,
    Smap,
    lowering_facts,
    probe_program,
    probe_values,
)
from harness.run.modes_multiprocess import Multiprocess
from harness.run.modes_transformed import (
    VMAP_BATCH,
    Grad,
    GradRemat,
    Hessian,
    Jvp,
    Linearize,
    Vmap,
    VmapSpmd,
)
from harness.run.observation import (
    Observation,
    ObservedOutput,
    observation_from_dict,
    observation_to_dict,
)

__all__ = [
    "COMPILED", "COMPILED_MAX", "DEFAULT_MODES", "MODES", "VMAP_BATCH", "Abstract", "Eager", "Grad", "GradRemat", "Gspmd",
    "Hessian", "Jit", "Jvp", "Linearize", "Lowering", "Mode", "Multiprocess", "Observation", "ObservedOutput", "PROBE_FOR", "Probe", "ProbeEager", "ProbeGspmd", "Smap", "Vmap", "VmapSpmd", "lowering_facts",
    "observation_from_dict", "observation_to_dict", "probe_program", "probe_values", "structure_key",
]

MODES: dict[str, Mode] = {
    m.name: m for m in (Abstract(), Eager(), Jit(), Gspmd(), Vmap(), VmapSpmd(), Smap(), Grad(), GradRemat(), Jvp(), Linearize(),
                         Hessian(), Lowering(), Probe(),
                         ProbeEager(), ProbeGspmd(),
                         Multiprocess())
}
DEFAULT_MODES = ("abstract", "jit", "gspmd", "eager", "vmap", "vmap_spmd", "smap", "grad", "grad_remat", "jvp", "linearize",
                 "hessian", "lowering")
