"""`github`: GitHub Actions workflow commands, one annotation per finding.

    ::warning file=train.py,line=17,col=13,endLine=17,endColumn=29,title=DSL101 (model-moved-...)::DSL101 ...

Values are escaped as GitHub's runner parses them (actions/toolkit `command.ts`): in the message `%`, CR and LF;
in properties also `:` and `,`. No file name or message can therefore end the command early or start another;
characters that are not printable (ESC, a lone surrogate) are escaped first (`diagnostics.printable`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dslint.diagnostics import Diagnostic, Severity, printable
from dslint.report.context import ReportContext

LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def _file(path: str, cwd: Path | None) -> str:
    """GitHub wants paths relative to the workspace: an absolute path below `cwd` is made relative."""
    candidate = Path(path)
    if cwd is not None and candidate.is_absolute():
        try:
            return candidate.relative_to(cwd.resolve()).as_posix()
        except ValueError:
            pass
    return path.replace("\\", "/")


def annotation(diagnostic: Diagnostic, cwd: Path | None = None) -> str:
    properties = {
        "file": printable(_file(diagnostic.path, cwd), keep="\r\n"),
        "line": str(diagnostic.start.line),
        "col": str(diagnostic.start.column),
        "endLine": str(diagnostic.end.line),
        "endColumn": str(diagnostic.end.column),
        "title": f"{diagnostic.code} ({diagnostic.slug})",
    }
    message = diagnostic.code + " " + printable(diagnostic.message, keep="\r\n")
    if diagnostic.cell is not None:  # lines count in a notebook cell, not in the .ipynb file: annotate the file
        properties = {"file": properties["file"], "title": properties["title"]}
        message = f"cell {diagnostic.cell}, line {diagnostic.start.line}: {message}"
    joined = ",".join(f"{key}={escape_property(value)}" for key, value in properties.items())
    return f"::{LEVELS[diagnostic.severity]} {joined}::{escape_data(message)}"


def render(diagnostics: Sequence[Diagnostic], context: ReportContext) -> str:
    return "".join(annotation(d, context.cwd) + "\n" for d in diagnostics)
