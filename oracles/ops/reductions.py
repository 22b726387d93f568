"""The reductions over named axes: psum, pmean, pmax, pmin (optionally over
axis_index_groups) and psum_scatter (jax 0.10.2 `jax/_src/lax/parallel.py`)."""

from __future__ import annotations

from typing import ClassVar, cast

import numpy as np

from oracles.ops.base import Collective, Ctx, ErrorTerms, all_or_none, canon_axis, state_of, vma_of
from oracles.prediction import ErrorKind, ValueType
from programs.model import is_float


class Reduction(Collective):
    """psum / pmax / pmin: every device of a group gets the reduction over its group.

    `groups` (axis_index_groups) partitions the group index into subgroups that reduce
    separately (parallel.py: "Groups must cover all axis indices exactly once").
    """

    reducer: ClassVar[str]

    def check_params(self, ins: list[ValueType], ctx: Ctx) -> None:
        groups = cast("tuple[tuple[int, ...], ...] | None", ctx.op.p("groups"))
        if groups is not None:
            flat = sorted(i for g in groups for i in g)
            if flat != list(range(self.n(ctx))):
                raise ctx.fail(
                    ErrorKind.COLLECTIVE_PARAM,
                    f"{self.kind}: axis_index_groups={groups} must cover 0..{self.n(ctx) - 1} exactly once",
                    "axis_index_groups",
                )

    def vma(self, ins: list[ValueType], ctx: Ctx) -> frozenset[str]:
        groups = ctx.op.p("groups")
        axes = frozenset(self.axes(ctx))
        if groups is not None and len(groups) > 1 and vma_of(ins) & axes:  # type: ignore[arg-type]
            # Each group gets its own answer from values that differ along the axes: the
            # result still differs along them. (jax 0.8-0.12 drop the axes anyway; see
            # known_divergences.toml.) An operand invariant over the axes gives every group
            # the same answer (pmax/pmin of equal values; psum with groups is refused under
            # check_vma), so the result stays invariant, as without groups.
            return vma_of(ins) | axes
        return vma_of(ins) - axes

    def group_n(self, ctx: Ctx) -> int:
        """How many devices one reduction combines (a subgroup's size with groups)."""
        groups = ctx.op.p("groups")
        return len(groups[0]) if groups is not None else self.n(ctx)  # type: ignore[index, arg-type]

    def error(self, xs: list[np.ndarray], errs: list[np.ndarray], v: np.ndarray, ins: list[ValueType], ctx: Ctx) -> ErrorTerms:
        """psum: the errors add, and a sum of n terms rounds n times (n - 1 partial sums
        in any order, then once into the dtype from a wider accumulator) by at most the
        sum of |terms|. pmax/pmin round nothing and are 1-Lipschitz: the largest error."""
        g = self.grouped(errs[0], ctx)
        if self.reducer != "sum":
            return self.ungrouped(self.reduce(g, ctx, "max"), ctx), 0.0, 1
        mag = self.ungrouped(self.reduce(self.grouped(np.abs(xs[0].astype(np.float64)), ctx) + g, ctx), ctx)
        return self.ungrouped(self.reduce(g, ctx), ctx), mag, self.group_n(ctx)

    def reduce(self, t: np.ndarray, ctx: Ctx, reducer: str = "") -> np.ndarray:
        groups = cast("tuple[tuple[int, ...], ...] | None", ctx.op.p("groups"))
        reducer = reducer or self.reducer
        fn = getattr(np, reducer)
        if groups is None:
            r = fn(t, axis=0, keepdims=True, dtype=t.dtype) if reducer == "sum" else fn(t, axis=0, keepdims=True)
            return np.broadcast_to(r, t.shape)
        out = np.empty_like(t)
        for g in groups:
            idx = list(g)
            sub = t[idx]
            r = fn(sub, axis=0, keepdims=True, dtype=t.dtype) if reducer == "sum" else fn(sub, axis=0, keepdims=True)
            out[idx] = r
        return out

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        return self.ungrouped(self.reduce(self.grouped(xs[0], ctx), ctx), ctx)


