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

from harness.faults import CHECK_REMOVALS

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("fault", CHECK_REMOVALS)
def test_removed_check_is_caught(fault: str, tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "harness.cli", "fuzz", "--seed", "1", "--max-examples", "300", "--modes", "abstract",
         "--workers", "1", "--minimize-budget", "0", "--invalid", "1.0", "--report", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "SHARDFUZZ_FAULTS": fault}, timeout=900,
    )
    assert r.returncode == 1, f"{fault}: no divergence\n{r.stdout[-1500:]}{r.stderr[-800:]}"
    s = json.loads((tmp_path / "summary.json").read_text())
    new = [b for b in s["buckets"] if not b["suppressed_by"]]
    assert new and all(b["mode"] == "abstract" for b in new)
