"""A README command written to be run from its script's folder (`deepspeed train.py --deepspeed_config
configs/x.json`, the script found under the document's folder by `documented_script`): the config path is read from
that folder too, so the config gets the launch's world size (fixtures/projects/doc_run_from, both ways)."""

from __future__ import annotations

import os
from pathlib import Path

from fixture_support import FIXTURES

from dslint.lint.batch import index_project, lint_files
from dslint.lint.files import discover
from dslint.lint.launcher import launcher_results
from dslint.selection import RuleSelection

PROJECT = FIXTURES / "projects" / "doc_run_from"


def test_a_documented_command_links_the_config_beside_its_script() -> None:
    files = discover([str(PROJECT)]).files
    index = index_project(files, [str(PROJECT)])
    linked = sorted(
        (os.path.relpath(launch.config.config_path, PROJECT), launch.config.ranks)
        for launch in index.launches
        if launch.config.config_path is not None
    )
    assert linked == [("src/text/configs/ds_text.json", 4), ("src/vision/configs/ds_vision.json", 2)]
    results = lint_files([(f, RuleSelection()) for f in files], jobs=1, project=index)
    results += launcher_results(index.launch_issues, lambda _: RuleSelection(), lambda p: Path(p).read_text("utf-8"))
    found = [
        (os.path.relpath(d.path, PROJECT), d.start.line, d.code, d.message) for r in results for d in r.diagnostics
    ]
    # ds_vision.json: 8 != 2 x 1 x 2 on the README's two GPUs (the launch's finding: one GPU would hold);
    # ds_text.json: 16 == 2 x 2 x 4, silent
    assert found == [
        (
            "README.md",
            8,
            "DSL407",
            "this launch starts 2 rank(s) (--num_gpus 2, one node (no hostfile)) with ds_vision.json "
            "(train 8, micro 2, accumulation 1): train != micro x accumulation x GPUs; DeepSpeed stops",
        )
    ]


def test_a_second_project_checked_in_the_same_run_lends_it_no_script() -> None:
    """`dslint check world_size doc_run_from`: the README's `train.py` is its own project's, not the other
    project's train.py at that project's root, so the same launch finding comes out as when checked alone."""
    other = FIXTURES / "projects" / "world_size"
    roots = [str(other), str(PROJECT)]
    index = index_project(discover(roots).files, roots)
    found = [
        (os.path.relpath(path, PROJECT), issue.line, issue.kind)
        for path, issues in index.launch_issues.items()
        if path.startswith(str(PROJECT))
        for issue in issues
    ]
    assert found == [("README.md", 8, "unsatisfiable_batch")]
