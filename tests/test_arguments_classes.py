"""The project's own Trainer argument classes (`project/arguments_classes.py`): a class deriving, to any depth, from
`TrainingArguments` or a TRL config is one, whatever its name; the Trainer rules read its calls as the library's."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from dslint.cli import main
from dslint.project.arguments_classes import arguments_classes


def test_classes_deriving_from_trainer_arguments_by_name() -> None:
    sources = {
        "a.py": b"from transformers import TrainingArguments\nclass SimPOConfig(TrainingArguments):\n    pass\n",
        "b.py": b"from a import SimPOConfig\nclass Extended(a.SimPOConfig):\n    pass\nclass Other(Base):\n    pass\n",
        "c.py": b"from trl import DPOConfig\nclass MyDPO(DPOConfig, Mixin):\n    pass\n",
        "d.py": b"class MyTrainingArguments(TrainingArguments):\n    pass\n",
        "e.py": b"class TrainingArguments:\n    pass\n",  # a plain dataclass of that name derives from nothing
    }
    # a class named as the library's is kept too: a call of it is no call of the library's class
    assert arguments_classes(sources) == {"SimPOConfig", "Extended", "MyDPO", "MyTrainingArguments"}


def test_a_deepspeed_config_set_after_a_project_subclass_is_built(tmp_path: Path) -> None:
    """DSL440 on `args.deepspeed = ...` after `SimPOConfig(...)`, a project subclass of TrainingArguments imported
    from a sibling module; silent for a class of the same shape that derives from something else."""
    (tmp_path / "simpo_config.py").write_text(
        "from dataclasses import dataclass\nfrom transformers import TrainingArguments\n\n"
        "@dataclass\nclass SimPOConfig(TrainingArguments):\n    beta: float = 2.0\n",
        encoding="utf-8",
    )
    script = (
        "from transformers import Trainer\nfrom simpo_config import SimPOConfig\n\n"
        'args = SimPOConfig(output_dir="out")\nargs.deepspeed = "ds.json"\n'
        "trainer = Trainer(model=model, args=args)\ntrainer.train()\n"
    )
    (tmp_path / "train.py").write_text(script, encoding="utf-8")

    def codes() -> str:
        return CliRunner().invoke(main, ["check", "--isolated", "--no-cache", "--exit-zero", str(tmp_path)]).output

    assert "DSL440" in codes()
    (tmp_path / "simpo_config.py").write_text(
        "from dataclasses import dataclass\n\n@dataclass\nclass SimPOConfig(BaseSettings):\n    beta: float = 2.0\n",
        encoding="utf-8",
    )
    assert "DSL440" not in codes()


def test_a_helper_load_before_a_trl_config(tmp_path: Path) -> None:
    """DSL208 at the call of a project helper that loads the model before TRL's `DPOConfig(deepspeed=...)` of a
    ZeRO-3 config, as before `TrainingArguments(deepspeed=...)`; silent when the config is built first."""
    (tmp_path / "modeling.py").write_text(
        "from transformers import AutoModelForCausalLM\n\n"
        "def load_policy(name):\n    return AutoModelForCausalLM.from_pretrained(name)\n",
        encoding="utf-8",
    )
    (tmp_path / "ds_zero3.json").write_text('{"zero_optimization": {"stage": 3}}\n', encoding="utf-8")
    script = (
        "from trl import DPOConfig, DPOTrainer\nfrom modeling import load_policy\n\n"
        "def main():\n"
        '    model = load_policy("base")\n'
        '    args = DPOConfig(output_dir="out", deepspeed="ds_zero3.json")\n'
        "    DPOTrainer(model=model, args=args).train()\n"
    )
    (tmp_path / "train_dpo.py").write_text(script, encoding="utf-8")

    def codes() -> str:
        return CliRunner().invoke(main, ["check", "--isolated", "--no-cache", "--exit-zero", str(tmp_path)]).output

    assert "train_dpo.py:5" in codes() and "DSL208" in codes()
    first = script.replace('    model = load_policy("base")\n', "").replace(
        "    DPOTrainer(", '    model = load_policy("base")\n    DPOTrainer('
    )
    (tmp_path / "train_dpo.py").write_text(first, encoding="utf-8")
    assert "DSL208" not in codes()
