"""DSL102: the DeepSpeed engine (or its module) is moved or cast after `deepspeed.initialize`."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Applicability, Edit, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.script.edits import delete_call_statement
from dslint.script.facts import Role, method_name
from dslint.script.model_moves import is_placement_call


class EngineMoved(ScriptRule):
    code = "DSL102"
    slug = "engine-moved"
    message = (
        "the engine is already on its rank's device (engine.device) and keeps the precision the config "
        "sets; remove this move"
    )
    severity = Severity.WARNING
    fixable = True
    docs = RuleDocs(
        what="""
            Flags `.cuda()`, `.to(...)`, `.half()` and `.bfloat16()` called on the engine returned by
            `deepspeed.initialize`, or on its `.module`.
        """,
        why="""
            The engine moves the module to its rank's device and casts it while it is created, and its
            optimizer (fp32 master weights, ZeRO partitions) is built around those tensors. Moving or casting
            the engine afterwards is redundant at best; with ZeRO-3 it touches partitioned parameters whose
            `param.data` is empty, and a cast breaks the link between the module and the optimizer's master
            weights. Batches, not the engine, are what must be moved: `batch.to(engine.device)`.
        """,
        example="""
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds_config.json")
            engine.to(device)
        """,
        use_instead="""
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds_config.json")
            inputs = inputs.to(engine.device)
        """,
        fix_safety="""
            The fix deletes the statement when the move is a statement of its own (`engine.cuda()`,
            `engine = engine.to(device)`). It is unsafe: moving the engine to another device (the CPU, say) is
            a change of behaviour that the script may have meant.
        """,
    )
    valid = (
        Valid(
            """
            import deepspeed
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds.json")
            for batch in loader:
                batch = batch.to(engine.device)
                labels = labels.to(engine.local_rank)
                loss = engine(batch)
            """
        ),
        Valid(
            """
            import deepspeed
            def evaluate(engine, data):
                engine.cuda()
            """
        ),
        Valid(
            """
            import deepspeed
            engine = deepspeed.initialize(model=model, config="ds.json")[0]
            engine = other_model
            engine.cuda()
            """
        ),
    )
    invalid = (
        Invalid(
            """
            import deepspeed
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds.json")
            engine.to(device)
            """,
            lines=(4,),
            fixed="""
            import deepspeed
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config="ds.json")
            """,
        ),
        Invalid(
            """
            import deepspeed
            result = deepspeed.initialize(model=net, config=cfg)
            model = result[0]
            model = model.cuda()
            model.module.half()
            """,
            lines=(5, 6),
            fixed="""
            import deepspeed
            result = deepspeed.initialize(model=net, config=cfg)
            model = result[0]
            """,
        ),
        Invalid(
            """
            import deepspeed
            class Trainer:
                def __init__(self, model, cfg):
                    self.engine, self.optimizer, _, _ = deepspeed.initialize(model=model, config=cfg)
                def train(self, batch):
                    if self.on_gpu:
                        self.engine.cuda()
                    return self.engine(batch)
            """,
            lines=(8,),
            fixed="""
            import deepspeed
            class Trainer:
                def __init__(self, model, cfg):
                    self.engine, self.optimizer, _, _ = deepspeed.initialize(model=model, config=cfg)
                def train(self, batch):
                    if self.on_gpu:
                        pass
                    return self.engine(batch)
            """,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not is_placement_call(node):
            return
        assert isinstance(node.func, cst.Attribute)
        answer = self.facts.role_of(node.func.value, at=node)
        if answer is None or answer.role not in (Role.ENGINE, Role.ENGINE_MODULE):
            return
        self.report(
            node,
            edits=self._fix(node),
            applicability=Applicability.UNSAFE,
            fix_message=f"Remove `.{method_name(node)}(...)`",
        )

    def _fix(self, node: cst.Call) -> list[Edit]:
        edit = delete_call_statement(self.context, node)
        return [edit] if edit is not None else []
