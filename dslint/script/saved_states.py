"""What a `torch.save(obj, ...)` writes, as the checkpoint rules read it: the `X.state_dict()` calls its object
is or holds (in a dict or list literal), directly or through a name bound to one in the same function (DSL204
asks which of them is the engine's module, DSL211 which is its optimizer's)."""

from __future__ import annotations

import libcst as cst

from dslint.script.facts import BindingKind, ScriptFacts, method_name
from dslint.script.names import dotted_name


def saved_state_dict_calls(facts: ScriptFacts, value: cst.BaseExpression, at: cst.Call) -> list[cst.Call]:
    """The `.state_dict()` calls `value` (the object `at`, a `torch.save`, writes) is or holds; through a name,
    those of the value a plain assignment of the same function bound to it (none for another binding)."""
    key = dotted_name(value)
    if key is not None:
        binding = facts.binding_at(key, facts.scope_at(at), facts.start(at))
        if binding is None or binding.kind is not BindingKind.OTHER or binding.value is None:
            return []
        if binding.scope is not facts.scope_at(at):
            return []
        value = binding.value
    calls: list[cst.Call] = []

    class StateDictCalls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if method_name(node) == "state_dict":
                calls.append(node)

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    value.visit(StateDictCalls())
    return calls
