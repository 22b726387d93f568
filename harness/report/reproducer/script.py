"""The asserting reproducer script: `reproducer(p, mode, title)` assembles the set-up and
`run()` (run_snippets.py), the embedded prediction (literals.py) and the check helpers,
supervisor and `main` (script_text.py) into one standalone file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.report.reproducer.literals import EFFECT_MODES, doc_text, expectations, summary
from harness.report.reproducer.mode_choice import VALUE_MODES, prepare
from harness.report.reproducer.run_snippets import ragged_guard, run_lines, setup_lines
from harness.report.reproducer.script_text import (
    CHECK_BATCHED,
    CHECK_CALLS,
    CHECK_COMMON,
    CHECK_DONATION,
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
from programs.body_text import value_names
from programs.emit import FORCE_DEVICES, SHARD_MAP_SHIM, permute_guard, x64_lines
from programs.graph import cone
from programs.model import Program
from programs.ops import COLLECTIVES
from programs.points import DERIVATIVE_MODES

TIMEOUT_S = 120  # the child's limit (env SHARDFUZZ_REPRO_TIMEOUT): past it, a hang


@dataclass(frozen=True)
class Own:
    """A known entry's own signature, for its reproducer: the (kind, where pattern) pairs
    of its signatures (`kind|mode|where`, harness/judge/known_features.py `Pattern`) that
    count as its bug, and the check a crash must stop at (`abort`, '' any)."""

    patterns: tuple[tuple[str, str], ...]
    abort: str = ""

    @staticmethod
    def of(patterns: Sequence[Any], abort: str, mode: str) -> Own:
        """From an entry's signature patterns (each with `kind`, `modes`: None for every
        mode, and `where`), those naming `mode`."""
        return Own(tuple((pat.kind, pat.where) for pat in patterns if pat.modes is None or mode in pat.modes), abort)


def reproducer(p: Program, mode: str = "jit", title: str = "", own: Own | None = None) -> str:
    """A standalone script (jax + numpy only) that runs `p` in harness mode `mode` (one of
    REPRO_MODES) and compares jax's result with the oracle's prediction, embedded in it as
    literals: exit 1 with a one-paragraph `BUG: ...` while jax diverges, exit 0 with
    `FIXED: ...` once it agrees (exit 2: it cannot run here, e.g. ragged_all_to_all values
    on CPU). With `own` (a known entry's signature), only a divergence of that signature
    (its kind and where: the op, the exception type) counts: another is printed after
    `FIXED:` and exit 0. Raises NoReproducer (a ValueError) when the harness would report
    the mode unsupported for `p`."""
    pred = prepare(p, mode)
    title = title or "shardfuzz reproducer"
    expected = summary(p, pred, mode)
    helpers, calls = _checks(pred, mode, p)
    names = value_names(p)
    n_in = len(p.inputs)
    kinds = {names[n_in + i]: op.kind for i, op in enumerate(p.body)}
    outputs = [sorted({p.body[i].kind for i in cone(p, o)} | ({"input"} if o < n_in else set())) for o in p.outputs]
    ops = sorted({op.kind for op in p.body} - {"const"}) or ["input"]
    grad_where = ",".join(o for o in ops if o in COLLECTIVES) or "local"
    kinds_own = None if own is None else {k for k, _ in own.patterns}
    fmt = {"title": _brace(title), "mode": mode, "summary": _brace(expected), "own": repr(None if own is None else list(own.patterns)),
           "value_kinds": repr(kinds), "output_kinds": repr(outputs), "grad_where": grad_where,
           "own_crash": repr(None if kinds_own is None else "crash" in kinds_own),
           "own_hang": repr(None if kinds_own is None else "timeout" in kinds_own),
           "own_abort": "" if own is None else own.abort}
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


def _checks(pred: Prediction, mode: str, p: Program | None = None) -> tuple[list[str], list[str]]:
    """The helper definitions the script needs and the check calls of `main`."""
    helpers = [CHECK_COMMON]
    calls = ["      if check_shapes(outs, problems):"]
    if p is not None and pred.error is None and p.effects and mode in EFFECT_MODES:
        helpers.append(CHECK_CALLS)
        calls.append("        check_calls(problems)")
    if p is not None and pred.error is None and p.donate and mode in ("jit", "gspmd"):
        helpers.append(CHECK_DONATION)
        calls.append("        check_donation(problems)")
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
