"""Reading harness/data/known_divergences.toml: every entry validated (literal kinds, a real
version range, a known rewrite, its own existing case, a link), or a KnownDivergencesError
naming the file, the entry and the problem."""

from __future__ import annotations

from pathlib import Path

import tomllib
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from harness.judge.known import DEFAULT_PATH, KnownDivergence, case_path
from harness.judge.known_features import PROGRAM_FEATURES, VALUE_FEATURES, OpFeature, Pattern
from oracles.rewrites import REWRITES
from programs.errors import KnownDivergencesError

_KEYS = {"id", "reason", "signatures", "when", "jax_versions", "rewrite", "case", "link", "reproducer", "errors_downstream", "mode"}


def parse_entry(d: dict[str, object], where: str) -> KnownDivergence:
    """One entry of the file (a TOML table), validated; `where` names it in the error."""
    for key in ("id", "reason", "link", "case"):
        if not isinstance(d.get(key), str) or not d[key]:
            raise KnownDivergencesError(f"{where}: needs a non-empty string '{key}'"
                                        + (" (the upstream issue, or 'none found: <what was searched>')" if key == "link" else ""))
    unknown = set(d) - _KEYS
    if unknown:
        raise KnownDivergencesError(f"{where}: unknown keys {sorted(unknown)}; known: {sorted(_KEYS)}")
    sigs = d.get("signatures")
    if not isinstance(sigs, list) or not sigs or not all(isinstance(x, str) for x in sigs):
        raise KnownDivergencesError(f"{where}: needs 'signatures', a list of 'kind|mode|where' patterns")
    when = d.get("when", [])
    if not isinstance(when, list) or not all(isinstance(x, str) for x in when):
        raise KnownDivergencesError(f"{where}: 'when' must be a list of feature strings")
    versions = str(d.get("jax_versions", ""))
    rewrite = d.get("rewrite")
    try:
        patterns = tuple(Pattern.parse(x) for x in sigs)
        if versions not in ("", "*"):
            SpecifierSet(versions)
        if rewrite is not None and rewrite not in REWRITES:
            raise ValueError(f"rewrite {rewrite!r} is not one of {sorted(REWRITES)}")
        ops = tuple(OpFeature.parse(w) for w in when if w not in PROGRAM_FEATURES and w not in VALUE_FEATURES)
    except (ValueError, InvalidSpecifier) as e:
        raise KnownDivergencesError(f"{where}: {e}") from None
    return KnownDivergence(
        id=str(d["id"]), reason=str(d["reason"]), patterns=patterns, jax_versions=versions,
        program_features=tuple(w for w in when if w in PROGRAM_FEATURES),
        op_features=ops, value_features=tuple(w for w in when if w in VALUE_FEATURES),
        errors_downstream=bool(d.get("errors_downstream", False)), rewrite=rewrite,  # type: ignore[arg-type]
        case=str(d["case"]), link=str(d["link"]), reproducer=str(d.get("reproducer", "")),
        mode=str(d.get("mode", "jit")),
    )


def load(path: Path | None = None) -> list[KnownDivergence]:
    """Every entry of the file, validated: a malformed file raises KnownDivergencesError
    naming the file, the entry and the problem."""
    path = path or DEFAULT_PATH
    if not path.exists():
        return []
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise KnownDivergencesError(f"{path}: {e}") from None
    raw = data.get("divergence", [])
    if not isinstance(raw, list):
        raise KnownDivergencesError(f"{path}: expected [[divergence]] tables")
    out = [parse_entry(d, f"{path}: [[divergence]] #{i + 1} ({d.get('id', '?')})") for i, d in enumerate(raw)]
    for e in out:
        if not case_path(e).exists():
            raise KnownDivergencesError(f"{path}: entry {e.id!r}: its case {e.case!r} does not exist "
                                        "(each entry needs its own minimized case, harness/data/corpus/known/*.json)")
    for attr in ("id", "case"):
        seen: set[str] = set()
        for e in out:
            v = getattr(e, attr)
            if v in seen:
                raise KnownDivergencesError(f"{path}: two entries share {attr} {v!r}; each entry has its own")
            seen.add(v)
    return out
