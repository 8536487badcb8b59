"""Models headed for `deepspeed.initialize` through an attribute of `self`, across the methods of a class and
its subclasses: the trainer-class shape.

A base class's method hands `self.model` to initialize (`deepspeed.initialize(model=self.model, ...)`, or a helper
whose parameter reaches it: `self._init_engine(model=self.actor_model)`); another method, often a subclass's
override, fills that attribute first (`self.model = Net.from_pretrained(...).to(device)`), because a third method
(`__init__`) calls the two in that order: `self.init_models()` ... `self.init_engines()`. What that method assigns
to the attribute is then the model initialize receives, and a move or cast of it there is DeepSpeed's to do.

Only that order is trusted: a method that assigns the attribute without being called before the method that
reaches initialize (an evaluation helper, a method run after training) is never taken for a builder, and the
method holding the initialize call is left to the per-file view, which sees its own order.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from dslint.model.classes import MAX_DEPTH, ClassRef, Hierarchy
from dslint.model.library import INITIALIZE
from dslint.model.summary import FunctionInfo, ModuleSummary, SummaryStore, own_nodes
from dslint.model.values import InitSite

Callee = tuple[str, str]  # (module path, function qualname)
# How many `self.method()` calls deep a method may reach the one that hands the attribute on.
MAX_REACH = 3


@dataclass(frozen=True)
class AttributeSink:
    """`self.<attribute>` handed to initialize (directly or through a helper) in the method `method`."""

    cls: ClassRef
    attribute: str
    method: Callee
    site: InitSite
    at: tuple[int, int]  # the call that hands it on (`ast` line and offset)


@dataclass(frozen=True)
class AttributeBuilder:
    """A method that fills `self.<attribute>` with the model initialize receives: moves and casts of it up to
    `until` (line, column in `ast`'s offsets) apply, or up to the method's end when `until` is None."""

    method: Callee
    attribute: str
    until: tuple[int, int] | None
    site: InitSite


def attribute_builders(
    store: SummaryStore,
    hierarchy: Hierarchy,
    inits: dict[tuple[str, int, int], InitSite],
    handoffs: list[tuple[str, int, InitSite]],
) -> list[AttributeBuilder]:
    """Every method that fills an attribute a class hands to initialize, before the handing method runs.
    `handoffs`: (caller path, line, initialize site) of each call that passes a model to a helper whose
    parameter reaches initialize."""
    sinks = list(dict.fromkeys(_sinks(store, inits, handoffs)))
    found: dict[tuple[Callee, str], AttributeBuilder] = {}
    _clear()
    try:
        for sink in sinks:
            for cls in [sink.cls, *hierarchy.subclasses(sink.cls)]:
                for builder in _builders_in(store, hierarchy, cls, sink):
                    found.setdefault((builder.method, builder.attribute), builder)
    finally:  # the memos hold one build's trees
        _clear()
    return list(found.values())


# One build's memos: a method's `self.x()` calls and `self.x =` assignments (by its node), whether a name reaches
# a method (per class), the method a name finds along a class's bases.
_METHOD_FACTS: dict[int, tuple[list[tuple[str, ast.Call]], dict[str, list[tuple[int, int]]]]] = {}
_REACHES: dict[tuple[ClassRef, str, Callee, int], bool] = {}
_METHODS: dict[tuple[ClassRef, str], Callee | None] = {}


def _clear() -> None:
    _METHOD_FACTS.clear()
    _REACHES.clear()
    _METHODS.clear()


def _method(hierarchy: Hierarchy, cls: ClassRef, name: str) -> Callee | None:
    key = (cls, name)
    if key not in _METHODS:
        _METHODS[key] = hierarchy.method(cls, name)
    return _METHODS[key]


def _sinks(
    store: SummaryStore, inits: dict[tuple[str, int, int], InitSite], handoffs: list[tuple[str, int, InitSite]]
) -> Iterator[AttributeSink]:
    for site in inits.values():
        call = _call_at(store, site.path, site.qualname, site.line, site.column - 1)
        if call is not None:
            yield from _as_sink(store, site.path, site.qualname, _model_argument(call), site, call)
    for path, line, site in handoffs:
        module = store.get(path)
        qualname = module.function_at(line) if module is not None else None
        if module is None or qualname is None:
            continue
        for node in ast.walk(module.functions[qualname].node):
            if isinstance(node, ast.Call) and node.lineno == line:
                for argument in [*node.args, *(k.value for k in node.keywords)]:
                    yield from _as_sink(store, path, qualname, argument, site, node)


def _as_sink(
    store: SummaryStore, path: str, qualname: str, model: ast.expr | None, site: InitSite, call: ast.Call
) -> Iterator[AttributeSink]:
    module = store.get(path)
    function = module.functions.get(qualname) if module is not None else None
    if function is None or not function.is_method or not function.owner or model is None:
        return
    if isinstance(model, ast.Attribute) and isinstance(model.value, ast.Name) and model.value.id == function.params[0]:
        yield AttributeSink((path, function.owner), model.attr, (path, qualname), site, (call.lineno, call.col_offset))


def _model_argument(call: ast.Call) -> ast.expr | None:
    model = next((k.value for k in call.keywords if k.arg == INITIALIZE.model), None)
    position = INITIALIZE.positional.index("model")
    if model is None and len(call.args) > position and not isinstance(call.args[position], ast.Starred):
        model = call.args[position]
    return model


def _call_at(store: SummaryStore, path: str, qualname: str, line: int, offset: int) -> ast.Call | None:
    module = store.get(path)
    function = module.functions.get(qualname) if module is not None and qualname else None
    if function is None:
        return None
    for node in ast.walk(function.node):
        if isinstance(node, ast.Call) and node.lineno == line and node.col_offset == offset:
            return node
    return None


def _builders_in(
    store: SummaryStore, hierarchy: Hierarchy, cls: ClassRef, sink: AttributeSink
) -> Iterator[AttributeBuilder]:
    """In an instance of `cls`: each method P whose body calls `self.m()` before `self.n()`, where n reaches the
    sink's method, gives m (when it assigns the attribute) as a builder; P itself is one up to that call."""
    for orchestrator in _methods_along(store, hierarchy, cls):
        module, function = orchestrator
        self_calls = _self_calls(function)
        if (module.path, function.qualname) == sink.method:
            # the method that hands the attribute on: what it calls before (its own assignments are its own)
            earlier = [(name, call) for name, call in self_calls if (call.lineno, call.col_offset) < sink.at]
            yield from _called_builders(store, hierarchy, cls, sink, earlier)
            continue
        reaching = [i for i, (name, _) in enumerate(self_calls) if _reaches(hierarchy, cls, name, sink.method, 0)]
        if not reaching:
            continue
        first = reaching[0]
        handing = self_calls[first][1]
        if _assigns(function.node, function.params[0], sink.attribute, before=handing):
            yield AttributeBuilder(
                (module.path, function.qualname), sink.attribute, (handing.lineno, handing.col_offset), sink.site
            )
        yield from _called_builders(store, hierarchy, cls, sink, self_calls[:first])


def _called_builders(
    store: SummaryStore, hierarchy: Hierarchy, cls: ClassRef, sink: AttributeSink, earlier: list[tuple[str, ast.Call]]
) -> Iterator[AttributeBuilder]:
    """The methods called (as `self.name()`) before the attribute is handed on that assign it."""
    for name, _ in earlier:
        callee = _method(hierarchy, cls, name)
        if callee is None or callee == sink.method:
            continue
        target = _function(store, callee)
        if target is not None and target.params and _assigns(target.node, target.params[0], sink.attribute):
            yield AttributeBuilder(callee, sink.attribute, None, sink.site)


def _methods_along(
    store: SummaryStore, hierarchy: Hierarchy, cls: ClassRef
) -> Iterator[tuple[ModuleSummary, FunctionInfo]]:
    """The methods an instance of `cls` runs as its own: those of `cls` and of its bases, as the MRO finds them."""
    seen: set[str] = set()
    queue: list[tuple[ClassRef, int]] = [(cls, 0)]
    while queue:
        current, depth = queue.pop(0)
        module = store.get(current[0])
        if module is None or depth > MAX_DEPTH:
            continue
        for function in module.functions.values():
            name = function.qualname.rpartition(".")[2]
            if function.owner == current[1] and function.is_method and name not in seen:
                seen.add(name)
                if _method(hierarchy, cls, name) == (module.path, function.qualname):
                    yield module, function
        for written in module.classes.get(current[1], ()):
            base = hierarchy.resolve_class(module, written)
            if base is not None:
                queue.append((base, depth + 1))


def _self_calls(function: FunctionInfo) -> list[tuple[str, ast.Call]]:
    """`self.name(...)` calls in a method's own body (not in nested definitions), in source order."""
    return _method_facts(function.node, function.params[0] if function.params else None)[0]


def _method_facts(node: ast.AST, me: str | None) -> tuple[list[tuple[str, ast.Call]], dict[str, list[tuple[int, int]]]]:
    """One walk of a method's own body: its `me.name(...)` calls in source order, and where it assigns each
    `me.<attribute>` (line and offset of the statement)."""
    key = id(node)
    if key in _METHOD_FACTS:
        return _METHOD_FACTS[key]
    calls: list[tuple[str, ast.Call]] = []
    assigned: dict[str, list[tuple[int, int]]] = {}
    for inner in own_nodes(node) if me is not None else ():
        if isinstance(inner, ast.Call):
            func = inner.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == me:
                calls.append((func.attr, inner))
        elif isinstance(inner, (ast.Assign, ast.AnnAssign)):
            for target in inner.targets if isinstance(inner, ast.Assign) else [inner.target]:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == me:
                    assigned.setdefault(target.attr, []).append((inner.lineno, inner.col_offset))
    calls.sort(key=lambda item: (item[1].lineno, item[1].col_offset))
    _METHOD_FACTS[key] = (calls, assigned)
    return calls, assigned


def _reaches(hierarchy: Hierarchy, cls: ClassRef, name: str, target: Callee, depth: int) -> bool:
    key = (cls, name, target, depth)
    if key not in _REACHES:
        _REACHES[key] = _find_reaches(hierarchy, cls, name, target, depth)
    return _REACHES[key]


def _find_reaches(hierarchy: Hierarchy, cls: ClassRef, name: str, target: Callee, depth: int) -> bool:
    callee = _method(hierarchy, cls, name)
    if callee is None:
        return False
    if callee == target:
        return True
    if depth >= MAX_REACH:
        return False
    function = _function(hierarchy.store, callee)
    return function is not None and any(
        _reaches(hierarchy, cls, inner, target, depth + 1) for inner, _ in _self_calls(function)
    )


def _assigns(node: ast.AST, me: str, attribute: str, before: ast.Call | None = None) -> bool:
    """Whether a method body assigns `me.<attribute>` (before the call `before`, when given)."""
    places = _method_facts(node, me)[1].get(attribute, [])
    if before is None:
        return bool(places)
    return any(place < (before.lineno, before.col_offset) for place in places)


def _function(store: SummaryStore, callee: Callee) -> FunctionInfo | None:
    module = store.get(callee[0])
    return module.functions.get(callee[1]) if module is not None else None
