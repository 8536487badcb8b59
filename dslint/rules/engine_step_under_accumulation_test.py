"""DSL303: `engine.step()` / `engine.backward()` only on some micro-steps, under `if (i + 1) % n == 0:`."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Severity
from dslint.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.script.config_link import resolve_config
from dslint.script.facts import InitializeCall, Role, method_name
from dslint.script.loop import configured_accumulation_steps, loop_facts


class EngineStepUnderAccumulationTest(ScriptRule):
    code = "DSL303"
    slug = "engine-step-under-accumulation-test"
    message = (
        "call engine.step() on every micro-step: the engine counts micro-steps and updates at its own "
        "accumulation boundary (gradient_accumulation_steps), so stepping only under this test compounds the "
        "accumulation"
    )
    backward_message = (
        "call engine.backward(loss) on every micro-step: the engine accumulates gradients over "
        "gradient_accumulation_steps itself; under this test the other micro-steps' losses are never "
        "back-propagated"
    )
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags `engine.step()` and `engine.backward(...)` in the body of an `if` whose test is a modulo test
            such as `if (step + 1) % args.gradient_accumulation_steps == 0:`, on an engine returned by
            `deepspeed.initialize`. `engine.step()` called on every micro-step is what DeepSpeed expects and is
            never flagged. Nothing is reported when the engine's config is known and sets
            `"managed_gradient_accumulation": false` (then the caller owns the boundary) or
            `"gradient_accumulation_steps": 1`.
        """,
        why="""
            DeepSpeed does gradient accumulation itself: `engine.backward` divides the loss by
            `gradient_accumulation_steps`, and `engine.step()` increments `micro_steps` and only updates the
            weights when `is_gradient_accumulation_boundary()` holds, i.e. on every
            `gradient_accumulation_steps`-th call (`runtime/engine.py`). Calling `engine.step()` only every `n`
            micro-steps therefore updates every `n * gradient_accumulation_steps` micro-steps, with gradients
            summed over all of them: the effective batch and the gradient scale both change silently. (With
            `gradient_accumulation_steps: 2` and the test `(i + 1) % 2 == 0`, two micro-steps produce no update
            at all.) `engine.backward` under such a test drops the other micro-steps' losses.
        """,
        example="""
            for step, batch in enumerate(loader):
                loss = engine(batch)
                engine.backward(loss)
                if (step + 1) % args.gradient_accumulation_steps == 0:
                    engine.step()
        """,
        use_instead="""
            for step, batch in enumerate(loader):
                loss = engine(batch)
                engine.backward(loss)
                engine.step()  # updates only at the accumulation boundary
                if engine.is_gradient_accumulation_boundary():
                    ...  # logging per optimizer step
        """,
    )
    valid = (
        Valid(
            """
            import deepspeed
            engine, _, _, _ = deepspeed.initialize(model=model, config="ds.json")
            for step, batch in enumerate(loader):
                engine.backward(engine(batch))
                engine.step()
                if (step + 1) % args.gradient_accumulation_steps == 0:
                    print("update")
                if step % 100 == 0:
                    engine.save_checkpoint("ckpt")
            for epoch in range(10):
                if epoch % args.train_every == 0:
                    for batch in loader:
                        engine.backward(engine(batch))
                        engine.step()
            """
        ),
        Valid(
            """
            import deepspeed
            cfg = {"train_batch_size": 8, "managed_gradient_accumulation": False, "gradient_accumulation_steps": 4}
            engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
            for step, batch in enumerate(loader):
                engine.backward(engine(batch))
                if (step + 1) % 4 == 0:
                    engine.step()
            """
        ),
        Valid(
            """
            import deepspeed
            if args.deepspeed:
                engine, _, _, _ = deepspeed.initialize(model=model, config="ds.json")
            for step, batch in enumerate(loader):
                loss = model(batch)
                if args.deepspeed:
                    engine.backward(loss)
                    engine.step()
                else:
                    loss.backward()
                    if (step + 1) % accum == 0:
                        optimizer.step()
            """
        ),
        Valid(
            """
            import deepspeed
            def train(engine, loader):
                for i, batch in enumerate(loader):
                    engine.backward(engine(batch))
                    if (i + 1) % 4 == 0:
                        engine.step()
            """
        ),
    )
    invalid = (
        Invalid(
            """
            import deepspeed
            model, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=params)
            for step, batch in enumerate(loader):
                loss = model(batch)
                model.backward(loss)
                if (step + 1) % args.gradient_accumulation_steps == 0:
                    model.step()
            """,
            lines=(8,),
        ),
        Invalid(
            """
            import deepspeed
            class Trainer:
                def __init__(self, net, cfg):
                    self.model_engine, _, _, _ = deepspeed.initialize(model=net, config=cfg)
                def fit(self, loader):
                    for i, batch in enumerate(loader):
                        loss = self.model_engine(batch)
                        if ((i + 1) % self.accum == 0) or (i + 1 == len(loader)):
                            self.model_engine.backward(loss)
                            self.model_engine.step()
            """,
            lines=(10, 11),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.loop = loop_facts(self.facts)
        self.silent: dict[int, bool] = {}

    def visit_Call(self, node: cst.Call) -> None:
        name = method_name(node)
        if name not in ("step", "backward"):
            return
        assert isinstance(node.func, cst.Attribute)
        answer = self.facts.role_of(node.func.value, at=node)
        if answer is None or answer.role is not Role.ENGINE:
            return
        if self.loop.accumulation_test(node) is None or self._caller_owns_boundary(answer.init):
            return
        message = self.message if name == "step" else self.backward_message
        self.report(node, message.replace("engine.", self.context.code(node.func.value) + ".", 1))

    def _caller_owns_boundary(self, init: InitializeCall | None) -> bool:
        """Known configs where stepping on some micro-steps only is not compounding accumulation."""
        if init is None:
            return False
        if id(init) not in self.silent:
            config = resolve_config(self.context, init)
            managed = config.get("managed_gradient_accumulation") if config is not None else None
            steps = configured_accumulation_steps(self.context, init)
            self.silent[id(init)] = managed is False or steps == 1
        return self.silent[id(init)]
