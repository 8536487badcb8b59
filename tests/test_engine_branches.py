"""The loop rules stay silent in the arm of an `if` that runs only when the object is no DeepSpeed engine (the plain
PyTorch path of a script that supports both), and keep reporting everywhere else (`dslint/lint/engine_branches.py`)."""

from __future__ import annotations

import textwrap

import pytest

from dslint.lint.file import lint_text

HEAD = textwrap.dedent(
    """\
    import deepspeed
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP


    def train(args, model, loader, plain):
        model, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
        for batch in loader:
            loss = model(batch)
    """
)


# the engine's loop in the arm the test takes, a plain PyTorch loop in the other
BOTH_ARMS = """\
if {test}:
    model.backward(loss)
    model.step()
else:
    loss.backward()
    optimizer.step()
"""


def _codes(loop: str) -> list[tuple[str, int]]:
    text = HEAD + textwrap.indent(textwrap.dedent(loop), " " * 8)
    return sorted((d.code, d.start.line) for d in lint_text("train.py", text))


@pytest.mark.parametrize(
    "test",
    [
        "isinstance(model, deepspeed.DeepSpeedEngine)",
        "not plain and isinstance(model, deepspeed.DeepSpeedEngine)",
        "isinstance(model, (deepspeed.DeepSpeedEngine, deepspeed.PipelineEngine))",
        "hasattr(model, 'backward')",  # a method only the engine has
    ],
)
def test_the_arm_for_objects_that_are_no_engine_is_not_the_engines_loop(test: str) -> None:
    assert _codes(BOTH_ARMS.format(test=test)) == []


def test_the_body_of_a_negated_engine_test_is_not_the_engines_loop() -> None:
    loop = """\
    if not isinstance(model, deepspeed.DeepSpeedEngine):
        loss.backward()
    """
    assert _codes(loop) == []


@pytest.mark.parametrize(
    "test",
    [
        "plain",  # any other test: both arms may run under DeepSpeed
        "isinstance(model, (deepspeed.DeepSpeedEngine, DDP))",  # holds for objects that are no engine too
        "plain or isinstance(model, deepspeed.DeepSpeedEngine)",
        "hasattr(model, 'forward')",  # every module has it
    ],
)
def test_other_tests_keep_the_findings(test: str) -> None:
    assert [code for code, _ in _codes(BOTH_ARMS.format(test=test))] == ["DSL301", "DSL302"]
