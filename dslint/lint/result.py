"""What linting one file produces (`FileResult`), and which rules run on it."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from dslint.diagnostics import Diagnostic
from dslint.selection import RuleSelection

R = TypeVar("R")

if TYPE_CHECKING:  # the rules are imported when a file needs them (they bring libcst)
    from dslint.framework.config_rule import ConfigRule
    from dslint.framework.rule import ScriptRule


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


def one_per_place(own: Iterable[Diagnostic], through_scripts: Iterable[Diagnostic]) -> list[Diagnostic]:
    """The findings of config files, each place and code once: a config is checked on its own, where its reader
    may be unknown (the rules then hedge, e.g. DSL405's info on "auto"), and again through each script that
    hands it to DeepSpeed, which knows the reader. Where both report the same code at the same place, the
    script's finding is kept and the file's own guess dropped; identical findings are reported once."""
    linked = list(through_scripts)
    # the same file may be named two ways: as discovered under an absolute root, and as a script's path shows it
    places = {(os.path.abspath(d.path), d.cell, d.start, d.code) for d in linked}
    kept = [d for d in own if (os.path.abspath(d.path), d.cell, d.start, d.code) not in places]
    return list(dict.fromkeys([*kept, *linked]))


def script_rules(selection: RuleSelection) -> list[type[ScriptRule]]:
    return list(_script_rules(selection))


def config_rules(selection: RuleSelection) -> list[type[ConfigRule]]:
    return list(_config_rules(selection))


@functools.lru_cache(maxsize=64)
def script_codes(selection: RuleSelection) -> tuple[str, ...]:
    """The codes of `script_rules(selection)`, in the same order, from the catalog: no rule (nor libcst) imported."""
    from dslint.framework.catalog import CODES, SCRIPT_NEEDS

    return tuple(code for code in CODES if code in SCRIPT_NEEDS and selection.enabled(code))


@functools.lru_cache(maxsize=64)
def config_codes(selection: RuleSelection) -> tuple[str, ...]:
    """The codes of `config_rules(selection)`, in the same order, from the catalog."""
    from dslint.framework.catalog import CONFIG_CODES

    return tuple(code for code in CONFIG_CODES if selection.enabled(code))


# A run asks for the same few selections once per file: each answer is kept (a selection is a frozen value).
@functools.lru_cache(maxsize=64)
def _script_rules(selection: RuleSelection) -> tuple[type[ScriptRule], ...]:
    from dslint.framework.registry import all_rules
    from dslint.framework.rule import ScriptRule

    return tuple(r for r in all_rules() if issubclass(r, ScriptRule) and selection.enabled(r.code))


@functools.lru_cache(maxsize=64)
def _config_rules(selection: RuleSelection) -> tuple[type[ConfigRule], ...]:
    """The enabled config rules in the registry's order, importing only their modules (`CONFIG_RULE_MODULES`): a
    run that lints configs and no script libcst parses never imports libcst or the script rules."""
    from dslint.framework.catalog import CONFIG_RULE_MODULES
    from dslint.framework.config_rule import ConfigRule

    return rules_in_modules(CONFIG_RULE_MODULES, ConfigRule, selection)


def rules_in_modules(modules: Mapping[str, str], base: type[R], selection: RuleSelection) -> tuple[type[R], ...]:
    """The enabled rules of `modules` (code -> module name under `dslint.rules`, the catalog's order) that derive
    from `base`, importing only those modules (config rules here, launch rules in `lint/launcher.py`)."""
    import importlib

    found: list[type[R]] = []
    for code, name in modules.items():
        if not selection.enabled(code):
            continue
        module = importlib.import_module(f"dslint.rules.{name}")
        found.extend(
            value
            for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, base) and vars(value).get("code") == code
        )
    return tuple(found)
