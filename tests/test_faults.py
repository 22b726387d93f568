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
