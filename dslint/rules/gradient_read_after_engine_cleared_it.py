"""DSL436: `p.grad` of the engine's parameters read where DeepSpeed has already set it to None."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.engine import Engine
from dslint.project.config_link import resolve_config
from dslint.project.engine_config import zero_stage
from dslint.project.evidence import evidence
from dslint.script.facts import Role, method_name
from dslint.script.loop import loop_facts
from dslint.script.parameter_loops import EngineParameterLoops

_LOOP = """
import deepspeed
def train(model, loader, config):
    engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    for batch in loader:
        loss = engine(batch)
        engine.backward(loss)
        {read}
        engine.step()
"""
_NORM = "norm = sum(p.grad.norm() ** 2 for p in engine.parameters() if p.grad is not None)"
_STAGE = '{{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {{"stage": {stage}}}}}'


def _loop(read: str, stage: int, after_step: bool = False) -> str:
    code = _LOOP.replace("config=config", f"config={_STAGE.format(stage=stage)}")
    code = code.replace("{read}", "pass" if after_step else read)
    if after_step:
        code = code.replace("        engine.step()\n", f"        engine.step()\n        {read}\n")
    return code


class GradientReadAfterEngineClearedIt(EngineParameterLoops, ScriptRule):
    code = "DSL436"
    slug = "gradient-read-after-engine-cleared-it"
    message = "under ZeRO-2/3 engine.backward() leaves param.grad None: use deepspeed.utils.safe_get_full_grad(p)"
    step_message = "engine.step() has set param.grad to None: read the gradients before the step"
    severity = Severity.WARNING
    required_tokens = (b"deepspeed", b"initialize", b"grad")  # an engine here, or one a helper is handed
    docs = RuleDocs(
        what="""
            Flags `p.grad` read (not written) for `p` in the engine's parameters (`engine.parameters()`,
            `engine.module.named_parameters()`, or those of the model given to `deepspeed.initialize`, in a
            `for` loop or a comprehension) where DeepSpeed has already cleared it: after `engine.backward(...)` of
            the same function when the engine's config is known to run ZeRO stage 2 or 3, and after
            `engine.step()` of the same function when the config is known to step every batch (no gradient
            accumulation); and anywhere in a helper handed an engine from elsewhere (a parameter its callers
            fill, a return, an attribute) that neither backs through nor steps it, when that engine runs ZeRO-2
            or 3 (no `p.grad` of it is whole at any point). A config that cannot be read, a stage 0 or 1 read
            between backward and step, or a read on a path the call does not share: nothing is reported.
        """,
        why="""
            Under ZeRO-2 the engine's backward hooks reduce each gradient into DeepSpeed's partitioned buffers and
            then set `param.grad = None` (`runtime/zero/stage_1_and_2.py`, `clear_grad_attribute`); ZeRO-3 does
            the same when it partitions the gradients (`runtime/zero/stage3.py`, `partition_grads`). At the
            accumulation boundary `engine.step()` ends with the optimizer's `zero_grad`, which sets the gradients
            to None at every stage (`runtime/engine.py`, `_take_model_step`). A gradient norm, a gradient
            projection or a NaN check over `p.grad` there is skipped silently (`if p.grad is not None`), reads
            zero, or fails on None. `deepspeed.utils.safe_get_full_grad(p)` assembles a parameter's full
            gradient between backward and step, at any stage.
        """,
        example="""
            engine.backward(loss)
            norm = sum(p.grad.norm() ** 2 for p in engine.parameters() if p.grad is not None)  # ZeRO-2: 0
        """,
        use_instead="""
            from deepspeed.utils import safe_get_full_grad
            engine.backward(loss)
            norm = sum(safe_get_full_grad(p).norm() ** 2 for p in engine.parameters() if p.requires_grad)
        """,
    )
    valid = (
        Valid(_loop(_NORM, 1)),
        Valid(_loop(_NORM, 0)),
        Valid(_loop("for p in engine.parameters():\n            p.grad = None", 2)),
        Valid(_loop(_NORM, 2).replace('"stage": 2', '"stage": args.stage')),
        Valid(
            _loop(_NORM, 1, after_step=True).replace(
                '"train_micro_batch_size_per_gpu": 1,', '"gradient_accumulation_steps": 4,'
            )
        ),
        Valid(
            _loop("for p in teacher.parameters():\n            print(p.grad)", 3),
        ),
    )
    invalid = (
        Invalid(_loop(_NORM, 2), lines=(8,)),
        Invalid(
            _loop("for name, p in engine.module.named_parameters():\n            print(name, p.grad)", 3), lines=(9,)
        ),
        Invalid(_loop("grads = [p.grad for p in model.parameters()]", 2), lines=(8,)),
        Invalid(_loop(_NORM, 0, after_step=True), lines=(10,)),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.loop = loop_facts(self.facts)
        self.targets = []  # the enclosing loops (`EngineParameterLoops`)
        self.serial = 0
        self.reads: list[tuple[cst.Attribute, Engine]] = []
        self.loops_read: set[int] = set()  # one finding a loop (`p.grad.norm() for p in ... if p.grad is not None`)
        self.written: set[int] = set()
        self.calls: dict[str, list[tuple[cst.Call, Engine]]] = {"backward": [], "step": []}

    # -- reads, writes and the engine's calls ---------------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        self.written.update(id(t.target) for t in node.targets)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.written.add(id(node.target))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "grad" or not isinstance(node.value, cst.Name) or id(node) in self.written:
            return
        found = self.parameter_loop(node.value)
        if found is not None and found[1] not in self.loops_read:
            self.loops_read.add(found[1])
            self.reads.append((node, found[0]))

    def visit_Call(self, node: cst.Call) -> None:
        name = method_name(node)
        if name in self.calls and isinstance(node.func, cst.Attribute):
            answer = self.facts.role_of(node.func.value, at=node)
            if answer is not None and answer.role is Role.ENGINE:
                self.calls[name].append((node, answer.engine))

    def leave_Module(self, original_node: cst.Module) -> None:
        for read, engine in self.reads:
            found = evidence(self.context, engine)  # the launcher and config behind the stage, when elsewhere
            cleared = self._after("backward", read, engine) or self._handed(read, engine)
            if cleared and zero_stage(self.context, engine) in (2, 3):
                self.report(read, self.message + found.suffix, related=list(found.related))
            elif self._after("step", read, engine) and self._steps_every_batch(engine):
                self.report(read, self.step_message + found.suffix, related=list(found.related))

    def _after(self, method: str, read: cst.Attribute, engine: Engine) -> bool:
        facts = self.facts
        scope, at = facts.scope_at(read), facts.start(read)
        return any(
            other is engine
            and facts.scope_at(call) is scope
            and facts.start(call) < at
            and not facts.paths.exclusive(call, read)
            for call, other in self.calls[method]
        )

    def _handed(self, read: cst.Attribute, engine: Engine) -> bool:
        """A helper handed an engine from elsewhere (a parameter, a return, an attribute) that neither backs
        through nor steps it itself: under ZeRO-2/3 no `p.grad` of the engine is ever whole where it may run
        (None before the first backward and after each, the gradients living in DeepSpeed's partitions), so the
        order of its calls does not matter."""
        if not engine.elsewhere:
            return False
        scope = self.facts.scope_at(read)
        return not any(
            other is engine and self.facts.scope_at(call) is scope
            for calls in self.calls.values()
            for call, other in calls
        )

    def _steps_every_batch(self, engine: Engine) -> bool:
        """The config is known and asks for no gradient accumulation: every `engine.step()` is a boundary."""
        config = resolve_config(self.context, engine)
        if config is None:
            return False
        steps, batch = config.get("gradient_accumulation_steps"), config.get("train_batch_size")
        return steps == 1 or (steps is None and batch is None)
