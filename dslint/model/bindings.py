"""The scopes of one module and every binding in each, from its `ast` tree: the one binding model.

`module_bindings(tree)` reads a module's scopes (the module, each class, each function; comprehensions and lambdas
are not scopes here) and, in each, every binding of a name or of an attribute chain (`self.x` canonical in a method,
whatever its first parameter is called): assignment targets (tuple unpacking and starred targets element by
element), annotated and augmented assignments, walrus targets, `for` targets, `with ... as` names, `except ... as`
names, parameters, and the names of `def` and `class` statements; `global` and `nonlocal` send a later binding of
the name to the module. Each binding keeps the node it holds from (`anchor`: from its start, or from its end when
`from_end`), the statement (or walrus, `with` item, handler) that makes it and the value it is given. A binding an
`except` handler makes of a name its `try` body binds to an initialize result is a fallback: read after the
handler, the `try`'s binding stands (the path where DeepSpeed runs is the one a finding is about).

The table is laid over another tree of the same code by `place`: the per-file script facts
(`dslint.script.collect`) lay it over libcst's nodes, numbered in their one traversal, so that rules read the
bindings as libcst nodes while the bindings themselves come from here. `Bindings.binding_at` is the one reading
of which binding a name has at a place: the latest before it in its scope, through enclosing functions (class
bodies are not seen from their methods), `global` names in the module, `self.x` from any method of the class.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from dslint.model.summary import dotted, nodes_of

# Order positions: numbers that grow along the source (a traversal's entry and exit counters once placed).
Pos = int


class ScopeKind(enum.Enum):
    MODULE = "module"
    CLASS = "class"
    FUNCTION = "function"


class BindingKind(enum.Enum):
    INIT_ITEM = "initialize result item"
    INIT_TUPLE = "initialize result tuple"
    PARAMETER = "parameter"
    OTHER = "other"


@dataclass(eq=False)
class Scope:
    kind: ScopeKind
    node: Any = field(repr=False)  # the Module, ClassDef or FunctionDef of the tree the table is placed on
    parent: Scope | None = field(repr=False)
    bindings: dict[str, list[Binding]] = field(default_factory=dict, repr=False)
    global_names: set[str] = field(default_factory=set)
    # In a method: the name of its first parameter (`self`); attribute keys on it are stored as "self.x".
    self_name: str | None = None
    # In a class: every `self.x` binding made by any of its methods.
    attribute_bindings: dict[str, list[Binding]] = field(default_factory=dict, repr=False)

    def enclosing_class(self) -> Scope | None:
        if self.kind is ScopeKind.FUNCTION and self.parent is not None and self.parent.kind is ScopeKind.CLASS:
            return self.parent
        return None

    def bindings_in_other_methods(self, key: str) -> list[Binding]:
        """In a method: the bindings of `self.x` (`key`, as stored) that the class's other methods make."""
        owner = self.enclosing_class()
        return [b for b in owner.attribute_bindings.get(key, ()) if b.scope is not self] if owner is not None else []


@dataclass(eq=False)
class Binding:
    key: str
    scope: Scope = field(repr=False)
    kind: BindingKind
    anchor: Any = field(repr=False)  # the binding holds from this node's start (its end when `from_end`)
    from_end: bool
    statement: Any = field(repr=False)  # the statement, walrus, `with` item or handler that binds
    value: Any = field(default=None, repr=False)  # the value of a whole target (None for an unpacked element)
    # An element of an unpacked target: its index, the number of elements and the starred one's index.
    element: tuple[int, int, int | None] | None = None
    home: Scope | None = field(default=None, repr=False)  # the scope that holds it (the module's for a `global`)
    pos: Pos = 0  # set by `place`
    # A binding an `except` handler makes of a name its `try` body binds too (`try: engine, *_ =
    # deepspeed.initialize(...)` / `except Exception: engine = model`): the failure path's value. Read after the
    # handler (past `fallback_end`, set by `place`), the `try`'s binding stands for the name.
    fallback: Any = field(default=None, repr=False)
    fallback_end: Pos | None = None
    fallback_of: tuple[Binding, ...] = field(default=(), repr=False)  # the `try`'s bindings of the name
    # What the per-file facts add: whose initialize results an INIT_ITEM / INIT_TUPLE holds, and which item.
    engine: Any = field(default=None, repr=False)
    index: int | None = None
    # `self.x = ...` straight in a constructor's own body (no `if`, loop, `try` or `with` around it): once the
    # instance exists, the last of those holds unless another method binds it
    constructor_body: bool = False

    @property
    def result_slot(self) -> int | None:
        """Which of initialize's results the binding holds: its index, -1 for the whole tuple, None for none."""
        if self.kind is BindingKind.INIT_TUPLE:
            return -1
        if self.kind is BindingKind.INIT_ITEM and self.index is not None and 0 <= self.index < RESULT_ARITY:
            return self.index
        return None


