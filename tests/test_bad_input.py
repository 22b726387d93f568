"""The front door: bad case files, out-of-range options and internal errors each give one
line on stderr and their own exit code (2 bad input, 3 a shardfuzz bug), never a jax
divergence; `--version`, defaults in every help text; nothing left in the temp dir."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers import P, iota, op, prog

from harness.campaign.fuzz import RunConfig
from harness.cli import _Help, build_parser
from harness.run.pool import Pool
from harness.run.worker import host_device_count
from programs import to_json
from programs.errors import ConfigError, ProgramFormatError, UsageError
from programs.model import Mesh
from programs.serialize import from_json
from programs.validate import EXPLAINED_BY, check_fits
from strategies.invalid import DEFECTS

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = prog(Mesh(("x", "y"), (2, 4)), [iota(8, 4)], [P("x", "y")], [op("psum", 0, axes=("y",))], [1], [P("x")])


def sf(*args: str, env: dict[str, str] | None = None, code: str | None = None) -> subprocess.CompletedProcess[str]:
    """The shardfuzz command in a subprocess (or `code` run with `python -c`)."""
    cmd = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "harness.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600, env={**os.environ, **(env or {})})


def one_line(r: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and "WARNING" not in ln]
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr
    return lines[0]


def _set(path: tuple[Any, ...], value: Any):  # type: ignore[no-untyped-def]
    def edit(d: dict[str, Any]) -> None:
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value

    return edit


# each bad case file: an edit of a good one, the phrase its one line must hold, and the
# command that reads it (all four commands read every file the same way: rotated here,
# and all four on one file below)
BAD_CASES: list[tuple[str, Any, str, str]] = [
    ("big_mesh", _set(("mesh", "sizes"), [10, 100]), "needs 1000 devices but jax here has 8", "replay"),
    ("duplicate_axes", _set(("mesh", "names"), ["x", "x"]), "axis 'x' appears twice", "explain"),
    ("zero_axis", _set(("mesh", "sizes"), [0, 4]), "has size 0; every mesh axis needs size >= 1", "replay"),
    ("negative_axis", _set(("mesh", "sizes"), [2, -4]), "has size -4", "emit"),
    ("forward_ref", _set(("body", 0, "operands"), [1]), "value 1 is not defined before this op", "explain"),
    ("undefined_ref", _set(("body", 0, "operands"), [7]), "value 7 is not defined before this op", "minimize"),
    ("missing_output", _set(("outputs",), [5]), "program.outputs: value 5 is not defined", "replay"),
    ("unknown_dtype", _set(("inputs", 0, "dtype"), "complex64"), "'complex64' is not a dtype shardfuzz knows", "emit"),
    ("unknown_op", _set(("body", 0, "kind"), "pwarp"), "unknown op 'pwarp'", "explain"),
    ("negative_shape", _set(("inputs", 0, "shape"), [-8, 4]), "has a negative dimension (-8)", "replay"),
    ("axis_names", _set(("axis_names",), ["x", "z"]), "axis_names: 'z' is not a mesh axis", "explain"),
    ("spec_axis", _set(("in_specs", 0, "entries"), [["x"], ["zz"]]), "names 'zz', which is not a mesh axis", "minimize"),
]


def _write_bad(tmp: Path, name: str, edit: Any, case: bool = False) -> Path:
    """The good program edited; `case`: wrapped as a case file (as fuzz writes them)."""
    d = json.loads(to_json(PROGRAM))
    if case:
        d = {"program": d, "divergences": []}
    edit(d)
    f = tmp / f"{name}.json"
    f.write_text(json.dumps(d))
    return f


@pytest.mark.parametrize("name, edit, phrase, cmd", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_case_file_is_one_line_and_exit_2(tmp_path: Path, name: str, edit: Any, phrase: str, cmd: str) -> None:
    f = _write_bad(tmp_path, name, edit)
    r = sf(cmd, str(f))
    assert r.returncode == 2, r.stdout + r.stderr
    line = one_line(r)
    assert str(f) in line and phrase in line, line
    assert "DIVERGES" not in r.stdout


def test_every_command_rejects_the_same_file(tmp_path: Path) -> None:
    f = _write_bad(tmp_path, "dup", _set(("mesh", "names"), ["y", "y"]))
    for cmd in ("replay", "explain", "emit", "minimize"):
        r = sf(cmd, str(f))
        assert r.returncode == 2 and "axis 'y' appears twice" in one_line(r), (cmd, r.stderr)


def test_emit_refuses_a_mesh_its_reproducer_cannot_have(tmp_path: Path) -> None:
    f = _write_bad(tmp_path, "m16", _set(("mesh", "sizes"), [4, 4]))
    r = sf("emit", str(f), env={"XLA_FLAGS": "--xla_force_host_platform_device_count=16"})
    assert r.returncode == 2 and "a reproducer forces 8 CPU devices" in one_line(r)


def test_more_devices_when_xla_flags_ask(tmp_path: Path) -> None:
    """The fix the device message names works: with 16 devices a 16-device mesh runs."""
    p = prog(Mesh(("x", "y"), (4, 4)), [iota(8, 4)], [P("x", "y")], [op("psum", 0, axes=("y",))], [1], [P("x")])
    f = tmp_path / "m16.json"
    f.write_text(to_json(p))
    assert sf("explain", "--no-jax", str(f)).returncode == 2
    r = sf("replay", str(f), "--modes", "abstract,jit", env={"XLA_FLAGS": "--xla_force_host_platform_device_count=16"})
    assert r.returncode == 0 and "PASS" in r.stdout, r.stdout + r.stderr
    assert host_device_count("--xla_force_host_platform_device_count=16") == 16
    assert host_device_count("--xla_force_host_platform_device_count=2") == 8
    assert host_device_count("") == 8


def test_deliberate_defects_still_load() -> None:
    """A spec naming an axis outside the mesh is what two defects draw on purpose: with
    that defect recorded it loads (the oracle predicts its error), without it it is bad
    input; every case in the corpus loads and fits."""
    d = json.loads(to_json(PROGRAM))
    d["in_specs"][0]["entries"] = [["x"], ["absent"]]
    with pytest.raises(ProgramFormatError, match="in_spec_unknown_axis"):
        from_json(json.dumps(d))
    d["defect"] = "in_spec_unknown_axis"
    assert from_json(json.dumps(d)).defect == "in_spec_unknown_axis"
    for names in EXPLAINED_BY.values():
        assert names <= set(DEFECTS)
    files = sorted((ROOT / "harness/data/corpus").rglob("*.json"))
    assert len(files) > 50
    for f in files:
        check_fits(from_json(f.read_text()), 8)


def test_bad_corpus_file_names_it_and_loses_nothing(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    good = corpus / "good.json"
    good.write_text(json.dumps({"program": json.loads(to_json(PROGRAM)), "divergences": []}))
    before = good.read_text()
    bad = _write_bad(corpus, "zero", _set(("program", "mesh", "sizes"), [2, 0]), case=True)
    big = tmp_path / "big"
    big.mkdir()
    _write_bad(big, "big", _set(("program", "mesh", "sizes"), [4, 4]), case=True)
    r = sf("fuzz", "--corpus", str(corpus), "--report", str(tmp_path / "rep"), "--max-examples", "1", "--workers", "0")
    assert r.returncode == 2 and str(bad) in one_line(r) and "has size 0" in one_line(r)
    assert good.read_text() == before and bad.exists()
    r = sf("fuzz", "--corpus", str(big), "--report", str(tmp_path / "rep"), "--max-examples", "1", "--workers", "0")
    assert r.returncode == 2 and "big.json" in one_line(r) and "needs 16 devices" in one_line(r)
    for d, phrase in ((corpus, "has size 0"), (big, "needs 16 devices")):
        r = sf("qualify", "--corpus", str(d), "--python", sys.executable, "--report", str(tmp_path / "q"))
        assert r.returncode == 2 and phrase in one_line(r), r.stderr
    assert not (tmp_path / "q").exists()


OPTIONS = [
    ("fuzz", "--timeout", "0"),
    ("fuzz", "--timeout", "-3"),
    ("fuzz", "--workers", "-1"),
    ("fuzz", "--max-examples", "0"),
    ("fuzz", "--budget", "0"),
    ("fuzz", "--value-share", "1.5"),
    ("fuzz", "--invalid", "-0.1"),
    ("fuzz", "--invalid", "nan"),
    ("fuzz", "--batch", "0"),
    ("fuzz", "--minimize-budget", "-1"),
    ("fuzz", "--minimize-total", "-1"),
    ("replay", "--timeout", "0"),
    ("minimize", "--budget", "-1"),
    ("minimize", "--timeout", "0"),
    ("qualify", "--timeout", "0"),
    ("qualify", "--workers", "0"),
    ("qualify", "--fuzz-examples", "-1"),
]


@pytest.mark.parametrize("cmd, option, value", OPTIONS)
def test_numeric_option_out_of_range(tmp_path: Path, cmd: str, option: str, value: str) -> None:
    case = tmp_path / "case.json"
    case.write_text(to_json(PROGRAM))
    extra = {"fuzz": ["--report", str(tmp_path / "rep")], "replay": [str(case)], "minimize": [str(case)],
             "qualify": ["--corpus", str(tmp_path), "--python", sys.executable]}[cmd]
    r = sf(cmd, *extra, f"{option}={value}")
    assert r.returncode == 2, r.stdout + r.stderr
    line = one_line(r)
    assert f"argument {option}" in line and value in line, line
    assert not (tmp_path / "rep").exists()  # refused before anything ran


def test_run_config_checks_itself() -> None:
    with pytest.raises(ConfigError, match=r"timeout_s=0 \(--timeout\) must be > 0"):
        RunConfig(timeout_s=0)
    for kwargs in ({"workers": -1}, {"invalid": 2.0}, {"value_share": -0.5}, {"batch": 0}, {"max_examples": 0},
                   {"budget_s": 0.0}, {"minimize_budget_s": -1.0}, {"minimize_total_s": -1.0}, {"modes": ()}):
        with pytest.raises(ValueError):
            RunConfig(**kwargs)  # type: ignore[arg-type]
    assert issubclass(ConfigError, UsageError)
    assert RunConfig(timeout_s=0.5, workers=0, invalid=1.0, budget_s=None).timeout_s == 0.5


def test_version() -> None:
    import jax

    r = sf("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("shardfuzz 0.") and f"jax {jax.__version__}" in r.stdout


def test_every_option_states_its_default(tmp_path: Path) -> None:
    ap = build_parser()
    subs = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
    seen = 0
    for name, parser in subs.choices.items():
        fmt = _Help(name)
        for action in parser._actions:
            if not action.option_strings or action.dest == "help" or action.required:
                continue
            seen += 1
            assert "default" in fmt._get_help_string(action), (name, action.option_strings)
    assert seen > 25
    r = sf("fuzz", "--help")
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    for phrase in ("--seed SEED which programs", "(default: 0)", "(default: 200)", "(default: 30.0)", "(default: 0.25)"):
        assert phrase in text, phrase
    assert "probe" not in r.stdout  # internal mode, not offered
    r = sf("fuzz", "--modes", "jit,probe", "--report", str(tmp_path / "rep"))
    assert r.returncode == 2 and "unknown mode(s) ['probe']" in one_line(r)


def test_internal_error_goes_to_a_fresh_file_for_replay(tmp_path: Path) -> None:
    case = tmp_path / "case.json"
    case.write_text(to_json(PROGRAM))
    boom = ("import sys, harness.cli as c\n"
            "def boom(a):\n    raise RuntimeError('boom in the harness')\n"
            "c.cmd_explain = boom\nsys.exit(c.main(sys.argv[1:]))")
    r = sf("explain", str(case), code=boom, env={"TMPDIR": str(tmp_path)})
    assert r.returncode == 3, r.stderr
    line = one_line(r)
    assert "shardfuzz explain: internal error: RuntimeError: boom in the harness" in line
    assert "already saved" not in line and f"{case} is unchanged" in line
    logs = list(tmp_path.glob("shardfuzz-explain-internal-error-*.txt"))
    assert len(logs) == 1 and str(logs[0]) in line and "RuntimeError: boom" in logs[0].read_text()


def test_internal_error_in_fuzz_goes_to_the_report(tmp_path: Path) -> None:
    boom = ("import sys, harness.cli, harness.campaign.fuzz as f\n"
            "def boom(cfg):\n    raise KeyError('lost')\n"
            "f.fuzz = boom\nsys.exit(harness.cli.main(sys.argv[1:]))")
    rep = tmp_path / "rep"
    r = sf("fuzz", "--report", str(rep), "--workers", "0", code=boom, env={"TMPDIR": str(tmp_path)})
    assert r.returncode == 3, r.stderr
    line = one_line(r)
    assert str(rep / "internal-error.txt") in line and f"saved in {rep / 'cases'}" in line
    assert "KeyError: 'lost'" in (rep / "internal-error.txt").read_text()
    assert not list(tmp_path.glob("shardfuzz-*"))


def test_pool_leaves_nothing_in_the_temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    pool = Pool(1, timeout_s=60.0)
    try:
        (log_dir,) = list(tmp_path.iterdir())
        assert log_dir == pool.log_dir and [f.name.startswith("shardfuzz-worker-") for f in log_dir.iterdir()] == [True]
        pool.submit(PROGRAM, ("abstract",))
        (c,) = pool.drain()
        assert c.observations[0].status != "crash"
    finally:
        pool.close()
    assert list(tmp_path.iterdir()) == []


def test_replay_leaves_no_worker_log(tmp_path: Path) -> None:
    case = tmp_path / "case.json"
    case.write_text(to_json(PROGRAM))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    r = sf("replay", str(case), "--modes", "abstract,jit", env={"TMPDIR": str(tmp)})
    assert r.returncode == 0 and "PASS" in r.stdout, r.stdout + r.stderr
    assert list(tmp.iterdir()) == []



def test_a_killed_parent_leaves_no_worker_log(tmp_path: Path) -> None:
    """kill -9 of the parent: its workers find the pipe closed and remove their logs."""
    import time

    code = ("import os, signal\nfrom harness.run.pool import Pool\n"
            "pool = Pool(2, timeout_s=60.0)\nprint(pool.log_dir, len(os.listdir(pool.log_dir)), flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)")
    r = sf(code=code, env={"TMPDIR": str(tmp_path)})
    assert r.returncode == -9 and r.stdout.split()[1] == "2", r.stdout + r.stderr
    deadline = time.monotonic() + 60
    while list(tmp_path.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert list(tmp_path.iterdir()) == []


def test_compile_cache_option_names_an_unwritable_directory_and_none_turns_it_off(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import COMPILE_CACHE_MAX_BYTES, compile_cache_env

    assert compile_cache_env("none", None) == {} and compile_cache_env("none", tmp_path) == {}
    # no option, no corpus: the per-user cache ($XDG_CACHE_HOME/shardfuzz/jax), capped
    monkeypatch.delenv("SHARDFUZZ_COMPILE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    user = compile_cache_env(None, None)
    assert user["JAX_COMPILATION_CACHE_DIR"] == str((tmp_path / "xdg" / "shardfuzz" / "jax").resolve())
    assert "JAX_COMPILATION_CACHE_MAX_SIZE" not in user  # (jax's cap stats every entry at each write)
    # the cap: pruned once per run, oldest first
    from harness.cli import prune_cache

    cache = tmp_path / "cache"
    cache.mkdir()
    for i in range(4):
        (cache / f"e{i}").write_bytes(b"x" * 100)
        os.utime(cache / f"e{i}", (1000 + i, 1000 + i))
    assert prune_cache(cache, 250) == 2 and sorted(f.name for f in cache.iterdir()) == ["e2", "e3"]
    assert COMPILE_CACHE_MAX_BYTES == 2 << 30
    # a per-user cache that cannot be written was not asked for: off, with a warning
    (tmp_path / "xdg-file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-file"))
    assert compile_cache_env(None, None) == {}
    assert "running without it" in capsys.readouterr().err
    env = compile_cache_env(None, tmp_path)
    assert env["JAX_COMPILATION_CACHE_DIR"] == str((tmp_path / ".jax_cache").resolve()) and (tmp_path / ".jax_cache").is_dir()
    assert env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "0"  # eager's quick per-primitive compiles too
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = sf("fuzz", "--compile-cache", str(blocker / "cache"), "--report", str(tmp_path / "rep"), "--max-examples", "1")
    assert r.returncode == 2 and "--compile-cache" in one_line(r) and "writable directory" in one_line(r), r.stderr
    assert not (tmp_path / "rep" / "summary.json").exists()
