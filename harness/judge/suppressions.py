"""Known JAX divergences, as data: `reports/known_divergences.toml`.

Each entry matches divergence signatures (shell-style patterns over `kind|mode|where`)
and carries a reason and a link or reproducer. A suppressed divergence is counted and
reported as known, never hidden; an entry nothing matched in a run is listed as unseen
(stale, when the run covered it), so the list does not rot.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomllib

from programs.model import Program

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "reports" / "known_divergences.toml"


class SuppressionsError(ValueError):
    """The suppressions file cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class Suppression:
    id: str
    signatures: tuple[str, ...]  # fnmatch patterns over Divergence.signature
    reason: str
    link: str = ""
    reproducer: str = ""
    jax_versions: str = "*"  # fnmatch pattern over jax.__version__
    when: tuple[str, ...] = ()  # program features that must all hold (see `feature_holds`)

    def matches(self, signature: str, jax_version: str, program: Program | None = None) -> bool:
        if not any(fnmatch.fnmatchcase(signature, pat) for pat in self.signatures):
            return False
        if not fnmatch.fnmatchcase(jax_version, self.jax_versions):
            return False
        return all(program is not None and feature_holds(program, f) for f in self.when)


_FEATURE = re.compile(r"^(?P<kind>[a-z_]+)(?::(?P<param>[a-z_]+)(?:(?P<op><|>|==)(?P<value>-?\w+))?)?$")


def _zero_size(p: Program) -> bool:
    shapes = [x.shape for x in p.inputs] + [tuple(op.p("shape")) for op in p.body if op.kind == "const"]  # type: ignore[arg-type]
    return any(0 in s for s in shapes)


def _in_spec_duplicate_axis(p: Program) -> bool:
    return any(len(s.axes()) != len(set(s.axes())) for s in p.in_specs)


def _collective_axis_not_in_mesh(p: Program) -> bool:
    return any(a not in p.mesh.names for op in p.body for a in (op.p("axes") or ()))  # type: ignore[union-attr]


# program-wide features, by name
PROGRAM_FEATURES = {
    "zero_size": _zero_size,  # an argument or constant has a zero-size dimension
    "in_spec_none": lambda p: any(s.kind == "none" for s in p.in_specs),
    "in_spec_duplicate_axis": _in_spec_duplicate_axis,
    "collective_axis_not_in_mesh": _collective_axis_not_in_mesh,
    "partial_manual": lambda p: p.axis_names is not None and set(p.axis_names) != set(p.mesh.names),
    "check_vma==False": lambda p: not p.check_vma,
    # every manual axis has size 1: jax lowers no manual region for the outer shard_map
    "manual_size_1": lambda p: all(p.mesh.axis_size(a) == 1 for a in p.manual_axes),
    "wrapped_in_cond": lambda p: any(op.p("wrap") == "cond" for op in p.body),
    "wrapped_in_scan": lambda p: any(op.p("wrap") == "scan" for op in p.body),
}


def check_feature(text: str) -> None:
    if text not in PROGRAM_FEATURES and not _FEATURE.match(text):
        raise ValueError(
            f"feature {text!r} is not one of {sorted(PROGRAM_FEATURES)}, 'KIND', 'KIND:PARAM' or "
            "'KIND:PARAM<N' / '>N' / '==V'"
        )


