"""runtime_check end to end on the CPU with real DeepSpeed: each test runs `python -m runtime_check` in a subprocess.

The scripts are tiny; each run costs a few seconds (DeepSpeed's import and initialize dominate).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from runtime_check.fixed_script import NothingToRun, make_fixed
from runtime_check.launch import run_child
from runtime_check.report import summarize

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ROOT / "fixtures" / "runtime"
MOVED = RUNTIME / "model_moved.py"
DEMO = RUNTIME / "load_after_initialize.py"
ZERO3 = RUNTIME / "zero3_load_after_initialize.py"
DS_CHECKPOINT = RUNTIME / "load_deepspeed_checkpoint.py"
PIPELINE = RUNTIME / "pipeline_train_batch.py"
HF_RESUME = RUNTIME / "hf_resume_after_initialize.py"
PHASES = ["setup", "init", "load", "step"]


def start_runtime_check(
    tmp_path: Path, *args: str, timeout: float = 300
) -> Callable[[], tuple[subprocess.CompletedProcess[str], Any]]:
    """Start the CLI with its temp files confined to tmp_path/tmp; calling the result waits for it and returns the
    process and the JSON report (and checks that no temporary file is left behind)."""
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    report = tmp_path / "report.json"
    env = dict(os.environ, TMPDIR=str(temp))
    argv = [sys.executable, "-m", "runtime_check", *args[:1], "--json", str(report), *args[1:]]
    process = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )  # fmt: skip

    def finish() -> tuple[subprocess.CompletedProcess[str], Any]:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        finally:
            process.kill()  # nothing once it has ended; on a timeout, the run fails with no process left behind
        result = subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)
        data = json.loads(report.read_text(encoding="utf-8")) if report.exists() else None
        leftovers = [p.name for p in temp.iterdir() if p.name.startswith("runtime_check-")]
        assert not leftovers, f"temporary files left behind: {leftovers}"
        return result, data

    return finish


def runtime_check(tmp_path: Path, *args: str, timeout: float = 300) -> tuple[subprocess.CompletedProcess[str], Any]:
    """Run the CLI with its temp files confined to tmp_path/tmp; return the process and the JSON report."""
    return start_runtime_check(tmp_path, *args, timeout=timeout)()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status  # a zombie waiting for a reaper is dead for our purpose


def test_end_to_end_fixed_script_runs_and_phases_are_measured(tmp_path: Path) -> None:
    before = digest(MOVED)
    result, data = runtime_check(tmp_path, str(MOVED), "--unsafe-fixes", "--steps", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert digest(MOVED) == before, "the user's script must never be written"
    assert [d["code"] for d in data["fix"]["applied"]] == ["DSL101"]
    assert "model.to(device)" in data["fix"]["diff"]
    for label in ("original", "fixed"):
        run = data[label]
        assert run["ran"] and run["errors"] == [] and run["exit_code"] == 0
        assert run["status"] == "steps_done" and run["steps_completed"] == 2
        assert list(run["phases"]) == PHASES
        for phase in run["phases"].values():
            assert phase["completed"]
            assert phase["peak_rss_bytes"] >= phase["start_rss_bytes"] > 10 * 2**20
            assert phase["seconds"] >= 0
        assert run["phases"]["init"]["peak_rss_bytes"] > run["phases"]["setup"]["start_rss_bytes"]
    assert data["verdict"]["ok"] and data["verdict"]["fixed_ran"] and data["verdict"]["no_phase_worse"]
    on_gpu = data["device"]["type"] == "cuda"
    assert data["verdict"]["metric"] == ("peak_allocated_bytes" if on_gpu else "peak_rss_bytes")
    assert data["verdict"]["phases_compared"] == PHASES
    assert data["verdict"]["load_phase"]["original"] == data["original"]["phases"]["load"]["peak_rss_bytes"]
    assert set(data["versions"]) == {"python", "dslint", "torch", "deepspeed"}
    assert data["versions"]["deepspeed"] == data["fixed"]["versions"]["deepspeed"]
    assert data["device"]["type"] == ("cuda" if torch.cuda.is_available() else "cpu")
    assert "CPU peak RSS" in result.stdout and "verdict: OK" in result.stdout
    assert "runtime_check: original: init" in result.stderr and "runtime_check: fixed: exit 0" in result.stderr


def test_script_that_crashes(tmp_path: Path) -> None:
    result, data = runtime_check(tmp_path, str(MOVED), "--unsafe-fixes", "--", "--crash")
    assert result.returncode == 1
    for label in ("original", "fixed"):
        run = data[label]
        assert not run["ran"]
        assert run["errors"] == ["RuntimeError: the demo crashed on purpose (in phase load)"]
        assert run["exception"]["phase"] == "load" and "Traceback" in run["exception"]["traceback"]
        assert run["phases"]["init"]["completed"] and not run["phases"]["load"]["completed"]
        assert "the demo crashed on purpose" in run["output_tail"]
    assert not data["verdict"]["ok"] and not data["verdict"]["fixed_ran"]
    assert "load" not in data["verdict"]["phases_compared"], "an unfinished phase has no peak to compare"
    assert "verdict: FAIL: the fixed script did not run" in result.stdout


def test_script_that_never_calls_initialize(tmp_path: Path) -> None:
    result, data = runtime_check(tmp_path, str(MOVED), "--unsafe-fixes", "--", "--no-train")
    assert result.returncode == 1
    assert data["fixed"]["errors"] == ["deepspeed.initialize was never called"]
    assert data["fixed"]["status"] == "script_ended" and list(data["fixed"]["phases"]) == ["setup"]
    assert "deepspeed.initialize was never called" in result.stdout


HANG_TEST = "test_script_that_hangs_is_killed_with_its_process_group"


@pytest.fixture(scope="module", autouse=True)
def hang_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[], tuple[subprocess.CompletedProcess[str], Any, Path]]]:
    """The hang test's run, started with this module's first test when that test is selected: it waits out two
    20 s timeouts, mostly idle, while the module's other tests run (its assertions are the hang test's)."""
    if not any(item.name == HANG_TEST for item in request.session.items):
        yield lambda: pytest.fail("the hang run was not started")  # never called: its test is not selected
        return
    folder = tmp_path_factory.mktemp("hang")
    pidfile = folder / "sleeper.pid"
    finish = start_runtime_check(folder, str(MOVED), "--unsafe-fixes", "--timeout", "20", "--", "--hang", str(pidfile))
    done: list[tuple[subprocess.CompletedProcess[str], Any]] = []

    def wait() -> tuple[subprocess.CompletedProcess[str], Any, Path]:
        if not done:
            done.append(finish())
        return (*done[0], pidfile)

    yield wait
    if not done:  # the hang test did not run to its wait (it failed first): reap the run
        finish()


def test_script_that_hangs_is_killed_with_its_process_group(
    hang_run: Callable[[], tuple[subprocess.CompletedProcess[str], Any, Path]],
) -> None:
    result, data, pidfile = hang_run()
    assert result.returncode == 1
    for label in ("original", "fixed"):
        assert data[label]["timed_out"]
        assert data[label]["errors"] == ["timed out after 20 s in phase setup; its process group was killed"]
        assert 20 <= data[label]["seconds"] < 60
    sleeper = int(pidfile.read_text())
    assert not alive(sleeper), "the script's own child process must die with the group"


def test_fixer_changes_nothing_is_a_reported_failure(tmp_path: Path) -> None:
    clean = tmp_path / "clean.py"
    clean.write_text(
        "import deepspeed\n"
        "engine, *_ = deepspeed.initialize(model=model, config='ds.json')\n"
        "for batch in loader:\n"
        "    engine.backward(engine(batch.to(engine.device)))\n"
        "    engine.step()\n"
    )
    result, data = runtime_check(tmp_path, str(clean))
    assert result.returncode == 1
    assert "the fixer changes nothing" in result.stdout and "there is no fixed script to compare" in result.stdout
    assert "runtime_check: original" not in result.stderr, "nothing must be run"
    assert data["verdict"] == {"ok": False, "fixed_ran": False, "reasons": data["errors"]["runtime_check"]}


def test_fixer_changes_nothing_without_unsafe_fixes_names_the_option(tmp_path: Path) -> None:
    result, _ = runtime_check(tmp_path, str(MOVED))
    assert result.returncode == 1
    assert "1 unsafe fix(es) available with --unsafe-fixes" in result.stdout


@pytest.mark.parametrize(
    "args",
    [["missing.py"], [str(MOVED), "--steps", "0"], [str(MOVED), "--timeout", "0"], [str(MOVED), "--bogus"], []],
    ids=["no-script", "steps", "timeout", "unknown-option", "no-arguments"],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "runtime_check", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 2, result.stderr
    assert "usage:" in result.stderr


def test_zero3_original_fails_with_size_mismatch(tmp_path: Path) -> None:
    """GROUND_TRUTH #11 on the CPU: raw load_state_dict after a ZeRO-3 initialize fails, in the load phase."""
    result = run_child("original", ZERO3, ZERO3, [], steps=1, timeout=300, workdir=tmp_path)
    report = result.report
    assert report is not None and result.returncode == 1
    assert report["exception"]["phase"] == "load"
    assert "size mismatch" in report["exception"]["message"]
    assert "the shape in current model is torch.Size([0])" in report["exception"]["message"]
    assert [p["name"] for p in report["phases"]] == ["setup", "init", "load"]
    summary = summarize(result, 300)
    assert not summary["ran"] and "size mismatch for 0.weight" in summary["errors"][0]


