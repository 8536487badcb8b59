"""What several config rules ask of a config tree: the ZeRO stage, precision flags, batch values."""

from __future__ import annotations

from typing import Any

from dslint.config.schema import _lax_int
from dslint.config.tree import UNKNOWN, Node, Object, Scalar, node_at, scalar

_TRUE_STRINGS = {"1", "on", "t", "true", "y", "yes"}
_FALSE_STRINGS = {"0", "off", "f", "false", "n", "no"}


def zero_stage(root: Object) -> int | None:
    """The ZeRO stage DeepSpeed runs: absent section or key = 0, "auto" = 0 (dropped); None when unknown."""
    section = root.get("zero_optimization")
    if section is None:
        return 0
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
        return False
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
        return node, float(node.value)
    return node, None
