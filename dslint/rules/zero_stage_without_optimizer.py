"""DSL452: `deepspeed.initialize` under ZeRO stage 1 or 2 with no optimizer, in the call or in the config."""

from __future__ import annotations

import libcst as cst

from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.project.config_edits import module_index, top_level_writes
from dslint.project.config_link import resolve_config

_CALL = """
import deepspeed
ds_config = {{"train_batch_size": 8, "zero_optimization": {{"stage": {stage}}}{more}}}
engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=ds_config{extra})
"""
_OPTIMIZER = ', "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}'


class ZeroStageWithoutOptimizer(ScriptRule):
    code = "DSL452"
    slug = "zero-stage-without-optimizer"
    message = "ZeRO stage {stage} needs an optimizer: neither this call nor its config gives one, so initialize fails"
    severity = Severity.ERROR
    required_tokens = (b"deepspeed", b"initialize")
    docs = RuleDocs(
        what="""
            Flags a `deepspeed.initialize(...)` call that hands DeepSpeed no optimizer (no `optimizer=` argument,
            by keyword or position, and no `**` arguments) when its config, as far as dslint reads it (a dict
            literal, a file the script or its launchers name), sets `zero_optimization.stage` to 1 or 2 and has
            no `optimizer` section. A config whose `optimizer` dslint cannot read, or a dict the script changes
            as a whole or at its `optimizer` key before the call, is left alone; so is stage 3, which DeepSpeed
            runs without an optimizer (inference, or an optimizer built later).
        """,
        why="""
            With neither a client optimizer nor a config `optimizer`, the engine (`runtime/engine.py`,
            DeepSpeed 0.19.8) takes the ZeRO branch with `optimizer=None`, puts a `DummyOptim` in its place and,
            for stages 1 and 2, stops on `assert not isinstance(optimizer, DummyOptim), "zero stage 2 requires
            an optimizer"`: `initialize` fails on every rank before the first step. Give `optimizer=` an
            optimizer over the model's parameters, or add an `optimizer` section to the config.
        """,
        example="""
            ds_config = {"train_batch_size": 8, "zero_optimization": {"stage": 2}}
            engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=ds_config)
        """,
        use_instead="""
            ds_config = {"train_batch_size": 8, "zero_optimization": {"stage": 2},
                         "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}
            engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=ds_config)
        """,
    )
    valid = (
        Valid(_CALL.format(stage=2, more=_OPTIMIZER, extra="")),
        Valid(_CALL.format(stage=2, more="", extra=", optimizer=torch.optim.AdamW(model.parameters())")),
        Valid(_CALL.format(stage=3, more="", extra="")),
        Valid(_CALL.format(stage=0, more="", extra="")),
        Valid(_CALL.format(stage=1, more="", extra=", **extra")),
        # the script adds the optimizer section before the call
        Valid(
            _CALL.format(stage=1, more="", extra="").replace(
                "engine, *_", 'ds_config["optimizer"] = {"type": "Adam", "params": {"lr": 1e-3}}\nengine, *_'
            )
        ),
        Valid(
            _CALL.format(stage=1, more="", extra="").replace("engine, *_", "ds_config.update(overrides)\nengine, *_")
        ),
        # a file nothing reads here: unknown
        Valid("import deepspeed\nengine, *_ = deepspeed.initialize(model=model, config=args.config)\n"),
    )
    invalid = (
        Invalid(_CALL.format(stage=2, more="", extra=""), lines=(4,)),
        Invalid(
            """
            import deepspeed
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            """,
            lines=(3,),
            files=(("ds.json", '{"train_batch_size": 8, "zero_optimization": {"stage": 1}}\n'),),
        ),
    )

    def leave_Module(self, original_node: cst.Module) -> None:
        for init in self.facts.initialize_calls:
            if init.argument("optimizer") is not None or any(arg.star for arg in init.call.args):
                continue
            resolved = resolve_config(self.context, init.engine)
            if resolved is None:
                continue
            stage = resolved.get("zero_optimization", "stage")
            if stage not in (1, 2) or isinstance(stage, bool) or resolved.get("optimizer") is not None:
                continue
            if self._edited(init.config, init.call):
                continue
            self.report(init.call, self.message.format(stage=stage) + resolved.evidence())

    def _edited(self, expression: cst.BaseExpression | None, call: cst.Call) -> bool:
        """The dict named `expression` is changed as a whole, or at its `optimizer` key, before `call`."""
        if not isinstance(expression, cst.Name):
            return False
        facts = self.facts
        at = facts.start(call)
        for mutation in module_index(self.context.module).mutations.get(expression.value, []):
            if facts.start(mutation.anchor) >= at:
                continue
            writes = top_level_writes(mutation)
            if writes is None or any(key in (None, "optimizer") for key, _ in writes):
                return True
        return False
