"""The package as pip installs it: setuptools' discovery finds every directory of code,
every data file in the packages matches a package-data glob of pyproject.toml (so a wheel
holds it), the data is found through the package from any working directory, and the
version comes from pyproject.toml alone. CI (.ci/run) also builds the wheel, installs it
into a fresh environment and runs `shardfuzz fuzz` outside the checkout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import tomllib
from setuptools import find_namespace_packages, find_packages

from harness.cli import versions
from harness.data import CORPUS, DATA, KNOWN_DIVERGENCES
from harness.judge.known import case_path
from harness.judge.known_load import load

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]
TOPS = ("programs", "strategies", "oracles", "harness")


def _files() -> list[Path]:
    """The files under the top-level packages: tracked ones in a git checkout (so a stray
    local file does not count), else every file but byte code."""
    r = subprocess.run(["git", "ls-files", "-z", "--", *TOPS], cwd=ROOT, capture_output=True, text=True)
    if r.returncode == 0 and r.stdout:
        return [ROOT / f for f in r.stdout.split("\0") if f]
    return [f for t in TOPS for f in (ROOT / t).rglob("*") if f.is_file() and "__pycache__" not in f.parts]


def _package_data() -> set[Path]:
    """Every file the package-data globs select, as setuptools resolves them (relative to
    the package's directory, `**` recursive)."""
    out: set[Path] = set()
    for pkg, globs in SETUPTOOLS["package-data"].items():
        where = ROOT.joinpath(*pkg.split("."))
        for g in globs:
            out |= {f for f in where.glob(g) if f.is_file()}
    return out


def test_discovery_finds_every_directory() -> None:
    """Every directory of code and data is a package setuptools finds (data folders as
    namespace packages, which keeps setuptools from warning that it would drop them), and
    no byte-code directory is."""
    find = SETUPTOOLS["packages"]["find"]
    finder = find_namespace_packages if find.get("namespaces", True) else find_packages
    found = set(finder(str(ROOT), include=find["include"], exclude=find.get("exclude", ())))
    dirs = {f.parent for f in _files()}
    missing = sorted(str(d.relative_to(ROOT)) for d in dirs if ".".join(d.relative_to(ROOT).parts) not in found)
    assert not missing, f"{missing}: not found by setuptools' discovery (left out of the wheel)"
    assert {"harness.campaign", "harness.judge", "harness.report.reproducer", "harness.run", "harness.serve",
            "harness.data", "harness.data.corpus.known", "oracles.ops"} <= found
    assert not [p for p in found if "__pycache__" in p]


def test_every_data_file_is_package_data() -> None:
    data = _package_data()
    unshipped = sorted(str(f.relative_to(ROOT)) for f in _files() if f.suffix != ".py" and f not in data)
    assert not unshipped, f"{unshipped}: in a package but matched by no [tool.setuptools.package-data] glob"
    entries = load()
    assert entries and KNOWN_DIVERGENCES in data
    assert all(case_path(e) in data for e in entries), "every entry's own case ships with it"
    assert {f for f in data if f.parent == CORPUS / "curated"} == set((CORPUS / "curated").glob("*.json"))
    assert (ROOT / "strategies" / "cell_table.txt") in data


def test_data_found_from_any_directory(tmp_path: Path) -> None:
    """An entry's case resolves against the data root, not the working directory."""
    assert DATA == ROOT / "harness" / "data"
    code = ("from harness.judge.known import case_path; from harness.judge.known_load import load; es = load(); "
            "print(len(es), all(case_path(e).is_file() for e in es))")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(len(load())), "True"]


def test_version_comes_from_pyproject() -> None:
    assert "version" not in PYPROJECT["project"].get("dynamic", [])
    assert versions().startswith(f"shardfuzz {PYPROJECT['project']['version']} (jax ")
