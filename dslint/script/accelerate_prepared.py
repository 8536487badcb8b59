"""What `accelerator.prepare(...)` returned, in one script: under accelerate with DeepSpeed, the model it returns
is the engine accelerate built (`Accelerator._prepare_deepspeed` hands the model to `deepspeed.initialize`) and the
optimizer a `DeepSpeedOptimizerWrapper`, whose `step()` and `zero_grad()` do nothing: only
`accelerator.backward(loss)` runs the engine's backward and step. Whether accelerate runs DeepSpeed is the
project's question (`project/accelerate_deepspeed.py`); this says which names hold what `prepare` returned."""

from __future__ import annotations

import libcst as cst

from dslint.script.facts import ScriptFacts
from dslint.script.hf_trainers import TrainerNames
from dslint.script.names import dotted_name
from dslint.script.walk import visit_tree


def prepared(facts: ScriptFacts, trainers: TrainerNames, value: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """`value` at `at` is a name bound to what `accelerator.prepare(...)` returned (`model, optimizer, loader =
    accelerator.prepare(...)`, `self.model = accelerator.prepare(model)`)."""
    return _preparing(facts, trainers, value, at) is not None


def _preparing(
    facts: ScriptFacts, trainers: TrainerNames, value: cst.BaseExpression, at: cst.CSTNode
) -> cst.Assign | cst.AnnAssign | None:
    """The assignment binding `value`'s name at `at` to an `accelerator.prepare(...)` call, else None."""
    key = dotted_name(value)
    binding = facts.binding_at(key, facts.scope_at(at), facts.start(at)) if key else None
    statement = binding.statement if binding is not None else None
    bound = statement.value if isinstance(statement, (cst.Assign, cst.AnnAssign)) else None
    if (
        isinstance(bound, cst.Call)
        and isinstance(bound.func, cst.Attribute)
        and bound.func.attr.value == "prepare"
        and trainers.names_accelerator(bound.func.value)
    ):
        assert isinstance(statement, (cst.Assign, cst.AnnAssign))
        return statement
    return None


def prepared_forward(facts: ScriptFacts, trainers: TrainerNames, call: cst.Call) -> bool:
    """`model(x)` (`model.forward(x)`) where `model` holds what `accelerator.prepare(...)` returned."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "forward":
        func = func.value
    return prepared(facts, trainers, func, call)


def prepared_forward_in(facts: ScriptFacts, trainers: TrainerNames, body: cst.CSTNode) -> bool:
    """A call in `body` (not in a nested def) of the forward of a model `accelerator.prepare` returned."""
    found = False

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal found
            found = found or prepared_forward(facts, trainers, node)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

    visit_tree(body, Calls())  # read only: without libcst's rebuilding of every node
    return found


def prepared_argument(
    facts: ScriptFacts, trainers: TrainerNames, value: cst.BaseExpression, at: cst.CSTNode
) -> cst.BaseExpression | None:
    """What was handed to `accelerator.prepare(...)` for the object `value` holds at `at`: the argument at the
    position of `value`'s name among the assignment's targets (`model, optimizer = accelerator.prepare(net, opt)`:
    `opt` for `optimizer`), or the one argument of a single target; None when it cannot be told."""
    statement = _preparing(facts, trainers, value, at)
    if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
        return None
    key = dotted_name(value)
    call = statement.value
    assert isinstance(call, cst.Call)
    arguments = [a.value for a in call.args]
    if any(a.star or a.keyword is not None for a in call.args):
        return None
    target = statement.targets[0].target
    if isinstance(target, (cst.Tuple, cst.List)):
        names = [dotted_name(e.value) for e in target.elements]
        return arguments[names.index(key)] if key in names and len(names) == len(arguments) else None
    return arguments[0] if len(arguments) == 1 else None
