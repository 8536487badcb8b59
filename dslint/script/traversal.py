"""Running every script rule in ONE traversal, with a dispatch table built once per rule class.

libcst's own `visit_batched` asks `inspect.getmembers` of every visitor instance on every file (more than the
traversal itself on small scripts) and rebuilds every node; this uses the read-only walk instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import libcst as cst

from dslint.script.walk import walk

VisitorMethod = Callable[[cst.CSTNode], None]


@functools.cache
def _hook_names(rule_class: type[cst.BatchableCSTVisitor]) -> tuple[str, ...]:
    """The visit_*/leave_* methods a rule class defines (not libcst's empty defaults)."""
    names = []
    for name in dir(rule_class):
        if not name.startswith(("visit_", "leave_")):
            continue
        if getattr(rule_class, name) is not getattr(cst.BatchableCSTVisitor, name, None):
            names.append(name)
    return tuple(names)


def visit_all(module: cst.Module, visitors: Sequence[cst.BatchableCSTVisitor]) -> None:
    table: dict[str, list[VisitorMethod]] = {}
    for visitor in visitors:
        for name in _hook_names(type(visitor)):
            table.setdefault(name, []).append(getattr(visitor, name))
    if not table:
        return

    def enter(node: cst.CSTNode) -> None:
        for method in table.get("visit_" + type(node).__name__, ()):
            method(node)

    def leave(node: cst.CSTNode) -> None:
        for method in table.get("leave_" + type(node).__name__, ()):
            method(node)

    walk(module, enter, leave)
