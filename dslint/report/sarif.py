"""`sarif`: SARIF 2.1.0 for code scanning (GitHub uploads it with `github/codeql-action/upload-sarif`).

One run; the driver lists every rule with its message, full docs (help text and markdown) and help URI (the
rule's own page); the invocation lists the files that could not be checked as tool execution notifications; each
result points at a file relative to the checked directory (`%SRCROOT%`), with 1-based columns counted in Unicode
code points (`columnKind`), and carries its fix as replacements.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dslint import __version__
from dslint.diagnostics import Diagnostic, Edit, Severity
from dslint.framework.registry import all_rules
from dslint.framework.rule import Rule
from dslint.framework.rule_pages import rule_url
from dslint.report.context import ReportContext

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
DOCS_URL_ENV = "DSLINT_DOCS_URL"


def docs_url() -> str | None:
    """Where the rule docs live: `$DSLINT_DOCS_URL` (the GitHub Action sets it to the README of the dslint
    revision it runs; each rule's help URI is its page beside it, dslint/rules/pages/CODE.md:
    `dslint.framework.rule_pages`).
    dslint has no other published home."""
    return os.environ.get(DOCS_URL_ENV) or None


def _rule(rule: type[Rule], base: str | None) -> dict[str, Any]:
    docs = rule.docs.render(rule.code, rule.slug)
    entry: dict[str, Any] = {
        "id": rule.code,
        "name": rule.slug,
        "shortDescription": {"text": rule.message},
        "fullDescription": {"text": textwrap.dedent(rule.docs.what).strip()},
        "help": {"text": docs, "markdown": docs},
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
        "properties": {"tags": [rule.family()], "fixable": rule.fixable},
    }
    url = rule_url(rule.code, local=False) if base else None
    if url:
        entry["helpUri"] = url  # the rule's own page (dslint/rules/pages/CODE.md beside the README)
    return entry


def _uri(path: str, cwd: Path) -> tuple[str, bool]:
    """A relative URI under %SRCROOT% when the file is below `cwd`, else an absolute file URI."""
    absolute = Path(path).resolve()
    try:
        relative = absolute.relative_to(cwd.resolve())
    except ValueError:
        return absolute.as_uri(), False
    return "/".join(_quote(part) for part in relative.parts), True


def _quote(part: str) -> str:
    from urllib.parse import quote

    return quote(part, safe="", errors="surrogateescape")  # a file name that is not UTF-8: its own bytes


def _artifact(path: str, cwd: Path) -> dict[str, str]:
    uri, relative = _uri(path, cwd)
    return {"uri": uri, "uriBaseId": "%SRCROOT%"} if relative else {"uri": uri}


def _region(start_line: int, start_column: int, end_line: int, end_column: int) -> dict[str, int]:
    return {"startLine": start_line, "startColumn": start_column, "endLine": end_line, "endColumn": end_column}


def _replacement(edit: Edit) -> dict[str, Any]:
    return {
        "deletedRegion": _region(edit.start.line, edit.start.column, edit.end.line, edit.end.column),
        "insertedContent": {"text": edit.content},
    }


def _result(diagnostic: Diagnostic, index: dict[str, int], cwd: Path) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": diagnostic.code,
        "level": LEVELS[diagnostic.severity],
        "message": {"text": diagnostic.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": _artifact(diagnostic.path, cwd),
                    "region": _region(
                        diagnostic.start.line, diagnostic.start.column, diagnostic.end.line, diagnostic.end.column
                    ),
                }
            }
        ],
    }
    if diagnostic.related:
        result["relatedLocations"] = [
            {
                "id": number,
                "message": {"text": related.message},
                "physicalLocation": {
                    "artifactLocation": _artifact(related.path, cwd),
                    "region": _region(related.line, related.column, related.line, related.column),
                },
            }
            for number, related in enumerate(diagnostic.related)
        ]
    if diagnostic.code in index:
        result["ruleIndex"] = index[diagnostic.code]
    if diagnostic.cell is not None:  # lines count in a notebook cell, not in the .ipynb file: no region
        del result["locations"][0]["physicalLocation"]["region"]
        result["message"]["text"] = f"cell {diagnostic.cell}, line {diagnostic.start.line}: {diagnostic.message}"
        result["properties"] = {"cell": diagnostic.cell, "cellLine": diagnostic.start.line}
    if diagnostic.fix is not None and diagnostic.cell is None:
        result["fixes"] = [
            {
                "description": {"text": diagnostic.fix.message or f"fix {diagnostic.code}"},
                "artifactChanges": [
                    {
                        "artifactLocation": _artifact(diagnostic.path, cwd),
                        "replacements": [_replacement(edit) for edit in diagnostic.fix.edits],
                    }
                ],
            }
        ]
        result.setdefault("properties", {})["fixApplicability"] = diagnostic.fix.applicability.value
    return result


def _invocation(context: ReportContext) -> dict[str, Any]:
    """The run itself: successful only when every file was checked; each file that was not (it does not exist,
    cannot be read or decoded, is not a notebook, hit an internal error) is a tool execution notification, so code
    scanning shows a file that was never analysed instead of treating it as clean."""
    notifications = []
    for path, message in context.failures:
        notifications.append(
            {
                "level": "error",
                "message": {"text": f"{path}: {message}" if path else message},
                "locations": [{"physicalLocation": {"artifactLocation": _artifact(path, context.cwd)}}],
                "descriptor": {"id": "file-not-checked"},
            }
        )
    return {"executionSuccessful": not notifications, "toolExecutionNotifications": notifications}


def document(diagnostics: Sequence[Diagnostic], context: ReportContext) -> dict[str, Any]:
    rules = list(all_rules())
    index = {rule.code: position for position, rule in enumerate(rules)}
    base = docs_url()
    root = context.cwd.resolve().as_uri()
    driver: dict[str, Any] = {
        "name": "dslint",
        "version": __version__,
        "semanticVersion": __version__,
        "rules": [_rule(rule, base) for rule in rules],
    }
    if base:
        driver["informationUri"] = base.split("#")[0]
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": driver},
                "originalUriBaseIds": {"%SRCROOT%": {"uri": root if root.endswith("/") else root + "/"}},
                "columnKind": "unicodeCodePoints",
                "invocations": [_invocation(context)],
                "results": [_result(d, index, context.cwd) for d in diagnostics],
            }
        ],
    }


def render(diagnostics: Sequence[Diagnostic], context: ReportContext) -> str:
    return json.dumps(document(diagnostics, context), indent=2, ensure_ascii=False) + "\n"
