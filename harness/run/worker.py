"""A worker process: initialises jax once (8 forced CPU devices, or the count XLA_FLAGS
asks for when that is more) and runs many programs.

Speaks JSON lines: reads `{"id", "program", "modes"}` (and `"together"`: the modes to try
in one jit first, harness/run/together.py) from stdin; writes
`{"event": "ready"}` once, then per job `{"event": "start", "mode"}` before each mode
(`"together": true` before the modes run together)
(so the parent knows which mode a crash or hang happened in), `{"event": "obs",
"observation"}` after it, and `{"event": "done"}`. It needs only jax, numpy (with
ml_dtypes, which jax brings) and shardfuzz's own packages, never hypothesis, so it can
run in another Python environment than the run's (release qualification).

Run as `python -m harness.run.worker`.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time

from harness.run import compat
from harness.run.batch import run_batch
from harness.run.compat import N_DEVICES
from harness.run.faults import install_from_env
from harness.run.modes import COMPILED, MODES, observation_to_dict
from harness.run.together import run_together
from programs.serialize import program_from_dict


def host_device_count(xla_flags: str | None = None) -> int:
    """How many CPU devices shardfuzz gives jax: N_DEVICES (8), or more where `XLA_FLAGS`
    asks for more (`--xla_force_host_platform_device_count=N`), never fewer (the
    strategies draw meshes of up to 8 devices)."""
    flags = os.environ.get("XLA_FLAGS", "") if xla_flags is None else xla_flags
    asked = re.findall(r"--xla_force_host_platform_device_count=(\d+)", flags)
    return max(N_DEVICES, int(asked[-1])) if asked else N_DEVICES


LOG_ENV = "SHARDFUZZ_WORKER_LOG"  # the worker's own stderr log (harness/run/pool.py)
# written to stderr as each job starts: a crash's cause is read from the lines after the
# last one (XLA logs errors jax raised as exceptions too; an earlier job's must not count)
JOB_MARK = "shardfuzz-worker: job start"


def _remove_own_log() -> None:
    """The parent is gone or done with this worker (stdin closed, or the pipe to it
    broken: a parent killed with SIGKILL cannot clean up): remove this worker's log, and
    the pool's log directory once it is empty."""
    log = os.environ.get(LOG_ENV)
    if not log:
        return
    for remove in (os.unlink, os.rmdir):
        try:
            remove(log if remove is os.unlink else os.path.dirname(log))
        except OSError:
            pass


def main() -> int:
    try:
        return _serve()
    except BrokenPipeError:  # the parent died mid-job
        _remove_own_log()
        os._exit(0)  # (nothing to flush to: a broken pipe again at exit otherwise)


def _serve() -> int:
    # The protocol owns the real stdout; anything else printing goes to stderr.
    # buffered: flushed when a mode starts (so a crash is put on the right mode, with
    # every earlier observation already out) and when a job is done
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    compat.force_host_devices(host_device_count())
    install_from_env()
    import jax

    def send(msg: dict, flush: bool = True) -> None:  # type: ignore[type-arg]
        proto.write(json.dumps(msg) + "\n")
        if flush:
            proto.flush()

    # (the modes that run no reduced / unreduced program on this jax, and why: the run
    # lists the cells only those ops hold as unreachable there)
    send({"event": "ready", "jax_version": jax.__version__, "backend": jax.default_backend(), "pid": os.getpid(),
          "ur_gaps": compat.ur_mode_gaps(MODES)})
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        jid = job["id"]
        print(JOB_MARK, file=sys.stderr, flush=True)
        if "batch" in job:  # several programs, one jit (harness/batch.py)
            send({"id": jid, "event": "start", "mode": "jit"})
            progs = [program_from_dict(d, check=False) for d in job["batch"]]
            for i, o in enumerate(run_batch(progs)):
                send({"id": jid, "event": "obs", "index": i, "observation": observation_to_dict(o)}, flush=False)
            send({"id": jid, "event": "done", "cpu_s": time.process_time()})
            continue
        # (not validated again: the parent read and checked it, or drew it, or it is a
        # minimizer's candidate, which must run even where a file could not say it)
        p = program_from_dict(job["program"], check=False)
        ran: set[str] = set()
        if job.get("together"):  # these modes in one jit (harness/run/together.py), the rest alone
            send({"id": jid, "event": "start", "mode": job["together"][0], "together": True})
            for o in run_together(p, job["together"]):
                send({"id": jid, "event": "obs", "observation": observation_to_dict(o)}, flush=False)
                ran.add(o.mode)
        for m in job["modes"]:
            if m in ran:
                continue
            if len(job["modes"]) > 1:  # (a one-mode job's mode is known to the parent)
                send({"id": jid, "event": "start", "mode": m})
            o = MODES[m].run(p)
            send({"id": jid, "event": "obs", "observation": observation_to_dict(o)}, flush=False)
        send({"id": jid, "event": "done", "cpu_s": time.process_time()})
        if job.get("clear_caches"):
            jax.clear_caches()
            COMPILED.clear()  # (it holds jitted callables: their executables too)
    _remove_own_log()  # stdin closed: the parent closed the pool, or died
    return 0


if __name__ == "__main__":
    sys.exit(main())
