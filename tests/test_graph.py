"""`dslint graph`: the project model as text and JSON, on a fixture project with launchers, an accelerate YAML
and several configs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_support import FIXTURES

from dslint.cli import main

PROJECT = FIXTURES / "projects" / "launchers"


@pytest.fixture
def in_project(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(PROJECT)
    return PROJECT


def _json() -> dict[str, object]:
    result = CliRunner().invoke(main, ["graph", "--format", "json", "."])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert isinstance(data, dict)
    return data


def test_graph_links_launchers_scripts_configs_and_stages(in_project: Path) -> None:
    data = _json()
    launches = {(d["launcher"], d["line"]): d for d in data["launches"]}  # type: ignore[attr-defined]
    z3 = launches[(os.path.join("scripts", "run_z3.sh"), 6)]
    assert (z3["tool"], z3["script"], z3["config_option"], z3["config"]) == (
        "deepspeed",
        "train.py",
        "deepspeed_config",
        os.path.join("configs", "ds_z3.json"),
    )
    assert (z3["zero_stage"], z3["precision"]) == (3, "bf16")
    assert z3["options"]["output_dir"] == "\x00unknown"  # `"${OUTPUT}"` from `$1`: built at run time
    accelerate = launches[(os.path.join("scripts", "run_acc.sh"), 2)]
    assert accelerate["accelerate_config"] == os.path.join("configs", "accelerate_z3.yaml")
    assert (accelerate["config"], accelerate["zero_stage"], accelerate["precision"]) == (
        os.path.join("configs", "acc_ds.json"),
        3,
        "bf16",  # "auto" in the config: accelerate's mixed_precision decides
    )
    readers = {c["path"]: c["read_by"] for c in data["configs"]}  # type: ignore[attr-defined]
    assert readers[os.path.join("configs", "test.json")] == "trainer"
    assert readers[os.path.join("configs", "ds_z3.json")] == "initialize"
    created = {e["created"] for e in data["engines"]}  # type: ignore[attr-defined]
    assert created == {"train.py:19", "train_small.py:16"}


def test_graph_text_names_each_link(in_project: Path) -> None:
    result = CliRunner().invoke(main, ["graph", "."])
    assert result.exit_code == 0, result.output
    assert f"{os.path.join('scripts', 'run_z3.sh')}:6: deepspeed -> train.py" in result.output
    assert f"config {os.path.join('configs', 'ds_z3.json')} via deepspeed_config: ZeRO stage 3" in result.output


def test_graph_shows_where_engines_go() -> None:
    result = CliRunner().invoke(main, ["graph", str(FIXTURES / "projects" / "engine_helpers")])
    assert result.exit_code == 0, result.output
    assert "checkpointing.py:save_hf_format(model)" in result.output
    assert "setup_engine() returns (engine, optimizer, scheduler)" in result.output


def test_graph_shows_model_builders(monkeypatch: pytest.MonkeyPatch) -> None:
    """A builder re-exported by a package and handed straight to a nested function that calls initialize."""
    monkeypatch.chdir(FIXTURES / "projects" / "model_builders")
    result = CliRunner().invoke(main, ["graph", "."])
    assert result.exit_code == 0, result.output
    zoo = os.path.join("nets", "zoo.py")
    assert f"{zoo}:build_classifier() returns the model initialize receives at nested.py:26" in result.output
    assert "build_probe" not in result.output


def test_a_module_launch_links_the_projects_module_and_drops_an_installed_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`deepspeed --module src.train` runs src/train.py with its config; `python -m pip` is no launch here."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "__init__.py").write_text("")
    (tmp_path / "src" / "train.py").write_text(
        "import deepspeed\nengine, *_ = deepspeed.initialize(model=model, config='ds.json')\n"
    )
    (tmp_path / "ds.json").write_text('{"train_batch_size": 8, "zero_optimization": {"stage": 2}}\n')
    (tmp_path / "run.sh").write_text(
        "python -m pip install -r requirements.txt\n"
        "deepspeed --num_gpus=2 --module src.train --deepspeed_config ds.json\n"
    )
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["graph", "."])
    assert result.exit_code == 0, result.output
    assert f"run.sh:2: deepspeed -> {os.path.join('src', 'train.py')}" in result.output
    assert "config ds.json via deepspeed_config: ZeRO stage 2" in result.output
    assert "pip" not in result.output
