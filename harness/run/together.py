"""Running several modes of one program as ONE jit (worker side).

`jit`, `vmap`, `vmap_spmd`, `grad` and `grad_remat` each trace the shard_map under a
jax transformation and compile it alone. A compile of a small program is mostly fixed
cost (XLA:CPU makes its MLIR contexts, runs its pass pipelines, sets up its code
generator whatever the program's size), so the five traced into one jit compile in
well under the time of five, with the same observations (`python benchmarks/together.py`
measures both; docs/execution.md).

Each mode traces its own function (`Mode.stage`: the same shard_map, the same
transformation, the same arguments as when it runs alone, its body value types recorded
by its own trace), so each gets its own observation. Jax may raise in one of them (an
unsupported rule, a bug): then the whole attempt is dropped and every mode runs alone,
as it would without this module, so an error is always one mode's own. A value a run
together gets wrong is re-run in its mode alone by the parent before it is reported
(`Observation.together`: harness/campaign/fuzz.py), like a batch's (harness/run/batch.py).
A run together that crashes or hangs its worker is run again mode by mode by the pool
(harness/run/pool.py), so a crash is always put on its own mode.
"""

from __future__ import annotations

import time
from typing import Any

from harness.run import compat
from harness.run.modes import MODES, Observation
from harness.run.modes_base import recorder
from programs.model import Program

# the modes that can share one jit: each is one jit of the shard_map under a
# transformation. (gspmd compiles with the other partitioner, a setting per compile;
# smap traces another program; eager runs outside jit; abstract and lowering compile nothing.)
TOGETHER = ("jit", "vmap", "vmap_spmd", "grad", "grad_remat", "jvp", "linearize", "hessian")


def together_modes(p: Program, modes: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The modes of `modes` worth running together on `p`: none for an invalid program
    (every mode raises at tracing, before any compile)."""
    if p.defect is not None or p.effects or p.donate:
        # (effects: each mode's calls are its own; donation: the jit mode donates alone)
        return ()
    mine = tuple(m for m in modes if m in TOGETHER)
    return mine if len(mine) > 1 else ()


def run_together(p: Program, modes: tuple[str, ...] | list[str]) -> list[Observation]:
    """The observations of the modes of `modes` that ran together on `p`, in one jit; none
    when jax raised anywhere in it (each mode then runs alone: the caller runs the modes
    this leaves out). A mode that has nothing to compile on `p` (`Mode.stage` None: it is
    unsupported there, or a grad without float outputs) is left out."""
    import jax

    staged = []
    t0 = time.perf_counter()
    # (asked before the program's scopes: its probes of this jax are cached for the
    # process, and a probe answered under one program's mesh context or x64 gives a
    # wrong answer for every later program of the worker, e.g. a grad inside a checked
    # body "unsupported" in every mode, abstract included)
    runs = [m for m in modes if not compat.unsupported_features(p, m)]
    with compat.x64_scope(p.x64), compat.mesh_scope(p), compat.program_config(p):
        try:
            for m in runs:
                record, types, urs = recorder()
                s = MODES[m].stage(p, record)
                if s is not None:
                    staged.append((m, s, types, urs))
            if len(staged) < 2:
                return []
            fns = [s.fn for _, s, _, _ in staged]

            def together(groups: tuple[tuple[Any, ...], ...]) -> tuple[Any, ...]:
                return tuple(f(*a) for f, a in zip(fns, groups))

            results = jax.jit(together)(tuple(s.args for _, s, _, _ in staged))
            jax.block_until_ready(results)
            done = [s.done(r) for (_, s, _, _), r in zip(staged, results)]
        except Exception:  # noqa: BLE001 - one mode's error: every mode alone says whose
            return []
    share = (time.perf_counter() - t0) / len(staged)
    return [Observation(m, outputs=outs, value_types=types, elapsed_s=share, facts=facts, value_ur=urs, together=True)
            for (m, _, types, urs), (outs, facts) in zip(staged, done)]
