"""DSL305: `torch.nn.utils.clip_grad_norm_` on the engine's (or its model's) parameters."""

from __future__ import annotations

import libcst as cst

from dslint.config.versions import CLIPPING_BY_DEFAULT_SINCE, Version
from dslint.diagnostics import Applicability, Severity
from dslint.framework.catalog import Shape
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.model.library import TORCH_CLIP_FUNCTIONS
from dslint.project.accelerate_deepspeed import accelerate_deepspeed
from dslint.project.evidence import evidence
from dslint.script.edits import line_deletion
from dslint.script.facts import Role, RoleAnswer, method_name
from dslint.script.hf_trainers import TrainerNames
from dslint.script.loop import loop_facts
from dslint.script.names import dotted_name

CLIP_FUNCTIONS = TORCH_CLIP_FUNCTIONS
PARAMETER_METHODS = frozenset({"parameters"})

_ACCELERATE_LOOP = """
import torch
from accelerate import Accelerator
accelerator = Accelerator()
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for batch in loader:
    loss = model(**batch).loss
    accelerator.backward(loss)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
"""
_PLUGIN_LOOP = _ACCELERATE_LOOP.replace(
    "accelerator = Accelerator()",
    "from accelerate.utils import DeepSpeedPlugin\n"
    "accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2))",
)
_DEEPSPEED_YAML = "distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 2\nmixed_precision: bf16\n"
_MULTI_GPU_YAML = "distributed_type: MULTI_GPU\nmixed_precision: bf16\nnum_processes: 2\n"


