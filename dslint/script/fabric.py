"""Lightning Fabric running DeepSpeed: `fabric = L.Fabric(strategy="deepspeed_stage_3")`, or a
`DeepSpeedStrategy(...)` (written in the call, or bound to a name the call passes). Fabric's DeepSpeed strategy
hands the module to `deepspeed.initialize` in `fabric.setup`, and its `save_checkpoint` (what `fabric.save` calls)
broadcasts the path from rank 0 and then calls the engine's `save_checkpoint`, which every rank must join.
`fabric.launch()` starts one process a device itself (`devices`, every GPU by default), so a plain `python
train.py` is no one-process launch for such a script. DSL428 asks it."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from dslint.script.facts import ScriptFacts
from dslint.script.hf_models import keyword_value
from dslint.script.names import dotted_name

_PACKAGES = ("lightning.", "lightning_fabric.")


@dataclass(frozen=True)
class DeepSpeedFabric:
    """A Fabric built with a DeepSpeed strategy, and whether its `devices` is one device (one process)."""

    call: cst.Call
    one_device: bool


def deepspeed_fabric(facts: ScriptFacts, call: cst.Call) -> DeepSpeedFabric | None:
    """`call` when it builds a Fabric with a DeepSpeed strategy; None otherwise (another strategy, or not known)."""
    name = facts.qualified(call.func)
    if name is None or not name.startswith(_PACKAGES) or name.rsplit(".", 1)[-1] != "Fabric":
        return None
    strategy = keyword_value(call, "strategy")
    if strategy is None or not _deepspeed_strategy(facts, strategy, 0):
        return None
    return DeepSpeedFabric(call, _one_device(keyword_value(call, "devices")))


def _deepspeed_strategy(facts: ScriptFacts, value: cst.BaseExpression, depth: int) -> bool:
    if isinstance(value, cst.SimpleString):
        text = value.evaluated_value
        return isinstance(text, str) and text.startswith("deepspeed")
    if isinstance(value, cst.Call):
        name = facts.qualified(value.func)
        return name is not None and name.startswith(_PACKAGES) and name.endswith(".DeepSpeedStrategy")
    if isinstance(value, cst.Name) and depth == 0:
        bound = facts.assigned_value(value, value)
        return bound is not None and _deepspeed_strategy(facts, bound, depth + 1)
    return False


def _one_device(value: cst.BaseExpression | None) -> bool:
    """`devices=1`, `devices="1"`, `devices=[0]`: Fabric starts one process."""
    if isinstance(value, cst.Integer):
        return value.evaluated_value == 1
    if isinstance(value, cst.SimpleString):
        return value.evaluated_value == "1"
    if isinstance(value, (cst.List, cst.Tuple)):
        return len(value.elements) == 1
    return False


class FabricNames:
    """The names (`fabric`, `self.fabric`, kept by their last part) a module binds to a DeepSpeed Fabric."""

    def __init__(self, facts: ScriptFacts) -> None:
        self.facts = facts
        self.names: dict[str, DeepSpeedFabric] = {}

    def consider_assign(self, node: cst.Assign) -> None:
        fabric = deepspeed_fabric(self.facts, node.value) if isinstance(node.value, cst.Call) else None
        if fabric is None:
            return
        for target in node.targets:
            name = dotted_name(target.target)
            if name is not None:
                self.names[name.rsplit(".", 1)[-1]] = fabric

    def saving(self, call: cst.Call) -> DeepSpeedFabric | None:
        """The Fabric of `fabric.save(...)` when it runs DeepSpeed on several processes: its `devices` is not one,
        and no launcher of the project starts the script as one process of its own (a plain `python` launch leaves
        the count to Fabric)."""
        if not isinstance(call.func, cst.Attribute) or call.func.attr.value != "save":
            return None
        name = dotted_name(call.func.value)
        fabric = self.names.get(name.rsplit(".", 1)[-1]) if name is not None else None
        if fabric is None or fabric.one_device:
            return None
        launches = self.facts.project.launches if self.facts.project is not None else ()
        if launches and all(launch.ranks == 1 and not launch.world_source.startswith("python") for launch in launches):
            return None
        return fabric
