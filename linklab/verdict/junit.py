"""The verdict as JUnit XML (`linklab ab --junit FILE`), what CI systems show as tests: one test
case per point and judged metric, one per point and structural check, one per flag judged over
the run.

  within, harmless     passed (harmless: the move and why it is harmless in <system-out>)
  FAIL                 <failure type="differs">: B differs from A, with A's and B's values and B/A
  inconclusive         <skipped>: a difference where an arm was measured on a busy host only (JUnit
                       has no "inconclusive"; skipped is what CI shows as neither passed nor failed)

A structural check that found nothing wrong at a point passes (the verdict lists only what it
found): missing (the point not in B), preflight, failed (repetitions), path MTU.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from linklab import junit as junit_xml
from linklab.results.points import group
from linklab.verdict.model import EVERY_POINT, FAIL, HARMLESS, INCONCLUSIVE, Judgment, Result
from linklab.verdict.output import row_text

# The structural checks at every point (linklab/verdict/structure.py; "missing": judging.judge).
STRUCTURAL = (("missing", "point in B"), ("preflight", "pre-flight"), ("failed", "repetitions"),
              ("path_mtu", "path MTU"))


def _case(suite: ET.Element, classname: str, name: str, j: Judgment | None) -> None:
    case = junit_xml.case(suite, classname, name)
    if j is None:
        return
    _point, _what, a, b, ratio = row_text(j)
    detail = f"A: {a}\nB: {b}\nB/A [interval]: {ratio}"
    if j.verdict == FAIL:
        ET.SubElement(case, "failure", type="differs", message=f"B differs from A: {a} -> {b} ({ratio})").text = detail
    elif j.verdict == INCONCLUSIVE:
        ET.SubElement(case, "skipped", message="inconclusive: it differs where an arm was measured on a busy host "
                                               "only; measure again on a quieter machine").text = detail
    elif j.verdict == HARMLESS:
        why = j.metric.sides_why if j.metric is not None else ""
        ET.SubElement(case, "system-out").text = f"harmless: {detail}" + (f"\n{why}" if why else "")


def junit_text(res: Result, name: str) -> str:
    """The verdict `res` of an A/B run called `name` (its experiment) as a JUnit document."""
    suite = junit_xml.suite(f"linklab ab {name}")
    for j in (j for j in res.judgments if j.metric is not None):
        _case(suite, f"{name}.{j.point}", j.what, j)
    structural = {(j.point, j.rule): j for j in res.judgments if j.metric is None and j.rule != "flag"}
    labels = [p.label for p in group(res.a)]
    for label in labels:
        for rule, what in STRUCTURAL:
            _case(suite, f"{name}.{label}", f"structure: {what}", structural.pop((label, rule), None))
    for (point, rule), j in structural.items():  # any other the verdict found (baseline: A failed there)
        _case(suite, f"{name}.{point}", f"structure: {j.what} ({rule})", j)
    for j in (j for j in res.judgments if j.rule == "flag"):
        _case(suite, f"{name}.{EVERY_POINT}", f"flag: {j.what}", j)
    return junit_xml.document("linklab ab", suite)
