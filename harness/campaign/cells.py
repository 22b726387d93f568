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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from oracles import predict
from oracles.interpreter import trace
from programs.cells import (  # noqa: F401 - (programs/cells.py; the run's callers import them here)
    FEATURE_KINDS,
    feature_unreachable,
    op_cells,
    ops_cells,
    output_cells,
    program_cells,
)
from programs.graph import cone, drop_unused_inputs, lean_part, live_ops, slice_outputs, sliced_ops
from programs.model import Program, is_float
from programs.ops import NO_CPU_LOWERING, NO_CPU_VALUES
from programs.points import (
    DERIVATIVE_MODES,
    HESSIAN_MAX_ELEMENTS,
    REVERSE_MODES,
    float_elements,
    used_float_args,
)
from strategies.invalid import TRACED_DEFECTS

VALUE_MODES = ("jit", "gspmd", "eager", "vmap", "vmap_spmd", "smap", "grad", "grad_remat", "jvp", "linearize", "hessian", "multiprocess")


@functools.lru_cache(maxsize=256)
def _abstract(p: Program) -> tuple[tuple[Any, ...], Any]:
    """(the oracle's value types of the program's values, as far as it traces, the error
    it predicts or None): no values computed."""
    st, err = trace(p, with_values=False)
    return tuple(st.types), err


def value_types(p: Program) -> tuple[tuple[Any, ...], bool]:
    """(the oracle's value types of the program's values, as far as it traces, whether it
    expects the program to fail): no values computed."""
    types, err = _abstract(p)
    return types, err is not None


def error_kind(p: Program) -> str | None:
    """The kind of error the oracle predicts for `p` (oracles/prediction.py `ErrorKind`'s
    value, as a divergence's signature names it), or None."""
    err = _abstract(p)[1]
    return None if err is None else str(err.kind.value)


def failing_op(p: Program) -> int | None:
    """The body op an invalid program's error is predicted at (the first the oracle could
    not type), or None: valid, or failing before the body or after it (out_specs)."""
    types, fails = value_types(p)
    n_in, n = len(p.inputs), len(types)
    return n - n_in if fails and n_in <= n < n_in + len(p.body) else None


def lean(p: Program, keep: tuple[int, ...] | None = None) -> Program:
    """`p` cut to the outputs `keep` (all: None), without its dead ops
    (programs/graph.py `lean_part`) and its unused arguments: a valid program's, and an
    invalid one's whose defect jax finds after tracing the body (strategies/invalid.py
    `TRACED_DEFECTS`: no in_spec of theirs) where the oracle predicts the same error
    without them. Eager moves each argument with a compile of its own, so an unused one
    costs it a compile and checks nothing.

    An invalid program is cut only where the cut keeps its error (`_error_cut`): the
    outputs `keep` and, if the oracle's error needs one more (an out_spec's duplicate
    axis, a dropped varying axis), the first output that brings it back; else it runs
    whole."""
    fails = value_types(p)[1]
    if fails and keep is not None:
        keep = _error_cut(p, keep)
    q = lean_part(p, keep, failing_op(p), not fails)
    if fails and p.defect in TRACED_DEFECTS:
        r = drop_unused_inputs(q)
        if r is not q and _same_error(predict(q, values=False).error, predict(r, values=False).error):
            return r
    return q


def _same_error(want: Any, got: Any, ops: tuple[int, ...] | None = None, outs: tuple[int, ...] | None = None) -> bool:
    """Whether the oracle's error `got`, for a cut of the program `want` is predicted for,
    is that error: kind, facts, and the op and output it names, where the cut's op `i` is
    the program's `ops[i]` and its output `k` the program's `outs[k]` (None: the same)."""
    if want is None or got is None:
        return False
    op = got.op_index if got.op_index is None or ops is None else ops[got.op_index]
    out = got.output if got.output is None or outs is None else outs[got.output]
    return (got.kind, got.facts, op, out) == (want.kind, want.facts, want.op_index, want.output)


