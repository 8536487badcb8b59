"""Lint DeepSpeed configs: JSON/HJSON files, and configs that scripts build or point at."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dslint.config.discovery import is_config_name, is_deepspeed_config
from dslint.config.rule import ConfigContext, ConfigRule, Origin, mixed_file
from dslint.config.tree import Object, ParseError, parse_text
from dslint.deepspeed_version import config_schema, selected_version
from dslint.diagnostics import Diagnostic, Location
from dslint.linter import ScriptResult, config_rules
from dslint.rules.config_parse_error import ConfigParseError
from dslint.selection import RuleSelection


def run_config_rules(context: ConfigContext, rules: Sequence[type[ConfigRule]]) -> list[Diagnostic]:
    mixed = mixed_file(context.root, context.schema)
    for rule in rules:
        if rule.runs_on_mixed_files or not mixed:
            rule(context).check()
    return context.diagnostics


def parse_error_diagnostic(path: str, error: ParseError) -> Diagnostic:
    at = Location(max(error.line, 1), max(error.column, 1))
    return Diagnostic(
        code=ConfigParseError.code,
        slug=ConfigParseError.slug,
        message=f"{ConfigParseError.message}: {error.message}",
        severity=ConfigParseError.severity,
        path=path,
        start=at,
        end=at,
    )


def decode(data: bytes) -> str | None:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def lint_config_source(
    path: str,
    data: bytes,
    selection: RuleSelection | None = None,
    *,
    origin: Origin = Origin.FILE,
    world_size: int | None = None,
    known_config: bool = False,
) -> ScriptResult:
    """Lint one config file. `known_config`: a script points at it, so it is a DeepSpeed config whatever its
    name or content; otherwise a file that is not recognisably a DeepSpeed config gets no finding."""
    selection = selection or RuleSelection()
    result = ScriptResult(path)
    named = known_config or is_config_name(Path(path))
    text = decode(data)
    if text is None:
        if named and selection.enabled(ConfigParseError.code):
            error = ParseError("the file is not UTF-8 text", 1, 1)
            result.diagnostics.append(parse_error_diagnostic(path, error))
        return result
    try:
        root = parse_text(text)
    except ParseError as error:
        if named and selection.enabled(ConfigParseError.code):
            result.diagnostics.append(parse_error_diagnostic(path, error))
        return result
    if not isinstance(root, Object) or not (known_config or is_deepspeed_config(root, named)):
        result.skipped = True
        return result
    result.parsed = True
    result.text = text
    version = selected_version(selection.deepspeed_version)
    context = ConfigContext(path, root, origin, world_size, schema=config_schema(version), deepspeed_version=version)
    result.diagnostics.extend(run_config_rules(context, config_rules(selection)))
    result.diagnostics.sort(key=lambda d: d.sort_key)
    return result