RESULT_ARITY = 4  # deepspeed.initialize's results (`library.INITIALIZE.returns`), as the facts number them


@dataclass(eq=False)
class Bindings:
    """One module's scopes and bindings; `statements`, `handlers`, `items` and `walruses` are the nodes bindings
    hang on, each kind in source order, so that another tree of the same code can be laid over them (`place`).
    A binding is seen by `binding_at` once placed and entered (`enter`), in source order."""

    module_scope: Scope
    scopes: dict[int, Scope]  # id of a ClassDef / FunctionDef -> its scope
    every: list[Binding]  # in the order they are made, along the source
    statements: list[ast.stmt]
    handlers: list[ast.ExceptHandler]
    items: list[ast.withitem]
    walruses: list[ast.NamedExpr]

    def scope_of(self, node: ast.AST) -> Scope | None:
        return self.scopes.get(id(node))

    def place(
        self,
        nodes: Callable[[ast.AST], Any],
        start: Callable[[Any], Pos],
        end: Callable[[Any], Pos],
        value_of: Callable[[Any], Any],
    ) -> None:
        """Lay the table over another tree of the same code: `nodes` gives the other tree's node for each of the
        model's (None where there is none: the binding is dropped), `start` and `end` its order positions,
        `value_of` the value of the other tree's binding statement."""
        self.module_scope.node = nodes(self.module_scope.node)
        for scope in self.scopes.values():
            scope.node = nodes(scope.node)
        kept: list[Binding] = []
        for binding in self.every:
            anchor = nodes(binding.anchor)
            statement = nodes(binding.statement)
            if anchor is None or statement is None:
                continue  # not in the other tree
            binding.pos = end(anchor) if binding.from_end else start(anchor)
            binding.anchor, binding.statement = anchor, statement
            handler = nodes(binding.fallback) if binding.fallback is not None else None
            binding.fallback, binding.fallback_end = handler, end(handler) if handler is not None else None
            binding.value = value_of(statement) if binding.value is not None else None
            kept.append(binding)
        # in the order they hold from (stable: the bindings of one statement keep theirs)
        kept.sort(key=lambda b: b.pos)
        self.every = kept
        for scope in [self.module_scope, *self.scopes.values()]:
            scope.bindings.clear()
            scope.attribute_bindings.clear()

    def enter(self, binding: Binding) -> None:
        """Make a placed binding visible to `binding_at` (in `every`'s order: a name's bindings in source order)."""
        home = binding.home or binding.scope
        home.bindings.setdefault(binding.key, []).append(binding)
        owner = binding.scope.enclosing_class()
        if owner is not None and binding.key.startswith("self."):
            owner.attribute_bindings.setdefault(binding.key, []).append(binding)

    # --- which binding a name has ---------------------------------------------------------------------------
    def binding_at(
        self, key: str, scope: Scope, pos: Pos, usable: Callable[[Binding], bool] = lambda _: True
    ) -> Binding | None:
        """The binding of `key` visible at `pos` in `scope` (among those `usable` lets through); None when it
        cannot be known."""
        head, dot, rest = key.partition(".")
        if scope.self_name is not None and head == scope.self_name:
            canonical = "self" + dot + rest
            local = _latest(scope.bindings.get(canonical), pos, usable)
            if local is not None:
                return local
            if scope.enclosing_class() is None:
                return None
            return _summary(scope.bindings_in_other_methods(canonical), usable)
        if dot:
            # Other attribute chains (`args.model`, `trainer.engine`): only what this scope itself bound.
            return _latest(scope.bindings.get(key), pos, usable)
        current: Scope | None = scope
        crossed_function = False
        while current is not None:
            if current.kind is ScopeKind.CLASS and current is not scope:
                current = current.parent
                continue
            if key in current.global_names and current is not self.module_scope:
                current = self.module_scope
                crossed_function = True
                continue
            bindings = current.bindings.get(key)
            if bindings:
                if crossed_function:
                    return _summary(bindings, usable)
                return _latest(bindings, pos, usable)
            if current.kind is ScopeKind.FUNCTION:
                crossed_function = True
            current = current.parent
        return None


