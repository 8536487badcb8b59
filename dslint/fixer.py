"""Applying fixes to text: all chosen edits of a file in one pass, re-linted until nothing applicable remains.

The result is verified: it must parse, and the loop must converge (a second run would change nothing);
otherwise the original text is kept and the refusal is reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import libcst as cst

from dslint.diagnostics import Diagnostic, Edit, Fix, Location

MAX_ROUNDS = 10


class FixError(Exception):
    """A fix that would break the file; the file is left as it was."""


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)
    return starts


def offset_of(starts: Sequence[int], text_length: int, location: Location) -> int:
    """The character offset of a 1-based (line, column) location; past the last line means end of text."""
    if location.line - 1 >= len(starts):
        return text_length
    return min(starts[location.line - 1] + location.column - 1, text_length)


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits (in any order) to `text`."""
    starts = _line_starts(text)
    spans = sorted(
        ((offset_of(starts, len(text), e.start), offset_of(starts, len(text), e.end), e.content) for e in edits),
        key=lambda span: (span[0], span[1]),
    )
    pieces: list[str] = []
    cursor = 0
    for start, end, content in spans:
        if start < cursor:
            raise FixError("overlapping edits")
        pieces.append(text[cursor:start])
        pieces.append(content)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def _overlaps(a: Edit, b: Edit) -> bool:
    if a.start == a.end == b.start == b.end:
        return True  # two insertions at one point: their order would be arbitrary
    return (a.start < b.end and b.start < a.end) or (a.start == b.start)


def choose_fixes(fixes: Iterable[Fix]) -> list[Fix]:
    """A set of fixes whose edits do not overlap, earliest first; the rest wait for the next round."""
    chosen: list[Fix] = []
    taken: list[Edit] = []
    for fix in sorted(fixes, key=lambda f: min(e.start for e in f.edits)):
        if any(_overlaps(edit, other) for edit in fix.edits for other in taken):
            continue
        chosen.append(fix)
        taken.extend(fix.edits)
    return chosen


@dataclass
class FixOutcome:
    original: str
    text: str
    applied: list[Diagnostic] = field(default_factory=list)
    remaining: list[Diagnostic] = field(default_factory=list)
    error: str | None = None

    @property
    def changed(self) -> bool:
        return self.error is None and self.text != self.original


def _parses(text: str) -> bool:
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError:
        return False
    return True


def applicable(diagnostic: Diagnostic, unsafe: bool) -> bool:
    return diagnostic.fix is not None and (unsafe or diagnostic.fix.is_safe)


def fix_text(text: str, lint: Callable[[str], list[Diagnostic]], *, unsafe: bool = False) -> FixOutcome:
    """Fix `text` by rounds: lint, apply every non-overlapping applicable fix, verify, repeat."""
    outcome = FixOutcome(original=text, text=text)
    current = text
    for _ in range(MAX_ROUNDS):
        diagnostics = lint(current)
        fixes = {id(d.fix): d for d in diagnostics if applicable(d, unsafe)}
        if not fixes:
            outcome.text = current
            outcome.remaining = diagnostics
            return outcome
        chosen = choose_fixes(d.fix for d in fixes.values() if d.fix is not None)
        candidate = apply_edits(current, [edit for fix in chosen for edit in fix.edits])
        if len(chosen) > 1 and not _parses(candidate):
            # Fixes valid one by one can break the file together (two deletions that empty a block): one this round.
            chosen = chosen[:1]
            candidate = apply_edits(current, chosen[0].edits)
        try:
            cst.parse_module(candidate)
        except cst.ParserSyntaxError as error:
            codes = ", ".join(sorted({d.code for d in fixes.values() if d.fix in chosen}))
            outcome.error = (
                f"fixes for {codes} would produce code that does not parse ({error.message.splitlines()[0]})"
            )
            outcome.remaining = diagnostics
            return outcome
        outcome.applied.extend(d for d in fixes.values() if d.fix in chosen)
        current = candidate
    outcome.error = f"fixes did not settle after {MAX_ROUNDS} rounds; the file is left unchanged"
    outcome.remaining = lint(text)
    return outcome
