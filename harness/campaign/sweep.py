"""The sweep: before Hypothesis' stream, a run draws programs around the foci of the
cell table (strategies/focus.py `FOCI`: every cell, by value and by error, in the spmd
and smap profiles), so every configuration is reached early, in an order that is the
run's schedule (here, not in strategies/: every choice a strategy makes is a draw),
each program drawn by a Hypothesis run of its own.

A sweep program is drawn around a group of up to SWEEP_GROUP compound foci of one kind:
each a focus and one open focus of every other dimension (dtype, rank, wrapper,
parameter class, ...) that one op can have with it, so one op checks several cells. A
group is formed when its program is drawn, of the foci still open in the run's cell
ledger (the programs before it, swept or not, bring many cells besides their foci), and
a focus its program did not hold is drawn again later. Compound foci in open groups
hold more of the table's reachable (cell, mode) pairs, with fewer programs, than
one-cell foci in fixed groups (docs/scheduling.md, "The sweep", has the figures).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis import Verbosity, given, seed, settings
from hypothesis import strategies as st
from hypothesis.statistics import collector

from harness.campaign.cells import (
    CellLedger,
    applies,
    checked_cells,
    failing_op,
    lean,
    trouble_cells,
    unreachable,
    value_types,
)
from harness.campaign.generation import GENERATION, stable_constants
from harness.campaign.known_queries import trouble_kind
from harness.run.modes import DEFAULT_MODES
from programs.cells import FEATURE_KINDS, PAIRED
from programs.model import Program
from programs.ops import COLLECTIVES, NO_CPU_VALUES
from strategies.focus import FOCI, KINDS, PROFILES, Focus, can_hold
from strategies.invalid import DEFECTS
from strategies.programs import programs_around

# (compound) foci per sweep program. Fewer, larger programs cost the cheap modes less (a
# program's trace and compile are mostly fixed cost); much larger ones cost more again
# and check fewer pairs within a budget. Of 6, 9, 12, 16 and 24, 16 took the least worker
# time and checked the most pairs (docs/scheduling.md, "Group size", has the
# measurements; benchmarks/reach.py measures a default run's reach)
SWEEP_GROUP = 16


def _special(f: Focus) -> bool:
    """A focus that fixes the program's mesh (its axis-tuple class) or flags (psum /
    pmean groups: check_vma off): first in its group, and in it only with foci it is
    `_compatible` with (those of its axis-tuple class)."""
    return f.fixes("axes") is not None or f.needs_check_vma_off


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
    2. within a profile, the collectives and the call's own cells (shard_map's own
       semantics) before the other kinds, and a kind's groups by error spread evenly among its groups by value (an
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
                # (how a program meets its shard_map, programs/cells.py FEATURE_KINDS, and the
                # program's own call cells, kind "call", are shard_map's own semantics too:
                # swept with the collectives)
                if (kind in COLLECTIVES or kind in FEATURE_KINDS or kind == "call") != collective:
                    continue
                mine = [f for f in foci if f.profile == profile and f.kind == kind]
                rnd.shuffle(mine)
                gs = _spread(_groups_of([f for f in mine if not f.by_error], k), _groups_of([f for f in mine if f.by_error], k))
                if gs:
                    per_kind.append(gs)
            for n in range(max((len(g) for g in per_kind), default=0)):
                order.extend(gs[n] for gs in per_kind if n < len(gs))
    return tuple(order)


MAX_TRIES = 4  # programs a focus is drawn into before the sweep gives it up (it stays a Hypothesis stream cell)
DRAWS = 3  # draws of one group's program, the first holding every focus kept (else the one holding most)


def profile_modes(f: Focus, modes: tuple[str, ...], ur_gaps: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The modes of `modes` a program of `f`'s profile checks `f`'s cell in (those where
    the cell can be reached at all: harness/campaign/cells.py `unreachable`, with the
    workers' `ur_gaps`)."""
    mine = ("smap",) if f.profile == "smap" else tuple(m for m in modes if m != "smap")
    return tuple(m for m in mine if m in modes and unreachable(f.cell, m, ur_gaps=ur_gaps) is None)


def holds(f: Focus, p: Program, modes: tuple[str, ...], ur_gaps: Mapping[str, str] | None = None) -> bool:
    """Whether `p` checks `f`'s cell in every mode of `f`'s profile (harness/campaign/cells.py
    `checked_cells`, `applies`)."""
    return f in _held((f,), p, modes, ur_gaps)


