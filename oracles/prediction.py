"""What the oracle predicts: an error, or every output's shapes, dtype, vma and values.

Predictions are structured values. A wrong error *kind* is a divergence; the exact words
jax uses for each kind live in one table in `harness/errors.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np


class ErrorKind(str, Enum):
    """Every error the oracle can predict, one per check jax performs."""

    # spec checks made before the body is traced
    SPEC_TYPE = "spec_type"  # a spec that is not a PartitionSpec
    IN_SPECS_STRUCTURE = "in_specs_structure"  # in_specs tree does not match the args
    OUT_SPECS_STRUCTURE = "out_specs_structure"  # out_specs tree does not match outputs
    SPEC_UNKNOWN_AXIS = "spec_unknown_axis"  # a spec names an axis not in the mesh
    SPEC_DUPLICATE_AXIS = "spec_duplicate_axis"  # one mesh axis twice in a spec
    IN_SPEC_RANK = "in_spec_rank"  # in_spec longer than the argument's rank
    IN_SPEC_DIVISIBILITY = "in_spec_divisibility"  # dimension not divisible by the axes
    # checks made while the body is traced
    UNBOUND_AXIS = "unbound_axis"  # a collective names an axis that is not bound
    COLLECTIVE_VMA = "collective_vma"  # collective operand's vma is not acceptable
    COLLECTIVE_SHAPE = "collective_shape"  # a collective's shape/size rule is violated
    COLLECTIVE_PARAM = "collective_param"  # a bad permutation, axis argument, group
    UNSUPPORTED = "unsupported"  # jax raises NotImplementedError for this combination
    LOCAL_SHAPE = "local_shape"  # a local op's shape rule is violated
    DTYPE = "dtype"  # an op that does not accept its operand's dtype (sub, neg, psum_scatter of bool)
    TRANSFORM = "transform"  # a derivative transform jax refuses: grad / jvp of an integer, jvp of a custom_vjp
    # checks made after the body is traced
    OUT_SPEC_RANK = "out_spec_rank"  # out_spec longer than the output's rank
    OUT_SPEC_REPLICATION = "out_spec_replication"  # output varies along an unmentioned axis
    # Explicit meshes, reduced / unreduced (oracles/explicit.py)
    IN_SPEC_ARG_SHARDING = "in_spec_arg_sharding"  # an all-Explicit, all-manual in_spec differs from its argument's sharding
    UNREDUCED_TYPE = "unreduced_type"  # unreduced/reduced: a spec's axes not Explicit or not the value's; operands that disagree


@dataclass(frozen=True)
class PredictedError:
    """An error jax must raise: its kind, the facts its message must name, and why."""

    kind: ErrorKind
    facts: tuple[str, ...] = ()
    why: str = ""
    op_index: int | None = None  # the body op at fault, when there is one
    output: int | None = None  # the output an out_specs check is about, when there is one

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.why}"


class OracleError(Exception):
    """Raised inside the oracle's checks; carries the prediction."""

    def __init__(self, error: PredictedError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass(frozen=True, eq=False)
class OutputPrediction:
    """Everything predicted about one output of the shard_map."""

    index: int
    local_shape: tuple[int, ...]
    global_shape: tuple[int, ...]
    dtype: str
    vma: frozenset[str] | None  # None when check_vma=False (nothing is tracked)
    device_values: np.ndarray | None  # mesh.sizes + local_shape: each device's block (None: predict(values=False))
    global_value: np.ndarray | None  # None when replicated blocks differ (check_vma=False)
    exact: bool  # True: jax must match bit for bit (every element `unchecked` leaves)
    rtol: float
    atol: float  # inf: no value is predicted at all, only shape and dtype
    # what jax.typeof(out).sharding.spec must show: per dimension the Explicit axes it is
    # split over, then the unreduced and reduced axes (oracles/explicit.py out_sharding)
    sharding: tuple[tuple[tuple[str, ...], ...], tuple[str, ...], tuple[str, ...]] | None = None
    # shaped like device_values, True at the elements whose value is not predicted (an
    # infinite error bound: a float cast past an integer's range, a value that may
    # overflow, and what is computed from them); None: every element is. exact, rtol and
    # atol hold for the others. Where no element is predicted, atol is inf instead.
    unchecked: np.ndarray | None = None


@dataclass(frozen=True)
class ValueType:
    """The per-device type of one SSA value: what `jax.typeof` shows inside the body
    (`{V:x}` varying, `{U:x}` unreduced, `{R:x}` reduced manual axes)."""

    shape: tuple[int, ...]
    dtype: str
    vma: frozenset[str] | None
    unreduced: frozenset[str] = frozenset()
    reduced: frozenset[str] = frozenset()


@dataclass(frozen=True, eq=False)
class EffectPrediction:
    """The calls one effect of the body (programs/model.py `Effect`) may make: each
    carries one device's coordinates along the manual axes (`manual`, in mesh order) and
    that device's block of the value (`blocks`, mesh.sizes + the block's shape). jax's
    docstring of jax.debug.callback: a call "could be dropped, duplicated, or potentially
    reordered in the presence of higher-order primitives and transformations", so neither
    the number of calls nor their order is predicted: every call made must be one of
    these (oracles/effects.py)."""

    index: int  # the effect's position in Program.effects
    kind: str
    value: int
    manual: tuple[str, ...]
    blocks: np.ndarray | None  # None: predict(values=False)
    exact: bool
    atol: float
    unchecked: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class Prediction:
    """Either an error, or outputs. Also: types of every body value, lowering facts."""

    error: PredictedError | None
    outputs: tuple[OutputPrediction, ...] = ()
    value_types: tuple[ValueType, ...] = ()  # per SSA value, as far as tracing got
    manual_axes: tuple[str, ...] = ()
    expect_region: bool = True  # an sdy.manual_computation region in the lowering
    notes: tuple[str, ...] = field(default=())
    effects: tuple[EffectPrediction, ...] = ()  # one per Program.effects entry
