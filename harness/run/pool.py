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
import math
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.run.modes import Observation, observation_from_dict
from harness.run.observation import signame
from harness.run.worker import JOB_MARK, LOG_ENV
from harness.run.zygote import Forked, ForkServer
from programs.errors import WorkerStartError
from programs.model import Program
from programs.serialize import program_to_dict

ROOT = Path(__file__).resolve().parents[2]
QUEUE_BYTES = 32 << 10  # a job's line longer than this goes to an idle worker only (Pool._room)


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


class _Worker:
    def __init__(self, python: str, env: dict[str, str], log_dir: Path, server: ForkServer | None = None) -> None:
        self.log = tempfile.NamedTemporaryFile(prefix="shardfuzz-worker-", suffix=".log", dir=log_dir, delete=False)
        self.proc: subprocess.Popen[str] | Forked
        if server is not None:
            try:
                self.proc = server.spawn(self.log)
            except BaseException:
                self.log.close()
                os.unlink(self.log.name)
                raise
        else:
            self.proc = subprocess.Popen(
                [python, "-m", "harness.run.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.log,
                text=True,
                env={**env, LOG_ENV: self.log.name},
                cwd=str(ROOT),
                start_new_session=True,
            )
        # the jobs sent to it, in order: the first is running, the others wait in its stdin
        # (Pool `depth`)
        self.queue: list[Job] = []
        self.buf: list[bytes] = []  # the pieces of an unfinished line
        self.ready = False
        self.info: dict[str, Any] = {}
        self.jobs_done = 0
        self.cpu_s = 0.0  # the worker's own CPU time, as of its last finished job

    @property
    def job(self) -> Job | None:
        """The job it is running (None: idle)."""
        return self.queue[0] if self.queue else None

    def stderr_tail(self, n: int = 1500, last_job: bool = False) -> str:
        """The end of the worker's stderr, without XLA's per-compile GSPMD deprecation
        warning (the gspmd mode prints it each time; it would crowd out the real cause);
        `last_job`: only what the job it was running wrote (worker.JOB_MARK)."""
        try:
            with open(self.log.name, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - 8 * n))
                text = f.read().decode(errors="replace")
        except OSError:
            return ""
        lines = [x for x in text.splitlines() if "GSPMD sharding propagation is going to be deprecated" not in x]
        if last_job:
            marks = [i for i, x in enumerate(lines) if x == JOB_MARK]
            lines = lines[marks[-1] + 1 :] if marks else lines
        return "\n".join(x for x in lines if x != JOB_MARK)[-n:]

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        self.log.close()
        try:
            os.unlink(self.log.name)
        except OSError:
            pass


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


def _size_scale(job: Job) -> float:
    """How much longer than a small program's a job's time limits are: by its size past 2M
    argument elements, at most 8x (`Pool.limit_s`)."""
    n = sum(math.prod(x.shape) for x in job.program.inputs)
    return max(1.0, min(8.0, n / float(1 << 21)))


