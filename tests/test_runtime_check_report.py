"""The comparison: tolerance, metric choice, verdict, table; on hand-made run summaries."""

from __future__ import annotations

import io
from typing import Any

import pytest

from runtime_check.launch import ChildResult, Progress
from runtime_check.report import MIB, TOLERANCES, Tolerance, document, metric_for, render, summarize, table, verdict

GIB = 1024 * MIB


def phase(name: str, rss: int, allocated: int | None = None, completed: bool = True) -> dict[str, Any]:
    return {
        "name": name,
        "completed": completed,
        "seconds": 1.0,
        "start_rss_bytes": rss // 2,
        "peak_rss_bytes": rss,
        "start_allocated_bytes": None if allocated is None else allocated // 2,
        "peak_allocated_bytes": allocated,
        "peak_reserved_bytes": None if allocated is None else allocated + 64 * MIB,
        "devices": {},
    }


def run(phases: list[dict[str, Any]], errors: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "ran": not errors,
        "errors": list(errors),
        "exit_code": 1 if errors else 0,
        "timed_out": False,
        "seconds": 5.0,
        "steps_completed": 0 if errors else 1,
        "phases": {p["name"]: p for p in phases},
        "device": {"type": "cuda", "name": "NVIDIA H200"},
    }


def gpu_run(load: float, step: float = 13.8, errors: tuple[str, ...] = ()) -> dict[str, Any]:
    return run(
        [
            phase("setup", GIB, 0),
            phase("init", 2 * GIB, int(3.75 * GIB)),
            phase("load", 2 * GIB, int(load * GIB), completed=not errors),
            *([] if errors else [phase("step", 2 * GIB, int(step * GIB))]),
        ],
        errors,
    )


def test_tolerance_is_the_larger_of_absolute_and_relative() -> None:
    tolerance = Tolerance(absolute_bytes=8 * MIB, relative=0.01)
    assert tolerance.allows(100 * MIB, 108 * MIB)
    assert not tolerance.allows(100 * MIB, 109 * MIB)
    assert tolerance.allows(10 * GIB, 10 * GIB + 100 * MIB)  # 1 % of 10 GiB is 102 MiB
    assert not tolerance.allows(10 * GIB, 10 * GIB + 110 * MIB)
    assert tolerance.allows(10 * GIB, 1 * GIB)


def test_ground_truth_10_load_phase_drop_passes() -> None:
    result = verdict(gpu_run(6.25), gpu_run(3.75))
    assert result["ok"] and result["metric"] == "peak_allocated_bytes"
    assert result["load_phase"]["delta"] == int(3.75 * GIB) - int(6.25 * GIB)
    assert result["load_phase"]["percent"] == -40.0 and result["load_phase"]["completed"]
    assert result["phases_compared"] == ["setup", "init", "load", "step"]


def test_a_phase_that_got_worse_fails_the_verdict() -> None:
    result = verdict(gpu_run(3.75), gpu_run(6.25))
    assert not result["ok"] and result["fixed_ran"]
    assert [w["phase"] for w in result["worse_phases"]] == ["load"]
    assert "phase load got worse: GPU peak allocated 3.75 GiB -> 6.25 GiB (+2.50 GiB)" in result["reasons"]


def test_original_that_failed_is_compared_only_where_it_finished() -> None:
    """ZeRO-3: the original dies in the load phase; the fixed one runs. Unfinished phases are not compared."""
    original = gpu_run(5.0, errors=("RuntimeError: size mismatch (in phase load)",))
    result = verdict(original, gpu_run(3.75))
    assert result["ok"] and not result["original_ran"]
    assert result["phases_compared"] == ["setup", "init"]
    assert result["load_phase"]["completed"] is False


def test_fixed_that_failed_fails_the_verdict() -> None:
    result = verdict(gpu_run(6.25), gpu_run(3.0, errors=("boom (in phase load)",)))
    assert not result["ok"] and not result["fixed_ran"]
    assert result["reasons"][0] == "the fixed script did not run: boom (in phase load)"


def test_metric_is_rss_unless_both_runs_measured_gpu_memory() -> None:
    cpu = run([phase("setup", GIB), phase("load", 2 * GIB)])
    assert metric_for(cpu, cpu) == "peak_rss_bytes"
    assert metric_for(gpu_run(6.25), cpu) == "peak_rss_bytes"
    assert metric_for(gpu_run(6.25), gpu_run(3.75)) == "peak_allocated_bytes"


