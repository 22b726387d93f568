"""A shared example database (Hypothesis' own classes): the failure one run finds is
replayed by the next run sharing the database before it generates anything. Against a real
redis-server the test starts and stops itself, and against a shared directory."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.campaign.database import open_database
from harness.campaign.fuzz import RunConfig, fuzz
from harness.cli_input import load_known
from harness.report.summary import RunSummary
from harness.run.pool import Pool
from programs.errors import UsageError

SIG = "value|jit|psum"  # what the injected fault gives


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server on a free port, no persistence, stopped after the module."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed (Debian: apt-get install redis-server; .ci/run installs it)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    d = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(d)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        for _ in range(100):
            try:
                open_database(url)
                break
            except UsageError:
                time.sleep(0.1)
        else:
            pytest.fail("redis-server did not answer within 10 s")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def faulty_pool() -> Iterator[Pool]:
    p = Pool(1, timeout_s=60.0, env={"SHARDFUZZ_FAULTS": "psum_counts_device0_twice"})
    yield p
    p.close()


def run(pool: Pool, report: Path, seed: int, database: str) -> RunSummary:
    cfg = RunConfig(seed=seed, max_examples=40, modes=("abstract", "jit"), report_dir=report, minimize_budget_s=0.0,
                    workers=1, suppressions=load_known(None), database=database,
                    progress=open("/dev/null", "w"))  # noqa: SIM115
    return fuzz(cfg, pool=pool)


@pytest.mark.parametrize("kind", ["redis", "directory"])
def test_second_run_replays_the_first_runs_failure_first(kind: str, tmp_path: Path, faulty_pool: Pool,
                                                         request: pytest.FixtureRequest) -> None:
    db = request.getfixturevalue("redis_url") if kind == "redis" else str(tmp_path / "shared-db")
    # (seed 5: its first 40 programs reach the psum fault in a program whose saved example
    # replays it, which not every seed's do)
    first = run(faulty_pool, tmp_path / "first", 5, db)
    assert first.database_replayed == 0 and SIG in {b.signature for b in first.new}
    # a second run (another seed: other programs; another shard would do the same)
    second = run(faulty_pool, tmp_path / "second", 11, db)
    assert second.database_replayed >= 1
    b = next(b for b in second.buckets if b.signature == SIG)
    # seen in a replayed program, before any generated one: no stream position, first checks
    assert b.first_seen_index == -1 and b.first_seen_at <= second.database_replayed
    # without the database the second seed's run sees the fault only in its own programs
    alone = run(faulty_pool, tmp_path / "alone", 11, str(tmp_path / "empty-db"))
    assert alone.database_replayed == 0
    assert all(x.first_seen_index >= 0 for x in alone.buckets if x.signature == SIG)


def test_bad_database_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # (nothing listens there)
    with pytest.raises(UsageError, match="no Redis server answers there"):
        open_database(f"redis://127.0.0.1:{port}/0")
    with pytest.raises(UsageError, match="unknown scheme"):
        open_database("s3://bucket/db")
