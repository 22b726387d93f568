"""What jax did with one program in one mode (`Observation`), and its wire format.

Observations cross process boundaries (worker processes, other Python environments) as
JSON: arrays as dtype, shape and base64 bytes. The type lives apart from the modes that
make it so the pool, the judge and the campaign read it without importing any mode.
"""

from __future__ import annotations

import base64
import signal
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes  # noqa: F401  (registers bfloat16 with NumPy: arrays cross the wire by dtype name)
import numpy as np


@dataclass(frozen=True, eq=False)
class ObservedOutput:
    """One output as jax returned it: the global array and each device's block, read
    back so the judge compares them with the oracle's per-device prediction."""

    global_shape: tuple[int, ...]
    dtype: str
    global_value: np.ndarray | None  # None in the abstract mode
    device_values: dict[tuple[int, ...], np.ndarray] | None  # mesh coord -> block
    # jax.typeof(out).sharding.spec: per dimension the (Explicit) axes it is split
    # over, then its unreduced and reduced axes; None where jax does not say
    sharding: tuple[tuple[tuple[str, ...], ...], tuple[str, ...], tuple[str, ...]] | None = None


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
    phase: str = ""  # where an error arose: "" (building/tracing/running) or "read_output:K" (reading output K)
    facts: dict[str, Any] = field(default_factory=dict)  # mode-specific facts (lowering text, derivatives)
    # value index -> (unreduced, reduced) manual axes, as jax.typeof(v).mat showed them
    value_ur: dict[int, tuple[frozenset[str], frozenset[str]]] = field(default_factory=dict)
    # run in one jit with the program's other `together` modes (harness/run/together.py):
    # a divergence it shows is re-run in this mode alone before it is reported
    together: bool = False

    @property
    def raised(self) -> bool:
        return self.error_type is not None


def _arr_to(a: np.ndarray) -> dict[str, Any]:
    a = np.array(a, order="C")  # (ascontiguousarray would turn a 0-d array into 1-d)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "b64": base64.b64encode(a.tobytes()).decode()}


def _arr_from(d: dict[str, Any]) -> np.ndarray:
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
        "facts": o.facts,
        "value_types": [[i, list(s), dt, None if v is None else sorted(v)] for i, (s, dt, v) in o.value_types.items()],
        "value_ur": [[i, sorted(u), sorted(r)] for i, (u, r) in o.value_ur.items()],
        "together": o.together,
        "outputs": [
            {
                "global_shape": list(x.global_shape),
                "dtype": x.dtype,
                "global_value": None if x.global_value is None else _arr_to(x.global_value),
                "device_values": None
                if x.device_values is None
                else [[list(c), _arr_to(v)] for c, v in x.device_values.items()],
                "sharding": None if x.sharding is None else [[list(e) for e in x.sharding[0]], list(x.sharding[1]), list(x.sharding[2])],
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
                None
                if x.get("sharding") is None
                else (tuple(tuple(e) for e in x["sharding"][0]), tuple(x["sharding"][1]), tuple(x["sharding"][2])),
            )
            for x in d["outputs"]
        ),
        value_types={int(i): (tuple(s), dt, None if v is None else frozenset(v)) for i, s, dt, v in d["value_types"]},
        elapsed_s=float(d["elapsed_s"]),
        status=d["status"],
        phase=d.get("phase", ""),
        facts=d.get("facts", {}),
        value_ur={int(i): (frozenset(u), frozenset(r)) for i, u, r in d.get("value_ur", [])},
        together=bool(d.get("together", False)),
    )


def signame(rc: int | None) -> str:
    """', SIGABRT' for a process a signal ended (a negative return code), else ''."""
    if rc is not None and rc < 0:
        try:
            return f", {signal.Signals(-rc).name}"
        except ValueError:
            return ""
    return ""
