"""Running the config rules on the configs a script builds or points at.

A dict literal is checked in place (findings point into the script); a file the script names is checked as a
file that goes to `deepspeed.initialize` (or to the Hugging Face Trainer), with findings in that file. The same
file or literal is checked once per script.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from dslint.config.linter import parse_error_diagnostic, run_config_rules
from dslint.config.rule import ConfigContext, ConfigRule
from dslint.config.tree import ParseError
from dslint.deepspeed_version import config_schema
from dslint.diagnostics import Diagnostic
from dslint.rules.config_parse_error import ConfigParseError
from dslint.script.config_link import (
    ResolvedConfig,
    load_config_tree,
    referenced_config_paths,
    resolve_config,
    trainer_configs,
)
from dslint.script.context import ScriptContext


def check_script_configs(
    context: ScriptContext, rules: Sequence[type[ConfigRule]], world_size: int | None = None
) -> list[Diagnostic]:
    if not rules:
        return []
    resolved: list[ResolvedConfig] = []
    for init in context.facts.initialize_calls:
        if context.facts.in_plain_branch(init.call):
            continue
        config = resolve_config(context, init)
        if config is not None:
            resolved.append(config)
    resolved.extend(trainer_configs(context))
    diagnostics: list[Diagnostic] = []
    seen: set[object] = set()
    for config in resolved:
        if config.tree is None:
            continue
        key: object = str(config.path) if config.path is not None else id(config.tree)
        if key in seen:
            continue
        seen.add(key)
        path = _shown(config.path) if config.path is not None else context.path
        config_context = ConfigContext(
            path,
            config.tree,
            config.origin,
            world_size=world_size,
            from_file=config.path is not None,
            schema=config_schema(context.deepspeed_version),
            deepspeed_version=context.deepspeed_version,
        )
        diagnostics.extend(run_config_rules(config_context, rules))
    if any(rule is ConfigParseError for rule in rules):
        for config_path in referenced_config_paths(context):
            loaded = load_config_tree(config_path)
            if isinstance(loaded, ParseError) and str(config_path) not in seen:
                seen.add(str(config_path))
                diagnostics.append(parse_error_diagnostic(_shown(config_path), loaded))
    return diagnostics


def _shown(path: Path) -> str:
    return os.path.normpath(str(path))
