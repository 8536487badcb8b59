"""DSL459: an optimizer section without `lr` in a config the Hugging Face Trainer (or accelerate) hands DeepSpeed."""

from __future__ import annotations

from dslint.config.facts import Origin
from dslint.config.tree import Object
from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid

_LAUNCH = ("run.sh", "deepspeed --num_gpus 2 train.py --deepspeed ds_config.json\n")
_TRAINER = (
    "train.py",
    "from transformers import HfArgumentParser, Trainer, TrainingArguments\n"
    "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
    "Trainer(model=model, args=args).train()\n",
)
_CONFIG = (
    '{{\n  "train_micro_batch_size_per_gpu": "auto",\n  "optimizer": {{\n    "type": "AdamW",\n'
    '    "params": {params}\n  }}\n}}\n'
)


class TrainerOptimizerWithoutLr(ConfigRule):
    code = "DSL459"
    slug = "trainer-optimizer-without-lr"
    message = 'this optimizer has no lr: the Trainer fills only "auto" keys, so it runs at its default lr'
    severity = Severity.WARNING
    docs = RuleDocs(
        what="""
            Flags the `optimizer` section of a DeepSpeed config that the Hugging Face Trainer (or accelerate)
            hands DeepSpeed when it names a `type` and its `params` have no `lr` (or there are no `params`).
            Reported at the section's key. A config for `deepspeed.initialize` (whose author chose the defaults),
            `"lr": "auto"` and a config whose reader is not known are left alone.
        """,
        why="""
            The Trainer fills a config's values from its TrainingArguments only where they are `"auto"`, and
            compares those written (transformers' `HfTrainerDeepSpeedConfig.fill_match`): a key that is absent is
            neither filled nor compared. DeepSpeed then builds the section's optimizer with the parameters
            written (`DeepSpeedEngine._configure_basic_optimizer`, 0.19.8: `FusedAdam(params, **optimizer_params)`),
            so the optimizer takes its own default learning rate (1e-3 for Adam and AdamW), not the
            `learning_rate` the run asks for, and nothing says so.
        """,
        example="""
            {"optimizer": {"type": "AdamW", "params": {"weight_decay": 0.01}}, ...}  # --learning_rate 2e-5
        """,
        use_instead="""
            {"optimizer": {"type": "AdamW", "params": {"lr": "auto", "weight_decay": "auto"}}, ...}
        """,
    )
    valid = (
        Valid(_CONFIG.format(params='{"lr": "auto"}'), files=(_LAUNCH, _TRAINER)),
        Valid(_CONFIG.format(params='{"lr": 2e-5}'), files=(_LAUNCH, _TRAINER)),
        Valid(_CONFIG.format(params='{"weight_decay": 0.01}')),  # a file alone: its reader is not known
    )
    invalid = (Invalid(_CONFIG.format(params='{"weight_decay": 0.01}'), lines=(3,), files=(_LAUNCH, _TRAINER)),)

    def check(self) -> None:
        if self.context.origin is not Origin.TRAINER:
            return
        for entry in self.entries(self.root):
            if entry.key != "optimizer" or not isinstance(entry.value, Object):
                continue
            keys = {e.key: e.value for e in self.entries(entry.value)}
            params = keys.get("params")
            if "type" not in keys or (params is not None and not isinstance(params, Object)):
                return
            if params is None or "lr" not in {e.key for e in self.entries(params)}:
                self.report_key(entry)
            return
