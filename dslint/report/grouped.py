"""`grouped`: the findings under their file's name, one indented line each (`line:col CODE [severity] message`), a
blank line between files, as ruff's `grouped` format."""

from __future__ import annotations

from collections.abc import Sequence

from dslint.diagnostics import Diagnostic
from dslint.report.context import ReportContext


def render(diagnostics: Sequence[Diagnostic], context: ReportContext) -> str:
    by_file: dict[str, list[Diagnostic]] = {}
    for diagnostic in diagnostics:
        by_file.setdefault(diagnostic.path, []).append(diagnostic)
    blocks = []
    for path, found in by_file.items():
        lines = [f"{path}:"]
        for d in found:
            cell = f"cell {d.cell}:" if d.cell is not None else ""
            text = " ".join(d.message.split())
            lines.append(f"  {cell}{d.start.line}:{d.start.column} {d.code} [{d.severity.value}] {text}")
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)
