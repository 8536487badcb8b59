"""model.stage_tests: an `if` testing the ZeRO stage after a call, in its block or one around it."""

from __future__ import annotations

import ast
import textwrap

from dslint.model.stage_tests import stage_tested_after

SOURCE = textwrap.dedent(
    """
    def main(args, engine):
        if args.rank == 0:
            save(engine)
        if args.zero_stage == 3:
            gather_save(engine)

    def other(args, engine):
        if args.zero_stage == 3:
            gather_save(engine)
        save(engine)

    def nested(args, engine):
        for epoch in range(3):
            save(engine)
        if is_zero3:
            gather_save(engine)

    def unrelated(args, engine):
        save(engine)
        if args.rank == 0:
            print("done")
    """
)


def test_a_stage_test_after_the_call_or_its_block_counts() -> None:
    tree = ast.parse(SOURCE)
    assert stage_tested_after(tree, 4)  # main: the stage `if` follows the rank block holding the call
    assert stage_tested_after(tree, 15)  # nested: it follows the loop holding the call


def test_a_stage_test_before_the_call_or_none_does_not() -> None:
    tree = ast.parse(SOURCE)
    assert not stage_tested_after(tree, 11)  # other: the stage test comes first
    assert not stage_tested_after(tree, 20)  # unrelated: a rank test only
