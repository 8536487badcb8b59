"""DSL401: a top-level config key DeepSpeed does not read (it is ignored silently)."""

from __future__ import annotations

from pathlib import Path

from dslint.config import facts as config_facts
from dslint.config.facts import Origin, argument_file, bfloat16_ignored, is_comment_key, mixed_file
from dslint.config.key_edits import rename_key, single_close_match
from dslint.config.key_history import first_release_with_top_level_key
from dslint.config.recognition import CONFIG_SUFFIXES, is_config_name
from dslint.config.schema import did_you_mean
from dslint.config.tree import Entry, Scalar
from dslint.diagnostics import Applicability, Fix, Related, Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid

HANDLED_ELSEWHERE = frozenset({"ignored_parameters"})  # DSL412 explains it


class UnknownTopLevelConfigKey(ConfigRule):
    code = "DSL401"
    slug = "unknown-top-level-config-key"
    message = "DeepSpeed ignores this unknown top-level key silently; fix the spelling or remove it"
    severity = Severity.ERROR
    runs_on_mixed_files = True
    fixable = True
    docs = RuleDocs(
        what="""
            Flags a top-level key of a DeepSpeed config that DeepSpeed never reads, with the closest real key
            when there is one. The known keys come from DeepSpeed itself (dslint's schema snapshot records every
            key `DeepSpeedConfig` asks for). Keys starting with `_` (comments) are allowed. A file that mixes
            many keys of another tool into its DeepSpeed config gets one finding, not one per key; none when
            such a JSON file has no config-like name and nothing hands it to a DeepSpeed reader (a launcher's
            option that reaches one, a literal path): a project's settings file (even one a launcher passes
            under an option its script keeps for its own loader) from which a script picks DeepSpeed's keys;
            a file whose
            foreign keys are mostly hyphenated command-line options (`num-layers`: a GPT-NeoX or Megatron
            argument file) gets none, since that tool's parser reads it and passes DeepSpeed only its own keys.
            In a script, a dict of unknown content (accelerate's live DeepSpeed dict, say) that the script edits
            with literal keys (`cfg.update({...})`) before `deepspeed.initialize` receives it is checked for the
            keys written; a dotted name (`"zero_optimization.reduce_bucket_size"`) is such an unknown key (not a
            write in the body of a ZeRO-3 test, `if cfg["zero_optimization"]["stage"] == 3:`, when every config
            the script's Trainer or accelerate launches take is known below ZeRO-3: that arm never runs). A key
            that is no misspelling of a real one and asks for nothing the run misses is left alone: a switch left
            off (`"gradient_checkpointing": false`, `null`), or a precision the file's own `bf16`/`fp16` section
            turns on (`"precision": "bf16"` beside `"bf16": {"enabled": true}`).
        """,
        why="""
            DeepSpeed reads the keys it knows and ignores every other top-level key without a word. A misspelt
            section is therefore not an error but a silent change of behaviour: with `"zero_optimisation"` ZeRO
            is off (stage 0) and every rank keeps the full optimizer state, with `"fp_16"` training runs in
            fp32. This is the worst kind of config mistake: nothing fails, the run is just not the run you
            configured.
        """,
        example="""
            {
              "train_batch_size": 32,
              "zero_optimisation": {"stage": 3}
            }
        """,
        use_instead="""
            {
              "train_batch_size": 32,
              "zero_optimization": {"stage": 3}
            }
        """,
        fix_safety="""
            The fix renames the key to its one close match, in place (the file keeps its formatting, comments and
            key order). It is unsafe: it changes what runs (with `"zero_optimization"` ZeRO is on, with `"fp16"`
            training runs in half precision). There is no fix when two or more keys are about as close, when the
            right key is already in the config (renaming would give DeepSpeed two of it), when the misspelt key
            appears twice, or in a file that mixes another tool's settings in.
        """,
    )
    valid = (
        # keys that ask for nothing the run misses: a switch left off, a precision the bf16 section turns on
        Valid(
            '{\n  "train_batch_size": 8,\n  "gradient_checkpointing": false,\n  "precision": "bf16",\n'
            '  "bf16": {"enabled": true}\n}\n'
        ),
        Valid(
            """
            import deepspeed
            def build(plugin, model, width):
                config = plugin.deepspeed_config
                config.update({"gradient_clipping": 1.0, "zero_optimization": {"stage": 3}})
                config.update(plugin.extra)
                return deepspeed.initialize(model=model, config=config)
            """,
            path="train.py",
        ),
        Valid(
            '{"train_batch_size": 8, "_comment": "ZeRO-2 on 8 GPUs", "zero_optimization": {"stage": 2}}\n',
        ),
        # a GPT-NeoX style argument file: NeoX's parser reads it and gives DeepSpeed only its own sections
        Valid(
            '{\n  "train_micro_batch_size_per_gpu": 8,\n  "pipe-parallel-size": 1,\n  "num-layers": 2,\n'
            '  "hidden-size": 8,\n  "seq-length": 16,\n  "init_method": "small_init",\n'
            '  "zero_optimization": {"stage": 1}\n}\n',
            path="configs/small.json",
        ),
        Valid(
            """
            import deepspeed
            config = {"train_batch_size": 8, "zero_optimization": {"stage": 2}}
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            """,
            path="train.py",
        ),
    )
    invalid = (
        # turned on where DeepSpeed ignores it; a precision no section of the file sets; a misspelt switch off; a
        # dotted name of a real section, off
        Invalid(
            '{\n  "train_batch_size": 8,\n  "gradient_checkpointing": true,\n  "precision": "fp16",\n'
            '  "zero_allow_untested_optimiser": false,\n  "zero_optimization.overlap_comm": false\n}\n',
            lines=(3, 4, 5, 6),
            fixed=(
                '{\n  "train_batch_size": 8,\n  "gradient_checkpointing": true,\n  "precision": "fp16",\n'
                '  "zero_allow_untested_optimizer": false,\n  "zero_optimization.overlap_comm": false\n}\n'
            ),
        ),
        Invalid(
            """
            import deepspeed
            def build(plugin, model, width):
                config = plugin.deepspeed_config
                config.update({"zero_optimization.reduce_bucket_size": width * width, "gradient_clipping": 1.0})
                config["zero_optimization"]["stage"] = 3
                return deepspeed.initialize(model=model, config=config)
            """,
            lines=(5,),
            path="train.py",
        ),
        Invalid(
            '{\n  "train_batch_size": 8,\n  "zero_optimisation": {"stage": 3}\n}\n',
            lines=(3,),
            path="ds_config.json",
            fixed='{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 3}\n}\n',
        ),
        Invalid(
            '{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 1},\n'
            '  "zero_optimisation": {"stage": 3}\n}\n',
            lines=(4,),
            path="ds_config.json",
            # `zero_optimization` is there already: renaming would give DeepSpeed two of it, so no fix
            fixed='{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 1},\n'
            '  "zero_optimisation": {"stage": 3}\n}\n',
        ),
        Invalid(
            '{\n  "train_batch_size": 8,\n  "model_name": "tiny",\n  "num_layers": 2,\n  "hidden_size": 8,\n'
            '  "seq_length": 16,\n  "data_path": "data/train"\n}\n',
            lines=(3,),
        ),
        Invalid(
            """
            import deepspeed
            config = {
                "train_batch_size": 8,
                "fp_16": {"enabled": True},
            }
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            """,
            lines=(5,),
            path="train.py",
            fixed="""
            import deepspeed
            config = {
                "train_batch_size": 8,
                "fp16": {"enabled": True},
            }
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            """,
        ),
    )

    def check(self) -> None:
        known = self.schema.top_level_keys
        unknown = [
            e
            for e in self.root.last_entries()
            if e.key not in known and e.key not in HANDLED_ELSEWHERE and not is_comment_key(e.key)
        ]
        if mixed_file(self.root, self.schema):
            # another tool's file (its parser picks DeepSpeed's keys), or one nothing shows reaching DeepSpeed
            # whole (a project's settings from which its script builds the DeepSpeed dict): no finding
            if not argument_file(self.root, self.schema) and not self._settings_file():
                self._report_mixed(unknown)
            return
        # a key of a newer DeepSpeed than the project runs: DSL416 says so
        version = self.context.deepspeed_version
        unknown = [e for e in unknown if first_release_with_top_level_key(e.key, version) is None]
        old_bf16 = self.root.entry("bfloat16")
        if old_bf16 is not None and bfloat16_ignored(self.root):
            self.report_key(
                old_bf16,
                "DeepSpeed ignores `bfloat16` (the older spelling) beside `bf16`; keep only `bf16`",
            )
        suggestions = {e.key: did_you_mean(e.key, self.schema.live_top_level_keys) for e in unknown}
        unknown = [e for e in unknown if suggestions[e.key] is not None or not self._nothing_lost(e)]
        for entry in unknown:
            suggestion = suggestions[entry.key]
            section, dot, rest = entry.key.partition(".")
            if dot and rest and section in self.schema.live_top_level_keys:
                self.report_key(
                    entry,
                    f"DeepSpeed ignores dotted key `{entry.key}`; nest `{rest}` in `{section}`",
                )
            elif suggestion is not None:
                self.report_key(
                    entry,
                    f"DeepSpeed ignores unknown key `{entry.key}` silently; did you mean `{suggestion}`?",
                    fix=self._rename(entry, suggestion),
                )
            else:
                self.report_key(
                    entry, f"DeepSpeed ignores unknown key `{entry.key}` silently; remove it or fix its spelling"
                )

    def _nothing_lost(self, entry: Entry) -> bool:
        """An ignored key (no misspelling of a real one: the caller reports those whatever their value) that asks
        for nothing the run misses: a switch left off (`"gradient_checkpointing": false`, `null`), or a
        precision the file's own `bf16`/`fp16` section already turns on (`"precision": "bf16"` beside
        `"bf16": {"enabled": true}`)."""
        value = entry.value
        if not isinstance(value, Scalar) or entry.key.partition(".")[0] in self.schema.live_top_level_keys:
            return False  # a dotted name of a real section (`zero_optimization.overlap_comm`) sets that section
        if value.value is False or value.value is None:
            return True
        if not isinstance(value.value, str):
            return False
        asked = value.value.lower()
        if asked in ("bf16", "bfloat16"):
            return config_facts.enabled(self.root, config_facts.bf16_section(self.root)) is True
        if asked in ("fp16", "float16", "half"):
            return config_facts.enabled(self.root, "fp16") is True
        return False

    def _rename(self, entry: Entry, suggestion: str) -> Fix | None:
        """Rename a misspelt key to its one close match, unless that key is already there (or the misspelt key
        appears twice: the first copy would stay)."""
        source = self.context.source
        if source is None or self.root.opaque:
            return None
        if single_close_match(entry.key, self.schema.live_top_level_keys) != suggestion:
            return None
        keys = [e.key for e in self.root.entries]
        if suggestion in keys or keys.count(entry.key) != 1:
            return None
        edit = rename_key(source, entry, suggestion)
        if edit is None:
            return None
        return Fix((edit,), Applicability.UNSAFE, f"rename `{entry.key}` to `{suggestion}`")

    def _settings_file(self) -> bool:
        """A JSON file found by its content alone (no config-like name), which nothing hands to a DeepSpeed
        reader: a project's own settings, from which a script may pick DeepSpeed's keys."""
        path = Path(self.context.path)
        return (
            self.context.origin is Origin.FILE and path.suffix.lower() in CONFIG_SUFFIXES and not is_config_name(path)
        )

    def _report_mixed(self, unknown: list[Entry]) -> None:
        """One finding for a file mixing another tool's keys in, at the first; each other key a related place."""
        names = ", ".join(f"`{e.key}`" for e in unknown[:2])
        others = tuple(
            Related(self.context.path, e.key_start.line, e.key_start.column, f"`{e.key}`") for e in unknown[1:]
        )
        self.report_key(
            unknown[0],
            f"{len(unknown)} top-level keys are not DeepSpeed's ({names}, ...); give DeepSpeed its own config",
            related=others,
        )
