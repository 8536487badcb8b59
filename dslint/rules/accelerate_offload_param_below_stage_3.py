"""DSL418: `offload_param_device` in an accelerate config whose ZeRO stage is below 3 (ignored silently)."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.accelerate_rule import AccelerateRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid


class AccelerateOffloadParamBelowStage3(AccelerateRule):
    code = "DSL418"
    slug = "accelerate-offload-param-below-stage-3"
    message = "offload_param_device works only with ZeRO stage 3; below it DeepSpeed ignores it silently"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags `offload_param_device: cpu` (or `nvme`) in the `deepspeed_config:` section of an accelerate
            config when the ZeRO stage accelerate builds the DeepSpeed config with is below 3: `zero_stage`, or
            accelerate's default 2 when it is missing. A section that names a `deepspeed_config_file` is left to
            that file (DSL409 checks it). Left alone too: a file whose every launch starts a script that gives
            its own `DeepSpeedPlugin(...)` the stage or the device in code (`DeepSpeedPlugin(zero_stage=3)`):
            the plugin reads the launch's settings only for the fields it is not given; DSL475 checks the
            plugin's own settings.
        """,
        why="""
            Without a DeepSpeed config file, accelerate's `DeepSpeedPlugin` writes `offload_param_device` into
            `zero_optimization.offload_param.device` of the config it builds. Only ZeRO-3 partitions parameters,
            so only ZeRO-3 offloads them: below stage 3 DeepSpeed ignores the block without a word, the
            parameters stay on the GPU and the memory you planned for is not freed.
        """,
        example="""
            distributed_type: DEEPSPEED
            deepspeed_config:
              zero_stage: 2
              offload_param_device: cpu
        """,
        use_instead="""
            distributed_type: DEEPSPEED
            deepspeed_config:
              zero_stage: 2
              offload_optimizer_device: cpu
        """,
    )
    valid = (
        Valid("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\n  offload_param_device: cpu\n"),
        Valid("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 2\n  offload_param_device: none\n"),
        # The stage is the DeepSpeed config file's.
        Valid("distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n"),
    )
    invalid = (
        Invalid(
            """
            distributed_type: DEEPSPEED
            deepspeed_config:
              offload_optimizer_device: cpu
              offload_param_device: cpu
              zero_stage: 2
            """,
            lines=(5,),
        ),
        # No zero_stage: accelerate's default, stage 2.
        Invalid("distributed_type: DEEPSPEED\ndeepspeed_config:\n  offload_param_device: nvme\n", lines=(3,)),
    )

    def check(self) -> None:
        if self.overridden("offload_param_device"):
            return  # the launched scripts' own DeepSpeedPlugin sets it (or the stage) in code
        stage = self.config.stage()
        entry = self.config.entry("offload_param_device")
        device = self.config.offload_device("offload_param_device")
        if stage is None or stage >= 3 or entry is None or device is None:
            return
        where, related = self.stage_source(stage)
        self.report_key(
            entry,
            f"offload_param_device: {device} needs ZeRO stage 3; at {where} it is ignored silently",
            related=related,
        )
