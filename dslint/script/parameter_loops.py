"""The loop variables that run over an engine's parameters (`for p in engine.parameters()`, `for n, p in
model.named_parameters()` after `initialize`, the same in comprehensions), for the rules that read what a
parameter holds once DeepSpeed owns it (DSL436 its `.grad`, DSL441 its `.numel()`).

`EngineParameterLoops` is a mixin of script rules: its hooks keep the enclosing loops and comprehensions, innermost
last, and `parameter_loop(name)` says whether a name is such a loop variable there, over which engine.
"""

from __future__ import annotations

import libcst as cst

from dslint.model.engine import Engine
from dslint.script.facts import Role, ScriptFacts, method_name
from dslint.script.loop import ENGINE_ROLES, LoopFacts

PARAMETER_METHODS = frozenset({"parameters", "named_parameters"})


class EngineParameterLoops:
    """Hooks for a libcst visitor with `facts` and `loop` (set `targets = []` and `serial = 0` when it starts)."""

    facts: ScriptFacts
    loop: LoopFacts
    # (names, the engine, the loop's serial number): the engine for a loop over its parameters, None otherwise (an
    # inner loop may rebind the name)
    targets: list[tuple[frozenset[str], Engine | None, int]]
    serial: int

    def parameter_loop(self, name: cst.Name) -> tuple[Engine, int] | None:
        """The engine whose parameters the innermost loop binding `name` runs over, with that loop's serial number;
        None when the name is bound by another loop, or by none."""
        for names, engine, serial in reversed(self.targets):
            if name.value in names:
                return (engine, serial) if engine is not None else None
        return None

    def _parameters_of(self, target: cst.BaseExpression, iterated: cst.BaseExpression) -> tuple[str, Engine] | None:
        zipped = _zipped(target, iterated)  # `for shadow, p in zip(ema.parameters(), engine.parameters())`
        if zipped is not None:
            for element, items in zipped:
                found = self._parameters_of(element, items)
                if found is not None:
                    return found
            return None
        if not isinstance(iterated, cst.Call) or method_name(iterated) not in PARAMETER_METHODS:
            return None
        assert isinstance(iterated.func, cst.Attribute)
        answer = self.facts.role_of(iterated.func.value, at=iterated)
        if answer is None:
            return None
        if answer.role not in ENGINE_ROLES and not (
            answer.role is Role.RAW_MODEL and self.loop.after_initialize(answer.engine, iterated)
        ):
            return None
        variable: cst.BaseExpression = target
        if method_name(iterated) == "named_parameters":
            if not (isinstance(target, cst.Tuple) and len(target.elements) == 2):
                return None
            variable = target.elements[1].value
        return (variable.value, answer.engine) if isinstance(variable, cst.Name) else None

    def _bound(
        self, target: cst.BaseAssignTargetExpression, iterated: cst.BaseExpression
    ) -> tuple[frozenset[str], Engine | None, int]:
        self.serial += 1
        found = self._parameters_of(target, iterated)
        if found is not None:
            return frozenset({found[0]}), found[1], self.serial
        return frozenset(n.value for n in _names(target)), None, self.serial

    def visit_For(self, node: cst.For) -> None:
        self.targets.append(self._bound(node.target, node.iter))

    def leave_For(self, original_node: cst.For) -> None:
        self.targets.pop()

    # a comprehension's element is visited before its `for` clauses: they are bound when the comprehension starts
    def _enter_comprehension(self, node: cst.BaseComp | cst.DictComp) -> None:
        clause: cst.CompFor | None = node.for_in
        while clause is not None:
            self.targets.append(self._bound(clause.target, clause.iter))
            clause = clause.inner_for_in

    def _leave_comprehension(self, original_node: cst.BaseComp | cst.DictComp) -> None:
        clause: cst.CompFor | None = original_node.for_in
        while clause is not None:
            self.targets.pop()
            clause = clause.inner_for_in

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _enter_comprehension
    leave_ListComp = leave_SetComp = leave_GeneratorExp = leave_DictComp = _leave_comprehension


def _zipped(
    target: cst.BaseExpression, iterated: cst.BaseExpression
) -> list[tuple[cst.BaseExpression, cst.BaseExpression]] | None:
    """`zip(a, b)` unpacked into as many targets: each target with what it runs over; None for anything else."""
    if not (isinstance(iterated, cst.Call) and isinstance(iterated.func, cst.Name) and iterated.func.value == "zip"):
        return None
    if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != len(iterated.args):
        return None
    if any(arg.star or arg.keyword is not None for arg in iterated.args):
        return None
    return [(element.value, arg.value) for element, arg in zip(target.elements, iterated.args, strict=True)]


def _names(target: cst.CSTNode) -> list[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for element in target.elements for n in _names(element.value)]
    return []
