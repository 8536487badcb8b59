"""DSL307: the forward pass goes through the model given to `deepspeed.initialize`, not through the engine."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from dslint.diagnostics import Applicability, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.project.evidence import evidence
from dslint.script.edits import replace_node
from dslint.script.facts import InitializeCall, Pos, Role, Scope, ScopeKind, method_name
from dslint.script.loop import GRAPH_CUTTING_METHODS, loop_facts
from dslint.script.names import dotted_name
from dslint.script.walk import children


class ForwardThroughRawModel(ScriptRule):
    code = "DSL307"
    slug = "forward-through-raw-model"
    message = "call the engine instead of the model given to deepspeed.initialize: this forward skips the engine"
    named_template = "call the engine ({engine}(...)) instead of the model given to deepspeed.initialize"
    severity = Severity.WARNING
    docs = RuleDocs(
        what="""
            Flags `model(...)` and `model.forward(...)` after `engine, ... = deepspeed.initialize(model=model,
            ...)` when the engine is bound to another name and the forward may be part of training: it does not
            run under `torch.no_grad()` / `torch.inference_mode()`, and, in the function that calls
            `initialize`, a `backward` call follows it (in that function or in the same loop). Evaluation
            through the raw module is left alone: what it skips in `DeepSpeedEngine.forward` matters only to a
            step that trains. So is a forward whose output, bound to a name, is only detached or handed to a call
            whose result is thrown away (`save_image(preview, ...)`): it cannot reach a backward.
            Flagged are calls in the function that calls `initialize`, after the call, and
            calls through `self.<attribute>` in other methods of a class whose `__init__` calls `initialize`
            (which has run before any other method); and, in the function that calls `initialize` and
            back-propagates, the model handed to a project function (of any module) that runs that parameter
            forward with gradients on, when what the call returns feeds a backward there (`loss =
            diffusion_loss(model, batch)` ... `engine.backward(loss)`; not `acc = accuracy(model, loader)`). When
            `initialize`'s result is bound to the model's own name (`model, ... = deepspeed.initialize(model=model)`)
            the name is the engine and nothing is flagged. `engine.module(...)` (or `.forward(...)`) whose output
            feeds a `backward` of its function is flagged the same way, wherever the engine comes from.
        """,
        why="""
            The engine wraps the model; its parameters are the engine's (cast to fp16/bf16, partitioned under
            ZeRO-3), and some of what a training step needs runs only in `DeepSpeedEngine.forward`
            (`runtime/engine.py`): `optimizer.clear_backward_seen_flag()`, which under ZeRO-1/2 clears the
            previous micro-step's accumulated-gradient buffers and under ZeRO-3 advances the micro-step counter
            that decides whether gradients are copied or added; the config's `torch_autocast`; DeepCompile; and
            the output hooks that scale a direct `loss.backward()` for accumulation. In DeepSpeed 0.19 the
            module's own hooks (ZeRO-3 parameter gathering, fp16 input casting) still run on a raw forward, so
            it seems to work. Seen with DeepSpeed 0.19.8 on the CPU (a small MLP, SGD, `gradient_accumulation_steps:
            2`, two updates): under ZeRO-3 the weights after raw forwards differ from those after `engine(...)`;
            under ZeRO-1/2 they were equal in that run.
        """,
        example="""
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds.json")
            outputs = model(inputs)
            engine.backward(criterion(outputs, labels))
        """,
        use_instead="""
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds.json")
            outputs = engine(inputs)
            engine.backward(criterion(outputs, labels))
        """,
        fix_safety="""
            The fix calls the engine instead (`model(x)` -> `engine(x)`) when exactly one name holds the engine.
            It is unsafe: the engine's forward can behave differently on purpose (fp16 input casting, autocast,
            profiling), and a forward meant to run outside training (evaluation under `torch.no_grad()`) is
            better served by the engine too but changes its counters.
        """,
    )
    valid = (
        # the model handed, after initialize, to an evaluation that runs it forward: its result feeds no backward
        Valid(
            """
            import deepspeed
            from metrics import accuracy
            def train(args, net, loader):
                engine, _, _, _ = deepspeed.initialize(args=args, model=net)
                for epoch in range(3):
                    for batch in loader:
                        engine.backward(engine(batch).mean())
                        engine.step()
                    acc = accuracy(net, loader)
                    print(acc)
            """,
            files=(
                (
                    "metrics.py",
                    "def accuracy(model, loader):\n"
                    "    hits = [model(x).argmax(-1) for x in loader]\n"
                    "    return sum(h.float().mean().item() for h in hits) / len(hits)\n",
                ),
            ),
        ),
        # a preview from fixed noise, only saved as a picture: it never reaches a backward
        Valid(
            """
            import deepspeed
            def train(args, generator, loader, writer):
                engine, _, _, _ = deepspeed.initialize(args=args, model=generator)
                for step, noise in enumerate(loader):
                    sample = engine(noise)
                    engine.backward(critic(sample).mean())
                    engine.step()
                    if step % 50 == 0:
                        sample = generator(fixed_noise)
                        save_image(sample.detach(), "preview.png")
                        writer.add_image("preview", sample, step)
            """
        ),
        Valid(
            """
            import deepspeed
            import torch
            net = Net()
            engine, *_ = deepspeed.initialize(model=net, config="ds.json")
            for x, y in loader:
                engine.backward(loss_fn(engine(x), y))
                engine.step()
            with torch.no_grad():
                predictions = [net(x) for x, _ in test_loader]
            preview = net(sample)
            """
        ),
        Valid(
            """
            import deepspeed
            import torch
            net = Net()
            engine, *_ = deepspeed.initialize(model=net, config="ds.json")
            @torch.inference_mode()
            def evaluate():
                return net(sample)
            """
        ),
        Valid(
            """
            import deepspeed
            model = Net()
            model(torch.zeros(1, 4))
            model, optimizer, _, _ = deepspeed.initialize(model=model, config="ds.json")
            outputs = model(inputs)
            """
        ),
        Valid(
            """
            import deepspeed
            def evaluate(model, loader):
                for x in loader:
                    model(x)
            def main():
                net = Net()
                engine, *_ = deepspeed.initialize(model=net, config="ds.json")
                evaluate(engine, loader)
            """
        ),
        Valid(
            """
            import deepspeed
            net = Net()
            if args.deepspeed:
                engine, *_ = deepspeed.initialize(model=net, config="ds.json")
            else:
                out = net(x)
            """
        ),
        Valid(
            """
            import deepspeed
            net = Net()
            engine, *_ = deepspeed.initialize(model=net, config="ds.json")
            net = engine.module
            out = net(x)
            """
        ),
    )
    invalid = (
        # the raw model handed to a loss function of another module that runs it forward (the scoring function
        # runs it under no_grad; before initialize the model is not the engine's yet)
        Invalid(
            """
            import deepspeed
            from losses import denoising_loss, score
            def train(args, net, loader):
                warm = denoising_loss(net, next(iter(loader)))
                engine, _, _, _ = deepspeed.initialize(args=args, model=net)
                for batch in loader:
                    loss = denoising_loss(net, batch)
                    engine.backward(loss)
                    engine.step()
                    score(net, batch)
            """,
            lines=(8,),
            files=(
                (
                    "losses.py",
                    "import torch\n"
                    "def denoising_loss(model, batch):\n"
                    "    noise = torch.randn_like(batch)\n"
                    "    return (model(batch + noise) - noise).pow(2).mean()\n"
                    "@torch.no_grad()\n"
                    "def score(model, batch):\n"
                    "    return model(batch).mean()\n",
                ),
            ),
        ),
        # the sample is kept in a list: a later loss may be computed from it
        Invalid(
            """
            import deepspeed
            def train(args, generator, loader, samples):
                engine, _, _, _ = deepspeed.initialize(args=args, model=generator)
                for step, noise in enumerate(loader):
                    engine.backward(critic(engine(noise)).mean())
                    engine.step()
                    if step % 50 == 0:
                        sample = generator(fixed_noise)
                        samples.append(sample)
            """,
            lines=(9,),
            fixed="""
            import deepspeed
            def train(args, generator, loader, samples):
                engine, _, _, _ = deepspeed.initialize(args=args, model=generator)
                for step, noise in enumerate(loader):
                    engine.backward(critic(engine(noise)).mean())
                    engine.step()
                    if step % 50 == 0:
                        sample = engine(fixed_noise)
                        samples.append(sample)
            """,
        ),
        # read at the top of the next iteration before any rebinding
        Invalid(
            """
            import deepspeed
            def train(args, generator, loader):
                engine, _, _, _ = deepspeed.initialize(args=args, model=generator)
                sample = None
                for step, noise in enumerate(loader):
                    if sample is not None:
                        engine.backward(critic(sample).mean())
                    sample = generator(noise)
            """,
            lines=(9,),
            fixed="""
            import deepspeed
            def train(args, generator, loader):
                engine, _, _, _ = deepspeed.initialize(args=args, model=generator)
                sample = None
                for step, noise in enumerate(loader):
                    if sample is not None:
                        engine.backward(critic(sample).mean())
                    sample = engine(noise)
            """,
        ),
        Invalid(
            """
            import deepspeed
            net = Net()
            model_engine, optimizer, trainloader, _ = deepspeed.initialize(args=args, model=net, training_data=ds)
            for inputs, labels in trainloader:
                outputs = net(inputs.to(model_engine.device))
                model_engine.backward(criterion(outputs, labels))
                model_engine.step()
            """,
            lines=(6,),
            fixed="""
            import deepspeed
            net = Net()
            model_engine, optimizer, trainloader, _ = deepspeed.initialize(args=args, model=net, training_data=ds)
            for inputs, labels in trainloader:
                outputs = model_engine(inputs.to(model_engine.device))
                model_engine.backward(criterion(outputs, labels))
                model_engine.step()
            """,
        ),
        Invalid(
            """
            import deepspeed
            class Trainer:
                def __init__(self, cfg):
                    self.model = Net()
                    self.model_engine, self.optimizer, _, _ = deepspeed.initialize(model=self.model, config=cfg)
                def train_step(self, batch):
                    loss = self.model.forward(batch)
                    self.model_engine.backward(loss)
            """,
            lines=(8,),
            fixed="""
            import deepspeed
            class Trainer:
                def __init__(self, cfg):
                    self.model = Net()
                    self.model_engine, self.optimizer, _, _ = deepspeed.initialize(model=self.model, config=cfg)
                def train_step(self, batch):
                    loss = self.model_engine(batch)
                    self.model_engine.backward(loss)
            """,
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.loop = loop_facts(self.facts)
        self.no_grad_depth = 0
        facts = self.facts
        self.backwards: list[tuple[Scope, Pos]] = [
            (facts.scope_at(call), facts.start(call))
            for call in facts.statement_of_call
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward"
        ]
        self.loops: list[cst.CSTNode] = []

    def _no_grad(self, items: Sequence[cst.BaseExpression]) -> bool:
        return any(
            (self.facts.qualified(item.func if isinstance(item, cst.Call) else item) or "")
            in ("torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad")
            for item in items
        )

    def visit_With(self, node: cst.With) -> None:
        if self._no_grad([item.item for item in node.items]):
            self.no_grad_depth += 1

    def leave_With(self, original_node: cst.With) -> None:
        if self._no_grad([item.item for item in original_node.items]):
            self.no_grad_depth -= 1

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._no_grad([d.decorator for d in node.decorators]):
            self.no_grad_depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if self._no_grad([d.decorator for d in original_node.decorators]):
            self.no_grad_depth -= 1

    def visit_For(self, node: cst.For) -> None:
        self.loops.append(node)

    def leave_For(self, original_node: cst.For) -> None:
        self.loops.pop()

    def visit_While(self, node: cst.While) -> None:
        self.loops.append(node)

    def leave_While(self, original_node: cst.While) -> None:
        self.loops.pop()

    def _backward_follows(self, node: cst.Call) -> bool:
        """A backward call later in the same scope, or anywhere in the innermost loop around the forward."""
        facts = self.facts
        scope, pos = facts.scope_at(node), facts.start(node)
        loop = self.loops[-1] if self.loops else None
        for backward_scope, backward_pos in self.backwards:
            if backward_scope is not scope:
                continue
            if backward_pos > pos or (loop is not None and facts.start(loop) <= backward_pos < facts.end(loop)):
                return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        self._handed_to_forward(node)
        target = node.func
        if isinstance(target, cst.Attribute) and target.attr.value == "forward":
            target = target.value
        key = dotted_name(target)
        if key is None:
            return
        answer = self.facts.role_of(target, at=node)
        if answer is not None and answer.role is Role.ENGINE_MODULE and isinstance(target, cst.Attribute):
            # `engine.module(batch)` feeding `engine.backward`: the same forward without the engine
            if not self.no_grad_depth and self._feeds_backward(node) and not self._output_discarded(node):
                engine = dotted_name(target.value)
                edits = [replace_node(self.context, node.func, engine)] if engine is not None else []
                fix = f"Call `{engine}` instead"
                message = self.named_template.format(engine=engine) if engine else self.message
                self.report(node, message, edits=edits, applicability=Applicability.UNSAFE, fix_message=fix)
            return
        if answer is None or answer.role is not Role.RAW_MODEL or answer.init is None:
            return
        init = answer.init
        if not self.facts.result_keys(init.engine, Role.ENGINE) or not self._runs_after(init, node, key):
            return
        if self.no_grad_depth or (self.facts.scope_at(node) is init.scope and not self._backward_follows(node)):
            return  # evaluation, not a training step
        if self._output_discarded(node):
            return  # a preview: the output only goes where no backward can see it
        engine = self.loop.certain_engine_name(init.engine, at=node)
        edits = [replace_node(self.context, node.func, engine)] if engine is not None else []
        self.report(
            node,
            self.message if engine is None else self.named_template.format(engine=engine),
            edits=edits,
            applicability=Applicability.UNSAFE,
            fix_message=f"Call `{engine}` instead",
        )

    def _handed_to_forward(self, node: cst.Call) -> None:
        """`self.log_probs(self.engine.module, batch)` where the project function runs that parameter forward
        (`model(**batch)`, with gradients on; `ProjectFacts.forwarding_calls`): a training forward that skips the
        engine, unless the call itself is under `no_grad`. The engine may come from another module (a base
        class's `self.engine`)."""
        project = self.facts.project
        if project is None or not project.forwarding_calls or self.no_grad_depth:
            return
        position = self.facts.call_position(node)
        found = project.forwarding_calls.get(position) if position is not None else None
        if found is None:
            return
        index, name, where = found
        argument = _argument(node, index, name)
        answer = self.facts.role_of(argument, at=node) if argument is not None else None
        if answer is None or answer.role not in (Role.ENGINE_MODULE, Role.RAW_MODEL):
            return
        init = answer.init
        if answer.role is Role.RAW_MODEL and (
            init is None
            or not self.facts.result_keys(init.engine, Role.ENGINE)
            or self.facts.scope_at(node) is not init.scope
            or self.facts.start(node) < init.end
            or not self._feeds_backward(node)
        ):
            return  # before initialize, no other name holding the engine, or an evaluation (no backward of it)
        if init is not None and self.facts.scope_at(node) is init.scope and not self._backward_follows(node):
            return  # evaluation next to initialize, not a training step
        found_evidence = evidence(self.context, answer.engine)
        self.report(
            node,
            f"{self.message} ({name} runs forward in {where.path}:{where.line}: {where.message})"
            + found_evidence.suffix,
            related=(where, *found_evidence.related),
        )

    def _feeds_backward(self, node: cst.Call) -> bool:
        """`loss = f(model, batch)` whose name (or a name computed from it in the same function, one step on) is
        read by a `backward` call of the function: `engine.backward(loss)`, `loss.backward()`. An evaluation's
        result (`acc = test(model, loader)`) feeds none."""
        bound = self.facts.bound_to_name(node)
        if bound is None:
            return False
        scope = self.facts.scope_at(node)
        names = {bound[1]}
        backward_reads: set[str] = set()
        derived: list[tuple[str, set[str]]] = []

        class Reads(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                if method_name(call) == "backward":
                    backward_reads.update(n.value for n in _names_in(call))

            def visit_Assign(self, assign: cst.Assign) -> None:
                targets = [t.target.value for t in assign.targets if isinstance(t.target, cst.Name)]
                read = {n.value for n in _names_in(assign.value)}
                derived.extend((target, read) for target in targets)

            def visit_FunctionDef(self, inner: cst.FunctionDef) -> bool:
                return inner is scope.node

        scope.node.visit(Reads())
        names |= {target for target, read in derived if read & names}
        return bool(names & backward_reads)

    def _output_discarded(self, node: cst.Call) -> bool:
        """`name = model(x)` whose every read (while this binding holds) cuts the graph (`name.detach()`,
        `.item()`, ...) or is an argument of a call whose result is thrown away (`save_image(name, ...)`, not a
        container's `append`): the output cannot reach a backward. A read earlier in the same loop counts as
        this binding's (the next iteration's) unless the loop body rebinds the name, unconditionally, first."""
        facts = self.facts
        bound = facts.bound_to_name(node)
        if bound is None:
            return False
        _, name = bound
        scope = facts.scope_at(node)
        here = facts.start(node)
        loop = self.loops[-1] if self.loops else None
        rebinds = _direct_assignments(loop, name) if loop is not None else []
        for read, parents in _reads(scope.node, name):
            position = facts.start(read)
            if position < here:
                if loop is None or not facts.start(loop) <= position < facts.end(loop):
                    continue
                if not any(facts.start(line) < position for line in rebinds):
                    return False  # may read the previous iteration's output
                continue
            binding = facts.binding_at(name, scope, position)
            if binding is None:
                return False
            if binding.value is not node:
                continue
            if not _sink(read, parents):
                return False
        return True

    def _runs_after(self, init: InitializeCall, node: cst.Call, key: str) -> bool:
        scope = self.facts.scope_at(node)
        if scope is init.scope:
            return self.facts.start(node) >= init.end
        init_function = init.scope.node
        return (
            key.split(".")[0] == scope.self_name
            and scope.enclosing_class() is not None
            and scope.enclosing_class() is init.scope.enclosing_class()
            and init.scope.kind is ScopeKind.FUNCTION
            and isinstance(init_function, cst.FunctionDef)
            and init_function.name.value == "__init__"
        )


# Methods that keep their argument (a container that a loss may later be computed from).
STORING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "put", "push", "register"})


