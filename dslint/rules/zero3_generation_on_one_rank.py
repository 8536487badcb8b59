"""DSL426: a ZeRO-3 model's `generate` run on one rank only (under `if rank == 0`, in `main_process_first`, in a
function a one-rank decorator wraps), directly or through a `transformers.pipeline` over the model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.project.config_link import resolve_config, trainer_configs
from dslint.project.resolved_configs import ResolvedConfig
from dslint.script.facts import Role
from dslint.script.names import dotted_name
from dslint.script.one_rank import (
    one_process_launches,
    one_rank_decorators,
    one_rank_first,
    one_rank_flag,
    one_rank_test,
    rest_on_one_rank,
    runs_on_one_rank,
    within_one_rank,
)

PIPELINE = "transformers.pipeline"
_STAGE3 = '{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 1}'


class Zero3GenerationOnOneRank(ScriptRule):
    code = "DSL426"
    slug = "zero3-generation-on-one-rank"
    message = "under ZeRO-3, generate on one rank hangs: its forward gathers parameters from every rank"
    pipeline_message = "under ZeRO-3, a pipeline of the model on one rank hangs: its forward gathers from every rank"
    severity = Severity.ERROR
    needs_engine = False
    config_words = "ZeRO-3"  # what the config found is, in the finding (`(ZeRO-3 from ds.json)`)
    # `generate`, a way DeepSpeed reaches the file, and a one-rank test's word (`script/one_rank.py`)
    required_tokens: ClassVar[tuple[bytes, ...]] = (b"generate", b"deepspeed", b"rank")
    alternative_tokens: ClassVar[tuple[tuple[bytes, ...], ...]] = tuple(
        (generation, source, test)
        for generation in (b"generate", b"pipeline")
        for source in (b"deepspeed", b"TrainingArguments", b"HfArgumentParser")
        for test in (b"rank", b"main_process", b"process_zero", b"should_save")
    )[1:]
    # in a one-rank block (`visit_If`, `visit_With`), where ZeRO-3 can come from (`_zero3`: the file's initialize,
    # a Trainer's config)
    call_shapes: ClassVar[tuple[Shape, ...]] = (
        Shape(methods=("generate",), one_rank=True, engine=True),
        Shape(methods=("generate",), one_rank=True, configured=True),
        Shape(calls=(PIPELINE,), engine=True),
        Shape(calls=(PIPELINE,), configured=True),
    )
    docs = RuleDocs(
        what="""
            Flags `model.generate(...)` on the model trained with a ZeRO-3 config (the model given to
            `deepspeed.initialize` or to a trainer as `model=`, the engine, `trainer.model`) when it runs on one
            rank only: inside `if rank == 0:` (any comparison of a rank with literals: `args.local_rank in
            [-1, 0]`, `dist.get_rank() == 0`), under `if accelerator.is_main_process:` or
            `trainer.is_world_process_zero()`, inside `with training_args.main_process_first():`, after an `if`
            that sends every other rank away (`if rank != 0: return`, `if not accelerator.is_main_process:
            continue`: the rest of that block), or in a function whose decorator runs it on one rank
            (`@rank_zero_only`). Left alone: a script that every launch the project holds starts as one process
            (`deepspeed --num_gpus=1`). A `transformers.pipeline(...)` built there
            over that model counts as its generate. The stage
            comes from the file's `initialize` or Trainer config, or the `--deepspeed` config its launchers give.
        """,
        why="""
            Under ZeRO-3 every parameter is partitioned across the ranks; before each submodule's forward,
            DeepSpeed's hook gathers its parameters with a collective over the data-parallel group
            (`partitioned_param_coordinator.py: fetch_sub_module`, `partition_parameters.py`:
            `all_gather_coalesced`). A generate on one rank issues those collectives alone: the other ranks
            never join (or wait at `main_process_first`'s barrier), and the run hangs until the collective
            times out.
        """,
        example="""
            engine, *_ = deepspeed.initialize(model=model, config=ds_config)  # ZeRO-3
            if args.local_rank == 0:
                sample = model.generate(**inputs)
        """,
        use_instead="""
            engine, *_ = deepspeed.initialize(model=model, config=ds_config)  # ZeRO-3
            sample = model.generate(**inputs, synced_gpus=True)  # every rank generates
            if args.local_rank == 0:
                print(tokenizer.decode(sample[0]))
        """,
    )
    valid: ClassVar[Sequence[Valid]] = (
        # every rank builds and runs the pipeline; rank 0 only prints
        Valid(
            f"""
            import deepspeed
            from transformers import pipeline
            engine, *_ = deepspeed.initialize(model=model, config={_STAGE3})
            generator = pipeline("text-generation", model=engine.module, tokenizer=tokenizer)
            answers = generator(prompts, max_new_tokens=10)
            if global_rank == 0:
                print(answers)
            """
        ),
        Valid(
            f"""
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config={_STAGE3})
            sample = model.generate(**inputs, synced_gpus=True)
            if args.local_rank == 0:
                print(sample)
            """
        ),
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 2}})
            if args.local_rank == 0:
                sample = model.generate(**inputs)
            """
        ),
        # Every rank samples; only the printing is left to rank 0 (the others leave after the sample).
        Valid(
            f"""
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config={_STAGE3})
            def sample(engine, rank):
                out = engine.module.generate(**inputs)
                if rank != 0:
                    return out
                print(out)
                return out
            """
        ),
    )
    invalid: ClassVar[Sequence[Invalid]] = (
        # The other ranks leave the function before the sample: the rest of it runs on rank 0 only.
        Invalid(
            f"""
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config={_STAGE3})
            def sample(engine, rank):
                if rank != 0:
                    return None
                print("sampling")
                return engine.module.generate(**inputs)
            """,
            lines=(8,),
        ),
        Invalid(
            f"""
            import deepspeed
            from transformers import pipeline
            engine, *_ = deepspeed.initialize(model=model, config={_STAGE3})
            if global_rank == 0:
                model = engine.module
                generator = pipeline("text-generation", model=model, tokenizer=tokenizer, device="cuda:0")
                print(generator(prompts, max_new_tokens=10))
            """,
            lines=(7,),
        ),
        Invalid(
            f"""
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config={_STAGE3})
            if args.local_rank in [-1, 0]:
                sample = model.generate(**inputs)
            """,
            lines=(5,),
        ),
        Invalid(
            """
            from transformers import Trainer, TrainingArguments
            args = TrainingArguments(output_dir="out", deepspeed={"zero_optimization": {"stage": 3}})
            trainer = Trainer(model=model, args=args)
            trainer.train()
            with args.main_process_first(desc="sample"):
                sample = trainer.model.generate(**inputs)
            """,
            lines=(7,),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.regions: list[cst.CSTNode] = []  # bodies that run on one rank only
        self.rests: list[tuple[cst.CSTNode, cst.CSTNode]] = []  # statements after the other ranks left
        self.candidates: list[cst.Call] = []
        self.pipelines: list[tuple[cst.Call, cst.BaseExpression]] = []  # `pipeline(..., model=m)` and its m
        self.models: set[str] = set()
        self.one_rank_decorators = one_rank_decorators(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.decorators and runs_on_one_rank(node, self.one_rank_decorators):
            self.regions.append(node.body)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        rest = rest_on_one_rank(node, self.facts)
        if rest is not None:
            self.rests.append(rest)

    def visit_If(self, node: cst.If) -> None:
        if one_rank_test(node.test) or one_rank_flag(self.facts, node.test):
            self.regions.append(node.body)

    def visit_With(self, node: cst.With) -> None:
        if one_rank_first(node):
            self.regions.append(node.body)

    def visit_Call(self, node: cst.Call) -> None:
        for argument in node.args:
            if argument.keyword is not None and argument.keyword.value == "model":
                name = dotted_name(argument.value)
                if name is not None:
                    self.models.add(name)
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "generate":
            self.candidates.append(node)  # `synced_gpus=True` does not help: the other ranks never call generate
        elif self.facts.qualified(func) == PIPELINE:
            model = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "model"), None)
            if model is not None:
                self.pipelines.append((node, model))

    def leave_Module(self, original_node: cst.Module) -> None:
        if not (self.candidates or self.pipelines) or not (self.regions or self.rests):
            return
        if one_process_launches(self.facts):
            return  # the project launches it as one process: rank 0 is every rank
        config = self._zero3()
        if config is None:
            return
        where = f" ({self.config_words} from {config.source})" if config.path is not None else ""
        for call in self.candidates:
            if within_one_rank(self.facts, call, self.regions, self.rests) and self._runs_trained_model(call):
                self.report(call, self._message_for(call) + where, related=config.via)
        for call, model in self.pipelines:
            if within_one_rank(self.facts, call, self.regions, self.rests) and self._trained_model(model, call):
                self.report(call, self.pipeline_message + where, related=config.via)

    def _message_for(self, call: cst.Call) -> str:
        return self.message

    def _runs_trained_model(self, call: cst.Call) -> bool:
        """Whether the candidate call runs the trained model (`model.generate(...)` here)."""
        assert isinstance(call.func, cst.Attribute)
        return self._trained_model(call.func.value, call)

    def _trained_model(self, receiver: cst.BaseExpression, call: cst.Call) -> bool:
        name = dotted_name(receiver)
        if name is not None and (name in self.models or name.rsplit(".", 1)[-1] in ("model", "module")):
            return True
        answer = self.facts.role_of(receiver, at=call)
        return answer is not None and answer.role in (Role.ENGINE, Role.ENGINE_MODULE, Role.RAW_MODEL)

    def _zero3(self) -> ResolvedConfig | None:
        """The first ZeRO-3 config the file's engine or trainer runs with, None when none is."""
        for init in self.facts.initialize_calls:
            resolved = resolve_config(self.context, init.engine)
            if resolved is not None and resolved.zero_stage == 3:
                return resolved
        return next((resolved for resolved in trainer_configs(self.context) if resolved.zero_stage == 3), None)
