"""The autocast a `with` item enters, and what switches it on: `torch.autocast(...)` and its `enabled=`, an
`x if flag else nullcontext()` choice, a name bound to either (DSL306 asks)."""

from __future__ import annotations

import libcst as cst

from dslint.script.engine_reach import on_gpu
from dslint.script.facts import BindingKind, ScriptFacts
from dslint.script.names import dotted_name, literally_enabled

AUTOCAST = frozenset(
    {
        "torch.autocast",
        "torch.amp.autocast",
        "torch.cuda.amp.autocast",
        "torch.cpu.amp.autocast",
        "torch.amp.autocast_mode.autocast",
    }
)


def autocast_in(facts: ScriptFacts, item: cst.BaseExpression) -> tuple[cst.CSTNode, cst.BaseExpression | None] | None:
    """The autocast a `with` item enters and the expression that switches it on (None: always on):
    `torch.autocast(...)` (its `enabled=`), `amp() if flag else nullcontext()`, or a call of a name bound
    to `torch.cuda.amp.autocast if flag else nullcontext` in the same scope."""
    if isinstance(item, cst.IfExp):
        gpu = on_gpu(facts, item.test)  # `nullcontext() if device_type == "cpu" else autocast(...)`
        for arm, other, switch in ((item.body, item.orelse, True), (item.orelse, item.body, False)):
            if not (isinstance(arm, cst.Call) and facts.qualified(arm.func) in AUTOCAST):
                continue
            found = autocast_in(facts, arm)
            if found is None or found[1] is not None or not _null_context(facts, other):
                continue
            if gpu is not None:
                return (arm, None) if gpu is switch else None
            return (arm, item.test) if switch else None
        return None
    if isinstance(item, cst.Name):
        # `ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(...)` ... `with ctx:`
        binding = facts.binding_at(item.value, facts.scope_at(item), facts.start(item))
        bound = binding.value if binding is not None and binding.kind is BindingKind.OTHER else None
        if isinstance(bound, (cst.Call, cst.IfExp)):
            found = autocast_in(facts, bound)
            return (item, found[1]) if found is not None else None
        return None
    if not isinstance(item, cst.Call):
        return None
    if facts.qualified(item.func) in AUTOCAST:
        if literally_enabled(item):
            return item, None
        enabled = next((a.value for a in item.args if a.keyword is not None and a.keyword.value == "enabled"), None)
        if enabled is not None and (gpu := on_gpu(facts, enabled)) is not None:
            return (item, None) if gpu else None  # `enabled=(device.type == "cuda")`: on where the engine trains
        return (item, enabled) if enabled is not None and dotted_name(enabled) is not None else None
    if not isinstance(item.func, cst.Name) or any(a.keyword and a.keyword.value == "enabled" for a in item.args):
        return None
    binding = facts.binding_at(item.func.value, facts.scope_at(item.func), facts.start(item))
    chosen = binding.value if binding is not None and binding.kind is BindingKind.OTHER else None
    if (
        isinstance(chosen, cst.IfExp)
        and facts.qualified(chosen.body) in AUTOCAST
        and _null_context(facts, chosen.orelse, called=False)
    ):
        return item, chosen.test
    return None


def _null_context(facts: ScriptFacts, node: cst.BaseExpression, called: bool = True) -> bool:
    """`contextlib.nullcontext()` (or the name `nullcontext` uncalled, when `called` is False)."""
    if called:
        if not isinstance(node, cst.Call) or node.args:
            return False
        node = node.func
    return (facts.qualified(node) or dotted_name(node) or "").split(".")[-1] == "nullcontext"


def grad_scaler(facts: ScriptFacts, value: cst.BaseExpression | None) -> cst.Call | None:
    """The torch `GradScaler(...)` call a name is bound to: the call itself, or its arm of `GradScaler(...) if
    flag else None` (where the name is used as a scaler, the flag was on)."""
    from dslint.model.library import GRAD_SCALERS

    if isinstance(value, cst.IfExp):
        arms = [a for a in (value.body, value.orelse) if not (isinstance(a, cst.Name) and a.value == "None")]
        value = arms[0] if len(arms) == 1 else None
    return value if isinstance(value, cst.Call) and facts.qualified(value.func) in GRAD_SCALERS else None
