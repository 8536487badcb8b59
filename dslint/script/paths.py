"""Path exclusivity in one script: which places can never run on the same path.

Every statement has the guards (`dslint.model.conditions.Guard`) that hold on the path to it in its function:
the arms of the `if`s holding it (`if args.deepspeed:` / `else:`, `elif`s), and the `if`s before it in an
enclosing block whose arm ends that block (`if args.ddp: ...; return`). Two places are exclusive when their guards
contradict: `if args.deepspeed: <initialize> else: <move>`, `if engine == "torch_ddp": <move>` in one function and
`if engine == "deepspeed": <initialize>` in another, a move before an early return that the initialize comes
after. The rules ask `PathGuards.exclusive(a, b)` (both here) or `excludes(node, guards)` (guards of a call in
another function or module, from the project model: `ProjectFacts.guards_of`).

The guards are read once, from CPython's tree (`conditions.statement_guards`); this module lays them over libcst's
statements by the pairing the script facts make for the bindings (`script/collect.py`: the statements of the two
trees in source order, one to one), and finds a place's guards as those of the innermost statement holding it.
Where the two trees cannot be paired (never seen on the fixtures or the real-code snapshots), no statement has
guards and no two places are exclusive.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Callable, Iterable, Sequence

import libcst as cst

from dslint.model.conditions import Guard, exclusive, statement_guards

Pos = int  # a traversal counter, as `ScriptFacts.start` gives it


class PathGuards:
    """The guards of every statement of one module, found by position."""

    def __init__(
        self,
        body: Sequence[ast.stmt],
        pairs: Iterable[tuple[ast.stmt, cst.CSTNode]],
        start: Callable[[cst.CSTNode], Pos],
        end: Callable[[cst.CSTNode], Pos],
    ):
        """`body`: CPython's tree of the module; `pairs`: each of its statements with libcst's twin."""
        self._start = start
        guards = statement_guards(body) if body else {}
        self._entries = sorted(
            ((start(ours), end(ours), guards.get(id(theirs), ())) for theirs, ours in pairs),
            key=lambda entry: entry[0],
        )
        self._guarded = any(entry[2] for entry in self._entries)
        self._starts = [entry[0] for entry in self._entries]

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