def _error_cut(p: Program, keep: tuple[int, ...]) -> tuple[int, ...] | None:
    """The outputs an eager part of the invalid program `p` claimed for the outputs `keep`
    runs: `keep` where the oracle predicts the same error for `p` cut to them (kind,
    facts, the op and output it names, renumbered), else `keep` and the first other
    output with which it does, else None (the whole program). Eager runs every op of
    the body before jax checks the out_specs, so each output cut saves its ops' compiles."""
    want = predict(p, values=False).error
    at = failing_op(p)
    also = frozenset() if at is None else frozenset({at})
    for extra in ((), *((k,) for k in range(len(p.outputs)) if k not in keep)):
        ks = tuple(sorted(keep + extra))
        q, kept = sliced_ops(p, ks, also)
        # (too few out_specs for the outputs stays too few: a cut keeps every out_spec
        # where their number is not the outputs', programs/graph.py `slice_outputs`)
        if _sign(len(q.out_specs) - len(q.outputs)) == _sign(len(p.out_specs) - len(p.outputs)) \
                and _same_error(want, predict(q, values=False).error, kept, ks):
            return ks
    return None


def _sign(n: int) -> int:
    return (n > 0) - (n < 0)


def _typed(p: Program) -> tuple[list[tuple[tuple[int, ...], str]], bool]:
    """(the oracle's types of the program's values, whether it expects the program to fail)."""
    types, fails = value_types(p)
    return [(t.shape, t.dtype) for t in types], fails


@functools.lru_cache(maxsize=256)
def typed_cells(p: Program) -> tuple[frozenset[str], bool]:
    """(the program's cells with the oracle's types, whether the oracle expects it to
    fail): computed once per program for generation's target (`CellNovelty`) and the
    value-tier choice (harness/campaign/plan.py `ValueTier`), which both ask."""
    types, fails = _typed(p)
    return program_cells(p, types), fails


def typed_output_cells(p: Program) -> tuple[frozenset[str], ...]:
    """Per output, the cells (with the oracle's types) of the ops it depends on."""
    return output_cells(p, _typed(p)[0])


def checked_output_cells(p: Program) -> tuple[frozenset[str], ...]:
    """Per output, the cells `p` checks through it (`typed_output_cells`; by error when
    the oracle expects `p` to fail, as `checked_cells`)."""
    parts = typed_output_cells(p)
    return tuple(map(by_error, parts)) if value_types(p)[1] else parts


def lost_cells(p: Program, raise_ops: dict[str, frozenset[int]]) -> dict[str, frozenset[str]]:
    """Per mode, the cells of the valid program `p` that no run of it checks there. Known
    entries say jax raises, crashes or hangs at the ops `raise_ops[mode]` in that mode
    (harness/judge/known.py `known_raise_ops`), so the mode raises on `p`, and the
    program without the bug (harness/judge/known.py `derived_program`: the outputs none
    of those ops reaches) checks only the cells of the ops those outputs depend on, and
    none at all where the mode does not run it (`applies`).
    - A pcast after a pmax: grad has no derivative of pmax, so the pcast's grad cell
      would be claimed by such a program and never checked.
    - A float untiled all_to_all (no transpose in grad) beside an integer `sub` in a
      cond: the program without the all_to_all has integer outputs only, and grad skips
      it, so `sub|wrap=cond@grad` would be claimed and never checked.
    The ops at fault themselves are not lost: their cells are blocked by the entry."""
    types = _typed(p)[0]
    live = live_ops(p)
    every = program_cells(p, types)
    out: dict[str, frozenset[str]] = {}
    parts: dict[tuple[int, ...], Program] = {}  # (the modes' ops at fault are mostly the same)
    for m, bad in raise_ops.items():
        keep = tuple(k for k, o in enumerate(p.outputs) if not (cone(p, o) & bad))
        if len(keep) == len(p.outputs):
            continue  # (no output reaches them: the mode runs `p` whole)
        kept: frozenset[str] = frozenset()
        if keep and keep not in parts:
            parts[keep] = slice_outputs(p, keep)
        if keep and applies(parts[keep], m):
            kept = ops_cells(p, frozenset().union(*(cone(p, p.outputs[k]) for k in keep)), types)
        out[m] = every - kept - ops_cells(p, bad & live, types)
    return {m: c for m, c in out.items() if c}


