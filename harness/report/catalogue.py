"""The error catalogue's pages (`shardfuzz errors --out DIR`): one page per error kind the
oracle predicts, from the `Catalogue` that harness/campaign/catalogue.py builds by running
each example on jax.

Each page (Markdown and HTML with no external assets) holds jax's message, what it means
in terms of specs and varying axes (`MEANINGS`), the program (emit form) with the oracle's
op-by-op explanation, and the verified fixes with their outputs. `catalogue.json` records
each message; `previous_messages` reads it back, so regenerating into the same DIR against
another jax says which messages changed since the previous catalogue.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from harness.report.explain import explain_lines
from harness.report.fixes import FixReport
from harness.report.markup import esc, write
from oracles.prediction import ErrorKind
from programs.emit import to_python
from programs.model import Program

CATALOGUE_SCHEMA = 1

# What each error means, in terms of specs and varying axes (jax 0.10.2's
# docs/notebooks/shard_map.md "API Specification" and jax/_src/shard_map.py checks).
MEANINGS: dict[ErrorKind, str] = {
    ErrorKind.SPEC_TYPE: (
        "Every entry of `in_specs` and `out_specs` must be a `jax.sharding.PartitionSpec`, written `P(...)`. "
        "A bare string `'x'` or a plain tuple `('x', None)` is not one, and jax does not guess what it meant. "
        "`P()` is a replicated value: no dimension is split."),
    ErrorKind.IN_SPECS_STRUCTURE: (
        "`in_specs` must have the pytree structure of the arguments: one spec per positional argument. "
        "Here the number of specs and the number of arguments differ."),
    ErrorKind.OUT_SPECS_STRUCTURE: (
        "`out_specs` must have the pytree structure of what the body returns: one spec per output. "
        "`None` is an empty pytree, not a spec. jax checks this after tracing the body."),
    ErrorKind.SPEC_UNKNOWN_AXIS: (
        "A spec may name only the mesh axes that are manual in this `shard_map`: every mesh axis by default, "
        "or those in `axis_names`. A name the mesh does not have, or an axis left automatic, is refused."),
    ErrorKind.SPEC_DUPLICATE_AXIS: (
        "A spec maps each mesh axis to at most one dimension: one mesh axis splits (or concatenates) one dimension. "
        "Naming it twice, on two dimensions or twice in one tuple, would split the data twice over the same devices."),
    ErrorKind.IN_SPEC_RANK: (
        "An `in_spec` has one entry per leading dimension of its argument, so it cannot be longer than the "
        "argument's rank (trailing dimensions it leaves out are not split)."),
    ErrorKind.IN_SPEC_DIVISIBILITY: (
        "`in_specs` split: a dimension named with axes `(a, b, ...)` is cut into `size(a) * size(b) * ...` equal "
        "blocks, one per device along those axes, so its size must be divisible by that product. Each device then "
        "sees a block of size `n / product` on that dimension."),
    ErrorKind.UNBOUND_AXIS: (
        "A collective (`psum`, `all_gather`, `ppermute`, `axis_index`, ...) names mesh axes; inside the body only "
        "the manual axes are bound. An axis the mesh does not have, or one left out of `axis_names` (automatic), "
        "is unbound there."),
    ErrorKind.COLLECTIVE_VMA: (
        "With `check_vma=True` every value carries its varying manual axes (vma): the axes along which its "
        "per-device blocks may differ. An argument varies along the axes its `in_spec` names. `psum` and "
        "`psum_scatter` need the operand to vary over all of the axes they reduce or none of them (an invariant "
        "operand is first made varying, then summed); `pcast(to='varying')` needs an operand that does not vary "
        "over those axes yet. Make the operand varying first (`pcast`) or reduce only over the axes it varies along."),
    ErrorKind.COLLECTIVE_SHAPE: (
        "A collective that splits a dimension across the group (`psum_scatter`, `all_to_all`, tiled) needs that "
        "per-device dimension to be divisible by the group size (the product of the named axes' sizes); untiled "
        "`psum_scatter` and `pswapaxes` need it equal to the group size. Shapes here are per-device shapes."),
    ErrorKind.COLLECTIVE_PARAM: (
        "A collective's parameter is out of range: a dimension index beyond the operand's rank, a `ppermute` perm "
        "that repeats a source or a destination or leaves `0..n-1`, a `pshuffle` perm that is not a permutation, or "
        "`axis_index_groups` that do not cover `0..n-1` exactly once (n: the group size)."),
    ErrorKind.UNSUPPORTED: (
        "jax raises NotImplementedError: `psum` with `axis_index_groups` under `check_vma=True` is not implemented "
        "(the varying-axes types cannot describe a reduction over part of an axis). Reduce over the whole axis, or "
        "pass `check_vma=False`."),
    ErrorKind.LOCAL_SHAPE: (
        "A local op (`+`, `*`, `jnp.transpose`, `jnp.sum`, ...) works on each device's block, not on the global "
        "array: its operands have per-device shapes (the global shape divided by the axes the `in_spec` names), "
        "and those must fit the op's NumPy rule (broadcasting, a valid perm or axis)."),
    ErrorKind.DTYPE: (
        "A `jax.lax` op accepts only some dtypes: `lax.sub` and `lax.neg` of bool, and `psum_scatter` of bool "
        "(an `add` underneath), raise TypeError 'does not accept dtype bool'. Nothing about specs or varying "
        "axes: the same op fails outside shard_map. Cast the operand (`x.astype(jnp.int32)`) or use a logical op."),
    ErrorKind.TRANSFORM: (
        "`jax.grad`, `jax.jvp` and `jax.vjp` differentiate float values only: `jax.grad` of an integer operand raises "
        "TypeError 'grad requires real- or complex-valued inputs', and `jax.jvp` of one refuses a float tangent (an "
        "integer primal's tangent is float0). A `jax.custom_vjp` function defines reverse mode only: `jax.jvp` of it "
        "raises 'can't apply forward-mode autodiff (jvp) to a custom_vjp function'. Nothing about specs: the same "
        "calls fail outside shard_map. Differentiate a float cast, or give the function a `custom_jvp` rule."),
    ErrorKind.OUT_SPEC_RANK: (
        "`out_specs` concatenate: an `out_spec` has one entry per dimension of the per-device output and cannot "
        "be longer than its rank. A rank-0 output has no dimension to concatenate along: its out_spec is `P()`."),
    ErrorKind.OUT_SPEC_REPLICATION: (
        "An axis that an `out_spec` leaves out promises that the output is the same on every device along it "
        "(replicated). With `check_vma=True` jax checks that promise statically: every axis the output varies along "
        "(its vma) must be named in its `out_spec`. So this error means the output *varies* along an axis the "
        "`out_spec` leaves out, not that a replicated value was given an axis. Name the axis in the `out_spec` "
        "(the blocks are concatenated along it), reduce over it (`psum` or `pmean` make it invariant), or pass "
        "`check_vma=False` (then jax returns one device's block, unchecked)."),
    ErrorKind.IN_SPEC_ARG_SHARDING: (
        "Under a mesh whose axes are all `Explicit`, with every axis manual, the sharding is part of each "
        "argument's type, and each `in_spec` must be exactly the argument's sharding: shard_map does not reshard "
        "for you. A NumPy array (or an unsharded jax array) is `P()`, so an `in_spec` that splits it is refused. "
        "Reshard the argument first (`jax.sharding.reshard(a, P('x'))` under `jax.set_mesh`), or leave `in_specs` "
        "out to take them from the arguments."),
    ErrorKind.UNREDUCED_TYPE: (
        "`unreduced` and `reduced` axes are part of a value's type: an unreduced value is the sum of its "
        "per-device parts, a reduced one is replicated and typed as the transpose of that sum. A spec may name "
        "them (`P(None, unreduced={'x'})`) only in a full-manual shard_map over `Explicit` axes, and an "
        "`out_spec` must name exactly the output's; `add` needs both operands unreduced over the same axes. "
        "Make the axes `AxisType.Explicit`, match the spec to the value (`jax.typeof(v)` shows `{U:x}` / `{R:x}`), "
        "or `psum` the unreduced value first."),
}


@dataclass(frozen=True)
class Page:
    """One error kind's page: its example as jax ran it, and the verified fixes."""

    kind: ErrorKind
    case: str  # the curated case's file name
    program: Program
    why: str  # the oracle's reason for this program
    error_type: str  # what jax raised, captured by running it
    message: str
    as_predicted: bool  # jax raised the predicted kind, naming the facts (compare.py)
    judge: str  # the judge's verdict when not as predicted
    fixes: FixReport
    previous: tuple[str, str] | None  # (jax version, message) of the previous catalogue, when it differs


