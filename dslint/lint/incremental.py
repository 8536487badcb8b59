"""Fast re-linting after an edit, for the language server: only the top-level statements the edit touched.

A full lint of a 2,000-line script takes seconds (libcst's traversals are pure Python), far too slow to follow
typing. After an edit, `relint` keeps the previous findings of every top-level statement the edit did not touch
(moved by the number of lines inserted or deleted) and lints a reduced module for the rest: the touched
statements, every top-level statement that is not a function or class (imports, module-level assignments,
`if __name__ == "__main__":` blocks), and every function or class whose text mentions `deepspeed`,
`set_device` or `global` (where the engine, the config and the current device come from). The other functions
and classes become blank lines, so every position stays where it is and the findings need no translation.

The result can differ from a full lint where a finding depends on facts in a blanked function; the server
therefore follows every fast result with a full lint of the same version and publishes that too when it
differs. `relint` returns None when it cannot help (no previous result, a syntax error, a file-level
`# dslint: noqa`, or an edit that touches most of the file).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from dslint.diagnostics import Diagnostic, Edit, Fix, Location
from dslint.lint.script import lint_source
from dslint.selection import RuleSelection

CONTEXT_WORDS = re.compile(r"deepspeed|set_device|\bglobal\b")
IMPORT = re.compile(r"\s*(?:import|from)\s")
FILE_NOQA = re.compile(r"#\s*dslint[:=]\s*noqa", re.I)
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
MAX_SHARE = 0.5  # past this share of kept lines a full lint is about as fast


Chunk = tuple[int, int, bool]  # first line, last line, is a function or class


@dataclass(frozen=True)
class Snapshot:
    """A text, the findings of a full lint of it, and its top-level statements (None: not computed)."""

    text: str
    diagnostics: tuple[Diagnostic, ...]
    chunks: tuple[Chunk, ...] | None = None

    @classmethod
    def of(cls, text: str, diagnostics: Sequence[Diagnostic]) -> Snapshot:
        try:
            chunks: tuple[Chunk, ...] | None = tuple(_chunks(ast.parse(text)))
        except (SyntaxError, ValueError):
            chunks = None
        return cls(text, tuple(diagnostics), chunks)


def split_lines(text: str) -> list[str]:
    """Lines with their endings; only CR, LF and CRLF end a line (as in the tokenizer and LSP)."""
    return LINE.findall(text)


def _changed_range(old: Sequence[str], new: Sequence[str]) -> tuple[int, int, int]:
    """(common prefix, common suffix) in lines, and the line delta."""
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    return prefix, suffix, len(new) - len(old)


def _chunks(tree: ast.Module) -> list[Chunk]:
    """(first line, last line, is a function or class) of every top-level statement, decorators included."""
    found: list[Chunk] = []
    for node in tree.body:
        first = node.lineno
        definition = False
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            definition = True
            first = min([first, *(d.lineno for d in node.decorator_list)])
        found.append((first, node.end_lineno or node.lineno, definition))
    return found


def _top_level(line: str) -> bool:
    return bool(line.strip()) and line[:1] not in (" ", "\t", "#")


def _chunks_after_edit(
    chunks: Sequence[Chunk] | None, old: Sequence[str], new: Sequence[str], prefix: int, suffix: int, delta: int
) -> list[Chunk] | None:
    """The top-level statements after an edit inside one of them, without parsing: the edit neither adds nor
    removes a line that starts at column 0, and lies within one statement. None: parse to find out."""
    if chunks is None:
        return None
    old_last = len(old) - suffix
    if any(_top_level(line) for line in new[prefix : len(new) - suffix]):
        return None
    if any(_top_level(line) for line in old[prefix:old_last]):
        return None
    inside = [c for c in chunks if c[0] <= prefix < c[1] and old_last <= c[1]]
    if len(inside) != 1:
        return None
    target = inside[0]
    moved: list[Chunk] = []
    for first, last, definition in chunks:
        if (first, last, definition) == target:
            moved.append((first, last + delta, definition))
        elif first > target[1]:
            moved.append((first + delta, last + delta, definition))
        else:
            moved.append((first, last, definition))
    return moved


def _shift(location: Location, delta: int) -> Location:
    return Location(location.line + delta, location.column)


def _moved(diagnostic: Diagnostic, prefix: int, old_end: int, delta: int) -> Diagnostic | None:
    """`diagnostic` of the old text in the new text's lines, or None when it lies in the edited lines."""

    def where(line: int) -> int | None:
        if line <= prefix:
            return 0
        if line > old_end:
            return delta
        return None

    start, end = where(diagnostic.start.line), where(diagnostic.end.line)
    if start is None or end is None or start != end:
        return None
    fix = diagnostic.fix
    if fix is not None:
        shifts = [(where(e.start.line), where(e.end.line)) for e in fix.edits]
        if any(a is None or b is None or a != b for a, b in shifts):
            fix = None
        else:
            edits = tuple(
                Edit(_shift(e.start, s or 0), _shift(e.end, s or 0), e.content)
                for e, (s, _) in zip(fix.edits, shifts, strict=True)
            )
            fix = Fix(edits, fix.applicability, fix.message)
    if start == 0 and fix is diagnostic.fix:
        return diagnostic
    return replace(diagnostic, start=_shift(diagnostic.start, start), end=_shift(diagnostic.end, start), fix=fix)


