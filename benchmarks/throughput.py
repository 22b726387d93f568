"""Throughput: the same seeded programs through the naive way and each shardfuzz tier.

    python benchmarks/throughput.py [--programs N] [--seed S]

(a) naive: one jax.jit per program, one program at a time, in this process (trace,
    compile, run, compare with the oracle);
(b) abstract tier: jax.eval_shape only (errors, shapes, dtypes, varying axes), in the
    worker pool (all cores);
(c) value tier: jit in the worker pool; (d) the default fuzz mix (every program abstract,
    a share in every mode).
Prints programs/s, the ratio to (a), the oracle's share of the time, and peak memory.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import compat  # noqa: E402

compat.force_host_devices()

from harness.check import evaluate  # noqa: E402
from harness.fuzz import RunConfig, seeded_programs, tier_modes  # noqa: E402
from harness.modes import DEFAULT_MODES, MODES  # noqa: E402
from harness.pool import Pool  # noqa: E402
from oracles import predict  # noqa: E402
from programs.model import Program  # noqa: E402


def draw_programs(n: int, s: int) -> list[Program]:
    return seeded_programs(n, s)


class Timer:
    def __init__(self) -> None:
        self.oracle = 0.0

    def evaluate(self, p: Program, obs: list) -> None:  # type: ignore[type-arg]
        t = time.perf_counter()
        evaluate(p, obs, predict(p))
        self.oracle += time.perf_counter() - t


def naive(progs: list[Program]) -> tuple[float, float]:
    t0 = time.perf_counter()
    tm = Timer()
    for p in progs:
        tm.evaluate(p, [MODES["jit"].run(p)])
    return len(progs) / (time.perf_counter() - t0), tm.oracle / (time.perf_counter() - t0)


def pooled(progs: list[Program], modes_of, workers: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    pool = Pool(workers)
    tm = Timer()
    t0 = time.perf_counter()
    try:
        for p in progs:
            while pool.free() == 0:
                for c in pool.wait(1.0):
                    tm.evaluate(c.program, c.observations)
            pool.submit(p, modes_of(p))
        for c in pool.drain():
            tm.evaluate(c.program, c.observations)
    finally:
        el = time.perf_counter() - t0
        pool.close()
    return len(progs) / el, tm.oracle / el


def batched(progs: list[Program], workers: int, size: int) -> tuple[float, float]:
    """jit tier with batching: programs the oracle expects to run, grouped by device
    count, `size` per combined jit; a batched divergence is re-run alone."""
    pool = Pool(workers)
    tm = Timer()
    t0 = time.perf_counter()
    try:
        groups: dict[int, list[Program]] = {}
        singles = []
        for p in progs:
            (groups.setdefault(p.mesh.size, []) if predict(p).error is None else singles).append(p)
        jobs = [("batch", g[i : i + size]) for g in groups.values() for i in range(0, len(g), size)]
        jobs += [("one", [p]) for p in singles]
        recheck = []

        def take(c) -> None:  # type: ignore[no-untyped-def]
            t = time.perf_counter()
            res = evaluate(c.program, c.observations, predict(c.program))
            tm.oracle += time.perf_counter() - t
            if res.divergences and c.tag == "batch":
                recheck.append(c.program)

        for kind, ps in jobs:
            while pool.free() == 0:
                for c in pool.wait(1.0):
                    take(c)
            if kind == "batch":
                pool.submit_batch(ps, ["batch"] * len(ps))
            else:
                pool.submit(ps[0], ("jit",))
        for c in pool.drain():
            take(c)
        for p in recheck:
            pool.submit(p, ("jit",))
            for c in pool.drain():
                take(c)
    finally:
        el = time.perf_counter() - t0
        pool.close()
    return len(progs) / el, tm.oracle / el


def peak_rss_mib() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return me, kids


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=400)
    ap.add_argument("--naive", type=int, default=80, help="programs for the (slow) naive baseline")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    a = ap.parse_args()
    progs = draw_programs(a.programs, a.seed)
    for p in progs[:5]:  # warm this process's jax before timing the baseline
        MODES["jit"].run(p)
    rows = []
    base, base_or = naive(progs[: a.naive])
    rows.append(("(a) naive: one jit per program, sequential", base, base_or))
    r, o = pooled(progs, lambda p: ("abstract",), a.workers)
    rows.append((f"(b) abstract tier, {a.workers} workers", r, o))
    r, o = pooled(progs[: a.programs // 2], lambda p: ("jit",), a.workers)
    rows.append((f"(c) value tier (jit), {a.workers} workers", r, o))
    r, o = batched(progs[: a.programs // 2], a.workers, 10)
    rows.append((f"(c') value tier (jit), batches of 10, {a.workers} workers", r, o))
    cfg = RunConfig(modes=DEFAULT_MODES, value_share=0.25)
    r, o = pooled(progs, lambda p: tier_modes(p, cfg), a.workers)
    rows.append((f"(d) default mix: all abstract, 25% in all {len(DEFAULT_MODES)} modes", r, o))
    print(f"\n{len(progs)} seeded programs (seed {a.seed}), jax {compat.jax_version()}, {os.cpu_count()} cores\n")
    print(f"{'way':<58} {'programs/s':>11} {'vs naive':>9} {'oracle share':>13}")
    for name, rate, share in rows:
        print(f"{name:<58} {rate:>11.1f} {rate / base:>8.1f}x {100 * share:>12.1f}%")
    me, kids = peak_rss_mib()
    print(f"\npeak RSS: this process {me:.0f} MiB, largest worker {kids:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
