"""Every rule, found by importing each module of `dslint.rules`: adding a rule means adding one file."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import TypeVar

from dslint import rules as rules_package
from dslint.framework.rule_base import CODE_PATTERN, SLUG_PATTERN, Rule

R = TypeVar("R", bound=Rule)


class RegistryError(Exception):
    """A rule module breaks the framework's contract (duplicate code, bad slug, missing docs)."""


@functools.cache
def all_rules() -> tuple[type[Rule], ...]:
    """Every registered rule class, sorted by code."""
    found: dict[str, type[Rule]] = {}
    slugs: dict[str, str] = {}
    for info in pkgutil.iter_modules(rules_package.__path__):
        module = importlib.import_module(f"{rules_package.__name__}.{info.name}")
        for value in vars(module).values():
            if not (isinstance(value, type) and issubclass(value, Rule)) or value.__module__ != module.__name__:
                continue
            if "code" not in vars(value):
                continue  # an abstract helper base, not a rule
            _check(value)
            if value.code in found:
                raise RegistryError(f"{value.code} is declared twice ({found[value.code].__name__}, {value.__name__})")
            if value.slug in slugs:
                raise RegistryError(f"slug {value.slug} is used by {slugs[value.slug]} and {value.code}")
            found[value.code] = value
            slugs[value.slug] = value.code
    return tuple(found[code] for code in sorted(found))


def _check(rule: type[Rule]) -> None:
    if not CODE_PATTERN.match(rule.code):
        raise RegistryError(f"{rule.__name__}: code {rule.code!r} is not DSL + 3 digits (families 0-4)")
    for attribute in ("slug", "message", "severity", "docs"):
        if not hasattr(rule, attribute):
            raise RegistryError(f"{rule.code}: missing {attribute}")
    if not SLUG_PATTERN.match(rule.slug):
        raise RegistryError(f"{rule.code}: slug {rule.slug!r} is not kebab-case")


def rule_by_code(code: str) -> type[Rule] | None:
    for rule in all_rules():
        if rule.code == code:
            return rule
    return None


def implementation(contract: type[R]) -> type[R]:
    """The one registered rule that implements `contract` (a class of `dslint.framework.driver_rules`)."""
    found = [rule for rule in all_rules() if issubclass(rule, contract)]
    if len(found) != 1:
        raise RegistryError(f"{contract.__name__} needs exactly one rule, found {[r.code for r in found]}")
    return found[0]
