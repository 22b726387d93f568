"""Writes strategies/cell_table.txt: the configuration cells (programs/cells.py) that
generation reaches, the focus's choices (strategies/focus.py).

    python scripts/build_cell_table.py [--programs 5000] [--seeds 0 1 2] [--focused-draws 2]

Every cell a live op of a drawn program holds (with the oracle's types; `|by_error` for
a program the oracle expects to fail), over `--programs` programs of each seed, then
over `--focused-draws` programs drawn around each focus, in rounds until the new cells'
foci reach no other (`focused_cells`). The
ops XLA:CPU cannot run by value are left out (their cells are checked abstractly only:
harness/campaign/cells.py `unreachable`), so no focus is spent on them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import Phase, given, seed, settings  # noqa: E402

from harness.campaign.cells import checked_cells  # noqa: E402
from harness.campaign.generation import GENERATION  # noqa: E402
from programs.cells import SEVERAL  # noqa: E402
from programs.model import DTYPES  # noqa: E402
from programs.ops import NO_CPU_LOWERING, NO_CPU_VALUES, OP_TABLE  # noqa: E402
from strategies import programs  # noqa: E402
from strategies.focus import TABLE, load_table  # noqa: E402


def cells_of(n: int, s: int) -> set[str]:
    out: set[str] = set()

    @settings(GENERATION, max_examples=n, phases=[Phase.generate])
    @seed(s)
    @given(programs(invalid=0.25, focus=0.0))
    def collect(p: object) -> None:
        out.update(checked_cells(p))  # type: ignore[arg-type]

    collect()
    return out


# a psum or pmean of bool over any axis is int32 (oracles/ops/reductions.py): its result
# is bool only over no axes, so no such op over several axes has the dtype bool
BOOL_AS_INT32 = ("psum", "pmean")


def several_pairs(cells: set[str]) -> set[str]:
    """The pair cells `kind|axes=several>1&dtype=D` (programs/cells.py) of every kind with
    an operand that reaches both marginals, `kind|axes=several>1` and `kind|dtype=D` (by
    value), for each dtype an argument can take: unfocused generation rarely names two
    axes of size > 1, so sampling alone misses most of them, and the sweep draws them."""
    return {f"{k}|axes={SEVERAL}&dtype={d}" for k in {c.split("|")[0] for c in cells}
            for d in DTYPES if k in OP_TABLE and OP_TABLE[k].arity > 0
            and f"{k}|axes={SEVERAL}" in cells and f"{k}|dtype={d}" in cells
            and not (d == "bool" and k in BOOL_AS_INT32)}



def focused_cells(cells: set[str], draws: int) -> tuple[set[str], set[str]]:
    """The cells the programs drawn around each focus of `cells` hold, `draws` programs
    a focus (strategies/focus.py, by the sweep's own draw: harness/campaign/sweep.py
    `draw_group`), and the cells of `cells` whose focus some program held (`holds`, in one
    profile at least). Focused programs reach cells unfocused generation does not: a
    float64 focus's program promotes an int32 add to int64, an x64 psum of a uint32 gives
    uint64. Listed, they are foci too; else a run's sweep never aims at them, and the
    report lists them as reachable (some program held them) and missed in the modes no
    program happened to check them in."""
    from harness.campaign.sweep import DEFAULT_MODES, draw_group, holds, stable_constants
    from strategies.focus import PROFILES, Focus, can_hold

    stable_constants()
    reached: set[str] = set()
    held: set[str] = set()
    foci = [Focus(c, pr) for c in sorted(cells) for pr in PROFILES if can_hold(c, pr)]
    for i, f in enumerate(foci):
        for d in range(draws):
            p, _ = draw_group(7919 * d + 13 + 100_003 * i, ((f,),), ())
            if p is not None:
                reached.update(checked_cells(p))
                if f.cell not in held and holds(f, p, DEFAULT_MODES):
                    held.add(f.cell)
    return reached, held


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=5000)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--focused-draws", type=int, default=2, help="programs drawn around each focus (0: none)")
    a = ap.parse_args()
    cells: set[str] = set()
    for s in a.seeds:
        got = cells_of(a.programs, s)
        print(f"seed {s}: {len(got)} cells, {len(got - cells)} new", file=sys.stderr)
        cells |= got
    skip = NO_CPU_VALUES | NO_CPU_LOWERING

    def keep(cs: set[str]) -> set[str]:
        return {c for c in cs if c.split("|")[0] not in skip and "=?" not in c}

    kept = keep(cells)
    kept |= several_pairs(kept)
    # the cells focused programs reach, until their foci reach no new one (a few rounds);
    # a cell of the table before stays while a program drawn around it holds it (the
    # rarest cells come and go in a sample of unfocused programs)
    if a.focused_draws:
        before = set(load_table())
        new = kept | before
        for r in range(4):
            reached, held = focused_cells(new, a.focused_draws)
            gone = (new & before) - kept - held
            kept |= new & held  # (a cell found beside a focus is listed once its own focus holds it)
            new = keep(reached) - kept
            new |= several_pairs(kept | new) - kept
            print(f"focused round {r}: {len(held)} held, {len(gone)} of the table before dropped, {len(new)} new cells", file=sys.stderr)
            if not new:
                break
    kept = sorted(kept)
    TABLE.write_text(
        "# The configuration cells generation reaches, unfocused and around each focus (strategies/focus.py draws its foci from them).\n"
        f"# Generated by: python scripts/build_cell_table.py --programs {a.programs} --seeds {' '.join(map(str, a.seeds))}"
        f" --focused-draws {a.focused_draws}\n"
        + "".join(c + "\n" for c in kept))
    print(f"{len(kept)} cells -> {TABLE.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
