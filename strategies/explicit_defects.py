"""The defects of explicit-mesh and reduced / unreduced programs (strategies/invalid.py
DEFECTS): each breaks exactly one rule the oracle checks (`oracles/explicit.py`)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from hypothesis import strategies as st

from programs.model import Mesh, Place, Program, Spec
from strategies import reuse

if TYPE_CHECKING:
    from strategies.invalid import ValueView


def strict_explicit(p: Program) -> bool:
    """Every axis manual and Explicit: shard_map checks each argument's sharding."""
    return set(p.manual_axes) == set(p.mesh.names) and len(p.explicit_axes) == len(p.mesh.names)


def missing_reshard(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    """Every axis manual and Explicit, an in_spec that splits, and the argument not
    resharded: jax must reject the in_spec (it is not the argument's sharding)."""
    if not (p.reshard and strict_explicit(p) and any(s.kind == "P" and s.axes() for s in p.in_specs)):
        return None
    return replace(p, reshard=False)


def out_spec_drops_reduced(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    """An out_spec without the reduced axes of its output (check_vma): jax must refuse
    it as an out_spec that needs replication it cannot infer (measured on 0.10.2: the
    replication check comes first and names the reduced axis)."""
    ks = [k for k, s in enumerate(p.out_specs) if s.reduced and not s.unreduced]
    if not ks or not p.check_vma:
        return None
    k = draw(reuse.sampled_from(ks), label="defect_output")
    s = p.out_specs[k]
    specs = p.out_specs[:k] + (Spec(s.entries, s.kind),) + p.out_specs[k + 1 :]
    return replace(p, out_specs=specs)


def unreduced_spec_auto_axis(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    """An out_spec unreduced / reduced over an axis made Auto (jax allows only Explicit)."""
    named = sorted({a for s in p.out_specs for a in s.unreduced + s.reduced})
    if not named:
        return None
    a = draw(reuse.sampled_from(named), label="defect_axis")
    types = tuple("auto" if n == a else t for n, t in zip(p.mesh.names, p.mesh.axis_types))
    if "explicit" not in types and p.reshard:
        return None  # (no Explicit axis left, so no mesh context: reshard would fail too, a second defect)
    return replace(p, mesh=Mesh(p.mesh.names, p.mesh.sizes, types))


def explicit_axes_in_sharding(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    """explicit_axes around the call making every axis Explicit (every axis manual), an
    argument its in_sharding leaves unsharded where its in_spec splits it: shard_map
    must reject the in_spec (not the argument's sharding, as `missing_reshard`)."""
    if p.wrap != "explicit_axes" or p.reshard or not strict_explicit(p):
        return None
    ks = [i for i, s in enumerate(p.in_specs) if s.kind == "P" and s.axes()]
    if not ks:
        return None
    i = draw(reuse.sampled_from(ks), label="defect_input")
    return replace(p, wrap_specs=p.wrap_specs[:i] + (Spec(()),) + p.wrap_specs[i + 1 :])


def placement_mismatch(draw: st.DrawFn, p: Program, vals: list[ValueView]) -> Program | None:
    """Every axis manual and Explicit, not resharded: one argument committed (jax.device_put
    before the call) to a sharding other than its in_spec (the others to theirs): jax must
    reject the in_spec (oracles/explicit.py `check_arg_shardings`: the argument's sharding
    is part of its type)."""
    if not strict_explicit(p) or p.wrap is not None or any(x.closure is not None for x in p.inputs):
        return None
    ks = [i for i, (x, s) in enumerate(zip(p.inputs, p.in_specs)) if s.kind == "P" and x.shape and x.place is None]
    if not ks:
        return None
    i = draw(reuse.sampled_from(ks), label="defect_input")
    x, s = p.inputs[i], p.in_specs[i]
    rank = len(x.shape)
    mine = tuple(s.entries) + (None,) * (rank - len(s.entries))
    # another sharding: the in_spec's axes on the next dimension, or one axis on a dimension it divides
    others = []
    if s.axes() and rank > 1:
        others.append(Spec(mine[-1:] + mine[:-1]))
    for d in range(rank):
        for a in p.mesh.names:
            if a not in s.axes() and x.shape[d] % p.mesh.axis_size(a) == 0:
                others.append(Spec((None,) * d + ((a,),)))
    if s.axes():
        others.append(Spec(()))
    others = [o for o in others if tuple(o.entries) + (None,) * (rank - len(o.entries)) != mine
              and all(not e or x.shape[d] % p.mesh.group_size(e) == 0 for d, e in enumerate(o.entries))]
    if not others:
        return None
    spec = draw(reuse.sampled_from(others), label="defect_placement")
    inputs = tuple(replace(y, place=Place("committed", spec if j == i else Spec(t.entries)))
                   if t.kind == "P" and y.place is None and (j == i or t.axes()) else y
                   for j, (y, t) in enumerate(zip(p.inputs, p.in_specs)))
    return replace(p, inputs=inputs, reshard=False)


# the defects a program with auto_axes / explicit_axes around its call may take (others
# change the outputs or arguments the wrapper's specs are for)
WRAP_DEFECTS = ("explicit_axes_in_sharding",)

EXPLICIT_DEFECTS = {
    "explicit_axes_in_sharding": explicit_axes_in_sharding,
    "missing_reshard": missing_reshard,
    "placement_mismatch": placement_mismatch,
    "out_spec_drops_reduced": out_spec_drops_reduced,
    "unreduced_spec_auto_axis": unreduced_spec_auto_axis,
}
