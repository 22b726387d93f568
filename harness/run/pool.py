"""Worker processes, seen from the parent: crash- and hang-safe program execution.

A worker that dies (segfault, abort inside XLA) or hangs past the per-mode timeout costs
one program: its current mode is recorded as a `crash` / `timeout` observation (with the
tail of the worker's stderr), the job's later modes come back as `unrun`, the worker is
replaced, the jobs queued behind that one (a worker holds `depth` jobs) are sent again,
and the run goes on.

A job sent `alone` goes to an idle worker and nothing is queued behind it while it runs;
its own limit may exceed the pool's (a crash or timeout re-run before it is reported).

Past the pool's `deadline` (a run's time budget and its grace) nothing runs: every job
running or waiting is cancelled at once (its worker killed and replaced), and a job
submitted after it is cancelled without being sent. A cancelled job comes back as a
`Completed` whose `cancelled` modes hold an `unsupported` observation each (the judge
counts none of them, so a caller that reads only observations sees nothing found).

Each worker's stderr goes to a log file in a directory the pool owns (`log_dir`, made
with `tempfile.mkdtemp`); `close()` removes it, and so does a finalizer should a pool
never be closed, so a run or a test leaves nothing in the system temp directory. A
parent killed outright cannot clean up: its workers then remove their own logs (and the
empty directory) when they find the pipe to it closed.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from harness.run.jobs import (
    CANCELLED,
    TOGETHER_LIMIT_S,
    Completed,
    Job,
    cancel,
    crash_cause,
    died,
    job_body,
    one_by_one,
    size_scale,
)
from harness.run.observation import signame
from harness.run.workers import ROOT, Worker, Workers
from harness.run.zygote import ForkServer
from programs.errors import WorkerStartError
from programs.model import Program
from programs.serialize import program_to_dict

__all__ = ["CANCELLED", "TOGETHER_LIMIT_S", "Completed", "Job", "Pool", "crash_cause"]


class Pool:
    def __init__(
        self,
        n: int,
        python: str | None = None,
        timeout_s: float = 30.0,
        env: dict[str, str] | None = None,
        clear_caches_every: int = 200,
        fork_server: bool | None = None,
        depth: int = 2,
    ) -> None:
        """`depth`: the jobs a worker holds at once, the one it runs and those waiting in
        its stdin. With 2, a worker starts its next job as soon as it finishes one,
        while the parent evaluates the finished one and draws the next program; with 1
        it sits idle for that on every job (docs/execution.md has the measured cost)."""
        self.n = max(1, n)
        self.python = python or sys.executable
        self.timeout_s = timeout_s
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = str(ROOT) + os.pathsep + self.env.get("PYTHONPATH", "")
        # the multiprocess mode's own limit per program, under the pool's: a hung rank
        # process then costs its program, not the worker
        self.env.setdefault("SHARDFUZZ_MP_TIMEOUT", f"{max(1.0, timeout_s * 0.8):.1f}")
        self.env.update(env or {})
        self.clear_caches_every = clear_caches_every
        self.next_id = 0
        self.crashes = 0
        self.together_again = 0  # jobs whose worker died running modes together: run again one by one
        self.timeouts = 0
        self.cancelled = 0  # jobs cancelled at the deadline
        # time.monotonic() past which nothing runs (None: no deadline); see the module doc
        self.deadline: float | None = None
        self.info: dict[str, Any] = {}
        self._pending: list[Completed] = []  # completions seen while waiting to submit
        # workers are forks of one process that imported jax (harness/run/zygote.py):
        # ready in milliseconds, where an interpreter of their own takes ~1.5 s of CPU,
        # at the start and after every crash and hang (SHARDFUZZ_FORK_SERVER=0: off)
        if fork_server is None:
            fork_server = os.environ.get("SHARDFUZZ_FORK_SERVER", "1") != "0"
        self.ws = Workers(self.n, self.python, self.env, max(1, depth), fork_server)
        try:
            for _ in range(self.n):
                self.ws.spawn()
            self._await_ready()
        except BaseException:
            self.close()  # the workers that did start, and the log directory
            raise

    @property
    def workers(self) -> list[Worker]:
        return self.ws.workers

    @property
    def server(self) -> ForkServer | None:
        return self.ws.server

    @property
    def log_dir(self) -> Path:
        return self.ws.log_dir

    def worker_cpu_s(self) -> float:
        """CPU seconds every worker this pool started has spent (the jax side's cost, for
        benchmarks; see Workers.cpu_s)."""
        return self.ws.cpu_s()

    def _await_ready(self, deadline_s: float = 120.0) -> None:
        t0 = time.monotonic()
        while not all(w.ready for w in self.ws.workers):
            if time.monotonic() - t0 > deadline_s:
                raise WorkerStartError(f"{self.python}: workers did not start within {deadline_s:.0f}s")
            self._poll(1.0)

    def limit_s(self, job: Job) -> float:
        """The per-mode time limit for a job: `timeout_s`, scaled by the program's size past
        2M argument elements (a large program, 4 MiB per device on 8 devices, gets 4x),
        at most 8x, so a big transfer is not mistaken for a hang."""
        if job.limit_s is None:
            base = self.timeout_s
        else:  # (a job alone may have a longer limit than the pool's; any other, only a shorter one)
            base = job.limit_s if job.alone else min(job.limit_s, self.timeout_s)
        return base * size_scale(job)

    def running_limit_s(self, job: Job) -> float:
        """The limit of what `job` runs now: a mode's (`limit_s`), or while it runs modes
        together (harness/run/together.py) the smaller of theirs summed and
        TOGETHER_LIMIT_S (size-scaled)."""
        one = self.limit_s(job)
        if not job.in_together:
            return one
        return min(one * len(job.together), TOGETHER_LIMIT_S * size_scale(job))

    def free(self) -> int:
        """How many jobs can be submitted now without waiting (Workers.free)."""
        return self.ws.free()

    def busy(self) -> int:
        return self.ws.busy()

    def expired(self) -> bool:
        """Whether the pool's deadline has passed (nothing runs any more)."""
        return self.deadline is not None and time.monotonic() > self.deadline

    def _free_worker(self, size: int = 0, alone: bool = False) -> Worker | None:
        """A ready worker with room for a line of `size` bytes (`alone`: an idle one),
        waiting for one (a replacement may still be starting); completions seen meanwhile
        are kept for the next wait/drain. None once the deadline has passed."""
        t0 = time.monotonic()
        if not self.expired():
            while len(self.ws.workers) < self.n:  # (those killed at a deadline since)
                self.ws.spawn()
        self.ws.dispatch()
        while True:
            if self.expired():
                return None
            w = self.ws.pick(size, alone) if self.free() else None
            if w is not None:
                return w
            if time.monotonic() - t0 > 300:
                raise WorkerStartError(f"{self.python}: no worker became free within 300s")
            self._pending.extend(self._poll(0.5))

    def _send(self, w: Worker, job: Job, line: bytes) -> None:
        self.next_id = max(self.next_id, job.id + 1)
        self.ws.send(w, job, line)

    def submit(self, program: Program, modes: tuple[str, ...], tag: Any = None, limit_s: float | None = None,
               together: tuple[str, ...] = (), alone: bool = False) -> None:
        """Give a program to a free worker, to run in each of `modes` (`limit_s`: a time
        limit per mode below the pool's, for modes a known entry says may hang;
        `together`: modes of `modes` to try in one jit first, harness/run/together.py;
        `alone`: on an idle worker with nothing queued behind it, `limit_s` as given even
        above the pool's). Past the deadline it is cancelled, not sent."""
        job = Job(self.next_id, program, modes, tag, limit_s=limit_s, together=together, alone=alone)
        body = job_body(job)
        w = self._free_worker(len(body), alone)
        if w is None:
            self.next_id += 1
            self._pending.extend(self._cancel(job))
            return
        clear = self.clear_caches_every > 0 and (w.jobs_done + len(w.queue) + 1) % self.clear_caches_every == 0
        self._send(w, job, f'{{"id": {job.id}, {body}, "clear_caches": {json.dumps(clear)}}}\n'.encode())

    def submit_batch(self, programs: list[Program], tags: list[Any]) -> None:
        """Several programs (meshes over the same devices) for one combined jit; each
        comes back as its own Completed, with its own tag and a jit observation."""
        body = json.dumps({"batch": [program_to_dict(p) for p in programs], "modes": ["jit"]})[1:-1]
        w = self._free_worker(len(body))
        job = Job(self.next_id, programs[0], ("jit",), list(tags), batch=list(programs))
        if w is None:
            self.next_id += 1
            self._pending.extend(self._cancel(job))
            return
        self._send(w, job, f'{{"id": {job.id}, {body}}}\n'.encode())

    def wait(self, timeout: float = 1.0) -> list[Completed]:
        """Wait until at least one job completes (or `timeout`); return completed jobs."""
        t0 = time.monotonic()
        done, self._pending = self._pending, []
        while not done and time.monotonic() - t0 < timeout:
            done.extend(self._poll(min(0.5, timeout)))
        return done

    def drain(self) -> list[Completed]:
        out, self._pending = self._pending, []
        while self.busy():
            out.extend(self._poll(0.5))
        return out

    def _poll(self, timeout: float) -> list[Completed]:
        done: list[Completed] = []
        for key, _ in self.ws.sel.select(timeout):
            w: Worker = key.data
            # raw reads: a buffered readline would hide complete lines from select()
            chunk = os.read(key.fileobj.fileno(), 1 << 20)  # type: ignore[union-attr]
            if not chunk:
                done.extend(self._dead(w, "crash"))
                continue
            for line in w.lines(chunk):
                done.extend(w.handle(line))
                self.info = w.info or self.info
        now = time.monotonic()
        if self.expired():
            done.extend(self._cancel_all())
        for w in list(self.ws.workers):
            if w.job is not None and now - w.job.mode_started > self.running_limit_s(w.job):
                done.extend(self._dead(w, "timeout"))
            elif w.job is None and w.proc.poll() is not None:
                self.ws.retire(w)
                self.ws.spawn()
        self.ws.dispatch()
        return done

    def _cancel_all(self) -> list[Completed]:
        """The deadline has passed: every job running or waiting is cancelled, and each
        worker that held one is killed (replaced when a job is next submitted before a
        deadline: `_free_worker`)."""
        out: list[Completed] = []
        for w in [w for w in self.ws.workers if w.queue]:
            jobs, w.queue = list(w.queue), []
            self.ws.retire(w)
            for j in jobs:
                out.extend(self._cancel(j))
        backlog, self.ws.backlog = self.ws.backlog, []
        for j in backlog:
            out.extend(self._cancel(j))
        return out

    def _cancel(self, job: Job) -> list[Completed]:
        self.cancelled += 1
        return cancel(job)

    def _dead(self, w: Worker, status: str) -> list[Completed]:
        job = w.job
        # the jobs it held but had not started go to the other workers, or its replacement
        self.ws.backlog.extend(w.queue[1:])
        del w.queue[1:]
        if job is None and not w.ready:
            w.proc.wait()
            tail = w.stderr_tail()
            self.ws.retire(w)
            raise WorkerStartError(
                f"{self.python} -m harness.run.worker exited with code {w.proc.returncode} before it was ready: "
                f"{tail.strip().splitlines()[-1] if tail.strip() else 'no output'}"
            )
        again = job is not None and job.in_together
        if again:
            self.together_again += 1
        elif status == "timeout":
            self.timeouts += 1
        else:
            self.crashes += 1
        w.kill() if status == "timeout" else w.proc.wait()
        rc = w.proc.returncode
        tail = w.stderr_tail()
        cause = crash_cause(w.stderr_tail(64_000, last_job=True))  # (before the log goes with the worker)
        self.ws.retire(w)
        self.ws.spawn()  # becomes free once it reports ready
        if job is None:
            return []
        if again:  # (sent by `_poll`'s dispatch, which called this, first of all jobs waiting)
            self.ws.backlog.insert(0, one_by_one(job))
            return []
        what = f"timed out after {self.limit_s(job):.0f}s" if status == "timeout" else f"worker died (exit code {rc}{signame(rc)})"
        return died(job, status, f"{what}{'; cause: ' + cause if cause else ''}; stderr tail: {tail[-600:]}")

    def close(self) -> None:
        self.ws.close(kill_server=self.expired())  # (past the deadline: the fork server killed at once)
