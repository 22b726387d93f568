"""Reach: how soon a default run finds a fault that fires in one configuration cell.

    python benchmarks/reach.py [--budget 60] [--seed 0] [FAULT ...]

Each narrow fault of harness/run/narrow_faults.py (one collective, one parameter class,
dtype, rank or axis-tuple class; its result + 1 there and nowhere else) is injected into
the workers of a default `shardfuzz fuzz --budget B` run (2 workers, every mode, default
tiers). A fault is killed when the run reports a new divergence; its time to kill is when
the first such bucket appeared (`first_seen_s` in summary.json). Prints one line per
fault, then killed/total and the median time to kill (a fault not killed counts as the
budget, so the median is never flattered).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.faults import fuzz_with_fault  # noqa: E402
from harness.run.narrow_faults import NARROW  # noqa: E402


def run(fault: str, budget: float, seed: int) -> tuple[float | None, int, int, str]:
    """(seconds to the first new bucket or None, programs run, new buckets, first signature)."""
    s = fuzz_with_fault(fault, "--seed", str(seed), "--budget", str(budget), "--max-examples", "1000000000",
                        "--workers", "2", timeout=budget * 6 + 300)
    new = [b for b in s["buckets"] if not b["suppressed_by"]]
    first = min(new, key=lambda b: b["first_seen_s"]) if new else None
    return (first["first_seen_s"] if first else None), s["programs_run"], len(new), (first["signature"] if first else "")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("faults", nargs="*", default=list(NARROW))
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    print(f"{len(a.faults)} narrow faults, a default {a.budget:.0f}s run each (seed {a.seed}, 2 workers)\n")
    print(f"{'fault':<36} {'killed':>6} {'time':>7} {'programs':>8}  first new bucket")
    times = []
    t0 = time.monotonic()
    for f in a.faults:
        t, n, k, sig = run(f, a.budget, a.seed)
        times.append(t if t is not None else a.budget)
        print(f"{f:<36} {'yes' if t is not None else 'NO':>6} {f'{t:.1f}s' if t is not None else '-':>7} {n:>8}  {sig}", flush=True)
    killed = sum(1 for f, t in zip(a.faults, times) if t < a.budget)
    print(f"\nkilled {killed}/{len(a.faults)}; median time to kill {statistics.median(times):.1f}s "
          f"(not killed counted as {a.budget:.0f}s); {time.monotonic() - t0:.0f}s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
