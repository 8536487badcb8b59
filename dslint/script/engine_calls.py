"""Calls of a method on the DeepSpeed engine (`engine.load_checkpoint(...)`), as the rules of several
families see them."""

from __future__ import annotations

import libcst as cst

from dslint.script.facts import Role, ScriptFacts


def is_engine_method_call(facts: ScriptFacts, call: cst.Call, method: str) -> bool:
    """`<engine>.<method>(...)` where the receiver is known to be the engine returned by initialize."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == method):
        return False
    answer = facts.role_of(func.value, at=call)
    return answer is not None and answer.role is Role.ENGINE


def argument(call: cst.Call, position: int, keyword: str) -> cst.Arg | None:
    """The argument at `position` (when given positionally) or named `keyword`; None if absent or starred."""
    positional = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            if arg.keyword.value == keyword:
                return arg
            continue
        if positional == position:
            return arg
        positional += 1
    return None
