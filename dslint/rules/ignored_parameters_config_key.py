"""DSL412: `ignored_parameters`, a key that exists nowhere in DeepSpeed."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid

KEY = "ignored_parameters"


class IgnoredParametersConfigKey(ConfigRule):
    code = "DSL412"
    slug = "ignored-parameters-config-key"
    message = "DeepSpeed has no `ignored_parameters` setting; remove it"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="Flags `ignored_parameters`, at the top level or inside `zero_optimization`.",
        why="""
            Some guides suggest `"ignored_parameters": ["rotary_emb.*"]` to keep rotary buffers from being
            sharded. The key exists nowhere in DeepSpeed: at the top level it is ignored silently, inside
            `zero_optimization` it stops the run with a ValidationError. Buffers are never partitioned by
            ZeRO-3. The real rotary problem was their dtype: up to 0.19.1 the engine cast buffers such as
            `inv_freq` to half/bf16; since 0.19.2 only parameters are cast and `data_types.buffer_dtype`
            controls buffers. Small parameters stay whole through `stage3_param_persistence_threshold`.
        """,
        example="""
            {
              "train_batch_size": 32,
              "zero_optimization": {"stage": 3, "ignored_parameters": ["rotary_emb.*"]}
            }
        """,
        use_instead="""
            {
              "train_batch_size": 32,
              "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 100000}
            }
        """,
    )
    valid = (Valid('{"train_batch_size": 8, "zero_optimization": {"stage": 3}}\n'),)
    invalid = (
        Invalid(
            '{\n  "train_batch_size": 8,\n  "ignored_parameters": ["rotary_emb.*"],\n  "zero_optimization": {\n'
            '    "stage": 3,\n    "ignored_parameters": ["rotary_emb.*"]\n  }\n}\n',
            lines=(3, 6),
        ),
        Invalid(
            '{\n  "train_batch_size": 8,\n  "ignored_parameters": ["rotary_emb.*"]\n}\n',
            lines=(3,),
            path="ds_config.json",
            deepspeed_version="0.17.6",
        ),
    )

    def check(self) -> None:
        entry = self.root.entry(KEY)
        if entry is not None:
            self.report_key(entry, f"DeepSpeed has no `{KEY}` setting and ignores it silently; remove it")
        section = self.section("zero_optimization")
        inner = section.entry(KEY) if section is not None else None
        if inner is not None:
            self.report_key(
                inner,
                f"`zero_optimization` has no `{KEY}`; DeepSpeed stops at start-up: remove it",
            )
