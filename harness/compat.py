"""The one place that knows how jax versions differ (and the only `jax._src` user).

Everything else in the harness calls these functions. jax 0.7+ exposes
`jax.shard_map(..., check_vma=)`; older jax has `jax.experimental.shard_map.shard_map(...,
check_rep=)`. Devices are forced before jax initialises its backend.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np

N_DEVICES = 8


def force_host_devices(n: int = N_DEVICES) -> None:
    """Ask XLA for `n` CPU devices. Must run before jax initialises its backend."""
    flag = f"--xla_force_host_platform_device_count={n}"
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = (flags + " " + flag).strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    try:
        jax.config.update("jax_num_cpu_devices", n)
    except Exception:  # older jax, or backend already up: XLA_FLAGS covers it
        pass


def jax_version() -> str:
    import jax

    return str(jax.__version__)


def has(feature: str) -> bool:
    """Whether the installed jax has a feature a program may use."""
    import jax

    if feature == "shard_map":
        return hasattr(jax, "shard_map")
    if feature == "all_gather_to":
        import inspect

        return "to" in inspect.signature(jax.lax.all_gather).parameters
    if feature == "typeof":
        return hasattr(jax, "typeof")
    return hasattr(jax.lax, feature) or hasattr(jax, feature)


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


def make_mesh(names: tuple[str, ...], sizes: tuple[int, ...], axis_types: tuple[str, ...]) -> Any:
    """A mesh over devices 0..n-1 in row-major order (not jax.make_mesh, which may
    reorder devices): device id == the row-major index of its mesh coordinate."""
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
