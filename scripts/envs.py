"""Build one virtual environment per jax version, for release qualification.

    python scripts/envs.py 0.4.35 0.6.2 0.8.1 0.10.2 --dir envs/

Each environment is `DIR/jax-X` with `jax==X jaxlib==X` from the package index (and
what they pull in: numpy, ml_dtypes, ...). shardfuzz itself is NOT installed there: the
worker pool starts workers with PYTHONPATH pointing at this checkout, and a worker needs
only jax and numpy. When version X has no jaxlib for this Python, the nearest version
that has one is installed instead (and said so). The last lines printed are
`X -> PYTHON` for each environment, ready for `shardfuzz qualify --python PYTHON`.

jax 0.11 and newer need Python >= 3.12. For those versions the environment is made from a
Python >= 3.12 found on this machine (`python3.13`, `python3.12` on PATH, or a pyenv
installation under ~/.pyenv/versions/), or from `--new-python PYTHON`; when none exists the
version is skipped with a message that names what is missing (exit 1, the others still built).

Exit code: 0 every environment is ready; 1 one could not be built (named on stderr).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.campaign.envs import base_python_for, build  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="one venv per jax version, for shardfuzz qualify")
    ap.add_argument("versions", nargs="+", help="jax versions, e.g. 0.4.35 0.6.2 0.8.1 0.10.2")
    ap.add_argument("--dir", default="envs", help="where the venvs go (default: envs/)")
    ap.add_argument("--python", default=sys.executable, help="interpreter the venvs are made from")
    ap.add_argument("--new-python", default=None,
                    help="a Python >= 3.12 for jax >= 0.11 (default: found on PATH or under ~/.pyenv)")
    a = ap.parse_args(argv)
    root = Path(a.dir)
    root.mkdir(parents=True, exist_ok=True)
    built: list[tuple[str, str, Path]] = []
    failed = 0
    for v in a.versions:
        try:
            got, py = build(v, root, base_python_for(v, a.python, a.new_python))
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
