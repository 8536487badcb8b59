"""Helpers for the whole-file fixture tests (`fixtures/`)."""

from __future__ import annotations

import re
from pathlib import Path

from dslint.diagnostics import Diagnostic
from dslint.fixer import FixOutcome, fix_text
from dslint.linter import lint_source
from dslint.project.index import single_file_facts
from dslint.selection import RuleSelection

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
EXPECT_MARKER = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)")
UNSAFE_MARKER = "# dslint-fix: --unsafe-fixes"


def expected_markers(text: str) -> list[tuple[int, str]]:
    """`# expect: DSL101, DSL103` comments: (line, code) for each finding the fixture promises."""
    found: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = EXPECT_MARKER.search(line)
        if match:
            found.extend((number, code.strip()) for code in match.group(1).split(",") if code.strip())
    return sorted(found)


def lint_text(path: str, text: str, selection: RuleSelection | None = None) -> list[Diagnostic]:
    """What `dslint check` reports on this file alone (with what the project index knows of the file itself)."""
    data = text.encode("utf-8")
    return lint_source(path, data, selection, project=single_file_facts(path, data)).diagnostics


def fix_file_text(path: str, text: str) -> FixOutcome:
    unsafe = UNSAFE_MARKER in text
    return fix_text(text, lambda current: lint_text(path, current), unsafe=unsafe)
