"""Recognising DeepSpeed config files: by name (`ds_config*.json`, `*deepspeed*.json`, `zero*.json`, ...) or by
content (top-level keys only DeepSpeed reads, with DeepSpeed's sections or mostly its keys). A JSON file that is
not a DeepSpeed config is never reported."""

from __future__ import annotations

import re
from pathlib import Path

from dslint.config.schema import load_schema
from dslint.config.tree import Object
from dslint.limits import TooLarge, read_capped

CONFIG_SUFFIXES = (".json", ".hjson")
# `zero2.json`, `zero3_offload.json`, `zero_stage2.json`: not `zero_shot_mmlu_val.json` (an evaluation set)
NAME_PATTERN = re.compile(r"(^ds[_-]|^zero(?![_-]?shot)|deepspeed|^ds_?z\d|^z[0-3][_.-])", re.IGNORECASE)
# Keys no other common tool writes at the top level of a JSON file: enough to recognise a config by content.
STRONG_KEYS = (
    "train_micro_batch_size_per_gpu",
    "zero_optimization",
    "train_batch_size",
    "zero_allow_untested_optimizer",
)
MAX_PEEK_BYTES = 2_000_000


def is_config_name(path: Path) -> bool:
    return path.suffix.lower() in CONFIG_SUFFIXES and bool(NAME_PATTERN.search(path.stem))


def mentions_strong_key(data: bytes) -> bool:
    return any(f'"{key}"'.encode() in data for key in STRONG_KEYS)


def is_candidate(path: Path) -> bool:
    """Whether a file met while walking a directory may be a DeepSpeed config (decided for sure once parsed)."""
    if path.suffix.lower() not in CONFIG_SUFFIXES:
        return False
    if is_config_name(path):
        return True
    try:
        if path.stat().st_size > MAX_PEEK_BYTES:
            return False
        return mentions_strong_key(read_capped(path, MAX_PEEK_BYTES, "the peek size"))
    except (OSError, TooLarge):  # a FIFO or a device named like a config: never opened blocking
        return False


def is_deepspeed_config(root: Object, named_like_one: bool) -> bool:
    """A parsed object is a DeepSpeed config when it has a key only DeepSpeed reads at the top level, or, for a
    file named like a config, when most of its keys are DeepSpeed keys.

    A file found by content alone (a strong key, no config-like name) must also look like one: most of its keys
    DeepSpeed's, or at least one DeepSpeed section written as DeepSpeed reads it, an object (`zero_optimization`,
    `fp16`, `optimizer: {"type": ...}`). An application's settings file that shares a few names with DeepSpeed
    (`train_batch_size`, `gradient_accumulation_steps`, `"optimizer": "AdamW8bit"`) among a hundred of its own is
    not taken for one; a framework's config that carries DeepSpeed's sections beside its own keys still is."""
    keys = root.keys()
    known = load_schema().top_level_keys
    mostly_deepspeed = bool(keys) and sum(1 for key in keys if key in known) * 2 >= len(keys)
    if any(key in STRONG_KEYS for key in keys):
        if named_like_one or mostly_deepspeed:
            return True
        return any(key in known and isinstance(root.get(key), Object) for key in keys)
    return named_like_one and mostly_deepspeed


# The keys without which DeepSpeed refuses to start (or that its launchers fill): a whole config has one.
BATCH_KEYS = ("train_batch_size", "train_micro_batch_size_per_gpu")


def is_whole_config(root: Object, named_like_one: bool) -> bool:
    """A config written out in a document (a code block of a tutorial) is checked only when it is a whole
    DeepSpeed config: one of the batch keys at its top level, and recognised as a config file is
    (`is_deepspeed_config`). An excerpt ("add this to your config": `{"zero_optimization": {...}}`) lacks the
    batch keys, and what it leaves out would read as missing."""
    return any(root.entry(key) is not None for key in BATCH_KEYS) and is_deepspeed_config(root, named_like_one)
