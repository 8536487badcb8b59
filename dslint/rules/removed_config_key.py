"""DSL402: a config key for a feature DeepSpeed removed; DeepSpeed refuses the config."""

from __future__ import annotations

from dslint.config.facts import lax_bool
from dslint.config.key_edits import remove_entry
from dslint.config.tree import UNKNOWN, Entry, Node, Object, Scalar
from dslint.diagnostics import Applicability, Fix, Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid

# Removed features whose replacement DeepSpeed's own message names, when the block is disabled: the replacement
# of a disabled block is no block (its new home, `data_efficiency.data_sampling.curriculum_learning`, takes
# another format, and AMP's are the `fp16`, `bf16` and `torch_autocast` sections, all off by default).
DISABLED_BLOCK_REPLACED = frozenset({"curriculum_learning", "amp"})
# DeepSpeed's message says what to do: "Remove this key to use standard ZeRO++ quantized gradients without LoCo
# error feedback" (runtime/config.py, _REMOVED_ZERO_CONFIG_KEYS).
REMOVE_ZERO_KEY = frozenset({"zeropp_loco_param"})


def _refused(version: object, key: str, reason: str) -> str:
    """DeepSpeed's refusal in one line: its instruction ("Use `x` instead", "Remove this key ...") when it gives
    one (its whole message is on the rule's page and in `dslint explain DSL402`)."""
    advice = next((s.strip() for s in reason.split(". ") if s.startswith("Use ")), "")
    advice = advice.split(" See ")[0].rstrip(".")
    return f"DeepSpeed {version} refuses `{key}`; " + (advice[0].lower() + advice[1:] if advice else "remove it")


def _is_off(block: Node) -> bool:
    """A block that is surely off: `"enabled": false`, or no `enabled` (off by default)."""
    if not isinstance(block, Object) or block.opaque:
        return False
    flag = block.get("enabled")
    return flag is None or (isinstance(flag, Scalar) and flag.value is not UNKNOWN and lax_bool(flag.value) is False)


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
        fix_safety="""
            Only where DeepSpeed's own message names the replacement. A disabled `curriculum_learning` or `amp`
            block is removed (safe: the replacement of a disabled block is no block, and nothing that ran
            changes; an enabled one needs the new format, `data_efficiency.data_sampling.curriculum_learning`, or
            a choice between `fp16`, `bf16` and `torch_autocast`, so it gets no fix). `zero_optimization.
            zeropp_loco_param` is removed as DeepSpeed says ("Remove this key to use standard ZeRO++ quantized
            gradients without LoCo error feedback"), which is unsafe: the gradients are no longer corrected by
            LoCo. The other removed features have no replacement and no fix. The entry is deleted in place, with
            its comma; comments on other lines stay.
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
            fixed='{\n  "train_batch_size": 8\n}\n',
        ),
        Invalid(
            '{\n  "train_batch_size": 8,\n  "curriculum_learning": {"enabled": true, "curriculum_type": "seqlen"}\n}\n',
            lines=(3,),
            path="ds_config.json",
            fixed='{\n  "train_batch_size": 8,\n'
            '  "curriculum_learning": {"enabled": true, "curriculum_type": "seqlen"}\n}\n',
        ),
        Invalid(
            '{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "stage": 3,\n'
            '    "mics_shard_size": 8\n  }\n}\n',
            lines=(5,),
        ),
        Invalid(
            '{"train_batch_size": 8, "zero_optimization": {"stage": 3, "zeropp_loco_param": {"err_beta": 0.8}}}\n',
            lines=(1,),
            path="ds_config.json",
            fixed='{"train_batch_size": 8, "zero_optimization": {"stage": 3}}\n',
        ),
    )

    def check(self) -> None:
        for entry in self.root.last_entries():
            reason = self.schema.removed_top_level.get(entry.key)
            if reason is not None:
                fix = self._remove_disabled(self.root, entry) if entry.key in DISABLED_BLOCK_REPLACED else None
                message = _refused(self.schema.version, entry.key, reason)
                if entry.key in DISABLED_BLOCK_REPLACED and _is_off(entry.value):
                    # a block that is off asks for nothing in its place: DeepSpeed refuses the key itself
                    message = f"DeepSpeed {self.schema.version} refuses `{entry.key}` even when it is off; remove it"
                self.report_key(entry, message, fix=fix)
        zero = self.section("zero_optimization")
        for entry in self.entries(zero):
            reason = self.schema.removed_zero.get(entry.key)
            if reason is not None:
                fix = None
                if zero is not None and entry.key in REMOVE_ZERO_KEY:
                    fix = self._remove(zero, entry, Applicability.UNSAFE, f"remove `zero_optimization.{entry.key}`")
                self.report_key(entry, _refused(self.schema.version, entry.key, reason), fix=fix)

    def _remove_disabled(self, parent: Object, entry: Entry) -> Fix | None:
        """Remove a block that is off (`"enabled": false`, or no `enabled`: off by default)."""
        if not _is_off(entry.value):
            return None
        return self._remove(parent, entry, Applicability.SAFE, f"remove the disabled `{entry.key}` block")

    def _remove(self, parent: Object, entry: Entry, applicability: Applicability, message: str) -> Fix | None:
        source = self.context.source
        if source is None or parent.opaque or [e.key for e in parent.entries].count(entry.key) != 1:
            return None
        edits = remove_entry(source, parent, entry)
        return Fix(edits, applicability, message) if edits else None
