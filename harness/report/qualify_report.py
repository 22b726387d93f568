"""The qualify reports: `qualify.junit.xml` (one testsuite per jax version, one testcase
per case) and `qualify.html` (the version table, what changed from the first version to
the last, every case's verdict), from the qualify.json document
(harness/campaign/qualify.py), with the same escaping and atomic writes as the fuzz
reports (harness/report/markup.py)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from harness.report.console import VERBOSE
from harness.report.markup import clean as _clean
from harness.report.markup import esc as _e

# error: shardfuzz could not judge the case there (its oracle or judge crashed: a shardfuzz
# bug, never a jax verdict; the traceback is in REPORT/internal-errors/)
VERDICTS = ("pass", "fail", "known", "unsupported", "error")


def junit_xml(doc: dict[str, Any]) -> str:
    """One testsuite per jax version, one testcase per case: a failure for fail, skipped
    for known and unsupported (with why), nothing for pass."""
    root = ET.Element("testsuites", name="shardfuzz qualify")
    ranges = {r["case"]: r["text"] for r in doc.get("ranges") or []}
    for v in doc["versions"]:
        counts = v["counts"]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=_clean(f"qualify {v['label']}"),
            tests=str(sum(counts.values())),
            failures=str(counts["fail"]),
            errors=str(counts.get("error", 0)),
            skipped=str(counts["known"] + counts["unsupported"]),
            time=str(v.get("elapsed_s", 0)),
        )
        props = ET.SubElement(suite, "properties")
        for key in ("jax_version", "python"):
            ET.SubElement(props, "property", name=key, value=_clean(v[key]))
        classname = "qualify.jax_" + re.sub(r"\W", "_", v["label"].removeprefix("jax "))
        for c in doc["cases"]:
            cell = c["verdicts"].get(v["label"])
            if cell is None:
                continue
            tc = ET.SubElement(suite, "testcase", classname=classname, name=_clean(c["case"]))
            if cell["verdict"] == "fail":
                f = ET.SubElement(tc, "failure", message=_clean(", ".join(cell["signatures"])), type="divergence")
                span = ranges.get(c["case"], "")
                f.text = _clean("\n".join([cell["message"], f"reason: {c['reason']}", f"case: {cell['case_file']}",
                                            f"range: {span}"]))
            elif cell["verdict"] == "known":
                ET.SubElement(tc, "skipped", message=_clean("known: " + ", ".join(cell["known"])))
            elif cell["verdict"] == "unsupported":
                ET.SubElement(tc, "skipped", message=_clean("unsupported: " + "; ".join(cell["unsupported"])[:500]))
            elif cell["verdict"] == "error":  # (shardfuzz's own crash: JUnit's error, not a failure)
                e = ET.SubElement(tc, "error", message=_clean(cell["message"][:500]), type="shardfuzz-internal-error")
                e.text = _clean(cell["case_file"])
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


_CSS = """
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1f2328}
main{max-width:1280px;margin:0 auto;padding:18px 28px 60px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:30px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
.sub{color:#57606a}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;font-size:12.5px}
table{border-collapse:collapse;margin:6px 0 14px}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
td.v{text-align:center;font-weight:600;white-space:nowrap}
.pass{background:#dafbe1;color:#1a7f37}.fail{background:#ffebe9;color:#c62828}
.known{background:#fff8c5;color:#7d5e00}.unsupported{background:#eef1f4;color:#57606a}
.error{background:#f3e8ff;color:#6f42c1}
td.num{text-align:right}
.change{border:1px solid #d0d7de;border-left:6px solid #c62828;border-radius:6px;margin:10px 0;padding:8px 14px}
.change.fix{border-left-color:#1a7f37}.change.other{border-left-color:#8c959f}
.why{color:#57606a}
pre{background:#f6f8fa;border:1px solid #d0d7de;border-radius:4px;padding:6px 8px;white-space:pre-wrap;word-break:break-word;font-size:12px;margin:4px 0}
"""


def html_page(doc: dict[str, Any]) -> str:
    versions = doc["versions"]
    labels = [v["label"] for v in versions]
    out = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>shardfuzz qualify: {_e(', '.join(labels))}</title><style>{_CSS}</style></head><body><main>",
        "<h1>shardfuzz release qualification</h1>",
        f"<div class='sub'>{len(doc['cases'])} cases from {_e(doc.get('corpus') or '-')}"
        + (f" and {doc['fuzz']['examples']} drawn programs (seed {doc['fuzz']['seed']})" if doc.get("fuzz") else "")
        + f"; modes {_e(', '.join(doc['modes']))}; first {_e(doc['first'])}, last {_e(doc['last'])}: "
        + ("<b class='fail'>regression</b>" if doc["exit_code"] else "no regression")
        + "</div>",
        "<h2>Versions</h2><table><tr><th>version</th><th>python</th>"
        + "".join(f"<th>{v}</th>" for v in VERDICTS) + "<th>time</th></tr>",
    ]
    for v in versions:
        out.append(
            f"<tr><td>{_e(v['label'])}</td><td class='mono'>{_e(v['python'])}</td>"
            + "".join(f"<td class='num {k}'>{v['counts'].get(k, 0)}</td>" for k in VERDICTS)
            + f"<td class='num'>{v.get('elapsed_s', 0):.0f}s</td></tr>"
        )
    out.append("</table>")
    out.append(_changes_html(doc))
    out.append(_ranges_html(doc))
    out.append("<h2>Every case</h2><table><tr><th>case</th>" + "".join(f"<th>{_e(x)}</th>" for x in labels) + "<th>reason</th></tr>")
    for c in doc["cases"]:
        row = [f"<tr><td class='mono'>{_e(c['case'])}</td>"]
        for x in labels:
            cell = c["verdicts"].get(x)
            if cell is None:
                row.append("<td></td>")
                continue
            tip = "; ".join(cell["signatures"] or cell["known"] or cell["unsupported"])
            row.append(f"<td class='v {cell['verdict']}' title='{_e(tip)}'>{cell['verdict']}</td>")
        row.append(f"<td class='why'>{_e(c['reason'])}</td></tr>")
        out.append("".join(row))
    out.append("</table></main></body></html>")
    return "\n".join(out) + "\n"


def _changes_html(doc: dict[str, Any]) -> str:
    ch = doc["changes"]
    out = [f"<h2>What changed from {_e(doc['first'])} to {_e(doc['last'])}</h2>"]
    if doc["first"] == doc["last"]:
        out.append("<p class='sub'>One version only: nothing to compare.</p>")
        return "\n".join(out)
    for key, title, cls in (
        ("regressions", "Regressions (pass on the first, fail on the last)", ""),
        ("fixes", "Fixes (fail on the first, pass or known on the last)", "fix"),
        ("other", "Other changes (known or unsupported on one side)", "other"),
    ):
        rows = ch[key]
        out.append(f"<h3>{title}: {len(rows)}</h3>")
        for r in rows:
            out.append(
                f"<div class='change {cls}'><b class='mono'>{_e(r['case'])}</b>: "
                f"<span class='{r['first']}'>{r['first']}</span> &rarr; <span class='{r['last']}'>{r['last']}</span>"
                f"<div class='why'>{_e(r['reason'])}</div>"
                + (f"<div class='mono'>{_e(', '.join(r['signatures']))}</div>" if r["signatures"] else "")
                + (f"<pre>{_e(r['message'])}</pre>" if r["message"] else "")
                + "</div>"
            )
    return "\n".join(out)




def table_lines(doc: dict[str, Any]) -> list[str]:
    w = max(len(v["label"]) for v in doc["versions"])
    lines = [f"{'version':<{w}}  " + "  ".join(f"{v:>11}" for v in VERDICTS)]
    for v in doc["versions"]:
        lines.append(f"{v['label']:<{w}}  " + "  ".join(f"{v['counts'].get(k, 0):>11}" for k in VERDICTS))
    return lines


def _ranges_html(doc: dict[str, Any]) -> str:
    """When each failing case's bug came and went, in version order."""
    rows = doc.get("ranges") or []
    out = [f"<h2>When each failure came and went ({len(rows)})</h2>"]
    if not rows:
        out.append("<p class='sub'>No case fails on any version.</p>")
        return "\n".join(out)
    out.append("<table><tr><th>case</th><th>range</th><th>last version</th></tr>")
    for r in rows:
        last = "<b class='fail'>fails after passing earlier</b>" if r["last_fails_after_pass"] else ""
        out.append(f"<tr><td class='mono'>{_e(r['case'])}</td><td>{_e(r['text'])}</td><td>{last}</td></tr>")
    out.append("</table>")
    return "\n".join(out)


def print_qualify(doc: dict[str, Any], report: Path, verbosity: int = 0) -> None:
    """The console summary of a qualification: the verdict table, the regressions, and
    when each failure came and went (by default only the cases that fail on the last
    version after passing on an earlier one; -v every failing case)."""
    print("\n".join(table_lines(doc)))
    ch = doc["changes"]
    if len(doc["versions"]) > 1:
        print(f"{doc['first']} -> {doc['last']}: {len(ch['regressions'])} regressions, {len(ch['fixes'])} fixes, "
              f"{len(ch['other'])} other changes")
    for r in ch["regressions"]:
        print(f"  REGRESSION {r['case']}: {', '.join(r['signatures'])}")
    shown = [r for r in doc["ranges"] if verbosity >= VERBOSE or r["last_fails_after_pass"]]
    for r in shown:
        print(f"  {'LAST FAILS ' if r['last_fails_after_pass'] else ''}{r['case']}: {r['text']}")
    if len(shown) < len(doc["ranges"]):
        print(f"  {len(doc['ranges']) - len(shown)} other case(s) fail on some version (-v says when each failure "
              f"came and went; so does {report / 'qualify.html'})")
    for col in doc["versions"]:
        if col.get("entries_fixed"):
            print(f"  {col['label']}: known entries fixed there (their own case passes): {', '.join(col['entries_fixed'])}")
        fails = [c["case"] for c in doc["cases"] if c["verdicts"].get(col["label"], {}).get("verdict") == "fail"]
        if fails:
            print(f"  {col['label']} fails {len(fails)}: {', '.join(fails[:8])}{' ...' if len(fails) > 8 else ''}")
        errors = [c for c in doc["cases"] if c["verdicts"].get(col["label"], {}).get("verdict") == "error"]
        if errors:
            print(f"  {col['label']}: shardfuzz could not judge {len(errors)} case(s) (a shardfuzz bug; "
                  f"tracebacks under {report / 'internal-errors'}): {', '.join(c['case'] for c in errors[:8])}"
                  f"{' ...' if len(errors) > 8 else ''}")
    print(f"  report: {report / 'qualify.html'}")
