"""The vocabulary of a known-divergence entry (harness/data/known_divergences.toml): signature
patterns (`kind|mode|where`, the kind always literal) and the structured features its
`when` names: program features, op features (which must hold on one op in the
divergence's scope) and value features. Never message text."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from harness.judge.compare import Divergence, DivergenceKind
from oracles.explicit import free_placed
from oracles.prediction import ValueType
from programs.forms import forms_of
from programs.model import Op, Program, Spec

_KINDS = {k.value for k in DivergenceKind}


# ------------------------------------------------------------------------ patterns


@dataclass(frozen=True)
class Pattern:
    """One signature pattern: a literal kind, the modes, a shell pattern on `where`."""

    kind: str
    modes: tuple[str, ...] | None  # None: every mode
    where: str

    @staticmethod
    def parse(text: str) -> Pattern:
        parts = text.split("|")
        if len(parts) != 3:
            raise ValueError(f"signature {text!r} is not 'kind|mode|where'")
        kind, mode, where = parts
        if kind not in _KINDS:
            raise ValueError(f"signature {text!r}: kind {kind!r} must be one of {sorted(_KINDS)} (no wildcards: "
                             "a bug that gives a wrong error does not excuse a wrong value)")
        if mode != "*" and any(c in mode for c in "*?["):
            raise ValueError(f"signature {text!r}: mode must be literal, a comma list, or '*'")
        return Pattern(kind, None if mode == "*" else tuple(mode.split(",")), where)

    def matches(self, d: Divergence) -> bool:
        if d.kind.value != self.kind or not fnmatch.fnmatchcase(d.where, self.where):
            return False
        return self.modes is None or all(m in self.modes for m in d.mode.split(","))

    def __str__(self) -> str:
        return f"{self.kind}|{','.join(self.modes) if self.modes else '*'}|{self.where}"


# ------------------------------------------------------------------------ features


def zero_size(shape: tuple[int, ...]) -> bool:
    """Whether a value of this shape has no element (the `value:zero_size` feature)."""
    return 0 in shape


def _size_1_explicit(p: Program, s: Spec) -> bool:
    """An out_spec naming an Explicit axis of size 1."""
    return s.kind == "P" and any(p.mesh.axis_type(a) == "explicit" and p.mesh.axis_size(a) == 1 for a in s.axes())


PROGRAM_FEATURES = {
    "in_spec_none": lambda p: any(s.kind == "none" for s in p.in_specs),
    "in_spec_duplicate_axis": lambda p: any(len(s.axes()) != len(set(s.axes())) for s in p.in_specs),
    "collective_axis_not_in_mesh": lambda p: any(a not in p.mesh.names for op in p.all_ops() for a in (op.p("axes") or ())),  # type: ignore[union-attr]
    "partial_manual": lambda p: p.axis_names is not None and set(p.axis_names) != set(p.mesh.names),
    "check_vma==False": lambda p: not p.check_vma,
    "check_vma==True": lambda p: p.check_vma,
    # every manual axis has size 1: jax lowers no manual region for the shard_map
    "manual_size_1": lambda p: all(p.mesh.axis_size(a) == 1 for a in p.manual_axes),
    "spmd_axis": lambda p: p.spmd_axis() is not None,
    # the smap mode runs a shard_map over one axis, the others automatic: partial manual
    # there whenever the mesh has another axis (of any size)
    "several_mesh_axes": lambda p: len(p.mesh.names) > 1,
    # a bfloat16 argument whose in_spec leaves out a manual axis: in the backward pass its
    # cotangent is summed over that axis (a bfloat16 all-reduce)
    "bf16_input_unsplit_over_manual": lambda p: any(
        i.dtype == "bfloat16" and set(p.manual_axes) - set(s.axes()) for i, s in zip(p.inputs, p.in_specs)),
    # not every mesh axis manual and Explicit (strategies/explicit_defects.py strict_explicit)
    "explicit_full_manual==False": lambda p: not (set(p.manual_axes) == set(p.mesh.names) and len(p.explicit_axes) == len(p.mesh.names)),
    # Explicit and Auto axes on one mesh (strategies/explicit.py axis_types)
    "mixed_mesh": lambda p: set(p.mesh.axis_types) == {"auto", "explicit"},
    # a mixed mesh: the mesh itself, or the one outside auto_axes / explicit_axes (whose
    # axes the wrapper retypes)
    "mixed_mesh_or_outside": lambda p: {"auto", "explicit"} in (set(p.mesh.axis_types), set(p.outer_mesh().axis_types)),
    # the call inside jax.sharding.auto_axes (strategies/explicit.py wrap_call)
    "auto_axes_call": lambda p: p.wrap == "auto_axes",
    "explicit_axes_call": lambda p: p.wrap == "explicit_axes",
    # ---- how the program meets its shard_map (programs/model.py Place, CLOSURES, Effect)
    # the body closes over a value of the called function (traced, batched, differentiated)
    "closure==outer": lambda p: any(x.closure == "outer" for x in p.inputs),
    # the body closes over a value: of the called function, or a NumPy constant (CLOSURES)
    "closure": lambda p: any(x.closure is not None for x in p.inputs),
    # jax.debug.callback / print effects in the body
    "effects": lambda p: bool(p.effects),
    # two or more mesh axes the shard_map leaves out of its manual axes (Auto or Explicit)
    "several_free_axes": lambda p: len(set(p.mesh.names) - set(p.manual_axes)) >= 2,
    # a manual axis of size 1 (beside others of any size)
    "a_manual_axis_size_1": lambda p: any(p.mesh.axis_size(a) == 1 for a in p.manual_axes),
    # an Explicit mesh axis the shard_map leaves out of its manual axes
    "free_explicit_axis": lambda p: any(p.mesh.axis_type(a) == "explicit" for a in p.mesh.names if a not in p.manual_axes),
    # a mesh with an Explicit axis (inside auto_axes / explicit_axes: the mesh the shard_map sees)
    "explicit_axis": lambda p: bool(p.explicit_axes),
    # an argument placed over an Explicit axis the shard_map leaves free (its sharding
    # joins the body's types: oracles/explicit.py free_shardings)
    "free_explicit_placement": free_placed,
    # an argument jax.device_put inside the call to a sharding naming an Explicit axis
    "device_put_explicit": lambda p: any(x.place is not None and x.place.how == "device_put"
                                         and any(p.outer_mesh().axis_type(a) == "explicit" for a in x.place.spec.axes())
                                         for x in p.inputs),
    # ---- (end of the block)
}


def _size_1_explicit_with_auto(p: Program, k: int) -> bool:
    """Output `k`'s out_spec names an Explicit axis of size 1 and an Auto axis of size > 1,
    or the shard_map leaves one free (the types of the mesh the output leaves to: outside explicit_axes its axes are Auto),
    or around auto_axes its out_sharding (`wrap_specs`) names the size-1 axis it makes
    Explicit outside and the shard_map's out_spec an Auto axis of size > 1."""
    s = p.out_specs[k]
    if s.kind != "P":
        return False
    m = p.outer_mesh() if p.wrap == "explicit_axes" else p.mesh
    # the Auto axis jit lays the output out along: one the out_spec names, or one of
    # size > 1 the shard_map leaves free (partial manual)
    free = [a for a in m.names if a not in p.manual_axes]
    if (any(m.axis_type(a) == "explicit" and m.axis_size(a) == 1 for a in s.axes())
            and any(m.axis_type(a) == "auto" and m.axis_size(a) > 1 for a in (*s.axes(), *free))):
        return True
    if p.wrap != "auto_axes" or k >= len(p.wrap_specs):
        return False
    outer, w = p.outer_mesh(), p.wrap_specs[k]
    return (any(outer.axis_type(a) == "explicit" and outer.axis_size(a) == 1 for a in w.axes())
            and any(outer.axis_type(a) == "auto" and outer.axis_size(a) > 1 for a in s.axes()))


