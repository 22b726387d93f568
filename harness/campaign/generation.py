"""How a run drives Hypothesis: one test function behind every fuzz run, database replay
and shrink search (so they share one key in the corpus's example database), the run's
strategy under its seed and example count, Hypothesis' own shrinker on a drawn program,
and the programs a seed draws.

Hypothesis drives generation (seeded, so a run is repeatable) and collects the run's
statistics (`event()` counts) through its own statistics hook; shardfuzz does not shrink
inside the run (a failing example must not stop it: every bucket is wanted).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings, target
from hypothesis.database import DirectoryBasedExampleDatabase, InMemoryExampleDatabase

import harness
import oracles
import programs as programs_pkg
import strategies
from harness.campaign.cells import checked_cells
from harness.campaign.config import RunConfig
from harness.campaign.minimize import size
from programs.model import Program
from programs.serialize import program_id
from strategies import programs
from strategies.invalid import DEFECTS

# How a run drives Hypothesis: generation only (a failing example must not stop the run,
# so nothing is shrunk inside it; minimization comes after), no deadline, no database.
GENERATION = settings(
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
    derandomize=False,
    print_blob=False,
)


_HANDLERS: list[Callable[[Program], None]] = []

TARGET_LABEL = "configuration cells no earlier program had"


class CellNovelty:
    """The score `hypothesis.target()` maximises: how many configuration cells
    (harness/campaign/cells.py; `CELL|by_error` for a program the oracle expects to fail)
    a program brings that no earlier program of the stream had. It depends only on the
    programs drawn before, in order, so the same seed and options still draw the same
    programs; every drawing of a run's stream (the run, a shard, the shrink search's
    replay, `seeded_programs`) scores with a fresh one. Hypothesis' optimiser then
    mutates the programs that brought the most new cells (its target phase, run within
    generation)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def score(self, p: Program) -> int:
        cells = checked_cells(p)
        new = cells - self.seen
        self.seen |= cells
        return len(new)


_NOVELTY: list[CellNovelty] = []


def fuzz_program(p: Program) -> None:
    """The one Hypothesis test function behind every fuzz run, database replay and
    shrink search: one function, so they all share one key in the corpus's example
    database (Hypothesis keys saved examples by the test function). Targets the cells
    no earlier program had (`CellNovelty`)."""
    if _NOVELTY:
        new = _NOVELTY[-1].score(p)
        if new:  # (a score of 0 says nothing, and each target() call costs a Pareto-front update)
            target(float(new), label=TARGET_LABEL)
    _HANDLERS[-1](p)


@contextmanager
def _targeting() -> Iterator[None]:
    _NOVELTY.append(CellNovelty())
    try:
        yield
    finally:
        _NOVELTY.pop()


# Hypothesis runs its target phase inside generation once half of max_examples are drawn
# (`optimise_at = max_examples // 2`), and spends the rest of the budget mutating the
# programs with the best score. With the novelty score that collapses the mix onto the
# few features the best programs had (docs/generation.md has the measured shares). A run
# must stay broad, so the phase is off; `target()` still reports each program's score
# (Hypothesis' statistics: "Highest target scores"), and the value tier steers by cells.
TARGET_PHASE = False


def _with_target(phases: list[Phase]) -> list[Phase]:
    """Generation with Hypothesis' target phase (which it runs within generation) when
    TARGET_PHASE is on."""
    if not TARGET_PHASE:
        return phases
    return [*phases, Phase.target] if Phase.generate in phases and Phase.target not in phases else phases


def _stream_database(database: Any) -> Any:
    """With targets and a database, Hypothesis keeps a pareto front of the scores, which
    draws on its random stream: the shrink search's replay (which has the corpus's
    database) would draw other programs than the run. So generation always has one: the
    given database, else a throwaway in-memory one (the run's own generation, whose
    failures are the budget's end and are kept by shardfuzz, not by Hypothesis)."""
    return InMemoryExampleDatabase() if database is None else database


@contextmanager
def handling(fn: Callable[[Program], None]) -> Iterator[None]:
    """Within it, `fuzz_program` hands each program Hypothesis draws to `fn` (the
    innermost `handling` wins: a replay inside a run hands its programs elsewhere)."""
    _HANDLERS.append(fn)
    try:
        yield
    finally:
        _HANDLERS.pop()


