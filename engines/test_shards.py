"""One test per shard: `pytest -n N` runs the shards of a fuzz run side by side on local
cores, and pytest-xdist's remote executors (`--tx ssh=HOST//python=PYTHON`) on other hosts.

    SHARD_COUNT=4 SHARDFUZZ_ARGS="--profile nightly --workers 1" python -m pytest -n 4 -p no:cacheprovider engines/test_shards.py
    shardfuzz merge reports/shards/shard-* --report reports/nightly

Each test runs engines/shard.sh for its shard (REPORT_ROOT, SHARDFUZZ_ARGS and SHARD_COUNT
from the environment) and fails when the shard does (a new divergence: exit 1), with the
shard's summary as the failure message. Not part of tests/ (it is a fuzz run, not a test of
shardfuzz); tests/test_engines.py runs it small.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
N = int(os.environ.get("SHARD_COUNT", "4"))


@pytest.mark.parametrize("k", range(N))
def test_shard(k: int) -> None:
    args = shlex.split(os.environ.get("SHARDFUZZ_ARGS", "--profile nightly"))
    env = {**os.environ, "SHARD_INDEX": str(k), "SHARD_COUNT": str(N)}
    env.pop("JOB_COMPLETION_INDEX", None)  # (this test's k decides)
    r = subprocess.run(["bash", str(ROOT / "engines" / "shard.sh"), *args], env=env, cwd=os.getcwd(),
                       capture_output=True, text=True)
    summary = r.stdout[r.stdout.find("shardfuzz:"):] if "shardfuzz:" in r.stdout else r.stdout[-3000:]
    assert r.returncode == 0, f"shard {k}/{N} exited {r.returncode}:\n{summary}\n{r.stderr[-2000:]}"
