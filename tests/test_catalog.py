"""The rule catalog (dslint/framework/catalog.py) says what the registry says: every code, and each script
rule's required tokens (the start-up path selects rules and prefilters files from it without importing them)."""

from __future__ import annotations

from dslint.framework.catalog import CODES, SCRIPT_TOKENS
from dslint.framework.registry import all_rules
from dslint.framework.rule import ScriptRule


def test_the_catalog_lists_every_rule_code() -> None:
    codes = tuple(rule.code for rule in all_rules())
    assert codes == CODES, f"update dslint/framework/catalog.py: CODES = {codes!r}"


def test_the_catalog_has_each_script_rules_tokens() -> None:
    tokens = {r.code: r.token_sets() for r in all_rules() if issubclass(r, ScriptRule) and r.required_tokens}
    assert tokens == SCRIPT_TOKENS, f"update dslint/framework/catalog.py: SCRIPT_TOKENS = {tokens!r}"


def test_every_script_rule_needs_some_token() -> None:
    """A script rule without required tokens would make every file worth parsing; the fast skip in
    dslint.lint.file assumes each script traversal rule names its tokens."""
    for rule in all_rules():
        if issubclass(rule, ScriptRule) and rule.code in SCRIPT_TOKENS:
            assert rule.required_tokens
