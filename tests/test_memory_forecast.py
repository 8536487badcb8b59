"""The phase model of the forecast: what a script's text says (ast, never imported) and the buffers DeepSpeed
allocates beyond the model states, checked against the figures measured on an H200 (docs/evidence/memory)."""

from __future__ import annotations

from pathlib import Path

from dslint.memory.forecast import Overrides, forecast
from dslint.memory.script_scan import scan
from dslint.project.world_size import WorldSize

GIB = 1 << 30


def test_scan_loads() -> None:
    facts = scan(
        "import deepspeed, torch\n"
        "state = torch.load(a, map_location='cpu')\n"  # 2: kept
        "model.load_state_dict(torch.load(b))\n"  # 3: inline, freed at once
        "other = torch.load(c, 'cuda:1')\n"  # 4: deleted below
        "del other\n"
        "if resume:\n"
        "    ckpt = torch.load(d, map_location=torch.device('cuda'))\n"  # 7: conditional, kept
        "engine, *_ = deepspeed.initialize(model=model, config='ds.json')\n"
        "optimizer = torch.optim.AdamW(params)\n"
    )
    loads = {load.line: load for load in facts.torch_loads}
    assert (loads[2].map_location, loads[2].kept, loads[2].conditional) == ("cpu", True, False)
    assert (loads[3].map_location, loads[3].kept) == ("<absent>", False)
    assert (loads[4].map_location, loads[4].kept) == ("cuda:1", False)
    assert (loads[7].map_location, loads[7].kept, loads[7].conditional) == ("cuda", True, True)
    assert facts.initialize_lines == (8,) and facts.config_literal == "ds.json"
    assert facts.optimizer == "AdamW" and facts.before_initialize(2) and not facts.before_initialize(9)


def test_scan_zero_init_and_unparsable() -> None:
    assert scan("import deepspeed\nwith deepspeed.zero.Init():\n    model = M()\n").zero_init
    assert not scan("def broken(:\n").parsed


P = 852_559_872  # fixtures/projects/memory's Llama, as transformers counts it on the H200 (h200/save_weights.txt)
LARGEST = 32000 * 2048


def _forecast(tmp_path: Path, zero: str) -> dict[str, object]:
    script = tmp_path / "train.py"
    script.write_text("import deepspeed\nengine, *_ = deepspeed.initialize(model=model, config='ds.json')\n")
    config = tmp_path / "ds.json"
    config.write_text(
        '{"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": true}, "zero_optimization": ' + zero + "}"
    )
    overrides = Overrides(params=P)
    return forecast(str(script), str(config), WorldSize(1, 1, "one GPU"), [], overrides)


def _gib(entry: dict[str, object], phase: str) -> float:
    phases = entry["phases"]
    assert isinstance(phases, dict)
    return round(phases[phase]["gpu_bytes"] / GIB, 2)


def test_zero2_phases_match_the_h200(tmp_path: Path) -> None:
    entry = _forecast(tmp_path, '{"stage": 2}')
    # Measured (h200/zero2.json, peak allocated): init 7.94, load 4.76, step 17.53 GiB (activations included).
    assert (_gib(entry, "init"), _gib(entry, "load")) == (7.94, 4.76)
    assert 0.9 * 17.53 <= _gib(entry, "step") <= 17.53


def test_zero3_phases_count_the_bucket_and_the_gradient_partition(tmp_path: Path) -> None:
    entry = _forecast(tmp_path, '{"stage": 3}')
    # Measured (h200/zero3.json): init 7.94, load 7.28 (= 2P + 4P + 2P + the 5e8-element bf16 bucket), step 20.05.
    assert (_gib(entry, "init"), _gib(entry, "load")) == (7.94, 7.28)
    assert 0.8 * 20.05 <= _gib(entry, "step") <= 20.05
    small = _forecast(tmp_path, '{"stage": 3, "reduce_bucket_size": 1000}')
    assert _gib(small, "load") == round((7.28 * GIB - 10**9 + 2000) / GIB, 2)


def test_zero3_offload_keeps_the_gradient_partition_on_the_host(tmp_path: Path) -> None:
    entry = _forecast(tmp_path, '{"stage": 3, "offload_optimizer": {"device": "cpu"}}')
    assert _gib(entry, "load") == 2.52  # measured 2.52 (h200/zero3_offload.json)
    phases = entry["phases"]
    assert isinstance(phases, dict)
    host = [item for item in phases["load"]["added"] if item["on"] == "host"]
    assert [item["bytes"] for item in host] == [2 * P]
