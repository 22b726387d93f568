"""Narrow faults: each breaks one collective in exactly one configuration cell (one
parameter class, dtype, rank or axis-tuple class; harness/campaign/cells.py), adding 1 to
its result there and nowhere else. `benchmarks/reach.py` injects each in a default 60 s
run and measures how soon the run reaches the cell and reports it: the fuzzer's reach,
not the oracle's correctness (a fault that fires everywhere is found at once).

Installed like the faults of `faults.py` (`SHARDFUZZ_FAULTS=name`); never active unless
asked for. The conditions read only what the wrapper sees while tracing: the operand's
dtype and rank, and the call's parameters.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np


def _wrap(name: str, when: Callable[..., bool]) -> Callable[[], None]:
    """A fault that adds 1 to `jax.lax.<name>`'s result when `when(x, *args, **kw)`."""

    def install() -> None:
        import jax

        orig = getattr(jax.lax, name)

        @functools.wraps(orig)  # (its signature too: what a feature probe reads)
        def broken(x: Any, *args: Any, **kw: Any) -> Any:
            out = orig(x, *args, **kw)
            return out + 1 if when(x, *args, **kw) else out

        setattr(jax.lax, name, broken)

    return install


def _axes(a: Any) -> tuple[Any, ...]:
    return tuple(a) if isinstance(a, (tuple, list)) else (a,)


def _dt(x: Any, name: str) -> bool:
    return str(getattr(x, "dtype", "")) == name


def _nd(x: Any) -> int:
    return int(getattr(x, "ndim", 0))


def _cyclic(perm: Any, n: int) -> bool:
    pairs = [tuple(p) for p in perm]
    return len(pairs) == n and all(d == (s + 1) % n for s, d in pairs)


def _size(axis_name: Any) -> int:
    import jax

    return int(jax.lax.axis_size(axis_name))


def _kw(kw: dict[str, Any], args: tuple[Any, ...], i: int, name: str, default: Any = None) -> Any:
    """A parameter passed by keyword or at position i (after the operand)."""
    return kw[name] if name in kw else args[i] if len(args) > i else default


NARROW: dict[str, Callable[[], None]] = {
    "narrow_psum_int32": _wrap("psum", lambda x, a, **kw: _dt(x, "int32")),
    "narrow_psum_rank0": _wrap("psum", lambda x, a, **kw: _nd(x) == 0),
    "narrow_psum_two_axes": _wrap("psum", lambda x, a, **kw: len(_axes(a)) >= 2),
    "narrow_psum_float32_rank1": _wrap("psum", lambda x, a, **kw: _dt(x, "float32") and _nd(x) == 1),
    "narrow_pmean_rank2": _wrap("pmean", lambda x, a, **kw: _nd(x) == 2),
    "narrow_pmean_groups": _wrap("pmean", lambda x, a, **kw: kw.get("axis_index_groups") is not None),
    "narrow_pmax_int32": _wrap("pmax", lambda x, a, **kw: _dt(x, "int32")),
    "narrow_pmin_groups": _wrap("pmin", lambda x, a, **kw: kw.get("axis_index_groups") is not None),
    "narrow_all_gather_tiled_last_axis": _wrap(
        "all_gather", lambda x, a, *r, **kw: bool(kw.get("tiled")) and kw.get("axis", 0) == _nd(x) - 1 and _nd(x) > 1),
    "narrow_all_gather_untiled_rank0": _wrap("all_gather", lambda x, a, *r, **kw: not kw.get("tiled") and _nd(x) == 0),
    "narrow_all_gather_to_invarying": _wrap("all_gather", lambda x, a, *r, **kw: kw.get("to") == "invarying"),
    "narrow_psum_scatter_untiled": _wrap("psum_scatter", lambda x, a, *r, **kw: not kw.get("tiled")),
    "narrow_psum_scatter_last_dim": _wrap(
        "psum_scatter", lambda x, a, *r, **kw: kw.get("tiled") and kw.get("scatter_dimension", 0) == _nd(x) - 1 and _nd(x) > 1),
    "narrow_all_to_all_split_ne_concat": _wrap(
        "all_to_all", lambda x, a, *r, **kw: _kw(kw, r, 0, "split_axis") != _kw(kw, r, 1, "concat_axis")),
    "narrow_all_to_all_untiled": _wrap("all_to_all", lambda x, a, *r, **kw: not kw.get("tiled")),
    "narrow_ppermute_cyclic": _wrap("ppermute", lambda x, a, perm, **kw: _cyclic(perm, _size(a))),
    "narrow_ppermute_two_axes": _wrap("ppermute", lambda x, a, perm, **kw: len(_axes(a)) >= 2),
    "narrow_pshuffle_int32": _wrap("pshuffle", lambda x, a, *r, **kw: _dt(x, "int32")),
    "narrow_pswapaxes_float32": _wrap("pswapaxes", lambda x, a, *r, **kw: _dt(x, "float32")),
    "narrow_pcast_two_axes": _wrap("pcast", lambda x, a, *r, **kw: len(_axes(a)) >= 2),
    "narrow_all_gather_int32_two_axes": _wrap("all_gather", lambda x, a, *r, **kw: _dt(x, "int32") and len(_axes(a)) >= 2),
    "narrow_psum_float32_rank3": _wrap("psum", lambda x, a, **kw: _dt(x, "float32") and _nd(x) == 3),
}


