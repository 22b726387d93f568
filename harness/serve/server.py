"""`shardfuzz serve`: the spec-checker page on 127.0.0.1 (stdlib http.server, no
external assets). GET / is the page; POST /api/check takes the form as JSON
(`api.CheckRequest`) and answers `api.CheckResponse`. The oracle answers at once on
every edit; "check with jax" runs the program and its fixes in a crash-safe worker."""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness.run.pool import Pool
from harness.serve.api import CheckRequest, check
from harness.serve.page import PAGE

HOST = "127.0.0.1"  # loopback only: the page runs jax on what it is sent


class _Jax:
    """One worker pool, started on the first request that asks for jax."""

    def __init__(self, python: str | None) -> None:
        self.python = python
        self.pool: Any = None
        self.lock = threading.Lock()

    def get(self) -> Any:
        if self.pool is None:
            self.pool = Pool(1, python=self.python, timeout_s=60.0)
        return self.pool

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


def make_server(port: int = 0, python: str | None = None) -> ThreadingHTTPServer:
    jax = _Jax(python)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet: the console shows progress only
            pass

        def _send(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", "default-src 'self'; img-src data:; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            if self.path in ("/", "/index.html"):
                self._send(200, PAGE.encode(), "text/html; charset=utf-8")
            else:
                self._send(404, b"not found", "text/plain")

        def do_POST(self) -> None:  # noqa: N802
            if self.path != "/api/check":
                self._send(404, b"not found", "text/plain")
                return
            try:
                n = int(self.headers.get("Content-Length", "0"))
                d = json.loads(self.rfile.read(min(n, 1 << 20)) or b"{}")
                known = {f.name for f in fields(CheckRequest)}
                if not isinstance(d, dict) or set(d) - known:
                    raise ValueError(f"expected an object with fields {sorted(known)}")
                dflt = CheckRequest()
                text = {k: str(d.get(k, getattr(dflt, k))) for k in ("mesh", "args", "in_specs", "out_specs", "axis_names", "body")}
                req = CheckRequest(**text, check_vma=bool(d.get("check_vma", True)), jax=bool(d.get("jax", False)))
            except (ValueError, TypeError) as e:
                self._send(400, json.dumps({"ok": False, "problem": f"bad request: {e}"}).encode(), "application/json")
                return
            if req.jax:
                with jax.lock:  # one jax run at a time
                    res = check(req, jax.get())
            else:
                res = check(req)
            self._send(200, json.dumps(asdict(res)).encode(), "application/json")

    srv = ThreadingHTTPServer((HOST, port), Handler)
    srv.jax = jax  # type: ignore[attr-defined]
    return srv
