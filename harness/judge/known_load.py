"""Reading harness/data/known_divergences.toml: every entry validated (literal kinds, a real
version range, a repair its features allow, its own existing case, a link, no pattern
wider than its repair checks), or a KnownDivergencesError naming the file, the entry and
the problem."""

from __future__ import annotations

from pathlib import Path

import tomllib
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from harness.judge.known import (
    CLASSES,
    DEFAULT_PATH,
    REPAIRS,
    KnownDivergence,
    case_path,
)
from harness.judge.known_features import (
    OUTPUT_FEATURES,
    PROGRAM_FEATURES,
    VALUE_FEATURES,
    AnyOf,
    Pattern,
)
from oracles.rewrites import REWRITES
from programs.errors import KnownDivergencesError

_KEYS = {"id", "reason", "signatures", "when", "jax_versions", "repair", "case", "link", "reproducer", "mode", "class",
         "abort", "decision"}


def _check_patterns(patterns: tuple[Pattern, ...], rewrite: bool) -> None:
    """No pattern names every mode and any op at once (`value|*|*`), and without a
    rewrite repair (one that checks the whole program again) none names any exception
    type (`->*`): such an entry matches only its exact signature."""
    for pat in patterns:
        if pat.modes is None and any(c in pat.where for c in "*?["):
            raise ValueError(f"signature {pat}: a wildcard in both the mode and `where`; name the modes or the op")
        if not rewrite and pat.kind in ("unexpected_error", "wrong_error") and (
                "->" not in pat.where or any(c in pat.where.split("->", 1)[1] for c in "*?[")):
            raise ValueError(f"signature {pat}: any exception type, but the entry's repair does not check the whole "
                             "program again (no rewrite): name the exception type ('...->ValueError')")


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
    repair = d.get("repair")
    klass = d.get("class", "bug")
    try:
        patterns = tuple(Pattern.parse(x) for x in sigs)
        if versions not in ("", "*"):
            SpecifierSet(versions)
        if repair not in REPAIRS:
            raise ValueError(f"repair {repair!r} is not one of {list(REPAIRS)} (the program without the bug: a rewrite "
                             "of oracles/rewrites.py, without_op, or without_mode)")
        if klass not in CLASSES:
            raise ValueError(f"class {klass!r} is not one of {list(CLASSES)}")
        if klass == "policy" and not d.get("decision"):
            raise ValueError("a policy entry needs 'decision': why it is jax's choice, not a bug (the docs checked)")
        ops = tuple(AnyOf.parse(w) for w in when if w not in PROGRAM_FEATURES and w not in VALUE_FEATURES)
        outs = [w for w in when if w in OUTPUT_FEATURES or w in VALUE_FEATURES]
        if repair == "without_op" and not (ops or outs):
            raise ValueError("repair 'without_op' needs an op feature (or an out_spec's, or a value's) in 'when': "
                             "what to leave out")
        if repair == "without_mode" and (ops or outs):
            raise ValueError("repair 'without_mode' but 'when' names an op, an out_spec or a value: use without_op "
                             "(the program without it is checked in the entry's modes too)")
        _check_patterns(patterns, repair in REWRITES)
    except (ValueError, InvalidSpecifier) as e:
        raise KnownDivergencesError(f"{where}: {e}") from None
    for key in ("abort", "decision"):
        if key in d and not isinstance(d[key], str):
            raise KnownDivergencesError(f"{where}: '{key}' must be a string")
    return KnownDivergence(
        id=str(d["id"]), reason=str(d["reason"]), patterns=patterns, jax_versions=versions,
        program_features=tuple(w for w in when if w in PROGRAM_FEATURES),
        op_features=ops, value_features=tuple(w for w in when if w in VALUE_FEATURES),
        repair=str(repair), case=str(d["case"]), link=str(d["link"]), reproducer=str(d.get("reproducer", "")),
        mode=str(d.get("mode", "jit")), klass=str(klass), abort=str(d.get("abort", "")),
        decision=str(d.get("decision", "")),
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
