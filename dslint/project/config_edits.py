"""What a script does to a config dict between the literal and its reader, read with libcst: each module's
calls, item assignments and `update(...)` calls on dict names, and argparse defaults (`module_index`, once per
module); Python literals as config values (`literal_value`) and as positioned config trees
(`tree_from_literal`); and applying one assignment to a copy of a tree (`apply_mutation`). `config_link`
resolves a config through them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import libcst as cst

from dslint.config.tree import UNKNOWN, Array, Entry, Node, Object, Scalar
from dslint.diagnostics import Related
from dslint.model.bindings import Binding, BindingKind, ScopeKind
from dslint.script.names import dotted_name
from dslint.script.walk import own_nodes, visit_all

if TYPE_CHECKING:
    from dslint.script.context import ScriptContext
    from dslint.script.facts import ScriptFacts
    from dslint.script.project_facts import LaunchedConfig


def literal_value(node: cst.BaseExpression) -> Any:
    """A Python value for a literal expression (dicts, lists, strings, numbers, True/False/None)."""
    if isinstance(node, cst.Dict):
        result: dict[str, Any] = {}
        for element in node.elements:
            if not isinstance(element, cst.DictElement):
                return UNKNOWN  # `**other`: the whole dict is unknowable
            key = literal_value(element.key)
            if not isinstance(key, str):
                return UNKNOWN
            result[key] = literal_value(element.value)
        return result
    if isinstance(node, (cst.List, cst.Tuple)):
        return [literal_value(e.value) if isinstance(e, cst.Element) else UNKNOWN for e in node.elements]
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else UNKNOWN
    if isinstance(node, cst.Integer):
        return int(node.value.replace("_", ""), 0)
    if isinstance(node, cst.Float):
        return float(node.value.replace("_", ""))
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = literal_value(node.expression)
        return -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else UNKNOWN
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    return UNKNOWN


@dataclass
class Mutation:
    statement: cst.CSTNode
    anchor: cst.CSTNode  # the name of the changed dict, for its scope and position
    keys: list[cst.BaseExpression] | None  # None: the whole dict is changed (`cfg.update(...)`)
    value: cst.BaseExpression | None
    keywords: tuple[cst.Arg, ...] = ()  # `cfg.update(max_steps=20)` (keys [], value None): each top-level key written

    def unsure(self) -> Mutation:
        """The mutation where it may or may not have run: the key it writes takes an unknown value."""
        return Mutation(self.statement, self.anchor, self.keys, None)


def top_level_writes(mutation: Mutation) -> list[tuple[str | None, cst.BaseExpression | None]] | None:
    """The top-level keys `mutation` writes, each with the value it gives the key whole (None for a write into a
    part of it, `cfg["zero_optimization"]["stage"] = 3`); a key not written as a literal string is None. None:
    the dict changes in a way not known (`cfg.update(other)`, a `**other` in the literal given to `update`)."""
    keys, value = mutation.keys, mutation.value
    if keys is None:
        return None
    if keys:  # `cfg[key] = value`, or `cfg[key][...] = value`
        return [(_key_text(keys[0]), value if len(keys) == 1 else None)]
    if mutation.keywords:
        return [(arg.keyword.value if arg.keyword is not None else None, arg.value) for arg in mutation.keywords]
    if not isinstance(value, cst.Dict) or any(isinstance(e, cst.StarredDictElement) for e in value.elements):
        return None
    return [(_key_text(e.key), e.value) for e in value.elements if isinstance(e, cst.DictElement)]


def _key_text(node: cst.BaseExpression) -> str | None:
    text = node.evaluated_value if isinstance(node, cst.SimpleString) else None
    return text if isinstance(text, str) else None


@dataclass
class ModuleIndex:
    calls: list[cst.Call] = field(default_factory=list)
    mutations: dict[str, list[Mutation]] = field(default_factory=dict)
    option_defaults: dict[str, cst.BaseExpression] = field(default_factory=dict)
    required_options: set[str] = field(default_factory=set)  # `add_argument("--x", required=True)`


_INDEXES: dict[int, tuple[cst.Module, ModuleIndex]] = {}


def module_index(module: cst.Module) -> ModuleIndex:
    cached = _INDEXES.get(id(module))
    if cached is not None and cached[0] is module:
        return cached[1]
    index = ModuleIndex()
    visit_all(module, [_Indexer(index)])
    if len(_INDEXES) > 64:
        _INDEXES.clear()
    _INDEXES[id(module)] = (module, index)
    return index


class _Indexer(cst.BatchableCSTVisitor):
    def __init__(self, index: ModuleIndex) -> None:
        super().__init__()
        self.index = index
        # per function (the module first): a name bound to a literal-keyed part of another dict (`params =
        # cfg["optimizer"]["params"]`) -> that dict's name and the keys: a write through the name writes into it
        self.aliases: list[dict[str, tuple[str, list[cst.BaseExpression]]]] = [{}]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.aliases.append({})

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.aliases.pop()

    def visit_Call(self, node: cst.Call) -> None:
        self.index.calls.append(node)
        if isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            owner = dotted_name(node.func.value)
            if method == "update" and self._nested_update(node):
                pass
            elif method == "update" and owner is not None and _literal_update(node) is not None:
                # `cfg.update({"key": value, ...})`: those top-level keys, as a `cfg[key] = value` would write
                mutation = Mutation(node, node.func.value, [], _literal_update(node))
                self.index.mutations.setdefault(owner, []).append(mutation)
            elif method == "update" and owner is not None and _keyword_update(node):
                # `cfg.update(max_steps=20, ...)`: those top-level keys too
                mutation = Mutation(node, node.func.value, [], None, tuple(node.args))
                self.index.mutations.setdefault(owner, []).append(mutation)
            elif method in ("update", "setdefault", "pop", "clear", "popitem") and owner is not None:
                owner = self.aliases[-1].get(owner, (owner, []))[0]  # a part of a dict: the whole dict is unknown
                self.index.mutations.setdefault(owner, []).append(Mutation(node, node.func.value, None, None))
            if method == "add_argument":
                self._option(node)

    def _nested_update(self, node: cst.Call) -> bool:
        """`cfg["zero_optimization"].update({"stage": 3})`: one item assignment per key
        (`cfg["zero_optimization"]["stage"] = 3`); with keywords (`.update(stage=3)`) the dict becomes unknown.
        False when it is not of that shape."""
        assert isinstance(node.func, cst.Attribute)
        found = subscripted(node.func.value)
        if found is None:
            return False
        target, path = found
        owner = dotted_name(target)
        if not path or owner is None:
            return False
        items: list[tuple[cst.BaseExpression, cst.BaseExpression]] = []
        for arg in node.args:
            if arg.star or arg.keyword is not None:  # keys without a node of their own: the dict is unknown
                self.index.mutations.setdefault(owner, []).append(Mutation(node, target, None, None))
                return True
            if isinstance(arg.value, cst.Dict) and all(isinstance(e, cst.DictElement) for e in arg.value.elements):
                items.extend((e.key, e.value) for e in arg.value.elements if isinstance(e, cst.DictElement))
            else:
                return False
        for key, value in items:
            self.index.mutations.setdefault(owner, []).append(Mutation(node, target, [*path, key], value))
        return True

    def _option(self, node: cst.Call) -> None:
        names = [
            a.value.evaluated_value for a in node.args if a.keyword is None and isinstance(a.value, cst.SimpleString)
        ]
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        default = keywords.get("default")
        dest = keywords.get("dest")
        options = [n.lstrip("-").replace("-", "_") for n in names if isinstance(n, str) and n.startswith("--")]
        if isinstance(dest, cst.SimpleString) and isinstance(dest.evaluated_value, str):
            options = [dest.evaluated_value]
        required = keywords.get("required")
        if isinstance(required, cst.Name) and required.value == "True":
            self.index.required_options.update(options)
        if default is None:
            return
        for option in options:
            self.index.option_defaults[option] = default

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._subscript_target(node, target.target, node.value)
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            name = node.targets[0].target.value
            part = _literal_part(node.value)
            if part is not None:
                root, keys = part
                owner, prefix = self.aliases[-1].get(root, (root, []))  # a part of a part: the same dict
                self.aliases[-1][name] = owner, [*prefix, *keys]
            else:
                self.aliases[-1].pop(name, None)  # rebound to something else

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._subscript_target(node, node.target, None)

    def visit_Del(self, node: cst.Del) -> None:
        self._subscript_target(node, node.target, None)

    def _subscript_target(
        self, statement: cst.CSTNode, target: cst.BaseExpression, value: cst.BaseExpression | None
    ) -> None:
        found = subscripted(target)
        if found is None or not found[1]:
            return
        target, keys = found
        owner = dotted_name(target)
        if owner is not None:
            root, prefix = self.aliases[-1].get(owner, (owner, []))
            mutation = Mutation(statement, target, [*prefix, *keys], value)
            self.index.mutations.setdefault(root, []).append(mutation)


def subscripted(node: cst.BaseExpression) -> tuple[cst.BaseExpression, list[cst.BaseExpression]] | None:
    """`cfg["a"]["b"]`: (`cfg`, the key nodes from the outermost in: `"a"`, `"b"`); a node that is no subscript:
    (it, []); None when a subscript is a slice or holds several indexes."""
    keys: list[cst.BaseExpression] = []
    while isinstance(node, cst.Subscript):
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return None
        keys.append(node.slice[0].slice.value)
        node = node.value
    return node, list(reversed(keys))


def _literal_part(value: cst.BaseExpression) -> tuple[str, list[cst.BaseExpression]] | None:
    """`cfg["optimizer"]["params"]`: ("cfg", the key nodes in order), each key a string literal; else None."""
    found = subscripted(value)
    if found is None or not found[1] or not all(isinstance(key, cst.SimpleString) for key in found[1]):
        return None
    name = dotted_name(found[0])
    return (name, found[1]) if name is not None else None


def _keyword_update(call: cst.Call) -> bool:
    """`cfg.update(key=value, ...)`: keyword arguments only, none of them `**other`."""
    return bool(call.args) and all(arg.keyword is not None and not arg.star for arg in call.args)


def _literal_update(call: cst.Call) -> cst.Dict | None:
    """The dict literal of `cfg.update({...})` (one positional argument, no keywords)."""
    if len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star:
        value = call.args[0].value
        return value if isinstance(value, cst.Dict) else None
    return None


def copy_tree(node: Node) -> Node:
    if isinstance(node, Object):
        return Object(
            node.start,
            node.end,
            [Entry(e.key, e.key_start, e.key_end, copy_tree(e.value), e.source) for e in node.entries],
            node.opaque,
            node.written,
        )
    if isinstance(node, Array):
        return Array(node.start, node.end, [copy_tree(i) for i in node.items])
    assert isinstance(node, Scalar)
    return Scalar(node.start, node.end, node.value, node.via)


def apply_mutation(context: ScriptContext, tree: Node, mutation: Mutation) -> None:
    assert mutation.keys is not None
    current = tree
    if not mutation.keys and mutation.keywords:  # `cfg.update(key=value)`: each keyword replaces that key
        if not isinstance(current, Object):
            return
        for arg in mutation.keywords:
            assert arg.keyword is not None
            start, end = context.span(arg.keyword)
            current.entries = [e for e in current.entries if e.key != arg.keyword.value]
            current.entries.append(
                Entry(arg.keyword.value, start, end, tree_from_literal(context, arg.value), context.path)
            )
        return
    if not mutation.keys:  # `cfg.update({...})`: each key of the literal replaces that top-level key
        added = tree_from_literal(context, mutation.value) if mutation.value is not None else None
        if not isinstance(current, Object) or not isinstance(added, Object):
            return
        replaced = {entry.key for entry in added.entries}
        for written in added.entries:
            written.source = context.path
        current.entries = [e for e in current.entries if e.key not in replaced] + added.entries
        current.opaque = current.opaque or added.opaque
        return
    for position, key_node in enumerate(mutation.keys):
        if not isinstance(current, Object):
            return
        key = literal_value(key_node)
        if not isinstance(key, str):
            current.opaque = True  # a computed key: any key of this object may change
            return
        last = position == len(mutation.keys) - 1
        entry = current.entry(key)
        if last:
            start, end = context.span(key_node)
            if isinstance(mutation.statement, cst.Del):
                current.entries = [e for e in current.entries if e.key != key]
                return
            value: Node
            if mutation.value is not None and isinstance(mutation.statement, cst.Assign):
                value = tree_from_literal(context, mutation.value)
            else:
                value = Scalar(start, end, UNKNOWN)
            current.entries = [e for e in current.entries if e.key != key]
            current.entries.append(Entry(key, start, end, value, context.path))
            return
        if entry is None:
            start, end = context.span(key_node)
            created = Object(start, end, [], current.opaque, current.opaque)  # in a dict of unknown content
            current.entries.append(Entry(key, start, end, created, context.path))
            current = created
        else:
            current = entry.value


# --- dict literals as positioned trees ---------------------------------------------------------------------


_SECTION_DEPTH = 3  # sections bound to names, each inside the last, followed this deep


def tree_from_literal(
    context: ScriptContext, node: cst.BaseExpression, depth: int = 0, named: NamedKeys | None = None
) -> Node:
    """A positioned config tree for a Python expression; what is not a literal becomes an UNKNOWN scalar. A
    dict's value that is a name bound to a dict literal (`"zero_optimization": zero_opt`) is that literal, with
    the writes into the name (`section`). `named`: for the top dict, a key that is a name, with the string it holds
    and the value its entry then has on one path (`named_key_arms`)."""
    start, end = context.span(node)
    if isinstance(node, cst.Name) and depth < _SECTION_DEPTH:
        section = _section(context, node, depth)
        if section is not None:
            return section
    if isinstance(node, cst.Dict):
        tree = Object(start, end, [])
        for element in node.elements:
            if not isinstance(element, cst.DictElement):
                tree.opaque = True  # `**other`
                continue
            key = literal_value(element.key)
            value = element.value
            if named is not None and isinstance(element.key, cst.Name) and element.key.value in named:
                key, value = named[element.key.value]
            if not isinstance(key, str):
                tree.opaque = True
                continue
            key_start, key_end = context.span(element.key)
            tree.entries.append(Entry(key, key_start, key_end, tree_from_literal(context, value, depth)))
        return tree
    if isinstance(node, (cst.List, cst.Tuple)):
        items = [
            tree_from_literal(context, e.value) if isinstance(e, cst.Element) else Scalar(start, end, UNKNOWN)
            for e in node.elements
        ]
        return Array(start, end, items)
    value = literal_value(node)
    if isinstance(value, (dict, list)):
        value = UNKNOWN
    if value is UNKNOWN:
        value, via = command_line_value(context, node)
        return Scalar(start, end, value, via)
    return Scalar(start, end, value)


def _section(context: ScriptContext, name: cst.Name, depth: int) -> Object | None:
    """The dict literal `name` is bound to where it is read, in the same scope (`zero_opt = {...}` ... `return
    {"zero_optimization": zero_opt}`), with every write into the name after that binding applied (the dict is
    shared, so a write after the read changes it too); None when a write cannot be read (`zero_opt.update(x)`).
    A write on a path the binding's does not always take (`if lora: zero_opt["x"] = True`) may or may not happen:
    that key's value is unknown (gone from the tree, its object opaque)."""
    facts = context.facts
    scope = facts.scope_at(name)
    binding = facts.binding_at(name.value, scope, facts.start(name))
    if binding is None or binding.scope is not scope or not isinstance(binding.value, cst.Dict):
        return None
    bound = facts.start(binding.value)
    mutations = [
        m
        for m in module_index(context.module).mutations.get(name.value, [])
        if facts.scope_at(m.anchor) is scope and facts.start(m.anchor) > bound
    ]
    if any(m.keys is None for m in mutations):
        return None
    tree = tree_from_literal(context, binding.value, depth + 1)
    if not isinstance(tree, Object):
        return None
    guards = facts.paths.at(binding.value)
    for mutation in mutations:
        if facts.paths.at(mutation.anchor) == guards:
            apply_mutation(context, tree, mutation)
        else:
            _forget(tree, mutation)
    return tree


