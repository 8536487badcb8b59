"""DSL303: `engine.step()` / `engine.backward()` only on some micro-steps, under `if (i + 1) % n == 0:`."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Applicability, Edit, Location, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.engine import Engine
from dslint.project.config_edits import command_line_value
from dslint.project.config_link import resolve_config
from dslint.project.engine_config import configured_accumulation_steps
from dslint.script.edits import line_deletion, replace_node
from dslint.script.facts import Role, method_name
from dslint.script.loop import loop_facts

# A loop that accumulates by itself (the loss divided, `engine.step()` under the modulo test) with a config that is
# a JSON load of a path built at run time, into which the script writes its accumulation steps: 1. Right for
# DSL303 and DSL304 alike (DSL304 takes it from here, as DSL309 and DSL310 take DSL302's loops).
OWN_ACCUMULATION_WRITTEN = """
    import json
    import deepspeed
    def train(model, loader, path, accum):
        with open(path) as handle:
            ds_config = json.load(handle)
        ds_config["gradient_accumulation_steps"] = 1  # the script accumulates itself
        engine, _, _, _ = deepspeed.initialize(model=model, config=ds_config)
        for step, batch in enumerate(loader):
            loss = engine(batch) / accum
            engine.backward(loss)
            if (step + 1) % accum == 0:
                engine.step()
"""

# The divisor of the test is an option of the script, which the launches give.
_LAUNCH_DIVISOR = """
import argparse
import deepspeed
parser = argparse.ArgumentParser()
parser.add_argument("--accum", type=int, default=4)
args = parser.parse_args()
engine, _, _, _ = deepspeed.initialize(args=args, model=model, config="ds.json")
for step, batch in enumerate(loader):
    engine.backward(engine(batch))
    if (step + 1) % args.accum == 0:
        engine.step()
