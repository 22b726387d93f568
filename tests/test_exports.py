"""Modules split by concern keep their import paths: each facade (`harness.run.modes`,
`harness.judge.compare`, `harness.report.reproducer`) re-exports, in `__all__`, every
name its importers use, and each name in `__all__` exists."""

from __future__ import annotations

import importlib

import pytest

FACADES = {
    "harness.run.modes": (
        "COMPILED", "DEFAULT_MODES", "MODES", "Mode", "Observation", "ObservedOutput",
        "observation_from_dict", "observation_to_dict",
    ),
    "harness.judge.compare": ("Divergence", "DivergenceKind", "compare", "compare_modes", "producer"),
    "harness.report.reproducer": ("case_mode", "divergence_mode", "pytest_reproducer", "reproducer"),
}


@pytest.mark.parametrize("name", sorted(FACADES))
def test_facade_exports(name: str) -> None:
    mod = importlib.import_module(name)
    absent = [n for n in mod.__all__ if not hasattr(mod, n)]
    assert not absent, f"{name}.__all__ names {absent}, which it does not define"
    unlisted = sorted(set(FACADES[name]) - set(mod.__all__))
    assert not unlisted, f"{name}.__all__ lacks {unlisted}, which other modules import from it"
