"""The semantics of every op: check, shape rule, varying-axes rule and NumPy value rule.

Each op is one class; its rules sit side by side, in modules by family (`local`,
`reductions`, `movement`, `device`, `transform`; `base` holds `Ctx`, `OpDef`,
`Collective`). `OPS` maps every op kind of the op table (`programs.ops.OP_KINDS`) to its
class's instance: `registry` finds, in those modules, the class that names each kind as
its own `kind`, and fails at import on a kind with no class, two classes of one kind, or
a class of a kind the table lacks. The strategy asks the same rules
(`strategies/programs.py`), so construction and prediction cannot disagree. Values are device-vectorised
arrays (see `oracles/devices.py`): leading dims are the mesh, trailing dims the block one
device holds.

Sources, for jax 0.10.2:
- collectives: `jax/_src/lax/parallel.py` docstrings (psum, pmean, pmax, pmin, all_gather,
  psum_scatter, all_to_all, ppermute, pshuffle, pswapaxes, axis_index) and the `*_ref`
  reference functions in docs/notebooks/shard_map.md ("API Specification" and
  "Collectives" sections).
- varying-axes (vma) rules: docs/notebooks/shard_map.md "Tracking how values vary over
  manual mesh axes, and check_vma=True" and `collective_vma_rule` /
  `insert_collective_pvary` in parallel.py: with `jax_auto_pcast` on (the default), every
  collective except psum/pmean first makes its operand vary over the named axes
  (an implicit `pvary`), so a missing axis is not an error; psum/pmean accept an operand
  that is invariant over ALL named axes (pvary, then sum: the result is n times the
  value) but reject one that varies over some of them and not others.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType

from oracles.ops import device, local, movement, reductions, transform
from oracles.ops.base import Collective, Ctx, OpDef
from programs.ops import OP_KINDS

# the modules that hold the op classes
FAMILIES = (local, reductions, movement, device, transform)


def op_classes(modules: Iterable[ModuleType]) -> dict[str, list[type[OpDef]]]:
    """Per op kind, the classes of `modules` that name it: those defined there that set
    `kind` themselves (a base such as `Reduction` or `Binary` sets none; a subclass
    such as `Pmean(Psum)` sets its own)."""
    out: dict[str, list[type[OpDef]]] = {}
    for m in modules:
        for obj in vars(m).values():
            if isinstance(obj, type) and issubclass(obj, OpDef) and obj.__module__ == m.__name__ and "kind" in vars(obj):
                out.setdefault(obj.kind, []).append(obj)
    return out


def registry(kinds: tuple[str, ...], modules: Iterable[ModuleType]) -> dict[str, OpDef]:
    """Every kind of `kinds` mapped to an instance of its one class in `modules`, in the
    order of `kinds`; a LookupError naming what is wrong and how to fix it when a kind
    has no class or two, or a class names a kind `kinds` lacks."""
    mods = tuple(modules)
    found = op_classes(mods)
    where = ", ".join(f"{m.__name__.replace('.', '/')}.py" for m in mods)
    missing = [k for k in kinds if k not in found]
    if missing:
        raise LookupError(f"op kinds {missing} of programs/ops.py have no oracle class: define a class with "
                          f"kind = {missing[0]!r} (an OpDef subclass with its rules) in one of {where}")
    twice = {k: [c.__name__ for c in cs] for k, cs in found.items() if len(cs) > 1}
    if twice:
        raise LookupError(f"op kinds with more than one oracle class: {twice}; keep one class per kind")
    extra = sorted(set(found) - set(kinds))
    if extra:
        raise LookupError(f"oracle classes of op kinds {extra} that programs/ops.py has no row for: "
                          f"add the row to its _TABLE or remove the class")
    return {k: found[k][0]() for k in kinds}


OPS: dict[str, OpDef] = registry(OP_KINDS, FAMILIES)

__all__ = ["FAMILIES", "OPS", "Collective", "Ctx", "OpDef", "op_classes", "registry"]
