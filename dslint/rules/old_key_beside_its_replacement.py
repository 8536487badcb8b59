"""DSL461: a deprecated ZeRO key written beside the key that replaces it (DeepSpeed refuses the config)."""

from __future__ import annotations

from collections.abc import Mapping

from dslint.config.schema import Field
from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid


class DeprecatedKeyBesideReplacement(ConfigRule):
    code = "DSL461"
    slug = "deprecated-key-beside-replacement"
    message = "deprecated key beside the key that replaces it: DeepSpeed refuses the config at start-up"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags a deprecated key of a validated section written beside the key that replaces it, as the
            release the project runs declares them (its schema's `deprecated` fields and their `new_param`):
            `cpu_offload` beside `offload_optimizer`, `cpu_offload_param` beside `offload_param`,
            `stage3_gather_fp16_weights_on_model_save` beside `stage3_gather_16bit_weights_on_model_save` in
            `zero_optimization`, whatever their values (`"cpu_offload": false` too). A deprecated key alone is
            accepted (with a warning) and not flagged.
        """,
        why="""
            DeepSpeed's config models move a deprecated key's value onto its replacement
            (`DeepSpeedConfigModel._process_deprecated_field`) and assert first that the replacement was not
            given too: "Cannot provide deprecated parameter ... and replacing parameter ... together". The
            engine stops at `initialize`, before any training; a builder that writes the old key for every stage
            and the new one for some fails only at those stages.
        """,
        example="""
            {"train_batch_size": 16,
             "zero_optimization": {"stage": 3, "cpu_offload": true, "offload_optimizer": {"device": "cpu"}}}
        """,
        use_instead="""
            {"train_batch_size": 16, "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}}
        """,
    )
    valid = (
        Valid('{"train_batch_size": 8, "zero_optimization": {"stage": 2, "cpu_offload": true}}\n'),
        Valid('{"train_batch_size": 8, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}\n'),
        # a key the release reads as a plain option, not a deprecated one (no replacement given)
        Valid('{"train_batch_size": 8, "zero_optimization": {"stage": 3, "cpu_offload_use_pin_memory": true}}\n'),
    )
    invalid = (
        Invalid(
            '{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "stage": 3,\n    "cpu_offload": false,\n'
            '    "offload_optimizer": {"device": "cpu"}\n  }\n}\n',
            lines=(5,),
        ),
        Invalid(
            '{"train_batch_size": 8, "zero_optimization": {"stage": 3,\n'
            '  "stage3_gather_fp16_weights_on_model_save": true, "stage3_gather_16bit_weights_on_model_save": true}}\n',
            lines=(2,),
        ),
    )

    def check(self) -> None:
        for key in self.schema.sections:
            section = self.section(key)
            model = self.schema.section_model(key)
            if section is None or model is None:
                continue
            given = {field.name: entry for entry in section.entries if (field := model.field(entry.key)) is not None}
            for entry in section.entries:
                field = model.field(entry.key)
                replacement = _replacement(field, model.fields) if field is not None else None
                if replacement is not None and replacement.name in given:
                    written = given[replacement.name].key
                    text = f"deprecated {entry.key} beside {written}, which replaces it: DeepSpeed stops; remove it"
                    if len(text) > 110:  # two long keys: the replacement is the one that stays
                        text = f"deprecated {entry.key} beside its replacement: DeepSpeed stops at start-up; remove it"
                    self.report_key(entry, text)


def _replacement(field: Field, fields: Mapping[str, Field]) -> Field | None:
    """The field that replaces a deprecated one in the same model (its `new_param`), when it names one."""
    if not field.deprecated or not field.new_param or not field.new_param.isidentifier():
        return None
    return fields.get(field.new_param)
