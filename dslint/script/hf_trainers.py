"""Which names of a script hold a Hugging Face Trainer: `trainer = Trainer(...)`, any `*Trainer` class of
transformers or trl, or a class of the script deriving from one that keeps the Trainer's own saving (it defines
neither `save_model` nor `_save`); and which hold accelerate's `Accelerator`. A name counts only when every
assignment to it in the file builds one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst

from dslint.model.library import ACCELERATOR_CALLS, is_trainer_class_name
from dslint.script.context import ScriptContext

_SAVING_METHODS = frozenset({"save_model", "_save"})


def local_trainer_classes(
    module: cst.Module, qualified: Callable[[cst.BaseExpression], str | None], imported: frozenset[str] = frozenset()
) -> frozenset[str]:
    """The module-level classes of the script that derive (at any depth, in source order) from a transformers or
    trl `*Trainer` and keep its own saving (no `save_model`, no `_save`): they save as the Trainer does; with the
    project's own such classes the script imports (`imported`: `ProjectFacts.trainer_classes`), which they may
    derive from. `qualified`: what a name or attribute names through the script's imports."""
    found: set[str] = set(imported)
    for statement in module.body:
        if isinstance(statement, cst.ClassDef) and _derives_keeping_saves(statement, found, qualified):
            found.add(statement.name.value)
    return frozenset(found)


def _derives_keeping_saves(
    node: cst.ClassDef, local: set[str], qualified: Callable[[cst.BaseExpression], str | None]
) -> bool:
    methods = {s.name.value for s in node.body.body if isinstance(s, cst.FunctionDef)}
    if methods & _SAVING_METHODS:
        return False
    for base in node.bases:
        if isinstance(base.value, cst.Name) and base.value.value in local:
            return True
        name = qualified(base.value)
        if name is not None and is_trainer_class_name(name):
            return True
    return False


@dataclass
class TrainerNames:
    context: ScriptContext
    local_trainers: set[str] = field(default_factory=set)  # classes of the script that save as the Trainer does
    built: dict[str, list[bool]] = field(default_factory=dict)  # name -> for each assignment: builds a Trainer
    accelerators: dict[str, list[bool]] = field(default_factory=dict)  # the same for Accelerator

    def __post_init__(self) -> None:
        project = self.context.facts.project
        if project is not None:  # the project's own Trainer classes it imports (`project/trainer_classes.py`)
            self.local_trainers |= project.trainer_classes

    def is_trainer_class(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Name) and node.value in self.local_trainers:
            return True
        qualified = self.context.facts.qualified(node)
        return qualified is not None and is_trainer_class_name(qualified)

    def consider_class(self, node: cst.ClassDef) -> None:
        if _derives_keeping_saves(node, self.local_trainers, self.context.facts.qualified):
            self.local_trainers.add(node.name.value)

    def consider_assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                call = node.value if isinstance(node.value, cst.Call) else None
                builds = call is not None and self.is_trainer_class(call.func)
                self.built.setdefault(target.target.value, []).append(builds)
                accelerator = call is not None and self.context.facts.qualified(call.func) in ACCELERATOR_CALLS
                self.accelerators.setdefault(target.target.value, []).append(accelerator)

    def holds_trainer(self, node: cst.BaseExpression) -> bool:
        """`node` is a name that every assignment of the file binds to a new Trainer."""
        if not isinstance(node, cst.Name):
            return False
        assignments = self.built.get(node.value, [])
        return bool(assignments) and all(assignments)

    def holds_accelerator(self, node: cst.BaseExpression) -> bool:
        """`node` is a name that every assignment of the file binds to a new accelerate `Accelerator`."""
        if not isinstance(node, cst.Name):
            return False
        assignments = self.accelerators.get(node.value, [])
        return bool(assignments) and all(assignments)

    def names_accelerator(self, node: cst.BaseExpression) -> bool:
        """`node` holds an `Accelerator` (`holds_accelerator`), or is named for one (`accelerator`,
        `self.accelerator`)."""
        if self.holds_accelerator(node):
            return True
        if isinstance(node, cst.Attribute):
            return node.attr.value == "accelerator"
        # a name the file binds to something else is not one (`accelerator = "gpu"`, Lightning's word)
        return isinstance(node, cst.Name) and node.value == "accelerator" and node.value not in self.accelerators
