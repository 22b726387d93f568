"""The `shardfuzz` command.

    shardfuzz fuzz --seed S --max-examples N [--budget SECONDS] --report DIR [-v | -vv]
    shardfuzz replay CASE.json      re-run one case, print the verdict
    shardfuzz emit CASE.json        print a standalone reproducer
    shardfuzz explain CASE.json     the spec checker: shapes and varying axes op by op

The console prints what is new or still failing and one line for the known divergences
(harness/report/console.py); -v adds the known buckets, -vv the known entries nothing
matched. The report files hold everything.

Exit codes: 0 nothing diverged, 1 something did, 2 bad input (one line on stderr), 3 a
shardfuzz bug (one line on stderr; the traceback in the report directory, or in a fresh
temporary file for replay, explain, emit and minimize).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import NoReturn

from harness import cli_tools
from harness.campaign.config import (
    ALONE_LIMIT_FACTOR,
    GRACE_MIN_S,
    GRACE_SHARE,
    NO_LIMIT,
    RunConfig,
)
from harness.campaign.database import open_database
from harness.campaign.fuzz import fuzz, load_corpus
from harness.campaign.shard import parse_shard
from harness.cli_cases import cmd_emit, cmd_explain, cmd_minimize, cmd_replay
from harness.cli_input import (
    INTERNAL_MODES,
    fits,
    load_known,
    parse_defects,
    parse_modes,
    python_option,
    writable_dir,
)
from harness.report.console import exit_code, print_summary
from harness.report.merge import merge, missing_shards, read_report
from harness.run.compat import force_host_devices
from harness.run.modes import DEFAULT_MODES, MODES
from harness.run.worker import host_device_count
from harness.usage import at_least, fraction, positive
from programs.errors import ProgramFormatError, UsageError


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


def _run_defaults() -> dict[str, object]:
    """`shardfuzz fuzz`'s defaults are RunConfig's (one source: the CLI, the benchmarks and
    library callers get the same run)."""
    d = RunConfig()
    return {"modes": ",".join(d.modes), "max_examples": d.max_examples, "budget": d.budget_s, "grace": d.grace, "minimize_budget": d.minimize_budget_s,
            "minimize_total": d.minimize_total_s, "value_share": d.value_share, "batch": d.batch,
            "invalid": d.invalid, "workers": d.workers, "timeout": d.timeout_s, "seed": d.seed, "sweep": d.sweep}


FUZZ_DEFAULTS: dict[str, object] = _run_defaults()

# Presets for `fuzz --profile` (the same names as the pytest Hypothesis profiles).
PROFILES: dict[str, dict[str, object]] = {
    "dev": {"max_examples": 200},
    "ci": {"max_examples": 100, "minimize_budget": 0.0},
    # nightly adds the multiprocess mode (2 processes x 4 devices, gloo; its large programs
    # cost seconds each: benchmarks/multiprocess_cost.py), which the default modes leave out
    "nightly": {"max_examples": NO_LIMIT, "budget": 8 * 3600.0, "minimize_total": 3600.0, "grace": 4200.0,
                "modes": ",".join((*DEFAULT_MODES, "multiprocess"))},
}


COMPILE_CACHE_MAX_BYTES = 2 << 30  # a compilation cache is pruned to this as a run starts (prune_cache)


def default_compile_cache() -> Path:
    """The per-user compilation cache every run without --corpus or --compile-cache
    shares: `$SHARDFUZZ_COMPILE_CACHE`, else `$XDG_CACHE_HOME/shardfuzz/jax` (else
    `~/.cache/shardfuzz/jax`)."""
    if os.environ.get("SHARDFUZZ_COMPILE_CACHE"):
        return Path(os.environ["SHARDFUZZ_COMPILE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "shardfuzz" / "jax"


def compile_cache_env(option: str | None, corpus: Path | None) -> dict[str, str]:
    """The worker environment for `--compile-cache` (jax reads its config from these
    variables at import): every compile kept, however quick or small, so eager's
    per-primitive executables are too; {} for none. The cache key holds the jax and
    jaxlib versions, the XLA flags and the compile options, so a cache shared by runs of
    other jax versions or --codegen never hands one another's executables.

    Without the option: CORPUS/.jax_cache with --corpus, else the per-user cache
    (`default_compile_cache`); a per-user cache that cannot be written is left off with
    a warning (it was not asked for), a named directory that cannot be is a usage error.
    The cache is pruned once, here, to COMPILE_CACHE_MAX_BYTES, oldest entries out first
    (`prune_cache`): jax's own cap (`jax_compilation_cache_max_size`) re-reads the size of
    every entry at each write, which costs eager, with its dozens of small executables
    per program, more than the cache saves once it holds thousands."""
    if option == "none":
        return {}
    if option is not None:
        d = writable_dir(option, "--compile-cache")
    elif corpus is not None:
        d = writable_dir(str(corpus / ".jax_cache"), "--corpus")
    else:
        try:
            d = writable_dir(str(default_compile_cache()), "the per-user compilation cache")
        except UsageError as e:
            print(f"shardfuzz: warning: {e} (or set $SHARDFUZZ_COMPILE_CACHE); running without it", file=sys.stderr)
            return {}
    env = {"JAX_COMPILATION_CACHE_DIR": str(d.resolve()), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
           "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1"}
    prune_cache(d, COMPILE_CACHE_MAX_BYTES)
    return env


def prune_cache(d: Path, max_bytes: int) -> int:
    """Remove the oldest (by modification time) files of the cache directory `d` until
    it holds at most `max_bytes`; the number removed."""
    entries = []
    with os.scandir(d) as it:
        for e in it:
            if e.is_file(follow_symlinks=False):
                st = e.stat(follow_symlinks=False)
                entries.append((st.st_mtime, st.st_size, e.path))
    total = sum(size for _, size, _ in entries)
    removed = 0
    for _, size, path in sorted(entries):
        if total <= max_bytes:
            break
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size
        removed += 1
    return removed


def cmd_fuzz(a: argparse.Namespace) -> int:
    if a.profile is not None:
        if a.profile not in PROFILES:
            raise UsageError(f"--profile {a.profile!r}: unknown profile; choose from {', '.join(PROFILES)}")
        for k, v in PROFILES[a.profile].items():
            if getattr(a, k) is None or getattr(a, k) == FUZZ_DEFAULTS[k]:
                setattr(a, k, v)
    if a.max_examples is None:  # not given: a time budget alone bounds the run
        a.max_examples = NO_LIMIT if a.budget is not None else FUZZ_DEFAULTS["max_examples"]

    # (every number was range-checked by its argparse type; RunConfig checks them again)
    report = writable_dir(a.report, "--report")
    corpus = None
    if a.corpus:
        corpus = writable_dir(a.corpus, "--corpus")
        try:
            cases = load_corpus(corpus)
        except ProgramFormatError as e:
            raise UsageError(f"--corpus: {e}; fix or remove that file") from None
        except (UnicodeDecodeError, OSError) as e:
            raise UsageError(f"--corpus {corpus}: a file there cannot be read as a JSON case ({e}); fix or remove it") from None
        for f, p, _ in cases:
            fits(p, f"--corpus: {f}")
    worker_env = {"SHARDFUZZ_CODEGEN": a.codegen, **compile_cache_env(a.compile_cache, corpus)}
    if a.python is not None and a.workers == 0:
        raise UsageError("--python with --workers 0: jax runs in this process then; give workers (1 or more) to run it there")
    if a.database is not None:
        open_database(a.database)  # (checked before the run: a wrong address is one line, exit 2)
    cfg = RunConfig(
        seed=a.seed,
        max_examples=a.max_examples,
        budget_s=a.budget,
        grace=a.grace,
        report_dir=report,
        modes=parse_modes(a.modes),
        suppressions=load_known(a.suppressions),
        workers=a.workers,
        python=python_option(a),
        timeout_s=a.timeout,
        invalid=a.invalid,
        defects=parse_defects(a.defects),
        corpus=corpus,
        minimize_budget_s=a.minimize_budget,
        minimize_total_s=a.minimize_total,
        value_share=a.value_share,
        batch=a.batch,
        together=not a.alone,
        worker_env=worker_env,
        shard=parse_shard(a.shard) if a.shard is not None else None,
        large=a.large,
        database=a.database,
        sweep=a.sweep,
        verbosity=a.verbose,
        started=getattr(a, "started", None),
    )
    s = fuzz(cfg)
    print_summary(s, report, a.verbose)
    return exit_code(s)


def process_started() -> float:
    """The time.monotonic() this process started (Linux: /proc/self/stat; elsewhere, or
    when that says something implausible, now): the command's budget counts from there,
    the interpreter's start and imports included."""
    now = time.monotonic()
    try:
        stat = Path("/proc/self/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[1].split()[19])  # (field 22, starttime: clock ticks after boot)
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return now
    return now - age if 0.0 <= age < 600.0 else now


def cmd_merge(a: argparse.Namespace) -> int:
    out = writable_dir(a.report, "--report")
    dirs = [Path(d) for d in a.reports]
    for d in dirs:
        if not d.is_dir():
            raise UsageError(f"merge: {d}: no such report directory (name the --report directories of the shards)")
    s = merge(dirs, out)
    gaps = missing_shards([read_report(d) for d in dirs])
    print_summary(s, out, a.verbose)
    print(f"  merged {len(dirs)} reports: {', '.join(map(str, dirs))}")
    if gaps:
        print(f"  note: shards {', '.join(gaps)} are missing: this report covers only part of the run")
    return exit_code(s)


RUN_VERBOSITY = ("-v also prints the known buckets (as found, and each with its count at the end), -vv also the "
                 "known entries this run did not match (default: what is new or still failing, one line for the known ones; "
                 "the reports hold everything)")


def add_verbosity(p: argparse.ArgumentParser, text: str = RUN_VERBOSITY) -> None:
    """`-v` / `-vv`: the console's level (harness/report/console.py)."""
    p.add_argument("-v", "--verbose", action="count", default=0, help=text)


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="shardfuzz", description="Property-based differential testing of jax.shard_map")
    ap.add_argument("--version", action=_Version)
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    _fuzz_parser(sub.add_parser("fuzz", help="draw programs and check them against the oracle"))
    _case_parsers(sub)
    g = sub.add_parser("merge", help="merge the reports of a run's shards into one report")
    g.add_argument("reports", nargs="+", metavar="REPORT_DIR", help="report directories (each with a summary.json)")
    g.add_argument("--report", required=True, help="directory for the merged summary.json, junit.xml, index.html, cases/")
    add_verbosity(g)
    g.set_defaults(fn=cmd_merge)
    cli_tools.register(sub)
    return ap


