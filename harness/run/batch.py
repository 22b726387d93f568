"""Batching: several programs traced, compiled and run as ONE jit (worker side).

Compiling ten small programs together costs a fraction of ten compiles. A batch whose
combined trace, compile or run fails is bisected, so one bad program never hides the
others; the programs of a batch must use meshes over the same devices (the parent
groups them by device count). The parent re-confirms any divergence on the program
alone before reporting it (harness/fuzz.py).
"""

from __future__ import annotations

import time
from typing import Any

from harness.run import compat
from harness.run.modes import MODES, Observation
from programs.model import Program


def run_batch(progs: list[Program]) -> list[Observation]:
    """jit-mode observations for each program, from one combined jit when possible."""
    if len(progs) == 1 or any(p.needs_mesh_context() or p.permutes_out_of_mesh_order() for p in progs):
        # (a program under jax.set_mesh, or needing a jax flag, runs alone: one context per program)
        return [MODES["jit"].run(p) for p in progs]
    if len({p.x64 for p in progs}) > 1:  # jax_enable_x64 is one setting per trace: one jit per setting
        obs: dict[int, Observation] = {}
        for x64 in (False, True):
            idx = [i for i, p in enumerate(progs) if p.x64 == x64]
            obs.update(zip(idx, run_batch([progs[i] for i in idx])))
        return [obs[i] for i in range(len(progs))]
    try:
        return _together(progs)
    except Exception:  # noqa: BLE001 - some program in the batch fails: split it
        half = len(progs) // 2
        return run_batch(progs[:half]) + run_batch(progs[half:])


def _together(progs: list[Program]) -> list[Observation]:
    import jax

    mode = MODES["jit"]
    types: list[dict[int, Any]] = [{} for _ in progs]
    fs, args = [], []
    for k, p in enumerate(progs):
        def record(i: int, v: Any, k: int = k) -> None:
            if i not in types[k]:
                types[k][i] = (tuple(v.shape), str(v.dtype), compat.vma_of(v))

        fs.append(mode.build(p, record))
        args.append(mode.inputs(p))
    sizes = [len(a) for a in args]

    def combined(*flat: Any) -> list[Any]:
        outs, at = [], 0
        for f, n in zip(fs, sizes):
            outs.append(f(*flat[at : at + n]))
            at += n
        return outs

    t0 = time.perf_counter()
    with compat.x64_scope(progs[0].x64):
        results = jax.jit(combined)(*[x for a in args for x in a])
        jax.block_until_ready(results)
    share = (time.perf_counter() - t0) / len(progs)
    return [
        Observation("jit", outputs=tuple(mode.observe(o, p) for o in outs), value_types=types[k], elapsed_s=share)
        for k, (p, outs) in enumerate(zip(progs, results))
    ]
