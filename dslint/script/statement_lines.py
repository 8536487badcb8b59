"""Which lines a call's statement spans, from CPython's twin of that statement (`ScriptFacts.statement_pairs`),
without libcst's positions (a code generation of the whole module): the project's answers about calls are keyed
by where calls start, and a table none of whose keys lies within those lines has no answer for the call."""

from __future__ import annotations

import ast
import bisect
from collections.abc import Collection, Mapping, Sequence

import libcst as cst


class StatementLines:
    def __init__(
        self,
        theirs: Sequence[ast.stmt],
        ours: Sequence[cst.CSTNode],
        statement_of: Mapping[cst.Call, cst.CSTNode],
        small_statement_of: Mapping[cst.Call, cst.BaseSmallStatement],
    ) -> None:
        """`theirs` and `ours`: CPython's statements and libcst's twins, paired one to one, in source order."""
        self.twins = {id(node): twin for twin, node in zip(theirs, ours, strict=True)}
        self.statement_of = statement_of
        self.small_statement_of = small_statement_of
        self.key_lines: dict[int, tuple[object, list[int]]] = {}  # a project table -> the lines of its keys

    def may_hold(self, call: cst.Call, positions: Collection[tuple[int, int]]) -> bool:
        """Whether one of `positions` (line, column) may be where `call` starts: false when none lies within the
        lines of the statement holding it; true when that statement has no twin."""
        statement = self.small_statement_of.get(call) or self.statement_of.get(call)
        twin = self.twins.get(id(statement)) if statement is not None else None
        return twin is None or self.within(twin, positions)

    def within(self, twin: ast.stmt, positions: Collection[tuple[int, int]]) -> bool:
        """Whether one of `positions` lies within the lines of the CPython statement `twin` (a `def`'s
        decorators included)."""
        if twin.end_lineno is None:
            return True
        decorators = getattr(twin, "decorator_list", None)  # a `def`'s line is after its decorators'
        first = min([twin.lineno, *(d.lineno for d in decorators or ())])
        keys = self.key_lines.get(id(positions))
        if keys is None or keys[0] is not positions:
            keys = self.key_lines[id(positions)] = (positions, sorted({line for line, _ in positions}))
        at = bisect.bisect_left(keys[1], first)
        return at < len(keys[1]) and keys[1][at] <= twin.end_lineno