def _forget(tree: Object, mutation: Mutation) -> None:
    """A write that may not happen: the key it writes is unknown, and so is what its object lacks."""
    node: Node | None = tree
    for position, key_node in enumerate(mutation.keys or ()):
        if not isinstance(node, Object):
            return
        node.opaque = True
        key = literal_value(key_node)
        if not isinstance(key, str):
            return
        if position == len(mutation.keys or ()) - 1:
            node.entries = [e for e in node.entries if e.key != key]
            return
        entry = node.entry(key)
        node = entry.value if entry is not None else None
    if isinstance(node, Object):  # `zero_opt.update({...})` under a condition: any top key
        node.opaque = True
        if mutation.keywords:  # `cfg.update(key=value)`
            written_keys = {arg.keyword.value for arg in mutation.keywords if arg.keyword is not None}
            node.entries = [e for e in node.entries if e.key not in written_keys]
        added = mutation.value
        if isinstance(added, cst.Dict):
            written = {literal_value(e.key) for e in added.elements if isinstance(e, cst.DictElement)}
            node.entries = [e for e in node.entries if e.key not in written]


def parameter_function(binding: Binding) -> cst.FunctionDef | None:
    """The module-level function whose parameter `binding` binds; None for any other binding."""
    scope = binding.scope
    function = scope.node
    if binding.kind is not BindingKind.PARAMETER or not isinstance(function, cst.FunctionDef):
        return None
    return function if scope.parent is not None and scope.parent.kind is ScopeKind.MODULE else None


