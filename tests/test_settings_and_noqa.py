"""[tool.dslint] settings, command-line precedence, noqa comments, DSL010 and --add-noqa, through the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dslint.framework.catalog import CODES
from dslint.lint.script import lint_source
from dslint.settings import Overrides, SettingsError, SettingsResolver

ROOT = Path(__file__).resolve().parent.parent
BAD = (ROOT / "fixtures" / "fix" / "model_moved_before_initialize.in.py").read_text(encoding="utf-8")


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DSLINT_OUTPUT_FORMAT"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "dslint", *args], cwd=cwd, capture_output=True, text=True, env=env)


def _project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[project]\nname = 'x'\n\n[tool.dslint]\n{table}\n", encoding="utf-8")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(BAD, encoding="utf-8")
    (tmp_path / "src" / "legacy").mkdir()
    (tmp_path / "src" / "legacy" / "old.py").write_text(BAD, encoding="utf-8")
    return tmp_path


def _codes(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line.split(": ", 1)[1].split()[0] + "@" + line.split(":")[0] for line in result.stdout.splitlines()]


def test_pyproject_ignore_and_per_file_ignores(tmp_path: Path) -> None:
    project = _project(
        tmp_path, 'per-file-ignores = { "**/legacy/*.py" = ["DSL1"] }\nextend-exclude = ["nothing-here"]'
    )
    result = _run("check", "src", cwd=project)
    assert result.returncode == 1
    assert {line.split(":")[0] for line in result.stdout.splitlines()} == {"src/train.py"}
    settings = _run("settings", "src/legacy/old.py", "--format", "json", cwd=project)
    data = json.loads(settings.stdout)
    assert data["config-file"] == str(project / "pyproject.toml")
    assert "DSL101" not in data["enabled-rules"] and data["per-file-ignores-applied"] == {"**/legacy/*.py": ["DSL1"]}


def test_command_line_wins_over_pyproject(tmp_path: Path) -> None:
    project = _project(tmp_path, 'ignore = ["DSL101"]\noutput-format = "json"')
    quiet = _run("check", "src", cwd=project)
    assert quiet.returncode == 0 and json.loads(quiet.stdout) == []
    loud = _run("check", "src", "--select", "DSL101", "--output-format", "concise", cwd=project)
    assert loud.returncode == 1 and "DSL101" in loud.stdout and not loud.stdout.startswith("[")


def test_exclude_replaces_defaults_and_force_exclude(tmp_path: Path) -> None:
    project = _project(tmp_path, 'exclude = ["legacy"]')
    result = _run("check", ".", cwd=project)
    assert {line.split(":")[0] for line in result.stdout.splitlines()} == {"src/train.py"}
    named = _run("check", "src/legacy/old.py", cwd=project)
    assert named.returncode == 1, "a file named on the command line is checked"
    forced = _run("check", "--force-exclude", "src/legacy/old.py", cwd=project)
    assert forced.returncode == 0 and forced.stdout == ""


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ('extend_select = ["DSL1"]', "unknown key 'extend_select'; did you mean 'extend-select'?"),
        ('selct = ["DSL1"]', "did you mean 'select'?"),
        ('select = ["DSL9"]', "'DSL9' matches no rule code"),
        ('output-format = "jsno"', "did you mean 'json'?"),
        ("unsafe-fixes = 1", "expected true or false"),
    ],
)
def test_bad_settings_are_errors_with_hints(tmp_path: Path, table: str, needle: str) -> None:
    project = _project(tmp_path, table)
    result = _run("check", "src", cwd=project)
    assert result.returncode == 2
    assert needle in result.stderr


def test_nearest_pyproject_with_a_dslint_table(tmp_path: Path) -> None:
    project = _project(tmp_path, 'ignore = ["DSL1"]')
    (project / "src" / "pyproject.toml").write_text("[project]\nname = 'inner'\n", encoding="utf-8")
    resolver = SettingsResolver(Overrides(), cwd=project)
    settings = resolver.for_path(project / "src" / "train.py")
    assert settings.config_file == project / "pyproject.toml"
    assert not settings.selection_for(project / "src" / "train.py").enabled("DSL101")
    with pytest.raises(SettingsError):
        SettingsResolver(Overrides(select=("XYZ",)))


def test_layers_select_extend_and_ignore(tmp_path: Path) -> None:
    project = _project(tmp_path, 'select = ["DSL1"]\nignore = ["DSL102"]')
    path = project / "src" / "train.py"
    base = SettingsResolver(Overrides(), cwd=project).for_path(path)
    family = {code for code in CODES if code.startswith("DSL1")}
    assert base.enabled_codes(path) == family - {"DSL102"}
    cli = SettingsResolver(Overrides(extend_select=("DSL102",), ignore=("DSL103",)), cwd=project).for_path(path)
    assert cli.enabled_codes(path) == family - {"DSL103"}
    fresh = SettingsResolver(Overrides(select=("DSL0",)), cwd=project).for_path(path)
    assert fresh.enabled_codes(path) == {"DSL001", "DSL002", "DSL010"}


# -- noqa ----------------------------------------------------------------------------------------------------


def _found(text: str) -> list[tuple[int, str]]:
    return [(d.start.line, d.code) for d in lint_source("t.py", text.encode()).diagnostics]


LINE_17 = 'model = model.to("cuda")  # expect: DSL101'


@pytest.mark.parametrize(
    ("comment", "expected"),
    [
        ("# noqa", [(18, "DSL104")]),
        ("# NOQA:DSL101", [(18, "DSL104")]),
        ("# noqa: E501,DSL1", [(18, "DSL104")]),
        ("# noqa: E501", [(17, "DSL101"), (18, "DSL104")]),
        ("# noqa: DSL102", [(17, "DSL101"), (17, "DSL010"), (18, "DSL104")]),
        ("# noqa: DSL999", [(17, "DSL101"), (17, "DSL010"), (18, "DSL104")]),
        ("# noqa: DSL102, DSL010", [(17, "DSL101"), (18, "DSL104")]),
    ],
)
def test_line_noqa(comment: str, expected: list[tuple[int, str]]) -> None:
    text = BAD.replace(LINE_17, f'model = model.to("cuda")  {comment}')
    assert _found(text) == expected


def test_noqa_covers_a_multi_line_string_statement_like_flake8() -> None:
    text = BAD.replace(LINE_17, 'model = model.to("""cuda\n""")  # noqa: DSL101')
    assert _found(text) == [(19, "DSL104")]


def test_file_level_noqa() -> None:
    assert _found("# dslint: noqa\n" + BAD) == []
    assert _found("# dslint: noqa: DSL101\n" + BAD) == []
    assert _found("# dslint: noqa: DSL102\n" + BAD) == [(18, "DSL101"), (19, "DSL104")]


def test_unused_noqa_is_fixed_by_the_fixer() -> None:
    from dslint.fix.edits import fix_text

    text = BAD.replace("import torch", "import torch  # noqa: DSL101, F401")
    outcome = fix_text(text, lambda t: lint_source("t.py", t.encode()).diagnostics)
    assert "import torch  # noqa: F401\n" in outcome.text
    assert [d.code for d in outcome.applied] == ["DSL010"]


def test_unused_noqa_in_a_file_without_deepspeed() -> None:
    assert _found("x = 1  # noqa: DSL101\n") == [(1, "DSL010")]
    assert _found("x = 1  # noqa: DSL101\n# dslint: noqa\n") == []


def test_add_noqa_round_trip(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BAD.replace("\n", "\r\n"), encoding="utf-8")
    before = _run("check", "--isolated", "train.py", cwd=tmp_path)
    assert before.returncode == 1
    added = _run("check", "--isolated", "--add-noqa", "train.py", cwd=tmp_path)
    assert added.returncode == 0 and "Added 2 noqa comments to 1 file." in added.stderr
    text = (tmp_path / "train.py").read_bytes().decode()
    assert "  # expect: DSL101  # noqa: DSL101\r\n    model.half()" in text
    after = _run("check", "--isolated", "train.py", cwd=tmp_path)
    assert after.returncode == 0, after.stdout
    assert "2 silenced by noqa" in after.stderr


def test_add_noqa_writes_through_a_symlink(tmp_path: Path) -> None:
    """--add-noqa uses the fixer's writer: the link stays a link, its target gets the comments, the mode stays."""
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "train.py"
    target.write_text(BAD, encoding="utf-8")
    target.chmod(0o640)
    (tmp_path / "train.py").symlink_to(target)
    added = _run("check", "--isolated", "--add-noqa", "train.py", cwd=tmp_path)
    assert added.returncode == 0 and "Added 2 noqa comments to 1 file." in added.stderr, added.stderr
    assert (tmp_path / "train.py").is_symlink()
    assert "# noqa: DSL101" in target.read_text(encoding="utf-8")
    assert target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in (tmp_path / "real").iterdir()] == ["train.py"], "no temporary file is left behind"