class ClipGradNormBesideEngine(ScriptRule):
    code = "DSL305"
    slug = "clip-grad-norm-beside-engine"
    message = 'set "gradient_clipping" in the DeepSpeed config instead: engine.step() clips at the boundary itself'
    accelerate_template = (
        "accelerator.backward runs engine.step(), which clips: set gradient_clipping instead ({where})"
    )
    severity = Severity.WARNING
    # A clip beside this file's engine, or (accelerate, where a DeepSpeedPlugin or an accelerate launch with
    # DeepSpeed may be: `configured`) after `accelerator.backward` on the model `accelerator.prepare` returned.
    needs_engine = False
    alternative_tokens = ((b"clip_grad_norm", b"backward", b"prepare"),)
    call_shapes = (
        Shape(calls=tuple(sorted(CLIP_FUNCTIONS)), engine=True),
        Shape(calls=tuple(sorted(CLIP_FUNCTIONS)), words=(b"Accelerator",), configured=True),
    )
    deepspeed_versions = "every release (the message gives `gradient_clipping`'s default: 0.0 before 0.19.3, 1.0 since)"
    docs = RuleDocs(
        what="""
            Flags `torch.nn.utils.clip_grad_norm_(X.parameters(), ...)` where `X` is a DeepSpeed engine, its
            `.module`, or the model that was given to `deepspeed.initialize` (after the call). In a script that
            runs DeepSpeed through accelerate (a `DeepSpeedPlugin` it builds, or an `accelerate launch` whose YAML
            says `distributed_type: DEEPSPEED`), also `torch.nn.utils.clip_grad_norm_(model.parameters(), ...)`
            (or `clip_grad_norm_(optimizer.param_groups[0]["params"], ...)`) after `accelerator.backward(...)` in
            the same function, where `model` (`optimizer`) is what `accelerator.prepare` returned, or what was
            handed to it and not bound again since. Silent under accelerate without
            DeepSpeed (DDP, FSDP, one process), where torch's clip after `accelerator.backward` is right, and on
            `accelerator.clip_grad_norm_`: under DeepSpeed it clips nothing itself and returns the engine's norm
            (`engine.get_global_grad_norm()`, accelerate 1.8 and later; None before).
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

            Under accelerate, `accelerator.backward(loss)` calls `DeepSpeedEngineWrapper.backward` (accelerate's
            `utils/deepspeed.py`), which runs `engine.backward(loss)` and then `engine.step()` (at the
            accumulation boundary, `accelerator.sync_gradients`, since accelerate 1.8; on every call before):
            the engine has clipped, stepped the optimizer and freed or zeroed the gradients before the next line
            runs, and the prepared optimizer's `step()` and `zero_grad()` do nothing (`DeepSpeedOptimizerWrapper`).
            A torch clip after it clips nothing the optimizer uses: the gradients of the step are gone, under
            ZeRO-2 and ZeRO-3 `param.grad` is None anyway (the gradients live in the optimizer's partitions), and
            between boundaries (no ZeRO, ZeRO-1) it rescales a partial accumulation. Set the clip in the
            DeepSpeed config's `gradient_clipping`: a `DeepSpeedPlugin` without a config file writes "auto",
            which `accelerator.prepare` fills with 1.0; the accelerate YAML's `gradient_clipping` (passed as
            ACCELERATE_GRADIENT_CLIPPING) or `DeepSpeedPlugin(gradient_clipping=...)` sets it; a DeepSpeed config
            file without the key runs DeepSpeed's default.
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
        # accelerate without DeepSpeed (DDP): torch's clip after accelerator.backward is how it is done there
        Valid(
            _ACCELERATE_LOOP,
            files=(("run.sh", "accelerate launch --config_file ddp.yaml train.py\n"), ("ddp.yaml", _MULTI_GPU_YAML)),
        ),
        # under DeepSpeed, accelerator.clip_grad_norm_ clips nothing and returns the engine's norm: harmless
        Valid(
            _ACCELERATE_LOOP.replace("torch.nn.utils.clip_grad_norm_", "accelerator.clip_grad_norm_"),
            files=(("run.sh", "accelerate launch --config_file ds.yaml train.py\n"), ("ds.yaml", _DEEPSPEED_YAML)),
        ),
        # an optimizer accelerate never prepares (the critic's)
        Valid(
            """
            import torch
            from accelerate import Accelerator, DeepSpeedPlugin
            accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2))
            model, optimizer = accelerator.prepare(model, optimizer)
            critic_optimizer = torch.optim.SGD(critic.parameters(), lr=0.1)
            for batch in loader:
                accelerator.backward(model(batch))
                critic(batch).mean().backward()
                torch.nn.utils.clip_grad_norm_(critic_optimizer.param_groups[0]["params"], 1.0)
            """
        ),
        # a model accelerate never prepares (a critic trained by hand beside it)
        Valid(
            """
            import torch
            from accelerate import Accelerator
            from accelerate.utils import DeepSpeedPlugin
            accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2))
            model, optimizer = accelerator.prepare(model, optimizer)
            critic = Critic()
            for batch in loader:
                accelerator.backward(model(batch))
                critic(batch).mean().backward()
                torch.nn.utils.clip_grad_norm_(critic.parameters(), 1.0)
            """
        ),
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
        # (an `accelerate launch` whose YAML runs DeepSpeed: fixtures/projects/accelerate_precision)
        Invalid(
            _PLUGIN_LOOP,
            lines=(10,),
            fixed=_PLUGIN_LOOP.replace("    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n", ""),
        ),
        # the prepared optimizer's parameters, under accelerate's accumulation
        Invalid(
            """
            from accelerate import Accelerator, DeepSpeedPlugin
            from torch.nn.utils import clip_grad_norm_
            accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=1, gradient_accumulation_steps=4))
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            for batch in loader:
                with accelerator.accumulate(model):
                    accelerator.backward(model(batch))
                    clip_grad_norm_(optimizer.param_groups[0]["params"], 0.1)
                    optimizer.step()
            """,
            lines=(9,),
            fixed="""
            from accelerate import Accelerator, DeepSpeedPlugin
            from torch.nn.utils import clip_grad_norm_
            accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=1, gradient_accumulation_steps=4))
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            for batch in loader:
                with accelerator.accumulate(model):
                    accelerator.backward(model(batch))
                    optimizer.step()
            """,
        ),
        # the script's own DeepSpeedPlugin; the model handed to prepare is the module the engine wraps
        Invalid(
            """
            from torch import nn
            from accelerate import Accelerator, DeepSpeedPlugin
            class Runner:
                def __init__(self, net):
                    self.accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=3))
                    self.net = net
                def fit(self, loader, optimizer):
                    self.accelerator.prepare(self.net, optimizer)
                    for batch in loader:
                        self.accelerator.backward(self.net(batch))
                        if self.accelerator.sync_gradients:
                            norm = nn.utils.clip_grad_norm_(self.net.parameters(), max_norm=0.5)
            """,
            lines=(13,),
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self.loop = loop_facts(self.facts)
        self.trainers = TrainerNames(self.context)
        self.accelerator_calls: dict[str, list[cst.Call]] = {"backward": [], "prepare": []}
        self.accelerate_clips: list[tuple[cst.Call, cst.BaseExpression]] = []  # the clip, whose parameters

    def visit_Assign(self, node: cst.Assign) -> None:
        self.trainers.consider_assign(node)

    def visit_Call(self, node: cst.Call) -> None:
        name = method_name(node)
        if name in self.accelerator_calls and isinstance(node.func, cst.Attribute):
            self.accelerator_calls[name].append(node)
        if self.facts.qualified(node.func) not in CLIP_FUNCTIONS or not node.args:
            return
        first = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "parameters"), None)
        if first is None and node.args[0].keyword is None:
            first = node.args[0].value
        owner = _param_groups_owner(first)
        if owner is not None:  # `optimizer.param_groups[0]["params"]`: accelerate's prepared optimizer
            self.accelerate_clips.append((node, owner))
            return
        if not isinstance(first, cst.Call) or method_name(first) not in PARAMETER_METHODS:
            return
        assert isinstance(first.func, cst.Attribute)
        answer = self.facts.role_of(first.func.value, at=node)
        if answer is None or not self._engine_parameters(answer, node):
            self.accelerate_clips.append((node, first.func.value))
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

    def leave_Module(self, original_node: cst.Module) -> None:
        """Under accelerate: a clip of the prepared model's parameters after `accelerator.backward(...)`."""
        if not self.accelerate_clips:
            return
        backwards, prepares = (
            [c for c in calls if isinstance(c.func, cst.Attribute) and self.trainers.names_accelerator(c.func.value)]
            for calls in self.accelerator_calls.values()
        )
        if not backwards or not prepares:
            return
        run = accelerate_deepspeed(self.context)
        if run is None:
            return
        facts = self.facts
        for clip, model in self.accelerate_clips:
            at = facts.start(clip)
            scope = facts.scope_at(clip)
            after_backward = any(
                facts.scope_at(b) is scope and facts.start(b) < at and not facts.paths.exclusive(b, clip)
                for b in backwards
            )
            if not after_backward or not self._prepared(model, clip, prepares):
                continue
            self.report(
                clip,
                self.accelerate_template.format(where=run.where),
                related=run.related,
                edits=line_deletion(self.context, facts.lone_expression_statement(clip)),
                applicability=Applicability.UNSAFE,
                fix_message="Remove the call and set `gradient_clipping` in the DeepSpeed config",
            )

    def _prepared(self, model: cst.BaseExpression, clip: cst.Call, prepares: list[cst.Call]) -> bool:
        """`model` (or its `.module`) at `clip` is what `accelerator.prepare` returned for the model (only a module
        has `.parameters()`, only an optimizer `.param_groups`), or the model handed to a `prepare` before it, not
        bound again since (the engine wraps that very module, and steps that very optimizer)."""
        if isinstance(model, cst.Attribute) and model.attr.value == "module":
            model = model.value
        key = dotted_name(model)
        if key is None:
            return False
        facts = self.facts
        scope = facts.scope_at(clip)
        binding = facts.binding_at(key, scope, facts.start(clip), on_path=True)
        if binding is None:
            return False
        statement = binding.statement
        if isinstance(statement, (cst.Assign, cst.AnnAssign)) and statement.value in prepares:
            return True
        return any(
            facts.scope_at(call) is scope
            and facts.start(call) < facts.start(clip)
            and not facts.paths.exclusive(call, clip)
            and any(dotted_name(a.value) == key for a in call.args if a.keyword is None and not a.star)
            and facts.binding_at(key, scope, facts.start(call)) is binding
            for call in prepares
        )


def _param_groups_owner(value: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """`X` of `X.param_groups[i]["params"]` (any subscripts), else None."""
    if not isinstance(value, cst.Subscript):
        return None
    while isinstance(value, cst.Subscript):
        value = value.value
    if isinstance(value, cst.Attribute) and value.attr.value == "param_groups":
        return value.value
    return None
