"""Asserting reproducers: a standalone script (or a pytest test) that carries the oracle's
prediction for one program in one harness mode, runs that mode the way the harness does,
and compares what jax did with the prediction the way `harness/judge/compare.py` does.

    reproducer(p, mode, title)         a script: exit 1 and one `BUG:` paragraph while jax
                                       diverges from the prediction, exit 0 and `FIXED:`
                                       once it agrees
    pytest_reproducer(p, mode, title)  a self-contained `test_...` function in the style of
                                       jax's tests/shard_map_test.py: fails while the bug is
                                       there

The prediction is embedded as literals: the expected exception types, the stable phrases
of `harness/judge/errors.py` and the facts the message must name; or each output's
global shape, dtype and per-device blocks (vmap: the batch, the oracle looped per
member), the shape, dtype and varying axes of every body value (read with
`jax.typeof(v).vma` while jax traces the body), the lowering facts (manual regions,
manual axes, shardings, block shapes) or the finite-difference `<u, J v>` with its
tolerance (grad modes). The program's source comes from `programs/emit.py`.

The script runs the check in a child process of itself, so a jax crash (an abort inside
XLA) or a hang is reported as `BUG:` too rather than killing the script.

The package, by concern: `mode_choice` (which mode, whether it applies), `literals` (the
embedded prediction), `run_snippets` (set-up and `run()` per mode), `script_text` (the
fixed check helpers, supervisor and `main`), `script` (the assembled script) and
`pytest_form` (the pytest test).
"""

from harness.report.reproducer.mode_choice import (
    VALUE_MODES,
    case_mode,
    divergence_mode,
)
from harness.report.reproducer.pytest_form import pytest_reproducer, test_name
from harness.report.reproducer.script import TIMEOUT_S, Own, reproducer

__all__ = [
    "TIMEOUT_S",
    "VALUE_MODES",
    "Own",
    "case_mode",
    "divergence_mode",
    "pytest_reproducer",
    "reproducer",
    "test_name",
]
