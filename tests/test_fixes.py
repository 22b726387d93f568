"""`shardfuzz explain --fix`: every shown fix is valid by the oracle and re-run through jax.

For every curated case the oracle calls invalid, `find_fixes` shows at least one
verified fix or says why there is none; each shown fix is then run again through jax,
in modes other than the ones that verified it (eager, and jit under a fresh check), and
must agree with the oracle there too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import P, iota, op, prog

from harness.judge.check import check_in_pool
from harness.report.fix_candidates import _insert_before, candidates
from harness.report.fixes import VERIFY_MODES, find_fixes
from oracles.interpreter import trace
from oracles.prediction import ErrorKind
from programs.model import Mesh
from programs.serialize import from_json

CURATED = Path(__file__).resolve().parents[1] / "harness" / "data" / "corpus" / "curated"


def _invalid_curated() -> list[Path]:
    out = []
    for f in sorted(CURATED.glob("*.json")):
        _, err = trace(from_json(f.read_text()), with_values=False)
        if err is not None:
            out.append(f)
    return out


def test_every_error_kind_has_a_curated_case() -> None:
    kinds = {trace(from_json(f.read_text()), with_values=False)[1].kind for f in _invalid_curated()}  # type: ignore[union-attr]
    assert kinds == set(ErrorKind)


@pytest.mark.parametrize("case", _invalid_curated(), ids=lambda f: f.stem)
def test_curated_error_case_gets_a_verified_fix_that_jax_runs_again(case: Path, pool) -> None:  # type: ignore[no-untyped-def]
    p = from_json(case.read_text())
    rep = find_fixes(pool, p)
    assert rep.error is not None
    assert rep.fixes or rep.why_none, "neither a fix nor why there is none"
    assert rep.fixes, f"{case.name}: no verified fix ({rep.why_none})"
    for fx in rep.fixes:
        _, err = trace(fx.program, with_values=False)
        assert err is None, f"{fx.title}: the oracle says {err}"
        assert any(d.startswith("-") and not d.startswith("---") for d in fx.diff) or any(
            d.startswith("+") and not d.startswith("+++") for d in fx.diff
        ), f"{fx.title}: the diff shows no change"
        assert len(fx.outputs) == len(fx.program.outputs)
        # re-run through jax: in eager (op by op) and a fresh jit, it must agree with the oracle
        res = check_in_pool(pool, fx.program, ("jit", "eager"))
        assert not any(o.raised for o in res.observations), [o.error_message for o in res.observations]
        assert not res.divergences, f"{fx.title}: {[d.message for d in res.divergences]}"


def test_out_spec_replication_fixes_name_the_axis_or_reduce_over_it() -> None:
    mesh = Mesh(("x",), (2,))
    p = prog(mesh, [iota(4, 2)], [P("x")], [op("neg", 0)], [1], [P()])
    _, err = trace(p, with_values=False)
    assert err is not None and err.kind == ErrorKind.OUT_SPEC_REPLICATION
    edits = candidates(p, err)
    valid = [e for e in edits if trace(e.program, with_values=False)[1] is None]
    assert any(e.program.out_specs == (P("x"),) for e in valid)
    assert any(e.program.body[-1].kind == "psum" and e.program.outputs == (2,) for e in valid)


def test_pcast_inserted_before_a_collective_renumbers_later_values() -> None:
    mesh = Mesh(("x", "y"), (2, 2))
    # a0 varies over x only; psum over (x, y) needs it varying over both
    p = prog(mesh, [iota(4)], [P("x")], [op("psum", 0, axes=("x", "y")), op("neg", 1)], [2], [P()])
    _, err = trace(p, with_values=False)
    assert err is not None and err.kind == ErrorKind.COLLECTIVE_VMA
    q = _insert_before(p, 0, op("pcast", 0, axes=("y",), to="varying"))
    assert [o.operands for o in q.body] == [(0,), (1,), (2,)] and q.outputs == (3,)
    assert trace(q, with_values=False)[1] is None
    assert any(e.program == q for e in candidates(p, err))


def test_no_fix_says_why(pool) -> None:  # type: ignore[no-untyped-def]
    mesh = Mesh(("x",), (2,))
    # psum_scatter of a computed (3,) value over an axis of size 2: no single edit helps
    p = prog(mesh, [iota(2)], [P("x")], [op("const", shape=(3,), dtype="int32", value=1),
                                          op("psum_scatter", 1, axes=("x",), scatter_dimension=0, tiled=True)], [2], [P("x")])
    rep = find_fixes(pool, p)
    assert rep.error is not None and rep.error.kind == ErrorKind.COLLECTIVE_SHAPE
    assert not rep.fixes
    assert "none of the" in rep.why_none and "still invalid" in rep.why_none
    assert "no verified fix" in "\n".join(rep.lines())


def test_valid_program_needs_no_fix(pool) -> None:  # type: ignore[no-untyped-def]
    p = prog(Mesh(("x",), (2,)), [iota(4)], [P("x")], [op("neg", 0)], [1], [P("x")])
    rep = find_fixes(pool, p)
    assert rep.error is None and not rep.fixes
    assert VERIFY_MODES == ("abstract", "jit")


def test_cli_explain_fix_prints_verified_diffs(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    assert main(["explain", "--fix", str(CURATED / "err_out_spec_replication.json")]) == 0
    out = capsys.readouterr().out
    assert "[verified] name 'x' in out_specs[0]" in out
    assert "+f = shard_map(body, mesh=mesh, in_specs=(P('x'),), out_specs=(P('x'),)" in out
    assert "device x=1: [[-4, -5], [-6, -7]]" in out


def test_cli_explain_fix_without_jax_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    assert main(["explain", "--fix", "--no-jax", str(CURATED / "err_out_spec_replication.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--fix" in err[0] and "--no-jax" in err[0]


def test_a_fix_on_a_program_holding_a_known_jax_bug_is_not_verified_and_says_so(pool) -> None:  # type: ignore[no-untyped-def]
    mesh = Mesh(("x",), (4,))
    # grouped pmin: jax 0.10.2 calls the result invariant (a known divergence); the
    # program's own mistake (no out_specs) has an oracle-valid fix that jax cannot confirm
    p = prog(mesh, [iota(4)], [P("x")], [op("pmin", 0, axes=("x",), groups=((0, 1), (2, 3)))], [1], [])
    rep = find_fixes(pool, p)
    assert rep.error is not None and rep.error.kind == ErrorKind.OUT_SPECS_STRUCTURE
    assert rep.oracle_valid >= 1 and not rep.fixes
    assert "known jax bug grouped-pmin-claims-invariance" in rep.why_none
