"""A fork server for workers: one process imports jax and the worker's modules once;
each worker is a fork of it (harness/run/pool.py `ForkServer`).

A worker started as its own interpreter spends over a second of CPU importing jax
before its first job. A fuzz run restarts a worker after every crash and hang jax has,
known or not, each restart costing the run that CPU, and starts its workers while the
parent draws its first programs. A fork of this process is ready in milliseconds
(figures: docs/execution.md).

The fork happens before jax's backend exists: importing jax starts no thread of XLA's
(the CPU client and its thread pools come with the first device query, in the worker),
and BLAS runs single-threaded here, so the fork copies a process with one thread.
Deliberate faults (`SHARDFUZZ_FAULTS`) are installed in each worker, after the fork:
installing them asks the real jax what it supports, which starts the backend.

Speaks over one AF_UNIX SOCK_SEQPACKET socket (its number in argv), a JSON message per
packet:
- to the parent, once its imports are done: `{"ready": true}`;
- from the parent: `{"spawn": LOG}` with three descriptors (the worker's stdin, stdout,
  stderr); answered `{"pid": N}` once forked;
- to the parent, as each worker ends: `{"exit": N, "rc": CODE}` (a negative CODE: the
  signal that ended it, as subprocess gives it).

It exits when the parent closes the socket (the parent closed the pool, or died); its
workers end on their own when their stdin closes (harness/run/worker.py).

Run as `python -m harness.run.zygote FD`.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import IO

from harness.run import compat, worker
from harness.run.worker import host_device_count

ROOT = Path(__file__).resolve().parents[2]


def _preload() -> None:
    """What every worker imports before its first job (the modes and the codecs come with
    this module's import of harness/run/worker.py), without starting jax's backend
    (`worker._serve` does the same again in the worker: idempotent)."""
    compat.force_host_devices(host_device_count())
    import jax  # noqa: F401


def _child(sock: socket.socket, wake: tuple[int, int], fds: list[int], log: str) -> None:
    """In the fork: become a worker on the descriptors given, and never return."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        sock.close()
        for fd in wake:
            os.close(fd)
        os.setsid()  # (a group of its own: the pool kills it with killpg, as a spawned one)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.environ[worker.LOG_ENV] = log
        code = worker.main()
    except BaseException:  # noqa: BLE001 - a worker must never return into the server's loop
        try:
            traceback.print_exc()
        except BaseException:  # noqa: BLE001
            pass
    finally:
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except BaseException:  # noqa: BLE001
                pass
        os._exit(code if isinstance(code, int) else 1)


def _send(sock: socket.socket, msg: dict[str, object]) -> None:
    sock.send(json.dumps(msg).encode())


def _reap(sock: socket.socket) -> None:
    """Report every child that has ended."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(sock, {"exit": pid, "rc": os.waitstatus_to_exitcode(status)})


def serve(fd: int) -> int:
    sock = socket.socket(fileno=fd)
    _preload()
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # (a handler: the wakeup byte is written)
    _send(sock, {"ready": True})
    while True:
        try:
            ready, _, _ = select.select([sock, r], [], [])
        except InterruptedError:
            continue
        if r in ready:
            try:
                while os.read(r, 512):
                    pass
            except BlockingIOError:
                pass
            _reap(sock)
        if sock in ready:
            try:
                data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 3)
            except ConnectionResetError:
                data, fds = b"", []
            if not data:
                return 0  # the parent is gone or done
            msg = json.loads(data)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(sock, (r, w), fds, str(msg["spawn"]))
            for x in fds:
                os.close(x)
            _send(sock, {"pid": pid})
            _reap(sock)


class Forked:
    """A worker the fork server forked, seen as `subprocess.Popen` sees a child: `pid`,
    `stdin`, `stdout`, `poll()`, `wait()`, `returncode` (from the server's reports)."""

    def __init__(self, server: ForkServer, pid: int, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self.server, self.pid, self.stdin, self.stdout = server, pid, stdin, stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.exit_code(self.pid, block=False)
        return self.returncode

    def wait(self) -> int:
        while self.returncode is None:
            self.returncode = self.server.exit_code(self.pid, block=True)
        return self.returncode


class ForkServer:
    """The parent's side of the fork server: start it (`python -m harness.run.zygote`,
    in the pool's environment), then `spawn` workers. `ready` is False when it could not
    start (the pool then starts its workers as their own interpreters, which report why
    they cannot start)."""

    def __init__(self, python: str, env: dict[str, str], log_dir: Path, deadline_s: float = 120.0) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        self.exits: dict[int, int] = {}
        self.dead = False
        # its own stderr: read should it fail to start, gone once it is ready (the pool's
        # log directory holds the workers' logs only)
        self.log = tempfile.NamedTemporaryFile(prefix="shardfuzz-forkserver-", suffix=".log", dir=log_dir, delete=False)
        env = dict(env)
        env.setdefault("OPENBLAS_NUM_THREADS", "1")  # (numpy's BLAS threads: none to fork across)
        try:
            self.proc = subprocess.Popen(
                [python, "-m", "harness.run.zygote", str(theirs.fileno())],
                stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, env=env, cwd=str(ROOT),
                start_new_session=True, pass_fds=(theirs.fileno(),))
        except OSError:
            self.proc = None
        theirs.close()
        self.ready = self.proc is not None and self._await_ready(deadline_s)
        self._drop_log()
        if not self.ready:
            self.close()

    def _drop_log(self) -> None:
        self.log.close()
        try:
            os.unlink(self.log.name)
        except OSError:
            pass

    def _await_ready(self, deadline_s: float) -> bool:
        t0 = time.monotonic()
        while time.monotonic() - t0 < deadline_s:
            msg = self._recv(timeout=1.0)
            if msg is not None and msg.get("ready"):
                return True
            if self.dead:
                return False
        return False

    def _recv(self, timeout: float | None) -> dict[str, int] | None:
        """One message (exits are kept in `exits`, and returned too), or None when none
        came within `timeout` (0: do not wait; None: wait for one)."""
        if self.dead:
            return None
        r, _, _ = select.select([self.sock], [], [], timeout)
        if not r:
            return None
        try:
            data = self.sock.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            self.dead = True
            return None
        msg = json.loads(data)
        if "exit" in msg:
            self.exits[int(msg["exit"])] = int(msg["rc"])
        return msg  # type: ignore[no-any-return]

    def spawn(self, log: IO[bytes]) -> Forked:
        """A worker with stderr to `log`; OSError when the server is gone."""
        if self.dead:
            raise OSError("the fork server is gone")
        r_in, w_in = os.pipe()
        r_out, w_out = os.pipe()
        try:
            socket.send_fds(self.sock, [json.dumps({"spawn": log.name}).encode()], [r_in, w_out, log.fileno()])
        except OSError:
            for fd in (r_in, w_in, r_out, w_out):
                os.close(fd)
            self.dead = True
            raise
        os.close(r_in)
        os.close(w_out)
        while True:
            msg = self._recv(timeout=30.0)
            if msg is not None and "pid" in msg:
                return Forked(self, int(msg["pid"]), os.fdopen(w_in, "wb", buffering=0), os.fdopen(r_out, "rb", buffering=0))
            if self.dead or msg is None:
                os.close(w_in)
                os.close(r_out)
                self.dead = True
                raise OSError("the fork server did not fork a worker")

    def exit_code(self, pid: int, block: bool) -> int | None:
        """The exit code of worker `pid` once it has ended (None: still running, when not
        `block`). With the server gone, an ended worker's code is unknown: 1."""
        while pid not in self.exits:
            if self.dead:
                if not _alive(pid):
                    return 1
                return self._await_gone(pid) if block else None
            if self._recv(timeout=1.0 if block else 0) is None and not block:
                return None
        return self.exits.pop(pid)

    @staticmethod
    def _await_gone(pid: int) -> int:
        while _alive(pid):
            time.sleep(0.05)
        return 1

    def close(self) -> None:
        """Stop the server (its workers end as their stdin closes)."""
        try:
            self.sock.close()
        except OSError:
            pass
        self.dead = True
        if self.proc is not None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie does not: an orphan's reaper may be slow)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True


def main() -> int:
    try:
        return serve(int(sys.argv[1]))
    except (BrokenPipeError, ConnectionResetError):
        return 0


if __name__ == "__main__":
    sys.exit(main())
