"""`shardfuzz errors`: a page for every error kind, each example executed on jax while
the catalogue is generated (a fault injected into jax shows on its page at once)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from harness.campaign.catalogue import build, examples
from harness.judge.check import check_in_pool
from harness.report.catalogue import MEANINGS, write_catalogue
from oracles.prediction import ErrorKind


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from harness.cli import main

    out = tmp_path_factory.mktemp("errors")
    # --python: the same interpreter, named explicitly (the path another jax would take)
    assert main(["errors", "--out", str(out), "--python", sys.executable]) == 0
    return out


def test_a_page_for_every_error_kind(catalogue: Path) -> None:
    assert set(MEANINGS) == set(ErrorKind)
    doc = json.loads((catalogue / "catalogue.json").read_text())
    assert set(doc["kinds"]) == {k.value for k in ErrorKind}
    for k in ErrorKind:
        md = (catalogue / f"{k.value}.md").read_text()
        html = (catalogue / f"{k.value}.html").read_text()
        entry = doc["kinds"][k.value]
        assert entry["as_predicted"], k
        assert entry["verified_fixes"] >= 1, k
        assert f"{entry['error_type']}: {entry['message']}"[:200] in md
        assert "### verified:" in md and "```diff" in md
        assert 'class="fix"' in html
        # self-contained: no external stylesheet, script, image or link target
        assert not re.search(r"<(script|link|img)\b", html) and "http" not in html.split("<body>")[0]
        assert not re.search(r'(src|href)="(https?:)?//', html)
    index = (catalogue / "index.md").read_text()
    assert all(f"({k.value}.md)" in index for k in ErrorKind)


def test_each_message_is_what_jax_says_when_run_again(catalogue: Path, pool) -> None:  # type: ignore[no-untyped-def]
    doc = json.loads((catalogue / "catalogue.json").read_text())
    found = examples()
    for k in (ErrorKind.OUT_SPEC_REPLICATION, ErrorKind.UNBOUND_AXIS, ErrorKind.IN_SPEC_DIVISIBILITY):
        o = check_in_pool(pool, found[k][1], ("abstract",)).observations[0]
        assert doc["kinds"][k.value]["message"] == o.error_message


def test_examples_are_executed_during_generation(tmp_path: Path) -> None:
    """With jax's replication check removed, the page says jax no longer raises it."""
    from harness.run.pool import Pool

    pool = Pool(1, timeout_s=60.0, env={"SHARDFUZZ_FAULTS": "no_check_replication"})
    try:
        cat = build(pool, tmp_path, log=lambda s: None, kinds=(ErrorKind.OUT_SPEC_REPLICATION,))
    finally:
        pool.close()
    (pg,) = cat.pages
    assert not pg.as_predicted and pg.error_type == "(nothing raised)"
    assert "missing_error" in pg.judge or "raised nothing" in pg.judge
    assert pg.fixes.fixes, "the fixes do not depend on the removed check"


def test_regenerating_shows_changed_messages(catalogue: Path, tmp_path: Path, pool) -> None:  # type: ignore[no-untyped-def]
    doc = json.loads((catalogue / "catalogue.json").read_text())
    doc["jax_version"] = "0.0.1"
    doc["kinds"]["unbound_axis"]["message"] = "an older wording"
    (tmp_path / "catalogue.json").write_text(json.dumps(doc))
    cat = build(pool, tmp_path, log=lambda s: None, kinds=(ErrorKind.UNBOUND_AXIS, ErrorKind.SPEC_TYPE))
    write_catalogue(cat, tmp_path)
    assert cat.previous_version == "0.0.1" and [pg.kind for pg in cat.changed] == [ErrorKind.UNBOUND_AXIS]
    md = (tmp_path / "unbound_axis.md").read_text()
    assert "Changed since jax 0.0.1" in md and "an older wording" in md
    assert "Messages changed since the previous catalogue (jax 0.0.1): unbound_axis" in (tmp_path / "index.md").read_text()


def test_errors_bad_python_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    assert main(["errors", "--out", str(tmp_path), "--python", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--python" in err[0]