def fire_parameter(context: ScriptContext, binding: Binding) -> bool:
    """The parameter `binding` binds is an option of the command line: its module-level function is the one
    `fire.Fire(function)` runs (Python Fire makes each parameter a `--name` flag, its default the signature's)."""
    function = parameter_function(binding)
    if function is None:
        return False
    return any(
        context.facts.qualified(call.func) == "fire.Fire"
        and call.args
        and isinstance(call.args[0].value, cst.Name)
        and call.args[0].value.value == function.name.value
        for call in module_index(context.module).calls
    )


def command_line_value(context: ScriptContext, node: cst.BaseExpression) -> tuple[Any, tuple[Related, ...]]:
    """`args.opt` (an argparse option of this script with a literal default, or, in a module no launch starts, of
    the parsers of the launched scripts importing it) written into a config: the number every launch gives `--opt`
    (the default where a launch does not give it), when the project has launches of the script (or of its
    importers) and they all agree, with those launch lines; otherwise UNKNOWN."""
    if isinstance(node, cst.Name):  # a parameter of the function `fire.Fire` runs: the option of its name
        return _fire_value(context, node)
    if not (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)):
        return UNKNOWN, ()
    option = node.attr.value
    default_node = module_index(context.module).option_defaults.get(option)
    project = context.facts.project
    launches = project.launches if project is not None else ()
    declared: tuple[Related, ...] = ()  # where an importer's parser declares the option's default
    if default_node is not None:
        default = literal_value(default_node)
    elif project is not None and not launches and option in project.importer_defaults:  # `train(args)`
        (text, where), launches = project.importer_defaults[option], project.importer_launches
        default, declared = _number(text), (where,)
    else:
        return UNKNOWN, ()
    return _agreed_number(launches, option, default, declared)


