"""A README command written to be run from its script's folder (`deepspeed train.py --deepspeed_config
configs/x.json`, the script found under the document's folder by `documented_script`): the config path is read from
that folder too, so the config gets the launch's world size (fixtures/projects/doc_run_from, both ways)."""

from __future__ import annotations

import os

from fixture_support import FIXTURES

from dslint.lint.batch import index_project, lint_files
from dslint.lint.files import discover
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
    found = [
        (os.path.relpath(d.path, PROJECT), d.start.line, d.code, d.message) for r in results for d in r.diagnostics
    ]
    # ds_vision.json: 8 != 2 x 1 x 2 on the README's two GPUs; ds_text.json: 16 == 2 x 2 x 4, silent
    assert found == [
        (
            "src/vision/configs/ds_vision.json",
            2,
            "DSL407",
            "batch sizes train 8, micro 2, accumulation 1: train != micro x accumulation x GPUs with world size 2 "
            "(--num_gpus 2, one node (no hostfile): fixtures/projects/doc_run_from/README.md:8)",
        )
    ]
