"""Collectives that move blocks between the devices of a group: all_gather,
all_to_all, pswapaxes, ppermute, pshuffle (jax 0.10.2 `jax/_src/lax/parallel.py`)."""

from __future__ import annotations

from typing import cast

import numpy as np

from oracles.ops.base import Collective, Ctx, canon_axis
from oracles.prediction import ErrorKind, ValueType


class AllGather(Collective):
    """all_gather: untiled stacks the group's blocks into a new dim `axis`; tiled
    concatenates them along existing dim `axis`. Block order is the group index.
    to='varying' (default) keeps the named axes varying; to='invarying' makes the result
    invariant over them (all_gather_invariant); to='reduced' reduced over them
    (all_gather_reduced)."""

    kind = "all_gather"

    def out_rank_axis(self, ins: list[ValueType], ctx: Ctx) -> int:
        r = len(ins[0].shape)
        tiled = bool(ctx.op.p("tiled"))
        return canon_axis(int(ctx.op.p("axis")), r if tiled else r + 1, ctx, "axis")  # type: ignore[arg-type]

    def check_params(self, ins: list[ValueType], ctx: Ctx) -> None:
        if ctx.op.p("tiled") and len(ins[0].shape) == 0:
            raise ctx.fail(ErrorKind.COLLECTIVE_PARAM, "all_gather: tiled=True needs rank >= 1", "axis")
        self.out_rank_axis(ins, ctx)
        to = ctx.op.p("to")
        if to not in (None, "varying", "invarying", "reduced"):
            raise ctx.fail(ErrorKind.COLLECTIVE_PARAM, f"all_gather: to={to!r}", "to")
        if to == "reduced":
            # all_gather_reduced (parallel.py, Varying -> Reduced): no implicit pvary;
            # the operand must vary over some named axis and be reduced over none
            # (under check_vma=False nothing varies: always rejected)
            varying = (ins[0].vma or frozenset()) if ctx.check_vma else frozenset()
            if not varying & set(self.axes(ctx)) or ins[0].reduced & set(self.axes(ctx)):
                raise ctx.fail(
                    ErrorKind.COLLECTIVE_VMA,
                    f"all_gather(to='reduced') over {self.axes(ctx)}: the operand varies over {sorted(varying)}",
                )

    def shape(self, ins: list[ValueType], ctx: Ctx) -> tuple[int, ...]:
        s = list(ins[0].shape)
        a = self.out_rank_axis(ins, ctx)
        if ctx.op.p("tiled"):
            s[a] *= self.n(ctx)
        else:
            s.insert(a, self.n(ctx))
        return tuple(s)

    def vma(self, ins: list[ValueType], ctx: Ctx) -> frozenset[str]:
        v = super().vma(ins, ctx)
        if ctx.op.p("to") in ("invarying", "reduced"):
            return v - frozenset(self.axes(ctx))
        return v

    def ur(self, ins: list[ValueType], ctx: Ctx) -> tuple[frozenset[str], frozenset[str]]:
        """to='reduced': the result is reduced over the named axes (the same values as a
        plain all_gather: every device holds the whole gather)."""
        if ctx.op.p("to") == "reduced" and not ins[0].unreduced:
            return frozenset(), ins[0].reduced | frozenset(self.axes(ctx))
        return super().ur(ins, ctx)

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        t = self.grouped(xs[0], ctx)
        lo, n = self.lo(ctx), t.shape[0]
        a = self.out_rank_axis(ins, ctx)
        g = np.moveaxis(t, 0, lo - 1 + a)  # group dim placed before local dim a
        if ctx.op.p("tiled"):
            s = g.shape
            g = g.reshape(s[: lo - 1 + a] + (s[lo - 1 + a] * s[lo + a],) + s[lo + a + 1 :])
        return self.ungrouped(np.broadcast_to(g[None], (n,) + g.shape), ctx)


