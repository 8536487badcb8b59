"""DSL402: a config key for a feature DeepSpeed removed; DeepSpeed refuses the config."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule import Invalid, RuleDocs, Valid


class RemovedConfigKey(ConfigRule):
    code = "DSL402"
    slug = "removed-config-key"
    message = "DeepSpeed removed this feature and refuses a config that still has this key; remove the key"
    severity = Severity.ERROR
    deepspeed_versions = "0.19.7 and later (before, these keys were read, and the rule stays silent)"
    docs = RuleDocs(
        what="""
            Flags keys of features that DeepSpeed has removed (`curriculum_learning` at the top level,
            `compression_training`, `amp`, `sparse_attention`, `progressive_layer_drop`, `elasticity`, ...,
            and `zero_optimization.mics_shard_size`, ...). The list is read from DeepSpeed itself.
        """,
        why="""
            DeepSpeed raises `DeepSpeedConfigError` at start-up when such a key is present, even when the block
            says `"enabled": false`: a leftover block would otherwise be ignored silently and the run would not
            do what the config claims.
        """,
        example="""
            {
              "train_batch_size": 32,
              "curriculum_learning": {"enabled": false}
            }
        """,
        use_instead="""
            {
              "train_batch_size": 32,
              "data_efficiency": {"data_sampling": {"curriculum_learning": {"enabled": false}}}
            }
        """,
    )
    valid = (
        Valid('{"train_batch_size": 8, "data_efficiency": {"enabled": false}}\n', path="ds_config.json"),
        Valid('{"train_batch_size": 8, "amp": {"enabled": true}}\n', path="ds_config.json", deepspeed_version="0.14"),
    )
    invalid = (
        Invalid(
            '{\n  "train_batch_size": 8,\n  "curriculum_learning": {"enabled": false}\n}\n',
            lines=(3,),
            path="ds_config.json",
        ),
        Invalid(
            '{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "stage": 3,\n'
            '    "mics_shard_size": 8\n  }\n}\n',
            lines=(5,),
            path="ds_config.json",
        ),
    )

    def check(self) -> None:
        for entry in self.root.last_entries():
            reason = self.schema.removed_top_level.get(entry.key)
            if reason is not None:
                self.report_key(entry, f"DeepSpeed {self.schema.version} refuses `{entry.key}`: {reason}")
        for entry in self.entries(self.section("zero_optimization")):
            reason = self.schema.removed_zero.get(entry.key)
            if reason is not None:
                self.report_key(entry, f"DeepSpeed {self.schema.version} refuses `{entry.key}`: {reason}")
