"""How a drawn program meets its shard_map: arguments placed otherwise than their
in_specs, values the body closes over, effects in the body, donation around the call
(programs/model.py `Place`, `CLOSURES`, `Effect`, `Program.donate`; the oracle's rules:
oracles/explicit.py, oracles/effects.py).

Each is a swarm feature (strategies/programs.py `SWARM_FEATURES`: "placement",
"closure", "effects", "donate"), drawn after the body, where the program as drawn allows
it, so every program stays valid by construction:

- `scalar_arguments` (before the body): a rank-0 int32, float32 or bool argument may be
  a Python scalar; jax types an int or a float weakly, so the body marks it weak
  (strategies/body.py `Body.weak`: never combined with a narrower type).
- `draw_edges` (after the outputs):
  - placement: per argument, committed (`jax.device_put` before the call), device_put or
    reshard inside it, to a sharding of the class drawn (`programs.cells.PLACE_CLASSES`:
    replicated, its in_spec's, its in_spec's axes in another order or on other
    dimensions, other axes, axes the shard_map leaves automatic). Under an all-Explicit
    mesh with every axis manual the argument's sharding must be its in_spec's
    (oracles/explicit.py `check_arg_shardings`), unless the program reshards it
    (`Program.reshard`). A free Explicit axis is named where the oracle's rules cover
    every live value it reaches (its sharding joins the body's types: oracles/explicit.py
    `free_shardings`); an Explicit axis is never named on a closed-over value (jax does
    not support closing over one: jax-ml/jax#29162);
    reshard names Explicit axes only (jax refuses Auto ones).
  - closure: an argument whose in_spec is replicated (P()) may be closed over instead,
    as a NumPy constant or a value of the called function; it is invariant along every
    manual axis either way, so the body's types do not change.
  - effects: a jax.debug.callback or jax.debug.print of a drawn value (not a Python
    number, not unreduced / reduced).
  - donate: `jax.jit(f, donate_argnums=...)` of some arguments.

A focus on one of their cells (programs/cells.py `FEATURE_KINDS`; the sweep's
strategies/programs.py `_focused`) asks for it (`want`): the first arguments that can
take the placement class, closure or effect named are given it.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import event
from hypothesis import strategies as st

from oracles.explicit import free_placed, free_shardings
from oracles.interpreter import trace
from programs.cells import PLACE_CLASSES, place_class, used_args
from programs.graph import live_ops
from programs.model import SCALAR_DTYPES, Effect, Input, Mesh, Place, Program, Spec
from strategies import reuse
from strategies.body import Body
from strategies.explicit_defects import strict_explicit
from strategies.focus import Focus

EDGE_FEATURES = ("placement", "closure", "effects", "donate")


def feature_want(group: list[tuple[Focus, ...]]) -> dict[str, tuple[dict[str, str], ...]]:
    """Per feature kind, what each compound focus of `group` asks of one argument (or
    one effect): its classes by dimension ("how", "spec", "kind", ...)."""
    out: dict[str, list[dict[str, str]]] = {}
    for c in group:
        out.setdefault(c[0].kind, []).append({d: v for g in c for d, v in g.parts})
    return {k: tuple(v) for k, v in out.items()}


# meshes for feature foci: (the axis specs and ops name, the free manual one vmap_spmd
# splits its batch over, the automatic one a placement may name), the last left out where
# no focus asks for an automatic axis
_FEATURE_MESHES = ((2, 2, 2), (2, 2, 1), (4, 2, 1), (3, 2, 1), (1, 2, 2), (2, 4, 1), (1, 2, 4))


def feature_mesh(draw: st.DrawFn, want: dict[str, tuple[dict[str, str], ...]], names: tuple[str, ...]) -> tuple[Mesh, tuple[str, ...], tuple[str, ...]]:
    """(mesh, manual axes, the axes specs and ops may name) for feature foci: an automatic
    third axis where a placement over a free axis is asked for (else sometimes), the
    first axis Explicit where reshard or a typed placement is asked for, every axis where
    a placement over a free Explicit axis is (and none over a free Auto one)."""
    asks = [a for k in want for a in want[k]]
    asked = any(a.get("spec", "").startswith("free") for a in asks)
    # (an automatic axis a placement names: of size 2 or more where one is asked for)
    meshes = tuple(m for m in _FEATURE_MESHES if m[2] > 1) if asked else _FEATURE_MESHES
    drawn: tuple[int, ...] = draw(reuse.sampled_from(meshes), label="feature_mesh")
    free = asked or draw(st.booleans(), label="feature_auto_axis")
    sizes = drawn if free else drawn[:2]
    types = ["auto"] * len(sizes)
    if any(a.get("spec") == "free_explicit" for a in asks) and not any(a.get("spec") == "free_auto" for a in asks):
        types = ["explicit"] * len(sizes)  # (the automatic axis a placement names, Explicit: `_placeable_axes`)
    elif any(a.get("how") == "reshard" or a.get("typed") == "yes" for a in asks):
        types[0] = "explicit"  # (the axis specs name: a placement over it is part of the argument's type)
    mesh = Mesh(names[: len(sizes)], tuple(sizes), tuple(types))
    manual = mesh.names[:2]
    return mesh, manual, mesh.names[:1]


def scalar_arguments(draw: st.DrawFn, inputs: list[Input], in_specs: list[Spec], body: Body, features: frozenset[str],
                     only: frozenset[int] | None = None) -> list[Input]:
    """Some rank-0 int32 / float32 / bool arguments as Python scalars (`only`: those of
    these that can be), marked weak in `body` (an int or a float: jax types it weakly)."""
    if "placement" not in features or body.x64:
        return inputs
    out = list(inputs)
    for i, x in enumerate(inputs):
        if x.shape != () or x.dtype not in SCALAR_DTYPES or in_specs[i].axes() or (only is not None and i not in only):
            continue
        if only is not None or draw(st.integers(0, 3), label="scalar_argument") == 0:
            out[i] = replace(x, place=Place("scalar"))
            if x.dtype != "bool":
                body.weak.add(i)
            event("edge: a Python scalar argument")
    return out


def _divides(shape: tuple[int, ...], mesh: Mesh, entries: list[tuple[str, ...] | None]) -> bool:
    return all(not e or (d < len(shape) and shape[d] % mesh.group_size(e) == 0) for d, e in enumerate(entries))


def _spec_of(draw: st.DrawFn, p: Program, i: int, cls: str, axes: list[str]) -> Spec | None:
    """A spec of class `cls` for argument `i` over the mesh axes `axes` (the ones it may
    name), or None when there is none."""
    x, ins = p.inputs[i], p.in_specs[i]
    rank, mesh = len(x.shape), p.outer_mesh()
    mine = [tuple(a for a in e if a in axes) or None if e else None for e in ins.entries]
    if cls == "replicated":
        return Spec(())
    if cls == "in_spec":
        return Spec(tuple(ins.entries)) if ins.axes() and all(a in axes for a in ins.axes()) else None
    if cls == "order":
        # the in_spec's axes, in another order within a dimension or on other dimensions
        named = [a for a in ins.axes() if a in axes]
        if not named or rank == 0:
            return None
        for _ in range(3):
            order = draw(reuse.permutations(named), label="place_order")
            entries: list[tuple[str, ...] | None] = [None] * rank
            for a in order:
                d = draw(st.integers(0, rank - 1), label="place_dim")
                entries[d] = (*(entries[d] or ()), a)
            if _divides(x.shape, mesh, entries) and [e or None for e in entries] != list(mine) + [None] * (rank - len(mine)):
                return Spec(tuple(entries))
        return None
    if cls in ("other", "free"):
        pool = [a for a in axes if (a not in p.manual_axes) == (cls == "free")]
        if not pool or rank == 0:
            return None
        for _ in range(3):
            # the in_spec's entries (free: plus a free axis) or a fresh spec
            base = list(mine) + [None] * (rank - len(mine)) if cls == "free" and draw(st.booleans(), label="place_keep") else [None] * rank
            used = {a for e in base if e for a in e}
            picks = [a for a in draw(reuse.permutations(pool), label="place_axes") if a not in used]
            picks = picks[: draw(st.integers(1, max(1, len(picks))), label="place_n")] if picks else []
            entries = list(base)
            for a in picks:
                d = draw(st.integers(0, rank - 1), label="place_dim")
                entries[d] = (*(entries[d] or ()), a)
            if not _divides(x.shape, mesh, entries):
                continue
            s = Spec(tuple(entries))
            q = replace(p, inputs=p.inputs[:i] + (replace(x, place=Place("committed", s)),) + p.inputs[i + 1:])
            got = place_class(q, i)
            if got == cls or (cls == "free" and got.startswith("free")):
                return s
        return None
    raise ValueError(f"unknown placement class {cls!r}")


def _placeable_axes(p: Program, i: int, free_explicit: bool = False) -> list[str]:
    """The mesh axes a placement of argument `i` may name: a free Explicit one only where
    `free_explicit` (its sharding then joins the body's types: `_free_ok`), no Explicit
    one for a closed-over value, nor the manual axis no spec and no op names
    (`Program.spmd_axis`: vmap_spmd splits its batch over it, and jax refuses a sharding
    naming the spmd_axis_name)."""
    mesh = p.outer_mesh()
    spmd = p.spmd_axis()
    # (only on a mesh whose every axis is Explicit, where jax 0.10.2 joins the free axes to
    # the output's type as jax/_src/shard_map.py `_unshard_shaped_array` says; on a mesh with
    # an Auto axis it drops them from the output's type, and eager from the body's, measured)
    free_explicit = free_explicit and all(t == "explicit" for t in mesh.axis_types)
    return [a for a in mesh.names if a != spmd
            and not (mesh.axis_type(a) == "explicit" and p.inputs[i].closure is not None)
            and not (mesh.axis_type(a) == "explicit" and a not in p.manual_axes and not free_explicit)]


def _free_ok(q: Program) -> bool:
    """Whether the oracle's rules cover the free Explicit sharding of every live value of
    `q` (oracles/explicit.py `free_shardings`), and the free axes divide each block."""
    st_, err = trace(q, with_values=False)
    if err is not None:
        return False
    free = free_shardings(q, list(st_.types))
    live = {v for i in live_ops(q) for v in (*q.body[i].operands, len(q.inputs) + i)} | set(q.outputs) | {e.value for e in q.effects}
    if any(free[v] is None for v in live):
        return False
    return all(not a or st_.types[i].shape[d] % q.mesh.group_size(a) == 0
               for i in range(len(q.inputs)) for d, a in enumerate(free[i] or ()))


def _place(draw: st.DrawFn, p: Program, i: int, want: dict[str, str]) -> Program:
    """Argument `i` placed, as `want` asks ("how", "spec" classes) or drawn."""
    x = p.inputs[i]
    mesh = p.outer_mesh()
    explicit = [a for a in mesh.names if mesh.axis_type(a) == "explicit"]
    hows = ["committed", "device_put"] + (["reshard"] if explicit and x.closure is None else [])
    how: str = want["how"] if want.get("how") in hows else draw(reuse.sampled_from(hows), label="place_how")
    free_explicit = want.get("spec") == "free_explicit" or draw(st.booleans(), label="place_free_explicit")
    axes = _placeable_axes(p, i, free_explicit)
    if how == "reshard":
        axes = [a for a in axes if a in explicit]
    # (every axis manual and Explicit, the argument not resharded after: its sharding is
    # checked against its in_spec, oracles/explicit.py; jax raises otherwise)
    strict = strict_explicit(p) and not p.reshard and x.closure is None
    classes = [c for c in PLACE_CLASSES if not strict or c == ("in_spec" if p.in_specs[i].axes() else "replicated")]
    order = [want["spec"]] if want.get("spec") in classes else []
    order += list(draw(reuse.permutations(classes), label="place_classes"))
    for cls in order:
        spec = _spec_of(draw, p, i, "free" if cls.startswith("free") else cls, axes)
        if spec is None or (cls.startswith("free") and spec.axes() and cls != _class_with(p, i, how, spec)):
            continue
        q = replace(p, inputs=p.inputs[:i] + (replace(x, place=Place(how, spec)),) + p.inputs[i + 1:])
        if free_placed(q) and not _free_ok(q):
            continue
        event(f"edge: argument placed ({how})")
        event(f"edge: placement {place_class(q, i)}")
        return q
    return p


def _class_with(p: Program, i: int, how: str, spec: Spec) -> str:
    x = p.inputs[i]
    return place_class(replace(p, inputs=p.inputs[:i] + (replace(x, place=Place(how, spec)),) + p.inputs[i + 1:]), i)


def _committed(p: Program, i: int) -> bool:
    pl = p.inputs[i].place
    return pl is not None and pl.how == "committed"


def _typed_closure(p: Program, i: int) -> bool:
    """Whether argument `i`, closed over from the called function, would carry an Explicit
    sharding type (a mesh with an Explicit axis and the argument resharded or placed):
    jax does not implement that (oracles/explicit.py `check_typed_closures`)."""
    return p.inputs[i].closure == "outer" and "explicit" in p.outer_mesh().axis_types


def place_argument(draw: st.DrawFn, p: Program, i: int, ask: dict[str, str]) -> Program:
    """Argument `i` placed as `ask` says (its "how" and "spec" classes; the others drawn),
    where it can be (else `p`)."""
    x = p.inputs[i]
    return p if x.place is not None or x.closure == "numpy" or _typed_closure(p, i) else _place(draw, p, i, ask)


def close_argument(draw: st.DrawFn, p: Program, i: int, ask: dict[str, str]) -> Program:
    """Argument `i` closed over (its "kind": numpy or outer, else drawn), where it can be."""
    if not _closable(p, i) or (p.reshard and ("explicit" in p.outer_mesh().axis_types)):
        return p
    kinds = ("numpy", "outer") if ask.get("differentiated") != "yes" else ("outer",)
    kind = ask["kind"] if ask.get("kind") in kinds else draw(reuse.sampled_from(kinds), label="closure_kind")
    event(f"edge: closed over ({kind})")
    return replace(p, in_specs=p.in_specs[:i] + (Spec(()),) + p.in_specs[i + 1:],
                   inputs=p.inputs[:i] + (replace(p.inputs[i], closure=kind),) + p.inputs[i + 1:])


def _closable(p: Program, i: int) -> bool:
    x = p.inputs[i]
    return x.closure is None and x.place is None and p.in_specs[i].kind == "P" and not p.in_specs[i].axes() \
        and not p.in_specs[i].unreduced and not p.in_specs[i].reduced


def draw_edges(draw: st.DrawFn, p: Program, body: Body, features: frozenset[str],
               want: dict[str, tuple[dict[str, str], ...]] | None = None) -> Program:
    """`p` with its edges drawn (the features on in `features`); `want`: per feature kind
    ("place", "closure", "effect", "donate"), the classes each of the first arguments (or
    effects) that can take them must have (a focus on their cells)."""
    if p.defect is not None or p.wrap is not None:
        return p
    want = want or {}
    n_in = len(p.inputs)
    if "closure" in features or "closure" in want:
        asks = list(want.get("closure", ()))
        for i in range(n_in):
            if not _closable(p, i):
                continue
            ask = asks.pop(0) if asks else None
            if ask is None and draw(st.integers(0, 2), label="closure") != 0:
                continue
            # (an "outer" one resharded on a mesh with an Explicit axis: jax does not implement it)
            kinds = ("numpy",) if p.reshard and "explicit" in p.outer_mesh().axis_types else ("numpy", "outer")
            kind = ask["kind"] if ask and ask.get("kind") in kinds else draw(reuse.sampled_from(kinds), label="closure_kind")
            p = replace(p, in_specs=p.in_specs[:i] + (Spec(()),) + p.in_specs[i + 1:],
                        inputs=p.inputs[:i] + (replace(p.inputs[i], closure=kind),) + p.inputs[i + 1:])
            event(f"edge: closed over ({kind})")
    if "placement" in features or "place" in want:
        asks = list(want.get("place", ()))
        for i in range(n_in):
            x = p.inputs[i]
            if x.place is not None or x.closure == "numpy" or _typed_closure(p, i):
                continue
            ask = asks.pop(0) if asks else None
            if ask is None and draw(st.integers(0, 2), label="placement") != 0:
                continue
            p = _place(draw, p, i, ask or {})
    if "effects" in features or "effect" in want:
        values = [j for j, v in enumerate(body.vals) if j < p.n_values and not (v.unreduced or v.reduced)
                  and j not in body.python_numbers]
        asks = list(want.get("effect", ()))
        n = max(len(asks), draw(st.integers(1, 2), label="n_effects") if values else 0)
        effects = list(p.effects)
        for _ in range(n if values else 0):
            ask = asks.pop(0) if asks else {}
            kind = ask["kind"] if ask.get("kind") in ("callback", "print") else draw(reuse.sampled_from(("callback", "print")), label="effect_kind")
            pool = values
            if ask.get("value") == "argument":
                pool = [j for j in values if j < n_in] or values
            elif ask.get("value") == "result":
                pool = [j for j in values if j >= n_in] or values
            effects.append(Effect(kind, draw(reuse.sampled_from(pool), label="effect_value")))
            event(f"edge: effect ({kind})")
        p = replace(p, effects=tuple(effects))
    if "donate" in features or "donate" in want:
        # (an argument the program uses: a focus on a donation cell counts only for one)
        can = [i for i, x in enumerate(p.inputs) if x.closure != "numpy" and (i in used_args(p) or "donate" not in want)
               and not _typed_closure(p, i)]  # (donated, a closed-over value would be a typed jax array)
        asks = list(want.get("donate", ()))
        chosen = [i for i in can if draw(st.booleans(), label="donate")]
        for ask in asks:  # (a focus: an argument of the class asked for)
            if ask.get("arg") == "committed" and not any(_committed(p, i) for i in can):
                free = [i for i in can if p.inputs[i].place is None]
                if free:
                    p = _place(draw, p, draw(reuse.sampled_from(free), label="donate_place"), {"how": "committed"})
            pool = [i for i in can if ("committed" if _committed(p, i) else "uncommitted") == ask.get("arg")]
            if pool and not set(pool) & set(chosen):
                chosen.append(draw(reuse.sampled_from(pool), label="donate_focus"))
        if chosen:
            p = replace(p, donate=tuple(sorted(set(chosen))))
            event("edge: donated arguments (jax.jit donate_argnums)")
    return p
