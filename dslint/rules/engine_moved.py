"""DSL102: the DeepSpeed engine (or its module) is moved or cast after `deepspeed.initialize`."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from dslint.diagnostics import Applicability, Edit, Related, Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.library import ENGINE
from dslint.project.accelerate_deepspeed import accelerate_deepspeed
from dslint.project.evidence import evidence
from dslint.script.context import ScriptContext
from dslint.script.edits import delete_call_statement
from dslint.script.engine_reach import partly_passed, partly_prefix
from dslint.script.facts import Role, RoleAnswer, ScriptFacts, method_name
from dslint.script.hf_trainers import TrainerNames
from dslint.script.inference import inference_engine
from dslint.script.model_moves import PLACEMENT_METHODS, cast_dtype, is_cast, is_placement_call, moves_to_cpu
from dslint.script.names import dotted_name
from dslint.script.walk import children


class EngineMoved(ScriptRule):
    code = "DSL102"
    slug = "engine-moved"
    message = "the engine is already on its rank's device and in the config's precision; remove this move"
    inference_message = (
        "the inference engine of deepspeed.init_inference (line {line}) is already placed; remove this move"
    )
    module_message = (
        "this model is the engine's module since initialize (line {line}), already placed; remove this move"
    )
    prepared_message = "under DeepSpeed ({where}), prepare returned the engine, already placed; remove this move"
    severity = Severity.WARNING
    inference_engine = True
    # the model `accelerator.prepare` returns where accelerate runs DeepSpeed: the engine, with no initialize here
    runs_without_engine_on = ((b"prepare", b"Accelerator"),)
    call_shapes = (
        Shape(methods=PLACEMENT_METHODS, engine=True),  # the engine, its module, the model after initialize
        Shape(methods=PLACEMENT_METHODS, words=(b"Accelerator",), configured=True),  # where accelerate runs DeepSpeed
        Shape(methods=PLACEMENT_METHODS, words=(b"init_inference",)),  # a tensor-parallel inference engine
    )
    docs = RuleDocs(
        what="""
            Flags `.cuda()`, `.to(...)`, `.half()` and `.bfloat16()` called on the engine returned by
            `deepspeed.initialize`, or on its `.module` (a move outside any `if`, too, in a function that some call
            of the project hands the engine and others a plain module: a shared training function; the message
            names the call, and there is no fix, the plain callers need the move); `.cuda()` / `.to(<device>)` on
            the model handed to `initialize`, after that call in the same function (the engine's module); and
            `.cuda()` /
            `.to(<device>)` on what `accelerator.prepare` returned for the model where accelerate runs DeepSpeed (the
            script's `DeepSpeedPlugin`, or an `accelerate launch` of it with a DeepSpeed YAML: prepare returns the
            engine); and `.cuda()` / `.to(<device>)` on the inference engine
            that a tensor-parallel `deepspeed.init_inference` (`mp_size` not the literal 1) returns, unless it is
            given `keep_module_on_host=True` or a config. Without `mp_size` the engine sets no device and leaves
            its module on the current one, so a move to the rank's GPU may be needed and is not flagged. A cast
            that undoes an earlier cast of the same module to another dtype, in the same function and on a path
            after it (`.float()` for an export, then `.half()`), is not flagged: the earlier cast is the mistake.
        """,
        why="""
            The engine moves the module to its rank's device and casts it while it is created, and its
            optimizer (fp32 master weights, ZeRO partitions) is built around those tensors. Moving or casting
            the engine afterwards is redundant at best; with ZeRO-3 it touches partitioned parameters whose
            `param.data` is empty, and a cast breaks the link between the module and the optimizer's master
            weights. Batches, not the engine, are what must be moved: `batch.to(engine.device)`.
        """,
        example="""
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds_config.json")
            engine.to(device)
        """,
        use_instead="""
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds_config.json")
            inputs = inputs.to(engine.device)
        """,
        fix_safety="""
            The fix deletes the statement when the move is a statement of its own (`engine.cuda()`,
            `engine = engine.to(device)`). It is unsafe: moving the engine to another device (the CPU, say) is
            a change of behaviour that the script may have meant.
        """,
    )
    valid = (
        # accelerate without DeepSpeed (no plugin, no launch of the script): prepare returns the plain module.
        Valid(
            """
            from accelerate import Accelerator
            accelerator = Accelerator()
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            model.to(accelerator.device)
            """
        ),
        # Under DeepSpeed, a cast of the prepared model is left alone here, and a rebound name is another module.
        Valid(
            """
            from accelerate import Accelerator, DeepSpeedPlugin
            accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2))
            model, optimizer = accelerator.prepare(model, optimizer)
            model.to(torch.bfloat16)
            model = load_teacher()
            model.to(accelerator.device)
            """
        ),
        # The alias is rebound to another module before the move.
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            net = engine
            net = build_student()
            net.cuda()
            """
        ),
        Valid(
            """
            import deepspeed
            host = deepspeed.init_inference(model, mp_size=world, keep_module_on_host=True)
            host.to(device)
            single = deepspeed.init_inference(model, dtype=torch.half)
            single.to(f"cuda:{rank}")
            model = deepspeed.init_inference(model, mp_size=world)
            model = other
            model.to(device)
            """
        ),
        Valid(
            """
            import deepspeed
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds.json")
            for batch in loader:
                batch = batch.to(engine.device)
                labels = labels.to(engine.local_rank)
                loss = engine(batch)
            """
        ),
        Valid(
            """
            import deepspeed
            def evaluate(engine, data):
                engine.cuda()
            """
        ),
        # a move in the fallback of a failed initialize: the model never became the engine's module
        Valid(
            """
            import deepspeed
            def train(model, device, config):
                try:
                    engine, *_ = deepspeed.initialize(model=model, config=config)
                except RuntimeError:
                    model.to(device)
            """
        ),
        # the model handed to initialize: moved before it (DSL101's), cast or sent to the CPU after training
        # (an export), or a name bound again to another model; a move after an initialize made on one path only
        Valid(
            """
            import deepspeed
            def train(model, device, config):
                if config is not None and len(config) > 1:
                    engine, *_ = deepspeed.initialize(model=model, config=config)
                model.to(device)
            """
        ),
        Valid(
            """
            import deepspeed
            def train(model, teacher, device, config):
                model.to(device)
                engine, *_ = deepspeed.initialize(model=model, config=config)
                fit(engine)
                model.half()
                model.to("cpu")
                model = teacher
                model.to(device)
            """
        ),
        Valid(
            """
            import deepspeed
            engine = deepspeed.initialize(model=model, config="ds.json")[0]
            engine = other_model
            engine.cuda()
            """
        ),
        # the cast at line 8 restores what line 5 changed (a cast to fp32, which this rule leaves to others):
        # removing line 8 would leave the module in fp32 under an fp16 engine
        Valid(
            """
            import deepspeed
            def export(model, path):
                engine, *_ = deepspeed.initialize(model=model, config="fp16.json")
                state = lora_state(engine.module.float())
                save(state, path)
                if half:
                    engine.module.to(dtype=torch.float16)
            """,
        ),
    )
    invalid = (
        # a training function a DeepSpeed script hands the engine, and a plain one a module (under the `if`: silent)
        Invalid(
            """
            def train_model(model, loader, device="cuda", first=False):
                model.to(device)
                if first:
                    model.cuda()
                for batch in loader:
                    model(batch.to(device)).mean()
            """,
            lines=(3,),
            path="loop.py",
            files=(
                (
                    "ds_train.py",
                    "import deepspeed\nfrom loop import train_model\n"
                    'engine, _, _, _ = deepspeed.initialize(model=net, config={"train_batch_size": 8})\n'
                    "train_model(engine, loader)\n",
                ),
                ("plain.py", "from loop import train_model\ntrain_model(net, data, first=True)\n"),
            ),
        ),
        # the model handed to initialize is the engine's module: the engine placed it
        Invalid(
            """
            import deepspeed
            def train(model, data, config, rank):
                engine, _, loader, _ = deepspeed.initialize(model=model, training_data=data, config=config)
                model.to(torch.device("cuda", rank))
                for batch in loader:
                    engine.backward(engine(batch))
            """,
            lines=(5,),
            fixed="""
            import deepspeed
            def train(model, data, config, rank):
                engine, _, loader, _ = deepspeed.initialize(model=model, training_data=data, config=config)
                for batch in loader:
                    engine.backward(engine(batch))
            """,
        ),
        Invalid(
            """
            import deepspeed
            def export(model):
                engine, *_ = deepspeed.initialize(model=model, config="fp16.json")
                if lora:
                    state = lora_state(engine.module.to(torch.float32))
                    save(state)
                else:
                    engine.module.half()
                    save(engine)
            """,
            # the `else:` arm never runs after line 6's cast: its `.half()` restores nothing
            lines=(6, 9),
            fixed="""
            import deepspeed
            def export(model):
                engine, *_ = deepspeed.initialize(model=model, config="fp16.json")
                if lora:
                    state = lora_state(engine.module.to(torch.float32))
                    save(state)
                else:
                    save(engine)
            """,
        ),
        Invalid(
            """
            import deepspeed
            model = deepspeed.init_inference(model, mp_size=world, dtype=torch.float)
            model.to(device)
            """,
            lines=(4,),
            fixed="""
            import deepspeed
            model = deepspeed.init_inference(model, mp_size=world, dtype=torch.float)
            """,
        ),
        Invalid(
            """
            import deepspeed
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds.json")
            engine.to(device)
            """,
            lines=(4,),
            fixed="""
            import deepspeed
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds.json")
            """,
        ),
        Invalid(
            """
            import deepspeed
            result = deepspeed.initialize(model=net, config=cfg)
            model = result[0]
            model = model.cuda()
            model.module.half()
            """,
            lines=(5, 6),
            fixed="""
            import deepspeed
            result = deepspeed.initialize(model=net, config=cfg)
            model = result[0]
            """,
        ),
        # accelerate runs DeepSpeed (the script's DeepSpeedPlugin): prepare returned the engine, already placed.
        Invalid(
            """
            from accelerate import Accelerator, DeepSpeedPlugin
            plugin = DeepSpeedPlugin(zero_stage=2, gradient_accumulation_steps=4)
            accelerator = Accelerator(deepspeed_plugin=plugin)
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            model.to(accelerator.device).train()
            """,
            lines=(6,),
            fixed="""
            from accelerate import Accelerator, DeepSpeedPlugin
            plugin = DeepSpeedPlugin(zero_stage=2, gradient_accumulation_steps=4)
            accelerator = Accelerator(deepspeed_plugin=plugin)
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            model.to(accelerator.device).train()
            """,
        ),
        # The engine kept under another name (an attribute) and moved through it.
        Invalid(
            """
            import deepspeed
            class Runner:
                def __init__(self, model, cfg):
                    engine, optimizer, _, _ = deepspeed.initialize(model=model, config=cfg.ds)
                    self.engine = engine
                    self.engine = self.engine.to(cfg.device)
            """,
            lines=(7,),
            fixed="""
            import deepspeed
            class Runner:
                def __init__(self, model, cfg):
                    engine, optimizer, _, _ = deepspeed.initialize(model=model, config=cfg.ds)
                    self.engine = engine
            """,
        ),
        Invalid(
            """
            import deepspeed
            class Trainer:
                def __init__(self, model, cfg):
                    self.engine, self.optimizer, _, _ = deepspeed.initialize(model=model, config=cfg)
                def train(self, batch):
                    if self.on_gpu:
                        self.engine.cuda()
                    return self.engine(batch)
            """,
            lines=(8,),
            fixed="""
            import deepspeed
            class Trainer:
                def __init__(self, model, cfg):
                    self.engine, self.optimizer, _, _ = deepspeed.initialize(model=model, config=cfg)
                def train(self, batch):
                    return self.engine(batch)
            """,
        ),
    )

    def __init__(self, context: ScriptContext) -> None:
        super().__init__(context)
        self._casts: list[tuple[cst.Call, str, str]] = []  # the engine's casts so far: call, receiver, dtype
        self.trainers = TrainerNames(context)
        self._prepares: list[cst.Call] = []  # `X.prepare(...)` calls
        self._unknown_moves: list[cst.Call] = []  # moves of something the facts do not know (maybe prepared)

    runs_on_partly_engine = True  # a loop some call hands the engine, others a plain module

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.trainers.consider_class(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.trainers.consider_assign(node)

    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) == "prepare":
            self._prepares.append(node)
        restores = self._restores(node)  # `.float()` too: a cast this rule leaves alone can be undone
        if not is_placement_call(node) or restores:
            return
        assert isinstance(node.func, cst.Attribute)
        answer = self.facts.role_of(node.func.value, at=node)
        if answer is None and self._report_partly(node):
            return
        if answer is None and not is_cast(node) and not moves_to_cpu(self.facts, node):
            self._unknown_moves.append(node)
        message = None
        if answer is not None and answer.role is Role.RAW_MODEL:
            if not self._moved_after_initialize(node, answer):
                return
            assert answer.init is not None
            message = self.module_message.format(line=self.context.span(answer.init.call)[0].line)
        elif answer is None or answer.role not in (Role.ENGINE, Role.ENGINE_MODULE):
            inference = inference_engine(self.facts, node.func.value, node)
            if inference is None or not (inference.splits and inference.places_module):
                return
            if is_cast(node) or moves_to_cpu(self.facts, node):
                return
            message = self.inference_message.format(line=self.context.span(inference.call)[0].line)
        self._report_move(node, message)

    def _report_partly(self, node: cst.Call) -> bool:
        """`model.to(device)` / `.cuda()` on a parameter that some call of the project hands the engine and others
        a plain module (a shared training function), outside any `if` of the function: wrong where that call
        passes the engine; the message names it. No fix: the plain callers need the move."""
        assert isinstance(node.func, cst.Attribute)
        engine = partly_passed(self.facts, node.func.value, node, ENGINE)
        if engine is None or self.facts.held_by(node) or is_cast(node) or moves_to_cpu(self.facts, node):
            return False
        found = evidence(self.context, engine)
        self.report(node, partly_prefix(engine) + self.message + found.suffix, related=found.related)
        return True

    def _report_move(self, node: cst.Call, message: str | None, related: Sequence[Related] = ()) -> None:
        self.report(
            node,
            message,
            related=related,
            edits=self._fix(node),
            applicability=Applicability.UNSAFE,
            fix_message=f"Remove `.{method_name(node)}(...)`",
        )

    def leave_Module(self, original_node: cst.Module) -> None:
        """Under accelerate running DeepSpeed: a move of what `accelerator.prepare` returned for the model (only a
        module has `.to(device)` / `.cuda()` among what prepare returns), bound by the prepare's assignment."""
        prepares = [
            c
            for c in self._prepares
            if isinstance(c.func, cst.Attribute) and self.trainers.names_accelerator(c.func.value)
        ]
        if not prepares or not self._unknown_moves:
            return
        run = accelerate_deepspeed(self.context)
        if run is None:
            return
        facts = self.facts
        for node in self._unknown_moves:
            assert isinstance(node.func, cst.Attribute)
            key = dotted_name(node.func.value)
            binding = facts.binding_at(key, facts.scope_at(node), facts.start(node), on_path=True) if key else None
            statement = binding.statement if binding is not None else None
            if not isinstance(statement, (cst.Assign, cst.AnnAssign)) or statement.value not in prepares:
                continue
            self._report_move(node, self.prepared_message.format(where=run.where), run.related)

    def _moved_after_initialize(self, node: cst.Call, answer: RoleAnswer) -> bool:
        """`.cuda()` / `.to(<device>)` (not a cast, not to the CPU) of the model handed to a `deepspeed.initialize`
        of this function, after that call on a path from it: the engine's own module, which it already placed."""
        facts, init = self.facts, answer.init
        if init is None or is_cast(node) or moves_to_cpu(facts, node) or facts.scope_at(node) is not init.scope:
            return False
        if facts.start(node) <= init.end or facts.paths.exclusive(init.call, node):
            return False
        # the initialize runs wherever the move does: the move is in the block that holds the initialize (or in
        # one nested in it), not in another arm (`if use_deepspeed: initialize(...)` then a move for both paths;
        # `try: initialize(...)` / `except: <move for the plain fallback>`)
        block = _innermost_block(facts, init.scope.node, init.call)
        return block is not None and _holds(facts, block, node)

    def _restores(self, node: cst.Call) -> bool:
        """Whether `node` casts the engine back from an earlier cast of the same receiver to another dtype, in
        the same function and on a path that reaches it (`.to(torch.float32)` for an export, then
        `.to(torch.float16)`): the earlier cast is the one to report; removing this one would leave the module
        in the wrong precision. Records `node` as a cast for the later calls."""
        dtype = cast_dtype(node, self.facts.code)
        if dtype is None or not isinstance(node.func, cst.Attribute):
            return False
        answer = self.facts.role_of(node.func.value, at=node)
        if answer is None or answer.role not in (Role.ENGINE, Role.ENGINE_MODULE):
            return False
        receiver = self.facts.code(node.func.value)
        scope = self.facts.scope_at(node)
        restores = any(
            earlier_receiver == receiver
            and earlier_dtype != dtype
            and self.facts.scope_at(earlier) is scope
            and not self.facts.paths.exclusive(earlier, node)
            for earlier, earlier_receiver, earlier_dtype in self._casts
        )
        self._casts.append((node, receiver, dtype))
        return restores

    def _fix(self, node: cst.Call) -> list[Edit]:
        edit = delete_call_statement(self.context, node)
        return [edit] if edit is not None else []


def _innermost_block(facts: ScriptFacts, function: cst.CSTNode, target: cst.CSTNode) -> cst.CSTNode | None:
    """The innermost block (`IndentedBlock`, or the module) of `function` holding `target`: down the one child
    that holds it at each level, by the facts' traversal positions."""
    found: cst.CSTNode | None = None
    node: cst.CSTNode | None = function
    while node is not None:
        if isinstance(node, (cst.IndentedBlock, cst.Module)):
            found = node
        node = next((child for child in children(node) if _holds(facts, child, target)), None)
    return found


def _holds(facts: ScriptFacts, node: cst.CSTNode, target: cst.CSTNode) -> bool:
    return facts.start(node) <= facts.start(target) and facts.end(target) <= facts.end(node)
