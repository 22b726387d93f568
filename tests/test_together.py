"""A program's jit, vmap, vmap_spmd, grad and grad_remat modes traced into one jit
(harness/run/together.py): each mode observes what it observes alone, an error in one
sends every mode to run alone, a crash there is put on its own mode, and a divergence
seen together is reported only from the modes' runs alone."""

from __future__ import annotations

import io

import numpy as np
import pytest
from helpers import P, iota, op, prog

from harness.campaign.config import RunConfig
from harness.campaign.fuzz import fuzz
from harness.judge.check import evaluate
from harness.run.pool import Pool
from harness.run.together import TOGETHER, together_modes
from programs.model import Input, Mesh, Program

XY = Mesh(("x", "y"), (2, 4))

# y is free for vmap_spmd; float arguments and outputs for the grad modes
GATHER = prog(XY, [iota(4, 6)], [P("x")], [op("all_gather", 0, axes=("x",), axis=0, tiled=False), op("psum", 1, axes=("x",))], [2], [P()])
SCAN = prog(XY, [Input((4, 8), "float32", "small", 3), Input((8,), "bfloat16", "iota", 1)], [P("x", "y"), P("y")],
            [op("psum", 0, axes=("y",), wrap="scan"), op("neg", 2, wrap="cond"), op("add", 1, 1)],
            [3, 4], [P("x"), P("y")])
PSUM = prog(XY, [iota(4, 8)], [P("x", "y")], [op("psum", 0, axes=("y",))], [1], [P("x")])


def _jobs(p: Program, jobs: list[tuple[tuple[str, ...], tuple[str, ...]]], env: dict[str, str] | None = None) -> tuple[list, Pool]:  # type: ignore[type-arg]
    pool = Pool(1, timeout_s=30.0, env=env)
    try:
        for modes, together in jobs:
            pool.submit(p, modes, together=together)
        return pool.drain(), pool
    finally:
        pool.close()


@pytest.mark.parametrize("p", [GATHER, SCAN], ids=["gather", "scan"])
def test_modes_run_together_observe_what_each_alone_does(p: Program) -> None:
    modes = together_modes(p, TOGETHER)
    assert modes == TOGETHER
    (tog, alone), _ = _jobs(p, [(modes, modes), (modes, ())])
    # (a mode unsupported on the program, a grad of integer arguments, runs alone: it compiles nothing)
    assert sorted(o.mode for o in tog.observations) == sorted(modes) and not any(o.together for o in alone.observations)
    tog.observations.sort(key=lambda o: modes.index(o.mode))  # (together first, then those alone)
    assert [o.together for o in tog.observations] == [o.status != "unsupported" for o in alone.observations]
    assert sum(o.together for o in tog.observations) >= 3
    for a, b in zip(tog.observations, alone.observations):
        assert (a.mode, a.status, a.value_types, a.value_ur) == (b.mode, b.status, b.value_types, b.value_ur)
        assert a.status in ("ok", "unsupported"), a.error_message
        assert a.facts == b.facts  # (the derivatives <u, J v> by jvp and vjp, bit for bit)
        assert len(a.outputs) == len(b.outputs)
        for x, y in zip(a.outputs, b.outputs):
            assert (x.global_shape, x.dtype) == (y.global_shape, y.dtype)
            if y.global_value is not None:
                assert np.array_equal(x.global_value, y.global_value)
            assert (x.device_values is None) == (y.device_values is None)
            for c, v in (y.device_values or {}).items():
                assert np.array_equal(x.device_values[c], v)  # type: ignore[index]
    assert not evaluate(p, tog.observations).divergences


def test_an_error_in_one_mode_runs_every_mode_alone() -> None:
    """out_specs P() for a value varying along y: every mode raises, each its own error."""
    bad = prog(XY, [iota(8)], [P("y")], [op("neg", 0)], [1], [P()])
    assert together_modes(bad, TOGETHER) == TOGETHER  # (no defect drawn: the oracle alone knows)
    (c, alone), _ = _jobs(bad, [(("jit", "vmap"), ("jit", "vmap")), (("jit", "vmap"), ())])
    assert [(o.mode, o.status, o.together) for o in c.observations] == [("jit", "error", False), ("vmap", "error", False)]
    assert [(o.error_type, o.error_message) for o in c.observations] == [(o.error_type, o.error_message) for o in alone.observations]