class Psum(Reduction):
    """psum: sum over the group. With check_vma, the operand must vary over all or none
    of the named axes (`_get_from` in parallel.py); invariant operands are pvary'd first
    and so multiplied by the group size. axis_index_groups with check_vma=True raises
    NotImplementedError in jax 0.10.2 (`bind_psum_invariant`)."""

    kind, reducer = "psum", "sum"

    def dtype(self, ins: list[ValueType], ctx: Ctx) -> str:
        # psum of bool sums it as int32 (parallel.py psum: "bool -> int32"; measured);
        # over no axes psum returns its operand as it is (`_psum_is_async`: `if not axes:
        # return x`), a bool one included
        return "int32" if ins[0].dtype == "bool" and (self.kind != "psum" or self.axes(ctx)) else ins[0].dtype

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        if self.kind == "psum" and not self.axes(ctx):
            return xs[0]  # (no axes: the operand itself, as dtype says)
        x = xs[0].astype(np.int32) if ins[0].dtype == "bool" else xs[0]
        return super().value([x], ins, ctx)

    def check_params(self, ins: list[ValueType], ctx: Ctx) -> None:
        super().check_params(ins, ctx)
        if ctx.check_vma:
            all_or_none(ins[0], self.axes(ctx), ctx)
            if self.kind == "psum" and (ins[0].unreduced or ins[0].reduced):
                state_of(ins[0], self.axes(ctx), ctx)  # one state over every named axis
            if ctx.op.p("groups") is not None:
                raise ctx.fail(
                    ErrorKind.UNSUPPORTED,
                    f"{self.kind} with axis_index_groups is not implemented when check_vma=True",
                )


    def ur(self, ins: list[ValueType], ctx: Ctx) -> tuple[frozenset[str], frozenset[str]]:
        """psum of a value unreduced over the named axes is `unreduced_psum`
        (parallel.py, Unreduced -> Invariant): it sums the per-device parts, and the
        result is no longer unreduced over them (its vma is the operand's). Reduced
        operands have no rule here (not drawn)."""
        x, axes = ins[0], frozenset(self.axes(ctx))
        if x.reduced or (x.unreduced and self.kind != "psum"):
            return super().ur(ins, ctx)
        if x.unreduced and axes <= x.unreduced:
            return x.unreduced - axes, frozenset()
        return super().ur(ins, ctx)

    def vma(self, ins: list[ValueType], ctx: Ctx) -> frozenset[str]:
        if ins[0].unreduced and frozenset(self.axes(ctx)) <= ins[0].unreduced:
            return vma_of(ins)  # unreduced_psum keeps the operand's vma
        return super().vma(ins, ctx)


class Pmean(Psum):
    """pmean = psum(x) / group size, in the operand's float dtype; int32 operands give
    float32 (true division), and so does every integer narrower than 64 bits under
    jax_enable_x64, where int64 and uint64 give float64 (measured on jax 0.10.2)."""

    kind = "pmean"

    def dtype(self, ins: list[ValueType], ctx: Ctx) -> str:
        dt = ins[0].dtype
        return dt if is_float(dt) else "float64" if dt in ("int64", "uint64") else "float32"

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        # jax sums in the operand's dtype (int32 wraps), then divides in the float dtype
        return super().value(xs, ins, ctx).astype(np.float64) / self.group_n(ctx)

    def rounds_integers(self, ins: list[ValueType], ctx: Ctx) -> bool:
        """XLA's algebraic simplifier rewrites the division by the constant n as a
        multiplication by 1/n, rounded: an integer quotient is then not exact unless n is
        a power of two (measured on jax 0.10.2, XLA:CPU: pmean over 6 devices compiles to
        a multiply by 0.166666672, and jnp.square of a pmean of int8 sums 6 gives
        1.0000001: the squares fold into one multiply by (1/6)**2 = 0.0277777798)."""
        n = self.group_n(ctx)
        return n & (n - 1) != 0

    def error(self, xs: list[np.ndarray], errs: list[np.ndarray], v: np.ndarray, ins: list[ValueType], ctx: Ctx) -> ErrorTerms:
        """The sum's n - 1 roundings and the division's one, all divided by n: at most
        u * (sum of |terms|) together. An int32 sum is exact (it wraps); converting it
        to float32 and dividing round twice by at most |v|."""
        n = self.group_n(ctx)
        prop, mag, _ = super().error(xs, errs, v, ins, ctx)
        if not is_float(ins[0].dtype):
            return np.asarray(prop) / n, 2 * np.abs(v), 1
        return np.asarray(prop) / n, mag, 1