def by_error(cells: frozenset[str]) -> frozenset[str]:
    """An invalid program's cells, which it checks by error only (`CELL|by_error`); the
    pair cells (programs/cells.py `PAIRED`: classes whose values interact) are value
    cells only."""
    return frozenset(f"{c}|by_error" for c in cells if "&" not in c)


def trouble_cells(p: Program, bad: frozenset[int]) -> frozenset[str]:
    """The cells, by error, of the ops `bad` of the invalid program `p`: those at which a
    known entry says jax raises another error than predicted, or none
    (harness/judge/known.py `error_trouble_modes`). In the modes jax goes wrong in, `p`
    checks none of its cells by error, and the run blocks these (the entry explains jax
    there: harness/campaign/state.py `_entry_cells`); the others stay open. Else a
    program by error with known trouble at some of its ops (grouped-pmin-claims-invariance:
    jax misses the out_specs defect at a pmin of several groups) would claim the cells
    of its other ops too (its pmins of one group or none): no mode would check them by
    error, and the sweep, counting them held, would not draw them again."""
    return by_error(ops_cells(p, bad, _typed(p)[0]))


def checked_cells(p: Program) -> frozenset[str]:
    """The cells `p` checks: its typed cells, by error when the oracle expects it to fail
    (what generation's target scores and the value tier claims)."""
    cells, fails = typed_cells(p)
    return by_error(cells) if fails else cells


def applies(p: Program, mode: str, ur_gaps: Mapping[str, str] | None = None) -> bool:
    """Whether `mode` runs `p` at all on XLA:CPU (the modes' own unsupported rules,
    restated on the program: a scheduling decision, never a verdict). `ur_gaps`: the
    modes that run no program holding a reduced / unreduced value on the workers' jax
    (harness/run/compat.py `ur_mode_gaps`)."""
    if ur_gaps and mode in ur_gaps and p.uses_ur():
        return False
    kinds = {op.kind for op in p.all_ops()}
    if mode in VALUE_MODES and kinds & (NO_CPU_VALUES | NO_CPU_LOWERING):
        return False
    if mode == "lowering" and kinds & NO_CPU_LOWERING:
        return False
    if mode in ("vmap", "vmap_spmd", "smap") and p.wrap is not None:
        return False  # (harness/run/compat.py `_explicit_mode_gaps`)
    if mode == "eager" and "explicit" in p.outer_mesh().axis_types and any(x.closure == "outer" for x in p.inputs):
        return False  # (harness/run/compat.py: the eager form closes over a typed concrete array)
    if mode == "vmap_spmd":
        return p.spmd_axis() is not None and p.defect is None
    if mode == "smap":
        return not isinstance(p.smap_form(), str)
    # (harness/run/compat.py `_explicit_mode_gaps`: what these modes do not run yet)
    if mode in DERIVATIVE_MODES:
        if not any(is_float(x.dtype) for x in p.inputs) or p.explicit_axes or p.wrap is not None:
            return False
        if mode == "hessian" and (not used_float_args(p) or float_elements(p) > HESSIAN_MAX_ELEMENTS):
            return False  # (harness/run/modes_transformed.py Hessian: a dense Hessian of the used float arguments)
        if mode in REVERSE_MODES and any(op.p("wrap") == "while" for op in p.body):
            return False  # (harness/run/compat.py: jax has no reverse-mode derivative of lax.while_loop)
        # a valid program checks a derivative only of a float output (the grad modes skip it
        # otherwise); an invalid one checks its error
        types, fails = _typed(p)
        return fails or any(is_float(types[o][1]) for o in p.outputs if o < len(types))
    if mode == "multiprocess":  # (harness/run/modes_multiprocess.py: half the mesh in each process)
        return p.mesh.size % 2 == 0 and not p.needs_mesh_context() and not p.has_edges()
    return True


