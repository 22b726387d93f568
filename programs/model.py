"""The program model: frozen, hashable values that describe one shard_map call.

A `Program` is everything needed to run `jax.shard_map` once: the mesh, the inputs
(shape, dtype and a recipe for their values), the in_specs, an SSA body, the outputs with
their out_specs, `axis_names` and `check_vma`. It never imports jax: the harness lowers it,
the oracle interprets it, and `programs.emit.to_python` prints it as a standalone script.

Values in the body are numbered: arguments are `0 .. len(inputs)-1`, and op `i` of the
body defines value `len(inputs) + i`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import cast

import ml_dtypes  # bfloat16 as a NumPy dtype (numpy-only; jax itself depends on it)
import numpy as np

from programs.body_text import body_source
from programs.ops import COLLECTIVES

# A spec entry: None (dimension not split) or a tuple of mesh axis names (major first).
SpecEntry = tuple[str, ...] | None
# Op parameters are restricted to JSON-friendly, hashable scalars and nested tuples.
ParamValue = int | str | bool | None | float | tuple["ParamValue", ...]

DTYPES = ("float32", "int32", "bfloat16", "float16", "int8", "uint8", "uint32", "bool", "float64")
FLOAT_DTYPES = ("float32", "bfloat16", "float16", "float64")
# A program that names float64 anywhere (an argument, a cast, a const) runs with
# jax_enable_x64 on (`Program.x64`): without it jax would silently make float64 float32.
X64_DTYPE = "float64"
# the NumPy type that holds each dtype's values exactly (bfloat16 from ml_dtypes); int16
# only as a result (jnp promotes int8 and uint8 to it), never an argument or a cast
_STORAGE: dict[str, type[np.generic]] = {
    "float32": np.float32, "int32": np.int32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16,
    "int8": np.int8, "uint8": np.uint8, "uint32": np.uint32, "bool": np.bool_, "int16": np.int16, "float64": np.float64,
    # int64 and uint64 only as results under jax_enable_x64 (jnp.sum of an int32 is int64 there)
    "int64": np.int64, "uint64": np.uint64,
}


def storage(dtype: str) -> type[np.generic]:
    """The NumPy scalar type of a program dtype (`ml_dtypes.bfloat16` for bfloat16)."""
    return _STORAGE[dtype]


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


def round_to(a: np.ndarray, dtype: str) -> np.ndarray:
    """`a` rounded to `dtype` (round to nearest even, as XLA converts) and held in float64:
    exactly the numbers a value of that dtype can hold."""
    return np.asarray(a).astype(_STORAGE[dtype]).astype(np.float64)
AXIS_TYPES = ("auto", "explicit")
CALL_WRAPS = ("auto_axes", "explicit_axes")  # Program.wrap: jax.sharding.auto_axes / explicit_axes around the call


@dataclass(frozen=True)
class Mesh:
    """A device mesh: axis names, sizes (row-major over devices 0..n-1) and axis types."""

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    axis_types: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.axis_types:
            object.__setattr__(self, "axis_types", ("auto",) * len(self.names))
        if len(self.names) != len(self.sizes) or len(self.names) != len(self.axis_types):
            raise ValueError(
                f"Mesh names={self.names}, sizes={self.sizes}, axis_types={self.axis_types} "
                "must have the same length"
            )

    @property
    def size(self) -> int:
        return math.prod(self.sizes)

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.names, self.sizes))

    def axis_size(self, name: str) -> int:
        return self.shape[name]

    def axis_type(self, name: str) -> str:
        """'auto' or 'explicit' (an axis not in the mesh: 'auto', as jax never types by it)."""
        return dict(zip(self.names, self.axis_types)).get(name, "auto")

    def group_size(self, axes: SpecEntry) -> int:
        """The devices in a group over `axes` (1 for a spec entry of None: split over none)."""
        return math.prod(self.shape[a] for a in axes or ())

    def coords(self) -> Iterator[tuple[int, ...]]:
        """Every device's mesh coordinate, in device order (row-major)."""
        return iter(np.ndindex(*self.sizes))