def test_pipeline_engine_train_batch_is_the_step_phase(tmp_path: Path) -> None:
    """A real PipelineEngine (one stage, gloo) trains through train_batch(): the harness stops it after N calls."""
    result = run_child("original", PIPELINE, PIPELINE, [], steps=2, timeout=300, workdir=tmp_path)
    report = result.report
    assert report is not None and result.returncode == 0, result.output_tail
    assert report["status"] == "steps_done" and report["steps_completed"] == 2
    assert [(p["name"], p["completed"]) for p in report["phases"]] == [(name, True) for name in PHASES]


def test_hf_resume_demo_is_fixed_by_loading_before_initialize() -> None:
    """The fixed script runtime_check runs for the HF demo (the H200 evidence of issue 14): the load and the
    load_state_dict move above initialize, where `model` is still the model, and load to the CPU."""
    fixed = make_fixed(HF_RESUME, unsafe=True)
    lines = [line.strip() for line in fixed.text.splitlines()]
    load = lines.index('state_dict = torch.load(args.checkpoint, map_location="cpu")  # expect: DSL201')
    assert lines[load + 1] == "model.load_state_dict(state_dict)  # expect: DSL209"
    assert lines[load + 2].startswith("model, optimizer, _, _ = deepspeed.initialize(model=model")
    assert [d.code for d in fixed.applied] == ["DSL209"]
    safe = make_fixed(HF_RESUME, unsafe=False)  # DSL201 alone: the load stays after initialize, on the CPU
    assert [d.code for d in safe.applied] == ["DSL201"] and safe.changed_lines() == [68]


