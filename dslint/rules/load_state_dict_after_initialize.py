"""DSL203: `load_state_dict` into the model, the engine or `engine.module` after `deepspeed.initialize`."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Applicability, Related, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model import library
from dslint.model.engine import Engine
from dslint.project.engine_config import keeps_master_weights, zero_stage
from dslint.project.evidence import evidence
from dslint.script.facts import Role, method_name
from dslint.script.gathered import GatheredBlocks
from dslint.script.loop import loop_facts
from dslint.script.model_moves import handed_argument
from dslint.script.names import dotted_name, literally_enabled
from dslint.script.state_dict_loads import Rewrite, StateDictLoads

TARGETS = (Role.ENGINE_MODULE, Role.RAW_MODEL)  # the engine object itself: DSL209
# a project helper that loads a state dict into the module it is handed
_RESTORE = (
    (
        "checkpoints.py",
        "import torch\ndef restore(net, path):\n    net.load_state_dict(torch.load(path, map_location='cpu'))\n",
    ),
)
ZERO_INIT = library.ZERO_INIT.names


class LoadStateDictAfterInitialize(ScriptRule):
    code = "DSL203"
    slug = "load-state-dict-after-initialize"
    message = "load_state_dict after deepspeed.initialize fails or is undone; load before initialize"
    zero3_message = "load_state_dict after deepspeed.initialize fails under ZeRO-3 (empty partitions); load before it"
    master_weights_message = (
        "load_state_dict after deepspeed.initialize is undone by the next engine.step(); load before it"
    )
    optimizer_step_message = (
        "load_state_dict after deepspeed.initialize is undone by the next optimizer.step(); load before it"
    )
    zero_init_message = (
        "load_state_dict into a zero.Init model fails (parameters are empty); load inside GatheredParameters"
    )
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags `X.load_state_dict(...)` after `deepspeed.initialize`, where X is `engine.module` or the model
            that was given to `initialize` (a load into the engine object itself is DSL209). Not flagged: inside
            `with deepspeed.zero.GatheredParameters(params, modifier_rank=0):`, and when the config is known to
            run without ZeRO and in fp32 (then the module's parameters are the optimizer's own). An error when
            the config is known to fail (ZeRO-3) or to undo the load (ZeRO-1/2, fp16, bf16), when a step follows:
            `engine.step()` or `step()` of the optimizer `initialize` returned; a warning when it cannot be read.
            Also flagged, before or after `initialize`: a load into a model built inside an enabled
            `with deepspeed.zero.Init(...)` block (outside `GatheredParameters`), whose parameters are
            partitioned as they are created. A call of a project function (of any module) that loads a state
            dict into the model it is handed (`restore(model, path)` running `net.load_state_dict(...)`) counts
            as the load, reported at the call with the helper's load named (no rewrite offered).
        """,
        why="""
            Under ZeRO-3 the parameters are partitioned and `param.data` is empty on every rank, so the load
            fails: "size mismatch ... the shape in current model is torch.Size([0])" for every layer
            (measured). Where the load succeeds, the next `engine.step()` silently undoes it whenever the
            optimizer holds its own fp32 master copy of the weights: with bf16 (or fp16) at ZeRO stages 0, 1
            and 2, and with fp32 at ZeRO-1 and ZeRO-2. The load changes the module only, and the step copies the
            master weights back over it (measured: weights loaded after `initialize`, one step at lr 0, the
            loaded values gone, back to the initial weights, with bf16 at stages 0 to 2 and fp32 at stage 2,
            on the GPU and the CPU, and fp32 at stage 1 on the CPU). Only fp32 without ZeRO keeps the
            loaded weights (measured). Nothing fails: training just continues from the weights `initialize`
            saw. `engine.load_checkpoint` refreshes the master weights after loading; a load before
            `initialize` happens before they are made.
            The optimizer `initialize` returns is DeepSpeed's (ZeRO's or the bf16/fp16 wrapper), and its own
            `step()` copies the master weights back the same way (measured on the CPU, DeepSpeed 0.19.8, fp32:
            the load undone by `optimizer.step()` at ZeRO-1 and ZeRO-2, kept at stage 0 with a torch optimizer).
            `deepspeed.zero.Init` partitions each module as it is built, so a load into it fails with the same
            "size mismatch ... torch.Size([0])" inside the block and after it, before `initialize` (measured on
            the CPU, DeepSpeed 0.19.8); the same load inside `GatheredParameters(..., modifier_rank=0)` works
            and the loaded weights reach the engine.
        """,
        example="""
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds_config.json")
            state = torch.load(os.path.join(args.dir, tag, "mp_rank_00_model_states.pt"))
            engine.module.load_state_dict(state["module"])
        """,
        use_instead="""
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds_config.json")
            load_path, _ = engine.load_checkpoint(args.dir, tag=tag, load_module_only=True, load_optimizer_states=False)
            if load_path is None:
                raise FileNotFoundError(f"no DeepSpeed checkpoint in {args.dir}")

            # or, for a plain state-dict file:
            model.load_state_dict(torch.load("weights.pt", map_location="cpu"))
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds_config.json")
        """,
        fix_safety="""
            Two unsafe fixes. When the file lies in a DeepSpeed checkpoint directory (the path is built as
            `os.path.join(dir, tag, "mp_rank_00_model_states.pt")`, as a `Path` or an f-string of that shape,
            or joins the directory the script passes to `engine.save_checkpoint`), the `torch.load` and
            `load_state_dict` pair becomes `engine.load_checkpoint(dir, tag=tag, load_module_only=True,
            load_optimizer_states=False)` with its result checked (it returns `(None, None)` when there is no
            `latest` file and no tag). `load_optimizer_states=False` matters under ZeRO-3: with
            `load_module_only=True` alone, DeepSpeed 0.19.8 leaves the ZeRO-3 weights as they were (measured);
            with it, the weights are consolidated from the checkpoint's `latest` tag. Otherwise (a plain
            `torch.save` file, an HF `pytorch_model.bin`) the load moves before `initialize`, into the model
            given to it, with `map_location="cpu"`; a load under `if args.resume:` (ifs without `else` whose
            tests call nothing) keeps its guard, written again before `initialize`. The fixes are unsafe
            because code between `initialize` and the load may rely on the old weights, and a missing
            checkpoint now raises. No fix is offered when the loaded dict is used elsewhere, when the load is
            in another function than `initialize` or inside a loop, `with` or `if`/`else`, or when moved code
            would read names bound after `initialize`.
        """,
    )
    valid = (
        # a switch derived from a file (`use_deepspeed` when a config exists): the `else` arm is plain PyTorch
        Valid(
            """
            import os
            import deepspeed
            import torch
            def main(model, loader, folder):
                engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 1}})
                files = os.listdir(folder)
                use_deepspeed = os.path.exists(folder)
                if use_deepspeed:
                    engine.load_checkpoint(folder)
                else:
                    engine.module.load_state_dict(torch.load(os.path.join(folder, "model.bin"), map_location="cpu"))
                for batch in loader:
                    engine.backward(engine(batch))
                    engine.step()
            """
        ),
        # the same helper before initialize, or given another module
        Valid(
            """
            import deepspeed
            from checkpoints import restore
            def main(args, model, teacher):
                restore(model, args.weights)
                engine, optimizer, _, _ = deepspeed.initialize(model=model, config={"bf16": {"enabled": True}})
                restore(teacher, args.teacher_weights)
                for batch in args.loader:
                    engine.backward(engine(batch) + teacher(batch))
                    engine.step()
            """,
            files=_RESTORE,
        ),
        Valid(
            """
            import deepspeed, torch
            with deepspeed.zero.Init(config_dict_or_path="ds.json"):
                model = Net()
            with deepspeed.zero.GatheredParameters(list(model.parameters()), modifier_rank=0):
                model.load_state_dict(torch.load("w.pt", map_location="cpu"))
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """
        ),
        Valid(
            """
            import deepspeed, torch
            model.load_state_dict(torch.load("w.pt", map_location="cpu"))
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """
        ),
        Valid(
            """
            import deepspeed, torch
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            with deepspeed.zero.GatheredParameters(list(engine.module.parameters()), modifier_rank=0):
                engine.module.load_state_dict(state)
            """
        ),
        Valid(
            """
            import deepspeed, torch
            engine, *_ = deepspeed.initialize(model=model, config={"train_batch_size": 8})
            engine.module.load_state_dict(state)
            """
        ),
        Valid(
            """
            import deepspeed
            def evaluate(engine, state):
                engine.module.load_state_dict(state)
            def main():
                engine, *_ = deepspeed.initialize(model=model, config="ds.json")
                ema.load_state_dict(state)
                optimizer.load_state_dict(state)
            """
        ),
    )
    invalid = (
        # `has_deepspeed` says what the folder holds, not whether DeepSpeed runs: the `else` arm is the engine's too
        Invalid(
            """
            import os
            import deepspeed
            import torch
            def main(model, loader, folder):
                engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 1}})
                files = os.listdir(folder)
                has_deepspeed = "latest" in files
                if has_deepspeed:
                    engine.load_checkpoint(folder)
                else:
                    engine.module.load_state_dict(torch.load(os.path.join(folder, "model.bin"), map_location="cpu"))
                for batch in loader:
                    engine.backward(engine(batch))
                    engine.step()
            """,
            lines=(12,),
        ),
        # a project function loads the state into the model it is handed: reported at the call, naming the load
        Invalid(
            """
            import deepspeed
            from checkpoints import restore
            def main(args, model):
                engine, optimizer, _, _ = deepspeed.initialize(model=model, config={"bf16": {"enabled": True}})
                restore(model, args.weights)
                for batch in args.loader:
                    engine.backward(engine(batch))
                    engine.step()
            """,
            lines=(6,),
            files=_RESTORE,
        ),
        Invalid(
            """
            import deepspeed
            import torch
            def build(args, ds_config):
                with deepspeed.zero.Init(config_dict_or_path=ds_config):
                    model = Net()
                model.load_state_dict(torch.load(args.weights, map_location="cpu"))
                return deepspeed.initialize(model=model, config=ds_config)
            """,
            lines=(7,),
        ),
        Invalid(
            """
            import deepspeed
            import torch
            def main(args, model):
                engine, optimizer, _, _ = deepspeed.initialize(model=model, config={"bf16": {"enabled": True}})
                model.load_state_dict(torch.load(args.weights, map_location="cpu"))
                for batch in args.loader:
                    engine.backward(engine(batch))
                    optimizer.step()
            """,
            lines=(6,),
            fixed="""
            import deepspeed
            import torch
            def main(args, model):
                model.load_state_dict(torch.load(args.weights, map_location="cpu"))
                engine, optimizer, _, _ = deepspeed.initialize(model=model, config={"bf16": {"enabled": True}})
                for batch in args.loader:
                    engine.backward(engine(batch))
                    optimizer.step()
            """,
        ),
        Invalid(
            """
            import os
            import deepspeed
            import torch
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds.json")
            state = torch.load(os.path.join(args.dir, tag, "mp_rank_00_model_states.pt"))
            engine.module.load_state_dict(state["module"])
            """,
            lines=(7,),
            fixed="""
            import os
            import deepspeed
            import torch
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds.json")
            load_path, _ = engine.load_checkpoint(args.dir, tag=tag, load_module_only=True, load_optimizer_states=False)
            if load_path is None:
                raise FileNotFoundError(f"no DeepSpeed checkpoint in {args.dir}")
            """,
        ),
        Invalid(
            """
            import deepspeed
            import torch
            def main(args):
                model = Net()
                model_engine, optimizer, _, _ = deepspeed.initialize(
                    args=args, model=model, config={"zero_optimization": {"stage": 3}}
                )
                sd = torch.load(args.weights)
                model_engine.module.load_state_dict(sd, strict=False)
                for batch in loader:
                    model_engine.step()
            """,
            lines=(10,),
            fixed="""
            import deepspeed
            import torch
            def main(args):
                model = Net()
                sd = torch.load(args.weights, map_location="cpu")
                model.load_state_dict(sd, strict=False)
                model_engine, optimizer, _, _ = deepspeed.initialize(
                    args=args, model=model, config={"zero_optimization": {"stage": 3}}
                )
                for batch in loader:
                    model_engine.step()
            """,
        ),
        Invalid(
            """
            import deepspeed
            import torch
            class Trainer:
                def setup(self):
                    self.engine, _, _, _ = deepspeed.initialize(model=self.net, config=CFG)
                    self.engine.module.load_state_dict(torch.load(f"{self.out}/{self.tag}/mp_rank_00_model_states.pt")["module"])
                def resume(self, state):
                    if self.resuming:
                        self.engine.module.load_state_dict(state)
            """,
            lines=(7, 10),
            fixed="""
            import deepspeed
            import torch
            class Trainer:
                def setup(self):
                    self.engine, _, _, _ = deepspeed.initialize(model=self.net, config=CFG)
                    load_path, _ = self.engine.load_checkpoint(self.out, tag=self.tag, load_module_only=True, load_optimizer_states=False)
                    if load_path is None:
                        raise FileNotFoundError(f"no DeepSpeed checkpoint in {self.out}")
                def resume(self, state):
                    if self.resuming:
                        self.engine.module.load_state_dict(state)
            """,  # noqa: E501 (the fixer writes the call on one line)
        ),
        Invalid(
            """
            import deepspeed
            import torch
            model = Net()
            state = torch.load("init.pt", map_location="cpu")
            engine, *_ = deepspeed.initialize(model=model, config={"bf16": {"enabled": True}})
            engine.module.load_state_dict(state["model"])
            print(sorted(state))
            for batch in loader:
                engine.backward(engine(batch))
                engine.step()
            """,
            lines=(7,),
            fixed="""
            import deepspeed
            import torch
            model = Net()
            state = torch.load("init.pt", map_location="cpu")
            model.load_state_dict(state["model"])
            engine, *_ = deepspeed.initialize(model=model, config={"bf16": {"enabled": True}})
            print(sorted(state))
            for batch in loader:
                engine.backward(engine(batch))
                engine.step()
            """,
        ),
        Invalid(
            """
            import os
            import deepspeed, torch
            def main(a):
                e, *_ = deepspeed.initialize(model=Net(), config=cfg)
                e.save_checkpoint(a.out, tag=name)
                sd = torch.load(os.path.join(a.out, name, files[0]), map_location="cpu")
                e.module.load_state_dict(sd["module"])
            """,
            lines=(8,),
            fixed="""
            import os
            import deepspeed, torch
            def main(a):
                e, *_ = deepspeed.initialize(model=Net(), config=cfg)
                e.save_checkpoint(a.out, tag=name)
                load_path, _ = e.load_checkpoint(a.out, tag=name, load_module_only=True, load_optimizer_states=False)
                if load_path is None:
                    raise FileNotFoundError(f"no DeepSpeed checkpoint in {a.out}")
            """,
        ),
        Invalid(
            """
            import deepspeed
            import torch
            engine, *_ = deepspeed.initialize(model=model, config=args.ds_config)
            if args.resume:
                engine.module.load_state_dict(torch.load(args.resume, map_location="cpu"))
            """,
            lines=(6,),
            fixed="""
            import deepspeed
            import torch
            if args.resume:
                model.load_state_dict(torch.load(args.resume, map_location="cpu"))
            engine, *_ = deepspeed.initialize(model=model, config=args.ds_config)
            """,
        ),
        Invalid(
            """
            import deepspeed
            import torch
            def main(args, model):
                engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 2}})
                start_epoch = 0
                if args.resume:
                    checkpoint = torch.load(args.resume, map_location="cpu")
                    engine.module.load_state_dict(checkpoint["model"])
                    start_epoch = checkpoint["epoch"] + 1
                for epoch in range(start_epoch, args.epochs):
                    engine.step()
            """,
            lines=(9,),
            fixed="""
            import deepspeed
            import torch
            def main(args, model):
                if args.resume:
                    checkpoint = torch.load(args.resume, map_location="cpu")
                    model.load_state_dict(checkpoint["model"])
                engine, *_ = deepspeed.initialize(model=model, config={"zero_optimization": {"stage": 2}})
                start_epoch = 0
                if args.resume:
                    start_epoch = checkpoint["epoch"] + 1
                for epoch in range(start_epoch, args.epochs):
                    engine.step()
            """,
        ),
        Invalid(
            """
            import deepspeed
            import torch
            def main(args):
                engine, *_ = deepspeed.initialize(model=model, config=args.ds_config)
                for path in args.checkpoints:
                    engine.module.load_state_dict(torch.load(path, map_location="cpu"))
                    engine.step()
                if args.resume or engine.global_rank == 0:
                    engine.module.load_state_dict(torch.load(args.resume, map_location="cpu"))
                else:
                    print("fresh start")
            """,
            lines=(7, 10),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.loop_nodes: list[cst.CSTNode] = []
        self.gathered = GatheredBlocks(self.facts)
        self.blocks: dict[cst.CSTNode, cst.CSTNode] = {line: node for line in node.body}
        # loads to report: the call, the module loaded into, the helper's load when a project function loads it
        self.pending: list[tuple[cst.Call, cst.BaseExpression, Related | None]] = []
        self.partitioning: list[cst.With] = []  # `with deepspeed.zero.Init(...)` blocks (enabled)
        self.zero_init_loads: list[cst.Call] = []

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        for line in node.body:
            self.blocks[line] = node

    def visit_With(self, node: cst.With) -> None:
        self.gathered.enter(node)
        for item in node.items:
            call = item.item
            if isinstance(call, cst.Call) and self.facts.qualified(call.func) in ZERO_INIT and literally_enabled(call):
                self.partitioning.append(node)

    def leave_With(self, original_node: cst.With) -> None:
        self.gathered.leave(original_node)

    def visit_Call(self, node: cst.Call) -> None:
        if self.gathered.inside:
            return
        if method_name(node) != "load_state_dict":
            self._helper_load(node)
            return
        assert isinstance(node.func, cst.Attribute)
        if self._built_partitioned(node.func.value, node):
            self.zero_init_loads.append(node)
            return
        self._consider(node, node.func.value)

    def _helper_load(self, node: cst.Call) -> None:
        """A call of a project function that loads a state dict into its argument (`restore(model, path)`:
        `ProjectFacts.loading_calls`), reported at the call with the helper's load as a related location."""
        project = self.facts.project
        loaded, argument = handed_argument(self.facts, node, project.loading_calls if project is not None else {})
        if loaded is not None and argument is not None:
            self._consider(node, argument, loaded.where)

    def _consider(self, node: cst.Call, target: cst.BaseExpression, helper: Related | None = None) -> None:
        facts = self.facts
        answer = facts.role_of(target, at=node)
        if answer is None or answer.role not in TARGETS:
            return
        init = answer.init  # None for an engine from elsewhere, made before this code runs
        same_scope = init is not None and facts.scope_at(node) is init.scope
        if init is not None and same_scope and facts.start(node) < init.end:
            return
        if answer.role is Role.RAW_MODEL and not same_scope:
            return  # another function may run before initialize
        self.pending.append((node, target, helper))

    def _built_partitioned(self, target: cst.BaseExpression, at: cst.CSTNode) -> bool:
        """Whether `target` (a name or `self.x`) was last bound, in this scope, inside an enabled
        `with deepspeed.zero.Init(...)` block: a module built there has partitioned (empty) parameters."""
        key = dotted_name(target)
        if key is None or not self.partitioning:
            return False
        facts = self.facts
        binding = facts.binding_at(key, facts.scope_at(at), facts.start(at), on_path=True)
        if binding is None or binding.statement is None or binding.value is None:
            return False
        where = facts.start(binding.statement)
        return any(facts.start(block) <= where < facts.end(block) for block in self.partitioning)

    def leave_Module(self, original_node: cst.Module) -> None:
        for node in self.zero_init_loads:
            self.report(node, self.zero_init_message)
        # Rewrites need every block of the file, so they are built once the traversal is done.
        loads = StateDictLoads(self.context, self.blocks)
        for node, target, helper in self.pending:
            answer = self.facts.role_of(target, at=node)
            assert answer is not None
            masters = keeps_master_weights(self.context, answer.engine)
            if masters is False:
                continue
            stage = zero_stage(self.context, answer.engine)
            severity = Severity.ERROR
            if stage == 3:
                message = self.zero3_message
            elif masters:
                steps = self._steps_that_may_follow(answer.engine, node)
                if not steps:
                    continue  # loaded for evaluation after training: no step writes the master copy back
                engine_steps = loop_facts(self.facts).engine_step_calls(answer.engine, self.context.module)
                message = (
                    self.master_weights_message
                    if any(step in engine_steps for step in steps)
                    else self.optimizer_step_message
                )
            else:
                message, severity = self.message, Severity.WARNING  # the config cannot be read
            rewrite = self._rewrite(loads, node) if helper is None else None
            found = evidence(self.context, answer.engine)
            self.report(
                node,
                message + found.suffix,
                related=(*found.related, *((helper,) if helper is not None else ())),
                edits=rewrite.edits if rewrite else (),
                applicability=Applicability.UNSAFE,
                fix_message=rewrite.message if rewrite else "",
                severity=severity,
            )

    def _steps_that_may_follow(self, engine: Engine, node: cst.Call) -> list[cst.Call]:
        """Whether an `engine.step()` of `engine` (or a `step()` of the optimizer its initialize returned) comes after
        `node` in the file, or shares a loop with it."""
        facts = self.facts
        at = facts.start(node)
        loops = [loop for loop in self.loop_nodes if facts.start(loop) <= at < facts.end(loop)]
        # the optimizer initialize returned undoes the load just as engine.step() does (measured: ZeRO-1 and -2)
        steps = loop_facts(facts).engine_step_calls(engine, self.context.module, (Role.ENGINE, Role.OPTIMIZER))
        return [
            step
            for step in steps
            if facts.start(step) > at or any(facts.start(loop) <= facts.start(step) < facts.end(loop) for loop in loops)
        ]

    def visit_For(self, node: cst.For) -> None:
        self.loop_nodes.append(node)

    def visit_While(self, node: cst.While) -> None:
        self.loop_nodes.append(node)

    def _rewrite(self, loads: StateDictLoads, node: cst.Call) -> Rewrite | None:
        assert isinstance(node.func, cst.Attribute)
        answer = self.facts.role_of(node.func.value, at=node)
        if answer is None:
            return None
        state = loads.loaded_state(node)
        if state is None:
            return None
        return loads.to_load_checkpoint(node, answer, state) or loads.before_initialize(node, answer, state)