def _fire_value(context: ScriptContext, node: cst.Name) -> tuple[Any, tuple[Related, ...]]:
    """A parameter of the function `fire.Fire` runs: the number every launch gives `--<name>` (the signature's
    default where a launch does not give it), when the project has launches of the script and they agree."""
    facts = context.facts
    function = _fire_function(context, node)
    if function is None:
        return UNKNOWN, ()
    params = function.params
    param = next((p for p in (*params.params, *params.kwonly_params) if p.name.value == node.value), None)
    default = literal_value(param.default) if param is not None and param.default is not None else UNKNOWN
    return _agreed_number(facts.project.launches if facts.project is not None else (), node.value, default, ())


def fire_given_text(context: ScriptContext, node: cst.Name) -> tuple[str | None, tuple[Related, ...]]:
    """A parameter of the function `fire.Fire` runs that every launch of the script gives as `--<name>`, all with
    one value: that text, with the launch lines; None when a launch leaves it to its default (no choice made),
    there is no launch, or they disagree."""
    facts = context.facts
    if _fire_function(context, node) is None:
        return None, ()
    launches = facts.project.launches if facts.project is not None else ()
    values = {launch.options.get(node.value) for launch in launches}
    given = values.pop() if len(values) == 1 else None
    return (given, tuple(launch.launch for launch in launches)) if given else (None, ())