@dataclass(frozen=True)
class Catalogue:
    """The catalogue as built (harness/campaign/catalogue.py): every page, the jax it ran
    on, and the jax of the catalogue that was in the directory before."""

    jax_version: str
    python: str
    pages: tuple[Page, ...]
    previous_version: str | None  # the jax of the catalogue that was in DIR before
    elapsed_s: float

    @property
    def changed(self) -> tuple[Page, ...]:
        return tuple(pg for pg in self.pages if pg.previous is not None)


def previous_messages(out: Path) -> tuple[str | None, dict[str, str]]:
    """The jax version and the message per error kind of the catalogue already in `out`
    (catalogue.json), or (None, {}) when there is none or it cannot be read."""
    f = out / "catalogue.json"
    if not f.exists():
        return None, {}
    try:
        doc = json.loads(f.read_text())
        return str(doc["jax_version"]), {k: str(v["message"]) for k, v in doc["kinds"].items()}
    except (ValueError, KeyError, TypeError):
        return None, {}


# ---- rendering -------------------------------------------------------------------


def _fix_md(pg: Page) -> list[str]:
    out = []
    if not pg.fixes.fixes:
        out.append(f"No verified fix: {pg.fixes.why_none}")
    for f in pg.fixes.fixes:
        out += [f"### verified: {f.title}", "",
                f"The oracle calls the edited program valid, and jax {f.jax_version} ran it ({', '.join(f.modes)}) "
                "with outputs that agree with the oracle's.", "", "```diff", *f.diff, "```", "", "Outputs:", "", "```"]
        for o in f.outputs:
            out += o.lines("")
        out += ["```", ""]
    return out


