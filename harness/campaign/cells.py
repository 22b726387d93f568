"""Configuration cells: the classes of configuration a fuzz run must reach.

A cell is one op kind with one parameter class, e.g. `all_gather|tiled=False`,
`psum_scatter|axis=negative`, `ppermute|perm=cyclic`, `psum|axes=out_of_mesh_order`,
`all_to_all|dtype=float32`, `pmax|rank=0`, `psum|wrap=scan`. They are marginal classes
(one dimension each), not their product, so a run can cover all of them. An op counts for
its cells only when it is live (its result reaches an output). A cell is *value-checked*
in a mode when a valid program holding it ran in that mode; an invalid program checks
its cells by error only, and those checks are counted apart (`CELL|by_error`).

The run uses the cells twice: the value tier takes every program that brings a cell no
program before it was sent to the value tier with (so rare configurations are checked by
value when they first appear, not only when a program-id hash happens to pick them), and
the summary lists, per cell and mode, the checks and the first hit, the cells no check
reached, and why a cell cannot be reached here.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from programs.graph import live_ops
from programs.model import Mesh, Op, Program, is_float
from programs.ops import LOCAL_OPS, NO_CPU_LOWERING, NO_CPU_VALUES

VALUE_MODES = ("jit", "gspmd", "eager", "vmap", "vmap_spmd", "smap", "grad", "grad_remat", "multiprocess")


def _axis_class(axis: object, rank: int | None) -> str:
    if not isinstance(axis, int) or isinstance(axis, bool):
        return "none"
    if axis < 0:
        return "negative"
    if axis == 0:
        return "first"
    # the last dimension, or (untiled all_gather) the new one after it
    return "last" if rank is None or axis >= rank - 1 else "middle"


def _axes_class(axes: tuple[str, ...], mesh: Mesh) -> str:
    if len(axes) == 1:
        return "one"
    if any(a in mesh.names for a in axes) and list(axes) != sorted(axes, key=lambda a: mesh.names.index(a) if a in mesh.names else -1):
        return "out_of_mesh_order"
    if any(a in mesh.names and mesh.axis_size(a) == 1 for a in axes):
        return "with_size_1"
    return "several>1"


def _perm_class(op: Op, n: int) -> str:
    perm = op.p("perm")
    if op.kind == "pshuffle":
        pairs = list(enumerate(perm))  # type: ignore[arg-type]
    else:
        pairs = [tuple(x) for x in perm]  # type: ignore[union-attr]
    if all(s == d for s, d in pairs):
        return "identity"
    if len(pairs) < n:
        return "partial"
    if all(d == (s + 1) % n for s, d in pairs) or all(d == (s - 1) % n for s, d in pairs):
        return "cyclic"
    return "full"


def op_cells(p: Program, op: Op, rank: int | None, dtype: str) -> set[str]:
    """The cells of one op (its operand's rank and the result's dtype given)."""
    k = op.kind
    out = {f"{k}|dtype={dtype}", f"{k}|rank={min(rank, 3) if rank is not None else '?'}"}
    out.add(f"{k}|wrap={op.p('wrap') or 'plain'}")
    if k in LOCAL_OPS:
        return out
    axes = tuple(op.p("axes") or ())  # type: ignore[call-overload]
    if axes:
        out.add(f"{k}|axes={_axes_class(axes, p.mesh)}")
    for name in ("tiled", "to"):
        if op.p(name) is not None:
            out.add(f"{k}|{name}={op.p(name)}")
    for name in ("axis", "scatter_dimension", "split_axis", "concat_axis"):
        if op.p(name) is not None:
            out.add(f"{k}|{name}={_axis_class(op.p(name), rank)}")
    if k == "all_to_all" and op.p("split_axis") is not None:
        out.add(f"{k}|split{'!=' if op.p('split_axis') != op.p('concat_axis') else '=='}concat")
    if op.p("groups") is not None:
        out.add(f"{k}|groups=yes")
    if op.p("perm") is not None and axes and all(a in p.mesh.names for a in axes):
        out.add(f"{k}|perm={_perm_class(op, p.mesh.group_size(axes))}")
    return out


def program_cells(p: Program, types: list[tuple[tuple[int, ...], str]] | None = None) -> frozenset[str]:
    """Every cell of the program's live ops (with the oracle's types of its values, when
    given: operand rank and result dtype); the op inside a live nested shard_map too."""
    n_in = len(p.inputs)
    out: set[str] = set()
    for i in sorted(live_ops(p)):
        op = p.body[i]
        if types is not None and n_in + i >= len(types):
            break  # past the op an invalid program fails at: never checked
        rank = len(types[op.operands[0]][0]) if types and op.operands and op.operands[0] < len(types) else None
        dtype = types[n_in + i][1] if types else "?"
        out |= op_cells(p, op, rank, dtype)
        if op.kind == "shard_map":
            out |= op_cells(p, op.inner_op(), rank, dtype)
    return frozenset(out)


@functools.lru_cache(maxsize=256)
def typed_cells(p: Program) -> tuple[frozenset[str], bool]:
    """(the program's cells with the oracle's types, whether the oracle expects it to
    fail): computed once per program for generation's target (`CellNovelty`) and the
    value-tier choice (`tier_modes`), which both ask."""
    from oracles.interpreter import trace

    st, err = trace(p, with_values=False)
    return program_cells(p, [(t.shape, t.dtype) for t in st.types]), err is not None


def by_error(cells: frozenset[str]) -> frozenset[str]:
    """An invalid program's cells, which it checks by error only (`CELL|by_error`)."""
    return frozenset(f"{c}|by_error" for c in cells)


