"""DSL304: the loss is divided by the accumulation steps before `engine.backward`, which divides it again."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Applicability, Edit, Related, Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.project.accelerate_deepspeed import accelerate_accumulation
from dslint.project.engine_config import configured_accumulation_steps
from dslint.project.shipped_configs import shipped_single_steps
from dslint.rules.engine_step_under_accumulation_test import OWN_ACCUMULATION_WRITTEN
from dslint.script.divided_loss import only_engine_backward_reads, scales_for_accumulation
from dslint.script.edits import line_deletion, replace_node
from dslint.script.facts import Role, method_name
from dslint.script.hf_trainers import TrainerNames
from dslint.script.loop import divided_by_accumulation, is_accumulation_steps, loop_facts
from dslint.script.names import dotted_name
from dslint.script.value_flow import value_flow
from dslint.script.walk import visit_tree


def _own_accumulation(division: str, step_in_loop: bool) -> str:
    """A loop over the accumulation steps with an unknown config: the engine's step inside it, or after it."""
    step = "            engine.step()" if step_in_loop else "        engine.step()"
    return f"""
    import deepspeed
    def train(model, loader, args):
        engine, _, _, _ = deepspeed.initialize(model=model, config=args.ds_config)
        for batch in loader:
            for _ in range(args.grad_accum_steps):
                loss = engine(batch){division}
                engine.backward(loss)
    {step}
    """


_ACCELERATE = """
from accelerate import Accelerator, DeepSpeedPlugin
accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2, gradient_accumulation_steps=4))
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for batch in loader:
    accelerator.backward(model(batch) / args.accumulation_steps)
    optimizer.step()
"""