# A worker running a program's modes in one jit (harness/run/together.py) longer than
# this is ended, and the modes run again one by one (`Pool._dead`), as after a crash there.
# The shared run of a sweep program takes 1-2 s (its slowest, warm, in seed 0's run: 2.0
# s); the pool's limit summed over the modes, 30 s each, had let one stall a worker for
# the rest of a 60 s run: seed 0, warm, groups of 16 foci, one worker sat at 0% CPU in
# block_until_ready of a shared jit of jit, vmap, grad and grad_remat from 30 s on
# (local ops under seven wrappers), and the run checked 96.4% of its pairs instead of
# 99.6%. It stalls whenever that executable comes from the persistent compilation cache
# (XLA: an all-reduce rendezvous waits for threads that never arrive); compiled in the
# process it runs in about 1 s, and so do its modes alone, from the cache or not. A jax-only
# reproducer: reports/upstream/xla_cpu_cached_jit_deadlock.py (jax 0.10.2: hangs; 0.12.0: runs).
TOGETHER_LIMIT_S = 10.0
CANCELLED = "not run: the run's time was up (its budget and grace)"  # a cancelled mode's message


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
        while the parent evaluates the finished one and draws the next program (it
        otherwise sat idle about 17 ms a job: 6.5 s of a 60 s run's two workers)."""
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
        self.sel = selectors.DefaultSelector()
        self.workers: list[_Worker] = []
        self.retired_cpu_s = 0.0  # what retired workers (crashed, hung, replaced) had spent
        self.next_id = 0
        self.crashes = 0
        self.together_again = 0  # jobs whose worker died running modes together: run again one by one
        self.timeouts = 0
        self.cancelled = 0  # jobs cancelled at the deadline
        # time.monotonic() past which nothing runs (None: no deadline); see the module doc
        self.deadline: float | None = None
        self.info: dict[str, Any] = {}
        self._pending: list[Completed] = []  # completions seen while waiting to submit
        self._backlog: list[Job] = []  # jobs a dead worker held but had not started: sent again
        self.depth = max(1, depth)
        self.log_dir = Path(tempfile.mkdtemp(prefix="shardfuzz-pool-"))
        self._cleanup = weakref.finalize(self, shutil.rmtree, str(self.log_dir), True)
        # workers are forks of one process that imported jax (harness/run/zygote.py):
        # ready in milliseconds, where an interpreter of their own takes ~1.5 s of CPU,
        # at the start and after every crash and hang (SHARDFUZZ_FORK_SERVER=0: off)
        if fork_server is None:
            fork_server = os.environ.get("SHARDFUZZ_FORK_SERVER", "1") != "0"
        self.server: ForkServer | None = None
        try:
            if fork_server:
                server = ForkServer(self.python, self.env, self.log_dir)
                self.server = server if server.ready else None
            for _ in range(self.n):
                self._spawn()
            self._await_ready()
        except BaseException:
            self.close()  # the workers that did start, and the log directory
            raise

    def worker_cpu_s(self) -> float:
        """CPU seconds every worker this pool started has spent, as of its last finished
        job (the jax side's cost, for benchmarks): a retired worker's count is kept, so
        a crash does not make the figure go back."""
        return self.retired_cpu_s + sum(w.cpu_s for w in self.workers)

    def _spawn(self) -> _Worker:
        w = None
        if self.server is not None:
            try:
                w = _Worker(self.python, self.env, self.log_dir, self.server)
            except OSError:  # the fork server is gone: interpreters of their own from now on
                self.server.close()
                self.server = None
        if w is None:
            w = _Worker(self.python, self.env, self.log_dir)
        assert w.proc.stdout is not None
        self.sel.register(w.proc.stdout, selectors.EVENT_READ, w)
        self.workers.append(w)
        return w

    def _await_ready(self, deadline_s: float = 120.0) -> None:
        t0 = time.monotonic()
        while not all(w.ready for w in self.workers):
            if time.monotonic() - t0 > deadline_s:
                raise WorkerStartError(f"{self.python}: workers did not start within {deadline_s:.0f}s")
            self._poll(1.0)

    def _retire(self, w: _Worker) -> None:
        try:
            assert w.proc.stdout is not None
            self.sel.unregister(w.proc.stdout)
        except (KeyError, ValueError):
            pass
        w.kill()
        self.workers.remove(w)
        self.retired_cpu_s += w.cpu_s

    def limit_s(self, job: Job) -> float:
        """The per-mode time limit for a job: `timeout_s`, scaled by the program's size past
        2M argument elements (a large program, 4 MiB per device on 8 devices, gets 4x),
        at most 8x, so a big transfer is not mistaken for a hang."""
        if job.limit_s is None:
            base = self.timeout_s
        else:  # (a job alone may have a longer limit than the pool's; any other, only a shorter one)
            base = job.limit_s if job.alone else min(job.limit_s, self.timeout_s)
        return base * _size_scale(job)

    def running_limit_s(self, job: Job) -> float:
        """The limit of what `job` runs now: a mode's (`limit_s`), or while it runs modes
        together (harness/run/together.py) the smaller of theirs summed and
        TOGETHER_LIMIT_S (size-scaled)."""
        one = self.limit_s(job)
        if not job.in_together:
            return one
        return min(one * len(job.together), TOGETHER_LIMIT_S * _size_scale(job))

    def _room(self, w: _Worker, size: int = 0, alone: bool = False) -> int:
        """How many more jobs `w` takes now (none until it is ready); a job whose line
        (`size` bytes) is longer than QUEUE_BYTES only an idle worker takes (a pipe holds 64 KiB: the
        write to a busy worker could block the parent until that worker's job ends, and
        a hung job's time limit with it); so does a job `alone`; a worker running a job
        alone takes none."""
        if not w.ready or (w.queue and (size > QUEUE_BYTES or alone or any(j.alone for j in w.queue))):
            return 0
        return max(0, self.depth - len(w.queue))

    def free(self) -> int:
        """How many jobs can be submitted now without waiting: the room left in the
        workers' queues, less the jobs waiting to be sent again (`_backlog`)."""
        return max(0, sum(self._room(w) for w in self.workers) - len(self._backlog))

    def busy(self) -> int:
        return sum(1 for w in self.workers if w.queue) + len(self._backlog)

    def _pick(self, size: int, alone: bool = False) -> _Worker | None:
        """The worker with room for a line of `size` bytes (for a job `alone`: an idle
        one) that has the fewest jobs (an idle one first)."""
        return min((w for w in self.workers if self._room(w, size, alone)), key=lambda w: len(w.queue), default=None)

    def expired(self) -> bool:
        """Whether the pool's deadline has passed (nothing runs any more)."""
        return self.deadline is not None and time.monotonic() > self.deadline

    def _dispatch(self) -> None:
        """Send the jobs a dead worker held but had not started to workers with room, in order."""
        while self._backlog:
            w = self._pick(len(self._backlog[0].line), self._backlog[0].alone)
            if w is None:
                return
            job = self._backlog.pop(0)
            self._send(w, job, job.line)

    def _free_worker(self, size: int = 0, alone: bool = False) -> _Worker | None:
        """A ready worker with room for a line of `size` bytes (`alone`: an idle one),
        waiting for one (a replacement may still be starting); completions seen meanwhile
        are kept for the next wait/drain. None once the deadline has passed."""
        t0 = time.monotonic()
        if not self.expired():
            while len(self.workers) < self.n:  # (those killed at a deadline since)
                self._spawn()
        self._dispatch()
        while True:
            if self.expired():
                return None
            w = self._pick(size, alone) if self.free() else None
            if w is not None:
                return w
            if time.monotonic() - t0 > 300:
                raise WorkerStartError(f"{self.python}: no worker became free within 300s")
            self._pending.extend(self._poll(0.5))

    def _send(self, w: _Worker, job: Job, line: bytes) -> None:
        self.next_id = max(self.next_id, job.id + 1)
        job.line = line
        w.queue.append(job)
        if len(w.queue) == 1:
            self._started(job)
        assert w.proc.stdin is not None
        data = line
        try:  # straight to the pipe (a text wrapper's write and flush cost more than the job)
            fd = w.proc.stdin.fileno()
            while data:
                data = data[os.write(fd, data) :]
        except (BrokenPipeError, OSError):
            pass  # noticed as a crash by the next poll

    @staticmethod
    def _started(job: Job) -> None:
        """`job` is its worker's running job from now (its time limit counts from here)."""
        job.mode_started = time.monotonic()
        if len(job.modes) == 1:
            job.current_mode = job.modes[0]  # (the worker sends no start for a one-mode job)

    def submit(self, program: Program, modes: tuple[str, ...], tag: Any = None, limit_s: float | None = None,
               together: tuple[str, ...] = (), alone: bool = False) -> None:
        """Give a program to a free worker, to run in each of `modes` (`limit_s`: a time
        limit per mode below the pool's, for modes a known entry says may hang;
        `together`: modes of `modes` to try in one jit first, harness/run/together.py;
        `alone`: on an idle worker with nothing queued behind it, `limit_s` as given even
        above the pool's). Past the deadline it is cancelled, not sent."""
        job = Job(self.next_id, program, modes, tag, limit_s=limit_s, together=together, alone=alone)
        body = self._body(job)
        w = self._free_worker(len(body), alone)
        if w is None:
            self.next_id += 1
            self._pending.extend(self._cancel(job))
            return
        clear = self.clear_caches_every > 0 and (w.jobs_done + len(w.queue) + 1) % self.clear_caches_every == 0
        self._send(w, job, f'{{"id": {job.id}, {body}, "clear_caches": {json.dumps(clear)}}}\n'.encode())

    @staticmethod
    def _body(job: Job) -> str:
        """The job line's fields but its id (ASCII JSON: its length is its size)."""
        fields: dict[str, Any] = {"program": program_to_dict(job.program), "modes": list(job.modes)}
        if job.together:
            fields["together"] = list(job.together)
        return json.dumps(fields)[1:-1]

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
        for key, _ in self.sel.select(timeout):
            w: _Worker = key.data
            # raw reads: a buffered readline would hide complete lines from select()
            chunk = os.read(key.fileobj.fileno(), 1 << 20)  # type: ignore[union-attr]
            if not chunk:
                done.extend(self._dead(w, "crash"))
                continue
            # a pipe gives at most 64 KiB a read: an observation of large blocks is many
            # reads, so its pieces are joined once, when its line ends (not re-joined and
            # re-split on every read, which is quadratic in the line)
            if b"\n" not in chunk:
                w.buf.append(chunk)
                continue
            first, *lines = chunk.split(b"\n")
            lines[:0] = [b"".join([*w.buf, first])]
            *lines, rest = lines
            w.buf = [rest] if rest else []
            for line in lines:
                done.extend(self._handle(w, line))
        now = time.monotonic()
        if self.expired():
            done.extend(self._cancel_all())
        for w in list(self.workers):
            if w.job is not None and now - w.job.mode_started > self.running_limit_s(w.job):
                done.extend(self._dead(w, "timeout"))
            elif w.job is None and w.proc.poll() is not None:
                self._retire(w)
                self._spawn()
        self._dispatch()
        return done

    def _cancel_all(self) -> list[Completed]:
        """The deadline has passed: every job running or waiting is cancelled, and each
        worker that held one is killed (replaced when a job is next submitted before a
        deadline: `_free_worker`)."""
        out: list[Completed] = []
        for w in [w for w in self.workers if w.queue]:
            jobs, w.queue = list(w.queue), []
            self._retire(w)
            for j in jobs:
                out.extend(self._cancel(j))
        backlog, self._backlog = self._backlog, []
        for j in backlog:
            out.extend(self._cancel(j))
        return out

    def _cancel(self, job: Job) -> list[Completed]:
        """`job` cancelled: what it observed before, and an `unsupported` observation
        (CANCELLED) for each mode it did not run."""
        self.cancelled += 1
        if job.batch is not None:
            return [Completed(p, [job.batch_obs[i]], job.tag[i]) if i in job.batch_obs else
                    Completed(p, [Observation("jit", status="unsupported", error_message=CANCELLED)], job.tag[i],
                              cancelled=("jit",))
                    for i, p in enumerate(job.batch)]
        seen = {o.mode for o in job.observations}
        rest = tuple(m for m in job.modes if m not in seen)
        return [Completed(job.program, [*job.observations, *(Observation(m, status="unsupported", error_message=CANCELLED)
                                                             for m in rest)], job.tag, cancelled=rest)]

    def _handle(self, w: _Worker, line: bytes) -> list[Completed]:
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            return []
        ev = msg.get("event")
        if ev == "ready":
            w.ready = True
            w.info = msg
            self.info = msg
        elif w.job is not None and ev == "start":
            w.job.current_mode = msg["mode"]
            w.job.in_together = bool(msg.get("together"))
            w.job.mode_started = time.monotonic()
        elif w.job is not None and ev == "obs":
            w.job.in_together = False
            o = observation_from_dict(msg["observation"])
            if w.job.batch is not None:
                w.job.batch_obs[int(msg["index"])] = o
            else:
                w.job.observations.append(o)
                w.job.current_mode = None
        elif w.job is not None and ev == "done":
            j = w.queue.pop(0)
            if w.queue:  # (its next job, already in its stdin, starts now)
                self._started(w.queue[0])
            w.jobs_done += 1
            w.cpu_s = float(msg.get("cpu_s", w.cpu_s))
            if j.batch is not None:
                return [Completed(p, [j.batch_obs[i]], j.tag[i]) for i, p in enumerate(j.batch) if i in j.batch_obs]
            return [Completed(j.program, j.observations, j.tag)]
        return []

    def _dead(self, w: _Worker, status: str) -> list[Completed]:
        job = w.job
        # the jobs it held but had not started go to the other workers, or its replacement
        self._backlog.extend(w.queue[1:])
        del w.queue[1:]
        if job is None and not w.ready:
            w.proc.wait()
            tail = w.stderr_tail()
            self._retire(w)
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
        self._retire(w)
        self._spawn()  # becomes free once it reports ready
        if job is None:
            return []
        if again:
            # it died running modes together: they run again one by one (each crash or hang
            # on its own mode), first of all jobs waiting
            seen = {o.mode for o in job.observations}
            one_by_one = Job(job.id, job.program, tuple(m for m in job.modes if m not in seen), job.tag,
                             list(job.observations), limit_s=job.limit_s, alone=job.alone)
            one_by_one.line = f'{{"id": {one_by_one.id}, {self._body(one_by_one)}}}\n'.encode()
            self._backlog.insert(0, one_by_one)  # (sent by `_poll`'s dispatch, which called this)
            return []
        mode = job.current_mode or (job.modes[len(job.observations)] if len(job.observations) < len(job.modes) else "?")
        what = f"timed out after {self.limit_s(w.job) if w.job is not None else self.timeout_s:.0f}s" if status == "timeout" else f"worker died (exit code {rc}{signame(rc)})"
        dead = Observation(mode, error_type=None, status=status,
                           error_message=f"{what}{'; cause: ' + cause if cause else ''}; stderr tail: {tail[-600:]}")
        if job.batch is not None:  # every program of the batch: the parent re-runs them alone
            return [Completed(p, [job.batch_obs.get(i, dead)], job.tag[i]) for i, p in enumerate(job.batch)]
        job.observations.append(dead)
        seen = {o.mode for o in job.observations}
        return [Completed(job.program, job.observations, job.tag, tuple(m for m in job.modes if m not in seen))]

    def close(self) -> None:
        for w in list(self.workers):
            try:
                assert w.proc.stdin is not None
                w.proc.stdin.close()
            except OSError:
                pass
            self._retire(w)
        if self.server is not None:
            if self.expired() and self.server.proc is not None:
                self.server.proc.kill()  # (past the deadline: not its graceful exit, which may take seconds)
            self.server.close()
            self.server = None
        self._cleanup()  # the log directory (each log is already gone with its worker)