def _latest(bindings: Sequence[Binding] | None, pos: Pos, usable: Callable[[Binding], bool]) -> Binding | None:
    if not bindings:
        return None
    found = None
    for binding in bindings:
        if binding.fallback_end is not None and pos > binding.fallback_end and _tried_engine(binding):
            continue  # an `except` handler's fallback for the engine, read after it: the `try`'s binding stands
        if usable(binding) and binding.pos <= pos:
            found = binding
    return found


def _tried_engine(fallback: Binding) -> bool:
    """The `try` the handler falls back from bound the name to an initialize result (the engine, its optimizer...):
    where DeepSpeed runs, that is the name's value. Other names keep both values (`try: tag = latest()` / `except:
    tag = 0`: the fallback is a value the code may well run with)."""
    return any(binding.result_slot is not None for binding in fallback.fallback_of)


def _summary(bindings: Sequence[Binding] | None, usable: Callable[[Binding], bool]) -> Binding | None:
    """The binding a name has when read from a function that runs later (positions do not apply).

    Setup code binds the engine once; other functions read it afterwards. So an initialize result wins when all
    such results agree; a single plain binding stands for itself, and so does the last of an attribute's bindings
    when every one is made straight in the constructor's body (`self.model = Net()`, then `self.model, self.opt =
    accelerator.prepare(self.model, self.opt)`: what the other methods see); anything else is unknown.
    """
    if not bindings:
        return None
    kept = [b for b in bindings if usable(b)]
    results = [b for b in kept if b.result_slot is not None]
    if results:
        slots = {b.result_slot for b in results}
        return results[-1] if len(slots) == 1 else None
    if len(kept) > 1 and all(b.constructor_body and b.scope is kept[0].scope for b in kept):
        return kept[-1]
    return kept[0] if len(kept) == 1 else None


# --- reading a module --------------------------------------------------------------------------------------------
def module_bindings(tree: ast.Module) -> Bindings:
    """The scopes and bindings of a module (see the module's docstring)."""
    reader = _Reader(tree)
    reader.block(tree.body)
    table = reader.table
    table.walruses.sort(key=lambda w: (w.lineno, w.col_offset))
    return table