def _fire_function(context: ScriptContext, node: cst.Name) -> cst.FunctionDef | None:
    """The function `fire.Fire` runs, when `node` names one of its parameters (an option of the command line)."""
    facts = context.facts
    binding = facts.binding_at(node.value, facts.scope_at(node), facts.start(node))
    return parameter_function(binding) if binding is not None and fire_parameter(context, binding) else None


def _agreed_number(
    launches: Sequence[LaunchedConfig], option: str, default: Any, declared: tuple[Related, ...]
) -> tuple[Any, tuple[Related, ...]]:
    """The number every launch gives `--option` (`default` where one does not), with the launch lines and
    `declared`; UNKNOWN when there is no launch, one gives no number, or they disagree."""
    values = {_number(launch.options[option]) if option in launch.options else default for launch in launches}
    value = values.pop() if len(values) == 1 else UNKNOWN  # none known (any value may be given), or they disagree
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    return (value, (*(launch.launch for launch in launches), *declared)) if numeric else (UNKNOWN, ())


def _number(text: str | None) -> Any:
    if text is None:
        return UNKNOWN
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return UNKNOWN


# A dict key that is a name: the name, and on one path the string it holds and the expression of the entry's value.
NamedKeys = dict[str, tuple[str, cst.BaseExpression]]


_BRANCHES = (cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.Match)


def _branches(scope: cst.CSTNode) -> list[cst.CSTNode]:
    """The `if`, loop, `try` and `match` statements of one scope (not of the functions and classes in it)."""
    return [node for node in own_nodes(scope) if isinstance(node, _BRANCHES)]


def conditional(facts: ScriptFacts, scope: cst.CSTNode, node: cst.CSTNode, since: cst.CSTNode) -> bool:
    """Whether `node` runs under an `if`, a loop, a `try` or a `match` of `scope` that does not also hold `since`
    (the dict's binding): a write there may or may not have happened (or its twin in another arm did)."""
    start, end = facts.start(node), facts.end(node)
    for branch in _branches(scope):
        holds = facts.start(branch) < start and end < facts.end(branch)
        if holds and not (facts.start(branch) < facts.start(since) and facts.end(since) < facts.end(branch)):
            return True
    return False