def _has_bfloat16(p: Program) -> bool:
    """A bfloat16 argument, or an op naming bfloat16 (a cast, a constant)."""
    return any(i.dtype == "bfloat16" for i in p.inputs) or any(op.p("dtype") == "bfloat16" for op in p.all_ops())


PROGRAM_FEATURES["bfloat16"] = _has_bfloat16


# Program features that hold because of particular outputs' out_specs: the outputs each
# depends on (derived_program checks the program without them)
OUTPUT_FEATURES = {
    "unreduced_or_reduced_out_spec": lambda p, k: bool(p.out_specs[k].unreduced or p.out_specs[k].reduced),
    "unreduced_out_spec": lambda p, k: bool(p.out_specs[k].unreduced),
    "out_spec_size_1_explicit": lambda p, k: _size_1_explicit(p, p.out_specs[k]),
    # unreduced over an axis of size 1
    "unreduced_size_1_out_spec": lambda p, k: any(p.mesh.axis_size(a) == 1 for a in p.out_specs[k].unreduced),
    # an out_spec naming an Explicit axis of size 1 and an Auto axis of size > 1: jit lays
    # the output out along the Auto one and its type loses the size-1 axis
    "out_spec_size_1_explicit_with_auto": _size_1_explicit_with_auto,
}
# each output feature is also a program feature: it holds when it holds for some output
PROGRAM_FEATURES.update({f: (lambda p, f=f: any(OUTPUT_FEATURES[f](p, k) for k in range(len(p.out_specs)))) for f in OUTPUT_FEATURES})
VALUE_FEATURES = {"value:zero_size"}
_ALLREDUCE = ("psum", "pmean", "pmax", "pmin", "psum_scatter")


