"""Which op kinds the strategy draws, and how each finds its draw: from the op table.

The op table (`programs/ops.py`) is the only list of op kinds. The strategy draws every
kind of it except those in `NOT_DRAWN` (each with why). A draw module builds its draw
table from the table's kinds of its shape with `table_draws`:
`strategies/local_ops.py` (`LOCAL_DRAWS`, the local ops) and `strategies/collectives.py`
(`COLLECTIVE_DRAWS`, `programs.ops.PLAIN_COLLECTIVES`); the compound kinds
(`programs.ops.COMPOUND_OPS`) have draws of their own shape (`strategies/nested.py`,
`strategies/transform.py`), which `Body.try_op` calls by kind.

The draw of kind K is the module's function `_K`; a kind of a table family
(`OpDesc.family`: the binary ops, the reductions) without one is drawn by the module's
`_<family>`, given `kind=K`. A kind with neither fails at import, naming the kind, the
module and the function to write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

from programs.ops import OP_TABLE

# op kinds of the table the strategy never draws, with why (none today)
NOT_DRAWN: dict[str, str] = {}


def table_draws(kinds: Iterable[str], namespace: Mapping[str, Any], where: str) -> dict[str, Callable[..., bool]]:
    """Each kind of `kinds` but those `NOT_DRAWN`, in order, mapped to its draw in
    `namespace` (a draw module's `globals()`; `where` is its path, for the error)."""
    out: dict[str, Callable[..., bool]] = {}
    missing: list[str] = []
    for k in kinds:
        if k in NOT_DRAWN:
            continue
        fn = namespace.get(f"_{k}")
        family = OP_TABLE[k].family
        if fn is None and family and callable(namespace.get(f"_{family}")):
            fn = partial(namespace[f"_{family}"], kind=k)
        if callable(fn):
            out[k] = fn
        else:
            missing.append(k)
    if missing:
        raise LookupError(f"op kinds {missing} of programs/ops.py have no draw in {where}: define _{missing[0]} there "
                          "(see the draws beside it), or list the kind in strategies/draws.py NOT_DRAWN with why")
    return out
