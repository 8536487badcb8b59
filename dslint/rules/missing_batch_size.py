"""DSL406: neither `train_batch_size` nor `train_micro_batch_size_per_gpu`."""

from __future__ import annotations

from dslint.config.facts import Origin
from dslint.config.tree import scalar
from dslint.diagnostics import Severity
from dslint.framework.config_rule import ConfigRule
from dslint.framework.rule_base import Invalid, RuleDocs, Valid


class MissingBatchSize(ConfigRule):
    code = "DSL406"
    slug = "missing-batch-size"
    message = "neither train_batch_size nor train_micro_batch_size_per_gpu is set; set the micro batch size"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="Flags a config that sets neither `train_batch_size` nor `train_micro_batch_size_per_gpu`.",
        why="""
            DeepSpeed derives the batch values it is not given (`runtime/config.py:
            _set_batch_related_parameters`): from either of these two (with `gradient_accumulation_steps`,
            default 1, and the world size). With neither it asserts "Either train_batch_size or
            train_micro_batch_size_per_gpu needs to be provided" when the engine is created. Setting all three
            is not required. Not reported for a config the Hugging Face Trainer reads: today's transformers and
            accelerate fill only values written as `"auto"` and never add a missing key, so such a config meets
            the same assertion there, but transformers before `"auto"` (4.5 and older) set both batch keys
            itself and refused them in the file; which one a project runs is not read, so dslint stays silent.
            Nor reported for a config that writes a batch key as `null`: DeepSpeed reads null as absent, so the
            key is a placeholder for the code that loads the file to fill (`cfg["train_batch_size"] = ...` in a
            helper of another module, which dslint does not always follow); unfilled, the same assertion stops
            the run at once. Nor reported for a config only PyTorch Lightning's `DeepSpeedStrategy` reads (it sets
            `train_micro_batch_size_per_gpu` from the data loader when the config has no batch size): a launcher
            option whose value the script hands to the strategy (whatever the option's name), or, for a file
            nothing names, a project whose only way to DeepSpeed is that strategy given a config it reads from
            the command line.
        """,
        example="""
            {
              "gradient_accumulation_steps": 4,
              "zero_optimization": {"stage": 2}
            }
        """,
        use_instead="""
            {
              "train_micro_batch_size_per_gpu": 8,
              "gradient_accumulation_steps": 4,
              "zero_optimization": {"stage": 2}
            }
        """,
    )
    valid = (
        Valid('{"train_micro_batch_size_per_gpu": 8}\n'),
        Valid('{"train_batch_size": 64, "gradient_accumulation_steps": 2}\n'),
        # null placeholders the loading code fills
        Valid('{"train_batch_size": null, "train_micro_batch_size_per_gpu": null, "gradient_clipping": 1.0}\n'),
        # the reader's function writes the batch size into the builder's dict before initialize
        Valid(
            """
            def build_config():
                return {"zero_optimization": {"stage": 2}}
            """,
            path="ds_helpers.py",
            files=(
                (
                    "train.py",
                    """
                    import deepspeed
                    from ds_helpers import build_config
                    def main(model, micro_batch):
                        config = build_config()
                        config["train_micro_batch_size_per_gpu"] = micro_batch
                        return deepspeed.initialize(model=model, config=config)
                    """,
                ),
            ),
        ),
    )
    invalid = (
        Invalid(
            '{\n  "gradient_accumulation_steps": 4,\n  "zero_optimization": {"stage": 2}\n}\n',
            lines=(1,),
        ),
        Invalid(
            """
            import deepspeed
            engine, _, _, _ = deepspeed.initialize(model=model, config={"fp16": {"enabled": True}})
            """,
            lines=(3,),
            path="train.py",
        ),
    )

    def check(self) -> None:
        if self.context.origin in (Origin.TRAINER, Origin.LIGHTNING) or self.root.opaque:
            return
        if self.context.replaced_keys & {"train_batch_size", "train_micro_batch_size_per_gpu"}:
            return  # the reading script sets the batch size in code
        keys = ("train_batch_size", "train_micro_batch_size_per_gpu")
        if any(self.root.get(key) is not None for key in keys) and all(scalar(self.root.get(k)) is None for k in keys):
            return  # written as null: a placeholder the reading code fills (DeepSpeed reads null as absent)
        if all(scalar(self.root.get(key)) is None for key in keys):
            self.report_at(self.root.start, self.root.start)
