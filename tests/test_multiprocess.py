"""The multiprocess mode against real jax: a mesh over 2 processes x 4 CPU devices, gloo
collectives. Clean jax agrees with the oracle (large blocks too); a fault only in the
multi-process path is caught by it and by no single-process mode; a kill -9 or a hang of
one of the two processes costs one program, and the worker and the next programs go on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers import P, iota, op, prog

from harness.judge.check import evaluate
from harness.run.modes_multiprocess import LARGE_BLOCK_BYTES, block_bytes, spans_processes
from harness.run.pool import Pool
from programs.model import Input, Mesh

XY = Mesh(("x", "y"), (2, 4))
PSUM = prog(XY, [iota(4, 8)], [P("x", "y")], [op("psum", 0, axes=("y",))], [1], [P("x")])
GATHER = prog(XY, [iota(8)], [P("y")], [op("all_gather", 0, axes=("y",), axis=0, tiled=False)], [1], [P("y")])
PMAX = prog(XY, [iota(8)], [P("y")], [op("pmax", 0, axes=("x", "y"))], [1], [P()])
PMIN = prog(XY, [iota(8)], [P("y")], [op("pmin", 0, axes=("y",))], [1], [P()])
# 4 MiB per device: gloo moves it in chunks
LARGE_SCATTER = prog(XY, [Input((64, 1 << 17), "float32", "small", 3)], [P(("x", "y"))],
                     [op("psum_scatter", 0, axes=("x", "y"), scatter_dimension=0, tiled=True)], [1], [P(("x", "y"))])
SMALL_SCATTER = prog(Mesh(("x",), (4,)), [iota(16, 2)], [P("x")],
                     [op("psum_scatter", 0, axes=("x",), scatter_dimension=0, tiled=True)], [1], [P("x")])


def run_all(pool: Pool, programs: list, modes: tuple[str, ...]) -> list:  # type: ignore[type-arg]
    out = []
    for p in programs:
        pool.submit(p, modes)
        (c,) = pool.drain()
        out.append(evaluate(c.program, c.observations))
    return out


def test_large_program_is_large() -> None:
    assert block_bytes(LARGE_SCATTER) >= LARGE_BLOCK_BYTES > block_bytes(PSUM)
    assert spans_processes(PSUM) is None and "cannot span" in (spans_processes(prog(Mesh(("x",), (3,)), [iota(3)], [P("x")], [op("neg", 0)], [1], [P("x")])) or "")


@pytest.fixture(scope="module")
def faulty() -> Iterator[Pool]:
    """One worker with the three multi-process-only faults: psum_scatter wrong on process 0,
    process 1 killed (SIGKILL) in a pmin, process 0 hung in a pmax."""
    p = Pool(1, timeout_s=60.0, env={"SHARDFUZZ_MP_TIMEOUT": "5", "SHARDFUZZ_FAULTS": (
        "mp_psum_scatter_rank0_off_by_one,mp_rank1_killed_in_pmin,mp_rank0_hangs_in_pmax")})
    yield p
    p.close()


def test_clean_jax_agrees(pool: Pool) -> None:
    for res in run_all(pool, [PSUM, GATHER, PMAX, PMIN, SMALL_SCATTER, LARGE_SCATTER], ("jit", "multiprocess")):
        assert not res.divergences, [d.message for d in res.divergences]
        mp = next(o for o in res.observations if o.mode == "multiprocess")
        assert mp.status == "ok" and len(mp.outputs[0].device_values or {}) == res.program.mesh.size


def test_multi_process_only_fault_is_caught_by_it_alone(faulty: Pool) -> None:
    """psum_scatter wrong on process 0 only: jit, gspmd and eager see nothing."""
    for res in run_all(faulty, [SMALL_SCATTER, LARGE_SCATTER], ("jit", "gspmd", "eager", "multiprocess")):
        sigs = {d.signature for d in res.divergences}
        assert sigs == {"value|multiprocess|psum_scatter"}, [d.message for d in res.divergences]
        (d,) = res.divergences
        half = res.program.mesh.size // 2
        # exactly the devices of process 0: the first half in row-major order
        assert sorted(d.bad_devices) == sorted(res.program.mesh.coords())[:half]


def test_kill_9_or_hang_of_one_process_costs_one_program(faulty: Pool) -> None:
    results = run_all(faulty, [PMIN, GATHER, PMAX, GATHER], ("jit", "multiprocess"))
    assert faulty.crashes == 0 and faulty.timeouts == 0  # the worker itself never died
    sigs = [{d.signature for d in r.divergences} for r in results]
    assert sigs == [{"crash|multiprocess|crash"}, set(), {"timeout|multiprocess|timeout"}, set()], sigs
    crash = results[0].divergences[0]
    assert "process 1 died" in crash.message and "SIGKILL" in crash.message and "both stopped" in crash.message
    hang = results[2].divergences[0]
    assert "gave no answer within 5s" in hang.message and "both stopped" in hang.message
    # each program still ran in jit, and the programs after each failure ran in a fresh pair
    assert all({o.mode for o in r.observations} == {"jit", "multiprocess"} for r in results)


def test_emitted_reproducer_launches_both_processes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The multiprocess reproducer starts its two processes itself; each checks its own
    blocks. On clean jax it exits 0 (FIXED); with a wrong value on process 1's devices
    (its expectation tampered with, as a bug there would show) it exits 1 naming process 1."""
    import subprocess
    import sys

    from harness.report.reproducer import reproducer

    text = reproducer(SMALL_SCATTER, mode="multiprocess", title="psum_scatter over two processes")
    assert "jax.distributed.initialize" in text and "jax_cpu_collectives_implementation" in text
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(text)
    # the prediction for device (2,), held by process 1: one value off
    assert text.count("blocks=np.array([") == 1
    bad.write_text(text.replace("blocks=np.array([", "blocks=np.array([0, 0, 0, 1]).reshape(4, 1, 1) + np.array(["))
    r = subprocess.run([sys.executable, str(good)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("FIXED: psum_scatter over two processes"), r.stdout + r.stderr[-2000:]
    assert r.stdout.count("process 0: FIXED") == 1 and r.stdout.count("process 1: FIXED") == 1
    r = subprocess.run([sys.executable, str(bad)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr[-2000:]
    verdict = r.stdout.strip().splitlines()[0]
    assert verdict.startswith("BUG: process 1:") and "process 0" not in verdict and "(3,)" in verdict, r.stdout
