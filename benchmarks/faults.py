"""Fault matrix: inject each deliberate fault into jax (harness/faults.py) and report
which modes caught it and after how many programs.

    python benchmarks/faults.py [--programs N] [--seed S] [FAULT ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.run.faults import CHECK_REMOVALS, FAULT_NAMES  # noqa: E402

VALUE_FAULTS = tuple(f for f in FAULT_NAMES if f not in CHECK_REMOVALS and f not in ("hang_in_pswapaxes",))


def fuzz_with_fault(fault: str, *args: str, timeout: float = 3600) -> dict:  # type: ignore[type-arg]
    """`shardfuzz fuzz ARGS` with `fault` injected into its workers; its summary.json."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(
            [sys.executable, "-m", "harness.cli", "fuzz", *args, "--minimize-budget", "0", "--report", d],
            cwd=ROOT, env={**os.environ, "SHARDFUZZ_FAULTS": fault}, capture_output=True, timeout=timeout,
        )
        return json.loads((Path(d) / "summary.json").read_text())


def run(fault: str, n: int, seed: int, invalid: float) -> dict:  # type: ignore[type-arg]
    return fuzz_with_fault(fault, "--seed", str(seed), "--max-examples", str(n), "--invalid", str(invalid),
                           "--value-share", "1")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("faults", nargs="*", default=list(VALUE_FAULTS))
    ap.add_argument("--programs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    print(f"{a.programs} programs per fault, seed {a.seed}, all modes\n")
    print(f"{'fault':<30} {'caught':>6} {'first at':>8}  modes that disagree with the oracle (buckets); mode-disagreement buckets")
    for f in a.faults:
        s = run(f, a.programs, a.seed, 0.5 if f in CHECK_REMOVALS else 0.0)
        new = [b for b in s["buckets"] if not b["suppressed_by"]]
        first = min((b["first_seen_at"] for b in new), default=None)
        # a mode caught the fault when its own observation disagrees with the oracle; a
        # mode_disagreement bucket (modes raising differently) names every raising mode
        oracle = [b for b in new if b["kind"] != "mode_disagreement"]
        modes = sorted({m for b in oracle for m in b["mode"].split(",")})
        disagree = sorted({b["mode"] for b in new if b["kind"] == "mode_disagreement"})
        print(f"{f:<30} {'yes' if new else 'NO':>6} {first if first is not None else '-':>8}  "
              f"{', '.join(modes) or '-'} ({len(oracle)}); {'; '.join(disagree) or '-'}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
