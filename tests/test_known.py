"""Known divergences explain only what they cause (no jax: hand-made divergences)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import P, iota, op, prog

from harness.judge.compare import Divergence, DivergenceKind
from harness.judge.known import (
    KnownDivergencesError,
    Pattern,
    derived_program,
    explains,
    find,
    load,
)
from harness.judge.known import _entry as entry
from oracles import predict
from programs.model import Mesh

XY = Mesh(("x", "y"), (2, 2))
SHIFT = tuple((i, (i + 1) % 4) for i in range(4))
# out[0]: ppermute over axes out of mesh order (the known bug); out[1]: an unrelated psum
PROGRAM = prog(XY, [iota(4), iota(2)], [P(("x", "y")), P()],
               [op("ppermute", 0, axes=("y", "x"), perm=SHIFT), op("psum", 1, axes=("x", "y"))],
               [2, 3], [P(("x", "y")), P()])
PPERMUTE = entry({"id": "ppermute-order", "reason": "r", "link": "none found", "case": "c.json",
                  "signatures": ["value|*|*"], "when": ["ppermute:axes_order==unordered"],
                  "rewrite": "mesh_order_axes"}, "test")


def div(kind: str, where: str, mode: str = "jit", output: int | None = None, op_index: int | None = None) -> Divergence:
    return Divergence(DivergenceKind(kind), mode, "", where, output=output, op_index=op_index)


def test_a_value_divergence_is_explained_only_where_its_output_depends_on_the_feature_op() -> None:
    pred = predict(PROGRAM)
    assert explains(PPERMUTE, div("value", "ppermute", output=0), PROGRAM, pred, "0.10.2")
    # the psum's output never touches the ppermute: a wrong value there is new
    assert not explains(PPERMUTE, div("value", "ppermute", output=1), PROGRAM, pred, "0.10.2")
    assert not explains(PPERMUTE, div("value", "psum", output=1), PROGRAM, pred, "0.10.2")


def test_kinds_are_literal() -> None:
    with pytest.raises(ValueError, match="no wildcards"):
        Pattern.parse("*|jit|psum")
    pred = predict(PROGRAM)
    assert not explains(PPERMUTE, div("shape", "ppermute", output=0), PROGRAM, pred, "0.10.2")


def test_errors_are_explained_only_at_the_op_that_raises() -> None:
    e = entry({"id": "e", "reason": "r", "link": "l", "case": "c", "signatures": ["unexpected_error|eager|*"],
               "when": ["ppermute"]}, "test")
    pred = predict(PROGRAM)
    assert explains(e, div("unexpected_error", "ppermute->ValueError", "eager", op_index=0), PROGRAM, pred, "0.10.2")
    assert not explains(e, div("unexpected_error", "psum->ValueError", "eager", op_index=1), PROGRAM, pred, "0.10.2")
    assert not explains(e, div("unexpected_error", "ppermute->ValueError", "jit", op_index=0), PROGRAM, pred, "0.10.2")
    # jax named no op (a compile error): any live op with the feature
    assert explains(e, div("unexpected_error", "lowering->ValueError", "eager"), PROGRAM, pred, "0.10.2")


def test_versions_are_a_range() -> None:
    e = entry({"id": "e", "reason": "r", "link": "l", "case": "c", "signatures": ["value|*|*"],
               "when": ["ppermute"], "jax_versions": ">=0.8,<0.9"}, "test")
    pred = predict(PROGRAM)
    d = div("value", "ppermute", output=0)
    assert explains(e, d, PROGRAM, pred, "0.8.1") and not explains(e, d, PROGRAM, pred, "0.10.2")


def test_mode_disagreement_needs_every_own_divergence_explained() -> None:
    pred = predict(PROGRAM)
    own = div("value", "ppermute", output=0)
    md = div("mode_disagreement", "raise:eager", "eager")
    assert find([PPERMUTE], md, [own, md], PROGRAM, pred, "0.10.2") is PPERMUTE
    other = div("value", "psum", output=1)
    assert find([PPERMUTE], md, [own, other, md], PROGRAM, pred, "0.10.2") is None


def test_derived_program_is_the_rewrite() -> None:
    q = derived_program([PPERMUTE], PROGRAM, predict(PROGRAM))
    assert q is not None and q.body[0].p("axes") == ("x", "y") and q.outputs == PROGRAM.outputs


def test_derived_program_slices_away_what_the_bug_reaches() -> None:
    e = entry({"id": "e", "reason": "r", "link": "l", "case": "c", "signatures": ["value|*|*"], "when": ["ppermute"]}, "t")
    q = derived_program([e], PROGRAM, predict(PROGRAM))
    assert q is not None and [o.kind for o in q.body] == ["psum"] and len(q.outputs) == 1


@pytest.mark.parametrize("bad, phrase", [
    ({"signatures": ["*|*|*"]}, "no wildcards"),
    ({"link": ""}, "'link'"),
    ({"rewrite": "magic"}, "rewrite 'magic'"),
    ({"jax_versions": "0.10"}, "Invalid specifier"),
    ({"when": ["ppermute:axes_order=unordered"]}, "not a program feature"),
    ({"colour": "red"}, "unknown keys"),
])
def test_malformed_entries_are_named(bad, phrase) -> None:  # type: ignore[no-untyped-def]
    d = {"id": "e", "reason": "r", "link": "l", "case": "c", "signatures": ["value|*|*"], "when": ["ppermute"], **bad}
    with pytest.raises(KnownDivergencesError, match=phrase):
        entry(d, "test")


def test_each_entry_has_its_own_case(tmp_path: Path) -> None:
    f = tmp_path / "k.toml"
    one = '[[divergence]]\nid = "{}"\nreason = "r"\nlink = "l"\ncase = "same.json"\nsignatures = ["value|*|*"]\n'
    f.write_text(one.format("a") + one.format("b"))
    with pytest.raises(KnownDivergencesError, match="share case"):
        load(f)
