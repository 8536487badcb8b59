"""DeepSpeed configs in the language server: linting an open config document, and the findings scripts link to
config files (a script's lint also checks the config it passes to `deepspeed.initialize`), kept per script so
that each config's URI shows every finding that lands in it, whether or not the config is open."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from dslint.config.recognition import CONFIG_SUFFIXES
from dslint.diagnostics import Diagnostic
from dslint.lint.file import lint_config_file
from dslint.lint.script import lint_source
from dslint.project.project_index import ConfigReading
from dslint.script.project_facts import ProjectFacts
from dslint.selection import RuleSelection

SCRIPT_LANGUAGES = frozenset({"python"})
CONFIG_LANGUAGES = frozenset({"json", "jsonc", "hjson"})


def document_kind(path: str, language: str | None) -> str | None:
    """ "script", "config" or None (not dslint's): by the file's suffix, else by the client's language id."""
    suffix = Path(path).suffix.lower()
    if suffix in (".py", ".pyi"):
        return "script"
    if suffix in CONFIG_SUFFIXES:
        return "config"
    if language in SCRIPT_LANGUAGES or language is None:
        return "script"
    if language in CONFIG_LANGUAGES:
        return "config"
    return None


def normalised(path: str) -> str:
    return os.path.normcase(os.path.normpath(os.path.abspath(path)))


@dataclass(frozen=True)
class LintOutcome:
    """A document's own findings, and the findings its lint placed in other files (the configs it links)."""

    own: tuple[Diagnostic, ...]
    linked: dict[str, tuple[Diagnostic, ...]]


def lint_document(
    path: str,
    text: str,
    kind: str,
    selection: RuleSelection,
    known_config: bool = False,
    project: ProjectFacts | None = None,
    config_reading: ConfigReading | None = None,
) -> LintOutcome:
    """Lint an open document's text as `dslint check` lints the file; `known_config`: a script links it;
    `project` and `config_reading`: what the project index says about the file (`dslint.lsp_project`)."""
    data = text.encode("utf-8")
    if kind == "config":
        result = lint_config_file(path, data, selection, config_reading, known_config=known_config)
    else:
        result = lint_source(path, data, selection, project=project)
    own = tuple(d for d in result.diagnostics if d.path == path)
    linked: dict[str, list[Diagnostic]] = {}
    for diagnostic in result.diagnostics:
        if diagnostic.path != path:
            linked.setdefault(normalised(diagnostic.path), []).append(diagnostic)
    return LintOutcome(own, {key: tuple(found) for key, found in linked.items()})


@dataclass
class LinkedFindings:
    """The findings each open script's last full lint placed in config files, by the config's normalised path."""

    by_script: dict[str, dict[str, tuple[Diagnostic, ...]]] = field(default_factory=dict)

    def replace(self, script_uri: str, linked: dict[str, tuple[Diagnostic, ...]]) -> set[str]:
        """Record a script's new linked findings; returns the config paths whose findings may have changed."""
        before = self.by_script.pop(script_uri, {})
        if linked:
            self.by_script[script_uri] = linked
        return {path for path in {*before, *linked} if before.get(path) != linked.get(path)}

    def forget(self, script_uri: str) -> set[str]:
        return set(self.by_script.pop(script_uri, {}))

    def for_config(self, path: str) -> list[Diagnostic]:
        """Every script's findings in the config at `path`, each once."""
        return list(dict.fromkeys(d for linked in self.by_script.values() for d in linked.get(normalised(path), ())))

    def scripts_linking(self, path: str) -> list[str]:
        key = normalised(path)
        return [uri for uri, linked in self.by_script.items() if key in linked]

    def is_linked(self, path: str) -> bool:
        return bool(self.scripts_linking(path))