# ---- how a program meets its shard_map (programs/model.py Place, CLOSURES, Effect,
# Program.donate): each wrong in one feature cell (programs/cells.py FEATURE_KINDS) only.


def _is_tracer(x: Any) -> bool:
    import jax

    return isinstance(x, jax.core.Tracer)


def _spec_axes(s: Any) -> list[tuple[str, ...]]:
    """A PartitionSpec's entries, each as a tuple of axis names."""
    return [tuple(e) if isinstance(e, (tuple, list)) else (e,) for e in tuple(s) if e is not None]


def _wrap_device_put(when: Callable[[Any, Any], bool]) -> Callable[[], None]:
    """A fault that adds 1 to `jax.device_put(x, sharding)` when `when(x, sharding)`."""

    def install() -> None:
        import jax

        orig = jax.device_put

        @functools.wraps(orig)
        def broken(x: Any, device: Any = None, *args: Any, **kw: Any) -> Any:
            out = orig(x, device, *args, **kw)
            return out + 1 if device is not None and when(x, device) else out

        jax.device_put = broken  # type: ignore[assignment]

    return install


def _closed_over(f: Any, kind: str) -> bool:
    """Whether the function `f` (a shard_map body) closes over a jax tracer of `kind`
    ("DynamicJaxprTracer": a value of an enclosing jit, "BatchTracer": one of an enclosing
    vmap), looking into the dicts and functions its cells hold."""
    seen: set[int] = set()
    todo = [f]
    while todo:
        g = todo.pop()
        if id(g) in seen:
            continue
        seen.add(id(g))
        for cell in getattr(g, "__closure__", None) or ():
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            items = list(v.values()) if isinstance(v, dict) else [v]
            for it in items:
                if type(it).__name__ == kind:
                    return True
                if callable(it) and hasattr(it, "__closure__"):
                    todo.append(it)
    return False


def _wrap_shard_map(args_when: Callable[[Any, dict[str, Any]], bool] | None = None,
                    body_when: Callable[[Any], bool] | None = None) -> Callable[[], None]:
    """A fault in `jax.shard_map(f, ...)`: an argument for which `args_when(arg, kwargs)`
    holds arrives + 1; or, where `body_when(f)` holds, every output of the call is + 1."""

    def install() -> None:
        import jax

        orig = jax.shard_map

        @functools.wraps(orig)
        def broken(f: Any, *a: Any, **kw: Any) -> Any:
            g = orig(f, *a, **kw)
            wrong_body = body_when is not None and body_when(f)

            def call(*args: Any) -> Any:
                if args_when is not None:
                    args = tuple(x + 1 if args_when(x, kw) else x for x in args)
                outs = g(*args)
                return jax.tree.map(lambda o: o + 1, outs) if wrong_body else outs

            return call

        jax.shard_map = broken  # type: ignore[assignment]

    return install