def page_markdown(pg: Page, jv: str) -> str:
    lines = [
        f"# `{pg.kind.value}`", "",
        MEANINGS[pg.kind], "",
        f"## What jax {jv} says", "",
        f"Captured by running `{pg.case}` (abstract mode) while this page was generated:", "",
        "```", f"{pg.error_type}: {pg.message}", "```", "",
    ]
    if not pg.as_predicted:
        lines += [f"**Not the error the oracle predicts**: {pg.judge}", ""]
    if pg.previous is not None:
        lines += [f"**Changed since jax {pg.previous[0]}**, which said:", "", "```", pg.previous[1], "```", ""]
    lines += [
        "## Why, for this program", "", f"The oracle: {pg.why}", "",
        "## The smallest program that raises it", "",
        "```python", to_python(pg.program, title=f"raises {pg.kind.value}"), "```", "",
        "Op by op (per-device shapes and varying axes):", "", "```", *explain_lines(pg.program), "```", "",
        "## Verified fixes", "", *_fix_md(pg),
    ]
    return "\n".join(lines) + "\n"


_CSS = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em;line-height:1.4}"
        "pre{background:#f4f4f4;padding:.6em;overflow-x:auto}.add{color:#064}.del{color:#900}"
        ".bad{color:#900;font-weight:bold}code{background:#f4f4f4}")


def _html_doc(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{esc(title)}</title>"
            f"<style>{_CSS}</style></head><body>\n{body}\n</body></html>\n")


def _md_inline(text: str) -> str:
    """`code` spans and *emphasis* of the MEANINGS text, escaped."""
    parts = esc(text).split("`")
    return "".join(f"<code>{x}</code>" if i % 2 else x.replace("*", "") for i, x in enumerate(parts))


def _pre(lines: list[str] | tuple[str, ...], diff: bool = False) -> str:
    def one(ln: str) -> str:
        if diff and ln.startswith("+") and not ln.startswith("+++"):
            return f'<span class="add">{esc(ln)}</span>'
        if diff and ln.startswith("-") and not ln.startswith("---"):
            return f'<span class="del">{esc(ln)}</span>'
        return esc(ln)

    return "<pre>" + "\n".join(one(ln) for ln in lines) + "</pre>"


