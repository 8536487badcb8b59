"""Fixture projects (fixtures/projects/<name>/): `dslint check` over the whole folder, with the project index.

Every `# expect: CODE` marker in the project's Python files is found, and nothing else is; findings in other
files (configs) are pinned in the project's expected.txt as `relative/path:line:column: CODE`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fixture_support import FIXTURES, expected_markers

from dslint.lint.batch import index_project, lint_files
from dslint.lint.document_configs import document_results
from dslint.lint.files import discover
from dslint.lint.launcher import launcher_results
from dslint.lint.result import FileResult as ScriptResult
from dslint.project.config_access import set_checked_roots
from dslint.selection import RuleSelection
from dslint.settings import SettingsResolver

PROJECTS = sorted(p for p in (FIXTURES / "projects").iterdir() if p.is_dir())


def _check(project: Path) -> list[tuple[str, int, int, str]]:
    set_checked_roots([str(project)])  # as `dslint check PROJECT` does: the project is the folder checked
    files = discover([str(project)]).files
    index = index_project(files, [str(project)])
    resolver = SettingsResolver()  # each file judged against the DeepSpeed its project pins, as `dslint check`
    results = lint_files([(f, resolver.for_path(f).selection_for(f)) for f in files], jobs=1, project=index)
    results += launcher_results(
        index.launch_issues, lambda p: resolver.for_path(p).selection_for(p), lambda p: Path(p).read_text("utf-8")
    )
    results += document_results(  # the DeepSpeed configs written out in its documents
        index.document_configs,
        index.document_reading,
        lambda p: resolver.for_path(p).selection_for(p),
        lambda p: Path(p).read_text("utf-8"),
    )
    found: set[tuple[str, int, int, str]] = set()
    for result in results:
        assert isinstance(result, ScriptResult), result
        for d in result.diagnostics:
            relative = os.path.relpath(os.path.abspath(d.path), project)
            found.add((relative, d.start.line, d.start.column, d.code))
    return sorted(found)


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
def test_project_findings_match_markers(project: Path) -> None:
    found = _check(project)
    python = sorted((path, line, code) for path, line, _, code in found if path.endswith(".py"))
    expected = sorted(
        (str(p.relative_to(project)), line, code)
        for p in project.rglob("*.py")
        for line, code in expected_markers(p.read_text(encoding="utf-8"))
    )
    assert python == expected
    others = sorted(f"{path}:{line}:{column}: {code}" for path, line, column, code in found if not path.endswith(".py"))
    pinned = (project / "expected.txt").read_text(encoding="utf-8").split()
    assert others == sorted(" ".join(pinned[i : i + 2]) for i in range(0, len(pinned), 2))


def test_a_finding_names_the_launchers_and_config_it_depends_on() -> None:
    """train.py runs with ZeRO-2 (scripts/run_z2.sh) and ZeRO-3 (scripts/run_z3.sh, the Makefile's train-z3):
    the stage-3 finding is reported once, naming the two launchers where it applies, and the config."""
    project = FIXTURES / "projects" / "launchers"
    files = discover([str(project)]).files
    index = index_project(files, [str(project)])
    train = next(f for f in files if f.name == "train.py")
    (result,) = lint_files([(train, RuleSelection())], jobs=1, project=index)
    assert isinstance(result, ScriptResult)
    (finding,) = result.diagnostics
    assert "(ZeRO-3 from " in finding.message and "run_z3.sh:8" in finding.message
    assert "Makefile:4" in finding.message and "run_z2" not in finding.message
    assert finding.message.endswith("ds_z3.json:3)")
    assert [(Path(r.path).name, r.line) for r in finding.related] == [
        ("Makefile", 4),  # the launch line
        ("Makefile", 4),  # its --deepspeed_config option
        ("run_z3.sh", 6),
        ("run_z3.sh", 8),
        ("ds_z3.json", 3),
    ]


def test_without_the_project_index_the_launched_stage_is_unknown() -> None:
    project = FIXTURES / "projects" / "launchers"
    train = project / "train_small.py"
    (result,) = lint_files([(train, RuleSelection())], jobs=1)
    assert isinstance(result, ScriptResult)
    assert [d.code for d in result.diagnostics] == ["DSL204"]  # the "under ZeRO-3" warning: stage unknown
    index = index_project([train], [str(project)])
    (result,) = lint_files([(train, RuleSelection())], jobs=1, project=index)
    assert isinstance(result, ScriptResult)
    # launched only with ZeRO-2 (scripts/run_small.sh); its config has no optimizer either (DSL452)
    assert [d.code for d in result.diagnostics] == ["DSL452"]


def test_launches_written_in_documents_and_after_cd_name_where_they_are_written() -> None:
    """fixtures/projects/doc_launchers: each ZeRO-3 finding names the document line or the launcher line (after a
    `cd`, a subshell, the launcher's own directory) that starts its script with the ZeRO-3 config; the scripts
    named only in prose, a Markdown cell or an ambiguous command stay of unknown stage."""
    project = FIXTURES / "projects" / "doc_launchers"
    files = discover([str(project)]).files
    index = index_project(files, [str(project)])
    results = lint_files([(f, RuleSelection()) for f in files if f.suffix == ".py"], jobs=1, project=index)
    sources: dict[str, str] = {}
    for result in results:
        assert isinstance(result, ScriptResult)
        for d in result.diagnostics:
            if d.code == "DSL452":
                continue  # the ZeRO-2 scripts' configs give no optimizer: not a question of the stage's source
            where = d.message.rsplit("(ZeRO-3 from ", 1)
            sources[os.path.relpath(os.path.abspath(d.path), project)] = (
                where[1].split(" -> ")[0].split("doc_launchers/", 1)[1] if len(where) == 2 else "unknown"
            )
    assert sources == {
        "training/train_md.py": "README.md:6",
        "training/train_rst.py": "docs/guide.rst:10",
        "training/train_rst_literal.py": "docs/guide.rst:14",
        "training/train_nb.py": "notebooks/run.ipynb:18",
        "training/train_nb_bash.py": "notebooks/run.ipynb:37",
        "training/train_dir.py": "scripts/run_dir.sh:5",
        "training/train_sub.py": "scripts/run_dir.sh:6",
        "guide/train/train_copy.py": "guide/README.md:6",
        "training/train_prose.py": "unknown",
        "training/train_nb_markdown.py": "unknown",
        "guide/a/train_twice.py": "unknown",
        "guide/b/train_twice.py": "unknown",
    }