class LossDividedByAccumulationSteps(ScriptRule):
    code = "DSL304"
    slug = "loss-divided-by-accumulation-steps"
    message = "engine.backward(loss) already divides by gradient_accumulation_steps; remove this division"
    accelerate_template = "accelerator.backward runs engine.backward, which divides by {steps} ({where}); remove this"
    severity = Severity.ERROR
    # this file's engine, or `accelerator.backward` where DeepSpeed runs through accelerate (`configured`)
    needs_engine = False
    alternative_tokens = ((b"backward", b"Accelerator"),)
    call_shapes = (
        Shape(methods=("backward",), engine=True),
        Shape(methods=("backward",), words=(b"Accelerator",), configured=True),
    )
    docs = RuleDocs(
        what="""
            Flags a division of the loss by the gradient-accumulation steps (`loss / args.gradient_accumulation_steps`,
            `loss /= accum_steps`, `loss = loss / engine.gradient_accumulation_steps()`) when the result goes into
            `engine.backward(...)`, directly or through the name it is assigned to in the same function. The
            divisor is recognised by its name (`*accum*`, `gas`, `gradient_accumulation_steps`, `update_freq`; a
            mapping's entry so named, `config["gradient_accumulation_steps"]`, too); a
            plain number is not flagged. `engine.backward(loss, scale_wrt_gas=False)` is never flagged: there the
            division is the caller's job; nor is anything when the engine's config sets
            `"gradient_accumulation_steps": 1`, or, when the config cannot be read, when the backward runs in a
            `for _ in range(<accumulation steps>):` loop whose engine step comes after the loop (an accumulation the
            script runs itself, one engine step a loop, which works only with the engine's steps at 1), or when
            every DeepSpeed config the project ships near the script writes 1 (no other config to run it with). Where
            the script runs DeepSpeed through accelerate, a division before `accelerator.backward(...)` too, when
            the engine's accumulation steps are known above 1 (the script's `DeepSpeedPlugin(gradient_
            accumulation_steps=N)`, or the config its plugin or every `accelerate launch` of it names):
            accelerate's backward calls the engine's, which divides.
        """,
        why="""
            `DeepSpeedEngine.backward(loss, scale_wrt_gas=True)` computes `loss / gradient_accumulation_steps()`
            before back-propagating (`runtime/engine.py`). A loss already divided by the same number ends up
            divided by its square: with 8 accumulation steps the gradients, and so the effective learning rate
            of SGD-like optimizers and the clipping threshold's meaning, are 8 times too small. Nothing fails;
            training is just worse.
        """,
        example="""
            loss = engine(batch)
            loss = loss / args.gradient_accumulation_steps
            engine.backward(loss)
            engine.step()
        """,
        use_instead="""
            loss = engine(batch)
            engine.backward(loss)
            engine.step()
        """,
        fix_safety="""
            Inside the call (`engine.backward(loss / accum)`) the division is removed; this is safe when the
            engine's config is known and sets `gradient_accumulation_steps` above 1, and unsafe otherwise (with
            1, or a config that cannot be read, the division may be the script's own accumulation). A separate
            statement (`loss /= accum`, `loss = loss / accum`) is deleted (with an `if` it leaves empty, such as
            `if args.gradient_accumulation_steps > 1:`), or `x = loss / accum` becomes `x = loss`. That fix is
            offered only when every path the divided value takes ends in `engine.backward` (directly, or through
            another name or division covered in the same way): not when it also reaches an fp16 branch's
            `optimizer.backward(loss)`, a plain `loss.backward()`, a log line or a return, which would then get
            an undivided loss. It is unsafe because the number of micro-steps the script meant may differ from
            the config's `gradient_accumulation_steps`.
        """,
    )
    valid = (
        Valid(  # a config from the command line, and the only one the project ships steps every micro-batch
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
            for batch in loader:
                engine.backward(engine(batch) / args.gradient_accumulation_steps)
                engine.step()
            """,
            files=(("ds_config.json", '{"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}\n'),),
        ),
        # accelerate without DeepSpeed, or with the engine's accumulation at 1: no second division
        Valid(_ACCELERATE.replace("deepspeed_plugin=DeepSpeedPlugin(zero_stage=2, gradient_accumulation_steps=4)", "")),
        Valid(_ACCELERATE.replace("gradient_accumulation_steps=4", "gradient_accumulation_steps=1")),
        # the config is a JSON load of a path built at run time, but the script writes its accumulation steps: 1
        Valid(OWN_ACCUMULATION_WRITTEN),
        # the same, written through `update` with a literal dict
        Valid(
            OWN_ACCUMULATION_WRITTEN.replace(
                'ds_config["gradient_accumulation_steps"] = 1', 'ds_config.update({"gradient_accumulation_steps": 1})'
            )
        ),
        Valid(_own_accumulation(" / args.grad_accum_steps", step_in_loop=False)),
        Valid(
            """
            import deepspeed
            def train(args, engine, optimizer, loader):
                engine, optimizer, _, _ = deepspeed.initialize(args=args, model=engine, config="ds.json")
                for batch in loader:
                    loss = engine(batch)
                    if args.fp16:
                        loss = loss / args.gradient_accumulation_steps
                        optimizer.backward(loss)
                    else:
                        engine.backward(loss)
                    engine.step()
            """
        ),
        Valid(
            """
            import deepspeed
            engine, _, _, _ = deepspeed.initialize(model=model, config="ds.json")
            for batch in loader:
                loss = engine(batch)
                engine.backward(loss)
                engine.step()
                running += loss.item() / args.gradient_accumulation_steps
            """
        ),
        Valid(
            """
            import deepspeed
            engine, _, _, _ = deepspeed.initialize(model=model, config="ds.json")
            loss = engine(batch) / args.gradient_accumulation_steps
            engine.backward(loss, scale_wrt_gas=False)
            """
        ),
        Valid(
            """
            import deepspeed
            engine, _, _, _ = deepspeed.initialize(model=model, config="ds.json")
            loss = engine(batch) / 4
            engine.backward(loss)
            """
        ),
        Valid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config={"gradient_accumulation_steps": 1})
            engine.backward(engine(batch) / args.gradient_accumulation_steps)
            """
        ),
        Valid(
            """
            import deepspeed
            if args.deepspeed:
                model, _, _, _ = deepspeed.initialize(model=model, config="ds.json")
            loss = model(batch)
            if args.deepspeed:
                model.backward(loss)
            else:
                loss = loss / args.gradient_accumulation_steps
                loss.backward()
            """
        ),
    )
    invalid = (
        # accelerate's backward runs the engine's, which divides by the plugin's 4 steps
        Invalid(_ACCELERATE, lines=(6,), fixed=_ACCELERATE.replace(" / args.accumulation_steps", "")),
        # the divisor is the config dict's own entry, read where the loop divides
        Invalid(
            """
            import deepspeed
            def train(model, loader, accumulation):
                conf = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": accumulation}
                engine, *_ = deepspeed.initialize(model=model, config=conf, model_parameters=model.parameters())
                for batch in loader:
                    loss = engine(batch)
                    if conf["gradient_accumulation_steps"] > 1:
                        loss = loss / conf["gradient_accumulation_steps"]
                    engine.backward(loss)
                    engine.step()
            """,
            lines=(9,),
            fixed="""
            import deepspeed
            def train(model, loader, accumulation):
                conf = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": accumulation}
                engine, *_ = deepspeed.initialize(model=model, config=conf, model_parameters=model.parameters())
                for batch in loader:
                    loss = engine(batch)
                    engine.backward(loss)
                    engine.step()
            """,
        ),
        Invalid(
            _own_accumulation(" / args.grad_accum_steps", step_in_loop=True),
            lines=(7,),
            fixed=_own_accumulation("", step_in_loop=True),
        ),
        Invalid(
            """
            import deepspeed
            def train(args, net, loader):
                model, *_ = deepspeed.initialize(args=args, model=net, model_parameters=net.parameters())
                update_freq = args.update_freq
                for batch in loader:
                    loss = model(batch)
                    loss /= update_freq
                    model.backward(loss)
                    model.step()
            """,
            lines=(8,),
            fixed="""
            import deepspeed
            def train(args, net, loader):
                model, *_ = deepspeed.initialize(args=args, model=net, model_parameters=net.parameters())
                update_freq = args.update_freq
                for batch in loader:
                    loss = model(batch)
                    model.backward(loss)
                    model.step()
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
                        model.backward(loss)
                    model.step()
            """,
            lines=(8,),
            # The fp16 branch's optimizer.backward does not divide: the division must stay for it.
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
                        model.backward(loss)
                    model.step()
            """,
        ),
        Invalid(
            """
            import deepspeed
            model_engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=params)
            for batch in loader:
                loss = model_engine(batch)
                if args.gradient_accumulation_steps > 1:
                    loss = loss / args.gradient_accumulation_steps
                model_engine.backward(loss)
                model_engine.step()
            """,
            lines=(7,),
            fixed="""
            import deepspeed
            model_engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=params)
            for batch in loader:
                loss = model_engine(batch)
                model_engine.backward(loss)
                model_engine.step()
            """,
        ),
        Invalid(
            """
            import deepspeed
            def main():
                model, _, _, _ = deepspeed.initialize(model=model, config=cfg)
                for batch in loader:
                    outputs = model(**batch)
                    model.backward(outputs.loss / model.gradient_accumulation_steps())
                    model.step()
            """,
            lines=(7,),
            fixed="""
            import deepspeed
            def main():
                model, _, _, _ = deepspeed.initialize(model=model, config=cfg)
                for batch in loader:
                    outputs = model(**batch)
                    model.backward(outputs.loss)
                    model.step()
            """,
        ),
        Invalid(
            """
            import deepspeed
            class Trainer:
                def __init__(self, net, cfg):
                    self.engine, *_ = deepspeed.initialize(model=net, config=cfg)
                def step(self, batch):
                    loss = self.engine(batch)
                    loss /= self.grad_accum_steps
                    scaled = loss / self.grad_accum_steps
                    self.engine.backward(loss)
                    self.engine.backward(scaled)
            """,
            lines=(8, 9),
            fixed="""
            import deepspeed
            class Trainer:
                def __init__(self, net, cfg):
                    self.engine, *_ = deepspeed.initialize(model=net, config=cfg)
                def step(self, batch):
                    loss = self.engine(batch)
                    scaled = loss
                    self.engine.backward(loss)
                    self.engine.backward(scaled)
            """,
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.trainers = TrainerNames(self.context)
        self.accumulation: tuple[int, str, tuple[Related, ...]] | bool | None = False  # not read yet
        self.reported: set[int] = set()
        self.accumulating: list[cst.For] = []  # the enclosing `for _ in range(<accumulation steps>):` loops

    def visit_For(self, node: cst.For) -> None:
        iterated = node.iter
        if (
            isinstance(iterated, cst.Call)
            and isinstance(iterated.func, cst.Name)
            and iterated.func.value == "range"
            and len(iterated.args) == 1
            and is_accumulation_steps(iterated.args[0].value)
        ):
            self.accumulating.append(node)

    def leave_For(self, original_node: cst.For) -> None:
        if self.accumulating and self.accumulating[-1] is original_node:
            self.accumulating.pop()

    def _accumulates_by_hand(self, backward: cst.Call) -> bool:
        """`for _ in range(accum_steps): ... engine.backward(loss)` with the engine's step after the loop, not in
        it: the script runs its own accumulation, one engine step per loop, which works only when the engine
        does not accumulate (gradient_accumulation_steps 1): its backward does not divide, so the script must."""
        if not self.accumulating:
            return False
        start, end = self.context.span(self.accumulating[-1])
        return not any(
            method_name(call) == "step" and start <= self.context.span(call)[0] and self.context.span(call)[1] <= end
            for call in loop_facts(self.facts).calls
        )

    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) != "backward" or not node.args or node.args[0].keyword is not None:
            return
        assert isinstance(node.func, cst.Attribute)
        answer = self.facts.role_of(node.func.value, at=node)
        related: tuple[Related, ...] = ()
        if answer is not None and answer.role is Role.ENGINE and scales_for_accumulation(node):
            steps = configured_accumulation_steps(self.context, answer.engine)
            if steps == 1 or (steps is None and self._accumulates_by_hand(node)):
                return  # the engine does not divide; dividing by hand is the caller's own accumulation
            local = answer.engine is not None and not answer.engine.elsewhere and bool(self.context.path)
            if steps is None and local and shipped_single_steps(self.context.path):
                return  # every config the project ships steps each micro-batch: the engine divides by 1
            message = self.message.replace("engine.", self.context.code(node.func.value) + ".", 1)
        elif answer is None and len(node.args) == 1 and self.trainers.names_accelerator(node.func.value):
            accumulation = self._accelerate_accumulation()
            if accumulation is None:
                return  # accelerate without DeepSpeed divides itself; with it, the steps must be known above 1
            steps, where, related = accumulation
            message = self.accelerate_template.format(steps=steps, where=where)
        else:
            return
        loss = node.args[0].value
        division = divided_by_accumulation(loss)
        if division is not None:
            self.report(
                division,
                message,
                edits=[replace_node(self.context, division, self.context.code(division.left))],
                applicability=Applicability.SAFE if steps is not None and steps > 1 else Applicability.UNSAFE,
                fix_message="Remove the division",
                about=node,
                related=related,
            )
            return
        binding = self.facts.local_binding(loss)
        if binding is None:
            return
        scope = binding.scope
        statement = binding.statement
        if statement is None or id(statement) in self.reported:
            return
        if isinstance(loss, cst.Name):
            reaching = value_flow(self.facts, scope.node).definitions_reaching(loss)
            if reaching is not None and not any(d is statement for d in reaching):
                return  # the division is on another path (an `else:` branch): it never reaches this call
        self.reported.add(id(statement))
        if isinstance(statement, cst.AugAssign):
            if isinstance(statement.operator, cst.DivideAssign) and is_accumulation_steps(statement.value):
                edits = self._delete(statement) if self._removable(statement, statement.target) else []
                self.report(
                    statement, message, edits=edits, applicability=Applicability.UNSAFE, about=node, related=related
                )
        elif isinstance(statement, cst.Assign) and statement.value is binding.value and binding.value is not None:
            division = divided_by_accumulation(binding.value)
            if division is None:
                return
            left = dotted_name(division.left)
            target = statement.targets[0].target if len(statement.targets) == 1 else None
            if not self._removable(statement, target):
                edits = []
            elif left == dotted_name(loss):
                edits = self._delete(statement)
            else:
                edits = [replace_node(self.context, division, self.context.code(division.left))]
            self.report(division, message, edits=edits, applicability=Applicability.UNSAFE, about=node, related=related)

    def _accelerate_accumulation(self) -> tuple[int, str, tuple[Related, ...]] | None:
        """The accumulation steps of the engine accelerate builds for this script, read once."""
        if self.accumulation is False:
            self.accumulation = accelerate_accumulation(self.context)
        return self.accumulation if not isinstance(self.accumulation, bool) else None

    def _removable(self, statement: cst.CSTNode, target: cst.BaseExpression | None) -> bool:
        """The divided value goes only where engine.backward divides again (not to an fp16 branch's
        `optimizer.backward(loss)`, a plain `loss.backward()` or a log line): only then may the division go."""
        return isinstance(target, cst.Name) and only_engine_backward_reads(self.facts, statement, target)

    def _delete(self, statement: cst.BaseSmallStatement) -> list[Edit]:
        line = self._line_of(statement)
        return line_deletion(self.context, line)

    def _line_of(self, statement: cst.BaseSmallStatement) -> cst.SimpleStatementLine | None:
        for line in self._lines():
            if len(line.body) == 1 and line.body[0] is statement:
                return line
        return None

    def _lines(self) -> list[cst.SimpleStatementLine]:
        if not hasattr(self, "_all_lines"):
            found: list[cst.SimpleStatementLine] = []

            class Lines(cst.CSTVisitor):
                def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
                    found.append(node)

            visit_tree(self.context.module, Lines())
            self._all_lines = found
        return self._all_lines