def feature_holds(p: Program, text: str) -> bool:
    """A narrow, structured condition on the program (never on messages): a program-wide
    feature from PROGRAM_FEATURES, 'KIND' (the body
    has an op of that kind), 'KIND:PARAM' (... with that parameter set; the op inside a nested shard_map counts), or
    'KIND:PARAM<N' / 'KIND:PARAM>N' / 'KIND:PARAM==V'. The pseudo-parameter
    'axes_order' is 'unordered' when the op names several mesh axes out of mesh order."""
    if text in PROGRAM_FEATURES:
        return bool(PROGRAM_FEATURES[text](p))
    m = _FEATURE.match(text)
    if m is None:
        return False
    for op in p.all_ops():  # (the op inside a nested shard_map counts too)
        if op.kind != m["kind"]:
            continue
        if m["param"] is None:
            return True
        v = op.p(m["param"])
        if m["param"] == "axes_order":
            axes = list(op.p("axes") or ())  # type: ignore[call-overload]
            v = "ordered" if axes == sorted(axes, key=p.mesh.names.index) else "unordered"
        if v is None:
            continue
        if m["op"] is None:
            return True
        if m["op"] == "==" and str(v) == m["value"]:
            return True
        if m["op"] in "<>" and isinstance(v, int) and not isinstance(v, bool):
            n = int(m["value"])
            if (v < n) if m["op"] == "<" else (v > n):
                return True
    return False


def load(path: Path | None = None) -> list[Suppression]:
    path = path or DEFAULT_PATH
    if not path.exists():
        return []
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise SuppressionsError(f"{path}: {e}") from None
    out = []
    for i, d in enumerate(data.get("divergence", [])):
        where = f"{path}: [[divergence]] #{i + 1}"
        for key in ("id", "reason"):
            if not isinstance(d.get(key), str) or not d[key]:
                raise SuppressionsError(f"{where}: needs a non-empty string '{key}'")
        sigs = d.pop("signatures", None) or ([d.pop("signature")] if "signature" in d else None)
        if not sigs or not all(isinstance(x, str) and x.count("|") == 2 for x in sigs):
            raise SuppressionsError(f"{where} ({d['id']}): needs 'signatures', a list of 'kind|mode|where' patterns")
        unknown = set(d) - {"id", "reason", "link", "reproducer", "jax_versions", "when"}
        if unknown:
            raise SuppressionsError(f"{where}: unknown keys {sorted(unknown)}")
        when = d.get("when", [])
        if not isinstance(when, list):
            raise SuppressionsError(f"{where}: 'when' must be a list of feature strings")
        for w in when:
            try:
                check_feature(w)
            except ValueError as e:
                raise SuppressionsError(f"{where}: {e}") from None
        out.append(Suppression(**{**d, "signatures": tuple(sigs), "when": tuple(when)}))
    return out


def find(sups: list[Suppression], signature: str, jax_version: str, program: Program | None = None) -> Suppression | None:
    return next((s for s in sups if s.matches(signature, jax_version, program)), None)


def find_for(sups: list[Suppression], d: Any, divs: Sequence[Any], jax_version: str, program: Program) -> Suppression | None:
    """The entry that explains divergence `d` of a program whose divergences are `divs`.
    A mode disagreement no entry names is explained when the program's other divergences
    (each mode's own, against the oracle) exist and all are known: two independent known
    bugs in two modes make modes disagree, which says nothing new. It is attributed to
    the entry of the first of them."""
    s = find(sups, d.signature, jax_version, program)
    if s is not None or d.signature.split("|")[0] != "mode_disagreement":
        return s
    own = [x for x in divs if x.signature.split("|")[0] != "mode_disagreement"]
    found = [find(sups, x.signature, jax_version, program) for x in own]
    return found[0] if found and all(f is not None for f in found) else None


def known_trouble(sups: list[Suppression], p: Program, jax_version: str, mode: str) -> bool:
    """Whether the program has every feature of some known divergence's `when` that
    covers a valid program failing or going wrong in `mode` (so jax is likely to do that
    to this program: the value tier runs it alone, not in a batch)."""
    return any(
        s.when
        and fnmatch.fnmatchcase(jax_version, s.jax_versions)
        and any(
            pat.split("|")[0] not in ("missing_error", "wrong_error", "mode_disagreement")  # (need an invalid
            and fnmatch.fnmatchcase(mode, pat.split("|")[1])  # program, or a second mode)
            for pat in s.signatures
        )
        and all(feature_holds(p, f) for f in s.when)
        for s in sups
    )
