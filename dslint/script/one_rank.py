"""Which parts of a script run on one rank only: the body of `if rank == 0:` (any comparison of a rank with small
literals: `args.local_rank in [-1, 0]`, `dist.get_rank() == 0`), of `if accelerator.is_main_process:` or
`if trainer.is_world_process_zero():`, a project helper named for rank 0 (`if is_rank_0():`), and of
`with training_args.main_process_first():` (the main process runs it first while the others wait at a barrier).
DSL426 (generate) and DSL428 (collective saves) ask it."""

from __future__ import annotations

import re

import libcst as cst

from dslint.script.names import dotted_name

# Predicates that are true on one rank only (accelerate's Accelerator/PartialState, the HF Trainer).
ONE_RANK_PREDICATES = frozenset({"is_main_process", "is_local_main_process", "is_world_process_zero", "should_save"})
# Context managers that run their body on the main process first while the others wait at a barrier.
ONE_RANK_FIRST = ("main_process_first",)
# Project helpers whose name says "this is rank 0": `is_rank_0()`, `utils.is_rank_zero()`, `is_global_rank_0()`,
# `is_local_rank0()`. Only called in a test (`if is_rank_0():`); a bare name or a getter (`get_rank`) is no test.
_RANK_ZERO_HELPER = re.compile(r"is_(?:global_|local_)?rank_?(?:0|zero)")


def one_rank_test(test: cst.BaseExpression) -> bool:
    """`rank == 0`, `args.local_rank in [-1, 0]`, `dist.get_rank() == 0`, `accelerator.is_main_process`,
    `trainer.is_world_process_zero()`: true on one rank (or one a node) only."""
    if isinstance(test, cst.Call):
        helper = dotted_name(test.func)
        if helper is not None and _RANK_ZERO_HELPER.fullmatch(helper.rsplit(".", 1)[-1]):
            return True
        test = test.func
    name = dotted_name(test)
    if name is not None and name.rsplit(".", 1)[-1] in ONE_RANK_PREDICATES:
        return True
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    if not isinstance(target.operator, (cst.Equal, cst.In)):
        return False
    left = test.left.func if isinstance(test.left, cst.Call) else test.left
    subject = dotted_name(left)
    return subject is not None and "rank" in subject.rsplit(".", 1)[-1] and _small_literal(target.comparator)


def one_rank_conjunction(test: cst.BaseExpression) -> bool:
    """A one-rank test, or an `and` of tests one of which is (`args.should_save and args.local_rank == 0`)."""
    if isinstance(test, cst.BooleanOperation):
        if not isinstance(test.operator, cst.And):
            return False
        return one_rank_conjunction(test.left) or one_rank_conjunction(test.right)
    return one_rank_test(test)


def one_rank_first(node: cst.With) -> bool:
    """`with x.main_process_first(...):`."""
    for item in node.items:
        call = item.item
        if isinstance(call, cst.Call):
            name = dotted_name(call.func)
            if name is not None and name.rsplit(".", 1)[-1].endswith(ONE_RANK_FIRST):
                return True
    return False


def _small_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.expression, cst.Integer):
        return True
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        return bool(node.elements) and all(_small_literal(e.value) for e in node.elements)
    return False
