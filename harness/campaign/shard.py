"""One shard of a fuzz run: `--shard K/N` checks a deterministic, disjoint slice of the
program stream, and the N shards of one seed and count together check exactly the
programs the unsharded run checks.

Every shard draws the whole stream (drawing is cheap: nothing runs) and checks only the
programs it owns, chosen by program id, not by position: a program Hypothesis draws twice
belongs to one shard, so it is checked once over all shards, as in the unsharded run. The
programs a shard leaves to the others still claim their configuration cells
(`harness/campaign/cells.py`), so each program gets the same tier as in the unsharded run.
Shards share nothing while they run; `shardfuzz merge` adds their reports up.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from programs.errors import ConfigError, UsageError

_FORM = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `count` (0 <= index < count: a Kubernetes JOB_COMPLETION_INDEX
    goes in as it is)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:

            raise ConfigError(f"--shard {self.index}/{self.count}: K/N needs N >= 1 and 0 <= K < N "
                             f"(e.g. --shard 0/{max(self.count, 2)} ... --shard {max(self.count, 2) - 1}/{max(self.count, 2)})")

    def owns(self, program_id: str) -> bool:
        """Whether this shard checks the program with this id (a hash of the id, not the id
        itself, so the slice is independent of the value tier's choice by id)."""
        if self.count == 1:
            return True
        h = int.from_bytes(hashlib.sha256(f"shard:{program_id}".encode()).digest()[:8], "big")
        return h % self.count == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """`K/N` as given on the command line (a UsageError naming the form otherwise)."""
    m = _FORM.match(text)
    if m is None:

        raise UsageError(f"--shard {text!r}: not of the form K/N (shard K of N, 0 <= K < N, e.g. --shard 0/4)")
    return Shard(int(m.group(1)), int(m.group(2)))
