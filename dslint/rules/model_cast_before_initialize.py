"""DSL104: the model is cast to half precision before it is given to `deepspeed.initialize` (split from DSL101)."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Applicability, Edit, Severity
from dslint.framework.rule import Invalid, RuleDocs, Valid
from dslint.rules.model_moved_before_initialize import ModelMovedBeforeInitialize
from dslint.script.edits import delete_line
from dslint.script.parameter_casts import cast_loops, casting_helpers, helper_argument, parameter_loops
from dslint.script.statement_removal import delete_statements


class ModelCastBeforeInitialize(ModelMovedBeforeInitialize):
    """The same walk as DSL101 (the model's calls before the `initialize` it reaches), reporting the casts."""

    code = "DSL104"
    slug = "model-cast-before-initialize"
    message = "model cast before deepspeed.initialize; remove the cast and set fp16/bf16 in the config"
    severity = Severity.WARNING
    inference_engine = False
    casts = True
    docs = RuleDocs(
        what="""
            Flags `.half()`, `.bfloat16()` and `.to(..., dtype=...)` (or `.to(torch.float16)`) on the model that
            is later given to `deepspeed.initialize(model=...)`, in the same function, before that call; also a cast
            one parameter at a time (`for p in model.parameters(): p.data = p.data.half()`), in that function or
            in a function of the same module it hands the model to (`set_parameter_bf16(model)`). It used to be
            part of DSL101 (`# noqa: DSL101` and `ignore = ["DSL101"]` still cover it, through the redirect).
        """,
        why="""
            Casting is the engine's job: it casts the module to fp16 or bf16 when the config's `fp16` or `bf16`
            section enables them (DeepSpeedEngine `_configure_distributed_model`), and builds the loss scaler and
            the fp32 master weights to match. A model cast to half by hand under a config without `fp16` trains
            in half precision with no loss scaling and no fp32 master copy; under a config with it, the cast is
            redundant.
        """,
        example="""
            model = Net().half()
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
        """,
        use_instead="""
            model = Net()
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")  # ds.json: "fp16": {"enabled": true}
        """,
        fix_safety="""
            The fix removes the cast (a lone statement is deleted; in an expression the call is dropped from its
            chain; a per-parameter cast loses its statement, and the loop goes with it when casting was all it
            did). It is unsafe: it changes the precision the model trains in unless the config enables it, and
            code between the cast and `initialize` may rely on the dtype.
        """,
    )
    valid = (
        Valid(
            """
            import deepspeed
            model = Net().to("cuda")
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """
        ),
        Valid(
            """
            import deepspeed
            model = Net()
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            teacher = Net().half()
            """
        ),
    )
    invalid = (
        Invalid(
            """
            import deepspeed as ds
            net = Net().to(device).half()
            model_engine, *_ = ds.initialize(args=args, model=net)
            """,
            lines=(3,),
            fixed="""
            import deepspeed as ds
            net = Net().to(device)
            model_engine, *_ = ds.initialize(args=args, model=net)
            """,
        ),
        Invalid(
            """
            import deepspeed, torch
            def set_parameter_bf16(net):
                for param in net.parameters():
                    param.data = param.data.to(torch.bfloat16)
            def main(cfg):
                model = Net()
                set_parameter_bf16(model)
                for _, p in model.named_parameters():
                    p.data = p.data.half()
                engine, *_ = deepspeed.initialize(model=model, config=cfg)
            """,
            lines=(8, 10),
            fixed="""
            import deepspeed, torch
            def set_parameter_bf16(net):
                for param in net.parameters():
                    param.data = param.data.to(torch.bfloat16)
            def main(cfg):
                model = Net()
                engine, *_ = deepspeed.initialize(model=model, config=cfg)
            """,
        ),
        # the loop does more than cast: only the cast's statement goes
        Invalid(
            """
            import deepspeed
            def main(cfg):
                model = Net()
                for p in model.parameters():
                    p.requires_grad = True
                    p.data = p.data.half()
                engine, *_ = deepspeed.initialize(model=model, config=cfg)
            """,
            lines=(7,),
            fixed="""
            import deepspeed
            def main(cfg):
                model = Net()
                for p in model.parameters():
                    p.requires_grad = True
                engine, *_ = deepspeed.initialize(model=model, config=cfg)
            """,
        ),
        Invalid(
            """
            import deepspeed
            class Trainer:
                def setup(self):
                    self.model = Net()
                    self.model.bfloat16()
                    self.engine, _, _, _ = deepspeed.initialize(model=self.model, config=self.cfg)
            """,
            lines=(6,),
            fixed="""
            import deepspeed
            class Trainer:
                def setup(self):
                    self.model = Net()
                    self.engine, _, _, _ = deepspeed.initialize(model=self.model, config=self.cfg)
            """,
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        super().visit_Module(node)
        self.loop_casts = parameter_loops(node)
        self.cast_loops = cast_loops(node)
        self.casting_helpers = casting_helpers(node)

    def visit_Call(self, node: cst.Call) -> None:
        super().visit_Call(node)
        model = self.loop_casts.get(node)
        if model is None:
            model = helper_argument(node, self.casting_helpers)
        init = self.moves.initialize_of_model(node, model) if model is not None else None
        if init is None:
            return
        message = self.message
        if init.origin is not None:
            message += f" (the model reaches deepspeed.initialize at {init.origin.path}:{init.origin.line})"
        self.report(
            node,
            message,
            edits=self._loop_fix(node) if node in self.cast_loops else self._fix(node),
            applicability=Applicability.UNSAFE,
            fix_message=f"Remove `{node.func.value}(...)`" if isinstance(node.func, cst.Name) else "Remove the cast",
            related=(init.origin,) if init.origin is not None else (),
        )

    def _loop_fix(self, node: cst.Call) -> list[Edit]:
        """A per-parameter cast goes with its statement, and the loop goes when that was all it did; never
        `p.data = p.data`."""
        loop = self.cast_loops[node]
        line = self.facts.statement_of(node)
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return []
        body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else ()
        if loop.orelse is None and list(body) == [line]:
            edits = delete_statements(self.context, [loop])
            return edits if edits is not None else []
        edit = delete_line(self.context, line)
        return [edit] if edit is not None else []