@dataclass(frozen=True)
class Spec:
    """A PartitionSpec: one entry per leading dimension of the value it describes.

    `kind` is "P" for a real PartitionSpec. Any other kind is a deliberately wrong spec
    object used by invalid programs ("str": a bare string, "tuple": a plain tuple,
    "none": None where a spec is needed).
    """

    entries: tuple[SpecEntry, ...] = ()
    kind: str = "P"
    # PartitionSpec(..., unreduced=, reduced=) (jax >= 0.8): mesh axes over which the
    # value is an unreduced sum of per-device parts / reduced (replicated, typed as the
    # transpose of an unreduced psum); sorted, so equal specs compare equal
    unreduced: tuple[str, ...] = ()
    reduced: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # P(()) and P(None) mean the same thing: normalise so equal specs compare equal
        object.__setattr__(self, "entries", tuple(e if e else None for e in self.entries))
        object.__setattr__(self, "unreduced", tuple(sorted(self.unreduced)))
        object.__setattr__(self, "reduced", tuple(sorted(self.reduced)))

    def axes(self) -> tuple[str, ...]:
        """Every mesh axis the spec names, in order of appearance."""
        return tuple(a for e in self.entries if e is not None for a in e)

    def __repr__(self) -> str:
        if self.kind == "none":
            return "None"
        parts = []
        for e in self.entries:
            if e is None:
                parts.append("None")
            elif len(e) == 1:
                parts.append(repr(e[0]))
            else:
                parts.append(repr(tuple(e)))
        if self.kind == "str":
            return repr(self.entries[0][0]) if self.entries and self.entries[0] else "''"
        if self.kind == "tuple":
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        for key, axes in (("unreduced", self.unreduced), ("reduced", self.reduced)):
            if axes:
                parts.append(f"{key}={{{', '.join(repr(a) for a in axes)}}}")
        return "P(" + ", ".join(parts) + ")"


# how vmap's batch member b > 0 of an argument differs from member 0 (Input.member; the
# emitted scripts write the same shifts, programs/emit.py input_expr)
BATCH_IOTA_STEP = 100  # an iota's offset
BATCH_SEED_STEP = 7919  # a small fill's seed


# How an argument reaches the call (`Input.place`; None: an uncommitted NumPy array):
# - "scalar": a Python scalar (`.item()` of its rank-0 value: int, float or bool; jax types
#   an int or a float weakly);
# - "committed": `jax.device_put(a, NamedSharding(mesh, spec))` before the call, so the
#   call receives an array committed to that sharding;
# - "device_put" / "reshard": `jax.device_put(a, NamedSharding(mesh, spec))` /
#   `jax.sharding.reshard(a, NamedSharding(mesh, spec))` inside the called function (a
#   traced placement under jit), just before the shard_map.
# `spec` is any sharding of the mesh (outside auto_axes / explicit_axes: `Program.outer_mesh`):
# the in_spec's, replicated, other axes, the same axes in another order, or axes the
# shard_map leaves automatic. shard_map reshards each argument to its in_spec (on an
# all-Explicit mesh with every axis manual it checks the argument's sharding instead:
# oracles/explicit.py).
PLACE_HOWS = ("scalar", "committed", "device_put", "reshard")
SCALAR_DTYPES = ("int32", "float32", "bool")  # a Python int, float or bool (jax: weak int32, weak float32, bool)


@dataclass(frozen=True)
class Place:
    """How one argument reaches the call (`PLACE_HOWS`), with the sharding's spec."""

    how: str
    spec: Spec = field(default_factory=Spec)

    def __repr__(self) -> str:
        return "scalar" if self.how == "scalar" else f"{self.how}({self.spec!r})"


# What the body closes over (`Input.closure`; None: an argument of the shard_map):
# - "numpy": a NumPy constant (`jnp.asarray(C)` in the body): never traced, batched or
#   differentiated by a transformation around the call;
# - "outer": a value of the function around the shard_map (an argument of it the shard_map
#   is not given): under jit a traced value, under vmap a batched one (with or without
#   spmd_axis_name), under grad the differentiated variable.
# A closed-over value is its whole global value on every device, invariant along every
# manual axis (its in_spec, kept in `in_specs` for the oracle, is P()); its derivative is
# that of an argument with in_spec P(): the sum over the devices of their cotangents.
CLOSURES = ("numpy", "outer")


