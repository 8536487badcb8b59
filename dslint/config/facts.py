"""What several config rules ask of a config tree: who reads it (`Origin`), the ZeRO stage, precision flags, batch
values, "auto" values, whether it is another tool's file."""

from __future__ import annotations

import enum
from typing import Any

from dslint.config.schema import Schema, _lax_int, did_you_mean
from dslint.config.tree import UNKNOWN, Entry, Node, Object, Scalar, node_at, scalar

_TRUE_STRINGS = {"1", "on", "t", "true", "y", "yes"}
_FALSE_STRINGS = {"0", "off", "f", "false", "n", "no"}


def zero_stage(root: Object) -> int | None:
    """The ZeRO stage DeepSpeed runs: absent section or key = 0, "auto" = 0 (dropped); None when unknown."""
    section = root.get("zero_optimization")
    if section is None:
        return None if root.opaque else 0  # an opaque dict may hold the section
    if isinstance(section, Scalar) and isinstance(section.value, bool):
        return 1 if section.value else 0  # DeepSpeed's old boolean form
    if not isinstance(section, Object) or section.opaque:
        return None
    stage = section.get("stage")
    if stage is None:
        return 0
    if not isinstance(stage, Scalar) or stage.value is UNKNOWN:
        return None
    if stage.value == "auto":
        return 0
    number = _lax_int(stage.value)
    return number if number in (0, 1, 2, 3) else None


def lax_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        if value.lower() in _TRUE_STRINGS:
            return True
        if value.lower() in _FALSE_STRINGS:
            return False
    return None


def enabled(root: Object, section_name: str) -> bool | None:
    """`section.enabled` as DeepSpeed reads it (default False; "auto" dropped = False); None when unknown."""
    section = root.get(section_name)
    if section is None:
        return None if root.opaque else False
    if not isinstance(section, Object) or section.opaque:
        return None
    flag = section.get("enabled")
    if flag is None:
        return False
    if not isinstance(flag, Scalar) or flag.value is UNKNOWN:
        return None
    if flag.value == "auto":
        return False
    return lax_bool(flag.value)


def bfloat16_ignored(root: Object) -> bool:
    """Whether DeepSpeed ignores the older `bfloat16` section: it reads it only when `bf16` is absent or null
    (`runtime/precision_config.py`, get_bfloat16_config)."""
    bf16 = root.get("bf16")
    return root.get("bfloat16") is not None and bf16 is not None and scalar(bf16) is not None


def bf16_section(root: Object) -> str:
    """DeepSpeed reads `bf16`, or the older `bfloat16` when `bf16` is absent or null."""
    bf16 = root.get("bf16")
    reads_old = (bf16 is None or scalar(bf16) is None) and root.get("bfloat16") is not None
    return "bfloat16" if reads_old else "bf16"


def batch_number(node: Node | None) -> Any:
    """A batch value as DeepSpeed computes with it: None when absent (or null), a number (DeepSpeed does its
    batch arithmetic on whatever number it is given, floats and bools included), or UNKNOWN."""
    if node is None or (isinstance(node, Scalar) and node.value is None):
        return None  # DeepSpeed reads null as absent
    if isinstance(node, Scalar) and isinstance(node.value, (int, float)):
        return node.value
    return UNKNOWN


def batch_values(root: Object) -> tuple[Any, Any, Any]:
    return (
        batch_number(root.get("train_batch_size")),
        batch_number(root.get("train_micro_batch_size_per_gpu")),
        batch_number(root.get("gradient_accumulation_steps")),
    )


def offload_ratio(root: Object) -> tuple[Node | None, float | None]:
    node = node_at(root, "zero_optimization", "offload_optimizer", "ratio")
    if isinstance(node, Scalar) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        try:
            return node, float(node.value)
        except OverflowError:  # an integer of hundreds of digits
            return node, None
    return node, None


