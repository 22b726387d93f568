"""Release qualification: the committed corpus, its coverage, and `shardfuzz qualify`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

import pytest

from harness.campaign.qualify import (
    Case,
    Cell,
    Column,
    changes,
    draw_programs,
    html_page,
    junit_xml,
    load_corpus,
)
from oracles import ErrorKind, predict
from programs.model import Input, Mesh, Op, Program, Spec
from programs.ops import SYNTAX
from programs.serialize import program_id

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "harness" / "data" / "corpus"


def sf(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_corpus_loads_and_every_prediction_computes() -> None:
    cases = load_corpus(CORPUS)
    assert {c.name.split("/")[0] for c in cases} >= {"known", "curated", "regressions"}
    for c in cases:
        predict(c.program)  # raises if the oracle cannot handle a committed case
        if not c.name.startswith("known/"):
            assert c.reason, f"{c.name}: needs a one-line ('reason', ...) note"
            assert "\n" not in c.reason


def test_curated_corpus_covers_every_op_kind_and_error_kind() -> None:
    curated = load_corpus(CORPUS / "curated")
    kinds = {op.kind for c in curated for op in c.program.body}
    assert kinds == set(SYNTAX), f"op kinds with no curated case: {sorted(set(SYNTAX) - kinds)}"
    predicted = set()
    for c in curated:
        pred = predict(c.program)
        expect = dict(c.program.notes)["expect"]
        got = "ok" if pred.error is None else pred.error.kind.value
        assert got == expect, f"{c.name}: oracle predicts {got}, the case says {expect}"
        if pred.error is not None:
            predicted.add(pred.error.kind)
    assert predicted == set(ErrorKind), f"ErrorKinds with no curated case: {sorted(k.value for k in set(ErrorKind) - predicted)}"


def test_curated_files_are_what_the_script_writes() -> None:
    r = subprocess.run([sys.executable, "scripts/build_curated_corpus.py", "--check"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_regressions_name_the_versions_they_affect() -> None:
    for c in load_corpus(CORPUS / "regressions"):
        notes = dict(c.program.notes)
        assert notes.get("affected") and notes.get("fixed_in") and notes.get("upstream"), c.name
        assert "jax 0." in c.reason, c.name


def test_fuzz_programs_are_the_same_for_the_same_seed() -> None:
    a = [program_id(p) for p in draw_programs(5, 6)]
    b = [program_id(p) for p in draw_programs(5, 6)]
    assert a == b and len(a) == 6


def _col(label: str, verdicts: dict[str, str]) -> Column:
    col = Column(label, f"/envs/{label}/bin/python", label.removeprefix("jax "))
    col.cells = {n: Cell(v, ["value|jit|psum"] if v == "fail" else [], message="m" if v == "fail" else "") for n, v in verdicts.items()}
    return col


def test_changes_exit_code_and_reports_order_regressions_before_fixes() -> None:
    p = Program(Mesh(("x",), (2,)), (Input((2,), "int32", "iota"),), (Spec((("x",),)),), (Op.make("neg", (0,)),), (1,), (Spec((("x",),)),))
    cases = [Case(n, p, f"why {n}") for n in ("a", "b", "c", "d")]
    first = _col("jax 0.4.35", {"a": "pass", "b": "fail", "c": "unsupported", "d": "pass"})
    last = _col("jax 0.10.2", {"a": "fail", "b": "pass", "c": "pass", "d": "pass"})
    ch = changes(cases, first, last)
    assert [r["case"] for r in ch["regressions"]] == ["a"]
    assert [r["case"] for r in ch["fixes"]] == ["b"]
    assert [r["case"] for r in ch["other"]] == ["c"]
    doc = {
        "schema": 1, "modes": ["abstract", "jit", "eager"], "corpus": "x", "fuzz": None,
        "versions": [{"label": c.label, "python": c.python, "jax_version": c.jax_version, "counts": c.counts(), "elapsed_s": 1.0} for c in (first, last)],
        "first": first.label, "last": last.label,
        "cases": [{"case": c.name, "source": "corpus", "reason": c.reason,
                   "verdicts": {col.label: col.cells[c.name].to_json() for col in (first, last)}} for c in cases],
        "changes": ch, "exit_code": 1,
    }
    page = html_page(doc)
    assert page.index("Regressions") < page.index("<b class='mono'>a</b>") < page.index("Fixes") < page.index("<b class='mono'>b</b>")
    root = ET.fromstring(junit_xml(doc))
    assert len(root.findall(".//testcase")) == 8
    assert len(root.findall(".//failure")) == 2 and len(root.findall(".//skipped")) == 1


def test_qualify_on_this_jax_exits_0(tmp_path: Path) -> None:
    """The whole committed corpus plus a few drawn programs, on this interpreter, twice
    (two 'versions'): known divergences are known, nothing fails, nothing regresses."""
    rep = tmp_path / "q"
    r = sf("qualify", "--corpus", "harness/data/corpus", "--python", sys.executable, "--python", sys.executable,
           "--report", str(rep), "--workers", "2", "--fuzz-seed", "3", "--fuzz-examples", "4",
           "--modes", "abstract,jit,eager")  # (every mode: test_qualify_runs_every_mode)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    doc = json.loads((rep / "qualify.json").read_text())
    labels = [v["label"] for v in doc["versions"]]
    assert labels == [f"jax {version('jax')}", f"jax {version('jax')} #2"]
    n_corpus = len(load_corpus(CORPUS))
    assert n_corpus < len(doc["cases"]) <= n_corpus + 4
    for v in doc["versions"]:
        assert v["counts"]["known"] > 0 and sum(v["counts"].values()) == len(doc["cases"])
    for c in doc["cases"]:
        for cell in c["verdicts"].values():
            # every mode, in order, but a crash costs the program its later modes (the
            # worker dies: bf16-partial-manual-allreduce-abort aborts in jit)
            ran = [m for m in ("abstract", "jit", "eager") if m in cell["statuses"]]
            assert set(cell["statuses"]) == set(ran) and ran, c["case"]
            if len(ran) < 3:
                assert cell["statuses"][ran[-1]] == "crash", (c["case"], cell["statuses"])
        verdicts = {cell["verdict"] for cell in c["verdicts"].values()}
        if c["case"] in ("curated/ragged_all_to_all_rows", "curated/pbroadcast_from_source"):
            # XLA:CPU cannot run ragged_all_to_all or pbroadcast: jit and eager must say unsupported, and
            # abstract (which can) must have run it without a divergence: it passes there
            for cell in c["verdicts"].values():
                assert cell["verdict"] == "pass" and cell["statuses"]["abstract"] == "ok", c
                assert cell["statuses"]["jit"] == cell["statuses"]["eager"] == "unsupported", c
        elif c["case"].startswith(("curated/", "regressions/")):
            assert verdicts == {"pass"}, c
        elif not c["case"].startswith("fuzz/"):  # drawn programs may find something new
            assert "fail" not in verdicts, c
    assert doc["changes"] == {"regressions": [], "fixes": [], "other": []}
    root = ET.parse(rep / "qualify.junit.xml").getroot()
    assert len(root.findall("testsuite")) == 2 and len(root.findall(".//testcase")) == 2 * len(doc["cases"])
    page = (rep / "qualify.html").read_text()
    assert "curated/pshuffle" in page and "http" not in page.split("</style>")[1]
    assert "no regression" in r.stdout or "0 regressions" in r.stdout

    # --rejudge: the same verdicts from the saved observations, no jax run; with no known
    # entries, every known verdict becomes a fail (it really judges again)
    again = tmp_path / "again"
    r2 = sf("qualify", "--rejudge", str(rep), "--report", str(again))
    assert r2.returncode == 0, r2.stdout[-2000:] + r2.stderr[-2000:]
    doc2 = json.loads((again / "qualify.json").read_text())

    def verdicts_of(d: dict) -> dict:
        return {c["case"]: {k: (v["verdict"], v["signatures"], v["known"]) for k, v in c["verdicts"].items()} for c in d["cases"]}

    assert verdicts_of(doc2) == verdicts_of(doc) and doc2["ranges"] == doc["ranges"]
    empty = tmp_path / "none.toml"
    empty.write_text("")
    bare = tmp_path / "bare"
    r3 = sf("qualify", "--rejudge", str(rep), "--report", str(bare), "--suppressions", str(empty))
    doc3 = json.loads((bare / "qualify.json").read_text())
    known_before = sum(v["counts"]["known"] for v in doc["versions"])
    assert sum(v["counts"]["known"] for v in doc3["versions"]) == 0
    assert sum(v["counts"]["fail"] for v in doc3["versions"]) == known_before + sum(v["counts"]["fail"] for v in doc["versions"])
    assert r3.returncode == 0  # the same failures on both versions: nothing regressed


@pytest.mark.parametrize(
    "args, phrase",
    [
        (["--corpus", "/nonexistent-corpus", "--python", sys.executable], "no such directory"),
        (["--corpus", "harness/data/corpus", "--python", "/nonexistent/bin/python"], "/nonexistent/bin/python: no such interpreter"),
        (["--corpus", "harness/data/corpus", "--python", "{nojax}"], "cannot import jax"),
        (["--corpus", "harness/data/corpus"], "--python"),
        (["--rejudge", "{tmp}"], "not a qualify report"),
        (["--corpus", "{tmp}/bad", "--python", sys.executable], "bad.json"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], phrase: str) -> None:
    nojax = tmp_path / "nojax"
    if "{nojax}" in args:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(nojax)], check=True, timeout=120)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "bad.json").write_text("{nope")
    args = [a.replace("{nojax}", str(nojax / "bin" / "python")).replace("{tmp}", str(tmp_path)) for a in args]
    r = sf("qualify", *args, "--report", str(tmp_path / "rep"))
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and "WARNING" not in ln]
    assert len(lines) == 1 and phrase in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_qualify_runs_every_mode(tmp_path: Path) -> None:
    """By default qualification runs every mode a fuzz run has, each where it applies."""
    from harness.run.modes import DEFAULT_MODES

    corpus = tmp_path / "c"
    corpus.mkdir()
    for name in ("psum_one_of_two_axes", "all_gather_tiled", "local_transpose_reduce_sum"):
        shutil.copy(CORPUS / "curated" / f"{name}.json", corpus / f"{name}.json")
    rep = tmp_path / "q"
    r = sf("qualify", "--corpus", str(corpus), "--python", sys.executable, "--report", str(rep), "--workers", "2")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    doc = json.loads((rep / "qualify.json").read_text())
    assert doc["modes"] == list(DEFAULT_MODES)
    for c in doc["cases"]:
        (cell,) = c["verdicts"].values()
        assert set(cell["statuses"]) == set(DEFAULT_MODES) and cell["verdict"] == "pass", c
        assert {m for m, st in cell["statuses"].items() if st == "ok"} >= {"jit", "vmap", "gspmd", "eager"}, c
    ran = {m for c in doc["cases"] for cell in c["verdicts"].values() for m, st in cell["statuses"].items() if st == "ok"}
    assert ran >= {"grad", "grad_remat", "lowering", "smap"}, ran


def test_ranges_say_when_each_bug_came_and_went() -> None:
    from harness.campaign.qualify import ranges

    p = Program(Mesh(("x",), (2,)), (Input((2,), "int32", "iota"),), (Spec((("x",),)),), (Op.make("neg", (0,)),), (1,), (Spec((("x",),)),))
    cases = [Case(n, p, "") for n in ("came_and_went", "regressed", "always", "never")]
    cols = [  # deliberately out of version order: ranges sort by jax version
        _col("jax 0.9.2", {"came_and_went": "pass", "regressed": "pass", "always": "fail", "never": "pass"}),
        _col("jax 0.5.3", {"came_and_went": "pass", "regressed": "pass", "always": "fail", "never": "pass"}),
        _col("jax 0.6.0", {"came_and_went": "fail", "regressed": "unsupported", "always": "fail", "never": "known"}),
        _col("jax 0.10.2", {"came_and_went": "known", "regressed": "fail", "always": "fail", "never": "pass"}),
    ]
    for c, v in zip(cols, ("0.9.2", "0.5.3", "0.6.0", "0.10.2")):
        c.jax_version = v
    by = {r["case"]: r for r in ranges(cases, cols)}
    assert set(by) == {"came_and_went", "regressed", "always", "never"}  # known counts as a bug present
    assert by["came_and_went"]["text"] == ("broken in 0.6.0 (passes on 0.5.3); fixed by 0.9.2 (fails on 0.6.0); "
                                           "broken in 0.10.2 (known) (passes on 0.9.2)")
    assert not by["came_and_went"]["last_fails_after_pass"]  # known on the last: not a failure
    assert by["regressed"]["text"] == "broken in 0.10.2 (passes on 0.9.2)" and by["regressed"]["last_fails_after_pass"]
    assert by["always"]["text"].startswith("fails on every version") and not by["always"]["last_fails_after_pass"]
    assert by["never"]["text"] == "broken in 0.6.0 (known) (passes on 0.5.3); fixed by 0.9.2 (fails on 0.6.0 (known))"


def test_bisect_gaps_narrow_as_columns_are_added() -> None:
    """--bisect works on the gaps `ranges` finds: each pair of neighbouring versions that
    disagree on a case; a column run on a release in between (holding only the cases of
    that gap) splits the gap, and a case it did not run keeps its range."""
    from harness.campaign.qualify import _gaps

    p = Program(Mesh(("x",), (2,)), (Input((2,), "int32", "iota"),), (Spec((("x",),)),), (Op.make("neg", (0,)),), (1,), (Spec((("x",),)),))
    cases = [Case(n, p, "") for n in ("a", "b", "steady")]
    cols = [_col("jax 0.6.0", {"a": "pass", "b": "fail", "steady": "fail"}),
            _col("jax 0.9.2", {"a": "fail", "b": "pass", "steady": "fail"})]
    cols[0].jax_version, cols[1].jax_version = "0.6.0", "0.9.2"
    assert _gaps(cases, cols) == {("0.6.0", "0.9.2"): ["a", "b"]}
    mid = _col("jax 0.8.0", {"a": "fail", "b": "fail"})
    mid.jax_version = "0.8.0"
    assert _gaps(cases, [*cols, mid]) == {("0.6.0", "0.8.0"): ["a"], ("0.8.0", "0.9.2"): ["b"]}
    late = _col("jax 0.7.0", {"a": "pass"})
    late.jax_version = "0.7.0"
    assert _gaps(cases, [*cols, mid, late]) == {("0.7.0", "0.8.0"): ["a"], ("0.8.0", "0.9.2"): ["b"]}


def test_feature_probes_ask_the_installed_jax_for_the_exact_form() -> None:
    """Probes per parameter value, never by version: this jax accepts both all_gather `to=`
    values the strategy draws and a psum inside every wrapper (lax.cond, while_loop, ...)
    under a checked shard_map; an
    op kind whose function this jax lacks is named as unsupported."""
    from dataclasses import replace

    from harness.run import compat

    assert compat._all_gather_accepts("varying") and compat._all_gather_accepts("invarying")
    assert not compat._all_gather_accepts("sideways")
    from programs.ops import WRAPS

    assert all(compat._wrap_under_check(w) for w in WRAPS)
    assert all(compat.has_call(k) for k in ("psum", "axis_size", "pcast"))
    from programs.serialize import from_json

    p = from_json((CORPUS / "curated" / "all_gather_to_invarying.json").read_text())
    assert compat.unsupported_features(p, "jit") == []
    bad = replace(p, body=tuple(op if op.kind != "all_gather" else op.__class__(op.kind, op.operands, tuple(
        (k, "sideways" if k == "to" else v) for k, v in op.params)) for op in p.body))
    assert any("to='sideways'" in f for f in compat.unsupported_features(bad, "jit"))


def test_a_known_bug_never_excuses_the_rest_of_the_program_in_qualify(tmp_path: Path) -> None:
    """qualify judges a case as fuzz does: a wrong value goes on the first op that goes
    wrong (the probe run), and the program without its known bugs (the ppermute entry's
    rewrite, axes in mesh order) is checked whole. A psum after the known ppermute bug is
    known while psum is right, and a fail once a fault breaks psum, though every output's
    wrong value starts at the ppermute."""
    xy = Mesh(("x", "y"), (2, 2))
    p = Program(xy, (Input((2, 2), "int32", "iota"),), (Spec((("x",), ("y",))),),
                (Op.make("ppermute", (0,), axes=("y", "x"), perm=((2, 0),)), Op.make("psum", (1,), axes=("x", "y"))),
                (2,), (Spec((None, None)),))
    corpus = tmp_path / "c"
    corpus.mkdir()
    from programs.serialize import to_json

    (corpus / "ppermute_then_psum.json").write_text(to_json(p))
    verdicts = {}
    for fault in ("", "psum_counts_device0_twice"):
        rep = tmp_path / f"q{fault}"
        r = subprocess.run([sys.executable, "-m", "harness.cli", "qualify", "--corpus", str(corpus), "--python", sys.executable,
                            "--report", str(rep), "--modes", "jit"], capture_output=True, text=True, cwd=ROOT,
                           env={**__import__("os").environ, "SHARDFUZZ_FAULTS": fault}, timeout=600)
        assert r.returncode in (0, 1), r.stderr[-2000:]
        (case,) = json.loads((rep / "qualify.json").read_text())["cases"]
        (cell,) = case["verdicts"].values()
        verdicts[fault] = cell
        rows = [json.loads(ln) for ln in (rep / "observations").glob("*.jsonl").__next__().read_text().splitlines()[1:]]
        # (with the fault, the derived program's own wrong value gets its probe run too)
        assert [(x["stage"], x["depth"]) for x in rows] == [("main", 0), ("probe", 0), ("derived", 1)] + [("probe", 1)] * bool(fault)
    assert verdicts[""]["verdict"] == "known" and verdicts[""]["known"] == ["ppermute-multi-axis-order"], verdicts[""]
    bad = verdicts["psum_counts_device0_twice"]
    assert bad["verdict"] == "fail" and bad["signatures"] == ["value|jit|psum"], bad
    assert "without its known bugs (ppermute-multi-axis-order)" in bad["message"], bad


def test_a_pass_where_the_bugs_mode_could_not_run_is_no_range() -> None:
    """qualify seed 3: jax 0.9.2 passes 179 unreduced programs whose eager mode it cannot
    run, where 0.10.2's known bug (eager-unreduced-intermediate) shows: '(passes on
    0.9.2)' would claim a range nothing measured. Such a transition is 'first seen', is
    not bisected, and a failure in a mode the earlier pass did not run sets no exit code."""
    from harness.campaign.qualify import _gaps, ranges

    p = Program(Mesh(("x",), (2,)), (Input((2,), "int32", "iota"),), (Spec((("x",),)),), (Op.make("neg", (0,)),), (1,), (Spec((("x",),)),))
    cases = [Case("eager_only", p, ""), Case("jit_too", p, "")]
    old, new = _col("jax 0.9.2", {"eager_only": "pass", "jit_too": "pass"}), _col("jax 0.10.2", {"eager_only": "fail", "jit_too": "fail"})
    old.jax_version, new.jax_version = "0.9.2", "0.10.2"
    old.cells["eager_only"].statuses = {"jit": "ok", "eager": "unsupported"}
    old.cells["jit_too"].statuses = {"jit": "ok", "eager": "unsupported"}
    new.cells["eager_only"] = Cell("fail", ["value|eager|neg"], statuses={"jit": "ok", "eager": "ok"})
    new.cells["jit_too"] = Cell("fail", ["value|jit|neg"], statuses={"jit": "ok", "eager": "ok"})
    by = {r["case"]: r for r in ranges(cases, [old, new])}
    assert by["eager_only"]["text"] == "first seen in 0.10.2 (passes on 0.9.2, which could not run eager)"
    assert not by["eager_only"]["last_fails_after_pass"]
    assert by["jit_too"]["text"] == "broken in 0.10.2 (passes on 0.9.2)" and by["jit_too"]["last_fails_after_pass"]
    assert _gaps(cases, [old, new]) == {("0.9.2", "0.10.2"): ["jit_too"]}


def test_an_oracle_crash_is_an_error_cell_and_the_run_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The oracle crashing on one case (a shardfuzz bug) costs that case alone: its cell
    is `error` with the traceback saved, the other case is judged, the JUnit report has
    an <error>, and the exit code is 3 (not 1: nothing says jax is wrong)."""
    import oracles
    from harness.campaign.qualify import qualify

    good = Program(Mesh(("x",), (2,)), (Input((2,), "int32", "iota"),), (Spec((("x",),)),), (Op.make("neg", (0,)),), (1,), (Spec((("x",),)),))
    bad = Program(Mesh(("x",), (2,)), (Input((4,), "int32", "iota"),), (Spec((("x",),)),), (Op.make("neg", (0,)),), (1,), (Spec((("x",),)),))
    real = oracles.predict

    def predict(p: Program, **kw: object) -> object:
        if p == bad:
            raise ZeroDivisionError("the oracle's own bug")
        return real(p, **kw)

    monkeypatch.setattr(oracles, "predict", predict)
    rep = tmp_path / "q"
    doc = qualify([Case("good", good), Case("bad", bad)], [sys.executable], rep, sups=[], modes=("abstract",),
                  progress=open(tmp_path / "progress.txt", "w"))
    cells = {c["case"]: next(iter(c["verdicts"].values())) for c in doc["cases"]}
    assert cells["good"]["verdict"] == "pass", cells
    assert cells["bad"]["verdict"] == "error" and "ZeroDivisionError: the oracle's own bug" in cells["bad"]["message"]
    assert "the oracle's own bug" in Path(cells["bad"]["case_file"]).read_text()
    assert doc["versions"][0]["counts"]["error"] == 1 and doc["exit_code"] == 3 and doc["ranges"] == []
    suite = ET.parse(rep / "qualify.junit.xml").getroot().find("testsuite")
    assert suite.get("errors") == "1" and len(suite.findall(".//error")) == 1


