"""VS Code's run configurations (`.vscode/launch.json`) are launches: read as the command each runs, at its line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dslint.project.editor_launches import editor_commands
from dslint.project.launchers import parse_shell
from dslint.project.project_index import launcher_files

_LAUNCH_JSON = """{
    // comments and trailing commas, as VS Code writes them
    "version": "0.2.0",
    "configurations": [
        {
            "name": "zero3 /* not a comment */",
            "type": "debugpy",
            "request": "launch",
            "module": "accelerate.commands.launch",
            "args": ["--config_file", "configs/zero3.yaml", "${workspaceFolder}/train.py", "--lr", "1e-5",],
            "env": {"CUDA_VISIBLE_DEVICES": "0,1"},
        },
        {"name": "the open file", "type": "debugpy", "request": "launch", "program": "${file}"},
        {"name": "node", "type": "node", "request": "launch", "program": "index.js"},
        {
            "name": "deepspeed", "type": "python", "request": "launch",
            "program": "/usr/bin/deepspeed",
            "args": ["--num_gpus", "2", "pretrain.py", "--deepspeed_config", "ds.json"],
            "cwd": "${workspaceFolder}/sft"
        },
    ]
}
"""


def test_each_python_configuration_is_the_command_it_runs_at_its_line() -> None:
    shell = editor_commands(_LAUNCH_JSON)
    lines = shell.split("\n")
    assert len(lines) == len(_LAUNCH_JSON.splitlines())
    assert {number + 1: line for number, line in enumerate(lines) if line} == {
        9: "CUDA_VISIBLE_DEVICES=0,1 python -m accelerate.commands.launch --config_file configs/zero3.yaml "
        "./train.py --lr 1e-5",
        17: "cd ./sft && deepspeed --num_gpus 2 pretrain.py --deepspeed_config ds.json",
    }
    first, second = parse_shell(".vscode/launch.json", shell)
    assert (first.line, first.tool, first.script, first.accelerate_config) == (
        9,
        "accelerate.commands.launch",
        "./train.py",
        "configs/zero3.yaml",
    )
    assert dict(first.environment)["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert (second.line, second.script, second.directory) == (17, "pretrain.py", "sft")


def test_a_file_that_is_not_json_gives_no_command() -> None:
    assert editor_commands('{"configurations": [{"module": "x"') == ""
    assert editor_commands(json.dumps({"configurations": {"module": "x"}})) == ""


def test_the_index_reads_launch_json_and_check_follows_its_launch(tmp_path: Path) -> None:
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode" / "launch.json").write_text(_LAUNCH_JSON)
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "zero3.yaml").write_text(
        "distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\nnum_processes: 2\n"
    )
    (tmp_path / "train.py").write_text(
        "import torch\nfrom accelerate import Accelerator\n"
        "accelerator = Accelerator()\nmodel = accelerator.prepare(build())\n"
        "if accelerator.is_main_process:\n    torch.save(accelerator.unwrap_model(model).state_dict(), 'out.pt')\n"
    )
    assert str(tmp_path / ".vscode" / "launch.json") in launcher_files([str(tmp_path)])
    shown = subprocess.run(
        [sys.executable, "-m", "dslint", "graph", "."], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert ".vscode/launch.json:9: accelerate.commands.launch" in shown.stdout, shown.stdout + shown.stderr
