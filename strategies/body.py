"""Building a body: one draw per op kind, each asking the oracle for the op's type.

`Body.try_op(draw, kind)` draws one op (`strategies/local_ops.py`,
`strategies/collectives.py`, `strategies/nested.py`, `strategies/transform.py`) of `kind` (its operand and parameters) where the
current values allow it, and appends it. The draws choose only what the op is; what it
makes (per-device shape, dtype, varying axes) comes from the oracle's own rules
(`oracles.ops.OPS[kind]`: check, shape, dtype, vma), so construction and prediction
cannot disagree. Each draw picks parameters the oracle's check accepts (a psum_scatter
only where some dimension fits the group size, a psum only over axes the operand varies
over all or none of); an op the check still rejects is not appended.
"""

from __future__ import annotations

from itertools import permutations

from hypothesis import event
from hypothesis import strategies as st

from oracles.ops import OPS, Ctx
from oracles.prediction import OracleError, ValueType
from programs.cells import axis_class
from programs.model import DTYPES, X64_DTYPE, Mesh, Op, is_float
from strategies import reuse
from strategies.collectives import COLLECTIVE_DRAWS
from strategies.forms import EMPTY_AXES_KINDS, draw_arg_forms
from strategies.invalid import ValueView as _V
from strategies.local_ops import LOCAL_DRAWS
from strategies.nested import draw_nested
from strategies.transform import draw_transform

# results that are Python numbers, not jax arrays (lax.axis_size returns an int, and
# these keep it one): no array method (x.astype) may be called on them
_PYTHON_NUMBER_OPS = ("neg", "add", "sub", "mul", "psum", "pmean")


# The collectives whose result reads the operand's blocks across the group. Over axes its
# operand is invariant along, every member holds the same block: a wrong group, order or
# permutation gives the same values, and a value check sees no fault there (a ppermute's
# perm, an all_gather's order, a pmax's groups); under check_vma jax also pvarys the
# operand first, one more primitive (an eager shard_map compiles each on its own, so
# each costs eager a compile). These draw their axes among
# those the operand varies along three times in four, where it varies along any, and a
# drawn operand is one that varies along some axis they may name, three times in four
# (`Body.try_op`; a focus over an axis-tuple class picks such an operand:
# strategies/programs.py `_focus_operand`); the rest keep the invariant-operand paths.
ACROSS = frozenset({"psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "all_to_all", "pswapaxes",
                    "ppermute", "pshuffle", "ragged_all_to_all"})