def _public_modes() -> str:
    return ",".join(m for m in MODES if m not in INTERNAL_MODES)


def _fuzz_parser(f: argparse.ArgumentParser) -> None:
    seconds = positive(float, "seconds")
    f.add_argument("--seed", type=int, default=FUZZ_DEFAULTS["seed"],
                   help="which programs: the same seed and options draw the same programs (programs_digest in the summary)")
    f.add_argument("--max-examples", type=at_least(1), default=None,
                   help="how many programs to draw (Hypothesis examples), at least 1; without it, --budget alone "
                   f"ends the run (default: {FUZZ_DEFAULTS['max_examples']})")
    f.add_argument("--budget", type=seconds, default=FUZZ_DEFAULTS["budget"],
                   help="stop drawing programs after this many seconds; the run ends, its reports written, within "
                   f"the budget plus a grace of max({GRACE_MIN_S:.0f}s, {GRACE_SHARE * 100:.0f}%% of the budget), whatever jax "
                   "does: jobs still running then are killed, and the work left over (known entries' own cases, "
                   "minimization, late parts) is reported as not done (with --workers 0 jax runs in this process and "
                   "cannot be stopped; default: none, only --max-examples)")
    f.add_argument("--grace", type=at_least(0.0, float), default=FUZZ_DEFAULTS["grace"],
                   help="seconds past --budget the run may take to finish the checks under way, check the known "
                   "entries' own cases, minimize new buckets and write its reports (default: "
                   f"max({GRACE_MIN_S:.0f}s, {GRACE_SHARE * 100:.0f}%% of the budget))")
    f.add_argument("--profile", default=None, help=f"preset options: {', '.join(PROFILES)} (explicit options win; default: none)")
    f.add_argument("--report", default="reports/run", help="directory for summary.json and cases/")
    f.add_argument("--modes", default=",".join(DEFAULT_MODES), help=f"comma-separated, from {_public_modes()}")
    f.add_argument("--suppressions", default=None, help="known divergences TOML (default: harness/data/known_divergences.toml)")
    f.add_argument("--value-share", type=fraction, default=FUZZ_DEFAULTS["value_share"], help="share of programs run in every mode; the rest only in the abstract tier")
    f.add_argument("--batch", type=at_least(1, what="1: no batching"), default=FUZZ_DEFAULTS["batch"], help="value-tier programs compiled together as one jit")
    f.add_argument("--alone", action="store_true",
                   help="compile every mode of a program on its own (default: its jit, vmap, vmap_spmd, grad and grad_remat "
                   "modes share one jit, about 1.7x faster; a divergence there is re-run alone before it is reported)")
    f.add_argument(
        "--codegen",
        choices=("fast", "default"),
        default=os.environ.get("SHARDFUZZ_CODEGEN", "fast"),
        help="XLA CPU backend in the workers: fast (LLVM -O0, no fusion emitters: ~1.5x faster compiles; "
        "tracing, Shardy and the SPMD partitioner untouched) or default (as users run it)",
    )
    f.add_argument("--corpus", default=None,
                   help="persistent corpus directory: replayed first, failing cases added (default: none)")
    f.add_argument("--compile-cache", default=None,
                   help="jax's persistent compilation cache for the workers, shared across runs (every compile kept, "
                   "the per-primitive ones of eager too): a directory, or 'none' (default: CORPUS/.jax_cache with --corpus, "
                   "else the per-user $SHARDFUZZ_COMPILE_CACHE or $XDG_CACHE_HOME/shardfuzz/jax, pruned to 2 GiB at each start)")
    f.add_argument("--minimize-budget", type=at_least(0.0, float, "0: off"), default=FUZZ_DEFAULTS["minimize_budget"],
                   help="seconds to minimize each new bucket (0: off)")
    f.add_argument("--minimize-total", type=at_least(0.0, float, "0: no limit"), default=FUZZ_DEFAULTS["minimize_total"],
                   help="seconds for minimizing all new buckets together, most frequent first (0: no limit)")
    f.add_argument("--invalid", type=fraction, default=FUZZ_DEFAULTS["invalid"], help="share of programs given one deliberate defect")
    f.add_argument("--defects", default=None, help="comma-separated defect names to draw from (default: all; see strategies/invalid.py)")
    f.add_argument("--python", default=None,
                   help="run jax in this interpreter (an environment from scripts/envs.py, e.g. a jax >= 0.11 on "
                        "Python >= 3.12; default: this one); the workers need only jax and numpy there")
    cores = len(os.sched_getaffinity(0))
    f.add_argument("--workers", type=at_least(0, what="0: in this process"), default=FUZZ_DEFAULTS["workers"],
                   help=f"worker processes, 0: in-process (default: the number of cores, here {cores})")
    f.add_argument("--timeout", type=seconds, default=FUZZ_DEFAULTS["timeout"],
                   help="per-mode timeout in a worker, seconds; a timeout or crash no known entry explains runs again "
                   f"alone on its worker with {ALONE_LIMIT_FACTOR:.0f} times this limit before it is reported: one that "
                   "does not happen again is reported slow or flaky, not as a failure")
    f.add_argument("--database", default=None, metavar="DIR|redis://HOST:PORT[/DB]",
                   help="Hypothesis example database shared with other runs and shards: its saved failures are "
                   "replayed first, this run's new failures saved (default: the --corpus DIR's .hypothesis/, else none)")
    f.add_argument("--large", type=fraction, default=None,
                   help="share of large programs (a block of >= 4 MiB per device; checked in abstract, jit and "
                   "multiprocess only; default: 0.05 when --modes has multiprocess, else 0)")
    f.add_argument("--shard", default=None, metavar="K/N",
                   help="check only shard K of N (0 <= K < N) of the program stream; the N shards of one seed and "
                   "count check exactly what the unsharded run checks; `shardfuzz merge` joins their reports (default: all)")
    f.add_argument("--no-sweep", dest="sweep", action="store_false", default=FUZZ_DEFAULTS["sweep"],
                   help="skip the sweep: by default a run first draws a program around every few cells of the "
                   "coverage table (every op kind's parameter classes, dtypes, ranks, wrappers, axis tuples; by "
                   "value and by error), then Hypothesis' stream; the sweep's programs count toward --max-examples")
    add_verbosity(f)
    f.set_defaults(fn=cmd_fuzz)


