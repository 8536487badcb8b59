"""The Hugging Face Trainer's save_model under ZeRO-3 (DSL210): fixtures/projects/hf_trainer_zero3, each case both
ways: the config from the launcher's `--deepspeed` (HfArgumentParser) and from a dict in the script."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_support import FIXTURES

from dslint.lint.batch import index_project, lint_files
from dslint.lint.files import discover
from dslint.lint.result import FileResult
from dslint.selection import RuleSelection

PROJECT = FIXTURES / "projects" / "hf_trainer_zero3"
SAVE = "under ZeRO-3, trainer.save_model writes no usable weights without the 16-bit gather"


@pytest.fixture(scope="module")
def findings() -> dict[str, list[tuple[int, str, str]]]:
    files = discover([str(PROJECT)]).files
    index = index_project(files, [str(PROJECT)])
    found: dict[str, list[tuple[int, str, str]]] = {}
    for result in lint_files([(f, RuleSelection()) for f in files], jobs=1, project=index):
        assert isinstance(result, FileResult)
        name = Path(result.path).name
        found[name] = [(d.start.line, d.code, d.message) for d in result.diagnostics]
    return found


@pytest.mark.parametrize(
    ("name", "line", "config"),
    [
        ("finetune_lora.py", 19, "configs/ds_z3.json (from "),
        ("reward_literal.py", 24, "dict literal at line 5"),
    ],
)
def test_save_model_without_gather_is_flagged(
    findings: dict[str, list[tuple[int, str, str]]], name: str, line: int, config: str
) -> None:
    ((found_line, code, message),) = findings[name]
    assert (found_line, code) == (line, "DSL210")
    assert message.startswith(SAVE) and config in message


def test_the_launcher_that_names_the_config_is_in_the_message(findings: dict[str, list[tuple[int, str, str]]]) -> None:
    ((_, _, message),) = findings["finetune_lora.py"]
    assert message.endswith("scripts/run_sft.sh:3 --deepspeed configs/ds_z3.json)")


@pytest.mark.parametrize("name", ["finetune_full.py", "reward_literal_gather.py"])
def test_the_twins_that_gather_stay_silent(findings: dict[str, list[tuple[int, str, str]]], name: str) -> None:
    assert findings[name] == []


def test_a_trainer_under_an_accelerate_launch_of_a_zero3_config_file(tmp_path: Path) -> None:
    """TrainingArguments naming no config, under an `accelerate launch` whose YAML names a ZeRO-3 config file: the
    Trainer runs that config (DSL210 at its save); a YAML without a config file (its own settings) is not read as
    a whole config."""
    from click.testing import CliRunner

    from dslint.cli import main

    (tmp_path / "train.py").write_text(
        "from transformers import Trainer, TrainingArguments\n\n"
        'args = TrainingArguments(output_dir="out")\n'
        "trainer = Trainer(model=model, args=args)\ntrainer.train()\n"
        'trainer.save_model("out")\n',
        encoding="utf-8",
    )
    (tmp_path / "ds_z3.json").write_text('{"zero_optimization": {"stage": 3}}\n', encoding="utf-8")
    (tmp_path / "run.sh").write_text("accelerate launch --config_file acc.yaml train.py\n", encoding="utf-8")
    yaml = "distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ds_z3.json\nnum_processes: 2\n"
    (tmp_path / "acc.yaml").write_text(yaml, encoding="utf-8")

    def codes() -> str:
        return CliRunner().invoke(main, ["check", "--isolated", "--no-cache", "--exit-zero", str(tmp_path)]).output

    assert "DSL210" in codes()
    (tmp_path / "acc.yaml").write_text(yaml.replace("  deepspeed_config_file: ds_z3.json\n", "  zero_stage: 2\n"))
    assert "DSL210" not in codes()


@pytest.mark.parametrize(("saved", "flagged"), [("model", True), ("peft_model", True), ("reference", False)])
def test_either_arm_of_the_trainers_conditional_model_is_a_trained_model(
    tmp_path: Path, saved: str, flagged: bool
) -> None:
    """`Trainer(model=peft_model if args.lora else model)`: each arm is the model trained on its path (and under a
    PEFT wrap the base's parameters are the ones partitioned), so saving either after `train()` under ZeRO-3 writes
    empty tensors (DSL204); another model is no trained one."""
    from click.testing import CliRunner

    from dslint.cli import main

    (tmp_path / "train.py").write_text(
        "from transformers import Trainer, TrainingArguments\n\n"
        "def main(args, model, peft_model, reference):\n"
        '    training_args = TrainingArguments(output_dir="out", deepspeed="ds_z3.json")\n'
        "    trainer = Trainer(model=peft_model if args.lora else model, args=training_args)\n"
        "    trainer.train()\n"
        f'    {saved}.save_pretrained("out")\n',
        encoding="utf-8",
    )
    (tmp_path / "ds_z3.json").write_text('{"zero_optimization": {"stage": 3}}\n', encoding="utf-8")
    output = CliRunner().invoke(main, ["check", "--isolated", "--no-cache", "--exit-zero", str(tmp_path)]).output
    assert ("DSL204" in output) is flagged


@pytest.mark.parametrize(("saved", "flagged"), [("model", True), ("reference", False)])
def test_a_model_a_helper_of_the_file_trains_is_a_trained_model(tmp_path: Path, saved: str, flagged: bool) -> None:
    """`train_model(model, args)` where the file's `train_model` builds a Trainer on its parameter and trains it:
    the model passed is trained at that call, and saving it afterwards under ZeRO-3 writes empty tensors."""
    from click.testing import CliRunner

    from dslint.cli import main

    (tmp_path / "train.py").write_text(
        "from transformers import Trainer, TrainingArguments\n\n"
        "def train_model(model, training_args):\n"
        "    trainer = Trainer(model=model, args=training_args)\n"
        "    trainer.train()\n\n"
        "def main(model, reference):\n"
        '    training_args = TrainingArguments(output_dir="out", deepspeed="ds_z3.json")\n'
        "    train_model(model, training_args)\n"
        f'    {saved}.save_pretrained("out")\n\n'
        'if __name__ == "__main__":\n'
        "    main(None, None)\n",
        encoding="utf-8",
    )
    (tmp_path / "ds_z3.json").write_text('{"zero_optimization": {"stage": 3}}\n', encoding="utf-8")
    output = CliRunner().invoke(main, ["check", "--isolated", "--no-cache", "--exit-zero", str(tmp_path)]).output
    assert ("DSL204" in output) is flagged
