"""The file a config dict is read from in the script itself: `json.load(open(path))`, `json.loads(open(path).read())`,
`yaml.safe_load(open(path))`, or `json.load(f)` inside `with open(path) as f:`. The answer is the expression naming
the path (a literal, `args.<option>`, a name bound to either), which the config resolver then reads as it reads a
path handed to `initialize(config=...)` itself: the literal file, or the file the launchers give the option."""

from __future__ import annotations

import libcst as cst

from dslint.script.facts import ScriptFacts
from dslint.script.names import dotted_name

# Readers whose result is the dict in the opened file (`yaml.load` with a Loader gives the same dict).
_READERS = frozenset({"json.load", "json.loads", "yaml.safe_load", "yaml.load", "yaml.full_load"})


def loaded_path(facts: ScriptFacts, node: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """The path expression `node` reads a config dict from; None when `node` is no such read."""
    if not isinstance(node, cst.Call) or dotted_name(node.func) not in _READERS or not node.args:
        return None
    source = node.args[0].value
    if node.args[0].keyword is not None or node.args[0].star:
        return None
    if isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute) and source.func.attr.value == "read":
        if source.args:
            return None
        source = source.func.value  # json.loads(open(path).read()), json.loads(f.read())
    if isinstance(source, cst.Name):  # a handle: `with open(path) as f`
        binding = facts.binding_at(source.value, facts.scope_at(source), facts.start(source))
        statement = binding.statement if binding is not None else None
        if not isinstance(statement, cst.WithItem):
            return None
        source = statement.item
    return _opened(source)


def _opened(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """`open(path)` or `open(path, "r")` (text or binary read): the path expression."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "open"):
        return None
    if not node.args or node.args[0].keyword is not None or node.args[0].star:
        return None
    for arg in node.args[1:]:
        mode = arg.value if arg.keyword is None or arg.keyword.value == "mode" else None
        if isinstance(mode, cst.SimpleString) and "r" not in str(mode.evaluated_value):
            return None
    return node.args[0].value