def _python_scalar(x: Any) -> bool:
    """A Python int or float, or (under jit) the weakly typed rank-0 value one becomes."""
    import jax

    if isinstance(x, bool):
        return False
    if isinstance(x, (int, float)):
        return True
    return _is_tracer(x) and _nd(x) == 0 and bool(getattr(jax.typeof(x), "weak_type", False))


def _free_axis_committed(x: Any, kw: dict[str, Any]) -> bool:
    """An argument committed to a NamedSharding naming an axis the shard_map leaves
    automatic (axis_names a strict subset)."""
    names = kw.get("axis_names")
    spec = getattr(getattr(x, "sharding", None), "spec", None)
    if _is_tracer(x) or names is None or spec is None:
        return False
    return any(a not in names for e in _spec_axes(spec) for a in e)


def _free_axis_committed_anywhere() -> None:
    """`_free_axis_committed` in eager shard_map (the argument it is given) and under jit
    (the jitted call's arguments, against the axis_names of the shard_map its trace made):
    every output + 1."""
    import jax

    _wrap_shard_map(args_when=_free_axis_committed)()
    made: dict[str, Any] = {}
    sm = jax.shard_map

    @functools.wraps(sm)
    def recording(f: Any, *a: Any, **kw: Any) -> Any:
        made["axis_names"] = kw.get("axis_names")
        return sm(f, *a, **kw)

    jax.shard_map = recording  # type: ignore[assignment]
    orig = jax.jit

    @functools.wraps(orig)
    def broken(f: Any, *a: Any, **kw: Any) -> Any:
        g = orig(f, *a, **kw)
        seen: dict[str, Any] = {}

        def call(*args: Any) -> Any:
            outs = g(*args)
            # (the shard_map made last: before the jit, or while its first call traced it)
            names = seen.setdefault("axis_names", made.get("axis_names"))
            if names is not None and any(_free_axis_committed(x, {"axis_names": names}) for x in jax.tree.leaves(args)):
                return jax.tree.map(lambda o: o + 1, outs)
            return outs

        call.lower = g.lower  # type: ignore[attr-defined]  # (the lowering mode lowers it)
        return call

    jax.jit = broken  # type: ignore[assignment]


def _wrap_debug_callback(when: Callable[[Any], bool]) -> Callable[[], None]:
    """A fault in `jax.debug.callback(cb, *args)`: its last argument + 1 when `when(it)`."""

    def install() -> None:
        import jax

        orig = jax.debug.callback

        @functools.wraps(orig)
        def broken(cb: Any, *args: Any, **kw: Any) -> Any:
            if args and when(args[-1]):
                args = (*args[:-1], args[-1] + 1)
            return orig(cb, *args, **kw)

        jax.debug.callback = broken  # type: ignore[assignment]

    return install


def _print_float32_off_by_one() -> None:
    """`jax.debug.print` prints a float32 value (its last argument) off by one."""
    import jax

    orig = jax.debug.print

    @functools.wraps(orig)
    def broken(fmt: Any, *args: Any, **kw: Any) -> Any:
        if args and _dt(args[-1], "float32"):
            args = (*args[:-1], args[-1] + 1)
        return orig(fmt, *args, **kw)

    jax.debug.print = broken  # type: ignore[assignment]


