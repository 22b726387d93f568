"""What the command line hands over, checked before jax sees it: case files (parsed,
validated, and fitted to the devices there are), --modes, --defects, the known
divergences file, writable directories and `--python` interpreters. Bad input is a
UsageError: one line, exit 2."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
from pathlib import Path

from harness.judge.known_load import load
from harness.run.modes import MODES
from harness.run.worker import host_device_count
from programs.errors import KnownDivergencesError, ProgramFormatError, UsageError
from programs.model import Program
from programs.serialize import from_json
from programs.source import from_source
from programs.validate import check_fits
from strategies.invalid import DEFECTS

# Modes the harness runs for itself (harness/judge/check.py localises value divergences
# with "probe"); never offered by --modes.
INTERNAL_MODES = ("probe", "probe_eager", "probe_gspmd")
# The emitted reproducers force this many CPU devices (programs/emit.py).
EMIT_DEVICES = 8


def fits(p: Program, where: str, emit: bool = False) -> None:
    """The program's mesh fits on the devices jax has here (or, for `emit`, on the 8 CPU
    devices the reproducer forces); a UsageError naming `where` otherwise."""
    try:
        check_fits(p, EMIT_DEVICES if emit else host_device_count(), reproducer=emit)
    except ProgramFormatError as e:
        raise UsageError(f"{where}: {e}") from None


def load_case(path: str, emit: bool = False) -> Program:
    f = Path(path)
    if not f.exists():
        raise UsageError(f"{path}: no such file; pass a case file written by 'shardfuzz fuzz' (reports/.../cases/*.json) or a program in the emit form (.py)")
    if f.is_dir():
        raise UsageError(f"{path}: is a directory; pass one case file")
    try:
        text = f.read_text()
        # a Python file in the emit form (parsed with ast, never run), else a JSON case
        p = from_source(text, path) if f.suffix == ".py" else from_json(text)
    except ProgramFormatError as e:
        raise UsageError(f"{path}: {e}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a text file; pass a JSON case file") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read it ({e.strerror})") from None
    fits(p, path, emit)
    return p


def parse_defects(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    names = tuple(d.strip() for d in text.split(",") if d.strip())
    bad = [d for d in names if d not in DEFECTS]
    if bad or not names:
        raise UsageError(f"--defects: unknown defect(s) {bad or text!r}; choose from {','.join(sorted(DEFECTS))}")
    return names


def parse_modes(text: str) -> tuple[str, ...]:
    public = [m for m in MODES if m not in INTERNAL_MODES]
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    bad = [m for m in modes if m not in public]
    if bad or not modes:
        raise UsageError(f"--modes: unknown mode(s) {bad or text!r}; choose from {','.join(public)}")
    return modes


def load_known(path: str | None):  # type: ignore[no-untyped-def]
    try:
        return load(Path(path) if path else None)
    except KnownDivergencesError as e:
        raise UsageError(str(e)) from None


def writable_dir(path: str, option: str) -> Path:
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


def check_interpreter(python: str) -> str:
    """The interpreter's path, or bad input naming it: missing, or without jax/numpy."""
    path = shutil.which(python) if os.sep not in python else python
    if path is None or not Path(path).is_file() or not os.access(path, os.X_OK):
        raise UsageError(f"--python {python}: no such interpreter")
    try:
        r = subprocess.run(
            [path, "-c", "import jax, numpy; print(jax.__version__)"],
            capture_output=True, text=True, timeout=180,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UsageError(f"--python {python}: cannot run it ({e})") from None
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["import failed"])[-1]
        raise UsageError(f"--python {python}: cannot import jax and numpy there ({last})")
    return path


def python_option(a: argparse.Namespace) -> str | None:
    """`--python ENV_PYTHON`: run jax there (checked: it exists and imports jax)."""
    if getattr(a, "python", None) is None:
        return None
    return check_interpreter(a.python)
