"""DSL103 in a project whose launches start one process each (or that has none): a DeepSpeed script that never
reads a rank runs as `python x.py`, and cuda:0 is its own device (`dslint.script.one_rank.presumed_one_process`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dslint.cli import main

SCRIPT = """\
import deepspeed
import torch


def train(model, config):
    weights = torch.ones(3).cuda()
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    return engine, weights


if __name__ == "__main__":
    train(torch.nn.Linear(2, 2), {"train_micro_batch_size_per_gpu": 1})
"""


def _codes(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.chdir(root)
    result = CliRunner().invoke(main, ["check", "--no-cache", "-j", "1", "--exit-zero", "--output-format", "json", "."])
    return [item["code"] for item in json.loads(result.stdout) if item["filename"].endswith("train.py")]


@pytest.mark.parametrize(
    ("launcher", "script", "flagged"),
    [
        (None, SCRIPT, False),  # nothing launches anything: `python train.py`
        ("python train.py\n", SCRIPT, False),
        ("deepspeed --num_gpus 2 train.py\n", SCRIPT, True),  # two ranks on cuda:0
        ("deepspeed --num_gpus 2 other.py\n", SCRIPT, True),  # the project runs several processes somewhere
        (None, SCRIPT.replace("import torch\n", "import os\nimport torch\nRANK = os.environ['LOCAL_RANK']\n"), True),
    ],
)
def test_unindexed_cuda_in_a_one_process_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, launcher: str | None, script: str, flagged: bool
) -> None:
    (tmp_path / "train.py").write_text(script)
    (tmp_path / "other.py").write_text("print('other')\n")
    if launcher is not None:
        (tmp_path / "run.sh").write_text(launcher)
    assert ("DSL103" in _codes(tmp_path, monkeypatch)) is flagged


MOVED = """\
import deepspeed
import torch


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(4, 4).to(device)
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config="ds_stage0.json")
    return engine


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(
    ("launcher", "stage", "flagged"),
    [
        ("python train.py\n", 0, False),  # cuda:0 is the one rank's own GPU, where the engine puts the model
        ("deepspeed --num_gpus 1 train.py\n", 1, False),
        (None, 0, True),  # no launch in the project: the deepspeed launcher on every GPU is how it is run
        ("deepspeed --num_gpus 2 train.py\n", 0, True),  # both ranks' models on cuda:0 first
        (None, 3, True),  # ZeRO-3 partitions: the whole model on the GPU first
    ],
)
def test_a_move_to_the_current_device_of_a_one_process_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, launcher: str | None, stage: int, flagged: bool
) -> None:
    (tmp_path / "train.py").write_text(MOVED)
    config = {"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "Adam"}, "zero_optimization": {"stage": stage}}
    (tmp_path / "ds_stage0.json").write_text(json.dumps(config))
    if launcher is not None:
        (tmp_path / "run.sh").write_text(launcher)
    assert ("DSL101" in _codes(tmp_path, monkeypatch)) is flagged
