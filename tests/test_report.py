"""Every output format against its consumer: the SARIF 2.1.0 schema, GitHub's command parser, JSON, the CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_profiles import examples

from dslint.diagnostics import Applicability, Diagnostic, Edit, Fix, Location, Severity, printable
from dslint.report import renderer
from dslint.report.context import ReportContext
from dslint.report.github import annotation

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
BAD = ROOT / "fixtures" / "fix" / "model_moved_before_initialize.in.py"


def _diagnostic(path: str = "train.py", message: str = "move it", fix: bool = True) -> Diagnostic:
    edit = Edit(Location(2, 1), Location(3, 1), "")
    return Diagnostic(
        code="DSL101",
        slug="model-moved-before-initialize",
        message=message,
        severity=Severity.WARNING,
        path=path,
        start=Location(2, 5),
        end=Location(2, 17),
        fix=Fix((edit,), Applicability.UNSAFE, "remove the move") if fix else None,
    )


def _check(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "DSLINT_OUTPUT_FORMAT"}
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "dslint", "check", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**environment, "PYTHONPATH": str(ROOT)},
        check=False,
    )


# -- SARIF ---------------------------------------------------------------------------------------------------


def test_sarif_from_the_cli_validates_against_the_official_schema(tmp_path: Path) -> None:
    out = tmp_path / "report.sarif"
    result = _check("--isolated", "--output-format", "sarif", "-o", str(out), str(BAD))
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    document = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(SCHEMA).validate(document)
    run = document["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert {r["id"] for r in rules} >= {"DSL101", "DSL010"}
    dsl101 = next(r for r in rules if r["id"] == "DSL101")
    assert "## Why is this bad?" in dsl101["help"]["markdown"]
    results = run["results"]
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results] == [
        ("DSL101", 17),
        ("DSL104", 18),
    ]
    assert rules[results[0]["ruleIndex"]]["id"] == "DSL101"
    location = results[0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "fixtures/fix/model_moved_before_initialize.in.py", "uriBaseId": "%SRCROOT%"}
    assert results[0]["fixes"][0]["artifactChanges"][0]["replacements"]


def test_sarif_lists_files_it_could_not_check_as_tool_execution_notifications(tmp_path: Path) -> None:
    (tmp_path / "broken.ipynb").write_text("{not json", encoding="utf-8")
    out = tmp_path / "report.sarif"
    result = _check(
        "--isolated", "--output-format", "sarif", "-o", str(out), "broken.ipynb", "missing.py", str(BAD), cwd=tmp_path
    )
    assert result.returncode == 2
    document = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(SCHEMA).validate(document)
    [invocation] = document["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    notes = invocation["toolExecutionNotifications"]
    assert [(n["level"], n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]) for n in notes] == [
        ("error", "missing.py"),
        ("error", "broken.ipynb"),
    ]
    assert notes[1]["message"]["text"].startswith("broken.ipynb: not a notebook: invalid JSON at line 1, column 2")
    assert len(document["runs"][0]["results"]) == 2, "the files that were checked are still reported"
    clean = _check("--isolated", "--output-format", "sarif", str(BAD))
    assert json.loads(clean.stdout)["runs"][0]["invocations"] == [
        {"executionSuccessful": True, "toolExecutionNotifications": []}
    ]


def test_sarif_help_uri_and_odd_paths_validate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSLINT_DOCS_URL", "https://github.com/example/dslint/blob/v1/README.md")
    diagnostics = [
        _diagnostic(path=str(tmp_path / "dir with space" / "tr%ain,1.py")),
        _diagnostic(path="/elsewhere/x.py", fix=False),
    ]
    text = renderer("sarif")(diagnostics, ReportContext(cwd=tmp_path))
    document = json.loads(text)
    jsonschema.Draft4Validator(SCHEMA).validate(document)
    rules = document["runs"][0]["tool"]["driver"]["rules"]
    # each rule's own page, beside the README (dslint/rules/pages/CODE.md: `python -m dslint.framework.rule_pages`)
    assert [rule["helpUri"] for rule in rules] == [
        f"https://github.com/example/dslint/blob/v1/dslint/rules/pages/{rule['id']}.md" for rule in rules
    ]
    assert all((ROOT / "dslint" / "rules" / "pages" / f"{rule['id']}.md").is_file() for rule in rules)
    first, second = document["runs"][0]["results"]
    assert first["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "dir%20with%20space/tr%25ain%2C1.py"
    assert second["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "file:///elsewhere/x.py"


def test_sarif_schema_rejects_a_broken_document() -> None:
    """The vendored schema is really checking: a result without a message is invalid."""
    document = json.loads(renderer("sarif")([_diagnostic()], ReportContext()))
    del document["runs"][0]["results"][0]["message"]
    validator = jsonschema.Draft4Validator(SCHEMA)
    assert not validator.is_valid(document)


# -- GitHub workflow commands ---------------------------------------------------------------------------------


def _unescape_data(value: str) -> str:
    # actions/runner ActionCommand.UnescapeValue for the message: %0D, %0A, then %25
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def _unescape_property(value: str) -> str:
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def parse_workflow_commands(output: str) -> list[tuple[str, dict[str, str], str]]:
    """How GitHub's runner reads a log (ActionCommand.TryParseV2): every line that starts with `::` is a command
    `::name key=value,key=value::data`; properties split on ',' and the first '='."""
    commands = []
    for line in re.split(r"\r\n|\r|\n", output):  # .NET ReadLine: only CR and LF end a line
        if not line.startswith("::"):
            continue
        end = line.index("::", 2)
        head, data = line[2:end], line[end + 2 :]
        name, _, raw_properties = head.partition(" ")
        properties = {}
        for pair in raw_properties.split(","):
            if pair:
                key, _, value = pair.partition("=")
                properties[key] = _unescape_property(value)
        commands.append((name, properties, _unescape_data(data)))
    return commands


@settings(max_examples=examples(150))
@given(path=st.text(min_size=1, max_size=30), message=st.text(max_size=60))
def test_github_annotations_survive_any_path_and_message(path: str, message: str) -> None:
    line = annotation(_diagnostic(path=path, message=message))
    assert "\n" not in line and "\r" not in line
    [(name, properties, data)] = parse_workflow_commands(line)
    assert name == "warning"
    assert properties["file"] == printable(path.replace("\\", "/"), keep="\r\n")  # ESC and the like: escaped
    assert properties["line"] == "2" and properties["col"] == "5"
    assert properties["endLine"] == "2" and properties["endColumn"] == "17"
    assert properties["title"] == "DSL101 (model-moved-before-initialize)"
    assert data == "DSL101 " + printable(message, keep="\r\n")


def test_github_escapes_known_injections() -> None:
    line = annotation(_diagnostic(path="a,line=99:b.py", message="50%\n::error::injected\r\nx"))
    assert line == (
        "::warning file=a%2Cline=99%3Ab.py,line=2,col=5,endLine=2,endColumn=17,"
        "title=DSL101 (model-moved-before-initialize)::DSL101 50%25%0A::error::injected%0D%0Ax"
    )
    assert len(parse_workflow_commands(line)) == 1


def test_github_format_from_the_cli_and_env() -> None:
    result = _check("--isolated", str(BAD), env={"DSLINT_OUTPUT_FORMAT": "github"})
    commands = parse_workflow_commands(result.stdout)
    assert [(c[0], c[1]["line"], c[1]["col"]) for c in commands] == [("warning", "17", "13"), ("warning", "18", "5")]
    assert "Found 2 findings" in result.stderr


# -- JSON, full, concise -------------------------------------------------------------------------------------------


def test_json_has_every_field() -> None:
    result = _check("--isolated", "--output-format", "json", str(BAD))
    data = json.loads(result.stdout)
    assert len(data) == 2
    first = data[0]
    assert set(first) == {
        "code",
        "slug",
        "message",
        "severity",
        "filename",
        "location",
        "end_location",
        "related",
        "fix",
        "url",
        "noqa_row",
    }
    assert first["location"] == {"line": 17, "row": 17, "column": 13}
    assert first["end_location"] == {"line": 17, "row": 17, "column": 29}
    assert first["noqa_row"] == 17 and first["url"].endswith("/dslint/rules/pages/DSL101.md")
    assert first["fix"]["applicability"] == "unsafe"
    edit = first["fix"]["edits"][0]
    assert set(edit) == {"content", "location", "end_location"}


def test_full_shows_source_caret_and_diff() -> None:
    result = _check("--isolated", "--output-format", "full", str(BAD))
    lines = result.stdout.splitlines()
    index = lines.index('17 |     model = model.to("cuda")  # expect: DSL101')
    assert lines[index + 1] == "   |             " + "^" * 16 + " DSL101"
    assert '    -    model = model.to("cuda")  # expect: DSL101' in lines
    assert "unsafe fix" in result.stdout


def test_concise_is_the_default_and_quiet_drops_the_summary() -> None:
    result = _check("--isolated", "-q", str(BAD), env={})
    assert result.stdout.splitlines()[0].startswith(f"{BAD}:17:13: DSL101 ")
    assert result.stderr == ""


def test_output_file_is_written(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = _check("--isolated", "--output-format", "json", "--output-file", str(out), str(BAD))
    assert result.stdout == ""
    assert len(json.loads(out.read_text(encoding="utf-8"))) == 2


def test_github_paths_are_relative_to_the_workspace(tmp_path: Path) -> None:
    inside = annotation(_diagnostic(path=str(tmp_path / "src" / "train.py")), tmp_path)
    outside = annotation(_diagnostic(path="/elsewhere/train.py"), tmp_path)
    assert parse_workflow_commands(inside)[0][1]["file"] == "src/train.py"
    assert parse_workflow_commands(outside)[0][1]["file"] == "/elsewhere/train.py"


def test_related_locations_in_sarif_json_and_full(tmp_path: Path) -> None:
    """A finding whose facts come from elsewhere (a launcher, a config) carries them as related locations."""
    project = ROOT / "fixtures" / "projects" / "launchers"
    out = tmp_path / "report.sarif"
    result = _check("--isolated", "--output-format", "sarif", "-o", str(out), str(project))
    assert result.returncode == 1, result.stderr
    document = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(SCHEMA).validate(document)
    (dsl204,) = [r for r in document["runs"][0]["results"] if r["ruleId"] == "DSL204"]
    related = [
        (
            r["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[-1],
            r["physicalLocation"]["region"]["startLine"],
        )
        for r in dsl204["relatedLocations"]
    ]
    assert related == [("Makefile", 4), ("Makefile", 4), ("run_z3.sh", 6), ("run_z3.sh", 8), ("ds_z3.json", 3)]
    data = json.loads(_check("--isolated", "--output-format", "json", str(project)).stdout)
    (finding,) = [d for d in data if d["code"] == "DSL204"]
    assert finding["related"][3]["message"] == "--deepspeed_config configs/ds_z3.json"
    full = _check("--isolated", "--output-format", "full", str(project)).stdout
    assert "= from fixtures/projects/launchers/scripts/run_z3.sh:8:" in full
