"""Asserting reproducers (harness/report/reproducer.py) against real jax.

Every known divergence's case (harness/data/corpus/known) gives a script that exits 1 with
`BUG:` on this jax, in the mode its divergence was found in; a bug this jax no longer has
(its entry's jax_versions leaves this jax out, e.g. the 0.8-only batching bugs) and every
curated case (all pass today) give scripts
that exit 0 with `FIXED:`. Tampering with one embedded expectation turns a passing script
into a failing one (each comparison can fail), and the `--pytest` form fails under pytest
on a bug and passes where jax is right.

The scripts run in subprocesses: known cases' scripts in the modes where jax aborts or
hangs (gspmd, grad) as `python SCRIPT` (the script's own child process turns an abort or
a hang into `BUG:`); the others several to one process through tests/repro_runner.py
(one jax start-up for many).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import with_unrelated_psum
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.campaign.minimize import minimized_reproducer
from harness.judge.known import case_path
from harness.judge.known_load import load
from harness.report.reproducer import case_mode, divergence_mode, pytest_reproducer, reproducer
from programs import from_json
from programs.emit import REPRO_MODES
from programs.errors import NoReproducer
from programs.model import Program
from programs.ops import NO_CPU_LOWERING, NO_CPU_VALUES
from programs.source import from_source
from strategies import programs

ROOT = Path(__file__).resolve().parent.parent
KNOWN = sorted((ROOT / "harness/data/corpus/known").glob("*.json"))
CURATED = sorted((ROOT / "harness/data/corpus/curated").glob("*.json"))
RUNNER = Path(__file__).with_name("repro_runner.py")

def _entries_by_case() -> dict[str, object]:
    return {case_path(e).stem: e for e in load()}


ENTRIES = _entries_by_case()


def _installed_jax() -> str:
    from importlib.metadata import version

    return version("jax")


# known cases whose entry's jax_versions leaves out the installed jax (e.g. the jax 0.8-only
# batching bugs): their bug is not here, so their scripts say FIXED:
# -- unless the same program is also the case of an entry this jax has (an old version's
# symptom of a bug that shows differently here, e.g. all_to_all_untiled_transpose_0_8)


def _case_program_id(name: str) -> str:
    from dataclasses import replace

    from harness.judge.known import case_path
    from programs.serialize import program_id

    # (an entry's case is under harness/data/corpus/known, or regressions/ for an old release's bug)
    return program_id(replace(from_json(case_path(ENTRIES[name]).read_text()), notes=()))  # (its reason aside)


# (the same program in the same mode: the script runs that mode)
_COVERED_PROGRAMS = {(_case_program_id(n), e.mode) for n, e in ENTRIES.items() if e.covers(_installed_jax())}  # type: ignore[attr-defined]
FIXED_HERE = {n for n, e in ENTRIES.items()
              if not e.covers(_installed_jax()) and (_case_program_id(n), e.mode) not in _COVERED_PROGRAMS}  # type: ignore[attr-defined]
# Known cases that are plain programs (no recorded divergence): the first mode in which
# `shardfuzz replay` shows them diverging on jax 0.10.2 (others: jit).
PLAIN_MODES = {
    "a2a_axis_oob": "abstract", "dup_same_entry": "abstract", "eager_nested_invariant": "eager",
    "eager_partial_manual": "eager", "groups_incomplete": "abstract", "groups_incomplete_pmin": "abstract",
    "groups_vma": "jit", "groups_vma_pmin": "jit", "pmax_grad": "grad", "pmin_grad": "grad",
    "ppermute_range": "abstract", "ps_axis_oob": "abstract", "psum_batching_0_8": "vmap", "ragged_vma": "abstract",
    "unbound_assert": "abstract", "vmap_out_rank": "vmap", "vmap_spmd_static_arg": "vmap_spmd",
    "neg_split_eager_invalid": "eager", "neg_split_downstream_swap": "abstract",
    "a2a_untiled_transform": "abstract", "zero_psum_scatter_eager_invalid": "eager",
    "neg_scatter_vmap_fori_invalid": "vmap",
    "vmap_spmd_nested_shard_map_hang": "vmap_spmd",
    "gspmd_zero_size_callback_manual": "gspmd",
    # cases of an entry whose root cause they share (one abort, one entry): the mode they abort in
    "bf16_partial_manual_grad_replicated": "grad", "bf16_partial_manual_vjp": "eager", "bf16_smap_allreduce": "smap",
    "bf16_partial_manual_all_gather_grad": "grad", "gspmd_partial_manual_a2a": "gspmd",
    "gspmd_partial_manual_all_to_all": "gspmd",
}
# those of them that abort the process (the runner must not run them)
ABORTING = {"bf16_partial_manual_grad_replicated", "bf16_partial_manual_vjp", "bf16_smap_allreduce",
            "bf16_partial_manual_all_gather_grad", "gspmd_partial_manual_a2a", "gspmd_partial_manual_all_to_all"}
# those that may hang in their mode (the script's own time limit ends them: run standalone)
HANGING = {"vmap_spmd_nested_shard_map_hang"}
# Known cases whose recorded first divergence jax 0.10.2 no longer shows (reported, not hidden)
STALE: dict[str, str] = {}
# Curated (case, mode) pairs that do not pass today (shardfuzz replay agrees): left out
CURATED_FAILING = {
    ("all_gather_to_reduced", "vmap"): "vmap of a program with reduced values: jax 0.10.2's batching rule raises "
    "NotImplementedError('Please file an issue'); the vmap mode reports such programs unsupported (modes_transformed.py)",
    ("in_spec_none_static", "vmap_spmd"): "vmap with spmd_axis_name raises AssertionError('ManualAxisType(varying="
    "frozenset({'x'}), ...)') for this valid program (known entry vmap-spmd-static-argument)",
    ("closed_over_outer_value", "vmap_spmd"): "vmap with spmd_axis_name of a body closing over a batched value raises "
    "AssertionError('ManualAxisType(varying=...)') (known entry vmap-spmd-outer-closure)",
}
# More (case, mode) pairs whose script must say BUG: the failing side of the modes the
# known cases' own modes leave out (lowering, smap, grad_remat, a value divergence under vmap)
EXTRA_BUGS = [("ragged_vma", "lowering"), ("zero_jit", "smap"), ("all_to_all_untiled_transpose", "grad_remat"),
              ("ppermute_order", "vmap")]
HANG_LIMIT_S = "15"
RISKY = ("gspmd", "grad", "grad_remat")  # modes in which known cases abort or hang: run standalone  # SHARDFUZZ_REPRO_TIMEOUT for the scripts: neg_scatter_scan_grad_hang hangs


def _load(path: Path) -> Program:
    try:
        return from_json(path.read_text())
    except Exception as e:  # noqa: BLE001 - a case another change made invalid: say which
        pytest.fail(f"{path.name}: {e}")


def _mode_of(path: Path) -> str:
    if path.stem in ENTRIES:  # an entry's own case: the mode the entry says its bug shows in
        return str(ENTRIES[path.stem].mode)  # type: ignore[attr-defined]
    doc = json.loads(path.read_text())
    if doc.get("divergences") or doc.get("signature"):
        return case_mode(doc, _load(path))
    return PLAIN_MODES.get(path.stem, "jit")


def _aborts(path: Path) -> bool:
    """An entry whose bug kills the process (a crash signature) in any mode, so its
    script must run on its own (bf16-partial-manual-allreduce-abort: in jit)."""
    e = ENTRIES.get(path.stem)
    return path.stem in ABORTING or (e is not None and any(pat.kind == "crash" for pat in e.patterns))  # type: ignore[attr-defined]


def _ragged(p: Program) -> bool:
    """An op XLA:CPU cannot run (ragged_all_to_all, pbroadcast: programs/ops.py)."""
    return any(op.kind in NO_CPU_VALUES for op in p.body)


def _cpu_modes(p: Program) -> tuple[str, ...]:
    """The modes that can run a `_ragged` program on CPU: those that do not compile it."""
    return ("abstract",) if any(op.kind in NO_CPU_LOWERING for op in p.body) else ("abstract", "lowering")


def _env(limit: str = HANG_LIMIT_S) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SHARDFUZZ_REPRO_CHILD"}
    env["SHARDFUZZ_REPRO_TIMEOUT"] = limit
    env["PYTHONPATH"] = ""  # the scripts need jax and numpy only
    return env


def _standalone(script: Path, limit: str = HANG_LIMIT_S) -> tuple[int, str]:
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300 + float(limit), env=_env(limit))
    return r.returncode, r.stdout


def _batch(scripts: list[Path]) -> dict[Path, tuple[int, str]]:
    r = subprocess.run([sys.executable, str(RUNNER), *map(str, scripts)], capture_output=True, text=True,
                       timeout=300, env=_env())
    assert r.returncode == 0, f"the runner failed on {[s.name for s in scripts]}: {r.stderr[-2000:]}"
    got = json.loads(r.stdout.strip().splitlines()[-1])
    return {Path(k): (int(c), out) for k, (c, out) in got.items()}


def run_scripts(jobs: Iterable[tuple[Path, bool]], limit: str = HANG_LIMIT_S) -> dict[Path, tuple[int, str]]:
    """Every script's exit code and output, for (path, standalone) pairs: standalone ones
    as `python SCRIPT` (those that may crash or hang), the rest in two batches."""
    jobs = list(jobs)
    alone = [s for s, a in jobs if a]
    rest = [s for s, a in jobs if not a]
    halves = [rest[0::2], rest[1::2]]
    out: dict[Path, tuple[int, str]] = {}
    with ThreadPoolExecutor(3) as pool:  # (a hanging script waits without using a core)
        singles = {s: pool.submit(_standalone, s, limit) for s in alone}
        batches = [pool.submit(_batch, h) for h in halves if h]
        for b in batches:
            out.update(b.result())
        for s, f in singles.items():
            out[s] = f.result()
    return out


def _write(tmp: Path, name: str, p: Program, mode: str) -> Path:
    path = tmp / f"{name}__{mode}.py"
    path.write_text(reproducer(p, mode=mode, title=f"{name} ({mode})"))
    return path


def _curated_pairs() -> list[tuple[str, Program, str]]:
    """Every curated case in jit (abstract for ragged_all_to_all, which XLA:CPU cannot run),
    and, so that every mode's passing side is exercised, each other mode on the first
    three curated cases it applies to."""
    pairs = []
    per_mode: dict[str, int] = {}
    for path in CURATED:
        p = _load(path)
        pairs.append((path.stem, p, "abstract" if _ragged(p) else "jit"))
        for mode in REPRO_MODES:
            # (multiprocess: its scripts start two jax processes each, so the shared runner
            # cannot run them; tests/test_multiprocess.py runs one passing and one failing)
            if mode in ("jit", "multiprocess") or per_mode.get(mode, 0) >= 3 or (_ragged(p) and mode not in _cpu_modes(p)):
                continue
            if (path.stem, mode) in CURATED_FAILING:
                continue
            try:
                reproducer(p, mode=mode)
            except NoReproducer:
                continue
            per_mode[mode] = per_mode.get(mode, 0) + 1
            pairs.append((path.stem, p, mode))
    assert set(per_mode) == set(REPRO_MODES) - {"jit", "multiprocess"}, f"modes no curated case exercises: {set(REPRO_MODES) - set(per_mode)}"
    return pairs


# (script name, the literal to replace, its replacement): each breaks one comparison
TAMPER = [
    ("psum_scatter_tiled", "jit", "blocks=np.array([", "blocks=1 + np.array(["),  # per-device values
    ("psum_one_of_two_axes", "vmap", "value=np.array([", "value=1 + np.array(["),  # the batch
    # an output with an element of no predicted value (a cast past uint8's range): the others still compared
    ("cast_partly_past_range_ppermute", "jit", "blocks=np.array([", "blocks=1 + np.array(["),
    ("all_gather_tiled", "lowering", "regions=1,", "regions=0,"),  # the manual region
    ("pmean_two_axes_int", "abstract", "'int32', ['x', 'y']),", "'int32', ['x']),"),  # a body value's vma
    ("err_collective_vma", "jit", "types=('ValueError',)", "types=('TypeError',)"),  # the error type
    ("err_in_spec_rank", "jit", "facts=(", "facts=('no such fact',"),  # the facts it names
    ("effect_callback_per_device", "jit", "calls=[([0], np.array([", "calls=[([0], 1 + np.array(["),  # an effect's calls
    ("effect_print_of_an_argument", "jit", "calls=[([0], np.array([", "calls=[([0], 1 + np.array(["),  # a printed call
]


def test_known_cases_fail_and_curated_pass(tmp_path: Path) -> None:
    """One pool for all scripts (a few seconds of jax start-up each, two cores)."""
    known: dict[Path, str] = {}
    expect_xfail: dict[Path, str] = {}
    jobs: list[tuple[Path, str]] = []
    for path in KNOWN:
        mode = _mode_of(path)
        s = _write(tmp_path, path.stem, _load(path), mode)
        known[s] = path.stem
        if path.stem in STALE:
            expect_xfail[s] = STALE[path.stem]
        jobs.append((s, mode in RISKY or _aborts(path) or path.stem in HANGING))
    for name, mode in EXTRA_BUGS:
        s = _write(tmp_path, name, _load(ROOT / "harness/data/corpus/known" / f"{name}.json"), mode)
        known[s] = name
        jobs.append((s, mode in RISKY))
    curated = {}
    for name, p, mode in _curated_pairs():
        s = _write(tmp_path, name, p, mode)
        curated[s] = name
        jobs.append((s, False))
    tampered = {}
    for name, mode, old, new in TAMPER:
        s = tmp_path / f"{name}__{mode}.py"
        if not s.exists():
            s = _write(tmp_path, name, _load(ROOT / "harness/data/corpus/curated" / f"{name}.json"), mode)
        text = s.read_text()
        assert old in text, f"{name} ({mode}): the literal {old!r} to tamper with is not in the script"
        t = tmp_path / f"tampered_{name}__{mode}.py"
        t.write_text(text.replace(old, new, 1))
        tampered[t] = f"{name} ({mode})"
        jobs.append((t, False))
    results = run_scripts(jobs)

    wrong = []
    for s, name in known.items():
        code, out = results[s]
        want = (0, "FIXED:") if name in FIXED_HERE else (1, "BUG:")
        ok = code == want[0] and out.startswith(want[1])
        if s in expect_xfail:
            if ok:
                wrong.append(f"{s.name}: listed as stale ({expect_xfail[s]}) but now says BUG: drop it from STALE")
            continue
        if not ok:
            wrong.append(f"{s.name}: exit {code}, want {want[0]} and {want[1]!r}: {out[-600:]!r}")
        elif want[1] == "BUG:":
            assert "\n" not in out.strip(), f"{s.name}: the BUG message must be one paragraph: {out!r}"
    for s in curated:
        code, out = results[s]
        if code != 0 or not out.startswith("FIXED:"):
            wrong.append(f"curated {s.name}: exit {code}, want 0 and 'FIXED:': {out[-600:]!r}")
    for s, what in tampered.items():
        code, out = results[s]
        if code != 1 or not out.startswith("BUG:"):
            wrong.append(f"tampered {what}: exit {code}, want 1 and 'BUG:' (the check cannot fail?): {out[-600:]!r}")
    assert not wrong, "\n".join(wrong)


def test_stale_cases_still_exist() -> None:
    from harness.judge.known import case_path

    for name in set(STALE) | FIXED_HERE | HANGING | {n for n, _ in EXTRA_BUGS}:
        where = case_path(ENTRIES[name]) if name in ENTRIES else ROOT / "harness/data/corpus/known" / f"{name}.json"
        assert where.exists(), name


def test_pytest_form_fails_on_a_bug_and_passes_where_jax_is_right(tmp_path: Path) -> None:
    cases = {  # file stem: (case, mode, whether the test must pass)
        "test_bug_values": ("known/ppermute_order", "jit", False),
        "test_bug_missing_error": ("known/groups_vma", "jit", False),
        "test_bug_grad": ("known/pmax_grad", "grad", False),
        "test_bug_vma": ("known/ragged_vma", "abstract", False),  # jax.typeof(v5).vma misses 'x'
        "test_bug_batch": ("known/ppermute_order", "vmap", False),
        "test_ok_values": ("curated/psum_scatter_tiled", "jit", True),
        "test_ok_error": ("curated/err_collective_vma", "jit", True),
        "test_ok_lowering": ("curated/all_gather_tiled", "lowering", True),
        "test_ok_batch": ("curated/psum_one_of_two_axes", "vmap", True),
        "test_ok_grad": ("curated/ppermute_partial_zeros", "grad_remat", True),
    }
    for stem, (case, mode, _) in cases.items():
        p = _load(ROOT / "harness/data/corpus" / f"{case}.json")
        text = pytest_reproducer(p, mode=mode, name=stem)
        ast.parse(text)
        assert f"def {stem}():" in text and ("pytest.raises(" in text or "np.testing.assert_" in text or mode in ("lowering", "abstract"))
        (tmp_path / f"{stem}.py").write_text(text)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "-p", "no:xdist",
                        *[f"{s}.py" for s in cases]], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=_env())
    for stem, (case, _, passes) in cases.items():
        verdict = f"{'PASSED' if passes else 'FAILED'} {stem}.py::{stem}"
        assert verdict in r.stdout, f"{case}: want {verdict}\n{r.stdout[-3000:]}"


def test_modes_that_do_not_apply_are_refused() -> None:
    p = _load(ROOT / "harness/data/corpus/known/ppermute_order.json")  # int32 only, names both axes
    for mode in ("grad", "vmap_spmd", "nope"):
        with pytest.raises(NoReproducer):
            reproducer(p, mode=mode)


def test_case_mode() -> None:
    assert case_mode({"divergences": [{"mode": "eager,grad"}]}) == "eager"
    assert case_mode({"divergences": [], "signature": "timeout|grad|timeout"}) == "grad"
    assert case_mode({"divergences": [{"mode": "probe"}]}) == "jit"
    assert case_mode({"schema": 1}) == "jit"
    disagree = {"kind": "mode_disagreement", "mode": "eager,jit"}
    assert case_mode({"divergences": [disagree, {"kind": "value", "mode": "vmap"}]}) == "vmap"
    # modes that raise where jax must raise are right: the reproducer runs a quiet mode
    dup = _load(ROOT / "harness/data/corpus/known/dup_same_entry.json")  # jax must raise; eval_shape does not
    assert divergence_mode(dup, "mode_disagreement", "eager,gspmd,jit,lowering,vmap") == "abstract"
    assert minimized_reproducer(dup, "mode_disagreement|eager,gspmd,jit,lowering,vmap|raise:eager", "t").count("(mode: abstract)") == 1
    # modes that raise where jax must run are wrong: the reproducer runs one of them
    grad = _load(ROOT / "harness/data/corpus/known/all_to_all_untiled_transpose.json")
    assert divergence_mode(grad, "mode_disagreement", "grad,grad_remat") == "grad"


@settings(max_examples=20, deadline=None)
@given(programs(max_ops=4), st.sampled_from(REPRO_MODES))
def test_reproducer_is_python(p: Program, mode: str) -> None:
    for make in (reproducer, pytest_reproducer):
        try:
            text = make(p, mode=mode, title='a "title" with {braces}')
        except NoReproducer:
            return
        ast.parse(text)
        assert ("EXPECTED_ERROR = " in text) if make is reproducer else ("pytest.raises(" in text or "\n  assert " in text)


def _old_jax_python() -> tuple[str, str] | None:
    """An interpreter with a jax that has no jax.shard_map (0.6.0 or older), from
    $SHARDFUZZ_OLD_JAX_PYTHON or envs/jax-*/bin/python (scripts/envs.py builds them)."""
    root = Path(__file__).resolve().parent.parent
    cands = [os.environ["SHARDFUZZ_OLD_JAX_PYTHON"]] if os.environ.get("SHARDFUZZ_OLD_JAX_PYTHON") else []
    cands += sorted(str(p) for p in root.glob("envs/jax-*/bin/python"))
    for py in cands:
        r = subprocess.run([py, "-c", "import jax; print(jax.__version__, hasattr(jax, 'shard_map'))"],
                           capture_output=True, text=True, timeout=120)
        if r.returncode == 0 and r.stdout.split()[1] == "False":
            return py, r.stdout.split()[0]
    return None


def test_reproducer_runs_on_jax_without_jax_shard_map(tmp_path: Path) -> None:
    """A reproducer emitted here runs on the old jax a regression was found on (through
    jax.experimental.shard_map, check_rep=, auto=): it exits 1 with BUG: there and 0 with
    FIXED: on this jax."""
    old = _old_jax_python()
    if old is None:
        pytest.skip("no jax without jax.shard_map here: build one with `python scripts/envs.py 0.6.0 --dir envs/` "
                    "or set SHARDFUZZ_OLD_JAX_PYTHON")
    py, v = old
    case = Path(__file__).resolve().parent.parent / "harness/data/corpus/regressions/in_spec_unknown_axis_keyerror.json"
    script = tmp_path / "repro.py"
    script.write_text(reproducer(from_json(case.read_text()), mode="jit", title=case.name))
    bad = subprocess.run([py, str(script)], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and "BUG:" in bad.stdout and "KeyError" in bad.stdout, (v, bad.stdout, bad.stderr[-2000:])
    good = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert good.returncode == 0 and "FIXED:" in good.stdout, good.stdout + good.stderr[-2000:]


def _new_jax_python() -> tuple[str, str] | None:
    """An interpreter with jax >= 0.11 (which needs Python >= 3.12), from
    $SHARDFUZZ_NEW_JAX_PYTHON or envs/jax-*/bin/python (scripts/envs.py builds them)."""
    root = Path(__file__).resolve().parent.parent
    cands = [os.environ["SHARDFUZZ_NEW_JAX_PYTHON"]] if os.environ.get("SHARDFUZZ_NEW_JAX_PYTHON") else []
    cands += sorted((str(p) for p in root.glob("envs/jax-*/bin/python")), reverse=True)
    for py in cands:
        r = subprocess.run([py, "-c", "import jax; print(jax.__version__)"], capture_output=True, text=True, timeout=120)
        if r.returncode == 0 and tuple(int(x) for x in r.stdout.strip().split(".")[:2]) >= (0, 11):
            return py, r.stdout.strip()
    return None


def test_permute_order_runs_on_jax_0_11_with_its_flag_off(tmp_path: Path) -> None:
    """jax 0.11+ refuses a ppermute over axes out of mesh order unless
    jax_raise_on_ppermute_sort_diff is off, and then gives the documented values: the
    known entry's reproducer turns the flag off, so it exits 1 (BUG) on this jax and
    0 (FIXED) there; without that line jax 0.11+ raises instead."""
    new = _new_jax_python()
    case = Path(__file__).resolve().parent.parent / "harness/data/corpus/known/ppermute_order.json"
    p = from_json(case.read_text())
    text = reproducer(p, mode="jit", title="ppermute order")
    assert 'jax.config.update("jax_raise_on_ppermute_sort_diff", False)' in text
    from programs.emit import to_python

    plain = to_python(p)
    assert "jax_raise_on_ppermute_sort_diff" in plain and from_source(plain) == p  # (the reader skips the flag)
    if new is None:
        pytest.skip("no jax >= 0.11 here (it needs Python >= 3.12): build one with `python scripts/envs.py 0.12.0 "
                    "--dir envs/` where python3.12+ exists, or set SHARDFUZZ_NEW_JAX_PYTHON")
    py, v = new
    # (jaxlib >= 0.11 aborts on --xla_cpu_use_fusion_emitters, which the test session may set)
    env = {**os.environ, "XLA_FLAGS": " ".join(f for f in os.environ.get("XLA_FLAGS", "").split() if "fusion_emitters" not in f)}
    script = tmp_path / "repro.py"
    script.write_text(text)
    here = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert here.returncode == 1 and "BUG:" in here.stdout, here.stdout + here.stderr[-2000:]
    there = subprocess.run([py, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert there.returncode == 0 and "FIXED:" in there.stdout, (v, there.stdout, there.stderr[-2000:])
    script.write_text(text.replace('jax.config.update("jax_raise_on_ppermute_sort_diff", False)', "pass"))
    refused = subprocess.run([py, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert refused.returncode == 1 and "RuntimeError" in refused.stdout, (v, refused.stdout, refused.stderr[-2000:])


# ------------------------------------------------------------ each entry's own reproducer

def _entry_list() -> list[object]:
    return [e for e in load() if e.covers(_installed_jax())]  # type: ignore[attr-defined]


# one entry of each repair and class (every one with SHARDFUZZ_ALL_ENTRY_REPRODUCERS=1:
# about two scripts an entry, a few minutes on two cores)
ENTRY_SAMPLE = ("ppermute-multi-axis-order", "negative-scatter-dimension", "grouped-pmax-claims-invariance",
                "pmax-no-differentiation-rule", "eager-partial-manual-check-vma-false",
                "gspmd-partial-manual-manual-subgroup-abort", "zero-size-output-blocks", "ppermute-perm-out-of-range-indexerror")


def repaired_case(e: object, p: Program) -> tuple[Program, str]:
    """The entry's case without its bug, and the mode to run it in: its repair (a rewrite,
    or the program without its ops) in the entry's mode (where every output of the case
    holds the bug, or what is left cannot run in that mode: of the case with an unrelated
    output more), or where the repair is the mode left out, the same program in a mode
    the entry's signatures do not name."""
    from harness.judge.repair import repair
    from oracles import predict

    def runs(q: Program, mode: str) -> bool:
        try:
            reproducer(q, mode=mode)
        except NoReproducer:
            return False
        return True

    for base in (p, with_unrelated_psum(p)):
        q = repair(e, base, predict(base))  # type: ignore[arg-type]
        if q is not None and runs(q, str(e.mode)):  # type: ignore[attr-defined]
            return q, str(e.mode)  # type: ignore[attr-defined]
    named = {m for pat in e.patterns for m in (pat.modes or REPRO_MODES)}  # type: ignore[attr-defined]
    for mode in ("jit", "abstract", "eager", "vmap", "lowering", "gspmd"):
        if mode not in named and runs(p, mode):
            return p, mode
    raise AssertionError(f"{e.id}: no repaired program and no mode its signatures leave out")  # type: ignore[attr-defined]


