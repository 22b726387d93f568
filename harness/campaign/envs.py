"""Virtual environments, one per jax version, for release qualification and bisection.

`build(version, root, base_python)` makes root/jax-VERSION with `jax==VERSION
jaxlib==VERSION` from the package index (or the nearest installable version, said so);
`base_python_for` picks the interpreter it is made from (jax >= 0.11 needs Python >= 3.12:
one is found on PATH or under ~/.pyenv, else the RuntimeError names what is missing);
`releases_between` lists the jax releases the index offers strictly between two versions
(`shardfuzz qualify --bisect`). shardfuzz itself is not installed in these environments:
the worker pool gives its workers PYTHONPATH pointing at this checkout.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# the first jax release that needs a newer Python, and the Python it needs
NEEDS_NEWER_PYTHON = ((0, 11), (3, 12))


def _vt(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def _run(cmd: list[str], quiet: bool = True) -> subprocess.CompletedProcess[str]:
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    return subprocess.run(cmd, capture_output=quiet, text=True)


def available(pip: Path, package: str) -> list[str]:
    """Versions of `package` the index offers for this environment's Python."""
    r = _run([str(pip), "index", "versions", package])
    m = re.search(r"Available versions:\s*(.*)", r.stdout)
    if not m:
        return []
    return [v.strip() for v in m.group(1).split(",") if re.fullmatch(r"[\d.]+", v.strip())]


def nearest(want: str, versions: list[str]) -> str | None:
    """The offered version closest to `want` (ties: the older one)."""
    if not versions:
        return None
    w = _vt(want)
    width = max(len(w), 3)

    def key(v: str) -> tuple[int, tuple[int, ...]]:
        t = _vt(v) + (0,) * (width - len(_vt(v)))
        ww = w + (0,) * (width - len(w))
        # distance on (major, minor, patch) as one number, weighted by position
        d = sum(abs(a - b) * 1000 ** (width - i) for i, (a, b) in enumerate(zip(t, ww, strict=True)))
        return d, t

    return min(versions, key=key)


def python_version(python: str) -> tuple[int, int] | None:
    """(major, minor) of an interpreter that runs and has venv, or None."""
    try:
        r = subprocess.run([python, "-c", "import sys, venv, ensurepip; print(*sys.version_info[:2])"],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0:
        return None
    major, minor = r.stdout.split()
    return int(major), int(minor)


def newer_python(minimum: tuple[int, int], given: str | None = None) -> str | None:
    """An interpreter >= minimum with venv: `given`, then python3.13/3.12 on PATH, then pyenv's."""
    candidates: list[str] = []
    if given:
        candidates.append(given)
    for name in ("python3.14", "python3.13", "python3.12"):
        found = shutil.which(name)
        if found:
            candidates.append(found)
    pyenv_root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    for d in sorted(glob.glob(f"{pyenv_root}/versions/3.*/bin/python3"), reverse=True):
        candidates.append(d)
    for c in candidates:
        v = python_version(c)
        if v is not None and v >= minimum:
            return c
    return None


def base_python_for(version: str, default: str, given_new: str | None) -> str:
    """The interpreter a venv for jax `version` is made from; RuntimeError when none fits."""
    first, need = NEEDS_NEWER_PYTHON
    if _vt(version)[:2] < first:
        return default
    have = python_version(default)
    if have is not None and have >= need:
        return default
    found = newer_python(need, given_new)
    if found is None:
        raise RuntimeError(
            f"jax {version} needs Python >= {need[0]}.{need[1]}, and this machine has none "
            f"(looked for python3.13/python3.12 on PATH and ~/.pyenv/versions/3.*; "
            f"install python3.13 and python3.13-venv (Debian 13), or pass --new-python PYTHON)")
    print(f"jax {version}: needs Python >= {need[0]}.{need[1]}; using {found}", file=sys.stderr)
    return found


def python_of(env: Path) -> Path:
    return env / "bin" / "python"


def jax_in(python: Path) -> str | None:
    r = subprocess.run([str(python), "-c", "import jax, jaxlib; print(jax.__version__)"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def build(version: str, root: Path, base_python: str) -> tuple[str, Path]:
    """Make root/jax-VERSION (or the nearest installable version); return (installed, python)."""
    env = root / f"jax-{version}"
    py = python_of(env)
    if py.exists() and jax_in(py) == version:
        print(f"jax {version}: {env} already has it", file=sys.stderr)
        return version, py
    if not py.exists():
        r = _run([base_python, "-m", "venv", str(env)], quiet=False)
        if r.returncode != 0:
            raise RuntimeError(f"jax {version}: could not create a venv at {env}")
    pip = env / "bin" / "pip"
    r = _run([str(pip), "install", "--quiet", f"jax=={version}", f"jaxlib=={version}"], quiet=False)
    got = version
    if r.returncode != 0:
        alt = nearest(version, available(pip, "jaxlib"))
        if alt is None or alt == version:
            raise RuntimeError(f"jax {version}: not installable for this Python, and no other jaxlib is offered")
        print(f"jax {version}: not installable for Python {sys.version_info.major}.{sys.version_info.minor}; "
              f"installing the nearest, {alt}", file=sys.stderr)
        r = _run([str(pip), "install", "--quiet", f"jax=={alt}", f"jaxlib=={alt}"], quiet=False)
        if r.returncode != 0:
            raise RuntimeError(f"jax {alt}: pip install failed in {env}")
        got = alt
    seen = jax_in(py)
    if seen is None:
        raise RuntimeError(f"jax {got}: installed in {env} but 'import jax' fails there")
    return seen, py


def releases_between(low: str, high: str, pythons: list[str]) -> list[str]:
    """jax releases strictly between `low` and `high`, in version order, that the package
    index offers to any of `pythons` (each a venv's python with pip) and for which a jaxlib
    of the same version exists."""
    lo, hi = _vt(low), _vt(high)
    offered: set[str] = set()
    for py in pythons:
        pip = Path(py).parent / "pip"
        if not pip.exists():
            continue
        jaxlibs = set(available(pip, "jaxlib"))
        offered |= {v for v in available(pip, "jax") if v in jaxlibs}
    return sorted((v for v in offered if lo < _vt(v) < hi), key=_vt)