# The cells only an op with a reduced / unreduced result holds (harness/run/compat.py
# `ur_mode_gap`: the modes that cannot run those)
UR_CELLS = frozenset({"pcast|to=reduced", "pcast|to=unreduced", "all_gather|to=reduced"})


def unreachable(cell: str, mode: str, backend: str = "cpu", ur_gaps: Mapping[str, str] | None = None) -> str | None:
    """Why `cell` can never be value-checked in `mode` here, or None. `ur_gaps`: the
    modes that run no reduced / unreduced program on the workers' jax, and why."""
    kind = cell.split("|")[0]
    if kind in FEATURE_KINDS:  # (how the program meets its shard_map: programs/cells.py)
        return feature_unreachable(cell.removesuffix("|by_error"), mode)
    if kind == "call" and mode == "smap":
        return "smap writes the program as jax.smap(body, in_axes=, out_axes=, axis_name=), not as this shard_map call"
    if kind == "call" and mode in DERIVATIVE_MODES and any(
            part in ("in_specs=omitted", "types=explicit", "types=mixed") for part in cell.split("|")[1].split("&")):
        return "the derivative modes run no program with Explicit axes (their tangents and cotangents carry no sharding types: shardfuzz)"
    if ur_gaps and mode in ur_gaps and cell.removesuffix("|by_error") in UR_CELLS:
        return f"{mode} runs no program with a reduced / unreduced value: {ur_gaps[mode]}"
    if cell.endswith("|by_error"):
        cell = cell[: -len("|by_error")]
        if mode in ("vmap_spmd", "smap"):  # (Vmap.run, Program.smap_form: a defect has no such form)
            return f"{mode} runs no program with a defect (jax's error wording differs there)"
        if mode in DERIVATIVE_MODES and cell in UR_CELLS:
            return ("an invalid program with a reduced / unreduced value carries an Explicit-axis defect "
                    "(strategies/programs.py `_maybe_invalid`); the one jax finds after tracing the body, so that "
                    "the op's cell counts, is an out_spec dropping the reduced axes, which needs them Explicit, and "
                    "the grad modes run no program with Explicit axes (shardfuzz)")
    if backend == "cpu" and mode in VALUE_MODES and kind in NO_CPU_VALUES:
        return f"{kind}: XLA:CPU cannot run it (checked by abstract and lowering)"
    if backend == "cpu" and mode in (*VALUE_MODES, "lowering") and kind in NO_CPU_LOWERING:
        return f"{kind}: XLA:CPU has no lowering for it (checked by abstract)"
    dim = cell.split("|")[1]
    dtype = next((part[6:] for part in dim.split("&") if part.startswith("dtype=")), None)
    if mode in DERIVATIVE_MODES and dtype is not None and not is_float(dtype):
        return "integer values have no derivative"
    if mode in REVERSE_MODES and dim == "wrap=while":
        return "jax has no reverse-mode derivative of lax.while_loop (a program holding one runs no grad mode)"
    if mode == "smap" and dim.startswith("axes=") and dim != "axes=one":
        return "smap takes a program that names one mesh axis (Program.smap_form), so every collective names that one"
    if mode == "smap" and kind in ("psum", "pmean") and dim == "groups=yes":
        return (f"{kind} takes axis_index_groups only with check_vma=False (strategies/collectives.py: jax does not "
                f"implement them otherwise), and {mode} runs no such program")
    return None


REOPEN = 2  # times a claimed pair left unchecked is claimed again (CellLedger.reopen)


