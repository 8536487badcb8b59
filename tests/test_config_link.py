"""The script-to-config link: which config a script's initialize call (or HF TrainingArguments) uses."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst

from dslint.config.facts import Origin
from dslint.config.tree import UNKNOWN
from dslint.lint.script import lint_source
from dslint.project.config_link import resolve_config, trainer_configs
from dslint.project.resolved_configs import ResolvedConfig
from dslint.script.collect import collect_facts
from dslint.script.context import ScriptContext


def _context(code: str, path: str = "train.py") -> ScriptContext:
    module = cst.parse_module(textwrap.dedent(code))
    return ScriptContext(path, module, collect_facts(module))


def _resolved(code: str, path: str = "train.py") -> ResolvedConfig | None:
    context = _context(code, path)
    return resolve_config(context, context.facts.initialize_calls[0].engine)


def test_dict_literal_through_a_name() -> None:
    config = _resolved(
        """
        import deepspeed
        cfg = {"train_batch_size": 8, "zero_optimization": {"stage": 3}, "bf16": {"enabled": True}}
        engine, _, _, _ = deepspeed.initialize(model=m, config=cfg)
        """
    )
    assert config is not None and config.zero_stage == 3 and config.bf16_enabled is True
    assert config.fp16_enabled is False and config.origin is Origin.INITIALIZE


def test_item_assignment_after_the_literal_makes_the_value_unknown() -> None:
    config = _resolved(
        """
        import deepspeed
        cfg = {"train_batch_size": 8, "zero_optimization": {"stage": 2}}
        cfg["zero_optimization"]["stage"] = args.stage
        cfg["fp16"] = {"enabled": True}
        engine, _, _, _ = deepspeed.initialize(model=m, config=cfg)
        """
    )
    assert config is not None
    assert config.get("zero_optimization", "stage") is UNKNOWN and config.zero_stage is None
    assert config.fp16_enabled is True


def test_update_makes_the_whole_config_unknown_and_later_mutations_do_not_count() -> None:
    assert (
        _resolved(
            """
            import deepspeed
            cfg = {"train_batch_size": 8}
            cfg.update(extra)
            engine, _, _, _ = deepspeed.initialize(model=m, config=cfg)
            """
        )
        is None
    )
    config = _resolved(
        """
        import deepspeed
        cfg = {"train_batch_size": 8, "zero_optimization": {"stage": 3}}
        engine, _, _, _ = deepspeed.initialize(model=m, config=cfg)
        cfg["zero_optimization"]["stage"] = 1
        """
    )
    assert config is not None and config.zero_stage == 3


def test_json_path_relative_to_the_script_and_argparse_default(tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "ds.json").write_text('{"train_batch_size": 8, "zero_optimization": {"stage": 2}}')
    script = str(tmp_path / "train.py")
    direct = _resolved(
        """
        import deepspeed
        engine, _, _, _ = deepspeed.initialize(model=m, config="configs/ds.json")
        """,
        script,
    )
    assert direct is not None and direct.zero_stage == 2 and direct.path == tmp_path / "configs" / "ds.json"
    through_args = _resolved(
        """
        import argparse
        import deepspeed
        parser = argparse.ArgumentParser()
        parser.add_argument("--deepspeed_config", type=str, default="configs/ds.json")
        args = parser.parse_args()
        engine, _, _, _ = deepspeed.initialize(args=args, model=m, model_parameters=m.parameters())
        """,
        script,
    )
    assert through_args is not None and through_args.zero_stage == 2
    no_default = _resolved(
        """
        import argparse
        import deepspeed
        parser = argparse.ArgumentParser()
        parser = deepspeed.add_config_arguments(parser)
        args = parser.parse_args()
        engine, _, _, _ = deepspeed.initialize(args=args, model=m)
        """,
        script,
    )
    assert no_default is None


def test_training_arguments_deepspeed_is_a_trainer_config(tmp_path: Path) -> None:
    (tmp_path / "ds.json").write_text('{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 3}}')
    context = _context(
        """
        from transformers import TrainingArguments
        args = TrainingArguments(output_dir="o", deepspeed="ds.json")
        """,
        str(tmp_path / "train.py"),
    )
    [config] = trainer_configs(context)
    assert config.origin is Origin.TRAINER and config.zero_stage == 3


def test_config_rules_report_into_the_script_and_into_the_file(tmp_path: Path) -> None:
    (tmp_path / "ds.json").write_text('{\n  "train_batch_size": "auto"\n}\n')
    script = tmp_path / "train.py"
    code = textwrap.dedent(
        """
        import deepspeed
        engine, _, _, _ = deepspeed.initialize(model=m, config="ds.json")
        other, _, _, _ = deepspeed.initialize(model=m, config={"train_batch_size": 8, "fp_16": {}})
        """
    )
    found = {(Path(d.path).name, d.start.line, d.code) for d in lint_source(str(script), code.encode()).diagnostics}
    assert found == {("ds.json", 2, "DSL405"), ("train.py", 4, "DSL401")}


def test_trainer_scripts_accept_auto(tmp_path: Path) -> None:
    (tmp_path / "ds.json").write_text('{"train_batch_size": "auto", "bf16": {"enabled": "auto"}}')
    code = 'from transformers import TrainingArguments\nTrainingArguments(output_dir="o", deepspeed="ds.json")\n'
    assert lint_source(str(tmp_path / "train.py"), code.encode()).diagnostics == []


def test_stage_and_precision_read_as_deepspeed_reads_them(tmp_path: Path) -> None:
    config = _resolved(
        """
        import deepspeed
        cfg = {"train_batch_size": 8, "zero_optimization": {"stage": "3"}, "fp16": {"enabled": "auto"}}
        engine, _, _, _ = deepspeed.initialize(model=m, config=cfg)
        """
    )
    assert config is not None and config.zero_stage == 3 and config.fp16_enabled is False
    auto = _resolved(
        """
        import deepspeed
        engine, _, _, _ = deepspeed.initialize(model=m, config={"zero_optimization": {"stage": "auto"}})
        """
    )
    assert auto is not None and auto.zero_stage == 0  # deepspeed.initialize drops "auto": ZeRO off
    (tmp_path / "ds.json").write_text('{"zero_optimization": {"stage": "auto"}, "bf16": {"enabled": "auto"}}')
    context = _context(
        'from transformers import TrainingArguments\nTrainingArguments(output_dir="o", deepspeed="ds.json")\n',
        str(tmp_path / "train.py"),
    )
    [trainer] = trainer_configs(context)
    assert trainer.zero_stage is None and trainer.bf16_enabled is None  # the Trainer fills "auto"


def test_accelerate_plugin_is_a_trainer_config() -> None:
    context = _context(
        """
        from accelerate.utils import DeepSpeedPlugin
        ds = {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}}
        plugin = DeepSpeedPlugin(hf_ds_config=ds)
        """
    )
    [config] = trainer_configs(context)
    assert config.origin is Origin.TRAINER and config.zero_stage == 2
