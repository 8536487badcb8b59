"""The value a call gives a keyword through a dict splatted into it: `TrainingArguments(**kwargs)` where `kwargs`
is bound in the same scope to a dict display (`{"deepspeed": path, ...}`) or a `dict(deepspeed=path, ...)` call.
Item writes into the dict between its binding and the call (`kwargs["lr"] = x`, `kwargs.update(...)`) are read
from the module's dict mutations (`config_edits.module_index`): a key written unconditionally in the call's own
block takes the written value; a key written anywhere else, and any write whose keys are not literal, leave the
key (or the whole dict) unknown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from dslint.project.config_edits import module_index, top_level_writes
from dslint.script.hf_models import is_none, is_training_arguments

if TYPE_CHECKING:
    from dslint.script.context import ScriptContext

# The statements whose body runs only sometimes: a write under one is no sure write.
_CONDITIONAL = (cst.If, cst.For, cst.While, cst.Try, cst.With)


def call_argument(context: ScriptContext, call: cst.Call, keyword: str) -> cst.BaseExpression | None:
    """The expression `call` gives `keyword`: its own keyword argument, else the entry of a dict splatted into it
    (the last `**` that holds it); None when neither is known."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    found = None
    for arg in call.args:
        if arg.star == "**":
            entries = splatted_entries(context, arg.value, call)
            if entries is not None and keyword in entries:
                found = entries[keyword]
    return found


def splatted_entries(
    context: ScriptContext, value: cst.BaseExpression, call: cst.Call
) -> dict[str, cst.BaseExpression] | None:
    """The keys and values a `**value` in `call` passes, where `value` is a name bound in the call's scope to a dict
    display or `dict(...)`; None when not known (a parameter, another call's result, a `**` inside the display)."""
    if not isinstance(value, cst.Name):
        return None
    facts = context.facts
    binding = facts.local_binding(value)
    if binding is None or binding.value is None:
        return None
    entries = _literal_entries(binding.value)
    if entries is None:
        return None
    bound_at = facts.start(binding.value)
    call_at = facts.start(call)
    scope = facts.scope_at(call)
    for mutation in module_index(context.module).mutations.get(value.value, ()):
        anchor = mutation.anchor
        if facts.scope_at(anchor) is not scope or not bound_at < facts.start(anchor) < call_at:
            continue
        writes = top_level_writes(mutation)
        if writes is None:
            return None  # `kwargs.update(other)`: any key may change
        sure = not facts.held_by(anchor, _CONDITIONAL) and not facts.held_by(call, _CONDITIONAL)
        for key, written in writes:
            if key is None:
                return None
            if sure and written is not None:
                entries[key] = written
            else:
                entries.pop(key, None)  # written only sometimes, or in part: not known
    return entries


def _literal_entries(node: cst.BaseExpression) -> dict[str, cst.BaseExpression] | None:
    if isinstance(node, cst.Dict):
        entries: dict[str, cst.BaseExpression] = {}
        for element in node.elements:
            if not isinstance(element, cst.DictElement):
                return None
            key = element.key.evaluated_value if isinstance(element.key, cst.SimpleString) else None
            if not isinstance(key, str):
                return None
            entries[key] = element.value
        return entries
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict":
        if any(arg.keyword is None for arg in node.args):
            return None  # `dict(other, x=1)`, `dict(**other)`
        return {arg.keyword.value: arg.value for arg in node.args if arg.keyword is not None}
    return None


def known_arguments(
    context: ScriptContext, call: cst.Call, positional: int = 0
) -> dict[str, cst.BaseExpression] | None:
    """Every keyword `call` passes, with the entries of the dicts splatted into it; None when a positional
    argument past the first `positional` ones, a `*args` or a `**` whose dict is not known may pass more."""
    passed: dict[str, cst.BaseExpression] = {}
    for index, arg in enumerate(call.args):
        if arg.keyword is None and not arg.star and index < positional:
            continue
        if arg.keyword is not None:
            passed[arg.keyword.value] = arg.value
        elif arg.star == "**":
            entries = splatted_entries(context, arg.value, call)
            if entries is None:
                return None
            passed.update(entries)
        else:
            return None
    return passed


def trainer_config_expression(context: ScriptContext, call: cst.Call) -> cst.BaseExpression | None:
    """`hf_models.trainer_config_argument` through splatted dicts: the `deepspeed` a `*TrainingArguments(...)`
    call (TRL's configs too) is given, as its keyword or an entry of a dict splatted into it; None for another
    call, `deepspeed=None`, or none known."""
    if not is_training_arguments(context, call):
        return None
    expression = call_argument(context, call, "deepspeed")
    return expression if expression is not None and not is_none(expression) else None
