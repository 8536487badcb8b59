"""Whether a launch's DeepSpeed config reaches a script's Hugging Face `TrainingArguments`: `--deepspeed ds.json`
read by an argument parser of the Trainer's arguments (`HfArgumentParser`), or a YAML file the launch passes whose
`deepspeed:` key names the config, splatted into `TrainingArguments(**cfg.train)` (`TRAINER_YAML`)."""

from __future__ import annotations

import libcst as cst

from dslint.model.library import is_training_arguments_name
from dslint.project.config_edits import module_index
from dslint.script.context import ScriptContext
from dslint.script.names import dotted_name
from dslint.script.project_facts import TRAINER_YAML, LaunchedConfig


def launched_for_trainer(context: ScriptContext, launch: LaunchedConfig) -> bool:
    """Whether a launch's config reaches this script's `TrainingArguments`: `--deepspeed ds.json` where the script
    parses its arguments from the command line (`HfArgumentParser`), or a YAML naming it (`TRAINER_YAML`) where
    the script splats a mapping into `TrainingArguments(**cfg.train)`."""
    if launch.option == "deepspeed":
        return parses_training_arguments(context)
    return launch.option == TRAINER_YAML and splats_training_arguments(context)


def splats_training_arguments(context: ScriptContext) -> bool:
    """A `*TrainingArguments(**mapping)` call without a `deepspeed=` keyword of its own."""
    return any(
        (name := dotted_name(call.func)) is not None
        and is_training_arguments_name(name)
        and any(arg.star == "**" for arg in call.args)
        and not any(arg.keyword is not None and arg.keyword.value == "deepspeed" for arg in call.args)
        for call in module_index(context.module).calls
    )


def parses_training_arguments(context: ScriptContext) -> bool:
    """`HfArgumentParser(...)`, or a parser class of the project given the `*TrainingArguments` class
    (`ProjectArgumentParser((ModelArguments, TrainingArguments))`, a subclass of HfArgumentParser)."""
    return any(
        (name := dotted_name(call.func)) is not None
        and (name.split(".")[-1] == "HfArgumentParser" or (name.endswith("Parser") and _names_training_arguments(call)))
        for call in module_index(context.module).calls
    )


def _names_training_arguments(call: cst.Call) -> bool:
    values = [arg.value for arg in call.args]
    values += [e.value for v in values if isinstance(v, (cst.Tuple, cst.List)) for e in v.elements]
    return any((name := dotted_name(v)) is not None and is_training_arguments_name(name) for v in values)


def builds_training_arguments(context: ScriptContext) -> bool:
    """Whether the script builds a Trainer's arguments (`*TrainingArguments(...)`, TRL's configs)."""
    return any(
        (name := dotted_name(call.func)) is not None and is_training_arguments_name(name.rsplit(".", 1)[-1])
        for call in module_index(context.module).calls
    )
