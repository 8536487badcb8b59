"""The configs a script builds or points at, each once: the unit the config rules run on for a script.

A dict literal is checked in place (findings point into the script); a file the script names is checked as a
file that goes to `deepspeed.initialize` (or to the Hugging Face Trainer), with findings in that file. The same
file or literal counts once per script.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from dslint.config.facts import Origin
from dslint.config.tree import Object, ParseError
from dslint.diagnostics import Related
from dslint.project.config_access import NotRead, config_path, load_config_tree
from dslint.project.config_link import (
    edited_configs,
    resolve_config,
    returned_configs,
    trainer_configs,
    trainer_expressions,
)
from dslint.project.dumped_configs import dumped_configs
from dslint.project.resolved_configs import ResolvedConfig
from dslint.script.context import ScriptContext


@dataclass(frozen=True)
class ScriptConfig:
    path: str  # where findings go: the config file, or the script that holds the dict literal
    tree: Object
    origin: Origin
    from_file: bool  # read from a file (DeepSpeed then refuses duplicate keys), not a dict literal
    key: str | None  # the file as the script names it; None for a dict literal
    reader: tuple[Related, ...] = ()  # a config builder's dict: the reader elsewhere that receives it
    read_by: Related | None = None  # a file: the script's call that hands it to DeepSpeed (its findings name it)


def script_configs(context: ScriptContext) -> list[ScriptConfig]:
    """The readable configs of `context`'s initialize calls (outside plain-PyTorch branches) and Trainers."""
    resolved: list[tuple[ResolvedConfig, Related | None]] = []
    for init in context.facts.initialize_calls:
        if context.facts.in_plain_branch(init.call):
            continue
        config = resolve_config(context, init.engine)
        start, _ = context.span(init.config if init.config is not None else init.call)
        reads = Related(context.path, start.line, start.column, "deepspeed.initialize reads it")
        if config is not None:
            resolved.append((config, reads))
        else:
            resolved.extend((edited, reads) for edited in edited_configs(context, init.engine))
    resolved.extend((config, None) for config in trainer_configs(context))
    found: list[ScriptConfig] = []
    seen: set[object] = set()
    for config, site in resolved:
        if config.tree is None:
            continue
        key: object = str(config.path) if config.path is not None else id(config.tree)
        if key in seen:
            continue
        seen.add(key)
        path = shown(config.path) if config.path is not None else context.path
        named = str(config.path) if config.path is not None else None
        read_by = site if config.path is not None else None
        found.append(ScriptConfig(path, config.tree, config.origin, config.path is not None, named, read_by=read_by))
    for config in returned_configs(context):  # dicts a reader elsewhere receives from this module's builders
        assert config.tree is not None
        found.append(ScriptConfig(context.path, config.tree, config.origin, False, None, config.via[:1]))
    literals = {c.tree.start for c in found if not c.from_file}
    for config, launch in dumped_configs(context):  # dicts written with json.dump to the file a launch passes
        assert config.tree is not None
        if config.tree.start not in literals:  # not already checked as initialize's own
            literals.add(config.tree.start)
            found.append(ScriptConfig(context.path, config.tree, config.origin, False, None, (launch,)))
    return found


def unreadable_configs(context: ScriptContext, known: Collection[str]) -> list[tuple[str, ParseError, bool]]:
    """The config files the script names that do not parse, other than `known` (keys of `script_configs`):
    (where the finding goes, the error, whether the file was not read at all). A file dslint does not read
    (`config_access`: outside the project, or not JSON/HJSON) is reported at the string that names it, in the
    script, so that nothing of the file itself is shown."""
    found: list[tuple[str, ParseError, bool]] = []
    seen = set(known)
    for named, expression in referenced_config_paths(context):
        loaded = load_config_tree(named, context.path)
        if str(named) in seen:
            continue
        if isinstance(loaded, NotRead):
            seen.add(str(named))
            if named.is_absolute() and not named.exists():
                continue  # a path of the user's own machine that the project does not hold: nothing to say
            start, _ = context.span(expression)
            found.append((context.path, ParseError(str(loaded), start.line, start.column), True))
        elif isinstance(loaded, ParseError):
            seen.add(str(named))
            found.append((shown(named), loaded, False))
    return found


def shown(path: Path) -> str:
    return os.path.normpath(str(path))


def referenced_config_paths(context: ScriptContext) -> list[tuple[Path, cst.BaseExpression]]:
    """Every config file path the script's initialize calls and TrainingArguments point at (resolved or not),
    with the string that names it."""
    paths: list[tuple[Path, cst.BaseExpression]] = []
    for expression in config_expressions(context):
        value = (
            expression.evaluated_value if isinstance(expression, (cst.SimpleString, cst.ConcatenatedString)) else None
        )
        if isinstance(value, str):
            paths.append((config_path(context.path, value), expression))
    return paths


def config_expressions(context: ScriptContext) -> Iterator[cst.BaseExpression]:
    """The config expressions of the script's initialize calls and of its TrainingArguments / DeepSpeedPlugin."""
    for init in context.facts.initialize_calls:
        if init.config is not None:
            yield init.config
    yield from trainer_expressions(context)
