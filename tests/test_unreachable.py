"""Findings in code that never runs are dropped (`dslint.lint.unreachable`): the statements of a block after
`return`, `raise`, `continue`, `break` or `sys.exit(...)`."""

from __future__ import annotations

import ast
import textwrap

from dslint.lint.file import lint_text
from dslint.lint.unreachable import unreachable_ranges

SCRIPT = textwrap.dedent(
    """
    import deepspeed
    def train(args, model, loader):
        engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model)
        for batch in loader:
            loss = engine(batch)
            engine.backward(loss)
            engine.step()
        return engine
        for batch in loader:  # a loop left behind when the function was rewritten
            optimizer.zero_grad()
            engine(batch).backward()
    def evaluate(args, model, loader):
        engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model)
        for batch in loader:
            optimizer.zero_grad()
            engine.backward(engine(batch))
            engine.step()
    """
)


def test_the_statements_after_an_exit_of_their_block() -> None:
    tree = ast.parse(
        "def f(x):\n    if x:\n        raise ValueError\n        g()\n    for i in x:\n        continue\n"
        "        h(i)\n    return 1\n    k()\n    m()\nimport sys\nsys.exit(0)\nprint('never')\n"
    )
    assert unreachable_ranges(tree) == [(4, 4), (7, 7), (9, 10), (13, 13)]


def test_a_finding_in_code_no_run_reaches_is_dropped() -> None:
    found = [(d.code, d.start.line) for d in lint_text("train.py", SCRIPT)]
    assert ("DSL309", 16) in found, found  # the same mistake where it runs is still reported
    assert not [line for _, line in found if 10 <= line <= 12], found
