"""DSL428: a save that every rank must join (`engine.save_checkpoint`, accelerate's `save_state` under DeepSpeed,
the ZeRO-3 gathering saves) called under `if rank == 0:` or another one-rank test."""

from __future__ import annotations

import libcst as cst

from dslint.config.gather import gathers_16bit
from dslint.diagnostics import Related, Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.bindings import BindingKind
from dslint.model.engine import Kind
from dslint.project.accelerate_deepspeed import trainer_zero3
from dslint.project.config_link import accelerate_runs, resolve_config
from dslint.project.evidence import evidence
from dslint.project.resolved_configs import AccelerateRun
from dslint.project.shipped_accelerate import shipped_accelerate_runs
from dslint.script.fabric import FabricNames
from dslint.script.facts import Role, RoleAnswer, method_name
from dslint.script.hf_trainers import TrainerNames
from dslint.script.names import dotted_name
from dslint.script.one_rank import (
    one_process_launches,
    one_rank_conjunction,
    one_rank_decorators,
    rest_on_one_rank,
    runs_on_one_rank,
    within_one_rank,
)
from dslint.script.stage_guard import tests_zero3

_METHODS = frozenset({"save_checkpoint", "save_16bit_model", "save_state", "save_model", "get_state_dict"})
_STAGE3_GATHER = (
    '{"train_batch_size": 8, "zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": True}}'
)

_FABRIC = "under Fabric's DeepSpeed strategy, fabric.save on one rank hangs: it calls the engine's save_checkpoint, "
_FABRIC += "which every rank must join"

# a project module whose helper saves the engine's checkpoint
_HELPER = (("checkpointing.py", "def save(engine, out):\n    engine.save_checkpoint(out)\n"),)


