"""The ZeRO stage of a DeepSpeed config built in code, as an initialize call elsewhere receives it: a dict literal
(at `config=`, or a name the call's function binds once to one), or the dict a project function returns
(`cfg = get_eval_config(offload=True)`, the helper defined in the same module or imported), read with `ast`.

Inside a dict, `"zero_optimization"` may be a literal or a name bound once to one, and `"stage"` a constant or a
parameter of the helper: the argument the call gives it (a constant) or the parameter's default. A dict whose
name is written after it is built (`cfg["zero_optimization"]["stage"] = s`, `cfg.update(...)`, `cfg |= ...`;
a write of another literal key, `cfg["train_batch_size"] = n`, leaves the stage as it was) or
handed to another call is not read: its stage is unknown (None), as is anything else that is not a literal. A
helper with several `return`s has a stage only when every one gives the same.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from dslint.model.summary import SummaryStore, own_nodes
from dslint.project.reader_calls import ParsedModules
from dslint.project.script_parser import click_option_name

_MAX_DEPTH = 3
_ABSENT = object()


@dataclass(frozen=True)
class BuiltStage:
    """A config's stage and how it was built: `helper` is the function returning it ("" for a literal), `path`
    and `line` where that function (or the literal) is."""

    stage: int
    helper: str
    path: str
    line: int
    options: tuple[tuple[str, object], ...] = ()  # the command-line options' values the stage is reached with


def built_stage(
    store: SummaryStore,
    path: str,
    qualname: str,
    config: ast.expr | None,
    depth: int = 0,
    options: Mapping[str, tuple[object, ...]] | None = None,
) -> BuiltStage | None:
    """The stage of `config`, an expression of function `qualname` (module level: "") in module `path`.
    `options`: the values each command-line option (`args.zero_stage`) takes across the script's launches (the
    value given, else the parser's default); a helper handed one is read with each, and the highest stage is
    the answer (the run that reaches it is one of those launches)."""
    if config is None or depth > _MAX_DEPTH:
        return None
    module = store.get(path)
    if module is None:
        return None
    if qualname:
        function = module.functions.get(qualname)
        if function is None:
            return None
        scope: ast.AST = function.node
    else:
        scope = module.tree
    modules = ParsedModules(store.sources, store)
    value = _bound_value(scope, config, lambda call, name: _only_reads(modules, path, call, name))
    if isinstance(value, ast.Dict):
        return _literal_stage(scope, value, path, options or {})
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and not _has_star(value):
        found = modules.function(path, value.func.id)
        if found is None:
            return None
        helper_path, helper = found
        read = [
            (_returned_stage(helper, known), chosen) for known, chosen in _argument_sets(helper, value, options or {})
        ]
        if read and all(isinstance(stage, int) for stage, _ in read):
            stage, chosen = max(read, key=lambda found: found[0] or 0)
            assert stage is not None
            return BuiltStage(stage, value.func.id, helper_path, helper.lineno, chosen)
    return None


def _literal_stage(
    scope: ast.AST, config: ast.Dict, path: str, options: Mapping[str, tuple[object, ...]]
) -> BuiltStage | None:
    """The stage of a dict literal: a constant, or a command-line option's value (`"stage": args.zero_stage`, or
    the parameter a click option fills) read with each value the script's launches give it, the highest."""
    stage = _dict_stage(scope, config, {})
    if isinstance(stage, int):
        return BuiltStage(stage, "", path, config.lineno)
    option = _stage_option(scope, config)
    values = options.get(option, ()) if option is not None else ()
    stages = [value for value in values if isinstance(value, int) and not isinstance(value, bool)]
    if not stages or len(stages) != len(values):
        return None
    highest = max(stages)
    assert option is not None
    return BuiltStage(highest, "", path, config.lineno, ((option, highest),))


def _stage_option(scope: ast.AST, config: ast.Dict) -> str | None:
    """The command-line option a dict's `"stage"` is written as: `args.<option>`, or a parameter of `scope` that a
    click option of its decorators declares (`@click.option("--zero_stage", default=2)`)."""
    section = _entry(config, "zero_optimization")
    if not isinstance(section, ast.expr):
        return None
    section = _bound_value(scope, section)
    stage = _entry(section, "stage") if isinstance(section, ast.Dict) else None
    if isinstance(stage, ast.Attribute) and isinstance(stage.value, ast.Name):
        return stage.attr
    if isinstance(stage, ast.Name) and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        declared = {click_option_name(d) for d in scope.decorator_list if isinstance(d, ast.Call)}
        return stage.id if stage.id in declared else None
    return None


