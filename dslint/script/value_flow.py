"""Which assignments of a name may reach which reads of it, within one function (or a module's top level).

A fix that removes or changes an assignment (`loss = loss / accum` deleted, say) changes the value every read
it reaches sees, on every path. `ValueFlow` answers "which reads may see this assignment" (and the reverse)
by a small reaching-definitions analysis over the statements of one scope: `if`/`else` branches join, loops run
to a fixed point (with `break` and `continue`), `try` handlers start from any state of their body.

Answers err on the side of "may reach": a fix that asks is refused more often, never wrongly allowed. Where the
analysis cannot follow a name (read by a nested function or lambda, declared `global`/`nonlocal`, bound in a
`match` statement or by `del`), it answers None for that name.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import libcst as cst

from dslint.script.facts import ScriptFacts
from dslint.script.walk import children

# The definitions that may reach a point, per name: ids of the defining nodes (statements, loop targets...).
State = dict[str, frozenset[int]]
ENTRY = 0  # the value a name has when the scope starts (a parameter, a global, nothing)


def _join(states: Iterable[State]) -> State:
    joined: dict[str, frozenset[int]] = {}
    for state in states:
        for name, defs in state.items():
            joined[name] = joined.get(name, frozenset()) | defs
    return joined


@dataclass
class _Loop:
    breaks: list[State] = field(default_factory=list)
    continues: list[State] = field(default_factory=list)


@dataclass
class ValueFlow:
    """The reaching definitions of one scope. Build with `value_flow(facts, scope_node)`."""

    reads: dict[int, tuple[cst.Name, frozenset[int]]] = field(default_factory=dict)  # id(Name) -> defs
    definitions: dict[int, cst.CSTNode] = field(default_factory=dict)
    untracked: set[str] = field(default_factory=set)

    def reads_reached_by(self, definition: cst.CSTNode, name: str) -> list[cst.Name] | None:
        """Every read of `name` that the binding made by `definition` may reach; None when `name` cannot be
        followed in this scope."""
        if name in self.untracked:
            return None
        key = id(definition)
        return [node for node, defs in self.reads.values() if node.value == name and key in defs]

    def definitions_reaching(self, read: cst.Name) -> list[cst.CSTNode] | None:
        """The statements whose binding of the name may be what `read` sees (the scope's entry value not
        included); None when unknown."""
        found = self.reads.get(id(read))
        if found is None or read.value in self.untracked:
            return None
        return [self.definitions[d] for d in found[1] if d != ENTRY]


class _Analysis:
    def __init__(self, flow: ValueFlow) -> None:
        self.flow = flow
        self.loops: list[_Loop] = []

    # --- expressions ------------------------------------------------------------------------------------------
    def read(self, node: cst.CSTNode | None, state: State) -> State:
        """Record every name `node` reads, in evaluation order; walrus targets bind. Returns the new state."""
        if node is None:
            return state
        if isinstance(node, cst.Name):
            self._record(node, state)
            return state
        if isinstance(node, cst.NamedExpr):
            state = self.read(node.value, state)
            return self.bind(node.target, node, state)
        if isinstance(node, cst.Attribute):
            return self.read(node.value, state)
        if isinstance(node, cst.Arg):
            return self.read(node.value, state)
        if isinstance(node, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            self._capture(node)
            return state
        for child in children(node):
            state = self.read(child, state)
        return state

    def _record(self, node: cst.Name, state: State) -> None:
        self.flow.reads[id(node)] = (node, state.get(node.value, frozenset({ENTRY})))

    def _capture(self, node: cst.CSTNode) -> None:
        """Names read inside a nested function, lambda or class: they may run at any time."""
        for name in _names_in(node):
            self.flow.untracked.add(name)

    # --- bindings ---------------------------------------------------------------------------------------------
    def bind(self, target: cst.CSTNode, definition: cst.CSTNode, state: State) -> State:
        if isinstance(target, cst.Name):
            self.flow.definitions[id(definition)] = definition
            return {**state, target.value: frozenset({id(definition)})}
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                state = self.bind(element.value, definition, state)
            return state
        if isinstance(target, cst.StarredElement):
            return self.bind(target.value, definition, state)
        # `x.attr = ...`, `x[i] = ...`: a read of `x`, not a binding
        return self.read(target, state)

    # --- statements -------------------------------------------------------------------------------------------
    def block(self, statements: Sequence[cst.CSTNode], state: State, seen: list[State] | None = None) -> State:
        for statement in statements:
            if seen is not None:
                seen.append(state)
            state = self.statement(statement, state)
        return state

    def suite(self, suite: cst.BaseSuite, state: State, seen: list[State] | None = None) -> State:
        if isinstance(suite, cst.IndentedBlock):
            return self.block(suite.body, state, seen)
        assert isinstance(suite, cst.SimpleStatementSuite)
        return self.small_statements(suite.body, state)

    def statement(self, statement: cst.CSTNode, state: State) -> State:
        if isinstance(statement, cst.SimpleStatementLine):
            return self.small_statements(statement.body, state)
        if isinstance(statement, cst.If):
            state = self.read(statement.test, state)
            taken = self.suite(statement.body, state)
            orelse = statement.orelse
            if orelse is None:
                return _join([taken, state])
            other = self.statement(orelse, state) if isinstance(orelse, cst.If) else self.suite(orelse.body, state)
            return _join([taken, other])
        if isinstance(statement, (cst.For, cst.While)):
            return self.loop(statement, state)
        if isinstance(statement, cst.Try):
            return self.try_statement(statement, state)
        if isinstance(statement, cst.With):
            for item in statement.items:
                state = self.read(item.item, state)
                if item.asname is not None:
                    state = self.bind(item.asname.name, item, state)
            return self.suite(statement.body, state)
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            for decorator in statement.decorators:
                state = self.read(decorator.decorator, state)
            if isinstance(statement, cst.FunctionDef):
                for param in _params(statement.params):
                    state = self.read(param.default, state)
            self._capture(statement)
            return self.bind(statement.name, statement, state)
        # match and anything newer: give up on every name it mentions
        for name in _names_in(statement):
            self.flow.untracked.add(name)
        return state

    def small_statements(self, smalls: Sequence[cst.BaseSmallStatement], state: State) -> State:
        for small in smalls:
            state = self.small_statement(small, state)
        return state

    def small_statement(self, small: cst.BaseSmallStatement, state: State) -> State:
        if isinstance(small, cst.Assign):
            state = self.read(small.value, state)
            for target in small.targets:
                state = self.bind(target.target, small, state)
            return state
        if isinstance(small, cst.AnnAssign):
            if small.value is None:
                return state
            state = self.read(small.value, state)
            return self.bind(small.target, small, state)
        if isinstance(small, cst.AugAssign):
            state = self.read(small.target, state)
            state = self.read(small.value, state)
            return self.bind(small.target, small, state)
        if isinstance(small, (cst.Global, cst.Nonlocal)):
            self.flow.untracked.update(item.name.value for item in small.names)
            return state
        if isinstance(small, cst.Del):
            self.flow.untracked.update(_names_in(small))
            return state
        if isinstance(small, (cst.Import, cst.ImportFrom)):
            return state  # module names: not what fixes move
        if isinstance(small, cst.Break) and self.loops:
            self.loops[-1].breaks.append(state)
            return state
        if isinstance(small, cst.Continue) and self.loops:
            self.loops[-1].continues.append(state)
            return state
        return self.read(small, state)

    def loop(self, statement: cst.For | cst.While, state: State) -> State:
        if isinstance(statement, cst.For):
            state = self.read(statement.iter, state)
        head = state
        loop = _Loop()
        for _ in range(20):
            self.loops.append(loop)
            loop.breaks.clear()
            loop.continues.clear()
            current = head
            if isinstance(statement, cst.While):
                current = self.read(statement.test, current)
            else:
                current = self.bind(statement.target, statement, current)
            end = self.suite(statement.body, current)
            self.loops.pop()
            new_head = _join([state, end, *loop.continues])
            if new_head == head:
                break
            head = new_head
        after = head if isinstance(statement, cst.For) else self.read(statement.test, head)
        if statement.orelse is not None:
            after = self.suite(statement.orelse.body, after)
        return _join([after, *loop.breaks])

    def try_statement(self, statement: cst.Try, state: State) -> State:
        seen: list[State] = []
        end = self.suite(statement.body, state, seen)
        anywhere = _join([*seen, end])
        outs = []
        for handler in statement.handlers:
            entry = self.read(handler.type, anywhere)
            if handler.name is not None:
                entry = self.bind(handler.name.name, handler, entry)
            outs.append(self.suite(handler.body, entry))
        if statement.orelse is not None:
            end = self.suite(statement.orelse.body, end)
        out = _join([end, *outs])
        if statement.finalbody is not None:
            out = self.suite(statement.finalbody.body, _join([out, anywhere]))
        return out


def _params(params: cst.Parameters) -> list[cst.Param]:
    found = [*params.posonly_params, *params.params, *params.kwonly_params]
    for extra in (params.star_arg, params.star_kwarg):
        if isinstance(extra, cst.Param):
            found.append(extra)
    return found


def _names_in(node: cst.CSTNode) -> set[str]:
    names: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            names.add(current.value)
        stack.extend(children(current))
    return names


_CACHE: weakref.WeakKeyDictionary[ScriptFacts, dict[int, ValueFlow]] = weakref.WeakKeyDictionary()


def value_flow(facts: ScriptFacts, scope_node: cst.CSTNode) -> ValueFlow:
    """The reaching definitions of the function (or module) `scope_node`, computed once per file and scope."""
    per_file = _CACHE.setdefault(facts, {})
    flow = per_file.get(id(scope_node))
    if flow is None:
        flow = ValueFlow()
        analysis = _Analysis(flow)
        if isinstance(scope_node, cst.FunctionDef):
            analysis.suite(scope_node.body, {})
        elif isinstance(scope_node, cst.Module):
            analysis.block(scope_node.body, {})
        else:
            flow.untracked.update(_names_in(scope_node))
        per_file[id(scope_node)] = flow
    return flow
