"""The one generic test that runs every registered rule's own valid and invalid cases."""

from __future__ import annotations

import tempfile
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from dslint.config.recognition import CONFIG_SUFFIXES
from dslint.fix.config import config_check
from dslint.fix.edits import fix_text
from dslint.framework.launch_rule import LaunchRule
from dslint.framework.registry import all_rules
from dslint.framework.rule import Invalid, Rule, Valid
from dslint.lint.config import lint_config_source
from dslint.lint.file import lint_file, lint_text
from dslint.lint.launcher import lint_launcher
from dslint.project.index import build_project_index
from dslint.selection import RuleSelection

CASES = [
    pytest.param(rule, case, id=f"{rule.code}-{kind}-{i}")
    for rule in all_rules()
    for kind, cases in (("valid", rule.valid), ("invalid", rule.invalid))
    for i, case in enumerate(cases)
]


def _lint_launcher(rule: type[Rule], case: Valid | Invalid, text: str) -> list:
    """A case with the other files of its project (a launch rule's, or a script rule's that needs launchers): the
    files laid out in a folder, indexed as a check of that folder would, and the case file's findings."""
    assert case.path is not None
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder).resolve()
        for name, body in ((case.path, text), *case.files):
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(textwrap.dedent(body), encoding="utf-8")
        index = build_project_index(sorted(root.rglob("*.py")), [str(root)])
        only = replace(RuleSelection.from_options([rule.code]), deepspeed_version=case.deepspeed_version)
        if not _launch_case(rule, case):  # a script or config rule's case that needs its launchers
            path = root / case.path
            reading = index.config_reading(path) if case.path.endswith(CONFIG_SUFFIXES) else None
            project = index.facts_for(path)
            return lint_file(str(path), path.read_bytes(), only, project=project, config_reader=reading).diagnostics
        issues = index.launch_issues.get(str(root / case.path), [])
        return lint_launcher(str(root / case.path), issues, only, text).diagnostics


def _launch_case(rule: type[Rule], case: Valid | Invalid) -> bool:
    """A launcher linted by a launch rule (a rule over configs too, as DSL407, has config cases as well)."""
    assert case.path is not None
    return issubclass(rule, LaunchRule) and not case.path.endswith((*CONFIG_SUFFIXES, ".py"))


def _lint(rule: type[Rule], path: str, text: str, deepspeed_version: str | None = None) -> list:
    only = replace(RuleSelection.from_options([rule.code]), deepspeed_version=deepspeed_version)
    if path.endswith(CONFIG_SUFFIXES):  # a config case: a JSON text, linted as a DeepSpeed config file
        return lint_config_source(path, text.encode(), only, known_config=True).diagnostics
    return lint_text(path, text, only)


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_every_rule_has_cases(rule: type[Rule]) -> None:
    assert rule.valid, f"{rule.code} has no valid cases"
    assert rule.invalid, f"{rule.code} has no invalid cases"


@pytest.mark.parametrize(("rule", "case"), CASES)
def test_case(rule: type[Rule], case: Valid | Invalid) -> None:
    code = textwrap.dedent(case.code)
    if _launch_case(rule, case) or case.files:
        found = _lint_launcher(rule, case, code)
    else:
        found = _lint(rule, case.path, code, case.deepspeed_version)
    if isinstance(case, Valid):
        assert found == [], "\n".join(d.concise() for d in found)
        return
    assert tuple(d.start.line for d in found) == case.lines, "\n".join(d.concise() for d in found)
    for diagnostic in found:
        assert diagnostic.code == rule.code
    fixed_lines = [d.start.line for d in found if d.fix is not None]
    # a fix nobody checks is a fix that can silently go wrong: every case that emits one pins its result
    assert case.fixed is not None or not fixed_lines, f"the fix at line(s) {fixed_lines} is unchecked: add `fixed=`"
    # (a `fixed=` equal to the code, where no finding has a fix, pins that the fix is declined)
    if case.fixed is not None:
        verify = config_check(code) if case.path.endswith(CONFIG_SUFFIXES) else None
        outcome = fix_text(
            code, lambda text: _lint(rule, case.path, text, case.deepspeed_version), unsafe=True, verify=verify
        )
        assert outcome.error is None
        assert outcome.text == textwrap.dedent(case.fixed)
