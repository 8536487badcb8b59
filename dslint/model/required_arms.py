"""Which arms of a branch must have run for the code after it to run: the arms that bind a name read after it.

    if args.deepspeed:
        model_engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, ...)
    for epoch in range(args.epochs):
        train(model_engine, loader, optimizer)

`model_engine` is bound in the `if` arm only, nowhere else in its function, and read after the `if` on every path
that goes on: on the path that skips the arm the read raises (`UnboundLocalError`), so the code after the `if` runs
only after the arm, and `optimizer` there is initialize's. `values.merge` would otherwise leave `optimizer`
unknown (initialize's on one path, the plain optimizer on the other).

A name counts when it is bound in some arms and nowhere in the others, bound nowhere else in its scope (no parameter,
import, loop target, `global` or `nonlocal` name, no other assignment before or after; at module level, no star
import may define it either), and read after the branch in the same block, not only under a later branch: in a
simple statement, a branch's test, a loop's iterable, a `with` item, or the body of a loop, `with` or `try`
(never only in an `if`, `match` or `except` arm, the right of `and`/`or`, or an `x if c else y` arm, which may not
run). The arms kept are those that bind every such name; when no arm binds them all, nothing is pruned.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def scope_stores(body: Sequence[ast.stmt], params: Sequence[str], module_level: bool) -> dict[str, list[ast.AST]]:
    """Every binding of a plain name in one scope (nested functions and classes excluded, their names included),
    by name: the nodes that bind it. A name declared `global`/`nonlocal` or bound by a parameter or an import is
    marked with the scope's body itself (never inside any branch)."""
    stores: dict[str, list[ast.AST]] = {}
    everywhere = ast.Module(body=[], type_ignores=[])  # a marker no branch contains
    for name in params:
        stores.setdefault(name, []).append(everywhere)
    for node in _own_nodes(body):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            stores.setdefault(node.id, []).append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stores.setdefault(node.name, []).append(node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                stores.setdefault(name, []).append(everywhere)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    if module_level:
                        stores.setdefault("*", []).append(everywhere)
                    continue
                name = alias.asname or alias.name.partition(".")[0]
                stores.setdefault(name, []).append(everywhere)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            stores.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            stores.setdefault(node.rest, []).append(node)
    return stores


def required_arms(
    statement: ast.stmt,
    arms: Sequence[Sequence[ast.stmt]],
    rest: Sequence[ast.stmt],
    stores: dict[str, list[ast.AST]],
) -> list[int] | None:
    """The indexes of the arms of `statement` (as `arms` lists them) that the code after it needs, or None when
    every arm may have run (see the module's docstring)."""
    if "*" in stores:
        return None
    # a name that counts is bound only inside the statement, and read after it: both cheap to test first (the
    # lines of its bindings, before any walk of the arms), and most branches have no such name
    first, last = statement.lineno, statement.end_lineno or statement.lineno
    read_after = {
        name
        for name, nodes in stores.items()
        if all(first <= getattr(node, "lineno", 0) <= last for node in nodes) and _read_on_every_path(name, rest)
    }
    if not read_after:
        return None
    # each arm's bindings, at any depth and on any path through it: an arm is taken as not having run only where
    # it cannot bind the name at all
    in_arms = [scope_stores(arm, (), False) for arm in arms]
    bound_in = [set(found) for found in in_arms]
    candidates = set[str]().union(*bound_in) - set[str].intersection(*bound_in)
    needed: set[str] = set()
    for name in candidates:
        inside = {id(node) for found in in_arms for node in found.get(name, ())}
        if any(id(node) not in inside for node in stores.get(name, ())):
            continue  # bound elsewhere in the scope too (or a parameter, an import, a global)
        if name in read_after:  # a candidate's bindings are all inside the statement: tested above
            needed.add(name)
    if not needed:
        return None
    kept = [index for index, names in enumerate(bound_in) if needed <= names]
    return kept or None


def _read_on_every_path(name: str, rest: Sequence[ast.stmt]) -> bool:
    """Whether the statements after the branch read `name` where every path that goes on reaches the read (before
    anything rebinds it: a name bound only in the branch is not bound again after it)."""
    for statement in rest:
        if any(_reads(name, part) for part in _unconditional_parts(statement)):
            return True
        if isinstance(statement, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
            return False
    return False


def _unconditional_parts(statement: ast.stmt) -> Iterator[ast.AST]:
    """The parts of a statement that run whenever it runs (the bodies of loops, `with` and `try` included)."""
    if isinstance(statement, SCOPES[:3]):
        yield from statement.decorator_list
        return
    if isinstance(statement, ast.If):
        yield statement.test
    elif isinstance(statement, (ast.For, ast.AsyncFor)):
        yield statement.iter
        for inner in statement.body:
            yield from _unconditional_parts(inner)
    elif isinstance(statement, ast.While):
        yield statement.test
        for inner in statement.body:
            yield from _unconditional_parts(inner)
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        yield from statement.items
        for inner in statement.body:
            yield from _unconditional_parts(inner)
    elif isinstance(statement, ast.Try) or type(statement).__name__ == "TryStar":
        for inner in [*statement.body, *statement.finalbody]:  # type: ignore[attr-defined]
            yield from _unconditional_parts(inner)
    elif isinstance(statement, ast.Match):
        yield statement.subject
    else:
        yield statement


def _reads(name: str, node: ast.AST) -> bool:
    """A load of `name` in `node` that runs whenever `node` is evaluated."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Name):
            if current.id == name and isinstance(current.ctx, ast.Load):
                return True
            continue
        if isinstance(current, SCOPES):
            continue
        if isinstance(current, ast.BoolOp):
            stack.append(current.values[0])
            continue
        if isinstance(current, ast.IfExp):
            stack.append(current.test)
            continue
        if isinstance(current, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            stack.append(current.generators[0].iter)
            continue
        _push_children(stack, current)
    return False


def _push_children(stack: list[ast.AST], node: ast.AST) -> None:
    """`stack.extend(ast.iter_child_nodes(node))` without a generator per node: the same children, same order."""
    for name in node._fields:
        child = getattr(node, name, None)
        if isinstance(child, _AST):
            stack.append(child)
        elif type(child) is list:
            stack.extend([item for item in child if isinstance(item, _AST)])


_AST = ast.AST


def _own_nodes(body: Sequence[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of `body`, not descending into nested functions, classes and lambdas (their own nodes yielded)."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, SCOPES):
            if not isinstance(node, ast.Lambda):
                stack.extend(node.decorator_list)
            continue
        _push_children(stack, node)