def _held(foci: list[Focus] | tuple[Focus, ...], p: Program, modes: tuple[str, ...],
          ur_gaps: Mapping[str, str] | None = None) -> frozenset[Focus]:
    """The foci of `foci` that `p` holds (`holds`), its cells and modes looked up once."""
    cells, runs = checked_cells(p), {m for m in modes if applies(p, m, ur_gaps)}
    return frozenset(f for f in foci if f.cell in cells and runs.issuperset(profile_modes(f, modes, ur_gaps)))


def _fixed(f: Focus) -> dict[str, str]:
    """The dimensions a focus fixes, with their classes (all_to_all's `split!=concat` and
    `split==concat` are one dimension; a pair cell fixes two)."""
    return {("split" if d.startswith("split") and "_axis" not in d else d): v for d, v in f.parts}


def _compatible(head: Focus, f: Focus) -> bool:
    """Whether `f` can ride in a group that `head` heads: `head` fixes the program's mesh
    (its axis-tuple class: strategies/focus.py `focus_mesh`) and flags (check_vma off for
    psum / pmean groups)."""
    if f.needs_check_vma_off and not head.needs_check_vma_off:
        return False
    axes = f.fixes("axes")
    if axes is not None:
        # every focus mesh has two axes ops may name (out of mesh order: both reversed);
        # those of several>1 are both > 1, one of with_size_1's is 1
        return axes in ("one", "out_of_mesh_order") or axes == head.fixes("axes")
    return True


def _alone(f: Focus) -> bool:
    """A focus whose op costs its program some modes (lax.while_loop has no reverse-mode
    derivative; psum / pmean groups need check_vma off, and the grad modes run only
    under check_vma; vmap has no batching rule for a reduced or unreduced value,
    harness/run/compat.py, and eager fails on one, the known eager-*-intermediate
    divergences): in the spmd profile it goes in a group of its own, so the other foci
    keep theirs. A focus on the program's own cells (kind "call": strategies/forms.py) is
    its program's alone: a program is called one way."""
    return f.kind == "call" or (f.profile == "spmd" and ((f.dimension == "wrap" and f.value == "while") or f.needs_check_vma_off
                                                          or f.reduced_type is not None))


def _together(a: Focus, b: Focus) -> bool:
    """Whether one op can have both cells (a dimension in the middle needs rank 3)."""
    for x, y in ((a, b), (b, a)):
        if any(v == "middle" for _, v in x.parts) and any(d == "rank" and v != "3" for d, v in y.parts):
            return False
    return True


# dimensions whose classes interact in one op (a fault or bug of one dtype at one rank, of
# a tiled gather on its last axis): their pairs are cells of their own (programs/cells.py
# `PAIRED`), and a compound fixes two of one set only as one pair focus's (with the
# single foci that agree with it): the other foci of one leave the rest drawn freely (an
# argument's default dtype is float32, the base dtype of the pairs)
_APART = (frozenset({"dtype", "rank"}), frozenset(PAIRED))


def _fits_compound(members: list[Focus], g: Focus) -> bool:
    """Whether `g` can join the compound `members`: one op can have all their cells (its
    classes agree with theirs where both fix a dimension, `_together`: a single focus
    joins a pair of its class), and of each `_APART` set the compound fixes at most one
    dimension, or only those of one pair focus."""
    fixed = {d: v for m in members for d, v in _fixed(m).items()}
    mine = _fixed(g)
    if any(fixed.get(d, v) != v for d, v in mine.items()) or not all(_together(m, g) for m in members):
        return False
    dims = set(fixed) | set(mine)
    pairs = [set(_fixed(m)) for m in (*members, g) if len(m.parts) > 1]
    return all(len(dims & s) <= 1 or any(dims & s <= q for q in pairs) for s in _APART)