def test_every_entrys_reproducer_exits_1_on_its_own_bug_and_0_when_repaired(tmp_path: Path) -> None:
    """An entry's reproducer counts only its own signature (kind, op, exception type, in
    its mode; a crash by the check it aborts at): it says BUG: (exit 1) on the entry's own
    case, and FIXED: (exit 0) on the case with the bug repaired, even where jax diverges
    otherwise there."""
    from harness.report.reproducer import Own

    entries = _entry_list()
    if os.environ.get("SHARDFUZZ_ALL_ENTRY_REPRODUCERS") != "1":
        entries = [e for e in entries if e.id in ENTRY_SAMPLE]  # type: ignore[attr-defined]
        assert len(entries) == len(ENTRY_SAMPLE), "an entry of the sample is gone: pick another of its repair"
    from harness.judge.known import case_path

    jobs, want = [], {}
    for e in entries:
        p = from_json(case_path(e).read_text())  # type: ignore[arg-type]
        own = Own.of(e.patterns, e.abort, e.mode)  # type: ignore[attr-defined]
        q, qmode = repaired_case(e, p)
        for tag, prog, mode, code in (("bug", p, e.mode, 1), ("repaired", q, qmode, 0)):  # type: ignore[attr-defined]
            s = tmp_path / f"{e.id}__{tag}.py"  # type: ignore[attr-defined]
            s.write_text(reproducer(prog, mode=mode, title=f"{e.id} ({tag})", own=own))  # type: ignore[attr-defined]
            risky = mode in RISKY or any(pat.kind in ("crash", "timeout") for pat in e.patterns)  # type: ignore[attr-defined]
            jobs.append((s, risky))
            want[s] = (code, "BUG:" if code else "FIXED:")
    # (no entry's own case hangs: a long limit, so that a loaded machine's slow start is no hang)
    results = run_scripts(jobs, limit="240")
    wrong = [f"{s.name}: exit {results[s][0]}, want {w[0]} and {w[1]!r}: {results[s][1][-500:]!r}"
             for s, w in want.items() if results[s][0] != w[0] or not results[s][1].startswith(w[1])]
    assert not wrong, "\n".join(wrong)