def test_rss_growth_on_a_gpu_run_does_not_fail_it() -> None:
    """Moving a load to the CPU rightly grows RSS; on a GPU the verdict reads GPU memory."""
    original, fixed = gpu_run(6.25), gpu_run(3.75)
    fixed["phases"]["load"]["peak_rss_bytes"] = 5 * GIB
    assert verdict(original, fixed)["ok"]


def test_rss_tolerance_absorbs_noise_but_not_a_checkpoint() -> None:
    rss = TOLERANCES["peak_rss_bytes"]
    base = 500 * MIB
    assert rss.allows(base, base + 20 * MIB)
    assert not rss.allows(base, base + 100 * MIB)


def test_multi_rank_runs_are_compared_per_rank() -> None:
    def ranks(load: list[float]) -> dict[str, Any]:
        per_rank = {str(r): gpu_run(value) for r, value in enumerate(load)}
        summary = per_rank["0"].copy()
        summary["ranks"] = {r: {"rank": int(r), **data} for r, data in per_rank.items()}
        return summary

    result = verdict(ranks([6.25, 6.25]), ranks([3.75, 7.0]))
    assert not result["ok"]
    assert result["worse_phases"] == [
        {"phase": "load", "rank": 1, "original": int(6.25 * GIB), "fixed": int(7 * GIB),
         "delta": int(7 * GIB) - int(6.25 * GIB), "percent": pytest.approx(12.0)},
    ]  # fmt: skip
    assert "rank 1 load" in result["phases_compared"]
    assert "r1 load" in table(document("t.py", [], {}, {"applied": []}, ranks([6.25, 6.25]), ranks([3.75, 7.0])))


def test_table_and_render() -> None:
    original = gpu_run(6.25, errors=("RuntimeError: x (in phase load)",))
    doc = document("train.py", [], {}, {"applied": [{"code": "DSL201", "line": 61}]}, original, gpu_run(3.75))
    text = table(doc)
    header, rule, *rows = text.splitlines()
    assert header.split() == ["phase", "measure", "original", "fixed", "delta", "%"]
    assert set(rule.replace(" ", "")) == {"-"}
    load_row = next(row for row in rows if row.startswith("load"))
    assert "6.25 GiB !" in load_row and "3.75 GiB" in load_row and "-2.50 GiB" in load_row and "-40.0%" in load_row
    assert any(row.startswith("step") and "-" in row.split()[4] for row in rows)  # the original has no step phase
    rendered = render(doc)
    assert "fixes applied: DSL201 (line 61)" in rendered
    assert "original: failed: RuntimeError: x (in phase load)" in rendered
    assert "! = phase not finished" in rendered
    assert "verdict: OK" in rendered


def test_memory_a_rank_put_on_another_gpu_gets_its_own_row() -> None:
    """Issue 8: rank 1 loading to "cuda" before its device is set lands on cuda:0; the table shows that device."""
    original, fixed = gpu_run(6.25), gpu_run(3.75)
    for run_, stray in ((original, 2.5 * GIB), (fixed, 0)):
        load = run_["phases"]["load"]
        load["device_index"] = 1
        load["devices"] = {"1": {"peak_allocated_bytes": load["peak_allocated_bytes"], "peak_reserved_bytes": 0}}
        if stray:
            load["devices"]["0"] = {"peak_allocated_bytes": int(stray), "peak_reserved_bytes": int(stray)}
    rows = table(document("t.py", [], {}, {"applied": []}, original, fixed)).splitlines()
    stray_row = next(row for row in rows if "GPU cuda:0 allocated" in row)
    assert "2.50 GiB" in stray_row and stray_row.rstrip().endswith("-")


def _rank_report(rank: int, setup_devices: dict[str, float]) -> dict[str, Any]:
    setup = phase("setup", GIB, 0)
    setup["device_index"] = rank
    setup["devices"] = {
        d: {"peak_allocated_bytes": int(v * GIB), "peak_reserved_bytes": 0} for d, v in setup_devices.items()
    }
    setup["peak_allocated_bytes"] = setup["devices"].get(str(rank), {}).get("peak_allocated_bytes", 0)
    phases = [setup, phase("init", GIB, GIB), phase("load", GIB, GIB), phase("step", GIB, 2 * GIB)]
    for p in phases[1:]:
        p["device_index"] = rank
        p["devices"] = {str(rank): {"peak_allocated_bytes": p["peak_allocated_bytes"], "peak_reserved_bytes": 0}}
    return {
        "rank": rank, "status": "steps_done", "exception": None, "initialize_called": True, "steps_completed": 1,
        "exit_code": 0, "rss_method": "vmhwm", "phases": phases, "device": {"type": "cuda"}, "versions": {},
    }  # fmt: skip


