"""`shardfuzz serve`: the spec-checker page, driven in headless Chromium with Playwright
(load the page, edit a spec, see the verdict change; ask jax and see verified fixes),
and its JSON API on the loopback interface."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator

import pytest
from helpers import chromium

from harness.serve.api import CheckRequest, check
from harness.serve.server import HOST, make_server

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    srv = make_server(0)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://{HOST}:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()
    srv.jax.close()  # type: ignore[attr-defined]


def _post(url: str, d: dict[str, object]) -> dict[str, object]:
    req = urllib.request.Request(url + "/api/check", json.dumps(d).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())  # type: ignore[no-any-return]


def test_binds_loopback_only(server: str) -> None:
    assert server.startswith("http://127.0.0.1:")


def test_api_verdict_follows_the_spec(server: str) -> None:
    ok = _post(server, {"out_specs": "(P('x'),)"})
    assert ok["ok"] and ok["verdict"] == "valid"
    assert any("per-device (2, 2)" in ln for ln in ok["explain"])  # type: ignore[union-attr]
    bad = _post(server, {"out_specs": "(P(),)"})
    assert bad["verdict"] == "out_spec_replication" and bad["fixes"]
    assert not any(f["verified"] for f in bad["fixes"])  # type: ignore[index, union-attr]


def test_api_unreadable_body_names_line_and_column() -> None:
    r = check(CheckRequest(body="def body(a0):\n  v0 = a0 @ a0\n  return v0,"))
    assert not r.ok and r.problem.startswith("body line 2, column 8: ")
    r = check(CheckRequest(out_specs="(Q('x'),)"))
    assert not r.ok and r.problem.startswith("out_specs, column 2: ")
    r = check(CheckRequest(mesh="x=two"))
    assert not r.ok and r.problem.startswith("mesh: ")


def test_api_with_jax_shows_only_verified_fixes(server: str) -> None:
    r = _post(server, {"out_specs": "(P(),)", "jax": True})
    assert "jax 0." in str(r["jax"]) and "ValueError" in str(r["jax"])
    fixes = r["fixes"]
    assert fixes and all(f["verified"] for f in fixes)  # type: ignore[index, union-attr]


def test_page_in_headless_chromium(server: str) -> None:
    exe = chromium("test the spec-checker page")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is missing: pip install -e '.[test]'")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=FLAGS, headless=True)
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(server + "/")
            verdict = page.locator("#verdict")
            sync_api.expect(verdict).to_have_text("valid: jax must run it", timeout=30000)
            sync_api.expect(page.locator("#types")).to_contain_text("varies over {x}")
            # edit a spec: the output now leaves out the axis it varies along
            page.fill("#out_specs", "(P(),)")
            sync_api.expect(verdict).to_contain_text("out_spec_replication", timeout=30000)
            sync_api.expect(page.locator("#fixes")).to_contain_text("not yet run on jax")
            # and back
            page.fill("#out_specs", "(P(None, 'x'),)")
            sync_api.expect(verdict).to_have_text("valid: jax must run it", timeout=30000)
            # ask jax: its message, and fixes verified by the oracle and by jax
            page.fill("#out_specs", "(P(),)")
            sync_api.expect(verdict).to_contain_text("out_spec_replication", timeout=30000)
            page.click("#run_jax")
            sync_api.expect(page.locator("#status")).to_have_text("checked with jax", timeout=120000)
            sync_api.expect(page.locator("#jax")).to_contain_text("require replication")
            sync_api.expect(page.locator("#fixes")).to_contain_text("[verified]")
            assert errors == []
        finally:
            browser.close()
