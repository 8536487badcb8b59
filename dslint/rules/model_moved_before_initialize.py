"""DSL101: the model is moved to a device before it is given to `deepspeed.initialize` (casts: DSL104)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import libcst as cst

from dslint.diagnostics import Applicability, Edit, Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.project.hand_casts import engine_casts_alike
from dslint.project.handed_on_moves import HandedOn, handed_on
from dslint.project.redundant_moves import redundant_move, sink_stages
from dslint.script.edits import delete_call_statement, unwrap_method_call
from dslint.script.facts import method_name
from dslint.script.hf_trainers import TrainerNames
from dslint.script.inference import InferenceMoves
from dslint.script.model_moves import ModelMoves, is_cast, serves_another_path
from dslint.script.names import dotted_name

MOVE_CALLS = ("cuda", "to")  # every move DSL101 reports is one of these calls

# a Trainer whose arguments come from a JSON file naming a DeepSpeed config
_ARGS_FILE = """
    import sys
    from transformers import HfArgumentParser, Trainer, TrainingArguments
    (training_args,) = HfArgumentParser((TrainingArguments,)).parse_json_file(json_file="args.json")
    model = build_model().to("cuda")
    trainer = Trainer(model=model, args=training_args)
"""
_ARGS_FILES = (("args.json", '{"output_dir": "out", "deepspeed": "ds.json"}\n'), ("ds.json", "{}\n"))

# a project helper that moves its parameter (fixtures/projects/moving_helpers: a base class's constructor too)
_PLACE = (("helpers.py", "def place(model):\n    model.cuda()\n"),)


class ModelMovedBeforeInitialize(ScriptRule):
    code = "DSL101"
    slug = "model-moved-before-initialize"
    message = "model moved to a device before deepspeed.initialize; remove the move: the engine places it"
    inference_message = (
        'model moved to "cuda" before deepspeed.init_inference (line {line}) sets the device; remove the move'
    )
    accelerate_template = (
        "model moved to a device before accelerator.prepare; remove the move: DeepSpeed places it ({where})"
    )
    trainer_template = (
        "model moved to a device before the HF Trainer; remove the move: DeepSpeed places it (config: {where})"
    )
    helper_template = "{callee}() moves the model to a GPU ({where}) before deepspeed.initialize, which places it"
    severity = Severity.WARNING
    inference_engine = True
    # A move before an initialize, `accelerator.prepare` under DeepSpeed, or a Trainer given a DeepSpeed config.
    needs_engine = False
    alternative_tokens: ClassVar[tuple[tuple[bytes, ...], ...]] = (
        (b"prepare", b"cuda", b"Accelerator"),
        (b"prepare", b"to", b"Accelerator"),
        (b"Trainer", b"cuda"),
        (b"Trainer", b"to"),
    )
    call_shapes: ClassVar[tuple[Shape, ...]] = (
        Shape(methods=MOVE_CALLS, engine=True),
        Shape(project_moves=True, engine=True),  # a call of a project function that moves its argument
        Shape(methods=MOVE_CALLS, words=(b"Accelerator",), configured=True),  # accelerate, not a `deepspeed=` kwarg
        Shape(methods=MOVE_CALLS, words=(b"Trainer",), configured=True),  # the Trainer's `deepspeed=`, a launch's
        Shape(calls=("deepspeed.init_inference",)),  # a move before a tensor-parallel init_inference
    )
    docs = RuleDocs(
        what="""
            Flags `.cuda()` and `.to(device)` on the model that is later given to `deepspeed.initialize(model=...)`,
            before that call: in its function, or where the project model sees the model come from (a builder's return,
            each override of a `self.build()` the base class calls, a binding in one arm of an `if`, a constructor's
            `self.to(device)`). Moves to the CPU, `.to(memory_format=...)` and calls inside `with init_empty_weights():`
            (meta parameters, no data) are not flagged; casts (`.half()`, `.to(dtype=...)`, `.to(args.dtype)`) are
            DSL104; nor is a move to the rank's own GPU (`cuda:{local_rank}`, `accelerator.device`,
            `training_args.device`, `.cuda()` after `set_device`, or the un-indexed CUDA device in a script every
            launch of which starts one process) before an engine whose every config is known to run ZeRO stage 0,
            1 or 2 (or cannot be read, no launch giving one, and every config the project ships near the script is
            below stage 3), which puts the module there itself and partitions nothing. Nor is a move
            before an `initialize` that runs only under a test the move does not share (`if args.deepspeed:
            initialize(...) else: model = DDP(model)`): the move also serves the path without DeepSpeed, unless
            every launch of the script passes the option tested (`--deepspeed`), no launcher names it otherwise
            and none turns on a use of the moved model before (`if args.ema: ModelEma(model)`). Nor is a move
            followed, in its function and before `initialize`, by a run of the model (`model(**inputs)`,
            `model.generate(...)`): the move serves that run. A test whose failing arm raises (`if not cfg: raise
            ...`), or a run-once latch (`if not self.ready: initialize(...); self.ready = True`), leaves no such path.
            Before `deepspeed.init_inference` with tensor parallelism (`mp_size` or `tensor_parallel.tp_size` not the
            literal 1), only a move to the un-indexed CUDA device made while no device is set is flagged; with one GPU
            a move before `init_inference` is harmless. In a script that runs DeepSpeed
            through accelerate (its own `DeepSpeedPlugin`, or an `accelerate launch` whose YAML has `distributed_type:
            DEEPSPEED`), a move of the model that `accelerator.prepare` receives is flagged the same way: `prepare`
            hands it to `deepspeed.initialize`. So is a move of the model a Hugging Face `*Trainer(model=...)` receives
            when its TrainingArguments carry a DeepSpeed config (`deepspeed=` in the file, the `deepspeed` of an
            arguments file it parses by a written path, `parser.parse_json_file("args.json")`, or the `--deepspeed`
            every launch of a script that parses its arguments gives; or a config that cannot be read but is surely
            given: a written path, an option argparse requires or every launch gives a value): the Trainer builds the
            engine through accelerate. A move of the base model peft wraps (`get_peft_model(base, lora)`) is a move of
            the model handed on. A call of a project function that moves its argument to a GPU (`place(model)`,
            `super().__init__(net)` keeping it as `self.net`, `super().to(device)` moving `self.model`; a move under an
            `if` the call's literal arguments rule out does not count) is flagged at the call, naming the move.
        """,
        why="""
            `deepspeed.initialize` moves the module to its rank's device itself (DeepSpeedEngine
            `_configure_distributed_model`), after it has set the current device from LOCAL_RANK. A move before
            that is at best wasted work, and an un-indexed `.cuda()` or `.to("cuda")` on every rank lands on
            cuda:0 (all ranks' models on one GPU until the engine moves them). Without `deepspeed.zero.Init`,
            ZeRO-3 then first holds the whole model on every GPU before it partitions it.

            `deepspeed.init_inference` with `mp_size` above 1 sets the rank's device from LOCAL_RANK, splits the
            module, then moves the rank's share to that device (`inference/engine.py`); a `"cuda"` move before it puts
            the whole model on cuda:0 in every rank.""",
        example="""
            model = Net()
            model.cuda()
            engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
        """,
        use_instead="""
            model = Net()
            engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
            # inputs go to engine.device; precision comes from the config's "fp16"/"bf16" sections
        """,
        fix_safety="""
            The fix removes the move (a lone statement is deleted; in an expression the call is dropped from its
            chain). It is unsafe: code between the move and `initialize` may rely on the model's device.
        """,
    )
    valid: ClassVar[Sequence[Valid]] = (
        # the attribute is bound again between the move and initialize: the moved module is not the one given
        Valid(
            """
            import deepspeed
            class Runner(BaseRunner):
                def build(self, config):
                    self.model.cuda()
                    self.model = Net()
                    self.engine, *_ = deepspeed.initialize(model=self.model, config=config.ds)
            """
        ),
        # an arguments file from the command line only (which config, if any, is not known); no DeepSpeed at all
        Valid(_ARGS_FILE.replace('json_file="args.json"', "json_file=sys.argv[1]"), files=_ARGS_FILES),
        Valid(
            """
            from transformers import Trainer, TrainingArguments
            model = build_model().to("cuda")
            args = TrainingArguments(output_dir="out")
            trainer = Trainer(model=model, args=args)
            """
        ),
        Valid(
            """
            import os
            import deepspeed, torch
            rank = int(os.getenv("LOCAL_RANK", "0"))
            solo = Net().cuda()
            solo = deepspeed.init_inference(solo, dtype=torch.half)
            shared = Net().to(f"cuda:{rank}")
            shared = deepspeed.init_inference(shared, mp_size=world, dtype=torch.half)
            later = Net().to("cuda")
            later = deepspeed.init_inference(later, mp_size=world)
            """
        ),
        Valid(
            """
            import deepspeed
            model = Net()
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            other = Net().cuda()
            for batch in loader:
                loss = engine(batch.to(engine.device))
            """
        ),
        Valid(
            """
            import deepspeed, torch
            model = Net().to(memory_format=torch.channels_last)
            model.to("cpu")
            model.to(torch.device("cpu"))
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """
        ),
        Valid(
            """
            import deepspeed, torch
            def main(args, model, rank):
                model.to(torch.device("cuda", rank))
                if args.deepspeed:
                    model, *_ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
                else:
                    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
            """
        ),
        Valid(
            """
            import deepspeed, torch
            def main(args, model):
                if args.offload:
                    device = torch.device("cpu")
                else:
                    device = "cpu"
                model.to(device)
                engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """
        ),
        Valid(
            """
            import deepspeed
            if args.deepspeed:
                engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            else:
                model.cuda()
            """
        ),
        Valid(
            """
            import torch
            from deepspeed.accelerator import get_accelerator
            model = Net().cuda()
            model.half()
            """
        ),
        Valid(
            """
            import deepspeed
            def build(model):
                model.cuda()
                return model
            def main():
                model = Net()
                engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """
        ),
        # the moved model runs before initialize: the move serves that run
        Valid(
            "import deepspeed\ndef main(model, x):\n    model.cuda()\n    loss = model(x.cuda())\n"
            "    engine, *_ = deepspeed.initialize(model=model, config='ds.json')\n"
        ),
        # the helper's move serves a plain path: no initialize after the call
        Valid("from helpers import place\ndef evaluate(model):\n    place(model)\n    return model\n", files=_PLACE),
    )
    invalid: ClassVar[Sequence[Invalid]] = (
        # the Trainer hands the model to deepspeed.initialize: the move before it is the engine's job
        # the model moved, then wrapped (with a move of the wrapper chained on): both moves are the engine's job
        # the Trainer's arguments come from a JSON file whose `deepspeed` names the config (no safe fix)
        Invalid(_ARGS_FILE, lines=(5,), files=_ARGS_FILES, fixed=_ARGS_FILE),
        Invalid(
            """
            import deepspeed, torch
            from wrappers import Padded
            device = torch.device("cuda")
            net = Net(depth=2).to(device)
            net = Padded(net, pad=0).to(device)
            engine, *_ = deepspeed.initialize(model=net, config="ds.json")
            """,
            lines=(5, 6),
            fixed="""
            import deepspeed, torch
            from wrappers import Padded
            device = torch.device("cuda")
            net = Net(depth=2)
            net = Padded(net, pad=0)
            engine, *_ = deepspeed.initialize(model=net, config="ds.json")
            """,
        ),
        Invalid(
            """
            from transformers import Trainer, TrainingArguments
            model = build_model()
            model.to("cuda")
            args = TrainingArguments(output_dir="out", deepspeed={"zero_optimization": {"stage": 2}})
            trainer = Trainer(model=model, args=args)
            """,
            lines=(4,),
            fixed="""
            from transformers import Trainer, TrainingArguments
            model = build_model()
            args = TrainingArguments(output_dir="out", deepspeed={"zero_optimization": {"stage": 2}})
            trainer = Trainer(model=model, args=args)
            """,
        ),
        # both arms initialize (a dict or a path): no path without DeepSpeed needs the move
        Invalid(
            """
            import deepspeed
            def main(model, args, device, built):
                model.to(device)
                if built is not None:
                    engine, *_ = deepspeed.initialize(args=args, model=model, config_params=built)
                else:
                    engine, *_ = deepspeed.initialize(args=args, model=model, config=args.deepspeed_config)
            """,
            lines=(4,),
            fixed="""
            import deepspeed
            def main(model, args, device, built):
                if built is not None:
                    engine, *_ = deepspeed.initialize(args=args, model=model, config_params=built)
                else:
                    engine, *_ = deepspeed.initialize(args=args, model=model, config=args.deepspeed_config)
            """,
        ),
        # a check that raises before initialize leaves no path without DeepSpeed: the move is still the engine's
        Invalid(
            """
            import os
            import deepspeed
            def main(model, args):
                model.cuda()
                if not os.path.exists(args.deepspeed_config):
                    raise FileNotFoundError(args.deepspeed_config)
                engine, *_ = deepspeed.initialize(model=model, config=args.deepspeed_config)
            """,
            lines=(5,),
            fixed="""
            import os
            import deepspeed
            def main(model, args):
                if not os.path.exists(args.deepspeed_config):
                    raise FileNotFoundError(args.deepspeed_config)
                engine, *_ = deepspeed.initialize(model=model, config=args.deepspeed_config)
            """,
        ),
        Invalid(
            """
            import deepspeed
            def main(args, build):
                teacher = None
                if args.distill:
                    teacher = build()
                    teacher.cuda()
                if teacher is not None:
                    teacher, *_ = deepspeed.initialize(args=args, model=teacher)
            """,
            lines=(7,),
            fixed="""
            import deepspeed
            def main(args, build):
                teacher = None
                if args.distill:
                    teacher = build()
                if teacher is not None:
                    teacher, *_ = deepspeed.initialize(args=args, model=teacher)
            """,
        ),
        Invalid(
            """
            import deepspeed, torch
            def main(args, model, rank):
                if torch.cuda.is_available():
                    device = torch.device("cuda", rank)
                else:
                    device = torch.device("cpu")
                model.to(device)
                engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """,
            lines=(8,),
            fixed="""
            import deepspeed, torch
            def main(args, model, rank):
                if torch.cuda.is_available():
                    device = torch.device("cuda", rank)
                else:
                    device = torch.device("cpu")
                engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """,
        ),
        Invalid(
            """
            import deepspeed
            class Runner:
                def build(self, config):
                    self.model = Net(
                        width=config.width,
                        depth=config.depth,
                    ).to(self.device)
                    self.engine, *_ = deepspeed.initialize(model=self.model, config=config.ds)
            """,
            # the finding is where the move is (line 8), not where the constructor call starts (line 5)
            lines=(8,),
            fixed="""
            import deepspeed
            class Runner:
                def build(self, config):
                    self.model = Net(
                        width=config.width,
                        depth=config.depth,
                    )
                    self.engine, *_ = deepspeed.initialize(model=self.model, config=config.ds)
            """,
        ),
        Invalid(
            """
            import os
            import deepspeed, torch
            world = int(os.getenv("WORLD_SIZE", "1"))
            for name in names:
                pipe = Pipeline.load(name).to("cuda")
                pipe = deepspeed.init_inference(pipe, mp_size=world, dtype=torch.half)
            """,
            lines=(6,),
            fixed="""
            import os
            import deepspeed, torch
            world = int(os.getenv("WORLD_SIZE", "1"))
            for name in names:
                pipe = Pipeline.load(name)
                pipe = deepspeed.init_inference(pipe, mp_size=world, dtype=torch.half)
            """,
        ),
        Invalid(
            """
            import deepspeed
            model = Net()
            model.cuda()
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds.json")
            """,
            lines=(4,),
            fixed="""
            import deepspeed
            model = Net()
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds.json")
            """,
        ),
        Invalid(
            """
            import deepspeed as ds
            net = Net().to(device).half()
            model_engine, *_ = ds.initialize(args=args, model=net)
            """,
            lines=(3,),
            fixed="""
            import deepspeed as ds
            net = Net().half()
            model_engine, *_ = ds.initialize(args=args, model=net)
            """,
        ),
        Invalid(
            """
            from deepspeed import initialize
            def main(args):
                model = Net()
                model = model.to(args.device)
                model, optimizer, _, _ = initialize(args, model, None, model.parameters())
                for x in data:
                    model(x.to(model.device))
            """,
            lines=(5,),
            fixed="""
            from deepspeed import initialize
            def main(args):
                model = Net()
                model, optimizer, _, _ = initialize(args, model, None, model.parameters())
                for x in data:
                    model(x.to(model.device))
            """,
        ),
        # `self.model`, bound by no method of the file (a base class's constructor): one object at both places
        Invalid(
            """
            import deepspeed
            class Runner(BaseRunner):
                def build(self, config):
                    self.model.cuda()
                    self.engine, *_ = deepspeed.initialize(model=self.model, config=config.ds)
            """,
            lines=(5,),
            fixed="""
            import deepspeed
            class Runner(BaseRunner):
                def build(self, config):
                    self.engine, *_ = deepspeed.initialize(model=self.model, config=config.ds)
            """,
        ),
        Invalid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model.cuda(), config=cfg)
            """,
            lines=(3,),
            fixed="""
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config=cfg)
            """,
        ),
        # reported at the call (the helper is right for its plain callers), naming the move
        Invalid(
            """
            import deepspeed
            from helpers import place
            def main(args, model):
                place(model)
                engine, *_ = deepspeed.initialize(args=args, model=model)
            """,
            lines=(5,),
            files=_PLACE,
        ),
    )

    casts: ClassVar[bool] = False  # this rule reports the casts (DSL104, a subclass), not the moves (DSL101)

    def visit_Module(self, node: cst.Module) -> None:
        self.moves = ModelMoves(self.facts)
        self.inference_moves = InferenceMoves(self.facts)
        self.trainers = TrainerNames(self.context)
        self.prepares: list[cst.Call] = []
        self.trainer_calls: list[cst.Call] = []  # `*Trainer(model=...)`
        self.unplaced_moves: list[cst.Call] = []  # moves that reach no initialize, for `accelerator.prepare`

    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) == "prepare" and isinstance(node.func, cst.Attribute):
            self.prepares.append(node)
        elif (dotted_name(node.func) or "").rsplit(".", 1)[-1].endswith("Trainer"):
            self.trainer_calls.append(node)
        if not self.casts and self._helper_moves(node):
            return
        init = self.moves.initialize_for(node)
        if init is None and not self.casts and method_name(node) in MOVE_CALLS and not is_cast(node):
            self.unplaced_moves.append(node)
        if init is None and not self.casts:
            inference = self.inference_moves.inference_for(node)
            if inference is not None:
                line = self.context.span(inference.call)[0].line
                self.report(
                    node,
                    self.inference_message.format(line=line),
                    edits=self._fix(node),
                    applicability=Applicability.UNSAFE,
                    fix_message=f"Remove `.{method_name(node)}(...)`",
                    start_at=node.func.attr if isinstance(node.func, cst.Attribute) else None,
                )
            return
        if init is None or is_cast(node) != self.casts or (self.casts and engine_casts_alike(self.context, node, init)):
            return
        if not self.casts and serves_another_path(self.facts, node, init):
            return
        if not self.casts and redundant_move(self.context, node, sink_stages(self.context, init)):
            return
        message = self.message
        if init.origin is not None:  # initialize is in another function or module
            message += f" (the model reaches deepspeed.initialize at {init.origin.path}:{init.origin.line})"
        name = method_name(node)
        self.report(
            node,
            message,
            edits=self._fix(node),
            applicability=Applicability.UNSAFE,
            fix_message=f"Remove `.{name}(...)`",
            related=(init.origin,) if init.origin is not None else (),
            start_at=node.func.attr if isinstance(node.func, cst.Attribute) else None,
        )

    def _helper_moves(self, node: cst.Call) -> bool:
        """A call of a project function moving the model to a GPU (casting it to 16 bits: DSL104) before
        initialize (`ModelMoves.helper_move`): reported at the call, naming the move, without a fix (the function
        may be right for its other callers)."""
        found = self.moves.helper_move(node, casts=self.casts)
        if found is None or (not self.casts and serves_another_path(self.facts, node, found[0])):
            return False
        init, moved = found
        where, callee = f"{moved.where.path}:{moved.where.line}", moved.where.message.partition("(")[0]
        related = (moved.where, *((init.origin,) if init.origin is not None else ()))
        self.report(node, self.helper_template.format(callee=callee, where=where), related=related)
        return True

    def leave_Module(self, original_node: cst.Module) -> None:
        """Moves of the model that `accelerator.prepare` (DeepSpeed through accelerate: `accelerate_deepspeed`) or a
        Trainer given a DeepSpeed config receives: either hands it to `deepspeed.initialize`, which places it."""
        if self.casts or not self.unplaced_moves:
            return
        reported: set[int] = set()
        for found in handed_on(self.context, self.prepares, self.trainer_calls, self.trainers):
            self._report_handed_on(found, reported)

    def _report_handed_on(self, found: HandedOn, reported: set[int]) -> None:
        """Moves before the engine `found` builds; one to the rank's own GPU before an engine that keeps every
        parameter whole is left alone (`redundant_moves`)."""
        template = self.accelerate_template if found.accelerate else self.trainer_template
        message, related = template.format(where=found.where), found.related
        moves = ModelMoves(self.facts, found.sinks)
        for node in self.unplaced_moves:
            sink = moves.initialize_for(node)
            if sink is None or id(node) in reported or serves_another_path(self.facts, node, sink):
                continue
            if redundant_move(self.context, node, found.stages):
                continue
            reported.add(id(node))
            self.report(
                node,
                message,
                edits=self._fix(node),
                applicability=Applicability.UNSAFE,
                fix_message=f"Remove `.{method_name(node)}(...)`",
                related=related,
                start_at=node.func.attr if isinstance(node.func, cst.Attribute) else None,
            )

    def _fix(self, node: cst.Call) -> list[Edit]:
        edit = delete_call_statement(self.context, node) or unwrap_method_call(self.context, node)
        return [edit] if edit is not None else []
