"""A DeepSpeed config read from a file or a literal (`ResolvedConfig`), the accelerate launches that run a script
with DeepSpeed (`AccelerateRun`), and the reading of a config file a launch names (`launched_file`).

Apart from `dslint.project.config_link` (which links a script's code to its configs through libcst's tree) so that
the project index, which reads the configs shipped beside a script (`dslint.project.shipped_accelerate`), never
imports libcst: a cold run over a tree where no file reaches libcst (DeepSpeed's own source) then never pays for
importing it (about 0.2 s, a sixth of such a run).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dslint.config import facts as config_facts
from dslint.config.facts import Origin, is_auto
from dslint.config.gather import gathers_16bit
from dslint.config.tree import UNKNOWN, Object, node_at, to_python
from dslint.diagnostics import Related
from dslint.project.config_access import load_config_tree
from dslint.script.project_facts import LaunchedConfig


@dataclass(frozen=True)
class ResolvedConfig:
    """A DeepSpeed config as far as it can be read without running anything."""

    values: Mapping[str, Any]
    source: str  # a file path, or "dict literal at line N"
    path: Path | None = None
    # The positioned tree the config rules check (positions in the JSON file, or in the script for a literal),
    # and who reads the config: deepspeed.initialize, or the Hugging Face Trainer (which fills "auto").
    tree: Object | None = field(default=None, compare=False)
    origin: Origin = Origin.INITIALIZE
    # Where the link to this config comes from when it is not in the script itself: the launcher line(s) and
    # the option or YAML key naming the file ("ZeRO-3 from train_z3.sh:14 -> ds_z3.json").
    via: tuple[Related, ...] = field(default=(), compare=False)

    def evidence(self) -> str:
        """ " (from run_z3.sh:4 --deepspeed_config ds_z3.json)" for a config a launcher names; "" otherwise."""
        if not self.via:
            return ""
        shown = ", ".join(f"{r.path}:{r.line} {r.message}" for r in self.via if r.message.startswith("-"))
        return f" (from {shown or ', '.join(f'{r.path}:{r.line}' for r in self.via)})"

    def get(self, *keys: str) -> Any:
        """`get("zero_optimization", "stage")`; None when absent, UNKNOWN when not a literal."""
        current: Any = self.values
        for key in keys:
            if current is UNKNOWN:
                return UNKNOWN
            if not isinstance(current, Mapping):
                return None
            if key not in current:
                return None
            current = current[key]
        return current

    @property
    def zero_stage(self) -> int | None:
        """The stage DeepSpeed will run: absent section or key means 0; "auto" is dropped (0) by
        deepspeed.initialize, but the HF Trainer fills it, so there "auto" is unknown (None), as are non-literal
        values. Read as DeepSpeed reads it: `"3"` is 3, the old `"zero_optimization": true` is 1."""
        if self.tree is not None:
            if self.origin is Origin.TRAINER and is_auto(node_at(self.tree, "zero_optimization", "stage")):
                return None
            return config_facts.zero_stage(self.tree)
        section = self.get("zero_optimization")
        if section is None:
            return 0
        if not isinstance(section, Mapping):
            return None
        stage = section.get("stage", 0)
        if isinstance(stage, bool) or not isinstance(stage, int):
            return None
        return stage

    def _enabled(self, section_name: str) -> bool | None:
        if self.tree is not None:
            if self.origin is Origin.TRAINER and is_auto(node_at(self.tree, section_name, "enabled")):
                return None
            return config_facts.enabled(self.tree, section_name)
        section = self.get(section_name)
        if section is None:
            return False
        if not isinstance(section, Mapping):
            return None
        enabled = section.get("enabled", False)
        return enabled if isinstance(enabled, bool) else None

    @property
    def fp16_enabled(self) -> bool | None:
        return self._enabled("fp16")

    @property
    def bf16_enabled(self) -> bool | None:
        if self.tree is not None:  # DeepSpeed reads `bfloat16` only when `bf16` is absent
            return self._enabled(config_facts.bf16_section(self.tree))
        enabled = self._enabled("bf16")
        if enabled is False and self.get("bfloat16") is not None:
            return self._enabled("bfloat16")  # DeepSpeed's older spelling of the section
        return enabled


@dataclass(frozen=True)
class AccelerateRun:
    """One `accelerate launch --config_file` of this script with DeepSpeed: the DeepSpeed config file its YAML names
    (`config`), or the YAML's own `zero_stage` and `zero3_save_16bit_model` (which accelerate writes into
    `stage3_gather_16bit_weights_on_model_save`), and its `mixed_precision` (the YAML's, or `--mixed_precision`)."""

    via: tuple[Related, ...]
    config: ResolvedConfig | None = None
    stage: int | None = None
    save_16bit: bool | None = None
    mixed_precision: str | None = None
    zero3_init: bool | None = None  # the YAML's zero3_init_flag (None: not written)
    clipping: str | None = None  # inline settings: the YAML's (or the launch's) gradient_clipping, as written
    accumulation: str | None = None  # and its gradient_accumulation_steps

    @property
    def zero_stage(self) -> int | None:
        """The stage the run takes: its DeepSpeed config file's, else the YAML's own `zero_stage`."""
        return self.config.zero_stage if self.config is not None else self.stage

    def gathers_at_zero3(self) -> bool:
        """ZeRO-3 with the 16-bit gather on save (`stage3_gather_16bit_weights_on_model_save`, the YAML's
        `zero3_save_16bit_model`)."""
        config = self.config
        gather = gathers_16bit(config.get("zero_optimization")) if config is not None else self.save_16bit
        return self.zero_stage == 3 and gather is True


def launch_evidence(launch: LaunchedConfig) -> tuple[Related, ...]:
    return (launch.config_evidence,) if launch.config_evidence is not None else ()


def launched_file(path: str, origin: Origin, via: tuple[Related, ...]) -> ResolvedConfig | None:
    relative = os.path.relpath(path)
    path = path if relative.startswith("..") else relative  # shown as the file's own findings are
    loaded = load_config_tree(Path(path), via[0].path if via else None)
    if not isinstance(loaded, Object):
        return None
    values = to_python(loaded)
    if not isinstance(values, dict):
        return None
    return ResolvedConfig(values, path, Path(path), loaded, origin, via)
