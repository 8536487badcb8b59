"""DSL419: `zero3_init_flag: true` in an accelerate config whose ZeRO stage is below 3 (turned off)."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.accelerate_rule import AccelerateRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid


class AccelerateZero3InitWithoutStage3(AccelerateRule):
    code = "DSL419"
    slug = "accelerate-zero3-init-without-stage-3"
    message = "zero3_init_flag has no effect below ZeRO stage 3: accelerate warns and sets it to False"
    severity = Severity.WARNING
    docs = RuleDocs(
        what="""
            Flags `zero3_init_flag: true` in the `deepspeed_config:` section of an accelerate config when the ZeRO
            stage there is below 3 (`zero_stage`, or accelerate's default 2 when it is missing). A section that
            names a `deepspeed_config_file` is left alone: its stage is in that file; so is a file whose every
            launch starts a script that gives its own `DeepSpeedPlugin(...)` the stage or the flag in code (the
            plugin reads the launch's settings only for the fields it is not given); DSL475 checks the plugin's
            own settings.
        """,
        why="""
            `deepspeed.zero.Init` partitions parameters as the model is built, which only ZeRO-3 can use.
            accelerate's `DeepSpeedPlugin` checks the stage: below 3 it warns "DeepSpeed Zero3 Init flag is only
            applicable for ZeRO Stage 3. Setting it to False." and builds the model whole on every rank. Either
            the stage is not the one you meant (the model was meant to be partitioned as it is built), or the
            flag does nothing.
        """,
        example="""
            distributed_type: DEEPSPEED
            deepspeed_config:
              zero_stage: 2
              zero3_init_flag: true
        """,
        use_instead="""
            distributed_type: DEEPSPEED
            deepspeed_config:
              zero_stage: 3
              zero3_init_flag: true
        """,
    )
    valid = (
        Valid("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\n  zero3_init_flag: true\n"),
        # What `accelerate config` writes at stage 2.
        Valid("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 2\n  zero3_init_flag: false\n"),
        Valid(
            "distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n"
            "  zero3_init_flag: true\n"
        ),
    )
    invalid = (
        Invalid(
            """
            distributed_type: DEEPSPEED
            deepspeed_config:
              zero_stage: 1
              zero3_init_flag: true
            """,
            lines=(5,),
        ),
        Invalid("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero3_init_flag: 'yes'\n", lines=(3,)),
    )

    def check(self) -> None:
        if self.overridden("zero3_init_flag"):
            return  # the launched scripts' own DeepSpeedPlugin sets it (or the stage) in code
        stage = self.config.stage()
        entry = self.config.entry("zero3_init_flag")
        if stage is None or stage >= 3 or entry is None or self.config.flag("zero3_init_flag") is not True:
            return
        where, related = self.stage_source(stage)
        self.report_key(
            entry,
            f"zero3_init_flag has no effect at {where}: accelerate sets it to False below ZeRO-3",
            related=related,
        )