class CollectiveSaveOnOneRank(ScriptRule):
    code = "DSL428"
    slug = "collective-save-on-one-rank"
    message = "save_checkpoint on one rank hangs: every rank must call it (each writes its own shard)"
    severity = Severity.ERROR
    needs_engine = False
    # Every finding is one of these saves (or the accelerator handed to a helper that saves its state) under a
    # one-rank test, whose words are among these (`script/one_rank.py`: a rank, the main process, process zero).
    required_tokens = (b"save_checkpoint", b"rank")
    alternative_tokens = (
        *[
            (save, test)
            for save in (b"save_checkpoint", b"save_16bit_model", b"save_state", b"save_model", b"get_state_dict")
            for test in (b"rank", b"main_process", b"process_zero", b"should_save")
        ][1:],
        (b"accelerator", b"main_process"),
        # a project helper that saves, under a rank test (`ProjectFacts.engine_saving_calls`)
        *((test,) for test in (b"rank", b"main_process", b"process_zero")),
        # Lightning Fabric's save under its DeepSpeed strategy (`script/fabric.py`)
        (b"Fabric", b"is_global_zero"),
    )
    # each in a one-rank block (`visit_If`): the engine's saves (where an engine may be), accelerate's and a
    # Trainer's (where a config reaches them), or a call the project index says reaches `save_state`
    call_shapes = (
        Shape(methods=("save_checkpoint", "save_16bit_model"), one_rank=True, engine=True),
        Shape(methods=("save_state", "save_model", "get_state_dict"), one_rank=True, configured=True),
        Shape(project_saves=True),
        Shape(methods=("save",), one_rank=True, words=(b"Fabric",)),
        # accelerate's saves where no launcher starts the script (the project's accelerate YAMLs decide)
        Shape(methods=("save_state", "save_model", "get_state_dict"), one_rank=True, words=(b"Accelerator",)),
    )
    docs = RuleDocs(
        what="""
            Flags a save that every rank must call when it runs on one rank only: inside `if rank == 0:` (any comparison
            of a rank with small literals, `args.local_rank in [-1, 0]`), `if accelerator.is_main_process:`, `if
            trainer.is_world_process_zero():`, `if args.should_save`, `if fabric.is_global_zero:`, a helper named for
            rank 0 (`if is_rank_0():`, `if utils.is_rank_zero():`), a name bound to such a test (also when one arm of an
            `if` binds it so and the arms that exclude that one bind a constant: `else: master = True`), or an `and`
            holding one of them; after an `if` that sends every other rank away (`if engine.local_rank != 0: continue`,
            `if not accelerator.is_main_process: return`: the rest of that block); or in a function whose decorator runs
            it on one rank (`@rank_zero_only`, `@accelerator.on_main_process`, a decorator of the module's own that
            calls the function under such a test). The saves: `engine.save_checkpoint(...)` on a DeepSpeed engine (any
            stage; also a name the engine is bound to in the arm of an `if` the call is on, when another arm rebinds it;
            also a call of a project function the engine is handed to, or of a method of the class holding the engine in
            an attribute, that reaches `save_checkpoint`); Lightning Fabric's `fabric.save(...)` with a DeepSpeed
            strategy (`strategy="deepspeed..."`, `DeepSpeedStrategy(...)`) on more than one device; accelerate's
            `accelerator.save_state(...)` in a script that runs DeepSpeed through accelerate (a `DeepSpeedPlugin` it
            builds, or an `accelerate launch` with DeepSpeed; for a script no launcher of the project starts, the
            accelerate YAMLs shipped beside it or up to two folders above when every one says `distributed_type:
            DEEPSPEED` on several processes, or, with no accelerate YAML, the DeepSpeed configs shipped there when every
            one is ZeRO-3 and writes "auto"), also when a project function the accelerator is handed to reaches
            `save_state` (then a `DeepSpeedPlugin` counts when it is on the same run: built in a module the calling
            module imports, through project modules, or in one that imports the calling module; a plugin of another
            project in the same repository does not); and, under ZeRO-3 only, `engine.save_16bit_model(...)` with the
            16-bit gather on, accelerate's `get_state_dict` / `save_model`, and the Hugging Face Trainer's `save_model`
            (ZeRO-3 from its config, or with none, the accelerate YAML of every launch, or, for a script no launch
            starts that parses its arguments from the command line, every DeepSpeed config the project ships, or an
            enclosing `if is_deepspeed_zero3_enabled():`: with or without the gather it is collective), also where the
            Trainer is handed to a project function reaching its `save_model` or the engine's
            `_zero3_consolidated_16bit_state_dict()` through `trainer.model_wrapped` / `trainer.deepspeed` (the
            `safe_save_model_for_hf_trainer` helper). Left alone: a script that every launch the project holds starts as
            one process (`deepspeed --num_gpus=1`; for Fabric, which starts its own processes, a plain `python` launch
            is not one).
        """,
        why="""
            `DeepSpeedEngine.save_checkpoint` (`runtime/engine.py`, 0.19.8) starts with `dist.barrier()`,
            checks the tag with two `all_reduce`s, has every rank write its own ZeRO partition (and optimizer
            state) and ends with another barrier: its docstring says "all processes must call this method and
            not just the process with rank 0 ... This method will hang". Accelerate's `save_state` calls the
            engine's `save_checkpoint` for every model under DeepSpeed. Under ZeRO-3, `save_16bit_model` (with
            `stage3_gather_16bit_weights_on_model_save`) and accelerate's `get_state_dict` gather the partitioned
            weights with collectives (`_zero3_consolidated_16bit_state_dict`), and the Trainer's `save_model`
            goes through `get_state_dict` (or falls back to `save_checkpoint`). Fabric's DeepSpeed strategy saves by
            broadcasting the path from rank 0 and calling the engine's `save_checkpoint`. Called on one rank, rank 0
            waits for ranks that never come: the run hangs until the collective times out, and the checkpoint
            is never complete. These calls already write shared files on rank 0 only; call them on every rank.
            A `torch.save` of a state dict gathered on every rank beforehand is right on rank 0 alone.
        """,
        example="""
            engine, *_ = deepspeed.initialize(model=model, config="ds_config.json")
            if args.local_rank in (-1, 0):
                engine.save_checkpoint(args.output_dir)
        """,
        use_instead="""
            engine, *_ = deepspeed.initialize(model=model, config="ds_config.json")
            engine.save_checkpoint(args.output_dir)  # every rank: each writes its own partition
        """,
    )
    valid = (
        # The project starts the script as one process only: rank 0 is every rank.
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            if engine.global_rank == 0:
                engine.save_checkpoint("out")
            """,
            files=(("run.sh", "deepspeed --num_gpus=1 train.py\n"), ("ds.json", '{"train_batch_size": 8}\n')),
        ),
        # The other ranks leave only after the save; a rank test without an exit leaves nothing to one rank.
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config={"train_batch_size": 8})
            for step, batch in enumerate(loader):
                engine.save_checkpoint(args.output_dir)
                if engine.local_rank != 0:
                    continue
                print("saved")
            if args.local_rank > 0:
                print("waiting")
            engine.save_checkpoint(args.output_dir)
            """
        ),
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config={"train_batch_size": 8})
            engine.save_checkpoint(args.output_dir)
            if args.local_rank == 0:
                print("saved")
            """
        ),
        Valid(
            """
            import deepspeed, torch
            engine, *_ = deepspeed.initialize(model=model, config={"train_batch_size": 8})
            state = engine.module.state_dict()
            if torch.distributed.get_rank() == 0:
                torch.save(state, "model.pt")
            """
        ),
        # The helper that saves the checkpoint runs on every rank; only the log is rank 0's.
        Valid(
            """
            import deepspeed
            from checkpointing import save
            def train(model, rank):
                engine, *_ = deepspeed.initialize(model=model, config={"train_batch_size": 8})
                master = rank == 0
                save(engine, "out")
                if master:
                    print("saved")
            """,
            files=_HELPER,
        ),
        # Stage 2: save_16bit_model gathers nothing; rank 0 alone may call it.
        Valid(
            """
            import deepspeed
            config = {"train_batch_size": 8, "zero_optimization": {"stage": 2}}
            engine, *_ = deepspeed.initialize(model=model, config=config)
            if args.local_rank == 0:
                engine.save_16bit_model(args.output_dir)
            """
        ),
        # A Trainer under ZeRO-2: save_model gathers nothing.
        Valid(
            """
            from transformers import Trainer, TrainingArguments
            args = TrainingArguments(output_dir="out", deepspeed={"zero_optimization": {"stage": 2}})
            trainer = Trainer(model=model, args=args)
            if trainer.is_world_process_zero():
                trainer.save_model("out")
            """
        ),
        # No DeepSpeed in sight: accelerate's save_state on the main process does not hang.
        Valid(
            """
            from accelerate import Accelerator
            accelerator = Accelerator()
            if accelerator.is_main_process:
                accelerator.save_state("state")
            """
        ),
        # Every rank saves the checkpoint; only the export of the plain module runs under the rank-0 helper.
        Valid(
            """
            import deepspeed
            from helpers import is_rank_zero
            net, *_ = deepspeed.initialize(model=net, config={"train_batch_size": 8})
            for step in range(args.steps):
                if step % args.every == 0:
                    net.save_checkpoint(args.ckpt)
                    if is_rank_zero():
                        net.module.save_pretrained(args.export)
            """
        ),
        # Not the engine: a module's own save_checkpoint.
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config={"train_batch_size": 8})
            if args.local_rank == 0:
                tokenizer.save_checkpoint(args.output_dir)
            """
        ),
        # a script's own `should_save` flag, or the TrainerControl's (set on every rank), is no rank test, unlike
        # the Trainer's `args.should_save`
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config={"train_batch_size": 8})
            should_save = False
            for step, batch in enumerate(loader):
                should_save = step % 100 == 0
                if should_save:
                    engine.save_checkpoint(args.output_dir)
                if self.control.should_save:
                    engine.save_checkpoint(args.output_dir)
            """
        ),
        # A decorator of the module's own that runs the function on every rank (it only times it).
        Valid(
            """
            import functools
            import time
            import deepspeed

            def timed(func):
                @functools.wraps(func)
                def wrapper(self, *args, **kwargs):
                    start = time.time()
                    result = func(self, *args, **kwargs)
                    if self.global_rank == 0:
                        print(time.time() - start)
                    return result
                return wrapper

            class Runner:
                def __init__(self, model, config, global_rank):
                    self.global_rank = global_rank
                    self.engine, _, _, _ = deepspeed.initialize(model=model, config=config)

                @timed
                def save(self, tag):
                    self.engine.save_checkpoint("ckpt", tag)
            """
        ),
    )
    invalid = (
        # The other local ranks go on to the next batch before the save: the rest of the loop is rank 0's.
        Invalid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config={"train_batch_size": 8})
            for step, batch in enumerate(loader):
                engine.backward(engine(batch))
                engine.step()
                if engine.local_rank != 0:
                    continue
                if step % 100 == 0:
                    engine.save_checkpoint(args.output_dir)
            """,
            lines=(10,),
        ),
        # A helper reaching the engine's save, called under a flag holding the rank test: reported at the call.
        Invalid(
            """
            import deepspeed
            from checkpointing import save
            def train(model, rank):
                engine, *_ = deepspeed.initialize(model=model, config={"train_batch_size": 8})
                master = rank == 0
                if master:
                    save(engine, "out")
            """,
            lines=(8,),
            files=_HELPER,
        ),
        Invalid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config={"train_batch_size": 8})
            if args.local_rank in (-1, 0):
                engine.save_checkpoint(args.output_dir)
            """,
            lines=(5,),
        ),
        # A project helper named for rank 0, in an `and` with the save interval.
        Invalid(
            """
            import deepspeed
            from helpers import is_rank_zero
            net, *_ = deepspeed.initialize(model=net, config={"train_batch_size": 8})
            for step in range(args.steps):
                if step % args.every == 0 and is_rank_zero():
                    net.save_checkpoint(args.ckpt)
                    net.module.save_pretrained(args.export)
            """,
            lines=(7,),
        ),
        Invalid(
            f"""
            import deepspeed
            model, *_ = deepspeed.initialize(model=model, config={_STAGE3_GATHER})
            if args.should_save and args.global_rank == 0:
                model.save_16bit_model(args.output_dir)
            """,
            lines=(5,),
        ),
        Invalid(
            """
            from accelerate import Accelerator
            from accelerate.utils import DeepSpeedPlugin
            plugin = DeepSpeedPlugin(zero_stage=2) if args.deepspeed else None
            accelerator = Accelerator(deepspeed_plugin=plugin)
            if accelerator.is_main_process:
                accelerator.save_state("state")
            """,
            lines=(7,),
        ),
        Invalid(
            """
            import functools
            import deepspeed

            def main_rank_only(func):
                @functools.wraps(func)
                def wrapper(self, *args, **kwargs):
                    if self.global_rank == 0:
                        return func(self, *args, **kwargs)
                    return None
                return wrapper

            class Runner:
                def __init__(self, model, config, global_rank):
                    self.global_rank = global_rank
                    self.engine, _, _, _ = deepspeed.initialize(model=model, config=config)

                @main_rank_only
                def save(self, tag):
                    self.engine.save_checkpoint("ckpt", tag)
            """,
            lines=(20,),
        ),
        Invalid(
            """
            import deepspeed
            from lightning.pytorch.utilities import rank_zero_only

            class Runner:
                def __init__(self, model, config):
                    self.engine, _, _, _ = deepspeed.initialize(model=model, config=config)

                @rank_zero_only
                def save(self, path):
                    self.engine.save_checkpoint(path)
            """,
            lines=(11,),
        ),
        Invalid(
            """
            from transformers import Trainer, TrainingArguments
            args = TrainingArguments(output_dir="out", deepspeed={"zero_optimization": {"stage": 3}})
            trainer = Trainer(model=model, args=args)
            trainer.train()
            if args.local_rank == 0:
                trainer.save_model("out")
            """,
            lines=(7,),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.trainers = TrainerNames(self.context)
        self.regions: list[cst.CSTNode] = []  # bodies that run on one rank only
        self.rests: list[tuple[cst.CSTNode, cst.CSTNode]] = []  # statements after the other ranks left
        self.candidates: list[cst.Call] = []
        self.plugins = False  # the script builds accelerate's DeepSpeedPlugin
        self.one_rank_decorators = one_rank_decorators(node)
        self.fabrics = FabricNames(self.facts)
        self.shipped = False  # the accelerate runs are the configs the project ships, for a script no launcher starts
        self.shipped_runs: list[AccelerateRun] | None = None
        self.zero3_arms: list[cst.CSTNode] = []  # bodies of tests that hold only under ZeRO-3
        self.in_zero3_arm = False  # the candidate judged now lies in one

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.decorators and runs_on_one_rank(node, self.one_rank_decorators):
            self.regions.append(node.body)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.trainers.consider_class(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.trainers.consider_assign(node)
        self.fabrics.consider_assign(node)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        rest = rest_on_one_rank(node, self.facts)
        if rest is not None:
            self.rests.append(rest)

    def visit_If(self, node: cst.If) -> None:
        if one_rank_conjunction(node.test, self.facts):
            self.regions.append(node.body)
        if tests_zero3(node.test):  # `if is_deepspeed_zero3_enabled():` runs only under ZeRO-3
            self.zero3_arms.append(node.body)

    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) in _METHODS or method_name(node) == "save" or self._hands_on_state_save(node):
            self.candidates.append(node)
        name = dotted_name(node.func)
        if name is not None and name.rsplit(".", 1)[-1] == "DeepSpeedPlugin":
            self.plugins = True

    def leave_Module(self, original_node: cst.Module) -> None:
        if not self.candidates or not (self.regions or self.rests):
            return
        one_process = one_process_launches(self.facts)  # rank 0 is every rank
        for call in self.candidates:
            if not within_one_rank(self.facts, call, self.regions, self.rests):
                continue
            if method_name(call) == "save":
                fabric = self.fabrics.saving(call)
                if fabric is not None:
                    line = self.context.span(fabric.call)[0].line
                    self.report(call, f"{_FABRIC} (Fabric at line {line})")
                continue
            if one_process:
                continue
            self.in_zero3_arm = within_one_rank(self.facts, call, self.zero3_arms, [])
            found = self._finding(call)
            if found is not None:
                self.report(call, found[0], related=found[1])

    def _hands_on_state_save(self, node: cst.Call) -> bool:
        project = self.facts.project  # a position is costly: asked only where a call of the file may reach a save
        position = self.facts.call_position(node) if project is not None and project.collective_saving_calls else None
        return position is not None and project is not None and project.reaches_collective_save(position)

    def _helper_save(self, call: cst.Call) -> tuple[str, list[Related]] | None:
        """A project function reaching `engine.save_checkpoint` (`ProjectFacts.engine_saving_calls`), or
        `accelerator.save_state` (`ProjectFacts.state_saving_calls`) where the script or the project builds a
        DeepSpeedPlugin, or an accelerate launch of the script runs DeepSpeed."""
        project = self.facts.project
        position = self.facts.call_position(call)
        if project is None or position is None:
            return None
        gathers = project.trainer_gathering_calls.get(position)
        if gathers is not None:  # a helper handed the Trainer gathers through it (`safe_save_model_for_hf_trainer`)
            return self._trainer_zero3(gathers.message.split(" ", 1)[0], gathers)  # "save_model_for_trainer()"
        checkpoint = project.engine_saving_calls.get(position)
        if checkpoint is not None:
            message = "save_checkpoint on one rank hangs: every rank must call it, and this call reaches it"
            return f"{message} ({checkpoint.path}:{checkpoint.line})", [checkpoint]
        saves, plugin = project.state_saving_calls[position]
        message = "under DeepSpeed, save_state on one rank hangs: this call reaches it"
        where = f" ({saves.path}:{saves.line})"
        if self.plugins:
            return message + where, [saves]
        runs = accelerate_runs(self.context)
        if runs:
            return message + where, [saves, *(r for run in runs for r in run.via)]
        if plugin is not None:
            return message + where, [saves, plugin]
        return None

    def _finding(self, call: cst.Call) -> tuple[str, list[Related]] | None:
        if not isinstance(call.func, cst.Attribute) or method_name(call) not in _METHODS:
            return self._helper_save(call)
        receiver, method = call.func.value, call.func.attr.value
        if method in ("save_checkpoint", "save_16bit_model"):
            found = self._engine_save(call, receiver, method)
            if found is None and self._hands_on_state_save(call):  # a method of the project's named like the save
                return self._helper_save(call)
            return found
        if method == "save_state" and self._accelerator(receiver):
            return self._accelerate_deepspeed()
        if method in ("save_model", "get_state_dict") and self._accelerator(receiver):
            return self._accelerate_zero3(method)
        return self._trainer_zero3() if method == "save_model" and self._trainer(receiver) else None

    def _trainer_zero3(
        self, subject: str = "trainer.save_model", helper: Related | None = None
    ) -> tuple[str, list[Related]] | None:
        """The Trainer's `save_model` gathers under ZeRO-3 (without the gather it runs `save_checkpoint`), as does a
        helper reaching it or the engine's gather through the Trainer (`helper`); in the body of a ZeRO-3 test
        (`if is_deepspeed_zero3_enabled():`) the test says the stage where no config does."""
        found = trainer_zero3(self.context) or (("the enclosing ZeRO-3 test", ()) if self.in_zero3_arm else None)
        if found is None:
            return None
        where, related = found if helper is None else (f"{helper.path}:{helper.line}; {found[0]}", (helper, *found[1]))
        return f"under ZeRO-3, {subject} on one rank hangs: it gathers from every rank ({where})", [*related]

    def _engine_save(
        self, call: cst.Call, receiver: cst.BaseExpression, method: str
    ) -> tuple[str, list[Related]] | None:
        answer = self.facts.role_of(receiver, at=call) or self._alias_on_path(receiver, call)
        if answer is None or answer.role is not Role.ENGINE or answer.engine is None:
            return None
        if answer.engine.kind is not Kind.TRAINING:
            return None
        found = evidence(self.context, answer.engine)
        if method == "save_checkpoint":
            return self.message, list(found.related)
        config = resolve_config(self.context, answer.engine)
        if config is None or config.zero_stage != 3 or gathers_16bit(config.get("zero_optimization")) is not True:
            return None  # below ZeRO-3, or without the gather: nothing is gathered (DSL210 says the rest)
        message = "under ZeRO-3, save_16bit_model on one rank hangs: it gathers the weights from every rank"
        return message + found.suffix, list(found.related)

    def _alias_on_path(self, receiver: cst.BaseExpression, call: cst.Call) -> RoleAnswer | None:
        """`model = engine` in the DeepSpeed arm of an `if`, where the arm the call is on excludes a later rebinding
        (`else: model = DDP(model)`): what the name holds on the call's own path."""
        if (key := dotted_name(receiver)) is None:
            return None
        binding = self.facts.binding_at(key, self.facts.scope_at(call), self.facts.start(call), on_path=True)
        value = binding.value if binding is not None and binding.kind is BindingKind.OTHER else None
        if not isinstance(value, (cst.Name, cst.Attribute)):
            return None
        return self.facts.role_of(value)

    def _accelerate_deepspeed(self) -> tuple[str, list[Related]] | None:
        message = "under DeepSpeed, save_state on one rank hangs: it runs every engine's save_checkpoint"
        if self.plugins:
            return message, []  # the script's own DeepSpeedPlugin
        runs = self._accelerate_runs()
        if runs:
            return message + self._where(runs), [r for run in runs for r in run.via]
        return None

    def _where(self, runs: list[AccelerateRun]) -> str:
        where, shipped = runs[0].via[-1], ", shipped in the project; no launcher of the project starts this script"
        return f" ({where.path}:{where.line}{shipped if self.shipped else ''})"

    def _accelerate_runs(self) -> list[AccelerateRun] | None:
        """The accelerate launches of the script with DeepSpeed; for a script no launcher of the project starts,
        the accelerate YAMLs shipped near it when each runs DeepSpeed, or with none, its shipped ZeRO-3 configs
        that write "auto" (`project/shipped_accelerate.py`)."""
        runs = accelerate_runs(self.context)
        project = self.facts.project
        self.shipped = runs == [] and (project is None or not project.launches) and bool(self.context.path)
        if self.shipped and self.shipped_runs is None:
            self.shipped_runs = shipped_accelerate_runs(self.context.path)  # once a file
        return self.shipped_runs if self.shipped else runs

    def _accelerate_zero3(self, method: str) -> tuple[str, list[Related]] | None:
        runs = self._accelerate_runs()
        if not runs or not all(run.gathers_at_zero3() for run in runs):
            return None  # below ZeRO-3 nothing is gathered; without the gather it raises (DSL210)
        message = f"under ZeRO-3, accelerator.{method} on one rank hangs: it gathers from every rank"
        return message + self._where(runs), [r for run in runs for r in run.via]

    def _accelerator(self, receiver: cst.BaseExpression) -> bool:
        if self.trainers.holds_accelerator(receiver):
            return True
        name = dotted_name(receiver)
        return name is not None and name.rsplit(".", 1)[-1] == "accelerator"

    def _trainer(self, receiver: cst.BaseExpression) -> bool:
        if self.trainers.holds_trainer(receiver):
            return True
        name = dotted_name(receiver)
        return name is not None and name.rsplit(".", 1)[-1] == "trainer"
