"""DSL410: `offload_optimizer.ratio` below 1 with a ZeRO stage below 3 (DeepSpeed asserts)."""

from __future__ import annotations

from dslint.config.facts import offload_ratio, zero_stage
from dslint.config.versions import Version
from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid

# DeepSpeed 0.14's root validator did `getattr(values, "offload_optimizer", {})` on a dict: always {}.
REFUSED_SINCE = Version(0, 15, 0)


class PartialOffloadBelowStage3(ConfigRule):
    code = "DSL410"
    slug = "partial-offload-below-stage-3"
    message = "offload_optimizer.ratio below 1 (partial offload) needs ZeRO stage 3; DeepSpeed stops at start-up"
    severity = Severity.ERROR
    deepspeed_versions = (
        "0.15.0 and later (before, its pydantic 1 check read the ratio from a dict with getattr and never fired)"
    )
    docs = RuleDocs(
        what="Flags `zero_optimization.offload_optimizer.ratio` below 1.0 when the ZeRO stage is below 3.",
        why="""
            Partial optimizer offload is implemented for ZeRO-3 only: DeepSpeed's config model asserts
            "Partial offloading only supported for ZeRO Stage 3." (`runtime/zero/config.py:
            offload_ratio_check`) and the run stops at start-up.
        """,
        example="""
            {
              "train_batch_size": 32,
              "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.3}}
            }
        """,
        use_instead="""
            {
              "train_batch_size": 32,
              "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.3}}
            }
        """,
    )
    valid = (
        Valid(
            '{"train_batch_size": 8, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu",'
            ' "ratio": 0.3}}}\n',
            path="ds_config.json",
            deepspeed_version="0.14",
        ),
        Valid(
            '{"train_batch_size": 8, "zero_optimization": {"stage": 3, "offload_optimizer": {"ratio": 0.3}}}\n',
        ),
        Valid(
            '{"train_batch_size": 8, "zero_optimization": {"stage": 2, "offload_optimizer": {"ratio": 1}}}\n',
        ),
    )
    invalid = (
        Invalid(
            '{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "stage": 2,\n'
            '    "offload_optimizer": {\n      "device": "cpu",\n      "ratio": 0.3\n    }\n  }\n}\n',
            lines=(7,),
        ),
    )

    def check(self) -> None:
        if self.context.deepspeed_version < REFUSED_SINCE:
            return
        node, ratio = offload_ratio(self.root)
        stage = zero_stage(self.root)
        if node is None or ratio is None or stage is None or stage >= 3 or not 0 <= ratio < 1:
            return
        self.report_node(
            node,
            f"offload_optimizer.ratio {ratio:g} (partial offload) needs ZeRO stage 3, not {stage}; "
            "DeepSpeed stops at start-up",
        )
