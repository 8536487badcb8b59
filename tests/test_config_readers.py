"""project/config_readers.py: who reads a config through a loader helper, and keys a script replaces in code."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from dslint.cli import main
from dslint.project.config_readers import framework_configs, replaced_keys

LOADS_AND_EDITS = b"""
import json, deepspeed
def main(args, model):
    with open(args.ds_config) as handle:
        cfg = json.load(handle)
    cfg["train_batch_size"] = 8
    engine, *_ = deepspeed.initialize(model=model, config=cfg)
    cfg["gradient_accumulation_steps"] = 2
"""


def test_keys_replaced_before_initialize_only() -> None:
    assert replaced_keys(LOADS_AND_EDITS, "ds_config") == frozenset({"train_batch_size"})


def test_no_replacement_when_the_script_passes_the_path_or_another_option() -> None:
    assert replaced_keys(LOADS_AND_EDITS, "deepspeed") is None
    passes_path = b"import deepspeed\ndef main(args, model):\n    deepspeed.initialize(model=model, args=args)\n"
    assert replaced_keys(passes_path, "deepspeed_config") is None


def test_a_strategy_config_from_an_imported_loader(tmp_path: Path) -> None:
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "ds.json").write_text("{}", encoding="utf-8")
    loader = tmp_path / "cfg" / "loader.py"
    loader.write_text(
        "import json, os\ndef load():\n"
        "    return json.load(open(os.path.join(os.path.dirname(__file__), 'ds.json')))\n",
        encoding="utf-8",
    )
    fit = tmp_path / "fit.py"
    fit.write_text(
        "from cfg.loader import load\nfrom lightning.pytorch.strategies import DeepSpeedStrategy\n"
        "def run():\n    settings = load()\n    return DeepSpeedStrategy(config=settings)\n",
        encoding="utf-8",
    )
    sources = {str(p): p.read_bytes() for p in (loader, fit)}
    found = framework_configs(sources)
    assert [(Path(c).name, reader) for c, reader, _ in found] == [("ds.json", "lightning")]


def test_lightnings_old_deepspeed_plugin_is_lightnings_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`from pytorch_lightning.plugins import DeepSpeedPlugin` (Lightning before 1.6) with `config=`: the
    strategy's old name, which fills the micro batch itself, not accelerate's class of that name (which takes
    `hf_ds_config=`): a config without batch keys that only it can read is not DSL406's."""
    (tmp_path / "molbart").mkdir()
    util = (
        "import pytorch_lightning as pl\nfrom pytorch_lightning.plugins import DeepSpeedPlugin\n"
        'DEFAULT_CONFIG = "ds_config.json"\n'
        "def build_trainer(args):\n"
        "    return pl.Trainer(plugins=[DeepSpeedPlugin(config=args.deepspeed_config_path)])\n"
    )
    (tmp_path / "molbart" / "train.py").write_text(
        "import argparse\nfrom molbart import util\n"
        "parser = argparse.ArgumentParser()\n"
        'parser.add_argument("--deepspeed_config_path", default=util.DEFAULT_CONFIG)\n'
        "util.build_trainer(parser.parse_args()).fit(None)\n",
        encoding="utf-8",
    )
    (tmp_path / "ds_config.json").write_text('{"zero_optimization": {"stage": 2}}\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)

    def codes() -> str:
        return CliRunner().invoke(main, ["check", "--isolated", "--no-cache", "--exit-zero", "."]).output

    (tmp_path / "molbart" / "util.py").write_text(util, encoding="utf-8")
    assert "DSL406" not in codes()
    accelerate = util.replace("from pytorch_lightning.plugins import", "from accelerate import")
    (tmp_path / "molbart" / "util.py").write_text(accelerate.replace("config=", "hf_ds_config="), encoding="utf-8")
    assert "DSL406" in codes()


def test_a_commented_out_trainer_config_names_no_file(tmp_path: Path) -> None:
    """`#deepspeed="ds.json",` inside TrainingArguments is no config the Trainer reads: a missing file there is not
    DSL423's; written, it is."""
    script = (
        "from transformers import TrainingArguments\n"
        "args = TrainingArguments(\n"
        '    output_dir="out",\n'
        '    #deepspeed="configs/ds.json",\n'
        ")\n"
    )
    (tmp_path / "train.py").write_text(script, encoding="utf-8")

    def codes() -> str:
        return CliRunner().invoke(main, ["check", "--isolated", "--no-cache", "--exit-zero", str(tmp_path)]).output

    assert "DSL423" not in codes()
    (tmp_path / "train.py").write_text(script.replace("#deepspeed", "deepspeed"), encoding="utf-8")
    assert "DSL423" in codes()