class _Pending:
    """The sweep's foci not yet drawn into a program that held them, per (kind, profile,
    by_error) key, in `sweep_groups`' order, with how often each was drawn."""

    def __init__(self, groups: tuple[tuple[Focus, ...], ...]) -> None:
        self.order = [(g[0].kind, g[0].profile, g[0].by_error) for g in groups]
        self.left: dict[tuple[str, str, bool], list[Focus]] = {}
        for g in groups:
            self.left.setdefault((g[0].kind, g[0].profile, g[0].by_error), []).extend(g)
        self.tries: dict[Focus, int] = {}

    def take(self, key: tuple[str, str, bool], k: int, is_open: Callable[[Focus], bool]) -> tuple[tuple[Focus, ...], ...]:
        """Up to `k` compound foci of `key`'s open foci (the covered ones dropped), each a
        focus and one open focus of every other dimension its op can have with it
        (`_compatible`): one op checks them all. A special focus (`_special`) heads the
        group or rides along as a compatible member."""
        left = self.left.get(key, [])
        left[:] = [f for f in left if is_open(f)]
        used: set[Focus] = set()
        group: list[tuple[Focus, ...]] = []
        for f in left:
            if len(group) == k:
                break
            if f in used or (group and _special(f) and not _compatible(group[0][0], f)) or (group and _alone(f)):
                continue
            members = [f]
            used.add(f)
            if _alone(f):
                group.append((f,))
                break
            for g in left:
                if g not in used and not _alone(g) and _compatible(group[0][0] if group else f, g) and _fits_compound(members, g):
                    members.append(g)
                    used.add(g)
            group.append(tuple(members))
        left[:] = [f for f in left if f not in used]
        return tuple(group)

    def add(self, f: Focus) -> None:
        """A focus more (a cell outside the table some program held): to the end of its
        key's queue."""
        self.left.setdefault((f.kind, f.profile, f.by_error), []).append(f)

    def again(self, f: Focus) -> None:
        """`f` was drawn into a program that did not hold it: to the end of its key's
        queue, unless drawn MAX_TRIES times."""
        self.tries[f] = self.tries.get(f, 0) + 1
        if self.tries[f] < MAX_TRIES:
            self.left[(f.kind, f.profile, f.by_error)].append(f)

    def keys(self) -> Iterator[tuple[str, str, bool]]:
        """`sweep_groups`' keys in its order, then round robin over the keys with foci
        left (drawn again), until none is left."""
        yield from self.order
        while True:
            rest = [key for key, fs in self.left.items() if fs]
            if not rest:
                return
            yield from rest


@dataclass(frozen=True)
class SweepDraw:
    """One sweep program and the group of (compound) foci it was drawn around, with the
    foci it holds (`holds`)."""

    group: tuple[tuple[Focus, ...], ...]
    program: Program
    held: frozenset[Focus]


def sweep_programs(s: int, defects: tuple[str, ...] = (), invalid: float = 0.25,
                   stats: Callable[[dict[str, Any]], None] | None = None,
                   ledger: CellLedger | None = None, modes: tuple[str, ...] = DEFAULT_MODES,
                   k: int = SWEEP_GROUP, trouble: Callable[[Program], Mapping[str, frozenset[int]]] | None = None,
                   lost: Callable[[Program], dict[str, frozenset[str]]] | None = None) -> Iterator[Program]:
    """The programs of `sweep_draws`."""
    for d in sweep_draws(s, defects, invalid, stats, ledger, modes, k, trouble, lost):
        yield d.program


def sweep_draws(s: int, defects: tuple[str, ...] = (), invalid: float = 0.25,
                stats: Callable[[dict[str, Any]], None] | None = None,
                ledger: CellLedger | None = None, modes: tuple[str, ...] = DEFAULT_MODES,
                k: int = SWEEP_GROUP, trouble: Callable[[Program], Mapping[str, frozenset[int]]] | None = None,
                lost: Callable[[Program], dict[str, frozenset[str]]] | None = None) -> Iterator[SweepDraw]:
    """The sweep of a run with seed `s`: programs drawn around groups of up to `k` foci
    of one kind and profile, in `sweep_groups(s)`' order, each group formed when its
    program is drawn, of the foci still open:

    - a focus is open while some mode of its profile (`profile_modes`) has not had its
      cell claimed in the run's `ledger` (harness/campaign/cells.py `CellLedger`: the
      programs before, swept or not, bring many cells besides their foci);
    - a focus its program did not hold (`holds`: the op came out otherwise, or an
      invalid program failed before reaching it) is drawn again later, MAX_TRIES in all.

    Each group's program is drawn by a Hypothesis run of its own, seeded by the run's
    seed, the group's place and the draw (up to DRAWS; the first holding every focus is
    kept, else the one holding most): the same seed and the same programs before always
    sweep the same programs. Hypothesis' first example is the simplest one whatever the
    seed: it draws no program (`draw_group`), and each draw takes the second, a random one
    (none in the rare case its first choice is the least too). With `invalid` 0 the groups by
    error are left out (their cells by value are swept anyway), with 1 the groups by
    value; a group by error draws its defect from `defects` (default: all); `stats` gets
    each kept draw's Hypothesis statistics (its second test case: the program kept).

    `trouble` (harness/campaign/plan.py `ValueTier.error_trouble`, for the run's known entries and
    jax version): per mode, the ops of an invalid program at which jax is known to raise
    another error than the oracle predicts, or none. The program holds only the foci of
    the kind of all those ops, and of those only the ones whose cells, in each mode of
    their profile jax goes wrong in, are those ops' own (harness/campaign/cells.py
    `trouble_cells`: blocked by the entry there, the best there is); the others are
    drawn again: it would check their cells by error in none of the modes jax goes
    wrong in.

    `lost` (harness/campaign/plan.py `ValueTier.raise_lost`: harness/campaign/cells.py
    `lost_cells`): per mode, the cells of a valid program no run of it checks there (each
    op holding one comes after an op a known entry says jax raises at in that mode, and
    the program without that bug drops it too). A focus whose cell is lost in a mode of
    its profile is not held (drawn again); the value tier leaves those pairs unclaimed,
    so the focus stays open."""
    yield from Sweep(s, defects, invalid, stats, ledger, modes, k, trouble, lost).draws()


