"""Deliberate faults, injected into jax inside a worker to prove the harness catches them.

`SHARDFUZZ_FAULTS=name[,name...]` in a worker's environment patches `jax.lax` before any
program runs. Each fault breaks one rule of jax the way a real bug would: a value rule
(a collective answering from the wrong device), a crash (abort inside a collective) or a
hang. Never active unless asked for.
"""

from __future__ import annotations

import functools
import os
import signal
import time
from collections.abc import Callable
from typing import Any

from harness.run import compat
from harness.run.compat import internals
from harness.run.modes_multiprocess import RANK_ENV
from harness.run.narrow_faults import NARROW


def _patch(name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    import jax

    orig = getattr(jax.lax, name)
    setattr(jax.lax, name, make(orig))


# --- value rules: a collective answering wrong --------------------------------------


def _psum_counts_device0_twice() -> None:
    """psum adds the first device's block twice (still invariant, as psum must be). An
    unreduced operand is summed right: jax takes no jnp.where of one, and the fault must
    break values, not make psum raise."""
    import jax
    import jax.numpy as jnp

    lax = jax.lax

    def make(orig: Callable[..., Any]) -> Callable[..., Any]:
        def psum(x: Any, axis_name: Any, **kw: Any) -> Any:
            t = jax.typeof(x) if hasattr(jax, "typeof") else None
            if getattr(getattr(t, "mat", None), "unreduced", None):  # (jax 0.10.2: ManualAxisType)
                return orig(x, axis_name, **kw)
            first = jnp.where(lax.axis_index(axis_name) == 0, x, jnp.zeros_like(x))
            return orig(x, axis_name, **kw) + orig(first, axis_name, **kw)
        return psum
    _patch("psum", make)


def _all_gather_reversed() -> None:
    """all_gather returns the blocks in reverse device order (untiled only)."""
    import jax.numpy as jnp

    def make(orig: Callable[..., Any]) -> Callable[..., Any]:
        def all_gather(x: Any, axis_name: Any, *, axis: int = 0, tiled: bool = False, **kw: Any) -> Any:
            out = orig(x, axis_name, axis=axis, tiled=tiled, **kw)
            if tiled:
                return out  # only untiled stacking is broken
            return jnp.flip(out, axis=axis)
        return all_gather
    _patch("all_gather", make)


def _ppermute_drops_last_pair() -> None:
    """ppermute forgets the last (source, destination) pair: that device gets zeros."""
    def make(orig: Callable[..., Any]) -> Callable[..., Any]:
        def ppermute(x: Any, axis_name: Any, perm: Any) -> Any:
            perm = list(perm)
            return orig(x, axis_name, perm[:-1] if len(perm) > 1 else perm)
        return ppermute
    _patch("ppermute", make)


def _pmin_is_pmax() -> None:
    """pmin computes the maximum."""
    import jax

    lax = jax.lax
    _patch("pmin", lambda orig: lambda x, axis_name, **kw: lax.pmax(x, axis_name, **kw))


# --- crashes and hangs ---------------------------------------------------------------


def _abort_in_pshuffle() -> None:
    """pshuffle aborts the process (as a crash inside XLA would)."""
    def make(orig: Callable[..., Any]) -> Callable[..., Any]:
        def pshuffle(*a: Any, **kw: Any) -> Any:
            os.abort()
        return pshuffle
    _patch("pshuffle", make)


def _hang_in_pswapaxes() -> None:
    """pswapaxes never returns."""
    def make(orig: Callable[..., Any]) -> Callable[..., Any]:
        def pswapaxes(*a: Any, **kw: Any) -> Any:
            time.sleep(3600)
        return pswapaxes
    _patch("pswapaxes", make)


def _hang_in_shard_map() -> None:
    """Every shard_map never returns: each job of every mode hangs (a run's time budget
    must still end it)."""
    import jax

    def shard_map(*a: Any, **kw: Any) -> Any:
        time.sleep(3600)

    jax.shard_map = shard_map


STATE_ENV = "SHARDFUZZ_FAULT_STATE"  # a directory the faults that happen once mark, shared by a run's workers


def _once_in_eager(name: str, fault: Callable[[], None]) -> None:
    """`fault` at the first eager primitive any worker of the run applies; every later
    one runs as it should (as a timeout under load that passes alone, or a crash another
    job caused, would). Needs SHARDFUZZ_FAULT_STATE: a directory the run's workers share,
    in which the first marks that the fault happened (a file named after it)."""
    state = os.environ.get(STATE_ENV)
    if not state:
        raise ValueError(f"{name}: set {STATE_ENV} to a directory the run's workers share")
    mark = os.path.join(state, name)
    sm = internals()["shard_map"]
    orig = sm._prim_applier

    def applier(prim: Any, *args: Any, **kw: Any) -> Any:
        try:
            os.close(os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return orig(prim, *args, **kw)
        fault()
        return orig(prim, *args, **kw)

    sm._prim_applier = applier


# --- the multi-process path only: a rank process of the multiprocess mode ------------


def _in_rank(rank: int) -> bool:
    """Whether this process is that rank of a multiprocess-mode mesh (harness/run/mp_rank.py)."""
    return os.environ.get(RANK_ENV) == str(rank)


def _mp_psum_scatter_rank0_off_by_one() -> None:
    """psum_scatter adds 1 to its result on process 0 of a multi-process mesh, as
    jax-ml/jax#40830's gloo bug is wrong on rank 0 only: no single-process mode sees it."""
    def make(orig: Callable[..., Any]) -> Callable[..., Any]:
        def psum_scatter(x: Any, axis_name: Any, **kw: Any) -> Any:
            out = orig(x, axis_name, **kw)
            return out + 1 if _in_rank(0) else out
        return psum_scatter
    _patch("psum_scatter", make)


def _mp_rank1_killed_in_pmin() -> None:
    """Process 1 of a multi-process mesh is killed with SIGKILL (kill -9) when it traces a
    pmin; its partner is left waiting."""
    def make(orig: Callable[..., Any]) -> Callable[..., Any]:
        def pmin(x: Any, axis_name: Any, **kw: Any) -> Any:
            if _in_rank(1):
                os.kill(os.getpid(), signal.SIGKILL)
            return orig(x, axis_name, **kw)
        return pmin
    _patch("pmin", make)


def _mp_rank0_hangs_in_pmax() -> None:
    """Process 0 of a multi-process mesh never returns from tracing a pmax."""
    def make(orig: Callable[..., Any]) -> Callable[..., Any]:
        def pmax(x: Any, axis_name: Any, **kw: Any) -> Any:
            if _in_rank(0):
                time.sleep(3600)
            return orig(x, axis_name, **kw)
        return pmax
    _patch("pmax", make)


# --- transformation rules: only one mode sees them -----------------------------------


def _psum_transpose_doubles() -> None:
    """The transpose rule of psum scales the cotangent by 2: only reverse mode sees it."""
    i = internals()
    orig = i["transposes"][i["psum_invariant_p"]]

    def transpose(cts: Any, *args: Any, **kw: Any) -> Any:
        return [None if c is None else 2 * c for c in orig(cts, *args, **kw)]

    i["transposes"][i["psum_invariant_p"]] = transpose


def _all_gather_batching_doubles() -> None:
    """The batching rule of all_gather doubles its result: only vmap sees it."""
    i = internals()
    orig = i["batchers"][i["all_gather_p"]]

    def batcher(*args: Any, **kw: Any) -> Any:
        out, dim = orig(*args, **kw)
        return out * 2, dim

    i["batchers"][i["all_gather_p"]] = batcher


def _eager_psum_off_by_one() -> None:
    """Eager shard_map runs each primitive through _prim_applier: psum adds one there,
    so only the eager path (never jit) computes it wrong."""
    import jax

    sm = internals()["shard_map"]
    orig = sm._prim_applier

    def applier(prim: Any, *args: Any, **kw: Any) -> Any:
        outs = orig(prim, *args, **kw)
        if prim.name == "psum_invariant":
            return jax.tree_util.tree_map(lambda o: o + 1, outs)
        return outs

    sm._prim_applier = applier


# --- removed checks: each deletes one of the checks shard_map makes ------------------


def _remove_check(module_key: str, fn: str) -> None:
    setattr(internals()[module_key], fn, lambda *a, **k: None)


# fault name -> its installer
_FAULTS: dict[str, Callable[[], None]] = {
    "no_check_specs": functools.partial(_remove_check, "shard_map", "_check_specs"),  # spec types, unknown axes
    "no_check_specs_vs_args": functools.partial(_remove_check, "shard_map", "_check_specs_vs_args"),  # rank, divisibility
    "no_check_out_rank": functools.partial(_remove_check, "shard_map", "_check_names"),  # out_spec rank
    "no_check_replication": functools.partial(_remove_check, "shard_map", "_check_mats"),  # out_specs vs vma
    "no_check_axis_names": functools.partial(_remove_check, "parallel", "_check_axis_names"),  # unbound axes
    "psum_transpose_doubles": _psum_transpose_doubles,
    "all_gather_batching_doubles": _all_gather_batching_doubles,
    "eager_psum_off_by_one": _eager_psum_off_by_one,
    "psum_counts_device0_twice": _psum_counts_device0_twice,
    "all_gather_reversed": _all_gather_reversed,
    "ppermute_drops_last_pair": _ppermute_drops_last_pair,
    "pmin_is_pmax": _pmin_is_pmax,
    "abort_in_pshuffle": _abort_in_pshuffle,
    "hang_in_pswapaxes": _hang_in_pswapaxes,
    "hang_in_shard_map": _hang_in_shard_map,
    "hang_once_in_eager": functools.partial(_once_in_eager, "hang_once_in_eager", lambda: time.sleep(3600)),
    "abort_once_in_eager": functools.partial(_once_in_eager, "abort_once_in_eager", os.abort),
    "mp_psum_scatter_rank0_off_by_one": _mp_psum_scatter_rank0_off_by_one,
    "mp_rank1_killed_in_pmin": _mp_rank1_killed_in_pmin,
    "mp_rank0_hangs_in_pmax": _mp_rank0_hangs_in_pmax,
    **NARROW,  # one configuration cell each (narrow_faults.py, benchmarks/reach.py)
}


CHECK_REMOVALS = ("no_check_specs", "no_check_specs_vs_args", "no_check_out_rank", "no_check_replication", "no_check_axis_names")
FAULT_NAMES = tuple(_FAULTS)  # the check removals first


def install(names: list[str]) -> None:
    for n in names:
        if n not in _FAULTS:
            raise ValueError(f"unknown fault {n!r}; known: {', '.join(FAULT_NAMES)}")
        _FAULTS[n]()


def install_from_env() -> None:
    names = [n for n in os.environ.get("SHARDFUZZ_FAULTS", "").split(",") if n]
    if names:
        compat.settle_probes()  # what jax supports is the real jax's answer, not the fault's
        install(names)
