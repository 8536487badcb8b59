"""A `torch.load` of a file the same function wrote with `torch.save` from CPU tensors: nothing in it was saved
from a GPU, so the load puts nothing on one, whatever its `map_location` (DSL202 asks).

The file is matched by its path as written, with the values of f-strings left open (`f"part-{rank}.bin"` written,
`f"part-{other}.bin"` read: the same files), directly or through `with open(path, "wb") as f`. What was saved is a
name the function binds to an empty dict (`{}`, `dict()`, `OrderedDict()`) and fills by key, every value a tensor
moved to the CPU (`.cpu()`, `.to("cpu")`), or a tuple of one and plain attributes beside it (`(p.data.cpu(),
p.numel_saved)`). Anything else saved (a state dict of a live model, a tensor of unknown device) is not this.
"""

from __future__ import annotations

import libcst as cst

from dslint.script.facts import ScriptFacts, method_name
from dslint.script.names import dotted_name
from dslint.script.walk import visit_tree

TORCH_SAVE = "torch.save"
_EMPTY_DICTS = frozenset({"dict", "collections.OrderedDict", "OrderedDict"})


class _OpenPaths(cst.CSTTransformer):
    """The path with every f-string value replaced by one placeholder."""

    def leave_FormattedStringExpression(
        self, original_node: cst.FormattedStringExpression, updated_node: cst.FormattedStringExpression
    ) -> cst.FormattedStringExpression:
        return updated_node.with_changes(expression=cst.Name("_"), format_spec=None, conversion=None)


def _template(module: cst.Module, path: cst.BaseExpression) -> str:
    return module.code_for_node(path.visit(_OpenPaths()))  # type: ignore[arg-type]


class _Function(cst.CSTVisitor):
    """One function's `with open(...) as f` names, `torch.save` calls, dict bindings and keyed stores."""

    def __init__(self, facts: ScriptFacts, function: cst.CSTNode) -> None:
        super().__init__()
        self.facts = facts
        self.function = function
        self.opened: dict[str, list[cst.BaseExpression]] = {}
        self.saves: list[cst.Call] = []
        self.bindings: dict[str, list[cst.BaseExpression]] = {}
        self.stores: dict[str, list[cst.BaseExpression]] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.function

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_WithItem(self, node: cst.WithItem) -> None:
        item = node.item
        if (
            node.asname is not None
            and isinstance(node.asname.name, cst.Name)
            and isinstance(item, cst.Call)
            and dotted_name(item.func) == "open"
            and item.args
        ):
            self.opened.setdefault(node.asname.name.value, []).append(item.args[0].value)

    def visit_Call(self, node: cst.Call) -> None:
        if self.facts.qualified(node.func) == TORCH_SAVE and len(node.args) >= 2:
            self.saves.append(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            name = target.target
            if isinstance(name, cst.Name):
                self.bindings.setdefault(name.value, []).append(node.value)
            elif isinstance(name, cst.Subscript) and isinstance(name.value, cst.Name):
                self.stores.setdefault(name.value.value, []).append(node.value)
            else:
                for element in getattr(name, "elements", ()):
                    if isinstance(element.value, cst.Name):
                        self.bindings.setdefault(element.value.value, []).append(cst.Name("unknown"))


def _on_cpu(facts: ScriptFacts, value: cst.BaseExpression) -> bool:
    if not isinstance(value, cst.Call):
        return False
    name = method_name(value)
    if name == "cpu":
        return True
    if name == "to" and value.args:
        first = value.args[0].value
        return isinstance(first, cst.SimpleString) and first.evaluated_value == "cpu"
    return False


def _cpu_value(facts: ScriptFacts, value: cst.BaseExpression) -> bool:
    if _on_cpu(facts, value):
        return True
    if isinstance(value, (cst.Tuple, cst.List)):
        parts = [element.value for element in value.elements]
        tensors = [part for part in parts if _on_cpu(facts, part)]
        plain = [part for part in parts if isinstance(part, cst.Attribute) and dotted_name(part) is not None]
        return bool(tensors) and len(tensors) + len(plain) == len(parts)
    return False


def loads_own_cpu_save(facts: ScriptFacts, call: cst.Call) -> bool:
    """Whether the file `call` (a `torch.load`) reads is one its function wrote earlier from CPU tensors only."""
    if not call.args:
        return False
    function = facts.scope_at(call).node
    if not isinstance(function, cst.FunctionDef):
        return False
    found = _Function(facts, function)
    visit_tree(function, found)
    if not found.saves:
        return False
    module = facts.module
    paths = _paths(found, call.args[0].value)
    if not paths:
        return False
    read = {_template(module, path) for path in paths}
    for save in found.saves:
        if facts.start(save) >= facts.start(call):
            continue
        written = {_template(module, path) for path in _paths(found, save.args[1].value)}
        if not written or not written <= read:
            continue
        saved = save.args[0].value
        if isinstance(saved, cst.Name) and _filled_on_cpu(facts, found, saved.value, facts.start(save)):
            return True
    return False


def _paths(found: _Function, target: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The paths a `torch.save`/`torch.load` file argument names: itself, or what `open(...)` opened as it."""
    if isinstance(target, cst.Name):
        return list(found.opened.get(target.value, []))
    if isinstance(target, (cst.SimpleString, cst.FormattedString, cst.Call, cst.BinaryOperation)):
        return [target]
    return []


def _filled_on_cpu(facts: ScriptFacts, found: _Function, name: str, saved_at: int) -> bool:
    """Before the save (at `saved_at`), `name` is only bound to an empty dict in the function, and every value
    stored in it by key is on the CPU."""
    bindings = [value for value in found.bindings.get(name, []) if _before(facts, value, saved_at)]
    if not bindings or not all(_empty_dict(facts, value) for value in bindings):
        return False
    stores = [value for value in found.stores.get(name, []) if _before(facts, value, saved_at)]
    return bool(stores) and all(_cpu_value(facts, value) for value in stores)


def _before(facts: ScriptFacts, value: cst.BaseExpression, position: int) -> bool:
    start = facts.entered.get(value)
    return start is None or start < position  # a placeholder for an unpacked name counts everywhere


def _empty_dict(facts: ScriptFacts, value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.Dict):
        return not value.elements
    if isinstance(value, cst.Call) and not value.args:
        name = facts.qualified(value.func) or dotted_name(value.func) or ""
        return name in _EMPTY_DICTS
    return False