@dataclass(frozen=True)
class Input:
    """One argument: its global shape, dtype and how its values are made.

    `fill` is "small" (deterministic small integers in [-3, 3] drawn from `seed`) or
    "iota" (offset, offset + 1, ... in row-major order): both exact in float32 and int32; in
    bfloat16 and float16 an iota past 256 (2048) is rounded, as astype rounds it; in
    int8, uint8 and uint32 values wrap (-3 is 253 in uint8), bool is "not zero".
    """

    shape: tuple[int, ...]
    dtype: str
    fill: str = "small"
    seed: int = 0
    offset: int = 0  # an iota's first value (a small fill has none: it stays 0)
    place: Place | None = None  # how it reaches the call (None: an uncommitted NumPy array)
    closure: str | None = None  # CLOSURES: the body closes over it (None: a shard_map argument)

    @property
    def batched(self) -> bool:
        """Whether vmap batches it: not a Python scalar, not a NumPy constant the body
        closes over (vmap runs them with in_axes=None: every member sees member 0's)."""
        return self.closure != "numpy" and not (self.place is not None and self.place.how == "scalar")

    def member(self, batch: int) -> Input:
        """This argument as member `batch` of a vmapped batch makes it (the same recipe,
        shifted seed / offset): member `batch` of `materialize` is `member(batch).materialize()`,
        so one member of a batch can be run as a plain program. An unbatched one
        (`batched`) is the same in every member."""
        if batch == 0 or not self.batched:
            return self
        if self.fill == "iota":
            return replace(self, offset=self.offset + BATCH_IOTA_STEP * batch)
        return replace(self, seed=self.seed + BATCH_SEED_STEP * batch)

    def materialize(self, batch: int = 0) -> np.ndarray:
        """The argument's values; `batch` > 0 gives the other members of a vmapped batch
        (`member`: same recipe, shifted seed / offset), so a batch is not B copies of one array."""
        if batch:
            return self.member(batch).materialize()
        n = math.prod(self.shape)
        if self.fill == "iota":
            flat = np.arange(n, dtype=np.int64) + self.offset
        elif self.fill == "small":
            flat = np.random.default_rng(self.seed).integers(-3, 4, size=n, dtype=np.int64)
        else:
            raise ValueError(f"Input.fill={self.fill!r} must be 'small' or 'iota'")
        return flat.reshape(self.shape).astype(_STORAGE[self.dtype])


@dataclass(frozen=True)
class Op:
    """One SSA operation: a kind, the values it reads, and its parameters (sorted)."""

    kind: str
    operands: tuple[int, ...] = ()
    params: tuple[tuple[str, ParamValue], ...] = ()

    @staticmethod
    def make(kind: str, operands: tuple[int, ...] = (), **params: ParamValue) -> Op:
        return Op(kind, tuple(operands), tuple(sorted((k, freeze(v)) for k, v in params.items())))

    def p(self, name: str, default: ParamValue = None) -> ParamValue:
        for k, v in self.params:
            if k == name:
                return v
        return default

    @property
    def param_dict(self) -> dict[str, ParamValue]:
        return dict(self.params)

    def inner_op(self) -> Op:
        """The one op inside a nested shard_map (kind "shard_map"), reading value 0."""
        inner = cast("tuple[tuple[str, ParamValue], ...]", self.p("inner_params"))
        return Op(str(self.p("inner")), (0,), tuple((k, v) for k, v in inner))

    def steps(self) -> tuple[Op, ...]:
        """A transform's sub-body (kind "transform"): value 0 is its operand, step i
        defines value i + 1."""
        steps = cast("tuple[tuple[str, tuple[int, ...], tuple[tuple[str, ParamValue], ...]], ...]", self.p("steps"))
        return tuple(Op(str(k), tuple(o), tuple((n, v) for n, v in ps)) for k, o, ps in steps)

    def with_nested(self) -> tuple[Op, ...]:
        """This op and the ops it holds: a nested shard_map's one op, a transform's
        steps."""
        if self.kind == "shard_map":
            return (self, self.inner_op())
        if self.kind == "transform":
            return (self, *self.steps())
        return (self,)

    def spec_param(self, key: str) -> Spec:
        """A nested shard_map's "in_spec" or "out_spec" as a Spec."""
        return Spec(tuple(None if e is None else tuple(e) for e in cast("tuple[SpecEntry, ...]", self.p(key))))


def freeze(v: object) -> ParamValue:
    """An op parameter as the model holds it: lists as tuples (hashable), NumPy integers as
    int; a TypeError for anything that is not JSON-friendly."""
    if isinstance(v, (list, tuple)):
        return tuple(freeze(x) for x in v)
    if isinstance(v, (np.integer,)):
        return int(v)
    if v is None or isinstance(v, (int, str, bool, float)):
        return v
    raise TypeError(f"op parameter {v!r} of type {type(v).__name__} is not JSON-friendly")