class _Reader:
    def __init__(self, tree: ast.Module) -> None:
        module = Scope(ScopeKind.MODULE, tree, None)
        self.table = Bindings(module, {}, [], [], [], [], [])
        self.scopes = [module]
        # a module without a walrus anywhere (most): no expression is searched for one (`expressions`)
        self.walrus = bool(nodes_of(tree, ast.NamedExpr))

    @property
    def scope(self) -> Scope:
        return self.scopes[-1]

    def block(self, body: list[ast.stmt]) -> None:
        for statement in body:
            self.statement(statement)

    def statement(self, node: ast.stmt) -> None:
        self.table.statements.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.function(node)
        elif isinstance(node, ast.ClassDef):
            self.bind(node.name, BindingKind.OTHER, node, False, node)
            scope = Scope(ScopeKind.CLASS, node, self.scope)
            self.table.scopes[id(node)] = scope
            self.scopes.append(scope)
            self.expressions([*node.decorator_list, *node.bases, *node.keywords])
            self.block(node.body)
            self.scopes.pop()
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            self.scope.global_names.update(node.names)
        elif isinstance(node, ast.Assign):
            self.expressions([node.value])
            for target in node.targets:
                self.expressions([target])
                self.target(target, node.value, node)
        elif isinstance(node, ast.AnnAssign):
            self.expressions([node.annotation, node.value, node.target])
            if node.value is not None:
                self.target(node.target, node.value, node)
        elif isinstance(node, ast.AugAssign):
            self.expressions([node.target, node.value])
            key = dotted(node.target)
            if key is not None:
                self.bind(key, BindingKind.OTHER, node, True, node)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self.plain(node.target, node, False, node)
            self.expressions([node.target, node.iter])
            self.block(node.body)
            self.block(node.orelse)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                self.table.items.append(item)
                self.expressions([item.context_expr, item.optional_vars])
                if item.optional_vars is not None:
                    self.plain(item.optional_vars, item, True, item)
            self.block(node.body)
        elif isinstance(node, ast.Try):
            self.tried(node, star=False)
        elif type(node).__name__ == "TryStar":  # Python 3.11's `except*`, with a `try`'s fields
            self.tried(cast(ast.Try, node), star=True)
        elif isinstance(node, (ast.If, ast.While)):
            self.expressions([node.test])
            self.block(node.body)
            self.block(node.orelse)
        elif isinstance(node, ast.Match):
            self.expressions([node.subject])
            for case in node.cases:
                self.expressions([case.pattern, case.guard])
                self.block(case.body)
        else:
            self.expressions([node])

    def tried(self, node: ast.Try, *, star: bool) -> None:
        before = len(self.table.every)
        self.block(node.body)
        tried: dict[tuple[str, int], list[Binding]] = {}
        for binding in self.table.every[before:]:
            tried.setdefault((binding.key, id(binding.scope)), []).append(binding)
        for handler in node.handlers:
            self.table.handlers.append(handler)
            # `except* E as e` binds nothing here, as the script facts read it
            if handler.name is not None and not star:
                self.bind(handler.name, BindingKind.OTHER, handler, False, handler)
            self.expressions([handler.type])
            start = len(self.table.every)
            self.block(handler.body)
            for binding in self.table.every[start:]:
                shadowed = tried.get((binding.key, id(binding.scope)))
                if shadowed:  # `except: engine = model` after the `try` bound `engine`
                    binding.fallback, binding.fallback_of = handler, tuple(shadowed)
        self.block(node.orelse)
        self.block(node.finalbody)

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.bind(node.name, BindingKind.OTHER, node, False, node)
        parent = self.scope
        scope = Scope(ScopeKind.FUNCTION, node, parent)
        self.table.scopes[id(node)] = scope
        args = node.args
        ordered = [*args.posonlyargs, *args.args]
        is_static = any(dotted(d) == "staticmethod" for d in node.decorator_list)
        if parent.kind is ScopeKind.CLASS and ordered and not is_static:
            scope.self_name = ordered[0].arg
        self.scopes.append(scope)
        every = [*ordered, *args.kwonlyargs]
        every += [extra for extra in (args.vararg, args.kwarg) if extra is not None]
        for param in every:
            self.bind(param.arg, BindingKind.PARAMETER, node, False, node)
        self.expressions([*node.decorator_list, args, node.returns])
        self.block(node.body)
        self.scopes.pop()

    def expressions(self, nodes: Sequence[ast.AST | None]) -> None:
        """Walrus targets in expressions (at any depth, lambdas and comprehensions included)."""
        if not self.walrus:
            return
        for node in nodes:
            if node is None:
                continue
            for found in _walruses(node):
                self.table.walruses.append(found)
                self.target(found.target, found.value, found)

    # --- targets --------------------------------------------------------------------------------------------------
    def target(self, target: ast.expr, value: ast.expr, statement: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            elements = target.elts
            star = next((i for i, e in enumerate(elements) if isinstance(e, ast.Starred)), None)
            for i, element in enumerate(elements):
                if isinstance(element, ast.Starred):
                    self.plain(element.value, statement, True, statement)
                    continue
                key = dotted(element)
                if key is None:
                    self.plain(element, statement, True, statement)
                else:
                    self.bind(key, BindingKind.OTHER, statement, True, statement, element=(i, len(elements), star))
            return
        key = dotted(target)
        if key is not None:
            self.bind(key, BindingKind.OTHER, statement, True, statement, value=value)

    def plain(self, target: ast.expr, anchor: ast.AST, from_end: bool, statement: ast.AST) -> None:
        key = dotted(target)
        if key is not None:
            self.bind(key, BindingKind.OTHER, anchor, from_end, statement)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.plain(element.value if isinstance(element, ast.Starred) else element, anchor, from_end, statement)

    def bind(
        self,
        key: str,
        kind: BindingKind,
        anchor: ast.AST,
        from_end: bool,
        statement: ast.AST,
        *,
        value: ast.expr | None = None,
        element: tuple[int, int, int | None] | None = None,
    ) -> None:
        scope = self.scope
        head, dot, rest = key.partition(".")
        if scope.self_name is not None and head == scope.self_name:
            key = "self" + dot + rest
        target_scope = self.table.module_scope if (not dot and key in scope.global_names) else scope
        binding = Binding(key, scope, kind, anchor, from_end, statement, value=value, element=element)
        binding.home = target_scope
        if dot and key.startswith("self.") and getattr(scope.node, "name", None) == "__init__":
            binding.constructor_body = any(statement is line for line in scope.node.body)
        self.table.every.append(binding)


def _walruses(node: ast.AST) -> Iterator[ast.NamedExpr]:
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.NamedExpr):
            yield current
        stack.extend(ast.iter_child_nodes(current))