def _donated_committed_result() -> None:
    """`jax.jit(f, donate_argnums=...)` called with a committed donated argument: every
    output + 1."""
    import jax

    orig = jax.jit

    @functools.wraps(orig)
    def broken(f: Any, *a: Any, **kw: Any) -> Any:
        g = orig(f, *a, **kw)
        donated = kw.get("donate_argnums")
        if not donated:
            return g
        nums = _axes(donated)

        def call(*args: Any) -> Any:
            outs = g(*args)
            if any(i < len(args) and getattr(args[i], "committed", False) for i in nums):
                return jax.tree.map(lambda o: o + 1, outs)
            return outs

        call.lower = g.lower  # type: ignore[attr-defined]
        return call

    jax.jit = broken  # type: ignore[assignment]


NARROW.update({
    # place|how=scalar: a Python int or float argument arrives off by one
    "narrow_scalar_argument": _wrap_shard_map(args_when=lambda x, kw: _python_scalar(x)),
    # place|spec=free_auto: a committed argument's layout along an automatic axis is read wrong
    "narrow_free_axis_committed": _free_axis_committed_anywhere,
    # place|how=device_put: an argument jax.device_put inside the call (traced) arrives off by one
    "narrow_device_put_traced": _wrap_device_put(lambda x, s: _is_tracer(x)),
    # closure|kind=outer under jit: a closed-over value of the enclosing jit is read off by one
    "narrow_closure_traced": _wrap_shard_map(body_when=lambda f: _closed_over(f, "DynamicJaxprTracer")),
    # closure|kind=outer under vmap: a closed-over batched value is batched wrongly
    "narrow_closure_batched": _wrap_shard_map(body_when=lambda f: _closed_over(f, "BatchTracer")),
    # effect|kind=callback of a value of rank 2 or more
    "narrow_callback_rank2": _wrap_debug_callback(lambda v: _nd(v) >= 2),
    # effect|kind=print of a float32 value
    "narrow_print_float32": _print_float32_off_by_one,
    # donate|arg=committed
    "narrow_donate_committed": _donated_committed_result,
})


# --- the forms and transformations of issue 56: one form or one flag each ------------


def _is_array(v: Any) -> bool:
    return isinstance(v, np.ndarray)


def _ppermute_array_read_transposed() -> None:
    """A perm given as a NumPy array is read transposed: its (source, destination) rows
    as (destination, source), the inverse permutation (cell ppermute|perm_form=array)."""
    import jax

    orig = jax.lax.ppermute

    @functools.wraps(orig)
    def ppermute(x: Any, axis_name: Any, perm: Any, *args: Any, **kw: Any) -> Any:
        if _is_array(perm):
            perm = perm[:, ::-1]
        return orig(x, axis_name, perm, *args, **kw)

    jax.lax.ppermute = ppermute


