"""Where a model moved before it has an engine is handed to something that builds one: `accelerator.prepare` when
accelerate runs DeepSpeed (`accelerate_deepspeed`), or a Hugging Face `*Trainer(model=...)` whose arguments carry a
DeepSpeed config. Either hands the model to `deepspeed.initialize`, which places it (DSL101)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from dslint.diagnostics import Related
from dslint.project.accelerate_deepspeed import accelerate_deepspeed, accelerate_stages
from dslint.project.config_link import trainer_config_given, training_arguments_configs
from dslint.script.context import ScriptContext
from dslint.script.hf_trainers import TrainerNames
from dslint.script.model_moves import ModelSink, prepare_sinks, trainer_sinks


@dataclass(frozen=True)
class HandedOn:
    """Models handed on (`sinks`) to an engine built by accelerate (`accelerate`) or by the Trainer, with where its
    config is written (`where`, `related`) and the ZeRO stage of each config it may run with (`stages`)."""

    sinks: list[ModelSink]
    accelerate: bool
    where: str
    related: tuple[Related, ...]
    stages: list[int | None]


def handed_on(
    context: ScriptContext, prepares: Sequence[cst.Call], trainer_calls: Sequence[cst.Call], trainers: TrainerNames
) -> list[HandedOn]:
    found: list[HandedOn] = []
    facts = context.facts
    sinks = prepare_sinks(facts, prepares, trainers)
    run = accelerate_deepspeed(context) if sinks else None
    if run is not None:
        stages = accelerate_stages(context)
        found.append(HandedOn(sinks, True, run.where, tuple(run.related), list(stages[0]) if stages else []))
    sinks = trainer_sinks(facts, trainer_calls)
    configs = training_arguments_configs(context) if sinks else None
    if configs:
        where = ", ".join(dict.fromkeys(config.source for config in configs))
        related = tuple(dict.fromkeys(r for config in configs for r in config.via))
        found.append(HandedOn(sinks, False, where, related, [config.zero_stage for config in configs]))
    elif configs is None and sinks and (given := trainer_config_given(context)) is not None:
        found.append(HandedOn(sinks, False, given, (), []))  # a config that cannot be read
    return found
