"""Path exclusivity in one script: which places can never run on the same path.

Every statement gets the guards (`dslint.model.conditions.Guard`) that hold on the path to it in its function:
the arms of the `if`s holding it (`if args.deepspeed:` / `else:`, `elif`s), and the `if`s before it in an
enclosing block whose arm ends that block (`if args.ddp: ...; return`). Two places are exclusive when their guards
contradict: `if args.deepspeed: <initialize> else: <move>`, `if engine == "torch_ddp": <move>` in one function and
`if engine == "deepspeed": <initialize>` in another, a move before an early return that the initialize comes
after. The rules ask `PathGuards.exclusive(a, b)` (both here) or `excludes(node, guards)` (guards of a call in
another function or module, from the project model: `ProjectFacts.guards_of`).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence

import libcst as cst

from dslint.model.conditions import TRUTHINESS, Guard, constant_guard, exclusive

Pos = int  # a traversal counter, as `ScriptFacts.start` gives it


def _subject(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _subject(node.value)
        return f"{base}.{node.attr.value}" if base is not None else None
    if isinstance(node, cst.Call) and not node.args:
        base = _subject(node.func)
        return f"{base}()" if base is not None and not base.endswith(")") else None
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        key = _constant(node.slice[0].slice.value)
        base = _subject(node.value)
        if base is not None and key is not _UNKNOWN and isinstance(key, (str, int)) and not isinstance(key, bool):
            return f"{base}[{key!r}]"
    return None


_UNKNOWN = object()


def _constant(node: cst.BaseExpression) -> object:
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, cst.Float):
        return float(node.evaluated_value)
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _constant(node.expression)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner
    return _UNKNOWN


def test_guards(test: cst.BaseExpression, truth: bool) -> tuple[Guard, ...]:
    """What `test` having `truth` tells, as guards (the libcst twin of `conditions.test_guards`)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test_guards(test.expression, not truth)
    if isinstance(test, cst.BooleanOperation):
        if isinstance(test.operator, cst.And) == truth:
            return test_guards(test.left, truth) + test_guards(test.right, truth)
        return ()
    if isinstance(test, cst.Comparison):
        if len(test.comparisons) != 1:
            return ()
        target = test.comparisons[0]
        subject = _subject(test.left)
        value = _constant(target.comparator)
        if subject is None or value is _UNKNOWN:
            return ()
        if isinstance(target.operator, (cst.Equal, cst.Is)):
            found = constant_guard(subject, value, truth)
        elif isinstance(target.operator, (cst.NotEqual, cst.IsNot)):
            found = constant_guard(subject, value, not truth)
        else:
            found = None
        return (found,) if found is not None else ()
    subject = _subject(test)
    return (Guard(subject, TRUTHINESS, truth),) if subject is not None else ()


_ENDS = (cst.Return, cst.Raise, cst.Continue, cst.Break)


def _terminates(suite: cst.BaseSuite | cst.CSTNode | None) -> bool:
    if isinstance(suite, cst.SimpleStatementSuite):
        return bool(suite.body) and isinstance(suite.body[-1], _ENDS)
    if isinstance(suite, cst.IndentedBlock) and suite.body:
        last = suite.body[-1]
        return isinstance(last, cst.SimpleStatementLine) and bool(last.body) and isinstance(last.body[-1], _ENDS)
    return False


class PathGuards:
    """The guards of every statement of one module, found by position."""

    def __init__(self, module: cst.Module, start: Callable[[cst.CSTNode], Pos], end: Callable[[cst.CSTNode], Pos]):
        self._start = start
        self._end = end
        self._entries: list[tuple[Pos, Pos, tuple[Guard, ...]]] = []
        self._guarded = False
        self._walk(module.body, ())
        self._entries.sort(key=lambda entry: entry[0])
        self._starts = [entry[0] for entry in self._entries]

    def _add(self, node: cst.CSTNode, guards: tuple[Guard, ...]) -> None:
        self._guarded = self._guarded or bool(guards)
        self._entries.append((self._start(node), self._end(node), guards))

    def _suite(self, suite: cst.BaseSuite, guards: tuple[Guard, ...]) -> None:
        if isinstance(suite, cst.IndentedBlock):
            self._walk(suite.body, guards)
        else:
            self._add(suite, guards)

    def _walk(self, body: Sequence[cst.CSTNode], active: tuple[Guard, ...]) -> None:
        for statement in body:
            if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                self._add(statement, active)  # the definition runs here; its body has guards of its own
                self._suite(statement.body, ())
                continue
            if isinstance(statement, cst.If):
                self._if(statement, active)
                if _terminates(statement.body) and not _terminates(_else_suite(statement)):
                    active += test_guards(statement.test, False)
                elif _terminates(_else_suite(statement)) and not _terminates(statement.body):
                    active += test_guards(statement.test, True)
                continue
            self._add(statement, active)
            for suite in _suites(statement):
                self._suite(suite, active)

    def _if(self, statement: cst.If, active: tuple[Guard, ...]) -> None:
        self._add(statement, active)
        self._suite(statement.body, active + test_guards(statement.test, True))
        orelse = statement.orelse
        negated = active + test_guards(statement.test, False)
        if isinstance(orelse, cst.If):
            self._if(orelse, negated)
        elif isinstance(orelse, cst.Else):
            self._suite(orelse.body, negated)

    def at(self, node: cst.CSTNode) -> tuple[Guard, ...]:
        """The guards on the path to `node` (the innermost statement holding it)."""
        return self.at_position(self._start(node))

    def at_position(self, pos: Pos) -> tuple[Guard, ...]:
        index = bisect.bisect_right(self._starts, pos) - 1
        while index >= 0:
            start, end, guards = self._entries[index]
            if start <= pos < end:
                return guards
            index -= 1
        return ()

    def exclusive(self, first: cst.CSTNode | Pos, second: cst.CSTNode | Pos) -> bool:
        """Whether the two places (nodes or positions) of this module never run on one path."""
        if not self._guarded:
            return False
        return exclusive(self._guards(first), self._guards(second))

    def excludes(self, node: cst.CSTNode | Pos, guards: Iterable[Guard]) -> bool:
        """Whether `node` never runs on a path where `guards` (of a call elsewhere) hold."""
        if not self._guarded:
            return False
        return exclusive(self._guards(node), guards)

    def _guards(self, place: cst.CSTNode | Pos) -> tuple[Guard, ...]:
        return self.at_position(place) if isinstance(place, int) else self.at(place)


def _else_suite(statement: cst.If) -> cst.CSTNode | None:
    orelse = statement.orelse
    return orelse.body if isinstance(orelse, cst.Else) else None


def _suites(statement: cst.CSTNode) -> list[cst.BaseSuite]:
    found: list[cst.BaseSuite] = []
    for name in ("body", "orelse", "finalbody"):
        part = getattr(statement, name, None)
        if isinstance(part, cst.BaseSuite):
            found.append(part)
        elif part is not None and isinstance(getattr(part, "body", None), cst.BaseSuite):
            found.append(part.body)  # `else:`, `finally:`
    for handler in getattr(statement, "handlers", ()) or ():
        found.append(handler.body)
    for case in getattr(statement, "cases", ()) or ():
        found.append(case.body)
    return found
