"""`[tool.dslint]` keys declared once (dslint.settings_options): the README table, the parser, the validation
messages and `dslint settings` all come from `OPTIONS`."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dslint.cli import main
from dslint.limits import Limits
from dslint.settings import Overrides, Settings, SettingsError
from dslint.settings_options import KEYS, OPTIONS, ProjectConfig, parse_table, replace_block

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")

# A value of the wrong kind for each key, and one it accepts with what it becomes.
WRONG: dict[str, object] = {
    "extend": 3,
    "select": "DSL1",
    "extend-select": [1],
    "ignore": ["XYZ"],
    "per-file-ignores": ["tests/**"],
    "preview": "yes",
    "exclude": ["[z-a]"],
    "extend-exclude": "vendored",
    "unsafe-fixes": 1,
    "output-format": "xml",
    "max-file-size": "lots",
    "max-nesting": 5,
    "max-config-size": 0,
    "deepspeed-version": 14,
}
RIGHT: dict[str, tuple[object, object]] = {
    "extend": ("../base/pyproject.toml", "../base/pyproject.toml"),
    "select": (["dsl1"], ("DSL1",)),
    "extend-select": (["DSL2"], ("DSL2",)),
    "ignore": (["DSL103"], ("DSL103",)),
    "per-file-ignores": ({"tests/**": ["DSL1"]}, (("tests/**", ("DSL1",)),)),
    "preview": (True, True),
    "exclude": (["legacy"], ("legacy",)),
    "extend-exclude": (["vendored"], ("vendored",)),
    "unsafe-fixes": (True, True),
    "output-format": ("json", "json"),
    "max-file-size": ("2 kB", 2048),
    "max-nesting": (300, 300),
    "max-config-size": (4096, 4096),
    "deepspeed-version": ("0.14", "0.14.0"),
}


def test_readme_settings_table_matches_the_options() -> None:
    assert replace_block(README) == README, "run `python -m dslint.settings_options --write`"


def test_readme_settings_example_is_a_valid_table() -> None:
    section = README.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    example = re.findall(r"```toml\n(.*?)```", section, flags=re.S)
    assert len(example) == 1
    table = tomllib.loads(example[0])["tool"]["dslint"]
    assert set(table) <= set(KEYS)
    parse_table(table, None)


def test_every_key_is_one_field_and_covered_here() -> None:
    fields = [item.name for item in dataclasses.fields(ProjectConfig) if item.name not in ("path", "keys", "base")]
    assert [item.attribute for item in OPTIONS] == fields
    assert list(KEYS) == list(WRONG) == list(RIGHT)


@pytest.mark.parametrize("key", KEYS)
def test_each_key_rejects_a_wrong_value_naming_the_file(key: str) -> None:
    with pytest.raises(SettingsError) as error:
        parse_table({key: WRONG[key]}, Path("/p/pyproject.toml"))
    message = str(error.value)
    assert message.startswith("/p/pyproject.toml: [tool.dslint]")
    wrong = WRONG[key]
    needles = [repr(wrong), *([repr(wrong[0])] if isinstance(wrong, list) else [])]
    assert any(needle in message for needle in needles), message


@pytest.mark.parametrize("key", KEYS)
def test_each_key_sets_its_field_and_nothing_else(key: str) -> None:
    raw, expected = RIGHT[key]
    config = parse_table({key: raw}, None)
    attribute = key.replace("-", "_")
    got = getattr(config, attribute)
    assert (str(got) if key == "deepspeed-version" else got) == expected
    assert dataclasses.replace(config, **{attribute: getattr(ProjectConfig(), attribute)}) == ProjectConfig()


def test_unknown_key_suggests_the_nearest() -> None:
    with pytest.raises(SettingsError, match="unknown key 'max_nesting'; did you mean 'max-nesting'"):
        parse_table({"max_nesting": 300}, None)


def test_limits_come_from_the_three_size_keys() -> None:
    config = parse_table({"max-file-size": "2 MB", "max-nesting": 50, "max-config-size": 1000}, None)
    assert config.limits == Limits(2 * 1024 * 1024, 50, 1000)
    assert ProjectConfig().limits == Limits()


def test_describe_shows_every_key_in_order(tmp_path: Path) -> None:
    table = {key: RIGHT[key][0] for key in KEYS}
    settings = Settings(
        root=tmp_path, project=parse_table(table, None), overrides=Overrides(select=("DSL2",), unsafe_fixes=False)
    )
    shown = settings.describe()
    expected = ["config-file", "root", "extend", "select", "extend-select", "ignore", "command-line"]
    expected += [
        "per-file-ignores",
        "preview",
        "exclude",
        "unsafe-fixes",
        "output-format",
        "max-file-size",
        "max-nesting",
        "max-config-size",
    ]
    assert list(shown) == [*expected, "deepspeed-version"]
    assert shown["command-line"] == {"select": ["DSL2"], "extend-select": [], "ignore": []}
    assert shown["exclude"] == ["legacy", "vendored"]
    assert shown["unsafe-fixes"] is False  # the command line wins
    assert shown["max-file-size"] == "2.0 kB" and shown["max-nesting"] == 300
    assert str(shown["deepspeed-version"]).startswith("0.14.0 from ")


def test_settings_command_prints_what_the_pyproject_says(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.dslint]\nextend-exclude = ["vendored"]\nmax-nesting = 300\noutput-format = "json"\n', encoding="utf-8"
    )
    result = CliRunner().invoke(main, ["settings", str(tmp_path), "--format", "json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert shown["max-nesting"] == 300 and shown["output-format"] == "json"
    assert shown["exclude"][-1] == "vendored" and ".git" in shown["exclude"]
    assert "extend-exclude" not in shown
