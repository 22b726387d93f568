"""The differential property: real jax.shard_map agrees with the NumPy oracle.

Programs run in a worker process (a segfault inside XLA, which jax 0.10.2 has for some
programs, costs one example and is reported, not a dead test session), in the abstract,
jit and eager modes. Known JAX divergences are data in harness/data/known_divergences.toml: a
divergence passes only if an entry explains it by cause (harness/judge/known.py), and then
the program without the known bug (its rewrite, or the outputs the bug cannot reach) must
agree with the oracle in full.
"""

from __future__ import annotations

from hypothesis import given

from harness.judge.check import evaluate
from harness.judge.known import derived_program, explain_all
from harness.judge.known_load import load
from harness.run.modes import DEFAULT_MODES
from harness.run.pool import Pool
from strategies import programs

SUPPRESSIONS = load()


def _check(pool: Pool, p):  # type: ignore[no-untyped-def]
    pool.submit(p, DEFAULT_MODES)
    (c,) = pool.drain()
    return evaluate(c.program, c.observations)


@given(p=programs(invalid=0.3))
def test_jax_agrees_with_oracle(pool: Pool, p) -> None:  # type: ignore[no-untyped-def]
    jv = pool.info.get("jax_version", "")
    res = _check(pool, p)
    explained = explain_all(SUPPRESSIONS, res.divergences, p, res.prediction, jv)
    unexplained = [x.divergence for x in explained if x.entry is None]
    assert not unexplained, "\n".join(d.message for d in unexplained) + "\n\n" + repr(p)
    used = list({x.entry.id: x.entry for x in explained if x.entry is not None}.values())
    q = derived_program(used, p, res.prediction) if used else None
    if q is not None:  # the rest of the program is checked, not excused
        qres = _check(pool, q)
        left = [x.divergence for x in explain_all(SUPPRESSIONS, qres.divergences, q, qres.prediction, jv) if x.entry is None]
        assert not left, "\n".join(d.message for d in left) + "\n\n" + repr(q)
