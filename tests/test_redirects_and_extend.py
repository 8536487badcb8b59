"""Old codes through their redirects, the rule lifecycle, `extend` and `--config KEY=VALUE` (issue #25)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from dslint.framework.catalog import CODES, REDIRECTS, covers
from dslint.framework.registry import all_rules
from dslint.lint.script import lint_source
from dslint.selection import RuleSelection
from dslint.settings import Overrides, SettingsError, SettingsResolver, split_config_arguments
from dslint.settings_options import redirect_warnings, validate_codes

ROOT = Path(__file__).resolve().parents[1]

LOOP = textwrap.dedent(
    """\
    import deepspeed
    engine, optimizer, _, scheduler = deepspeed.initialize(model=model, config="ds.json")
    for batch in loader:
        optimizer.zero_grad(){zero}
        engine.backward(engine(batch))
        optimizer.step(){step}
        scheduler.step(){sched}
    """
)


def _loop(zero: str = "", step: str = "", sched: str = "") -> list[tuple[int, str]]:
    text = LOOP.format(zero=zero, step=step, sched=sched)
    return [(d.start.line, d.code) for d in lint_source("train.py", text.encode()).diagnostics]


def test_every_redirect_leads_to_rules_that_exist_and_old_codes_are_gone_or_split() -> None:
    codes = {rule.code for rule in all_rules()}
    for old, redirect in REDIRECTS.items():
        assert set(redirect.to) <= codes, old
        assert old not in codes or old in redirect.to, f"{old} is a rule and a redirect elsewhere"


def test_the_split_rules_report_one_code_per_problem() -> None:
    assert _loop() == [(4, "DSL309"), (6, "DSL302"), (7, "DSL310")]


def test_an_old_code_in_a_noqa_comment_covers_its_successors() -> None:
    assert _loop(zero="  # noqa: DSL302", sched="  # noqa: DSL302") == [(6, "DSL302")]
    # a code that no longer exists is not "no such rule" for DSL010 while it silences its successor
    assert covers("DSL415", "DSL210") and not covers("DSL415", "DSL410")


def test_old_codes_in_selectors_expand_with_one_warning() -> None:
    redirect_warnings()  # drop what earlier tests noted
    assert validate_codes(["DSL302"], "--ignore") == ("DSL302", "DSL309", "DSL310")
    assert validate_codes(["dsl415"], "--select") == ("DSL210",)
    assert validate_codes(["DSL302"], "ignore") == ("DSL302", "DSL309", "DSL310")
    warnings = redirect_warnings()
    assert len(warnings) == 2 and warnings[0].startswith("DSL302 is redirected to DSL302, DSL309, DSL310")
    assert redirect_warnings() == []  # once per run
    # a list that names a new code has moved on: the split code means only itself, and no warning
    assert validate_codes(["DSL302", "DSL310"], "--ignore") == ("DSL302", "DSL310")
    assert redirect_warnings() == []


def test_old_codes_keep_working_on_the_command_line_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(LOOP.format(zero="", step="", sched=""), encoding="utf-8")
    result = _run("check", "--no-cache", "--ignore", "DSL302", "--select", "DSL3,DSL415", ".", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr.count("warning: DSL302 is redirected") == 1
    assert result.stderr.count("warning: DSL415 is redirected to DSL210") == 1


def test_rules_lists_the_lifecycle_and_the_redirects(tmp_path: Path) -> None:
    out = _run("rules", cwd=tmp_path).stdout
    assert "LIFECYCLE" in out.splitlines()[0]
    assert any(line.startswith("DSL309 ") and " stable " in line for line in out.splitlines())
    assert "DSL415  redirected to DSL210" in out


def test_a_preview_rule_runs_only_with_preview(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dslint.framework import catalog

    monkeypatch.setitem(catalog.LIFECYCLE, "DSL103", catalog.PREVIEW)
    monkeypatch.setitem(catalog.LIFECYCLE, "DSL102", catalog.DEPRECATED)
    plain = SettingsResolver(Overrides(isolated=True), cwd=tmp_path).for_path(tmp_path)
    assert "DSL103" not in plain.enabled_codes() and "DSL102" not in plain.enabled_codes()
    preview = SettingsResolver(Overrides(isolated=True, config_keys=(("preview", True),)), cwd=tmp_path)
    assert "DSL103" in preview.for_path(tmp_path).enabled_codes()
    named = SettingsResolver(Overrides(isolated=True, extend_select=("DSL102",)), cwd=tmp_path)
    assert "DSL102" in named.for_path(tmp_path).enabled_codes()


# -- extend ------------------------------------------------------------------------------------------------------


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_extend_inherits_keys_layers_selection_and_rebases_patterns(tmp_path: Path) -> None:
    _write(
        tmp_path / "pyproject.toml",
        """\
        [tool.dslint]
        ignore = ["DSL1"]
        output-format = "json"
        unsafe-fixes = true
        extend-exclude = ["pkg/generated", "scratch"]
        per-file-ignores = { "pkg/tests/**" = ["DSL2"], "other/**" = ["DSL3"] }
        """,
    )
    child = _write(
        tmp_path / "pkg" / "pyproject.toml",
        """\
        [tool.dslint]
        extend = "../pyproject.toml"
        extend-select = ["DSL104"]
        unsafe-fixes = false
        """,
    )
    settings = SettingsResolver(cwd=tmp_path).for_path(child.parent / "train.py")
    assert settings.root == child.parent
    assert settings.output_format == "json" and settings.unsafe_fixes is False
    enabled = settings.enabled_codes()
    assert "DSL104" in enabled and "DSL101" not in enabled and "DSL201" in enabled
    assert settings.is_excluded(child.parent / "generated") and settings.is_excluded(child.parent / "a" / "scratch")
    assert not settings.is_excluded(child.parent / "pkg" / "generated")
    assert settings.project.per_file_ignores == (("/tests/**", ("DSL2",)),)
    assert settings.describe()["extend"] == [str(tmp_path / "pyproject.toml")]


def test_an_extend_cycle_and_a_missing_base_are_errors(tmp_path: Path) -> None:
    _write(tmp_path / "a" / "pyproject.toml", '[tool.dslint]\nextend = "../b/pyproject.toml"\n')
    _write(tmp_path / "b" / "pyproject.toml", '[tool.dslint]\nextend = "../a/pyproject.toml"\n')
    with pytest.raises(SettingsError, match="a cycle"):
        SettingsResolver(cwd=tmp_path).for_path(tmp_path / "a" / "train.py")
    _write(tmp_path / "c" / "pyproject.toml", '[tool.dslint]\nextend = "nowhere.toml"\n')
    with pytest.raises(SettingsError, match="no such file"):
        SettingsResolver(cwd=tmp_path).for_path(tmp_path / "c" / "train.py")


# -- --config ----------------------------------------------------------------------------------------------------


def test_config_key_value_overrides_one_key_validated_like_the_file(tmp_path: Path) -> None:
    settings_file = _write(tmp_path / "pyproject.toml", '[tool.dslint]\noutput-format = "json"\n')
    file, keys = split_config_arguments((str(settings_file), 'output-format = "github"', "unsafe-fixes=true"))
    assert file == settings_file and keys == (("output-format", "github"), ("unsafe-fixes", True))
    settings = SettingsResolver(Overrides(config_file=file, config_keys=keys), cwd=tmp_path).for_path(tmp_path)
    assert settings.output_format == "github" and settings.unsafe_fixes
    with pytest.raises(SettingsError, match="unknown format"):
        SettingsResolver(Overrides(config_keys=(("output-format", "jsn"),)), cwd=tmp_path)
    with pytest.raises(SettingsError, match="unknown key 'ignor'"):
        SettingsResolver(Overrides(config_keys=(("ignor", ["DSL1"]),)), cwd=tmp_path)
    with pytest.raises(SettingsError, match="neither a file nor a KEY = VALUE"):
        split_config_arguments(("output-format = json",))


def test_config_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(LOOP.format(zero="", step="", sched=""), encoding="utf-8")
    quiet = _run("check", "--no-cache", "--config", 'ignore = ["DSL3"]', ".", cwd=tmp_path)
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    bad = _run("check", "--no-cache", "--config", "max-nesting = 3", ".", cwd=tmp_path)
    assert bad.returncode == 2 and "--config.max-nesting: expected a whole number" in bad.stderr


# -- the benchmark's manifests name old codes --------------------------------------------------------------------


def _measure_module() -> types.ModuleType:
    """benchmarks/realcode/measure.py, imported as the script it is (not a package module)."""
    spec = importlib.util.spec_from_file_location("measure", ROOT / "benchmarks" / "realcode" / "measure.py")
    assert spec is not None and spec.loader is not None
    measure = importlib.util.module_from_spec(spec)
    sys.modules["measure"] = measure
    spec.loader.exec_module(measure)
    return measure


def test_measure_finds_a_row_of_an_old_code_by_its_successors() -> None:
    measure = _measure_module()
    row = measure.Row("o/r", "c", "t.py", 4, 4, "DSL302", "flag", 0, "zero_grad beside the engine")
    findings = {("o/r", "c"): [measure.Finding("t.py", 4, "DSL309")]}
    assert measure.measure([row], findings)["overall"].found == 0
    redirects = measure.read_redirects(ROOT)
    assert redirects["DSL302"] == ("DSL302", "DSL309", "DSL310")
    tallies = measure.measure([row], findings, redirects)
    assert tallies["overall"].found == 1 and tallies["overall"].unlabelled == 0


def test_measure_shows_a_new_row_a_finding_lands_on_without_counting_it() -> None:
    measure = _measure_module()
    rows = [
        measure.Row("o/r", "c", "t.py", 4, 6, "NEW", "flag", 0, "NEW: a plain loader on every rank"),
        measure.Row("o/r", "c", "t.py", 9, 9, "NEW", "flag", 0, "NEW: something else"),
    ]
    findings = {("o/r", "c"): [measure.Finding("t.py", 5, "DSL445")]}
    tallies = measure.measure(rows, findings)
    assert tallies["overall"].found == 0 and tallies["NEW"].found == 0
    assert [(row.first, codes) for row, codes in tallies["NEW"].reached] == [(4, "DSL445")]


def test_measure_counts_a_finding_whose_related_location_is_the_row() -> None:
    """A helper's load reported at the call that runs it (the helper as related location) finds a row on the
    helper; the same holds for a clean row (a false alarm), and a related location elsewhere finds nothing."""
    measure = _measure_module()
    flag = measure.Row("o/r", "c", "helpers.py", 14, 16, "DSL208", "flag", 2, "from_pretrained before the arguments")
    clean = measure.Row("o/r", "c", "other.py", 3, 3, "DSL208", "clean", 2, "an HfDeepSpeedConfig is kept first")
    at_call = measure.Finding("train.py", 40, "DSL208", (("helpers.py", 15),))
    tallies = measure.measure([flag, clean], {("o/r", "c"): [at_call]})
    assert tallies["overall"].found == 1 and tallies["overall"].false_alarms == 0
    assert tallies["overall"].unlabelled == 0  # its related location is labelled: not an unread finding
    elsewhere = measure.Finding("train.py", 40, "DSL208", (("helpers.py", 30), ("other.py", 3)))
    tallies = measure.measure([flag, clean], {("o/r", "c"): [elsewhere]})
    assert tallies["overall"].found == 0 and tallies["overall"].false_alarms == 1
    other_code = measure.Finding("train.py", 40, "DSL435", (("helpers.py", 15),))
    assert measure.measure([flag], {("o/r", "c"): [other_code]})["overall"].found == 0


def test_a_selection_of_new_codes_is_unchanged() -> None:
    assert RuleSelection.from_options(["DSL309"]).enabled("DSL309")
    assert all(code in CODES for code in ("DSL104", "DSL210", "DSL309", "DSL310"))


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSLINT_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "dslint", *args], cwd=cwd, capture_output=True, text=True, env=env)
