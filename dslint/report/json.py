"""`json`: a JSON array with one object per finding, every field of the diagnostic and its fix."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from dslint.diagnostics import Diagnostic, Location
from dslint.report.context import ReportContext


def _location(location: Location) -> dict[str, int]:
    return {"line": location.line, "column": location.column}


def as_dict(diagnostic: Diagnostic) -> dict[str, Any]:
    fix = diagnostic.fix
    return {
        "code": diagnostic.code,
        "slug": diagnostic.slug,
        "message": diagnostic.message,
        "severity": diagnostic.severity.value,
        "filename": diagnostic.path,
        "location": _location(diagnostic.start),
        "end_location": _location(diagnostic.end),
        "related": [
            {"filename": r.path, "location": {"line": r.line, "column": r.column}, "message": r.message}
            for r in diagnostic.related
        ],
        "fix": None
        if fix is None
        else {
            "applicability": fix.applicability.value,
            "message": fix.message,
            "edits": [
                {"content": edit.content, "location": _location(edit.start), "end_location": _location(edit.end)}
                for edit in fix.edits
            ],
        },
    }


def with_cell(diagnostic: Diagnostic) -> dict[str, Any]:
    """In a notebook, `cell` (1-based) says which cell the lines count in, as in ruff's JSON."""
    entry = as_dict(diagnostic)
    if diagnostic.cell is not None:
        entry["cell"] = diagnostic.cell
    return entry


def render(diagnostics: Sequence[Diagnostic], context: ReportContext) -> str:
    return json.dumps([with_cell(d) for d in diagnostics], indent=2, ensure_ascii=False) + "\n"
