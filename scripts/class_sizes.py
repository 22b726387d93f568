"""Every class in harness/ longer than N lines (default 150), longest first.

    python scripts/class_sizes.py [N]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    least = int(sys.argv[1]) if len(sys.argv) > 1 else 150
    rows = []
    for f in sorted((ROOT / "harness").rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                n = node.end_lineno - node.lineno + 1
                if n > least:
                    rows.append((n, node.name, f"{f.relative_to(ROOT)}:{node.lineno}"))
    for n, name, where in sorted(rows, reverse=True):
        print(f"{n:5d}  {name:24s} {where}")


if __name__ == "__main__":
    main()
