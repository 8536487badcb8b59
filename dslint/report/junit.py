"""`junit`: JUnit XML, for CI systems that show test reports (GitLab, Jenkins, Azure, CircleCI). One test suite per
file with findings, one failing test case per finding (named `dslint.CODE`, its failure message the finding's);
a run without findings is one passing case. Files that could not be checked are failing cases of their own
(`<error>`), so a report never shows a run as green that was not."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from dslint.diagnostics import Diagnostic
from dslint.report.context import ReportContext
from dslint.report.file_position import file_position


def _text(value: str) -> str:
    """XML 1.0 cannot hold most control characters, even escaped: they become U+FFFD."""
    return "".join(c if c in "\t\n\r" or ord(c) >= 0x20 else "\ufffd" for c in value)


def render(diagnostics: Sequence[Diagnostic], context: ReportContext) -> str:
    root = ET.Element("testsuites", name="dslint")
    by_file: dict[str, list[Diagnostic]] = {}
    for diagnostic in diagnostics:
        by_file.setdefault(diagnostic.path, []).append(diagnostic)
    for path, found in by_file.items():
        suite = ET.SubElement(root, "testsuite", name=_text(path), tests=str(len(found)), failures=str(len(found)))
        for diagnostic in found:
            where = file_position(diagnostic)
            case = ET.SubElement(suite, "testcase", name=f"dslint.{diagnostic.code}", classname=_text(path))
            case.set("line", str(where.line))
            failure = ET.SubElement(case, "failure", message=_text(where.message), type=diagnostic.severity.value)
            failure.text = _text(f"{diagnostic.where}: {diagnostic.code} {diagnostic.message}")
    if context.failures:
        suite = ET.SubElement(root, "testsuite", name="not checked", tests=str(len(context.failures)))
        suite.set("errors", str(len(context.failures)))
        for path, reason in context.failures:
            case = ET.SubElement(suite, "testcase", name="dslint", classname=_text(path))
            ET.SubElement(case, "error", message=_text(reason))
    if not diagnostics and not context.failures:
        suite = ET.SubElement(root, "testsuite", name="dslint", tests="1", failures="0")
        ET.SubElement(suite, "testcase", name="No findings", classname="dslint")
    total = len(diagnostics) + len(context.failures) or 1
    root.set("tests", str(total))
    root.set("failures", str(len(diagnostics)))
    root.set("errors", str(len(context.failures)))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
