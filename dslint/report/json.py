"""`json`: a JSON array with one object per finding, every field of the diagnostic and its fix."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from dslint.config.recognition import CONFIG_SUFFIXES
from dslint.config.yaml_config import YAML_CONFIG_SUFFIXES, is_json_text
from dslint.diagnostics import Diagnostic, Location
from dslint.framework.rule_pages import rule_url
from dslint.lint.suppression import NoqaIndex, admits_comments, scan
from dslint.report.context import ReportContext


def _location(location: Location) -> dict[str, int]:
    """`row` is ruff's name for the line (so a consumer of ruff's JSON reads dslint's); `line` is dslint's own."""
    return {"line": location.line, "row": location.line, "column": location.column}


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


def with_cell(
    diagnostic: Diagnostic, context: ReportContext | None = None, indexes: dict[str, NoqaIndex] | None = None
) -> dict[str, Any]:
    """In a notebook, `cell` (1-based) says which cell the lines count in, as in ruff's JSON. With `context`,
    ruff's `url` (the rule's page) and `noqa_row` (the line where a `# noqa` comment silences the finding, as
    `--add-noqa` would write it; null where none can: a strict JSON config, a notebook, a file that does not
    tokenize). `indexes`: each file's noqa index, kept across the findings of one report."""
    entry = as_dict(diagnostic)
    if diagnostic.cell is not None:
        entry["cell"] = diagnostic.cell
    if context is not None:
        entry["url"] = rule_url(diagnostic.code, local=True)
        entry["noqa_row"] = _noqa_row(diagnostic, context, {} if indexes is None else indexes)
    return entry


def _noqa_row(diagnostic: Diagnostic, context: ReportContext, indexes: dict[str, NoqaIndex]) -> int | None:
    text = context.source(diagnostic.path) if diagnostic.cell is None else None
    if text is None:
        return None
    if diagnostic.path.lower().endswith(CONFIG_SUFFIXES) or (
        diagnostic.path.lower().endswith(YAML_CONFIG_SUFFIXES) and is_json_text(text)
    ):
        return diagnostic.start.line if admits_comments(diagnostic.path, text) else None
    if diagnostic.path not in indexes:
        indexes[diagnostic.path] = scan(text)
    index = indexes[diagnostic.path]
    return index.statement_end(diagnostic.start.line) if index.tokenized else None


def render(diagnostics: Sequence[Diagnostic], context: ReportContext) -> str:
    indexes: dict[str, NoqaIndex] = {}
    entries = [with_cell(d, context, indexes) for d in diagnostics]
    return json.dumps(entries, indent=2, ensure_ascii=False) + "\n"
