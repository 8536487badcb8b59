"""`rdjson`: reviewdog's Diagnostic Format (`reviewdog -f=rdjson`), one JSON document with every finding: its
message, location (1-based lines and columns), severity (ERROR, WARNING, INFO), code, and its fix as suggestions
(the fix's edits, which reviewdog offers as suggested changes on a pull request)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from dslint.diagnostics import Diagnostic, Location
from dslint.framework.rule_pages import rule_url
from dslint.report.context import ReportContext


def _position(location: Location) -> dict[str, int]:
    return {"line": location.line, "column": location.column}


def _diagnostic(diagnostic: Diagnostic) -> dict[str, Any]:
    code: dict[str, str] = {"value": diagnostic.code}
    url = rule_url(diagnostic.code, local=False)
    if url:
        code["url"] = url
    message = diagnostic.message if diagnostic.cell is None else f"cell {diagnostic.cell}: {diagnostic.message}"
    entry: dict[str, Any] = {
        "message": message,
        "location": {
            "path": diagnostic.path,
            "range": {"start": _position(diagnostic.start), "end": _position(diagnostic.end)},
        },
        "severity": diagnostic.severity.value.upper(),
        "code": code,
    }
    if diagnostic.fix is not None and diagnostic.cell is None:  # cell positions are not the file's
        entry["suggestions"] = [
            {"range": {"start": _position(edit.start), "end": _position(edit.end)}, "text": edit.content}
            for edit in diagnostic.fix.edits
        ]
    return entry


def render(diagnostics: Sequence[Diagnostic], context: ReportContext) -> str:
    document = {
        "source": {"name": "dslint"},
        "severity": "ERROR" if any(d.severity.value == "error" for d in diagnostics) else "WARNING",
        "diagnostics": [_diagnostic(d) for d in diagnostics],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
