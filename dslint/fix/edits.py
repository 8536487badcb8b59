"""Applying fixes to text: all chosen edits of a file in one pass, re-linted until nothing applicable remains.

The result is verified: it must parse (libcst's grammar and CPython's compiler), and the loop must converge (a
second run would change nothing); otherwise the original text is kept and the refusal is reported. Imports
that a fix needs (`Fix.imports`) are added once, in the same pass as the edits.

`fix_text(text, lint, unsafe=...)` is the engine; `dslint.fix.loop.fix_source` wraps it with dslint's own linter
for callers that start from a file's text.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from dslint.diagnostics import Diagnostic, Edit, Fix, Location
from dslint.lint.parse_guard import parse_module
from dslint.model.summary import module_imports
from dslint.script.names import dotted_name
from dslint.script.walk import visit_tree

MAX_ROUNDS = 10
PASS_ONLY = "a block would hold only `pass`"


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
    """What fixing one text produced. On a refusal (`error` set) `text` is the original and `applied` empty."""

    original: str
    text: str
    applied: list[Diagnostic] = field(default_factory=list)
    remaining: list[Diagnostic] = field(default_factory=list)
    error: str | None = None

    @property
    def changed(self) -> bool:
        return self.error is None and self.text != self.original


def applicable(diagnostic: Diagnostic, unsafe: bool) -> bool:
    return diagnostic.fix is not None and (unsafe or diagnostic.fix.is_safe)


def _parse_error(text: str) -> str | None:
    """Why `text` is not valid Python (libcst's grammar, then CPython's own compiler checks), or None."""
    try:
        parse_module(text)
    except cst.ParserSyntaxError as error:
        return error.message.splitlines()[0]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a SyntaxWarning in the user's code is not dslint's to print
            compile(text, "<fixed>", "exec", dont_inherit=True)
    except SyntaxError as error:
        return f"{error.msg} (line {error.lineno})"
    except ValueError as error:
        return str(error)
    return None


def _top_level_imports(code: str) -> dict[str, str] | None:
    """What the top-level import statements of `code` bind (`dslint.model.summary.module_imports`, as the script
    facts read imports); None when CPython cannot parse it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    statements: list[ast.stmt] = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
    return module_imports(ast.Module(body=statements, type_ignores=[]), None)[0]


def _import_key(statement: str) -> tuple[str, str] | None:
    """`import os` -> ("os", "os"); `from torch import nn` -> ("nn", "torch.nn"): the name bound and its path."""
    bound = _top_level_imports(statement)
    if bound is None or len(bound) != 1:
        return None
    return next(iter(bound.items()))


def import_edits(text: str, statements: Iterable[str]) -> list[Edit]:
    """One insertion holding each needed import the module lacks, after its docstring and `__future__` imports."""
    wanted = list(dict.fromkeys(statements))
    if not wanted:
        return []
    module = cst.parse_module(text)
    present = _top_level_imports(text) or {}
    first_code: cst.CSTNode | None = None
    for index, line in enumerate(module.body):
        if first_code is None and not _is_preamble(line, index):
            first_code = line
    missing = [s for s in wanted if (key := _import_key(s)) is None or present.get(key[0]) != key[1]]
    if not missing:
        return []
    newline = module.default_newline
    block = "".join(f"{statement}{newline}" for statement in missing)
    if first_code is None:
        if text and not text.endswith(("\n", "\r")):
            block = newline + block
        return [Edit.insertion(Location(len(_line_starts(text)) + 1, 1), block)]
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    position = wrapper.resolve(PositionProvider)[first_code].start
    return [Edit.insertion(Location(position.line, 1), block)]


def _is_preamble(line: cst.CSTNode, index: int) -> bool:
    """The module docstring and `from __future__ import ...`: imports must come after them."""
    if not isinstance(line, cst.SimpleStatementLine):
        return False
    small = line.body[0] if line.body else None
    if (
        index == 0
        and isinstance(small, cst.Expr)
        and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString))
    ):
        return True
    return isinstance(small, cst.ImportFrom) and dotted_name_of_module(small) == "__future__"


def dotted_name_of_module(node: cst.ImportFrom) -> str | None:
    return None if node.module is None or node.relative else dotted_name(node.module)


