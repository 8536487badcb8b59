"""A fast, source-ordered walk over a libcst tree, for analyses that only read it.

libcst's own `visit` rebuilds every node it passes (it is shared with transformers), which made up most of
dslint's time. Reading a node's dataclass fields directly is several times faster. Token and whitespace fields
(parentheses, commas, whitespace) are skipped, and the few node types whose fields are not declared in source
order are reordered, so that entry order is source order (`tests/test_walk.py` checks this on real code).

`visit_all` runs every script rule in ONE such walk, with a dispatch table built once per rule class: libcst's own
`visit_batched` asks `inspect.getmembers` of every visitor instance on every file (more than the traversal itself
on small scripts) and rebuilds every node.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Sequence

import libcst as cst

_TOKEN_FIELDS = frozenset(
    {
        "lpar",
        "rpar",
        "lbracket",
        "rbracket",
        "lbrace",
        "rbrace",
        "comma",
        "semicolon",
        "dot",
        "equal",
        "colon",
        "leading_lines",
        "trailing_whitespace",
        "lines_after_decorators",
        "header",
        "footer",
        "indent",
        "whitespace_between",
        "first_colon",
        "second_colon",
        "asynchronous",
        "star_tok",
        "posonly_ind",
        "relative",
    }
)

# Node types whose dataclass fields do not follow the source order.
_SOURCE_ORDER: dict[type[cst.CSTNode], tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "name", "type_parameters", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.Arg: ("keyword", "value"),
    cst.Parameters: ("posonly_params", "params", "star_arg", "kwonly_params", "star_kwarg"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.MatchCase: ("pattern", "guard", "body"),
}
for _name in ("ExceptStarHandler",):
    _type = getattr(cst, _name, None)
    if _type is not None:
        _SOURCE_ORDER[_type] = ("type", "name", "body")


@functools.cache
def child_fields(node_type: type[cst.CSTNode]) -> tuple[str, ...]:
    if node_type in _SOURCE_ORDER:
        return _SOURCE_ORDER[node_type]
    return tuple(
        f.name
        for f in dataclasses.fields(node_type)
        if f.name not in _TOKEN_FIELDS and not f.name.startswith("whitespace")
    )


# type -> whether it is a libcst node. Every libcst class has ABCMeta for its metaclass, so `isinstance(x,
# cst.CSTNode)` runs ABCMeta's Python-level check: the walk asks it of every field of every node, and a dict keyed by
# the value's type answers the same in a fraction of the time.
_NODE_TYPES: dict[type, bool] = {}


def _is_node_type(value_type: type) -> bool:
    known = _NODE_TYPES.get(value_type)
    if known is None:
        known = _NODE_TYPES[value_type] = issubclass(value_type, cst.CSTNode)
    return known


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """`node.children` without its tokens and whitespace, in source order, read from the fields directly:
    libcst's `children` runs a visitor that rebuilds the node to list them."""
    found: list[cst.CSTNode] = []
    node_types = _NODE_TYPES
    for name in child_fields(type(node)):
        value = getattr(node, name)
        value_type = type(value)
        if value_type is tuple or value_type is list:
            for item in value:
                item_type = type(item)
                known = node_types.get(item_type)
                if known or (known is None and _is_node_type(item_type)):
                    found.append(item)
            continue
        known = node_types.get(value_type)
        if known or (known is None and _is_node_type(value_type)):
            found.append(value)
    return found


def own_nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under `root` (not `root` itself), in source order, leaving out the functions, classes and
    lambdas nested in it (their own scopes: neither the definition nor anything in it)."""
    stack = list(reversed(children(root)))
    while stack:
        node = stack.pop()
        if type(node) in _OWN_SCOPES:
            continue
        yield node
        stack.extend(reversed(children(node)))


# libcst's node classes have no subclasses: the exact type answers `isinstance`, without ABCMeta's check
_OWN_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})


def all_nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under `root` (not `root` itself), nested functions, classes and lambdas included."""
    stack = list(reversed(children(root)))
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def own_returns(function: cst.FunctionDef) -> list[cst.Return]:
    """The `return` statements of `function`, not of the functions nested in it, in source order."""
    return [node for node in own_nodes(function) if isinstance(node, cst.Return)]


def walk(
    node: cst.CSTNode,
    enter: Callable[[cst.CSTNode], bool | None],
    leave: Callable[[cst.CSTNode], None],
) -> None:
    """Call `enter` on each node before its children (which it skips by returning False) and `leave` after them,
    in source order."""
    if enter(node) is not False:
        for child in children(node):
            walk(child, enter, leave)
    leave(node)


VisitorMethod = Callable[[cst.CSTNode], None]


@functools.cache
def _hook_names(rule_class: type[cst.BatchableCSTVisitor] | type[cst.CSTVisitor]) -> tuple[str, ...]:
    """The visit_*/leave_* methods a rule or visitor class defines (not libcst's empty defaults, which the two
    visitor bases share)."""
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
    _dispatch(module, table, {})


# per node type: the visitors' `visit_X` methods and their `leave_X` methods
_Hooks = tuple[tuple[VisitorMethod, ...], tuple[VisitorMethod, ...]]


def _dispatch(node: cst.CSTNode, table: dict[str, list[VisitorMethod]], hooks: dict[type, _Hooks]) -> None:
    """`walk` with `visit_all`'s enter and leave inlined: each node type's methods are looked up once per walk
    (`hooks`), not by name at every node; every node's children are walked (a visit's result is not read)."""
    node_type = type(node)
    found = hooks.get(node_type)
    if found is None:
        name = node_type.__name__
        found = hooks[node_type] = (tuple(table.get("visit_" + name, ())), tuple(table.get("leave_" + name, ())))
    visits, leaves = found
    for method in visits:
        method(node)
    for child in children(node):
        _dispatch(child, table, hooks)
    for method in leaves:
        method(node)


def visit_tree(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """`node.visit(visitor)` for a visitor that only reads (no transform): its `visit_X` before a node's children
    (returning False skips them, as libcst does) and its `leave_X` after, in source order, without libcst's
    rebuilding of every node on the way back (`_visit_and_replace_children`), which costs more than the visit.
    A visitor overriding `on_visit`/`on_leave` or the attribute hooks is not for this walk."""
    hooks = frozenset(_hook_names(type(visitor)))
    # per node type: the visitor's visit_X and leave_X (None where it has none), looked up once per walk
    methods: dict[type, tuple[Callable[[cst.CSTNode], bool | None] | None, VisitorMethod | None]] = {}

    def of(node_type: type) -> tuple[Callable[[cst.CSTNode], bool | None] | None, VisitorMethod | None]:
        found = methods.get(node_type)
        if found is None:
            visit, leave = "visit_" + node_type.__name__, "leave_" + node_type.__name__
            found = methods[node_type] = (
                getattr(visitor, visit) if visit in hooks else None,
                getattr(visitor, leave) if leave in hooks else None,
            )
        return found

    def enter(current: cst.CSTNode) -> bool | None:
        visit = of(type(current))[0]
        return visit(current) if visit is not None else None

    def leave(current: cst.CSTNode) -> None:
        method = of(type(current))[1]
        if method is not None:
            method(current)

    walk(node, enter, leave)
