"""The half of a script's lint that needs libcst (`dslint.lint.script` settles the rest first, on the text and
CPython's tree): parse once, compute the facts once, run the rules the earlier levels kept in one traversal, then
the config rules on the configs the script uses; findings in code no run reaches are dropped.

Imported only for a file some rule may fire on, so that a run whose files are all settled earlier never imports
libcst or a rule module."""

from __future__ import annotations

import ast
from collections.abc import Sequence

import libcst as cst

from dslint.config.versions import NewestAdmitted, Version, newest_known, selected_version
from dslint.diagnostics import Diagnostic
from dslint.framework.config_rule import ConfigRule
from dslint.framework.driver_rules import ScriptSyntaxError
from dslint.framework.registry import implementation
from dslint.framework.rule import ScriptRule
from dslint.lint.activation import active, in_facts
from dslint.lint.config import check_script_configs
from dslint.lint.engine_branches import without_engine_else
from dslint.lint.launch_dead import without_launch_dead
from dslint.lint.parse_guard import parse_module
from dslint.lint.result import FileResult, config_rules, script_rules
from dslint.lint.unreachable import without_unreachable
from dslint.script.collect import collect_facts
from dslint.script.context import ScriptContext
from dslint.script.project_facts import ProjectFacts
from dslint.script.walk import visit_all
from dslint.selection import RuleSelection


def lint_parsed(
    result: FileResult,
    data: bytes,
    selection: RuleSelection,
    world_size: int | None,
    rule_codes: Sequence[str],
    config_codes: Sequence[str],
    use_prefilter: bool,
    project: ProjectFacts | None,
    tree: ast.Module | None,
    report_syntax: bool,
) -> FileResult:
    """`data` parsed with libcst and linted by the rules of `rule_codes` (in the registry's order) and, when
    `config_codes` holds any, every selected config rule (all of them without the prefilter); into `result`."""
    path = result.path
    try:
        module = parse_module(data)
    except (cst.ParserSyntaxError, ValueError, UnicodeDecodeError, SyntaxError) as error:
        # DSL001 covers the files dslint would analyse; others are not dslint's to judge.
        if report_syntax:
            result.diagnostics.append(implementation(ScriptSyntaxError).from_error(path, data, error))
        return result
    if not use_prefilter:
        rules, configs = script_rules(selection), config_rules(selection)
    else:
        kept = set(rule_codes)
        rules = [rule for rule in script_rules(selection) if rule.code in kept]
        configs = config_rules(selection) if config_codes else []
    result.parsed = True
    result.text = _decoded(data, module.encoding)
    result.encoding = module.encoding
    version = selected_version(selection.deepspeed_version)
    newest = NewestAdmitted.of(selection.deepspeed_newest, selection.deepspeed_pin)
    result.diagnostics.extend(
        lint_module(
            path,
            module,
            rules,
            configs,
            world_size=world_size,
            deepspeed_version=version,
            deepspeed_newest=newest,
            project=project,
            tree=tree,
            text=result.text,
        )
    )
    result.diagnostics = without_unreachable(path, result.diagnostics, tree)  # code no run reaches
    result.diagnostics = without_engine_else(path, result.diagnostics, tree)  # the plain path beside the engine's
    result.diagnostics = without_launch_dead(path, result.diagnostics, tree, project)  # nor any launch
    result.diagnostics.sort(key=lambda d: d.sort_key)
    return result


def _decoded(data: bytes, encoding: str) -> str:
    """The text libcst parsed, as `module.code` would give it, without a whole code generation pass."""
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


def lint_module(
    path: str,
    module: cst.Module,
    rules: Sequence[type[ScriptRule]],
    config_rules: Sequence[type[ConfigRule]] = (),
    world_size: int | None = None,
    deepspeed_version: Version | None = None,
    project: ProjectFacts | None = None,
    deepspeed_newest: NewestAdmitted | None = None,
    tree: ast.Module | None = None,
    text: str | None = None,
) -> list[Diagnostic]:
    """`text`: the source `module` was parsed from, when the caller has it (saves a code generation pass)."""
    facts = collect_facts(module, project, tree, text)
    context = ScriptContext(
        path,
        module,
        facts,
        deepspeed_version=deepspeed_version or newest_known(),
        deepspeed_newest=deepspeed_newest,
        _text=text,
    )
    running = [rule(context) for rule in active(in_facts(facts), rules, ())[0]]
    if running:
        visit_all(module, running)
    if config_rules:  # the configs the script builds or points at (dslint.project.script_configs)
        context.diagnostics.extend(check_script_configs(context, config_rules, world_size))
    return context.diagnostics
