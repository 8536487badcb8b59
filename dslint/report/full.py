"""`full`: each finding with its source line, a caret under the reported span, why it matters (the first paragraph
of the rule's "Why is this bad?", which the one-line message leaves to here, `dslint explain` and the rule page),
and its fix as a diff."""

from __future__ import annotations

import difflib
import functools
import textwrap
from collections.abc import Sequence

from dslint.diagnostics import Diagnostic, printable
from dslint.fix.edits import FixError, apply_edits
from dslint.framework.registry import rule_by_code
from dslint.report.context import ReportContext


def _snippet(diagnostic: Diagnostic, lines: list[str]) -> list[str]:
    number = diagnostic.start.line
    if not 1 <= number <= len(lines):
        return []
    line = lines[number - 1].rstrip("\r\n").expandtabs(1)
    start = max(diagnostic.start.column - 1, 0)
    end_column = diagnostic.end.column - 1 if diagnostic.end.line == number else len(line)
    end = max(end_column, start + 1)
    width = len(str(number))
    gutter = " " * width
    return [
        f"{gutter} |",
        f"{number} | {line}",
        f"{gutter} | {' ' * start}{'^' * (end - start)} {diagnostic.code}",
        f"{gutter} |",
    ]


@functools.cache
def _why(code: str) -> tuple[str, ...]:
    """The first paragraph of the rule's "Why is this bad?", wrapped under `  = why: `."""
    rule = rule_by_code(code)
    if rule is None:
        return ()
    paragraph = textwrap.dedent(rule.docs.why).strip().split("\n\n")[0]
    text = " ".join(paragraph.split())
    return tuple(textwrap.wrap(text, width=110, initial_indent="  = why: ", subsequent_indent="    "))


def _fix_lines(diagnostic: Diagnostic, text: str | None, unsafe_fixes: bool) -> list[str]:
    fix = diagnostic.fix
    if fix is None:
        return []
    kind = "safe fix" if fix.is_safe else "unsafe fix"
    out = [f"  = {kind}: {fix.message or 'available'}"]
    if not fix.is_safe and not unsafe_fixes:
        out[0] += " (apply with `dslint fix --unsafe-fixes`)"
    if text is None:
        return out
    try:
        fixed = apply_edits(text, fix.edits)
    except FixError:
        return out
    diff = difflib.unified_diff(
        text.splitlines(keepends=True),
        fixed.splitlines(keepends=True),
        fromfile=printable(diagnostic.path),
        tofile=printable(diagnostic.path),
        n=1,
    )
    out.extend("    " + line.rstrip("\r\n") for line in diff)
    return out


def render(diagnostics: Sequence[Diagnostic], context: ReportContext) -> str:
    blocks: list[str] = []
    for diagnostic in diagnostics:
        # in a notebook the lines count in a cell, not in the .ipynb file: no snippet or diff from the file
        text = context.source(diagnostic.path) if diagnostic.cell is None else None
        lines = text.splitlines(keepends=True) if text is not None else []
        block = [
            diagnostic.concise(),
            *_snippet(diagnostic, lines),
            *(f"  = from {printable(r.path)}:{r.line}:{r.column}: {printable(r.message)}" for r in diagnostic.related),
            *_why(diagnostic.code),
            *_fix_lines(diagnostic, text, context.unsafe_fixes),
        ]
        blocks.append("\n".join(block) + "\n")
    return "\n".join(blocks)