"""


class EngineStepUnderAccumulationTest(ScriptRule):
    code = "DSL303"
    slug = "engine-step-under-accumulation-test"
    message = "call engine.step() on every micro-step: the engine finds the accumulation boundary itself"
    backward_message = "call engine.backward(loss) on every micro-step: the engine accumulates gradients itself"
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags `engine.step()` and `engine.backward(...)` in the body of an `if` whose test is a modulo test
            such as `if (step + 1) % args.gradient_accumulation_steps == 0:` (or a name the function bound to one:
            `should_step = step % accum == 0` ... `if should_step:`), on an engine returned by
            `deepspeed.initialize`. `engine.step()` called on every micro-step is what DeepSpeed expects and is
            never flagged. Nothing is reported when the engine's config is known and sets
            `"managed_gradient_accumulation": false` (then the caller owns the boundary) or
            `"gradient_accumulation_steps": 1`, or when the test's divisor is an option of the script that every
            launch of the project gives 1 (or leaves at a default of 1), and no `engine.step()` is reported in a
            function that sets the
            boundary itself with `engine.set_gradient_accumulation_boundary(...)` (DeepSpeed documents that
            style: the caller then calls `engine.step()` once after the accumulation passes).
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
        fix_safety="""
            For `engine.step()` alone on its line, in an `if` without `else` whose body does not also call
            `backward`, the fix moves the call to the line before the `if`, so that it runs on every micro-step
            (an `if` that held only this call is replaced by it).
            It is unsafe: when the script's own accumulation count differs from the config's
            `gradient_accumulation_steps`, the number of micro-steps per update changes to the config's. There
            is no fix for `engine.backward` under such a test.
        """,
    )
    valid = (
        # the config is a JSON load of a path built at run time, but the script writes its accumulation steps: 1
        Valid(OWN_ACCUMULATION_WRITTEN),
        # every launch gives the divisor's option 1: the test holds on every micro-step
        Valid(_LAUNCH_DIVISOR, files=(("run.sh", "deepspeed train.py --accum 1\n"),)),
        # the name the `if` tests holds another value by then: the step runs on every micro-step
        Valid(
            """
            import deepspeed
            engine, _, _, _ = deepspeed.initialize(model=model, config="ds.json")
            for step, batch in enumerate(loader):
                should_step = (step + 1) % accum == 0
                engine.backward(engine(batch))
                should_step = True
                if should_step:
                    engine.step()
            """
        ),
        # the same `engine.step()` in both arms of the test runs on every micro-step
        Valid(
            """
            import deepspeed
            engine, _, _, _ = deepspeed.initialize(model=model, config="ds.json")
            for step, batch in enumerate(loader):
                engine.backward(engine(batch))
                if (step + 1) % accum == 0:
                    log_lr(step)
                    engine.step()
                else:
                    engine.step()
            """
        ),
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
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            for i, batch in enumerate(loader):
                engine.set_gradient_accumulation_boundary((i + 1) % 4 == 0)
                engine.backward(engine(batch))
                if (i + 1) % 4 == 0:
                    engine.step()
            """
        ),
    )
    invalid = (
        # every launch gives the divisor's option 4
        Invalid(
            _LAUNCH_DIVISOR,
            lines=(11,),
            files=(("run.sh", "deepspeed train.py --accum 4\n"),),
            fixed=_LAUNCH_DIVISOR.replace(
                "    if (step + 1) % args.accum == 0:\n        engine.step()\n",
                "    engine.step()\n",
            ),
        ),
        # the test bound to a name first (a trainer's `should_step`)
        Invalid(
            """
            import deepspeed
            class Trainer:
                def fit(self, model, loader):
                    model, _, _, _ = deepspeed.initialize(model=model, config="ds.json")
                    for step, batch in enumerate(loader):
                        should_step = self.global_step % self.grad_accum_steps == 0
                        model.backward(model(batch))
                        if should_step:
                            model.step()
            """,
            lines=(10,),
            fixed="""
            import deepspeed
            class Trainer:
                def fit(self, model, loader):
                    model, _, _, _ = deepspeed.initialize(model=model, config="ds.json")
                    for step, batch in enumerate(loader):
                        should_step = self.global_step % self.grad_accum_steps == 0
                        model.backward(model(batch))
                        model.step()
            """,
        ),
        # the else arm does something else: the step still runs on boundary micro-steps only
        Invalid(
            """
            import deepspeed
            engine, _, _, _ = deepspeed.initialize(model=model, config="ds.json")
            for step, batch in enumerate(loader):
                engine.backward(engine(batch))
                if (step + 1) % accum == 0:
                    engine.step()
                else:
                    log_skip(step)
            """,
            lines=(7,),
        ),
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
            fixed="""
            import deepspeed
            model, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=params)
            for step, batch in enumerate(loader):
                loss = model(batch)
                model.backward(loss)
                model.step()
            """,
        ),
        Invalid(
            """
            import deepspeed
            def train(args, model, loader):
                engine, *_ = deepspeed.initialize(args=args, model=model)
                for step, batch in enumerate(loader):
                    engine.backward(engine(batch))
                    # update once per accumulation window
                    if step % args.accum == 0 or step == len(loader) - 1:
                        engine.step()  # optimizer update
                        print("lr", engine.get_lr())
            """,
            lines=(9,),
            fixed="""
            import deepspeed
            def train(args, model, loader):
                engine, *_ = deepspeed.initialize(args=args, model=model)
                for step, batch in enumerate(loader):
                    engine.backward(engine(batch))
                    # update once per accumulation window
                    engine.step()
                    if step % args.accum == 0 or step == len(loader) - 1:
                        print("lr", engine.get_lr())
            """,
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
        # (scope, engine as written) where the script sets the engine's accumulation boundary itself
        self.owned_boundaries: set[tuple[int, str]] = set()
        for call in self.facts.statement_of_call:
            if method_name(call) == "set_gradient_accumulation_boundary":
                assert isinstance(call.func, cst.Attribute)
                scope = self.facts.scope_at(call)
                self.owned_boundaries.add((id(scope), self.context.code(call.func.value)))

    def visit_Call(self, node: cst.Call) -> None:
        name = method_name(node)
        if name not in ("step", "backward"):
            return
        assert isinstance(node.func, cst.Attribute)
        answer = self.facts.role_of(node.func.value, at=node)
        if answer is None or answer.role is not Role.ENGINE:
            return
        test = self.loop.accumulation_test(node)
        if test is None or self._caller_owns_boundary(answer.engine) or self._every_launch_divides_by_one(test):
            return
        if name == "step" and (id(self.facts.scope_at(node)), self.context.code(node.func.value)) in (
            self.owned_boundaries
        ):
            return  # `engine.set_gradient_accumulation_boundary(...)` in this function: the script owns it
        message = self.message if name == "step" else self.backward_message
        edits = self._move_before(node, test) if name == "step" else []
        self.report(
            node,
            message.replace("engine.", self.context.code(node.func.value) + ".", 1),
            edits=edits,
            applicability=Applicability.UNSAFE,
            fix_message="Call `engine.step()` before the accumulation test, on every micro-step",
        )

    def _move_before(self, node: cst.Call, test: cst.If) -> list[Edit]:
        """`if ...: engine.step()` -> `engine.step()` on the line before the `if` (the same indentation)."""
        line = self.facts.lone_expression_statement(node)
        if line is None or test.orelse is not None or self._backward_inside(test):
            return []
        if self.facts.is_only_statement_of_block(line):
            return [replace_node(self.context, test, self.context.code(node))]  # the `if` would be left empty
        start, _ = self.context.span(test)
        source_line = self.context.text.splitlines()[start.line - 1]
        indent = source_line[: start.column - 1]
        if indent.strip():
            return []  # the `if` does not start its line (`x = 1; if ...` cannot happen, but stay safe)
        insertion = Edit.insertion(Location(start.line, 1), f"{indent}{self.context.code(node)}\n")
        deletion = line_deletion(self.context, line)
        return [insertion, *deletion] if deletion else []

    def _backward_inside(self, test: cst.If) -> bool:
        lo, hi = self.facts.start(test.body), self.facts.end(test.body)
        return any(method_name(call) == "backward" and lo <= self.facts.start(call) < hi for call in self.loop.calls)

    def _every_launch_divides_by_one(self, test: cst.If) -> bool:
        """The test's divisor is an option of the script (`args.accum_iter`, or a name bound to it) that every
        launch of the project gives 1 (or leaves at its default of 1): `i % 1 == 0` holds on every micro-step."""
        for node in _modulo_divisors(test.test):
            divisor = self.facts.assigned_value(node, node) if isinstance(node, cst.Name) else node
            if divisor is not None and command_line_value(self.context, divisor)[0] == 1:
                return True
        return False

    def _caller_owns_boundary(self, engine: Engine) -> bool:
        """Known configs where stepping on some micro-steps only is not compounding accumulation."""
        if id(engine) not in self.silent:
            config = resolve_config(self.context, engine)
            managed = config.get("managed_gradient_accumulation") if config is not None else None
            steps = configured_accumulation_steps(self.context, engine)
            self.silent[id(engine)] = managed is False or steps == 1
        return self.silent[id(engine)]


def _modulo_divisors(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The right operands of the `%` operations in an accumulation test."""
    found: list[cst.BaseExpression] = []

    class Modulos(cst.CSTVisitor):
        def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
            if isinstance(node.operator, cst.Modulo):
                found.append(node.right)

    test.visit(Modulos())
    return found
