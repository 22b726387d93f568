"""The base of every op's rules: `Ctx` (what a rule may consult), `OpDef` (one op's
check, shape, dtype, vma and value rules) and `Collective` (the named-axis checks)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from oracles.devices import from_groups, local_offset, to_groups
from oracles.prediction import ErrorKind, OracleError, PredictedError, ValueType
from programs.forms import form_of
from programs.model import Mesh, Op

# (prop, mag, terms): see OpDef.error
ErrorTerms = tuple[np.ndarray | float, np.ndarray | float, int]


@dataclass(frozen=True)
class Ctx:
    """What every rule may consult: the mesh, the manual axes, the vma flag, the op."""

    mesh: Mesh
    manual: tuple[str, ...]
    check_vma: bool
    op_index: int
    op: Op
    # False: real arithmetic, casts between float dtypes do not round (the finite
    # differences of the grad oracle: jax differentiates a cast as the identity)
    rounding: bool = True
    # jax_enable_x64 on (`Program.x64`): jax's default integer and float are 64-bit
    x64: bool = False

    def fail(self, kind: ErrorKind, why: str, *facts: str) -> OracleError:
        return OracleError(PredictedError(kind, tuple(facts), why, self.op_index))


def vma_of(vs: list[ValueType]) -> frozenset[str]:
    out: frozenset[str] = frozenset()
    for v in vs:
        out |= v.vma or frozenset()
    return out


def canon_axis(axis: int, rank: int, ctx: Ctx, what: str) -> int:
    if not -rank <= axis < rank:
        raise ctx.fail(
            ErrorKind.COLLECTIVE_PARAM,
            f"{ctx.op.kind}: {what}={axis} is out of range for an operand of rank {rank}",
            what,
            str(axis),
        )
    return axis % rank


class OpDef:
    """One op. Subclasses override the rules they need."""

    kind: ClassVar[str]

    def check(self, ins: list[ValueType], ctx: Ctx) -> None:
        """Raise `OracleError` (via `ctx.fail`) when jax must reject the op."""

    def shape(self, ins: list[ValueType], ctx: Ctx) -> tuple[int, ...]:
        return ins[0].shape

    def dtype(self, ins: list[ValueType], ctx: Ctx) -> str:
        return ins[0].dtype

    def vma(self, ins: list[ValueType], ctx: Ctx) -> frozenset[str]:
        return vma_of(ins)

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        raise NotImplementedError

    def ur(self, ins: list[ValueType], ctx: Ctx) -> tuple[frozenset[str], frozenset[str]]:
        """The result's (unreduced, reduced) manual axes (check_vma). Operands that are
        neither give neither. jax's rules for operands that are differ op by op
        (lax.py `*_ur_rule`, parallel.py `check_unreduced_args`); the kinds that have
        one here override this (pcast, psum, add, all_gather), and strategies/ never
        gives any other kind such an operand."""
        if any(t.unreduced or t.reduced for t in ins):
            raise NotImplementedError(f"the oracle has no unreduced/reduced rule for {self.kind}")
        return frozenset(), frozenset()

    def rounds_integers(self, ins: list[ValueType], ctx: Ctx) -> bool:
        """Whether the op may round even where its operands are clean and its result is
        an integer the dtype holds (the exemption of oracles/rounding.py `combine`, which
        assumes every intermediate is then an integer too): False but for a division
        computed through a rounded reciprocal (pmean)."""
        return False

    def error(self, xs: list[np.ndarray], errs: list[np.ndarray], v: np.ndarray, ins: list[ValueType], ctx: Ctx) -> ErrorTerms:
        """How far jax's result may be from `v` = `value(xs)` (oracles/rounding.py): (prop, mag,
        terms): the operands' errors `errs` as they reach the result, and `terms`
        roundings of at most `mag` each. The default is an op that moves or selects
        elements without arithmetic (a collective that permutes blocks, transpose,
        neg): the errors move with the elements, nothing is rounded."""
        if not xs:
            return 0.0, 0.0, 1
        return np.abs(self.value(errs, ins, ctx)), 0.0, 1


# The collectives that take their axis names as a list. jax 0.10.2's docs ask every
# collective for "axis_name: hashable Python object" (a name or a tuple of names), and a
# list is not hashable: the others raise TypeError when jax binds the list as a
# primitive's parameter ("unhashable type: 'list'", or "parameters to jaxpr equations
# must have __hash__"). psum and pmean turn a list into a tuple first (parallel.py
# `_psum_is_async`), axis_index and axis_size read it as one (measured on 0.10.2): the
# oracle follows them there.
LIST_AXES = frozenset({"psum", "pmean", "axis_index", "axis_size"})


class Collective(OpDef):
    """Common checks: the axis names' form (a list only where jax takes one, LIST_AXES);
    every named axis must be a bound (manual) mesh axis."""

    def axes(self, ctx: Ctx) -> tuple[str, ...]:
        return tuple(ctx.op.p("axes"))  # type: ignore[arg-type]

    def n(self, ctx: Ctx) -> int:
        return ctx.mesh.group_size(self.axes(ctx))

    def check(self, ins: list[ValueType], ctx: Ctx) -> None:
        if form_of(ctx.op, "axes") == "list" and self.kind not in LIST_AXES:
            raise ctx.fail(
                ErrorKind.COLLECTIVE_PARAM,
                f"{self.kind} names its axes as a list {list(self.axes(ctx))}, which is not hashable; jax's docs ask for a "
                "hashable axis_name (an axis name or a tuple of them): write a tuple",
            )
        for a in self.axes(ctx):
            if a not in ctx.manual:
                where = "is not a mesh axis" if a not in ctx.mesh.names else "is not manual here (not in axis_names)"
                raise ctx.fail(
                    ErrorKind.UNBOUND_AXIS,
                    f"{self.kind} names axis {a!r}, which {where}; collectives can only name "
                    f"the manual axes {ctx.manual}",
                    a,
                )
        self.check_params(ins, ctx)

    def check_params(self, ins: list[ValueType], ctx: Ctx) -> None:
        pass

    def vma(self, ins: list[ValueType], ctx: Ctx) -> frozenset[str]:
        # implicit pvary over the named axes, then the collective keeps them varying
        return vma_of(ins) | frozenset(self.axes(ctx))

    def grouped(self, x: np.ndarray, ctx: Ctx) -> np.ndarray:
        return to_groups(x, ctx.mesh, self.axes(ctx))

    def ungrouped(self, t: np.ndarray, ctx: Ctx) -> np.ndarray:
        return from_groups(t, ctx.mesh, self.axes(ctx))

    def lo(self, ctx: Ctx) -> int:
        return local_offset(ctx.mesh, self.axes(ctx))


def state_of(x: ValueType, axes: tuple[str, ...], ctx: Ctx) -> str:
    """`_get_from` (parallel.py): whether the operand is varying, unreduced, reduced or
    invarying over every named axis; one state for all of them, or jax rejects it.
    (Under check_vma=False jax tracks nothing: every axis is invarying. Over no axes, an
    empty tuple: invarying, so a pcast over () is the identity, as jax 0.10.2 runs it.)"""
    states = set() if axes else {"invarying"}
    for a in axes:
        if not ctx.check_vma:
            states.add("invarying")
        elif a in (x.vma or ()):
            states.add("varying")
        elif a in x.unreduced:
            states.add("unreduced")
        elif a in x.reduced:
            states.add("reduced")
        else:
            states.add("invarying")
    if len(states) > 1:
        raise ctx.fail(
            ErrorKind.COLLECTIVE_VMA,
            f"{ctx.op.kind} over {axes}: the operand is {sorted(states)} over them; it must be one of varying, "
            "unreduced, reduced or invarying over all of them",
            *axes,
        )
    return states.pop()


def all_or_none(x: ValueType, axes: tuple[str, ...], ctx: Ctx) -> None:
    """psum and psum_scatter (`_get_from` in parallel.py): the operand must vary over all
    of the named axes or none of them (then it is pvary'd), never some."""
    varying = {a for a in axes if a in (x.vma or ())}
    if varying and len(varying) != len(axes):
        raise ctx.fail(
            ErrorKind.COLLECTIVE_VMA,
            f"{ctx.op.kind} over {axes}: the operand varies over {sorted(varying)} but not "
            f"{sorted(set(axes) - varying)}; it must vary over all or none of them",
            *axes,
        )
