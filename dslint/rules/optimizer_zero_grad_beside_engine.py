"""DSL309: `optimizer.zero_grad()` on the optimizer the engine zeroes itself (split from DSL302)."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.rules.optimizer_stepped_beside_engine import (
    SHARED_LOOP,
    SHARED_LOOP_CALLERS,
    TRAINER_LOOP,
    OptimizerSteppedBesideEngine,
)


class OptimizerZeroGradBesideEngine(OptimizerSteppedBesideEngine):
    """DSL302's walk (which optimizer belongs to which engine), reporting `zero_grad()`."""

    code = "DSL309"
    slug = "optimizer-zero-grad-beside-engine"
    message = "the engine zeroes the gradients in engine.step(); remove this optimizer.zero_grad()"
    severity = Severity.ERROR
    handles = "zero_grad"
    runs_without_engine_on = ()  # no accelerate counterpart: the prepared optimizer's are no-ops too
    docs = RuleDocs(
        what="""
            Flags `.zero_grad()` on the optimizer returned by `deepspeed.initialize` (or the engine's own
            `engine.optimizer`, the same object) or given to it
            (`optimizer=`), after that call; also, outside any `if`, in a function some call of the project hands
            that optimizer and others a plain one (a shared loop: the message names the call that passes the
            engine's). It used to be part of DSL302 (`# noqa: DSL302` and
            `ignore = ["DSL302"]` still cover it, through the redirect).
        """,
        why="""
            `engine.step()` zeroes the gradients after each optimizer update, at the gradient-accumulation
            boundary (`_take_model_step` in `runtime/engine.py`). An `optimizer.zero_grad()` of your own on every
            micro-step throws the accumulated gradients away where they accumulate in `param.grad` (without
            ZeRO), so with `gradient_accumulation_steps` above 1 only the last micro-step's gradients reach the
            update; under ZeRO it is redundant.
        """,
        example="""
            for batch in loader:
                optimizer.zero_grad()
                engine.backward(engine(batch))
                engine.step()
        """,
        use_instead="""
            for batch in loader:
                engine.backward(engine(batch))
                engine.step()
        """,
        fix_safety="""
            The call is removed (safe) when it is a statement of its own, not under an accumulation test, and
            `engine.step()` runs on every micro-step of the same function (already, or once DSL302's fix turns
            this function's `optimizer.step()` into it), since that is what zeroes the gradients.
        """,
    )
    valid = (
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
            engine, _, _, _ = deepspeed.initialize(model=generator, config="ds.json")
            d_optimizer = torch.optim.Adam(discriminator.parameters())
            for batch in loader:
                d_optimizer.zero_grad()
                discriminator(batch).mean().backward()
                d_optimizer.step()
            """
        ),
    )
    invalid = (
        Invalid(SHARED_LOOP, lines=(4,), path="loop.py", files=SHARED_LOOP_CALLERS),
        Invalid(
            """
            import deepspeed
            engine, optimizer, _, scheduler = deepspeed.initialize(model=model, config="ds.json")
            for batch in loader:
                optimizer.zero_grad()
                loss = engine(batch)
                engine.backward(loss)
                engine.step()
            """,
            lines=(5,),
            fixed="""
            import deepspeed
            engine, optimizer, _, scheduler = deepspeed.initialize(model=model, config="ds.json")
            for batch in loader:
                loss = engine(batch)
                engine.backward(loss)
                engine.step()
            """,
        ),
        # Nothing calls engine.step() on every micro-step here, so the call cannot simply go (DSL303).
        Invalid(TRAINER_LOOP, lines=(12,), fixed=TRAINER_LOOP),
    )
