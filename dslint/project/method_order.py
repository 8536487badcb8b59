"""The order in which a class's methods run, as a driver method of the class calls them on its instance
(`def run(self): self.load_model(); ...; self.train()`): DSL208 asks whether a load runs before the method building
a ZeRO-3 config, DSL207 (`engine_config.ZeroSources.runs_after`) whether that config runs after the load."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from dslint.script.walk import all_nodes

if TYPE_CHECKING:
    from dslint.script.facts import ScriptFacts


def sequenced(facts: ScriptFacts, owner: cst.ClassDef, loading: str, runs: str) -> bool:
    """Whether a method of `owner` runs `self.<loading>()` before `self.<runs>()` (`def run(self):
    self.load_model(); ...; self.train()`), and no method of it calls `runs` otherwise: first in its body, or
    without `loading` (then the instance may make the config before any load)."""
    ordered = False
    for method in owner.body.body:
        if not isinstance(method, cst.FunctionDef) or method.name.value in (loading, runs):
            continue
        first = _first_parameter(method)
        called = self_calls(method, first) if first is not None else {}
        if runs not in called:
            continue
        if loading not in called:
            return False
        if facts.start(called[runs][0]) < facts.start(called[loading][0]):
            return False
        ordered = True
    return ordered


def _first_parameter(function: cst.FunctionDef) -> str | None:
    params = function.params.params
    return params[0].name.value if params else None


def self_calls(function: cst.FunctionDef, self_name: str) -> dict[str, list[cst.Call]]:
    """The methods `function` calls on its instance (`self.setup()`), with the calls."""
    found: dict[str, list[cst.Call]] = {}
    for node in all_nodes(function.body):
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and isinstance(node.func.value, cst.Name)
            and node.func.value.value == self_name
        ):
            found.setdefault(node.func.attr.value, []).append(node)
    return found
