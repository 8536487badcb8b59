"""DSL448: a Hugging Face Trainer's `train`, `evaluate` or `predict` run on one rank only under DeepSpeed."""

from __future__ import annotations

import libcst as cst

from dslint.framework.catalog import Shape
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.config_link import accelerate_runs, trainer_configs
from dslint.project.resolved_configs import ResolvedConfig
from dslint.rules.zero3_generation_on_one_rank import Zero3GenerationOnOneRank
from dslint.script.facts import method_name
from dslint.script.hf_trainers import TrainerNames
from dslint.script.one_rank import one_rank_conjunction

TRAINER_LOOPS = frozenset({"train", "evaluate", "predict"})

_SCRIPT = """\
from transformers import Trainer, TrainingArguments

args = TrainingArguments(output_dir="out", deepspeed="ds_zero2.json")
trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=dev)
trainer.train()
{tail}
"""
_PROJECT = (
    ("run.sh", "torchrun --nproc_per_node 4 train.py\n"),
    ("ds_zero2.json", '{"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": "auto"}\n'),
)


class TrainerLoopOnOneRank(Zero3GenerationOnOneRank):
    """DSL426's one-rank regions, reporting a Trainer's training or evaluation loop."""

    code = "DSL448"
    slug = "trainer-loop-on-one-rank"
    message = "under DeepSpeed, a Trainer loop on one rank hangs: every rank must run it"
    needs_engine = False
    config_words = "DeepSpeed config"
    required_tokens = (b"Trainer", b"rank")
    alternative_tokens = ((b"Trainer", b"main_process"), (b"Trainer", b"process_zero"))
    # a loop method in a one-rank block, where a DeepSpeed config may reach the Trainer (`_zero3`)
    call_shapes = (Shape(methods=tuple(sorted(TRAINER_LOOPS)), one_rank=True, configured=True),)
    docs = RuleDocs(
        what="""
            Flags `trainer.train()`, `trainer.evaluate()` or `trainer.predict()` on a Hugging Face Trainer
            (`transformers.Trainer`, TRL's trainers, a class of the file deriving from one) that runs with a
            DeepSpeed config (`TrainingArguments(deepspeed=...)`, `--deepspeed` from its launchers, an accelerate
            DeepSpeed launch) when the call runs on one rank only: under `if trainer.is_world_process_zero():`,
            `if local_rank == 0:`, `if accelerator.is_main_process:` (alone or in an `and`), after an `if` that
            sends the other ranks away, or in a function a one-rank decorator wraps. Left alone: a script that
            every launch of the project starts as one process.
        """,
        why="""
            Under a launch of several processes the Trainer is distributed: `train()` builds the DeepSpeed
            engine (`deepspeed.initialize` and the first all-reduce or all-gather join every rank), and
            `evaluate()`/`predict()` shard the evaluation set across the ranks and gather the losses and
            predictions from all of them (`gather_for_metrics`; under ZeRO-3 each forward also gathers the
            parameters). Called on one rank, those collectives wait for ranks that never come: the run hangs
            until the collective times out. Run the loop on every rank and keep only the printing or saving
            of results to the main process.
        """,
        example="""
            trainer.train()
            if trainer.is_world_process_zero():
                metrics = trainer.evaluate()
        """,
        use_instead="""
            trainer.train()
            metrics = trainer.evaluate()  # every rank evaluates its shard
            if trainer.is_world_process_zero():
                print(metrics)
        """,
    )
    valid = (
        Valid(
            _SCRIPT.format(tail="metrics = trainer.evaluate()\nif trainer.is_world_process_zero():\n    print(1)"),
            files=_PROJECT,
        ),
        # one process in all: rank 0 is every rank
        Valid(
            _SCRIPT.format(tail="if trainer.is_world_process_zero():\n    metrics = trainer.evaluate()"),
            files=(("run.sh", "deepspeed --num_gpus 1 train.py\n"), _PROJECT[1]),
        ),
        # no DeepSpeed: plain DDP is not this rule's
        Valid(
            _SCRIPT.format(tail="if trainer.is_world_process_zero():\n    metrics = trainer.evaluate()").replace(
                ', deepspeed="ds_zero2.json"', ""
            ),
            files=_PROJECT,
        ),
    )
    invalid = (
        Invalid(
            _SCRIPT.format(tail="if trainer.is_world_process_zero():\n    metrics = trainer.evaluate()"),
            lines=(7,),
            files=_PROJECT,
        ),
        Invalid(
            _SCRIPT.replace("trainer.train()\n", "if local_rank == 0 and do_train:\n    trainer.train()\n").format(
                tail=""
            ),
            lines=(6,),
            files=_PROJECT,
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        super().visit_Module(node)
        self.trainers = TrainerNames(self.context)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.trainers.consider_class(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.trainers.consider_assign(node)

    def visit_If(self, node: cst.If) -> None:
        if one_rank_conjunction(node.test, self.facts):
            self.regions.append(node.body)

    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) in TRAINER_LOOPS:
            self.candidates.append(node)

    def _message_for(self, call: cst.Call) -> str:
        method = method_name(call)
        return f"under DeepSpeed, trainer.{method}() on one rank hangs: every rank must run it"

    def _runs_trained_model(self, call: cst.Call) -> bool:
        assert isinstance(call.func, cst.Attribute)
        return self.trainers.holds_trainer(call.func.value)

    def _zero3(self) -> ResolvedConfig | None:
        """The DeepSpeed config the file's Trainer runs with, of any stage (an accelerate DeepSpeed launch too)."""
        found = trainer_configs(self.context)
        if found:
            return found[0]
        runs = accelerate_runs(self.context)
        return runs[0].config if runs and runs[0].config is not None else None