# An effect in the body (`Program.effects`), right after the value it reads is made:
# - "callback": `jax.debug.callback(f, i_0, ..., v)`, f a Python function and i_k
#   `jax.lax.axis_index` of each manual axis in mesh order (the device's coordinates);
# - "print": `jax.debug.print("... {i_0} ... {v}", ...)` of the same values.
# jax's docstring: the callback "could be dropped, duplicated, or potentially reordered in
# the presence of higher-order primitives and transformations": each call carries one
# device's coordinates and that device's value (oracles/effects.py), nothing is said of
# how many calls there are or their order.
EFFECT_KINDS = ("callback", "print")


@dataclass(frozen=True)
class Effect:
    kind: str  # EFFECT_KINDS
    value: int  # the value it reads (an argument or an op's result)


# How the shard_map call may be written (`CallForm`), each form's meaning in jax 0.10.2's
# `jax.shard_map` signature and docstring (f is positional-only and optional: called with
# keywords alone it returns a decorator; in_specs defaults to `Infer`, "If ``Infer``, all
# mesh axes must be of type `Explicit`, in which case the in_specs are inferred from the
# argument types"; in_specs / out_specs are pytree prefixes of the arguments' tuple / the
# body's result; axis_names a set or frozenset):
# - style: "call" `jax.shard_map(f, mesh=..., ...)`, "decorator" `jax.shard_map(mesh=...,
#   ...)(f)`, "partial" `functools.partial(jax.shard_map, mesh=..., ...)(f)`;
# - in_specs: "tuple" (one spec per argument), "single" (one P, a prefix of every
#   argument: every in_spec equal), "list" (a list: no prefix of the arguments' tuple,
#   a structure error), "omitted" (inferred from the arguments' sharding types);
# - out_specs: "tuple", "single" (one P for every output), "list" (a structure error:
#   the body returns a tuple);
# - axis_names: "set" or "frozenset".
CALL_STYLES = ("call", "decorator", "partial")
IN_SPECS_FORMS = ("tuple", "single", "list", "omitted")
OUT_SPECS_FORMS = ("tuple", "single", "list")
AXIS_NAMES_FORMS = ("set", "frozenset")


@dataclass(frozen=True)
class CallForm:
    """How the program's shard_map call is written (see CALL_STYLES and the forms above);
    the defaults are the plain form, `jax.shard_map(f, in_specs=(...), out_specs=(...),
    axis_names={...})`."""

    style: str = "call"
    in_specs: str = "tuple"
    out_specs: str = "tuple"
    axis_names: str = "set"

    def changed(self) -> dict[str, str]:
        """The fields that differ from the plain form (what the JSON and the cells name)."""
        plain = CallForm()
        return {k: getattr(self, k) for k in ("style", "in_specs", "out_specs", "axis_names") if getattr(self, k) != getattr(plain, k)}