def checked_cells(p: Program) -> frozenset[str]:
    """The cells `p` checks: its typed cells, by error when the oracle expects it to fail
    (what generation's target scores and the value tier claims)."""
    cells, fails = typed_cells(p)
    return by_error(cells) if fails else cells


def applies(p: Program, mode: str) -> bool:
    """Whether `mode` runs `p` at all on XLA:CPU (the modes' own unsupported rules,
    restated on the program: a scheduling decision, never a verdict)."""
    kinds = {op.kind for op in p.all_ops()}
    if mode in VALUE_MODES and kinds & (NO_CPU_VALUES | NO_CPU_LOWERING):
        return False
    if mode == "lowering" and kinds & NO_CPU_LOWERING:
        return False
    if mode == "vmap_spmd":
        return p.spmd_axis() is not None and p.defect is None
    if mode == "smap":
        return not isinstance(p.smap_form(), str)
    if mode in ("grad", "grad_remat"):
        return p.check_vma and any(is_float(x.dtype) for x in p.inputs)
    if mode == "multiprocess":
        return p.mesh.size % 2 == 0  # (harness/run/modes_multiprocess.py: half the mesh in each process)
    return True


def unreachable(cell: str, mode: str, backend: str = "cpu") -> str | None:
    """Why `cell` can never be value-checked in `mode` here, or None."""
    kind = cell.split("|")[0]
    if cell.endswith("|by_error"):
        cell = cell[: -len("|by_error")]
        if mode in ("vmap_spmd", "smap"):  # (Vmap.run, Program.smap_form: a defect has no such form)
            return f"{mode} runs no program with a defect (jax's error wording differs there)"
    if backend == "cpu" and mode in VALUE_MODES and kind in NO_CPU_VALUES:
        return f"{kind}: XLA:CPU cannot run it (checked by abstract and lowering)"
    if backend == "cpu" and mode in (*VALUE_MODES, "lowering") and kind in NO_CPU_LOWERING:
        return f"{kind}: XLA:CPU has no lowering for it (checked by abstract)"
    if mode in ("grad", "grad_remat") and cell.split("|")[1].startswith("dtype=") and not is_float(cell.split("|")[1][6:]):
        return "integer values have no derivative"
    return None


@dataclass
class CellLedger:
    """Per (cell, mode): how many checks, and the program index and run time of the first."""

    checks: dict[tuple[str, str], int]
    first: dict[tuple[str, str], tuple[int, float]]
    scheduled: set[str]  # "cell@mode" pairs some program was already sent to the value tier with

    @staticmethod
    def new() -> CellLedger:
        return CellLedger({}, {}, set())

    def claim(self, p: Program, cells: frozenset[str], modes: tuple[str, ...],
              costly: frozenset[str] = frozenset()) -> tuple[str, ...]:
        """The modes the value tier runs `p` in: none unless it brings a (cell, mode)
        pair, in a mode that runs it, that no value-tier program had yet; else every
        mode of `modes` but the `costly` ones in which it brings nothing new. Claims the
        pairs of the modes returned."""
        pairs = {(c, m) for c in cells for m in modes if applies(p, m)}
        fresh = {m for c, m in pairs if f"{c}@{m}" not in self.scheduled}
        if not fresh:
            return ()
        run = tuple(m for m in modes if m not in costly or m in fresh)
        self.scheduled |= {f"{c}@{m}" for c, m in pairs if m in run}
        return run

    def record(self, cells: frozenset[str], modes: list[str], index: int, t: float) -> None:
        for c in cells:
            for m in modes:
                key = (c, m)
                self.checks[key] = self.checks.get(key, 0) + 1
                self.first.setdefault(key, (index, t))
