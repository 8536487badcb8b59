"""Helpers for the whole-file fixture tests (`fixtures/`)."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

from dslint.fix.edits import FixOutcome
from dslint.fix.loop import fix_source
from dslint.lint.file import lint_text

__all__ = ["FIXTURES", "ROOT", "crash_on", "expected_markers", "fix_file_text", "lint_text"]

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


def crash_on(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Make the process that lints the file called `name` die of SIGSEGV (as a parser crash would), whatever
    process it is: a pool worker, or the lint-ahead child."""
    import dslint.lint.batch as batch

    real = batch.lint_path

    def crashing(path: Path, *args: object, **kwargs: object) -> object:
        if path.name == name:
            os.kill(os.getpid(), signal.SIGSEGV)
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(batch, "lint_path", crashing)
