"""The draw of a nested shard_map (an op of kind "shard_map") in a partial-manual body."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hypothesis import event
from hypothesis import strategies as st

from programs.model import Op
from programs.ops import NESTED_INNER
from strategies import reuse

if TYPE_CHECKING:
    from strategies.body import Body


# the inner ops of a nested shard_map whose in_specs are left out: its operand is
# replicated over the inner axes (oracles/ops/device.py NestedShardMap), and each of these
# keeps the result so (out_specs P(), the result's sharding type unchanged)
INFERRED_INNER = ("psum", "pmax", "pmin", "neg")


def draw_nested(body: Body, draw: st.DrawFn, idx: int) -> bool:
    """A nested shard_map over automatic axes of a partial-manual body (see
    programs/ops.py): its in_spec puts each inner axis on a dimension it divides, one
    inner op (NESTED_INNER) runs over all the inner axes, and its out_spec names every
    inner axis the inner result may vary over. Over Explicit axes the outer call leaves
    free, in_specs are left out (jax infers them from the operand's type: replicated
    there) and the out_spec is P() (`draw_inferred`); where the focus wants it
    (`Body.want` in_spec=inferred) too."""
    mesh = body.mesh
    free = [a for a in mesh.names if a not in body.manual and mesh.axis_size(a) > 1]
    if any(mesh.axis_type(a) == "explicit" for a in free) or body.want.get("in_spec") == "inferred":
        return draw_inferred(body, draw, idx)
    x = body.vals[idx]
    r = len(x.shape)
    auto = free
    if not auto or r == 0:
        return False
    k = draw(st.integers(1, len(auto)), label="n_inner_axes")
    inner_axes = tuple(sorted(draw(reuse.permutations(auto), label="inner_axes")[:k], key=mesh.names.index))
    entries: list[tuple[str, ...] | None] = [None] * r
    for a in inner_axes:
        dims = [d for d in range(r) if entries[d] is None and x.shape[d] % mesh.axis_size(a) == 0]
        if not dims:
            return False
        entries[draw(reuse.sampled_from(dims), label="inner_dim")] = (a,)
    inner = draw(reuse.sampled_from(NESTED_INNER), label="inner_kind")
    params: dict[str, object] = {"axes": inner_axes} if inner != "neg" else {}
    out: tuple[tuple[str, ...] | None, ...] = tuple(entries)
    if inner in ("psum", "pmax", "pmin") and draw(st.booleans(), label="inner_out_replicated"):
        out = ()  # the reduction is the same on every inner device: a replicated out_spec
    if inner == "all_gather":
        ax = draw(st.integers(0, r - 1), label="inner_gather_axis")
        params.update(axis=ax, tiled=True)
    if inner == "ppermute":
        n = mesh.group_size(inner_axes)
        shift = draw(st.integers(1, max(1, n - 1)), label="inner_shift")
        params["perm"] = tuple((i, (i + shift) % n) for i in range(n))
    op = Op.make(
        "shard_map", (idx,), inner_axes=inner_axes, in_spec=tuple(entries), out_spec=out, inner=inner,
        inner_params=tuple(sorted(Op.make(inner, (0,), **params).params)), check_vma=body.check_vma,  # type: ignore[arg-type]
    )
    if body.push(op) is None:
        return False
    event(f"nested shard_map: {inner}")
    return True


def draw_inferred(body: Body, draw: st.DrawFn, idx: int) -> bool:
    """A nested shard_map whose in_specs are left out, over Explicit axes the outer call
    leaves free (jax infers in_specs only there; axis_names a subset of them), its inner
    op one of INFERRED_INNER over all of them, out_specs P()."""
    mesh = body.mesh
    explicit = [a for a in mesh.names if a not in body.manual and mesh.axis_size(a) > 1 and mesh.axis_type(a) == "explicit"]
    if not explicit:
        return False
    k = draw(st.integers(1, len(explicit)), label="n_inner_axes")
    inner_axes = tuple(sorted(draw(reuse.permutations(explicit), label="inner_axes")[:k], key=mesh.names.index))
    inner = draw(reuse.sampled_from(INFERRED_INNER), label="inner_kind")
    params: dict[str, object] = {"axes": inner_axes} if inner != "neg" else {}
    op = Op.make("shard_map", (idx,), inner_axes=inner_axes, out_spec=(), inner=inner,
                 inner_params=tuple(sorted(Op.make(inner, (0,), **params).params)), check_vma=body.check_vma)  # type: ignore[arg-type]
    if body.push(op) is None:
        return False
    event(f"nested shard_map: in_specs inferred, {inner}")
    return True
