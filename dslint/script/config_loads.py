"""The file a config dict is read from in the script itself: `json.load(open(path))`, `json.loads(open(path).read())`,
`yaml.safe_load(open(path))`, or `json.load(f)` inside `with open(path) as f:`. The answer is the expression naming
the path (a literal, `args.<option>`, a name bound to either), which the config resolver then reads as it reads a
path handed to `initialize(config=...)` itself: the literal file, or the file the launchers give the option."""

from __future__ import annotations

import weakref

import libcst as cst

from dslint.script.facts import ScriptFacts
from dslint.script.names import dotted_name
from dslint.script.walk import own_returns

# Readers whose result is the dict in the opened file (`yaml.load` with a Loader gives the same dict).
_READERS = frozenset({"json.load", "json.loads", "yaml.safe_load", "yaml.load", "yaml.full_load"})


def loaded_path(facts: ScriptFacts, node: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """The path expression `node` reads a config dict from; None when `node` is no such read. A call of a
    one-parameter function of the module that returns such a read of its parameter (`def get_ds_config(path):
    return json.load(open(path))`) reads the path it is given."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and len(node.args) == 1:
        arg = node.args[0]
        if arg.keyword is None and not arg.star and node.func.value in _loader_helpers(facts):
            return _beside_script(arg.value)
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


def _loader_helpers(facts: ScriptFacts) -> frozenset[str]:
    """The module's top-level functions of one parameter whose one `return` gives a config read of it."""
    found = _HELPERS.get(facts)
    if found is not None:
        return found
    _HELPERS[facts] = frozenset()  # while the module's functions are read: a loader's own calls are no loads
    names: set[str] = set()
    for statement in facts.module.body:
        if not isinstance(statement, cst.FunctionDef) or len(statement.params.params) != 1:
            continue
        if (
            statement.params.posonly_params
            or statement.params.kwonly_params
            or isinstance(statement.params.star_arg, cst.Param)
        ):
            continue
        param = statement.params.params[0].name.value
        returns = own_returns(statement)
        if len(returns) != 1:
            continue
        value = returns[0].value
        if isinstance(value, cst.Name):  # `data = json.load(open(path)); return data`
            binding = facts.binding_at(value.value, facts.scope_at(value), facts.start(value))
            value = binding.value if binding is not None else None
        path = loaded_path(facts, value) if value is not None and not isinstance(value, cst.Name) else None
        if isinstance(path, cst.Name) and path.value == param:
            names.add(statement.name.value)
    found = _HELPERS[facts] = frozenset(names)
    return found


_HELPERS: weakref.WeakKeyDictionary[ScriptFacts, frozenset[str]] = weakref.WeakKeyDictionary()


def _beside_script(path: cst.BaseExpression) -> cst.BaseExpression:
    """`os.path.join(os.getcwd(), "x")` and `os.path.join(os.path.dirname(__file__), "x")`: the literal "x", a path
    beside the script (where it runs); any other path as it is."""
    if (
        isinstance(path, cst.Call)
        and dotted_name(path.func) in ("os.path.join", "path.join", "join")
        and len(path.args) == 2
        and isinstance(path.args[0].value, cst.Call)
        and (dotted_name(path.args[0].value.func) or "").rpartition(".")[2] in ("getcwd", "dirname")
        and isinstance(path.args[1].value, cst.SimpleString)
    ):
        return path.args[1].value
    return path


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
    return _beside_script(node.args[0].value)
