"""`fuzz --shard K/N` and `shardfuzz merge`: two shards run side by side and merged give the
bucket set of one unsharded run of the same programs (real jax, a real injected fault)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.campaign.fuzz import RunConfig, fuzz, seeded_programs
from harness.campaign.shard import Shard, parse_shard
from harness.cli_input import load_known
from harness.report.merge import merge, missing_shards
from harness.report.summary import RunSummary
from harness.run.pool import Pool
from programs.errors import UsageError
from programs.serialize import program_id

MODES = ("abstract", "jit")


@pytest.fixture(scope="module")
def faulty_pool() -> Iterator[Pool]:
    """A worker whose psum counts device 0's block twice: every run finds a new bucket."""
    p = Pool(1, timeout_s=60.0, env={"SHARDFUZZ_FAULTS": "psum_counts_device0_twice"})
    yield p
    p.close()


def run(pool: Pool, report: Path, shard: Shard | None, n: int = 40) -> RunSummary:
    # (seed 1 reaches the psum fault in its first 40 programs: see tests/test_database.py)
    cfg = RunConfig(seed=1, max_examples=n, modes=MODES, report_dir=report, minimize_budget_s=0.0, workers=1,
                    suppressions=load_known(None), shard=shard, progress=open("/dev/null", "w"))  # noqa: SIM115
    return fuzz(cfg, pool=pool)


def buckets(s: RunSummary) -> set[tuple[object, ...]]:
    return {(b.signature, b.suppressed_by, b.count, Path(b.case).name, b.first_seen_index, b.new) for b in s.buckets}


def test_shards_merged_equal_the_unsharded_run(tmp_path: Path, faulty_pool: Pool) -> None:
    whole = run(faulty_pool, tmp_path / "whole", None)
    parts = [run(faulty_pool, tmp_path / f"s{k}", Shard(k, 2)) for k in range(2)]
    assert whole.new, "the injected psum fault must give a new bucket"
    # disjoint: no program checked by both shards; together: every program the whole run checked
    assert sum(p.counts.programs_run for p in parts) == whole.counts.programs_run
    assert all(0 < p.counts.programs_run < whole.counts.programs_run for p in parts)
    assert {p.programs_digest for p in parts} == {whole.programs_digest}  # the same stream drawn
    merged = merge([tmp_path / "s0", tmp_path / "s1"], tmp_path / "merged")
    assert buckets(merged) == buckets(whole)
    assert merged.counts == whole.counts
    assert merged.merged_from == (str(tmp_path / "s0"), str(tmp_path / "s1"))
    # each mode's worker time: the shards' summed (every drawn program checked abstractly once)
    runs = {m.mode: m.runs for m in merged.mode_time}
    assert runs["abstract"] == sum(m.runs for p in parts for m in p.mode_time if m.mode == "abstract") >= whole.counts.programs_run
    assert runs == {m.mode: sum(n.runs for p in parts for n in p.mode_time if n.mode == m.mode) for m in merged.mode_time}
    # the merged report is self-contained and reads back as the same summary
    for b in merged.buckets:
        assert Path(b.case).parent == tmp_path / "merged" / "cases" and Path(b.case).exists()
    back = RunSummary.from_json(json.loads((tmp_path / "merged" / "summary.json").read_text()))
    assert back == merged
    assert (tmp_path / "merged" / "junit.xml").exists() and "merged from 2 reports" in (tmp_path / "merged" / "index.html").read_text()
    assert missing_shards(parts) == [] and missing_shards(parts[:1]) == ["1/2"]
    with pytest.raises(UsageError, match="shard 0/2 is also"):
        merge([tmp_path / "s0", tmp_path / "s0"], tmp_path / "again")


def test_shards_partition_the_stream() -> None:
    ids = [program_id(p) for p in seeded_programs(60, 1)]
    for n in (1, 2, 3, 5):
        owners = [[k for k in range(n) if Shard(k, n).owns(i)] for i in ids]
        assert all(len(o) == 1 for o in owners)  # each program in exactly one shard
        assert n == 1 or len({o[0] for o in owners}) == n  # and every shard gets some


@pytest.mark.parametrize("text, phrase", [("2/2", "0 <= K < N"), ("0/0", "N >= 1"), ("1of2", "not of the form K/N"),
                                          ("-1/2", "not of the form K/N")])
def test_bad_shard_names_the_rule(text: str, phrase: str) -> None:
    with pytest.raises(UsageError, match=phrase):
        parse_shard(text)
    assert parse_shard(" 3/4 ") == Shard(3, 4) and str(Shard(3, 4)) == "3/4"
