"""Escaping and writing shared by every report (fuzz and qualify): XML 1.0 cannot hold
some characters jax messages carry (ANSI escapes, NULs), and a report is written through a
temporary file and a rename, never half a file."""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

# Characters XML 1.0 cannot hold at all: ElementTree writes them through unescaped, which
# makes the whole file unparsable.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def clean(text: object) -> str:
    return _NOT_XML.sub("\ufffd", str(text))


def esc(text: object) -> str:
    return html.escape(clean(text), quote=True)


def write(path: Path, text: str) -> None:
    """The one atomic write (cases, corpus, summaries, reports): a temporary file, synced,
    then renamed, so a crash or kill -9 never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
