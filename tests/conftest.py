"""Test set-up: 8 forced CPU devices before jax starts, and Hypothesis profiles.

Profiles (select with `pytest --hypothesis-profile NAME`):
- dev: the default; a few examples, fast feedback.
- ci: derandomized, small, no example database: the same examples on every run.
- nightly: large, with the example database on.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from harness.campaign.generation import stable_constants
from harness.run.compat import force_host_devices

force_host_devices()

_common = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev", max_examples=25, **_common)
settings.register_profile("ci", max_examples=30, derandomize=True, database=None, print_blob=True, **_common)
settings.register_profile("nightly", max_examples=2000, **_common)
settings.load_profile("dev")
# every shardfuzz module loaded before any test draws: Hypothesis draws constants from the
# local modules loaded so far, so a test's programs would depend on the tests before it
stable_constants()


@pytest.fixture(scope="module")
def pool() -> Iterator[object]:
    """One crash-safe worker on this jax (a module's tests share it)."""
    from harness.run.pool import Pool

    p = Pool(1, timeout_s=60.0)
    yield p
    p.close()
