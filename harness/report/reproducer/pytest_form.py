"""The pytest form of a reproducer: `pytest_reproducer(p, mode, title)`, a self-contained
test in the style of jax's tests/shard_map_test.py that asserts the oracle's prediction
with `pytest.raises(..., match=...)` and `np.testing`, so it fails while jax diverges.
"""

from __future__ import annotations

import re

import numpy as np

from harness.judge.compare_outputs import batch_atol
from harness.judge.errors import ERROR_TABLE
from harness.report.reproducer.literals import (
    array_literal,
    doc_text,
    grad_literal,
    lowering_literal,
    summary,
)
from harness.report.reproducer.mode_choice import VALUE_MODES, auto_axes, batch_size, prepare
from harness.report.reproducer.run_snippets import ragged_guard, run_lines, setup_lines
from harness.report.reproducer.script_text import CHECK_LOWERING, LOWERING_FACTS, RECORD
from oracles import predict
from oracles.prediction import PredictedError, Prediction
from programs.emit import FORCE_DEVICES, SHARD_MAP_SHIM, permute_guard, x64_lines
from programs.errors import NoReproducer
from programs.model import Program
from programs.points import DERIVATIVE_MODES


def test_name(title: str) -> str:
    """A pytest function name from a title ('reports/x/cases/ab12.json' -> 'test_shard_map_ab12')."""
    stem = re.sub(r"\.(min\d*)?\.?json$", "", title.split("/")[-1].split(" ")[-1]) if title else "reproducer"
    return "test_shard_map_" + (re.sub(r"\W+", "_", stem).strip("_").lower() or "reproducer")


def pytest_reproducer(p: Program, mode: str = "jit", title: str = "", name: str = "") -> str:
    """A self-contained pytest test (jax's public API, numpy and pytest only), in the
    style of jax's tests/shard_map_test.py: it runs `p` in harness mode `mode` and asserts
    the oracle's prediction with `pytest.raises(ExcType, match=phrase)` or
    `np.testing.assert_allclose`, so it fails while jax diverges. Raises NoReproducer
    where the mode does not apply."""
    if mode == "multiprocess":
        raise NoReproducer("the multiprocess reproducer is a script that starts its two processes (emit it without --pytest)")
    pred = prepare(p, mode)
    title = title or "shardfuzz reproducer"
    fn = name or test_name(title)
    setup = [
        *_indent(RECORD.strip("\n").splitlines(), 2),
        "",
        *_indent(setup_lines(p, mode), 2),
        "",
        *_indent(run_lines(p, mode), 2),
    ]
    if mode == "lowering":
        setup = _indent(LOWERING_FACTS.strip("\n").splitlines() + [""] + CHECK_LOWERING.strip("\n").splitlines(), 2) + [""] + setup
    asserts = _pytest_asserts(p, pred, mode)
    lines = [
        f'"""{doc_text(title)} (mode: {mode}): a jax.shard_map test in the style of jax\'s tests/shard_map_test.py.',
        "",
        f"Expected by shard_map's documented semantics: {doc_text(summary(p, pred, mode))}",
        '"""',
        "import os",
        "",
        *FORCE_DEVICES,
        "import re  # noqa: E402,F401",
        "",
        "import numpy as np  # noqa: E402",
        "import pytest  # noqa: E402,F401",
        "import jax  # noqa: E402",
        "import jax.numpy as jnp  # noqa: E402,F401",
        "from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402",
        *SHARD_MAP_SHIM,
        *permute_guard(p),
        *x64_lines(p),
        "",
        "",
        f"def {fn}():",
        *_indent(ragged_guard(p, mode, 'pytest.skip("XLA:CPU has no ragged_all_to_all")'), 2),
        *setup,
        "",
        *_indent(asserts, 2),
        "",
    ]
    text = "\n".join(lines)
    head, fn_text = text.split(f"\ndef {fn}():", 1)
    return head + f"\ndef {fn}():" + re.sub(r"\n\n\n+", "\n\n", fn_text)  # one blank line at most inside it


def _pytest_asserts(p: Program, pred: Prediction, mode: str) -> list[str]:
    """The test's assertions: the error jax must raise, or every body value's type, each
    output and what the mode checks beyond them (the lowering, the derivatives)."""
    if pred.error is not None:
        return _error_asserts(pred.error)
    lines = ["outs, facts = run()", f"assert len(outs) == {len(pred.outputs)}"]
    lines += _type_asserts(p, pred) + _output_asserts(p, pred, mode)
    if mode == "lowering":
        lines += lowering_literal(p, pred)
        lines += ["problems = []", "check_lowering(facts, problems)", "assert not problems, problems"]
    if mode in DERIVATIVE_MODES:
        lines += grad_literal(p, pred, mode)
        lines += [
            "if EXPECTED_DERIVATIVE is not None:",
            "  assert facts['outputs'] == EXPECTED_DERIVATIVE['outputs']",
            "  for rule in ('jvp', 'vjp', 'linearize', 'jacfwd'):  # <u, J v> against finite differences of the forward semantics",
            "    if rule in facts:",
            "      np.testing.assert_allclose(facts[rule], EXPECTED_DERIVATIVE['value'], rtol=0,",
            "                                 atol=EXPECTED_DERIVATIVE['tolerance'], err_msg=f'<u, J v> by jax.{rule}')",
            "  if 'hvp' in facts and EXPECTED_DERIVATIVE.get('second') is not None:",
            "    np.testing.assert_allclose(facts['hvp'], EXPECTED_DERIVATIVE['second'], rtol=0,",
            "                               atol=EXPECTED_DERIVATIVE['second_tolerance'], err_msg='v^T H v by jax.hessian')",
        ]
    return lines


