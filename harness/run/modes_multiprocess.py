"""The `multiprocess` mode: the program on a mesh spanning 2 processes x 4 CPU devices on
localhost, its collectives through gloo (the transport multi-host CPU users run; it has
its own bugs, e.g. jax-ml/jax#40830: psum_scatter wrong on rank 0 for large chunks).

The worker running this mode keeps a pair of rank processes (`harness/run/mp_rank.py`)
and gives both the identical program; each runs it under `jax.jit` on the global mesh
(half of the mesh's devices in each process, process 0 first in row-major order) with
its inputs built from the same global values, and sends back its addressable blocks.
Here the two halves are joined into one `Observation`: each process's blocks are checked
by the judge against the oracle's per-device prediction like any other mode's, and the
global value is left out (neither process can address it). If the processes disagree
(one raised, or they raised different errors), the observation says so
(`facts["process_errors"]`) and the judge reports `mode_disagreement|multiprocess|processes`.

A crash or hang of either process costs one program: both are stopped (SIGKILL), the
mode returns a `crash` / `timeout` observation (signature `crash|multiprocess|crash`,
`timeout|multiprocess|timeout`), and the next program starts a fresh pair. The worker
itself goes on. Ports: the coordinator's port is one the kernel chose as free (bind to
port 0), and a start that still loses a race for it is retried on another.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from harness.run import compat
from harness.run.lowering import make_body, to_pspec
from harness.run.modes_base import Mode
from harness.run.modes_direct import Jit
from harness.run.observation import Observation, ObservedOutput, observation_from_dict, signame
from programs.model import Program
from programs.serialize import program_to_dict

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_ENV = "SHARDFUZZ_MP_TIMEOUT"  # seconds per program (the pool sets it below its own timeout)
START_TIMEOUT_S = 90.0
LARGE_BLOCK_BYTES = 4 << 20  # a block this large goes through gloo's chunked path
N_PROCESSES = 2
LOCAL_DEVICES = 4  # per process: 2 x 4 = the 8 devices of a single-process run
RANK_ENV = "SHARDFUZZ_MP_RANK"  # set in a rank process (faults.py: faults of one rank only)


def spans_processes(p: Program) -> str | None:
    """Why `p`'s mesh cannot be split evenly over the two processes, or None."""
    n = p.mesh.size
    if n % N_PROCESSES or n // N_PROCESSES > LOCAL_DEVICES:
        return f"a mesh of {n} devices cannot span {N_PROCESSES} processes x {LOCAL_DEVICES} devices evenly"
    return None


def block_bytes(p: Program) -> int:
    """The largest per-device input block of `p`, in bytes."""
    best = 0
    for x, s in zip(p.inputs, p.in_specs):  # (an invalid program may have more of one)
        n = 1
        for d, size in enumerate(x.shape):
            e = s.entries[d] if d < len(s.entries) else None
            known = e is not None and all(a in p.mesh.names for a in e)  # (a defect may name a foreign axis)
            n *= size // max(1, p.mesh.group_size(e) if e is not None and known else 1)
        best = max(best, n * np.dtype(x.dtype).itemsize)
    return best


# ------------------------------------------------------------------- inside a rank process


def _mesh(p: Program) -> Any:
    """The program's mesh over both processes: the first half of the devices in row-major
    order on process 0, the second half on process 1."""
    import jax

    half = p.mesh.size // N_PROCESSES
    by: dict[int, list[Any]] = {}
    for d in jax.devices():
        by.setdefault(d.process_index, []).append(d)
    devices = [d for i in range(N_PROCESSES) for d in sorted(by[i], key=lambda d: d.id)[:half]]
    return compat.mesh_over(devices, p.mesh.names, p.mesh.sizes, p.mesh.axis_types)


def _global(v: np.ndarray, sharding: Any) -> Any:
    """A global array of value `v` (every process holds the same `v`: its blocks are cut here)."""
    import jax

    def block(idx: Any) -> np.ndarray:
        return v[idx]

    return jax.make_array_from_callback(v.shape, sharding, block)


