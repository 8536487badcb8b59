"""Reading the accelerate YAML a launch names (`accelerate launch --config_file acc.yaml train.py`): the few keys
that matter to DeepSpeed, through the one YAML reader (`config/yaml_subset.py`); a `.json` config file (which
accelerate reads with `json.load`) through the JSON reader (`config/tree.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dslint.config.tree import Object, ParseError, Scalar, parse_text
from dslint.config.yaml_subset import parse_yaml_subset


@dataclass(frozen=True)
class AccelerateConfig:
    """What an accelerate YAML says about DeepSpeed: its config file, or the inline settings."""

    path: str
    distributed_type: str | None = None
    mixed_precision: str | None = None
    deepspeed_config_file: str | None = None
    deepspeed_config_file_line: int = 0
    zero_stage: int | None = None
    zero_stage_line: int = 0
    lines: dict[str, int] = field(default_factory=dict)
    num_processes: int | None = None  # all ranks, over every machine
    num_machines: int | None = None
    offload_optimizer_device: str | None = None  # inline DeepSpeed settings (`deepspeed_config:` block)
    offload_param_device: str | None = None
    zero3_save_16bit_model: str | None = None
    zero3_init_flag: str | None = None
    gradient_clipping: str | None = None  # as written (accelerate reads it as a float)
    gradient_accumulation_steps: str | None = None  # as written
    # read for an `accelerate launch` that names no config file: the one YAML beside it, presumed its default
    # (`default_accelerate.presumed_default_config`)
    presumed: bool = False


def parse_accelerate_yaml(path: str, text: str) -> AccelerateConfig | None:
    """The few keys of accelerate's YAML that matter here, read by the one YAML reader (`config/yaml_subset.py`):
    each key's first occurrence at any depth (accelerate writes each once), with its value as written; None when
    the file is not an accelerate config, or not YAML that reader places."""
    try:  # accelerate reads a `.json` config file with `json.load`, any other as YAML (`load_config_from_file`)
        root = parse_text(text, hjson=False) if path.lower().endswith(".json") else parse_yaml_subset(text)
    except (ParseError, RecursionError):
        return None
    if not isinstance(root, Object):
        return None
    source = text.lstrip("\ufeff").splitlines()
    values: dict[str, str] = {}
    lines: dict[str, int] = {}

    def read(mapping: Object) -> None:
        for entry in mapping.entries:
            value = entry.value
            written = ""
            if isinstance(value, Scalar) and value.start.line == value.end.line <= len(source):
                written = source[value.start.line - 1][value.start.column - 1 : value.end.column - 1]
            values.setdefault(entry.key, written.strip().strip("'\""))
            lines.setdefault(entry.key, entry.key_start.line)
            if isinstance(value, Object):
                read(value)

    read(root)
    if "distributed_type" not in values and "deepspeed_config" not in values:
        return None
    stage_text = values.get("zero_stage")
    stage = int(stage_text) if stage_text is not None and stage_text.isdigit() else None
    config_file = values.get("deepspeed_config_file") or None
    if config_file in ("null", "none", "None", "~"):
        config_file = None
    return AccelerateConfig(
        path=path,
        distributed_type=values.get("distributed_type"),
        mixed_precision=values.get("mixed_precision"),
        deepspeed_config_file=config_file,
        deepspeed_config_file_line=lines.get("deepspeed_config_file", 0),
        zero_stage=stage,
        zero_stage_line=lines.get("zero_stage", 0),
        lines=lines,
        num_processes=_count(values.get("num_processes")),
        num_machines=_count(values.get("num_machines")),
        offload_optimizer_device=values.get("offload_optimizer_device"),
        offload_param_device=values.get("offload_param_device"),
        zero3_save_16bit_model=values.get("zero3_save_16bit_model"),
        zero3_init_flag=values.get("zero3_init_flag"),
        gradient_clipping=values.get("gradient_clipping"),
        gradient_accumulation_steps=values.get("gradient_accumulation_steps"),
    )


def _count(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() and int(text) > 0 else None


def yaml_boolean(text: str | None) -> bool | None:
    """A YAML boolean as accelerate's config reader takes it (true, yes, on; false, no, off); None: not written,
    or not a yes/no."""
    lowered = (text or "").lower()
    return True if lowered in ("true", "yes", "on") else False if lowered in ("false", "no", "off") else None