_MAX_COMBINATIONS = 16


def _argument_sets(
    function: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, options: Mapping[str, tuple[object, ...]]
) -> list[tuple[dict[str, object], tuple[tuple[str, object], ...]]]:
    """Each parameter's value at `call` (`_arguments`), once for every combination of the values of the
    command-line options it is handed (`stage=args.zero_stage`), with the options' values of that combination;
    [] when there are too many."""
    base = _arguments(function, call)
    positional = [*function.args.posonlyargs, *function.args.args]
    handed: dict[str, tuple[str, tuple[object, ...]]] = {}
    given = [*zip(positional, call.args, strict=False), *((k, k.value) for k in call.keywords if k.arg is not None)]
    for parameter, expression in given:
        name = parameter.arg if isinstance(parameter, (ast.arg, ast.keyword)) else None
        if (
            name is not None
            and isinstance(expression, ast.Attribute)
            and isinstance(expression.value, ast.Name)
            and expression.attr in options
        ):
            handed[name] = (expression.attr, options[expression.attr])
    sets: list[tuple[dict[str, object], tuple[tuple[str, object], ...]]] = [(base, ())]
    for name, (option, values) in handed.items():
        sets = [({**known, name: value}, (*chosen, (option, value))) for known, chosen in sets for value in values]
        if len(sets) > _MAX_COMBINATIONS:
            return []
    return sets


def _has_star(call: ast.Call) -> bool:
    return any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)


def _bound_value(
    scope: ast.AST, expression: ast.expr, reads: Callable[[ast.Call, str], bool] | None = None
) -> ast.expr | None:
    """`expression` itself, or the one value its name is bound to in `scope` when the name is never written
    after (an item or attribute write, a method call on it, or a call it is handed to, other than initialize's
    and those `reads` says only read it)."""
    if not isinstance(expression, ast.Name):
        return expression
    name = expression.id
    values: list[ast.expr] = []
    for node in own_nodes(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    values.append(node.value)
                elif _other_key(target, name):
                    continue  # `cfg["train_batch_size"] = n`: no key the stage is read from
                elif any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target)):
                    return None  # `cfg["x"] = ...`, `cfg, other = ...`
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr, ast.Delete)):
            if any(
                isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del))
                for n in ast.walk(node)
            ):
                return None
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == name:
                return None  # `cfg.update(...)`
            if (
                not _is_initialize(node)
                and any(
                    isinstance(a, ast.Name) and a.id == name for a in [*node.args, *(k.value for k in node.keywords)]
                )
                and not (reads is not None and reads(node, name))
            ):
                return None  # handed to a call that may fill it
    return values[0] if len(values) == 1 else None


_STAGE_KEYS = frozenset({"zero_optimization", "stage"})


def _other_key(target: ast.expr, name: str) -> bool:
    """`name["train_batch_size"] = ...`: a write of one literal key the stage is not read from (the stage lives
    under "zero_optimization", as "stage")."""
    return (
        isinstance(target, ast.Subscript)
        and isinstance(target.value, ast.Name)
        and target.value.id == name
        and isinstance(target.slice, ast.Constant)
        and isinstance(target.slice.value, str)
        and target.slice.value not in _STAGE_KEYS
    )


# What a function may do with a dict it is handed and still leave it as it was
_READING_METHODS = frozenset({"get", "keys", "items", "values", "copy", "__getitem__"})
_READING_CALLS = frozenset({"HfDeepSpeedConfig", "print", "dumps", "dump", "deepcopy", "copy", "len", "str", "dict"})


