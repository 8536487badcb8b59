"""Code that never runs: the statements of a block after one that always leaves it (`return`, `raise`, `continue`,
`break`, `sys.exit(...)`). A finding there describes a mistake no run can make, so the script's lint drops it
(a training loop left below an early `return` while the function was rewritten, say)."""

from __future__ import annotations

import ast
import bisect
from collections.abc import Iterator, Sequence

from dslint.diagnostics import Diagnostic
from dslint.model.library import PROCESS_EXITS
from dslint.model.summary import dotted


def unreachable_ranges(tree: ast.Module) -> list[tuple[int, int]]:
    """(first line, last line) of each run of statements that follows an exit of its block, in line order."""
    return sorted(_dead(tree.body))


def without_unreachable(path: str, diagnostics: Sequence[Diagnostic], tree: ast.Module | None) -> list[Diagnostic]:
    """`diagnostics` less the findings of this file (`path`) that start in code that never runs."""
    if tree is None or not diagnostics:
        return list(diagnostics)
    ranges = unreachable_ranges(tree)
    if not ranges:
        return list(diagnostics)
    starts = [first for first, _ in ranges]

    def dead(line: int) -> bool:
        at = bisect.bisect_right(starts, line) - 1
        return at >= 0 and ranges[at][0] <= line <= ranges[at][1]

    return [d for d in diagnostics if d.path != path or d.cell is not None or not dead(d.start.line)]


def _dead(body: list[ast.stmt]) -> Iterator[tuple[int, int]]:
    for index, statement in enumerate(body):
        yield from _nested(statement)
        if _leaves(statement) and index + 1 < len(body):
            rest = body[index + 1 :]
            yield rest[0].lineno, max(s.end_lineno or s.lineno for s in rest)
            return


def _nested(statement: ast.stmt) -> Iterator[tuple[int, int]]:
    for name in ("body", "orelse", "finalbody"):
        inner = getattr(statement, name, None)
        if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
            yield from _dead(inner)
    for handler in statement.handlers if isinstance(statement, ast.Try) else ():
        yield from _dead(handler.body)
    for case in statement.cases if isinstance(statement, ast.Match) else ():
        yield from _dead(case.body)


def _leaves(statement: ast.stmt) -> bool:
    if isinstance(statement, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
        return True
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        return dotted(statement.value.func) in PROCESS_EXITS
    return False
