"""The worker processes of a pool: starting them (forks of a zygote that imported jax, or
interpreters of their own), their queues of jobs, which one has room, sending a job line,
the jobs a dead worker held but had not started (`backlog`), and cleaning up their logs."""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any

from harness.run.jobs import Completed, Job, started
from harness.run.modes import observation_from_dict
from harness.run.worker import JOB_MARK, LOG_ENV
from harness.run.zygote import Forked, ForkServer

ROOT = Path(__file__).resolve().parents[2]
QUEUE_BYTES = 32 << 10  # a job's line longer than this goes to an idle worker only (Workers.room)


class Worker:
    """One worker process: its pipe, its log, the jobs sent to it."""

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

    def lines(self, chunk: bytes) -> list[bytes]:
        """The whole lines `chunk` ends, the rest kept for the next read. A pipe gives at
        most 64 KiB a read: an observation of large blocks is many reads, so its pieces
        are joined once, when its line ends (not re-joined and re-split on every read,
        which is quadratic in the line)."""
        if b"\n" not in chunk:
            self.buf.append(chunk)
            return []
        first, *lines = chunk.split(b"\n")
        lines[:0] = [b"".join([*self.buf, first])]
        *lines, rest = lines
        self.buf = [rest] if rest else []
        return lines

    def handle(self, line: bytes) -> list[Completed]:
        """One line from the worker: ready, a mode started, an observation, or a job done
        (returned as its Completed, one per program of a batch)."""
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            return []
        ev = msg.get("event")
        if ev == "ready":
            self.ready = True
            self.info = msg
        elif self.job is not None and ev == "start":
            self.job.current_mode = msg["mode"]
            self.job.in_together = bool(msg.get("together"))
            self.job.mode_started = time.monotonic()
        elif self.job is not None and ev == "obs":
            self.job.in_together = False
            o = observation_from_dict(msg["observation"])
            if self.job.batch is not None:
                self.job.batch_obs[int(msg["index"])] = o
            else:
                self.job.observations.append(o)
                self.job.current_mode = None
        elif self.job is not None and ev == "done":
            j = self.queue.pop(0)
            if self.queue:  # (its next job, already in its stdin, starts now)
                started(self.queue[0])
            self.jobs_done += 1
            self.cpu_s = float(msg.get("cpu_s", self.cpu_s))
            if j.batch is not None:
                return [Completed(p, [j.batch_obs[i]], j.tag[i]) for i, p in enumerate(j.batch) if i in j.batch_obs]
            return [Completed(j.program, j.observations, j.tag)]
        return []

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


class Workers:
    """`n` workers, each holding at most `depth` jobs (the one it runs and those waiting in
    its stdin), registered with one selector; `backlog`: jobs sent again once a worker has
    room. Each worker's stderr goes to a log file in `log_dir` (removed by `close`, or by a
    finalizer should it never be called)."""

    def __init__(self, n: int, python: str, env: dict[str, str], depth: int, fork_server: bool) -> None:
        self.n, self.python, self.env, self.depth = n, python, env, depth
        self.sel = selectors.DefaultSelector()
        self.workers: list[Worker] = []
        self.retired_cpu_s = 0.0  # what retired workers (crashed, hung, replaced) had spent
        self.backlog: list[Job] = []  # jobs a dead worker held but had not started: sent again
        self.log_dir = Path(tempfile.mkdtemp(prefix="shardfuzz-pool-"))
        self._cleanup = weakref.finalize(self, shutil.rmtree, str(self.log_dir), True)
        self.server: ForkServer | None = None
        if fork_server:
            server = ForkServer(self.python, self.env, self.log_dir)
            self.server = server if server.ready else None

    def cpu_s(self) -> float:
        """CPU seconds every worker started has spent, as of its last finished job (a
        retired worker's count is kept, so a crash does not make the figure go back)."""
        return self.retired_cpu_s + sum(w.cpu_s for w in self.workers)

    def spawn(self) -> Worker:
        w = None
        if self.server is not None:
            try:
                w = Worker(self.python, self.env, self.log_dir, self.server)
            except OSError:  # the fork server is gone: interpreters of their own from now on
                self.server.close()
                self.server = None
        if w is None:
            w = Worker(self.python, self.env, self.log_dir)
        assert w.proc.stdout is not None
        self.sel.register(w.proc.stdout, selectors.EVENT_READ, w)
        self.workers.append(w)
        return w

    def retire(self, w: Worker) -> None:
        try:
            assert w.proc.stdout is not None
            self.sel.unregister(w.proc.stdout)
        except (KeyError, ValueError):
            pass
        w.kill()
        self.workers.remove(w)
        self.retired_cpu_s += w.cpu_s

    def room(self, w: Worker, size: int = 0, alone: bool = False) -> int:
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
        workers' queues, less the jobs waiting to be sent again (`backlog`)."""
        return max(0, sum(self.room(w) for w in self.workers) - len(self.backlog))

    def busy(self) -> int:
        return sum(1 for w in self.workers if w.queue) + len(self.backlog)

    def pick(self, size: int, alone: bool = False) -> Worker | None:
        """The worker with room for a line of `size` bytes (for a job `alone`: an idle
        one) that has the fewest jobs (an idle one first)."""
        return min((w for w in self.workers if self.room(w, size, alone)), key=lambda w: len(w.queue), default=None)

    def dispatch(self) -> None:
        """Send the jobs a dead worker held but had not started to workers with room, in order."""
        while self.backlog:
            w = self.pick(len(self.backlog[0].line), self.backlog[0].alone)
            if w is None:
                return
            job = self.backlog.pop(0)
            self.send(w, job, job.line)

    @staticmethod
    def send(w: Worker, job: Job, line: bytes) -> None:
        job.line = line
        w.queue.append(job)
        if len(w.queue) == 1:
            started(job)
        assert w.proc.stdin is not None
        data = line
        try:  # straight to the pipe (a text wrapper's write and flush cost more than the job)
            fd = w.proc.stdin.fileno()
            while data:
                data = data[os.write(fd, data) :]
        except (BrokenPipeError, OSError):
            pass  # noticed as a crash by the next poll

    def close(self, kill_server: bool = False) -> None:
        """End every worker (its stdin closed, then killed) and the fork server
        (`kill_server`: at once, not its graceful exit, which may take seconds)."""
        for w in list(self.workers):
            try:
                assert w.proc.stdin is not None
                w.proc.stdin.close()
            except OSError:
                pass
            self.retire(w)
        if self.server is not None:
            if kill_server and self.server.proc is not None:
                self.server.proc.kill()
            self.server.close()
            self.server = None
        self._cleanup()  # the log directory (each log is already gone with its worker)
