"""DSL302: `optimizer.step()` on the optimizer the engine already steps (zero_grad: DSL309, scheduler: DSL310)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import libcst as cst

from dslint.diagnostics import Applicability, Edit, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.library import OPTIMIZER
from dslint.project.accelerate_deepspeed import accelerate_deepspeed
from dslint.project.evidence import evidence
from dslint.script.accelerate_prepared import prepared
from dslint.script.autocasts import grad_scaler
from dslint.script.edits import line_deletion, replace_node
from dslint.script.engine_reach import partly_passed, partly_prefix
from dslint.script.facts import BindingKind, Role, RoleAnswer, method_name
from dslint.script.hf_trainers import TrainerNames
from dslint.script.loop import loop_facts
from dslint.script.names import dotted_name

OPTIMIZER_ROLES = (Role.OPTIMIZER, Role.CLIENT_OPTIMIZER)

# a project module: a mixed-precision helper stepping the optimizer it is given
_MIXED = (
    (
        "mixed.py",
        "class Scaler:\n"
        "    def __init__(self, model):\n"
        "        self.model = model\n"
        "    def optimize(self, opt):\n"
        "        return self._step(opt)\n"
        "    def _step(self, opt):\n"
        "        opt.step()\n"
        "        return True\n"
        "def log_lr(opt):\n"
        "    print(opt.param_groups[0]['lr'])\n"
        "def update(model, opt, loss, args):\n"
        "    if args.deepspeed:\n"
        "        model.backward(loss)\n"
        "        model.step()\n"
        "    else:\n"
        "        loss.backward()\n"
        "        opt.step()\n",
    ),
)
SCHEDULER_ROLES = (Role.SCHEDULER, Role.CLIENT_SCHEDULER)

# A training loop (the case file, loop.py) that a DeepSpeed script hands the engine and initialize's optimizer, and a
# plain script a module and a torch optimizer: DSL302 and DSL309 each flag a call of it (under the `if`: silent).
SHARED_LOOP = """
    def train(model, optimizer, loader, log=False):
        for batch in loader:
            optimizer.zero_grad()
            model(batch).mean().backward()
            optimizer.step()
            if log:
                optimizer.zero_grad()
                optimizer.step()
    """
SHARED_LOOP_CALLERS = (
    (
        "ds_train.py",
        "import deepspeed\nfrom loop import train\n"
        'engine, opt, _, _ = deepspeed.initialize(model=net, config={"train_batch_size": 8})\n'
        "train(engine, opt, loader)\n",
    ),
    ("plain.py", "import torch\nfrom loop import train\nopt = torch.optim.SGD(net.parameters())\ntrain(net, opt, x)\n"),
)

# Two loops the three sibling rules (this one, DSL309 and DSL310, its subclasses) each flag a call of, as cases:
# the client's optimizer and scheduler stepped after the engine's step in a function, and in a trainer class's
# method with no engine.step() (so no call can simply go).
CLIENT_LOOP = """
    import deepspeed
    def main():
        optimizer = torch.optim.AdamW(net.parameters(), lr=1e-4)
        scheduler = get_linear_schedule_with_warmup(optimizer, 10, 100)
        model, *_ = deepspeed.initialize(model=net, optimizer=optimizer, lr_scheduler=scheduler, config=cfg)
        for step, batch in enumerate(loader):
            loss = model(**batch).loss
            model.backward(loss)
            model.step()
            optimizer.step(); scheduler.step()
    """
TRAINER_LOOP = """
    import deepspeed
    class Trainer:
        def setup(self, net, cfg):
            self.engine, self.optimizer, _, self.lr_scheduler = deepspeed.initialize(model=net, config=cfg)
        def train(self, batches):
            for i, batch in enumerate(batches):
                self.engine.backward(self.engine(batch))
                if (i + 1) % self.accum == 0:
                    self.optimizer.step()
                    self.lr_scheduler.step()
                    self.optimizer.zero_grad()
    """


class OptimizerSteppedBesideEngine(ScriptRule):
    code = "DSL302"
    slug = "optimizer-stepped-beside-engine"
    message = "optimizer stepped beside the engine; call engine.step() on every micro-step instead"
    scaler_message = "this GradScaler steps the engine's optimizer; call engine.step() on every micro-step instead"
    severity = Severity.ERROR
    accelerate_message = "accelerate runs DeepSpeed: this step does nothing; only accelerator.backward(loss) steps"
    docs = RuleDocs(
        what="""
            Flags `.step()` on the optimizer returned by `deepspeed.initialize` (or `engine.optimizer`, the same
            object) or given to it (`optimizer=`), and a torch `GradScaler`'s `scaler.step(optimizer)` on that
            optimizer (it calls `optimizer.step()`); where accelerate runs DeepSpeed, `scaler.step(optimizer)` on
            the optimizer `accelerator.prepare` returned (a wrapper whose `step()` does nothing: only
            `accelerator.backward(loss)` steps the engine).
            In a function that some call of the project hands initialize's optimizer and others a plain one (a
            loop shared by a DeepSpeed script and a plain one), a step outside any `if` of the function is flagged
            too, naming the call that passes the engine's optimizer (no fix: the plain callers need it).
            Its siblings flag `.zero_grad()` on that optimizer (DSL309) and `.step()` on the LR scheduler returned
            by it or given as `lr_scheduler=` (DSL310); they used to be part of this rule.

            A call that hands that optimizer to a project function stepping it (a mixed-precision helper's
            `trainer.optimize(optimizer)`, a few calls deep) is reported at the call, with the step as related,
            when the function is right for another caller that hands it an optimizer of its own; a function
            whose every caller hands it the engine's optimizer is reported at its step.

            Which optimizer and scheduler belong to an engine is decided from the `initialize` call alone: the
            names its results are bound to, and the names passed as its `optimizer` / `lr_scheduler` arguments,
            as long as they are not rebound. Optimizers and schedulers of other models (a discriminator trained
            with plain PyTorch beside the engine, say) never go through `initialize` and are not flagged; nor
            is an optimizer whose origin is unknown (a function parameter).
        """,
        why="""
            `engine.step()` counts micro-steps; at each gradient-accumulation boundary it clips
            (`gradient_clipping`), steps the optimizer, zeroes the gradients and steps the LR scheduler it holds
            (`_take_model_step` in `runtime/engine.py`). An `optimizer.step()` of your own steps on every
            micro-step, with gradients that are not yet accumulated, reduced or unscaled (and, under ZeRO, on
            the wrapped optimizer's partitions). Seen with DeepSpeed
            0.19.8 on the CPU (`tests/test_loop_runtime.py`): with `gradient_accumulation_steps: 2`, a loop with
            `optimizer.step()` updates the weights on both micro-steps and `engine.global_steps` stays 0; with
            `engine.step()` instead there is exactly one update.
        """,
        example="""
            for batch in loader:
                loss = engine(batch)
                engine.backward(loss)
                optimizer.step()
        """,
        use_instead="""
            for batch in loader:
                loss = engine(batch)
                engine.backward(loss)
                engine.step()
        """,
        fix_safety="""
            Each fix applies only to a call that is a statement of its own, and never under an accumulation test
            (`if (i + 1) % n == 0:`), where `engine.step()` would be wrong too (DSL303).
            `optimizer.step()` is removed when the same function already calls `engine.step()` on every
            micro-step, and otherwise replaced by `engine.step()` when exactly one name holds the engine (safe).
        """,
    )
    valid: ClassVar[Sequence[Valid]] = (
        # the helper is handed the engine's optimizer only to read its learning rate, or steps it only where
        # DeepSpeed is off
        Valid(
            """
            import deepspeed, torch
            from mixed import log_lr, update
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds.json")
            plain = torch.optim.SGD(other.parameters(), lr=0.1)
            for batch in loader:
                update(engine, optimizer, engine(batch), args)
                update(other, plain, other(batch), args)
                log_lr(optimizer)
            """,
            files=_MIXED,
        ),
        Valid(
            """
            import deepspeed
            engine, optimizer, _, scheduler = deepspeed.initialize(model=model, config="ds.json")
            for batch in loader:
                engine.backward(engine(batch))
                engine.step()
            print(scheduler.get_last_lr(), optimizer.param_groups[0]["lr"])
            """
        ),
        Valid(
            """
            import deepspeed
            engine, _, _, _ = deepspeed.initialize(model=generator, config="ds.json")
            d_optimizer = torch.optim.Adam(discriminator.parameters())
            d_scheduler = StepLR(d_optimizer, 10)
            for batch in loader:
                d_optimizer.zero_grad()
                discriminator(batch).mean().backward()
                d_optimizer.step()
                d_scheduler.step()
            """
        ),
        Valid(
            """
            import deepspeed
            optimizer = torch.optim.AdamW(model.parameters())
            for x in warmup_loader:
                model(x).mean().backward()
                optimizer.step()
                optimizer.zero_grad()
            engine, *_ = deepspeed.initialize(model=model, optimizer=optimizer, config="ds.json")
            """
        ),
        Valid(
            """
            import deepspeed
            def train(engine, optimizer, loader):
                for batch in loader:
                    engine.backward(engine(batch))
                    optimizer.step()
            """
        ),
        Valid(
            """
            import deepspeed
            optimizer = torch.optim.AdamW(model.parameters())
            if args.deepspeed:
                engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=cfg)
            else:
                optimizer.step()
            """
        ),
    )
    invalid: ClassVar[Sequence[Invalid]] = (
        Invalid(  # the optimizer accelerate prepared for its engine: its step does nothing
            """
            import torch
            from accelerate import Accelerator, DeepSpeedPlugin
            accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2))
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            scaler = torch.cuda.amp.GradScaler()
            for batch in loader:
                scaler.scale(model(batch).mean()).backward()
                scaler.step(optimizer)
                scaler.update()
            """,
            lines=(9,),
        ),
        # a loop shared by a DeepSpeed script and a plain one: wrong where the engine's optimizer comes in
        Invalid(SHARED_LOOP, lines=(6,), path="loop.py", files=SHARED_LOOP_CALLERS),
        # an AMP loop ported to DeepSpeed: the GradScaler steps the engine's optimizer (and the discriminator's,
        # a plain torch optimizer, rightly)
        Invalid(
            """
            import deepspeed
            from torch.cuda import amp
            def train(model, optimizer, d_optimizer, loader, args):
                model, optimizer, _, _ = deepspeed.initialize(args=args, model=model, optimizer=optimizer)
                scaler = amp.GradScaler(enabled=True)
                for batch in loader:
                    loss = model(batch)
                    scaler.scale(loss).backward()
                    scaler.step(d_optimizer)
                    scaler.step(optimizer)
                    scaler.update()
            """,
            lines=(11,),
        ),
        # the helper steps what it is given: right for the discriminator's optimizer, wrong for the engine's
        Invalid(
            """
            import deepspeed, torch
            from mixed import Scaler
            engine, optimizer, _, _ = deepspeed.initialize(model=generator, config="ds.json")
            d_optimizer = torch.optim.Adam(discriminator.parameters())
            scaler = Scaler(generator)
            for batch in loader:
                discriminator(batch).mean().backward()
                scaler.optimize(d_optimizer)
                engine.backward(engine(batch))
                engine.step()
                scaler.optimize(optimizer)
            """,
            lines=(12,),
            files=_MIXED,
        ),
        Invalid(
            """
            import deepspeed
            engine, optimizer, _, scheduler = deepspeed.initialize(model=model, config="ds.json")
            for batch in loader:
                optimizer.zero_grad()
                loss = engine(batch)
                engine.backward(loss)
                optimizer.step()
                scheduler.step()
            """,
            lines=(8,),
            fixed="""
            import deepspeed
            engine, optimizer, _, scheduler = deepspeed.initialize(model=model, config="ds.json")
            for batch in loader:
                optimizer.zero_grad()
                loss = engine(batch)
                engine.backward(loss)
                engine.step()
                scheduler.step()
            """,
        ),
        Invalid(CLIENT_LOOP, lines=(11,)),
        # Nothing calls engine.step() on every micro-step here, so neither call can simply go (DSL303).
        Invalid(TRAINER_LOOP, lines=(10,), fixed=TRAINER_LOOP),
    )

    # Which call this rule reports: "step" (DSL302), "zero_grad" (DSL309) or "scheduler" (DSL310), the latter two
    # by subclasses sharing this walk.
    handles: ClassVar[str] = "step"
    runs_on_partly_engine = True  # a loop some call hands initialize's optimizer, others a plain one
    # a GradScaler stepping the optimizer accelerate prepared for the engine it built
    runs_without_engine_on: ClassVar[tuple[tuple[bytes, ...], ...]] = ((b"GradScaler", b"prepare", b"Accelerator"),)

    def visit_Module(self, node: cst.Module) -> None:
        self.loop = loop_facts(self.facts)
        self.trainers = TrainerNames(self.context)
        self.prepared_steps: list[cst.Call] = []  # `scaler.step(optimizer)` on what `accelerator.prepare` returned

    def visit_Assign(self, node: cst.Assign) -> None:
        self.trainers.consider_assign(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        """`scaler.step(optimizer)` on the optimizer `accelerator.prepare` returned, where accelerate runs
        DeepSpeed: a `DeepSpeedOptimizerWrapper`, whose `step()` does nothing (only `accelerator.backward(loss)`
        steps the engine)."""
        run = accelerate_deepspeed(self.context) if self.prepared_steps else None
        if run is None:
            return
        for node in self.prepared_steps:
            message = f"{self.accelerate_message} ({run.where})"
            self.report(node, message, related=run.related)

    def visit_Call(self, node: cst.Call) -> None:
        if self.handles == "step":
            self._report_stepping_helper(node)
            self._report_scaler_step(node)
        name = method_name(node)
        if name not in ("step", "zero_grad"):
            return
        assert isinstance(node.func, cst.Attribute)
        if self._report_partly(node, node.func.value, name):
            return
        answer = self.facts.role_of(node.func.value, at=node)
        if answer is None or not self.loop.after_initialize(answer.engine, node):
            return  # a client optimizer used before initialize (plain warm-up steps) is not the engine's yet
        if answer.role in OPTIMIZER_ROLES and name == "step":
            if self.handles == "step":
                self._report_optimizer_step(node, answer)
        elif answer.role in OPTIMIZER_ROLES:
            if self.handles == "zero_grad":
                message = self._named(self.message, answer, node)
                self._report_removal(node, answer, message, Applicability.SAFE, "Remove `zero_grad()`")
        elif answer.role in SCHEDULER_ROLES and name == "step" and self.handles == "scheduler":
            applicability = Applicability.SAFE if answer.role is Role.SCHEDULER else Applicability.UNSAFE
            message = self._named(self.message, answer, node)
            self._report_removal(node, answer, message, applicability, "Remove `scheduler.step()`")

    def _report_stepping_helper(self, node: cst.Call) -> None:
        """A call handing initialize's optimizer to a project function that steps it, where that function is
        right for another caller (`ProjectFacts.optimizer_stepping_calls`): reported here, the step related."""
        project = self.facts.project
        if project is None or not project.optimizer_stepping_calls:
            return
        position = self.facts.call_position(node)
        steps = project.optimizer_stepping_calls.get(position) if position is not None else None
        if steps is not None:
            where = f"{steps.path}:{steps.line}"
            self.report(
                node,
                f"optimizer stepped beside the engine: this call steps initialize's optimizer ({where})",
                related=[steps],
            )

    def _report_partly(self, node: cst.Call, receiver: cst.BaseExpression, name: str) -> bool:
        """`optimizer.step()` / `zero_grad()` (DSL302 / DSL309) on a parameter that some call of the project hands
        initialize's optimizer and others a plain one (a loop shared by a DeepSpeed script and a plain one),
        outside any `if` of the function (an arm may be the plain path): wrong where that call passes it; the
        message names the call. No fix: the plain callers need the call."""
        if name != self.handles:
            return False
        engine = partly_passed(self.facts, receiver, node, OPTIMIZER)
        if engine is None or self.facts.held_by(node):
            return False
        found = evidence(self.context, engine)
        self.report(
            node, partly_prefix(engine, "the engine's optimizer") + self.message + found.suffix, related=found.related
        )
        return True

    def _report_scaler_step(self, node: cst.Call) -> None:
        """`scaler.step(optimizer)` with a torch GradScaler, on the engine's optimizer after initialize."""
        if method_name(node) != "step" or not node.args or node.args[0].keyword is not None:
            return
        assert isinstance(node.func, cst.Attribute)
        key = dotted_name(node.func.value)
        binding = self.facts.binding_at(key, self.facts.scope_at(node), self.facts.start(node)) if key else None
        scaler = grad_scaler(
            self.facts, binding.value if binding is not None and binding.kind is BindingKind.OTHER else None
        )
        if scaler is None:
            return
        if self._report_partly(node, node.args[0].value, "step"):
            return
        answer = self.facts.role_of(node.args[0].value, at=node)
        if answer is None and prepared(self.facts, self.trainers, node.args[0].value, node):
            self.prepared_steps.append(node)
        if answer is None or answer.role not in OPTIMIZER_ROLES or not self.loop.after_initialize(answer.engine, node):
            return
        self.report(node, self._named(self.scaler_message, answer, node))

    def _named(self, message: str, answer: RoleAnswer, node: cst.Call) -> str:
        engine = self.loop.certain_engine_name(answer.engine, at=node)
        return message if engine is None else message.replace("engine.step", f"{engine}.step")

    def _report_removal(
        self, node: cst.Call, answer: RoleAnswer, message: str, applicability: Applicability, fix: str
    ) -> None:
        """Zeroing and scheduling are engine.step()'s job: removable when it runs on every micro-step here
        (already, or once this function's optimizer.step() is fixed into it)."""
        line = self.facts.lone_expression_statement(node)
        removable = line is not None and self._engine_steps_every_micro_step(answer, node)
        edits = line_deletion(self.context, line) if removable else []
        self.report(node, message, edits=edits, applicability=applicability, fix_message=fix)

    def _report_optimizer_step(self, node: cst.Call, answer: RoleAnswer) -> None:
        edits: list[Edit] = []
        fix = ""
        line = self.facts.lone_expression_statement(node)
        if line is not None and self.loop.accumulation_test(node) is None:
            steps = self.loop.engine_step_calls(answer.engine, self.facts.scope_at(node).node)
            engine = self.loop.certain_engine_name(answer.engine, at=node)
            if any(self.loop.accumulation_test(step) is None for step in steps):
                edits = line_deletion(self.context, line)
                fix = "Remove `optimizer.step()` (the function already calls `engine.step()`)"
            elif not steps and engine is not None:
                edits = [replace_node(self.context, node, f"{engine}.step()")]
                fix = f"Replace with `{engine}.step()`"
        message = self._named(self.message, answer, node)
        self.report(node, message, edits=edits, applicability=Applicability.SAFE, fix_message=fix)

    def _engine_steps_every_micro_step(self, answer: RoleAnswer, node: cst.Call) -> bool:
        function = self.facts.scope_at(node).node
        steps = self.loop.engine_step_calls(answer.engine, function)
        if any(self.loop.accumulation_test(step) is None for step in steps):
            return True
        if steps:
            return False
        lo, hi = self.facts.start(function), self.facts.end(function)
        for call in self.loop.calls:
            if method_name(call) != "step" or not (lo <= self.facts.start(call) < hi):
                continue
            assert isinstance(call.func, cst.Attribute)
            other = self.facts.role_of(call.func.value, at=call)
            if (
                other is not None
                and other.role in OPTIMIZER_ROLES
                and other.engine is answer.engine
                and self.facts.lone_expression_statement(call) is not None
                and self.loop.accumulation_test(call) is None
                and self.loop.certain_engine_name(answer.engine, at=call) is not None
            ):
                return True  # it becomes engine.step() by this rule's fix
        return False
