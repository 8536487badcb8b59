"""A dict of unknown content (a JSON load, accelerate's live DeepSpeed dict) that a script edits with literal keys
before DeepSpeed reads it: each write checked on its own by the config rules (`config_link.edited_configs`), where
what the dict holds otherwise cannot be known.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from dslint.config.facts import Origin
from dslint.config.tree import Array, Node, Object
from dslint.diagnostics import Related
from dslint.project.config_edits import Mutation, apply_mutation, module_index, top_level_writes
from dslint.project.resolved_configs import ResolvedConfig
from dslint.script.context import ScriptContext
from dslint.script.facts import BindingKind
from dslint.script.stage_guard import in_zero3_arm
from dslint.script.value_flow import value_flow

_LITERALS = (cst.Dict, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


def mark_written(node: Node) -> None:
    """Every object of a one-write tree: what it shows is there, but other writes (before or after, in other
    branches) may add to it, so nothing may be read from what it lacks (a section without `stage` is not
    stage 0)."""
    if isinstance(node, Object):
        node.opaque = node.written = True
        for entry in node.entries:
            mark_written(entry.value)
    elif isinstance(node, Array):
        for item in node.items:
            mark_written(item)


def written_dict_configs(
    context: ScriptContext,
    name: cst.Name,
    origin: Origin,
    via: tuple[Related, ...],
    below_zero3: Callable[[], bool] = lambda: False,
) -> list[ResolvedConfig]:
    """`name` bound to a dict of unknown content (a JSON load, another tool's dict: not a literal), then written
    with literal keys before `name` is read here: one config per write, on a root that is opaque (every other
    key unknown), so that writes in exclusive branches (`if bf16: cfg["bf16"] = ... else: ...`) are each
    checked. None when a write cannot be read (`cfg.update(other)`). A write in the body of a ZeRO-3 test
    (`if cfg["zero_optimization"]["stage"] == 3:`) is left out when `below_zero3()` says every config the run may
    take is below ZeRO-3: that arm never runs."""
    facts = context.facts
    binding = facts.binding_at(name.value, facts.scope_at(name), facts.start(name))
    if binding is None or binding.kind is not BindingKind.OTHER or binding.value is None:
        return []
    values = [binding.value]
    if isinstance(binding.value, _LITERALS):
        # a literal: resolve_config reads it whole, or it is not a dict; unless another value may reach the read
        # (`cfg = plugin.deepspeed_config` then, in one arm, `cfg = {...}`): the writes after that one
        values = [v for v in _reaching_values(context, name) if not isinstance(v, _LITERALS)]
        if not values:
            return []
    after, before = min(facts.start(v) for v in values), facts.start(name)
    mutations = [
        m
        for m in module_index(context.module).mutations.get(name.value, [])
        if facts.scope_at(m.anchor) is binding.scope and after < facts.start(m.anchor) < before
    ]
    popped = {_popped_key(m) for m in mutations} - {None}
    if popped & _written_keys(mutations) or any(m.keys is None and _popped_key(m) is None for m in mutations):
        return []  # a write undone, or a change not known (`cfg.update(other)`)
    mutations = [m for m in mutations if _popped_key(m) is None]  # `cfg.pop("optimizer")` removes another key
    found: list[ResolvedConfig] = []
    scope = binding.scope.node
    lower: bool | None = None  # every config the run may take is below ZeRO-3: asked once, where a write needs it
    for mutation in mutations:
        if scope is not None and in_zero3_arm(scope, mutation.anchor, facts.start, facts.end):
            lower = below_zero3() if lower is None else lower
            if lower:
                continue  # written only under ZeRO-3, which no run of the script takes
        start, end = context.span(mutation.anchor)
        tree = Object(start, end, [], True, True)
        apply_mutation(context, tree, mutation)
        mark_written(tree)
        if tree.entries:
            found.append(ResolvedConfig({}, f"dict written at line {start.line}", None, tree, origin, via))
    return found


def _reaching_values(context: ScriptContext, name: cst.Name) -> list[cst.BaseExpression]:
    """The values of the plain assignments to `name` that may reach it; [] when the flow is not followed."""
    facts = context.facts
    scope = facts.scope_at(name).node
    definitions = value_flow(facts, scope).definitions_reaching(name) if scope is not None else None
    return [d.value for d in definitions or () if isinstance(d, cst.Assign) and len(d.targets) == 1]


def _popped_key(mutation: Mutation) -> str | None:
    """The literal key a `cfg.pop("key")` (`cfg.pop("key", None)`) removes; None for any other change."""
    call = mutation.statement
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "pop"):
        return None
    first = call.args[0].value if call.args and call.args[0].keyword is None else None
    return first.evaluated_value if isinstance(first, cst.SimpleString) else None  # type: ignore[return-value]


def _written_keys(mutations: list[Mutation]) -> set[str | None]:
    """The top-level keys the mutations write (None for one not written as a literal)."""
    return {key for m in mutations if m.keys is not None for key, _ in (top_level_writes(m) or [(None, None)])}