def _cotangent_sum_dtype(p: Program, op: Op, types: list[ValueType]) -> str | None:
    """See OpFeature: the operand's dtype where a vjp / grad sums its cotangent over a
    manual axis (its steps name an axis the operand does not vary along), else None."""
    if op.kind != "transform" or op.p("transform") not in ("vjp", "grad") or not types or types[0].vma is None:
        return None
    named = {a for st in op.steps() for a in (st.p("axes") or ())}  # type: ignore[union-attr]
    return types[0].dtype if (named & set(p.manual_axes)) - set(types[0].vma) else None
_OP = re.compile(r"^(?P<kind>[a-z_]+|any)(?::(?P<param>[a-z_]+)(?:(?P<op><|>|==)(?P<value>-?\w+))?)?$")


@dataclass(frozen=True)
class OpFeature:
    """'KIND', 'KIND:PARAM' (set), 'KIND:PARAM<N' / '>N' / '==V'; KIND 'any' for any op.
    Pseudo-parameters: 'axes_order' (ordered / unordered: several axes out of mesh
    order), 'zero_size' (True when an operand or the result has a zero-size dimension),
    'wrap' (scan / cond), 'dtype' (the first operand's dtype), 'allreduce_dtype' (the operand's dtype, for the reductions that
    lower to an all-reduce or reduce-scatter: psum, pmean, pmax, pmin, psum_scatter),
    'operands' (how many operands it reads: 'any:operands>1' is every binary op),
    'n_groups' (how many axis_index_groups: 'pmax:n_groups>1' is a grouped pmax whose
    groups hold different values; one group is the whole reduction),
    'unknown_axis' (it names an axis that is not in the mesh),
    'cotangent_sum_dtype' (a reverse-mode transform, vjp or grad, whose steps make its
    operand vary along a manual axis it was invariant along: the operand's dtype, which
    the transpose's all-reduce of the cotangent over that axis has),
    'n_axes' (how many axis names it takes: 'pmax:n_axes==0' is a pmax over ()),
    'axes_vma' ('mixed' where the operand varies along some of the op's axes and not
    others, 'varying' along all, 'invariant' along none),
    'ARG_form' (the form argument ARG is written in where not its plain one:
    'ppermute:perm_form==array' is a perm given as a NumPy array, programs/forms.py)."""

    kind: str
    param: str | None
    op: str | None
    value: str | None
    modes: tuple[str, ...] | None = None  # 'FEATURE@m1,m2': counts only for divergences in these modes

    @staticmethod
    def parse(text: str) -> OpFeature:
        text, _, at = text.partition("@")
        modes = tuple(at.split(",")) if at else None
        m = _OP.match(text)
        if m is None:
            raise ValueError(
                f"feature {text!r} is not a program feature ({', '.join(sorted(PROGRAM_FEATURES))}), "
                f"a value feature ({', '.join(sorted(VALUE_FEATURES))}), or an op feature "
                "'KIND', 'KIND:PARAM', 'KIND:PARAM<N' / '>N' / '==V'"
            )
        return OpFeature(m["kind"], m["param"], m["op"], m["value"], modes)

    def in_mode(self, mode: str | None) -> OpFeature | None:
        """This feature for a divergence in `mode` (None: any mode), or None when it is
        limited to other modes."""
        return self if mode is None or self.modes is None or all(m in self.modes for m in mode.split(",")) else None

    def holds(self, p: Program, op: Op, types: list[ValueType]) -> bool:
        if self.kind not in ("any", op.kind):
            return False
        if self.param is None:
            return True
        v: object = op.p(self.param)
        if self.param == "axes_order":
            axes = list(op.p("axes") or ())  # type: ignore[call-overload]
            v = "ordered" if axes == sorted(axes, key=lambda a: p.mesh.names.index(a) if a in p.mesh.names else -1) else "unordered"
        elif self.param == "zero_size":
            v = any(zero_size(t.shape) for t in types)
        elif self.param == "dtype":
            v = types[0].dtype if op.operands and types else None
        elif self.param == "operands":
            v = len(op.operands)
        elif self.param == "n_groups":
            v = len(op.p("groups")) if op.p("groups") is not None else None  # type: ignore[arg-type]
        elif self.param == "allreduce_dtype":
            v = types[0].dtype if op.kind in _ALLREDUCE and op.operands and types else None
        elif self.param == "cotangent_sum_dtype":
            v = _cotangent_sum_dtype(p, op, types)
        elif self.param == "n_axes":
            v = len(op.p("axes")) if isinstance(op.p("axes"), tuple) else None  # type: ignore[arg-type]
        elif self.param == "axes_vma":
            # how the operand varies over the op's axes: along all, none, or some of them
            vma, axes = (types[0].vma or frozenset()) if types else frozenset(), set(op.p("axes") or ())  # type: ignore[call-overload]
            v = ("mixed" if axes & vma and axes - vma else "varying" if axes <= vma else "invariant") if axes and types else None
        elif self.param.endswith("_form"):
            # the form an argument is written in, where not its plain one (programs/forms.py)
            v = forms_of(op).get(self.param[: -len("_form")])
        elif self.param == "unknown_axis":
            v = True if any(a not in p.mesh.names for a in (op.p("axes") or ())) else None  # type: ignore[union-attr]
        if v is None:
            return False
        if self.op is None:
            return True
        if self.op == "==":
            return str(v) == self.value
        if isinstance(v, bool) or not isinstance(v, int):
            return False
        n = int(self.value)  # type: ignore[arg-type]
        return v < n if self.op == "<" else v > n


@dataclass(frozen=True)
class AnyOf:
    """'F1 | F2 | ...': an op on which one of several op features holds (one root cause
    that several kinds of op reach, e.g. the ops whose all-reduce one abort stops at)."""

    alternatives: tuple[OpFeature, ...]

    @staticmethod
    def parse(text: str) -> OpFeature | AnyOf:
        parts = [t.strip() for t in text.split("|")]
        return OpFeature.parse(parts[0]) if len(parts) == 1 else AnyOf(tuple(OpFeature.parse(t) for t in parts))

    def in_mode(self, mode: str | None) -> OpFeature | AnyOf | None:
        alts = tuple(a for f in self.alternatives if (a := f.in_mode(mode)) is not None)
        return AnyOf(alts) if alts else None

    def holds(self, p: Program, op: Op, types: list[ValueType]) -> bool:
        return any(f.holds(p, op, types) for f in self.alternatives)
