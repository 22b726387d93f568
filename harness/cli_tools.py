"""The tool commands of `shardfuzz`: `qualify` (release qualification across jax
installations), `errors` (the error catalogue) and `serve` (the local spec-checker page):
each one's parser and the command that reads the parsed options, calls its room
(harness/campaign/qualify.py, harness/campaign/catalogue.py, harness/serve/server.py) and
prints what it did."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from harness.campaign.catalogue import build
from harness.campaign.qualify import fuzz_cases, load_corpus, qualify, rejudge
from harness.cli_input import check_interpreter, fits, parse_modes, python_option, writable_dir
from harness.judge.known_load import load
from harness.report.catalogue import write_catalogue
from harness.report.qualify_report import print_qualify
from harness.run.modes import DEFAULT_MODES as MODES
from harness.run.pool import Pool
from harness.serve.server import HOST, make_server
from harness.usage import at_least, positive
from programs.errors import KnownDivergencesError, UsageError
from programs.serialize import to_json


def register(sub: Any) -> None:
    """Add `qualify`, `errors` and `serve` to shardfuzz's subparsers."""
    register_qualify(sub)
    register_errors(sub)
    register_serve(sub)


def qualify_corpus_fits(a: argparse.Namespace) -> None:
    """`qualify --corpus`: every case's mesh fits on the workers' devices (its other
    checks are qualify.load_corpus's)."""
    if not a.corpus:
        return  # --rejudge, or qualify says what is missing
    root = Path(a.corpus)
    for c in load_corpus(root):
        fits(c.program, f"--corpus: {root / c.name}.json")


def cmd_qualify(a: argparse.Namespace) -> int:
    qualify_corpus_fits(a)
    if a.fuzz_examples < 0:
        raise UsageError(f"--fuzz-examples={a.fuzz_examples} must be >= 0")
    if a.workers < 1:
        raise UsageError(f"--workers={a.workers} must be >= 1")
    try:
        sups = load(Path(a.suppressions) if a.suppressions else None)
    except KnownDivergencesError as e:
        raise UsageError(str(e)) from None
    if a.rejudge:
        out = Path(a.report) if a.report else Path(a.rejudge)
        doc = rejudge(Path(a.rejudge), out, sups)
        print_qualify(doc, out, a.verbose)
        return int(doc["exit_code"])
    if not a.corpus or not a.python:
        raise UsageError("qualify needs --corpus DIR and at least one --python ENV_PYTHON (or --rejudge REPORT)")
    cases = load_corpus(Path(a.corpus))
    pythons = [check_interpreter(py) for py in a.python]
    report = Path(a.report or "reports/qualify")
    try:
        report.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--report {a.report}: cannot write there ({e.strerror})") from None
    fuzz = None
    if a.fuzz_examples:
        seed = 0 if a.fuzz_seed is None else a.fuzz_seed
        drawn = fuzz_cases(seed, a.fuzz_examples)
        for c in drawn:
            f = report / f"{c.name}.json"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(to_json(c.program))
        cases += drawn
        fuzz = {"seed": seed, "examples": a.fuzz_examples}
    doc = qualify(cases, pythons, report, sups=sups, workers=a.workers, timeout_s=a.timeout,
                  corpus=str(a.corpus), fuzz=fuzz, modes=parse_modes(a.modes),
                  bisect_envs=Path(a.envs) if a.bisect else None, bisect_max=a.bisect_max)
    print_qualify(doc, report, a.verbose)
    return int(doc["exit_code"])


