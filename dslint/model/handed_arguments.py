"""Calls that hand a chosen argument to a project function: the one walk `forwarded_parameters.py` (`x.module`
handed to a function that runs it forward) and `state_saving_calls.py` (the `accelerator` handed to a function
that saves its state) share. For every call in the given modules with an argument the caller selects, the callee
is found as the project model resolves calls (same module, imports, `self.method` along the bases) and the
argument is matched to the parameter receiving it (a positional slot, or the keyword's name).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from dslint.model.evaluate import Evaluator
from dslint.model.resolution import Callee, scope_of
from dslint.model.summary import FunctionInfo, character_column

Passed = tuple[int | None, str | None]  # (position, None) or (None, keyword)


def arguments_where(call: ast.Call, selected: Callable[[ast.expr], bool]) -> list[Passed]:
    """The arguments of `call` that are `selected`, positional ones before a `*args` and named keywords."""
    found: list[Passed] = []
    for index, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            break
        if selected(argument):
            found.append((index, None))
    found.extend((None, k.arg) for k in call.keywords if k.arg is not None and selected(k.value))
    return found


def positional(function: FunctionInfo, index: int | None) -> str | None:
    """The parameter a positional argument fills (`positional` leaves a method's `self` out)."""
    if index is None or index >= len(function.positional):
        return None
    return function.positional[index]


@dataclass(frozen=True)
class ResolvedCall:
    """In `path`, the function `qualname` ("" for module-level code) calls the project function `callee` at
    `line`/`column` (1-based, the column in characters)."""

    path: str
    qualname: str
    call: ast.Call
    line: int
    column: int
    callee: Callee


@dataclass(frozen=True)
class HandedArgument(ResolvedCall):
    """A resolved call that hands the callee (`function`) an argument at position `index` or by `keyword`, which
    the callee's parameter `param` receives."""

    function: FunctionInfo
    index: int | None
    keyword: str | None
    param: str


def resolved_calls(
    model: Evaluator, paths: Iterable[str], selected: Callable[[str, ast.Call], bool]
) -> Iterator[ResolvedCall]:
    """Every call in the modules `paths` that is `selected` (by path and call) and names a project function the
    model resolves (same module, imports, `self.method` along the bases), in the order of `paths`, each module's
    bodies and calls."""
    for path in paths:
        module = model.module(path)
        if module is None:
            continue
        lines = model.store.sources.get(path, b"").splitlines()
        for qualname, body_calls in module.body_calls():
            scope = scope_of(module, qualname)
            for call in body_calls:
                if not selected(path, call):
                    continue
                callee = model.resolve(module, scope, call.func)
                if callee is not None:
                    column = character_column(lines, call.lineno, call.col_offset) + 1
                    yield ResolvedCall(path, qualname, call, call.lineno, column, callee)


def handed_arguments(
    model: Evaluator, paths: Iterable[str], selected: Callable[[ast.expr], bool]
) -> Iterator[HandedArgument]:
    """Every selected argument handed to a project function the model resolves, in the order of `paths`, each
    module's bodies and calls; an argument no parameter receives is left out."""
    for found in resolved_calls(model, paths, lambda _, call: bool(arguments_where(call, selected))):
        function = model.function(found.callee)
        if function is None:
            continue
        for index, keyword in arguments_where(found.call, selected):
            param = keyword if keyword is not None else positional(function, index)
            if param is not None:
                yield HandedArgument(**vars(found), function=function, index=index, keyword=keyword, param=param)