class _Rank(Jit):
    """`jit` on the multi-process mesh, as one rank runs it: global inputs made from the
    same values in every process, each process's own blocks read back with their mesh
    coordinates and global indices."""

    name = "multiprocess"

    def build(self, p: Program, record: Callable[[int, Any], None] | None) -> Callable[..., Any]:
        return compat.shard_map(
            make_body(p, record),
            _mesh(p),
            tuple(to_pspec(s) for s in p.in_specs),
            tuple(to_pspec(s) for s in p.out_specs),
            None if p.axis_names is None else frozenset(p.axis_names),
            p.check_vma,
            p.form,
        )

    def inputs(self, p: Program) -> list[Any]:
        import jax

        mesh = _mesh(p)
        out = []
        for i, x in enumerate(p.inputs):
            v = x.materialize()
            try:  # laid out as its in_spec says, so no process needs the others' blocks
                sharding = jax.sharding.NamedSharding(mesh, to_pspec(p.in_specs[i]))
                out.append(_global(v, sharding))
            except Exception:  # noqa: BLE001 - an invalid program's spec: replicated, and shard_map says what is wrong
                out.append(_global(v, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())))
        return out

    def observe(self, o: Any, p: Program) -> ObservedOutput:
        mesh = _mesh(p)
        where = {d.id: tuple(int(c) for c in np.argwhere(mesh.devices == d)[0]) for d in mesh.devices.flat}
        blocks = {where[s.device.id]: np.asarray(s.data) for s in o.addressable_shards}
        return ObservedOutput(tuple(o.shape), str(o.dtype), None, blocks)

RANK_MODE = _Rank()


# ------------------------------------------------------------------- in the worker


def free_port() -> int:
    """A port the kernel says is free now (bound to port 0, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Pair:
    """The two rank processes, with their stderr logs."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="shardfuzz-mp-"))
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []
        self.bufs: list[list[bytes]] = []
        self.info: list[dict[str, Any]] = []
        self.jobs = 0

    def start(self) -> str | None:
        """Start both processes and wait until both joined; None, or why they did not."""
        why = ""
        for _attempt in range(3):  # another run may take the free port first: try another
            address = f"127.0.0.1:{free_port()}"
            env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
            self.procs, self.logs, self.bufs, self.info = [], [], [], []
            for rank in range(N_PROCESSES):
                log = self.dir / f"rank{rank}.log"
                self.logs.append(log)
                with open(log, "wb") as fh:
                    self.procs.append(subprocess.Popen(
                        [sys.executable, "-m", "harness.run.mp_rank", str(rank), address],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=fh, env=env, cwd=str(ROOT),
                    ))
                self.bufs.append([])
            msgs, status = self._collect(START_TIMEOUT_S)
            if status is None and all(m.get("event") == "ready" for m in msgs):
                self.info = msgs
                return None
            why = f"{status or 'no ready message'}: {self.tails()}"
            self.stop()
        return why

    def _collect(self, timeout: float) -> tuple[list[dict[str, Any]], str | None]:
        """One message from each process; (messages, None), or (what arrived, why not)."""
        got: dict[int, dict[str, Any]] = {}
        sel = selectors.DefaultSelector()
        for i, pr in enumerate(self.procs):
            assert pr.stdout is not None
            sel.register(pr.stdout, selectors.EVENT_READ, i)
        deadline = time.monotonic() + timeout
        try:
            while len(got) < len(self.procs):
                left = deadline - time.monotonic()
                if left <= 0:
                    late = [i for i in range(len(self.procs)) if i not in got]
                    return [got[i] for i in sorted(got)], f"process {', '.join(map(str, late))} gave no answer within {timeout:.0f}s"
                for key, _ in sel.select(min(left, 1.0)):
                    i = key.data
                    chunk = os.read(key.fileobj.fileno(), 1 << 22)  # type: ignore[union-attr]
                    if not chunk:
                        self.procs[i].wait()
                        rc = self.procs[i].returncode
                        return [got[j] for j in sorted(got)], f"process {i} died (exit code {rc}{signame(rc)})"
                    if b"\n" not in chunk:
                        self.bufs[i].append(chunk)
                        continue
                    head, _, rest = chunk.partition(b"\n")
                    line = b"".join([*self.bufs[i], head])
                    self.bufs[i] = [rest] if rest else []
                    got[i] = json.loads(line)
                    sel.unregister(key.fileobj)
        finally:
            sel.close()
        return [got[i] for i in sorted(got)], None

    def run(self, p: Program, timeout: float) -> tuple[list[dict[str, Any]], str | None]:
        self.jobs += 1
        data = (json.dumps({"id": self.jobs, "program": program_to_dict(p)}) + "\n").encode()
        for pr in self.procs:
            try:
                assert pr.stdin is not None
                pr.stdin.write(data)
                pr.stdin.flush()
            except (BrokenPipeError, OSError):
                pass  # seen as a death by _collect
        return self._collect(timeout)

    def tails(self, n: int = 600) -> str:
        out = []
        for i, log in enumerate(self.logs):
            try:
                text = log.read_bytes()[-8 * n:].decode(errors="replace")
            except OSError:
                text = ""
            lines = [x for x in text.splitlines() if "[Gloo]" not in x]
            out.append(f"process {i}: {' | '.join(lines)[-n:]}")
        return "; ".join(out)

    def stop(self) -> None:
        for pr in self.procs:
            try:
                pr.kill()
            except OSError:
                pass
        for pr in self.procs:
            pr.wait()
            for f in (pr.stdin, pr.stdout):
                if f is not None:
                    f.close()
        self.procs = []

    def close(self) -> None:
        self.stop()
        for f in self.logs:
            try:
                f.unlink()
            except OSError:
                pass
        try:
            self.dir.rmdir()
        except OSError:
            pass


