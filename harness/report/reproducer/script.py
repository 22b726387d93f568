"""The asserting reproducer script: `reproducer(p, mode, title)` assembles the set-up and
`run()` (run_snippets.py), the embedded prediction (literals.py) and the check helpers,
supervisor and `main` (script_text.py) into one standalone file.
"""

from __future__ import annotations

from harness.report.reproducer.literals import doc_text, expectations, summary
from harness.report.reproducer.mode_choice import VALUE_MODES, prepare
from harness.report.reproducer.run_snippets import ragged_guard, run_lines, setup_lines
from harness.report.reproducer.script_text import (
    CHECK_BATCHED,
    CHECK_COMMON,
    CHECK_GRAD,
    CHECK_LOWERING,
    CHECK_VALUES,
    LOWERING_FACTS,
    MAIN,
    MP_FORCE_DEVICES,
    MP_INIT,
    MP_SUPERVISOR,
    RECORD,
    SUPERVISOR,
)
from oracles.prediction import Prediction
from programs.emit import FORCE_DEVICES, SHARD_MAP_SHIM, permute_guard, x64_lines
from programs.model import Program
from programs.points import DERIVATIVE_MODES

TIMEOUT_S = 120  # the child's limit (env SHARDFUZZ_REPRO_TIMEOUT): past it, a hang


def reproducer(p: Program, mode: str = "jit", title: str = "") -> str:
    """A standalone script (jax + numpy only) that runs `p` in harness mode `mode` (one of
    REPRO_MODES) and compares jax's result with the oracle's prediction, embedded in it as
    literals: exit 1 with a one-paragraph `BUG: ...` while jax diverges, exit 0 with
    `FIXED: ...` once it agrees (exit 2: it cannot run here, e.g. ragged_all_to_all values
    on CPU). Raises NoReproducer (a ValueError) when the harness would report the mode
    unsupported for `p`."""
    pred = prepare(p, mode)
    title = title or "shardfuzz reproducer"
    expected = summary(p, pred, mode)
    helpers, calls = _checks(pred, mode)
    fmt = {"title": _brace(title), "mode": mode, "summary": _brace(expected)}
    doc = [
        f'"""{doc_text(title)} (mode: {mode}).',
        "",
        "Runs one jax.shard_map program the way shardfuzz's harness mode does and compares the result",
        "with what shard_map's documented semantics give (predicted by shardfuzz's NumPy oracle,",
        "embedded below). Exit 1 with `BUG: ...` while jax diverges from it, 0 with `FIXED: ...` once",
        "jax agrees. Needs only jax and numpy; forces 8 CPU devices"
        + (" (2 processes x 4, started by this script, gloo collectives)." if mode == "multiprocess" else "."),
        "",
        f"Expected: {doc_text(expected)}",
        '"""',
    ]
    mp = mode == "multiprocess"
    lines = [
        *doc,
        (MP_SUPERVISOR if mp else SUPERVISOR).format(timeout=TIMEOUT_S, **fmt).strip("\n"),
        "",
        *(MP_FORCE_DEVICES if mp else FORCE_DEVICES),
        "import re  # noqa: E402",
        "",
        "import numpy as np  # noqa: E402",
        "import jax  # noqa: E402",
        *(MP_INIT if mp else []),
        "import jax.numpy as jnp  # noqa: E402",
        "from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402",
        *SHARD_MAP_SHIM,
        *permute_guard(p),
        *x64_lines(p),
        "",
        *ragged_guard(p, mode, 'print("cannot run here: XLA:CPU has no ragged_all_to_all (run on a GPU, or use --mode abstract)"); sys.exit(2)'),
        RECORD.strip("\n"),
        "",
        "",
        *setup_lines(p, mode),
        "",
        "",
        *run_lines(p, mode),
        "",
        "",
        *expectations(p, pred, mode),
        "",
        "\n\n\n".join(h.strip("\n") for h in helpers),
        "",
        "",
        MAIN.format(checks="\n".join(calls), **fmt).strip("\n"),
        "",
    ]
    return "\n".join(lines)


def _checks(pred: Prediction, mode: str) -> tuple[list[str], list[str]]:
    """The helper definitions the script needs and the check calls of `main`."""
    helpers = [CHECK_COMMON]
    calls = ["      if check_shapes(outs, problems):"]
    if pred.error is None and mode in VALUE_MODES + ("vmap", "vmap_spmd"):
        helpers.append(CHECK_VALUES if mode in VALUE_MODES else CHECK_BATCHED)
        calls.append("        check_values(outs, problems)")
        if mode in VALUE_MODES:
            calls.append("        check_shardings(problems)")
    else:
        calls.append("        pass")
    if mode == "lowering":
        helpers += [LOWERING_FACTS, CHECK_LOWERING]
        calls.append("      check_lowering(facts, problems)")
    if mode in DERIVATIVE_MODES and pred.error is None:
        helpers.append(CHECK_GRAD)
        calls.append("      check_derivative(facts, problems)")
    return helpers, calls


def _brace(s: str) -> str:
    """Text for an f-string inside the generated script: braces and quotes escaped."""
    return s.replace("\\", "\\\\").replace("{", "{{").replace("}", "}}").replace('"', '\\"').replace("\n", " ")
