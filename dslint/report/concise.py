"""`concise`: one finding per line, `path:line:col: CODE [severity] message` (flake8-compatible; the default)."""

from __future__ import annotations

from collections.abc import Sequence

from dslint.diagnostics import Diagnostic
from dslint.report.context import ReportContext


def render(diagnostics: Sequence[Diagnostic], context: ReportContext) -> str:
    return "".join(diagnostic.concise() + "\n" for diagnostic in diagnostics)
