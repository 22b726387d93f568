"""The commands on one case: replay (judged by cause, with the program without the known
bug checked too, ending in one verdict line), minimize, emit (an asserting reproducer, or
a pytest test) and explain (the spec checker, jax's types beside the oracle's)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from harness.campaign.fuzz import atomic_write, case_document
from harness.campaign.minimize import minimize_case, minimized_reproducer, size
from harness.cli_input import load_case, load_known, parse_modes, python_option
from harness.judge.check import check_in_pool
from harness.judge.known import case_path
from harness.judge.known_load import load
from harness.judge.repair import judge
from harness.report.console import divergence_lines
from harness.report.explain import explain_lines
from harness.report.fixes import find_fixes
from harness.report.reproducer import case_mode, pytest_reproducer, reproducer
from harness.run.compat import jax_version
from harness.run.modes import DEFAULT_MODES
from harness.run.pool import Pool
from programs.emit import REPRO_MODES
from programs.errors import KnownDivergencesError, NoReproducer, UsageError


def _print_verdict(v, entries, indent: str = "", verbosity: int = 0) -> list[str]:  # type: ignore[no-untyped-def]
    """Print each mode, divergence and repaired program of a verdict (harness/judge/repair.py):
    each divergence no entry's repair removes with its message, the known ones one line per
    entry, or (-v) each with its message; returns the unsupported modes."""
    res = v.result
    unsupported = []
    for o in res.observations:
        if o.status == "unsupported":
            unsupported.append(o.mode)
        if o.status in ("crash", "timeout", "unsupported"):
            print(f"{indent}  {o.mode:>8}: {o.status}: {o.error_message[:200]}")
            continue
        what = f"raised {o.error_type}" if o.raised else f"ran, {len(o.outputs)} outputs"
        print(f"{indent}  {o.mode:>8}: {what} ({o.elapsed_s * 1000:.0f} ms)")
    pred = res.prediction
    print(f"{indent}  oracle  : {'predicts ' + str(pred.error) if pred.error else f'predicts {len(pred.outputs)} outputs'}")
    for line in divergence_lines(v.judged, verbosity):
        print(f"{indent}{line}")
    for job, sub in v.repaired:
        how = "its rewrite" if job.whole else f"its outputs {list(range(len(job.program.outputs)))} no known bug reaches"
        print(f"{indent}  repaired without {', '.join(job.entries)} ({how}), in {','.join(job.modes)}:")
        _print_verdict(sub, entries, indent + "    ", verbosity)
    return unsupported


def cmd_replay(a: argparse.Namespace) -> int:
    p = load_case(a.case)
    entries = load_known(a.suppressions)
    modes = parse_modes(a.modes)
    pool = Pool(1, python=python_option(a), timeout_s=a.timeout)  # a case may crash jax: never in this process
    jv = str(pool.info.get("jax_version") or jax_version())
    try:
        # a known bug explains what its repair removes: each explaining entry's repaired
        # program is checked too, and whatever it still shows is new
        v = judge(entries, check_in_pool(pool, p, modes), lambda q, ms: check_in_pool(pool, q, ms), jv)
        unsupported = _print_verdict(v, entries, verbosity=a.verbose)
    finally:
        pool.close()
    new, known = v.new(), v.known()
    by_id = {e.id: e for e in entries}
    bugs = [k for k in known if not by_id[k].policy]
    policy = [k for k in known if by_id[k].policy]
    ran = len(v.result.observations) - len(unsupported)
    extra = f", {len(unsupported)} unsupported: {','.join(unsupported)}" if unsupported else ""
    if new:
        print(f"{a.case}: DIVERGES ({len(new)} divergences no known entry's repair removes; jax {jv}, {ran} modes run{extra})")
    elif known:
        said = "; ".join(x for x in (f"{', '.join(bugs)}" if bugs else "", f"policy: {', '.join(policy)}" if policy else "") if x)
        print(f"{a.case}: KNOWN ({said}; jax {jv}, {ran} modes run{extra})")
    else:
        print(f"{a.case}: PASS (oracle and jax {jv} agree in {ran} modes{extra})")
    return 1 if new else 0


def cmd_minimize(a: argparse.Namespace) -> int:
    p = load_case(a.case)
    sig = a.signature
    if sig is None:
        doc = json.loads(Path(a.case).read_text())
        sigs = [d["signature"] for d in doc.get("divergences", [])]
        if not sigs:
            raise UsageError(f"{a.case}: the case records no divergence; pass --signature KIND|MODE|WHERE")
        sig = sigs[0]
    if sig.count("|") != 2:
        raise UsageError(f"--signature {sig!r}: expected KIND|MODE|WHERE, e.g. value|jit|psum")
    pool = Pool(1, python=python_option(a), timeout_s=a.timeout)
    try:
        check_modes = DEFAULT_MODES
        print(f"minimizing {a.case} for {sig}: start {size(p)} (ops, args+outputs, mesh, elements, spec axes)")
        best, n = minimize_case(pool, p, sig, check_modes, a.budget, log=print)
        jv = str(pool.info.get("jax_version") or "?")  # (the jax it was minimized on: --python's)
    finally:
        pool.close()
    base = Path(a.case).with_suffix("")
    out_json, out_py = Path(f"{base}.min.json"), Path(f"{base}.min.py")
    atomic_write(out_json, case_document(best, (), jv, {"minimized_from": a.case, "signature": sig}))
    atomic_write(out_py, minimized_reproducer(best, sig, title=f"shardfuzz reproducer for {sig} (minimized from {a.case})"))
    print(f"done after {n} checks: {size(p)} -> {size(best)}\n  {out_json}\n  {out_py}\n\n{best!r}")
    return 0


def _entry_mode(case: Path) -> str | None:
    """The reproducer mode of the known entry whose own case `case` is, if any."""
    try:
        entries = load()
    except KnownDivergencesError:
        return None
    return next((e.mode for e in entries if case_path(e).resolve() == case.resolve()), None)


def cmd_emit(a: argparse.Namespace) -> int:
    p = load_case(a.case, emit=True)
    mode = a.mode
    if mode is None:  # a known entry's own case: the mode its bug shows in
        mode = _entry_mode(Path(a.case))
    if mode is None:  # the mode of the case's first divergence (or its signature), else jit
        try:
            mode = case_mode(json.loads(Path(a.case).read_text()), p)
        except ValueError:
            mode = "jit"
    if mode not in REPRO_MODES:
        raise UsageError(f"--mode {mode!r}: choose from {', '.join(REPRO_MODES)}")
    make = pytest_reproducer if a.pytest else reproducer
    try:
        text = make(p, mode=mode, title=f"shardfuzz reproducer for {a.case}")
    except NoReproducer as e:
        raise UsageError(f"{a.case}: {e}; pass another --mode") from None
    print(text)
    python = python_option(a)
    if python is not None and not a.pytest:  # the same script, on that jax: say what it shows there
        r = subprocess.run([python, "-c", text], capture_output=True, text=True, timeout=600)
        verdict = next((ln for ln in (r.stdout + r.stderr).splitlines() if ln.startswith(("BUG:", "FIXED:"))), "")
        print(f"# on {a.python} it exits {r.returncode}: {verdict[:300] or (r.stderr.strip().splitlines() or ['?'])[-1]}",
              file=sys.stderr)
    return 0


def cmd_explain(a: argparse.Namespace) -> int:
    p = load_case(a.case)
    if a.fix and a.no_jax:
        raise UsageError("explain --fix checks every fix with jax; drop --no-jax")
    if a.no_jax:
        print("\n".join(explain_lines(p)))
    else:
        pool = Pool(1, python=python_option(a))  # (crash-safe, and on the --python jax when given)
        try:
            pool.submit(p, ("abstract",))
            (c,) = pool.drain()
            jv = pool.info.get("jax_version", "?")
            fixes = None
            if a.fix:
                fixes = find_fixes(pool, p, jax_version=str(jv))
        finally:
            pool.close()
        o = c.observations[0]  # each value's type as jax.typeof saw it while tracing
        print("\n".join(explain_lines(p, o.value_types)))
        said = f"{o.error_type}: {o.error_message}" if o.raised else "no error (jax.eval_shape ran)"
        if o.status in ("crash", "timeout", "unsupported"):
            said = f"{o.status}: {o.error_message}"
        print(f"jax {jv} said (abstract mode): {said}")
        if fixes is not None:
            print("\n".join(fixes.lines()))
    print("\n" + repr(p))
    return 0
