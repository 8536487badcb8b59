"""The dicts a config builder function writes and returns (`def get_ds_config(stage): cfg = {...}; if ...:
cfg["fp16"] = ...; return cfg`), as positioned config trees, one per set of writes that run together; and the keys
the reader's function writes into a builder's dict before its reader (`completed_by_caller`). Read with libcst,
through `config_edits` (the module's mutations, literals as trees); `config_link` asks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import libcst as cst

from dslint.config.tree import Node, Object
from dslint.model.conditions import exclusive
from dslint.project.config_edits import (
    Mutation,
    NamedKeys,
    apply_mutation,
    literal_value,
    module_index,
    tree_from_literal,
)
from dslint.project.config_readers import PATH_SEPARATOR
from dslint.script.walk import children

if TYPE_CHECKING:
    from dslint.script.context import ScriptContext
    from dslint.script.facts import ScriptFacts


def built_trees(context: ScriptContext, function: cst.FunctionDef, returned: cst.BaseExpression) -> list[Object]:
    """The configs a builder returns through `returned` (`return cfg`, `return {...}`): a dict literal returned
    as it is, or each dict literal `cfg` is bound to in `function` (`if stage == 2: cfg = {...} elif ...: cfg =
    {...}`), with the item assignments and literal updates written after that literal and before the next
    binding of `cfg` (the same arm); writes on exclusive paths give one config each (`_arms`). A literal followed
    by a write that cannot be read (`cfg.update(other)`) gives nothing."""
    if isinstance(returned, cst.Dict):
        trees = [tree_from_literal(context, returned, named=arm) for arm in named_key_arms(context, function, returned)]
        return [tree for tree in trees if isinstance(tree, Object)]
    if not isinstance(returned, cst.Name):
        return []
    facts, name = context.facts, returned.value
    scope = facts.scope_at(returned)
    bindings = [
        statement
        for statement in _own_statements(function)
        if isinstance(statement, cst.Assign)
        and any(isinstance(t.target, cst.Name) and t.target.value == name for t in statement.targets)
    ]
    starts = [facts.start(b) for b in bindings]
    mutations = [m for m in module_index(context.module).mutations.get(name, []) if facts.scope_at(m.anchor) is scope]
    found: list[Object] = []
    for position, binding in enumerate(bindings):
        if not isinstance(binding.value, cst.Dict) or len(binding.targets) != 1:
            continue
        end = starts[position + 1] if position + 1 < len(starts) else facts.start(returned)
        after = [m for m in mutations if starts[position] < facts.start(m.anchor) < end]
        if any(m.keys is None for m in after):
            continue
        for named in named_key_arms(context, function, binding.value):
            for arm in _arms(facts, after):
                tree = tree_from_literal(context, binding.value, named=named)  # one tree per arm
                if not isinstance(tree, Object):
                    continue
                for mutation in arm:
                    apply_mutation(context, tree, mutation)
                found.append(tree)
    return found


def named_key_arms(context: ScriptContext, function: cst.FunctionDef, literal: cst.Dict) -> list[NamedKeys | None]:
    """A builder that picks a section's key per branch (`if dtype == "fp16": data_type = "fp16"; dtype_config =
    {...} elif dtype == "bf16": data_type = "bfloat16"; dtype_config = {...}` ... `{data_type: dtype_config}`):
    one mapping per branch, the key's string with the value bound on the same branch, each checked as its own
    config. The key's bindings must all be string literals on paths that exclude each other, and a value that
    is a name must have a literal on each of them and no other write; else the key stays unknown (the dict is
    opaque), as does a dict with two such keys. `[None]` when no key is a name."""
    keys = [e for e in literal.elements if isinstance(e, cst.DictElement) and isinstance(e.key, cst.Name)]
    if len(keys) != 1:
        return [None]
    key_name, value = cast(cst.Name, keys[0].key).value, keys[0].value
    facts = context.facts
    statements = _own_statements(function)
    bound = _assigned(statements, key_name)
    if not bound or not all(isinstance(literal_value(v), str) for v in bound.values()):
        return [None]
    arms = list(bound)
    if any(not facts.paths.exclusive(a, b) for i, a in enumerate(arms) for b in arms[i + 1 :]):
        return [None]
    values = _assigned(statements, value.value) if isinstance(value, cst.Name) else {}
    if isinstance(value, cst.Name) and module_index(context.module).mutations.get(value.value):
        return [None]
    found: list[NamedKeys | None] = []
    for statement, key in bound.items():
        picked: cst.BaseExpression | None = value
        if isinstance(value, cst.Name):
            guards = facts.paths.at(statement)
            same = [v for s, v in values.items() if facts.paths.at(s) == guards]
            picked = same[0] if len(same) == 1 else None
        if picked is None:
            return [None]
        found.append({key_name: (cast(str, literal_value(key)), picked)})
    return found


def _assigned(statements: list[cst.BaseSmallStatement], name: str) -> dict[cst.Assign, cst.BaseExpression]:
    """The plain `name = value` statements among `statements`, with their values."""
    return {
        s: s.value
        for s in statements
        if isinstance(s, cst.Assign)
        and len(s.targets) == 1
        and isinstance(s.targets[0].target, cst.Name)
        and s.targets[0].target.value == name
    }


def completed_by_caller(tree: Object, written: frozenset[str]) -> None:
    """A builder's returned dict that the reader's function writes into before the reader (`cfg =
    get_ds_config(); cfg["train_micro_batch_size_per_gpu"] = n`; `written`: the key paths joined by
    `config_readers.PATH_SEPARATOR`): the builder's entries at those paths are not what the reader receives, and
    what the tree lacks may have been added (opaque)."""
    if not written:
        return
    tree.opaque = True
    for joined in written:
        *parents, last = joined.split(PATH_SEPARATOR)
        node: Node | None = tree
        for key in parents:
            entry = node.entry(key) if isinstance(node, Object) else None
            node = entry.value if entry is not None else None
        if isinstance(node, Object):
            node.opaque = True
            node.entries = [e for e in node.entries if e.key != last]


def _arms(facts: ScriptFacts, mutations: list[Mutation]) -> list[list[Mutation]]:
    """The writes that run together: all of them, or, when two are on exclusive paths (`if precision == "fp16":
    cfg["fp16"] = ... elif precision == "bf16": cfg["bf16"] = ...`), for each write on such a path the writes
    its path can run with (each arm's config is checked on its own)."""
    guards = [facts.paths.at(m.anchor) for m in mutations]
    branching = [
        i for i in range(len(mutations)) if any(exclusive(guards[i], guards[j]) for j in range(len(mutations)))
    ]
    if not branching:
        return [mutations]
    arms: list[list[Mutation]] = []
    for i in branching:
        arm = [m for j, m in enumerate(mutations) if not exclusive(guards[i], guards[j])]
        if arm not in arms:
            arms.append(arm)
    return arms


def _own_statements(function: cst.FunctionDef) -> list[cst.BaseSmallStatement]:
    """The small statements of `function`'s body, in order, outside nested functions and classes."""
    found: list[cst.BaseSmallStatement] = []
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.BaseSmallStatement):
            found.append(node)
        elif not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(reversed(children(node)))
    return found
