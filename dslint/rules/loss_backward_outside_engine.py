"""DSL301: `loss.backward()` on a loss computed from the engine's output, instead of `engine.backward(loss)`."""

from __future__ import annotations

import functools

import libcst as cst

from dslint.config.versions import DIRECT_BACKWARD_SINCE
from dslint.diagnostics import Applicability, Edit, Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.engine import Engine
from dslint.project.accelerate_deepspeed import accelerate_deepspeed
from dslint.project.config_link import resolve_config
from dslint.project.evidence import evidence
from dslint.script.accelerate_prepared import prepared_forward
from dslint.script.divided_loss import only_engine_backward_reads
from dslint.script.edits import replace_node
from dslint.script.engine_reach import partly_engine_sources, partly_prefix
from dslint.script.facts import Role, method_name
from dslint.script.hf_trainers import TrainerNames
from dslint.script.loop import divided_by_accumulation, is_accumulation_steps, loop_facts, scaled_for_accumulation
from dslint.script.names import dotted_name
from dslint.script.value_flow import value_flow

# Before 0.18.3 the direct call neither fails nor works: an error, whatever the config.
SILENTLY_WRONG = "call engine.backward(loss), not loss.backward(): before 0.18.3 DeepSpeed skips scaling silently"


class LossBackwardOutsideEngine(ScriptRule):
    code = "DSL301"
    slug = "loss-backward-outside-engine"
    message = "call engine.backward(loss), not loss.backward(): the engine scales and reduces gradients"
    severity = Severity.WARNING
    accelerate_message = "accelerate runs DeepSpeed: only accelerator.backward(loss) steps the engine, not this"
    deepspeed_versions = (
        "every release: an error before 0.18.3 (the direct call is silently wrong there, whatever the config); "
        "from 0.18.3 a warning, and silent for configs known to use ZeRO without fp16"
    )
    docs = RuleDocs(
        what="""
            Flags `x.backward()` where `x` is computed from the output of a DeepSpeed engine's forward pass
            (`engine(batch)`, `engine.module(batch)`, `engine.forward(batch)`, or a function the engine is passed
            to, such as `compute_loss(engine, batch)`), traced through assignments in the same function.
            In a function that some call of the project hands the engine and others a plain module (a loop shared
            by a DeepSpeed script and a plain one), such a call outside any `if` of the function is flagged too,
            naming the call that passes the engine (no fix: the plain callers need it).
            A loss that does not come from an engine (another model trained with plain PyTorch beside it, or a
            value computed from `output.detach()`) is not flagged, nor is one whose origin cannot be traced (a
            function parameter, another function's result). When the engine's config is known to use ZeRO
            (stage 1 to 3) without fp16, where DeepSpeed >= 0.18.3 supports the direct call, nothing is reported.
            On a project that runs DeepSpeed before 0.18.3 (`deepspeed-version`, or its pins) every such call is
            an error, whatever the config: the direct call is silently wrong there.
            Where accelerate runs DeepSpeed (the script's `DeepSpeedPlugin`, or `accelerate launch` with a
            DEEPSPEED YAML), `loss.backward()` (`scaler.scale(loss).backward()`) on the output of a model
            `accelerator.prepare` returned is an error in every release: the engine accelerate built steps
            only inside `accelerator.backward(loss)`, and the prepared optimizer's `step()` does nothing.
        """,
        why="""
            `DeepSpeedEngine.backward(loss)` divides the loss by `gradient_accumulation_steps`, applies the fp16
            loss scale, and runs the engine's backward prologue and epilogue, which reduce (ZeRO: reduce-scatter)
            the gradients across ranks. Before DeepSpeed 0.18.3 a direct `loss.backward()` silently skipped all
            of that. Since then it is supported only for ZeRO optimizers: it raises "Loss scaling is required
            for this configuration" with fp16 and "Direct calls to tensor.backward() are not supported in this
            configuration" without ZeRO (stage 0).
        """,
        example="""
            loss = criterion(model_engine(inputs), labels)
            loss.backward()
            model_engine.step()
        """,
        use_instead="""
            loss = criterion(model_engine(inputs), labels)
            model_engine.backward(loss)
            model_engine.step()
        """,
        fix_safety="""
            The fix rewrites `loss.backward()` to `engine.backward(loss)` (keeping `retain_graph=`) when exactly
            one name holds that engine at the call. It is safe: where the direct call worked (ZeRO, no fp16,
            DeepSpeed >= 0.18.3) the engine scales and reduces in the same way, and elsewhere it is the only
            correct call. When the loss was divided by the accumulation steps by hand, the fix is unsafe:
            `engine.backward` divides it again (DSL304 then reports and removes the division); it is offered
            only when that division then feeds nothing but `engine.backward` calls, so that DSL304 can remove
            it: not when the same divided loss also reaches an fp16 branch's `optimizer.backward(loss)`, a log
            line or a return, which need the division. There is no fix when the
            engine's name is not certain, when `backward` gets other
            arguments (`gradient=`, `inputs=`), or when the receiver is not a plain name.
        """,
    )
    valid = (
        Valid(  # accelerate without DeepSpeed: the prepared model is a plain (or DDP) module
            """
            from accelerate import Accelerator
            accelerator = Accelerator()
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            for batch in loader:
                model(batch).mean().backward()
                optimizer.step()
            """
        ),
        Valid(
            """
            from accelerate import Accelerator, DeepSpeedPlugin
            accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2))
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            for batch in loader:
                accelerator.backward(model(batch).mean())
                optimizer.step()
            """
        ),
        # the engine rebound to its own name through a conversion helper is still the engine; so is a name that
        # initialize binds in both arms of an `if`
        Valid(
            """
            import deepspeed
            def train(args, model, loader):
                if args.curriculum:
                    model, _, loader, _ = deepspeed.initialize(args=args, model=model, training_data=data)
                else:
                    model, _, _, _ = deepspeed.initialize(args=args, model=model)
                if args.sparse_layers:
                    model = convert_layers(model, Block)
                for batch in loader:
                    loss = model(batch)
                    model.backward(loss)
            """
        ),
        Valid(
            """
            import deepspeed
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds.json")
            for x, y in loader:
                loss = criterion(engine(x.to(engine.device)), y)
                engine.backward(loss)
                engine.step()
            """
        ),
        Valid(
            """
            import deepspeed
            engine, _, _, _ = deepspeed.initialize(model=model, config="ds.json")
            d_optimizer = torch.optim.Adam(discriminator.parameters())
            for x in loader:
                x = x.to(engine.device)
                fake = engine(torch.randn(8, 64))
                d_loss = discriminator(x).mean() - discriminator(fake.detach()).mean()
                d_loss.backward()
                d_optimizer.step()
            """
        ),
        Valid(
            """
            import deepspeed
            cfg = {"train_batch_size": 8, "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}
            engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
            loss = engine(x).mean()
            loss.backward()
            engine.step()
            """
        ),
        Valid(
            """
            import deepspeed
            def train_step(engine, batch):
                loss = engine(batch)
                loss.backward()
            """
        ),
        Valid(
            """
            import deepspeed
            if args.deepspeed:
                model, _, _, _ = deepspeed.initialize(model=model, config="ds.json")
                loss = model(x)
                model.backward(loss)
            else:
                loss = model(x)
                loss.backward()
            """
        ),
    )
    invalid = (
        Invalid(  # the engine accelerate builds steps only in accelerator.backward
            """
            import torch
            from accelerate import Accelerator, DeepSpeedPlugin
            accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2))
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            scaler = torch.cuda.amp.GradScaler()
            for batch in loader:
                loss = model(batch).mean()
                scaler.scale(loss).backward()
                scaler.step(optimizer)
            """,
            lines=(9,),
        ),
        # a loop shared by a DeepSpeed script (ZeRO-0: the direct call is not supported) and a plain one; under the
        # `if` an arm may be the plain path
        Invalid(
            """
            def train(model, optimizer, loader, plain=False):
                for batch in loader:
                    loss = model(batch).mean()
                    loss.backward()
                    if plain:
                        loss.backward()
            """,
            lines=(5,),
            path="loop.py",
            files=(
                (
                    "ds_train.py",
                    "import deepspeed\nfrom loop import train\n"
                    'engine, opt, _, _ = deepspeed.initialize(model=net, config={"train_batch_size": 8})\n'
                    "train(engine, opt, loader)\n",
                ),
                ("plain.py", "from loop import train\ntrain(net, opt, x, plain=True)\n"),
            ),
        ),
        # a value computed from the engine by a helper (not the engine bound back to its name) is an output
        Invalid(
            """
            import deepspeed
            def train(args, model, loader):
                model, _, _, _ = deepspeed.initialize(args=args, model=model)
                for batch in loader:
                    loss = language_model_loss(model, batch)
                    loss.backward()
            """,
            lines=(7,),
            fixed="""
            import deepspeed
            def train(args, model, loader):
                model, _, _, _ = deepspeed.initialize(args=args, model=model)
                for batch in loader:
                    loss = language_model_loss(model, batch)
                    model.backward(loss)
            """,
        ),
        Invalid(
            """
            import deepspeed
            def train(args, model, params, loader):
                model, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=params)
                for step, batch in enumerate(loader):
                    loss = model(batch)
                    if args.gradient_accumulation_steps > 1:
                        loss = loss / args.gradient_accumulation_steps
                    if args.fp16:
                        optimizer.backward(loss)
                    else:
                        loss.backward()
            """,
            lines=(12,),
            # model.backward(loss) would divide again, and the division must stay for the fp16 branch: no fix.
            fixed="""
            import deepspeed
            def train(args, model, params, loader):
                model, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=params)
                for step, batch in enumerate(loader):
                    loss = model(batch)
                    if args.gradient_accumulation_steps > 1:
                        loss = loss / args.gradient_accumulation_steps
                    if args.fp16:
                        optimizer.backward(loss)
                    else:
                        loss.backward()
            """,
        ),
        Invalid(
            """
            import deepspeed
            cfg = {"train_batch_size": 8, "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}
            engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
            loss = engine(x).mean()
            loss.backward()
            engine.step()
            """,
            lines=(6,),
            deepspeed_version="0.17.6",
            fixed="""
            import deepspeed
            cfg = {"train_batch_size": 8, "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}
            engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
            loss = engine(x).mean()
            engine.backward(loss)
            engine.step()
            """,
        ),
        Invalid(
            """
            import deepspeed
            model_engine, optimizer, _, _ = deepspeed.initialize(args=args, model=net, model_parameters=params)
            for inputs, labels in loader:
                outputs = model_engine(inputs.to(model_engine.local_rank))
                loss = criterion(outputs, labels)
                loss.backward()
                model_engine.step()
            """,
            lines=(7,),
            fixed="""
            import deepspeed
            model_engine, optimizer, _, _ = deepspeed.initialize(args=args, model=net, model_parameters=params)
            for inputs, labels in loader:
                outputs = model_engine(inputs.to(model_engine.local_rank))
                loss = criterion(outputs, labels)
                model_engine.backward(loss)
                model_engine.step()
            """,
        ),
        Invalid(
            """
            import deepspeed
            def main():
                model, optimizer, _, scheduler = deepspeed.initialize(model=model, config=cfg)
                for batch in loader:
                    outputs = model(**batch)
                    outputs.loss.backward(retain_graph=True)
                    model.step()
            """,
            lines=(7,),
            fixed="""
            import deepspeed
            def main():
                model, optimizer, _, scheduler = deepspeed.initialize(model=model, config=cfg)
                for batch in loader:
                    outputs = model(**batch)
                    model.backward(outputs.loss, retain_graph=True)
                    model.step()
            """,
        ),
        Invalid(
            """
            import deepspeed
            class Trainer:
                def __init__(self, net, cfg):
                    self.model_engine, _, _, _ = deepspeed.initialize(model=net, config=cfg)
                def train_step(self, batch):
                    loss, logits = compute_loss(self.model_engine, batch)
                    loss /= 2
                    loss.backward()
            """,
            lines=(9,),
            fixed="""
            import deepspeed
            class Trainer:
                def __init__(self, net, cfg):
                    self.model_engine, _, _, _ = deepspeed.initialize(model=net, config=cfg)
                def train_step(self, batch):
                    loss, logits = compute_loss(self.model_engine, batch)
                    loss /= 2
                    self.model_engine.backward(loss)
            """,
        ),
        Invalid(
            """
            import deepspeed
            a, *_ = deepspeed.initialize(model=m1, config={"zero_optimization": {"stage": 1}, "fp16": {}})
            b, *_ = deepspeed.initialize(model=m2, config=cfg)
            loss = a(x).sum() + b(x).sum()
            loss.backward()
            (loss * 2).backward()
            """,
            lines=(6, 7),
        ),
    )

    runs_on_partly_engine = True  # a loop some call hands the engine, others a plain module
    needs_engine = False  # also the engine accelerate builds in `prepare` (no initialize in the file)
    alternative_tokens = ((b"backward", b"prepare", b"Accelerator"),)
    call_shapes = (
        Shape(methods=("backward",), engine=True),
        Shape(methods=("backward",), words=(b"prepare", b"Accelerator"), configured=True),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.loop = loop_facts(self.facts)
        self.trainers = TrainerNames(self.context)
        self.untraced: list[cst.Call] = []  # backward calls on no engine's output: maybe a prepared model's

    def visit_Assign(self, node: cst.Assign) -> None:
        self.trainers.consider_assign(node)

    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) != "backward":
            return
        assert isinstance(node.func, cst.Attribute)
        receiver = node.func.value
        answer = self.facts.role_of(receiver, at=node)
        if answer is not None and answer.role in (Role.ENGINE, Role.ENGINE_MODULE):
            return  # engine.backward(loss) itself
        sources = self.loop.engine_sources(receiver)
        version = self.context.deepspeed_version
        silently_wrong = version < DIRECT_BACKWARD_SINCE
        if not sources:
            self.untraced.append(node)
        if not sources and not self.facts.held_by(node):
            self._report_partly(node, receiver, silently_wrong)
            return
        if not sources or (not silently_wrong and all(self._direct_backward_supported(use.engine) for use in sources)):
            return
        edits: list[Edit] = []
        engine = self.loop.certain_engine_name(sources[0].engine, at=node) if len(sources) == 1 else None
        if engine is not None and self._plain_receiver(receiver) and self._simple_arguments(node):
            arguments = [self.context.code(receiver)] + [self.context.code(arg).rstrip(", ") for arg in node.args]
            edits.append(replace_node(self.context, node, f"{engine}.backward({', '.join(arguments)})"))
        message = self.message if not silently_wrong else SILENTLY_WRONG.format(version=version)
        if engine is not None:
            message = message.replace("engine.backward", f"{engine}.backward")
        # A loss already divided by the accumulation steps would be divided again by engine.backward (DSL304).
        scaled = scaled_for_accumulation(self.facts, receiver)
        if scaled and not self._division_can_go(receiver):
            edits = []  # the division must stay for another path, where this call would scale twice
        self.report(
            node,
            message,
            edits=edits,
            applicability=Applicability.UNSAFE if scaled else Applicability.SAFE,
            fix_message=f"Replace with `{engine}.backward(...)`",
            severity=Severity.ERROR if silently_wrong else None,
        )

    def leave_Module(self, original_node: cst.Module) -> None:
        """Under accelerate with DeepSpeed: `loss.backward()` on the output of a model `accelerator.prepare`
        returned (the engine accelerate built): only `accelerator.backward(loss)` runs the engine's backward and
        step; the prepared optimizer's `step()` does nothing (`DeepSpeedOptimizerWrapper`)."""
        if not self.untraced or "prepare" not in self.context.text:
            return
        forward = functools.partial(prepared_forward, self.facts, self.trainers)
        candidates = [c for c in self.untraced if self.loop.derived_from(c.func, forward)]
        run = accelerate_deepspeed(self.context) if candidates else None
        if run is None:
            return
        for node in candidates:
            self.report(node, f"{self.accelerate_message} ({run.where})", related=run.related, severity=Severity.ERROR)

    def _report_partly(self, node: cst.Call, receiver: cst.BaseExpression, silently_wrong: bool) -> None:
        """`loss.backward()` on the output of a parameter that some call of the project hands the engine and
        others a plain module (a shared training loop), outside any `if` of the function: wrong where that call
        passes the engine; the message names it. No fix: the plain callers need the call."""
        engines = partly_engine_sources(self.facts, receiver)
        if not engines or (not silently_wrong and self._direct_backward_supported(engines[0])):
            return
        engine = engines[0]
        message = self.message if not silently_wrong else SILENTLY_WRONG.format(version=self.context.deepspeed_version)
        found = evidence(self.context, engine)
        severity = Severity.ERROR if silently_wrong else None
        self.report(node, partly_prefix(engine) + message + found.suffix, related=found.related, severity=severity)

    def _direct_backward_supported(self, engine: Engine) -> bool:
        """ZeRO without fp16, known from the config: `tensor.backward()` works there since DeepSpeed 0.18.3."""
        config = resolve_config(self.context, engine)
        if config is None:
            return False
        stage = config.zero_stage
        return stage is not None and stage >= 1 and config.fp16_enabled is False

    def _division_can_go(self, receiver: cst.BaseExpression) -> bool:
        """Whether every division by the accumulation steps that reaches `receiver` feeds only
        `engine.backward` calls once this call is one too (so DSL304 then removes it); else no fix."""
        if not isinstance(receiver, cst.Name):
            return False
        facts = self.facts
        reaching = value_flow(facts, facts.scope_at(receiver).node).definitions_reaching(receiver)
        if reaching is None:
            return False
        for definition in reaching:
            target = _divided_target(definition)
            if target is not None and not only_engine_backward_reads(
                facts, definition, target, also_covered=frozenset({id(receiver)})
            ):
                return False
        return True

    @staticmethod
    def _plain_receiver(receiver: cst.BaseExpression) -> bool:
        return dotted_name(receiver) is not None or (
            isinstance(receiver, cst.Subscript) and dotted_name(receiver.value) is not None
        )

    @staticmethod
    def _simple_arguments(call: cst.Call) -> bool:
        return all(arg.keyword is not None and arg.keyword.value == "retain_graph" for arg in call.args)


def _divided_target(statement: cst.CSTNode) -> cst.Name | None:
    """The name `loss /= accum` or `loss = <x> / accum` binds, else None."""
    if (
        isinstance(statement, cst.AugAssign)
        and isinstance(statement.target, cst.Name)
        and isinstance(statement.operator, cst.DivideAssign)
        and is_accumulation_steps(statement.value)
    ):
        return statement.target
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        target = statement.targets[0].target
        if isinstance(target, cst.Name) and divided_by_accumulation(statement.value) is not None:
            return target
    return None
