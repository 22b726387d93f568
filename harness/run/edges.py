"""How a program meets its shard_map (worker side): arguments placed otherwise than
their in_specs, values the body closes over, effects in the body, donation around it
(programs/model.py `Place`, `CLOSURES`, `Effect`, `Program.donate`).

- Placement: a "committed" argument is `jax.device_put` to its NamedSharding on the host
  before the call (`host_args`, `host_shapes` for the modes that only trace); a
  "device_put" / "reshard" one is placed inside the called function (`traced`), so a jit
  traces it; a "scalar" one is passed as a Python scalar.
- Closures: the shard_map is made inside the called function (`closing`), its body closes
  over the "outer" arguments of that function (traced by jit, batched by vmap,
  differentiated by grad) and over "numpy" constants (`jnp.asarray` of the NumPy array in
  the body): harness/run/lowering.py `make_body`.
- Effects: each `Effect` is a jax.debug.callback or jax.debug.print right after its value
  is made (`emit`), whose calls are gathered here (`CALLS`, `printed`) and read back by
  the mode after `jax.effects_barrier()` (`collect`).
- Donation: `donated_state` reads each donated argument after the call.

jax is imported lazily, in the worker.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from harness.run import compat
from harness.run.lowering import to_pspec
from harness.run.observation import DonatedArg, EffectCall
from programs.model import Program, Spec

# every call an effect made in the current run: (effect index, manual coordinates, value)
CALLS: list[tuple[int, tuple[int, ...], np.ndarray]] = []
PRINT_TAG = "shardfuzz-effect"  # the first word of each jax.debug.print line
_NUMBER = re.compile(r"True|False|nan|-?inf|[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?")


def _named(p: Program, spec: Spec) -> Any:
    import jax

    m = p.outer_mesh()
    return jax.sharding.NamedSharding(compat.make_mesh(m.names, m.sizes, m.axis_types), to_pspec(spec))


def _batched_spec(spec: Spec) -> Spec:
    return Spec((None, *spec.entries))


def host_args(p: Program, args: list[Any], batched: bool = False, committed_only: bool = False) -> list[Any]:
    """The arguments as the call receives them: committed ones `jax.device_put` to their
    NamedSharding (with a leading unsplit batch dimension when `batched`: the vmap modes),
    Python scalars as Python scalars, donated uncommitted ones as jax arrays (so there is
    a buffer to donate); the others as they are (NumPy). `committed_only`: only the
    committed ones (the grad modes: they differentiate arrays, and donate nothing)."""
    if not any(x.place is not None for x in p.inputs) and not p.donate:
        return args
    if committed_only:
        p = replace(p, inputs=tuple(x if x.place is None or x.place.how == "committed" else replace(x, place=None) for x in p.inputs),
                    donate=())
    import jax
    import jax.numpy as jnp

    out = []
    for i, (x, a) in enumerate(zip(p.inputs, args)):
        pl = x.place
        if pl is not None and pl.how == "scalar":
            a = np.asarray(a).item()
        elif pl is not None and pl.how == "committed":
            spec = _batched_spec(pl.spec) if batched and x.batched else pl.spec
            a = jax.device_put(a, _named(p, spec))
        elif i in p.donate and x.closure != "numpy":
            a = jnp.asarray(a)
        out.append(a)
    return out


def host_shapes(p: Program, shapes: list[Any]) -> list[Any]:
    """The abstract arguments of the modes that only trace: a committed one's
    ShapeDtypeStruct carries its sharding, a Python scalar stays a Python scalar; a donated
    value the body closes over, a jax array in `host_args`, is typed as one on a mesh with
    an Explicit axis (replicated: jax.set_mesh's jnp.asarray; oracles/explicit.py
    `check_typed_closures`)."""
    typed = "explicit" in p.outer_mesh().axis_types
    if not any(x.place is not None or (typed and x.closure == "outer" and i in p.donate) for i, x in enumerate(p.inputs)):
        return shapes
    import jax

    out = []
    for i, (x, s) in enumerate(zip(p.inputs, shapes)):
        pl = x.place
        if pl is not None and pl.how == "scalar":
            s = np.zeros((), x.dtype).item()
        elif pl is not None and pl.how == "committed":
            s = jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=_named(p, pl.spec))
        elif pl is None and typed and x.closure == "outer" and i in p.donate:
            s = jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=_named(p, Spec(())))
        out.append(s)
    return out


def abstract(a: Any) -> Any:
    """`a` as eval_shape / lower take it: a ShapeDtypeStruct or a Python scalar as it is,
    an array as its ShapeDtypeStruct."""
    import jax

    if isinstance(a, (jax.ShapeDtypeStruct, bool, int, float)):
        return a
    return jax.ShapeDtypeStruct(a.shape, a.dtype)


def traced(p: Program, f: Callable[..., Any]) -> Callable[..., Any]:
    """`f` applied to its arguments placed inside the call: `jax.device_put` /
    `jax.sharding.reshard` to their NamedSharding (traced under jit)."""
    hows = [x.place.how if x.place is not None else None for x in p.inputs]
    if not any(h in ("device_put", "reshard") for h in hows):
        return f
    import jax

    shardings = [_named(p, x.place.spec) if x.place is not None and h in ("device_put", "reshard") else None
                 for x, h in zip(p.inputs, hows)]

    def placed(*args: Any) -> Any:
        moved = [a if h not in ("device_put", "reshard") else
                 jax.device_put(a, s) if h == "device_put" else jax.sharding.reshard(a, s)
                 for a, h, s in zip(args, hows, shardings)]
        return f(*moved)

    return placed


def closing(p: Program, make: Callable[[dict[int, Any]], Callable[..., Any]]) -> Callable[..., Any]:
    """The called function of a program whose body closes over some arguments: it makes
    the shard_map (`make(closed)`, `closed` the values of the "outer" arguments, as jax
    arrays) when called, and gives it the others."""
    outer = [i for i, x in enumerate(p.inputs) if x.closure == "outer"]
    passed = p.passed

    def call(*args: Any) -> Any:
        import jax.numpy as jnp

        closed = {i: jnp.asarray(args[i]) for i in outer}
        return make(closed)(*[args[i] for i in passed])

    return call


def _sink(k: int, *xs: Any) -> None:
    CALLS.append((k, tuple(int(np.asarray(c)) for c in xs[:-1]), np.asarray(xs[-1])))


def emit(p: Program, v: int, value: Any) -> None:
    """The effects reading value `v`, in the body right after it is made."""
    import jax

    manual = tuple(a for a in p.mesh.names if a in p.manual_axes)
    for k, e in enumerate(p.effects):
        if e.value != v:
            continue
        idx = [jax.lax.axis_index(a) for a in manual]
        if e.kind == "callback":
            jax.debug.callback(functools.partial(_sink, k), *idx, value)
        else:
            fmt = f"{PRINT_TAG} {k} " + " ".join("{}" for _ in idx) + ": {}"
            # every element, each float as the shortest text that reads back as it
            with np.printoptions(threshold=sys.maxsize, floatmode="unique", linewidth=sys.maxsize):
                jax.debug.print(fmt, *idx, value)


@contextlib.contextmanager
def printed() -> Iterator[io.StringIO]:
    """sys.stdout gathered while a program with jax.debug.print effects runs."""
    buf, old = io.StringIO(), sys.stdout
    sys.stdout = buf
    try:
        yield buf
    finally:
        sys.stdout = old


def collect(p: Program, text: str) -> tuple[EffectCall, ...]:
    """The calls made since `CALLS` was last emptied, and the printed ones in `text`, in
    the order they came (after `jax.effects_barrier()`)."""
    out = [EffectCall(k, c, v) for k, c, v in CALLS]
    CALLS.clear()
    n_manual = len(p.manual_axes)
    # (a printed array of rank 2 or more spans several lines: each call runs to the next tag)
    for chunk in re.split(rf"^{PRINT_TAG} ", text, flags=re.MULTILINE)[1:]:
        head, _, body = chunk.partition(": ")
        parts = head.split()
        k, coords = int(parts[0]), tuple(int(c) for c in parts[1:1 + n_manual])
        toks = _NUMBER.findall(body)
        vals = np.array([{"True": 1.0, "False": 0.0}.get(t, None) if t in ("True", "False") else float(t) for t in toks])
        out.append(EffectCall(k, coords, vals, printed=True))
    return tuple(out)


def donated_state(p: Program, args: list[Any]) -> tuple[DonatedArg, ...]:
    """Each donated argument after the call: deleted (then reading it must raise), or
    still holding its value."""
    out = []
    for i in p.donate:
        a = args[i]
        deleted = bool(getattr(a, "is_deleted", lambda: False)())
        if deleted:
            try:
                np.asarray(a)
                ok = False  # (a deleted array read back without an error)
            except Exception:  # noqa: BLE001 - the documented error on reuse
                ok = True
        else:
            want = p.inputs[i].materialize()
            ok = bool(np.array_equal(np.asarray(a).reshape(want.shape), want, equal_nan=True))
        out.append(DonatedArg(i, deleted, ok))
    return tuple(out)
