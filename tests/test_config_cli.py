"""`dslint check` on config files: discovery in directories, explicit files, --world-size, one report per finding."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from dslint.cli import main


def _check(*args: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(main, ["check", "-q", *args])
    return result.exit_code, [line for line in result.output.splitlines() if line.strip()]


def test_directory_yields_configs_by_name_and_content_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "zero3.json").write_text('{"zero_optimisation": {"stage": 3}, "train_batch_size": 8}')
    (tmp_path / "settings.json").write_text('{"train_micro_batch_size_per_gpu": 2, "fp_16": {}}')
    (tmp_path / "package.json").write_text('{"name": "x", "zero_optimisation": 1}')
    (tmp_path / "ds_results.json").write_text("[1, 2, 3]")
    code, lines = _check(str(tmp_path))
    assert code == 1
    assert sorted(Path(line.split(":")[0]).name for line in lines) == ["settings.json", "zero3.json"]


def test_a_config_a_script_points_at_is_reported_once(tmp_path: Path) -> None:
    (tmp_path / "ds_config.json").write_text('{\n  "train_batch_size": 8,\n  "zero_optimisation": {}\n}\n')
    (tmp_path / "train.py").write_text(
        'import deepspeed\nengine, _, _, _ = deepspeed.initialize(model=m, config="ds_config.json")\n'
    )
    code, lines = _check(str(tmp_path))
    assert code == 1 and len(lines) == 1 and "ds_config.json:3:3: DSL401" in lines[0]


def test_world_size_makes_the_batch_check_exact(tmp_path: Path) -> None:
    config = tmp_path / "ds_config.json"
    config.write_text('{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4}')
    assert _check(str(config))[0] == 0
    assert _check("--world-size", "8", str(config))[0] == 0
    code, lines = _check("--world-size", "3", str(config))
    assert code == 1 and "DSL407" in lines[0] and "world size 3" in lines[0]
