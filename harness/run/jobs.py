"""A pool's jobs, as the parent sees them: what was sent (`Job`), what came back
(`Completed`), their time limits' scale, and the cause lines of a crash."""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any

from harness.run.observation import Observation
from programs.model import Program
from programs.serialize import program_to_dict


@dataclass
class Job:
    id: int
    program: Program
    modes: tuple[str, ...]
    tag: Any = None
    observations: list[Observation] = field(default_factory=list)
    current_mode: str | None = None
    mode_started: float = 0.0
    batch: list[Program] | None = None  # a batch job: these programs, one jit
    batch_obs: dict[int, Observation] = field(default_factory=dict)
    limit_s: float | None = None  # its own per-mode time limit (else the pool's timeout_s)
    together: tuple[str, ...] = ()  # modes the worker tries in one jit first (harness/run/together.py)
    in_together: bool = False  # the worker is running them now
    alone: bool = False  # on an idle worker, nothing queued behind it; `limit_s` may exceed the pool's
    line: bytes = b""  # what was sent (sent again if its worker died before it started)


@dataclass
class Completed:
    program: Program
    observations: list[Observation]
    tag: Any
    # the modes of the job after one it crashed or hung in: not run (the worker died with
    # them); a fuzz run sends them in a job of their own (harness/campaign/fuzz.py
    # `_Rest`), or past its budget checks them on the program without the op a known
    # entry puts the crash on (harness/campaign/state.py `Run.record`)
    unrun: tuple[str, ...] = ()
    # the modes the pool's deadline kept from running (each with an `unsupported`
    # observation saying so): the job was cancelled
    cancelled: tuple[str, ...] = ()


# The lines that name an XLA or jax abort's cause (kept whole, wherever they are in the
# worker's stderr; the tail alone often shows only the stack trace after them)
_CAUSE = re.compile(r"(Check failed:.*|RET_CHECK failure.*|F\d{4} [^\n]*\] .*|Fatal Python error:.*|\*\*\* SIG\w+.*|"
                    r"Segmentation fault.*|Aborted.*|terminate called .*)")


def crash_cause(stderr: str) -> str:
    """The cause lines of a crash (XLA's `Check failed`, `RET_CHECK`, a fatal log line,
    the signal), first seen first, each once; '' when there is none."""
    seen: list[str] = []
    for m in _CAUSE.finditer(stderr):
        line = m.group(0).strip()[:400]
        if line not in seen:
            seen.append(line)
    return " | ".join(seen[:4])


def size_scale(job: Job) -> float:
    """How much longer than a small program's a job's time limits are: by its size past 2M
    argument elements, at most 8x (`Pool.limit_s`)."""
    n = sum(math.prod(x.shape) for x in job.program.inputs)
    return max(1.0, min(8.0, n / float(1 << 21)))


def job_body(job: Job) -> str:
    """The job line's fields but its id (ASCII JSON: its length is its size)."""
    fields: dict[str, Any] = {"program": program_to_dict(job.program), "modes": list(job.modes)}
    if job.together:
        fields["together"] = list(job.together)
    return json.dumps(fields)[1:-1]


def cancel(job: Job) -> list[Completed]:
        """`job` cancelled: what it observed before, and an `unsupported` observation
        (CANCELLED) for each mode it did not run."""
        if job.batch is not None:
            return [Completed(p, [job.batch_obs[i]], job.tag[i]) if i in job.batch_obs else
                    Completed(p, [Observation("jit", status="unsupported", error_message=CANCELLED)], job.tag[i],
                              cancelled=("jit",))
                    for i, p in enumerate(job.batch)]
        seen = {o.mode for o in job.observations}
        rest = tuple(m for m in job.modes if m not in seen)
        return [Completed(job.program, [*job.observations, *(Observation(m, status="unsupported", error_message=CANCELLED)
                                                             for m in rest)], job.tag, cancelled=rest)]



def one_by_one(job: Job) -> Job:
    """The job whose worker died running its modes together (harness/run/together.py):
    the modes it has not observed, to run again one by one (each crash or hang on its own
    mode)."""
    seen = {o.mode for o in job.observations}
    again = Job(job.id, job.program, tuple(m for m in job.modes if m not in seen), job.tag,
                list(job.observations), limit_s=job.limit_s, alone=job.alone)
    again.line = f'{{"id": {again.id}, {job_body(again)}}}\n'.encode()
    return again


def died(job: Job, status: str, message: str) -> list[Completed]:
    """`job`, whose worker crashed or hung (`status`) in its current mode: that mode's
    observation says so (`message`), the modes after it come back `unrun`; a batch's every
    program gets it (the parent re-runs them alone)."""
    mode = job.current_mode or (job.modes[len(job.observations)] if len(job.observations) < len(job.modes) else "?")
    dead = Observation(mode, error_type=None, status=status, error_message=message)
    if job.batch is not None:
        return [Completed(p, [job.batch_obs.get(i, dead)], job.tag[i]) for i, p in enumerate(job.batch)]
    job.observations.append(dead)
    seen = {o.mode for o in job.observations}
    return [Completed(job.program, job.observations, job.tag, tuple(m for m in job.modes if m not in seen))]


def started(job: Job) -> None:
    """`job` is its worker's running job from now (its time limit counts from here)."""
    job.mode_started = time.monotonic()
    if len(job.modes) == 1:
        job.current_mode = job.modes[0]  # (the worker sends no start for a one-mode job)


# A worker running a program's modes in one jit (harness/run/together.py) longer than
# this is ended, and the modes run again one by one (`Pool._dead`), as after a crash there.
# The shared run of a sweep program takes 1-2 s; the pool's limit summed over the modes
# (30 s each) would let one stall a worker for most of a short run. Such a shared jit can
# stall when its executable comes from the persistent compilation cache (an XLA:CPU
# all-reduce rendezvous waits for threads that never arrive; jax-only reproducer:
# reports/upstream/xla_cpu_cached_jit_deadlock.py), while its modes alone run.
TOGETHER_LIMIT_S = 10.0
CANCELLED = "not run: the run's time was up (its budget and grace)"  # a cancelled mode's message
