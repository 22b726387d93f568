"""Hypothesis strategies that draw whole shard_map programs, valid by construction.

Construction, not filtering: we choose each argument's per-device block first and scale
it up by the mesh axes its spec names, so every in_spec divides its argument; each body
op is chosen among those whose requirements the current values meet (a psum_scatter only
where some dimension fits the group size, a psum only over axes the operand varies over
all or none of); out_specs name every axis an output varies along. Every choice comes
from `draw()`, and what was drawn is recorded with `hypothesis.event()` so a run's
statistics show coverage.

The small type tracker here (`_V`) follows the same rules as the oracle but is only used to
steer construction: if it were wrong, the oracle would predict an error for the program,
jax would have to raise it, and the run's statistics would show it as an accident.
"""

from __future__ import annotations

import hashlib
import math

from hypothesis import event
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from programs.model import Input, Mesh, Op, Program, Spec
from programs.ops import BINARY_OPS, COLLECTIVES, NESTED_INNER
from strategies.invalid import DEFECTS, apply_defect
from strategies.invalid import ValueView as _V

AXIS_NAMES = ("data", "model", "pipe")  # distinctive, so error messages can be checked for them
AXIS_SIZES = (1, 2, 3, 4, 6, 8)
ALL_KINDS = (
    "add", "sub", "mul", "max", "min", "neg", "reduce_sum", "transpose", "cast", "const",
    "psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "all_to_all",
    "ppermute", "pshuffle", "pswapaxes", "axis_index", "pcast", "ragged_all_to_all", "shard_map",
)  # fmt: skip


def _check_devices(min_devices: int, max_devices: int, max_axes: int) -> None:
    if not 1 <= min_devices <= max_devices:
        raise InvalidArgument(
            f"Cannot have max_devices={max_devices} < min_devices={min_devices}; "
            "both must be >= 1. Pass e.g. meshes(min_devices=1, max_devices=8)."
        )
    if not 1 <= max_axes <= len(AXIS_NAMES):
        raise InvalidArgument(f"max_axes={max_axes} must be between 1 and {len(AXIS_NAMES)}")


