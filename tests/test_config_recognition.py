"""Which JSON files are DeepSpeed configs (`dslint/config/recognition.py`): an application's settings file that
shares a few key names with DeepSpeed is not one; a framework config carrying DeepSpeed's sections still is."""

from __future__ import annotations

import json

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
