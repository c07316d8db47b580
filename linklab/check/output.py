"""A check run written out: the table a student reads, JSON (schema linklab-check/2) a program
reads, and JUnit XML a CI system shows. JSON and JUnit are written atomically."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from linklab import __version__, fsutil
from linklab import junit as junit_xml
from linklab.check.kinds.base import FAIL, INCONCLUSIVE, PASS
from linklab.check.run import SKIP, WARN, Report, Result
from linklab.errors import EXIT_INCONCLUSIVE, EXIT_WARNINGS

# 2: summary.exit_code in the codes of linklab/errors.py, where only warnings and inconclusive
# have codes of their own (in 1 they were 3 and 4, which meant other things elsewhere too).
SCHEMA = "linklab-check/2"
OLD_SCHEMAS = {"linklab-check/1": {3: EXIT_WARNINGS, 4: EXIT_INCONCLUSIVE}}  # each: its exit codes now
MARK = {PASS: "PASS", FAIL: "FAIL", WARN: "WARN", INCONCLUSIVE: "INCONCLUSIVE", SKIP: "SKIP"}


def table(report: Report, width: int | None = None) -> str:
    """id, verdict, expected vs observed, and for what did not pass: the hint of a failure, the
    evidence of an inconclusive measurement (what limited it: the emulator or the host, not the
    lab, so no hint would help)."""
    width = width or shutil.get_terminal_size((120, 20)).columns
    lines = [f"lab {report.lab}: {report.checks_file}" + (f" (seed {report.seed})" if report.seed is not None else "")
             + (f", stages 1-{report.stage}" if report.stage else "")]
    idw = max([len(r.id) for r in report.results] + [2])
    for r in report.results:
        lines += result_lines(r, width, idw)
    s = report.summary()
    lines.append(f"{s['passed']} passed, {s['failed']} failed, {s['warnings']} warnings, {s['inconclusive']} "
                 f"inconclusive, {s['skipped']} skipped; points {s['points']:g}/{s['max_points']:g} "
                 f"({report.seconds:.0f} s)")
    return "\n".join(lines)


def result_lines(r: Result, width: int, idw: int, detail_always: bool = False) -> list[str]:
    """One check as the table shows it: its verdict, id, expected, observed; then the detail
    (of what did not pass, or always) and, for a failure, the hint. Wrapped to `width`."""
    head = f"{MARK[r.verdict]:<12} {r.id:<{idw}}  "
    pad = " " * len(head)
    body = [f"expected {r.expected}", f"observed {r.observed}"]
    if r.detail and (r.verdict != PASS or detail_always):
        body.append(r.detail)
    if r.verdict == INCONCLUSIVE:
        body.append("measure again: the emulator or a busy host limited this measurement, not the lab")
    elif r.hint and r.verdict in (FAIL, WARN):
        body.append(f"hint: {r.hint}")
    lines: list[str] = []
    for text in body:
        for piece in textwrap.wrap(text, max(40, width - len(head))) or [""]:
            lines.append((pad if lines else head) + piece)
    return lines


def as_json(report: Report, raw: bool = False) -> dict[str, Any]:
    return {"schema": SCHEMA, "linklab": __version__, "lab": report.lab, "checks_file": report.checks_file,
            "topology": report.topology, "seed": report.seed, "overrides": report.overrides, "scale": report.scale,
            "checks_sha256": report.checks_sha256, "mode": "student" if report.student else "teacher",
            "stage": report.stage, "student": report.student,
            "started_at": report.started_at, "seconds": report.seconds, "summary": report.summary(),
            "checks": [r.public(raw) for r in report.results]}


def upgraded(doc: dict[str, Any]) -> dict[str, Any] | None:
    """A saved result as this linklab writes it (an older schema's exit code in today's codes),
    or None when it is not a `linklab check --json` result."""
    if doc.get("schema") == SCHEMA:
        return doc
    codes = OLD_SCHEMAS.get(doc.get("schema"))
    if codes is None or not isinstance(doc.get("summary"), dict):
        return None
    code = doc["summary"].get("exit_code")
    return {**doc, "schema": SCHEMA, "summary": {**doc["summary"], "exit_code": codes.get(code, code)}}


def write_json(report: Report, path: Path, raw: bool = False) -> None:
    fsutil.write_atomic(Path(path), json.dumps(as_json(report, raw), indent=1, default=str) + "\n")


def junit(report: Report) -> str:
    """JUnit XML: one testsuite, one testcase per check. A failed check is a <failure>; a
    skipped or inconclusive one <skipped> (with why); a warning passes, with <system-out>."""
    s = report.summary()
    suite = junit_xml.suite(report.checks_file, timestamp=report.started_at[:19], hostname=report.lab)
    props = ET.SubElement(suite, "properties")
    for name, value in (("lab", report.lab), ("topology", report.topology), ("seed", report.seed),
                        ("points", s["points"]), ("max_points", s["max_points"]), ("linklab", __version__)):
        ET.SubElement(props, "property", name=name, value="" if value is None else str(value))
    for r in report.results:
        case = junit_xml.case(suite, f"linklab.check.{r.kind}", r.id, r.seconds)
        text = "\n".join(x for x in (f"expected: {r.expected}", f"observed: {r.observed}", r.detail,
                                     f"hint: {r.hint}" if r.hint else "") if x)
        if r.verdict == FAIL:
            ET.SubElement(case, "failure", message=f"{r.id}: {r.observed}"[:500], type=r.kind).text = text
        elif r.verdict in (SKIP, INCONCLUSIVE):
            ET.SubElement(case, "skipped", message=f"{r.verdict}: {r.detail or r.observed}"[:500])
        elif r.verdict == WARN:
            ET.SubElement(case, "system-out").text = f"WARNING\n{text}"
    return junit_xml.document("linklab check", suite, report.seconds)


def write_junit(report: Report, path: Path) -> None:
    fsutil.write_atomic(Path(path), junit(report))
