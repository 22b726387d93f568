"""The sweep: before Hypothesis' stream, a run draws one program around every group of
a few foci of the cell table (strategies/focus.py `FOCI`: every cell, by value and by
error, in the spmd and smap profiles), so every configuration is reached early, in an
order that is the run's schedule (here, not in strategies/: every choice a strategy
makes is a draw), each program drawn by a Hypothesis run of its own."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import Verbosity, given, seed, settings
from hypothesis.statistics import collector

from harness.campaign.generation import GENERATION, stable_constants
from programs.model import Program
from programs.ops import COLLECTIVES
from strategies.focus import FOCI, KINDS, PROFILES, Focus
from strategies.programs import programs_around

SWEEP_GROUP = 4  # foci per sweep program


def _special(f: Focus) -> bool:
    """A focus that fixes the program's mesh (its axis-tuple class) or flags (psum /
    pmean groups: check_vma off): first in its group, one per group."""
    return f.dimension == "axes" or f.needs_check_vma_off


def _groups_of(foci: list[Focus], k: int) -> list[tuple[Focus, ...]]:
    """`foci` (one kind, profile and by_error-ness) in groups of at most `k`: each
    special focus (`_special`) heads a group of its own, the others fill the groups."""
    special = [f for f in foci if _special(f)]
    plain = [f for f in foci if not _special(f)]
    groups: list[list[Focus]] = [[f] for f in special]
    for g in groups:
        while len(g) < k and plain:
            g.append(plain.pop(0))
    while plain:
        groups.append(plain[:k])
        plain = plain[k:]
    return [tuple(g) for g in groups]


def _spread(a: list[tuple[Focus, ...]], b: list[tuple[Focus, ...]]) -> list[tuple[Focus, ...]]:
    """`a` and `b` merged, each in its order, `b`'s spread evenly among `a`'s (`a` first)."""
    out, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        if j >= len(b) or (i < len(a) and i * len(b) <= j * len(a)):
            out.append(a[i])
            i += 1
        else:
            out.append(b[j])
            j += 1
    return out


def sweep_groups(seed: int, k: int = SWEEP_GROUP, foci: tuple[Focus, ...] = FOCI) -> tuple[tuple[Focus, ...], ...]:
    """Every focus once, in groups of `k` of one kind and profile (one sweep program
    each: `sweep_programs`), in the sweep's order:

    1. the spmd profile before the smap one (the spmd programs run in every value mode
       but smap; the smap ones add the smap mode);
    2. within a profile, the collectives (shard_map's own semantics) before the other
       kinds, and a kind's groups by error spread evenly among its groups by value (an
       invalid program is cheap: it stops at tracing);
    3. round robin over the kinds, so every kind is reached early.

    The order of the cells within a kind is shuffled by `seed`, so runs with other seeds
    sweep in another order (and draw other programs around each group)."""
    rnd = random.Random(seed)
    order: list[tuple[Focus, ...]] = []
    for profile in PROFILES:
        for collective in (True, False):
            per_kind: list[list[tuple[Focus, ...]]] = []
            for kind in KINDS:
                if (kind in COLLECTIVES) != collective:
                    continue
                mine = [f for f in foci if f.profile == profile and f.kind == kind]
                rnd.shuffle(mine)
                gs = _spread(_groups_of([f for f in mine if not f.by_error], k), _groups_of([f for f in mine if f.by_error], k))
                if gs:
                    per_kind.append(gs)
            for n in range(max((len(g) for g in per_kind), default=0)):
                order.extend(gs[n] for gs in per_kind if n < len(gs))
    return tuple(order)


def sweep_programs(s: int, defects: tuple[str, ...] = (), invalid: float = 0.25,
                   stats: Callable[[dict[str, Any]], None] | None = None) -> Iterator[Program]:
    """The sweep of a run with seed `s`: one program drawn around each group of
    `sweep_groups(s)`, in that order, each by a Hypothesis run of its own (seeded by the
    run's seed and the group's place: the same seed always sweeps the same programs).
    Hypothesis' first example is the simplest one whatever the seed, so each group takes
    its second, a random draw. With `invalid` 0 the groups by error are left out (their
    cells by value are swept anyway), with 1 the groups by value; a group by error draws
    its defect from `defects` (default: all); `stats` gets each draw's Hypothesis
    statistics (its second test case: the program kept)."""
    stable_constants()
    for n, group in enumerate(sweep_groups(s)):
        if (invalid == 0 and group[0].by_error) or (invalid == 1 and not group[0].by_error):
            continue
        got: list[Program] = []

        @settings(GENERATION, max_examples=2, database=None, verbosity=Verbosity.quiet)
        @seed(s * 100_003 + n)
        @given(programs_around(group, defects=defects))
        def draw_one(p: Program) -> None:
            got.append(p)  # noqa: B023 - run at once, in this iteration

        kept: list[dict[str, Any]] = []
        with collector.with_value(kept.append):
            draw_one()
        if stats is not None:
            for d in kept:
                stats({"generate-phase": {"test-cases": (d.get("generate-phase") or {}).get("test-cases", [])[-1:]}})
        if got:
            yield got[-1]