# the kinds whose cells seen outside the table become foci: the table's, and those of the
# ops XLA:CPU cannot run by value (the table leaves them out, so no focus is spent on them
# up front; their cells are checked by abstract, and ragged_all_to_all's by lowering too,
# where another op of the program does not keep that mode from running it)
AIMED_KINDS = frozenset(KINDS) | NO_CPU_VALUES


class Sweep:
    """The state of a run's sweep (`sweep_draws`), kept after its programs are out: a
    cell a program of Hypothesis' stream holds first, outside the table, becomes a focus
    of a sweep program drawn at once (`draws` again, when `new_cells`), as cells the
    sweep's own programs held first do while it runs. Which cells are seen depends on the
    programs drawn alone, so the same seed still draws the same programs."""

    def __init__(self, s: int, defects: tuple[str, ...] = (), invalid: float = 0.25,
                 stats: Callable[[dict[str, Any]], None] | None = None,
                 ledger: CellLedger | None = None, modes: tuple[str, ...] = DEFAULT_MODES,
                 k: int = SWEEP_GROUP, trouble: Callable[[Program], Mapping[str, frozenset[int]]] | None = None,
                 lost: Callable[[Program], dict[str, frozenset[str]]] | None = None) -> None:
        stable_constants()
        self.s, self.defects, self.invalid, self.stats, self.ledger = s, defects, invalid, stats, ledger
        self.modes, self.k, self.trouble, self.lost = modes, k, trouble, lost
        self.pending = _Pending(sweep_groups(s, k))
        self.gaps = ledger.ur_gaps if ledger is not None else {}
        self.n = 0  # groups drawn so far (each group's draws are seeded by its place)
        self.aimed = {f.cell for f in FOCI}  # (the table's cells, and those outside it already foci)
        self._seen = 0  # len(ledger.seen) when last looked at (`new_cells`)

    def is_open(self, f: Focus) -> bool:
        if (self.invalid == 0 and f.by_error) or (self.invalid == 1 and not f.by_error):
            return False
        return self.ledger is None or any(f"{f.cell}@{m}" not in self.ledger.scheduled
                                          for m in profile_modes(f, self.modes, self.gaps))

    def new_cells(self) -> bool:
        """Whether the programs drawn since the last look held a cell not aimed at yet."""
        if self.ledger is None or len(self.ledger.seen) == self._seen:
            return False
        self._seen = len(self.ledger.seen)
        return any(self._aimable(c) for c in self.ledger.seen - self.aimed)

    @staticmethod
    def _aimable(c: str) -> bool:
        return c.split("|")[0] in AIMED_KINDS and "=?" not in c

    def _aim_at_seen(self) -> None:
        # a cell outside the table that a program drawn before held (`CellLedger.seen`:
        # the programs drawn, never the results, decide it) is a focus too, in each profile that can hold
        # it: else such a cell (a twin of a table cell, e.g. cast|dtype=float64|by_error,
        # held by a program jax is known to answer with another error at another op) is
        # checked by abstract alone. They are aimed at as they show up, not listed in the
        # table (which lists what unfocused generation and the foci reach): every twin
        # listed there costs every run more sweep programs, and eager more missed pairs
        # than it gains
        assert self.ledger is not None
        for c in sorted(self.ledger.seen - self.aimed):
            self.aimed.add(c)
            if self._aimable(c):
                for pr in PROFILES:
                    if can_hold(c, pr):
                        self.pending.add(Focus(c, pr))

    def draws(self) -> Iterator[SweepDraw]:
        """The sweep's programs, until no focus is left open (again, after `new_cells`)."""
        s, ledger, modes, gaps, pending = self.s, self.ledger, self.modes, self.gaps, self.pending
        defects, trouble, lost, k = self.defects, self.trouble, self.lost, self.k
        for key in pending.keys():
            if ledger is not None:
                self._aim_at_seen()
            group = pending.take(key, k, self.is_open)
            if not group:
                continue
            members = [f for c in group for f in c]
            best: tuple[frozenset[Focus], Program, list[dict[str, Any]]] | None = None
            avoid: set[str] = set()
            skip: set[str] = set()
            for d in range(DRAWS):
                some = tuple(x for x in (defects or DEFECTS) if x not in skip) or defects
                got, kept = draw_group(s * 100_003 + self.n + 1_000_000_007 * d, group, some, tuple(sorted(avoid)))
                if got is None:
                    continue
                held = _held(members, got, modes, gaps)
                # (asked even where it holds no focus: its defect, if at an op in trouble, is
                # left out of the next draws all the same)
                per_mode = trouble(got) if trouble is not None and value_types(got)[1] else {}
                bad = frozenset().union(*per_mode.values())
                if bad:
                    kind = trouble_kind(got, bad)
                    at_fault = {m: trouble_cells(got, ops) for m, ops in per_mode.items()}
                    held = frozenset(f for f in held if f.kind == kind and all(
                        f.cell in at_fault[m] for m in profile_modes(f, modes, gaps) if m in at_fault))
                    # the next draws add no op of another kind jax is known to go wrong at (the
                    # ops drawn besides the foci's, which would otherwise make the focus
                    # give up: a psum_scatter, all_to_all or pmax drawn beside it in trouble)
                    avoid |= {got.body[i].kind for i in bad} - {key[0]}
                    # nor the defect, where its own op is one (a bad_permutation's ppermute,
                    # which jax does not check, would hold no focus by error)
                    at = failing_op(got)
                    if got.defect is not None and at is not None and at in bad and got.body[at].kind != key[0]:
                        skip.add(got.defect)
                gone = lost(got) if lost is not None and held and not value_types(got)[1] else {}
                if gone:
                    held = frozenset(f for f in held if not any(f.cell in gone.get(m, ()) for m in profile_modes(f, modes, gaps)))
                if best is None or len(held) > len(best[0]):
                    best = (held, got, kept)
                if len(held) == len(members):
                    break
            self.n += 1
            if best is None:
                for f in members:
                    pending.again(f)
                continue
            held, p, kept = best
            # without its dead ops (they check no cell, and cost every mode a trace and eager
            # a dispatch each), and without its unused arguments where that keeps its
            # verdict (valid, or invalid after the body: cells.py `lean`; eager moves each
            # with a compile): the stream's programs keep theirs
            p = lean(p)
            for f in members:
                if f not in held:
                    pending.again(f)
            if self.stats is not None:
                for st in kept:
                    self.stats({"generate-phase": {"test-cases": (st.get("generate-phase") or {}).get("test-cases", [])[-1:]}})
            yield SweepDraw(group, p, held)


def draw_group(at: int, group: tuple[tuple[Focus, ...], ...], defects: tuple[str, ...],
          avoid: tuple[str, ...] = ()) -> tuple[Program | None, list[dict[str, Any]]]:
    """One program around `group`, by a Hypothesis run seeded `at` (its second example),
    with no op of a kind in `avoid` besides the foci's, and that run's statistics."""
    got: list[Program] = []
    around = programs_around(group, defects=defects, avoid=avoid)

    @settings(GENERATION, max_examples=2, database=None, verbosity=Verbosity.quiet)
    @seed(at)
    @given(st.data())
    def draw_one(data: st.DataObject) -> None:
        # Hypothesis' first example is its simplest (every choice its least), the same
        # whatever the seed: it draws no program (it cost 40% of the sweep's drawing)
        if data.draw(st.integers(0, 2**30)) == 0:
            return
        got.append(data.draw(around))

    kept: list[dict[str, Any]] = []
    with collector.with_value(kept.append):
        draw_one()
    return (got[-1] if got else None), kept
