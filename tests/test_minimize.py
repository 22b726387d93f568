"""Minimization passes, driven by a stand-in check (no jax), and on real jax with a fault."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers import P, iota, op, prog

from harness.campaign.minimize import minimize, size
from programs import to_json
from programs.model import Input, Mesh

ROOT = Path(__file__).resolve().parent.parent


def _big():  # type: ignore[no-untyped-def]
    mesh = Mesh(("x", "y", "z"), (2, 2, 2))
    return prog(
        mesh,
        [iota(8, 6), Input((4, 4), "float32", "small", 3)],
        [P(("x", "y"), None), P("z")],
        [op("neg", 0), op("psum", 2, axes=("y",)), op("add", 3, 0), op("all_gather", 1, axes=("z",), axis=0, tiled=True)],
        [4, 5],
        [P(("x", "y")), P()],
    )


def test_minimize_keeps_the_signature_and_shrinks() -> None:
    def check(q):  # type: ignore[no-untyped-def]
        # stands in for "jax still shows the divergence": an output made by a psum over y
        ops = [q.op_of(v) for v in q.outputs]
        return {"value|jit|psum"} if any(o is not None and o.kind == "psum" and "y" in o.p("axes") for o in ops) else set()

    p = _big()
    best, n = minimize(p, "value|jit|psum", check)
    assert check(best) == {"value|jit|psum"}
    assert size(best) < size(p)
    assert len(best.body) == 1 and best.body[0].kind == "psum"
    assert best.mesh.names == ("y",) and len(best.inputs) == 1 and len(best.outputs) == 1
    assert n <= 300


def test_minimize_command_with_a_real_fault(tmp_path: Path) -> None:
    case = tmp_path / "case.json"
    doc = {"program": json.loads(to_json(_big())), "divergences": [{"signature": "value|jit|psum"}]}
    case.write_text(json.dumps(doc))
    env = {**__import__("os").environ, "SHARDFUZZ_FAULTS": "psum_counts_device0_twice"}
    r = subprocess.run(
        [sys.executable, "-m", "harness.cli", "minimize", str(case), "--budget", "120"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    small = json.loads((tmp_path / "case.min.json").read_text())["program"]
    assert [o["kind"] for o in small["body"]] == ["psum"], small
    assert (tmp_path / "case.min.py").exists()


def test_hypothesis_shrinks_a_drawn_program_first_and_saves_it() -> None:
    """Hypothesis' shrinker on a program a run drew (found again by replaying the run's
    generation), then the saved example is what the next run replays first."""
    from hypothesis import Phase
    from hypothesis.database import InMemoryExampleDatabase

    from harness.campaign.fuzz import (
        RunConfig,
        handling,
        hypothesis_shrink,
        hypothesis_test,
        seeded_programs,
    )
    from programs.serialize import program_id

    def check(q):  # type: ignore[no-untyped-def]
        # stands in for jax: "any psum shows the divergence"
        return {"value|jit|psum"} if any(o.kind == "psum" for o in q.body) else set()

    cfg = RunConfig(seed=5, max_examples=60, invalid=0.0)
    drawn = seeded_programs(60, 5, invalid=0.0)
    target = max((p for p in drawn if check(p)), key=size)  # the biggest failing one
    db = InMemoryExampleDatabase()
    best, n = hypothesis_shrink(cfg, program_id(target), "value|jit|psum", check, 60.0, db)
    assert best is not None and check(best) and n > 0
    assert size(best) < size(target)
    assert len(best.body) <= len(target.body)
    replayed = []
    with handling(replayed.append):
        hypothesis_test(cfg, [Phase.reuse], db)()
    # Hypothesis' own shrunk example (smallest in its order), saved under the fuzz run's key
    assert any(check(q) and size(q) < size(target) for q in replayed), replayed

    # a program this seed never draws is not reached: no result, and nothing runs
    ghost = _big()
    assert hypothesis_shrink(cfg, program_id(ghost), "value|jit|psum", check, 5.0)[0] is None
