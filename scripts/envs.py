"""Build one virtual environment per jax version, for release qualification.

    python scripts/envs.py 0.4.35 0.6.2 0.8.1 0.10.2 --dir envs/

Each environment is `DIR/jax-X` with `jax==X jaxlib==X` from the package index (and
what they pull in: numpy, ml_dtypes, ...). shardfuzz itself is NOT installed there: the
worker pool starts workers with PYTHONPATH pointing at this checkout, and a worker needs
only jax and numpy. When version X has no jaxlib for this Python, the nearest version
that has one is installed instead (and said so). The last lines printed are
`X -> PYTHON` for each environment, ready for `shardfuzz qualify --python PYTHON`.

Exit code: 0 every environment is ready; 1 one could not be built (named on stderr).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="one venv per jax version, for shardfuzz qualify")
    ap.add_argument("versions", nargs="+", help="jax versions, e.g. 0.4.35 0.6.2 0.8.1 0.10.2")
    ap.add_argument("--dir", default="envs", help="where the venvs go (default: envs/)")
    ap.add_argument("--python", default=sys.executable, help="interpreter the venvs are made from")
    a = ap.parse_args(argv)
    root = Path(a.dir)
    root.mkdir(parents=True, exist_ok=True)
    built: list[tuple[str, str, Path]] = []
    failed = 0
    for v in a.versions:
        try:
            got, py = build(v, root, a.python)
        except RuntimeError as e:
            print(f"error: {e}", file=sys.stderr)
            failed += 1
            continue
        built.append((v, got, py))
    for v, got, py in built:
        note = "" if got == v else f"  (asked for {v}; nearest installable)"
        print(f"{got} -> {py.absolute()}{note}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
