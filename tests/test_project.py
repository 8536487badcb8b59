"""The project's own contract: README in sync, code quality tools clean, CI runs the README's command."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dslint.framework import rule_table

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_rule_table_matches_registry() -> None:
    assert rule_table.replace_block(README) == README, "run `python -m dslint.framework.rule_table --write`"


def test_readme_quick_start_has_exactly_two_commands() -> None:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    commands = [line for block in blocks for line in block.splitlines() if line.strip()]
    assert len(commands) == 2, commands
    assert "dslint check fixtures/" in commands[0]
    assert commands[1].endswith("python -m pytest")


def test_ci_runs_the_readme_test_command() -> None:
    section = README.split("## Quick start", 1)[1]
    test_command = re.findall(r"```sh\n(.*?)```", section, flags=re.S)[1].strip()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()
    assert "|| true" not in ci and "set -euo pipefail" in ci
    # a newcomer's machine: a fresh venv from the system Python, the command run inside it
    assert re.search(r'^"\$python" -m venv ', ci, flags=re.M) and "source " in ci


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "dslint", "runtime_check", "tests", "benchmarks"],
        ["ruff", "format", "--check", "dslint", "runtime_check", "tests", "benchmarks"],
        ["mypy"],
    ],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_code_quality(command: list[str]) -> None:
    executable = shutil.which(command[0])
    argv = [executable, *command[1:]] if executable else [sys.executable, "-m", *command]
    result = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
