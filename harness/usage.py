"""The argparse types of every numeric option (`positive`, `at_least`, `fraction`): an
option out of range is refused while the command line is parsed, naming the option, its
value and the rule, before anything runs. (Bad input found later raises `UsageError`,
programs/errors.py.)"""

from __future__ import annotations

import argparse
from collections.abc import Callable


def _number(text: str, kind: type[int] | type[float]) -> float:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None


def positive(kind: type[int] | type[float] = float, unit: str = "") -> Callable[[str], float]:
    """An argparse type: a number > 0."""

    def parse(text: str) -> float:
        v = _number(text, kind)
        if not v > 0:
            raise argparse.ArgumentTypeError(f"{text} must be > 0{' ' + unit if unit else ''}")
        return v

    parse.__name__ = "positive"
    return parse


def at_least(low: int | float, kind: type[int] | type[float] = int, what: str = "") -> Callable[[str], float]:
    """An argparse type: a number >= `low` (`what` says what the low end means)."""

    def parse(text: str) -> float:
        v = _number(text, kind)
        if not v >= low:
            raise argparse.ArgumentTypeError(f"{text} must be >= {low}{' (' + what + ')' if what else ''}")
        return v

    parse.__name__ = f"at_least_{low}"
    return parse


def fraction(text: str) -> float:
    """An argparse type: a share between 0 and 1."""
    v = _number(text, float)
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} must be a share between 0 and 1")
    return v
