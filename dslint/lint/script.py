"""Lint one script: prefilter, parse once, compute facts once, run every selected rule in one traversal. Which
rules can fire is asked of `dslint.lint.activation` at each step (the text, CPython's tree, the facts).

The steps before libcst (the text, CPython's tree) decide from the catalog's codes and needs alone
(`framework/catalog.py`); the rule modules and libcst are imported by `dslint.lint.parsed_script`, only for a file
some rule may fire on. Most files of a large tree are settled before that (every file of DeepSpeed's own source):
such a run never pays for importing libcst and the rules (about 0.25 s of CPU, in each worker process)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from dslint.framework.catalog import SYNTAX_ERROR_CODE, TOO_DEEP_CODE
from dslint.limits import Limits
from dslint.lint.activation import active_codes, in_code, in_text
from dslint.lint.databricks import python_source
from dslint.lint.parse_guard import Refusal, code_facts, compiled, newer_python_syntax, too_deep
from dslint.lint.result import FileResult, config_codes, script_codes
from dslint.lint.suppression import apply_noqa, might_have_noqa
from dslint.model.summary import known_tree
from dslint.script.project_facts import ProjectFacts
from dslint.selection import RuleSelection

if TYPE_CHECKING:
    from dslint.framework.driver_rules import ScriptSyntaxError, ScriptTooDeep


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
    rules, configs = active_codes(text, script_codes(selection), config_codes(selection))
    alone = text if project is None else in_text(data, None)
    # a file dslint would analyse (DSL001/DSL002 apply): a rule could run on it, and it mentions DeepSpeed or a
    # launch of the project starts it; a plain PyTorch file or notebook is not dslint's to judge
    analysed = any(active_codes(alone, *_every_rule())) and (
        b"deepspeed" in data.lower() or (project is not None and bool(project.launches))
    )
    report_syntax = analysed and selection.enabled(SYNTAX_ERROR_CODE)
    report_deep = analysed and selection.enabled(TOO_DEEP_CODE)
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
        rules, configs = active_codes(in_tree, rules, configs)
        # DSL002 covers the files on which some rule, selected or not, can run (the code's calls included)
        deep = report_deep and any(active_codes(in_tree, *_every_rule()))
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
    from dslint.lint.parsed_script import lint_parsed  # the rules and libcst: only for a file some rule may fire on

    return lint_parsed(result, data, selection, world_size, rules, configs, use_prefilter, project, tree, report_syntax)


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


def _every_rule() -> tuple[tuple[str, ...], tuple[str, ...]]:
    everything = RuleSelection.from_options(["ALL"])
    return script_codes(everything), config_codes(everything)


def _syntax_error_rule() -> type[ScriptSyntaxError]:
    from dslint.framework.driver_rules import ScriptSyntaxError
    from dslint.framework.registry import implementation  # every rule module: only for a finding

    return implementation(ScriptSyntaxError)


def _too_deep_rule() -> type[ScriptTooDeep]:
    from dslint.framework.driver_rules import ScriptTooDeep
    from dslint.framework.registry import implementation

    return implementation(ScriptTooDeep)