def page_html(pg: Page, jv: str) -> str:
    h = [f"<p><a href=\"index.html\">all error kinds</a></p><h1><code>{esc(pg.kind.value)}</code></h1>",
         f"<p>{_md_inline(MEANINGS[pg.kind])}</p>",
         f"<h2>What jax {esc(jv)} says</h2><p>Captured by running <code>{esc(pg.case)}</code> (abstract mode) while this page was generated:</p>",
         _pre([f"{pg.error_type}: {pg.message}"])]
    if not pg.as_predicted:
        h.append(f'<p class="bad">Not the error the oracle predicts: {esc(pg.judge)}</p>')
    if pg.previous is not None:
        h.append(f'<p class="bad">Changed since jax {esc(pg.previous[0])}, which said:</p>' + _pre([pg.previous[1]]))
    h += [f"<h2>Why, for this program</h2><p>The oracle: {esc(pg.why)}</p>",
          "<h2>The smallest program that raises it</h2>", _pre(to_python(pg.program, title=f"raises {pg.kind.value}").splitlines()),
          "<p>Op by op (per-device shapes and varying axes):</p>", _pre(explain_lines(pg.program)),
          "<h2>Verified fixes</h2>"]
    if not pg.fixes.fixes:
        h.append(f"<p>No verified fix: {esc(pg.fixes.why_none)}</p>")
    for f in pg.fixes.fixes:
        h += [f'<h3 class="fix">verified: {esc(f.title)}</h3>',
              f"<p>The oracle calls the edited program valid, and jax {esc(f.jax_version)} ran it ({esc(', '.join(f.modes))}) with outputs that agree with the oracle's.</p>",
              _pre(f.diff, diff=True), "<p>Outputs:</p>", _pre([ln for o in f.outputs for ln in o.lines("")])]
    return _html_doc(f"shard_map error: {pg.kind.value}", "\n".join(h))


def _index_rows(cat: Catalogue) -> list[tuple[str, str, str, int, bool]]:
    return [(pg.kind.value, pg.error_type, (pg.message.strip().splitlines() or [""])[0][:160], len(pg.fixes.fixes), pg.previous is not None)
            for pg in cat.pages]


def index_markdown(cat: Catalogue) -> str:
    lines = [f"# shard_map errors on jax {cat.jax_version}", "",
             f"One page per error kind the shardfuzz oracle predicts; every example and every fix was run on jax "
             f"{cat.jax_version} ({cat.python}) when this catalogue was generated.", ""]
    if cat.previous_version is not None:
        ch = ", ".join(pg.kind.value for pg in cat.changed) or "none"
        lines += [f"Messages changed since the previous catalogue (jax {cat.previous_version}): {ch}", ""]
    lines += ["| error kind | jax raises | message (first line) | verified fixes | changed |", "|---|---|---|---|---|"]
    for kind, et, first, n, changed in _index_rows(cat):
        lines.append(f"| [{kind}]({kind}.md) | {et} | {first.replace('|', '/')} | {n} | {'yes' if changed else ''} |")
    return "\n".join(lines) + "\n"


def index_html(cat: Catalogue) -> str:
    h = [f"<h1>shard_map errors on jax {esc(cat.jax_version)}</h1>",
         f"<p>One page per error kind the shardfuzz oracle predicts; every example and every fix was run on jax {esc(cat.jax_version)} when this catalogue was generated.</p>"]
    if cat.previous_version is not None:
        ch = ", ".join(pg.kind.value for pg in cat.changed) or "none"
        h.append(f"<p>Messages changed since the previous catalogue (jax {esc(cat.previous_version)}): {esc(ch)}</p>")
    h.append("<table><tr><th>error kind</th><th>jax raises</th><th>message (first line)</th><th>verified fixes</th><th>changed</th></tr>")
    for kind, et, first, n, changed in _index_rows(cat):
        h.append(f'<tr><td><a href="{esc(kind)}.html">{esc(kind)}</a></td><td>{esc(et)}</td><td>{esc(first)}</td><td>{n}</td><td>{"yes" if changed else ""}</td></tr>')
    h.append("</table>")
    return _html_doc(f"shard_map errors on jax {cat.jax_version}", "\n".join(h))


def write_catalogue(cat: Catalogue, out: Path) -> list[Path]:
    written = []
    for pg in cat.pages:
        for suffix, text in ((".md", page_markdown(pg, cat.jax_version)), (".html", page_html(pg, cat.jax_version))):
            write(out / f"{pg.kind.value}{suffix}", text)
            written.append(out / f"{pg.kind.value}{suffix}")
    write(out / "index.md", index_markdown(cat))
    write(out / "index.html", index_html(cat))
    doc = {"schema": CATALOGUE_SCHEMA, "jax_version": cat.jax_version, "python": cat.python,
           "kinds": {pg.kind.value: {"case": pg.case, "error_type": pg.error_type, "message": pg.message,
                                     "as_predicted": pg.as_predicted, "verified_fixes": len(pg.fixes.fixes)} for pg in cat.pages}}
    write(out / "catalogue.json", json.dumps(doc, indent=1) + "\n")
    return written + [out / "index.md", out / "index.html", out / "catalogue.json"]


