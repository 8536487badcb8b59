"""Engines a subclass inherits: a base class (any depth, any module) whose method stores initialize's engine on
`self.<attr>`, read as `self.<attr>` in the methods of its subclasses (the trainer-class shape).

    class BaseTrainer:                       # trainers/base.py
        def __init__(self, cfg):
            self.init_models()               # a subclass's override fills self.model
            self.init_engines()              # self.model, *_ = deepspeed.initialize(model=self.model, ...)

    class DPOTrainer(BaseTrainer):           # trainers/dpo.py
        def train_step(self, batch):
            loss = self.model(batch)         # the engine, with the base's config
            self.model.backward(loss)

Which reads see the engine is decided by the order the instance's `__init__` (its own or a base's) runs its
`self.m()` calls: the methods it calls before the first call that reaches the method storing the engine (and what
they call in turn) run before the engine exists, and their reads are left alone; so are `__init__` itself and the
storing methods. Every other method of the subclass runs on a constructed instance, after the engine is stored.
Nothing is answered when the order cannot be read (no `__init__` reaching the storing method), or when a subclass
method that runs after it assigns the attribute again.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from dslint.model.classes import ClassRef, Hierarchy
from dslint.model.evaluate import Evaluator
from dslint.model.library import ENGINE, ENGINE_MODULE, RESULT_ORDER
from dslint.model.summary import FunctionInfo, SummaryStore, character_column, own_nodes
from dslint.model.values import Item, Value

Span = tuple[int, int, int, int]  # line, column, end line, end column, as `ast` gives them
# How many `self.method()` calls deep the methods run before the engine exists are followed.
MAX_REACH = 3


def inherited_engine_reads(
    store: SummaryStore, hierarchy: Hierarchy, attributes: dict[tuple[str, str, str], Value]
) -> Iterator[tuple[str, Span, Item]]:
    """(path, span, value) for each `self.<attr>` (and `self.<attr>.module`) read in a subclass's method that runs
    after a base class's method stored one of initialize's results in the attribute."""
    for (path, owner, attribute), held in sorted(attributes.items(), key=lambda item: item[0]):
        if not isinstance(held, Item) or held.role not in (*RESULT_ORDER, ENGINE_MODULE):
            continue
        base: ClassRef = (path, owner)
        setters = _setters(store, base, attribute, held)
        if not setters:
            continue
        for sub in hierarchy.subclasses(base):
            yield from _reads_in(store, hierarchy, sub, attribute, setters, held)


def _setters(store: SummaryStore, cls: ClassRef, attribute: str, held: Item) -> set[tuple[str, str]]:
    """The methods of `cls` that store the engine in `self.<attribute>`: the one holding the initialize call, or,
    when a helper creates it, those assigning the attribute a call's result (a copy of a name is not one)."""
    module = store.get(cls[0])
    if module is None:
        return set()
    assigning = [
        function
        for function in module.functions.values()
        if function.owner == cls[1] and function.is_method and _assigns(function, attribute)
    ]
    holder = {
        (cls[0], f.qualname) for f in assigning if (cls[0], f.qualname) == (held.origin.path, held.origin.qualname)
    }
    if holder:
        return holder
    return {(cls[0], f.qualname) for f in assigning if _assigns(f, attribute, from_call=True)}


def _reads_in(
    store: SummaryStore,
    hierarchy: Hierarchy,
    sub: ClassRef,
    attribute: str,
    setters: set[tuple[str, str]],
    held: Item,
) -> Iterator[tuple[str, Span, Item]]:
    before = _run_before(store, hierarchy, sub, setters)
    if before is None:
        return
    module = store.get(sub[0])
    if module is None:
        return
    methods = [f for f in module.functions.values() if f.owner == sub[1] and f.is_method and f.params]
    after = [f for f in methods if (sub[0], f.qualname) not in before and not f.qualname.endswith(".__init__")]
    if any(_assigns(function, attribute) for function in after):
        return  # the subclass stores something else there once constructed: not one value
    module_role = ENGINE_MODULE if held.role == ENGINE else None
    for function in after:
        me = function.params[0]
        for node in own_nodes(function.node):
            if not isinstance(node, ast.Attribute):
                continue
            if (
                node.attr == "module"
                and module_role is not None
                and _is_self_attribute(node.value, me, attribute)
                and isinstance(node.ctx, ast.Load)
            ):
                yield sub[0], _span(node), Item(module_role, held.origin)
            if _is_self_attribute(node, me, attribute) and isinstance(node.ctx, ast.Load):
                yield sub[0], _span(node), held


