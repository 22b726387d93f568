"""Bad input from the user: the one exception every command turns into one line on
stderr and exit code 2 (harness/cli.py). Its own module, so any room can raise it
without importing the CLI."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""
