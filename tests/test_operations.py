"""Fuzzing as an operation: determinism, nothing lost on kill -9, corpus replay, fixed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAST = ["--modes", "abstract,jit", "--workers", "1", "--minimize-budget", "0", "--value-share", "1"]


def sf(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, cwd=ROOT,
        env={**os.environ, **(env or {})}, timeout=900,
    )


def test_same_seed_same_programs(tmp_path: Path) -> None:
    digests = []
    for i in range(2):
        r = sf("fuzz", "--seed", "7", "--max-examples", "15", "--report", str(tmp_path / f"r{i}"), "--modes", "abstract", "--workers", "1", "--minimize-budget", "0")
        assert r.returncode in (0, 1), r.stderr[-1500:]
        digests.append(json.loads((tmp_path / f"r{i}" / "summary.json").read_text())["programs_digest"])
    assert digests[0] == digests[1]
    r = sf("fuzz", "--seed", "8", "--max-examples", "15", "--report", str(tmp_path / "r2"), "--modes", "abstract", "--workers", "1", "--minimize-budget", "0")
    assert json.loads((tmp_path / "r2" / "summary.json").read_text())["programs_digest"] != digests[0]


def test_kill_9_loses_no_found_program(tmp_path: Path) -> None:
    rep, corpus = tmp_path / "rep", tmp_path / "corpus"
    env = {**os.environ, "SHARDFUZZ_FAULTS": "psum_counts_device0_twice"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "fuzz", "--seed", "21", "--max-examples", "100000", "--report", str(rep),
         "--corpus", str(corpus), "--invalid", "0", *FAST],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not list((rep / "cases").glob("*.json")):
            time.sleep(0.5)
        time.sleep(1.0)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    cases = list((rep / "cases").glob("*.json"))
    assert cases, "no divergence found before the kill"
    for c in cases:
        doc = json.loads(c.read_text())  # complete, parseable: written atomically
        assert doc["divergences"] and doc["program"]["schema"] == 1
    assert {c.name for c in corpus.glob("*.json")} >= {c.name for c in cases if not c.name.startswith(".")} - set()


def test_corpus_replay_reports_fixed(tmp_path: Path) -> None:
    rep1, rep2, corpus = tmp_path / "a", tmp_path / "b", tmp_path / "corpus"
    # (seed 3: its first 100 programs show the psum fault and nothing else; a seed whose
    # programs also meet a real jax bug would not do)
    r = sf("fuzz", "--seed", "3", "--max-examples", "100", "--invalid", "0", "--report", str(rep1), "--corpus", str(corpus), *FAST,
           env={"SHARDFUZZ_FAULTS": "psum_counts_device0_twice"})
    assert r.returncode == 1, r.stdout[-1500:] + r.stderr[-1500:]
    assert list(corpus.glob("*.json"))
    # jax's persistent compilation cache, under the corpus by default: the workers' compiles were kept
    assert [f for f in (corpus / ".jax_cache").rglob("*") if f.is_file()], "no executable in CORPUS/.jax_cache"
    # the "bug" is fixed: the same corpus replayed without the fault
    r = sf("fuzz", "--seed", "22", "--max-examples", "3", "--invalid", "0", "--report", str(rep2), "--corpus", str(corpus), *FAST)
    s = json.loads((rep2 / "summary.json").read_text())
    assert s["corpus_replayed"] >= 1
    assert s["fixed"] and all(sig.startswith("value|jit|") for f in s["fixed"] for sig in f["signatures"])
    assert s["divergences"] == 0
    assert "FIXED" in r.stdout


def test_bad_corpus_and_suppressions_are_exit_2(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "broken.json").write_text('{"program": {"schema": 1}\n')
    r = sf("fuzz", "--max-examples", "1", "--corpus", str(corpus), "--report", str(tmp_path / "r"))
    assert r.returncode == 2 and "broken.json" in r.stderr and "line" in r.stderr, r.stderr
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = sf("fuzz", "--max-examples", "1", "--corpus", str(blocker / "sub"), "--report", str(tmp_path / "r"))
    assert r.returncode == 2 and "cannot write" in r.stderr, r.stderr
    sup = tmp_path / "s.toml"
    sup.write_text("[[divergence]\nid = 'x'\n")
    r = sf("fuzz", "--max-examples", "1", "--suppressions", str(sup), "--report", str(tmp_path / "r"))
    assert r.returncode == 2 and "s.toml" in r.stderr and "line" in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1


def test_unknown_profile_is_exit_2(tmp_path: Path) -> None:
    r = sf("fuzz", "--profile", "weekly", "--report", str(tmp_path / "r"))
    assert r.returncode == 2 and "weekly" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_minimize_total_budget_goes_to_the_most_frequent_bucket_first(tmp_path: Path) -> None:
    rep = tmp_path / "rep"
    # (seed 5: its first 60 programs make several new buckets, from two cases with the
    # psum fault, for the total budget to choose among)
    r = sf("fuzz", "--seed", "5", "--max-examples", "60", "--report", str(rep), "--modes", "jit,eager,vmap", "--workers", "1",
           "--value-share", "1", "--invalid", "0", "--minimize-budget", "5", "--minimize-total", "1",
           env={"SHARDFUZZ_FAULTS": "psum_counts_device0_twice"})
    assert r.returncode == 1, r.stderr[-1500:]
    new = [b for b in json.loads((rep / "summary.json").read_text())["buckets"] if not b["suppressed_by"]]
    assert len(new) >= 2, new
    done = [b for b in new if b["minimized_case"]]
    # one search (buckets of the same case reuse its minimized program: no search of their own)
    assert len({b["case"] for b in done}) == 1 and max(b["count"] for b in done) == max(b["count"] for b in new)
    assert len(done) < len(new)
    assert "buckets left unminimized" in r.stderr
    assert sf("fuzz", "--minimize-total", "-1", "--report", str(tmp_path / "x")).returncode == 2


def test_a_budget_run_minimizes_a_sweep_program_without_replaying_the_stream(tmp_path: Path) -> None:
    """A sweep program was drawn by a Hypothesis run of its own: the shrink search, which
    replays the run's stream (here 10^9 examples) until it meets the failing program,
    must not look for it there (it would never stop); the minimizer shrinks it. (The
    budget counts from the command's start, its imports and workers' start included; the
    grace after it goes to minimization: no known entries, whose own cases would take it.)"""
    rep = tmp_path / "rep"
    none = tmp_path / "none.toml"
    none.write_text("")
    r = subprocess.run(
        [sys.executable, "-m", "harness.cli", "fuzz", "--seed", "0", "--budget", "30", "--max-examples", "1000000000",
         "--report", str(rep), "--modes", "jit", "--workers", "1", "--invalid", "0", "--minimize-budget", "4",
         "--minimize-total", "4", "--grace", "90", "--suppressions", str(none)],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "SHARDFUZZ_FAULTS": "psum_counts_device0_twice"},
        timeout=300,
    )
    assert r.returncode == 1, r.stderr[-1500:]
    s = json.loads((rep / "summary.json").read_text())
    new = [b for b in s["buckets"] if not b["suppressed_by"]]
    # the buckets a sweep program found (the sweep's programs come first in the stream's
    # order); on a fast machine the stream starts within the budget too, and a stream
    # program's bucket is shrunk by Hypothesis first, as it should be
    swept = {b["signature"] for b in new if 0 <= b["first_seen_index"] < s["programs_swept"]}
    assert s["programs_swept"] > 0 and swept and any(b["minimized_case"] for b in new if b["signature"] in swept), r.stderr[-1500:]
    for block in r.stderr.split("minimizing [")[1:]:
        signature = block.split("] ", 1)[1].split(" ...", 1)[0]
        if signature in swept:
            assert "Hypothesis shrinking" not in block, block


def test_console_json_junit_and_html_give_the_same_counts(tmp_path: Path) -> None:
    """One definition of every count: a real run (a fault makes new buckets, invalid
    programs meet known entries) read back from summary.json, its console summary, its
    junit.xml and its index.html must all say the same numbers."""
    import html
    import re
    import xml.etree.ElementTree as ET

    from harness.report.summary import RunSummary

    rep = tmp_path / "rep"
    # (seed 1: its first 40 programs reach the psum fault and known entries)
    r = sf("fuzz", "--seed", "1", "--max-examples", "40", "--report", str(rep), "--modes", "abstract,jit,eager",
           "--workers", "1", "--value-share", "1", "--invalid", "0.4", "--minimize-budget", "0",
           env={"SHARDFUZZ_FAULTS": "psum_counts_device0_twice"})
    assert r.returncode == 1, r.stderr[-1500:]
    s = RunSummary.from_json(json.loads((rep / "summary.json").read_text()))
    c = s.counts
    assert c.new_buckets > 0 and c.divergences > 0 and c.known_buckets > 0 and c.suppressed > 0, c
    assert c.failing_programs <= c.programs_with_divergences <= c.programs_run
    assert c.divergences == sum(b.count for b in s.failing) and c.suppressed == sum(b.count for b in s.known)
    assert c.policy == sum(b.count for b in s.policy) and c.policy_buckets == len(s.policy)
    assert all(b.suppressed_by and not b.known for b in s.policy)  # (policy is apart from the known bugs)
    assert c.line() in r.stdout, r.stdout[-2000:]
    suite = ET.parse(rep / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert suite.get("failures") == str(c.new_buckets + c.still_failing_buckets)
    assert suite.get("skipped") == str(c.known_buckets + c.policy_buckets)
    assert suite.get("tests") == str(len(s.buckets) + len(s.reruns) + 1)
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert (props["programs_run"], props["failing_programs"], props["divergences"], props["suppressed"], props["policy"]) == tuple(
        str(x) for x in (c.programs_run, c.failing_programs, c.divergences, c.suppressed, c.policy))
    skipped = [t.find("skipped").get("message") for t in suite.iter("testcase") if t.find("skipped") is not None]  # type: ignore[union-attr]
    assert sum(1 for m in skipped if m.startswith("policy: ")) == c.policy_buckets
    names = [t.get("name") for t in suite.iter("testcase")]
    assert len(names) == len(set(names))
    run = next(t for t in suite.iter("testcase") if t.get("name") == "run")
    assert c.line() in (run.findtext("system-out") or "")
    page = (rep / "index.html").read_text()
    assert html.escape(c.line()) in page
    tiles = dict((label, int(v)) for v, label in re.findall(r'<div class="tile [^"]*"><b>(\d+)</b><span>([^<]+)</span>', page))
    assert tiles["new buckets"] == c.new_buckets and tiles["known buckets"] == c.known_buckets
    assert tiles["programs run"] == c.programs_run and tiles["failing programs"] == c.failing_programs
    assert tiles["divergences (unexplained)"] == c.divergences and tiles["known divergences"] == c.suppressed
    assert tiles["policy divergences"] == c.policy
    assert ("policy (jax's choice, not a bug" in r.stdout) == bool(c.policy_buckets)
    assert all(not b.new for b in s.known)  # a known bucket is never 'new'


def test_a_cell_jax_fails_at_is_listed_with_the_known_divergence_that_blocked_it(tmp_path: Path) -> None:
    """A cell no mode could check because jax is known to fail there (a negative
    scatter_dimension: jit's lowering fails StableHLO verification) is listed with the
    known entry as why, not as a cell the run just missed; the modes jax runs it in
    check it (abstract)."""
    corpus, rep = tmp_path / "corpus", tmp_path / "rep"
    corpus.mkdir()
    program = json.loads((ROOT / "harness" / "data" / "corpus" / "known" / "neg_scatter.json").read_text())
    (corpus / "neg_scatter.json").write_text(json.dumps({"program": program, "divergences": []}))
    r = sf("fuzz", "--seed", "0", "--max-examples", "1", "--invalid", "0", "--report", str(rep), "--corpus", str(corpus),
           "--compile-cache", "none", *FAST)
    assert r.returncode == 0, r.stdout[-1500:] + r.stderr[-1500:]
    rows = {(c["cell"], c["mode"]): c for c in json.loads((rep / "summary.json").read_text())["cells"]}
    jit = rows[("psum_scatter|scatter_dimension=negative", "jit")]
    assert jit["checks"] == 0 and jit["why"].startswith("known divergence") and "negative-scatter-dimension" in jit["why"], jit
    assert rows[("psum_scatter|scatter_dimension=negative", "abstract")]["checks"] >= 1
    # a cell no program held is not blamed on it
    assert "negative-scatter-dimension" not in rows[("all_to_all|split_axis=negative", "jit")]["why"]
