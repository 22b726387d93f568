"""The public exceptions of shardfuzz, in the lowest room so that every room can raise and
catch them without importing upward.

Every command turns a `UsageError` (and the format errors below, which name the file or
field at fault) into one line on stderr and exit code 2 (harness/cli.py). Control flow
private to one module (a spent budget, a reproduced example) stays in that module, and the
oracle's `OracleError`, which carries the oracle's own `PredictedError`, stays in
oracles/prediction.py.
"""

from __future__ import annotations

import ast


class ProgramFormatError(ValueError):
    """A case file or JSON document does not describe a valid program."""


class SourceError(ProgramFormatError):
    """Source that is not a program in the emit form: 'line L, column C: what; the fix'."""

    def __init__(self, node: ast.AST | None, msg: str) -> None:
        line, col = getattr(node, "lineno", None), getattr(node, "col_offset", 0)
        where = f"line {line}, column {col + 1}: " if line is not None else ""
        super().__init__(where + msg)


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


class ConfigError(UsageError, ValueError):
    """A configuration value out of range (a `RunConfig` field): bad input when it came
    from the command line, a ValueError to code that builds the configuration itself."""


class FormError(ValueError):
    """A form field of the local page (`shardfuzz serve`) that cannot be read; its message
    names the field."""


class SummaryFormatError(ValueError):
    """A summary.json that does not have the fields its schema needs."""


class NoReproducer(ValueError):
    """The mode does not apply to this program (the harness reports it unsupported)."""


class WorkerStartError(RuntimeError):
    """A worker could not start (wrong interpreter, jax missing): names the interpreter."""


class KnownDivergencesError(ValueError):
    """The known-divergences file is malformed; the message names the file and entry."""
