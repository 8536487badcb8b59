"""DSL464: an `"auto"` value that neither the Hugging Face Trainer nor accelerate fills, in a config they read."""

from __future__ import annotations

from collections.abc import Iterator

from dslint.config.facts import Origin, is_auto
from dslint.config.tree import Entry, Node, Object
from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid

# The dotted keys an "auto" may sit on in a config the HF Trainer or accelerate reads: those the Trainer fills
# (transformers' `HfTrainerDeepSpeedConfig.trainer_config_process` and `trainer_config_finalize`, 4.46 and 5.25;
# `amp.*` up to 4.x), those accelerate's `DeepSpeedPlugin` fills from its settings and `Accelerator.
# _prepare_deepspeed` from the data loader, the model and its dummy optimizer and scheduler (accelerate 0.29-1.16),
# and `steps_per_print`, which the plugin overwrites (`float("inf")`) before anything reads it.
FILLED_KEYS = frozenset(
    {
        "train_micro_batch_size_per_gpu",
        "train_batch_size",
        "gradient_accumulation_steps",
        "gradient_clipping",
        "steps_per_print",
        "fp16.enabled",
        "bf16.enabled",
        "amp.enabled",
        "amp.opt_level",
        "optimizer.params.lr",
        "optimizer.params.betas",
        "optimizer.params.eps",
        "optimizer.params.weight_decay",
        "scheduler.params.warmup_min_lr",
        "scheduler.params.warmup_max_lr",
        "scheduler.params.warmup_num_steps",
        "scheduler.params.total_num_steps",
        "zero_optimization.stage",
        "zero_optimization.offload_optimizer.device",
        "zero_optimization.offload_optimizer.nvme_path",
        "zero_optimization.offload_param.device",
        "zero_optimization.offload_param.nvme_path",
        "zero_optimization.stage3_gather_16bit_weights_on_model_save",
        "zero_optimization.reduce_bucket_size",
        "zero_optimization.stage3_prefetch_bucket_size",
        "zero_optimization.stage3_param_persistence_threshold",
    }
)


def _entries(node: Node, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Entry]]:
    """Every scalar entry under nested objects, as accelerate walks them (`deepspeed_config_process` recurses into
    dicts only: a value inside a list is never looked at)."""
    if isinstance(node, Object):
        for entry in node.last_entries():
            if isinstance(entry.value, Object):
                yield from _entries(entry.value, (*path, entry.key))
            else:
                yield (*path, entry.key), entry


class AutoValueNothingFills(ConfigRule):
    code = "DSL464"
    slug = "auto-value-nothing-fills"
    message = '"auto" on a key neither the HF Trainer nor accelerate fills: accelerate stops; write a value'
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags, in a config that the Hugging Face Trainer or accelerate reads (`TrainingArguments(deepspeed=...)`,
            a launch's `--deepspeed` the Trainer takes, an accelerate YAML's `deepspeed_config_file`), an `"auto"`
            value on a key that neither fills: any key but the batch sizes and accumulation steps,
            `gradient_clipping`, `fp16.enabled`, `bf16.enabled`, `amp.enabled`, `amp.opt_level`, the optimizer's
            `lr`, `betas`, `eps` and `weight_decay`, the scheduler's `warmup_min_lr`, `warmup_max_lr`,
            `warmup_num_steps` and `total_num_steps`, `zero_optimization.stage`, the offload devices and NVMe paths,
            `stage3_gather_16bit_weights_on_model_save`, the three hidden-size bucket keys (`reduce_bucket_size`,
            `stage3_prefetch_bucket_size`, `stage3_param_persistence_threshold`) and `steps_per_print`, which
            accelerate overwrites. Also inside a section written `"enabled": false`, and whatever the ZeRO stage.
            A config going straight to `deepspeed.initialize` is DSL405's.
        """,
        why="""
            The Trainer replaces `"auto"` on its own keys only (transformers' `trainer_config_process` and
            `trainer_config_finalize`), then hands the config to accelerate's `prepare`, which walks every key of
            every nested section (`DeepSpeedPlugin.deepspeed_config_process`) and raises a ValueError for an
            `"auto"` it has no value for ("... not found in kwargs. Please specify ... without `auto`"). Every rank
            stops before the first step. Checked in accelerate 0.29 to 1.16 and transformers 4.46 and 5.25;
            `steps_per_print` is safe, as the plugin sets it to infinity before anything reads it.
        """,
        example="""
            {"train_micro_batch_size_per_gpu": "auto",
             "zero_optimization": {"stage": 2, "allgather_bucket_size": "auto", "reduce_bucket_size": "auto"}}
        """,
        use_instead="""
            {"train_micro_batch_size_per_gpu": "auto",
             "zero_optimization": {"stage": 2, "allgather_bucket_size": 500000000, "reduce_bucket_size": "auto"}}
        """,
    )
    valid = (
        Valid(
            """
            from transformers import TrainingArguments
            ds = {
                "train_batch_size": "auto",
                "steps_per_print": "auto",
                "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto"}},
                "zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": "auto"},
            }
            args = TrainingArguments(output_dir="out", deepspeed=ds)
            """,
            path="train.py",
        ),
        # straight to deepspeed.initialize: DSL405's
        Valid(
            """
            import deepspeed
            config = {"train_batch_size": 8, "zero_optimization": {"stage": 2, "allgather_bucket_size": "auto"}}
            engine, *_ = deepspeed.initialize(model=model, config=config)
            """,
            path="train.py",
        ),
        # a file nothing names: its reader is not known
        Valid('{"train_batch_size": 8, "zero_optimization": {"stage": 2, "allgather_bucket_size": "auto"}}\n'),
        # a list is never walked
        Valid(
            """
            from transformers import TrainingArguments
            ds = {"train_batch_size": "auto", "zero_optimization": {"stage": 2}, "tags": ["auto"]}
            args = TrainingArguments(output_dir="out", deepspeed=ds)
            """,
            path="train.py",
        ),
    )
    invalid = (
        Invalid(
            """
            from transformers import TrainingArguments
            ds = {
                "train_batch_size": "auto",
                "zero_optimization": {"stage": 2, "allgather_bucket_size": "auto"},
                "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": "auto", "cos_min_ratio": "auto"}},
            }
            args = TrainingArguments(output_dir="out", deepspeed=ds)
            """,
            lines=(5, 6),
            path="train.py",
        ),
        Invalid(
            '{\n  "train_batch_size": "auto",\n  "zero_optimization": {\n    "stage": 3,\n'
            '    "sub_group_size": "auto"\n  }\n}\n',
            lines=(5,),
            files=(
                ("run.sh", "deepspeed train.py --deepspeed ds_config.json\n"),
                (
                    "train.py",
                    """
                    from transformers import HfArgumentParser, TrainingArguments
                    (args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
                    """,
                ),
            ),
        ),
    )

    def check(self) -> None:
        if self.context.origin is not Origin.TRAINER:
            return
        for path, entry in _entries(self.root):
            where = ".".join(path)
            if not is_auto(entry.value) or where in FILLED_KEYS:
                continue
            text = f'"auto" in `{where}`: neither Trainer nor accelerate fills it, so prepare() stops'
            if len(text) > 120:
                text = f'"auto" in `{path[-1]}`: neither Trainer nor accelerate fills it, so prepare() stops'
            self.report_key(entry, text)