def _only_reads(modules: ParsedModules, path: str, call: ast.Call, name: str) -> bool:
    """`helper(..., cfg, ...)` where `helper` is a project function that only reads the parameter `cfg` reaches
    (`create_hf_model(..., ds_config)` testing its stage): no item or attribute write into it, no method of it
    but reading ones, handed on only to calls that read (`HfDeepSpeedConfig(cfg)`, `json.dumps(cfg)`)."""
    if not isinstance(call.func, ast.Name) or _has_star(call):
        return False
    found = modules.function(path, call.func.id)
    if found is None:
        return False
    function = found[1]
    positional = [*function.args.posonlyargs, *function.args.args]
    given = [p.arg for p, a in zip(positional, call.args, strict=False) if isinstance(a, ast.Name) and a.id == name]
    given += [
        k.arg for k in call.keywords if k.arg is not None and isinstance(k.value, ast.Name) and k.value.id == name
    ]
    return bool(given) and all(_reads_parameter(function, parameter) for parameter in given)


def _reads_parameter(function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str) -> bool:
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id == parameter and not isinstance(node.ctx, ast.Load):
            return False  # bound again, or deleted
        if isinstance(node, (ast.Subscript, ast.Attribute)) and not isinstance(node.ctx, ast.Load):
            root = node.value
            while isinstance(root, (ast.Subscript, ast.Attribute)):
                root = root.value
            if isinstance(root, ast.Name) and root.id == parameter:
                return False  # `cfg["x"] = ...`, `cfg["zero_optimization"]["stage"] = ...`
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == parameter:
                if func.attr not in _READING_METHODS:
                    return False  # `cfg.update(...)`
            elif any(
                isinstance(a, ast.Name) and a.id == parameter for a in [*node.args, *(k.value for k in node.keywords)]
            ):
                called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                if called not in _READING_CALLS:
                    return False  # handed on to a call that may fill it
    return True


def _is_initialize(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return name == "initialize"


def _arguments(function: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call) -> dict[str, object]:
    """Each parameter's value at `call`: a constant the call gives, the default, or `_ABSENT` when unknown."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    values: dict[str, object] = {}
    defaults = arguments.defaults
    for parameter, default in zip(positional[len(positional) - len(defaults) :], defaults, strict=True):
        values[parameter.arg] = default.value if isinstance(default, ast.Constant) else _ABSENT
    for parameter, keyword_default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        values[parameter.arg] = keyword_default.value if isinstance(keyword_default, ast.Constant) else _ABSENT
    for parameter, given in zip(positional, call.args, strict=False):
        values[parameter.arg] = given.value if isinstance(given, ast.Constant) else _ABSENT
    for keyword in call.keywords:
        if keyword.arg is not None:
            values[keyword.arg] = keyword.value.value if isinstance(keyword.value, ast.Constant) else _ABSENT
    return values


def _returned_stage(function: ast.FunctionDef | ast.AsyncFunctionDef, arguments: Mapping[str, object]) -> int | None:
    stages: set[int | None] = set()
    for node in own_nodes(function):
        if isinstance(node, ast.Return):
            value = _bound_value(function, node.value) if node.value is not None else None
            stages.add(_dict_stage(function, value, arguments) if isinstance(value, ast.Dict) else None)
    return stages.pop() if len(stages) == 1 else None


def _dict_stage(scope: ast.AST, config: ast.Dict, arguments: Mapping[str, object]) -> int | None:
    """The stage DeepSpeed reads from the dict: 0 without a `zero_optimization` section or `stage` key."""
    section = _entry(config, "zero_optimization")
    if section is None:
        return None
    if section is _ABSENT:
        return 0
    assert isinstance(section, ast.expr)
    section = _bound_value(scope, section)
    if not isinstance(section, ast.Dict):
        return None
    stage = _entry(section, "stage")
    if stage is None:
        return None
    if stage is _ABSENT:
        return 0
    value: object = stage.value if isinstance(stage, ast.Constant) else None
    if isinstance(stage, ast.Name) and stage.id in arguments:
        value = arguments[stage.id]
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _entry(config: ast.Dict, key: str) -> ast.expr | object | None:
    """The value under constant `key`; `_ABSENT` when the literal surely lacks it; None when it cannot be told
    (a `**other` unpacked into it; a key that is not a constant string, unless `key` is written as one: a
    `dtype: {...}` entry beside `"zero_optimization": {...}` is another section)."""
    found: ast.expr | object = _ABSENT
    unsure = False
    for written, value in zip(config.keys, config.values, strict=True):
        if written is None:
            return None
        if not (isinstance(written, ast.Constant) and isinstance(written.value, str)):
            unsure = True
        elif written.value == key:
            found = value
    return None if unsure and found is _ABSENT else found
