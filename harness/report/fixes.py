"""`shardfuzz explain --fix`: fixes for an invalid program, each proven twice.

For a program the oracle says jax must reject, `find_fixes` takes the single edits of
`fix_candidates.candidates` (aimed at the failing check) and keeps an edit only when

1. the oracle calls the edited program valid (`oracles.trace`: every check passes), and
2. real jax, in a crash-safe worker (`harness.judge.check.check_in_pool`), runs it in
   `VERIFY_MODES` with outputs that agree with the oracle's (`harness/judge/compare.py`
   finds no divergence: shapes, dtypes, varying axes of every body value, values on
   every device).

Each kept edit is a `VerifiedFix`: a before/after diff of the emitted Python
(`programs.emit.to_python`) and what the outputs become, per device. When no candidate
passes, `FixReport.why_none` says why (none proposed, or each candidate's first failure).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.judge.check import check_in_pool
from harness.judge.known import explain_all
from harness.judge.known_load import load
from harness.report.fix_candidates import Edit, candidates
from oracles.interpreter import predict, trace
from oracles.prediction import OutputPrediction, PredictedError
from programs.body_text import value_names
from programs.emit import to_python
from programs.errors import KnownDivergencesError
from programs.model import Program

VERIFY_MODES = ("abstract", "jit")  # every body value's type, then values on every device
MAX_FIXES = 3  # verified fixes shown per program
MAX_JAX_TRIES = 6  # oracle-valid candidates run through jax, at most


@dataclass(frozen=True)
class OutputView:
    """What one output of a fixed program is (the oracle's prediction, which jax matched)."""

    index: int
    value: str  # the body value's name (v0, a1)
    out_spec: str
    local: str  # per-device type, e.g. int32[2, 2]
    global_: str  # global type
    vma: str
    global_value: str | None  # None when the devices' blocks differ along an unnamed axis
    device_blocks: tuple[tuple[str, str], ...]  # ("x=0, y=1", block) per device

    def lines(self, indent: str = "    ") -> list[str]:
        out = [f"{indent}out[{self.index}] = {self.value}: global {self.global_} = per-device {self.local} "
               f"concatenated by out_spec {self.out_spec}; varies over {self.vma}"]
        if self.global_value is not None:
            out.append(f"{indent}  value: {self.global_value}")
        for where, block in self.device_blocks:
            out.append(f"{indent}  device {where}: {block}")
        return out


@dataclass(frozen=True)
class VerifiedFix:
    """An edit the oracle calls valid and jax ran in `modes` agreeing with the oracle."""

    title: str
    program: Program
    diff: tuple[str, ...]  # unified diff of to_python(before) -> to_python(after)
    outputs: tuple[OutputView, ...]
    modes: tuple[str, ...]
    jax_version: str

    def lines(self) -> list[str]:
        out = [f"  [verified] {self.title}", f"    (oracle: valid; jax {self.jax_version} ran it in {', '.join(self.modes)}: outputs agree)"]
        out += ["    " + d for d in self.diff]
        out.append("    outputs become:")
        for o in self.outputs:
            out += o.lines("      ")
        return out


@dataclass(frozen=True)
class Rejected:
    """A candidate that did not pass: by the oracle (still invalid) or by jax (diverged)."""

    title: str
    stage: str  # "oracle" | "jax"
    why: str


@dataclass(frozen=True)
class FixReport:
    program: Program
    error: PredictedError | None  # None: the program is valid, nothing to fix
    fixes: tuple[VerifiedFix, ...]
    rejected: tuple[Rejected, ...]
    oracle_valid: int  # candidates the oracle called valid
    proposed: int  # candidates proposed
    why_none: str  # when there is no fix: why

    def lines(self) -> list[str]:
        if self.error is None:
            return ["fixes: none needed (the oracle calls the program valid)"]
        out = [f"fixes for {self.error.kind.value} ({self.proposed} edits proposed, {self.oracle_valid} valid by the oracle, "
               f"{len(self.fixes)} verified by jax):"]
        for f in self.fixes:
            out += f.lines()
        if not self.fixes:
            out.append(f"  no verified fix: {self.why_none}")
        return out


def _type(dtype: str, shape: tuple[int, ...]) -> str:
    return f"{dtype}{list(shape)}"


def _vma(v: frozenset[str] | None) -> str:
    if v is None:
        return "(untracked: check_vma=False)"
    return "{" + ", ".join(sorted(v)) + "}" if v else "{} (invariant)"


def _arr(a: np.ndarray) -> str:
    return np.array2string(np.asarray(a), threshold=16, edgeitems=2, separator=", ").replace("\n", "")


def output_views(p: Program, outs: tuple[OutputPrediction, ...]) -> tuple[OutputView, ...]:
    names = value_names(p)
    views = []
    for o, v, s in zip(outs, p.outputs, p.out_specs):
        blocks: list[tuple[str, str]] = []
        if o.device_values is not None and p.mesh.size <= 8:
            for c in p.mesh.coords():
                where = ", ".join(f"{a}={i}" for a, i in zip(p.mesh.names, c))
                blocks.append((where, _arr(o.device_values[c])))
        views.append(OutputView(o.index, names[v], repr(s), _type(o.dtype, o.local_shape), _type(o.dtype, o.global_shape),
                                _vma(o.vma), None if o.global_value is None else _arr(o.global_value), tuple(blocks)))
    return tuple(views)


def diff_lines(before: Program, after: Program) -> tuple[str, ...]:
    """The before/after diff of the emitted Python (one line of context)."""
    a, b = to_python(before).splitlines(), to_python(after).splitlines()
    return tuple(difflib.unified_diff(a, b, "before.py", "after.py", n=1, lineterm=""))


def oracle_valid(edits: list[Edit]) -> tuple[list[Edit], list[Rejected]]:
    ok, bad = [], []
    for e in edits:
        _, err = trace(e.program, with_values=False)
        if err is None:
            ok.append(e)
        else:
            bad.append(Rejected(e.title, "oracle", f"still invalid: {err}"))
    return ok, bad


def verify(pool: Any, p: Program, e: Edit, modes: tuple[str, ...] = VERIFY_MODES, jax_version: str = "?") -> VerifiedFix | Rejected:
    """Run one oracle-valid edit through jax; a VerifiedFix when nothing diverges."""
    res = check_in_pool(pool, e.program, modes)
    bad = [o for o in res.observations if o.status in ("crash", "timeout", "unsupported")]
    if bad:
        return Rejected(e.title, "jax", f"{bad[0].mode}: {bad[0].status}: {bad[0].error_message[:200]}")
    if res.divergences:
        d = res.divergences[0]
        return Rejected(e.title, "jax", f"jax diverges from the oracle{_known(res, jax_version)}: {d.signature}: {d.message[:300]}")
    pred = predict(e.program)
    return VerifiedFix(e.title, e.program, diff_lines(p, e.program), output_views(e.program, pred.outputs), modes, jax_version)


def _known(res: Any, jax_version: str) -> str:
    """' (known jax bug ID)' when a known divergence explains the first divergence: the
    edited program still holds that bug, which the edit did not cause."""
    try:
        x = explain_all(load(), res.divergences[:1], res.program, res.prediction, jax_version)
    except KnownDivergencesError:
        return ""
    return f" (known jax bug {x[0].entry.id}, elsewhere in the program)" if x and x[0].entry is not None else ""


def find_fixes(pool: Any, p: Program, max_fixes: int = MAX_FIXES, jax_version: str = "?",
               modes: tuple[str, ...] = VERIFY_MODES, log: Any = None) -> FixReport:
    """Propose, filter by the oracle, verify by jax (in `pool`, a harness.run.pool.Pool)."""
    _, err = trace(p, with_values=False)
    if err is None:
        return FixReport(p, None, (), (), 0, 0, "")
    if jax_version == "?" and pool is not None:
        jax_version = str(pool.info.get("jax_version", "?"))
    edits = candidates(p, err)
    valid, rejected = oracle_valid(edits)
    fixes: list[VerifiedFix] = []
    tried = 0
    for e in valid:
        if len(fixes) >= max_fixes or tried >= MAX_JAX_TRIES:
            break
        tried += 1
        if log is not None:
            log(f"  checking with jax: {e.title}")
        r = verify(pool, p, e, modes, jax_version)
        if isinstance(r, VerifiedFix):
            fixes.append(r)
        else:
            rejected.append(r)
    why = ""
    if not fixes:
        if not edits:
            why = f"no single edit is proposed for a {err.kind.value} error ({err.why})"
        elif not valid:
            why = f"none of the {len(edits)} proposed edits makes the oracle call the program valid; first: {rejected[0].title}: {rejected[0].why}"
        else:
            jax_bad = [r for r in rejected if r.stage == "jax"]
            why = f"{len(valid)} edits are valid by the oracle, but jax did not confirm any of those tried; first: {jax_bad[0].title}: {jax_bad[0].why}"
    return FixReport(p, err, tuple(fixes), tuple(rejected), len(valid), len(edits), why)