class AllToAll(Collective):
    """all_to_all: device k receives chunk k of dim `split_axis` from every device j and
    concatenates them (in j order) along `concat_axis`. tiled: split size divisible by
    the group size, concat dim grows by it. untiled: split size equals the group size,
    the split dim is removed and a new dim of that size is inserted at concat_axis."""

    kind = "all_to_all"

    def axes_of(self, ins: list[ValueType], ctx: Ctx) -> tuple[int, int]:
        r = len(ins[0].shape)
        s = canon_axis(int(ctx.op.p("split_axis")), r, ctx, "split_axis")  # type: ignore[arg-type]
        c = canon_axis(int(ctx.op.p("concat_axis")), r, ctx, "concat_axis")  # type: ignore[arg-type]
        return s, c

    def split_of(self, ins: list[ValueType], ctx: Ctx) -> int:
        return canon_axis(int(ctx.op.p("split_axis")), len(ins[0].shape), ctx, "split_axis")  # type: ignore[arg-type]

    def check_params(self, ins: list[ValueType], ctx: Ctx) -> None:
        if len(ins[0].shape) == 0:
            raise ctx.fail(ErrorKind.COLLECTIVE_PARAM, f"{self.kind} of a scalar", "split_axis")
        # jax checks the split dimension's size in all_to_all's Python wrapper
        # (parallel.py _all_to_all_is_async), before the primitive's abstract evaluation
        # checks concat_axis: of a split and a concat defect in one op, the split's is raised
        s = self.split_of(ins, ctx)
        n, size = self.n(ctx), ins[0].shape[s]
        ok = size % n == 0 if self.tiled(ctx) else size == n
        if not ok:
            rule = "divisible by" if self.tiled(ctx) else "equal to"
            raise ctx.fail(
                ErrorKind.COLLECTIVE_SHAPE,
                f"{self.kind}: split dimension {s} has size {size}, which must be {rule} the group size {n}",
                str(size),
                str(n),
            )
        self.axes_of(ins, ctx)  # concat_axis in range

    def tiled(self, ctx: Ctx) -> bool:
        return bool(ctx.op.p("tiled"))

    def shape(self, ins: list[ValueType], ctx: Ctx) -> tuple[int, ...]:
        s, c = self.axes_of(ins, ctx)
        n = self.n(ctx)
        out = list(ins[0].shape)
        if self.tiled(ctx):
            out[s] //= n
            out[c] *= n
        else:
            del out[s]
            out.insert(c, n)
        return tuple(out)

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        t = self.grouped(xs[0], ctx)  # (j, rest..., local...)
        lo, n = self.lo(ctx), t.shape[0]
        s, c = self.axes_of(ins, ctx)
        sh = t.shape
        t = t.reshape(sh[: lo + s] + (n, sh[lo + s] // n) + sh[lo + s + 1 :])
        t = np.moveaxis(t, lo + s, 0)  # (k, j, rest..., local with split -> size/n)
        if not self.tiled(ctx):
            t = t.reshape(t.shape[: lo + 1 + s] + t.shape[lo + 2 + s :])  # drop size-1 split
            return self.ungrouped(np.moveaxis(t, 1, lo + c), ctx)
        t = np.moveaxis(t, 1, lo + c)  # j right before local concat dim
        sh = t.shape
        t = t.reshape(sh[: lo + c] + (sh[lo + c] * sh[lo + c + 1],) + sh[lo + c + 2 :])
        return self.ungrouped(t, ctx)


class Pswapaxes(AllToAll):
    """pswapaxes(x, axis_name, axis) = all_to_all(x, axis_name, axis, axis) untiled."""

    kind = "pswapaxes"

    def axes_of(self, ins: list[ValueType], ctx: Ctx) -> tuple[int, int]:
        a = self.split_of(ins, ctx)
        return a, a

    def split_of(self, ins: list[ValueType], ctx: Ctx) -> int:
        return canon_axis(int(ctx.op.p("axis")), len(ins[0].shape), ctx, "axis")  # type: ignore[arg-type]

    def tiled(self, ctx: Ctx) -> bool:
        return False


class Ppermute(Collective):
    """ppermute: out[dst] = x[src] for each (src, dst) pair; devices that are no pair's
    destination get zeros. Sources and destinations must each be unique."""

    kind = "ppermute"

    def pairs(self, ctx: Ctx) -> list[tuple[int, int]]:
        return [(int(s), int(d)) for s, d in cast("tuple[tuple[int, int], ...]", ctx.op.p("perm"))]

    def check_params(self, ins: list[ValueType], ctx: Ctx) -> None:
        n = self.n(ctx)
        pairs = self.pairs(ctx)
        srcs = [s for s, _ in pairs]
        dsts = [d for _, d in pairs]
        if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
            raise ctx.fail(ErrorKind.COLLECTIVE_PARAM, f"{self.kind}: perm={pairs} repeats a source or destination", "perm")
        if any(not 0 <= i < n for i in srcs + dsts):
            raise ctx.fail(ErrorKind.COLLECTIVE_PARAM, f"{self.kind}: perm={pairs} has an index outside 0..{n - 1}", "perm")

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        t = self.grouped(xs[0], ctx)
        out = np.zeros_like(t)
        for s, d in self.pairs(ctx):
            out[d] = t[s]
        return self.ungrouped(out, ctx)


class Pshuffle(Ppermute):
    """pshuffle(x, axis, perm) = ppermute with pairs (perm[i], i): out[i] = x[perm[i]]."""

    kind = "pshuffle"

    def pairs(self, ctx: Ctx) -> list[tuple[int, int]]:
        return [(int(s), i) for i, s in enumerate(cast("tuple[int, ...]", ctx.op.p("perm")))]

    def check_params(self, ins: list[ValueType], ctx: Ctx) -> None:
        perm = list(cast("tuple[int, ...]", ctx.op.p("perm")))
        if sorted(perm) != list(range(len(perm))):
            raise ctx.fail(ErrorKind.COLLECTIVE_PARAM, f"pshuffle: perm={perm} is not a permutation", "perm")
        super().check_params(ins, ctx)


class Sendrecv(Ppermute):
    """psend then precv over the same axes and perm (programs/ops.py "sendrecv"): the
    precv docstring (jax 0.10.2 parallel.py) gives ppermute's meaning, "for each index of
    the axis that does not correspond to a destination index in perm, the corresponding
    values in the result are filled with zeros". So it is typed like ppermute: the
    received block varies over the named axes (each device receives another's block) and
    over whatever the operand varied along.

    jax 0.10.2 types the result from `out_shape` alone (`_precv_abstract_eval` returns a
    ShapedArray with no vma): invariant, even over the axes it was received along: a jax
    bug the known entry `precv-result-typed-invariant` names."""

    kind = "sendrecv"


class Pbroadcast(Collective):
    """pbroadcast(x, axis_name, source): every device of a group gets the block of the
    device whose index in that group is `source` (parallel.py docstring, jax 0.10.2:
    "equivalent to psum(where(axis_index(axis_name) == source, x, 0), axis_name)").

    Types: jax types the result like the operand (`_raise_to_shaped_abstract_eval`, the
    ppermute rule), so it stays varying over the named axes; as for every collective but
    psum/pmean, an operand that does not vary over them is first made to (auto pcast;
    docs/notebooks/shard_map.md), though jax 0.10.2's pbroadcast inserts no pvary and
    raises instead ("must be applied to a device-varying type"). `source` must be a
    group index, 0..n-1 (jax 0.10.2 checks it only in its batching rule)."""

    kind = "pbroadcast"

    def check_params(self, ins: list[ValueType], ctx: Ctx) -> None:
        source, n = ctx.op.p("source"), self.n(ctx)
        if not isinstance(source, int) or isinstance(source, bool) or not 0 <= source < n:
            raise ctx.fail(ErrorKind.COLLECTIVE_PARAM, f"pbroadcast: source={source!r} is out of range 0..{n - 1}", "source")

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        t = self.grouped(xs[0], ctx)
        return self.ungrouped(np.broadcast_to(t[int(ctx.op.p("source"))][None], t.shape).copy(), ctx)  # type: ignore[arg-type]