def _case_parsers(sub) -> None:  # type: ignore[no-untyped-def]
    """minimize, replay, emit and explain: commands on one case file."""
    seconds = positive(float, "seconds")
    m = sub.add_parser("minimize", help="shrink a case while it keeps its divergence signature")
    m.add_argument("case", help="a JSON case file")
    m.add_argument("--python", default=None,
                   help="run jax in this interpreter (an environment from scripts/envs.py; default: this one)")
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
        s.add_argument("--python", default=None,
                       help="run jax in this interpreter (an environment from scripts/envs.py; default: this one)")
        if name == "replay":
            s.add_argument("--modes", default=",".join(DEFAULT_MODES), help=f"comma-separated, from {_public_modes()}")
            s.add_argument("--suppressions", default=None, help="known divergences TOML (default: harness/data/known_divergences.toml)")
            s.add_argument("--timeout", type=seconds, default=30.0, help="per-mode timeout in the worker, seconds")
            add_verbosity(s, "-v also prints each known divergence with its message (default: one line per known entry)")
        if name == "emit":
            s.add_argument("--mode", default=None, help="run it as this mode does (default: the mode of the case's first divergence, else jit)")
            s.add_argument("--pytest", action="store_true",
                           help="write a pytest test (jax's tests/shard_map_test.py style) instead of a script")
        if name == "explain":
            s.add_argument("--no-jax", action="store_true", help="do not run jax, only the oracle")
            s.add_argument("--fix", action="store_true",
                           help="propose the smallest edits that make an invalid program valid; show those the oracle "
                           "calls valid and jax runs agreeing with the oracle, as diffs with their outputs")
        s.set_defaults(fn=fn)


