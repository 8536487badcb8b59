"""DSL463: accelerate settings written beside a `deepspeed_config_file` (accelerate refuses them at start-up)."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.accelerate_rule import AccelerateRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid

# The `deepspeed_config:` keys accelerate's `DeepSpeedPlugin._deepspeed_config_checks` refuses beside a config file
# (accelerate 1.10, `utils/dataclasses.py`): the values the file itself must give.
REFUSED_BESIDE_FILE = (
    "gradient_accumulation_steps",
    "gradient_clipping",
    "zero_stage",
    "offload_optimizer_device",
    "offload_param_device",
    "offload_param_nvme_path",
    "offload_optimizer_nvme_path",
    "zero3_save_16bit_model",
)


class AccelerateSettingsBesideConfigFile(AccelerateRule):
    code = "DSL463"
    slug = "accelerate-settings-beside-config-file"
    message = "accelerate refuses this setting beside deepspeed_config_file; set it in the DeepSpeed file"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags, in an accelerate config file that names a DeepSpeed config (`deepspeed_config:` with
            `deepspeed_config_file:`), the settings accelerate takes from that file instead:
            `gradient_accumulation_steps`, `gradient_clipping`, `zero_stage`, the offload devices and NVMe paths
            and `zero3_save_16bit_model` in `deepspeed_config:`, and a top-level `mixed_precision` (whatever its
            value, `'no'` too) unless every launch of the file in the project gives `--mixed_precision` itself.
        """,
        why="""
            `accelerate launch` passes the names of the `deepspeed_config:` keys (and `mixed_precision` when the
            file gives it and the command line does not) to the training processes (ACCELERATE_CONFIG_DS_FIELDS);
            with a `deepspeed_config_file`, `DeepSpeedPlugin` raises a ValueError ("When using
            `deepspeed_config_file`, the following accelerate config variables will be ignored") when any of them is
            one the file must give (`_deepspeed_config_checks`, since accelerate 0.16; read in 1.10). Every process
            stops when it builds its `Accelerator`, before training. A `--mixed_precision` given on the launch's
            command line instead is not passed on that way.
        """,
        example="""
            distributed_type: DEEPSPEED
            mixed_precision: bf16
            deepspeed_config:
              deepspeed_config_file: ds_zero3.json
              zero3_init_flag: true
        """,
        use_instead="""
            distributed_type: DEEPSPEED
            deepspeed_config:
              deepspeed_config_file: ds_zero3.json
              zero3_init_flag: true
        """,
    )
    valid = (
        Valid(
            "distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n"
            "  zero3_init_flag: true\nnum_processes: 2\n"
        ),
        # without a config file, accelerate builds the DeepSpeed config from these settings
        Valid("distributed_type: DEEPSPEED\nmixed_precision: bf16\ndeepspeed_config:\n  zero_stage: 2\n"),
    )
    invalid = (
        Invalid(
            "distributed_type: DEEPSPEED\nmixed_precision: 'no'\ndeepspeed_config:\n"
            "  deepspeed_config_file: ds.json\n  zero_stage: 3\n",
            lines=(2, 5),
        ),
    )

    def check(self) -> None:
        if self.config.config_file() is None:
            return
        section = self.config.section
        for key in REFUSED_BESIDE_FILE:
            entry = section.entry(key) if section is not None else None
            if entry is not None:
                self.report_key(
                    entry, f"{key} beside deepspeed_config_file: accelerate stops at start-up; set it there"
                )
        mixed = self.config.root.entry("mixed_precision")
        # accelerate passes the file's precision on only when the command line gives none
        if mixed is not None and not self.context.precision_on_command_line:
            self.report_key(
                mixed,
                "mixed_precision beside deepspeed_config_file: accelerate stops at start-up; use the file's fp16/bf16",
            )