class Pmax(Reduction):
    kind, reducer = "pmax", "max"


class Pmin(Reduction):
    kind, reducer = "pmin", "min"


class PsumScatter(Collective):
    """psum_scatter: sum over the group, then device k keeps block k of dim
    `scatter_dimension` (untiled: that dim must equal the group size and is removed;
    tiled: it must be divisible by it and shrinks)."""

    kind = "psum_scatter"

    def dim(self, ins: list[ValueType], ctx: Ctx) -> int:
        return canon_axis(int(ctx.op.p("scatter_dimension")), len(ins[0].shape), ctx, "scatter_dimension")  # type: ignore[arg-type]

    def check_params(self, ins: list[ValueType], ctx: Ctx) -> None:
        if ctx.check_vma:
            all_or_none(ins[0], self.axes(ctx), ctx)
        if len(ins[0].shape) == 0:
            raise ctx.fail(ErrorKind.COLLECTIVE_PARAM, "psum_scatter of a scalar", "scatter_dimension")
        d, n = self.dim(ins, ctx), self.n(ctx)
        size = ins[0].shape[d]
        ok = size % n == 0 if ctx.op.p("tiled") else size == n
        if not ok:
            rule = "divisible by" if ctx.op.p("tiled") else "equal to"
            raise ctx.fail(
                ErrorKind.COLLECTIVE_SHAPE,
                f"psum_scatter: dimension {d} has size {size}, which must be {rule} the group size {n}",
                str(size),
                str(n),
            )
        if ins[0].dtype == "bool":
            # unlike psum, no conversion: its reduce-scatter adds bools, which lax.add
            # rejects while lowering (measured, 0.10.2; the shape check comes first, and
            # jax.eval_shape does not check the dtype: the strategy never draws it)
            raise ctx.fail(ErrorKind.DTYPE, "psum_scatter of a bool operand: add does not accept dtype bool", "bool")

    def shape(self, ins: list[ValueType], ctx: Ctx) -> tuple[int, ...]:
        s = list(ins[0].shape)
        d = self.dim(ins, ctx)
        if ctx.op.p("tiled"):
            s[d] //= self.n(ctx)
        else:
            del s[d]
        return tuple(s)

    def value(self, xs: list[np.ndarray], ins: list[ValueType], ctx: Ctx) -> np.ndarray:
        t = self.grouped(xs[0], ctx)
        lo, n = self.lo(ctx), t.shape[0]
        d = self.dim(ins, ctx)
        s = np.sum(t, axis=0, dtype=t.dtype)  # (rest..., local...), local starts at lo-1
        ld = lo - 1 + d
        sh = s.shape
        s = s.reshape(sh[:ld] + (n, sh[ld] // n) + sh[ld + 1 :])
        out = np.moveaxis(s, ld, 0)  # (n, rest..., local with d -> size/n)
        if not ctx.op.p("tiled"):
            out = out.reshape(out.shape[: lo + d] + out.shape[lo + d + 1 :])
        return self.ungrouped(out, ctx)

    def error(self, xs: list[np.ndarray], errs: list[np.ndarray], v: np.ndarray, ins: list[ValueType], ctx: Ctx) -> ErrorTerms:
        """A psum, then a block of it kept: n roundings of at most the sum of |terms|."""
        mag = self.value([np.abs(xs[0].astype(np.float64)) + errs[0]], ins, ctx)
        return self.value(errs, ins, ctx), mag, self.n(ctx)
