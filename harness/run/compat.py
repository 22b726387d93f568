"""The one place that knows how jax versions differ (and the only `jax._src` user).

Everything else in the harness calls these functions. Newer jax exposes
`jax.shard_map(..., check_vma=)` (0.6.2 has it); older jax (0.4.35) only has
`jax.experimental.shard_map.shard_map(..., check_rep=, auto=)`. Devices are forced before
jax initialises its backend.

`unsupported_features(program, mode)` names what a program uses that the installed jax
lacks, or defines differently from the semantics the oracle follows (jax 0.10.2); a mode
reports such a program as "unsupported", never as a pass or a failure. Each feature is
detected by probing jax, not by comparing version numbers; the versions are where it was
observed missing / present (`shardfuzz qualify` on 0.4.35, 0.6.2, 0.8.1, 0.10.2):

| feature | missing in | present in | probe |
|---|---|---|---|
| Mesh axis_types (explicit axes) | 0.4.35 | 0.6.2 | `jax.sharding.AxisType` |
| all_gather(to=...) | 0.4.35, 0.6.2, 0.8.1 | 0.10.2 | `to` in the signature of `jax.lax.all_gather` |
| eager partial-manual shard_map (axis_names) | 0.4.35, 0.6.2 | 0.8.1 | a tiny eager call raises NotImplementedError |
| check_vma typing (out_specs replication, collective operand vma) | 0.4.35 (check_rep) | 0.6.2 | `jax.shard_map` |
| nested shard_map without a mesh argument; lax.cond under check_rep | 0.4.35 | 0.6.2 | `jax.shard_map` |
| jax.smap, jax.set_mesh | 0.4.35, 0.6.2 | 0.8.1 | `jax.smap` |
| psum / pmean / psum_scatter of an operand varying over only some named axes is an error | 0.4.35, 0.6.2, 0.8.1 (implicit pvary) | 0.10.2 | `jax.lax.pcast` |

`jax.lax.pshuffle(x, axis_name, perm)` has one signature in all four, `jax_num_cpu_devices`
(missing in 0.4.35) is backed by XLA_FLAGS, and `jax.typeof` (missing in 0.4.35) only
feeds the vma observations (None when missing).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from programs.ops import NO_CPU_LOWERING, NO_CPU_VALUES

if TYPE_CHECKING:
    from programs.model import Program

N_DEVICES = 8
# the first jaxlib (major, minor) without --xla_cpu_use_fusion_emitters
FUSION_EMITTER_FLAG_UNTIL = (0, 11)


def codegen_flags(setting: str) -> list[str]:
    """XLA flags for `SHARDFUZZ_CODEGEN` (fast | default).

    `fast` (the default) turns down XLA's CPU backend: LLVM optimisation level 0 and,
    where this jaxlib has them (not 0.4.35), the loop emitters instead of the MLIR
    fusion emitters. About 80% of a small program's compile is that backend; `fast`
    compiles it about 1.5x faster (harness/benchmarks: 36.6 -> 24.5 ms per jit). Every
    shard_map-specific step (tracing, Shardy, the SPMD partitioner, collective
    lowering: the HLO passes) is untouched. `default` is XLA as a user runs it."""
    if setting == "default":
        return []
    if setting != "fast":
        raise ValueError(f"SHARDFUZZ_CODEGEN={setting!r}: use 'fast' or 'default'")
    flags = ["--xla_backend_optimization_level=0"]
    try:
        from importlib.metadata import version

        major, minor = (int(x) for x in version("jaxlib").split(".")[:2])
        # jaxlib 0.11 no longer knows the flag (XLA aborts at start-up: 'Unknown flag in
        # XLA_FLAGS'); measured: 0.6.0-0.10.2 accept it, 0.11.2 and 0.12.0 do not
        if (0, 6) <= (major, minor) < FUSION_EMITTER_FLAG_UNTIL:
            flags.append("--xla_cpu_use_fusion_emitters=false")
    except Exception:  # noqa: BLE001 - unknown jaxlib: the portable flag only
        pass
    return flags


def force_host_devices(n: int = N_DEVICES) -> None:
    """Ask XLA for `n` CPU devices (and the codegen `SHARDFUZZ_CODEGEN` asks for). Must
    run before jax initialises its backend."""
    flag = f"--xla_force_host_platform_device_count={n}"
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        flags = (flags + " " + flag).strip()
    for f in codegen_flags(os.environ.get("SHARDFUZZ_CODEGEN", "fast")):
        if f.split("=")[0] not in flags:
            flags = (flags + " " + f).strip()
    os.environ["XLA_FLAGS"] = flags
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    try:
        jax.config.update("jax_num_cpu_devices", n)
    except Exception:  # older jax, or backend already up: XLA_FLAGS covers it
        pass
    if "JAX_TRACEBACK_FILTERING" not in os.environ:
        # jax filters its own frames out of every raised exception by stat-ing each
        # frame's file: 60% of an abstract check of an invalid program. A fuzzer wants
        # the jax frames in its tracebacks anyway.
        jax.config.update("jax_traceback_filtering", "off")


def distributed_cpu(address: str, num_processes: int, process_id: int, timeout_s: int = 60) -> None:
    """Join a multi-process CPU runtime with gloo collectives (harness/run/mp_rank.py). jax
    0.10.2 needs `jax_cpu_collectives_implementation='gloo'` set before the backend starts
    (otherwise a CPU mesh over several processes has no cross-process collectives), then
    `jax.distributed.initialize`. The heartbeat and shutdown timeouts are short: a process
    whose partner was killed must not wait minutes for it."""
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(address, num_processes, process_id, initialization_timeout=timeout_s,
                               heartbeat_timeout_seconds=timeout_s, shutdown_timeout_seconds=5)


def mesh_over(devices: list[Any], names: tuple[str, ...], sizes: tuple[int, ...], axis_types: tuple[str, ...]) -> Any:
    """A mesh over these devices, in this order (row-major), like `make_mesh`."""
    import jax

    arr = np.array(devices, dtype=object).reshape(sizes)
    AxisType = getattr(jax.sharding, "AxisType", None)
    if AxisType is None:  # pragma: no cover
        return jax.sharding.Mesh(arr, names)
    return jax.sharding.Mesh(arr, names, axis_types=tuple(getattr(AxisType, t.capitalize()) for t in axis_types))


def jax_version() -> str:
    import jax

    return str(jax.__version__)


def has(feature: str) -> bool:
    """Whether the installed jax has a feature a program may use."""
    import jax

    if feature == "shard_map":
        return hasattr(jax, "shard_map")
    if feature == "gspmd":
        return hasattr(jax.config, "jax_use_shardy_partitioner")
    if feature == "all_gather_to":
        import inspect

        return "to" in inspect.signature(jax.lax.all_gather).parameters
    if feature == "typeof":
        return hasattr(jax, "typeof")
    if feature == "axis_types":
        return hasattr(jax.sharding, "AxisType")
    if feature == "eager_partial_manual":
        return _eager_partial_manual()
    if feature == "x64":
        return hasattr(jax, "enable_x64") or hasattr(__import__("jax.experimental").experimental, "enable_x64")
    return hasattr(jax.lax, feature) or hasattr(jax, feature)


def x64_scope(on: bool) -> contextlib.AbstractContextManager[Any]:
    """jax_enable_x64 on for a program that names float64 (`Program.x64`), off for every
    other (a worker runs both kinds): `jax.enable_x64(True)` (jax >= 0.8), else the older
    `jax.experimental.enable_x64()`; both are thread-local context managers."""
    import jax

    if not on:
        return contextlib.nullcontext()
    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(True)  # type: ignore[no-any-return]
    import jax.experimental

    return jax.experimental.enable_x64()  # type: ignore[attr-defined,no-any-return]


@functools.cache
def _eager_partial_manual() -> bool:
    """Whether a shard_map that leaves some mesh axes automatic runs outside jit (older
    jax raises a bare NotImplementedError from `_shard_map_impl`). Probed once, on a
    1x1 mesh."""
    import jax

    mesh = make_mesh(("a", "b"), (1, 1), ("auto", "auto"))
    P = jax.sharding.PartitionSpec
    f = shard_map(lambda x: (x,), mesh, (P(),), (P(),), frozenset({"a"}), True)
    try:
        jax.block_until_ready(f(np.zeros(1, np.float32)))
    except NotImplementedError:
        return False
    except Exception:  # anything else: the feature is there, the program will say more
        return True
    return True


VALUE_MODES = ("jit", "gspmd", "eager", "vmap", "vmap_spmd", "smap", "grad", "grad_remat", "probe", "multiprocess")


def _backend() -> str:
    import jax

    return str(jax.default_backend())


def unsupported_features(p: Program, mode: str | None = None) -> list[str]:
    """What `p` uses that this jax lacks, one short phrase each naming the feature
    (and the jax version); [] when this jax can run `p` as the oracle predicts.

    `mode`: the mode about to run it (some features are missing in one mode only)."""
    out = [f for f in _program_features(p) if f]
    if mode == "smap" and not (has("smap") and hasattr(__import__("jax"), "set_mesh")):
        out.append(f"jax.smap: jax {jax_version()} does not have it (or jax.set_mesh)")
    if mode == "lowering" and not _shardy_default():
        out.append(f"the lowering mode: jax {jax_version()} lowers with GSPMD by default (no sdy.manual_computation to compare)")
    if mode == "gspmd" and not has("gspmd"):
        out.append(f"the GSPMD partitioner: jax {jax_version()} has no jax_use_shardy_partitioner flag")
    out += _cpu_gaps(p, mode)
    if mode == "eager" and p.axis_names is not None and set(p.axis_names) != set(p.mesh.names):
        if not has("eager_partial_manual"):
            out.append(f"eager partial-manual shard_map (axis_names={sorted(p.axis_names)}): "
                       f"jax {jax_version()} runs it only under jit")
    return out


def _cpu_gaps(p: Program, mode: str | None) -> list[str]:
    """The op kinds XLA:CPU cannot run (or lower) that `p` uses, as the op table says
    (programs/ops.py `cpu_values`, `cpu_lowering`)."""
    out = []
    for k in sorted({op.kind for op in p.body}):
        if k in NO_CPU_LOWERING and (mode in VALUE_MODES or mode == "lowering"):
            out.append(f"{k}: XLA:CPU has no lowering for it (shapes, types and errors are checked by abstract)")
        elif k in NO_CPU_VALUES and mode in VALUE_MODES:
            out.append(f"{k} values: XLA:CPU cannot run it (shapes, types and errors are checked by abstract and lowering)")
    return out if out and _backend() == "cpu" else []  # the backend only when it matters (it starts jax)


def _probe(body: Callable[[Any], Any], check: bool = True) -> Exception | None:
    """Trace `body` under a checked shard_map on a one-device mesh; the exception, if any."""
    import jax

    mesh = make_mesh(("a",), (1,), ("auto",))
    P = jax.sharding.PartitionSpec
    f = shard_map(lambda x: (body(x),), mesh, (P("a"),), (P(),), None, check)
    try:
        jax.eval_shape(f, jax.ShapeDtypeStruct((1,), np.float32))
    except Exception as e:  # noqa: BLE001 - the probe's answer
        return e
    return None


@functools.cache
def _all_gather_accepts(to: str) -> bool:
    """Whether all_gather takes this exact `to=` value (0.9 accepts only 'varying' and
    'reduced'; the parameter's presence alone says nothing). Probed, never by version."""
    import jax

    # (unchecked: the probe asks whether the value is accepted, not what it makes vary)
    return _probe(lambda x: jax.lax.all_gather(x, "a", tiled=True, to=to), check=False) is None


@functools.cache
def _cond_under_check() -> bool:
    """Whether a lax.cond holding a psum traces inside a checked (check_rep / check_vma)
    shard_map: probed, since some releases without jax.shard_map run it."""
    import jax

    e = _probe(lambda x: jax.lax.cond(True, lambda c: jax.lax.psum(c, "a"), lambda c: jax.lax.psum(c, "a"), x))
    return not isinstance(e, NotImplementedError)


@functools.cache
def _shardy_default() -> bool:
    """Whether this jax partitions with Shardy unless told otherwise (the lowering mode
    reads the sdy.manual_computation regions Shardy emits)."""
    import jax

    return bool(getattr(jax.config, "jax_use_shardy_partitioner", False))


@functools.cache
def has_call(kind: str) -> bool:
    """Whether this jax has the function an op kind's call template names (programs/ops.py):
    jax.lax.axis_size, jax.lax.pcast, ... are missing from older releases."""
    import importlib

    from programs.ops import OP_TABLE

    call = OP_TABLE[kind].call
    if call.module not in ("jax", "jax.lax", "jax.numpy"):
        return True
    return hasattr(importlib.import_module(call.module), call.function)


@functools.lru_cache(maxsize=512)
def _program_features(p: Program) -> tuple[str, ...]:
    v = jax_version()
    out: list[str] = []
    for k in sorted({op.kind for op in p.all_ops()}):
        if not has_call(k):
            out.append(f"{k}: jax {v} has no such function")
    if any(t != "auto" for t in p.mesh.axis_types) and not has("axis_types"):
        out.append(f"Mesh axis_types={p.mesh.axis_types}: jax {v} has no jax.sharding.AxisType")
    if any(op.kind == "shard_map" for op in p.body) and not has("shard_map"):
        out.append(f"nested shard_map (mesh from context): jax {v} has no jax.shard_map")
    if p.check_vma and any(op.p("wrap") == "cond" for op in p.body) and not _cond_under_check() :
        out.append(f"lax.cond in a check_rep shard_map: jax {v} has no replication rule for cond")
    if p.x64 and not has("x64"):
        out.append(f"float64 (jax_enable_x64 as a context manager): jax {v} has neither jax.enable_x64 nor jax.experimental.enable_x64")
    if any(op.kind == "pcast" for op in p.body) and not has("pcast"):
        out.append(f"jax.lax.pcast: jax {v} does not have it")
    for to in sorted({str(op.p("to")) for op in p.all_ops() if op.kind == "all_gather" and op.p("to") is not None}):
        if has("all_gather_to") and not _all_gather_accepts(to):
            out.append(f"all_gather(to={to!r}): jax {v} does not accept that value")
    if any(op.kind == "all_gather" and op.p("to") is not None for op in p.body) and not has("all_gather_to"):
        out.append(f"all_gather(to=...): jax {v} has no 'to' parameter")
    if p.check_vma and not (has("shard_map") and has("pcast")):
        # The oracle types values as jax 0.10.2 does (check_vma). Older jax decides
        # replication with other rules: check_rep (no jax.shard_map) accepts
        # out_specs the vma rules reject, and before lax.pcast psum/psum_scatter pvary an
        # operand varying over only some of the named axes instead of rejecting it.
        # Programs whose predicted verdict is one of those checks are not comparable.
        from oracles.interpreter import trace
        from oracles.prediction import ErrorKind

        _, err = trace(p, with_values=False)
        kind = "" if err is None else err.kind.value
        if not has("shard_map") and kind in (ErrorKind.OUT_SPEC_REPLICATION.value, ErrorKind.COLLECTIVE_VMA.value):
            out.append(f"check_vma typing ({kind}): jax {v} checks replication with check_rep")
        elif not has("pcast") and kind == ErrorKind.COLLECTIVE_VMA.value:
            out.append(f"psum of an operand varying over only some named axes is an error only "
                       f"from jax with lax.pcast; jax {v} pvarys it implicitly")
    return tuple(out)


def shard_map(
    f: Callable[..., Any],
    mesh: Any,
    in_specs: Any,
    out_specs: Any,
    axis_names: frozenset[str] | None,
    check_vma: bool,
) -> Callable[..., Any]:
    import jax

    kw: dict[str, Any] = {}
    if axis_names is not None:
        kw["axis_names"] = set(axis_names)
    if hasattr(jax, "shard_map"):
        return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=check_vma, **kw)
    from jax.experimental.shard_map import shard_map as old  # pragma: no cover

    if axis_names is not None:
        kw = {"auto": frozenset(mesh.axis_names) - frozenset(axis_names)}
    return old(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_rep=check_vma, **kw)


