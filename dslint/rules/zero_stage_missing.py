"""DSL411: a `zero_optimization` section without `stage` (ZeRO stays off)."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid


class ZeroStageMissing(ConfigRule):
    code = "DSL411"
    slug = "zero-stage-missing"
    message = "zero_optimization has no stage, so ZeRO is off (stage 0); write the stage"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="Flags a `zero_optimization` object without a `stage` key.",
        why="""
            The stage defaults to 0, which is ZeRO off: every other setting of the section (buckets,
            offload, ...) then does nothing, and every rank keeps the full optimizer state. DeepSpeed says
            nothing about it.
        """,
        example="""
            {
              "train_batch_size": 32,
              "zero_optimization": {"offload_optimizer": {"device": "cpu"}}
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
        Valid('{"train_batch_size": 8, "zero_optimization": {"stage": 0}}\n'),
        Valid('{"train_batch_size": 8}\n'),
    )
    invalid = (
        Invalid(
            '{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "overlap_comm": true\n  }\n}\n',
            lines=(3,),
        ),
    )

    def check(self) -> None:
        entry = self.root.entry("zero_optimization")
        section = self.section("zero_optimization")
        if entry is None or section is None or section.opaque or section.get("stage") is not None:
            return
        self.report_key(entry)
