"""`azure`: Azure Pipelines logging commands, one issue per finding.

    ##vso[task.logissue type=warning;sourcepath=train.py;linenumber=17;columnnumber=13;code=DSL101;]message

Values are escaped as the agent reads them (Azure Pipelines "Logging commands", escaping): `%` as `%AZP25`, CR and
LF as `%0D` and `%0A`, and in properties `;` and `]` as `%3B` and `%5D`, so no file name or message ends the
command early or starts another. Azure has no "info" issue type: infos are warnings (the code says which)."""

from __future__ import annotations

from collections.abc import Sequence

from dslint.diagnostics import Diagnostic, Severity
from dslint.report.context import ReportContext
from dslint.report.file_position import file_position

TYPES = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "warning"}


def escape_data(value: str) -> str:
    return value.replace("%", "%AZP25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(";", "%3B").replace("]", "%5D")


def issue(diagnostic: Diagnostic) -> str:
    where = file_position(diagnostic)
    properties = {
        "type": TYPES[diagnostic.severity],
        "sourcepath": diagnostic.path,
        "linenumber": str(where.line),
        "columnnumber": str(where.column),
        "code": diagnostic.code,
    }
    joined = "".join(f"{key}={escape_property(value)};" for key, value in properties.items())
    return f"##vso[task.logissue {joined}]{escape_data(f'{diagnostic.code} {where.message}')}"


def render(diagnostics: Sequence[Diagnostic], context: ReportContext) -> str:
    return "".join(issue(d) + "\n" for d in diagnostics)
