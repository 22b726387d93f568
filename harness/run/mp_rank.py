"""One process of a multi-process mesh: `python -m harness.run.mp_rank RANK ADDRESS`.

The `multiprocess` mode (harness/run/modes_multiprocess.py) starts two of these on
localhost. Each gives jax 4 CPU devices, selects gloo for CPU collectives and joins the
distributed runtime (`jax.distributed.initialize(ADDRESS, 2, RANK)`), so the program's
mesh spans both processes and its collectives cross the process boundary through gloo.

Speaks JSON lines like the worker: `{"event": "ready", ...}` once, then for each
`{"program": ...}` read from stdin one `{"event": "obs", "observation": ...}` carrying
this process's addressable blocks (mesh coordinate and global index of each), which the
mode joins with the other process's. Dies with its parent (PR_SET_PDEATHSIG), so a
killed worker never leaves a process waiting in a collective.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import sys
import time

from harness.run import compat
from harness.run.faults import install_from_env
from harness.run.modes_base import COMPILED
from harness.run.modes_multiprocess import LOCAL_DEVICES, N_PROCESSES, RANK_ENV, RANK_MODE
from harness.run.observation import observation_to_dict
from programs.serialize import program_from_dict


def _die_with_parent() -> None:
    """SIGKILL this process when its parent dies (Linux; elsewhere stdin EOF still ends it)."""
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main(argv: list[str]) -> int:
    rank, address = int(argv[0]), argv[1]
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    _die_with_parent()
    os.environ[RANK_ENV] = str(rank)
    # 4 devices here, whatever count the worker's XLA_FLAGS asked for
    os.environ["XLA_FLAGS"] = re.sub(r"--xla_force_host_platform_device_count=\d+", "", os.environ.get("XLA_FLAGS", ""))
    compat.force_host_devices(LOCAL_DEVICES)
    import jax

    compat.distributed_cpu(address, N_PROCESSES, rank)
    install_from_env()

    def send(msg: dict) -> None:  # type: ignore[type-arg]
        proto.write(json.dumps(msg) + "\n")
        proto.flush()

    send({"event": "ready", "rank": rank, "pid": os.getpid(), "jax_version": jax.__version__,
          "devices": len(jax.devices()), "local_devices": len(jax.local_devices())})
    done = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        t0 = time.perf_counter()
        o = RANK_MODE.run(program_from_dict(job["program"], check=False))
        send({"event": "obs", "id": job.get("id"), "observation": observation_to_dict(o),
              "elapsed_s": time.perf_counter() - t0})
        done += 1
        if done % 200 == 0:
            jax.clear_caches()
            COMPILED.clear()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
