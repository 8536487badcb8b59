"""DSL403: a key inside a section DeepSpeed validates (zero_optimization, fp16, bf16, offload blocks, ...)
that the section does not have; DeepSpeed stops at start-up."""

from __future__ import annotations

from collections.abc import Collection

from dslint.config.facts import is_auto, is_comment_key
from dslint.config.key_edits import rename_key, single_close_match
from dslint.config.key_history import (
    first_release_reading_section_key,
    first_release_with_section_key,
    last_release_reading_section_key,
)
from dslint.config.schema import did_you_mean, load_schema
from dslint.config.sections import SectionEntry, validated_entries
from dslint.config.tree import Object
from dslint.config.versions import SECTION_KEYS_VALIDATED_SINCE, Version
from dslint.diagnostics import Applicability, Fix, Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule import Invalid, RuleDocs, Valid

HANDLED_ELSEWHERE = frozenset({"ignored_parameters"})  # DSL412 explains it
# The keys of the `pipeline` section: DeepSpeed copies the section whole over these defaults
# (`runtime/config.py` `get_pipeline_config`) and the pipeline engine reads only them (`runtime/pipe/engine.py`,
# `use_reentrant` too); any other key is ignored silently. The schemas cannot list them (the section is read whole).
PIPELINE_KEYS = frozenset(
    {
        "stages",
        "partition",
        "seed_layers",
        "activation_checkpoint_interval",
        "pipe_partitioned",
        "grad_partitioned",
        "use_reentrant",
    }
)
# Plain sections with nested readers of their own (the autotuner, the data-efficiency library): left alone.
NOT_CHECKED = frozenset({"autotuning", "data_efficiency"})