def fix_text(
    text: str,
    lint: Callable[[str], list[Diagnostic]],
    *,
    unsafe: bool = False,
    verify: Callable[[str], str | None] | None = None,
) -> FixOutcome:
    """Fix `text` by rounds: lint, apply every non-overlapping applicable fix (with the imports they need) in one
    pass, verify that the result parses, repeat until no applicable fix remains.

    `lint(text)` returns the findings of `text` (with fixes); `unsafe` also applies fixes marked unsafe;
    `verify(text)` says why a result is not acceptable, or None (default: it must parse as Python, compile when
    the original compiled, and hold no more `pass`-only blocks; a config file passes its own reader's check). When a
    round would produce text that does not parse, or the rounds do not settle (so a second run would change
    the text again), the outcome carries `error`, its `text` is the original and nothing counts as applied.
    """
    outcome = FixOutcome(original=text, text=text)
    current = text
    applied: list[Diagnostic] = []
    check_compiles: bool | None = None  # known once a fix applies: `lint` guards the parse of the original

    def problem_of(candidate: str, empty_before: int) -> str | None:
        if verify is not None:  # a config file: its own reader's check
            return verify(candidate)
        return _problem(candidate, bool(check_compiles), empty_before)

    for _ in range(MAX_ROUNDS):
        diagnostics = lint(current)
        fixes = {id(d.fix): d for d in diagnostics if applicable(d, unsafe)}
        if not fixes:
            outcome.text = current
            outcome.applied = applied
            outcome.remaining = diagnostics
            return outcome
        if check_compiles is None:
            check_compiles = verify is None and _parse_error(text) is None
        chosen = choose_fixes(d.fix for d in fixes.values() if d.fix is not None)
        empty_before = pass_only_blocks(current) if verify is None else 0
        try:
            candidate = _apply_fixes(current, chosen)
            if len(chosen) > 1 and problem_of(candidate, empty_before) is not None:
                # Fixes valid one by one can break the file together (two deletions that empty a block):
                # then only the first this round; the others come back in the next.
                chosen = chosen[:1]
                candidate = _apply_fixes(current, chosen)
        except FixError as error:
            return _refuse(outcome, lint, f"fixes would conflict ({error})")
        problem = problem_of(candidate, empty_before)
        if problem is not None:
            codes = ", ".join(sorted({d.code for d in fixes.values() if d.fix in chosen}))
            if problem == PASS_ONLY:
                return _refuse(outcome, lint, f"fixes for {codes} would leave a block that holds only `pass`")
            return _refuse(outcome, lint, f"fixes for {codes} would produce code that does not parse ({problem})")
        applied.extend(d for d in fixes.values() if d.fix in chosen)
        current = candidate
    return _refuse(outcome, lint, f"fixes did not settle after {MAX_ROUNDS} rounds; the file is left unchanged")


def _apply_fixes(text: str, chosen: Sequence[Fix]) -> str:
    edits = [edit for fix in chosen for edit in fix.edits]
    needed = import_edits(text, (statement for fix in chosen for statement in fix.imports))
    return apply_edits(text, [*needed, *edits])


def _problem(text: str, check_compiles: bool, empty_before: int) -> str | None:
    """Why `text` is not acceptable: it must parse, compile too when the original compiled, and hold no more
    blocks of only `pass` than before (a fix never leaves `if cond: pass` behind)."""
    if check_compiles:
        error = _parse_error(text)
        if error is not None:
            return error
    else:
        try:
            parse_module(text)
        except cst.ParserSyntaxError as parse_error:
            return parse_error.message.splitlines()[0]
    if pass_only_blocks(text) > empty_before:
        return PASS_ONLY
    return None


class _PassOnlyBlocks(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if all(_only_pass(line) for line in node.body):
            self.count += 1

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        if all(isinstance(small, cst.Pass) for small in node.body):
            self.count += 1


def _only_pass(line: cst.BaseStatement) -> bool:
    return isinstance(line, cst.SimpleStatementLine) and all(isinstance(small, cst.Pass) for small in line.body)


def pass_only_blocks(text: str) -> int:
    """How many blocks of `text` hold nothing but `pass` (0 when it does not parse)."""
    try:
        module = parse_module(text)
    except cst.ParserSyntaxError:
        return 0
    counter = _PassOnlyBlocks()
    visit_tree(module, counter)
    return counter.count


def _refuse(outcome: FixOutcome, lint: Callable[[str], list[Diagnostic]], reason: str) -> FixOutcome:
    outcome.error = reason
    outcome.text = outcome.original
    outcome.applied = []
    outcome.remaining = lint(outcome.original)
    return outcome