def test_zero3_fixed_script_runs_once_the_fixer_moves_the_load(tmp_path: Path) -> None:
    """Asserts the ZeRO-3 outcome once dslint's unsafe load-before-initialize fix exists (checkpoint rules)."""
    try:
        make_fixed(ZERO3, unsafe=True)
    except NothingToRun:
        result, data = runtime_check(tmp_path, str(ZERO3), "--unsafe-fixes")
        assert result.returncode == 1 and "the fixer changes nothing" in result.stdout
        return
    result, data = runtime_check(tmp_path, str(ZERO3), "--unsafe-fixes")
    assert not data["original"]["ran"] and "size mismatch" in data["original"]["errors"][0]
    assert data["fixed"]["ran"], data["fixed"]["errors"]
    assert result.returncode == 0, result.stdout


def test_demo_load_phase(tmp_path: Path) -> None:
    """The demo's torch.load(map_location="cuda"): once the fixer rewrites that line (DSL201), both scripts run
    and the load phase is not worse; on a GPU its peak allocated memory drops by about the checkpoint's size.
    On a CPU both versions take the demo's CPU branch, so no drop is asserted there."""
    text = DEMO.read_text(encoding="utf-8")
    cuda_line = next(
        n for n, line in enumerate(text.splitlines(), 1) if 'torch.load(checkpoint, map_location="cuda")' in line
    )
    try:
        fixed = make_fixed(DEMO, unsafe=False)
    except NothingToRun:
        result, _ = runtime_check(tmp_path, str(DEMO))
        assert result.returncode == 1 and "the fixer changes nothing" in result.stdout
        return
    assert cuda_line in fixed.changed_lines()
    result, data = runtime_check(tmp_path, str(DEMO))
    assert result.returncode == 0, result.stdout
    assert data["original"]["ran"] and data["fixed"]["ran"]
    load = data["verdict"]["load_phase"]
    assert load is not None
    if data["verdict"]["metric"] == "peak_allocated_bytes":
        layers, width = 4, 256  # the demo's tiny size
        checkpoint_bytes = layers * (width * width + width) * 4
        assert load["delta"] <= -0.9 * checkpoint_bytes


