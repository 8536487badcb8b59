"""Helpers for the whole-file fixture tests (`fixtures/`)."""

from __future__ import annotations

import re
from pathlib import Path

from dslint.fix.edits import FixOutcome
from dslint.fix.loop import fix_source
from dslint.lint.file import lint_text

__all__ = ["FIXTURES", "ROOT", "expected_markers", "fix_file_text", "lint_text"]

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


def fix_file_text(path: str, text: str) -> FixOutcome:
    unsafe = UNSAFE_MARKER in text
    return fix_source(path, text, unsafe=unsafe)
