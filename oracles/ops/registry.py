"""The registries of op classes, built from the op table's kinds: `registry` finds, in
the family modules, the one class that names each kind as its own `kind`.

`PLAIN_OPS` covers the plain kinds, those that hold no other op (every kind but
`programs.ops.COMPOUND_OPS`). The ops made of other ops (the nested shard_map,
oracles/ops/nested.py; the transform, oracles/ops/transform.py) type and value their inner
ops through it: validation allows only plain kinds inside them (`NESTED_INNER`,
`TRANSFORM_STEP_KINDS`), and it sits below them, so no module needs the whole table
(`oracles.ops.OPS`) that is built from them.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType

from oracles.ops import device, local, movement, reductions
from oracles.ops.base import OpDef
from programs.ops import COMPOUND_OPS, OP_KINDS


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


# the modules that hold the plain op classes
PLAIN_FAMILIES = (local, reductions, movement, device)
PLAIN_OPS: dict[str, OpDef] = registry(tuple(k for k in OP_KINDS if k not in COMPOUND_OPS), PLAIN_FAMILIES)
