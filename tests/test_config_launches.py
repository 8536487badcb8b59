"""Config findings that depend on how the config reaches DeepSpeed: comment keys written twice (DSL414), a removed
block that is off (DSL402), and the project fixture fixtures/projects/trainer_configs that holds both shapes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fixture_support import FIXTURES

from dslint.config.facts import is_comment_key
from dslint.lint.batch import index_project, lint_files
from dslint.lint.file import lint_text
from dslint.lint.files import discover
from dslint.lint.result import FileResult
from dslint.settings import SettingsResolver

PROJECT = FIXTURES / "projects" / "trainer_configs"


def _project_messages() -> dict[tuple[str, int, str], str]:
    files = discover([str(PROJECT)]).files
    index = index_project(files, [str(PROJECT)])
    resolver = SettingsResolver()
    results = lint_files([(f, resolver.for_path(f).selection_for(f)) for f in files], jobs=1, project=index)
    found: dict[tuple[str, int, str], str] = {}
    for result in results:
        assert isinstance(result, FileResult)
        for d in result.diagnostics:
            found[(os.path.relpath(os.path.abspath(d.path), PROJECT), d.start.line, d.code)] = d.message
    return found


@pytest.mark.parametrize(
    "key", ["//", "// batch", "#", "_comment", "__comment__", "comment", "Comment_2", "_comments", "description"]
)
def test_comment_keys(key: str) -> None:
    assert is_comment_key(key)


@pytest.mark.parametrize("key", ["train_batch_size", "stage", "commit", "comms_logger", "communication_data_type"])
def test_keys_that_are_not_comments(key: str) -> None:
    assert not is_comment_key(key)


def test_trainer_read_config_ignores_repeated_comment_keys_but_not_a_repeated_setting() -> None:
    found = _project_messages()
    trainer = {k: m for k, m in found.items() if k[0] == os.path.join("configs", "trainer_commented.json")}
    assert list(trainer) == [(os.path.join("configs", "trainer_commented.json"), 11, "DSL414")]
    assert "silently wins" in trainer[(os.path.join("configs", "trainer_commented.json"), 11, "DSL414")]


def test_file_deepspeed_opens_refuses_repeated_comment_keys() -> None:
    found = _project_messages()
    message = found[(os.path.join("configs", "raw_commented.json"), 4, "DSL414")]
    assert "refuses a config file with duplicate keys" in message


def test_disabled_amp_block_asks_only_for_its_removal(tmp_path: Path) -> None:
    text = '{\n  "train_batch_size": 8,\n  "amp": {"enabled": false, "opt_level": "O1"}\n}\n'
    (finding,) = [d for d in lint_text(str(tmp_path / "ds_config.json"), text) if d.code == "DSL402"]
    assert finding.message.endswith("refuses `amp` even when it is off; remove it")
    assert "torch_autocast" not in finding.message


def test_enabled_amp_block_keeps_deepspeeds_advice(tmp_path: Path) -> None:
    text = '{\n  "train_batch_size": 8,\n  "amp": {"enabled": true, "opt_level": "O1"}\n}\n'
    (finding,) = [d for d in lint_text(str(tmp_path / "ds_config.json"), text) if d.code == "DSL402"]
    assert "torch_autocast" in finding.message
    assert finding.fix is None


ZERO_TEXT = (
    '{\n  "train_batch_size": 8,\n'
    '  "zero_optimization": {"stage": 2, "overlap_comms": true, "compute_grad_norm": 1}\n}\n'
)


def _zero_findings(version: str) -> dict[str, str]:
    from dslint.selection import RuleSelection

    return {d.code: d.message for d in lint_text("ds_config.json", ZERO_TEXT, RuleSelection(deepspeed_version=version))}


def test_pin_before_0_7_reads_zero_optimization_as_a_plain_dict() -> None:
    found = _zero_findings("0.6.5")
    assert "DSL403" not in found
    assert found["DSL420"].startswith("DeepSpeed 0.6.5 ignores `zero_optimization.")
    assert found["DSL420"].endswith("silently; did you mean `overlap_comm`?")
    assert "DeepSpeed 0.6.5 ignores it silently" in found["DSL416"]


def test_pin_from_0_7_refuses_unknown_zero_keys() -> None:
    found = _zero_findings("0.10.3")
    assert "stops at start-up" in found["DSL403"]
    assert "stops at start-up" in found["DSL416"]
    assert "DSL420" not in found


def test_indented_markdown_code_blocks_are_read_as_launches() -> None:
    from dslint.project.launch_documents import markdown_code_blocks

    text = (
        "# Run\n"  # 1
        "Some text\n"  # 2
        "    goes on with the paragraph\n"  # 3
        "\n"  # 4
        "    deepspeed a.py\n"  # 5
        "    echo done\n"  # 6
        "#### after a heading\n"  # 7
        "    deepspeed b.py\n"  # 8
        "- an item\n"  # 9
        "\n"  # 10
        "    the item's own paragraph\n"  # 11
        "```bash\n"  # 12
        "deepspeed c.py\n"  # 13
        "```\n"  # 14
    )
    kept = {n: line for n, line in enumerate(markdown_code_blocks(text).splitlines(), 1) if line}
    assert kept == {5: "    deepspeed a.py", 6: "    echo done", 8: "    deepspeed b.py", 13: "deepspeed c.py"}
