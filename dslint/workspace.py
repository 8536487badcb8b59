"""The files a command works on, each with its effective settings: shared by `check`, `fix` and the adapters.

resolver = make_resolver(...)                     # dslint.commands.options: CLI options -> SettingsResolver
jobs, errors = files_to_check(resolver, paths, force_exclude)
for job in jobs:
    diagnostics = job.lint(text)                  # rules selected for this file, noqa comments applied
    unsafe = job.settings.unsafe_fixes            # --unsafe-fixes / [tool.dslint] unsafe-fixes
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dslint.diagnostics import Diagnostic
from dslint.linter import lint_source
from dslint.notebook import SUFFIX as NOTEBOOK
from dslint.runner import discover
from dslint.selection import RuleSelection
from dslint.settings import Settings, SettingsResolver


@dataclass(frozen=True)
class FileJob:
    path: Path
    settings: Settings
    selection: RuleSelection

    def lint(self, text: str, encoding: str = "utf-8") -> list[Diagnostic]:
        """The findings for `text` as this file's contents (for the fixer's rounds)."""
        return lint_source(str(self.path), text.encode(encoding), self.selection).diagnostics


def files_to_check(
    resolver: SettingsResolver, paths: Sequence[str], force_exclude: bool = False
) -> tuple[list[FileJob], list[str]]:
    """The files under `paths` (default: the current directory) that their settings do not exclude, and the
    errors met on the way (paths that do not exist). Raises SettingsError for a bad pyproject.toml."""
    discovery = discover(
        paths or (".",), suffixes=(".py", NOTEBOOK), excluded=resolver.excluded, force_exclude=force_exclude
    )
    jobs = []
    for path in discovery.files:
        settings = resolver.for_path(path)
        jobs.append(FileJob(path, settings, settings.selection_for(path)))
    return jobs, list(discovery.errors)