def _saved(a: argparse.Namespace | None) -> str:
    """What is safe on disk after a command stopped early, in that command's terms."""
    cmd = getattr(a, "cmd", None)
    if cmd == "fuzz":
        return f"every case found so far is saved in {Path(a.report) / 'cases'}"  # type: ignore[union-attr]
    if cmd == "qualify":
        return f"no report was written to {a.report or a.rejudge or 'reports/qualify'}"  # type: ignore[union-attr]
    if cmd == "merge":
        return f"no report was written to {a.report}"  # type: ignore[union-attr]
    if cmd == "errors":
        return f"no page in {a.out} was changed"  # type: ignore[union-attr]
    if cmd == "minimize":
        return f"{a.case} is unchanged and no .min files were written"  # type: ignore[union-attr]
    if cmd in ("replay", "explain", "emit"):
        return f"{a.case} is unchanged"  # type: ignore[union-attr]
    return "nothing was written"


def _internal_error(e: Exception, a: argparse.Namespace | None) -> int:
    """A shardfuzz bug: one line on stderr, the traceback in the run's report directory
    (fuzz, qualify) or a fresh temporary file (replay, explain, emit, minimize)."""
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
        # the budget counts from the command's start (called in-process, from the call's)
        a.started = process_started() if argv is None else time.monotonic()
        if a.cmd in ("fuzz", "replay", "explain", "minimize", "errors", "serve"):
            force_host_devices(host_device_count())
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
