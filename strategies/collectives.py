"""Draws of the named-axis collectives: each gets the operand and the axes
`Body.try_op` drew, chooses the op's parameters where they are valid (and records an
event), and leaves the result's type to the oracle (`Body.push`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from hypothesis import event
from hypothesis import strategies as st

from programs.model import DTYPES, Op, ParamValue
from programs.ops import PLAIN_COLLECTIVES
from strategies import reuse
from strategies.draws import table_draws

if TYPE_CHECKING:
    from strategies.body import Body

CollectiveDraw = Callable[["Body", st.DrawFn, int, tuple[str, ...]], bool]


def _group_partition(draw: st.DrawFn, n: int) -> tuple[tuple[int, ...], ...]:
    sizes = [d for d in range(1, n + 1) if n % d == 0]
    size = draw(reuse.sampled_from(sizes), label="group_size")
    order = draw(reuse.permutations(list(range(n))), label="group_order")
    return tuple(tuple(sorted(order[i : i + size])) for i in range(0, n, size))


def _reduction(b: Body, draw: st.DrawFn, idx: int, axes: tuple[str, ...], kind: str) -> bool:
    """psum / pmean (axis_index_groups only with check_vma=False: jax 0.10.2 does not
    implement them otherwise) and pmax / pmin (groups either way)."""
    groups = None
    if (kind in ("pmax", "pmin") or not b.check_vma) and draw(st.integers(0, 3), label="use_groups") == 0:
        groups = _group_partition(draw, b.n(axes))
        event(f"{kind}: axis_index_groups")
    params: dict[str, ParamValue] = {"axes": axes} if groups is None else {"axes": axes, "groups": groups}
    return b.push(Op.make(kind, (idx,), **params)) is not None


def _all_gather(b: Body, draw: st.DrawFn, idx: int, axes: tuple[str, ...]) -> bool:
    r = len(b.vals[idx].shape)
    tiled = r > 0 and b.tiled(draw)
    hi = r if tiled else r + 1
    axis = draw(reuse.sampled_from(b.steer("axis", list(range(-hi, hi)), r)), label="axis")
    to = draw(reuse.sampled_from([None, None, "varying", "invarying"]), label="to")
    event(f"all_gather: tiled={tiled} to={to}")
    return b.push(Op.make("all_gather", (idx,), axes=axes, axis=axis, tiled=tiled, to=to)) is not None


def _psum_scatter(b: Body, draw: st.DrawFn, idx: int, axes: tuple[str, ...]) -> bool:
    x = b.vals[idx]
    fit = b.fitting_dims(draw, x, b.n(axes), "scatter_dimension")
    if fit is None:
        return False
    tiled, d = fit
    neg = b.want.get("scatter_dimension")
    if neg == "negative" or (neg is None and draw(st.integers(0, 3), label="negative_dim") == 0):
        d -= len(x.shape)  # jax #20125: negative scatter_dimension
    event(f"psum_scatter: tiled={tiled}")
    return b.push(Op.make("psum_scatter", (idx,), axes=axes, scatter_dimension=d, tiled=tiled)) is not None


def _all_to_all(b: Body, draw: st.DrawFn, idx: int, axes: tuple[str, ...]) -> bool:
    x = b.vals[idx]
    r = len(x.shape)
    fit = b.fitting_dims(draw, x, b.n(axes), "split_axis")
    if fit is None:
        return False
    tiled, sd = fit
    cds = list(range(r))
    if "split" in b.want:  # (all_to_all|split!=concat, split==concat)
        cds = [c for c in cds if (c == sd) == (b.want["split"] == "==")] or cds
    cd = draw(reuse.sampled_from(b.steer("concat_axis", cds, r)), label="concat_axis")
    sc, cc = b.want.get("split_axis"), b.want.get("concat_axis")
    if sc == "negative" or cc == "negative":
        neg = 0 if sc == "negative" else 1
    elif sc is not None or cc is not None:
        neg = 5  # (the classes wanted are not negative)
    else:
        neg = draw(st.integers(0, 5), label="negative_axes")  # jax #19720: negative axes
    sd_p, cd_p = (sd - r if neg == 0 else sd), (cd - r if neg == 1 else cd)
    event(f"all_to_all: tiled={tiled}")
    return b.push(Op.make("all_to_all", (idx,), axes=axes, split_axis=sd_p, concat_axis=cd_p, tiled=tiled)) is not None


def _pswapaxes(b: Body, draw: st.DrawFn, idx: int, axes: tuple[str, ...]) -> bool:
    x, n = b.vals[idx], b.n(axes)
    dims = [d for d in range(len(x.shape)) if x.shape[d] == n]
    if not dims:
        return False
    d = draw(reuse.sampled_from(b.steer("axis", dims, len(x.shape))), label="axis")
    neg = b.want.get("axis")
    if neg == "negative" or (neg is None and "arg_forms" in b.features and draw(st.integers(0, 3), label="negative_dim") == 0):
        d -= len(x.shape)  # (a negative dimension number, as all_gather's and psum_scatter's are drawn)
        event("pswapaxes: negative axis")
    return b.push(Op.make("pswapaxes", (idx,), axes=axes, axis=d)) is not None


def _shifted(draw: st.DrawFn, n: int, cls: str | None) -> tuple[int, ...] | None:
    """Each of `n` members' destination for the perm class `cls` a focus wants
    (`Body.want`) where it is a shift (identity; cyclic, by one either way), else None."""
    if cls not in ("cyclic", "identity") or n < 2:
        return None
    shift = 0 if cls == "identity" else draw(reuse.sampled_from([1, n - 1]), label="perm_shift")
    return tuple((i + shift) % n for i in range(n))


def _ppermute(b: Body, draw: st.DrawFn, idx: int, axes: tuple[str, ...]) -> bool:
    n = b.n(axes)
    cls = b.want.get("perm")
    shifted = _shifted(draw, n, cls)
    if shifted is not None:
        event(f"ppermute: {cls}")
        return b.push(Op.make("ppermute", (idx,), axes=axes, perm=tuple(enumerate(shifted)))) is not None
    srcs = draw(reuse.permutations(list(range(n))), label="sources")
    k = n if cls == "full" else draw(st.integers(1, n - 1 if cls == "partial" and n > 1 else n), label="n_pairs")
    dsts = draw(reuse.permutations(list(range(n))), label="destinations")
    perm = tuple(sorted(zip(srcs[:k], dsts[:k])))
    event("ppermute: partial" if k < n else "ppermute: full")
    return b.push(Op.make("ppermute", (idx,), axes=axes, perm=perm)) is not None


def _pshuffle(b: Body, draw: st.DrawFn, idx: int, axes: tuple[str, ...]) -> bool:
    n = b.n(axes)
    perm = _shifted(draw, n, b.want.get("perm")) or tuple(draw(reuse.permutations(list(range(n))), label="perm"))
    return b.push(Op.make("pshuffle", (idx,), axes=axes, perm=perm)) is not None


def _axis_index(b: Body, draw: st.DrawFn, idx: int, axes: tuple[str, ...]) -> bool:
    i = b.push(Op.make("axis_index", (), axes=axes))
    # (never into a weak int64 under jax_enable_x64: jax keeps the int32; see Body.weak)
    if i is not None and not b.mixes_weak(idx, i) and draw(st.booleans(), label="combine_index"):
        b.push(Op.make("add", (idx, i)))  # use it: add it to a value (a scalar broadcasts)
    return i is not None


def _pcast(b: Body, draw: st.DrawFn, idx: int, axes: tuple[str, ...]) -> bool:
    # the public pvary: only over axes the operand does not vary along yet
    free = tuple(a for a in axes if a not in b.vals[idx].vma)
    return bool(free) and b.push(Op.make("pcast", (idx,), axes=free, to="varying")) is not None


def _ragged_all_to_all(b: Body, draw: st.DrawFn, idx: int, axes: tuple[str, ...]) -> bool:
    """Every sender j sends its first row to each peer, written at row j there:
    input_offsets 0, sizes 1, output_offsets = the sender's index."""
    x = b.vals[idx]
    if len(x.shape) == 0 or x.shape[0] < 1 or x.dtype not in DTYPES:
        return False  # (a result-only dtype, int16 or int64, is no const's dtype: no output buffer)
    # drawn a quarter as often as other ops: XLA:CPU cannot run it, so a program
    # holding one is checked only in the abstract and lowering modes there
    if draw(st.integers(0, 3), label="ragged_rarely") != 0:
        return False
    n = b.n(axes)
    zeros = b.push(Op.make("const", (), shape=(n,), dtype="int32", value=0))
    ones = b.push(Op.make("const", (), shape=(n,), dtype="int32", value=1))
    me = b.push(Op.make("axis_index", (), axes=axes))
    assert zeros is not None and ones is not None and me is not None
    out_off = b.push(Op.make("add", (zeros, me)))
    out = b.push(Op.make("const", (), shape=(n,) + x.shape[1:], dtype=x.dtype, value=0))
    assert out_off is not None and out is not None
    return b.push(Op.make("ragged_all_to_all", (idx, out, zeros, ones, out_off, ones), axes=axes)) is not None


