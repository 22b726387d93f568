"""Fix coverage: draw invalid programs (every one with one named defect) and count, per
defect, how many get a fix verified by the oracle and by jax (`explain --fix`), how many
only oracle-valid edits that jax rejected, and how many none at all.

    python benchmarks/fixes.py [--programs N] [--seed S]
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from harness.run.compat import force_host_devices  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    force_host_devices()
    from harness.report.fixes import find_fixes
    from harness.run.pool import Pool
    from oracles.interpreter import trace
    from strategies import programs

    drawn = []

    @settings(max_examples=a.programs, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(programs(invalid=1.0, max_ops=4), st.just(a.seed))
    def draw(p, _seed):  # type: ignore[no-untyped-def]
        if trace(p, with_values=False)[1] is not None and p.mesh.size <= 8:
            drawn.append(p)

    draw()
    pool = Pool(1, timeout_s=60.0)
    t0 = time.monotonic()
    rows: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    reasons: dict[str, str] = {}
    try:
        for n, p in enumerate(drawn, 1):
            rep = find_fixes(pool, p, max_fixes=1, jax_version=str(pool.info.get("jax_version")))
            what = "verified" if rep.fixes else ("jax rejected every one tried" if rep.oracle_valid else "no oracle-valid edit")
            rows[str(p.defect)][what] += 1
            if not rep.fixes:
                reasons.setdefault(str(p.defect), rep.why_none[:600])
            print(f"[{n}/{len(drawn)}] {p.defect}: {what}", flush=True)
    finally:
        pool.close()
    total = collections.Counter[str]()
    print(f"\n{'defect':<40} verified  jax-rejected  none")
    for d, c in sorted(rows.items()):
        total.update(c)
        print(f"{d:<40} {c['verified']:>8}  {c['jax rejected every one tried']:>12}  {c['no oracle-valid edit']:>4}")
    print(f"\n{total['verified']} of {len(drawn)} invalid programs got a verified fix ({time.monotonic() - t0:.0f}s)")
    for d, why in sorted(reasons.items()):
        print(f"  {d}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
