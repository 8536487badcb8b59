"""DSL403: a key inside a section DeepSpeed validates (zero_optimization, fp16, bf16, offload blocks, ...)
that the section does not have; DeepSpeed stops at start-up."""

from __future__ import annotations

from dslint.config.facts import is_auto
from dslint.config.key_edits import rename_key, single_close_match
from dslint.config.key_history import first_release_with_section_key
from dslint.config.schema import did_you_mean
from dslint.config.sections import SectionEntry, validated_entries
from dslint.config.versions import SECTION_KEYS_VALIDATED_SINCE
from dslint.diagnostics import Applicability, Fix, Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid

HANDLED_ELSEWHERE = frozenset({"ignored_parameters"})  # DSL412 explains it


class UnknownConfigSectionKey(ConfigRule):
    code = "DSL403"
    slug = "unknown-config-section-key"
    message = "this section has no such key; DeepSpeed stops at start-up with a ValidationError"
    severity = Severity.ERROR
    fixable = True
    docs = RuleDocs(
        what="""
            Flags an unknown key inside a section that DeepSpeed validates with a pydantic model forbidding
            extra keys: `zero_optimization` (and its `offload_param` / `offload_optimizer` blocks), `fp16`,
            `bf16`, `tensorboard`, `wandb`, `csv_monitor`, `comet`, `comms_logger`, `compile`,
            `hybrid_engine`, `tensor_parallel`, `weight_quantization`. Both a field's name and its alias are
            accepted (`stage3_prefetch_bucket_size` and `prefetch_bucket_size`), but not both at once: pydantic
            then refuses the name as an extra key. Suggests the closest key. In a script, keys written into a
            dict of unknown content (a JSON load) are checked too: before `deepspeed.initialize` receives it, or
            when a helper returns it and a reader elsewhere in the project (`DeepSpeedStrategy(config=...)`,
            `TrainingArguments(deepspeed=...)`, `deepspeed.initialize`) receives the result; the finding names
            that reader.
        """,
        why="""
            These sections are validated when the engine is created: an unknown key raises a pydantic
            `ValidationError` ("Extra inputs are not permitted") and the job stops, typically after it waited
            for GPUs. Sections that are not validated this way (`activation_checkpointing`, `flops_profiler`,
            `autotuning`, `aio`, `pipeline`, `checkpoint`, `data_types`, ...) ignore unknown keys; dslint does
            not flag keys there. A value of `"auto"` is dropped before validation, so an unknown key whose
            value is `"auto"` passes (DSL405 reports it).
        """,
        example="""
            {
              "train_batch_size": 32,
              "zero_optimization": {"stage": 3, "overlap_com": true}
            }
        """,
        use_instead="""
            {
              "train_batch_size": 32,
              "zero_optimization": {"stage": 3, "overlap_comm": true}
            }
        """,
        fix_safety="""
            The fix renames the key to the section's one close match, in place. It is unsafe: the run no longer
            stops at start-up but does what the renamed key says, which is dslint's guess. There is no fix when
            two or more keys are about as close, or when the section already has the right key under either of its
            spellings (name or alias).
        """,
    )
    valid = (
        # before 0.7.0 zero_optimization was a plain dict: an unknown key is ignored (DSL420 says so), not refused
        Valid(
            '{"train_batch_size": 8, "zero_optimization": {"stage": 2, "overlap_comms": true}}\n',
            path="ds_config.json",
            deepspeed_version="0.6.5",
        ),
        Valid(
            '{"train_batch_size": 8, "zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 5e7,'
            ' "offload_param": {"device": "cpu"}}, "activation_checkpointing": {"anything": 1}}\n',
        ),
    )
    invalid = (
        Invalid(
            """
            import json
            import deepspeed
            def run(model, path, precision):
                with open(path) as handle:
                    cfg = json.load(handle)
                if precision == "bf16":
                    cfg["fp16"]["enable"] = False
                    cfg["bf16"] = {"enable": True}
                else:
                    cfg["fp16"]["enabled"] = True
                return deepspeed.initialize(model=model, config=cfg)
            """,
            lines=(8, 9),
            path="train.py",
        ),
        Invalid(
            '{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "stage": 3,\n    "overlap_com": true\n  }\n}\n',
            lines=(5,),
            path="ds_config.json",
            fixed='{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "stage": 3,\n'
            '    "overlap_comm": true\n  }\n}\n',
        ),
        Invalid(
            '{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "stage": 3,\n'
            '    "offload_optimizer": {"device": "cpu", "pin_memmory": true}\n  }\n}\n',
            lines=(5,),
            fixed='{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "stage": 3,\n'
            '    "offload_optimizer": {"device": "cpu", "pin_memory": true}\n  }\n}\n',
        ),
        Invalid(
            '{\n  "train_batch_size": 8,\n  "fp16": {"enabled": true, "loss_scale_windows": 100}\n}\n',
            lines=(3,),
            fixed='{\n  "train_batch_size": 8,\n  "fp16": {"enabled": true, "loss_scale_window": 100}\n}\n',
        ),
    )

    def check(self) -> None:
        if self.context.deepspeed_version < SECTION_KEYS_VALIDATED_SINCE:
            return  # its sections are plain dicts: an unknown key is ignored silently
        removed_zero = self.schema.removed_zero
        for item in validated_entries(self.root, self.schema):
            if not item.model.forbids_extra:
                continue
            if item.field is not None:
                self._both_spellings(item)
                continue
            key = item.entry.key
            if key in HANDLED_ELSEWHERE or (item.path[:-1] == ("zero_optimization",) and key in removed_zero):
                continue
            if first_release_with_section_key(item.path, self.context.deepspeed_version) is not None:
                continue  # a key of a newer DeepSpeed than the project runs: DSL416 says so
            where = ".".join(item.path[:-1])
            suggestion = did_you_mean(key, item.model.spellings())
            hint = f"; did you mean `{suggestion}`?" if suggestion else ""
            self.report_key(
                item.entry,
                f"`{where}` has no key `{key}`; DeepSpeed stops at start-up{hint}",
                fix=self._rename(item, suggestion) if suggestion else None,
            )

    def _rename(self, item: SectionEntry, suggestion: str) -> Fix | None:
        """Rename to the one close match, unless the section already holds that field (by name or alias) or
        the misspelt key appears twice."""
        source = self.context.source
        if source is None or item.parent.opaque:
            return None
        model = item.model

        def setting(spelling: str) -> str:
            field = model.field(spelling)
            return field.name if field is not None else spelling

        if single_close_match(item.entry.key, model.spellings(), setting) != suggestion:
            return None
        field = model.field(suggestion)
        spellings = {suggestion} if field is None else {field.name, field.alias} - {None}
        keys = [e.key for e in item.parent.entries]
        if spellings & set(keys) or keys.count(item.entry.key) != 1:
            return None
        edit = rename_key(source, item.entry, suggestion)
        if edit is None:
            return None
        return Fix((edit,), Applicability.UNSAFE, f"rename `{item.entry.key}` to `{suggestion}`")

    def _both_spellings(self, item: SectionEntry) -> None:
        """A field given by its name and by its alias: pydantic takes the alias and refuses the name as an
        extra key (unless the alias's value is "auto", which is dropped first)."""
        field = item.field
        assert field is not None
        if field.alias is None or item.entry.key != field.name:
            return
        alias = item.parent.get(field.alias)
        if alias is None or is_auto(alias):
            return
        self.report_key(
            item.entry,
            f"`{field.name}` and `{field.alias}` are the same setting and DeepSpeed refuses both; keep `{field.alias}`",
        )
