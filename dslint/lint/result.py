"""What linting one file produces (`FileResult`), and which rules run on it."""

from __future__ import annotations

from dataclasses import dataclass, field

from dslint.diagnostics import Diagnostic
from dslint.framework.config_rule import ConfigRule
from dslint.framework.registry import all_rules
from dslint.framework.rule import ScriptRule
from dslint.selection import RuleSelection


@dataclass
class FileResult:
    """What linting one file (a script or a config) produced: findings, and the parsed text when it parsed."""

    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    parsed: bool = False
    skipped: bool = False  # the prefilter proved no rule can fire
    text: str | None = None
    encoding: str = "utf-8"
    suppressed: int = 0  # findings silenced by noqa comments


def script_rules(selection: RuleSelection) -> list[type[ScriptRule]]:
    return [r for r in all_rules() if issubclass(r, ScriptRule) and selection.enabled(r.code)]


def config_rules(selection: RuleSelection) -> list[type[ConfigRule]]:
    return [r for r in all_rules() if issubclass(r, ConfigRule) and selection.enabled(r.code)]
