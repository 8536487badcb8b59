"""Lint one script: prefilter, parse once, compute facts once, run every selected rule in one traversal."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst

from dslint.config.rule import ConfigRule
from dslint.diagnostics import Diagnostic, Location
from dslint.prefilter import ENGINE_TOKENS, TRAINER_CONFIG_TOKENS, has_tokens, may_create_engine
from dslint.registry import all_rules
from dslint.rule import ScriptRule
from dslint.rules.syntax_error import SyntaxErrorRule
from dslint.script.context import ScriptContext
from dslint.script.facts import collect_facts
from dslint.script.project_facts import ProjectFacts
from dslint.script.traversal import visit_all
from dslint.selection import RuleSelection
from dslint.suppression import apply_noqa, might_have_noqa


@dataclass
class ScriptResult:
    """What linting one script produced: findings, and the parsed text (for the fixer) when it parsed."""

    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    parsed: bool = False
    skipped: bool = False  # the prefilter proved no rule can fire
    text: str | None = None
    encoding: str = "utf-8"
    suppressed: int = 0  # findings silenced by noqa comments


def script_rules(selection: RuleSelection) -> list[type[ScriptRule]]:
    return [r for r in all_rules() if issubclass(r, ScriptRule) and selection.enabled(r.code)]


def lint_source(
    path: str,
    data: bytes,
    selection: RuleSelection | None = None,
    world_size: int | None = None,
    *,
    use_prefilter: bool = True,
    line_noqa: bool = True,
    project: ProjectFacts | None = None,
) -> ScriptResult:
    """Lint one script and apply its noqa comments (`dslint.suppression`); `line_noqa=False` leaves line
    comments to the caller (flake8 applies them itself)."""
    selection = selection or RuleSelection()
    result = lint_source_unsuppressed(path, data, selection, world_size, use_prefilter=use_prefilter, project=project)
    text = result.text if result.text is not None else _decode(data)
    suppressed = apply_noqa(path, text, result.diagnostics, selection, line_noqa=line_noqa)
    result.diagnostics = suppressed.diagnostics
    result.suppressed = suppressed.suppressed
    return result


def _decode(data: bytes) -> str | None:
    if not might_have_noqa(data.decode("latin-1")):
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def lint_source_unsuppressed(
    path: str,
    data: bytes,
    selection: RuleSelection | None = None,
    world_size: int | None = None,
    *,
    use_prefilter: bool = True,
    project: ProjectFacts | None = None,
) -> ScriptResult:
    """The rules' findings before any noqa comment is applied. `project` is what the project index knows about
    this file (engines passed in from elsewhere, the configs its launchers give it)."""
    selection = selection or RuleSelection()
    result = ScriptResult(path)
    rules, configs = _rules_for(data, script_rules(selection), config_rules(selection), project)
    report_syntax = selection.enabled(SyntaxErrorRule.code) and any(_rules_for(data, *_every_rule()))
    if use_prefilter and not rules and not configs and not report_syntax:
        result.skipped = True
        return result
    try:
        module = cst.parse_module(data)
    except (cst.ParserSyntaxError, ValueError, UnicodeDecodeError) as error:
        # DSL001 covers the files dslint would analyse; others are not dslint's to judge.
        if report_syntax:
            result.diagnostics.append(syntax_error_diagnostic(path, data, error))
        return result
    if not use_prefilter:
        rules, configs = script_rules(selection), config_rules(selection)
    result.parsed = True
    result.text = _decoded(data, module.encoding)
    result.encoding = module.encoding
    result.diagnostics.extend(lint_module(path, module, rules, configs, world_size=world_size, project=project))
    result.diagnostics.sort(key=lambda d: d.sort_key)
    return result


def _decoded(data: bytes, encoding: str) -> str:
    """The text libcst parsed, as `module.code` would give it, without a whole code generation pass."""
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


def own_findings(path: str, result: ScriptResult) -> list[Diagnostic]:
    """The findings located in `path` itself: a script's result also holds findings inside the config files it
    points at, which an editor or flake8 showing this one file must leave out."""
    return [d for d in result.diagnostics if d.path == path]


def config_rules(selection: RuleSelection) -> list[type[ConfigRule]]:
    return [r for r in all_rules() if issubclass(r, ConfigRule) and selection.enabled(r.code)]


def _every_rule() -> tuple[list[type[ScriptRule]], list[type[ConfigRule]]]:
    everything = RuleSelection.from_options(["ALL"])
    return script_rules(everything), config_rules(everything)


def _rules_for(
    data: bytes,
    rules: list[type[ScriptRule]],
    configs: list[type[ConfigRule]],
    project: ProjectFacts | None = None,
) -> tuple[list[type[ScriptRule]], list[type[ConfigRule]]]:
    """The rules that can possibly fire on `data` (see dslint.prefilter). An engine the project index brings
    from elsewhere stands for the `deepspeed.initialize` call the text would otherwise need; a config a
    launcher passes, for the config tokens."""
    if project is not None and project.receives_engine:
        rules = [r for r in rules if r.required_tokens == ENGINE_TOKENS or has_tokens(data, r.required_tokens)]
        return rules, configs
    if project is not None and any(launch.config_path for launch in project.launches) and configs:
        return [rule for rule in rules if has_tokens(data, rule.required_tokens)], configs
    rules = [rule for rule in rules if has_tokens(data, rule.required_tokens)]
    engine = bool(rules or configs) and may_create_engine(data)
    if rules and all(rule.needs_engine for rule in rules) and not engine:
        rules = []
    # Configs in scripts come from initialize calls or from `*TrainingArguments(deepspeed=...)`.
    if configs and not (engine or has_tokens(data, TRAINER_CONFIG_TOKENS)):
        configs = []
    return rules, configs


def lint_module(
    path: str,
    module: cst.Module,
    rules: Sequence[type[ScriptRule]],
    config_rules: Sequence[type[ConfigRule]] = (),
    world_size: int | None = None,
    project: ProjectFacts | None = None,
) -> list[Diagnostic]:
    facts = collect_facts(module, project)
    context = ScriptContext(path, module, facts)
    active = [rule(context) for rule in rules if facts.has_engine or not rule.needs_engine]
    if active:
        visit_all(module, active)
    if config_rules:  # the configs the script builds or points at (dslint.config.script_configs)
        from dslint.config.script_configs import check_script_configs

        context.diagnostics.extend(check_script_configs(context, config_rules, world_size))
    return context.diagnostics


def syntax_error_diagnostic(path: str, data: bytes, error: Exception) -> Diagnostic:
    """One finding for a file that cannot be parsed; CPython's position and message are the clearer ones."""
    line, column, message = 1, 1, str(error).splitlines()[0] if str(error) else type(error).__name__
    try:
        ast.parse(data, filename=path)
    except SyntaxError as syntax:
        line, column = syntax.lineno or 1, syntax.offset or 1
        message = syntax.msg
    except (ValueError, UnicodeDecodeError) as other:
        message = str(other)
    else:
        if isinstance(error, cst.ParserSyntaxError):
            line, column = error.raw_line, error.raw_column + 1
            message = error.message.splitlines()[0]
    start = Location(max(line, 1), max(column, 1))
    return Diagnostic(
        code=SyntaxErrorRule.code,
        slug=SyntaxErrorRule.slug,
        message=f"{SyntaxErrorRule.message}: {message}",
        severity=SyntaxErrorRule.severity,
        path=path,
        start=start,
        end=start,
    )
