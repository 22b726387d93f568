"""What the spec-checker page asks and what it is told, as frozen dataclasses.

`CheckRequest` is the page's form (mesh, argument shapes, in/out specs, axis_names,
check_vma, the body in the emit form). `check` assembles them into emit-form source,
reads it with `programs.source.from_source` (ast, never exec), and answers with the
oracle's view (per-device shapes and varying axes after each op, the verdict with the
failing check) and fixes: with `jax=True` (a worker pool), jax's own message and only the
fixes verified by the oracle and by jax (`harness/report/fixes.py`); without it, the
edits the oracle calls valid, marked as not yet run on jax.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from harness.report.explain import explain_lines
from harness.report.fix_candidates import candidates
from harness.report.fixes import diff_lines, find_fixes, oracle_valid
from oracles.interpreter import trace
from programs.errors import FormError, ProgramFormatError, SourceError
from programs.model import DTYPES
from programs.source import from_source

_MESH = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*(\d+)\s*$")
_ARG = re.compile(r"^\s*(\w+)\s*\[\s*([\d\s,]*)\]\s*$")


@dataclass(frozen=True)
class CheckRequest:
    mesh: str = "x=2"  # "x=2, y=4"
    args: str = "int32[4, 2]"  # one per argument, named a0, a1, ...: "float32[8, 4], int32[4]"
    in_specs: str = "(P('x'),)"
    out_specs: str = "(P('x'),)"
    axis_names: str = ""  # "" for every mesh axis, else e.g. {'x'}
    check_vma: bool = True
    body: str = "def body(a0):\n  v0 = -a0\n  return v0,"
    jax: bool = False


@dataclass(frozen=True)
class FixView:
    title: str
    verified: bool  # False: valid by the oracle, not yet run on jax
    diff: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class CheckResponse:
    ok: bool  # the form could be read
    problem: str = ""  # when not ok: which field, and what is wrong (line and column)
    source: str = ""
    verdict: str = ""  # "valid" or the error kind
    failing_check: str = ""
    why: str = ""
    explain: tuple[str, ...] = ()
    jax: str = ""  # what jax said, when run
    fixes: tuple[FixView, ...] = field(default=())
    why_no_fix: str = ""


def _mesh(text: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    names, sizes = [], []
    for part in [x for x in text.split(",") if x.strip()]:
        m = _MESH.match(part)
        if m is None:
            raise FormError(f"mesh: {part.strip()!r} is not NAME=SIZE; write e.g. x=2, y=4")
        names.append(m.group(1))
        sizes.append(int(m.group(2)))
    if not names:
        raise FormError("mesh: give at least one axis, e.g. x=2")
    return tuple(names), tuple(sizes)


def _args(text: str) -> list[tuple[str, tuple[int, ...]]]:
    out = []
    for part in re.split(r"[;\n]|,(?![^\[]*\])", text):
        if not part.strip():
            continue
        m = _ARG.match(part)
        if m is None or m.group(1) not in DTYPES:
            raise FormError(f"arguments: {part.strip()!r} is not DTYPE[SHAPE] with DTYPE one of {', '.join(DTYPES)}; write e.g. float32[8, 4]")
        out.append((m.group(1), tuple(int(n) for n in m.group(2).replace(" ", "").split(",") if n)))
    return out


def assemble(r: CheckRequest) -> tuple[str, list[tuple[str, int]]]:
    """The form as emit-form source, and for each of its lines the field it came from
    and that line's first column there (the body: every line after the settings)."""
    names, sizes = _mesh(r.mesh)
    lines = [(f"mesh = jax.make_mesh({sizes!r}, {names!r})", "mesh", 0)]
    for i, (dtype, shape) in enumerate(_args(r.args)):
        lines.append((f"a{i} = jax.ShapeDtypeStruct({shape!r}, jnp.{dtype})", "arguments", 0))
    for name, text in (("in_specs", r.in_specs), ("out_specs", r.out_specs), ("axis_names", r.axis_names)):
        if name != "axis_names" or text.strip():
            # one line each: a field written over several lines is joined
            lines.append((f"{name} = {' '.join(text.split()) or '()'}", name, len(name) + 3))
    lines.append((f"check_vma = {bool(r.check_vma)}", "check_vma", 0))
    src = "\n".join([ln for ln, _, _ in lines] + [r.body.rstrip(), ""])
    return src, [(f, off) for _, f, off in lines]


def _field_of(msg: str, where: list[tuple[str, int]]) -> str:
    """A source error re-worded in the form's terms: which field, line and column."""
    m = re.match(r"line (\d+), column (\d+): (.*)", msg)
    if m is None:
        return msg
    line, col, what = int(m.group(1)), int(m.group(2)), m.group(3)
    if line > len(where):
        return f"body line {line - len(where)}, column {col}: {what}"
    field_name, off = where[line - 1]
    return f"{field_name}, column {max(1, col - off)}: {what}"


def check(r: CheckRequest, pool: Any = None) -> CheckResponse:
    try:
        src, where = assemble(r)
    except FormError as e:
        return CheckResponse(False, str(e))
    try:
        p = from_source(src, "<form>")
    except SourceError as e:
        return CheckResponse(False, _field_of(str(e), where), src)
    except ProgramFormatError as e:
        return CheckResponse(False, str(e), src)
    if p.mesh.size > 8:
        return CheckResponse(False, f"mesh: {p.mesh.size} devices; the page's jax has 8 CPU devices", src)
    _, err = trace(p, with_values=False)
    jax_said, observed = "", None
    fixes: list[FixView] = []
    why_none = ""
    if r.jax and pool is not None:
        pool.submit(p, ("abstract",))
        (c,) = pool.drain()
        o = c.observations[0]
        observed = o.value_types
        jv = pool.info.get("jax_version", "?")
        jax_said = f"jax {jv}: " + (f"{o.error_type}: {o.error_message}" if o.raised else "no error (jax.eval_shape ran)")
        if err is not None:
            rep = find_fixes(pool, p, jax_version=str(jv))
            fixes = [FixView(f.title, True, f.diff, tuple(ln for v in f.outputs for ln in v.lines(""))) for f in rep.fixes]
            why_none = rep.why_none
    elif err is not None:
        valid, bad = oracle_valid(candidates(p, err))
        fixes = [FixView(e.title, False, diff_lines(p, e.program), ()) for e in valid[:5]]
        why_none = "" if valid else (f"no single edit makes the oracle call it valid ({bad[0].why})" if bad else "no single edit is proposed")
    return CheckResponse(
        True, "", src,
        "valid" if err is None else err.kind.value,
        "" if err is None else err.kind.value + ("" if err.op_index is None else f" at v{err.op_index}"),
        "" if err is None else err.why,
        tuple(explain_lines(p, observed)), jax_said, tuple(fixes), why_none,
    )
