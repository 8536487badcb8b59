"""DSL408: fp16 and bf16 both enabled."""

from __future__ import annotations

from dslint.config.facts import bf16_section, enabled
from dslint.config.tree import Object
from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid


class Fp16AndBf16Enabled(ConfigRule):
    code = "DSL408"
    slug = "fp16-and-bf16-enabled"
    message = "fp16 and bf16 are both enabled; DeepSpeed stops at start-up: enable one of them"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="Flags a config whose `fp16` and `bf16` sections are both enabled.",
        why="""
            DeepSpeed asserts "bfloat16 and fp16 modes cannot be simultaneously enabled" while it reads the
            config (`runtime/config.py`). Pick bf16 on hardware that supports it (no loss scaling needed),
            fp16 otherwise.
        """,
        example="""
            {
              "train_batch_size": 32,
              "fp16": {"enabled": true},
              "bf16": {"enabled": true}
            }
        """,
        use_instead="""
            {
              "train_batch_size": 32,
              "bf16": {"enabled": true}
            }
        """,
    )
    valid = (
        Valid('{"train_batch_size": 8, "fp16": {"enabled": false}, "bf16": {"enabled": true}}\n'),
        Valid('{"train_batch_size": 8, "fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"}}\n'),
    )
    invalid = (
        Invalid(
            '{\n  "train_batch_size": 8,\n  "fp16": {"enabled": true},\n  "bf16": {"enabled": true}\n}\n',
            lines=(4,),
        ),
    )

    def check(self) -> None:
        bf16 = bf16_section(self.root)
        if enabled(self.root, "fp16") is True and enabled(self.root, bf16) is True:
            section = self.root.get(bf16)
            assert isinstance(section, Object)
            entry = section.entry("enabled")
            assert entry is not None
            self.report_key(entry)
