"""Code the engine never runs through: the arm of an `if` that tests whether an object is a DeepSpeed engine
(`isinstance(model, deepspeed.DeepSpeedEngine)`, `hasattr(model, "backward")`, alone or as one condition of an
`and`) which runs only when it is
not one, the plain PyTorch path of a script that supports both. A finding there that speaks of the engine's loop
(the DSL3xx family: a `loss.backward()`, an `optimizer.step()`, a `zero_grad()` beside the engine) describes a
mistake the DeepSpeed run never makes, so the script's lint drops it, as it drops code after an exit
(`unreachable.py`)."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

from dslint.diagnostics import Diagnostic
from dslint.framework.rule import family_of
from dslint.model.library import ENGINE_ONLY_METHODS
from dslint.model.summary import dotted, nodes_of

# The classes whose instances are DeepSpeed engines (the last part of the tested name).
_ENGINE_CLASSES = frozenset({"DeepSpeedEngine", "PipelineEngine", "DeepSpeedHybridEngine"})
# The findings that assume the object is the engine, or that the loop runs through it.
_LOOP_FAMILY = "training loop"


def without_engine_else(path: str, diagnostics: Sequence[Diagnostic], tree: ast.Module | None) -> list[Diagnostic]:
    """`diagnostics` less this file's loop findings (`DSL3xx`) inside an arm that runs only when the tested
    object is no DeepSpeed engine."""
    if tree is None or not any(family_of(d.code) == _LOOP_FAMILY for d in diagnostics):
        return list(diagnostics)
    ranges = list(_not_engine_arms(tree))
    if not ranges:
        return list(diagnostics)
    return [
        d
        for d in diagnostics
        if d.path != path
        or d.cell is not None
        or family_of(d.code) != _LOOP_FAMILY
        or not any(first <= d.start.line <= last for first, last in ranges)
    ]


def _not_engine_arms(tree: ast.Module) -> Iterator[tuple[int, int]]:
    for node in nodes_of(tree, ast.If):
        if _requires_engine(node.test) and node.orelse:
            yield node.orelse[0].lineno, max(s.end_lineno or s.lineno for s in node.orelse)
        elif (
            isinstance(node.test, ast.UnaryOp)
            and isinstance(node.test.op, ast.Not)
            and _is_engine_test(node.test.operand)
        ):
            yield node.body[0].lineno, max(s.end_lineno or s.lineno for s in node.body)


def _requires_engine(test: ast.expr) -> bool:
    """The test holds only when its object is an engine: the `isinstance` itself, or one operand of an `and`."""
    if _is_engine_test(test):
        return True
    return isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and any(map(_is_engine_test, test.values))


def _is_engine_test(test: ast.expr) -> bool:
    """`isinstance(x, DeepSpeedEngine)`, or `hasattr(x, "backward")` (a method only an engine has among the
    objects a training loop holds: `library.ENGINE_ONLY_METHODS`)."""
    if (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "hasattr"
        and len(test.args) == 2
        and isinstance(test.args[1], ast.Constant)
    ):
        return test.args[1].value in ENGINE_ONLY_METHODS
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"):
        return False
    if len(test.args) != 2:
        return False
    classes = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
    names = [dotted(c) for c in classes]
    # every class tested is an engine class: `isinstance(m, (DeepSpeedEngine, DDP))` holds for other objects too
    return bool(names) and all(n is not None and n.rsplit(".", 1)[-1] in _ENGINE_CLASSES for n in names)
