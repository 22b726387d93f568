"""Throughput: the same seeded programs through the naive way and each shardfuzz tier.

    python benchmarks/throughput.py [--programs N] [--seed S]

(a) naive: one jax.jit per program, one program at a time, in this process (trace,
    compile, run, compare with the oracle);
(b)-(d) the real `shardfuzz fuzz` pipeline (harness.campaign.fuzz.fuzz over these programs: worker
    pool on all cores, tiers, batching with re-confirmation alone, reports):
(b) abstract tier: jax.eval_shape only (errors, shapes, dtypes, varying axes);
(c) value tier: jit, one program per compile; (c') jit with batching;
(d) the default fuzz mix (every program abstract; in the value modes every program that
    brings a configuration cell new to a mode, and a share by program id).
Prints programs/s, the ratio to (a), the oracle's CPU time as a share of the jax side's
(the workers' own CPU time after warm-up, which they report with each job; for (a), the
jit calls'), and peak memory.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.run import compat  # noqa: E402

# (a) is the naive way: jax as users run it. The workers of (b)-(d) run shardfuzz's
# default codegen (`fast`, harness/compat.codegen_flags) unless --codegen says otherwise.
os.environ["SHARDFUZZ_CODEGEN"] = "default"
compat.force_host_devices()

import harness.campaign.fuzz as fuzz_mod  # noqa: E402
import harness.campaign.plan as plan_mod  # noqa: E402
from harness.campaign.fuzz import RunConfig, fuzz, seeded_programs  # noqa: E402
from harness.campaign.known_queries import known_trouble  # noqa: E402
from harness.judge.check import evaluate  # noqa: E402
from harness.judge.known_load import load as load_suppressions  # noqa: E402
from harness.run.modes import DEFAULT_MODES, MODES  # noqa: E402
from harness.run.pool import Pool  # noqa: E402
from oracles.interpreter import predict  # noqa: E402
from programs.model import Program  # noqa: E402
from programs.serialize import program_id  # noqa: E402

CODEGEN = "fast"


def crashes(p: Program, entries: list) -> bool:  # type: ignore[type-arg]
    """Whether `p` has the features of a known entry that says jax crashes (aborts or
    segfaults: the whole process goes) under jit: the naive way runs in this process."""
    return known_trouble(entries, p, predict(p), compat.jax_version(), "jit")


def draw_programs(n: int, s: int) -> tuple[list[Program], int]:
    """The first `n` distinct programs seed `s` draws (Hypothesis draws some programs
    more than once; `shardfuzz fuzz` checks each once, and so must the baseline), and how
    many were left out (`crashes`: both ways run the same programs)."""
    entries = [e for e in load_suppressions() if any(pat.kind == "crash" for pat in e.patterns)]
    out, seen, k, left = [], set(), n, 0
    while len(out) < n:
        out, seen, left = [], set(), 0
        for p in seeded_programs(k, s):
            if program_id(p) not in seen:
                seen.add(program_id(p))
                if crashes(p, entries):
                    left += 1
                else:
                    out.append(p)
        k = int(k * 1.5) + 1
    return out[:n], left


class OracleClock:
    """Time spent in the oracle (prediction and comparison) inside a fuzz run, by
    wrapping the names the executor (harness.campaign.fuzz) and the planner
    (harness.campaign.plan) call."""

    def __init__(self) -> None:
        self.spent = 0.0
        self.saved = (fuzz_mod.evaluate, plan_mod.predict)

    def wrap(self, f):  # type: ignore[no-untyped-def]
        def timed(*a, **k):  # type: ignore[no-untyped-def]
            t = time.process_time()  # CPU time: a busy machine does not inflate it
            try:
                return f(*a, **k)
            finally:
                self.spent += time.process_time() - t

        return timed

    def __enter__(self) -> OracleClock:
        fuzz_mod.evaluate, plan_mod.predict = (self.wrap(f) for f in self.saved)
        return self

    def __exit__(self, *exc: object) -> None:
        fuzz_mod.evaluate, plan_mod.predict = self.saved


def naive(progs: list[Program]) -> tuple[float, float]:
    """One jax.jit per program, one at a time, in this process; compared with the oracle.
    Returns programs/s and the oracle's CPU time over jax's."""
    oracle = jax_cpu = 0.0
    t0 = time.perf_counter()
    for p in progs:
        c = time.process_time()
        obs = MODES["jit"].run(p)
        t = time.process_time()
        evaluate(p, [obs])
        oracle += time.process_time() - t
        jax_cpu += t - c
    el = time.perf_counter() - t0
    return len(progs) / el, oracle / jax_cpu


def pipeline(progs: list[Program], workers: int, codegen: str = "", **cfg) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """The real `shardfuzz fuzz` pipeline (worker pool, tiers, batching, re-confirmation
    alone, probes, reports) over these programs instead of freshly drawn ones."""
    env = {"SHARDFUZZ_CODEGEN": codegen or CODEGEN}
    pool = Pool(workers, env=env)  # started and warmed (jax imported, 8 devices up) before the clock, as (a) is
    try:
        for p in progs[: 2 * workers]:
            pool.submit(p, tuple(cfg.get("modes", DEFAULT_MODES)))
        pool.drain()
        cpu0 = pool.worker_cpu_s()  # jax's side from here: the workers' own CPU time
        with tempfile.TemporaryDirectory() as d, OracleClock() as clock:
            c = RunConfig(workers=workers, worker_env=env, report_dir=Path(d), progress=io.StringIO(), minimize_budget_s=0,
                          suppressions=load_suppressions(), **cfg)
            t0 = time.perf_counter()
            summary = fuzz(c, fixed=progs, pool=pool)
            el = time.perf_counter() - t0
        jax_cpu = pool.worker_cpu_s() - cpu0
    finally:
        pool.close()
    # (a program equal to one derived from an earlier one, without its known bug, was checked already)
    assert summary.counts.programs_run + summary.repeats_skipped == len(progs), (summary.counts.programs_run, summary.repeats_skipped)
    return len(progs) / el, clock.spent / jax_cpu


def peak_rss_mib() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return me, kids


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=400)
    ap.add_argument("--naive", type=int, default=0, help="programs for the naive baseline (default: all of them)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--batch", type=int, default=10, help="programs per combined jit in (c') and (d)")
    ap.add_argument("--codegen", choices=("fast", "default"), default="fast", help="the workers' XLA codegen")
    a = ap.parse_args()
    global CODEGEN
    CODEGEN = a.codegen
    progs, left_out = draw_programs(a.programs, a.seed)
    for p in progs[:5]:  # warm this process's jax before timing the baseline
        MODES["jit"].run(p)
    rows = []
    base, base_or = naive(progs[: a.naive or len(progs)])
    rows.append(("(a) naive: one jit per program, sequential", base, base_or))
    w = a.workers
    r, o = pipeline(progs, w, modes=("abstract",))
    rows.append((f"(b) abstract tier, {w} workers", r, o))
    half = progs[: a.programs // 2]
    r, o = pipeline(half, w, modes=("jit",), batch=1)
    rows.append((f"(c) value tier (jit), {w} workers", r, o))
    r, o = pipeline(half, w, modes=("jit",), batch=a.batch)
    rows.append((f"(c') value tier (jit), batches of {a.batch}, {w} workers", r, o))
    if CODEGEN == "fast":
        r, o = pipeline(half, w, codegen="default", modes=("jit",), batch=a.batch)
        rows.append(("(c'') as (c') with XLA's default codegen", r, o))
    r, o = pipeline(progs, w, modes=DEFAULT_MODES, value_share=0.25, batch=a.batch)
    rows.append((f"(d) default mix: all abstract, new cells + 25% in {len(DEFAULT_MODES)} modes", r, o))
    print(f"\n{len(progs)} seeded programs (seed {a.seed}; {left_out} drawn among them left out: a known entry says jax "
          f"crashes on them under jit), jax {compat.jax_version()}, {os.cpu_count()} cores; "
          f"(a) with XLA's default codegen, the workers with codegen={CODEGEN}\n")
    print(f"{'way':<58} {'programs/s':>11} {'vs naive':>9} {'oracle/jax CPU':>15}")
    for name, rate, share in rows:
        print(f"{name:<58} {rate:>11.1f} {rate / base:>8.1f}x {100 * share:>14.1f}%")
    me, kids = peak_rss_mib()
    print(f"\npeak RSS: this process {me:.0f} MiB, largest worker {kids:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