@pytest.mark.skipif(
    torch.cuda.is_available() and torch.cuda.device_count() < 2, reason="two ranks on a GPU machine need two GPUs"
)
def test_two_ranks_on_the_cpu_report_each_rank(tmp_path: Path) -> None:
    """--nproc 2: torchrun starts both ranks (gloo on the CPU); each rank's phases are reported and compared."""
    result, data = runtime_check(tmp_path, str(MOVED), "--unsafe-fixes", "--nproc", "2", timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    for label in ("original", "fixed"):
        ranks = data[label]["ranks"]
        assert sorted(ranks) == ["0", "1"]
        for rank, report in ranks.items():
            tail = data[label].get("output_tail", "")[-3000:]  # the launcher's output, kept when a rank failed
            assert report["ran"] and report["steps_completed"] == 1, (label, rank, report["error"], tail)
            assert list(report["phases"]) == PHASES
    assert {"rank 0 load", "rank 1 load"} <= set(data["verdict"]["phases_compared"])
    assert "r1 step" in result.stdout


def test_deepspeed_checkpoint_demo_becomes_load_checkpoint(tmp_path: Path) -> None:
    """The codemod dslint is known for (DSL203, unsafe): torch.load of a DeepSpeed checkpoint directory + raw
    load_state_dict -> engine.load_checkpoint(dir, load_module_only=True). Asserted once the fixer does it (checkpoint
    rules); on a CPU the original cannot map to CUDA and fails at its torch.load, the fixed script runs."""
    try:
        make_fixed(DS_CHECKPOINT, unsafe=True)
    except NothingToRun:
        result, _ = runtime_check(tmp_path, str(DS_CHECKPOINT), "--unsafe-fixes")
        assert result.returncode == 1 and "the fixer changes nothing" in result.stdout
        return
    result, data = runtime_check(tmp_path, str(DS_CHECKPOINT), "--unsafe-fixes")
    assert "engine.load_checkpoint(" in data["fix"]["diff"]
    assert data["fixed"]["ran"], data["fixed"]["errors"]
    assert result.returncode == 0, result.stdout
    if data["device"]["type"] == "cpu":
        assert "Attempting to deserialize object on a CUDA device" in data["original"]["errors"][0]
        assert data["original"]["exception"]["phase"] == "load"
    else:
        assert data["original"]["ran"] and data["verdict"]["load_phase"]["delta"] < 0
