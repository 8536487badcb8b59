"""DSL306: torch autocast or a GradScaler around an engine whose config already enables fp16 or bf16."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.engine import Engine
from dslint.project.config_link import resolve_config
from dslint.project.evidence import evidence
from dslint.script.facts import BindingKind, Role, method_name
from dslint.script.loop import loop_facts
from dslint.script.names import dotted_name, literally_enabled

AUTOCAST = frozenset(
    {
        "torch.autocast",
        "torch.amp.autocast",
        "torch.cuda.amp.autocast",
        "torch.cpu.amp.autocast",
        "torch.amp.autocast_mode.autocast",
    }
)
GRAD_SCALER = frozenset({"torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.GradScaler"})


class TorchAmpWithEnginePrecision(ScriptRule):
    code = "DSL306"
    slug = "torch-amp-with-engine-precision"
    message = "the config's fp16/bf16 sets the precision and DeepSpeed turns this autocast off; remove it"
    autocast_template = (
        "the config enables {precision}, and DeepSpeed turns this autocast off in engine(...); remove it"
    )
    scaler_template = "the config enables {precision}: the engine scales the loss itself; remove the GradScaler"
    severity = Severity.WARNING
    docs = RuleDocs(
        what="""
            Flags `with torch.autocast(...)` (also `torch.cuda.amp.autocast`, `torch.amp.autocast`) whose body
            calls a DeepSpeed engine's forward, and `scaler.scale(loss)` with a torch `GradScaler` on a loss
            computed from an engine's output, when that engine's config is known (a dict literal or a JSON file)
            and enables `fp16` or `bf16`. An autocast or scaler created with a non-literal `enabled=` is not
            flagged, nor is anything when the config cannot be read.
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
    )
    invalid = (
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
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.loop = loop_facts(self.facts)
        self.precisions: dict[int, str | None] = {}

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            call = item.item
            if not isinstance(call, cst.Call) or self.facts.qualified(call.func) not in AUTOCAST:
                continue
            if not literally_enabled(call):
                continue
            engine = self._engine_precision_in(node.body)
            if engine is not None:
                precision, source = engine
                found = evidence(self.context, source)  # an engine from another function or module says where
                self.report(
                    call, self.autocast_template.format(precision=precision) + found.suffix, related=found.related
                )

    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) != "scale" or len(node.args) != 1:
            return
        assert isinstance(node.func, cst.Attribute)
        key = dotted_name(node.func.value)
        if key is None:
            return
        binding = self.facts.binding_at(key, self.facts.scope_at(node.func.value), self.facts.start(node))
        value = binding.value if binding is not None and binding.kind is BindingKind.OTHER else None
        if not isinstance(value, cst.Call) or self.facts.qualified(value.func) not in GRAD_SCALER:
            return
        if not literally_enabled(value):
            return
        for use in self.loop.engine_sources(node.args[0].value):
            precision = self._precision(use.engine)
            if precision is not None:
                self.report(node, self.scaler_template.format(precision=precision))
                return

    def _engine_precision_in(self, body: cst.CSTNode) -> tuple[str, Engine] | None:
        found: list[tuple[str, Engine]] = []
        rule = self

        class Calls(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> None:
                answer = rule.loop.engine_of_forward(node)
                if answer is not None and answer.role is Role.ENGINE:
                    precision = rule._precision(answer.engine)
                    if precision is not None:
                        found.append((precision, answer.engine))

            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return False

        body.visit(Calls())
        return found[0] if found else None

    def _precision(self, engine: Engine) -> str | None:
        """ "fp16" or "bf16" when the engine's config is known to enable it, else None."""
        if id(engine) not in self.precisions:
            config = resolve_config(self.context, engine)
            precision = None
            if config is not None:
                if config.fp16_enabled is True:
                    precision = "fp16"
                elif config.bf16_enabled is True:
                    precision = "bf16"
            self.precisions[id(engine)] = precision
        return self.precisions[id(engine)]
