"""Code under an `if` that tests the ZeRO stage (`if zero_stage != 3:`, `if not zero_stage_3:`, the `else` of
`if args.zero_stage == 3:`): the author handles the stage there, so stage-3 findings stay silent in both arms.

Real save helpers take the stage as an argument and gather the partitions in the stage-3 arm; the other arm's
plain `state_dict()` is whole. Which arm runs cannot be known statically, and the arm that would be wrong is
the one the author already wrote for stage 3.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from dslint.model.stage_tests import STAGE_WORDS
from dslint.script.walk import own_nodes, visit_tree


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def visit_Name(self, node: cst.Name) -> None:
        lowered = node.value.lower()
        if any(word in lowered for word in STAGE_WORDS):
            self.found = True

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if "stage" in node.value.lower():
            self.found = True


def tests_stage(test: cst.BaseExpression) -> bool:
    """Whether an `if` test reads the ZeRO stage (a name, attribute or key mentioning it)."""
    names = _Names()
    visit_tree(test, names)
    return names.found


class StageGuards:
    """Tracks, during a rule's traversal, how many enclosing `if` statements test the ZeRO stage."""

    def __init__(self) -> None:
        self.stack: list[bool] = []
        self.depth = 0

    def enter(self, node: cst.If) -> None:
        guarded = tests_stage(node.test)
        self.stack.append(guarded)
        self.depth += guarded

    def leave(self) -> None:
        self.depth -= self.stack.pop()

    @property
    def inside(self) -> bool:
        return self.depth > 0


def tests_zero3(test: cst.BaseExpression) -> bool:
    """Whether an `if` test holds only under ZeRO-3: transformers' `is_deepspeed_zero3_enabled()` (any import
    path), or a stage compared equal to 3 (`args.zero_stage == 3`), or an `and` holding one. Its body runs only
    under ZeRO-3."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return tests_zero3(test.left) or tests_zero3(test.right)
    if isinstance(test, cst.Call):
        func = test.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        return name == "is_deepspeed_zero3_enabled" and not test.args
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        three = isinstance(target.comparator, cst.Integer) and target.comparator.value == "3"
        return isinstance(target.operator, cst.Equal) and three and tests_stage(test.left)
    return False


def in_zero3_arm(
    scope: cst.CSTNode, node: cst.CSTNode, start: Callable[[cst.CSTNode], int], end: Callable[[cst.CSTNode], int]
) -> bool:
    """Whether `node` lies in the body of an `if` of `scope` (its own statements, not nested functions) whose test
    holds only under ZeRO-3 (`tests_zero3`); `start`/`end` order nodes as the traversal entered and left them."""
    return any(
        isinstance(other, cst.If)
        and tests_zero3(other.test)
        and start(other.body) <= start(node)
        and end(node) <= end(other.body)
        for other in own_nodes(scope)
    )
