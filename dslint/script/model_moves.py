"""Which calls move or cast the model that goes into `deepspeed.initialize`, before it goes in.

Shared by the device-placement rules so that one call is judged once: DSL101 reports moves of the model,
DSL103 everything else that uses an un-indexed CUDA device.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from dslint.script.facts import Binding, InitializeCall, ScriptFacts, iter_call_chain, method_name
from dslint.script.names import dotted_name

MOVE_METHODS = frozenset({"cuda", "to"})
CAST_METHODS = frozenset({"half", "bfloat16"})


def is_placement_call(call: cst.Call) -> bool:
    """`.cuda(...)`, `.to(<device or dtype>)`, `.half()`, `.bfloat16()`; not `.to(memory_format=...)`, not CPU."""
    name = method_name(call)
    if name in CAST_METHODS or name == "cuda":
        return True
    if name != "to" or not call.args:
        return False
    if all(
        arg.keyword is not None and arg.keyword.value in ("memory_format", "non_blocking", "copy") for arg in call.args
    ):
        return False
    first = call.args[0].value
    return not (isinstance(first, cst.SimpleString) and first.evaluated_value == "cpu")


def is_cast(call: cst.Call) -> bool:
    name = method_name(call)
    if name in CAST_METHODS:
        return True
    if name == "to":
        return any(
            (arg.keyword is not None and arg.keyword.value == "dtype")
            or (dotted_name(arg.value) or "").split(".")[-1] in ("float16", "half", "bfloat16")
            for arg in call.args
        )
    return False


def model_lineage(facts: ScriptFacts, init: InitializeCall) -> list[Binding]:
    """The bindings the model argument went through: `m = Net(); m = m.to(d); initialize(model=m)` gives
    both bindings of `m`, newest first."""
    model = init.model
    key = dotted_name(model) if model is not None else None
    if key is None:
        return []
    lineage: list[Binding] = []
    binding = facts.binding_at(key, init.scope, init.start)
    while binding is not None and binding not in lineage:
        lineage.append(binding)
        value = binding.value
        if value is None:
            break
        root = _chain_root(value)
        if (root is None or dotted_name(root) != key) and not _wraps(value, key):
            break
        binding = facts.binding_at(key, binding.scope, facts.start(value))
    return lineage


def _wraps(value: cst.BaseExpression, key: str) -> bool:
    """`model = DDP(model)`, `model = init_compression(model, cfg)`: the model goes on inside the wrapper, so a
    move of it before still applies to what initialize receives (also when the wrap sits under an `if`)."""
    if not isinstance(value, cst.Call):
        return False
    positional = [a for a in value.args if a.keyword is None and not a.star]
    if positional and dotted_name(positional[0].value) == key:
        return True
    return any(
        a.keyword is not None and a.keyword.value in ("model", "module") and dotted_name(a.value) == key
        for a in value.args
    )


def moves_to_cpu(facts: ScriptFacts, call: cst.Call) -> bool:
    """`.to(device)` where `device` was just bound to `torch.device("cpu")` (or "cpu"): not a GPU move."""
    if method_name(call) != "to" or not call.args:
        return False
    value = facts.assigned_value(call.args[0].value, call)
    if isinstance(value, cst.Call) and (dotted_name(value.func) or "").endswith("device") and value.args:
        value = value.args[0].value
    return isinstance(value, cst.SimpleString) and value.evaluated_value == "cpu"


def _chain_root(node: cst.BaseExpression) -> cst.BaseExpression | None:
    root: cst.BaseExpression = node
    for call in iter_call_chain(node):
        if not isinstance(call.func, cst.Attribute):
            return None
        root = call.func.value
    return root


def _chain_calls(value: cst.BaseExpression | None) -> Iterator[cst.Call]:
    if value is not None:
        yield from iter_call_chain(value)


class ModelMoves:
    """For one file: every placement call that applies to a model before it is given to initialize."""

    def __init__(self, facts: ScriptFacts) -> None:
        self.facts = facts
        self._lineages = [(init, model_lineage(facts, init)) for init in facts.initialize_calls]
        self._in_chains: dict[cst.Call, InitializeCall] = {}
        for init, lineage in self._lineages:
            for binding in lineage:
                for call in _chain_calls(binding.value):
                    self._in_chains[call] = init
            for call in _chain_calls(init.model):
                self._in_chains[call] = init

    def initialize_for(self, call: cst.Call) -> InitializeCall | None:
        """The initialize call whose model `call` moves or casts beforehand, if any."""
        if not is_placement_call(call) or moves_to_cpu(self.facts, call):
            return None
        if call in self._in_chains:
            return self._in_chains[call]
        assert isinstance(call.func, cst.Attribute)
        key = dotted_name(call.func.value)
        if key is None:
            return None
        facts = self.facts
        scope = facts.scope_at(call)
        pos = facts.start(call)
        binding = facts.binding_at(key, scope, pos)
        for init, lineage in self._lineages:
            if scope is init.scope and pos < init.start and binding in lineage:
                return init
        return None