@functools.lru_cache(maxsize=256)
def make_mesh(names: tuple[str, ...], sizes: tuple[int, ...], axis_types: tuple[str, ...]) -> Any:
    """A mesh over devices 0..n-1 in row-major order (not jax.make_mesh, which may
    reorder devices): device id == the row-major index of its mesh coordinate. Cached:
    meshes are immutable and programs reuse a handful of shapes."""
    import jax

    n = int(np.prod(sizes))
    devices = np.array(jax.devices()[:n]).reshape(sizes)
    AxisType = getattr(jax.sharding, "AxisType", None)
    if AxisType is None:  # pragma: no cover
        return jax.sharding.Mesh(devices, names)
    types = tuple(getattr(AxisType, t.capitalize()) for t in axis_types)
    return jax.sharding.Mesh(devices, names, axis_types=types)


def vma_of(x: Any) -> frozenset[str] | None:
    """The varying manual axes of a traced value, or None where jax does not say."""
    import jax

    typeof = getattr(jax, "typeof", None)
    if typeof is None:
        return None
    t = typeof(x)
    vma = getattr(t, "vma", None)
    if vma is None:
        mat = getattr(t, "mat", None)
        vma = getattr(mat, "varying", None)
    return None if vma is None else frozenset(str(a) for a in vma)


def internals() -> dict[str, Any]:
    """The jax internals that harness/faults.py patches to inject faults into one
    transformation rule (and nothing else may touch): keep every `jax._src` use here."""
    from jax._src import shard_map as _shard_map
    from jax._src.interpreters import ad, batching
    from jax._src.lax import parallel

    return {
        "transposes": ad.primitive_transposes,
        "batchers": batching.fancy_primitive_batchers,
        "shard_map": _shard_map,
        "parallel": parallel,
        "psum_invariant_p": parallel.psum_invariant_p,
        "all_gather_p": parallel.all_gather_p,
        "pvary": __import__("jax").lax.pvary if hasattr(__import__("jax").lax, "pvary") else None,
    }