def relint(previous: Snapshot, text: str, path: str, selection: RuleSelection) -> list[Diagnostic] | None:
    """The findings for `text` after an edit of `previous.text`, linting only what the edit touched."""
    if FILE_NOQA.search(text) or FILE_NOQA.search(previous.text):
        return None
    old, new = split_lines(previous.text), split_lines(text)
    prefix, suffix, delta = _changed_range(old, new)
    if prefix == len(old) == len(new):
        return list(previous.diagnostics)
    if any(IMPORT.match(line) for line in [*old[prefix : len(old) - suffix], *new[prefix : len(new) - suffix]]):
        return None  # an import added or removed changes what names mean everywhere: the full lint answers
    chunks = _chunks_after_edit(previous.chunks, old, new, prefix, suffix, delta)
    if chunks is None:
        try:
            chunks = _chunks(ast.parse(text))
        except (SyntaxError, ValueError):
            return None
    first_changed, last_changed = prefix + 1, len(new) - suffix  # may be empty (a deletion)
    low, high = min(first_changed, max(prefix, 1)), max(last_changed, first_changed)
    touched = [c for c in chunks if c[0] <= high and c[1] >= low]
    recompute = set(range(low, high + 1))
    for first, last, _ in touched:
        recompute.update(range(first, last + 1))
    covered: set[int] = set()
    kept: set[int] = set()
    for first, last, definition in chunks:
        lines = range(first, last + 1)
        covered.update(lines)
        is_touched = (first, last, definition) in touched
        if not definition or is_touched or CONTEXT_WORDS.search("".join(new[first - 1 : last])):
            kept.update(lines)
    if len(kept) > MAX_SHARE * max(len(new), 1):
        return None
    numbers = [n for n in range(1, len(new) + 1) if n in kept or n not in covered]
    reduced = "".join(new[n - 1] for n in numbers)
    linted = lint_source(path, reduced.encode("utf-8"), selection)
    if not linted.parsed and not linted.skipped:
        return None  # a syntax error: the full lint reports it alone
    fresh = [
        placed
        for d in linted.diagnostics
        if d.path == path and (placed := _placed(d, numbers)) is not None and placed.start.line in recompute
    ]
    old_end = len(old) - suffix
    carried: list[Diagnostic] = []
    for diagnostic in previous.diagnostics:
        moved = _moved(diagnostic, prefix, old_end, delta)
        if moved is not None and moved.start.line not in recompute:
            carried.append(moved)
    return sorted([*carried, *fresh], key=lambda d: d.sort_key)


def first_lint(text: str, path: str, selection: RuleSelection) -> list[Diagnostic] | None:
    """A first answer for a document just opened, before its full lint: the findings of the statements that
    carry context (every top-level statement that is not a function or class, and the functions and classes
    that mention `deepspeed`, `set_device` or `global`), the other functions left out as `relint` leaves out
    untouched ones. None when that would not be much faster than the full lint (most of the file carries
    context), or the file has a syntax error or a file-level noqa: the full lint answers alone then."""
    if FILE_NOQA.search(text):
        return None
    try:
        chunks = _chunks(ast.parse(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    new = split_lines(text)
    covered: set[int] = set()
    kept: set[int] = set()
    for first, last, definition in chunks:
        lines = range(first, last + 1)
        covered.update(lines)
        if not definition or CONTEXT_WORDS.search("".join(new[first - 1 : last])):
            kept.update(lines)
    if len(kept) > MAX_SHARE * max(len(new), 1):
        return None
    numbers = [n for n in range(1, len(new) + 1) if n in kept or n not in covered]
    linted = lint_source(path, "".join(new[n - 1] for n in numbers).encode("utf-8"), selection)
    if not linted.parsed and not linted.skipped:
        return None
    placed = [p for d in linted.diagnostics if d.path == path and (p := _placed(d, numbers)) is not None]
    return sorted(placed, key=lambda d: d.sort_key)


def _place(location: Location, numbers: Sequence[int]) -> Location | None:
    """A location of the reduced text in the full text (`numbers[i]` is the full line of reduced line i+1)."""
    if location.line - 1 < len(numbers):
        return Location(numbers[location.line - 1], location.column)
    if location.line - 1 == len(numbers) and location.column == 1:
        return Location((numbers[-1] if numbers else 0) + 1, 1)  # the end of the text
    return None


def _placed(diagnostic: Diagnostic, numbers: Sequence[int]) -> Diagnostic | None:
    start, end = _place(diagnostic.start, numbers), _place(diagnostic.end, numbers)
    if start is None or end is None:
        return None
    fix = diagnostic.fix
    if fix is not None:
        edits = [(_place(e.start, numbers), _place(e.end, numbers), e.content) for e in fix.edits]
        # an edit across lines that were left out would delete them: offer no fix then
        valid = all(
            a is not None and b is not None and (b.line - a.line) == (e.end.line - e.start.line)
            for (a, b, _), e in zip(edits, fix.edits, strict=True)
        )
        fix = (
            Fix(
                tuple(Edit(a, b, c) for a, b, c in edits if a is not None and b is not None),
                fix.applicability,
                fix.message,
            )
            if valid
            else None
        )
    return replace(diagnostic, start=start, end=end, fix=fix)