def test_a_crash_while_together_is_run_again_mode_by_mode() -> None:
    """The worker dies running the modes together: the pool runs them again one by one,
    so the crash is put on the mode it happens in (the first), and the modes after it
    come back unrun, as for any crash."""
    crash = prog(XY, [iota(8)], [P("y")], [op("pshuffle", 0, axes=("y",), perm=(1, 0, 3, 2))], [1], [P("y")])
    (c,), pool = _jobs(crash, [(("jit", "vmap"), ("jit", "vmap"))], env={"SHARDFUZZ_FAULTS": "abort_in_pshuffle"})
    assert [(o.mode, o.status, o.together) for o in c.observations] == [("jit", "crash", False)]
    assert c.unrun == ("vmap",)
    assert pool.together_again == 1 and pool.crashes == 1


def test_a_shared_run_is_ended_at_its_own_limit() -> None:
    """A worker running modes together past TOGETHER_LIMIT_S is ended (and the modes run
    again one by one, as after a crash there), not after every mode's limit summed:
    a shared jit that stalled had held a worker 30 s per mode."""
    from harness.run.pool import TOGETHER_LIMIT_S, Job

    pool = Pool.__new__(Pool)  # (the limits only: no workers)
    pool.timeout_s = 30.0
    job = Job(0, PSUM, TOGETHER, together=TOGETHER)
    assert pool.running_limit_s(job) == 30.0  # (not yet in the shared run: one mode's)
    job.in_together = True
    assert pool.running_limit_s(job) == TOGETHER_LIMIT_S < 30.0 * len(TOGETHER)
    pool.timeout_s = 1.0  # (a pool with a shorter limit: theirs summed, where smaller)
    assert pool.running_limit_s(job) == 1.0 * len(TOGETHER)


@pytest.mark.parametrize("fault", ["psum_counts_device0_twice", ""])
def test_a_divergence_seen_together_is_reported_from_the_runs_alone(tmp_path, fault: str) -> None:  # type: ignore[no-untyped-def]
    s = fuzz(RunConfig(seed=0, max_examples=1, modes=("abstract", "jit", "vmap", "grad"), workers=1, report_dir=tmp_path,
                       progress=io.StringIO(), minimize_budget_s=0, value_share=1.0,
                       worker_env={"SHARDFUZZ_FAULTS": fault} if fault else {}), fixed=[PSUM])
    if not fault:
        assert s.batch_reconfirmed == 0 and not s.buckets
        return
    assert s.batch_reconfirmed == 1  # (the job ran jit, vmap and grad together; they diverged)
    assert {(b.kind, b.mode) for b in s.buckets} >= {("value", "jit"), ("value", "vmap")}


def test_a_program_run_together_leaves_the_workers_probes_of_jax_as_they_are() -> None:
    """`compat.unsupported_features` probes this jax once per worker (cached). Asked for
    the first time inside a program's mesh context (an Explicit axis: jax.set_mesh), the
    probe of jax.grad inside a checked body failed, and every later program of that
    worker holding one came back "unsupported" in every mode, abstract included: their
    cells were checked nowhere."""
    from programs.model import Op, Spec

    grad = Op.make("transform", (0,), transform="grad", custom="none", steps=(("mul", (0, 0), ()),))
    explicit = Program(Mesh(("x", "y"), (2, 4), ("auto", "explicit")), (Input((8,), "float32", "iota"),),
                       (Spec((("x",),)),), (grad,), (1,), (Spec((("x",),)),))
    assert explicit.needs_mesh_context() and together_modes(explicit, ("jit", "vmap")) == ("jit", "vmap")
    plain = Program(XY, (Input((8,), "float32", "iota"),), (Spec((("x",),)),), (grad,), (1,), (Spec((("x",),)),))
    pool = Pool(1, timeout_s=30.0)  # (a fresh worker: its probes not asked yet)
    try:
        pool.submit(explicit, ("jit", "vmap"), together=("jit", "vmap"))
        pool.submit(plain, ("abstract", "jit"))
        done = pool.drain()
    finally:
        pool.close()
    statuses = {(c.program == plain, o.mode): o.status for c in done for o in c.observations}
    assert statuses == {(False, "jit"): "ok", (False, "vmap"): "ok", (True, "abstract"): "ok", (True, "jit"): "ok"}, statuses
