"""Moves of the model that the engine would make itself, to the same place, with nothing partitioned: DSL101 leaves
them alone.

A move to the rank's own GPU (`script/own_device.py`: `cuda:{local_rank}`, `accelerator.device`, the Trainer's
`training_args.device`, `.cuda()` after `set_device`) before an engine whose every config is known to run ZeRO
stage 0, 1 or 2: `deepspeed.initialize` moves the module to that same device (`_configure_distributed_model`), and
every rank keeps all of its parameters there. Under ZeRO-3 the move stays a finding; where a config cannot be
read, too, unless no launch gives the script one and every DeepSpeed config the project ships near it is below
stage 3 (`shipped_configs.ships_only_lower_stages`, as DSL204 and DSL207 ask).
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from dslint.project.engine_config import zero_stage
from dslint.project.shipped_configs import ships_only_lower_stages
from dslint.script.context import ScriptContext
from dslint.script.model_moves import ModelSink
from dslint.script.own_device import moves_to_own_device


def below_zero3(stages: Iterable[int | None]) -> bool:
    """Every config that may reach the engine is known, and none partitions parameters."""
    known = list(stages)
    return bool(known) and all(isinstance(stage, int) and stage < 3 for stage in known)


def sink_stages(context: ScriptContext, sink: ModelSink) -> list[int | None]:
    """The ZeRO stage of the engine `sink` leads to: an initialize call of this file, or one elsewhere whose config
    the project knows; empty when neither is known."""
    if sink.config is not None:
        return [sink.config.zero_stage]
    init = next((i for i in context.facts.initialize_calls if sink.call is not None and i.call is sink.call), None)
    return [zero_stage(context, init.engine)] if init is not None else []


def redundant_move(context: ScriptContext, call: cst.Call, stages: Iterable[int | None]) -> bool:
    """`call` moves the model to the rank's own GPU, before an engine that keeps every parameter whole there."""
    if not moves_to_own_device(context.facts, call):
        return False
    known = list(stages)
    if below_zero3(known):
        return True
    if any(stage == 3 for stage in known):
        return False
    return ships_only_lower_stages(context)
