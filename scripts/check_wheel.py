"""Checks a built wheel against the checkout: every tracked file of the four packages
(programs, strategies, oracles, harness: code and data) is in it, and nothing else of the
repository (tests, scripts, reports) is.

    python scripts/check_wheel.py dist/shardfuzz-*.whl

Exit 0 when the wheel holds exactly those files; 1 naming what is missing or extra.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOPS = ("programs", "strategies", "oracles", "harness")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheel", type=Path)
    a = ap.parse_args()
    tracked = set(subprocess.run(["git", "ls-files", "-z", "--", *TOPS], cwd=ROOT, capture_output=True, text=True,
                                 check=True).stdout.split("\0")) - {""}
    with zipfile.ZipFile(a.wheel) as z:
        held = {n for n in z.namelist() if ".dist-info/" not in n}
    missing, extra = sorted(tracked - held), sorted(held - tracked)
    for n in missing:
        print(f"{a.wheel.name}: missing {n} (a subpackage without __init__.py, or data no package-data glob matches)")
    for n in extra:
        print(f"{a.wheel.name}: holds {n}, which is not a tracked file of {', '.join(TOPS)}")
    if missing or extra:
        return 1
    print(f"{a.wheel.name}: {len(held)} files, every tracked file of {', '.join(TOPS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
