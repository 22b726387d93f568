"""The differential property: real jax.shard_map agrees with the NumPy oracle.

Runs in this process (modes abstract and jit; eager is covered by the fuzz runs and the
CLI test, it costs ~4x jit). Known JAX divergences are data in
reports/known_divergences.toml: a suppressed divergence passes only if its entry matches
it by signature AND program feature.
"""

from __future__ import annotations

from hypothesis import given

from harness.check import check_program
from harness.compat import jax_version
from harness.suppressions import find, load
from strategies import programs

SUPPRESSIONS = load()


@given(programs())
def test_jax_agrees_with_oracle(p) -> None:  # type: ignore[no-untyped-def]
    res = check_program(p, ("abstract", "jit"))
    unexplained = [d for d in res.divergences if find(SUPPRESSIONS, d.signature, jax_version(), p) is None]
    assert not unexplained, "\n".join(d.message for d in unexplained) + "\n\n" + repr(p)
