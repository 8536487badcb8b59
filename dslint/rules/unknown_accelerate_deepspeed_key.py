"""DSL417: a key of an accelerate config's `deepspeed_config:` section that `accelerate launch` does not read."""

from __future__ import annotations

from dslint.config.accelerate import DEFAULT_STAGE, is_launch_option, suggestion
from dslint.config.facts import TOP_LEVEL_SWITCH_DEFAULTS
from dslint.config.schema import load_schema
from dslint.config.tree import Entry, Object, Scalar
from dslint.diagnostics import Severity
from dslint.framework.accelerate_rule import AccelerateRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid


class UnknownAccelerateDeepSpeedKey(AccelerateRule):
    code = "DSL417"
    slug = "unknown-accelerate-deepspeed-key"
    message = "accelerate launch ignores this deepspeed_config key silently; fix the spelling"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags a key of the `deepspeed_config:` section of an accelerate config file (`distributed_type:
            DEEPSPEED`) that is no option of `accelerate launch`, with the DeepSpeed key it most resembles. A key
            naming an option some release had is read, unless it holds a mapping that no option takes: the
            DeepSpeed config's section of that name pasted in (`fp16: {enabled: auto}`, where `--fp16` was a flag).
            A DeepSpeed switch written at the value DeepSpeed takes without it (`wall_clock_breakdown: false`) is
            dropped with nothing lost: not reported.
        """,
        why="""
            `accelerate launch --config_file` copies each key of `deepspeed_config:` onto its own options and
            passes the DeepSpeed ones to the training processes, where `DeepSpeedPlugin` reads them. A key that is
            no option (`zero_stge`, `offload_param`) becomes a value nothing reads: accelerate starts without a
            word and uses its default instead (ZeRO stage 2 when `zero_stage` is missing, no offload, no
            16-bit gather on save). A key of the DeepSpeed config itself (`communication_data_type`,
            `zero_optimization`) is no option either: it belongs in the DeepSpeed JSON file that
            `deepspeed_config_file` names. Unknown keys at the top level of the file are another matter: accelerate
            refuses them at start-up.
        """,
        example="""
            distributed_type: DEEPSPEED
            deepspeed_config:
              zero_stge: 3
              offload_param_device: cpu
        """,
        use_instead="""
            distributed_type: DEEPSPEED
            deepspeed_config:
              zero_stage: 3
              offload_param_device: cpu
        """,
    )
    valid = (
        Valid(
            """
            compute_environment: LOCAL_MACHINE
            distributed_type: DEEPSPEED
            deepspeed_config:
              gradient_accumulation_steps: 4
              offload_optimizer_device: none
              zero3_init_flag: true
              zero_stage: 3
            num_processes: 8
            """
        ),
        # Not a DeepSpeed run: accelerate never reads the section.
        Valid("distributed_type: MULTI_GPU\ndeepspeed_config:\n  zero_stge: 3\n"),
        # A key naming another launch option sets it (it is read).
        Valid("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 2\n  num_processes: 4\n"),
        # a DeepSpeed switch at its default: dropped, nothing lost
        Valid("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 2\n  wall_clock_breakdown: false\n"),
        # the old launch flag `--fp16` with a flag's value
        Valid("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 2\n  fp16: true\n"),
    )
    invalid = (
        Invalid(
            """
            distributed_type: DEEPSPEED
            deepspeed_config:
              zero_stge: 3
              offload_params_device: cpu
              gradient_accumulation_steps: 1
            """,
            lines=(4, 5),
        ),
        # A DeepSpeed config key pasted into the section.
        Invalid(
            "distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\n  communication_data_type: bf16\n",
            lines=(4,),
        ),
        # the same switch turned on: lost
        Invalid(
            "distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 2\n  wall_clock_breakdown: true\n",
            lines=(4,),
        ),
        # A DeepSpeed section under the name of an old launch flag (`--fp16`): no value of the flag
        Invalid(
            "distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 2\n  fp16:\n    enabled: auto\n",
            lines=(4,),
        ),
    )

    def check(self) -> None:
        section = self.config.section
        if section is None:
            return
        for entry in section.last_entries():
            # a key naming an option accelerate launch once had (`fp16`, a flag) that holds a mapping is the
            # DeepSpeed config's section of that name pasted in (`fp16: {enabled: auto}`), no value of the flag
            pasted = isinstance(entry.value, Object) and entry.key in load_schema().top_level_keys
            if is_launch_option(entry.key) and not pasted:
                continue
            near = suggestion(entry.key)
            if _default_switch(entry):
                continue  # a DeepSpeed switch written at its default: dropped, and nothing lost
            if near is None and entry.key in load_schema().top_level_keys:
                self.report_key(
                    entry,
                    f"`{entry.key}` is a DeepSpeed config key, ignored silently here; put it in deepspeed_config_file",
                )
                continue
            if near is None:
                self.report_key(entry, f"`{entry.key}` is no option of accelerate launch, which ignores it silently")
                continue
            consequence = ""
            if near == "zero_stage" and section.entry("zero_stage") is None and self.config.config_file() is None:
                consequence = f" (ZeRO runs at stage {DEFAULT_STAGE})"
            elif section.entry(near) is None:
                consequence = " (its default stays)"
            self.report_key(
                entry,
                f"`{entry.key}` is ignored by accelerate launch: did you mean `{near}`?{consequence}",
            )


def _default_switch(entry: Entry) -> bool:
    """A top-level DeepSpeed switch written at the value DeepSpeed takes without it (`wall_clock_breakdown: false`)."""
    default = TOP_LEVEL_SWITCH_DEFAULTS.get(entry.key)
    return default is not None and isinstance(entry.value, Scalar) and entry.value.value is default
