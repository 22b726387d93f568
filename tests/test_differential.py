"""The differential property: real jax.shard_map agrees with the NumPy oracle.

Programs run in a worker process (a segfault inside XLA, which jax 0.10.2 has for some
programs, costs one example and is reported, not a dead test session), in the abstract,
jit and eager modes. Known JAX divergences are data in reports/known_divergences.toml: a
divergence passes only if an entry matches it by signature AND program feature.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given

from harness.judge.check import evaluate
from harness.judge.suppressions import find_for, load
from harness.run.modes import DEFAULT_MODES
from harness.run.pool import Pool
from strategies import programs

SUPPRESSIONS = load()


@pytest.fixture(scope="module")
def pool() -> Iterator[Pool]:
    p = Pool(1, timeout_s=60.0)
    yield p
    p.close()


@given(p=programs(invalid=0.3))
def test_jax_agrees_with_oracle(pool: Pool, p) -> None:  # type: ignore[no-untyped-def]
    pool.submit(p, DEFAULT_MODES)
    (c,) = pool.drain()
    res = evaluate(c.program, c.observations)
    jv = pool.info.get("jax_version", "")
    unexplained = [d for d in res.divergences if find_for(SUPPRESSIONS, d, res.divergences, jv, p) is None]
    assert not unexplained, "\n".join(d.message for d in unexplained) + "\n\n" + repr(p)
