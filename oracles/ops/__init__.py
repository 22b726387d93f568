"""The semantics of every op: check, shape rule, varying-axes rule and NumPy value rule.

Each op is one class; its rules sit side by side, in modules by family (`local`,
`reductions`, `movement`, `device`; `base` holds `Ctx`, `OpDef`, `Collective`); `OPS`
maps every op kind to its class's instance. The strategy asks the same rules
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

from oracles.ops.base import Collective, Ctx, OpDef
from oracles.ops.device import AxisIndex, AxisSize, NestedShardMap, Pcast, RaggedAllToAll
from oracles.ops.local import Add, Cast, Const, Max, Min, Mul, Neg, ReduceSum, Sub, Transpose
from oracles.ops.movement import (
    AllGather,
    AllToAll,
    Pbroadcast,
    Ppermute,
    Pshuffle,
    Pswapaxes,
    Sendrecv,
)
from oracles.ops.reductions import Pmax, Pmean, Pmin, Psum, PsumScatter
from oracles.ops.transform import Transform

OPS: dict[str, OpDef] = {
    cls.kind: cls()
    for cls in (
        Const, Add, Sub, Mul, Max, Min, Neg, ReduceSum, Transpose, Cast,
        Psum, Pmean, Pmax, Pmin, AllGather, PsumScatter, AllToAll, Pswapaxes,
        Ppermute, Pshuffle, AxisIndex, Pcast, RaggedAllToAll, NestedShardMap,
        AxisSize, Pbroadcast, Sendrecv, Transform,
    )
}  # fmt: skip

__all__ = ["OPS", "Collective", "Ctx", "OpDef"]
