"""What the multiprocess mode costs per program, next to jit: the same drawn programs
through one worker (its rank pair started once, before the clock), each mode timed as a
job from submission to result (tracing, compiling, running, the observation's transfer).

    python benchmarks/multiprocess_cost.py [N] [SEED]

Prints the median and mean seconds per program of each mode, for the small programs and
for large ones (a >= 4 MiB block per device: the fuzz run's `--large` share), and the
start of a rank pair (paid once per worker, and again after each crash or hang).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import Phase  # noqa: E402

from harness.campaign.config import RunConfig  # noqa: E402
from harness.campaign.generation import handling, hypothesis_test  # noqa: E402
from harness.run.modes_multiprocess import LARGE_BLOCK_BYTES, block_bytes, spans_processes  # noqa: E402
from harness.run.pool import Pool  # noqa: E402
from oracles import predict  # noqa: E402
from programs.model import Program  # noqa: E402


def drawn(n: int, seed: int, large: float) -> list[Program]:
    out: list[Program] = []
    cfg = RunConfig(seed=seed, max_examples=n, modes=("abstract", "jit", "multiprocess"), large=large, invalid=0.0)
    with handling(out.append):
        hypothesis_test(cfg, [Phase.generate])()
    seen, keep = set(), []
    for p in out:
        if spans_processes(p) is None and predict(p, values=False).error is None and repr(p) not in seen:
            seen.add(repr(p))
            keep.append(p)
    return keep


def job(pool: Pool, p: Program, mode: str) -> float:
    t0 = time.perf_counter()
    pool.submit(p, (mode,))
    pool.drain()
    return time.perf_counter() - t0


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    small = [p for p in drawn(n, seed, 0.0)]
    large = [p for p in drawn(n, seed, 1.0) if block_bytes(p) >= LARGE_BLOCK_BYTES][:5]
    pool = Pool(1, timeout_s=300.0)
    try:
        start = job(pool, small[0], "multiprocess")  # the rank pair starts here
        job(pool, small[0], "jit")
        rows = []
        for label, progs in (("small", small), ("large", large)):
            for mode in ("jit", "multiprocess"):
                ts = [job(pool, p, mode) for p in progs]
                rows.append((label, mode, len(ts), statistics.median(ts), statistics.fmean(ts)))
    finally:
        pool.close()
    print(f"rank pair start (first multiprocess job, once per worker): {start:.2f} s")
    print(f"{'programs':<8} {'mode':<13} {'n':>3} {'median s':>9} {'mean s':>8}")
    for label, mode, k, med, mean in rows:
        print(f"{label:<8} {mode:<13} {k:>3} {med:>9.3f} {mean:>8.3f}")


if __name__ == "__main__":
    main()
