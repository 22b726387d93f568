"""Building the error catalogue (`shardfuzz errors --out DIR`): for every `ErrorKind`, the
smallest curated case (`harness/data/corpus/curated/`) the oracle says raises it is run
through jax (abstract mode, in a worker; `--python` for another jax) to capture the exact
message on that version, checked to be the predicted error (`harness/judge/compare.py`),
and given its verified fixes (`harness/report/fixes.py`: valid by the oracle, run by jax
agreeing with it). The `Catalogue` it returns is rendered by harness/report/catalogue.py.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from harness.campaign.minimize import size
from harness.data import CORPUS
from harness.judge.check import check_in_pool
from harness.report.catalogue import Catalogue, Page, previous_messages
from harness.report.fixes import find_fixes
from oracles.interpreter import trace
from oracles.prediction import ErrorKind
from programs.model import Program
from programs.serialize import from_json

CURATED = CORPUS / "curated"


def examples(root: Path = CURATED) -> dict[ErrorKind, tuple[str, Program]]:
    """For each error kind, the smallest curated case whose program the oracle says raises it."""
    best: dict[ErrorKind, tuple[str, Program]] = {}
    for f in sorted(root.glob("*.json")):
        p = from_json(f.read_text())
        _, err = trace(p, with_values=False)
        if err is not None and (err.kind not in best or size(p) < size(best[err.kind][1])):
            best[err.kind] = (f.name, p)
    return best


def build(pool: Any, out: Path, log: Any = print, kinds: tuple[ErrorKind, ...] = tuple(ErrorKind)) -> Catalogue:
    """Run every example (of `kinds`: all by default) and its fixes through jax in `pool`."""
    t0 = time.monotonic()
    jv = str(pool.info.get("jax_version", "?"))
    prev_version, prev = previous_messages(out)
    found = examples()
    missing = [k.value for k in ErrorKind if k not in found]
    if missing:
        raise RuntimeError(f"no curated case raises {missing}: add one in scripts/build_curated_corpus.py")
    pages = []
    for n, kind in enumerate(kinds, 1):
        name, p = found[kind]
        log(f"[{n}/{len(kinds)}] {kind.value}: running {name} on jax {jv}")
        res = check_in_pool(pool, p, ("abstract",))
        o = res.observations[0]
        if o.status in ("crash", "timeout", "unsupported"):
            etype, msg = o.status, o.error_message
        else:
            etype, msg = o.error_type or "(nothing raised)", o.error_message
        judge = "; ".join(d.message for d in res.divergences)
        if o.status == "unsupported":  # compat: this jax lacks what the example needs
            judge = f"jax {jv} cannot run this example: {o.error_message}"
        fixes = find_fixes(pool, p, jax_version=jv)
        log(f"    jax raised {etype}{'' if not res.divergences else ' (NOT as predicted)'}; {len(fixes.fixes)} verified fixes")
        old = prev.get(kind.value)
        previous = (prev_version or "?", old) if old is not None and old != msg else None
        _, err = trace(p, with_values=False)
        ok = not res.divergences and o.status != "unsupported"
        pages.append(Page(kind, name, p, err.why if err else "", etype, msg, ok, judge, fixes, previous))
    return Catalogue(jv, str(pool.python), tuple(pages), prev_version, time.monotonic() - t0)
