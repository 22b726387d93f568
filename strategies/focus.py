"""Cell-directed generation: a share of programs is drawn around one *focus*, a
configuration cell (programs/cells.py, e.g. `pshuffle|dtype=int32`, `pmean|groups=yes`,
`all_gather|axis=last|by_error`) in a *profile*, the modes it is meant for:

- "spmd": every value mode but smap. The program is valid (invalid for a `|by_error`
  cell), has check_vma (grad needs it; not for psum / pmean with groups, drawn without
  it), a float argument (grad differentiates it), and one manual axis of even size that
  no spec and no op names (vmap_spmd splits its batch over it; the multiprocess mode
  needs an even mesh). Unfocused, such programs are rare, so without foci vmap_spmd,
  smap, grad and grad_remat miss several times more of the (cell, mode) pairs a run's
  programs hold than the other modes do.
- "smap": the smap mode, which takes a valid program over one mesh axis only.

A nested shard_map's focus (kind "shard_map") has the last mesh axis Auto (the nested
one's axes are Auto outside it): in the spmd profile on a three-axis mesh (the first
axis the one specs and ops name, the second the free manual one), in the smap profile
on a two-axis one (the smap axis, then the Auto one).

The focus is a drawn value: the kind uniformly among the kinds of `strategies/cell_table.txt`
(the cells generation reaches, unfocused and around each focus: scripts/build_cell_table.py), then one of its
cells uniformly, then the profile. So a rare cell gets its share whatever the op draws
favour, and a program still depends on its choices alone: Hypothesis replays and shrinks
it as any other (a steer by the run's state cannot: Hypothesis checks that a choice
sequence always draws the same way, FlakyStrategyDefinition, and a run draws the same
program more than once). The value tier steers by the run's state instead
(harness/campaign/cells.py `CellLedger.claim`).

The program around a focus is drawn by the same construction as every other (valid by
construction): the profile fixes the mesh and flags, the cell's dimension fixes the
first argument's rank or dtype, and the focus op is drawn among the ops of its kind on a
matching operand until one has the cell (a few tries), then made an output (live).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

from hypothesis import event
from hypothesis import strategies as st

from programs.cells import FEATURE_KINDS
from programs.model import DTYPES, Mesh
from strategies import reuse

FOCUS_SHARE = 0.5  # the share of programs drawn around a focus
PROFILES = ("spmd", "smap")
SMAP_SHARE = 0.3  # the share of foci in the smap profile (where the cell fits it)
TABLE = Path(__file__).with_name("cell_table.txt")


@dataclass(frozen=True)
class Focus:
    cell: str  # "kind|dimension=value", "|by_error" appended for an invalid program
    profile: str  # one of PROFILES

    @functools.cached_property
    def by_error(self) -> bool:
        return self.cell.endswith("|by_error")

    @functools.cached_property
    def kind(self) -> str:
        return self.cell.split("|")[0]

    @functools.cached_property  # (asked often by the sweep's grouping: parsed once)
    def parts(self) -> tuple[tuple[str, str], ...]:
        """(dimension, value) of each class the cell names: one, two for a pair cell
        (programs/cells.py `PAIRED`, "kind|a=x&b=y")."""
        return tuple((p.split("=")[0], p.split("=", 1)[1]) if "=" in p else (p, "") for p in self.cell.split("|")[1].split("&"))

    @functools.cached_property
    def dimension(self) -> str:
        """"dtype", "rank", "wrap", "axes", "tiled", ... (`split!=concat` for all_to_all's;
        "a&b" for a pair cell's)."""
        return "&".join(d for d, _ in self.parts)

    @functools.cached_property
    def value(self) -> str:
        return "&".join(v for _, v in self.parts)

    def fixes(self, dimension: str) -> str | None:
        """The class the focus fixes of `dimension` ("axes", "dtype", ...; one part of a
        pair cell's), or None."""
        return next((v for d, v in self.parts if d == dimension), None)

    @property
    def reduced_type(self) -> str | None:
        """"reduced" or "unreduced" for a focus on `to=` one of those types (ops only
        strategies/explicit.py `draw_reduced` makes), else None."""
        to = self.fixes("to")
        return to if to in ("reduced", "unreduced") else None

    @property
    def needs_check_vma_off(self) -> bool:
        """psum / pmean with axis_index_groups (in any form): drawn under check_vma=False
        only (strategies/collectives.py `_reduction`)."""
        return self.kind in ("psum", "pmean") and self.dimension in ("groups", "groups_form")


def can_hold(cell: str, profile: str) -> bool:
    """Whether a program of `profile` can hold `cell` at all: smap takes valid programs
    over one axis with check_vma."""
    f = Focus(cell, profile)
    if profile == "smap" and f.kind in FEATURE_KINDS:
        return False  # (a feature focus is drawn in the spmd profile: strategies/programs.py `_featured`)
    if f.kind == "call":  # (the smap mode writes the program as jax.smap, not as its shard_map call)
        return profile == "spmd"
    if profile == "smap":
        # (no reduced / unreduced value: the smap mode runs none, harness/run/compat.py `ur_mode_gap`)
        return (not f.by_error and not f.needs_check_vma_off and f.fixes("axes") in (None, "one")
                and f.reduced_type is None)
    return True


def load_table(path: Path = TABLE) -> tuple[str, ...]:
    """The cells of the table file (one per line, '#' comments)."""
    lines = (ln.strip() for ln in path.read_text().splitlines())
    return tuple(ln for ln in lines if ln and not ln.startswith("#"))


CELLS: tuple[str, ...] = load_table()
BY_KIND: dict[str, tuple[str, ...]] = {k: tuple(c for c in CELLS if c.split("|")[0] == k) for k in sorted({c.split("|")[0] for c in CELLS})}
KINDS = tuple(BY_KIND)
FOCI: tuple[Focus, ...] = tuple(Focus(c, pr) for c in CELLS for pr in PROFILES if can_hold(c, pr))  # every focus there is


def _uniform(n: int) -> float:
    return int.from_bytes(hashlib.sha256(b"focus" + n.to_bytes(8, "big")).digest()[:8], "big") / 2**64


def _pick(draw: st.DrawFn, items: tuple[str, ...], label: str) -> str:
    """One of `items`, uniform whatever integers Hypothesis favours (a hash of the drawn
    number; shrinks toward the number 0)."""
    return items[int(_uniform(draw(st.integers(0, 2**16), label=label)) * len(items))]


def draw_focus(draw: st.DrawFn, share: float, kinds: tuple[str, ...] = KINDS) -> Focus | None:
    """None (an unfocused program, 1 - `share` of them) or a focus on a cell of one of
    `kinds`."""
    if share <= 0 or _uniform(draw(st.integers(0, 9999), label="focus")) >= share:
        return None
    ks = tuple(k for k in KINDS if k in kinds)
    if not ks:
        return None
    cell = _pick(draw, BY_KIND[_pick(draw, ks, "focus_kind")], "focus_cell")
    smap = can_hold(cell, "smap") and _uniform(draw(st.integers(0, 9999), label="focus_profile")) < SMAP_SHARE
    f = Focus(cell, "smap" if smap else "spmd")
    event(f"focus: {f.profile} {f.dimension}{' by_error' if f.by_error else ''}")
    return f


# Meshes for a focus (names from strategies/programs.py AXIS_NAMES; the last axis is the
# free one in the spmd profile, of even size)
_SPMD_MESHES = {
    "": ((2, 2), (1, 2), (3, 2), (4, 2), (2, 4), (1, 4), (2, 2, 2), (1, 2, 2), (2, 1, 2), (1, 1, 2)),
    "one": ((2, 2), (3, 2), (4, 2), (2, 4), (2, 1, 2), (2, 2, 2)),
    "several>1": ((2, 2, 2),),
    "with_size_1": ((2, 1, 2), (1, 2, 2), (1, 3, 2), (3, 1, 2), (4, 1, 2)),
    "out_of_mesh_order": ((2, 2, 2), (2, 1, 2), (1, 2, 2), (1, 3, 2), (3, 1, 2)),
}
_SPMD_MESHES["empty"] = _SPMD_MESHES[""]  # (a collective over no axes: any mesh)
_SMAP_SIZES = (2, 3, 4, 6, 8)
_FULL_PERM_MESHES = ((3, 2), (4, 2), (2, 2, 2))  # (a usable group of 3 or more: `focus_mesh`)
# a nested shard_map's focus: (named, free manual and even, Auto and > 1)
_NESTED_MESHES = ((2, 2, 2), (1, 2, 2), (1, 2, 3), (1, 2, 4))
_NESTED_SMAP_MESHES = ((2, 2), (2, 4), (4, 2), (3, 2), (2, 3))  # (the smap axis, Auto and > 1)


def focus_mesh(draw: st.DrawFn, f: Focus, names: tuple[str, ...]) -> tuple[Mesh, tuple[str, ...]]:
    """(mesh, the axes specs and ops may name) for a focus's profile and axis-tuple class."""
    if f.kind == "shard_map":  # (strategies/programs.py `_focused`: the last axis Auto)
        sizes = draw(reuse.sampled_from(_NESTED_SMAP_MESHES if f.profile == "smap" else _NESTED_MESHES), label="focus_mesh")
        mesh = Mesh(names[: len(sizes)], sizes)
        return mesh, mesh.names[:1]
    if f.profile == "smap":
        mesh = Mesh(names[:1], (draw(reuse.sampled_from(_SMAP_SIZES), label="focus_mesh"),))
        return mesh, mesh.names
    key = f.fixes("axes") or ""
    # (a full permutation that is not cyclic needs a group of 3 or more: over one usable
    # axis of size 2 none can be drawn)
    meshes = _FULL_PERM_MESHES if not key and f.fixes("perm") == "full" else _SPMD_MESHES[key]
    sizes = draw(reuse.sampled_from(meshes), label="focus_mesh")
    mesh = Mesh(names[: len(sizes)], sizes)
    return mesh, mesh.names[:-1]  # the last (even, > 1) axis stays free


def wanted(foci: tuple[Focus, ...]) -> tuple[int | None, str | None]:
    """(rank, dtype) the operand of an op with all of `foci`'s cells has, where one of
    them names it (None: any; rank 3 for a dimension in the middle). A cast's dtype cell
    is its result's: its operand's is any."""
    parts = [(d, v) for g in foci for d, v in g.parts if not (d == "dtype" and g.kind == "cast")]
    rank = next((int(v) for d, v in parts if d == "rank" and v.isdigit()), 3 if any(v == "middle" for _, v in parts) else None)
    dtype = next((v for d, v in parts if d == "dtype"), None)
    return rank, dtype


def argument_constraint(f: Focus, x64: bool, extra: tuple[Focus, ...] = ()) -> tuple[int | None, str | None]:
    """(rank, dtype) the first argument takes for the focus and the `extra` foci its op
    should also have (a sweep's compound focus, harness/campaign/sweep.py; None: drawn).
    A dtype no argument takes (int16, int64: made by promotion) leaves it drawn."""
    rank, dtype = wanted((f, *extra))
    if dtype not in DTYPES:
        dtype = None
    if dtype == "float64" and not x64:
        dtype = "float32"
    if rank is not None:
        return rank, dtype or "float32"
    if dtype is not None:
        return None, dtype
    return None, "float64" if x64 else "float32"
