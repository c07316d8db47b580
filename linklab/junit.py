"""JUnit XML as CI systems read it: the one writer behind `linklab check --junit` and `linklab ab
--junit`. A caller adds its test cases to a suite; `document` counts them (a <failure> fails a case,
a <skipped> skips it), sets the counts on the suite and on <testsuites>, and writes the text."""

from __future__ import annotations

import xml.etree.ElementTree as ET


def suite(name: str, **attrs: str) -> ET.Element:
    return ET.Element("testsuite", name=name, **attrs)


def case(parent: ET.Element, classname: str, name: str, seconds: float = 0.0) -> ET.Element:
    return ET.SubElement(parent, "testcase", classname=classname, name=name, time=f"{seconds:.3f}")


def document(name: str, testsuite: ET.Element, seconds: float = 0.0) -> str:
    """`testsuite` inside <testsuites name=NAME>, both carrying its counts, with the XML declaration."""
    cases = testsuite.findall("testcase")
    counts = {"tests": str(len(cases)), "failures": str(sum(c.find("failure") is not None for c in cases)),
              "errors": "0", "skipped": str(sum(c.find("skipped") is not None for c in cases)),
              "time": f"{seconds:.3f}"}
    for k, v in counts.items():
        testsuite.set(k, v)
    root = ET.Element("testsuites", name=name, **counts)
    root.append(testsuite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
