"""DSL306: torch autocast or a GradScaler around an engine whose config already enables fp16 or bf16."""

from __future__ import annotations

import functools

import libcst as cst

from dslint.config import facts as config_facts
from dslint.config.tree import UNKNOWN, Scalar, node_at
from dslint.diagnostics import Related, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.engine import Engine
from dslint.project.accelerate_deepspeed import accelerate_deepspeed
from dslint.project.config_link import resolve_config, training_arguments_configs
from dslint.project.evidence import config_evidence, evidence
from dslint.project.resolved_configs import ResolvedConfig
from dslint.project.trainer_matches import launched_precisions
from dslint.script.accelerate_prepared import prepared_forward, prepared_forward_in
from dslint.script.autocasts import autocast_in, grad_scaler
from dslint.script.engine_reach import (
    engine_forwarded,
    on_by_default,
    partly_engine_sources,
    partly_engines_in,
    partly_prefix,
    trainer_runs,
)
from dslint.script.facts import BindingKind, Role, method_name
from dslint.script.hf_trainers import TrainerNames
from dslint.script.loop import loop_facts
from dslint.script.names import dotted_name, literally_enabled
from dslint.script.walk import visit_tree


class TorchAmpWithEnginePrecision(ScriptRule):
    code = "DSL306"
    slug = "torch-amp-with-engine-precision"
    message = "the config's fp16/bf16 sets the precision and DeepSpeed turns this autocast off; remove it"
    autocast_template = (
        "the config enables {precision}, and DeepSpeed turns this autocast off in engine(...); remove it"
    )
    scaler_template = "the config enables {precision}: the engine scales the loss itself; remove the GradScaler"
    trainer_template = (
        "the Trainer's config enables {precision}, and the engine's forward turns this autocast off; remove it"
    )
    severity = Severity.WARNING
    runs_on_partly_engine = True
    # a Hugging Face Trainer, or accelerate's `prepare`, builds the engine itself
    runs_without_engine_on = ((b"autocast", b"Trainer"), (b"autocast", b"prepare", b"Accelerator"))
    docs = RuleDocs(
        what="""
            Flags `with torch.autocast(...)` (also `torch.cuda.amp.autocast`, `torch.amp.autocast`, or a name bound
            to one: `with ctx:`) whose body calls a DeepSpeed engine's forward (itself, or by handing the engine to
            a function of the file, or a method of the class, that calls that parameter outside `no_grad`), and
            `scaler.scale(loss)` with a torch `GradScaler` on a loss computed from an engine's output, when that
            engine's config is known (a dict literal or a JSON file) and enables `fp16` or `bf16`. An autocast
            switched on by a flag (`enabled=args.fp16`, `amp() if args.fp16 else nullcontext()`, or a name bound to
            `torch.cuda.amp.autocast if args.fp16 else nullcontext`) is flagged only when a dict written in the same
            function sets the engine's `fp16`/`bf16` `enabled` to that same flag (same name, same binding): both are
            then on together, or when the flag's attribute is an option of the script's own parser that defaults to
            `True` and no launch the project knows gives it (`enabled=params.use_fp16` after
            `add_argument("--use-fp16", default=True)`). An autocast chosen or switched by a device test
            (`nullcontext() if device_type == "cpu" else autocast(...)`, `enabled=(device.type == "cuda")`,
            `enabled=torch.cuda.is_available()`) is on for the GPU the engine trains on. Other flags, a scaler
            with a non-literal `enabled=`, a config that cannot be read, and a config whose `torch_autocast` section
            is on (the engine then runs its own autocast) are not flagged. A loop that some call of the project
            hands the engine and others a plain module (a training function shared by a DeepSpeed script and a plain
            one) is flagged where that call's engine runs with fp16/bf16, for an always-on autocast around the
            parameter's own forward and a scaler on its loss, outside any `if` of the function (an arm may be the
            plain path); the message names the call that passes the engine. An always-on autocast around
            `trainer.train()` of a Hugging Face Trainer is flagged when every DeepSpeed config it may run with (its
            `TrainingArguments(deepspeed=...)`, or the `--deepspeed` its launches give) enables fp16 or bf16
            literally, or writes `"auto"` there and every launch giving it passes `--bf16` or `--fp16`. Where
            accelerate runs DeepSpeed in fp16 or bf16 on every run (the script's `DeepSpeedPlugin` and its precision,
            or the YAML of every `accelerate launch`), an always-on autocast around the forward of a model
            `accelerator.prepare` returned, and a GradScaler on its loss, are flagged the same way (the model is the
            engine accelerate built).
        """,
        why="""
            With `fp16` or `bf16` enabled, the engine casts the module's parameters itself and, for fp16, scales
            the loss in `engine.backward` with its own (dynamic) loss scaler, which its optimizer unscales before
            stepping. Torch's automatic mixed precision on top is mixed precision twice. In DeepSpeed 0.19
            `engine.forward` detects an enclosing autocast and, unless the config's `torch_autocast` section is
            enabled, switches it off for the model's forward ("torch.autocast is enabled outside DeepSpeed but
            disabled within the DeepSpeed engine"), so the `with` block only changes the precision of the code
            around the engine call. A GradScaler multiplies the loss by its own factor (65536 at first), which
            the engine's optimizer never divides out: gradients are scaled wrong, and `scaler.step` /
            `scaler.update` bypass the engine.
        """,
        example="""
            # ds_config: {"bf16": {"enabled": true}, ...}
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = engine(batch)
            engine.backward(loss)
        """,
        use_instead="""
            # ds_config: {"bf16": {"enabled": true}, ...}
            loss = engine(batch)
            engine.backward(loss)
        """,
    )
    valid = (
        # the Trainer's config leaves the precision to its arguments ("auto"), or the autocast is a flag's
        Valid(
            """
            import torch
            from transformers import Trainer, TrainingArguments
            ds = {"train_micro_batch_size_per_gpu": "auto", "fp16": {"enabled": "auto"}}
            trainer = Trainer(model=model, args=TrainingArguments(output_dir="out", deepspeed=ds, fp16=True))
            with torch.autocast("cuda"):
                trainer.train()
            fixed = {"fp16": {"enabled": True}}
            tuned = Trainer(model=model, args=TrainingArguments(output_dir="out", deepspeed=fixed))
            with torch.autocast("cuda", enabled=args.amp):
                tuned.train()
            """
        ),
        # options that default to False, or whose action stores False when given: off as the script is run
        Valid(
            """
            import argparse
            import deepspeed
            import torch
            parser = argparse.ArgumentParser()
            parser.add_argument("--amp", type=str2bool, default=False)
            parser.add_argument("--no-amp", dest="keep_amp", action="store_false", default=True)
            args = parser.parse_args()
            engine, *_ = deepspeed.initialize(model=net, config={"fp16": {"enabled": True}})
            for batch in loader:
                with torch.cuda.amp.autocast(enabled=args.amp):
                    loss = engine(batch)
                with torch.cuda.amp.autocast(enabled=args.keep_amp):
                    loss = engine(batch)
                engine.backward(loss)
            """
        ),
        # the function the autocast's body hands the engine to runs its sub-modules, or runs it under no_grad
        Valid(
            """
            import deepspeed
            import torch
            def compute_loss(model, batch):
                features = model.encoder(batch)
                return model.decoder(features).loss
            @torch.no_grad()
            def score(model, batch):
                return model(batch)
            def rebound(model, batch):
                model = model.module
                return model(batch)
            engine, *_ = deepspeed.initialize(model=net, config={"fp16": {"enabled": True}})
            for batch in loader:
                with torch.autocast("cuda"):
                    loss = compute_loss(engine, batch)
                    scores = score(engine, batch)
                    again = rebound(engine, batch)
                engine.backward(loss)
            """
        ),
        # ... and off for it: the autocast runs only on the CPU, where no engine of this config trains
        Valid(
            """
            import deepspeed, torch
            device = torch.device("cuda", local_rank)
            config = {"train_batch_size": 8, "fp16": {"enabled": True}}
            engine, *_ = deepspeed.initialize(model=model, config=config)
            for batch in loader:
                with torch.amp.autocast("cpu", enabled=(device.type == "cpu")):
                    loss = engine(batch.to(device))
                engine.backward(loss)
            """
        ),
        # the autocast of a name chosen by the device: the config leaves fp16 and bf16 off
        Valid(
            """
            from contextlib import nullcontext
            import deepspeed, torch
            device_type = "cuda"
            ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type)
            engine, *_ = deepspeed.initialize(model=model, config={"train_batch_size": 8})
            def evaluate(x):
                with ctx:
                    return engine(x)
            """
        ),
        Valid(
            """
            import deepspeed
            import torch
            engine, _, _, _ = deepspeed.initialize(model=model, config={"train_batch_size": 8})
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = engine(batch)
            """
        ),
        Valid(
            """
            import deepspeed
            import torch
            engine, _, _, _ = deepspeed.initialize(model=model, config=args.deepspeed_config)
            with torch.cuda.amp.autocast():
                loss = engine(batch)
            """
        ),
        Valid(
            """
            import deepspeed
            import torch
            cfg = {"train_batch_size": 8, "bf16": {"enabled": True}}
            engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
            with torch.autocast("cuda", enabled=args.amp):
                loss = engine(batch)
            with torch.autocast("cuda"):
                reward = reward_model(batch)
            """
        ),
        Valid(
            """
            import deepspeed
            import torch
            cfg = {"train_batch_size": 8, "bf16": {"enabled": True}, "torch_autocast": {"enabled": True}}
            engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = engine(batch)
            """
        ),
        Valid(
            """
            import contextlib
            import deepspeed
            import torch
            def train(args, model, loader):
                cfg = {"train_batch_size": 8, "fp16": {"enabled": args.fp16}}
                engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
                amp = torch.cuda.amp.autocast if args.amp else contextlib.nullcontext
                for batch in loader:
                    with torch.autocast("cuda", enabled=args.amp):
                        loss = engine(batch)
                    with amp():
                        loss = engine(batch)
                    with torch.autocast("cuda", enabled=not args.fp16):
                        loss = engine(batch)
            """
        ),
        Valid(
            """
            import deepspeed
            import torch
            def build(args, model):
                cfg = {"train_batch_size": 8, "fp16": {"enabled": args.fp16}}
                return deepspeed.initialize(model=model, config=cfg)[0]
            def train(args, engine, loader):
                for batch in loader:
                    with torch.autocast("cuda", enabled=args.fp16):
                        loss = engine(batch)
            """
        ),
    )
    invalid = (
        Invalid(  # the model accelerate prepared is the engine; its plugin runs bf16
            """
            import torch
            from accelerate import Accelerator, DeepSpeedPlugin
            plugin = DeepSpeedPlugin(zero_stage=2)
            accelerator = Accelerator(mixed_precision="bf16", deepspeed_plugin=plugin)
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            for batch in loader:
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = model(batch).mean()
                accelerator.backward(loss)
            """,
            lines=(8,),
        ),
        # the Hugging Face Trainer runs the engine's forward: every config it may get enables a precision
        Invalid(
            """
            import torch
            from transformers import Trainer, TrainingArguments
            ds = {"train_micro_batch_size_per_gpu": "auto", "fp16": {"enabled": True}}
            trainer = Trainer(model=model, args=TrainingArguments(output_dir="out", deepspeed=ds))
            with torch.autocast("cuda"):
                trainer.train()
            """,
            lines=(6,),
        ),
        # switched on by an option of the script's parser that defaults to True (no launch gives it)
        Invalid(
            """
            import argparse
            import deepspeed
            import torch
            parser = argparse.ArgumentParser()
            parser.add_argument("--use-fp16", type=str2bool, default=True)
            params = Params(vars(parser.parse_args()))
            engine, *_ = deepspeed.initialize(model=net, config={"fp16": {"enabled": True}})
            for batch in loader:
                with torch.cuda.amp.autocast(enabled=params.use_fp16):
                    loss = engine(batch)
                engine.backward(loss)
            """,
            lines=(10,),
        ),
        # the engine's forward inside a function of the file the autocast's body calls with the engine
        Invalid(
            """
            import deepspeed
            import torch
            def compute_loss(model, batch, training):
                with torch.set_grad_enabled(training):
                    return model(batch).loss
            class Runner:
                def step(self, net, batch):
                    return net.forward(batch).loss
                def train(self, loader):
                    self.engine, *_ = deepspeed.initialize(model=net, config={"bf16": {"enabled": True}})
                    for batch in loader:
                        with torch.autocast("cuda", dtype=torch.bfloat16):
                            loss = self.step(self.engine, batch)
                        self.engine.backward(loss)
            engine, *_ = deepspeed.initialize(model=net, config={"bf16": {"enabled": True}})
            for batch in loader:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = compute_loss(model=engine, batch=batch, training=True)
                engine.backward(loss)
            """,
            lines=(13, 18),
        ),
        # `enabled=` a device test: on for the GPU the engine trains on (the kind of a torch.device, CUDA present)
        Invalid(
            """
            import deepspeed, torch
            device = torch.device("cuda", local_rank)
            config = {"train_batch_size": 8, "fp16": {"enabled": True}}
            engine, *_ = deepspeed.initialize(model=model, config=config)
            for batch in loader:
                with torch.amp.autocast("cuda", dtype=torch.float16, enabled=(device.type == "cuda")):
                    loss = engine(batch.to(device))
                engine.backward(loss)
            """,
            lines=(7,),
        ),
        Invalid(
            """
            import deepspeed, torch
            config = {"train_batch_size": 8, "bf16": {"enabled": True}}
            engine, *_ = deepspeed.initialize(model=model, config=config)
            with torch.autocast("cuda", enabled=torch.cuda.is_available()):
                score = engine(batch)
            """,
            lines=(5,),
        ),
        # a name bound to the autocast, chosen by a device test that picks it on the GPU the engine trains on
        Invalid(
            """
            from contextlib import nullcontext
            import deepspeed, torch
            device_type = "cuda"
            ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type)
            config = {"train_batch_size": 8, "fp16": {"enabled": True}}
            engine, *_ = deepspeed.initialize(model=model, config=config)
            def evaluate(x):
                with ctx:
                    return engine(x)
            """,
            lines=(9,),
        ),
        Invalid(
            """
            import deepspeed
            import torch
            cfg = {"train_batch_size": 8, "bf16": {"enabled": True}}
            engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
            for batch in loader:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = engine(batch)
                engine.backward(loss)
                engine.step()
            """,
            lines=(7,),
        ),
        Invalid(
            """
            import deepspeed
            from torch.cuda.amp import GradScaler, autocast
            def main():
                model, _, _, _ = deepspeed.initialize(model=net, config={"fp16": {"enabled": True}})
                scaler = GradScaler()
                for batch in loader:
                    with autocast():
                        loss = model(batch).loss
                    model.backward(scaler.scale(loss))
                    model.step()
            """,
            lines=(8, 10),
        ),
        Invalid(
            """
            from contextlib import nullcontext
            import deepspeed
            import torch
            def train(args, model, loader):
                cfg = {"train_batch_size": 8, "fp16": {"enabled": args.use_fp16}}
                engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
                amp = torch.cuda.amp.autocast if args.use_fp16 else nullcontext
                for batch in loader:
                    with torch.cuda.amp.autocast(enabled=args.use_fp16):
                        loss = engine(batch)
                    with amp():
                        loss = engine(batch)
                    with torch.autocast("cuda") if args.use_fp16 else nullcontext():
                        loss = engine(batch)
            """,
            lines=(10, 12, 14),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.loop = loop_facts(self.facts)
        self.precisions: dict[tuple[int, int], str | None] = {}
        self.trainers = TrainerNames(self.context)
        self.trainer_runs: list[tuple[cst.CSTNode, cst.BaseExpression]] = []  # (autocast, `trainer`) of `.train()`
        self.accelerated: list[tuple[cst.CSTNode, str]] = []  # autocasts and scalers around a prepared model

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.trainers.consider_class(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.trainers.consider_assign(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        self._report_accelerated()
        self._report_trainer_runs()

    def _report_accelerated(self) -> None:
        """An autocast around the forward of a model `accelerator.prepare` returned, or a GradScaler on its loss,
        where accelerate runs DeepSpeed in fp16 or bf16 on every run (`accelerate_deepspeed`): the engine it built
        sets the precision and scales the loss itself."""
        run = accelerate_deepspeed(self.context) if self.accelerated else None
        if run is None or run.half is not True or run.precision is None:
            return
        for node, kind in self.accelerated:
            what = "turns this autocast off in the engine" if kind == "autocast" else "handles loss scaling itself"
            message = f"accelerate's DeepSpeed runs {run.precision} and {what}; remove it ({run.where})"
            self.report(node, message, related=run.related)

    def _report_trainer_runs(self) -> None:
        """`with torch.autocast(...): trainer.train()` where every DeepSpeed config the script's Hugging Face
        Trainer may run with enables fp16 or bf16, or has them "auto" and every launch giving it turns one on
        (`launched_precisions`): the Trainer runs the engine's forward, which switches the autocast off."""
        runs = [(call, name) for call, name in self.trainer_runs if self.trainers.holds_trainer(name)]
        configs = training_arguments_configs(self.context) if runs else []
        if not configs:
            return
        precisions: set[str] = set()
        filled: list[Related] = []  # `"enabled": "auto"`: where the launches' --fp16/--bf16 fill it
        for config in configs:
            if config.get("torch_autocast", "enabled") not in (None, False):
                return
            precision = "fp16" if config.fp16_enabled is True else "bf16" if config.bf16_enabled is True else None
            launched = launched_precisions(self.context, config) if precision is None else ({precision}, [])
            if launched is None:
                return
            precisions, filled = precisions | launched[0], filled + launched[1]
        found = config_evidence(configs)
        message = self.trainer_template.format(precision=" or ".join(sorted(precisions)))
        for call, _ in runs:
            self.report(call, message + found.suffix, related=(*found.related, *dict.fromkeys(filled)))

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            autocast = autocast_in(self.facts, item.item)
            if autocast is None:
                continue
            call, condition = autocast
            engine = self._engine_precision_in(node.body, condition)
            prefix = ""
            if engine is None and condition is None and not self.facts.held_by(node):
                engine = self._first_precise(partly_engines_in(self.facts, node.body))
                prefix = self._partly_prefix(engine)
            if engine is not None:
                precision, source = engine
                found = evidence(self.context, source)  # an engine from another function or module says where
                message = prefix + self.autocast_template.format(precision=precision)
                self.report(call, message + found.suffix, related=found.related)
            elif condition is None:
                self.trainer_runs.extend((call, name) for name in trainer_runs(node.body))
                if "prepare" in self.context.text and prepared_forward_in(self.facts, self.trainers, node.body):
                    self.accelerated.append((call, "autocast"))

    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) != "scale" or len(node.args) != 1:
            return
        assert isinstance(node.func, cst.Attribute)
        key = dotted_name(node.func.value)
        if key is None:
            return
        binding = self.facts.binding_at(key, self.facts.scope_at(node.func.value), self.facts.start(node))
        value = grad_scaler(
            self.facts, binding.value if binding is not None and binding.kind is BindingKind.OTHER else None
        )
        if value is None:
            return
        if not literally_enabled(value):
            return
        sources = self.loop.engine_sources(node.args[0].value)
        for use in sources:
            precision = self._precision(use.engine)
            if precision is not None:
                self.report(node, self.scaler_template.format(precision=precision))
                return
        forward = functools.partial(prepared_forward, self.facts, self.trainers)
        if not sources and self.loop.derived_from(node.args[0].value, forward):
            self.accelerated.append((node, "scaler"))
        if not self.facts.held_by(node):
            partly = self._first_precise(partly_engine_sources(self.facts, node.args[0].value))
            if partly is not None:
                found = evidence(self.context, partly[1])
                message = self._partly_prefix(partly) + self.scaler_template.format(precision=partly[0])
                self.report(node, message + found.suffix, related=found.related)

    def _first_precise(self, engines: list[Engine]) -> tuple[str, Engine] | None:
        """The first engine whose config enables fp16 or bf16, with that precision."""
        found = ((self._precision(engine), engine) for engine in engines)
        return next(((precision, engine) for precision, engine in found if precision is not None), None)

    @staticmethod
    def _partly_prefix(found: tuple[str, Engine] | None) -> str:
        return partly_prefix(found[1]) if found is not None else ""

    def _engine_precision_in(
        self, body: cst.CSTNode, condition: cst.BaseExpression | None
    ) -> tuple[str, Engine] | None:
        found: list[tuple[str, Engine]] = []
        rule = self

        class Calls(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> None:
                answer = rule.loop.engine_of_forward(node)
                if answer is None:  # `compute_loss(model=engine, ...)`, a function of this file calling `model(...)`
                    answer = engine_forwarded(rule.facts, rule.context.module, node)
                if answer is not None and answer.role is Role.ENGINE:
                    precision = rule._precision(answer.engine, condition)
                    if precision is not None:
                        found.append((precision, answer.engine))

            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return False

        visit_tree(body, Calls())  # read only: without libcst's rebuilding of every node
        return found[0] if found else None

    def _precision(self, engine: Engine, condition: cst.BaseExpression | None = None) -> str | None:
        """ "fp16" or "bf16" when the engine's config is known to enable it whenever the autocast (or scaler) is
        on: always (`condition` None), or by the same flag that switches the autocast on; else None. None too
        when the config's `torch_autocast` section is on: the engine then runs its own autocast, not none."""
        key = (id(engine), id(condition))
        if key not in self.precisions:
            config = resolve_config(self.context, engine)
            precision = None
            if config is not None and config.get("torch_autocast", "enabled") in (None, False):
                for name in ("fp16", config_facts.bf16_section(config.tree) if config.tree else "bf16"):
                    enabled = config.fp16_enabled if name == "fp16" else config.bf16_enabled
                    if condition is None or on_by_default(self.facts, self.loop.calls, condition):
                        on = enabled is True
                    else:
                        on = self._same_flag(config, name, condition)
                    if on:
                        precision = name
                        break
            self.precisions[key] = precision
        return self.precisions[key]

    def _same_flag(self, config: ResolvedConfig, section: str, condition: cst.BaseExpression) -> bool:
        """The config, a dict written in this file, sets `section.enabled` to the very value that switches the
        autocast on: the same name or attribute chain (`args.fp16`), its root bound by the same binding."""
        node = node_at(config.tree, section, "enabled") if config.path is None and config.tree else None
        if not isinstance(node, Scalar) or node.value is not UNKNOWN:
            return False
        flag = dotted_name(condition)
        if flag is None:
            return False
        written = next(
            (
                n
                for n, r in self.context.positions.items()
                if isinstance(n, (cst.Name, cst.Attribute))
                and (r.start.line, r.start.column + 1, r.end.line, r.end.column + 1)
                == (node.start.line, node.start.column, node.end.line, node.end.column)
            ),
            None,
        )
        if written is None or dotted_name(written) != flag:
            return False
        root = flag.split(".")[0]
        facts = self.facts
        here = facts.binding_at(root, facts.scope_at(condition), facts.start(condition))
        there = facts.binding_at(root, facts.scope_at(written), facts.start(written))
        return here is not None and here is there
