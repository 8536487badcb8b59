"""Which JSON files are DeepSpeed configs (`dslint/config/recognition.py`): an application's settings file that
shares a few key names with DeepSpeed is not one; a framework config carrying DeepSpeed's sections still is."""

from __future__ import annotations

import json
from pathlib import Path

from dslint.config.recognition import is_config_name
from dslint.lint.file import lint_file
from dslint.project.project_index import ConfigReading

# A GUI's training settings: its own keys, and three names DeepSpeed also reads (a string `optimizer`).
APP_SETTINGS = {
    **{f"gui_option_{i}": i for i in range(40)},
    "LoRA_type": "Standard",
    "train_batch_size": 1,
    "gradient_accumulation_steps": 1,
    "optimizer": "AdamW8bit",
}


def _codes(name: str, content: dict[str, object], reader: str | None = None) -> list[str]:
    reading = ConfigReading(reader) if reader is not None else None
    result = lint_file(name, json.dumps(content, indent=2).encode(), config_reader=reading)
    return [d.code for d in result.diagnostics]


def test_app_settings_sharing_a_few_key_names_are_not_a_deepspeed_config() -> None:
    assert _codes("lora_settings.json", APP_SETTINGS) == []


def test_the_same_keys_with_a_deepspeed_section_are_a_config() -> None:
    """A framework's config (its own keys beside DeepSpeed's sections) is still read: its unknown keys reported
    where a reader hands the whole file to DeepSpeed. Found by content alone, with nothing naming it, it may be a
    project's settings from which the script picks DeepSpeed's keys: no finding."""
    mixed = {**APP_SETTINGS, "optimizer": {"type": "Adam", "params": {"lr": 1e-4}}}
    assert _codes("lora_settings.json", mixed, reader="initialize") == ["DSL401"]
    assert _codes("lora_settings.json", mixed) == []
    zero = {**APP_SETTINGS, "zero_optimization": {"stage": 2}}
    assert "DSL401" in _codes("lora_settings.json", zero, reader="initialize")
    assert _codes("lora_settings.json", zero) == []


def test_a_file_named_like_a_config_or_mostly_deepspeed_keys_is_a_config() -> None:
    assert "DSL401" in _codes("ds_config.json", APP_SETTINGS)
    small = {"train_batch_size": 8, "gradient_accumulation_steps": 2, "trian_micro_batch": 4}
    assert _codes("settings.json", small) == ["DSL401"]


def test_config_names_and_look_alikes() -> None:
    """A name says DeepSpeed config by its ZeRO or DeepSpeed prefix; a zero-shot evaluation set only shares the
    word (`zero_shot_mmlu_val.json`, JSON lines that are no config: no parse error is owed for it)."""
    for name in ("zero2.json", "zero3_offload.json", "zero_stage2.json", "ds_config.json", "deepspeed.json"):
        assert is_config_name(Path(name)), name
    for name in ("zero_shot_mmlu_val.json", "zeroshot_results.json", "zero-shot.json", "results.json"):
        assert not is_config_name(Path(name)), name
