"""DSL409: `offload_param` with a ZeRO stage below 3 (ignored silently)."""

from __future__ import annotations

from dslint.config.facts import zero_stage
from dslint.config.tree import Object, Scalar
from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid


class OffloadParamBelowStage3(ConfigRule):
    code = "DSL409"
    slug = "offload-param-below-stage-3"
    message = "offload_param works only with ZeRO stage 3; below it DeepSpeed ignores it silently"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags `zero_optimization.offload_param` with a device (`cpu` or `nvme`) when the ZeRO stage is below
            3. Stage 3 without any offload is fine and never flagged: offload is optional.
        """,
        why="""
            Only ZeRO-3 partitions parameters, so only ZeRO-3 can offload them. Below stage 3 DeepSpeed accepts
            the block and ignores it without a word: the parameters stay on the GPU and the memory you planned
            for is not freed. Use stage 3, or `offload_optimizer` (stages 1 to 3) to offload optimizer state.
        """,
        example="""
            {
              "train_batch_size": 32,
              "zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}
            }
        """,
        use_instead="""
            {
              "train_batch_size": 32,
              "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}
            }
        """,
    )
    valid = (
        Valid(
            '{"train_batch_size": 8, "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}}\n',
        ),
        Valid(
            '{"train_batch_size": 8, "zero_optimization": {"stage": 2, "offload_param": {"device": "none"}}}\n',
        ),
    )
    invalid = (
        Invalid(
            '{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "stage": 2,\n'
            '    "offload_param": {"device": "cpu", "pin_memory": true}\n  }\n}\n',
            lines=(5,),
        ),
    )

    def check(self) -> None:
        stage = zero_stage(self.root)
        section = self.section("zero_optimization")
        if stage is None or stage >= 3 or section is None:
            return
        entry = section.entry("offload_param")
        if entry is None or not isinstance(entry.value, Object):
            return
        device = entry.value.get("device")
        if isinstance(device, Scalar) and device.value in ("cpu", "nvme"):
            self.report_key(
                entry,
                f"offload_param needs ZeRO stage 3; at stage {stage} DeepSpeed ignores it (use offload_optimizer)",
            )
