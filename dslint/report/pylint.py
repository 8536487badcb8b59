"""`pylint`: `path:line: [CODE] message`, the form pylint's parseable output has (and ruff's `pylint` format), for
tools and CI systems that read it."""

from __future__ import annotations

from collections.abc import Sequence

from dslint.diagnostics import Diagnostic
from dslint.report.context import ReportContext


def line(diagnostic: Diagnostic) -> str:
    cell = f"cell {diagnostic.cell}:" if diagnostic.cell is not None else ""
    text = diagnostic.message.replace("\r", " ").replace("\n", " ")
    return f"{diagnostic.path}:{cell}{diagnostic.start.line}: [{diagnostic.code}] {text}"


def render(diagnostics: Sequence[Diagnostic], context: ReportContext) -> str:
    return "".join(line(d) + "\n" for d in diagnostics)