def example_database(corpus: Path) -> DirectoryBasedExampleDatabase:
    """The corpus directory is also Hypothesis' example database (in `.hypothesis/`)."""
    return DirectoryBasedExampleDatabase(str(corpus / ".hypothesis"))


@functools.cache
def stable_constants() -> int:
    """Imports every module of shardfuzz's packages (once; about 1 s, no jax), and
    returns how many. Hypothesis draws now and then a constant found in the local
    modules loaded so far (hypothesis.internal.conjecture.providers
    `_get_local_constants`), so the same seed would draw other programs once a module
    is imported later (after a test ran jax in-process, or in a shrink search's replay
    after the run loaded the minimizer). Every drawing of a stream (the run, its shrink
    search, `seeded_programs`) calls it first, so a seed always draws the same programs."""
    n = 0
    for pkg in (programs_pkg, oracles, strategies, harness):
        for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            importlib.import_module(m.name)
            n += 1
    return n


def hypothesis_test(cfg: RunConfig, phases: list[Phase], database: Any = None) -> Callable[[], None]:
    """`fuzz_program` under Hypothesis with the run's strategy, seed and example count
    (the same ones always draw the same programs in the same order)."""
    stable_constants()
    wrapped = given(programs(invalid=cfg.invalid, defects=cfg.defects or tuple(DEFECTS), large=cfg.large_share))(fuzz_program)
    if Phase.generate in phases:
        database = _stream_database(database)
    test = settings(
        GENERATION, max_examples=cfg.max_examples, phases=_with_target(phases), database=database, verbosity=Verbosity.quiet
    )(seed(cfg.seed)(wrapped))

    def run() -> None:
        with _targeting():
            test()

    return run


class _Reproduced(Exception):
    """Raised in a shrink search when a program shows the signature: a 'failure' to
    Hypothesis, which then shrinks it."""


def hypothesis_shrink(
    cfg: RunConfig, target_id: str, signature: str, check: Callable[[Program], set[str]], budget_s: float,
    database: Any = None,
) -> tuple[Program | None, int]:
    """Hypothesis' own shrinker on a program the run drew: replay the run's generation
    (same seed, strategy and example count: cheap, nothing runs) up to the program with
    id `target_id`, then let Hypothesis shrink its choice sequence, every candidate
    checked through real jax for `signature`. The smallest program that still shows it
    (None when the target is not reached) and the checks spent; with a database, the
    shrunk example is saved there, and later runs replay it first."""
    state: dict[str, Any] = {"found": False, "checks": 0, "best": None, "t0": time.monotonic()}

    def handle(p: Program) -> None:
        if not state["found"]:
            hit = state["found"] = program_id(p) == target_id
            state["t0"] = time.monotonic()  # the budget is for shrinking, not for the replay
        elif time.monotonic() - state["t0"] > budget_s:
            hit = False  # out of time: every candidate passes, so Hypothesis stops shrinking
        else:
            state["checks"] += 1
            hit = signature in check(p)
        if hit:
            if state["best"] is None or size(p) <= size(state["best"]):
                state["best"] = p
            raise _Reproduced  # (one raise site: one failure to Hypothesis)

    with handling(handle):
        try:
            hypothesis_test(cfg, [Phase.generate, Phase.shrink], database)()
        except _Reproduced:
            pass
        except Exception:  # noqa: BLE001 - e.g. Flaky: keep the smallest program seen to reproduce
            pass
    return state["best"], state["checks"]


def seeded_programs(n: int, s: int, invalid: float = 0.25) -> list[Program]:
    """The first `n` programs a run with seed `s` would draw (same order, same ids)."""
    stable_constants()
    out: list[Program] = []
    novelty = CellNovelty()

    @settings(GENERATION, max_examples=n, phases=_with_target([Phase.generate]), database=_stream_database(None))
    @seed(s)
    @given(programs(invalid=invalid))
    def collect(p: Program) -> None:
        new = novelty.score(p)
        if new:  # as fuzz_program does: the run's stream
            target(float(new), label=TARGET_LABEL)
        out.append(p)

    collect()
    return out