class Origin(str, enum.Enum):
    """Who reads the config, which decides what some values mean."""

    FILE = "file"  # a JSON file on its own: the reader is not known
    INITIALIZE = "initialize"  # goes straight to deepspeed.initialize
    TRAINER = "trainer"  # the Hugging Face Trainer fills "auto" values before DeepSpeed sees them
    # PyTorch Lightning's DeepSpeedStrategy: sets train_micro_batch_size_per_gpu from the data loader when the
    # config lacks it, then calls deepspeed.initialize with the config ("auto" is not filled)
    LIGHTNING = "lightning"
    # A launcher hands the file to a script whose reader dslint does not follow (the option's value goes
    # elsewhere than initialize, a Trainer or a strategy in that script): read as initialize's by the rules,
    # except those whose answer is the reader's own filling ("auto", DSL405), which stay silent.
    UNLINKED = "unlinked"

    @classmethod
    def of_reader(cls, reader: str) -> Origin:
        """The project index's name of a reader ("trainer", "lightning", "unlinked", "initialize", "file") as an
        Origin."""
        return {"trainer": cls.TRAINER, "lightning": cls.LIGHTNING, "unlinked": cls.UNLINKED, "file": cls.FILE}.get(
            reader, cls.INITIALIZE
        )


MIXED_THRESHOLD = 3  # more unknown top-level keys than this, none a near miss: another tool's file


def is_comment_key(key: str) -> bool:
    """A key written as a comment, which JSON lacks (`"//"`, `"#"`, `"_comment"`, `"comment_2"`, `"note"`): no
    DeepSpeed key starts with `_` or `comment`."""
    word = key.strip().lower()
    return word.startswith(("_", "//", "#", "comment")) or word in {"description", "note"}


def foreign_keys(root: Object, schema: Schema) -> list[Entry]:
    """Top-level entries that are neither DeepSpeed keys, near misses of one, comments, nor handled by a
    dedicated rule."""
    return [
        e
        for e in root.last_entries()
        if e.key not in schema.top_level_keys
        and e.key != "ignored_parameters"
        and not is_comment_key(e.key)
        and did_you_mean(e.key, schema.live_top_level_keys) is None
    ]


def mixed_file(root: Object, schema: Schema) -> bool:
    return len(foreign_keys(root, schema)) > MIXED_THRESHOLD


def argument_file(root: Object, schema: Schema) -> bool:
    """Another tool's argument file that carries DeepSpeed sections (GPT-NeoX, Megatron): most of its foreign
    keys are command-line options spelt with hyphens (`num-layers`), a spelling no DeepSpeed key has. That
    tool's parser reads the file and hands DeepSpeed only the keys it knows, so the file is not DeepSpeed's
    config as it stands."""
    foreign = foreign_keys(root, schema)
    hyphenated = sum(1 for e in foreign if "-" in e.key)
    return hyphenated > MIXED_THRESHOLD and 2 * hyphenated >= len(foreign)


def autotuning_enabled(root: Object) -> bool:
    """DeepSpeed's autotuner expands lists of values (the tuning space) and fills "auto" values."""
    section = root.get("autotuning")
    flag = section.get("enabled") if isinstance(section, Object) else None
    return isinstance(flag, Scalar) and flag.value is True


def is_auto(node: Node | None) -> bool:
    return isinstance(node, Scalar) and node.value == "auto"


# The top-level DeepSpeed switches and the value DeepSpeed takes when a config leaves them out (`runtime/constants.py`,
# 0.19.8): a key written with that value changes nothing, wherever it is read or dropped.
TOP_LEVEL_SWITCH_DEFAULTS = {
    "zero_allow_untested_optimizer": False,
    "zero_force_ds_cpu_optimizer": True,
    "prescale_gradients": False,
    "disable_allgather": False,
    "dump_state": False,
    "wall_clock_breakdown": False,
    "memory_breakdown": False,
    "load_universal": False,
    "dataloader_drop_last": False,
    "use_data_before_expert_parallelism": False,
}
