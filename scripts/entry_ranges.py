"""Which jax versions show each known entry's bug on its own case.

    python scripts/entry_ranges.py envs/jax-0.6.0/bin/python envs/jax-0.8.1/bin/python ...

For every entry of harness/data/known_divergences.toml and every interpreter, the entry's case
is checked there (in the modes its signatures name) and the entry, with its version range
set aside, is asked whether it explains a divergence of it. Prints one line per entry:
the versions that show the bug and those that do not, to set `jax_versions` from
measurements (scripts/build_known_divergences.py), never from guesses.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.judge.check import check_in_pool  # noqa: E402
from harness.judge.known import case_path, entry_case_shows, entry_modes  # noqa: E402
from harness.judge.known_load import load  # noqa: E402
from harness.run.modes import DEFAULT_MODES  # noqa: E402
from harness.run.pool import Pool  # noqa: E402
from programs.serialize import from_json  # noqa: E402


def main(pythons: list[str]) -> int:
    entries = load()
    shows: dict[str, dict[str, bool]] = {e.id: {} for e in entries}
    for py in pythons:
        pool = Pool(2, python=py, timeout_s=60.0)
        jv = str(pool.info.get("jax_version"))
        try:
            for e in entries:
                p = from_json(case_path(e).read_text())
                res = check_in_pool(pool, p, entry_modes(e, DEFAULT_MODES))
                shows[e.id][jv] = entry_case_shows(replace(e, jax_versions="*"), p, res.divergences, res.prediction, jv)
        finally:
            pool.close()
        print(f"checked {len(entries)} entries on jax {jv}", file=sys.stderr, flush=True)
    for e in entries:
        yes = [v for v, s in shows[e.id].items() if s]
        no = [v for v, s in shows[e.id].items() if not s]
        print(f"{e.id:<48} range {e.jax_versions:<14} shows on {','.join(yes) or '-':<28} not on {','.join(no) or '-'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:] or [sys.executable]))