class UnknownConfigSectionKey(ConfigRule):
    code = "DSL403"
    slug = "unknown-config-section-key"
    message = "this section has no such key: DeepSpeed refuses it at start-up (or ignores it, in a plain section)"
    severity = Severity.ERROR
    fixable = True
    docs = RuleDocs(
        what="""
            Flags an unknown key inside a section that DeepSpeed validates with a pydantic model forbidding
            extra keys: `zero_optimization` (and its `offload_param` / `offload_optimizer` blocks), `fp16`,
            `bf16`, `tensorboard`, `wandb`, `csv_monitor`, `comet`, `comms_logger`, `compile`,
            `hybrid_engine`, `tensor_parallel`, `weight_quantization`. Both a field's name and its alias are
            accepted (`stage3_prefetch_bucket_size` and `prefetch_bucket_size`), but not both at once: pydantic
            then refuses the name as an extra key. Suggests the closest key. In a section DeepSpeed reads key
            by key (`pipeline`, `activation_checkpointing`, `flops_profiler`, `checkpoint`, `aio`, `data_types`,
            `timers`, `torch_autocast`), a key the project's release never asks for is ignored silently: it is
            reported too, saying where the key belongs when another section (or the top level) has it, the
            closest key otherwise, or the release that read it when it was renamed (`aio.thread_count`). In a
            script, keys written into a
            dict of unknown content (a JSON load) are checked too: before `deepspeed.initialize` receives it, or
            when a helper returns it and a reader elsewhere in the project (`DeepSpeedStrategy(config=...)`,
            `TrainingArguments(deepspeed=...)`, `deepspeed.initialize`) receives the result; the finding names
            that reader.
        """,
        why="""
            These sections are validated when the engine is created: an unknown key raises a pydantic
            `ValidationError` ("Extra inputs are not permitted") and the job stops, typically after it waited
            for GPUs. Sections that are not validated this way (`activation_checkpointing`, `flops_profiler`,
            `aio`, `pipeline`, `checkpoint`, `data_types`, ...) are read with `dict.get` for the keys DeepSpeed
            knows: any other key starts, trains and does nothing (`pipeline.num_stages` sets no stages: the
            stages are the `PipelineModule`'s). A value of `"auto"` is dropped before validation, so an unknown
            key whose value is `"auto"` passes (DSL405 reports it).
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
        # the keys each release reads (`aio.thread_count` until 0.16), comments, and "auto" (DSL405's)
        Valid(
            '{"train_batch_size": 8, "aio": {"block_size": 1048576, "thread_count": 2, "_note": "x"},'
            ' "pipeline": {"stages": 2, "partition": "parameters", "activation_checkpoint_interval": 1},'
            ' "flops_profiler": {"enabled": true, "profile_step": "auto"}}\n',
            path="ds_config.json",
            deepspeed_version="0.14.0",
        ),
        # before 0.7.0 zero_optimization was a plain dict: an unknown key is ignored (DSL420 says so), not refused
        Valid(
            '{"train_batch_size": 8, "zero_optimization": {"stage": 2, "overlap_comms": true}}\n',
            path="ds_config.json",
            deepspeed_version="0.6.5",
        ),
        Valid(
            '{"train_batch_size": 8, "zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 5e7,'
            ' "offload_param": {"device": "cpu"}}, "activation_checkpointing": {"partition_activations": true}}\n',
        ),
    )
    invalid = (
        # sections read key by key: a key of another section, a key no section has, a renamed key
        Invalid(
            '{\n  "train_batch_size": 8,\n  "checkpoint": {"tag_validation": "Warn", "partition_activations": true},\n'
            '  "pipeline": {"stages": 2, "num_stages": 2},\n  "aio": {"block_size": 1048576, "thread_count": 2}\n}\n',
            lines=(3, 4, 5),
            path="ds_config.json",
        ),
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
        self._plain_sections()
        if self.context.deepspeed_version < SECTION_KEYS_VALIDATED_SINCE:
            return  # its sections are plain dicts: an unknown key is ignored silently (DSL420)
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

    def _plain_sections(self) -> None:
        """Sections every release reads key by key (`pipeline`, `activation_checkpointing`, `flops_profiler`,
        `checkpoint`, `aio`, ...): a key the project's release does not ask for is ignored silently."""
        schema, version = self.schema, self.context.deepspeed_version
        validated_later = load_schema().sections
        for top in self.root.last_entries():
            section = top.key
            read = PIPELINE_KEYS if section == "pipeline" else schema.read_section_keys.get(section)
            if read is None or section in validated_later or section in schema.sections or section in NOT_CHECKED:
                continue  # DSL420 reports the sections a newer release validates
            value = top.value
            if not isinstance(value, Object) or (value.opaque and not value.written):
                continue
            for entry in value.last_entries():
                key = entry.key
                if key in read or is_comment_key(key) or is_auto(entry.value):
                    continue
                self.report_key(entry, *self._ignored(section, key, read, version))

    def _ignored(self, section: str, key: str, read: Collection[str], version: Version) -> tuple[str, Severity]:
        said = f"`{section}.{key}`: DeepSpeed {version} ignores it silently"
        newer = first_release_reading_section_key(section, key, version)
        if newer is not None:
            return f"{said}; {newer} reads it: upgrade or remove it", Severity.WARNING
        older = last_release_reading_section_key(section, key, version)
        if older is not None:
            return f"{said}; releases up to {older} read it (renamed or removed since)", Severity.WARNING
        home = self._home_of(key, section)
        if home is not None:
            return f"{said}; it belongs in {home}", Severity.ERROR
        suggestion = did_you_mean(key, sorted(read))
        if suggestion is not None:
            return f"{said}; did you mean `{suggestion}`?", Severity.ERROR
        if (section, key) == ("activation_checkpointing", "enabled"):
            return f"{said}: no switch, the model's deepspeed.checkpointing calls turn it on", Severity.WARNING
        return f"{said}; it does nothing: remove it", Severity.WARNING

    def _home_of(self, key: str, section: str) -> str | None:
        """Where the project's release has `key`, when not in `section`: the top level, or another section."""
        schema = self.schema
        if key in schema.live_top_level_keys:
            return "the top level"
        for other, read in sorted(schema.read_section_keys.items()):
            if other != section and read is not None and key in read:
                return f"`{other}`"
        if section != "pipeline" and key in PIPELINE_KEYS:
            return "`pipeline`"
        for other in sorted(schema.sections):
            model = schema.section_model(other)
            if other != section and model is not None and model.field(key) is not None:
                return f"`{other}`"
        return None

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
