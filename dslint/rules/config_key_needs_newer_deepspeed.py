"""DSL416: a config key that the project's DeepSpeed does not have, but a newer release reads."""

from __future__ import annotations

from dslint.config.facts import is_auto, is_comment_key
from dslint.config.key_history import first_release_with_section_key, first_release_with_top_level_key
from dslint.config.sections import validated_entries
from dslint.config.versions import SECTION_KEYS_VALIDATED_SINCE
from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid

HANDLED_ELSEWHERE = frozenset({"ignored_parameters"})  # DSL412 explains it


class ConfigKeyNeedsNewerDeepSpeed(ConfigRule):
    code = "DSL416"
    slug = "config-key-needs-newer-deepspeed"
    message = "this key needs a newer DeepSpeed than the project runs; upgrade DeepSpeed or remove the key"
    severity = Severity.ERROR
    # under a range pin, the release a fresh install gets may read the key: only where it does not too
    newest_must_agree = True
    deepspeed_versions = "older than the newest release dslint knows"
    docs = RuleDocs(
        what="""
            Flags a config key that the DeepSpeed the project runs does not have, while a newer release reads
            it: a top-level key (`torch_autocast` on DeepSpeed 0.14), or a key inside a section DeepSpeed
            validates (`zero_optimization`, `fp16`, `bf16`, offload blocks, ...). The project's DeepSpeed comes
            from `[tool.dslint] deepspeed-version`, else from its own pins (requirements, pyproject, setup.py,
            environment.yml, Dockerfile; `dslint settings` shows which); the keys each release reads come from
            the schemas dslint generated from each release. On the newest release dslint knows, the rule has
            nothing to say; nor under a range pin (`deepspeed>=0.10`) whose newest admitted release, the one a
            fresh install gets, reads the key. Keys that no release reads are typos: DSL401 and DSL403 report
            those.
        """,
        why="""
            A config written for a newer DeepSpeed (copied from current docs or examples) meets an older one:
            at the top level the older DeepSpeed ignores the key silently, so the feature the config asks for
            (torch autocast, a new ZeRO option) simply does not happen; inside a validated section it stops at
            start-up with a pydantic ValidationError, typically after the job waited for its GPUs.
        """,
        example="""
            # requirements.txt: deepspeed==0.14.0
            {
              "train_batch_size": 32,
              "torch_autocast": {"enabled": true, "dtype": "bfloat16"}
            }
        """,
        use_instead="""
            # requirements.txt: deepspeed>=0.16.9
            {
              "train_batch_size": 32,
              "torch_autocast": {"enabled": true, "dtype": "bfloat16"}
            }
        """,
    )
    valid = (
        Valid(
            '{"train_batch_size": 8, "torch_autocast": {"enabled": false}}\n',
            path="ds_config.json",
            deepspeed_version="0.19.8",
        ),
        Valid('{"train_batch_size": 8, "amp": {"enabled": true}}\n', path="ds_config.json", deepspeed_version="0.14"),
        Valid('{"train_batch_size": 8, "torch_autocst": {"enabled": false}}\n', path="ds_config.json"),
        # a key a builder adds to its ZeRO section only under a condition: not known to be in the config
        Valid(
            """
            def build_config(stage, quantize=False):
                zero = {"stage": stage, "overlap_comm": True}
                if quantize:
                    zero["zero_quantized_nontrainable_weights"] = True
                return {"train_batch_size": 32, "zero_optimization": zero}
            """,
            path="ds_helpers.py",
            deepspeed_version="0.10.0",
            files=(
                (
                    "train.py",
                    """
                    import deepspeed
                    from ds_helpers import build_config
                    def main(model):
                        return deepspeed.initialize(model=model, config=build_config(3))
                    """,
                ),
            ),
        ),
    )
    invalid = (
        # a pin older than 0.7.0 read zero_optimization as a plain dict: the newer key is ignored, not refused
        Invalid(
            '{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 2, "compute_grad_norm": true}\n}\n',
            lines=(3,),
            path="ds_config.json",
            deepspeed_version="0.6.5",
        ),
        Invalid(
            '{\n  "train_batch_size": 8,\n  "torch_autocast": {"enabled": false}\n}\n',
            lines=(3,),
            path="ds_config.json",
            deepspeed_version="0.14.0",
        ),
        Invalid(
            '{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "stage": 3,\n'
            '    "zenflow": {"topk_ratio": 0.1}\n  }\n}\n',
            lines=(5,),
            path="ds_config.json",
            deepspeed_version="0.14",
        ),
    )

    def check(self) -> None:
        version = self.context.deepspeed_version
        for entry in self.root.last_entries():
            key = entry.key
            if key in self.schema.top_level_keys or key in HANDLED_ELSEWHERE or is_comment_key(key):
                continue
            first = first_release_with_top_level_key(key, version)
            if first is not None:
                self.report_key(
                    entry,
                    f"`{key}` needs DeepSpeed {first}; DeepSpeed {version} ignores it silently: upgrade or remove it",
                )
        for item in validated_entries(self.root, self.schema):
            if not item.model.forbids_extra or item.field is not None or item.entry.key in HANDLED_ELSEWHERE:
                continue
            if is_auto(item.entry.value):
                continue
            first = first_release_with_section_key(item.path, version)
            if first is not None:
                where = ".".join(item.path)
                # before 0.7.0 the section was a plain dict: the key is ignored, not refused
                refused = version >= SECTION_KEYS_VALIDATED_SINCE
                effect = "stops at start-up" if refused else "ignores it silently"
                self.report_key(
                    item.entry, f"`{where}` needs DeepSpeed {first}; DeepSpeed {version} {effect}: upgrade or remove it"
                )
