"""The flake8 plugin against a real flake8 process: the same findings as `dslint check` on every fixture."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
ENTRY = "dslint.flake8:DslintChecker"


def _installed() -> bool:
    """Whether the package is installed with its entry point (CI's editable install); then flake8 finds the
    plugin itself, and registering it again as a local plugin would run it twice."""
    return any(
        ep.name == "DSL" and ep.value == ENTRY for ep in importlib.metadata.entry_points(group="flake8.extension")
    )


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DSLINT_OUTPUT_FORMAT"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_flake8(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "flake8.ini"
    lines = ["[flake8]", "select = DSL"]
    if not _installed():
        lines += ["", "[flake8:local-plugins]", "extension =", f"    DSL = {ENTRY}", f"paths = {ROOT}"]
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--config", str(config), "--jobs", "1", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=_env(),
        check=False,
    )


def run_check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dslint", "check", "--isolated", "-q", "-j", "1", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=_env(),
        check=False,
    )


def _findings(output: str, drop_syntax_errors: bool = False) -> list[str]:
    lines = [line for line in output.splitlines() if line.strip()]
    if drop_syntax_errors:
        # flake8 reports a file that does not parse as E999 and runs no plugin on it
        lines = [line for line in lines if ": DSL001 " not in line]
    return sorted(lines)


def test_flake8_reports_what_dslint_check_reports_on_every_fixture(tmp_path: Path) -> None:
    # fixtures/projects/ are whole projects: their findings need launchers and other modules, which flake8
    # (one file at a time) does not see.
    projects = FIXTURES / "projects"
    files = sorted(str(p.relative_to(ROOT)) for p in FIXTURES.rglob("*.py") if projects not in p.parents)
    assert files
    flake8 = run_flake8(tmp_path, *files)
    assert flake8.stderr == "", flake8.stderr
    check = run_check(*files)
    # flake8 reports only on the file it checks: findings dslint reports inside a JSON config that a script
    # points at are not its to show.
    # and flake8's text has no severity (`dslint check` writes `CODE [severity] message`)
    found = [re.sub(r"^(.*?: DSL\d+) \[(?:error|warning|info)\] ", r"\1 ", f) for f in _findings(check.stdout, True)]
    expected = [f for f in found if f.split(":")[0].endswith(".py")]
    assert expected, "the fixtures must produce findings for this comparison to mean anything"
    assert _findings(flake8.stdout) == expected
    assert flake8.returncode == 1


def test_flake8_applies_noqa_itself(tmp_path: Path) -> None:
    """Line noqa comments are flake8's job: `--disable-noqa` brings the silenced findings back."""
    path = "fixtures/noqa_comments.py"
    silenced = _findings(run_flake8(tmp_path, path).stdout)
    everything = _findings(run_flake8(tmp_path, "--disable-noqa", path).stdout)
    assert set(silenced) < set(everything)
    assert any(":9:5: DSL101" in line for line in everything)
    assert not any(":9:5: DSL101" in line for line in silenced)


def test_flake8_columns_are_zero_based_in_the_plugin() -> None:
    from dslint.flake8 import DslintChecker

    text = (FIXTURES / "fix" / "model_moved_before_initialize.in.py").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    found = list(DslintChecker(None, "train.py", lines).run())  # type: ignore[arg-type]
    assert [(line, col, message.split()[0]) for line, col, message, _ in found] == [
        (17, 12, "DSL101"),
        (18, 4, "DSL104"),
    ]


@pytest.mark.parametrize("text", ["import os\n", "import deepspeed\nx = 1\n"])
def test_flake8_plugin_is_silent_on_clean_files(text: str) -> None:
    from dslint.flake8 import DslintChecker

    assert list(DslintChecker(None, "clean.py", text.splitlines(keepends=True)).run()) == []  # type: ignore[arg-type]
