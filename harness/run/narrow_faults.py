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
