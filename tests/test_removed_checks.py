"""Removing any one of jax's shard_map checks makes a fuzz run report a divergence.

Each fault (harness/faults.py, installed in the worker) replaces one check with a no-op;
a short seeded run of invalid programs (one defect each) must then fail (exit 1)
with a divergence naming that check's error kind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.run.faults import CHECK_REMOVALS

ROOT = Path(__file__).resolve().parent.parent


# the defects whose error each removed check raises (strategies/invalid.py)
DEFECTS_FOR = {
    "no_check_specs": "in_spec_str,in_spec_tuple,in_spec_unknown_axis,out_spec_unknown_axis,out_spec_str",
    "no_check_specs_vs_args": "in_spec_indivisible,in_spec_too_long",
    "no_check_out_rank": "out_spec_too_long",
    "no_check_replication": "out_spec_drops_varying_axis",
    "no_check_axis_names": "collective_unknown_axis,collective_not_manual",
}


@pytest.mark.parametrize("fault", CHECK_REMOVALS)
def test_removed_check_is_caught(fault: str, tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "harness.cli", "fuzz", "--seed", "1", "--max-examples", "150", "--modes", "abstract",
         "--workers", "1", "--minimize-budget", "0", "--invalid", "1.0", "--defects", DEFECTS_FOR[fault],
         "--report", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "SHARDFUZZ_FAULTS": fault}, timeout=900,
    )
    assert r.returncode == 1, f"{fault}: no divergence\n{r.stdout[-1500:]}{r.stderr[-800:]}"
    s = json.loads((tmp_path / "summary.json").read_text())
    new = [b for b in s["buckets"] if not b["suppressed_by"]]
    assert new and all(b["mode"] == "abstract" for b in new)


def test_the_same_runs_pass_with_every_check_in_place(tmp_path: Path) -> None:
    """The control: those programs, with jax's checks intact, show nothing new."""
    r = subprocess.run(
        [sys.executable, "-m", "harness.cli", "fuzz", "--seed", "1", "--max-examples", "150", "--modes", "abstract",
         "--workers", "1", "--minimize-budget", "0", "--invalid", "1.0", "--defects", ",".join(DEFECTS_FOR.values()),
         "--report", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=900,
    )
    assert r.returncode == 0, r.stdout[-1500:] + r.stderr[-800:]
    assert json.loads((tmp_path / "summary.json").read_text())["programs_run"] > 50


def test_unknown_defect_is_bad_input(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "harness.cli", "fuzz", "--defects", "no_such_defect", "--report", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 2 and "no_such_defect" in r.stderr and len(r.stderr.strip().splitlines()) == 1