@dataclass(frozen=True)
class Claim:
    """One value-tier claim of a program (`CellLedger.offer`): the modes it runs in, the
    outputs each costly mode's part is cut to (None: all; its part runs without the
    program's dead ops, programs/graph.py `lean_part`), and what taking it does to the
    ledger: the pairs now sent with (`scheduled`), the reopened pairs no longer open
    (`closed`), the cells the draws saw (`seen`)."""

    modes: tuple[str, ...]
    cut: tuple[tuple[str, tuple[int, ...] | None], ...] = ()
    scheduled: frozenset[str] = frozenset()
    closed: frozenset[str] = frozenset()
    seen: frozenset[str] = frozenset()


@dataclass
class CellLedger:
    """Per (cell, mode): how many checks, and the program index and run time of the first."""

    checks: dict[tuple[str, str], int]
    first: dict[tuple[str, str], tuple[int, float]]
    scheduled: set[str]  # "cell@mode" pairs some program was already sent to the value tier with
    # (cell, mode) -> the known divergences (ids) that kept a program holding it from
    # checking it in that mode: jax raised where the oracle predicts values, or ran where
    # it predicts an error, and a known entry explains it at that cell's op (`block`)
    blocked: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    # (cell, mode) -> "entry@mode" for each crash or hang (in that other mode) that kept a
    # program holding it from running in this mode, where the entry says jax fails in this
    # mode too (`stop`)
    stopped: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    # "cell@mode" pairs claimed by a program that then did not check them there (jax
    # raised in that mode, at the pair's op or another, or the mode did not run it):
    # the value tier claims them again (`claim`), up to REOPEN times each (`reopen`);
    # the sweep still reads `scheduled` alone, so its draws do not depend on results
    reopened: set[str] = field(default_factory=set)
    reopens: dict[str, int] = field(default_factory=dict)
    # the modes that run no program holding a reduced / unreduced value on the workers'
    # jax, with why (harness/run/compat.py `ur_mode_gaps`): `claim` and the sweep do not
    # count on them for such a program (else a program with a pcast to 'reduced' claims
    # its cells in vmap, which never checks them)
    ur_gaps: dict[str, str] = field(default_factory=dict)
    # every cell of the programs drawn so far, as the value tier saw them (every program
    # is checked abstractly at least: harness/campaign/plan.py `ValueTier.tier`): the sweep
    # aims at those outside the table too (harness/campaign/sweep.py)
    seen: set[str] = field(default_factory=set)

    @staticmethod
    def new() -> CellLedger:
        return CellLedger({}, {}, set())

    def offer(self, p: Program, cells: frozenset[str], modes: tuple[str, ...],
              costly: frozenset[str] = frozenset(), parts: tuple[frozenset[str], ...] | None = None,
              lean: bool = False, lost: dict[str, frozenset[str]] | None = None,
              schedule: bool = True, taken: Sequence[Claim] = ()) -> Claim:
        """The value tier's claim of `p` (the ledger unchanged: `take` applies it), as if
        the claims `taken` were applied first. Its modes: none unless `p` brings a (cell,
        mode) pair, in a mode that runs it, that no value-tier program had yet; else
        every mode of `modes` but the `costly` ones in which it brings nothing new. It
        claims the pairs of the modes returned. `lean`: only the modes it brings a new
        pair (and abstract, every program's base check).

        With `parts` (per output, its cells: `typed_output_cells`), a costly mode runs
        `p` cut to the outputs that bring it a new cell, each beyond those before it
        (`Claim.cut`, programs/graph.py `slice_outputs`), and claims only theirs: eager
        shard_map runs each primitive on its own, so the cut runs the same primitives
        for those outputs and none of the others'. Every costly mode it is claimed in
        gets a cut (None: every output): that part runs without dead ops.

        `lost` (per mode, `lost_cells`): cells `p` cannot check in that mode, neither
        claimed there nor counted as new: they stay open for a later program.

        `schedule` False (a program the results gave, not the draws: a derived one):
        its reopened pairs are claimed, but no pair is added to `scheduled`, which the
        sweep's draws read (they never depend on results)."""
        lost = lost or {}
        sched = frozenset().union(*(c.scheduled for c in taken)) if taken else frozenset()
        closed = frozenset().union(*(c.closed for c in taken)) if taken else frozenset()

        def is_open(pair: str) -> bool:
            return (pair not in self.scheduled and pair not in sched) or (pair in self.reopened and pair not in closed)

        runs = [m for m in modes if applies(p, m, self.ur_gaps)]
        fresh = {m for m in runs if any(is_open(f"{c}@{m}") for c in cells - lost.get(m, frozenset()))}
        if not fresh:
            return Claim(())
        run = tuple(m for m in modes if m in fresh or m == "abstract" or not (lean or m in costly))
        cut: dict[str, tuple[int, ...] | None] = {}
        pairs: set[str] = set()
        for m in run:
            if m not in runs:
                continue
            mine = cells - lost.get(m, frozenset())
            if m in costly:
                keep: list[int] | None = None
                if parts is not None and len(parts) > 1:
                    keep, mine = [], frozenset()
                    for k, cs in enumerate(parts):
                        cs = cs - lost.get(m, frozenset())
                        if any(is_open(f"{c}@{m}") and c not in mine for c in cs):
                            keep.append(k)
                            mine |= cs
                cut[m] = None if keep is None or len(keep) == len(parts or ()) else tuple(keep)
            pairs |= {f"{c}@{m}" for c in mine}
        return Claim(run, tuple(cut.items()), frozenset(pairs) if schedule else frozenset(), frozenset(pairs))

    def take(self, claims: Iterable[Claim]) -> None:
        """Apply `claims` (`offer`'s), in order."""
        for c in claims:
            self.scheduled |= c.scheduled
            self.reopened -= c.closed
            self.seen |= c.seen

    def claim(self, p: Program, cells: frozenset[str], modes: tuple[str, ...],
              costly: frozenset[str] = frozenset(), parts: tuple[frozenset[str], ...] | None = None,
              lean: bool = False, lost: dict[str, frozenset[str]] | None = None,
              schedule: bool = True) -> tuple[str, ...]:
        """`offer`'s claim, taken: its modes."""
        c = self.offer(p, cells, modes, costly, parts, lean, lost, schedule)
        self.take((c,))
        return c.modes

    def reopen(self, cells: frozenset[str], mode: str, counted: bool = True) -> None:
        """A program that held `cells` ran in `mode` without checking them there: each
        pair no program checked yet is open to the value tier again (REOPEN times at most:
        a pair jax fails on in every program stops costing runs). `counted` False: the
        program was a derived one (without its parent's known bugs), whose own failure
        gives the next program of its chain; each drops a bug, so the chain ends, and it
        does not use up the pair's reopens (else a program whose several wrapped ops
        each raise a known bug closes a pair before its chain reaches the op that
        checks it)."""
        for c in cells:
            pair = f"{c}@{mode}"
            if pair in self.scheduled and (c, mode) not in self.checks and pair not in self.reopened \
                    and (not counted or self.reopens.get(pair, 0) < REOPEN):
                self.reopens[pair] = self.reopens.get(pair, 0) + counted
                self.reopened.add(pair)

    def block(self, cells: frozenset[str], mode: str, entry: str) -> None:
        for c in cells:
            self.blocked.setdefault((c, mode), set()).add(entry)

    def stop(self, cells: frozenset[str], mode: str, entry: str, at: str) -> None:
        """A job crashed or hung in mode `at` (as `entry` explains) before it ran `mode`,
        where `entry` says jax fails on those cells' ops too: the summary gives that as
        why a cell no program checked there was not checked (`stopped`)."""
        for c in cells:
            self.stopped.setdefault((c, mode), set()).add(f"{entry}@{at}")

    def record(self, cells: frozenset[str], modes: list[str], index: int, t: float) -> None:
        for c in cells:
            for m in modes:
                key = (c, m)
                self.checks[key] = self.checks.get(key, 0) + 1
                self.first.setdefault(key, (index, t))
