"""Faults injected into jax are caught: value faults by the comparator, crashes and
hangs by the worker pool (each costs one program, the run goes on)."""

from __future__ import annotations

import pytest
from helpers import P, iota, op, prog

from harness.judge.check import evaluate
from harness.judge.compare import DivergenceKind
from harness.run.pool import Pool
from programs.model import Mesh

XY = Mesh(("x", "y"), (2, 4))

PROGRAMS = {
    "psum_counts_device0_twice": prog(XY, [iota(4, 8)], [P("x", "y")], [op("psum", 0, axes=("y",))], [1], [P("x")]),
    "all_gather_reversed": prog(XY, [iota(8)], [P("y")], [op("all_gather", 0, axes=("y",), axis=0, tiled=False)], [1], [P("y")]),
    "ppermute_drops_last_pair": prog(XY, [iota(8)], [P("y")], [op("ppermute", 0, axes=("y",), perm=((0, 1), (1, 2), (2, 3), (3, 0)))], [1], [P("y")]),
    "pmin_is_pmax": prog(XY, [iota(8)], [P("y")], [op("pmin", 0, axes=("y",))], [1], [P()]),
}


@pytest.mark.parametrize("fault", sorted(PROGRAMS))
def test_value_fault_is_caught(fault: str) -> None:
    p = PROGRAMS[fault]
    pool = Pool(1, env={"SHARDFUZZ_FAULTS": fault})
    try:
        pool.submit(p, ("jit",))
        (c,) = pool.drain()
    finally:
        pool.close()
    res = evaluate(c.program, c.observations)
    kinds = {d.kind for d in res.divergences}
    assert DivergenceKind.VALUE in kinds, res.divergences
    # and without the fault, the same program passes
    clean = Pool(1)
    try:
        clean.submit(p, ("jit",))
        (c,) = clean.drain()
    finally:
        clean.close()
    assert not evaluate(c.program, c.observations).divergences


def test_a_fault_shows_where_a_partly_unpredicted_output_is_predicted() -> None:
    """A float cast past uint8's range has no predicted value (jax documents it as C++'s
    static_cast, undefined there), but the output's other elements still do: on 4
    devices along y, 40 * [0..7] cast to uint8 leaves 280 (device 3's second element)
    unpredicted, then a ppermute moves it to device 0. The fault drops the pair (2, 3):
    device 3 gets zeros where device 2's 160 and 200 belong, and that is caught; before,
    the one undefined element left the whole output unchecked."""
    from oracles import predict

    p = prog(XY, [iota(8, dtype="float32")], [P("y")],
             [op("const", shape=(), dtype="float32", value=40), op("mul", 0, 1), op("cast", 2, dtype="uint8"),
              op("ppermute", 3, axes=("y",), perm=((3, 0), (0, 1), (1, 2), (2, 3)))], [4], [P("y")])
    (o,) = predict(p).outputs
    assert o.unchecked is not None and 0 < o.unchecked.sum() < o.unchecked.size and o.exact
    for env, caught in (({"SHARDFUZZ_FAULTS": "ppermute_drops_last_pair"}, True), ({}, False)):
        pool = Pool(1, env=env)
        try:
            pool.submit(p, ("jit", "eager"))
            (c,) = pool.drain()
        finally:
            pool.close()
        got = {(d.kind, d.mode) for d in evaluate(c.program, c.observations).divergences}
        assert got == ({(DivergenceKind.VALUE, "jit"), (DivergenceKind.VALUE, "eager")} if caught else set()), got


def test_a_job_queued_behind_a_crash_is_sent_again() -> None:
    """A worker holds two jobs (Pool `depth`): it starts the second as soon as it
    finishes the first. When it dies in the first, the second, sent but not started,
    goes to its replacement and runs: the crash still costs one program."""
    crash = prog(XY, [iota(8)], [P("y")], [op("pshuffle", 0, axes=("y",), perm=(1, 0, 3, 2))], [1], [P("y")])
    fine = PROGRAMS["psum_counts_device0_twice"]
    pool = Pool(1, timeout_s=10.0, env={"SHARDFUZZ_FAULTS": "abort_in_pshuffle"})
    try:
        pool.submit(crash, ("jit",))
        assert pool.free() == 1  # (room for one more behind it)
        pool.submit(fine, ("jit",))
        assert pool.free() == 0 and len(pool.workers[0].queue) == 2
        results = pool.drain()
    finally:
        pool.close()
    assert [c.program for c in results] == [crash, fine]
    assert [o.status for o in results[0].observations] == ["crash"] and pool.crashes == 1
    assert not evaluate(fine, results[1].observations).divergences