def _axes_subsets(manual: tuple[str, ...]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for r in range(1, len(manual) + 1):
        out.extend(permutations(manual, r))
    return out


class Body:
    """Builds the body op by op, keeping construction's view of every value."""

    def __init__(self, mesh: Mesh, manual: tuple[str, ...], check_vma: bool, vals: list[_V],
                 usable: tuple[str, ...] | None = None, x64: bool = False) -> None:
        self.mesh, self.manual, self.check_vma = mesh, manual, check_vma
        # the program names float64 (its first argument is one): it runs with
        # jax_enable_x64, and every op is typed so (`Program.x64`, `Ctx.x64`)
        self.x64 = x64
        self.dtypes = DTYPES if x64 else tuple(d for d in DTYPES if d != X64_DTYPE)  # what a cast may make
        self.usable = manual if usable is None else usable  # the manual axes ops may name
        self.vals = vals
        self.ops: list[Op] = []
        self.python_numbers: set[int] = set()  # value indices that hold a Python number
        # value indices jax types as weak int32 (lax.axis_size's Python int and what is
        # made from it alone): the oracle's types carry no weakness, so such a value is
        # never combined with a narrower integer (int8 * axis_size stays int8 in jax)
        self.weak: set[int] = set()
        # the parameter classes a focus op is drawn with (strategies/programs.py
        # `_focus_op`: "tiled", "axis", "split_axis", "perm", ... -> its class, as
        # programs/cells.py names them); empty: every parameter drawn freely
        self.want: dict[str, str] = {}
        # the swarm features of the program (strategies/programs.py SWARM_FEATURES) the
        # draws here read: "arg_forms" (an argument in another form), "empty_axes"
        self.features: frozenset[str] = frozenset()

    def tiled(self, draw: st.DrawFn) -> bool:
        """Tiled or not: as `want` names it, else drawn."""
        return self.want["tiled"] == "True" if "tiled" in self.want else draw(st.booleans(), label="tiled")

    def steer(self, name: str, values: list[int], rank: int) -> list[int]:
        """Those of `values` (a parameter's candidate dimensions) in the class `want`
        names for it (programs/cells.py `axis_class`), or all where none is."""
        cls = self.want.get(name)
        return ([v for v in values if axis_class(v, rank) == cls] or values) if cls else values

    def add(self, op: Op, v: _V) -> int:
        self.ops.append(op)
        self.vals.append(v)
        event(f"op: {op.kind}")
        return len(self.vals) - 1

    def typed(self, op: Op) -> _V | None:
        """What `op` makes, by the oracle's rules; None when its check rejects the op."""
        ins = [ValueType(v.shape, v.dtype, v.vma, v.unreduced, v.reduced) for v in (self.vals[j] for j in op.operands)]
        ctx = Ctx(self.mesh, self.manual, self.check_vma, len(self.ops), op, x64=self.x64)
        d = OPS[op.kind]
        try:
            d.check(ins, ctx)
            ur = d.ur(ins, ctx) if self.check_vma else (frozenset(), frozenset())
        except OracleError:
            return None
        except NotImplementedError:  # an unreduced / reduced operand the oracle has no rule for
            return None
        return _V(d.shape(ins, ctx), d.dtype(ins, ctx), d.vma(ins, ctx), *ur)

    def push(self, op: Op) -> int | None:
        """Append `op` with the type the oracle gives it; None (nothing appended) when the
        oracle's check rejects it."""
        v = self.typed(op)
        if v is None:
            event(f"draw rejected by the oracle: {op.kind}")
            return None
        i = self.add(op, v)
        if op.kind == "axis_size" or (
            op.kind in _PYTHON_NUMBER_OPS and op.operands and all(j in self.python_numbers for j in op.operands)
        ):
            self.python_numbers.add(i)
        weak = [j in self.weak or self.vals[j].dtype == "bool" for j in op.operands]
        # (axis_index over no axes is jax's weak 0: oracles/ops/device.py AxisIndex)
        if op.kind == "axis_size" or (op.kind == "axis_index" and not op.p("axes")) or (op.kind != "cast" and op.operands and any(j in self.weak for j in op.operands) and all(weak)):
            self.weak.add(i)
        return i

    def varying(self, draw: st.DrawFn, js: list[int], axes: tuple[str, ...] | None = None, label: str = "varying") -> list[int]:
        """Those of the values `js` that vary along every axis of `axes` (along some usable
        axis: None), three times in four where some of `js` do and some do not, else `js`:
        a collective's operand (`ACROSS`)."""
        want = set(self.usable if axes is None else axes)
        some = [j for j in js if (want <= set(self.vals[j].vma) if axes is not None else want & set(self.vals[j].vma))]
        if some and len(some) < len(js) and draw(st.integers(0, 3), label=label) != 0:
            return some
        return js

    def mixes_weak(self, i: int, j: int) -> bool:
        """Whether a binary op of values i and j would meet a weak int32 (int64 under
        jax_enable_x64) with a narrower integer, or a weak float32 (float64 under
        jax_enable_x64: the Python float pmean makes of lax.axis_size's int) with a
        narrower float, where jax keeps the narrower dtype (see `weak`; e.g.
        pmean(axis_size) * a bfloat16 is bfloat16 in jax)."""
        def narrower(w: int, o: int) -> bool:
            if w not in self.weak:
                return False
            if is_float(self.vals[w].dtype):
                return self.vals[o].dtype in ("bfloat16", "float16") + (("float32",) if self.x64 else ())
            return self.vals[o].dtype in ("int8", "uint8", "uint32", "int16") + (("int32",) if self.x64 else ())

        return narrower(i, j) or narrower(j, i)

    def n(self, axes: tuple[str, ...]) -> int:
        return self.mesh.group_size(axes)

    def fitting_dims(self, draw: st.DrawFn, x: _V, n: int, label: str) -> tuple[bool, int] | None:
        """(tiled, dim) for psum_scatter / all_to_all: tiled needs a dim divisible by the
        group size n, untiled one equal to it; None when the value has no such dim."""
        tiled = self.tiled(draw)
        dims = [d for d in range(len(x.shape)) if (x.shape[d] % n == 0 if tiled else x.shape[d] == n)]
        if not dims:
            return None
        return tiled, draw(reuse.sampled_from(self.steer(label, dims, len(x.shape))), label=label)

    def try_op(self, draw: st.DrawFn, kind: str, operand: int | None = None, axes: tuple[str, ...] | None = None) -> bool:
        """Append one op of `kind` if the current values allow it; False otherwise. Its
        (first) operand is `operand` when given, else drawn; a collective's axes are
        `axes` when given (a tuple of usable axes: empty only for a psum focus,
        strategies/programs.py `_focus_op`), else drawn."""
        if operand is not None:
            idx = operand
        else:
            idx = draw(st.integers(0, len(self.vals) - 1), label="operand")
            # prefer recent values half the time so ops chain
            if draw(st.booleans(), label="prefer_recent"):
                idx = len(self.vals) - 1
            if kind in ACROSS and not set(self.vals[idx].vma) & set(self.usable):
                some = self.varying(draw, list(range(len(self.vals))), label="operand_varying")
                if len(some) < len(self.vals):
                    idx = draw(reuse.sampled_from(some), label="varying_operand")
        if kind in LOCAL_DRAWS:
            return LOCAL_DRAWS[kind](self, draw, idx)
        if kind == "transform":
            if any(t == "explicit" and a not in self.manual for a, t in zip(self.mesh.names, self.mesh.axis_types)):
                return False  # (as a nested shard_map: values sharded in types the oracle does not model)
            return draw_transform(self, draw, idx)
        if kind == "shard_map":
            # (over an Explicit axis the outer call leaves free, in_specs are left out and
            # the out_spec is P(): the nested result keeps its sharding type, which the
            # oracle models; strategies/nested.py)
            return draw_nested(self, draw, idx)
        # collectives
        if not self.usable:
            return False
        x = self.vals[idx]
        if axes is None and "empty_axes" in self.features and kind in EMPTY_AXES_KINDS \
                and draw(st.integers(0, 15), label="empty_axes") == 0:
            axes = ()  # over no axes: a group of one (strategies/forms.py)
            event(f"{kind} over no axes ()")
        if axes is None:
            pool = self.usable
            along = tuple(a for a in self.usable if a in x.vma)
            if kind in ACROSS and along and draw(st.integers(0, 3), label="axes_varying") != 0:
                # over axes the operand varies along, three times in four (`ACROSS`)
                pool = along
            axes = draw(reuse.sampled_from(_axes_subsets(pool)), label="axes")
        event(f"collective axes: {len(axes)}")
        if kind in ACROSS:
            event(f"{kind}: operand varies along {'all' if set(axes) <= set(x.vma) else 'some' if set(axes) & set(x.vma) else 'none'} of its axes")
        if kind in ("psum", "pmean", "psum_scatter") and self.check_vma:
            # all or none of the axes must be in the operand's vma
            inside = tuple(a for a in axes if a in x.vma)
            if inside and len(inside) != len(axes):
                axes = inside
            if not inside:
                event(f"{kind}: invariant operand")
        before = len(self.ops)
        ok = COLLECTIVE_DRAWS[kind](self, draw, idx, axes)
        if ok and ("arg_forms" in self.features or any(k.endswith("_form") for k in self.want)):
            for i in range(before, len(self.ops)):
                draw_arg_forms(draw, self, i)  # (its axes, perm, groups in another form: strategies/forms.py)
        return ok