def test_every_rank_piling_onto_cuda0_shows_in_the_device_totals() -> None:
    """Issue 8: `.cuda()` and torch.load("cuda") before initialize put 5 GiB per rank on cuda:0."""
    piled = ChildResult("original", 0, False, 1.0, [_rank_report(0, {"0": 5}), _rank_report(1, {"0": 5})], nproc=2)
    balanced = ChildResult("fixed", 0, False, 1.0, [_rank_report(0, {}), _rank_report(1, {})], nproc=2)
    original, fixed = summarize(piled, 60), summarize(balanced, 60)
    assert original["device_totals"]["setup"]["peak_allocated_bytes"] == {"0": 10 * GIB}
    assert original["device_totals"]["step"]["peak_allocated_bytes"] == {"0": 2 * GIB, "1": 2 * GIB}
    result = verdict(original, fixed)
    assert result["ok"] and "cuda:0 setup" in result["phases_compared"]
    backwards = verdict(fixed, original)
    assert not backwards["ok"]
    assert {"phase": "setup", "device": 0} in [
        {"phase": w["phase"], "device": w.get("device")} for w in backwards["worse_phases"]
    ]
    assert any(r.startswith("cuda:0 (all ranks) phase setup got worse") for r in backwards["reasons"])
    rows = table(document("t.py", [], {}, {"applied": []}, original, fixed)).splitlines()
    total = next(row for row in rows if row.startswith("all setup"))
    assert "GPU cuda:0 all ranks" in total and "10.00 GiB" in total and "-10.00 GiB" in total


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize("tty", [False, True], ids=["pipe", "terminal"])
def test_progress_indicator(tty: bool) -> None:
    stream = _Stream(tty)
    progress = Progress(stream)
    for phase_name in ("setup", "setup", "init"):
        progress("original", [{"current_phase": phase_name}], 1.0)
    progress.done("original", ChildResult("original", 0, False, 2.5))
    text = stream.getvalue()
    if tty:
        assert text.count("\r\x1b[K") == 4 and "runtime_check original: init (1 s)" in text
    else:
        assert text.splitlines() == [
            "runtime_check: original: setup (1 s)",
            "runtime_check: original: init (1 s)",
            "runtime_check: original: exit 0 after 2.5 s",
        ]
    assert text.endswith("runtime_check: original: exit 0 after 2.5 s\n")


def test_nvml_rows_show_the_process_and_its_cuda_context() -> None:
    """NVML's figures (at each phase's end) get their own rows; a context on a GPU not the rank's own gets one too."""
    original, fixed = gpu_run(6.25), gpu_run(3.75)
    for run_ in (original, fixed):
        run_["nvml"] = "measured"
        for p in run_["phases"].values():
            p["device_index"] = 1
            reserved = (p["peak_allocated_bytes"] or 0) + 64 * MIB
            p["nvml"] = {"1": {"process_used_bytes": reserved + 520 * MIB, "reserved_bytes": reserved,
                               "context_bytes": 520 * MIB, "device_used_bytes": 7 * GIB}}  # fmt: skip
    original["phases"]["load"]["nvml"]["0"] = {
        "process_used_bytes": 512 * MIB, "reserved_bytes": 0, "context_bytes": 512 * MIB, "device_used_bytes": GIB,
    }  # fmt: skip
    doc = document("t.py", [], {}, {"applied": []}, original, fixed)
    rows = table(doc).splitlines()
    context_rows = [row for row in rows if "CUDA context, NVML (end)" in row]
    assert len(context_rows) == 4 and all(row.count("520.00 MiB") == 2 for row in context_rows)
    stray = next(row for row in rows if "CUDA context cuda:0, NVML" in row)
    assert "512.00 MiB" in stray
    assert any("GPU process, NVML (end)" in row for row in rows)
    assert "NVML rows: what the driver says" in render(doc)
    assert doc["verdict"]["ok"], "NVML figures inform; the verdict stays on the allocator's peaks"


def test_without_nvml_the_report_says_not_measured() -> None:
    original, fixed = gpu_run(6.25), gpu_run(3.75)
    for run_ in (original, fixed):
        run_["nvml"] = "not measured: nvidia-ml-py is not installed"
    doc = document("t.py", [], {}, {"applied": []}, original, fixed)
    assert "NVML" not in table(doc)
    assert "CUDA context (NVML): not measured: nvidia-ml-py is not installed" in render(doc)
