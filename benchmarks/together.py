"""Modes run together in one jit against each mode alone (harness/run/together.py), on
the same programs in one process, with no compilation cache (a machine's first run):

    python benchmarks/together.py [--programs N] [--seed S]

The programs are the first N valid programs of seed S's sweep (what a fuzz run checks
first) that run at least two of the modes jit, vmap, vmap_spmd, grad and grad_remat,
and have no known jax bug in them (a fuzz run runs those modes alone).
Each program runs both ways, alternately first, so neither way inherits the other's
warm-up. Prints the seconds of each way (trace, compile and run, in the modes' own
timing), the ratio, the compiles each way made, and whether the observations agree:
same status, shapes, dtypes, body value types, derivatives, and output values (bit for
bit; where not, the largest difference).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.run import compat  # noqa: E402

compat.force_host_devices()

import jax.monitoring  # noqa: E402
import numpy as np  # noqa: E402

from harness.campaign.known_queries import known_trouble  # noqa: E402
from harness.campaign.sweep import sweep_programs  # noqa: E402
from harness.judge.known_load import load as load_suppressions  # noqa: E402
from harness.run.modes import MODES, Observation  # noqa: E402
from harness.run.together import TOGETHER, run_together, together_modes  # noqa: E402
from oracles import predict  # noqa: E402
from programs.model import Program  # noqa: E402

COMPILES = [0]


def _count(event: str, duration: float, **_: object) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        COMPILES[0] += 1


def programs(n: int, seed: int) -> list[Program]:
    """(Programs with a known jax bug in one of the modes are left out, as a fuzz run
    runs their modes alone: some crash the process.)"""
    entries, version = load_suppressions(), compat.jax_version()
    out = []
    for p in sweep_programs(seed, invalid=0.0):
        modes = together_modes(p, TOGETHER)
        if not modes or any(known_trouble(entries, p, predict(p, values=False), version, m) for m in modes):
            continue
        if MODES["abstract"].run(p).status == "ok":
            out.append(p)
            if len(out) == n:
                break
    return out


def differ(a: Observation, b: Observation) -> float | str | None:
    """None: the same observation; a float: the largest difference of values that are
    otherwise alike; a string: what else differs."""
    if (a.status, a.value_types, a.value_ur) != (b.status, b.value_types, b.value_ur):
        return f"status/types: {a.status} vs {b.status}"
    fa, fb = a.facts, b.facts
    if set(fa) != set(fb) or fa.get("outputs") != fb.get("outputs"):
        return f"facts {fa} vs {fb}"
    worst = 0.0
    for x, y in zip(a.outputs, b.outputs, strict=True):
        if (x.global_shape, x.dtype) != (y.global_shape, y.dtype):
            return f"output {x.global_shape} {x.dtype} vs {y.global_shape} {y.dtype}"
        blocks = [((x.device_values or {}).get(c), (y.device_values or {}).get(c)) for c in (x.device_values or {})]
        for u, v in [(x.global_value, y.global_value), *blocks]:
            if u is None or v is None:
                if (u is None) != (v is None):
                    return "a value on one side only"
                continue
            if not np.array_equal(u, v, equal_nan=True):
                worst = max(worst, float(np.nanmax(np.abs(u.astype(np.float64) - v.astype(np.float64)))))
    for k in ("jvp", "vjp"):
        if k in a.facts and a.facts[k] != b.facts[k]:
            worst = max(worst, abs(a.facts[k] - b.facts[k]))
    return worst or None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=60)
    ap.add_argument("--seed", type=int, default=4)
    a = ap.parse_args()
    jax.monitoring.register_event_duration_secs_listener(_count)
    progs = programs(a.programs, a.seed)
    print(f"{len(progs)} valid sweep programs of seed {a.seed}; modes {', '.join(TOGETHER)} (those each runs)", flush=True)
    t_alone = t_tog = 0.0
    c_alone = c_tog = 0
    fell_back = alike = 0
    diffs: list[str] = []
    for i, p in enumerate(progs):
        modes = together_modes(p, TOGETHER)
        ways = ("alone", "together") if i % 2 == 0 else ("together", "alone")
        got: dict[str, dict[str, Observation]] = {}
        for way in ways:
            c0, t0 = COMPILES[0], time.perf_counter()
            if way == "alone":
                got[way] = {m: MODES[m].run(p) for m in modes}
            else:
                obs = {o.mode: o for o in run_together(p, modes)}
                fell_back += not obs
                got[way] = {m: obs[m] if m in obs else MODES[m].run(p) for m in modes}
            dt, dc = time.perf_counter() - t0, COMPILES[0] - c0
            if way == "alone":
                t_alone, c_alone = t_alone + dt, c_alone + dc
            else:
                t_tog, c_tog = t_tog + dt, c_tog + dc
        for m in modes:
            d = differ(got["alone"][m], got["together"][m])
            if d is None:
                alike += 1
            else:
                diffs.append(f"program {i} {m}: {d}")
        if (i + 1) % 10 == 0:
            print(f"  {i + 1}/{len(progs)}: alone {t_alone:.1f} s, together {t_tog:.1f} s", flush=True)
    n_obs = sum(len(together_modes(p, TOGETHER)) for p in progs)
    print(f"alone:    {t_alone:6.2f} s, {c_alone} compiles")
    print(f"together: {t_tog:6.2f} s, {c_tog} compiles ({fell_back} programs fell back to alone)")
    print(f"ratio:    {t_alone / t_tog:.2f}x faster together")
    print(f"observations alike: {alike}/{n_obs}")
    for d in diffs[:20]:
        print("  differs:", d)


if __name__ == "__main__":
    main()
