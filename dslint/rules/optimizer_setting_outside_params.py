"""DSL439: a setting written beside `params` in the `optimizer` or `scheduler` section, which DeepSpeed ignores."""

from __future__ import annotations

from dslint.config.facts import is_comment_key
from dslint.config.tree import Array, Node, Scalar
from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid

# The keys DeepSpeed 0.19.8 reads from each section (`runtime/config.py`: `get_optimizer_name`,
# `get_optimizer_params`, `get_optimizer_legacy_fusion`, `get_scheduler_name`, `get_scheduler_params`).
READ_KEYS = {"optimizer": frozenset({"type", "params", "legacy_fusion"}), "scheduler": frozenset({"type", "params"})}
# The defaults of the Adam family DeepSpeed builds for `Adam`/`AdamW` (`ops/adam/fused_adam.py` `FusedAdam`,
# `ops/adam/cpu_adam.py` `DeepSpeedCPUAdam`, 0.19.8): a key beside `params` holding one of them loses nothing.
ADAM_DEFAULTS = {
    "eps": 1e-8,
    "betas": [0.9, 0.999],
    "weight_decay": 0,
    "bias_correction": True,
    "adam_w_mode": True,
    "amsgrad": False,
}
_ADAM_TYPES = frozenset({"adam", "adamw"})
# Each default's key as written without underscores, in any case: `adamw_mode` asks for `adam_w_mode`
_ADAM_SPELLINGS = {key.replace("_", "").lower(): key for key in ADAM_DEFAULTS}


class OptimizerSettingOutsideParams(ConfigRule):
    code = "DSL439"
    slug = "optimizer-setting-outside-params"
    message = "DeepSpeed reads this section's settings from `params` only; this key is ignored silently"
    severity = Severity.WARNING
    docs = RuleDocs(
        what="""
            Flags a key of the `optimizer` section other than `type`, `params` and `legacy_fusion`, and a key
            of the `scheduler` section other than `type` and `params`: a setting such as `weight_decay`, `eps`
            or `warmup_num_steps` written beside `params` instead of inside it. In JSON files and in config
            dicts a script hands to DeepSpeed. Beside an `Adam`/`AdamW` optimizer's `params`, a value equal to
            the optimizer's own default (`eps` 1e-8, `betas` [0.9, 0.999], `weight_decay` 0, `adam_w_mode` true,
            `bias_correction` true, `amsgrad` false) is left alone: ignored, it loses nothing. A key written
            as a comment (`"_comment": "AdamW"`, `"//"`, `"note"`) is a note for the reader, as at the top level.
        """,
        why="""
            DeepSpeed builds the optimizer from `optimizer.type` and the keyword arguments in
            `optimizer.params`, and the scheduler from `scheduler.type` and `scheduler.params`
            (`runtime/config.py`, DeepSpeed 0.19.8); nothing validates the sections, and every other key is
            ignored without a word. A `weight_decay` beside `params` leaves the optimizer at its default
            weight decay of 0, an `eps` beside it at 1e-8, a `warmup_num_steps` beside the scheduler's params
            at the default 1000 steps: the run trains with settings nobody chose. The Hugging Face Trainer
            fills only the keys inside `params` too.
        """,
        example="""
            {
              "train_batch_size": 32,
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}, "weight_decay": 0.1}
            }
        """,
        use_instead="""
            {
              "train_batch_size": 32,
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "weight_decay": 0.1}}
            }
        """,
    )
    valid = (
        Valid(
            '{"train_batch_size": 8, "optimizer": {"type": "Adam", "params": {"lr": 1e-4, "eps": 1e-8},'
            ' "legacy_fusion": false}, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10}}}\n'
        ),
        Valid('{"train_batch_size": 8, "activation_checkpointing": {"weight_decay": 0.1}}\n'),
        # the optimizer's own defaults: ignored, and nothing lost
        Valid('{"optimizer": {"type": "AdamW", "params": {"lr": 1e-4}, "eps": 1e-8, "adam_w_mode": true}}\n'),
        # a spelling of `adam_w_mode` asking for its default: nothing lost
        Valid('{"optimizer": {"type": "Adam", "params": {"lr": 1e-4}, "adamw_mode": true}}\n'),
        # a note for the reader
        Valid('{"optimizer": {"_comment": "AdamW, as the paper", "type": "AdamW", "params": {"lr": 1e-4}}}\n'),
    )
    invalid = (
        # a spelling of `adam_w_mode` asking for plain Adam: lost (and `params` takes it by its own name only)
        Invalid('{"optimizer": {"type": "Adam", "params": {"lr": 1e-4}, "adamw_mode": false}}\n', lines=(1,)),
        Invalid(
            '{\n  "train_batch_size": 8,\n  "optimizer": {\n    "type": "AdamW",\n    "params": {"lr": 1e-4},\n'
            '    "weight_decay": 0.1,\n    "eps": 1e-6\n  },\n  "scheduler": {\n    "type": "WarmupLR",\n'
            '    "warmup_num_steps": 100\n  }\n}\n',
            lines=(6, 7, 11),
        ),
        Invalid(
            """\
            import deepspeed
            config = {
                "train_batch_size": 8,
                "optimizer": {"type": "Adam", "params": {"lr": 1e-4}, "betas": [0.9, 0.95]},
            }
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            """,
            lines=(4,),
            path="train.py",
        ),
    )

    def check(self) -> None:
        for name, read in READ_KEYS.items():
            section = self.section(name)
            kind = section.get("type") if section is not None else None
            adam = isinstance(kind, Scalar) and str(kind.value).lower() in _ADAM_TYPES
            for entry in self.entries(section):
                default = _ADAM_SPELLINGS.get(entry.key.replace("_", "").lower())  # `adamw_mode` too
                if adam and default is not None and _equals(entry.value, ADAM_DEFAULTS[default]):
                    continue  # the optimizer's own default: ignored, and nothing lost
                if entry.key not in read and not is_comment_key(entry.key):  # `_comment`: a note, as at the top level
                    named = f" as `{default}`" if adam and default is not None and default != entry.key else ""
                    self.report_key(
                        entry,
                        f"the {name} is built from `type` and `params` only: `{entry.key}` is ignored; "
                        f"move it into `params`{named}",
                    )


def _equals(node: Node, default: object) -> bool:
    """A literal equal to `default` (numbers as numbers: `0` and `0.0`, a list item by item; a bool only to a bool)."""
    if isinstance(default, list):
        return (
            isinstance(node, Array)
            and len(node.items) == len(default)
            and all(_equals(item, d) for item, d in zip(node.items, default, strict=True))
        )
    if not isinstance(node, Scalar):
        return False
    if isinstance(default, bool) or isinstance(node.value, bool):
        return node.value is default
    return isinstance(node.value, (int, float)) and node.value == default
