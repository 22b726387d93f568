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
| nested shard_map without a mesh argument | 0.4.35 | 0.6.2 | `jax.shard_map` |
| a wrapper (cond, switch, while_loop, ...) around a collective under check_rep | while_loop: 0.5.3 | 0.6.0 | `_wrap_under_check`: a psum inside it, built by the lowering |
| jax.smap, jax.set_mesh | 0.4.35, 0.6.2 | 0.8.1 | `jax.smap` |
| psum / pmean / psum_scatter of an operand varying over only some named axes is an error | 0.4.35, 0.6.2, 0.8.1 (implicit pvary) | 0.10.2 | `jax.lax.pcast` |
| Explicit-mesh shard_map typing (in_specs vs the argument's sharding, `jax.typeof(out).sharding`), jax.set_mesh, reshard | | 0.10.2 | `_explicit_typing`: a one-device probe |
| `jax.sharding.auto_axes` / `explicit_axes` around the call (`Program.wrap`) | | 0.10.2 | `hasattr(jax.sharding, ...)` |
| `PartitionSpec(unreduced=, reduced=)`, pcast(to='reduced' / 'unreduced') | | 0.10.2 | `_spec_accepts_ur`, `_pcast_accepts`: probes |
| unreduced / reduced values in an eager (un-jitted) shard_map | 0.9.2 (NotImplementedError) | 0.10.2 | `_eager_ur`: a one-device probe |

`jax.lax.pshuffle(x, axis_name, perm)` has one signature in all four, `jax_num_cpu_devices`
(missing in 0.4.35) is backed by XLA_FLAGS, and `jax.typeof` (missing in 0.4.35) only
feeds the vma observations (None when missing).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import os
from collections.abc import Callable, Iterable, Iterator
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.run.lowering import to_pspec, wrapped
from oracles.explicit import argument_sharding
from oracles.interpreter import trace
from oracles.prediction import ErrorKind
from programs.emit import PERMUTE_ORDER_FLAG
from programs.model import CallForm, Op
from programs.ops import NO_CPU_LOWERING, NO_CPU_VALUES, OP_TABLE, WRAPS
from programs.points import DERIVATIVE_MODES, REVERSE_MODES

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
    compiles it about 1.5x faster (benchmarks/throughput.py times jit in both). Every
    shard_map-specific step (tracing, Shardy, the SPMD partitioner, collective
    lowering: the HLO passes) is untouched. `default` is XLA as a user runs it."""
    if setting == "default":
        return []
    if setting != "fast":
        raise ValueError(f"SHARDFUZZ_CODEGEN={setting!r}: use 'fast' or 'default'")
    flags = ["--xla_backend_optimization_level=0"]
    if _knows_fusion_emitter_flag():
        flags.append(f"{FUSION_EMITTER_FLAG}=false")
    return flags


FUSION_EMITTER_FLAG = "--xla_cpu_use_fusion_emitters"


def _knows_fusion_emitter_flag() -> bool:
    """Whether this jaxlib accepts --xla_cpu_use_fusion_emitters. jaxlib 0.11 no longer
    knows it (XLA aborts at start-up: 'Unknown flag in XLA_FLAGS'); measured: 0.6.0-0.10.2
    accept it, 0.11.2 and 0.12.0 do not."""
    try:
        major, minor = (int(x) for x in version("jaxlib").split(".")[:2])
    except Exception:  # noqa: BLE001 - unknown jaxlib: the portable flag only
        return False
    return (0, 6) <= (major, minor) < FUSION_EMITTER_FLAG_UNTIL


def force_host_devices(n: int = N_DEVICES) -> None:
    """Ask XLA for `n` CPU devices (and the codegen `SHARDFUZZ_CODEGEN` asks for). Must
    run before jax initialises its backend."""
    flag = f"--xla_force_host_platform_device_count={n}"
    flags = os.environ.get("XLA_FLAGS", "")
    if FUSION_EMITTER_FLAG in flags and not _knows_fusion_emitter_flag():
        # inherited from a shardfuzz process on an older jaxlib (qualify, replay --python
        # start this jax's workers from a 0.10.2 process): this jaxlib would abort on it
        flags = " ".join(f for f in flags.split() if not f.startswith(FUSION_EMITTER_FLAG))
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
        return _all_gather_has_to()
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


VALUE_MODES = ("jit", "gspmd", "eager", "vmap", "vmap_spmd", "smap", "grad", "grad_remat", "jvp", "linearize", "hessian", "probe",
               "probe_eager", "probe_gspmd", "multiprocess")


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
    out += _explicit_mode_gaps(p, mode)
    if mode in REVERSE_MODES and any(op.p("wrap") == "while" for op in p.body):
        # jax defines no transpose for while_loop (ValueError "Reverse-mode
        # differentiation does not work for lax.while_loop or lax.fori_loop with dynamic
        # start/stop values", jax/_src/lax/control_flow/loops.py _while_transpose_error):
        # the values are checked in the other modes
        out.append("lax.while_loop (wrap='while'): jax has no reverse-mode derivative of it")
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

    lax = jax.lax
    if to == "reduced":  # (checked: all_gather_reduced wants an operand typed as varying)
        return _probe(lambda x: lax.psum(lax.pcast(lax.all_gather(x, "a", tiled=True, to=to), "a", to="varying"), "a")) is None
    # (unchecked: the probe asks whether the value is accepted, not what it makes vary)
    return _probe(lambda x: lax.all_gather(x, "a", tiled=True, to=to), check=False) is None


@functools.cache
def _wrap_under_check(wrap: str) -> bool:
    """Whether a psum inside this wrapper (lax.cond, switch, while_loop, fori_loop, ...,
    exactly as the lowering builds it) traces inside a checked (check_rep / check_vma)
    shard_map: probed, never by version (jax 0.5.3 runs a cond there but has no
    replication rule for while: 'No replication rule for while')."""
    e = _probe(lambda x: wrapped(Op("psum", (0,), (("axes", ("a",)), ("wrap", wrap))), [x]))
    return not isinstance(e, NotImplementedError)


@functools.cache
def _body_vjp_transposes_psum_to_pvary() -> bool:
    """Whether jax.grad inside a checked shard_map body transposes a psum of a varying
    value to pvary (the cotangent itself, as the oracle's transform rule says: check_vma's
    efficient transposition) rather than to psum (n times it). Probed on two devices:
    jax 0.5.3's check_rep rewrites only the derivative of the shard_map itself."""
    import jax

    if len(jax.devices()) < 2:
        return True  # (nothing to tell apart on one device)
    mesh = make_mesh(("a",), (2,), ("auto",))
    P = jax.sharding.PartitionSpec
    body = lambda x: jax.grad(lambda c: jax.lax.psum(c, "a").sum())(x)  # noqa: E731
    try:
        out = jax.jit(shard_map(body, mesh, (P("a"),), P("a"), None, True))(np.ones(2, np.float32))
    except Exception:  # noqa: BLE001 - the probe's answer
        return False
    return bool(np.allclose(np.asarray(out), 1.0))


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
    for wrap in sorted({str(op.p("wrap")) for op in p.all_ops() if op.p("wrap") is not None} if p.check_vma else ()):
        if not _wrap_under_check(wrap):
            out.append(f"{wrap} around a collective in a check_rep shard_map: jax {v} has no replication rule for it")
    if p.x64 and not has("x64"):
        out.append(f"float64 (jax_enable_x64 as a context manager): jax {v} has neither jax.enable_x64 nor jax.experimental.enable_x64")
    if p.check_vma and any(op.kind == "transform" and op.p("transform") != "jvp" for op in p.body) \
            and not _body_vjp_transposes_psum_to_pvary():
        out.append(f"jax.vjp / jax.grad inside a checked shard_map: jax {v} transposes a psum there to psum, "
                   "not pvary (its check_rep rewrites only the shard_map's own derivative)")
    if any(op.kind == "pcast" for op in p.body) and not has("pcast"):
        out.append(f"jax.lax.pcast: jax {v} does not have it")
    for to in sorted({str(op.p("to")) for op in p.all_ops() if op.kind == "all_gather" and op.p("to") is not None}):
        if has("all_gather_to") and not _all_gather_accepts(to):
            out.append(f"all_gather(to={to!r}): jax {v} does not accept that value")
    if any(op.kind == "all_gather" and op.p("to") is not None for op in p.body) and not has("all_gather_to"):
        out.append(f"all_gather(to=...): jax {v} has no 'to' parameter")
    out += _explicit_features(p, v)
    if p.check_vma and not (has("shard_map") and has("pcast")):
        # The oracle types values as jax 0.10.2 does (check_vma). Older jax decides
        # replication with other rules: check_rep (no jax.shard_map) accepts
        # out_specs the vma rules reject, and before lax.pcast psum/psum_scatter pvary an
        # operand varying over only some of the named axes instead of rejecting it.
        # Programs whose predicted verdict is one of those checks are not comparable.
        _, err = trace(p, with_values=False)
        kind = "" if err is None else err.kind.value
        if not has("shard_map") and kind in (ErrorKind.OUT_SPEC_REPLICATION.value, ErrorKind.COLLECTIVE_VMA.value):
            out.append(f"check_vma typing ({kind}): jax {v} checks replication with check_rep")
        elif not has("pcast") and kind == ErrorKind.COLLECTIVE_VMA.value:
            out.append(f"psum of an operand varying over only some named axes is an error only "
                       f"from jax with lax.pcast; jax {v} pvarys it implicitly")
    return tuple(out)


_UR_KINDS = ("pcast to reduced / unreduced", "all_gather(to='reduced')")


def ur_mode_gap(mode: str | None) -> str | None:
    """Why `mode` runs no program holding a reduced / unreduced value (pcast to them,
    all_gather(to='reduced'), a spec naming them) on this jax, or None where it runs them.
    The same for every such program: the run lists the cells only those ops hold as
    unreachable in that mode with this reason (harness/campaign/cells.py `unreachable`)."""
    v = jax_version()
    if mode in ("vmap", "vmap_spmd", "hessian") and not _ur_batching():
        # parallel.py: the batching rules of vary_unreduced_cast, preduced,
        # reduced_vary_cast, unreduced_psum and all_gather_reduced raise NotImplementedError
        # (the hessian mode batches the program too: jax.hessian and jax.jacfwd vmap it)
        return f"{' / '.join(_UR_KINDS)} under vmap (and jax.hessian / jax.jacfwd, which vmap): jax {v} has no batching rule for them (NotImplementedError)"
    if mode == "eager" and not _eager_ur():
        # jax 0.9.2: "Eager shard_map with unreduced/reduced is not implemented. Please
        # wrap your shard_map in `jax.jit`."
        return f"{' / '.join(_UR_KINDS)} in eager shard_map: jax {v} does not implement them (NotImplementedError: wrap it in jax.jit)"
    if mode == "smap":
        # smap leaves the other mesh axes automatic: jax 0.10.2 does not handle reduced /
        # unreduced values outside full manual ("TODO ... partial manual unreduced")
        return f"{' / '.join(_UR_KINDS)} under smap: jax {v} handles them only in a full-manual shard_map"
    return None


def ur_mode_gaps(modes: Iterable[str]) -> dict[str, str]:
    """`ur_mode_gap` of each of `modes` that has one."""
    return {m: g for m in modes if (g := ur_mode_gap(m)) is not None}


def _explicit_mode_gaps(p: Program, mode: str | None) -> list[str]:
    """Modes that cannot run an explicit-mesh or reduced / unreduced program as the
    oracle means it, each with why (data, not a skip: the program is checked in the
    other modes)."""
    out = []
    gap = ur_mode_gap(mode) if p.uses_ur() else None
    if gap is not None:
        out.append(gap)
    if mode in DERIVATIVE_MODES and (p.explicit_axes or p.wrap is not None):
        # harness gap: the grad modes make cotangents as unsharded arrays and flatten
        # outputs with reshape, which an Explicit output's sharding type refuses (an
        # Auto mesh entered with jax.set_mesh has no sharding types: they run it)
        out.append("the grad modes with Explicit axes: their cotangents carry no sharding types yet (shardfuzz)")
    if p.wrap is not None and mode in ("vmap", "vmap_spmd", "smap"):
        out.append(f"{p.wrap} around the call under {mode}: the mode does not wrap its call that way (shardfuzz)")
    if mode == "multiprocess" and p.needs_mesh_context():
        out.append("the multiprocess mode under a mesh context: its two-process mesh is not entered with jax.set_mesh (shardfuzz)")
    if mode == "eager" and "explicit" in p.outer_mesh().axis_types and any(x.closure == "outer" for x in p.inputs):
        # (jit traces the NumPy argument the body closes over: untyped, it runs)
        out.append("eager closing over a value of the called function on a mesh with an Explicit axis: the eager form "
                   "closes over a concrete jax array, typed with the mesh's Explicit axes under jax.set_mesh, which jax "
                   "does not implement (NotImplementedError, jax-ml/jax#29162)")
    if mode == "multiprocess" and p.has_edges():
        out.append("the multiprocess mode with placed or closed-over arguments, effects or donation: its rank "
                   "processes run the plain call (shardfuzz)")
    return out


@functools.cache
def _eager_ur() -> bool:
    """Whether an eager (un-jitted) shard_map runs a body holding pcast(to='unreduced')
    (jax 0.9.2 raises NotImplementedError for any unreduced / reduced value there).
    Probed on a one-device Explicit mesh; any other failure means the feature is there
    (0.10.2 fails this exact probe with the known size-1-axis AssertionError)."""
    import jax

    if not (_pcast_accepts("unreduced") and hasattr(jax, "set_mesh") and hasattr(jax.sharding, "reshard")):
        return False
    lax, P = jax.lax, jax.sharding.PartitionSpec
    mesh = make_mesh(("a",), (1,), ("explicit",))
    try:
        with jax.set_mesh(mesh):
            f = jax.shard_map(lambda x: lax.psum(lax.pcast(x, "a", to="unreduced"), "a"), in_specs=P("a"), out_specs=P())
            jax.block_until_ready(f(jax.sharding.reshard(np.zeros(1, np.float32), P("a"))))
    except NotImplementedError:
        return False
    except Exception:  # noqa: BLE001 - implemented; the program will say more
        return True
    return True


@functools.cache
def _ur_batching() -> bool:
    """Whether vmap runs a body holding pcast(to='unreduced') and its psum (probed)."""
    import jax

    lax = jax.lax
    if not _pcast_accepts("unreduced"):
        return False
    e = _probe(lambda x: jax.vmap(lambda y: lax.psum(lax.pcast(y, "a", to="unreduced"), "a"))(x[None]))
    return e is None


def _explicit_features(p: Program, v: str) -> list[str]:
    """Explicit meshes, jax.set_mesh, reshard, reduced / unreduced: each probed in the
    exact form the program uses."""
    import jax

    out = []
    if p.needs_mesh_context() and not hasattr(jax, "set_mesh"):
        out.append(f"jax.set_mesh (the mesh context): jax {v} does not have it")
    if p.reshard and not hasattr(jax.sharding, "reshard"):
        out.append(f"jax.sharding.reshard: jax {v} does not have it")
    if p.wrap is not None and not hasattr(jax.sharding, p.wrap):
        out.append(f"jax.sharding.{p.wrap}: jax {v} does not have it")
    if p.explicit_axes and has("axis_types") and not _explicit_typing():
        out.append(f"shard_map on an Explicit mesh: jax {v} does not type it as jax 0.10.2 does (in_specs vs the argument's sharding, jax.typeof(out).sharding)")
    elif _partial_manual_mismatch(p) and _partial_manual_arg_check():
        out.append(f"a partial-manual shard_map on an all-Explicit mesh: jax {v} checks an argument's sharding along the "
                   "manual axes against its in_spec, which jax 0.10.2 reshards")
    if any(s.unreduced or s.reduced for s in p.in_specs + p.out_specs) and not _spec_accepts_ur():
        out.append(f"PartitionSpec(unreduced=, reduced=): jax {v} does not have them")
    for to in sorted({str(op.p("to")) for op in p.body if op.kind == "pcast" and op.p("to") != "varying"}):
        if not _pcast_accepts(to):
            out.append(f"pcast(to={to!r}): jax {v} does not accept that value")
    return out


@functools.cache
def _spec_accepts_ur() -> bool:
    import jax

    try:
        jax.sharding.PartitionSpec(None, unreduced={"a"}, reduced={"b"})
    except TypeError:
        return False
    return True


@functools.cache
def _pcast_accepts(to: str) -> bool:
    """Whether pcast takes this `to=` (and types the result as jax 0.10.2 does): probed
    on the transition the oracle allows into it."""
    import jax

    if not hasattr(jax.lax, "pcast"):
        return False
    lax = jax.lax  # (the probe's argument varies over "a")
    if to == "unreduced":
        return _probe(lambda x: lax.psum(lax.pcast(x, "a", to="unreduced"), "a")) is None
    return _probe(lambda x: lax.psum(lax.pcast(lax.pcast(lax.psum(x, "a"), "a", to=to), "a", to="varying"), "a")) is None


@functools.cache
def _explicit_typing() -> bool:
    """Whether a shard_map on an all-Explicit mesh checks an unresharded argument against
    its in_spec, and types its output by the out_spec (`float32[1@a]`), as 0.10.2 does.
    Probed on a one-device mesh."""
    import jax

    if not (hasattr(jax, "set_mesh") and hasattr(jax.sharding, "reshard") and hasattr(jax, "typeof")):
        return False
    P = jax.sharding.PartitionSpec
    mesh = make_mesh(("a",), (1,), ("explicit",))
    try:
        with jax.set_mesh(mesh):
            f = jax.shard_map(lambda x: x, in_specs=P("a"), out_specs=P("a"))
            try:
                jax.eval_shape(f, jax.ShapeDtypeStruct((1,), np.float32))
                return False  # no check of the argument's sharding
            except ValueError:
                pass
            out = jax.eval_shape(lambda x: f(jax.sharding.reshard(x, P("a"))), jax.ShapeDtypeStruct((1,), np.float32))
            return sharding_type_of(out) == ((("a",),), (), ())
    except Exception:  # noqa: BLE001 - any other failure: not the form the oracle follows
        return False


def _partial_manual_mismatch(p: Program) -> bool:
    """An all-Explicit mesh, partial manual, and an argument whose sharding along the
    manual axes (oracles/explicit.py `argument_sharding`) is not its in_spec."""
    if not p.mesh.names or len(p.explicit_axes) != len(p.mesh.names) or set(p.manual_axes) == set(p.mesh.names):
        return False
    manual = set(p.manual_axes)
    for i, (x, s) in enumerate(zip(p.inputs, p.in_specs)):
        if s.kind != "P" or x.closure is not None:
            continue
        rank = len(x.shape)
        arg = argument_sharding(p, i)
        mine = [tuple(a for a in e if a in manual) if e else () for e in tuple(arg.entries) + (None,) * (rank - len(arg.entries))]
        want = [tuple(e) if e else () for e in tuple(s.entries) + (None,) * (rank - len(s.entries))]
        if mine[:rank] != want[:rank]:
            return True
    return False


@functools.cache
def _partial_manual_arg_check() -> bool:
    """Whether a partial-manual shard_map on an all-Explicit mesh checks an unsharded
    argument against an in_spec that splits it (jax 0.12.0 raises 'in_specs passed to
    shard_map: ... does not match the specs of the input'; 0.10.2 reshards it, as the
    oracle does). Probed on a mesh of two size-1 axes."""
    import jax

    if not (hasattr(jax, "set_mesh") and hasattr(jax, "shard_map")):
        return False
    P = jax.sharding.PartitionSpec
    mesh = make_mesh(("a", "b"), (1, 1), ("explicit", "explicit"))
    try:
        with jax.set_mesh(mesh):
            f = jax.shard_map(lambda x: x, in_specs=P("a"), out_specs=P("a"), axis_names={"a"})
            jax.eval_shape(f, jax.ShapeDtypeStruct((1,), np.float32))
    except ValueError:
        return True
    except Exception:  # noqa: BLE001 - another failure: not this check
        return False
    return False


def _in_form(specs: Any, form: str) -> Any:
    """A tuple of specs in the call's form (programs/model.py CallForm): the tuple, a
    list, or its one spec ("single": every spec equal)."""
    if form == "list":
        return list(specs)
    if form == "single" and specs:
        return specs[0]
    return specs


def shard_map(
    f: Callable[..., Any],
    mesh: Any,
    in_specs: Any,
    out_specs: Any,
    axis_names: frozenset[str] | None,
    check_vma: bool,
    form: CallForm | None = None,
) -> Callable[..., Any]:
    """`jax.shard_map` of `f`, written in the call form `form` (programs/model.py CallForm:
    the style, in_specs / out_specs as a tuple, a list, one spec or (in_specs) left out,
    axis_names as a set or a frozenset); older jax: jax.experimental.shard_map."""
    import jax

    form = form or CallForm()
    kw: dict[str, Any] = {}
    if axis_names is not None:
        kw["axis_names"] = frozenset(axis_names) if form.axis_names == "frozenset" else set(axis_names)
    if hasattr(jax, "shard_map"):
        kw.update(mesh=mesh, out_specs=_in_form(out_specs, form.out_specs), check_vma=check_vma)
        if form.in_specs != "omitted":  # (left out: jax infers them from the arguments' types)
            kw["in_specs"] = _in_form(in_specs, form.in_specs)
        if form.style == "decorator":
            return jax.shard_map(**kw)(f)  # type: ignore[no-any-return]
        if form.style == "partial":
            return functools.partial(jax.shard_map, **kw)(f)  # type: ignore[no-any-return]
        return jax.shard_map(f, **kw)
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


def mesh_scope(p: Program) -> Any:
    """The context a mode runs `p` in: `jax.set_mesh(mesh)` where the program needs the
    mesh context (`Program.needs_mesh_context`), else nothing."""
    if not p.needs_mesh_context():
        return contextlib.nullcontext()
    import jax

    m = p.outer_mesh()  # (with auto_axes / explicit_axes around the call: the mesh outside them)
    return jax.set_mesh(make_mesh(m.names, m.sizes, m.axis_types))


def with_wrap(p: Program, make: Callable[[], Callable[..., Any]]) -> Callable[..., Any]:
    """The call inside `jax.sharding.auto_axes(f, axes=, out_sharding=)` or
    `explicit_axes(f, axes=, in_sharding=)` (`Program.wrap`); `make()` builds the
    shard_map inside the wrapper (made outside, jax.shard_map would keep the outer mesh:
    'The context mesh ... should match the mesh passed to shard_map', measured on 0.10.2)."""
    import jax

    specs = tuple(to_pspec(s) for s in p.wrap_specs)

    def call(*args: Any) -> Any:
        return make()(*args)

    if p.wrap == "auto_axes":
        return jax.sharding.auto_axes(call, axes=p.wrap_axes, out_sharding=specs)
    return jax.sharding.explicit_axes(call, axes=p.wrap_axes, in_sharding=specs)


def with_reshard(p: Program, f: Callable[..., Any]) -> Callable[..., Any]:
    """`f` (the shard_map) applied to its arguments resharded to their in_specs'
    Explicit axes, when `p.reshard` (under the mesh context: a bare P names its axes)."""
    if not p.reshard:
        return f
    import jax

    specs = [to_pspec(p.reshard_spec(i)) for i in range(len(p.inputs))]

    def resharded(*args: Any) -> Any:
        return f(*[jax.sharding.reshard(a, s) for a, s in zip(args, specs)])

    return resharded


def sharding_type_of(x: Any) -> tuple[tuple[tuple[str, ...], ...], tuple[str, ...], tuple[str, ...]] | None:
    """What `jax.typeof(x).sharding.spec` shows of a global value: per dimension the mesh
    axes it is split over (only Explicit axes appear there), then its unreduced and
    reduced axes (sorted); None where jax does not say."""
    import jax

    typeof = getattr(jax, "typeof", None)
    if typeof is None:
        return None
    if isinstance(x, jax.ShapeDtypeStruct) and x.sharding is None:
        # jax.eval_shape reports an output's sharding only when every mesh axis is
        # Explicit or manual (stages.py `_traced_out_info`): on a mixed mesh it does not say
        return None
    try:
        sharding = getattr(typeof(x), "sharding", None)
    except Exception:  # noqa: BLE001 - older jax cannot type this object: nothing to say
        return None
    spec = getattr(sharding, "spec", None)
    if spec is None:
        return None
    rank = len(x.shape)
    parts = tuple(spec)[:rank] if not hasattr(spec, "partitions") else tuple(spec.partitions)[:rank]
    dims = tuple(() if e is None else ((str(e),) if isinstance(e, str) else tuple(str(a) for a in e)) for e in parts)
    dims = dims + ((),) * (rank - len(dims))
    return (
        dims,
        tuple(sorted(str(a) for a in getattr(spec, "unreduced", ()) or ())),
        tuple(sorted(str(a) for a in getattr(spec, "reduced", ()) or ())),
    )


def ur_of(x: Any) -> tuple[frozenset[str], frozenset[str]] | None:
    """The unreduced and reduced manual axes of a traced body value (`jax.typeof(x).mat`,
    jax >= 0.8), or None where jax does not say."""
    import jax

    typeof = getattr(jax, "typeof", None)
    mat = getattr(typeof(x), "mat", None) if typeof is not None else None
    if mat is None or not hasattr(mat, "unreduced"):
        return None
    return frozenset(str(a) for a in mat.unreduced), frozenset(str(a) for a in getattr(mat, "reduced", ()))


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


@contextlib.contextmanager
def program_config(p: Program) -> Iterator[None]:
    """The jax configuration under which this jax runs `p` as the documented semantics
    say, for the length of one mode's run. jax 0.11+ refuses a ppermute/pshuffle over
    axes out of mesh order while lowering (RuntimeError 'Make sure that the axis_name
    passed to jax.lax.ppermute is in the same order as the axis_names declared on the
    mesh') unless `jax_raise_on_ppermute_sort_diff` is off, and with it off gives the
    documented values: such a program runs with it off (probed: the flag exists), so its
    values are still checked there; earlier jax has no flag (and the known entry
    ppermute-multi-axis-order)."""
    import jax

    if not (p.permutes_out_of_mesh_order() and hasattr(jax.config, PERMUTE_ORDER_FLAG)):
        yield
        return
    prev = getattr(jax.config, PERMUTE_ORDER_FLAG)
    jax.config.update(PERMUTE_ORDER_FLAG, False)
    try:
        yield
    finally:
        jax.config.update(PERMUTE_ORDER_FLAG, prev)



@functools.cache
def _all_gather_has_to() -> bool:
    """Whether jax.lax.all_gather takes `to=` (read once: a deliberate fault's wrapper
    of all_gather has no such parameter, and must not make every program using it
    unsupported; `settle_probes` reads it before the fault patches jax.lax)."""
    import jax

    return "to" in inspect.signature(jax.lax.all_gather).parameters


def settle_probes() -> None:
    """Answer every feature probe now, against the real jax. A worker with deliberate
    faults (harness/run/faults.py) calls this before patching jax.lax: the probes say
    what jax supports, and a patched psum (whose fault cannot take an unreduced operand)
    must not turn pcast(to='unreduced') into "unsupported" and hide the programs the
    fault should be caught in."""
    _eager_partial_manual()
    for wrap in WRAPS:
        _wrap_under_check(wrap)
    _shardy_default()
    _spec_accepts_ur()
    _explicit_typing()
    if has("all_gather_to"):
        for to in ("varying", "invarying", "reduced"):
            _all_gather_accepts(to)
    for to in ("unreduced", "reduced"):
        _pcast_accepts(to)
    _ur_batching()
    _eager_ur()