def _run_before(
    store: SummaryStore, hierarchy: Hierarchy, cls: ClassRef, setters: set[tuple[str, str]]
) -> set[tuple[str, str]] | None:
    """The methods an instance of `cls` runs in `__init__` before the engine is stored (with the storing methods
    and `__init__`); None when `__init__` does not reach a storing method through its `self.m()` calls."""
    init = hierarchy.method(cls, "__init__")
    function = _function(store, init) if init is not None else None
    if init is None or function is None or not function.params:
        return None
    calls = _self_calls(function)
    for index, (name, _) in enumerate(calls):
        if _reaches(store, hierarchy, cls, name, setters, 0):
            before: set[tuple[str, str]] = {init, *setters}
            for earlier, _ in calls[:index]:
                _collect(store, hierarchy, cls, earlier, before, 0)
            return before
    return None


def _collect(
    store: SummaryStore, hierarchy: Hierarchy, cls: ClassRef, name: str, into: set[tuple[str, str]], depth: int
) -> None:
    callee = hierarchy.method(cls, name)
    if callee is None or callee in into or depth > MAX_REACH:
        return
    into.add(callee)
    function = _function(store, callee)
    if function is not None:
        for inner, _ in _self_calls(function):
            _collect(store, hierarchy, cls, inner, into, depth + 1)


def _reaches(
    store: SummaryStore, hierarchy: Hierarchy, cls: ClassRef, name: str, targets: set[tuple[str, str]], depth: int
) -> bool:
    callee = hierarchy.method(cls, name)
    if callee is None:
        return False
    if callee in targets:
        return True
    function = _function(store, callee) if depth < MAX_REACH else None
    return function is not None and any(
        _reaches(store, hierarchy, cls, inner, targets, depth + 1) for inner, _ in _self_calls(function)
    )


def _self_calls(function: FunctionInfo) -> list[tuple[str, ast.Call]]:
    """`self.name(...)` calls in a method's own body, in source order."""
    me = function.params[0] if function.params else None
    found = [
        (node.func.attr, node)
        for node in own_nodes(function.node)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == me
    ]
    found.sort(key=lambda item: (item[1].lineno, item[1].col_offset))
    return found


def _assigns(function: FunctionInfo, attribute: str, from_call: bool = False) -> bool:
    """Whether a method stores anything in `self.<attribute>` (only a call's result, with `from_call`)."""
    if not function.params:
        return False
    me = function.params[0]
    for node in own_nodes(function.node):
        if from_call:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, (ast.Call, ast.Subscript)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(_is_self_attribute(t, me, attribute) for target in targets for t in ast.walk(target)):
                    return True
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, (ast.Store, ast.Del))
            and _is_self_attribute(node, me, attribute)
        ):
            return True
    return False


def _is_self_attribute(node: ast.AST, me: str, attribute: str) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == attribute
        and isinstance(node.value, ast.Name)
        and node.value.id == me
    )


def _span(node: ast.expr) -> Span:
    return (node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or node.col_offset)


def _function(store: SummaryStore, callee: tuple[str, str]) -> FunctionInfo | None:
    module = store.get(callee[0])
    return module.functions.get(callee[1]) if module is not None else None


def inherited_values(model: Evaluator) -> Iterator[tuple[str, Span, Item]]:
    """`inherited_engine_reads` over a finished project model, with spans 1-based in characters (as libcst
    counts them), as `ProjectModel.instance_values` gives its answers."""
    lines_of: dict[str, list[bytes]] = {}
    for path, (line, column, end_line, end_column), value in inherited_engine_reads(
        model.store, model.hierarchy, model.attributes
    ):
        lines = lines_of.setdefault(path, model.store.sources.get(path, b"").splitlines())
        yield (
            path,
            (
                line,
                character_column(lines, line, column) + 1,
                end_line,
                character_column(lines, end_line, end_column) + 1,
            ),
            value,
        )
