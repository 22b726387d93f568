"""The op vocabulary: every op kind, how many operands it reads and its parameter names.

This is syntax only (used to validate JSON and emit code). The semantics of each op live
in `oracles/ops.py`; its jax lowering in `harness/lowering.py`. Tests assert that the
three agree on the set of kinds.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpSyntax:
    kind: str
    arity: int  # number of operands
    params: tuple[str, ...]  # required parameter names
    optional: tuple[str, ...] = ()


_SYNTAX = [
    # local ops
    OpSyntax("const", 0, ("shape", "dtype", "value")),
    OpSyntax("add", 2, ()),
    OpSyntax("sub", 2, ()),
    OpSyntax("mul", 2, ()),
    OpSyntax("max", 2, ()),
    OpSyntax("min", 2, ()),
    OpSyntax("neg", 1, ()),
    OpSyntax("reduce_sum", 1, ("axis",)),
    OpSyntax("transpose", 1, ("perm",)),
    OpSyntax("cast", 1, ("dtype",)),
    # named-axis collectives
    OpSyntax("psum", 1, ("axes",), ("groups",)),
    OpSyntax("pmean", 1, ("axes",), ("groups",)),
    OpSyntax("pmax", 1, ("axes",), ("groups",)),
    OpSyntax("pmin", 1, ("axes",), ("groups",)),
    OpSyntax("all_gather", 1, ("axes", "axis", "tiled"), ("to",)),
    OpSyntax("psum_scatter", 1, ("axes", "scatter_dimension", "tiled")),
    OpSyntax("all_to_all", 1, ("axes", "split_axis", "concat_axis", "tiled")),
    OpSyntax("ppermute", 1, ("axes", "perm")),
    OpSyntax("pshuffle", 1, ("axes", "perm")),
    OpSyntax("pswapaxes", 1, ("axes", "axis")),
    OpSyntax("axis_index", 0, ("axes",)),
    OpSyntax("pcast", 1, ("axes", "to")),
    # operand, output, input_offsets, send_sizes, output_offsets, recv_sizes
    OpSyntax("ragged_all_to_all", 6, ("axes",)),
    # a nested shard_map (mesh from context) over `inner_axes`, axes the outer body left
    # automatic: jax.shard_map(lambda b: <inner op>(b), in_specs=P(*in_spec),
    # out_specs=P(*out_spec), axis_names=set(inner_axes), check_vma=check_vma)(x);
    # the inner op is one op of kind `inner` with parameters `inner_params` (pairs)
    OpSyntax("shard_map", 1, ("inner_axes", "in_spec", "out_spec", "inner", "inner_params", "check_vma")),
]

# Any op reading an operand may run inside a control-flow wrapper with the same meaning:
# wrap="scan": lax.scan over a length-1 loop whose body applies the op to the carry;
# wrap="cond": lax.cond whose two branches both apply the op. The oracle ignores it;
# jax must give the same types and values (collectives inside scan and cond bodies,
# through their batching, transpose and partitioning rules).
WRAPS = ("scan", "cond")
_SYNTAX = [
    OpSyntax(s.kind, s.arity, s.params, s.optional + ("wrap",)) if 1 <= s.arity <= 2 else s for s in _SYNTAX
]

SYNTAX: dict[str, OpSyntax] = {s.kind: s for s in _SYNTAX}
LOCAL_OPS = frozenset(
    ["const", "add", "sub", "mul", "max", "min", "neg", "reduce_sum", "transpose", "cast"]
)
NESTED_INNER = ("psum", "pmax", "pmin", "all_gather", "ppermute", "neg")  # inner ops drawn
COLLECTIVES = frozenset(SYNTAX) - LOCAL_OPS
BINARY_OPS = ("add", "sub", "mul", "max", "min")
REDUCTIONS = ("psum", "pmean", "pmax", "pmin")