def test_directories_above_the_project_root_do_not_exclude(tmp_path: Path) -> None:
    (tmp_path / "build" / "proj").mkdir(parents=True)
    project = _project(tmp_path / "build" / "proj", "extend-exclude = []")
    result = _run("check", "--force-exclude", str(project / "src" / "train.py"), cwd=project)
    assert result.returncode == 1, "'build' above the project root is not the project's build directory"


def test_an_excluded_directory_named_on_the_command_line_is_checked(tmp_path: Path) -> None:
    project = _project(tmp_path, 'extend-exclude = ["legacy"]')
    assert _run("check", "src/legacy", cwd=project).returncode == 1
    assert _run("check", "--force-exclude", "src/legacy", cwd=project).returncode == 0


def test_add_noqa_counts_lines_as_the_tokenizer_does_below_a_form_feed() -> None:
    from dslint.lint.suppression import add_noqa

    text = "import deepspeed\n\x0c\nmodel = Net()  # 分\u2028节\nmodel.cuda()\n"
    text += "engine, *_ = deepspeed.initialize(model=model)\n"
    found = lint_source("train.py", text.encode("utf-8")).diagnostics
    assert [(d.code, d.start.line) for d in found] == [("DSL101", 4)]
    updated, changed = add_noqa(text, found)
    assert changed == 1 and updated == text.replace("model.cuda()\n", "model.cuda()  # noqa: DSL101\n")
