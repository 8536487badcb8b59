"""The loop rules stay silent in the arm of an `if` that runs only when the object is no DeepSpeed engine (the plain
PyTorch path of a script that supports both), and keep reporting everywhere else (`dslint/lint/engine_branches.py`)."""

from __future__ import annotations

import textwrap

import pytest

from dslint.lint.file import lint_text
from dslint.model.conditions import deepspeed_flag_word

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


@pytest.mark.parametrize(
    ("name", "switch"),
    [
        ("deepspeed", True),
        ("use_ds", True),
        ("zero_stage", False),
        ("generate_ds_config", False),  # a utility mode that writes the config and stops
        ("dump_deepspeed_config", False),
    ],
)
def test_names_that_switch_deepspeed_on_or_off(name: str, switch: bool) -> None:
    assert deepspeed_flag_word(name) is switch


def test_a_utility_mode_that_returns_early_leaves_the_training_code_after_it_checked() -> None:
    """`if args.generate_ds_config: write it; return` is no choice between DeepSpeed and plain PyTorch: the training
    code after it (here a late `deepspeed` on built arguments, DSL440) is not the plain path."""
    source = textwrap.dedent(
        """
        from transformers import TrainingArguments

        def get_arguments(config):
            args = TrainingArguments(output_dir="out")
            args.deepspeed = "ds.json"
            return args

        def main(args, config):
            if args.generate_ds_config:
                write_config(config)
                return
            arguments = get_arguments(config)
        """
    )
    assert [d.code for d in lint_text("train.py", source)] == ["DSL440"]
