"""The shared training-loop facts: accumulation tests, engine-derived values, the engine's certain name; and how the
DSL3xx fixes use them."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from dslint.diagnostics import Applicability
from dslint.fix.edits import fix_text
from dslint.lint.script import lint_source
from dslint.script.collect import collect_facts
from dslint.script.loop import LoopFacts, is_accumulation_test, loop_facts
from dslint.selection import RuleSelection


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ("(i + 1) % n == 0", True),
        ("step % args.gradient_accumulation_steps == 0", True),
        ("0 == (step + 1) % accum", True),
        ("(i + 1) % n == 0 or i == len(loader) - 1", True),
        ("done and step % accum == 0", True),
        ("(i + 1) % n != 0", False),
        ("(i + 1) % n == 1", False),
        ("step == 0", False),
        ("engine.is_gradient_accumulation_boundary()", False),
    ],
)
def test_accumulation_tests(test: str, expected: bool) -> None:
    assert is_accumulation_test(cst.parse_expression(test)) is expected


def _facts(code: str) -> tuple[LoopFacts, dict[str, cst.Call]]:
    module = cst.parse_module(textwrap.dedent(code))
    facts = collect_facts(module)
    calls: dict[str, cst.Call] = {}

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            calls.setdefault(module.code_for_node(node), node)

    module.visit(Calls())
    return loop_facts(facts), calls


CODE = """
import deepspeed
engine, optimizer, _, _ = deepspeed.initialize(model=net, config="ds.json")
for i, (x, y) in enumerate(loader):
    x = x.to(engine.device)
    out = engine(x)
    plain = other(x)
    loss = criterion(out, y) + 0.1 * reg(out.detach())
    detached = other(out.detach()).sum()
    helper = compute(engine, x).loss
    loss.backward()
    plain.backward()
    detached.backward()
    helper.backward()
    if (i + 1) % 4 == 0:
        engine.step()
        for _ in range(2):
            engine.step()
"""


def test_engine_sources_follow_assignments_but_not_attributes_or_detach() -> None:
    loop, calls = _facts(CODE)

    def sources(call: str) -> list[str]:
        func = calls[call].func
        assert isinstance(func, cst.Attribute)
        return [use.key for use in loop.engine_sources(func.value)]

    assert sources("loss.backward()") == ["engine"]
    assert sources("plain.backward()") == []  # x.to(engine.device) reads an attribute, not the output
    assert sources("detached.backward()") == []
    assert sources("helper.backward()") == ["engine"]  # the engine passed into a function


def test_accumulation_test_and_engine_name() -> None:
    loop, calls = _facts(CODE)
    steps = [c for c in loop.calls if loop.facts.code(c) == "engine.step()"]
    assert [loop.accumulation_test(c) is not None for c in steps] == [True, False]  # an inner loop ends the test
    backward = calls["loss.backward()"]
    assert loop.certain_engine_name(loop.facts.initialize_calls[0].engine, at=backward) == "engine"
    assert loop_facts(loop.facts) is loop  # computed once per file


def test_backward_fix_is_unsafe_on_a_loss_divided_by_the_accumulation_steps() -> None:
    code = textwrap.dedent(
        """
        import deepspeed
        engine, *_ = deepspeed.initialize(model=net, config="ds.json")
        for x in loader:
            loss = engine(x)
            loss /= args.gradient_accumulation_steps
            loss.backward()
            other = engine(x).mean()
            other.backward()
        """
    )
    found = lint_source("train.py", code.encode(), RuleSelection.from_options(["DSL301"])).diagnostics
    assert [(d.start.line, d.fix.applicability if d.fix else None) for d in found] == [
        (7, Applicability.UNSAFE),
        (9, Applicability.SAFE),
    ]


def test_fixes_that_together_empty_a_block_are_applied_one_round_at_a_time() -> None:
    code = textwrap.dedent(
        """
        import deepspeed
        engine, optimizer, _, scheduler = deepspeed.initialize(model=net, config="ds.json")
        for i, x in enumerate(loader):
            engine.backward(engine(x))
            engine.step()
            if i % 10 == 0:
                scheduler.step()
                optimizer.zero_grad()
        """
    )
    outcome = fix_text(code, lambda text: lint_source("train.py", text.encode()).diagnostics)
    assert outcome.error is None
    # The second round empties the `if`: it goes with its last statement (no `if ...: pass` is left).
    assert outcome.text.endswith("    engine.step()\n") and "if i % 10" not in outcome.text
    assert len(outcome.applied) == 2