def _names_in(node: cst.CSTNode) -> list[cst.Name]:
    """The names read in `node` (attribute names and keywords left out)."""
    found: list[cst.Name] = []

    class Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.append(name)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)
            return False

        def visit_Arg(self, arg: cst.Arg) -> bool:
            arg.value.visit(self)
            return False

    node.visit(Names())
    return found


def _reads(scope_node: cst.CSTNode, name: str) -> list[tuple[cst.Name, tuple[cst.CSTNode, ...]]]:
    """Every read of `name` in the function (or module) `scope_node`, not in nested functions or classes, with
    its parents (innermost last); assignment targets are left out."""
    found: list[tuple[cst.Name, tuple[cst.CSTNode, ...]]] = []
    stack: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = [
        (child, (scope_node,)) for child in children(scope_node)
    ]
    while stack:
        node, parents = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Name):
            parent = parents[-1]
            is_attribute_name = isinstance(parent, cst.Attribute) and parent.attr is node
            if node.value == name and not isinstance(parent, cst.AssignTarget) and not is_attribute_name:
                found.append((node, parents))
            continue
        if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name):
            continue
        stack.extend((child, (*parents, node)) for child in children(node))
    return found


def _sink(read: cst.Name, parents: tuple[cst.CSTNode, ...]) -> bool:
    """The read cannot carry the graph to a backward: `read.detach()` (or `.item()`, ...), or an argument of a
    plain call whose result is discarded (an expression statement)."""
    parent = parents[-1]
    if isinstance(parent, cst.Attribute) and parent.value is read:
        return parent.attr.value in GRAPH_CUTTING_METHODS and len(parents) >= 2 and isinstance(parents[-2], cst.Call)
    if isinstance(parent, cst.Arg) and parent.value is read and len(parents) >= 3:
        call, statement = parents[-2], parents[-3]
        if not isinstance(call, cst.Call) or not isinstance(statement, cst.Expr):
            return False
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
        return method not in STORING_METHODS and method != "backward"
    return False


def _direct_assignments(loop: cst.CSTNode, name: str) -> list[cst.CSTNode]:
    """The lines directly in the loop's body (not under an `if`) that assign `name`."""
    body = getattr(loop, "body", None)
    lines = body.body if isinstance(body, cst.IndentedBlock) else ()
    return [
        line
        for line in lines
        if isinstance(line, cst.SimpleStatementLine)
        and any(
            isinstance(small, cst.Assign)
            and any(isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets)
            for small in line.body
        )
    ]


def _argument(call: cst.Call, index: int | None, name: str) -> cst.BaseExpression | None:
    """The argument a call passes at position `index`, or by keyword `name` when `index` is None."""
    if index is None:
        return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[index].value if index < len(positional) else None