def _shard_map_fault(when: Callable[[dict[str, Any]], bool], wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Callable[[], None]:
    """A fault in `jax.shard_map`: where `when(its keywords)` (the call's form: in_specs
    given or not, a tuple or one spec, f given or not), the shard_map it makes is
    `wrap`ped."""

    def install() -> None:
        import jax

        orig = jax.shard_map

        @functools.wraps(orig)
        def shard_map(f: Any = None, /, **kw: Any) -> Any:
            bad = when({**kw, "decorator": f is None})
            if f is None:
                return lambda g: wrap(orig(g, **kw)) if bad else orig(g, **kw)
            return wrap(orig(f, **kw)) if bad else orig(f, **kw)

        jax.shard_map = shard_map

    return install


def _plus_one(g: Callable[..., Any]) -> Callable[..., Any]:
    """`g` with 1 added to every output (a tuple of them)."""
    import jax

    def h(*args: Any) -> Any:
        return jax.tree.map(lambda o: o + 1, g(*args))

    return h


def _doubled_derivative(g: Callable[..., Any]) -> Callable[..., Any]:
    """`g` whose derivative is twice the true one (a custom JVP rule doubling every float
    tangent out: jvp, linearize and, transposed, vjp all see it); its values right."""
    import jax
    import jax.numpy as jnp

    def h(*args: Any) -> Any:
        @jax.custom_jvp
        def k(*a: Any) -> Any:
            return g(*a)

        @k.defjvp
        def k_jvp(primals: Any, tangents: Any) -> Any:
            out, tan = jax.jvp(g, primals, tangents)
            return out, jax.tree.map(lambda t: t * 2 if jnp.issubdtype(t.dtype, jnp.floating) else t, tan)

        return k(*args)

    return h


def _inferred_spec_drops_an_axis() -> None:
    """With in_specs left out (jax infers them from the arguments' sharding types), the
    inferred spec of the first argument split along some dimension drops the axis of its
    last split dimension (cell call|in_specs=omitted)."""
    import jax

    orig = jax.shard_map

    @functools.wraps(orig)
    def shard_map(f: Any = None, /, **kw: Any) -> Any:
        if "in_specs" in kw:
            return orig(f, **kw) if f is not None else orig(**kw)

        def make(g: Any) -> Any:
            def call(*args: Any) -> Any:
                P = jax.sharding.PartitionSpec
                specs, dropped = [], False
                for a in args:
                    parts = list(getattr(jax.typeof(a).sharding.spec, "partitions", ()))
                    named = [i for i, e in enumerate(parts) if e]
                    if not dropped and named:
                        parts[named[-1]], dropped = None, True
                    specs.append(P(*parts))
                return orig(g, in_specs=tuple(specs), **kw)(*args)

            return call

        return make(f) if f is not None else make

    jax.shard_map = shard_map


def _linearize_plus_one() -> None:
    """jax.linearize's linear function adds 1 to every tangent it gives (the linearize
    mode)."""
    import jax

    orig = jax.linearize

    @functools.wraps(orig)
    def linearize(fun: Any, *primals: Any, **kw: Any) -> Any:
        out, lin = orig(fun, *primals, **kw)
        return out, _plus_one(lin)

    jax.linearize = linearize


def _checkpoint_policy_doubles() -> None:
    """jax.checkpoint under the dots_saveable policy doubles the function's float outputs
    (the grad_remat mode of a program with that remat_policy)."""
    import jax
    import jax.numpy as jnp

    orig = jax.checkpoint
    policy = jax.checkpoint_policies.dots_saveable

    @functools.wraps(orig)
    def checkpoint(fun: Any, *args: Any, **kw: Any) -> Any:
        g = orig(fun, *args, **kw)
        if kw.get("policy") is not policy:
            return g

        def h(*a: Any) -> Any:
            return jax.tree.map(lambda o: o * 2 if jnp.issubdtype(o.dtype, jnp.floating) else o, g(*a))

        return h

    jax.checkpoint = checkpoint


NARROW.update({
    "narrow_ppermute_perm_array_transposed": _ppermute_array_read_transposed,
    "narrow_pmean_axes_list": _wrap("pmean", lambda x, a, **kw: isinstance(a, list)),
    "narrow_pshuffle_perm_tuple": _wrap("pshuffle", lambda x, a, perm, **kw: isinstance(perm, tuple)),
    "narrow_psum_groups_array": _wrap("psum", lambda x, a, **kw: _is_array(kw.get("axis_index_groups"))),
    "narrow_psum_empty_axes": _wrap("psum", lambda x, a, **kw: a == ()),
    "narrow_shard_map_decorator": _shard_map_fault(lambda kw: kw["decorator"], _plus_one),
    "narrow_shard_map_single_out_spec": _shard_map_fault(
        lambda kw: not isinstance(kw.get("out_specs"), (tuple, list)), _plus_one),
    "narrow_shard_map_frozenset_axis_names": _shard_map_fault(lambda kw: isinstance(kw.get("axis_names"), frozenset), _plus_one),
    "narrow_shard_map_unchecked_derivative": _shard_map_fault(lambda kw: kw.get("check_vma") is False, _doubled_derivative),
    "narrow_inferred_in_spec_drops_axis": _inferred_spec_drops_an_axis,
    "narrow_linearize_plus_one": _linearize_plus_one,
    "narrow_checkpoint_dots_saveable": _checkpoint_policy_doubles,
})
