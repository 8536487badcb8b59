"""Whole-file fixtures: every `# expect:` marker is found, nothing else is; fix pairs fix as pinned."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_support import FIXTURES, expected_markers, fix_file_text, lint_text

# fixtures/projects/ are whole projects, checked with the project index by tests/test_project_fixtures.py
PROJECTS = FIXTURES / "projects"
SCRIPTS = sorted(p for p in FIXTURES.rglob("*.py") if not p.name.endswith(".out.py") and PROJECTS not in p.parents)
PAIRS = sorted(FIXTURES.rglob("*.in.py"))


def _id(path: Path) -> str:
    return str(path.relative_to(FIXTURES))


@pytest.mark.parametrize("path", SCRIPTS, ids=_id)
def test_fixture_findings_match_markers(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    # Findings in a config file the script points at carry that file's path; tests/test_config_fixtures.py
    # checks those.
    found = sorted((d.start.line, d.code) for d in lint_text(str(path), text) if d.path == str(path))
    assert found == expected_markers(text)


@pytest.mark.parametrize("path", PAIRS, ids=_id)
def test_fix_pair(path: Path) -> None:
    expected_path = path.with_name(path.name.replace(".in.py", ".out.py"))
    text = path.read_text(encoding="utf-8")
    outcome = fix_file_text(str(path), text)
    assert outcome.error is None
    assert outcome.applied, "a fix pair must exercise at least one fix"
    assert outcome.text == expected_path.read_text(encoding="utf-8")
    again = fix_file_text(str(path), outcome.text)
    assert again.text == outcome.text, "fixing twice must change nothing"
    fixed_codes = {d.code for d in outcome.applied}
    remaining = {d.code for d in lint_text(str(expected_path), outcome.text)}
    assert not (fixed_codes & remaining)
