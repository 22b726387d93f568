"""The shardfuzz command: exit codes, one-line errors, reports, reproducers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import P, iota, op, prog

from programs import to_json
from programs.model import Mesh

ROOT = Path(__file__).resolve().parent.parent


def sf(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=600)


@pytest.fixture()
def case(tmp_path: Path) -> Path:
    p = prog(Mesh(("x", "y"), (2, 4)), [iota(8, 4)], [P("x", "y")], [op("psum", 0, axes=("y",)), op("all_gather", 1, axes=("x",), axis=0, tiled=True)], [2], [P("x")])
    f = tmp_path / "case.json"
    f.write_text(to_json(p))
    return f


@pytest.mark.parametrize(
    "args, phrase",
    [
        (["replay", "/nonexistent.json"], "no such file"),
        (["emit", "{tmp}/bad.json"], "not valid JSON"),
        (["explain", "{tmp}/unknown_op.json"], "unknown op"),
        (["fuzz", "--max-examples", "0"], "argument --max-examples: 0 must be >= 1"),
        (["fuzz", "--modes", "jit,warp"], "unknown mode"),
        (["fuzz", "--seed", "banana"], "invalid int value"),
        (["frobnicate"], "invalid choice"),
        (["fuzz", "--shard", "2/2"], "0 <= K < N"),
        (["merge", "{tmp}/nowhere", "--report", "{tmp}/m"], "no such report directory"),
        (["merge", "{tmp}", "--report", "{tmp}/m"], "no summary.json there"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, case: Path, args: list[str], phrase: str) -> None:
    (tmp_path / "bad.json").write_text("{nope")
    d = json.loads(case.read_text())
    d["body"][0]["kind"] = "pwarp"
    (tmp_path / "unknown_op.json").write_text(json.dumps(d))
    r = sf(*[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and "WARNING" not in ln]
    assert len(lines) == 1 and phrase in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_replay_explain_emit(case: Path) -> None:
    r = sf("replay", str(case))
    assert r.returncode == 0 and "PASS" in r.stdout, r.stdout + r.stderr
    r = sf("explain", str(case))
    assert r.returncode == 0
    assert "per-device (4, 1)" in r.stdout and "varies over {x, y}" in r.stdout and "global (16, 1)" in r.stdout
    r = sf("emit", str(case))
    assert r.returncode == 0
    script = r.stdout
    assert "EXPECTED_OUTPUTS" in script and "dict(shape=(16, 1), dtype='int32'" in script  # the prediction, embedded
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert run.stdout.startswith("FIXED:") and "jax agrees" in run.stdout


def test_emit_reproduces_in_the_case_mode() -> None:
    """A grad-only divergence gets a grad reproducer (jvp and vjp under jit) that fails
    standalone with BUG: (known zero-size Shardy export bug); in jit, where jax is right,
    the same program's script says FIXED:. --pytest writes a test function instead."""
    case = ROOT / "harness/data/corpus/known/zero_grad_lowering.json"
    r = sf("emit", str(case))
    assert r.returncode == 0 and "jax.vjp" in r.stdout, r.stdout + r.stderr
    run = subprocess.run([sys.executable, "-c", r.stdout], capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and run.stdout.startswith("BUG:") and "GlobalToLocalShape" in run.stdout, run.stdout[-2000:]
    r = sf("emit", str(case), "--mode", "jit")
    run = subprocess.run([sys.executable, "-c", r.stdout], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.startswith("FIXED:"), run.stdout[-2000:]
    r = sf("emit", str(case), "--pytest")
    assert r.returncode == 0 and "def test_shard_map_zero_grad_lowering():" in r.stdout, r.stdout + r.stderr
    assert sf("emit", str(case), "--mode", "nope").returncode == 2
    r = sf("emit", str(ROOT / "harness/data/corpus/known/ppermute_order.json"), "--mode", "grad")  # no float32 argument
    assert r.returncode == 2 and "does not apply" in r.stderr, r.stderr


def test_fuzz_writes_summary(tmp_path: Path) -> None:
    rep = tmp_path / "rep"
    r = sf("fuzz", "--seed", "3", "--max-examples", "12", "--report", str(rep), "--workers", "1", "--modes", "abstract,jit")
    assert r.returncode in (0, 1), r.stderr[-2000:]
    s = json.loads((rep / "summary.json").read_text())
    for key in ("programs_run", "divergences", "suppressed", "buckets", "jax_version", "seed", "elapsed_s"):
        assert key in s
    assert s["programs_run"] + s["repeats_skipped"] == 12 and s["seed"] == 3
    assert (r.returncode == 1) == (s["divergences"] > 0)
    for b in s["buckets"]:
        assert Path(b["case"]).exists()
    assert any(k.startswith("op: ") for k in s["statistics"]), s["statistics"]


def test_readme_is_what_ci_runs_and_links_only_inside() -> None:
    """The README's test command is `.ci/run`'s (with -rs: skip reasons shown), it makes
    the virtual environment first, and every relative link resolves in the repository."""
    import re

    readme = (ROOT / "README.md").read_text()
    ci = [ln for ln in (ROOT / ".ci/run").read_text().splitlines() if ln.startswith("python -m pytest")]
    assert len(ci) == 1 and "-rs" in ci[0] and ci[0] in readme.splitlines()
    assert "python3 -m venv .venv && . .venv/bin/activate" in readme and "apt-get install chromium" in readme
    links = re.findall(r"\]\(([^)#]+)\)", readme)
    assert "docs/ARCHITECTURE.md" in links
    for link in links:
        if "://" not in link:
            assert (ROOT / link).resolve().is_relative_to(ROOT) and (ROOT / link).exists(), link
    assert "../" not in readme


def test_explain_shows_jax_types_beside_the_oracles_and_marks_mismatches() -> None:
    """A vma bug (grouped pmax typed invariant) shows as a marked mismatch on the value it
    concerns; a case where jax is right shows every value agreeing."""
    bad = sf("explain", "harness/data/corpus/known/groups_vma.json")
    assert bad.returncode == 0, bad.stderr
    pmax = bad.stdout.split("v0 = jax.lax.pmax")[1].split("verdict")[0]
    assert "jax: int32[1] varies over {} (invariant)   <- MISMATCH (vma)" in pmax, bad.stdout
    good = sf("explain", "harness/data/corpus/curated/psum_one_of_two_axes.json")
    assert good.returncode == 0 and "MISMATCH" not in good.stdout and "(agrees)" in good.stdout, good.stdout
    offline = sf("explain", "--no-jax", "harness/data/corpus/known/groups_vma.json")
    assert offline.returncode == 0 and "jax:" not in offline.stdout


def test_fuzz_takes_python(tmp_path: Path) -> None:
    """fuzz --python runs its workers in the interpreter it names (here a wrapper of this one
    that logs each start: the check of the interpreter, then the workers); a missing one,
    or --workers 0 (jax in this process), is bad input."""
    log = tmp_path / "started.log"
    wrapper = tmp_path / "python"
    wrapper.write_text(f"#!/bin/sh\necho started >> {log}\nexec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    r = sf("fuzz", "--python", str(wrapper), "--workers", "1", "--max-examples", "3", "--modes", "abstract,jit",
           "--minimize-budget", "0", "--report", str(tmp_path / "run"))
    assert r.returncode in (0, 1) and (tmp_path / "run" / "summary.json").is_file(), r.stdout + r.stderr
    assert len(log.read_text().splitlines()) >= 2, "the workers did not start through --python"
    bad = sf("fuzz", "--python", "/nonexistent/bin/python", "--max-examples", "1", "--report", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "no such interpreter" in bad.stderr, bad.stderr
    here = sf("fuzz", "--python", sys.executable, "--workers", "0", "--max-examples", "1", "--report", str(tmp_path / "w0"))
    assert here.returncode == 2 and "--workers 0" in here.stderr, here.stderr


def test_case_commands_take_python() -> None:
    """replay, explain, minimize and emit run jax in the interpreter --python names (an
    environment from scripts/envs.py); a missing one is bad input."""
    case = "harness/data/corpus/curated/psum_one_of_two_axes.json"
    r = sf("replay", "--python", sys.executable, "--modes", "abstract,jit", case)
    assert r.returncode == 0 and "PASS" in r.stdout, r.stdout + r.stderr
    r = sf("explain", "--python", sys.executable, case)
    assert r.returncode == 0 and "(agrees)" in r.stdout and "said (abstract mode)" in r.stdout, r.stdout + r.stderr
    r = sf("emit", "--python", sys.executable, case)
    assert r.returncode == 0 and "exits 0: FIXED:" in r.stderr, r.stderr
    for cmd, extra in (("replay", ()), ("explain", ()), ("emit", ()), ("minimize", ("--signature", "value|jit|psum"))):
        bad = sf(cmd, "--python", "/nonexistent/bin/python", *extra, case)
        assert bad.returncode == 2 and "no such interpreter" in bad.stderr, (cmd, bad.stderr)
