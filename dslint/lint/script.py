"""Lint one script: prefilter, parse once, compute facts once, run every selected rule in one traversal. Which
rules can fire is asked of `dslint.lint.activation` at each step (the text, CPython's tree, the facts)."""

from __future__ import annotations

import ast
from collections.abc import Sequence

import libcst as cst

from dslint.config.versions import NewestAdmitted, Version, newest_known, selected_version
from dslint.diagnostics import Diagnostic
from dslint.framework.config_rule import ConfigRule
from dslint.framework.driver_rules import ScriptSyntaxError, ScriptTooDeep
from dslint.framework.registry import implementation
from dslint.framework.rule import ScriptRule
from dslint.limits import Limits
from dslint.lint.activation import active, in_code, in_facts, in_text
from dslint.lint.config import check_script_configs
from dslint.lint.databricks import python_source
from dslint.lint.engine_branches import without_engine_else
from dslint.lint.launch_dead import without_launch_dead
from dslint.lint.parse_guard import Refusal, code_facts, compiled, newer_python_syntax, parse_module, too_deep
from dslint.lint.result import FileResult, config_rules, script_rules
from dslint.lint.suppression import apply_noqa, might_have_noqa
from dslint.lint.unreachable import without_unreachable
from dslint.model.summary import known_tree
from dslint.script.collect import collect_facts
from dslint.script.context import ScriptContext
from dslint.script.project_facts import ProjectFacts
from dslint.script.walk import visit_all
from dslint.selection import RuleSelection


def lint_source(
    path: str,
    data: bytes,
    selection: RuleSelection | None = None,
    world_size: int | None = None,
    *,
    use_prefilter: bool = True,
    line_noqa: bool = True,
    limits: Limits | None = None,
    project: ProjectFacts | None = None,
) -> FileResult:
    """Lint one script and apply its noqa comments (`dslint.lint.suppression`); `line_noqa=False` leaves line
    comments to the caller (flake8 applies them itself)."""
    selection = selection or RuleSelection()
    result = lint_source_unsuppressed(
        path, data, selection, world_size, use_prefilter=use_prefilter, limits=limits, project=project
    )
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
    limits: Limits | None = None,
    project: ProjectFacts | None = None,
) -> FileResult:
    """The rules' findings before any noqa comment is applied. A file CPython refuses, or one nested deeper
    than `limits.max_nesting`, is never handed to libcst (`dslint.lint.parse_guard`)."""
    selection = selection or RuleSelection()
    result = FileResult(path)
    text = in_text(data, project)
    rules, configs = active(text, script_rules(selection), config_rules(selection))
    alone = text if project is None else in_text(data, None)
    # a file dslint would analyse (DSL001/DSL002 apply): a rule could run on it, and it mentions DeepSpeed or a
    # launch of the project starts it; a plain PyTorch file or notebook is not dslint's to judge
    analysed = any(active(alone, *_every_rule())) and (
        b"deepspeed" in data.lower() or (project is not None and bool(project.launches))
    )
    report_syntax = analysed and selection.enabled(_syntax_error_rule().code)
    report_deep = analysed and selection.enabled(_too_deep_rule().code)
    if use_prefilter and not rules and not configs and not report_syntax and not report_deep:
        result.skipped = True
        return result
    known = known_tree(path, data)
    refused, tree = (None, known) if known is not None else compiled(path, data)
    if refused is not None and newer_python_syntax(data, refused):
        # valid Python 3.12 that this interpreter's compiler refuses: no syntax error to report, and the facts
        # read with `ast` (the module summaries) cannot be had, so the file is left alone
        result.skipped = True
        return result
    if refused is not None and not refused.too_deep:
        data, refused, tree = _as_notebook_source(path, data, refused, tree)
    if refused is None and use_prefilter and tree is not None:
        in_tree = in_code(code_facts(tree, project.star_imports if project is not None else None), project)
        rules, configs = active(in_tree, rules, configs)
        # DSL002 covers the files on which some rule, selected or not, can run (the code's calls included)
        deep = report_deep and any(active(in_tree, *_every_rule()))
        if not rules and not configs and not deep:
            # the text had the tokens, but only in comments, docstrings or messages, or no call has a rule's
            # shape: no rule can run, so nothing is parsed and the tree's depth (a walk of its own) does not matter
            result.skipped = True
            return result
    if refused is None and tree is not None:
        refused = too_deep(tree, data, (limits or Limits()).max_nesting)
    if refused is not None:
        # DSL001/DSL002 cover the files dslint would analyse; others are not dslint's to judge.
        if refused.too_deep and report_deep:
            result.diagnostics.append(_too_deep_rule().from_refusal(path, refused.line, refused.message))
        elif not refused.too_deep and report_syntax:
            error = SyntaxError(refused.message, (path, refused.line, refused.column, None))
            result.diagnostics.append(_syntax_error_rule().from_error(path, data, error))
        return result
    if use_prefilter and not rules and not configs:  # kept only for its depth (DSL002): nothing to run on it
        result.skipped = True
        return result
    try:
        module = parse_module(data)
    except (cst.ParserSyntaxError, ValueError, UnicodeDecodeError, SyntaxError) as error:
        # DSL001 covers the files dslint would analyse; others are not dslint's to judge.
        if report_syntax:
            result.diagnostics.append(_syntax_error_rule().from_error(path, data, error))
        return result
    if not use_prefilter:
        rules, configs = script_rules(selection), config_rules(selection)
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


def _as_notebook_source(
    path: str, data: bytes, refused: Refusal, tree: ast.Module | None
) -> tuple[bytes, Refusal | None, ast.Module | None]:
    """A Databricks notebook source that CPython refuses as written is read as the notebook it is: its IPython
    lines (`!cmd`, `%pip`) become `pass` (`dslint.lint.databricks`). When that compiles, its Python is linted;
    otherwise the original refusal stands."""
    python = python_source(data)
    if python is None:
        return data, refused, tree
    refused_python, tree_python = compiled(path, python)
    if refused_python is not None:
        return data, refused, tree
    return python, None, tree_python


def _decoded(data: bytes, encoding: str) -> str:
    """The text libcst parsed, as `module.code` would give it, without a whole code generation pass."""
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


def _every_rule() -> tuple[list[type[ScriptRule]], list[type[ConfigRule]]]:
    everything = RuleSelection.from_options(["ALL"])
    return script_rules(everything), config_rules(everything)


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


def _syntax_error_rule() -> type[ScriptSyntaxError]:
    return implementation(ScriptSyntaxError)


def _too_deep_rule() -> type[ScriptTooDeep]:
    return implementation(ScriptTooDeep)
