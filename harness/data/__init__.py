"""The data shardfuzz ships with its code: the known-divergence list
(`known_divergences.toml`) and the corpus (`corpus/`: `curated/`, `known/` (each entry's own
case), `regressions/`, `found/`).

Located through the package (importlib.resources), never through the working directory:
an installed shardfuzz (a wheel, `pip install .`) finds its data from any directory, and a
checkout's editable install finds the files in the checkout. An entry's `case` is a path
relative to `DATA`.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def _root() -> Path:
    root = files(__name__)
    # workers, case files and `qualify --corpus` need real paths: a zipped install has none
    if not isinstance(root, Path):
        raise RuntimeError(f"shardfuzz's data ({root}) is not a directory on disk; install shardfuzz unzipped (pip does)")
    return root


DATA = _root()
KNOWN_DIVERGENCES = DATA / "known_divergences.toml"
CORPUS = DATA / "corpus"
