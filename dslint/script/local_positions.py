"""Line and column of a node from the code generation of its statement alone, not of the whole module.

libcst's `PositionProvider` computes every node's range in one code generation pass over the module: on a large
script that pass cost more than the rules, though a lookup wants one call's start (the key of the project's
answers about it) or one finding's span. A small statement (`x = f(a)`, `engine.step()`) holds no block: started at
the line and column where it begins, with its block's indentation (what precedes it on its line, where it starts
the line: the continuation lines of its brackets repeat it), its code generation gives its nodes the same ranges
the whole pass would. Where it begins is read from CPython's twin of the statement
(`ScriptFacts.statement_twins`; the column converted from UTF-8 bytes to characters with the source's line), and
the statement's own range is checked against the twin's end too: a statement whose ranges disagree, one that does
not start its line (after a `;`), a node outside any small statement (a `def`, an `if`'s test), or iterating the
table falls back to the whole pass. A statement line (`SimpleStatementLine`, the span a fix deletes) is read from
its first and last small statements; a node of a compound statement's header (an `if`'s test, a `for`'s iterable)
from the code generation of the innermost compound statement holding it, started at the first of its own leading
comment and blank lines (not a `def` or `class`, whose decorators come first, nor an `elif`).
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Protocol

import libcst as cst
from libcst.metadata import CodeRange, PositionProvider

try:
    from libcst.metadata.position_provider import PositionProvidingCodegenState
except ImportError:  # a libcst that keeps it elsewhere: every lookup takes the whole pass
    PositionProvidingCodegenState = None  # type: ignore[assignment,misc]


class StatementFacts(Protocol):
    """What the lookups read of the script's facts (`ScriptFacts`)."""

    module: cst.Module
    text: str | None
    small_statement_of_call: dict[cst.Call, cst.BaseSmallStatement]
    statement_twins: tuple[Sequence[ast.stmt], Sequence[cst.CSTNode]] | None
    entered: dict[cst.CSTNode, int]
    exited: dict[cst.CSTNode, int]


_NEWLINE = re.compile(r"\r\n?|\n")  # how CPython and libcst count lines


