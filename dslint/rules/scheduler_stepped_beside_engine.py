"""DSL310: `scheduler.step()` on the LR scheduler the engine steps itself (split from DSL302)."""

from __future__ import annotations

from dslint.diagnostics import Severity
from dslint.framework.rule_base import Invalid, RuleDocs, Valid
from dslint.rules.optimizer_stepped_beside_engine import CLIENT_LOOP, TRAINER_LOOP, OptimizerSteppedBesideEngine


class SchedulerSteppedBesideEngine(OptimizerSteppedBesideEngine):
    """DSL302's walk (which scheduler belongs to which engine), reporting the scheduler's `step()`."""

    code = "DSL310"
    slug = "scheduler-stepped-beside-engine"
    message = "engine.step() already steps this LR scheduler; remove this scheduler.step()"
    severity = Severity.ERROR
    handles = "scheduler"
    runs_without_engine_on = ()  # no accelerate counterpart: the prepared optimizer's are no-ops too
    docs = RuleDocs(
        what="""
            Flags `.step()` on the LR scheduler returned by `deepspeed.initialize` (or `engine.lr_scheduler`, the same
            object) or given to it as
            `lr_scheduler=`, after that call. It used to be part of DSL302 (`# noqa: DSL302` and
            `ignore = ["DSL302"]` still cover it, through the redirect).
        """,
        why="""
            `engine.step()` steps the LR scheduler it was given, or built from the config's `scheduler` section,
            after each optimizer update (`_take_model_step` in `runtime/engine.py`). Stepping it yourself as well
            advances the learning-rate schedule twice as fast (or, once per epoch, adds steps the schedule did
            not plan for).
        """,
        example="""
            engine, _, _, scheduler = deepspeed.initialize(model=model, config="ds.json")
            for batch in loader:
                engine.backward(engine(batch))
                engine.step()
                scheduler.step()
        """,
        use_instead="""
            engine, _, _, scheduler = deepspeed.initialize(model=model, config="ds.json")
            for batch in loader:
                engine.backward(engine(batch))
                engine.step()
        """,
        fix_safety="""
            The call is removed when it is a statement of its own, not under an accumulation test, and
            `engine.step()` runs on every micro-step of the same function. Safe for the scheduler `initialize`
            returned; unsafe for one passed as `lr_scheduler=` (the engine steps it once per optimizer step; if
            you meant a per-epoch schedule, do not give it to `initialize`).
        """,
    )
    valid = (
        Valid(
            """
            import deepspeed
            engine, _, _, _ = deepspeed.initialize(model=generator, config="ds.json")
            d_optimizer = torch.optim.Adam(discriminator.parameters())
            d_scheduler = StepLR(d_optimizer, 10)
            for batch in loader:
                d_optimizer.step()
                d_scheduler.step()
            """
        ),
        Valid(
            """
            import deepspeed
            engine, optimizer, _, scheduler = deepspeed.initialize(model=model, config="ds.json")
            for batch in loader:
                engine.backward(engine(batch))
                engine.step()
            print(scheduler.get_last_lr())
            """
        ),
    )
    invalid = (
        Invalid(
            """
            import deepspeed
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            sched = torch.optim.lr_scheduler.StepLR(opt, 1)
            engine, *_ = deepspeed.initialize(model=model, optimizer=opt, lr_scheduler=sched, config=cfg)
            for epoch in range(3):
                for batch in loader:
                    engine.backward(engine(batch))
                    engine.step()
                sched.step()
            """,
            lines=(10,),
            fixed="""
            import deepspeed
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            sched = torch.optim.lr_scheduler.StepLR(opt, 1)
            engine, *_ = deepspeed.initialize(model=model, optimizer=opt, lr_scheduler=sched, config=cfg)
            for epoch in range(3):
                for batch in loader:
                    engine.backward(engine(batch))
                    engine.step()
            """,
        ),
        Invalid(CLIENT_LOOP, lines=(11,)),
        # Nothing calls engine.step() on every micro-step here, so the call cannot simply go (DSL303).
        Invalid(TRAINER_LOOP, lines=(11,), fixed=TRAINER_LOOP),
    )
