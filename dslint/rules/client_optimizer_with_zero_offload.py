"""DSL431: a client torch optimizer handed to `deepspeed.initialize` whose config offloads the optimizer."""

from __future__ import annotations

import re
from typing import Any

import libcst as cst

from dslint.config.facts import Origin
from dslint.diagnostics import Severity
from dslint.framework.rule import Invalid, RuleDocs, ScriptRule, Valid
from dslint.project.config_link import resolve_config

# Optimizers DeepSpeed's ZeRO-Offload check refuses (any class but DeepSpeedCPUAdam and DeepSpeedCPULion): the
# plain ones of torch and transformers, named exactly so that a project's own wrapper is never taken for one.
_CLIENT = re.compile(r"^(?:torch\.optim\.[A-Z]\w*|transformers\.(?:optimization\.)?AdamW)$")

_SCRIPT = """\
import deepspeed
import torch
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=CONFIG)
"""
_OFFLOAD = '{"train_batch_size": 8, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}'


class ClientOptimizerWithZeroOffload(ScriptRule):
    code = "DSL431"
    slug = "client-optimizer-with-zero-offload"
    message = "ZeRO-Offload refuses a client torch optimizer (ZeRORuntimeException); use DeepSpeedCPUAdam"
    severity = Severity.ERROR
    required_tokens = (b"deepspeed", b"initialize", b"optimizer")
    docs = RuleDocs(
        what="""
            Flags the `optimizer=` of a `deepspeed.initialize` call when it is a plain torch optimizer
            (`torch.optim.AdamW(...)`, `transformers.AdamW(...)`, directly or through a name bound to one)
            and the config the call runs with offloads the optimizer (`zero_optimization.offload_optimizer`
            with `"device": "cpu"` or `"nvme"`, or the deprecated `"cpu_offload": true`) without
            `"zero_force_ds_cpu_optimizer": false`. A config that cannot be read, an optimizer of unknown
            class, DeepSpeed's own CPU optimizers and the Hugging Face Trainer (which sets the switch off for
            its own optimizer) are left alone.
        """,
        why="""
            `DeepSpeedEngine._configure_optimizer` (`runtime/engine.py`, DeepSpeed 0.19.8) raises
            `ZeRORuntimeException("You are using ZeRO-Offload with a client provided optimizer ...")` when the
            optimizer is offloaded to the CPU or NVMe, the client optimizer is not a `DeepSpeedCPUAdam` or
            `DeepSpeedCPULion`, and `zero_force_ds_cpu_optimizer` is on, which is its default. The run stops
            inside `deepspeed.initialize`. Build `deepspeed.ops.adam.DeepSpeedCPUAdam` instead, or let the
            config's `optimizer` section build it; `"zero_force_ds_cpu_optimizer": false` keeps the torch
            optimizer, stepping slowly on the CPU.
        """,
        example="""
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)  # config: offload_optimizer to cpu
            engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=cfg)
        """,
        use_instead="""
            optimizer = deepspeed.ops.adam.DeepSpeedCPUAdam(model.parameters(), lr=1e-4)
            engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=cfg)
        """,
    )
    valid = (
        Valid(_SCRIPT.replace("CONFIG", '{"zero_optimization": {"stage": 2}}')),
        Valid(_SCRIPT.replace("torch.optim.AdamW", "deepspeed.ops.adam.DeepSpeedCPUAdam").replace("CONFIG", _OFFLOAD)),
        Valid(_SCRIPT.replace("CONFIG", _OFFLOAD.replace('{"train', '{"zero_force_ds_cpu_optimizer": False, "train'))),
        Valid(_SCRIPT.replace("CONFIG", _OFFLOAD.replace('{"train', '{"optimizer": {"type": "Adam"}, "train'))),
        Valid(_SCRIPT.replace("CONFIG", _OFFLOAD.replace('"cpu"', '"none"'))),
        Valid(_SCRIPT.replace("torch.optim.AdamW", "make_optimizer").replace("CONFIG", _OFFLOAD)),
        Valid(_SCRIPT.replace("CONFIG", "args.config")),
    )
    invalid = (
        Invalid(_SCRIPT.replace("CONFIG", _OFFLOAD), lines=(4,)),
        Invalid(
            _SCRIPT.replace("CONFIG", '{"zero_optimization": {"stage": 2, "cpu_offload": True}}'),
            lines=(4,),
        ),
        Invalid(
            "import deepspeed\nfrom torch.optim import SGD\n"
            "engine, *_ = deepspeed.initialize(\n"
            f"    model=model, optimizer=SGD(model.parameters(), lr=0.1), config={_OFFLOAD}\n)\n",
            lines=(4,),
        ),
        Invalid(
            _SCRIPT.replace("CONFIG", '"ds.json"'),
            lines=(4,),
            files=(("ds.json", _OFFLOAD.replace('"cpu"', '"nvme", "nvme_path": "/nvme"')),),
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        init = self.facts.initialize_call_for(node)
        if init is None:
            return
        argument = init.argument("optimizer")
        if argument is None or not self._client_optimizer(argument, node):
            return
        config = resolve_config(self.context, init.engine)
        if config is None or config.origin is not Origin.INITIALIZE or not _offloads_to_cpu(config.values):
            return
        self.report(argument, self.message + config.evidence())

    def _client_optimizer(self, argument: cst.BaseExpression, at: cst.Call) -> bool:
        value: cst.BaseExpression | None = argument
        if isinstance(argument, (cst.Name, cst.Attribute)):
            value = self.facts.assigned_value(argument, at)
        if not isinstance(value, cst.Call):
            return False
        qualified = self.facts.qualified(value.func)
        return qualified is not None and _CLIENT.match(qualified) is not None


def _offloads_to_cpu(values: Any) -> bool:
    """The engine's `zero_use_cpu_optimizer()` with `zero_force_ds_cpu_optimizer` on, read from the config."""
    if not isinstance(values, dict) or "optimizer" in values:
        return False  # the config builds its own optimizer: another mistake, not this one
    if values.get("zero_force_ds_cpu_optimizer", True) is not True:
        return False
    zero = values.get("zero_optimization")
    if not isinstance(zero, dict):
        return False
    offload = zero.get("offload_optimizer")
    if isinstance(offload, dict):
        return offload.get("device") in ("cpu", "nvme")
    return offload is None and zero.get("cpu_offload") is True
