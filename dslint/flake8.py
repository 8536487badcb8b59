"""The flake8 plugin (entry point group `flake8.extension`, code prefix `DSL`).

It runs the same linter as `dslint check`, with the same prefilter and the nearest `[tool.dslint]` settings, so
both report the same findings for a .py file. flake8 applies `# noqa` line comments itself (and honours
`--disable-noqa`), so the plugin leaves them to it and applies only the file-level `# dslint: noqa`; DSL010 still
sees every noqa comment. Columns are 0-based, as flake8 expects (it prints them 1-based). A file that does not
parse gets flake8's own E999 instead of DSL001: flake8 does not run tree plugins on it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from dslint import __version__
from dslint.framework.driver_rules import ScriptSyntaxError
from dslint.framework.registry import implementation
from dslint.lint.file import own_findings
from dslint.lint.script import lint_source
from dslint.project.index import single_file_facts
from dslint.selection import RuleSelection
from dslint.settings import SettingsError, SettingsResolver

_resolver: SettingsResolver | None = None


def _selection_for(filename: str) -> RuleSelection:
    global _resolver
    if _resolver is None:
        _resolver = SettingsResolver()
    if filename in ("-", "stdin", ""):
        return _resolver.for_path(Path.cwd()).selection_for(None)
    path = Path(filename)
    return _resolver.for_path(path).selection_for(path)


class DslintChecker:
    name = "dslint"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str, lines: Sequence[str]) -> None:
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type[Any]]]:
        data = "".join(self.lines).encode("utf-8")
        try:
            selection = _selection_for(self.filename)
        except SettingsError as error:
            yield 1, 0, f"{implementation(ScriptSyntaxError).code} dslint settings error: {error}", type(self)
            return
        project = single_file_facts(self.filename, data)
        result = lint_source(self.filename, data, selection, line_noqa=False, project=project)
        for diagnostic in own_findings(self.filename, result.diagnostics):
            if diagnostic.code == implementation(ScriptSyntaxError).code:
                continue
            yield (
                diagnostic.start.line,
                diagnostic.start.column - 1,
                f"{diagnostic.code} {diagnostic.message}",
                type(self),
            )