def test_a_long_job_line_waits_for_an_idle_worker(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A job whose line is longer than QUEUE_BYTES is never queued behind another: the
    write into a busy worker's full pipe would block the parent, and with it the time
    limit of the job that worker runs."""
    import harness.run.workers as workers_mod

    monkeypatch.setattr(workers_mod, "QUEUE_BYTES", 64)  # (every program's line is longer)
    fine = PROGRAMS["psum_counts_device0_twice"]
    pool = Pool(1, timeout_s=30.0)
    try:
        pool.submit(fine, ("jit",))
        pool.submit(fine, ("abstract",))  # (waits for the first to finish: room for a short line only)
        assert len(pool.workers[0].queue) == 1 and [c.observations[0].mode for c in pool._pending] == ["jit"]
        results = pool.drain()
    finally:
        pool.close()
    assert [o.mode for c in results for o in c.observations] == ["jit", "abstract"]


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


@pytest.mark.parametrize("fork_server", [True, False])
def test_crash_and_hang_cost_one_program(fork_server: bool) -> None:
    """With the fork server (harness/run/zygote.py) a crashed or hung worker's
    replacement is a fork of it, and the crash's signal is reported as a spawned
    worker's is."""
    crash = prog(XY, [iota(8)], [P("y")], [op("pshuffle", 0, axes=("y",), perm=(1, 0, 3, 2))], [1], [P("y")])
    hang = prog(XY, [iota(8)], [P("y")], [op("pswapaxes", 0, axes=("y",), axis=0)], [1], [P("y")])
    fine = PROGRAMS["psum_counts_device0_twice"]
    pool = Pool(1, timeout_s=5.0, env={"SHARDFUZZ_FAULTS": "abort_in_pshuffle,hang_in_pswapaxes"}, fork_server=fork_server)
    results = []
    try:
        assert (pool.server is not None) == fork_server
        first = pool.workers[0].proc.pid
        for p in (crash, fine, hang, fine):
            while pool.free() == 0:
                results.extend(pool.wait(1.0))
            pool.submit(p, ("abstract", "jit"))
        results.extend(pool.drain())
        (w,) = pool.workers
        assert w.proc.pid != first  # (replaced twice)
        if pool.server is not None:
            assert pool.server.proc is not None and _parent(w.proc.pid) == pool.server.proc.pid
    finally:
        pool.close()
    by = [(evaluate(c.program, c.observations), c.program) for c in results]
    kinds = [sorted({d.kind.value for d in r.divergences}) for r, _ in by]
    assert kinds == [["crash"], [], ["timeout"], []], kinds
    # the mode after the one it crashed or hung in did not run: the run checks it apart
    assert [c.unrun for c in results] == [("jit",), (), ("jit",), ()]
    assert pool.crashes == 1 and pool.timeouts == 1
    crash_div = by[0][0].divergences[0]
    assert crash_div.mode == "abstract" and "SIGABRT" in crash_div.message



def test_the_modes_a_crash_kept_from_running_run_in_a_job_of_their_own(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A fuzz run: the worker dies in jit, and the job's later mode (vmap) comes back
    unrun; the scheduler runs it in a job of its own, so each mode gives its own result
    (here a crash too). Else a program that crashes in one mode (a known abort in
    gspmd, say) leaves the job's later modes unrun, and its cells there unchecked."""
    import io

    from harness.campaign.config import RunConfig
    from harness.campaign.fuzz import fuzz

    crash = prog(XY, [iota(8)], [P("y")], [op("pshuffle", 0, axes=("y",), perm=(1, 0, 3, 2))], [1], [P("y")])
    s = fuzz(RunConfig(seed=0, max_examples=1, modes=("jit", "vmap"), workers=1, report_dir=tmp_path, progress=io.StringIO(),
                       minimize_budget_s=0, value_share=1.0, batch=1,  # (one job: jit not batched apart)
                       worker_env={"SHARDFUZZ_FAULTS": "abort_in_pshuffle"}), fixed=[crash])
    assert s.counts.programs_run == 1
    assert sorted((b.kind, b.mode) for b in s.buckets) == [("crash", "jit"), ("crash", "vmap")], s.buckets
