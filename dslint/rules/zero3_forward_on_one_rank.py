"""DSL446: the ZeRO-3 engine's forward run on one rank only (an evaluation or a sample under `if rank == 0`)."""

from __future__ import annotations

import libcst as cst

from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.project.config_link import resolve_config
from dslint.project.resolved_configs import ResolvedConfig
from dslint.rules.zero3_generation_on_one_rank import Zero3GenerationOnOneRank
from dslint.script.loop import loop_facts
from dslint.script.names import dotted_name
from dslint.script.one_rank import one_rank_conjunction
from dslint.script.walk import own_nodes

_STAGE3 = '{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 1}'


class Zero3ForwardOnOneRank(Zero3GenerationOnOneRank):
    """DSL426's one-rank regions, reporting the engine's own forward (`engine(x)`, `engine.module(x)`)."""

    code = "DSL446"
    slug = "zero3-forward-on-one-rank"
    message = "under ZeRO-3, a forward on one rank hangs: it gathers parameters from every rank"
    needs_engine = True
    required_tokens = (b"deepspeed", b"rank")
    alternative_tokens = ((b"deepspeed", b"main_process"), (b"deepspeed", b"process_zero"))
    call_shapes = ()  # the forward is a call of the engine itself (`engine(x)`): no method to look for
    docs = RuleDocs(
        what="""
            Flags a forward pass of the DeepSpeed engine (`engine(batch)`, `engine.module(batch)`,
            `engine.forward(batch)`) whose config is ZeRO stage 3 when it runs on one rank only: inside `if rank
            == 0:` (any comparison of a rank with literals, `dist.get_rank() == 0`, `args.local_rank in [-1,
            0]`), inside `with ...main_process_first():`, after an `if` that sends every other rank away (`if
            rank != 0: return`), or in a function a one-rank decorator wraps (`@rank_zero_only`); or a call
            there of a function or method of the module that runs such a forward (`self.evaluate()`, reported at
            the call). Typically a validation loop or a sample left to rank 0. Left alone: a script that every
            launch of the project starts as one process, and an engine whose stage is not 3 or not known.
            `generate` is DSL426's.
        """,
        why="""
            Under ZeRO-3 each rank holds only its partition of every parameter; before each submodule's forward,
            DeepSpeed's hook gathers the full parameters with an all-gather over the data-parallel group
            (`partitioned_param_coordinator.py: fetch_sub_module`). A forward on one rank issues those
            collectives alone: the other ranks never join (they are in the next training step, or at a
            barrier), and the run hangs until the collective times out. Below stage 3 the parameters are whole
            on every rank and a one-rank forward is fine.
        """,
        example="""
            engine, *_ = deepspeed.initialize(model=model, config=ds_config)  # ZeRO-3
            if dist.get_rank() == 0:
                with torch.no_grad():
                    val_loss = engine(val_batch).loss
        """,
        use_instead="""
            with torch.no_grad():
                val_loss = engine(val_batch).loss  # every rank runs the forward
            if dist.get_rank() == 0:
                print(val_loss.item())
        """,
    )
    valid = (
        Valid(
            f"""
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config={_STAGE3})
            val_loss = engine(val_batch).loss
            if args.local_rank == 0:
                print(val_loss)
            """
        ),
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 2}})
            if args.local_rank == 0:
                val_loss = engine(val_batch).loss
            """
        ),
        # a model of its own on rank 0, not the engine
        Valid(
            f"""
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config={_STAGE3})
            if args.local_rank == 0:
                score = reward_model(batch)
            """
        ),
    )
    invalid = (
        Invalid(
            f"""
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config={_STAGE3})
            if args.local_rank == 0:
                val_loss = engine(val_batch).loss
            """,
            lines=(5,),
        ),
        # the evaluation is a method that the training loop calls on rank 0 only
        Invalid(
            f"""
            import deepspeed
            class Trainer:
                def __init__(self, model):
                    self.engine, *_ = deepspeed.initialize(model=model, config={_STAGE3})

                def evaluate(self, batch):
                    return self.engine(batch).loss

                def train(self, loader):
                    for step, batch in enumerate(loader):
                        self.engine.backward(self.engine(batch).loss)
                        self.engine.step()
                        if step % 100 == 0 and self.engine.local_rank == 0:
                            print(self.evaluate(batch))
            """,
            lines=(15,),
        ),
        Invalid(
            """
            import deepspeed
            import torch.distributed as dist
            engine, *_ = deepspeed.initialize(model=model, config="ds_zero3.json")
            def validate(engine, loader):
                if dist.get_rank() != 0:
                    return None
                return [engine.module(batch) for batch in loader]
            validate(engine, val_loader)
            """,
            lines=(8,),
            files=(("run.sh", "deepspeed --num_gpus 2 train.py\n"), ("ds_zero3.json", _STAGE3)),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        super().visit_Module(node)
        self.forward_of: dict[cst.Call, cst.Call] = {}  # a candidate -> the engine forward it runs
        self.functions: dict[str, cst.FunctionDef] = {}  # the module's functions and methods, by name
        for statement in node.body:
            body = statement.body.body if isinstance(statement, cst.ClassDef) else (statement,)
            for member in body:
                if isinstance(member, cst.FunctionDef):
                    self.functions.setdefault(member.name.value, member)

    def visit_If(self, node: cst.If) -> None:
        if one_rank_conjunction(node.test):  # `if step % 100 == 0 and rank == 0:` runs on rank 0 only too
            self.regions.append(node.body)
        else:
            super().visit_If(node)

    def visit_Call(self, node: cst.Call) -> None:
        if loop_facts(self.facts).engine_of_forward(node) is not None:
            self.candidates.append(node)
            self.forward_of[node] = node
            return
        name = dotted_name(node.func)  # `self._evaluate()`, `validate(engine)`: a function of this module
        function = self.functions.get(name.removeprefix("self.")) if name is not None else None
        if function is not None and name is not None and name.count(".") <= int(name.startswith("self.")):
            forward = self._forward_in(function)
            if forward is not None:
                self.candidates.append(node)
                self.forward_of[node] = forward

    def _forward_in(self, function: cst.FunctionDef) -> cst.Call | None:
        """The first engine forward in `function`'s own body (not in functions defined inside it)."""
        loops = loop_facts(self.facts)
        return next(
            (n for n in own_nodes(function) if isinstance(n, cst.Call) and loops.engine_of_forward(n) is not None),
            None,
        )

    def _runs_trained_model(self, call: cst.Call) -> bool:
        return self._engine_zero3(call) is not None  # the forward of an engine that runs ZeRO-3

    def _zero3(self) -> ResolvedConfig | None:
        """The first ZeRO-3 config of an engine whose forward is a candidate."""
        return next((found for found in map(self._engine_zero3, self.candidates) if found is not None), None)

    def _engine_zero3(self, call: cst.Call) -> ResolvedConfig | None:
        answer = loop_facts(self.facts).engine_of_forward(self.forward_of.get(call, call))
        if answer is None:
            return None
        resolved = resolve_config(self.context, answer.engine)
        return resolved if resolved is not None and resolved.zero_stage == 3 else None
