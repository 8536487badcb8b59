"""DSL413: a fixed fp16 loss scale."""

from __future__ import annotations

import math

from dslint.config.facts import enabled
from dslint.config.tree import Scalar
from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid


class FixedLossScale(ConfigRule):
    code = "DSL413"
    slug = "fixed-loss-scale"
    message = "a fixed fp16 loss scale does not adapt to overflows; 0 (the default) means dynamic loss scaling"
    auto_message = 'once the Trainer turns fp16 on ("auto"), this fixed loss scale does not adapt; 0 means dynamic'
    severity = Severity.INFO
    docs = RuleDocs(
        what="""
            Notes an fp16 config with a positive `loss_scale`, which fixes the loss scale: with fp16 enabled,
            or with `"enabled": "auto"`, which the Hugging Face Trainer turns on when it runs with `--fp16`.
        """,
        why="""
            `"loss_scale": 0` (the default) means dynamic loss scaling: DeepSpeed lowers the scale on overflow
            and raises it again after `loss_scale_window` good steps. A fixed scale skips that: too high and
            steps overflow, too low and small gradients underflow to zero. It can be deliberate, hence only a
            note. Invalid values (negative, bool, not finite) are errors reported by DSL404.
        """,
        example="""
            {
              "train_batch_size": 32,
              "fp16": {"enabled": true, "loss_scale": 128}
            }
        """,
        use_instead="""
            {
              "train_batch_size": 32,
              "fp16": {"enabled": true, "loss_scale": 0, "initial_scale_power": 16}
            }
        """,
    )
    valid = (
        Valid('{"train_batch_size": 8, "fp16": {"enabled": true, "loss_scale": 0}}\n'),
        Valid('{"train_batch_size": 8, "fp16": {"enabled": false, "loss_scale": 128}}\n'),
        Valid('{"train_batch_size": "auto", "fp16": {"enabled": "auto", "loss_scale": 0}}\n'),
    )
    invalid = (
        Invalid(
            '{\n  "train_batch_size": 8,\n  "fp16": {\n    "enabled": true,\n    "loss_scale": 128\n  }\n}\n',
            lines=(5,),
        ),
        Invalid(
            '{\n  "train_batch_size": "auto",\n  "fp16": {\n    "enabled": "auto",\n    "loss_scale": 512\n  }\n}\n',
            lines=(5,),
        ),
    )

    def check(self) -> None:
        section = self.section("fp16")
        switch = section.get("enabled") if section is not None else None
        filled = isinstance(switch, Scalar) and switch.value == "auto"  # on when the Trainer runs with fp16
        if section is None or (enabled(self.root, "fp16") is False and not filled):
            return
        entry = section.entry("loss_scale")
        if entry is None or not isinstance(entry.value, Scalar):
            return
        value = entry.value.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return
        if isinstance(value, float) and not math.isfinite(value):  # an int is finite, however long
            return
        if value > 0:
            self.report_key(entry, self.auto_message if filled else None)
