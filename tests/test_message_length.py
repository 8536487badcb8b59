"""A finding's message is one line a terminal holds (issue #25): what is wrong and what to do, in at most
`BOUND` characters, as ruff's messages; the why belongs to `explain`, the rule page and the `full` format (which
prints the rule's why under each finding). Every rule is measured, the ones added later included: its message
templates (`message` and every `*_message` / `*_template` string, placeholders filled with short values) within
`BOUND`, and every finding of its own invalid cases, names included, within `FINDING_BOUND`."""

from __future__ import annotations

import string
import textwrap

import pytest

from dslint.framework.registry import all_rules
from dslint.framework.rule import Rule
from tests.test_rule_cases import _lint

BOUND = 100
# A finding names keys, values, engines and releases: the same text with its names, as the rule's own cases write
# them, may run a little past BOUND (a long dotted config key alone is 40 characters), never far.
FINDING_BOUND = 120
SHORT = {"line": "123", "version": "0.19.8", "precision": "bf16", "stage": "2", "engine": "model_engine"}


def _templates(rule: type[Rule]) -> dict[str, str]:
    found = {}
    for klass in rule.__mro__:
        for name, value in vars(klass).items():
            if isinstance(value, str) and (name == "message" or name.endswith(("_message", "_template"))):
                found.setdefault(name, value)
    return found


def _filled(template: str) -> str:
    names = [field for _, field, _, _ in string.Formatter().parse(template) if field]
    return template.format(**{name: SHORT.get(name, "x") for name in names}) if names else template


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_every_message_template_fits_a_line(rule: type[Rule]) -> None:
    for name, template in _templates(rule).items():
        text = _filled(template)
        assert len(text) <= BOUND, f"{rule.code}.{name} has {len(text)} characters (at most {BOUND}): {text}"
        assert "\n" not in text


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_every_finding_of_the_rules_cases_fits_a_line(rule: type[Rule]) -> None:
    for case in rule.invalid:
        for diagnostic in _lint(rule, case.path or rule.case_path, textwrap.dedent(case.code), case.deepspeed_version):
            message = diagnostic.message
            assert len(message) <= FINDING_BOUND, f"{rule.code}: {len(message)} characters: {message}"
