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

from dslint.project.config_edits import module_index
from dslint.script.context import ScriptContext
from dslint.script.facts import Binding, BindingKind, ScopeKind


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
    scope = binding.scope
    function = scope.node
    if binding.kind is not BindingKind.PARAMETER or not isinstance(function, cst.FunctionDef):
        return False
    if scope.parent is None or scope.parent.kind is not ScopeKind.MODULE:
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