def register_qualify(sub: Any) -> None:
    """Add the `qualify` subcommand to shardfuzz's subparsers."""
    q = sub.add_parser("qualify", help="run a corpus against several jax installations and compare them")
    q.add_argument("--corpus", default=None, help="directory of JSON cases (searched recursively; required unless --rejudge)")
    q.add_argument("--python", action="append", default=None,
                   help="an interpreter with jax installed (repeat; the first and last are compared; required unless --rejudge)")
    q.add_argument("--report", default=None,
                   help="directory for qualify.json/.junit.xml/.html (default: reports/qualify; with --rejudge: that report)")
    q.add_argument("--rejudge", default=None, metavar="REPORT",
                   help="judge a finished run again from its saved observations, with this checkout's oracle and "
                        "known entries (no jax run)")
    q.add_argument("--fuzz-seed", type=int, default=None, help="also run programs drawn with this seed (default: none)")
    q.add_argument("--fuzz-examples", type=at_least(0, what="0: none"), default=0, help="how many programs to draw (0: none)")
    cores = len(os.sched_getaffinity(0))
    q.add_argument("--workers", type=at_least(1), default=cores,
                   help=f"worker processes per version (default: the number of cores, here {cores})")
    q.add_argument("--timeout", type=positive(float, "seconds"), default=60.0, help="per-mode timeout in a worker, seconds")
    q.add_argument("--suppressions", default=None, help="known divergences TOML (default: harness/data/known_divergences.toml)")
    q.add_argument("--modes", default=",".join(MODES),
                   help="comma-separated modes to run on every version (each where that jax supports it)")
    q.add_argument("--bisect", action="store_true",
                   help="narrow each range to one release: build an environment (under --envs) for releases in between")
    q.add_argument("--envs", default="envs", help="where --bisect builds its environments (default: envs/)")
    q.add_argument("--bisect-max", type=at_least(1), default=12,
                   help="at most this many environments built by --bisect (default 12)")
    q.add_argument("-v", "--verbose", action="count", default=0,
                   help="-v also says when each failing case's failure came and went (default: only the cases "
                   "that fail on the last version after passing on an earlier one)")
    q.set_defaults(fn=cmd_qualify)


def cmd_errors(a: argparse.Namespace) -> int:
    out = writable_dir(a.out, "--out")
    pool = Pool(1, python=python_option(a), timeout_s=a.timeout)
    try:
        cat = build(pool, out)
    finally:
        pool.close()
    write_catalogue(cat, out)
    bad = [pg.kind.value for pg in cat.pages if not pg.as_predicted]
    unfixed = [pg.kind.value for pg in cat.pages if not pg.fixes.fixes]
    print(f"\nshardfuzz errors: {len(cat.pages)} pages on jax {cat.jax_version} in {cat.elapsed_s:.0f}s: {out / 'index.html'} (and .md)")
    print(f"  every example and fix was executed: {sum(len(pg.fixes.fixes) for pg in cat.pages)} verified fixes; "
          f"kinds without one: {', '.join(unfixed) or 'none'}")
    if cat.previous_version is not None:
        print(f"  messages changed since the previous catalogue (jax {cat.previous_version}): "
              f"{', '.join(pg.kind.value for pg in cat.changed) or 'none'}")
    if bad:
        print(f"  jax did NOT raise the predicted error (or cannot run the example) for: {', '.join(bad)} "
              "(see those pages; run shardfuzz replay on their cases)")
    return 1 if bad else 0


def register_errors(sub: Any) -> None:
    """Add the `errors` subcommand to shardfuzz's subparsers."""
    e = sub.add_parser("errors", help="write the error catalogue: one page per error kind, every example run on jax")
    e.add_argument("--out", default="reports/errors", help="directory for the pages (Markdown and HTML)")
    e.add_argument("--python", default=None,
                   help="run jax in this interpreter (an environment from scripts/envs.py; default: this one); "
                   "regenerating into the same --out shows which messages changed")
    e.add_argument("--timeout", type=positive(float, "seconds"), default=60.0, help="per-mode timeout in the worker, seconds")
    e.set_defaults(fn=cmd_errors)


def cmd_serve(a: argparse.Namespace) -> int:
    srv = make_server(a.port, python_option(a))
    print(f"shardfuzz serve: the spec checker is at http://{HOST}:{srv.server_address[1]}/ (loopback only; Ctrl-C stops it)")
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        print("stopped")
    finally:
        srv.server_close()
        srv.jax.close()  # type: ignore[attr-defined]
    return 0


def register_serve(sub: Any) -> None:
    """Add the `serve` subcommand to shardfuzz's subparsers."""
    s = sub.add_parser("serve", help="a local spec-checker page: edit mesh, shapes, specs and body; see types, verdict, fixes")
    s.add_argument("--port", type=at_least(0, what="0: any free port"), default=8765, help="port on 127.0.0.1")
    s.add_argument("--python", default=None, help="run jax in this interpreter (default: this one)")
    s.set_defaults(fn=cmd_serve)