def _axis_size(b: Body, draw: st.DrawFn, idx: int, axes: tuple[str, ...]) -> bool:
    i = b.push(Op.make("axis_size", (), axes=axes))
    # a Python int is weakly typed (see Body.weak): not combined with a narrower integer
    if i is not None and not b.mixes_weak(idx, i) and draw(st.booleans(), label="combine_size"):
        b.push(Op.make(draw(reuse.sampled_from(["add", "mul"]), label="size_binop"), (idx, i)))  # use it
    return i is not None


def _pbroadcast(b: Body, draw: st.DrawFn, idx: int, axes: tuple[str, ...]) -> bool:
    if b.check_vma:
        # jax 0.10.2's pbroadcast inserts no pvary (it rejects an operand that does not
        # vary over every named axis; see oracles/ops/movement.py Pbroadcast), so it is
        # drawn over the named axes the operand varies along
        axes = tuple(a for a in axes if a in b.vals[idx].vma)
        if not axes:
            return False
    # half as often as other ops: XLA:CPU cannot lower it, so a program holding one
    # is checked only in the abstract mode there
    if draw(st.integers(0, 1), label="pbroadcast_rarely") != 0:
        return False
    source = draw(st.integers(0, b.n(axes) - 1), label="source")
    return b.push(Op.make("pbroadcast", (idx,), axes=axes, source=source)) is not None


def _sendrecv(b: Body, draw: st.DrawFn, idx: int, axes: tuple[str, ...]) -> bool:
    """psend then precv (programs/ops.py "sendrecv") with a ppermute's perm. Half as
    often as other ops: XLA:CPU cannot lower it, so a program holding one is checked only
    in the abstract mode there."""
    if idx in b.python_numbers:  # (precv's out_shape is jax.ShapeDtypeStruct(x.shape, x.dtype): no Python int)
        return False
    if draw(st.integers(0, 1), label="sendrecv_rarely") != 0:
        return False
    n = b.n(axes)
    shift = draw(st.integers(0, max(0, n - 1)), label="sendrecv_shift")
    k = draw(st.integers(1, n), label="sendrecv_pairs")
    perm = tuple((i, (i + shift) % n) for i in range(k))
    event("psend/precv: partial" if k < n else "psend/precv: full")
    return b.push(Op.make("sendrecv", (idx,), axes=axes, perm=perm)) is not None


# every plain collective of the op table: kind K's draw is `_K` (a reduction's: `_reduction`)
COLLECTIVE_DRAWS: dict[str, CollectiveDraw] = table_draws(PLAIN_COLLECTIVES, globals(), "strategies/collectives.py")
