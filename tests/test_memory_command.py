"""`dslint memory`: the acceptance project (two launchers, 8 GPUs ZeRO-2 and 4 GPUs ZeRO-3, bf16 AdamW, a
LlamaConfig literal) against DeepSpeed 0.19.8's estimator functions, and what findings add per phase."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixture_support import FIXTURES
from test_memory_params import reference_llama

from dslint.cli import main

PROJECT = FIXTURES / "projects" / "memory"
# The fixture's LlamaConfig(...), counted module by module by the test's own reference.
PARAMS = reference_llama(32000, 2048, 5632, 16, 16, 4, tied=False)
LARGEST = 32000 * 2048


def run(*args: str) -> Any:
    result = CliRunner().invoke(main, ["memory", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.output) if "--format" in args else result.output


def within(ours: int, theirs: int, tolerance: float) -> bool:
    return abs(ours - theirs) <= tolerance * theirs


def test_acceptance_two_launches_against_deepspeed() -> None:
    stage_1_and_2 = pytest.importorskip("deepspeed.runtime.zero.stage_1_and_2")
    stage3 = pytest.importorskip("deepspeed.runtime.zero.stage3")
    launches = run("--format", "json", str(PROJECT))
    by_stage = {entry["zero_stage"]: entry for entry in launches}
    assert len(launches) == 2 and set(by_stage) == {2, 3}
    zero2, zero3 = by_stage[2], by_stage[3]
    assert (zero2["world_size"], zero3["world_size"]) == (8, 4)
    assert os.path.basename(zero2["launcher"].split(":")[0]) == "run_zero2.sh"
    for entry in launches:
        assert entry["script"].endswith("train.py") and entry["config"].endswith(".json")
        assert within(entry["params"], PARAMS, 0.01)
        assert "LlamaConfig(...)" in entry["params_source"]
        assert entry["precision"] == "bf16" and entry["optimizer"] == "AdamW"
        assert set(entry["phases"]) == {"init", "load", "step"}
        for phase in entry["phases"].values():
            assert phase["gpu_bytes"] > 0 and phase["host_bytes"] >= 0
    _, gpu2 = stage_1_and_2.estimate_zero2_model_states_mem_needs(PARAMS, num_gpus_per_node=8, cpu_offload=False)
    _, gpu3, _ = stage3.estimate_zero3_model_states_mem_needs(PARAMS, LARGEST, num_gpus_per_node=4, cpu_offload=False,
                                                              cpu_offload_params=False)  # fmt: skip
    assert within(zero2["model_states"]["gpu_bytes"], gpu2, 0.05)
    assert within(zero3["model_states"]["gpu_bytes"], gpu3, 0.05)
    # The step: the model states, ZeRO-2's two reduce buckets (overlap_comm; 5e8 bf16 elements each, allocated in
    # the first backward), and the checkpoint loaded to cuda:0 before initialize, still held by `state`.
    step = zero2["phases"]["step"]
    assert step["gpu_bytes"] == zero2["model_states"]["gpu_bytes"] + 2 * 500_000_000 * 2 + 8 * 4 * PARAMS
    assert [item["code"] for item in step["added"]] == [None, "DSL201"]
    assert step["added"][1]["what"].startswith("still held")


def test_acceptance_findings_in_the_init_phase() -> None:
    zero2 = next(entry for entry in run("--format", "json", str(PROJECT)) if entry["zero_stage"] == 2)
    added = [item for item in zero2["phases"]["init"]["added"] if item["code"] == "DSL201"]
    # torch.load(..., map_location="cuda") before initialize: each of the node's 8 ranks puts the checkpoint
    # (no file: assumed the fp32 state dict) on cuda:0.
    assert len(added) == 1 and added[0]["bytes"] == 8 * 4 * PARAMS and added[0]["on"] == "gpu"
    assert "inside an `if`" in added[0]["what"] and added[0]["conditional"] is True


def test_text_table() -> None:
    text = run(str(PROJECT))
    assert "run_zero2.sh:3: deepspeed -> " in text and "run_zero3.sh:3: torchrun -> " in text
    assert "world size  8 (8 a node): --num_gpus 8" in text
    assert "DeepSpeed's estimator: GPU" in text and "not forecast: activations" in text


def _project(tmp_path: Path, script: str, launcher: str, config: dict[str, Any]) -> Path:
    (tmp_path / "train.py").write_text(script)
    (tmp_path / "run.sh").write_text(launcher)
    (tmp_path / "ds.json").write_text(json.dumps(config))
    return tmp_path


HEAD = """
import deepspeed, torch
from transformers import GPT2Config, GPT2LMHeadModel
model = GPT2LMHeadModel(GPT2Config())
"""
CONFIG = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}
GPT2 = 124_439_808


def test_cpu_load_before_initialize_is_host_memory(tmp_path: Path) -> None:
    script = HEAD + (
        'model.load_state_dict(torch.load("w.pt", map_location="cpu"))\n'
        'engine, *_ = deepspeed.initialize(model=model, config="ds.json")\n'
    )
    project = _project(tmp_path, script, "deepspeed --num_gpus 2 train.py\n", CONFIG)
    (project / "w.pt").write_bytes(b"\0" * 1000)
    (entry,) = run("--format", "json", str(project))
    assert entry["config"].endswith("ds.json")  # from initialize's literal config
    init = entry["phases"]["init"]
    assert [item["bytes"] for item in init["added"] if item["on"] == "host"] == [4 * GPT2, 1000]
    assert init["host_bytes_per_node"] == 2 * init["host_bytes"]


def test_load_without_map_location_after_initialize(tmp_path: Path) -> None:
    script = HEAD + ('engine, *_ = deepspeed.initialize(model=model, config="ds.json")\nstate = torch.load(path)\n')
    project = _project(tmp_path, script, "torchrun --nproc_per_node 4 train.py\n", CONFIG)
    (entry,) = run("--format", "json", str(project))
    (added,) = entry["phases"]["load"]["added"]
    assert added["code"] == "DSL202" and added["bytes"] == 4 * 4 * GPT2
    # `state` is never deleted: the checkpoint stays on cuda:0 through the step (beside one reduce bucket).
    step = entry["phases"]["step"]
    assert step["gpu_bytes"] == entry["model_states"]["gpu_bytes"] + 500_000_000 * 2 + 4 * 4 * GPT2


def test_model_moved_before_initialize(tmp_path: Path) -> None:
    script = HEAD + 'model.cuda()\nengine, *_ = deepspeed.initialize(model=model, config="ds.json")\n'
    project = _project(tmp_path, script, "deepspeed --num_gpus 8 train.py\n", CONFIG)
    (entry,) = run("--format", "json", str(project))
    moved = [item for item in entry["phases"]["init"]["added"] if item["code"] == "DSL101"]
    assert len(moved) == 1 and moved[0]["bytes"] == 8 * 4 * GPT2 and "cuda:0" in moved[0]["what"]


def test_unknown_world_size_is_no_forecast_until_given(tmp_path: Path) -> None:
    script = HEAD + 'engine, *_ = deepspeed.initialize(model=model, config="ds.json")\n'
    project = _project(tmp_path, script, "deepspeed train.py\n", CONFIG)
    (entry,) = run("--format", "json", str(project))
    assert entry["world_size"] is None and entry["phases"] is None
    assert "world size" in entry["unknown"] and "every GPU" in entry["world_size_source"]
    (given,) = run("--format", "json", "--world-size", "16", "--gpus-per-node", "8", str(project))
    assert given["world_size"] == 16 and given["gpus_per_node"] == 8
    assert given["model_states"]["gpu_bytes"] == 2 * GPT2 + 18 * -(-GPT2 // 16)


def test_params_override(tmp_path: Path) -> None:
    launcher = "deepspeed --num_gpus 1 train.py --deepspeed_config ds.json\n"
    project = _project(tmp_path, "import deepspeed\nmodel = build()\n", launcher, CONFIG)
    (entry,) = run("--format", "json", str(project))
    assert entry["params"] is None and "unknown" in entry
    (given,) = run("--format", "json", "--params", "7B", str(project))
    assert given["params"] == 7 * 10**9 and given["params_source"] == "--params"
    assert given["model_states"]["gpu_bytes"] == 20 * 7 * 10**9


def test_plot(tmp_path: Path) -> None:
    target = tmp_path / "memory.svg"
    run(str(PROJECT), "--plot", str(target))
    svg = target.read_text()
    assert svg.startswith("<svg") and "run_zero3.sh:3: ZeRO 3, 4 ranks" in svg
    result = CliRunner().invoke(main, ["memory", str(PROJECT), "--plot", str(tmp_path / "memory.pdf")])
    assert result.exit_code == 2 and ".svg or .png" in result.output
