"""May a loss's division by the accumulation steps go? Only when every path its value takes ends in
`engine.backward`, which divides by itself.

`loss = loss / args.gradient_accumulation_steps` is wrong before `engine.backward(loss)` (it scales twice), but
right before `optimizer.backward(loss)` of an fp16 branch, a plain `loss.backward()`, or a logged value. Removing
it (DSL304), or turning a `loss.backward()` it feeds into `engine.backward(loss)` (DSL301, which needs the
division gone next), is right only if every read the divided binding reaches, on any path
(`dslint.script.value_flow`), is the loss of an `engine.backward(...)` that scales for accumulation, directly or
through `scaled = loss` / `scaled = loss / accum` whose own reads are covered in the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from dslint.script.facts import Role, ScriptFacts, method_name
from dslint.script.loop import divided_by_accumulation, loop_facts
from dslint.script.value_flow import value_flow

MAX_DEPTH = 4


def scales_for_accumulation(call: cst.Call) -> bool:
    """`engine.backward(loss)` divides by the accumulation steps unless given `scale_wrt_gas=False`."""
    for arg in call.args[1:]:
        if arg.keyword is not None and arg.keyword.value == "scale_wrt_gas":
            return isinstance(arg.value, cst.Name) and arg.value.value == "True"
    return len(call.args) < 3  # a third positional argument is scale_wrt_gas


def engine_backward_of_loss(facts: ScriptFacts, read: cst.CSTNode) -> cst.Call | None:
    """The `engine.backward(<read>, ...)` call that takes `read` as its loss and scales it, or None."""
    for call in loop_facts(facts).calls:
        if method_name(call) != "backward" or not call.args or call.args[0].value is not read:
            continue
        if call.args[0].keyword is not None or not scales_for_accumulation(call):
            return None
        assert isinstance(call.func, cst.Attribute)
        answer = facts.role_of(call.func.value, at=call)
        return call if answer is not None and answer.role is Role.ENGINE else None
    return None


def only_engine_backward_reads(
    facts: ScriptFacts,
    statement: cst.CSTNode,
    target: cst.Name,
    also_covered: frozenset[int] = frozenset(),
    depth: int = 0,
) -> bool:
    """Whether every read that `statement`'s binding of `target` may reach is the loss of an accumulating
    `engine.backward` (or one of `also_covered`, ids of reads a fix is turning into one), directly or through
    an alias or another division that is itself covered. False when the name cannot be followed."""
    if depth > MAX_DEPTH:
        return False
    flow = value_flow(facts, facts.scope_at(target).node)
    reads = flow.reads_reached_by(statement, target.value)
    if reads is None:
        return False
    for read in reads:
        if id(read) in also_covered or engine_backward_of_loss(facts, read) is not None:
            continue
        forwarded = _forwarding_assignment(flow.definitions.values(), read)
        if forwarded is None:
            return False
        statement_2, target_2 = forwarded
        if not only_engine_backward_reads(facts, statement_2, target_2, also_covered, depth + 1):
            return False
    return True


def _forwarding_assignment(definitions: Iterable[cst.CSTNode], read: cst.Name) -> tuple[cst.Assign, cst.Name] | None:
    """`y = <read>` or `y = <read> / accum`: the assignment passing the value on, and its target."""
    for node in definitions:
        if not isinstance(node, cst.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0].target
        if not isinstance(target, cst.Name):
            continue
        value = node.value
        division = divided_by_accumulation(value)
        if value is read or (division is not None and division.left is read):
            return node, target
    return None
