"""Modes: one way of running a program through real jax. Each has `run(program)`.

- `abstract`: `jax.eval_shape` of the shard_map (errors, shapes, dtypes; the vma of every
  body value read with `jax.typeof` while tracing). No compile.
- `eager`: the shard_map called directly, outside jit.
- `jit`: `jax.jit` of the shard_map.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from harness import compat
from harness.lowering import make_body, to_pspec
from programs.model import Program


@dataclass(frozen=True, eq=False)
class ObservedOutput:
    global_shape: tuple[int, ...]
    dtype: str
    global_value: np.ndarray | None  # None in the abstract mode
    device_values: dict[tuple[int, ...], np.ndarray] | None  # mesh coord -> block


@dataclass(frozen=True, eq=False)
class Observation:
    """What jax did with one program in one mode."""

    mode: str
    error_type: str | None = None  # exception class name
    error_message: str = ""
    error_traceback: str = ""
    outputs: tuple[ObservedOutput, ...] = ()
    value_types: dict[int, tuple[tuple[int, ...], str, frozenset[str] | None]] = field(default_factory=dict)
    elapsed_s: float = 0.0
    status: str = "ok"  # ok | error | crash | timeout | unsupported
    phase: str = ""  # where an error arose: "" (building/tracing/running) or "read_output"

    @property
    def raised(self) -> bool:
        return self.error_type is not None


def _inputs(p: Program) -> list[np.ndarray]:
    return [x.materialize() for x in p.inputs]


class Mode:
    name: str = ""
    values: bool = True  # whether this mode produces output values

    def build(self, p: Program, record: Callable[[int, Any], None] | None) -> Callable[..., Any]:
        mesh = compat.make_mesh(p.mesh.names, p.mesh.sizes, p.mesh.axis_types)
        in_specs = tuple(to_pspec(s) for s in p.in_specs)
        out_specs = tuple(to_pspec(s) for s in p.out_specs)
        return compat.shard_map(
            make_body(p, record),
            mesh,
            in_specs,
            out_specs,
            None if p.axis_names is None else frozenset(p.axis_names),
            p.check_vma,
        )

    def execute(self, f: Callable[..., Any], args: list[np.ndarray]) -> Any:
        raise NotImplementedError

    def run(self, p: Program) -> Observation:
        types: dict[int, tuple[tuple[int, ...], str, frozenset[str] | None]] = {}

        def record(i: int, v: Any) -> None:
            if i not in types:
                types[i] = (tuple(v.shape), str(v.dtype), compat.vma_of(v))

        t0 = time.perf_counter()
        try:
            f = self.build(p, record)
            outs = self.execute(f, _inputs(p))
        except Exception as e:  # the observation IS the exception
            return Observation(
                self.name,
                type(e).__name__,
                str(e),
                traceback.format_exc(limit=-8),
                value_types=types,
                elapsed_s=time.perf_counter() - t0,
                status="error",
            )
        try:
            observed = tuple(self.observe(o, p) for o in outs)
        except Exception as e:  # jax produced outputs that cannot be read back
            return Observation(
                self.name,
                type(e).__name__,
                str(e),
                traceback.format_exc(limit=-8),
                value_types=types,
                elapsed_s=time.perf_counter() - t0,
                status="error",
                phase="read_output",
            )
        return Observation(self.name, outputs=observed, value_types=types, elapsed_s=time.perf_counter() - t0)

    def observe(self, o: Any, p: Program) -> ObservedOutput:
        blocks: dict[tuple[int, ...], np.ndarray] = {}
        for s in o.addressable_shards:
            coord = tuple(int(c) for c in np.unravel_index(s.device.id, p.mesh.sizes))
            blocks[coord] = np.asarray(s.data)
        return ObservedOutput(tuple(o.shape), str(o.dtype), np.asarray(o), blocks)


class Abstract(Mode):
    name, values = "abstract", False

    def execute(self, f: Callable[..., Any], args: list[np.ndarray]) -> Any:
        import jax

        return jax.eval_shape(f, *[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args])

    def observe(self, o: Any, p: Program) -> ObservedOutput:
        return ObservedOutput(tuple(o.shape), str(o.dtype), None, None)


class Eager(Mode):
    name = "eager"

    def execute(self, f: Callable[..., Any], args: list[np.ndarray]) -> Any:
        import jax

        outs = f(*args)
        jax.block_until_ready(outs)
        return outs


class Jit(Mode):
    name = "jit"

    def execute(self, f: Callable[..., Any], args: list[np.ndarray]) -> Any:
        import jax

        outs = jax.jit(f)(*args)
        jax.block_until_ready(outs)
        return outs


MODES: dict[str, Mode] = {m.name: m for m in (Abstract(), Eager(), Jit())}
DEFAULT_MODES = ("abstract", "jit", "eager")


# ------------------------------------------------------------------ wire format
# Observations cross process boundaries (worker processes, other Python environments)
# as JSON: arrays as dtype, shape and base64 bytes.


def _arr_to(a: np.ndarray) -> dict[str, Any]:
    import base64

    a = np.array(a, order="C")  # (ascontiguousarray would turn a 0-d array into 1-d)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "b64": base64.b64encode(a.tobytes()).decode()}


def _arr_from(d: dict[str, Any]) -> np.ndarray:
    import base64

    return np.frombuffer(base64.b64decode(d["b64"]), dtype=d["dtype"]).reshape(d["shape"]).copy()


def observation_to_dict(o: Observation) -> dict[str, Any]:
    return {
        "mode": o.mode,
        "status": o.status,
        "error_type": o.error_type,
        "error_message": o.error_message,
        "error_traceback": o.error_traceback,
        "elapsed_s": o.elapsed_s,
        "phase": o.phase,
        "value_types": [[i, list(s), dt, None if v is None else sorted(v)] for i, (s, dt, v) in o.value_types.items()],
        "outputs": [
            {
                "global_shape": list(x.global_shape),
                "dtype": x.dtype,
                "global_value": None if x.global_value is None else _arr_to(x.global_value),
                "device_values": None
                if x.device_values is None
                else [[list(c), _arr_to(v)] for c, v in x.device_values.items()],
            }
            for x in o.outputs
        ],
    }


def observation_from_dict(d: dict[str, Any]) -> Observation:
    return Observation(
        mode=d["mode"],
        error_type=d["error_type"],
        error_message=d["error_message"],
        error_traceback=d.get("error_traceback", ""),
        outputs=tuple(
            ObservedOutput(
                tuple(x["global_shape"]),
                x["dtype"],
                None if x["global_value"] is None else _arr_from(x["global_value"]),
                None if x["device_values"] is None else {tuple(c): _arr_from(v) for c, v in x["device_values"]},
            )
            for x in d["outputs"]
        ),
        value_types={int(i): (tuple(s), dt, None if v is None else frozenset(v)) for i, s, dt, v in d["value_types"]},
        elapsed_s=float(d["elapsed_s"]),
        status=d["status"],
        phase=d.get("phase", ""),
    )
