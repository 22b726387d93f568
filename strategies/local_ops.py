"""Draws of the local ops (const, the binary ops, neg, cast, reduce_sum, transpose):
each chooses the operand's partner and parameters; the type comes from the oracle
(`Body.push`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from hypothesis import event
from hypothesis import strategies as st

from programs.model import DTYPES, Op
from programs.ops import BINARY_OPS, LOCAL_OPS, OP_KINDS
from strategies import reuse
from strategies.draws import table_draws

if TYPE_CHECKING:
    from strategies.body import Body

Draw = Callable[["Body", st.DrawFn, int], bool]


def _binary(b: Body, draw: st.DrawFn, idx: int, kind: str) -> bool:
    x = b.vals[idx]
    same = [j for j, v in enumerate(b.vals) if (v.shape == x.shape or v.shape == ()) and not b.mixes_weak(idx, j)]
    if b.want.get("dtype") == x.dtype:
        # (a focus on the op's dtype: a partner of another dtype promotes the result out of
        # it, and the focus would never hold its cell)
        same = [j for j in same if b.vals[j].dtype == x.dtype] or same
    j = draw(reuse.sampled_from(same), label="rhs")
    if x.dtype != b.vals[j].dtype:
        event("binary: mixed dtypes")
    return b.push(Op.make(kind, (idx, j))) is not None


def _const(b: Body, draw: st.DrawFn, idx: int) -> bool:
    x = b.vals[idx]
    if x.dtype not in DTYPES:
        return False  # a result-only dtype (int16; int64 under jax_enable_x64) is no const's dtype
    shape = draw(reuse.sampled_from([(), x.shape]), label="const_shape")
    value = draw(st.integers(-3, 3), label="const_value")
    c = b.push(Op.make("const", (), shape=shape, dtype=x.dtype, value=value))
    op = draw(reuse.sampled_from(BINARY_OPS), label="const_binop")
    return c is not None and b.push(Op.make(op, (idx, c))) is not None


def _cast(b: Body, draw: st.DrawFn, idx: int) -> bool:
    if idx in b.python_numbers:
        return False  # a Python int has no .astype
    src = b.vals[idx].dtype
    to = draw(reuse.sampled_from([d for d in b.dtypes if d != src]), label="cast_to")
    event(f"cast: {src} -> {to}")
    return b.push(Op.make("cast", (idx,), dtype=to)) is not None


def _reduce_sum(b: Body, draw: st.DrawFn, idx: int) -> bool:
    r = len(b.vals[idx].shape)
    if r == 0:
        return False
    a = draw(st.integers(-r, r - 1), label="axis")
    return b.push(Op.make("reduce_sum", (idx,), axis=a)) is not None


def _transpose(b: Body, draw: st.DrawFn, idx: int) -> bool:
    r = len(b.vals[idx].shape)
    if r < 2:
        return False
    perm = tuple(draw(reuse.permutations(list(range(r))), label="perm"))
    if "arg_forms" in b.features and draw(st.integers(0, 3), label="negative_perm") == 0:
        # (numpy.transpose's negative axes, which jnp.transpose takes: oracles/ops/local.py Transpose)
        perm = tuple(a - r if draw(st.booleans(), label="negative_perm_axis") else a for a in perm)
        event("transpose: negative axes")
    return b.push(Op.make("transpose", (idx,), perm=perm)) is not None


def _neg(b: Body, draw: st.DrawFn, idx: int) -> bool:
    return b.push(Op.make("neg", (idx,))) is not None


# every local op of the op table: kind K's draw is `_K` (a binary op's: `_binary`)
LOCAL_DRAWS: dict[str, Draw] = table_draws((k for k in OP_KINDS if k in LOCAL_OPS), globals(), "strategies/local_ops.py")
