"""The output formats CI systems and tools read: json-lines, pylint, azure, gitlab (Code Quality), junit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from dslint.diagnostics import Applicability, Diagnostic, Edit, Fix, Location, Severity
from dslint.report import FORMATS, renderer
from dslint.report.context import ReportContext
from dslint.settings import OUTPUT_FORMATS

ROOT = Path(__file__).resolve().parent.parent


def _finding(
    path: str = "train.py", line: int = 5, code: str = "DSL101", message: str = "model moved", **extra: object
) -> Diagnostic:
    found = Diagnostic(code, "slug", message, Severity.WARNING, path, Location(line, 3), Location(line, 9))
    return replace(found, **extra)  # type: ignore[arg-type]


def _render(name: str, *diagnostics: Diagnostic, context: ReportContext | None = None) -> str:
    return renderer(name)(list(diagnostics), context or ReportContext(cwd=ROOT))


def test_json_lines_is_the_json_format_one_object_a_line() -> None:
    found = [_finding(), _finding("nb.ipynb", 2, cell=3), _finding(message="two\nlines")]
    lines = _render("json-lines", *found).splitlines()
    assert [json.loads(line) for line in lines] == json.loads(_render("json", *found))
    assert len(lines) == 3 and json.loads(lines[1])["cell"] == 3


def test_pylint_lines() -> None:
    text = _render("pylint", _finding(), _finding("nb.ipynb", 2, "DSL301", "a\nb", cell=4))
    assert text == "train.py:5: [DSL101] model moved\nnb.ipynb:cell 4:2: [DSL301] a b\n"


def test_azure_logging_commands_are_escaped() -> None:
    hostile = _finding("a;b]c.py", 7, message="100% sure\n##vso[task.complete result=Succeeded;]done")
    (line,) = _render("azure", hostile).splitlines()
    head, message = line.split("]", 1)
    assert head == ("##vso[task.logissue type=warning;sourcepath=a%3Bb%5Dc.py;linenumber=7;columnnumber=3;code=DSL101;")
    assert message == "DSL101 100%AZP25 sure%0A##vso[task.complete result=Succeeded;]done"
    info = _render("azure", replace(_finding(), severity=Severity.INFO))
    assert info.startswith("##vso[task.logissue type=warning;")  # Azure has no info issue


def test_gitlab_code_quality_fingerprints_survive_moved_lines(tmp_path: Path) -> None:
    first = _finding(str(tmp_path / "src" / "train.py"), 5)
    same_again = _finding(str(tmp_path / "src" / "train.py"), 9)
    error = replace(_finding("cfg.json", 2, "DSL401"), severity=Severity.ERROR)
    report = json.loads(_render("gitlab", first, same_again, error, context=ReportContext(cwd=tmp_path)))
    assert [entry["location"] for entry in report] == [
        {"path": "src/train.py", "lines": {"begin": 5, "end": 5}},
        {"path": "src/train.py", "lines": {"begin": 9, "end": 9}},
        {"path": "cfg.json", "lines": {"begin": 2, "end": 2}},
    ]
    assert [entry["severity"] for entry in report] == ["minor", "minor", "major"]
    assert len({entry["fingerprint"] for entry in report}) == 3, "the same finding twice: two fingerprints"
    shifted = json.loads(
        _render(
            "gitlab", replace(first, start=Location(50, 3), end=Location(50, 9)), context=ReportContext(cwd=tmp_path)
        )
    )
    assert shifted[0]["fingerprint"] == report[0]["fingerprint"]
    assert report[0]["check_name"] == "DSL101" and report[0]["description"] == "DSL101 model moved"


def test_junit_counts_findings_and_files_not_checked() -> None:
    hostile = _finding("x<&>.py", message="bad \x01 byte & <tag>")
    context = ReportContext(cwd=ROOT, failures=[("gone.py", "no such file or directory")])
    root = ET.fromstring(_render("junit", _finding(), _finding(line=8), hostile, context=context))
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "3", "1")
    suites = {suite.get("name"): suite for suite in root.iter("testsuite")}
    assert set(suites) == {"train.py", "x<&>.py", "not checked"}
    cases = suites["train.py"].findall("testcase")
    assert [(c.get("name"), c.get("line")) for c in cases] == [("dslint.DSL101", "5"), ("dslint.DSL101", "8")]
    failure = suites["x<&>.py"].find("testcase/failure")
    assert failure is not None and failure.get("message") == "bad \ufffd byte & <tag>"
    error = suites["not checked"].find("testcase/error")
    assert error is not None and error.get("message") == "no such file or directory"
    clean = ET.fromstring(_render("junit"))
    assert (clean.get("tests"), clean.get("failures")) == ("1", "0")


def test_every_format_is_accepted_by_the_command_line_and_the_pyproject(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "import deepspeed\nmodel = Net()\nmodel.cuda()\nengine, *_ = deepspeed.initialize(model=model)\n", "utf-8"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSLINT_")}
    env["PYTHONPATH"] = str(ROOT)
    base = [sys.executable, "-m", "dslint", "check", "--no-cache", "-q"]
    assert OUTPUT_FORMATS == FORMATS, "every format the renderer knows is one the command line and pyproject take"
    for name in ("json-lines", "pylint", "azure", "gitlab", "junit", "markdown", "grouped", "rdjson"):
        done = subprocess.run(
            [*base, "--output-format", name, "."], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert done.returncode == 1 and "DSL101" in done.stdout, (name, done.stderr)
    (tmp_path / "pyproject.toml").write_text('[tool.dslint]\noutput-format = "pylint"\n', encoding="utf-8")
    done = subprocess.run([*base, "."], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.stdout.startswith("train.py:3: [DSL101] "), done.stderr


def test_markdown_rows_cannot_break_the_table() -> None:
    hostile = _finding("a|b.py", message="x | y <script>\n| z |")
    text = _render("markdown", _finding(), hostile)
    lines = text.splitlines()
    assert lines[0] == "### dslint: 2 findings in 2 files"
    assert "| DSL101 | slug | 2 |" in lines
    assert "| warning | DSL101 | a&#124;b.py:5:3 | x &#124; y &lt;script&gt; &#124; z &#124; |" in lines
    assert all(line.count("|") in (0, 4, 5) for line in lines)
    assert _render("markdown").splitlines()[0] == "### dslint: 0 findings in 0 files"


def test_grouped_lists_each_files_findings_under_its_name() -> None:
    text = _render("grouped", _finding(), _finding(line=8, message="two\nlines"), _finding("nb.ipynb", 2, cell=3))
    assert text == (
        "train.py:\n  5:3 DSL101 [warning] model moved\n  8:3 DSL101 [warning] two lines\n"
        "\nnb.ipynb:\n  cell 3:2:3 DSL101 [warning] model moved\n"
    )


def test_rdjson_for_reviewdog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSLINT_DOCS_URL", "https://example.com/dslint/blob/v1/README.md")
    fix = Fix((Edit(Location(5, 1), Location(6, 1), ""),), Applicability.SAFE, "remove it")
    document = json.loads(_render("rdjson", replace(_finding(), fix=fix), _finding("nb.ipynb", 2, cell=3, fix=fix)))
    assert document["source"] == {"name": "dslint"} and document["severity"] == "WARNING"
    first, cell = document["diagnostics"]
    assert first["location"] == {
        "path": "train.py",
        "range": {"start": {"line": 5, "column": 3}, "end": {"line": 5, "column": 9}},
    }
    assert first["code"] == {
        "value": "DSL101",
        "url": "https://example.com/dslint/blob/v1/dslint/rules/pages/DSL101.md",
    }
    assert first["suggestions"] == [
        {"range": {"start": {"line": 5, "column": 1}, "end": {"line": 6, "column": 1}}, "text": ""}
    ]
    assert cell["message"] == "cell 3: model moved" and "suggestions" not in cell


def test_json_has_ruffs_row_url_and_noqa_row(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text('x = f(\n    1,\n)\ny = """a\nb"""\n', encoding="utf-8")
    strict, hjson = tmp_path / "ds.json", tmp_path / "ds.hjson"
    strict.write_text('{"a": 1}\n', encoding="utf-8")
    hjson.write_text('{"a": 1}\n', encoding="utf-8")
    found = [
        _finding(str(script), 1),
        _finding(str(script), 4),  # in a string that spans lines 4-5: the comment goes after it
        _finding(str(strict), 1, "DSL401"),
        _finding(str(hjson), 1, "DSL401"),
        _finding(str(tmp_path / "nb.ipynb"), 2, cell=1),
    ]
    entries = json.loads(_render("json", *found, context=ReportContext(cwd=tmp_path)))
    assert [e["noqa_row"] for e in entries] == [1, 5, None, 1, None]
    assert entries[0]["location"] == {"line": 1, "row": 1, "column": 3}
    assert entries[0]["url"].endswith("/dslint/rules/pages/DSL101.md")
