"""`with deepspeed.zero.GatheredParameters(params, modifier_rank=0):` blocks, inside which ZeRO-3 parameters
are whole and changes made to them are kept (partitioned again from `modifier_rank` on exit)."""

from __future__ import annotations

import libcst as cst

from dslint.script.facts import ScriptFacts

GATHERED_PARAMETERS = frozenset(
    {
        "deepspeed.zero.GatheredParameters",
        "deepspeed.runtime.zero.GatheredParameters",
        "deepspeed.runtime.zero.partition_parameters.GatheredParameters",
    }
)
# GatheredParameters(params, modifier_rank=None, fwd_module=None, enabled=True)
MODIFIER_RANK_POSITION = 1


def is_gathering(facts: ScriptFacts, item: cst.WithItem) -> bool:
    """`with GatheredParameters(...)`: ZeRO-3 parameters are whole inside the block (reads see full tensors)."""
    call = item.item
    return isinstance(call, cst.Call) and facts.qualified(call.func) in GATHERED_PARAMETERS


def gathers_for_modification(facts: ScriptFacts, item: cst.WithItem) -> bool:
    """`GatheredParameters(..., modifier_rank=<not None>)`: writes inside the block are kept."""
    call = item.item
    if not isinstance(call, cst.Call) or not is_gathering(facts, item):
        return False
    for index, arg in enumerate(call.args):
        is_rank = (arg.keyword is not None and arg.keyword.value == "modifier_rank") or (
            arg.keyword is None and not arg.star and index == MODIFIER_RANK_POSITION
        )
        if is_rank:
            return not (isinstance(arg.value, cst.Name) and arg.value.value == "None")
    return False


class GatheredBlocks:
    """Tracks, during a traversal, how many modifying GatheredParameters blocks enclose the current node.

    A rule calls `enter(node)` from `visit_With` and `leave(node)` from `leave_With`. With
    `for_modification=False` any GatheredParameters block counts (for rules about reading parameters).
    """

    def __init__(self, facts: ScriptFacts, *, for_modification: bool = True) -> None:
        self.facts = facts
        self.test = gathers_for_modification if for_modification else is_gathering
        self.depth = 0
        self._counted: set[int] = set()

    def enter(self, node: cst.With) -> None:
        if any(self.test(self.facts, item) for item in node.items):
            self.depth += 1
            self._counted.add(id(node))

    def leave(self, node: cst.With) -> None:
        if id(node) in self._counted:
            self._counted.discard(id(node))
            self.depth -= 1

    @property
    def inside(self) -> bool:
        return self.depth > 0