@dataclass(frozen=True)
class Program:
    """One shard_map call, complete and self-contained."""

    mesh: Mesh
    inputs: tuple[Input, ...]
    in_specs: tuple[Spec, ...]
    body: tuple[Op, ...]
    outputs: tuple[int, ...]
    out_specs: tuple[Spec, ...]
    axis_names: tuple[str, ...] | None = None  # None: every mesh axis is manual
    check_vma: bool = True
    defect: str | None = None  # the one named defect of an invalid program
    # the shard_map call takes its mesh from `jax.set_mesh(mesh)` (no mesh= argument)
    mesh_context: bool = False
    # each argument is `jax.sharding.reshard(a, P(<its in_spec's Explicit axes>))` before
    # the call (under an Explicit mesh shard_map wants the argument's sharding to be the
    # in_spec when every axis is manual and Explicit)
    reshard: bool = False
    # the call inside `jax.sharding.auto_axes(f, axes=wrap_axes, out_sharding=wrap_specs)`
    # (one spec per output) or `jax.sharding.explicit_axes(f, axes=wrap_axes,
    # in_sharding=wrap_specs)` (one per argument), under jax.set_mesh. `mesh` is the mesh
    # the shard_map sees, inside the wrapper: the wrapped axes Auto (auto_axes) or
    # Explicit (explicit_axes); outside (`outer_mesh`) they have the other type.
    wrap: str | None = None
    wrap_axes: tuple[str, ...] = ()
    wrap_specs: tuple[Spec, ...] = ()
    notes: tuple[tuple[str, ParamValue], ...] = field(default=(), compare=True)
    # effects in the body (`Effect`), in the order they are made
    effects: tuple[Effect, ...] = ()
    # `jax.jit(f, donate_argnums=donate)` in the modes that jit the call itself (jit,
    # gspmd): the values are those without donation; a donated argument (a jax array) is
    # afterwards deleted or holds its value (jax.jit's docstring: "marked deleted", and
    # JAX "will raise an error" on reuse of a deleted one)
    donate: tuple[int, ...] = ()
    # the grad_remat mode's jax.checkpoint policy: a name from programs/points.py
    # REMAT_POLICIES (jax.checkpoint_policies.<name>), or None for the default policy
    remat_policy: str | None = None
    # how the shard_map call is written (CallForm; the plain form by default)
    form: CallForm = CallForm()

    def inferred_in_specs(self) -> tuple[Spec, ...]:
        """The in_specs jax infers when the call leaves them out (`form.in_specs` ==
        "omitted"): each argument's sharding type's manual axes (jax 0.10.2
        `_manual_spec`), which is its reshard spec (`reshard_spec`, the in_spec's
        Explicit axes) where the arguments are resharded, else nothing: a NumPy argument
        is unsharded (replicated)."""
        manual = set(self.manual_axes)
        out = []
        for i in range(len(self.inputs)):
            s = self.reshard_spec(i) if self.reshard and i < len(self.in_specs) else Spec(())
            out.append(Spec(tuple((tuple(a for a in e if a in manual) or None) if e else None for e in s.entries)))
        return tuple(out)

    def outer_mesh(self) -> Mesh:
        """The mesh of the mesh context (`jax.set_mesh`): `mesh` with the wrapped axes of
        the other type (`wrap`), or `mesh` itself."""
        if self.wrap is None:
            return self.mesh
        outer = "explicit" if self.wrap == "auto_axes" else "auto"
        types = tuple(outer if a in self.wrap_axes else t for a, t in zip(self.mesh.names, self.mesh.axis_types))
        return Mesh(self.mesh.names, self.mesh.sizes, types)

    @property
    def passed(self) -> tuple[int, ...]:
        """The arguments the shard_map is given (those the body does not close over)."""
        return tuple(i for i, x in enumerate(self.inputs) if x.closure is None)

    def has_edges(self) -> bool:
        """Whether an argument is placed or closed over, or the program has effects or
        donates an argument (the features some modes do not run: harness/run/compat.py)."""
        return bool(self.effects or self.donate) or any(x.place is not None or x.closure is not None for x in self.inputs)

    @property
    def manual_axes(self) -> tuple[str, ...]:
        if self.axis_names is None:
            return self.mesh.names
        return tuple(a for a in self.mesh.names if a in self.axis_names)

    @property
    def n_values(self) -> int:
        return len(self.inputs) + len(self.body)

    def member(self, batch: int) -> Program:
        """The plain program whose arguments are member `batch` of the batch vmap makes of
        this one's (`Input.member`)."""
        return replace(self, inputs=tuple(x.member(batch) for x in self.inputs))

    def op_of(self, value: int) -> Op | None:
        i = value - len(self.inputs)
        return self.body[i] if i >= 0 else None

    def named_axes(self) -> set[str]:
        """Every mesh axis a spec or an op (nested ones included) names."""
        named = {a for s in self.in_specs + self.out_specs for a in s.axes() + s.unreduced + s.reduced}
        # (a placement's sharding too: vmap's spmd_axis_name may not appear in a sharding)
        named |= {a for x in self.inputs if x.place is not None for a in x.place.spec.axes()}
        return named | {a for op in self.all_ops() for a in cast("tuple[str, ...]", op.p("axes") or ())}

    def spmd_axis(self) -> str | None:
        """A mesh axis for `jax.vmap(..., spmd_axis_name=)`: manual, of size > 1, named
        by no spec and no op (so splitting the batch over it changes what no collective
        means); the largest such, None when there is none."""
        used = self.named_axes()
        free = [a for a in self.manual_axes if a not in used and self.mesh.axis_size(a) > 1]
        return max(free, key=self.mesh.axis_size) if free else None

    def smap_form(self) -> tuple[str, tuple[int | None, ...], tuple[int | None, ...]] | str:
        """The program as `jax.smap(body, in_axes=, out_axes=, axis_name=)`: (axis,
        in_axes, out_axes); or why it has no such form (a string). It has one when one
        manual axis is all that its specs and ops name, each spec names it on at most
        one dimension, and (unless the other mesh axes are automatic) nothing else is
        manual with a size > 1."""
        if self.defect is not None or not self.check_vma:
            return "a defect" if self.defect is not None else "check_vma=False"
        if any(s.kind != "P" for s in self.in_specs + self.out_specs):
            return "a spec that is not a PartitionSpec"
        if any(s.unreduced or s.reduced for s in self.in_specs + self.out_specs):
            return "a spec with unreduced / reduced axes (in_axes / out_axes cannot say them)"
        if self.effects or any(x.closure is not None for x in self.inputs):
            return "closures or effects (the smap mode runs the plain body)"
        manual = self.manual_axes
        # a nested shard_map's axes are automatic ones (it runs inside jax.smap too: the
        # mesh comes from the context), not the smap axis
        nested = {a for op in self.body if op.kind == "shard_map" for a in (op.p("inner_axes") or ())}  # type: ignore[union-attr]
        named = self.named_axes() - (nested - set(manual))
        if len(named) > 1 or not named <= set(manual):
            return f"names {len(named)} axes"
        axis = next(iter(named)) if named else manual[0]
        if any(a != axis and self.mesh.axis_size(a) > 1 for a in manual):
            return "other manual axes of size > 1"

        def dim(s: Spec) -> int | None | str:
            dims = [d for d, e in enumerate(s.entries) if e]
            if not dims:
                return None
            return dims[0] if len(dims) == 1 and s.entries[dims[0]] == (axis,) else "bad"

        ins, outs = [dim(s) for s in self.in_specs], [dim(s) for s in self.out_specs]
        if "bad" in ins or "bad" in outs:
            return "a spec names the axis on several dimensions"
        return axis, tuple(ins), tuple(outs)  # type: ignore[arg-type]

    @property
    def explicit_axes(self) -> tuple[str, ...]:
        return tuple(a for a, t in zip(self.mesh.names, self.mesh.axis_types) if t == "explicit")

    def needs_mesh_context(self) -> bool:
        """Whether the call runs under `jax.set_mesh(mesh)`: the mesh comes from it, or
        an Explicit axis makes `reshard` and the sharding types need it."""
        return self.mesh_context or bool(self.explicit_axes) or self.wrap is not None

    def reshard_spec(self, i: int) -> Spec:
        """The spec argument `i` is resharded to (`reshard`): its in_spec's Explicit axes
        (jax.sharding.reshard refuses Auto ones)."""
        explicit = set(self.explicit_axes)
        s = self.in_specs[i]
        entries = tuple(tuple(a for a in e if a in explicit) or None if e else None for e in s.entries)
        return Spec(entries, "P", s.unreduced, s.reduced)

    @property
    def x64(self) -> bool:
        """Whether the program runs with jax_enable_x64 on: it names float64 (an
        argument's dtype or an op's `dtype` parameter, nested ops included). jax's
        default types then are 64-bit (jnp.sum of an int32 gives int64), which the oracle
        follows (`oracles.ops.base.Ctx.x64`)."""
        return any(x.dtype == X64_DTYPE for x in self.inputs) or any(op.p("dtype") == X64_DTYPE for op in self.all_ops())

    def uses_ur(self) -> bool:
        """Whether the program holds a reduced / unreduced value: a pcast to one, an
        all_gather(to='reduced'), a spec naming one (some modes run no such program on
        some jax: harness/run/compat.py `ur_mode_gap`)."""
        return any((op.kind == "pcast" and op.p("to") != "varying") or (op.kind == "all_gather" and op.p("to") == "reduced")
                   for op in self.body) or any(s.unreduced or s.reduced for s in self.in_specs + self.out_specs)

    def all_ops(self) -> tuple[Op, ...]:
        """The body's ops and, after each nested shard_map, the one op inside it (after
        each transform, its sub-body's steps)."""
        return tuple(o for op in self.body for o in op.with_nested())

    def permutes_out_of_mesh_order(self) -> bool:
        """Whether a ppermute or pshuffle names several mesh axes out of mesh order: jax
        0.11+ refuses that form unless `jax_raise_on_ppermute_sort_diff` is off (and with
        it off computes what the documented semantics say), earlier jax numbers the
        devices wrongly (the ppermute-multi-axis-order known entry)."""
        order = {a: i for i, a in enumerate(self.mesh.names)}
        for op in self.all_ops():
            if op.kind in ("ppermute", "pshuffle"):
                axes = [a for a in (op.p("axes") or ()) if a in order]  # type: ignore[union-attr]
                if axes != sorted(axes, key=order.__getitem__):
                    return True
        return False

    def collectives(self) -> tuple[str, ...]:
        return tuple(sorted({op.kind for op in self.all_ops() if op.kind in COLLECTIVES}))

    def __repr__(self) -> str:
        return body_source(self)