def test_rejudge_leaves_out_a_saved_program_this_checkout_rejects(tmp_path: Path) -> None:
    """A saved derived program that an older shardfuzz built wrongly (it fails validation
    here) is left out with a warning: its case is cut short there, every other case is
    judged, and the rejudge still writes its reports."""
    xy = Mesh(("x", "y"), (2, 2))
    p = Program(xy, (Input((2, 2), "int32", "iota"),), (Spec((("x",), ("y",))),),
                (Op.make("ppermute", (0,), axes=("y", "x"), perm=((2, 0),)), Op.make("psum", (1,), axes=("x", "y"))),
                (2,), (Spec((None, None)),))
    q = Program(Mesh(("x",), (2,)), (Input((2,), "int32", "iota"),), (Spec((("x",),)),), (Op.make("neg", (0,)),), (1,), (Spec((("x",),)),))
    corpus = tmp_path / "c"
    corpus.mkdir()
    from programs.serialize import to_json

    (corpus / "known.json").write_text(to_json(p))
    (corpus / "plain.json").write_text(to_json(q))
    rep = tmp_path / "q"
    r = sf("qualify", "--corpus", str(corpus), "--python", sys.executable, "--report", str(rep), "--modes", "jit")
    assert r.returncode == 0, r.stderr[-2000:]
    (obs,) = (rep / "observations").glob("*.jsonl")
    rows = [json.loads(ln) for ln in obs.read_text().splitlines()]
    for row in rows[1:]:
        if row.get("stage") == "derived":
            row["program"]["outputs"] = [7]  # (no such value: this checkout rejects it)
    obs.write_text("".join(json.dumps(x) + "\n" for x in rows))
    again = tmp_path / "again"
    r2 = sf("qualify", "--rejudge", str(rep), "--report", str(again))
    assert r2.returncode == 0, r2.stderr[-2000:]
    assert "known (derived, depth 1): saved program not valid here, left out" in r2.stderr
    cells = {c["case"]: next(iter(c["verdicts"].values())) for c in json.loads((again / "qualify.json").read_text())["cases"]}
    assert cells["plain"]["verdict"] == "pass"
    assert cells["known"]["verdict"] == "known" and "was not run in the saved report" in cells["known"]["message"]
