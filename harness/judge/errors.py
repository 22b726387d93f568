"""The one table of how jax words each error kind.

For each `ErrorKind`: the exception types jax may raise and the stable phrases (any one
suffices) that identify the check in its message. JAX rewording a message is a one-line
change here. Observed on jax 0.10.2 (`jax/_src/shard_map.py` error builders and
`jax/_src/lax/parallel.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from oracles.prediction import ErrorKind


@dataclass(frozen=True)
class ErrorSignature:
    types: tuple[str, ...]  # exception class names
    phrases: tuple[str, ...]  # at least one must occur in the message


ERROR_TABLE: dict[ErrorKind, ErrorSignature] = {
    ErrorKind.SPEC_TYPE: ErrorSignature(("TypeError",), ("must be a pytree of `jax.sharding.PartitionSpec`",)),
    ErrorKind.IN_SPECS_STRUCTURE: ErrorSignature(("ValueError",), ("pytree structure error", "shard_map in_specs")),
    ErrorKind.OUT_SPECS_STRUCTURE: ErrorSignature(("ValueError",), ("pytree structure error", "shard_map out_specs")),
    # (jax 0.5/0.6 eager: the NamedSharding check's "Resource axis: a of PartitionSpec('a',) is not found in mesh")
    ErrorKind.SPEC_UNKNOWN_AXIS: ErrorSignature(("ValueError",), ("must refer to an axis marked as manual", "is not found in mesh")),
    ErrorKind.SPEC_DUPLICATE_AXIS: ErrorSignature(("DuplicateSpecError",), ("has duplicate entries",)),
    ErrorKind.IN_SPEC_RANK: ErrorSignature(("ValueError",), ("in_specs entry which is too long",)),
    ErrorKind.OUT_SPEC_RANK: ErrorSignature(("ValueError",), ("out_specs entry which is too long",)),
    ErrorKind.IN_SPEC_DIVISIBILITY: ErrorSignature(("ValueError",), ("not evenly divisible",)),
    # documented behaviour (shard_map.md, parallel.py `_check_axis_names`)
    ErrorKind.UNBOUND_AXIS: ErrorSignature(("NameError",), ("unbound axis name",)),
    ErrorKind.COLLECTIVE_VMA: ErrorSignature(
        ("ValueError",),
        (
            "corresponds to one of varying", "must be applied to a device-varying", "Unsupported pcast",
            # all_gather(to='reduced') of an operand not varying over the axes (parallel.py all_gather_reduced)
            "only accepts inputs that are varying", "is a Varying -> Reduced collective",
        ),
    ),
    ErrorKind.COLLECTIVE_SHAPE: ErrorSignature(
        ("ValueError", "TypeError"), ("must be divisible by", "has to be divisible by", "requires the size of the mapped axis", "must match shard count", "must equal")
    ),
    ErrorKind.COLLECTIVE_PARAM: ErrorSignature(
        ("ValueError", "TypeError"),
        ("out of bounds", "must be unique", "does not represent a permutation", "must cover all indices", "out of range",
         # an axis name list where the collective hashes its axis names (jaxpr equation parameters)
         "unhashable type", "must have __hash__"),
    ),
    ErrorKind.UNSUPPORTED: ErrorSignature(("NotImplementedError",), ("",)),
    ErrorKind.LOCAL_SHAPE: ErrorSignature(("ValueError", "TypeError"), ("shapes", "axis", "perm")),
    # lax's dtype rules (jax/_src/lax/lax.py `naryop_dtype_rule`): "add does not accept dtype bool ..."
    ErrorKind.DTYPE: ErrorSignature(("TypeError",), ("does not accept dtype",)),
    # jax/_src/api.py `_check_input_dtype_revderiv`, `_jvp` (primal/tangent dtypes);
    # custom_derivatives.py custom_vjp under jvp
    ErrorKind.TRANSFORM: ErrorSignature(
        ("TypeError",),
        ("grad requires real- or complex-valued inputs", "primal and tangent arguments to jax.jvp do not match",
         "can't apply forward-mode autodiff (jvp) to a custom_vjp function"),
    ),
    # (an out_spec leaving out its output's reduced axes: jax 0.10.2's replication check
    # comes first; jax 0.9.2 checks the reduced set first, "out_specs passed to shard_map
    # should be equal to the reduced present on the out_aval", naming the same axis)
    ErrorKind.OUT_SPEC_REPLICATION: ErrorSignature(
        ("ValueError",), ("require replication which can't be statically inferred", "should be equal to the reduced present")
    ),
    # Explicit meshes (shard_map.py `_shard_map`): an in_spec that is not the argument's sharding
    ErrorKind.IN_SPEC_ARG_SHARDING: ErrorSignature(("ValueError",), ("does not match the specs of the input",)),
    # unreduced / reduced (shard_map.py `_check_unreduced`, `_unshard_shaped_array`; lax.py `_add_ur_rule`)
    ErrorKind.UNREDUCED_TYPE: ErrorSignature(
        ("ValueError", "ShardingTypeError"),
        (
            "contains axis names all of type `Explicit`", "should be equal to the unreduced",
            "should be equal to the reduced", "must be unreduced along the same mesh axes", "is unreduced while",
            # (0.12: 'Unreduced axes can only refer to mesh axes that is of type `Explicit`', and 'Reduced ...')
            "can only refer to mesh axes that is of type `Explicit`",
        ),
    ),
}


def matches(kind: ErrorKind, error_type: str, message: str) -> tuple[bool, str]:
    """Whether an observed exception is the predicted kind; and, if not, why not."""
    sig = ERROR_TABLE[kind]
    if error_type not in sig.types:
        return False, f"raised {error_type}, but a {kind.value} error is a {'/'.join(sig.types)}"
    if not any(ph in message for ph in sig.phrases):
        return False, f"{error_type} message names none of {list(sig.phrases)}"
    return True, ""
