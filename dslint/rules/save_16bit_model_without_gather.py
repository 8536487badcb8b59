"""DSL210 (DSL415 before): `engine.save_16bit_model(...)` under ZeRO-3 without the gather flag set."""

from __future__ import annotations

from typing import Any

import libcst as cst

from dslint.config.facts import lax_bool
from dslint.config.tree import UNKNOWN
from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.project.config_link import resolve_config
from dslint.project.evidence import evidence
from dslint.script.facts import Role, method_name

# Every spelling DeepSpeed accepts for the flag (field name, alias, deprecated name).
GATHER_KEYS = (
    "stage3_gather_16bit_weights_on_model_save",
    "gather_16bit_weights_on_model_save",
    "stage3_gather_fp16_weights_on_model_save",
)


class Save16bitModelWithoutGather(ScriptRule):
    code = "DSL210"
    slug = "save-16bit-model-without-gather"
    message = 'under ZeRO-3, save_16bit_model saves nothing; set "stage3_gather_16bit_weights_on_model_save": true'
    severity = Severity.ERROR
    docs = RuleDocs(
        what="""
            Flags `engine.save_16bit_model(...)` when the engine's config (a dict in the script or the file it
            names) is ZeRO-3 and does not set `zero_optimization.stage3_gather_16bit_weights_on_model_save` to
            true.
        """,
        why="""
            Under ZeRO-3 each rank holds only a shard of every parameter. `save_16bit_model` gathers the full
            16-bit weights only when `stage3_gather_16bit_weights_on_model_save` is true; otherwise it logs a
            warning, writes no file and returns False (`runtime/engine.py: save_16bit_model`). A script that
            does not check the return value ends a long run with no model saved.
        """,
        example="""
            config = {"train_batch_size": 32, "zero_optimization": {"stage": 3}}
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            engine.save_16bit_model("out")
        """,
        use_instead="""
            config = {
                "train_batch_size": 32,
                "zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": True},
            }
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            engine.save_16bit_model("out")
        """,
    )
    valid = (
        Valid(
            """
            import deepspeed
            config = {
                "train_batch_size": 8,
                "zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": True},
            }
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            engine.save_16bit_model("out")
            """
        ),
        Valid(
            """
            import deepspeed
            config = {"train_batch_size": 8, "zero_optimization": {"stage": 2}}
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            engine.save_16bit_model("out")
            """
        ),
        Valid(
            """
            import deepspeed
            config = {"train_batch_size": 8, "zero_optimization": {"stage": 3}}
            config["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"] = args.gather
            engine, _, _, _ = deepspeed.initialize(model=model, config=config)
            engine.save_16bit_model("out")
            """
        ),
    )
    invalid = (
        Invalid(
            """
            import deepspeed
            config = {"train_batch_size": 8, "zero_optimization": {"stage": 3}}
            model, _, _, _ = deepspeed.initialize(model=model, config=config)
            model.save_16bit_model("out")
            """,
            lines=(5,),
        ),
        Invalid(
            """
            import deepspeed
            ds = {
                "train_batch_size": 8,
                "zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": False},
            }
            class Trainer:
                def __init__(self, net):
                    self.engine, _, _, _ = deepspeed.initialize(model=net, config=ds)
                def save(self):
                    self.engine.save_16bit_model("out")
            """,
            lines=(11,),
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) != "save_16bit_model" or not isinstance(node.func, cst.Attribute):
            return
        answer = self.facts.role_of(node.func.value, at=node)
        if answer is None or answer.role is not Role.ENGINE or answer.init is None:
            return
        config = resolve_config(self.context, answer.init)
        if config is None or config.zero_stage != 3:
            return
        if self._gathers(config.get("zero_optimization")) is False:
            found = evidence(self.context, answer.init)
            self.report(node, self.message + found.suffix, related=found.related)

    @staticmethod
    def _gathers(section: Any) -> bool | None:
        if not isinstance(section, dict):
            return None
        values = [section[key] for key in GATHER_KEYS if key in section]
        if not values:
            return False
        if any(v is UNKNOWN for v in values):
            return None
        flags = [False if v == "auto" else lax_bool(v) for v in values]
        if any(f is None for f in flags):
            return None
        return any(flags)