def _error_asserts(err: PredictedError) -> list[str]:
    """pytest.raises with the error kind's types and phrases, then each fact in the message."""
    sig = ERROR_TABLE[err.kind]
    types = ", ".join(sig.types)
    known = {"ValueError", "TypeError", "NameError", "NotImplementedError", "IndexError"}
    exc = "(" + ", ".join(t if t in known else f"getattr(jax.errors, {t!r}, ValueError)" for t in sig.types) + ",)"
    phrase = "|".join(re.escape(ph) for ph in sig.phrases)
    lines = [
        f"# {err.kind.value}: {err.why}",
        f"with pytest.raises({exc}, match={phrase!r}) as exc:  # {types}",
        "  run()",
    ]
    lines += [f"assert {x!r} in str(exc.value)" for x in err.facts]
    return lines


def _type_asserts(p: Program, pred: Prediction) -> list[str]:
    lines = ["# every body value's per-device type (shape, dtype, varying manual axes) inside the body"]
    n_in = len(p.inputs)
    for i, t in enumerate(pred.value_types):
        name = f"a{i}" if i < n_in else f"v{i - n_in}"
        want = f"({tuple(t.shape)!r}, {t.dtype!r})"
        lines.append(f"assert TYPES[{name!r}][:2] == {want}, {name!r}")
        if t.vma is not None:
            lines.append(f"assert TYPES[{name!r}][2] in (None, {sorted(t.vma)!r}), 'jax.typeof({name}).vma'")
    return lines


def _output_asserts(p: Program, pred: Prediction, mode: str) -> list[str]:
    """Each output's shape and dtype; in a value mode its blocks (or global value), under
    vmap the batch against the oracle run once per member."""
    lines: list[str] = []
    batched = mode in ("vmap", "vmap_spmd")
    n = batch_size(p, mode)
    members = [pred] + ([predict(p, batch=b) for b in range(1, n)] if batched else [])
    auto = bool(auto_axes(p))
    for k, e in enumerate(pred.outputs):
        shape = (n,) + e.global_shape if batched else e.global_shape
        lines.append(f"shape, dtype, blocks, value = outs[{k}]")
        lines.append(f"assert (shape, dtype) == ({shape!r}, {e.dtype!r})")
        if mode not in VALUE_MODES and not batched:
            continue
        exact = all(m.outputs[k].exact for m in members)
        atol = batch_atol([m.outputs[k] for m in members]) if batched else e.atol
        if not batched and e.unchecked is not None and auto:
            atol = float("inf")  # (the global value: where the elements of no predicted value lie is not compared)
        if np.isinf(atol):
            lines.append("# the values may overflow the dtype: only the shape and dtype are predicted")
            continue
        cmp = "np.testing.assert_array_equal({g}, {w}{msg})" if exact else \
            f"np.testing.assert_allclose({{g}}, {{w}}, rtol={e.rtol!r}, atol={atol!r}{{msg}})"
        if batched:
            wants = [m.outputs[k].global_value for m in members]
            if any(w is None for w in wants):
                lines.append("# no global value to compare (check_vma=False and the blocks differ)")
                continue
            lines.append(cmp.format(g="value", w=array_literal(np.stack(wants)), msg=", err_msg='the unbatched program per member, stacked'"))  # type: ignore[arg-type]
        elif auto and e.global_value is not None:
            lines.append(cmp.format(g="value", w=array_literal(e.global_value), msg=""))
        elif auto:
            lines.append("# partial manual without a global value: jax may lay the blocks out along automatic axes")
        else:
            lines.append(f"expected = {array_literal(e.device_values)}  # expected[mesh coordinate]: that device's block")  # type: ignore[arg-type]
            if e.unchecked is None:
                lines += ["for coord in np.ndindex(*MESH_SHAPE):",
                          "  " + cmp.format(g="blocks[coord]", w="expected[coord]", msg=", err_msg=f'device {coord}'")]
            else:  # (compared but at the elements of no predicted value)
                lines += [f"unchecked = {array_literal(e.unchecked)}.astype(bool)  # no value predicted there (an infinite error bound: a cast past the dtype's range, an overflow)",
                          "for coord in np.ndindex(*MESH_SHAPE):",
                          "  keep = ~unchecked[coord]",
                          "  " + cmp.format(g="np.asarray(blocks[coord])[keep]", w="expected[coord][keep]", msg=", err_msg=f'device {coord}'")]
    return lines


def _indent(lines: list[str], n: int) -> list[str]:
    pad = " " * n
    return [pad + line if line else line for chunk in lines for line in chunk.split("\n")]
