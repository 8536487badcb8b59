"""A config handed to `initialize` through a parameter of the function that holds the call: what this module's
calls of that function pass for it (by keyword, by position, or the parameter's default where a call leaves it
out), each then read as a config expression in the caller (`train(model, ds_config=args.ds_config)`: the file the
launchers give `--ds_config`); a parameter of a module-level class's `__init__` is what this module's calls of
the class pass (`Trainer(model, deepspeed_config=cfg)`). Another method, a function no call of this module reaches,
or a call passing `*args` / `**kwargs` gives no answer: what other modules pass is the program model's to follow."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

import libcst as cst

from dslint.model.library import CALLBACK_RUNNERS
from dslint.project.config_edits import literal_value, module_index, parameter_function, subscripted
from dslint.script.context import ScriptContext
from dslint.script.facts import Binding, BindingKind, ScopeKind
from dslint.script.names import dotted_name


def caller_arguments(context: ScriptContext, binding: Binding) -> list[cst.BaseExpression] | None:
    """The expressions this module's calls of the function pass for the parameter `binding` binds; None when
    any call's cannot be read or no call is found."""
    scope = binding.scope
    function = scope.node
    if binding.kind is not BindingKind.PARAMETER or not isinstance(function, cst.FunctionDef):
        return None
    params = function.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    called = function.name.value
    owner = scope.parent if scope.parent is not None and scope.parent.kind is ScopeKind.CLASS else None
    if owner is not None or scope.self_name is not None:
        # a constructor of a module-level class: `Trainer(model, deepspeed_config=cfg)` fills its parameters
        cls = owner.node if owner is not None else None
        if called != "__init__" or not isinstance(cls, cst.ClassDef) or cls not in context.module.body:
            return None
        called, positional = cls.name.value, positional[1:]
    declared = [*params.posonly_params, *params.params, *params.kwonly_params]
    param = next((p for p in declared if p.name.value == binding.key), None)
    if param is None:
        return None
    found: list[cst.BaseExpression] = []
    for call in module_index(context.module).calls:
        if owner is None and scope.self_name is None:
            run = _run_by_library(call, called, positional, binding.key)
            if run is not _NOT_RUN:
                given = run if run is not None else param.default
                if given is None:
                    return None
                found.append(given)
                continue
        if not (isinstance(call.func, cst.Name) and call.func.value == called):
            continue
        value: cst.BaseExpression | None = param.default
        for index, arg in enumerate(call.args):
            if arg.star:
                return None
            if arg.keyword is not None:
                if arg.keyword.value == binding.key:
                    value = arg.value
            elif index < len(positional) and positional[index] == binding.key:
                value = arg.value
        if value is None:
            return None
        found.append(value)
    return found or None


def caller_items(context: ScriptContext, node: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """`config["ds_config"]`, `config` a parameter: the entry for that literal key of the dict literal each of this
    module's calls passes (`caller_arguments`, library runners too); None when a call's is not such a dict."""
    chain = subscripted(node) if isinstance(node, cst.Subscript) else None
    if chain is None or not isinstance(chain[0], cst.Name) or len(chain[1]) != 1:
        return None
    name, key = chain[0], literal_value(chain[1][0])
    facts = context.facts
    binding = facts.binding_at(name.value, facts.scope_at(node), facts.start(node))
    passed = caller_arguments(context, binding) if isinstance(key, str) and binding is not None else None
    found: list[cst.BaseExpression] = []
    for value in passed or ():
        entries = value.elements if isinstance(value, cst.Dict) else ()
        item = next(
            (e.value for e in entries if isinstance(e, cst.DictElement) and literal_value(e.key) == key),
            None,
        )
        if item is None or any(isinstance(e, cst.StarredDictElement) for e in entries):
            return None
        found.append(item)
    return found or None


_NOT_RUN = cst.Name("_")  # the call does not run the function


def _run_by_library(call: cst.Call, called: str, positional: list[str], parameter: str) -> cst.BaseExpression | None:
    """What a library call that runs the function `called` (`library.CALLBACK_RUNNERS`: Ray's
    `TorchTrainer(train_loop_per_worker=train, train_loop_config=cfg)`, `mp.spawn(train, args=(cfg,))`) passes
    for `parameter`: `_NOT_RUN` when it does not run it, None when what it passes is not known."""
    last = (dotted_name(call.func) or "").rpartition(".")[2]
    runner = CALLBACK_RUNNERS.get(last)
    if runner is None:
        return _NOT_RUN
    given = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
    plain = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    function = given.get(runner.function, plain[0] if plain else None)
    if not (isinstance(function, cst.Name) and function.value == called):
        return _NOT_RUN
    if any(arg.star for arg in call.args) or parameter not in positional:
        return None
    index = positional.index(parameter) - runner.leading
    handed = given.get(runner.handed, plain[1] if len(plain) > 1 else None)
    if index < 0 or handed is None:
        return None
    if not runner.unpacked:
        return handed if index == 0 else None
    items = handed.elements if isinstance(handed, (cst.Tuple, cst.List)) else None
    if items is None or index >= len(items) or not isinstance(items[index], cst.Element):
        return None
    return items[index].value


class _Staged(Protocol):
    @property
    def zero_stage(self) -> int | None: ...


Staged = TypeVar("Staged", bound=_Staged)


def strongest(found: Sequence[Staged | None]) -> Staged | None:
    """Of the configs a value may be (its callers' arguments, a conditional's arms), the one with the highest ZeRO
    stage, which stage-aware findings are about; None when one of them cannot be read or none is given."""
    known = [config for config in found if config is not None and config.zero_stage is not None]
    return max(known, key=lambda config: config.zero_stage or 0) if known and len(known) == len(found) else None


def splatted_options(context: ScriptContext, binding: Binding) -> bool:
    """Every call of this module's function holding the parameter `binding` binds is `f(**vars(args))` (or
    `f(**options)` with `options = vars(...)` bound before it), and the module's parser declares an option of the
    parameter's name: the parameter is that parsed option (`main(**vars(parser.parse_args()))`)."""
    function = parameter_function(binding)
    if function is None:
        return False
    index = module_index(context.module)
    if binding.key not in index.option_defaults and binding.key not in index.required_options:
        return False
    called = function.name.value
    calls = [call for call in index.calls if isinstance(call.func, cst.Name) and call.func.value == called]
    return bool(calls) and all(_splats_namespace(context, call) for call in calls)


def _splats_namespace(context: ScriptContext, call: cst.Call) -> bool:
    if len(call.args) != 1 or call.args[0].star != "**":
        return False
    value: cst.BaseExpression | None = call.args[0].value
    if isinstance(value, cst.Name):
        facts = context.facts
        bound = facts.binding_at(value.value, facts.scope_at(call), facts.start(call))
        value = bound.value if bound is not None and bound.kind is BindingKind.OTHER else None
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "vars"
