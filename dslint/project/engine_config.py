"""What a checkpoint rule needs to know about the config of an initialize call: the ZeRO stage, and whether
the optimizer keeps its own fp32 copy of the weights. Unknown answers are None; rules then say "under ZeRO-3"
rather than guess."""

from __future__ import annotations

from dslint.project.config_link import resolve_config
from dslint.script.context import ScriptContext
from dslint.script.facts import InitializeCall


def zero_stage(context: ScriptContext, init: InitializeCall | None) -> int | None:
    """The ZeRO stage `init` runs with, or None when the config cannot be read."""
    if init is None:
        return None
    config = resolve_config(context, init)
    return None if config is None else config.zero_stage


def keeps_master_weights(context: ScriptContext, init: InitializeCall | None) -> bool | None:
    """Whether DeepSpeed's optimizer holds fp32 master weights apart from the module's parameters.

    It does under ZeRO stages 1 to 3 (even in fp32) and with fp16/bf16; then a `load_state_dict` into the module
    is written over by the next `engine.step()`. None when the config cannot be read.
    """
    if init is None:
        return None
    config = resolve_config(context, init)
    if config is None:
        return None
    stage = config.zero_stage
    if stage is None:
        return None
    if stage > 0:
        return True
    fp16, bf16 = config.fp16_enabled, config.bf16_enabled
    if fp16 or bf16:
        return True
    if fp16 is None or bf16 is None:
        return None
    return False
