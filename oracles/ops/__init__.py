"""The semantics of every op: check, shape rule, varying-axes rule and NumPy value rule.

Each op is one class; its rules sit side by side, in modules by family (`local`,
`reductions`, `movement`, `device`; `nested` and `transform`, the ops made of other ops;
`base` holds `Ctx`, `OpDef`, `Collective`). `OPS` maps every op kind of the op table
(`programs.ops.OP_KINDS`) to its class's instance: `registry` (oracles/ops/registry.py)
finds, in those modules, the class that names each kind as its own `kind`, and fails at
import on a kind with no class, two classes of one kind, or a class of a kind the table
lacks. The strategy asks the same rules
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

from oracles.ops import nested, transform
from oracles.ops.base import Collective, Ctx, OpDef
from oracles.ops.registry import PLAIN_FAMILIES, op_classes, registry
from programs.ops import OP_KINDS

# the modules that hold the op classes: the plain ones, then the ops made of other ops
FAMILIES = (*PLAIN_FAMILIES, nested, transform)

OPS: dict[str, OpDef] = registry(OP_KINDS, FAMILIES)

__all__ = ["FAMILIES", "OPS", "Collective", "Ctx", "OpDef", "op_classes", "registry"]
