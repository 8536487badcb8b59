"""runtime_check's forecast: the dry run (no child process, no GPU), forecast vs measured, host growth, plot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixture_support import FIXTURES

from runtime_check.cli import main
from runtime_check.forecast import comparison, measured
from runtime_check.report import host_growth

PROJECT = FIXTURES / "projects" / "memory"
SCRIPT = PROJECT / "train.py"
Z2 = PROJECT / "configs" / "ds_z2.json"


def test_dry_run_prints_diff_world_size_forecast_and_batch_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "dry.json"
    plot = tmp_path / "dry.svg"
    argv = [str(SCRIPT), "--dry-run", "--nproc", "8", "--json", str(report), "--plot", str(plot)]
    assert main([*argv, "--", "--deepspeed", "--deepspeed_config", str(Z2)]) == 0
    out = capsys.readouterr().out
    assert '-        state = torch.load(args.init_weights, map_location="cuda")' in out
    assert '+        state = torch.load(args.init_weights, map_location="cpu")' in out
    assert "world size 8: torchrun --nproc-per-node=8 (one node)" in out
    assert "batch size at world size 8: holds" in out
    assert "forecast, original:" in out and "forecast, fixed:" in out
    doc = json.loads(report.read_text())
    assert doc["dry_run"] and doc["world_size"] == 8
    original, fixed = doc["forecast"]["original"], doc["forecast"]["fixed"]
    assert original["zero_stage"] == 2 and original["params"] == fixed["params"] > 0
    # The fix moves the checkpoint (4 bytes a parameter, 8 ranks) off cuda:0 into each rank's host memory.
    params = original["params"]
    assert original["phases"]["init"]["gpu_bytes"] - fixed["phases"]["init"]["gpu_bytes"] == 8 * 4 * params
    assert fixed["phases"]["init"]["host_bytes"] - original["phases"]["init"]["host_bytes"] == 4 * params
    assert plot.read_text().startswith("<svg")


def test_dry_run_batch_check_at_the_world_size_it_uses(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(SCRIPT), "--dry-run", "--", "--deepspeed_config", str(Z2)]) == 0
    out = capsys.readouterr().out
    assert "batch size at world size 1: DeepSpeed would stop both runs" in out and "DSL407" in out


def test_dry_run_without_a_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "clean.py"
    script.write_text("import deepspeed\nengine, *_ = deepspeed.initialize(model=model, config='ds.json')\n")
    assert main([str(script), "--dry-run", "--params", "1B"]) == 0
    out = capsys.readouterr().out
    assert "No fixed script:" in out and "A real run would exit 1" in out
    assert "parameters  1,000,000,000: --params" in out


def _summary(phases: dict[str, dict[str, Any]], totals: dict[str, Any] | None = None) -> dict[str, Any]:
    summary: dict[str, Any] = {"phases": {name: {"completed": True, **v} for name, v in phases.items()}, "ran": True}
    if totals is not None:
        summary["device_totals"] = totals
    return summary


GIB = 1 << 30


def test_measured_init_is_the_larger_of_setup_and_init() -> None:
    run = _summary(
        {
            "setup": {"peak_allocated_bytes": 5 * GIB, "peak_rss_bytes": 9 * GIB},
            "init": {"peak_allocated_bytes": 3 * GIB, "peak_rss_bytes": 4 * GIB},
            "step": {"peak_allocated_bytes": 7 * GIB, "peak_rss_bytes": 4 * GIB},
        }
    )
    assert measured(run, "init") == (5 * GIB, 9 * GIB)
    assert measured(run, "load") == (None, None)
    several = _summary(run["phases"], {"step": {"completed": True, "peak_allocated_bytes": {"0": 12 * GIB}}})
    assert measured(several, "step") == (12 * GIB, 4 * GIB)


def test_comparison_error() -> None:
    branch = {"on": "gpu", "bytes": 2 * GIB, "conditional": True}
    phases = {"step": {"gpu_bytes": 8 * GIB, "host_bytes": 0, "added": []},
              "init": {"gpu_bytes": 12 * GIB, "host_bytes": 0, "added": [branch]}}  # fmt: skip
    forecast = {"original": {"phases": phases}, "fixed": None}
    runs = {
        "original": _summary(
            {
                "step": {"peak_allocated_bytes": 10 * GIB, "peak_rss_bytes": 2 * GIB},
                "init": {"peak_allocated_bytes": 10 * GIB, "peak_rss_bytes": 2 * GIB},
            }
        )
    }
    step, init = comparison(forecast, runs)
    assert step["gpu_error"] == -0.2 and step["measured_rss_bytes"] == 2 * GIB
    assert init["gpu_error"] == 0.2 and init["gpu_error_if_branches_skipped"] == 0.0


def test_host_growth_per_rank_and_node() -> None:
    def ranks(rss: int) -> dict[str, Any]:
        phase = {"completed": True, "peak_rss_bytes": rss}
        return {"phases": {"load": phase}, "ranks": {str(r): {"phases": {"load": phase}} for r in range(4)}}

    (grown,) = host_growth(ranks(4 * GIB), ranks(7 * GIB))
    assert grown == {"phase": "load", "per_rank": 3 * GIB, "ranks": 4, "per_node": 12 * GIB}
    assert host_growth(ranks(4 * GIB), ranks(4 * GIB + 1)) == []
