"""`sampled_from` and `permutations` that hand back one strategy object per distinct
choice list.

Hypothesis validates each strategy object the first time it is drawn from (and works out
whether it is empty), and caches only some of its own constructors (`st.integers` is,
`st.sampled_from` and `st.permutations` are not). The generators build a fresh
`sampled_from` or `permutations` for nearly every choice they make, so that validation
would run again for every draw, a noticeable share of the sweep's drawing time. With one
object per distinct choice tuple the same choices draw the same programs (the choice
sequence decides a draw, not the object), and each list is validated once
(docs/generation.md has the figures)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, TypeVar

from hypothesis import strategies as st

T = TypeVar("T")


@functools.lru_cache(maxsize=4096)
def _sampled(xs: tuple[Any, ...]) -> st.SearchStrategy[Any]:
    return st.sampled_from(xs)


@functools.lru_cache(maxsize=4096)
def _permuted(xs: tuple[Any, ...]) -> st.SearchStrategy[list[Any]]:
    return st.permutations(xs)


def sampled_from(xs: Sequence[T]) -> st.SearchStrategy[T]:
    """`st.sampled_from(xs)`, the same object for the same elements (unhashable ones: a new one)."""
    try:
        return _sampled(tuple(xs))
    except TypeError:
        return st.sampled_from(xs)


def permutations(xs: Sequence[T]) -> st.SearchStrategy[list[T]]:
    """`st.permutations(xs)`, the same object for the same elements (unhashable ones: a new one)."""
    try:
        return _permuted(tuple(xs))
    except TypeError:
        return st.permutations(xs)
