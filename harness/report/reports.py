"""Run reports: `junit.xml` for CI systems and `index.html` (harness/report/html.py) for
the person reading a run, both rendered from the run's `RunSummary`
(harness/report/summary.py), whose `Counts` are the only definition of every count."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from harness.report.html import html_page
from harness.report.markup import clean as _clean
from harness.report.markup import write as _write
from harness.report.summary import RunSummary

__all__ = ["html_page", "junit_xml", "write_reports"]


def write_reports(summary: RunSummary, report_dir: Path) -> tuple[Path, Path]:
    """Writes report_dir/junit.xml and report_dir/index.html; returns their paths."""
    report_dir = Path(report_dir)
    junit, page = report_dir / "junit.xml", report_dir / "index.html"
    _write(junit, junit_xml(summary))
    _write(page, html_page(summary, report_dir))
    return junit, page


# ---------------------------------------------------------------------------------- JUnit


def junit_xml(summary: RunSummary) -> str:
    """One testsuite: a failing testcase per unexplained bucket (new or still failing), a
    skipped one per known bucket and per policy bucket (its skip message says `policy:`,
    jax's choice and no bug), a passing one per slow or flaky run (a crash or timeout that
    did not happen again alone: not a failure) and a passing 'run' testcase, so CI shows new
    divergences as test failures. Test names are unique: an explained bucket's name names
    its entry, a slow or flaky run's its mode and program."""
    c = summary.counts
    root = ET.Element("testsuites")
    suite = ET.SubElement(
        root, "testsuite", name="shardfuzz", tests=str(len(summary.buckets) + len(summary.reruns) + 1),
        failures=str(c.failing_buckets),
        errors="0", skipped=str(c.known_buckets + c.policy_buckets), time=str(summary.elapsed_s),
    )
    props = ET.SubElement(suite, "properties")
    for key, value in (("jax_version", summary.jax_version), ("seed", summary.seed), ("modes", ",".join(summary.modes)),
                       ("programs_run", c.programs_run), ("failing_programs", c.failing_programs),
                       ("divergences", c.divergences), ("suppressed", c.suppressed), ("policy", c.policy),
                       ("slow", c.slow), ("flaky", c.flaky), ("not_done", c.not_done)):
        ET.SubElement(props, "property", name=key, value=_clean(value))
    if summary.cells:
        cov = summary.cell_coverage
        for key, value in (("cell_mode_pairs_checked", cov.checked), ("cell_mode_pairs_reachable", cov.reachable),
                           ("cell_mode_pairs_blocked", cov.blocked)):
            ET.SubElement(props, "property", name=key, value=_clean(value))
    for b in summary.buckets:
        label = "policy" if b.is_policy else "known"
        name = b.signature + (f" [{label}: {b.suppressed_by}]" if b.explained else "")
        case = ET.SubElement(suite, "testcase", classname=f"shardfuzz.{'policy' if b.is_policy else _clean(b.kind)}",
                             name=_clean(name))
        if b.explained:
            ET.SubElement(case, "skipped", message=_clean(f"{label}: {b.suppressed_by}"))
            continue
        failure = ET.SubElement(case, "failure", message=_clean(b.message), type=_clean(b.kind))
        lines = [b.message, "", f"programs: {b.count}", f"case: {b.case}"]
        if b.minimized_case:
            lines.append(f"minimized: {b.minimized_case}")
        lines.append(f"replay: shardfuzz replay {b.minimized_case or b.case}")
        failure.text = _clean("\n".join(lines))
    for r in summary.reruns:
        case = ET.SubElement(suite, "testcase", classname=f"shardfuzz.{r.verdict}", name=_clean(f"{r.verdict}: {r.mode} {r.program}"),
                             time=str(r.alone_s))
        ET.SubElement(case, "system-out").text = _clean(f"{r.line()}\nreplay: shardfuzz replay {r.case}")
    run = ET.SubElement(suite, "testcase", classname="shardfuzz", name="run", time=str(summary.elapsed_s))
    out = ET.SubElement(run, "system-out")
    cells = f"\ncells: {summary.cell_coverage.line()}" if summary.cells else ""
    cells += f"\nworker time: {summary.worker_time.line()}" if summary.mode_time else ""
    cells += f"\n{summary.left_over.line()}" if summary.left_over.total else ""
    out.text = _clean(f"{c.line()}; jax {summary.jax_version}, seed {summary.seed}{cells}")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
