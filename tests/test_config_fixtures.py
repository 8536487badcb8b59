"""Fixture configs (fixtures/configs): what `dslint check` finds in each, pinned in fixtures/configs/expected.txt.

The directory is checked the way the CLI checks it (discovery by name and content, then linting), so the pinned
list also proves that a JSON file that is not a DeepSpeed config is not reported, and that a config file a script
points at is checked as a config that goes to `deepspeed.initialize` (`"auto"` there is an error; in a file
alone, whose reader is not known, it is not reported: good/ds_config_auto_reader_unknown.json).
Regenerate after an intended change with `DSLINT_UPDATE_EXPECTED=1 python -m pytest tests/test_config_fixtures.py`.
"""

from __future__ import annotations

import os
from pathlib import Path

from dslint.lint.batch import FileFailure, lint_files
from dslint.lint.files import discover
from dslint.settings import SettingsResolver

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "fixtures" / "configs"
EXPECTED = CONFIGS / "expected.txt"


def _findings() -> list[str]:
    discovery = discover([str(CONFIGS)])
    assert not discovery.errors
    lines: set[str] = set()
    resolver = SettingsResolver()  # each file judged against the DeepSpeed its directory pins (pinned-0.14/)
    items = [(path, resolver.for_path(path).selection_for(path)) for path in discovery.files]
    for result in lint_files(items, jobs=1):
        assert not isinstance(result, FileFailure), result.message
        for d in result.diagnostics:
            path = Path(d.path).resolve().relative_to(CONFIGS).as_posix()
            lines.add(f"{path}:{d.start.line}:{d.start.column}: {d.code} {d.severity.value}")
    return sorted(lines)


def test_config_fixtures_match_expected() -> None:
    found = _findings()
    if os.environ.get("DSLINT_UPDATE_EXPECTED"):
        EXPECTED.write_text("\n".join(found) + "\n", encoding="utf-8")
    assert found == EXPECTED.read_text(encoding="utf-8").splitlines()


def test_every_bad_config_has_a_finding_and_every_good_one_none() -> None:
    found = _findings()
    for path in sorted((CONFIGS / "bad").glob("*.json")):
        name = path.relative_to(CONFIGS).as_posix()
        assert any(line.startswith(name + ":") for line in found), name
    assert not [line for line in found if line.startswith("good/")]


def test_every_config_rule_has_a_bad_fixture() -> None:
    from dslint.framework.config_rule import ConfigRule
    from dslint.framework.registry import all_rules

    codes = {line.split()[1] for line in _findings()}
    missing = [r.code for r in all_rules() if issubclass(r, ConfigRule) and r.code not in codes]
    assert not missing, missing


def test_good_non_deepspeed_json_is_not_even_discovered() -> None:
    files = {p.name for p in discover([str(CONFIGS)]).files}
    assert "training_settings.json" not in files
    assert "ds_config_zero3_offload.json" in files