_PAIR: list[_Pair] = []  # the worker's live pair (process state, like the compile cache)


def _close_pair() -> None:
    while _PAIR:
        _PAIR.pop().close()


atexit.register(_close_pair)



def join(obs: list[Observation]) -> Observation:
    """Both processes' observations as one: each output's blocks from both (no global
    value: neither process can address the whole array; the judge checks every block), and
    whether their errors agree."""
    if any(o.raised for o in obs):
        first = next(o for o in obs if o.raised)
        facts: dict[str, Any] = {}
        if len({o.error_type for o in obs}) > 1:
            facts["process_errors"] = [f"{o.error_type}: {o.error_message[:200]}" if o.raised else "ran" for o in obs]
        return Observation(first.mode, first.error_type, first.error_message, first.error_traceback,
                           value_types=first.value_types, elapsed_s=max(o.elapsed_s for o in obs),
                           status="error", phase=first.phase, facts=facts)
    if len({len(o.outputs) for o in obs}) > 1:
        return Observation(obs[0].mode, status="ok", value_types=obs[0].value_types, facts={
            "process_errors": [f"{len(o.outputs)} outputs" for o in obs]})
    outs = []
    for k, o0 in enumerate(obs[0].outputs):
        blocks: dict[tuple[int, ...], np.ndarray] = {}
        for o in obs:
            blocks.update(o.outputs[k].device_values or {})
        outs.append(ObservedOutput(o0.global_shape, o0.dtype, None, blocks))
    return Observation(obs[0].mode, outputs=tuple(outs), value_types=obs[0].value_types,
                       elapsed_s=max(o.elapsed_s for o in obs))


class Multiprocess(Mode):
    name = "multiprocess"

    def run(self, p: Program) -> Observation:
        missing = compat.unsupported_features(p, self.name)
        why = spans_processes(p)
        if missing or why:
            return Observation(self.name, status="unsupported", error_message="; ".join([*missing, *([why] if why else [])]))
        t0 = time.perf_counter()
        timeout = float(os.environ.get(TIMEOUT_ENV, "24"))
        if not _PAIR or not _PAIR[0].procs:
            _close_pair()
            _PAIR.append(_Pair())
            failed = _PAIR[0].start()
            if failed is not None:
                _close_pair()
                return Observation(self.name, status="crash", elapsed_s=time.perf_counter() - t0,
                                   error_message=f"the two processes did not start: {failed}")
        pair = _PAIR[0]
        msgs, failed = pair.run(p, timeout)
        if failed is not None:
            # either process died or hung: stop both, the next program starts a new pair
            got = "; ".join(f"{m['observation']['error_type']} in process {i}" for i, m in enumerate(msgs)
                            if m.get("observation", {}).get("error_type"))
            status = "timeout" if "no answer" in failed else "crash"
            tails = pair.tails()
            _close_pair()
            return Observation(self.name, status=status, elapsed_s=time.perf_counter() - t0,
                               error_message=f"{failed}{' (' + got + ')' if got else ''}; both stopped; stderr: {tails}")
        return join([observation_from_dict(m["observation"]) for m in msgs])
