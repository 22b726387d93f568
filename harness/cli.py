"""The `shardfuzz` command.

    shardfuzz fuzz --seed S --max-examples N [--budget SECONDS] --report DIR
    shardfuzz replay CASE.json      re-run one case, print the verdict
    shardfuzz emit CASE.json        print a standalone reproducer
    shardfuzz explain CASE.json     the spec checker: shapes and varying axes op by op

Exit codes: 0 nothing diverged, 1 something did, 2 bad input (one line on stderr), 3 a
shardfuzz bug (one line on stderr; the traceback in the report directory, or in a fresh
temporary file for replay, explain, emit and minimize).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import NoReturn

from harness.run.worker import host_device_count
from harness.usage import UsageError, at_least, fraction, positive
from programs.model import Program
from programs.serialize import ProgramFormatError, from_json
from programs.validate import check_fits

# Modes the harness runs for itself (harness/judge/check.py localises value divergences
# with "probe"); never offered by --modes.
INTERNAL_MODES = ("probe",)
# The emitted reproducers force this many CPU devices (programs/emit.py).
EMIT_DEVICES = 8


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends with its default, unless the text already says it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text or action.default is argparse.SUPPRESS or not action.option_strings or action.required:
            return text
        return super()._get_help_string(action) or text


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see --help)")


def versions() -> str:
    """shardfuzz's version and jax's, from the installed distributions (jax not imported)."""
    from importlib.metadata import PackageNotFoundError, version

    def v(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    return f"shardfuzz {v('shardfuzz')} (jax {v('jax')}, jaxlib {v('jaxlib')}, python {sys.version.split()[0]})"


class _Version(argparse.Action):
    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the shardfuzz and jax versions and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:  # type: ignore[no-untyped-def, override]
        print(versions())
        parser.exit()


def _fits(p: Program, where: str, emit: bool = False) -> None:
    """The program's mesh fits on the devices jax has here (or, for `emit`, on the 8 CPU
    devices the reproducer forces); a UsageError naming `where` otherwise."""
    try:
        check_fits(p, EMIT_DEVICES if emit else host_device_count(), reproducer=emit)
    except ProgramFormatError as e:
        raise UsageError(f"{where}: {e}") from None


def _load_case(path: str, emit: bool = False) -> Program:
    f = Path(path)
    if not f.exists():
        raise UsageError(f"{path}: no such file; pass a case file written by 'shardfuzz fuzz' (reports/.../cases/*.json)")
    if f.is_dir():
        raise UsageError(f"{path}: is a directory; pass one case file")
    try:
        p = from_json(f.read_text())
    except ProgramFormatError as e:
        raise UsageError(f"{path}: {e}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a text file; pass a JSON case file") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read it ({e.strerror})") from None
    _fits(p, path, emit)
    return p


def _defects(text: str | None) -> tuple[str, ...]:
    from strategies.invalid import DEFECTS

    if not text:
        return ()
    names = tuple(d.strip() for d in text.split(",") if d.strip())
    bad = [d for d in names if d not in DEFECTS]
    if bad or not names:
        raise UsageError(f"--defects: unknown defect(s) {bad or text!r}; choose from {','.join(sorted(DEFECTS))}")
    return names


def _modes(text: str) -> tuple[str, ...]:
    from harness.run.modes import MODES

    public = [m for m in MODES if m not in INTERNAL_MODES]
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    bad = [m for m in modes if m not in public]
    if bad or not modes:
        raise UsageError(f"--modes: unknown mode(s) {bad or text!r}; choose from {','.join(public)}")
    return modes


def _suppressions(path: str | None):  # type: ignore[no-untyped-def]
    from harness.judge.known import KnownDivergencesError, load

    try:
        return load(Path(path) if path else None)
    except KnownDivergencesError as e:
        raise UsageError(str(e)) from None


def _run_defaults() -> dict[str, object]:
    """`shardfuzz fuzz`'s defaults are RunConfig's (one source: the CLI, the benchmarks and
    library callers get the same run)."""
    from harness.campaign.config import RunConfig

    d = RunConfig()
    return {"max_examples": d.max_examples, "budget": d.budget_s, "minimize_budget": d.minimize_budget_s,
            "minimize_total": d.minimize_total_s, "value_share": d.value_share, "batch": d.batch,
            "invalid": d.invalid, "workers": d.workers, "timeout": d.timeout_s, "seed": d.seed}


FUZZ_DEFAULTS: dict[str, object] = _run_defaults()

def _writable_dir(path: str, option: str) -> Path:
    """The directory (created if needed), or a UsageError naming the option."""
    d = Path(path)
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = d / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write there ({e.strerror}); pass a writable directory") from None
    return d


# Presets for `fuzz --profile` (the same names as the pytest Hypothesis profiles).
PROFILES: dict[str, dict[str, object]] = {
    "dev": {"max_examples": 200},
    "ci": {"max_examples": 100, "minimize_budget": 0.0},
    "nightly": {"max_examples": 10**9, "budget": 8 * 3600.0, "minimize_total": 3600.0},
}


def cmd_fuzz(a: argparse.Namespace) -> int:
    from harness.campaign.fuzz import RunConfig, fuzz

    if a.profile is not None:
        if a.profile not in PROFILES:
            raise UsageError(f"--profile {a.profile!r}: unknown profile; choose from {', '.join(PROFILES)}")
        for k, v in PROFILES[a.profile].items():
            if getattr(a, k) == FUZZ_DEFAULTS[k]:
                setattr(a, k, v)

    # (every number was range-checked by its argparse type; RunConfig checks them again)
    report = _writable_dir(a.report, "--report")
    corpus = None
    if a.corpus:
        corpus = _writable_dir(a.corpus, "--corpus")
        from harness.campaign.fuzz import load_corpus

        try:
            cases = load_corpus(corpus)
        except ProgramFormatError as e:
            raise UsageError(f"--corpus: {e}; fix or remove that file") from None
        except (UnicodeDecodeError, OSError) as e:
            raise UsageError(f"--corpus {corpus}: a file there cannot be read as a JSON case ({e}); fix or remove it") from None
        for f, p, _ in cases:
            _fits(p, f"--corpus: {f}")
    cfg = RunConfig(
        seed=a.seed,
        max_examples=a.max_examples,
        budget_s=a.budget,
        report_dir=report,
        modes=_modes(a.modes),
        suppressions=_suppressions(a.suppressions),
        workers=a.workers,
        timeout_s=a.timeout,
        invalid=a.invalid,
        defects=_defects(a.defects),
        corpus=corpus,
        minimize_budget_s=a.minimize_budget,
        minimize_total_s=a.minimize_total,
        value_share=a.value_share,
        batch=a.batch,
        worker_env={"SHARDFUZZ_CODEGEN": a.codegen},
    )
    s = fuzz(cfg)
    print_summary(s, report)
    return 1 if s.failing else 0


def print_summary(s, report: Path) -> None:  # type: ignore[no-untyped-def]
    """The console summary of a RunSummary: the same Counts line as junit.xml and index.html."""
    print(
        f"\nshardfuzz: jax {s.jax_version}, seed {s.seed}, modes {','.join(s.modes)}, {s.elapsed_s:.0f}s "
        f"({s.repeats_skipped} programs drawn again, not rechecked; {s.derived_checked} programs without their "
        f"known bug checked)\n  {s.counts.line()}"
    )
    for b in s.new + s.still:
        tag = "NEW  " if b.new else "STILL"
        mini = f"  minimized: {b.minimized_case} {list(b.minimized_size or ())}" if b.minimized_case else ""
        print(f"  {tag} {b.signature}  x{b.count}  {b.case}{mini}")
    for fx in s.fixed:
        print(f"  FIXED {', '.join(fx.signatures)}  {fx.case}")
    for b in s.known:
        print(f"  known {b.signature}  x{b.count}  ({b.suppressed_by})")
    if s.accidentally_invalid:
        print(f"  note: {s.accidentally_invalid} drawn programs were invalid by accident (strategy bug)")
    if s.unseen_suppressions:
        print(f"  known divergences not seen in this run: {', '.join(s.unseen_suppressions)}")
    stale = [e.id for e in s.known_entries if e.status == "fixed"]
    if stale:
        print(f"  known entries FIXED on this jax (their own case passes; narrow or retire them): {', '.join(stale)}")
    print(f"  reports: {report / 'summary.json'}, {report / 'junit.xml'}, {report / 'index.html'}")
    if s.failing:
        print(f"  next: shardfuzz replay {s.failing[0].case}   |   shardfuzz explain {s.failing[0].case}")


def _print_result(res, entries, jv: str, indent: str = "") -> tuple[int, list[str], list[str]]:  # type: ignore[no-untyped-def]
    """Print each mode and divergence; returns (new divergences, known entry ids, unsupported modes)."""
    from harness.judge.known import explain_all

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
    new, known = 0, []
    for x in explain_all(entries, res.divergences, res.program, pred, jv):
        new += x.entry is None
        if x.entry is not None and x.entry.id not in known:
            known.append(x.entry.id)
        print(f"{indent}{'known (' + x.entry.id + ')' if x.entry else 'DIVERGES'}: {x.divergence.signature}\n{indent}  {x.divergence.message}")
    return new, known, unsupported


def cmd_replay(a: argparse.Namespace) -> int:
    from harness.judge.check import check_in_pool
    from harness.judge.known import derived_program
    from harness.run.compat import jax_version
    from harness.run.pool import Pool

    p = _load_case(a.case)
    entries = _suppressions(a.suppressions)
    modes = _modes(a.modes)
    jv = jax_version()
    pool = Pool(1, timeout_s=a.timeout)  # a case may crash jax: never in this process
    try:
        res = check_in_pool(pool, p, modes)
        new, known, unsupported = _print_result(res, entries, jv)
        if known:
            # a known bug explains only what it causes: the program without it is checked in full
            used = [e for e in entries if e.id in known]
            q = derived_program(used, p, res.prediction)
            if q is not None:
                kept = "its rewrite" if q.outputs == p.outputs and len(q.body) == len(p.body) else f"its outputs {list(range(len(q.outputs)))} no known bug reaches"
                print(f"  checking the program without the known bug ({kept}):")
                n2, k2, _ = _print_result(check_in_pool(pool, q, modes), entries, jv, indent="    ")
                new += n2
                known += [k for k in k2 if k not in known]
    finally:
        pool.close()
    ran = len(res.observations) - len(unsupported)
    extra = f", {len(unsupported)} unsupported: {','.join(unsupported)}" if unsupported else ""
    if new:
        print(f"{a.case}: DIVERGES ({new} divergences no known entry explains; jax {jv}, {ran} modes run{extra})")
    elif known:
        print(f"{a.case}: KNOWN ({', '.join(known)}; jax {jv}, {ran} modes run{extra})")
    else:
        print(f"{a.case}: PASS (oracle and jax {jv} agree in {ran} modes{extra})")
    return 1 if new else 0


def cmd_minimize(a: argparse.Namespace) -> int:
    from harness.campaign.fuzz import atomic_write, case_document
    from harness.campaign.minimize import minimize_case, minimized_reproducer, size
    from harness.run.modes import DEFAULT_MODES
    from harness.run.pool import Pool

    p = _load_case(a.case)
    sig = a.signature
    if sig is None:
        doc = json.loads(Path(a.case).read_text())
        sigs = [d["signature"] for d in doc.get("divergences", [])]
        if not sigs:
            raise UsageError(f"{a.case}: the case records no divergence; pass --signature KIND|MODE|WHERE")
        sig = sigs[0]
    if sig.count("|") != 2:
        raise UsageError(f"--signature {sig!r}: expected KIND|MODE|WHERE, e.g. value|jit|psum")
    pool = Pool(1, timeout_s=a.timeout)
    try:
        check_modes = DEFAULT_MODES
        print(f"minimizing {a.case} for {sig}: start {size(p)} (ops, args+outputs, mesh, elements, spec axes)")
        best, n = minimize_case(pool, p, sig, check_modes, a.budget, log=print)
    finally:
        pool.close()
    base = Path(a.case).with_suffix("")
    out_json, out_py = Path(f"{base}.min.json"), Path(f"{base}.min.py")
    from harness.run.compat import jax_version

    atomic_write(out_json, case_document(best, (), jax_version(), {"minimized_from": a.case, "signature": sig}))
    atomic_write(out_py, minimized_reproducer(best, sig, title=f"shardfuzz reproducer for {sig} (minimized from {a.case})"))
    print(f"done after {n} checks: {size(p)} -> {size(best)}\n  {out_json}\n  {out_py}\n\n{best!r}")
    return 0


def _entry_mode(case: Path) -> str | None:
    """The reproducer mode of the known entry whose own case `case` is, if any."""
    from harness.judge.known import KnownDivergencesError, case_path, load

    try:
        entries = load()
    except KnownDivergencesError:
        return None
    return next((e.mode for e in entries if case_path(e).resolve() == case.resolve()), None)


def cmd_emit(a: argparse.Namespace) -> int:
    from harness.report.reproducer import NoReproducer, case_mode, pytest_reproducer, reproducer
    from programs.emit import REPRO_MODES

    p = _load_case(a.case, emit=True)
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
        print(make(p, mode=mode, title=f"shardfuzz reproducer for {a.case}"))
    except NoReproducer as e:
        raise UsageError(f"{a.case}: {e}; pass another --mode") from None
    return 0


def cmd_explain(a: argparse.Namespace) -> int:
    from harness.report.explain import explain_lines

    p = _load_case(a.case)
    if a.no_jax:
        print("\n".join(explain_lines(p)))
    else:
        from harness.run.modes import MODES

        o = MODES["abstract"].run(p)  # each value's type as jax.typeof saw it while tracing
        print("\n".join(explain_lines(p, o.value_types)))
        said = f"{o.error_type}: {o.error_message}" if o.raised else "no error (jax.eval_shape ran)"
        print(f"jax said (abstract mode): {said}")
    print("\n" + repr(p))
    return 0


def build_parser() -> argparse.ArgumentParser:
    from harness.run.modes import DEFAULT_MODES, MODES

    public = ",".join(m for m in MODES if m not in INTERNAL_MODES)
    seconds = positive(float, "seconds")
    ap = _Parser(prog="shardfuzz", description="Property-based differential testing of jax.shard_map")
    ap.add_argument("--version", action=_Version)
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    f = sub.add_parser("fuzz", help="draw programs and check them against the oracle")
    f.add_argument("--seed", type=int, default=FUZZ_DEFAULTS["seed"],
                   help="which programs: the same seed and options draw the same programs (programs_digest in the summary)")
    f.add_argument("--max-examples", type=at_least(1), default=FUZZ_DEFAULTS["max_examples"],
                   help="how many programs to draw (Hypothesis examples), at least 1")
    f.add_argument("--budget", type=seconds, default=FUZZ_DEFAULTS["budget"],
                   help="stop after this many seconds (default: none, only --max-examples)")
    f.add_argument("--profile", default=None, help=f"preset options: {', '.join(PROFILES)} (explicit options win; default: none)")
    f.add_argument("--report", default="reports/run", help="directory for summary.json and cases/")
    f.add_argument("--modes", default=",".join(DEFAULT_MODES), help=f"comma-separated, from {public}")
    f.add_argument("--suppressions", default=None, help="known divergences TOML (default: reports/known_divergences.toml)")
    f.add_argument("--value-share", type=fraction, default=FUZZ_DEFAULTS["value_share"], help="share of programs run in every mode; the rest only in the abstract tier")
    f.add_argument("--batch", type=at_least(1, what="1: no batching"), default=FUZZ_DEFAULTS["batch"], help="value-tier programs compiled together as one jit")
    f.add_argument(
        "--codegen",
        choices=("fast", "default"),
        default=os.environ.get("SHARDFUZZ_CODEGEN", "fast"),
        help="XLA CPU backend in the workers: fast (LLVM -O0, no fusion emitters: ~1.5x faster compiles; "
        "tracing, Shardy and the SPMD partitioner untouched) or default (as users run it)",
    )
    f.add_argument("--corpus", default=None,
                   help="persistent corpus directory: replayed first, failing cases added (default: none)")
    f.add_argument("--minimize-budget", type=at_least(0.0, float, "0: off"), default=FUZZ_DEFAULTS["minimize_budget"],
                   help="seconds to minimize each new bucket (0: off)")
    f.add_argument("--minimize-total", type=at_least(0.0, float, "0: no limit"), default=FUZZ_DEFAULTS["minimize_total"],
                   help="seconds for minimizing all new buckets together, most frequent first (0: no limit)")
    f.add_argument("--invalid", type=fraction, default=FUZZ_DEFAULTS["invalid"], help="share of programs given one deliberate defect")
    f.add_argument("--defects", default=None, help="comma-separated defect names to draw from (default: all; see strategies/invalid.py)")
    cores = len(os.sched_getaffinity(0))
    f.add_argument("--workers", type=at_least(0, what="0: in this process"), default=FUZZ_DEFAULTS["workers"],
                   help=f"worker processes, 0: in-process (default: the number of cores, here {cores})")
    f.add_argument("--timeout", type=seconds, default=FUZZ_DEFAULTS["timeout"], help="per-mode timeout in a worker, seconds")
    f.set_defaults(fn=cmd_fuzz)
    m = sub.add_parser("minimize", help="shrink a case while it keeps its divergence signature")
    m.add_argument("case", help="a JSON case file")
    m.add_argument("--signature", default=None, help="KIND|MODE|WHERE to keep (default: the case's first)")
    m.add_argument("--budget", type=at_least(0.0, float, "0: no shrinking"), default=120.0, help="seconds to spend")
    m.add_argument("--timeout", type=seconds, default=30.0, help="per-mode timeout in the worker, seconds")
    m.set_defaults(fn=cmd_minimize)
    for name, fn, hlp in (
        ("replay", cmd_replay, "re-run one case and print the verdict"),
        ("emit", cmd_emit, "print a standalone reproducer script"),
        ("explain", cmd_explain, "explain shapes, specs and varying axes op by op"),
    ):
        s = sub.add_parser(name, help=hlp)
        s.add_argument("case", help="a JSON case file")
        if name == "replay":
            s.add_argument("--modes", default=",".join(DEFAULT_MODES), help=f"comma-separated, from {public}")
            s.add_argument("--suppressions", default=None, help="known divergences TOML (default: reports/known_divergences.toml)")
            s.add_argument("--timeout", type=seconds, default=30.0, help="per-mode timeout in the worker, seconds")
        if name == "emit":
            s.add_argument("--mode", default=None, help="run it as this mode does (default: the mode of the case's first divergence, else jit)")
            s.add_argument("--pytest", action="store_true",
                           help="write a pytest test (jax's tests/shard_map_test.py style) instead of a script")
        if name == "explain":
            s.add_argument("--no-jax", action="store_true", help="do not run jax, only the oracle")
        s.set_defaults(fn=fn)
    from harness.campaign import qualify

    qualify.register(sub)
    return ap


def _qualify_corpus_fits(a: argparse.Namespace) -> None:
    """`qualify --corpus`: every case's mesh fits on the workers' devices (its other
    checks are qualify.load_corpus's)."""
    from harness.campaign.qualify import load_corpus

    root = Path(a.corpus)
    for c in load_corpus(root):
        _fits(c.program, f"--corpus: {root / c.name}.json")


def _saved(a: argparse.Namespace | None) -> str:
    """What is safe on disk after a command stopped early, in that command's terms."""
    cmd = getattr(a, "cmd", None)
    if cmd == "fuzz":
        return f"every case found so far is saved in {Path(a.report) / 'cases'}"  # type: ignore[union-attr]
    if cmd == "qualify":
        return f"no report was written to {a.report}"  # type: ignore[union-attr]
    if cmd == "minimize":
        return f"{a.case} is unchanged and no .min files were written"  # type: ignore[union-attr]
    if cmd in ("replay", "explain", "emit"):
        return f"{a.case} is unchanged"  # type: ignore[union-attr]
    return "nothing was written"


def _internal_error(e: Exception, a: argparse.Namespace | None) -> int:
    """A shardfuzz bug: one line on stderr, the traceback in the run's report directory
    (fuzz, qualify) or a fresh temporary file (replay, explain, emit, minimize)."""
    import tempfile
    import traceback

    text = traceback.format_exc()
    cmd = getattr(a, "cmd", None) or "shardfuzz"
    log: Path | None = None
    report = getattr(a, "report", None)
    if report:
        try:
            log = Path(report) / "internal-error.txt"
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text(text)
        except OSError:
            log = None
    if log is None:
        fd, name = tempfile.mkstemp(prefix=f"shardfuzz-{cmd}-internal-error-", suffix=".txt")
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        log = Path(name)
    what = (str(e).strip().splitlines() or [""])[0][:300]
    print(
        f"shardfuzz {cmd}: internal error: {type(e).__name__}: {what} (a shardfuzz bug, not a jax one; "
        f"traceback in {log}; {_saved(a)})",
        file=sys.stderr,
    )
    return 3


def main(argv: list[str] | None = None) -> int:
    a: argparse.Namespace | None = None
    try:
        a = build_parser().parse_args(argv)
        if a.cmd in ("fuzz", "replay", "explain", "minimize"):
            from harness.run.compat import force_host_devices

            force_host_devices(host_device_count())
        if a.cmd == "qualify":
            _qualify_corpus_fits(a)
        return int(a.fn(a))
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted; {_saved(a)}", file=sys.stderr)
        return 130
    except Exception as e:  # a shardfuzz bug: say so, keep the traceback, lose nothing
        return _internal_error(e, a)


if __name__ == "__main__":
    sys.exit(main())
