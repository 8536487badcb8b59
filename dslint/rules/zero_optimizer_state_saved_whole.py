"""DSL211: `torch.save` of the ZeRO optimizer's `state_dict()`, which holds only this rank's partition."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.engine import Engine
from dslint.project.accelerate_deepspeed import accelerate_stage
from dslint.project.engine_config import zero_stage
from dslint.project.evidence import evidence
from dslint.script.accelerate_prepared import prepared_argument
from dslint.script.facts import BindingKind, Role
from dslint.script.hf_trainers import TrainerNames
from dslint.script.loop import loop_facts
from dslint.script.model_moves import handed_argument
from dslint.script.names import dotted_name
from dslint.script.saved_states import saved_state_dict_calls

TORCH_SAVE = "torch.save"


class ZeroOptimizerStateSavedWhole(ScriptRule):
    code = "DSL211"
    slug = "zero-optimizer-state-saved-whole"
    message = "under ZeRO this optimizer state_dict() is one rank's partition; use engine.save_checkpoint(dir)"
    template = "under ZeRO-{stage} this optimizer state_dict() is one rank's partition; use engine.save_checkpoint(dir)"
    helper_template = "ZeRO-{stage}: this call saves optimizer state_dict() ({where}), one rank's; use save_checkpoint"
    accelerate_template = (
        "ZeRO-{stage}: this optimizer state_dict() is one rank's partition; use accelerator.save_state"
    )
    severity = Severity.ERROR
    required_tokens = (b"deepspeed", b"initialize", b"state_dict")
    # the optimizer accelerate prepared for the engine it built
    runs_without_engine_on = ((b"state_dict", b"prepare", b"Accelerator"),)
    # initialize's optimizer handed to a project function that torch-saves its state_dict()
    runs_on_state_saving_helpers = True
    call_shapes = (
        Shape(calls=(TORCH_SAVE,), engine=True),
        Shape(project_saves=True, engine=True),
        Shape(calls=(TORCH_SAVE,), words=(b"prepare", b"Accelerator")),
    )
    docs = RuleDocs(
        what="""
            Flags `torch.save(optimizer.state_dict(), path)` (also inside a dict or list, or through a name bound
            to one in the same function) after `deepspeed.initialize`, where `optimizer` is the optimizer
            `initialize` returned, or the one given to it (`optimizer=`: ZeRO puts its flat partition in that
            optimizer's parameter groups), and the engine's config is known to run ZeRO stage 1, 2 or 3. A path
            that names the rank (`f"optim_rank{rank}.pt"`, `args.local_rank` in it: a file per rank, which can be
            loaded back by the same ranks) and a project whose every launch starts one process (one partition is
            the whole state) are left alone, and so is a config without ZeRO or one whose stage is not known.
            Where accelerate runs DeepSpeed with ZeRO (its `DeepSpeedPlugin`, stage 2 unless told, or the YAML of
            every `accelerate launch`), the optimizer `accelerator.prepare` returned is flagged the same way. A call
            handing initialize's optimizer to a project function that torch-saves its `state_dict()` (in a dict,
            or handed on to a function saving what it gets; not to a path naming the rank) is flagged at the call,
            the save related: the function may be right for its other callers.
        """,
        why="""
            Under ZeRO the optimizer `initialize` returns partitions the optimizer state across the
            data-parallel ranks: `DeepSpeedZeroOptimizer.state_dict()` (`runtime/zero/stage_1_and_2.py`, and
            stage 3's in `stage3.py`, DeepSpeed 0.19.8) returns the loss scaler, this rank's slice of the fp32
            master weights (`single_partition_of_fp32_groups`) and the base optimizer's state for that slice
            only. Saved by rank 0 alone, the file lacks the other ranks' slices; saved by every rank to one path,
            it holds whichever rank wrote last. Either way it cannot restore the run. `engine.save_checkpoint(dir)`
            writes each rank's optimizer slice to a file of its own (`zero_pp_rank_N_..._optim_states.pt`) beside
            the module's state, and `engine.load_checkpoint(dir)` reads them back.
        """,
        example="""
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds_zero2.json")
            ...
            torch.save({"model": engine.module.state_dict(), "optimizer": optimizer.state_dict()}, "last.pt")
        """,
        use_instead="""
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds_zero2.json")
            ...
            engine.save_checkpoint("checkpoints")
        """,
    )
    valid = (
        Valid(  # accelerate without DeepSpeed: a whole torch optimizer
            """
            import torch
            from accelerate import Accelerator
            accelerator = Accelerator()
            model, optimizer = accelerator.prepare(model, optimizer)
            if accelerator.is_main_process:
                torch.save(optimizer.state_dict(), "optimizer.pt")
            """
        ),
        # no ZeRO: the optimizer's state is whole on every rank
        Valid(
            """
            import deepspeed, torch
            engine, optimizer, _, _ = deepspeed.initialize(model=net, config={"train_batch_size": 8})
            torch.save(optimizer.state_dict(), "optim.pt")
            """
        ),
        # a file per rank; and the client optimizer saved before initialize
        Valid(
            """
            import deepspeed, torch
            client = torch.optim.AdamW(net.parameters())
            torch.save(client.state_dict(), "warmup_optim.pt")
            cfg = {"train_batch_size": 8, "zero_optimization": {"stage": 2}}
            engine, optimizer, _, _ = deepspeed.initialize(model=net, optimizer=client, config=cfg)
            torch.save(optimizer.state_dict(), f"optim_rank{engine.global_rank}.pt")
            """
        ),
        # the stage comes from the command line: not known
        Valid(
            """
            import deepspeed, torch
            engine, optimizer, _, _ = deepspeed.initialize(args=args, model=net)
            torch.save({"optimizer": optimizer.state_dict()}, "last.pt")
            """
        ),
    )
    invalid = (
        Invalid(  # accelerate's DeepSpeedPlugin runs ZeRO-2 by default: the prepared optimizer wraps a ZeRO one
            """
            import torch
            from accelerate import Accelerator, DeepSpeedPlugin
            accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin())
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
            model, optimizer = accelerator.prepare(model, optimizer)
            if accelerator.is_main_process:
                torch.save(optimizer.state_dict(), "optimizer.pt")
            """,
            lines=(8,),
        ),
        Invalid(
            """
            import deepspeed, torch
            cfg = {"train_batch_size": 8, "zero_optimization": {"stage": 2}}
            client = torch.optim.AdamW(net.parameters())
            engine, optimizer, _, _ = deepspeed.initialize(model=net, optimizer=client, config=cfg)
            for epoch in range(3):
                state = {"model": engine.module.state_dict(), "optimizer": optimizer.state_dict()}
                torch.save({"opt": client.state_dict()}, "client.pt")
                if engine.global_rank == 0:
                    torch.save(state, "last.pt")
                torch.save(optimizer.state_dict(), "optimizer.pt")
            """,
            lines=(8, 10, 11),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.loop = loop_facts(self.facts)
        self.stages: dict[int, int | None] = {}
        self.trainers = TrainerNames(self.context)
        self.prepared_saves: list[cst.Call] = []  # saves of the optimizer accelerate prepared

    def visit_Assign(self, node: cst.Assign) -> None:
        self.trainers.consider_assign(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        """The optimizer `accelerator.prepare` returned, where accelerate runs DeepSpeed with ZeRO: a wrapper of the
        ZeRO optimizer, whose `state_dict()` is this rank's partition."""
        found = accelerate_stage(self.context) if self.prepared_saves and not self._one_process() else None
        if found is None or found[0] < 1:
            return
        stage, where, related = found
        for node in self.prepared_saves:
            self.report(node, f"{self.accelerate_template.format(stage=stage)} ({where})", related=related)

    def visit_Call(self, node: cst.Call) -> None:
        self._saving_helper(node)
        if self.facts.qualified(node.func) != TORCH_SAVE or not node.args:
            return
        saved = node.args[0]
        if saved.star or (saved.keyword is not None and saved.keyword.value != "obj"):
            return
        path = node.args[1].value if len(node.args) > 1 and node.args[1].keyword is None else None
        if path is not None and "rank" in self.context.code(path).lower():
            return  # a file per rank
        engine = self._saved_optimizer_state(saved.value, node)
        if engine is None:
            if any(
                isinstance(call.func, cst.Attribute) and self._prepared_optimizer(call.func.value, call)
                for call in saved_state_dict_calls(self.facts, saved.value, node)
            ):
                self.prepared_saves.append(node)
            return
        stage = self._stage(engine)
        if stage is None or stage < 1 or self._one_process():
            return
        found = evidence(self.context, engine)
        self.report(node, self.template.format(stage=stage) + found.suffix, related=found.related)

    def _saving_helper(self, node: cst.Call) -> None:
        """A call handing initialize's optimizer to a project function that torch-saves its `state_dict()`
        (`ProjectFacts.state_saving_helpers`): reported at the call (the helper may be right for other callers),
        the save related."""
        project = self.facts.project
        if project is None or not project.state_saving_helpers:
            return
        handed, argument = handed_argument(self.facts, node, project.state_saving_helpers)
        answer = self.facts.role_of(argument, at=node) if handed is not None and argument is not None else None
        if answer is None or answer.role not in (Role.OPTIMIZER, Role.CLIENT_OPTIMIZER) or answer.engine is None:
            return
        stage = self._stage(answer.engine) if self.loop.after_initialize(answer.engine, node) else None
        if handed is None or stage is None or stage < 1 or self._one_process():
            return
        found = evidence(self.context, answer.engine)
        where = f"{handed.where.path}:{handed.where.line}"
        message = self.helper_template.format(stage=stage, where=where)
        self.report(node, message + found.suffix, related=(*found.related, handed.where))

    def _prepared_optimizer(self, value: cst.BaseExpression, at: cst.Call) -> bool:
        """`value` holds what `accelerator.prepare` returned for a torch optimizer built in the file (`opt =
        torch.optim.AdamW(...)` handed to it), not a model, a loader or a scheduler."""
        handed = prepared_argument(self.facts, self.trainers, value, at)
        if handed is None:
            return False
        key = dotted_name(handed)
        binding = self.facts.binding_at(key, self.facts.scope_at(at), self.facts.start(handed)) if key else None
        built = binding.value if binding is not None and binding.kind is BindingKind.OTHER else handed
        name = self.facts.qualified(built.func) if isinstance(built, cst.Call) else None
        return name is not None and name.startswith("torch.optim.") and ".lr_scheduler." not in name

    def _stage(self, engine: Engine) -> int | None:
        if id(engine) not in self.stages:
            self.stages[id(engine)] = zero_stage(self.context, engine)
        return self.stages[id(engine)]

    def _one_process(self) -> bool:
        """Every launch of the script the project knows starts one process: one partition is the whole state."""
        project = self.facts.project
        launches = project.launches if project is not None else ()
        return bool(launches) and all(launch.ranks == 1 for launch in launches)

    def _saved_optimizer_state(self, value: cst.BaseExpression, at: cst.Call) -> Engine | None:
        """The engine whose optimizer's `state_dict()` `value` is or holds (a dict or list of it, or a name bound
        to one in the same function), called after initialize."""
        facts = self.facts
        for call in saved_state_dict_calls(facts, value, at):
            assert isinstance(call.func, cst.Attribute)
            answer = facts.role_of(call.func.value, at=call)
            if answer is None or answer.role not in (Role.OPTIMIZER, Role.CLIENT_OPTIMIZER) or answer.engine is None:
                continue
            if self.loop.after_initialize(answer.engine, call):
                return answer.engine
        return None
