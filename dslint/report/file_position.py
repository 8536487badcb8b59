"""Where a finding is in its file, for the formats that take one line number per finding (pylint, azure, gitlab,
junit): in a notebook the lines count within a cell, which a tool reading the `.ipynb` file cannot place, so the
finding goes to the file (line 1) and its message names the cell and line, as the `github` format does."""

from __future__ import annotations

from dataclasses import dataclass

from dslint.diagnostics import Diagnostic


@dataclass(frozen=True)
class FilePosition:
    line: int
    column: int
    end_line: int
    message: str  # `CODE`-less message, with "cell N, line L: " in front for a notebook finding


def file_position(diagnostic: Diagnostic) -> FilePosition:
    if diagnostic.cell is not None:
        where = f"cell {diagnostic.cell}, line {diagnostic.start.line}: "
        return FilePosition(1, 1, 1, where + diagnostic.message)
    start, end = diagnostic.start, diagnostic.end
    return FilePosition(start.line, start.column, end.line, diagnostic.message)
