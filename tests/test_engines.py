"""Shards on existing engines (engines/): the one script each engine runs (a Kubernetes
indexed Job's JOB_COMPLETION_INDEX or a CI matrix's SHARD_INDEX -> --shard K/N), the
pytest-xdist form (one test per shard, `pytest -n N`), and the manifests agreeing with it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMALL = "--seed 5 --modes abstract --max-examples 30 --workers 0 --minimize-budget 0"


def summary(d: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((d / "summary.json").read_text())


def test_shard_script_maps_each_engines_index(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("SHARD_INDEX", "JOB_COMPLETION_INDEX", "SHARD_COUNT")}
    r = subprocess.run(["bash", "engines/shard.sh"], env=env, cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "set SHARD_COUNT=N and SHARD_INDEX=K" in r.stderr
    # a bad K/N is shardfuzz's own bad input: exit 2, one line
    r = subprocess.run(["bash", "engines/shard.sh", *SMALL.split()], env={**env, "SHARD_INDEX": "2", "SHARD_COUNT": "2",
                       "REPORT_ROOT": str(tmp_path)}, cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "0 <= K < N" in r.stderr, r.stderr
    # Kubernetes: the pod's JOB_COMPLETION_INDEX is K (and wins over SHARD_INDEX)
    r = subprocess.run(["bash", "engines/shard.sh", *SMALL.split()],
                       env={**env, "JOB_COMPLETION_INDEX": "1", "SHARD_INDEX": "0", "SHARD_COUNT": "2", "REPORT_ROOT": str(tmp_path)},
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert summary(tmp_path / "shard-1")["shard"] == "1/2"


def test_xdist_one_test_per_shard_then_merge(tmp_path: Path) -> None:
    env = {**os.environ, "SHARD_COUNT": "2", "REPORT_ROOT": str(tmp_path / "shards"), "SHARDFUZZ_ARGS": SMALL}
    r = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-q", "engines/test_shards.py"],
                       env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "2 passed" in r.stdout, r.stdout[-3000:]
    parts = [summary(tmp_path / "shards" / f"shard-{k}") for k in range(2)]
    assert [p["shard"] for p in parts] == ["0/2", "1/2"] and len({p["programs_digest"] for p in parts}) == 1
    r = subprocess.run([sys.executable, "-m", "harness.cli", "merge", str(tmp_path / "shards" / "shard-0"),
                        str(tmp_path / "shards" / "shard-1"), "--report", str(tmp_path / "merged")],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    # (no "shards ... are missing" note; a known missing_error bucket may be listed)
    assert r.returncode == 0 and "merged 2 reports" in r.stdout and "are missing" not in r.stdout, r.stdout + r.stderr
    assert summary(tmp_path / "merged")["programs_run"] == sum(p["programs_run"] for p in parts) > 0


def test_manifests_run_the_shard_script_with_matching_counts() -> None:
    job = (ROOT / "engines" / "kubernetes-job.yaml").read_text()
    assert "completionMode: Indexed" in job and '"engines/shard.sh"' in job
    n = {int(re.search(rf"{k}: (\d+)", job).group(1)) for k in ("completions", "parallelism")}  # type: ignore[union-attr]
    count = int(re.search(r'name: SHARD_COUNT\s+value: "(\d+)"', job).group(1))  # type: ignore[union-attr]
    assert n == {count}
    ci = (ROOT / "engines" / "github-actions.yml").read_text()
    shards = re.search(r"shard: \[([\d, ]+)\]", ci).group(1).split(",")  # type: ignore[union-attr]
    assert "bash engines/shard.sh" in ci and f'SHARD_COUNT: "{len(shards)}"' in ci
    assert [int(s) for s in shards] == list(range(len(shards)))
    assert "shardfuzz merge reports/shards/shard-*" in ci and "if: always()" in ci
