"""Whether a launch's DeepSpeed config reaches a script's Hugging Face `TrainingArguments`: `--deepspeed ds.json`
read by an argument parser of the Trainer's arguments (`HfArgumentParser`), or a YAML file the launch passes whose
`deepspeed:` key names the config, splatted into `TrainingArguments(**cfg.train)` (`TRAINER_YAML`)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from dslint.model.library import is_arguments_parser, is_training_arguments_name
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
    """A parser of the Trainer's arguments (`argument_parsers`) in the script."""
    return next(argument_parsers(context.module), None) is not None


def argument_parsers(module: cst.Module) -> Iterator[cst.Call]:
    """The script's parsers of the Trainer's arguments (`library.is_arguments_parser`: `HfArgumentParser(...)`, or a
    project's parser class handed the `*TrainingArguments` class), in source order: where it parses a launch's
    options into its TrainingArguments."""
    for call in module_index(module).calls:
        name = dotted_name(call.func)
        if name is not None and name.endswith("Parser") and is_arguments_parser(name, _handed(call)):
            yield call


def _handed(call: cst.Call) -> list[str]:
    """The dotted names of the classes a parser is handed: its first argument, or that tuple's or list's elements."""
    first = call.args[0].value if call.args and call.args[0].keyword is None and not call.args[0].star else None
    if isinstance(first, (cst.Tuple, cst.List)):
        elements = [element.value for element in first.elements]
    else:
        elements = [first] if first is not None else []
    return [name for element in elements if (name := dotted_name(element)) is not None]


def builds_training_arguments(context: ScriptContext) -> bool:
    """Whether the script builds a Trainer's arguments (`*TrainingArguments(...)`, TRL's configs)."""
    return any(
        (name := dotted_name(call.func)) is not None and is_training_arguments_name(name.rsplit(".", 1)[-1])
        for call in module_index(context.module).calls
    )
