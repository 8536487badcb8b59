"""DSL305: `torch.nn.utils.clip_grad_norm_` on the engine's (or its model's) parameters."""

from __future__ import annotations

import libcst as cst

from dslint.config.versions import CLIPPING_BY_DEFAULT_SINCE, Version
from dslint.diagnostics import Applicability, Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.project.evidence import evidence
from dslint.script.edits import line_deletion
from dslint.script.facts import Role, RoleAnswer, method_name
from dslint.script.loop import loop_facts

CLIP_FUNCTIONS = frozenset(
    {
        "torch.nn.utils.clip_grad_norm_",
        "torch.nn.utils.clip_grad_norm",
        "torch.nn.utils.clip_grad.clip_grad_norm_",
        "torch.nn.utils.clip_grad.clip_grad_norm",
    }
)
PARAMETER_METHODS = frozenset({"parameters"})


class ClipGradNormBesideEngine(ScriptRule):
    code = "DSL305"
    slug = "clip-grad-norm-beside-engine"
    message = 'set "gradient_clipping" in the DeepSpeed config instead: engine.step() clips at the boundary itself'
    severity = Severity.WARNING
    deepspeed_versions = "every release (the message gives `gradient_clipping`'s default: 0.0 before 0.19.3, 1.0 since)"
    docs = RuleDocs(
        what="""
            Flags `torch.nn.utils.clip_grad_norm_(X.parameters(), ...)` where `X` is a DeepSpeed engine, its
            `.module`, or the model that was given to `deepspeed.initialize` (after the call).
        """,
        why="""
            DeepSpeed clips gradients itself, inside `engine.step()` at each accumulation boundary, after
            the gradients are accumulated, reduced across ranks and unscaled, by the config's
            `gradient_clipping` (`_take_model_step` and the ZeRO/fp16 optimizers' `clip_grad`). Its
            default is 1.0 since DeepSpeed 0.19.3 (`GRADIENT_CLIPPING_DEFAULT`,
            deepspeedai/DeepSpeed#8068; 0.0, no clipping, before); set `"gradient_clipping": 0.0` to turn
            it off. On a project that runs DeepSpeed before 0.19.3 the message says that its engine does
            not clip unless `gradient_clipping` is set. A `clip_grad_norm_` of your own runs on every
            micro-step, on partial gradients: without ZeRO and under ZeRO-1 it clips the accumulating sum
            (and the engine clips again at the boundary); under ZeRO-2 and ZeRO-3 `param.grad` is already
            None after `engine.backward` (the gradients live in the optimizer's partitions), so it clips
            nothing and returns 0.0 (seen with DeepSpeed 0.19.8 on the CPU); under fp16 it measures
            loss-scaled gradients.
        """,
        example="""
            engine.backward(loss)
            torch.nn.utils.clip_grad_norm_(engine.parameters(), 1.0)
            engine.step()
        """,
        use_instead="""
            # ds_config.json: {"gradient_clipping": 1.0, ...}
            engine.backward(loss)
            engine.step()
        """,
        fix_safety="""
            The fix deletes the call when it is a statement of its own. It is unsafe: the config's
            `gradient_clipping` must be set to the `max_norm` you used (or you accept DeepSpeed's default), and
            the norm the call returned is gone (`engine.get_global_grad_norm()` gives the engine's).
        """,
    )
    valid = (
        Valid(
            """
            import deepspeed
            import torch
            engine, _, _, _ = deepspeed.initialize(model=model, config="ds.json")
            critic = Critic()
            for batch in loader:
                engine.backward(engine(batch))
                engine.step()
                critic(batch).mean().backward()
                torch.nn.utils.clip_grad_norm_(critic.parameters(), 1.0)
            """
        ),
        Valid(
            """
            import deepspeed
            import torch
            if args.deepspeed:
                model, _, _, _ = deepspeed.initialize(model=model, config="ds.json")
            else:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            """
        ),
        Valid(
            """
            import deepspeed
            from torch.nn.utils import clip_grad_norm_
            def train(engine, batch):
                clip_grad_norm_(engine.parameters(), 1.0)
            """
        ),
    )
    invalid = (
        Invalid(
            """
            import deepspeed
            import torch
            engine, _, _, _ = deepspeed.initialize(model=net, config="ds.json")
            for batch in loader:
                engine.backward(engine(batch))
                torch.nn.utils.clip_grad_norm_(engine.parameters(), 1.0)
                engine.step()
            """,
            lines=(7,),
            deepspeed_version="0.14",
            fixed="""
            import deepspeed
            import torch
            engine, _, _, _ = deepspeed.initialize(model=net, config="ds.json")
            for batch in loader:
                engine.backward(engine(batch))
                engine.step()
            """,
        ),
        Invalid(
            """
            import deepspeed
            import torch
            model_engine, _, _, _ = deepspeed.initialize(args=args, model=net, model_parameters=net.parameters())
            for batch in loader:
                model_engine.backward(model_engine(batch))
                torch.nn.utils.clip_grad_norm_(model_engine.module.parameters(), args.max_grad_norm)
                model_engine.step()
            """,
            lines=(7,),
            fixed="""
            import deepspeed
            import torch
            model_engine, _, _, _ = deepspeed.initialize(args=args, model=net, model_parameters=net.parameters())
            for batch in loader:
                model_engine.backward(model_engine(batch))
                model_engine.step()
            """,
        ),
        Invalid(
            """
            import deepspeed
            from torch import nn
            def main():
                net = Net()
                engine, *_ = deepspeed.initialize(model=net, config=cfg)
                for batch in loader:
                    engine.backward(engine(batch))
                    norm = nn.utils.clip_grad_norm_(parameters=net.parameters(), max_norm=1.0)
                    engine.step()
            """,
            lines=(9,),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.loop = loop_facts(self.facts)

    def visit_Call(self, node: cst.Call) -> None:
        if self.facts.qualified(node.func) not in CLIP_FUNCTIONS or not node.args:
            return
        first = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "parameters"), None)
        if first is None and node.args[0].keyword is None:
            first = node.args[0].value
        if not isinstance(first, cst.Call) or method_name(first) not in PARAMETER_METHODS:
            return
        assert isinstance(first.func, cst.Attribute)
        answer = self.facts.role_of(first.func.value, at=node)
        if answer is None or not self._engine_parameters(answer, node):
            return
        line = self.facts.lone_expression_statement(node)
        found = evidence(self.context, answer.engine)  # an engine from another function or module says where
        self.report(
            node,
            self._message(self.context.deepspeed_version) + found.suffix,
            related=found.related,
            edits=line_deletion(self.context, line),
            applicability=Applicability.UNSAFE,
            fix_message="Remove the call and set `gradient_clipping` in the config",
        )

    def _message(self, version: Version) -> str:
        if not version < CLIPPING_BY_DEFAULT_SINCE:
            return self.message
        return f'set "gradient_clipping" in the DeepSpeed config instead (DeepSpeed {version} does not clip by default)'

    def _engine_parameters(self, answer: RoleAnswer, node: cst.Call) -> bool:
        if answer.role in (Role.ENGINE, Role.ENGINE_MODULE):
            return True
        return answer.role is Role.RAW_MODEL and self.loop.after_initialize(answer.engine, node)