class NodePositions(Mapping[cst.CSTNode, CodeRange]):
    """The facts' positions: a node's range from its small statement's table when it can be, else from the
    whole module's (`whole`, computed once, on the first lookup that needs it)."""

    def __init__(self, facts: StatementFacts, whole: Callable[[], Mapping[cst.CSTNode, CodeRange]]) -> None:
        self._facts = facts
        self._compute_whole = whole
        self._whole: Mapping[cst.CSTNode, CodeRange] | None = None
        self._tables: dict[int, Mapping[cst.CSTNode, CodeRange] | None] = {}
        self._lines: list[str] | None = None
        self._smalls: list[cst.BaseSmallStatement] | None = None
        self._starts: list[int] = []
        self._compounds: list[cst.BaseCompoundStatement] | None = None
        self._compound_starts: list[int] = []
        self._twins: dict[int, ast.stmt] | None = None

    @property
    def whole(self) -> Mapping[cst.CSTNode, CodeRange]:
        if self._whole is None:
            self._whole = self._compute_whole()
        return self._whole

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        if self._whole is None:
            found = self._line(node) if isinstance(node, cst.SimpleStatementLine) else self._local(node)
            if found is not None:
                return found
        return self.whole[node]

    def _line(self, line: cst.SimpleStatementLine) -> CodeRange | None:
        """A statement line's range from its first and last small statements' tables: libcst records the line from
        where its first statement's code starts (after the indentation) to where its last one ends (`end_node`),
        and a first statement's table is kept only when it starts where its code generation started."""
        if not line.body:
            return None
        first, last = self._local(line.body[0]), self._local(line.body[-1])
        return CodeRange(first.start, last.end) if first is not None and last is not None else None

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self.whole)

    def __len__(self) -> int:
        return len(self.whole)

    def _local(self, node: cst.CSTNode) -> CodeRange | None:
        facts = self._facts
        if facts.text is None or PositionProvidingCodegenState is None or facts.statement_twins is None:
            return None  # no source, or the traversal has not paired the statements yet
        statement: cst.CSTNode | None = facts.small_statement_of_call.get(node) if isinstance(node, cst.Call) else None
        if statement is None:
            statement = self._small_statement(node)
        if statement is None:
            statement = self._compound_statement(node)
        if statement is None:
            return None
        key = id(statement)
        if key not in self._tables:
            self._tables[key] = self._table(statement)
        table = self._tables[key]
        return table.get(node) if table is not None else None

    def _small_statement(self, node: cst.CSTNode) -> cst.BaseSmallStatement | None:
        """The small statement holding `node` (or `node` itself), by the traversal's order of entering nodes."""
        facts = self._facts
        if self._smalls is None:
            _, ours = facts.statement_twins or ((), ())
            self._smalls = [s for s in ours if isinstance(s, cst.BaseSmallStatement)]
            self._starts = [facts.entered[s] for s in self._smalls]
        entered, exited = facts.entered.get(node), facts.exited.get(node)
        if entered is None or exited is None:
            return None
        at = bisect.bisect_right(self._starts, entered) - 1
        if at < 0:
            return None
        statement = self._smalls[at]
        return statement if exited <= facts.exited[statement] else None

    def _compound_statement(self, node: cst.CSTNode) -> cst.BaseCompoundStatement | None:
        """The innermost compound statement holding `node` (an `if`'s test, a `for`'s iterable), by the traversal's
        order of entering and leaving nodes; not a `def` or `class` (its decorators come before its twin's line)."""
        facts = self._facts
        if self._compounds is None:
            _, ours = facts.statement_twins or ((), ())
            self._compounds = [s for s in ours if isinstance(s, cst.BaseCompoundStatement)]
            self._compound_starts = [facts.entered[s] for s in self._compounds]
        entered, exited = facts.entered.get(node), facts.exited.get(node)
        if entered is None or exited is None:
            return None
        at = bisect.bisect_right(self._compound_starts, entered) - 1
        while at >= 0:  # back from the last one entered before it: the first one it is inside holds it innermost
            statement = self._compounds[at]
            if exited <= facts.exited[statement]:
                return None if isinstance(statement, (cst.FunctionDef, cst.ClassDef)) else statement
            at -= 1
        return None

    def _table(self, statement: cst.CSTNode) -> Mapping[cst.CSTNode, CodeRange] | None:
        """The ranges of `statement`'s nodes, from its code generation started where its twin starts (a compound
        statement's from the first of the comment and blank lines it owns before it, one line each); None when it
        has no twin, is an `elif` (written `if` on its own), or the ranges disagree with the twin's."""
        twin = self._twin(statement)
        if twin is None or twin.end_lineno is None or twin.end_col_offset is None:
            return None
        start = (twin.lineno, self._column(twin.lineno, twin.col_offset))
        end = (twin.end_lineno, self._column(twin.end_lineno, twin.end_col_offset))
        if start[1] is None or end[1] is None:
            return None
        indent = self._source_line(start[0])[: start[1]]
        if indent.strip():  # after a `;` or a compound statement's colon: its block's indentation is not at hand
            return None
        compound = isinstance(statement, cst.BaseCompoundStatement)
        if compound and self._source_line(start[0])[start[1] :].startswith("elif"):
            return None
        owned = len(getattr(statement, "leading_lines", ())) if compound else 0
        module = self._facts.module
        provider = PositionProvider()
        computed = getattr(provider, "_computed", None)
        if not isinstance(computed, dict):
            return None
        state = PositionProvidingCodegenState(
            default_indent=module.default_indent,
            default_newline=module.default_newline,
            provider=provider,
            indent_tokens=[indent] if indent else [],
            line=start[0] - owned,
            column=0 if compound else start[1],
        )
        statement._codegen(state)
        own = computed.get(statement)
        if own is None or (own.start.line, own.start.column) != start or (own.end.line, own.end.column) != end:
            return None
        return computed

    def _twin(self, statement: cst.CSTNode) -> ast.stmt | None:
        if self._twins is None:
            theirs, ours = self._facts.statement_twins or ((), ())
            self._twins = {id(node): twin for twin, node in zip(theirs, ours, strict=True)}
        return self._twins.get(id(statement))

    def _source_line(self, line: int) -> str:
        """Line `line` (1-based) of the source, without its end; "" past the end."""
        if self._lines is None:
            self._lines = _NEWLINE.split(self._facts.text or "")
        return self._lines[line - 1] if 0 < line <= len(self._lines) else ""

    def _column(self, line: int, offset: int) -> int | None:
        """The character column of a UTF-8 byte offset into line `line` (1-based) of the source."""
        text = self._source_line(line)
        if text.isascii():
            return offset if offset <= len(text) else None
        encoded = text.encode("utf-8", "surrogatepass")
        if offset > len(encoded):
            return None
        try:
            return len(encoded[:offset].decode("utf-8"))
        except UnicodeDecodeError:
            return None