@st.composite
def meshes(draw: st.DrawFn, *, min_devices: int = 1, max_devices: int = 8, max_axes: int = 3) -> Mesh:
    """A mesh of 1..`max_axes` axes using between `min_devices` and `max_devices` devices.

    - min_devices, max_devices: bounds on the product of the axis sizes.
    - max_axes: at most this many axes (named x, y, z).

    Sizes include 1 (size-1 axes) and non-powers of two (3, 6)::

        meshes(max_devices=8).example()  # Mesh(names=('x', 'y'), sizes=(2, 4), ...)
    """
    _check_devices(min_devices, max_devices, max_axes)
    n_axes = draw(st.integers(1, max_axes), label="mesh_rank")
    sizes: list[int] = []
    for _ in range(n_axes):
        room = max_devices // math.prod(sizes or [1])
        sizes.append(draw(st.sampled_from([s for s in AXIS_SIZES if s <= room]), label="axis_size"))
    if math.prod(sizes) < min_devices:
        sizes[0] *= -(-min_devices // math.prod(sizes))  # pragma: no cover - only for min_devices > 1
    mesh = Mesh(AXIS_NAMES[:n_axes], tuple(sizes))
    event(f"mesh rank: {n_axes}")
    event(f"mesh devices: {mesh.size}")
    if 1 in sizes:
        event("mesh: has a size-1 axis")
    if any(s in (3, 6) for s in sizes):
        event("mesh: non-power-of-two axis")
    return mesh


def _dim_choices(mesh: Mesh) -> list[int]:
    """Per-device dim sizes: small ones, and sizes of axis groups (so collectives that
    need a dimension equal to a group size have something to work with)."""
    out = {1, 2, 3, 4}
    out |= {s for s in mesh.sizes if s <= 8}
    out |= {a * b for a in mesh.sizes for b in mesh.sizes if a * b <= 8}
    return sorted(out)


@st.composite
def _argument(draw: st.DrawFn, mesh: Mesh, manual: tuple[str, ...], i: int) -> tuple[Input, Spec, _V]:
    rank = draw(st.integers(0, 3), label="arg_rank")
    choices = _dim_choices(mesh)
    local = []
    for _ in range(rank):
        # Hypothesis draws the bound 0 far more often than 1 in 101: about 5% of
        # programs get a zero-size dimension (a known jax bug family; see
        # reports/known_divergences.toml), the rest stay free to show other bugs
        if draw(st.integers(0, 100), label="zero_dim") == 0:
            local.append(0)
            event("input: zero-size dimension")
        else:
            local.append(draw(st.sampled_from(choices), label="dim"))
    # split dims by distinct axes: each axis used at most once per spec
    unused = list(manual)
    entries: list[tuple[str, ...] | None] = []
    for _d in range(rank):
        pattern = draw(st.sampled_from(["none", "one", "several"]), label="spec_entry")
        if pattern == "none" or not unused:
            entries.append(None)
            continue
        k = 1 if pattern == "one" else draw(st.integers(1, len(unused)), label="n_axes")
        axes = tuple(draw(st.permutations(unused), label="entry_axes")[:k])
        for a in axes:
            unused.remove(a)
        entries.append(axes)
        event("in_spec: several axes on one dim" if len(axes) > 1 else "in_spec: one axis")
    # trailing Nones are sometimes dropped (P('x') vs P('x', None)), sometimes written
    while entries and entries[-1] is None and draw(st.booleans(), label="trim_spec"):
        entries.pop()
    if unused:
        event("in_spec: an axis left unmentioned")
    spec = Spec(tuple(entries))
    gshape = tuple(n * (mesh.group_size(entries[d]) if d < len(entries) and entries[d] else 1) for d, n in enumerate(local))
    dtype = draw(st.sampled_from(["float32", "int32"]), label="dtype")
    fill = draw(st.sampled_from(["small", "iota"]), label="fill")
    seed = draw(st.integers(0, 2**16), label="seed")
    event(f"input rank: {rank}")
    event(f"dtype: {dtype}")
    vma = frozenset(spec.axes())
    return Input(gshape, dtype, fill, seed), spec, _V(tuple(local), dtype, vma)


def _axes_subsets(manual: tuple[str, ...]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for r in range(1, len(manual) + 1):
        out.extend(_perms_of(manual, r))
    return out


def _perms_of(xs: tuple[str, ...], r: int) -> list[tuple[str, ...]]:
    from itertools import permutations

    return list(permutations(xs, r))


def _group_partition(draw: st.DrawFn, n: int) -> tuple[tuple[int, ...], ...] | None:
    sizes = [d for d in range(1, n + 1) if n % d == 0]
    size = draw(st.sampled_from(sizes), label="group_size")
    order = draw(st.permutations(list(range(n))), label="group_order")
    return tuple(tuple(sorted(order[i : i + size])) for i in range(0, n, size))


class _Body:
    """Builds the body op by op, keeping construction's view of every value."""

    def __init__(self, mesh: Mesh, manual: tuple[str, ...], check_vma: bool, vals: list[_V],
                 usable: tuple[str, ...] | None = None) -> None:
        self.mesh, self.manual, self.check_vma = mesh, manual, check_vma
        self.usable = manual if usable is None else usable  # the manual axes ops may name
        self.vals = vals
        self.ops: list[Op] = []

    def add(self, op: Op, v: _V) -> int:
        self.ops.append(op)
        self.vals.append(v)
        event(f"op: {op.kind}")
        return len(self.vals) - 1

    def n(self, axes: tuple[str, ...]) -> int:
        return self.mesh.group_size(axes)

    def fitting_dims(self, draw: st.DrawFn, x: _V, n: int, label: str) -> tuple[bool, int] | None:
        """(tiled, dim) for psum_scatter / all_to_all: tiled needs a dim divisible by the
        group size n, untiled one equal to it; None when the value has no such dim."""
        tiled = draw(st.booleans(), label="tiled")
        dims = [d for d in range(len(x.shape)) if (x.shape[d] % n == 0 if tiled else x.shape[d] == n)]
        if not dims:
            return None
        return tiled, draw(st.sampled_from(dims), label=label)

    def try_nested(self, draw: st.DrawFn, idx: int, x: _V) -> bool:
        return _nested(self, draw, idx, x)

    def try_op(self, draw: st.DrawFn, kind: str) -> bool:
        """Append one op of `kind` if the current values allow it; False otherwise."""
        idx = draw(st.integers(0, len(self.vals) - 1), label="operand")
        # prefer recent values half the time so ops chain
        if draw(st.booleans(), label="prefer_recent"):
            idx = len(self.vals) - 1
        x = self.vals[idx]
        r = len(x.shape)
        subsets = _axes_subsets(self.usable)
        if kind in BINARY_OPS:
            same = [j for j, v in enumerate(self.vals) if v.shape == x.shape or v.shape == ()]
            j = draw(st.sampled_from(same), label="rhs")
            y = self.vals[j]
            dt = "int32" if x.dtype == y.dtype == "int32" else "float32"
            if x.dtype != y.dtype:
                event("binary: mixed dtypes")
            self.add(Op.make(kind, (idx, j)), _V(x.shape, dt, x.vma | y.vma))
            return True
        if kind == "const":
            shape = draw(st.sampled_from([(), x.shape]), label="const_shape")
            value = draw(st.integers(-3, 3), label="const_value")
            c = self.add(Op.make("const", (), shape=shape, dtype=x.dtype, value=value), _V(shape, x.dtype, frozenset()))
            op = draw(st.sampled_from(BINARY_OPS), label="const_binop")
            self.add(Op.make(op, (idx, c)), _V(x.shape, x.dtype, x.vma))
            return True
        if kind == "neg":
            self.add(Op.make("neg", (idx,)), x)
            return True
        if kind == "cast":
            to = "int32" if x.dtype == "float32" else "float32"
            self.add(Op.make("cast", (idx,), dtype=to), _V(x.shape, to, x.vma))
            return True
        if kind == "reduce_sum":
            if r == 0:
                return False
            a = draw(st.integers(-r, r - 1), label="axis")
            s = list(x.shape)
            del s[a % r]
            self.add(Op.make("reduce_sum", (idx,), axis=a), _V(tuple(s), x.dtype, x.vma))
            return True
        if kind == "transpose":
            if r < 2:
                return False
            perm = tuple(draw(st.permutations(list(range(r))), label="perm"))
            self.add(Op.make("transpose", (idx,), perm=perm), _V(tuple(x.shape[i] for i in perm), x.dtype, x.vma))
            return True
        if kind == "shard_map":
            return self.try_nested(draw, idx, x)
        # collectives
        if not self.usable:
            return False
        axes = draw(st.sampled_from(subsets), label="axes")
        n = self.n(axes)
        event(f"collective axes: {len(axes)}")
        av = frozenset(axes)
        if kind in ("psum", "pmean", "psum_scatter") and self.check_vma:
            # all or none of the axes must be in the operand's vma
            inside = tuple(a for a in axes if a in x.vma)
            if inside and len(inside) != len(axes):
                axes = inside
                av, n = frozenset(axes), self.n(axes)
            if not inside:
                event(f"{kind}: invariant operand")
        if kind in ("psum", "pmean"):
            groups = None
            if not self.check_vma and draw(st.integers(0, 3), label="use_groups") == 0:
                groups = _group_partition(draw, n)
                event(f"{kind}: axis_index_groups")
            dt = "float32" if kind == "pmean" else x.dtype
            params = {"axes": axes} if groups is None else {"axes": axes, "groups": groups}
            vma = x.vma | av if groups is not None and len(groups) > 1 else x.vma - av
            self.add(Op.make(kind, (idx,), **params), _V(x.shape, dt, vma))  # type: ignore[arg-type]
            return True
        if kind in ("pmax", "pmin"):
            groups = None
            if draw(st.integers(0, 3), label="use_groups") == 0:
                groups = _group_partition(draw, n)
                event(f"{kind}: axis_index_groups")
            params = {"axes": axes} if groups is None else {"axes": axes, "groups": groups}
            # several groups: each has its own answer, so the result still varies
            vma = x.vma | av if groups is not None and len(groups) > 1 else x.vma - av
            self.add(Op.make(kind, (idx,), **params), _V(x.shape, x.dtype, vma))  # type: ignore[arg-type]
            return True
        if kind == "all_gather":
            tiled = r > 0 and draw(st.booleans(), label="tiled")
            hi = r if tiled else r + 1
            axis = draw(st.integers(-hi, hi - 1), label="axis")
            to = draw(st.sampled_from([None, None, "varying", "invarying"]), label="to")
            s = list(x.shape)
            if tiled:
                s[axis % hi] *= n
            else:
                s.insert(axis % hi, n)
            vma = (x.vma | av) - av if to == "invarying" else x.vma | av
            event(f"all_gather: tiled={tiled} to={to}")
            self.add(Op.make("all_gather", (idx,), axes=axes, axis=axis, tiled=tiled, to=to), _V(tuple(s), x.dtype, vma))
            return True
        if kind == "psum_scatter":
            fit = self.fitting_dims(draw, x, n, "scatter_dimension")
            if fit is None:
                return False
            tiled, d = fit
            s = list(x.shape)
            if tiled:
                s[d] //= n
            else:
                del s[d]
            if draw(st.integers(0, 3), label="negative_dim") == 0:
                d -= r  # jax #20125: negative scatter_dimension
            event(f"psum_scatter: tiled={tiled}")
            self.add(
                Op.make("psum_scatter", (idx,), axes=axes, scatter_dimension=d, tiled=tiled),
                _V(tuple(s), x.dtype, x.vma | av),
            )
            return True
        if kind == "all_to_all":
            fit = self.fitting_dims(draw, x, n, "split_axis")
            if fit is None:
                return False
            tiled, sd = fit
            cd = draw(st.integers(0, r - 1), label="concat_axis")
            s = list(x.shape)
            neg = draw(st.integers(0, 5), label="negative_axes")  # jax #19720: negative axes
            sd_p, cd_p = (sd - r if neg == 0 else sd), (cd - r if neg == 1 else cd)
            if tiled:
                s[sd] //= n
                s[cd] *= n
            else:
                del s[sd]
                s.insert(cd, n)
            event(f"all_to_all: tiled={tiled}")
            self.add(
                Op.make("all_to_all", (idx,), axes=axes, split_axis=sd_p, concat_axis=cd_p, tiled=tiled),
                _V(tuple(s), x.dtype, x.vma | av),
            )
            return True
        if kind == "pswapaxes":
            dims = [d for d in range(r) if x.shape[d] == n]
            if not dims:
                return False
            d = draw(st.sampled_from(dims), label="axis")
            self.add(Op.make("pswapaxes", (idx,), axes=axes, axis=d), _V(x.shape, x.dtype, x.vma | av))
            return True
        if kind == "ppermute":
            srcs = draw(st.permutations(list(range(n))), label="sources")
            k = draw(st.integers(1, n), label="n_pairs")
            dsts = draw(st.permutations(list(range(n))), label="destinations")
            perm = tuple(sorted(zip(srcs[:k], dsts[:k])))
            event("ppermute: partial" if k < n else "ppermute: full")
            self.add(Op.make("ppermute", (idx,), axes=axes, perm=perm), _V(x.shape, x.dtype, x.vma | av))
            return True
        if kind == "pshuffle":
            perm = tuple(draw(st.permutations(list(range(n))), label="perm"))
            self.add(Op.make("pshuffle", (idx,), axes=axes, perm=perm), _V(x.shape, x.dtype, x.vma | av))
            return True
        if kind == "axis_index":
            i = self.add(Op.make("axis_index", (), axes=axes), _V((), "int32", av))
            if draw(st.booleans(), label="combine_index"):
                # use it: add it to a value (scalar broadcasts)
                dt = "int32" if x.dtype == "int32" else "float32"
                self.add(Op.make("add", (idx, i)), _V(x.shape, dt, x.vma | av))
            return True
        if kind == "pcast":
            # the public pvary: only over axes the operand does not vary along yet
            free = [a for a in axes if a not in x.vma]
            if not free:
                return False
            self.add(Op.make("pcast", (idx,), axes=tuple(free), to="varying"), _V(x.shape, x.dtype, x.vma | frozenset(free)))
            return True
        if kind == "ragged_all_to_all":
            # every sender j sends its first row to each peer, written at row j there:
            # input_offsets 0, sizes 1, output_offsets = the sender's index
            if r == 0 or x.shape[0] < 1:
                return False
            # drawn a quarter as often as other ops: XLA:CPU cannot run it, so a program
            # holding one is checked only in the abstract and lowering modes there
            if draw(st.integers(0, 3), label="ragged_rarely") != 0:
                return False
            base = len(self.vals)
            vec = (n,)
            self.add(Op.make("const", (), shape=vec, dtype="int32", value=0), _V(vec, "int32", frozenset()))
            self.add(Op.make("const", (), shape=vec, dtype="int32", value=1), _V(vec, "int32", frozenset()))
            self.add(Op.make("axis_index", (), axes=axes), _V((), "int32", av))
            self.add(Op.make("add", (base, base + 2)), _V(vec, "int32", av))
            out_shape = (n,) + x.shape[1:]
            self.add(Op.make("const", (), shape=out_shape, dtype=x.dtype, value=0), _V(out_shape, x.dtype, frozenset()))
            self.add(
                Op.make("ragged_all_to_all", (idx, base + 4, base, base + 1, base + 3, base + 1), axes=axes),
                _V(out_shape, x.dtype, x.vma | av),
            )
            return True
        raise AssertionError(f"unknown kind {kind}")  # pragma: no cover


def _nested(body: _Body, draw: st.DrawFn, idx: int, x: _V) -> bool:
    """A nested shard_map over automatic axes of a partial-manual body (see
    programs/ops.py): its in_spec puts each inner axis on a dimension it divides, one
    inner op (NESTED_INNER) runs over all the inner axes, and its out_spec names every
    inner axis the inner result may vary over."""
    mesh, r = body.mesh, len(x.shape)
    auto = [a for a in mesh.names if a not in body.manual and mesh.axis_size(a) > 1]
    if not auto or r == 0:
        return False
    k = draw(st.integers(1, len(auto)), label="n_inner_axes")
    inner_axes = tuple(sorted(draw(st.permutations(auto), label="inner_axes")[:k], key=mesh.names.index))
    entries: list[tuple[str, ...] | None] = [None] * r
    for a in inner_axes:
        dims = [d for d in range(r) if entries[d] is None and x.shape[d] % mesh.axis_size(a) == 0]
        if not dims:
            return False
        entries[draw(st.sampled_from(dims), label="inner_dim")] = (a,)
    local = [n // mesh.group_size(e) if e else n for n, e in zip(x.shape, entries)]
    inner = draw(st.sampled_from(NESTED_INNER), label="inner_kind")
    params: dict[str, object] = {"axes": inner_axes} if inner != "neg" else {}
    out: tuple[tuple[str, ...] | None, ...] = tuple(entries)
    if inner in ("psum", "pmax", "pmin") and draw(st.booleans(), label="inner_out_replicated"):
        out = ()  # the reduction is the same on every inner device: a replicated out_spec
    if inner == "all_gather":
        ax = draw(st.integers(0, r - 1), label="inner_gather_axis")
        params.update(axis=ax, tiled=True)
        local[ax] *= mesh.group_size(inner_axes)
    if inner == "ppermute":
        n = mesh.group_size(inner_axes)
        shift = draw(st.integers(1, max(1, n - 1)), label="inner_shift")
        params["perm"] = tuple((i, (i + shift) % n) for i in range(n))
    shape = tuple(n * mesh.group_size(out[d]) if d < len(out) and out[d] else n for d, n in enumerate(local))
    op = Op.make(
        "shard_map", (idx,), inner_axes=inner_axes, in_spec=tuple(entries), out_spec=out, inner=inner,
        inner_params=tuple(sorted(Op.make(inner, (0,), **params).params)), check_vma=body.check_vma,  # type: ignore[arg-type]
    )
    body.add(op, _V(shape, x.dtype, x.vma))
    event(f"nested shard_map: {inner}")
    return True


def _out_spec(draw: st.DrawFn, v: _V, manual: tuple[str, ...], check_vma: bool) -> Spec | None:
    """An out_spec valid for `v`: names every axis `v` varies along (when checked)."""
    r = len(v.shape)
    need = sorted(v.vma) if check_vma else []
    if need and r == 0:
        return None
    extra = [a for a in manual if a not in need]
    chosen = list(need) + [a for a in extra if draw(st.booleans(), label="extra_out_axis")]
    if chosen and r == 0:
        return Spec(()) if not need else None
    order = draw(st.permutations(chosen), label="out_axis_order")
    entries: list[list[str]] = [[] for _ in range(r)]
    for a in order:
        entries[draw(st.integers(0, r - 1), label="out_dim")].append(a)
    ent = [tuple(e) if e else None for e in entries]
    keep = max([d + 1 for d, e in enumerate(ent) if e] + [0])
    keep = draw(st.integers(keep, r), label="out_spec_len")
    return Spec(tuple(ent[:keep]))


@st.composite
def programs(
    draw: st.DrawFn,
    *,
    max_devices: int = 8,
    max_axes: int = 3,
    max_args: int = 3,
    max_ops: int = 8,
    max_outputs: int = 3,
    check_vma: bool | None = None,
    kinds: tuple[str, ...] = ALL_KINDS,
    invalid: float = 0.0,
    defects: tuple[str, ...] = tuple(DEFECTS),
) -> Program:
    """A valid shard_map program.

    - max_devices, max_axes: bounds on the mesh (see `meshes`).
    - max_args: 1..max_args arguments of rank 0..3, float32 or int32, small integers.
    - max_ops: 1..max_ops body ops, local ops mixed with every collective.
    - max_outputs: 1..max_outputs outputs with valid out_specs.
    - check_vma: fixed flag, or None to draw it (True three times in four).
    - kinds: the op kinds to draw from (default: all).
    - invalid: probability that the program carries exactly one named defect (recorded
      in `Program.defect`); defects: the defect names to choose from (default: all in
      `strategies.invalid.DEFECTS`).

    Example::

        @given(programs(max_ops=4))
        def test_shapes(p): ...
    """
    if not 0.0 <= invalid <= 1.0:
        raise InvalidArgument(f"invalid={invalid} must be a probability between 0 and 1")
    unknown_defects = set(defects) - set(DEFECTS)
    if unknown_defects or not defects:
        raise InvalidArgument(f"defects={sorted(unknown_defects) or defects} must be non-empty names from {sorted(DEFECTS)}")
    if max_args < 1 or max_ops < 1 or max_outputs < 1:
        raise InvalidArgument(
            f"max_args={max_args}, max_ops={max_ops}, max_outputs={max_outputs} must all be >= 1"
        )
    unknown = set(kinds) - set(ALL_KINDS)
    if unknown:
        raise InvalidArgument(f"kinds contains unknown op kinds {sorted(unknown)}; known: {ALL_KINDS}")
    mesh = draw(meshes(max_devices=max_devices, max_axes=max_axes), label="mesh")
    manual = mesh.names
    if len(mesh.names) >= 2 and draw(st.integers(0, 3), label="partial_manual") == 0:
        # partial manual: axis_names a strict subset; the other axes stay automatic
        k = draw(st.integers(1, len(mesh.names) - 1), label="n_manual")
        manual = tuple(sorted(draw(st.permutations(list(mesh.names)), label="manual_axes")[:k], key=mesh.names.index))
        event("partial manual (axis_names a strict subset)")
    usable = manual  # the manual axes specs and ops may name
    big = [a for a in manual if mesh.axis_size(a) > 1]
    if len(manual) >= 2 and big and draw(st.integers(0, 4), label="spmd_reserve") == 2:
        # one manual axis no spec and no op names: vmap can split its batch over it
        # (the vmap_spmd mode needs such an axis)
        reserved = draw(st.sampled_from(big), label="reserved_axis")
        usable = tuple(a for a in manual if a != reserved)
        event("a manual axis left free (vmap spmd_axis_name)")
    vma_flag = draw(st.sampled_from([True, True, True, False]), label="check_vma") if check_vma is None else check_vma
    event(f"check_vma: {vma_flag}")
    n_args = draw(st.integers(1, max_args), label="n_args")
    inputs, in_specs, vals = [], [], []
    for i in range(n_args):
        x, s, v = draw(_argument(mesh, usable, i), label=f"arg{i}")
        inputs.append(x)
        in_specs.append(s)
        vals.append(v)
    body = _Body(mesh, manual, vma_flag, vals, usable)
    n_ops = draw(st.integers(1, max_ops), label="n_ops")
    for _ in range(n_ops):
        for _attempt in range(4):
            kind = draw(st.sampled_from(kinds), label="op_kind")
            if body.try_op(draw, kind):
                break
    if manual != mesh.names and "shard_map" in kinds and draw(st.integers(0, 2), label="nested") != 0:
        body.try_op(draw, "shard_map")  # partial manual: about half get a nested shard_map
    for i, op in enumerate(body.ops):
        # now and then an op runs inside lax.scan or lax.cond (same meaning; see
        # programs/ops.py WRAPS); middle values, as Hypothesis favours the bounds
        if 1 <= len(op.operands) <= 2:
            w = {5: "scan", 10: "cond"}.get(draw(st.integers(0, 15), label="wrap"))
            if w is not None:
                body.ops[i] = Op.make(op.kind, op.operands, **op.param_dict, wrap=w)
                event(f"wrapped in {w}")
    n_out = draw(st.integers(1, max_outputs), label="n_outputs")
    outputs, out_specs = [], []
    n_in = len(inputs)
    for _ in range(n_out):
        # favour body values (the last one most)
        lo = n_in if body.ops else 0
        idx = draw(st.integers(lo, len(body.vals) - 1), label="output")
        if draw(st.booleans(), label="output_last"):
            idx = len(body.vals) - 1
        spec = _out_spec(draw, body.vals[idx], usable, vma_flag)
        if spec is None:
            continue
        outputs.append(idx)
        out_specs.append(spec)
    if not outputs:
        # every candidate was a scalar varying value: reduce the last one over its axes
        v = body.vals[-1]
        axes = tuple(sorted(v.vma))
        body.add(Op.make("psum", (len(body.vals) - 1,), axes=axes), _V(v.shape, v.dtype, frozenset()))
        outputs.append(len(body.vals) - 1)
        out_specs.append(Spec(()))
    event(f"outputs: {len(outputs)}")
    for o in body.ops:
        if o.kind in COLLECTIVES:
            event(f"collective: {o.kind}")
    program = Program(
        mesh=mesh,
        inputs=tuple(inputs),
        in_specs=tuple(in_specs),
        body=tuple(body.ops),
        outputs=tuple(outputs),
        out_specs=tuple(out_specs),
        axis_names=None if manual == mesh.names else manual,
        check_vma=vma_flag,
    )
    # Hypothesis leans to small integers (a drawn st.integers(0, 9999) < 2500 came out
    # true for 86% of programs at invalid=0.25); the drawn program's hash is uniform and
    # still a function of what was drawn. Bits above those apply_defect uses.
    roll = int(hashlib.sha256(repr(program).encode()).hexdigest(), 16) >> 128
    if invalid > 0 and roll % 10000 < invalid * 10000:
        bad = apply_defect(draw, program, body.vals, defects)
        if bad is None:
            event("defect: none applicable")
        else:
            event(f"defect: {bad.defect}")
            return bad
    return program
