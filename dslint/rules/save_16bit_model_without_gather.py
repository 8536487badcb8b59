"""DSL210 (DSL415 before): `engine.save_16bit_model(...)` under ZeRO-3 without the gather flag set."""

from __future__ import annotations

from typing import Any

import libcst as cst

from dslint.config.facts import lax_bool
from dslint.config.tree import UNKNOWN
from dslint.diagnostics import Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.project.config_link import accelerate_runs, resolve_config, training_arguments_configs
from dslint.project.evidence import evidence
from dslint.project.resolved_configs import AccelerateRun, ResolvedConfig
from dslint.script.facts import Role, method_name
from dslint.script.hf_trainers import TrainerNames

# Every spelling DeepSpeed accepts for the flag (field name, alias, deprecated name).
GATHER_KEYS = (
    "stage3_gather_16bit_weights_on_model_save",
    "gather_16bit_weights_on_model_save",
    "stage3_gather_fp16_weights_on_model_save",
)


class Save16bitModelWithoutGather(ScriptRule):
    code = "DSL210"
    slug = "save-16bit-model-without-gather"
    message = 'under ZeRO-3, save_16bit_model saves nothing; set "stage3_gather_16bit_weights_on_model_save": true'
    severity = Severity.ERROR
    # Also the Hugging Face Trainer's save_model and accelerate's, in files that create no engine themselves.
    needs_engine = False
    # every finding is a `save_16bit_model`, `save_model` or (accelerate) `get_state_dict` call
    required_tokens = (b"deepspeed", b"initialize", b"save")
    alternative_tokens = (
        (b"save_model", b"Trainer"),
        (b"save_model", b"Accelerator"),
        (b"get_state_dict", b"Accelerator"),
    )
    # the engine's save_16bit_model (where an engine may be), or a Trainer's or an Accelerator's save (where a
    # config reaches them: `training_arguments_configs`, `accelerate_runs`)
    call_shapes = (
        Shape(methods=("save_16bit_model",), engine=True),
        Shape(methods=("save_model", "get_state_dict"), configured=True),
    )
    docs = RuleDocs(
        what="""
            Flags `engine.save_16bit_model(...)` when the engine's config (a dict in the script or the file it
            names) is ZeRO-3 and does not set `zero_optimization.stage3_gather_16bit_weights_on_model_save` to
            true. Also flags `trainer.save_model(...)` on a Hugging Face Trainer (transformers or trl, or a class
            of the script deriving from one without its own `save_model` / `_save`) when every DeepSpeed config
            its `TrainingArguments(deepspeed=...)` (or the `--deepspeed` its launchers give) can run with is
            ZeRO-3 without that flag; and `accelerator.get_state_dict(...)` / `accelerator.save_model(...)` on an
            accelerate `Accelerator` when every `accelerate launch --config_file` of the script runs ZeRO-3 without
            it (the YAML's `zero3_save_16bit_model`, or the DeepSpeed file its `deepspeed_config_file` names);
            so is a Trainer's `save_model` when its arguments carry no DeepSpeed config of their own and every such
            launch runs ZeRO-3 without it (the Trainer runs the launch's DeepSpeed plugin).
        """,
        why="""
            Under ZeRO-3 each rank holds only a shard of every parameter. `save_16bit_model` gathers the full
            16-bit weights only when `stage3_gather_16bit_weights_on_model_save` is true; otherwise it logs a
            warning, writes no file and returns False (`runtime/engine.py: save_16bit_model`). A script that
            does not check the return value ends a long run with no model saved. The Trainer's `save_model`
            asks accelerate for the gathered weights (`Accelerator.get_state_dict`), which raises a ValueError
            under ZeRO-3 without the flag; the Trainer catches it, removes the weights file it would have written
            and saves a DeepSpeed checkpoint (`global_step*/`, `zero_to_fp32.py`) in the folder instead: the
            folder holds no weights `from_pretrained` can load until `zero_to_fp32.py` is run on it. In a script
            of its own, accelerate's `get_state_dict` (and `save_model`, which calls it) raises that ValueError:
            the run ends without a saved model.
        """,
        example="""
            config = {"train_batch_size": 32, "zero_optimization": {"stage": 3}}
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            engine.save_16bit_model("out")
        """,
        use_instead="""
            config = {
                "train_batch_size": 32,
                "zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": True},
            }
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            engine.save_16bit_model("out")
        """,
    )
    valid = (
        Valid(
            """
            import deepspeed
            config = {
                "train_batch_size": 8,
                "zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": True},
            }
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            engine.save_16bit_model("out")
            """
        ),
        Valid(
            """
            import deepspeed
            config = {"train_batch_size": 8, "zero_optimization": {"stage": 2}}
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            engine.save_16bit_model("out")
            """
        ),
        Valid(
            """
            import deepspeed
            config = {"train_batch_size": 8, "zero_optimization": {"stage": 3}}
            config["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"] = args.gather
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            engine.save_16bit_model("out")
            """
        ),
        # The Hugging Face Trainer's save_model.
        Valid(
            """
            from transformers import Trainer, TrainingArguments
            ds = {"zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": True}}
            trainer = Trainer(model=model, args=TrainingArguments(output_dir="out", deepspeed=ds))
            trainer.train()
            trainer.save_model("out")
            """
        ),
        Valid(
            """
            from transformers import Trainer, TrainingArguments
            ds = {"zero_optimization": {"stage": 2}}
            trainer = Trainer(model=model, args=TrainingArguments(output_dir="out", deepspeed=ds))
            trainer.save_model("out")
            """
        ),
        # The script's own Trainer saves its own way.
        Valid(
            """
            from transformers import Trainer, TrainingArguments
            class GatheringTrainer(Trainer):
                def save_model(self, output_dir=None, _internal_call=False):
                    self.model_wrapped.save_checkpoint(output_dir)
            ds = {"zero_optimization": {"stage": 3}}
            trainer = GatheringTrainer(model=model, args=TrainingArguments(output_dir="out", deepspeed=ds))
            trainer.save_model("out")
            """
        ),
        # "auto": the Trainer's accelerate fills it from zero3_save_16bit_model, which a launcher may set.
        Valid(
            """
            from transformers import Trainer, TrainingArguments
            ds = {"zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": "auto"}}
            trainer = Trainer(model=model, args=TrainingArguments(output_dir="out", deepspeed=ds))
            trainer.save_model("out")
            """
        ),
        # One config of the two cannot be read: no answer.
        Valid(
            """
            from transformers import Trainer, TrainingArguments
            ds = {"zero_optimization": {"stage": 3}}
            args = TrainingArguments(output_dir="out", deepspeed=ds if flag else make_config())
            trainer = Trainer(model=model, args=args)
            trainer.save_model("out")
            """
        ),
    )
    invalid = (
        Invalid(
            """
            from transformers import Trainer, TrainingArguments
            ds = {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 3}}
            args = TrainingArguments(output_dir="out", deepspeed=ds)
            trainer = Trainer(model=model, args=args)
            trainer.train()
            trainer.save_model("out")
            """,
            lines=(7,),
        ),
        Invalid(
            """
            from trl import SFTTrainer
            from transformers import TrainingArguments
            class MyTrainer(SFTTrainer):
                def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
                    return super().compute_loss(model, inputs, return_outputs, **kwargs)
            ds = {"zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": False}}
            trainer = MyTrainer(model=model, args=TrainingArguments(output_dir="out", deepspeed=ds))
            trainer.save_model()
            """,
            lines=(9,),
        ),
        Invalid(
            """
            import deepspeed
            config = {"train_batch_size": 8, "zero_optimization": {"stage": 3}}
            model, _, _, _ = deepspeed.initialize(model=model, config=config)
            model.save_16bit_model("out")
            """,
            lines=(5,),
        ),
        Invalid(
            """
            import deepspeed
            ds = {
                "train_batch_size": 8,
                "zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": False},
            }
            class Trainer:
                def __init__(self, net):
                    self.engine, _, _, _ = deepspeed.initialize(model=net, config=ds)
                def save(self):
                    self.engine.save_16bit_model("out")
            """,
            lines=(11,),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.trainers = TrainerNames(self.context)
        self.saves: list[tuple[cst.Call, cst.BaseExpression, str]] = []  # save_model / get_state_dict calls

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.trainers.consider_class(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.trainers.consider_assign(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        trainer = [
            call
            for call, receiver, name in self.saves
            if name == "save_model" and self.trainers.holds_trainer(receiver)
        ]
        accelerator = [call for call, receiver, _ in self.saves if self.trainers.holds_accelerator(receiver)]
        configs = training_arguments_configs(self.context) if trainer else []
        if configs and all(
            c.zero_stage == 3 and self._gathers(c.get("zero_optimization"), filled=True) is False for c in configs
        ):
            for call in trainer:
                self.report(call, self._trainer_message(configs), related=[r for c in configs for r in c.via])
        # a Trainer given no config of its own runs the DeepSpeed plugin of its accelerate launch
        if accelerator or (trainer and not configs):
            runs = accelerate_runs(self.context)
            if runs and all(self._accelerate_stage_and_gather(run) == (3, False) for run in runs):
                for call in accelerator or trainer:
                    self.report(
                        call, self._accelerate_message(call, runs), related=[r for run in runs for r in run.via]
                    )

    def _accelerate_stage_and_gather(self, run: AccelerateRun) -> tuple[int | None, bool | None]:
        if run.config is not None:
            return run.config.zero_stage, self._gathers(run.config.get("zero_optimization"), filled=True)
        return run.stage, run.save_16bit

    def _accelerate_message(self, call: cst.Call, runs: list[AccelerateRun]) -> str:
        method = method_name(call)
        how = "raises" if method == "get_state_dict" else "raises in get_state_dict"
        where = ", ".join(dict.fromkeys(f"{r.path}:{r.line} {r.message}" for run in runs for r in run.via[-1:]))
        if isinstance(call.func, cst.Attribute) and self.trainers.holds_trainer(call.func.value):
            return f"under ZeRO-3, trainer.save_model writes no usable weights: set zero3_save_16bit_model ({where})"
        return (
            f"under ZeRO-3, accelerator.{method} {how} without the 16-bit gather: set zero3_save_16bit_model ({where})"
        )

    def _trainer_message(self, configs: list[ResolvedConfig]) -> str:
        sources = ", ".join(dict.fromkeys(c.source + c.evidence() for c in configs))
        return f"under ZeRO-3, trainer.save_model writes no usable weights without the 16-bit gather; config: {sources}"

    def visit_Call(self, node: cst.Call) -> None:
        name = method_name(node)
        if name in ("save_model", "get_state_dict") and isinstance(node.func, cst.Attribute):
            self.saves.append((node, node.func.value, name))
            return
        if method_name(node) != "save_16bit_model" or not isinstance(node.func, cst.Attribute):
            return
        answer = self.facts.role_of(node.func.value, at=node)
        if answer is None or answer.role is not Role.ENGINE:
            return
        config = resolve_config(self.context, answer.engine)
        if config is None or config.zero_stage != 3:
            return
        if self._gathers(config.get("zero_optimization")) is False:
            found = evidence(self.context, answer.engine)
            self.report(node, self.message + found.suffix, related=found.related)

    @staticmethod
    def _gathers(section: Any, filled: bool = False) -> bool | None:
        """Whether the config gathers the 16-bit weights on save; `filled`: the reader (the Hugging Face Trainer,
        accelerate) replaces "auto" with accelerate's zero3_save_16bit_model, which a launcher may set (unknown)."""
        if not isinstance(section, dict):
            return None
        values = [section[key] for key in GATHER_KEYS if key in section]
        if not values:
            return False
        if any(v is UNKNOWN or (filled and v == "auto") for v in values):
            return None
        flags = [False if v == "auto" else lax_bool(v) for v in values]
        if any(f is None for f in flags):
            return None
        return any(flags)
