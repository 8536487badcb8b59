"""The child harness against a stand-in `deepspeed` package: phase marking, stopping, hooks on import, --as-path.

The stand-in has DeepSpeed's shape where the harness touches it (`deepspeed.initialize`, and
`deepspeed.runtime.engine.DeepSpeedEngine.forward` / `.step`), so these tests take milliseconds; the real
DeepSpeed runs in test_runtime_check.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from runtime_check.launch import HARNESS

FAKE_DEEPSPEED = {
    "deepspeed/__init__.py": """
        import os
        from deepspeed.runtime.engine import DeepSpeedEngine
        def initialize(model=None, **kwargs):
            '''the stand-in's docstring'''
            if os.environ.get("FAKE_INIT_FAILS"):
                raise ValueError("bad config")
            if callable(model):  # lets a test act inside initialize
                model()
            return DeepSpeedEngine(model), None, None, None
    """,
    "deepspeed/runtime/__init__.py": "",
    "deepspeed/runtime/engine.py": """
        class DeepSpeedEngine:
            def __init__(self, model):
                self.model = model
            def __call__(self, x):
                return self.forward(x)
            def forward(self, x):
                return x
            def step(self):
                pass
    """,
}

TRAIN = """
    import sys
    import deepspeed
    engine, *_ = deepspeed.initialize(model="m")
    ballast = bytearray(64 * 2**20)  # touched below: 64 MiB more RSS in the load phase
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    del ballast
    for i in range({steps}):
        engine(i)
        engine.step()
        print("step", i, flush=True)
    print("script end", flush=True)
"""


def harness(tmp_path: Path, script: str, *args: str, env: dict[str, str] | None = None) -> tuple[Any, Any]:
    for name, text in FAKE_DEEPSPEED.items():
        path = tmp_path / "fake" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    script_path = tmp_path / "train.py"
    script_path.write_text(textwrap.dedent(script))
    report = tmp_path / "report.json"
    result = subprocess.run(
        [sys.executable, str(HARNESS), "--report", str(report), *args, str(script_path)],
        env={**os.environ, "PYTHONPATH": str(tmp_path / "fake"), **(env or {})},
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    return result, json.loads(report.read_text())


def test_phases_in_order_and_the_script_stops_after_n_steps(tmp_path: Path) -> None:
    result, report = harness(tmp_path, TRAIN.format(steps=5), "--steps", "2")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "step 0\n", "stopped inside the second engine.step(), before its print"
    assert report["status"] == "steps_done" and report["steps_completed"] == 2
    assert [p["name"] for p in report["phases"]] == ["setup", "init", "load", "step"]
    assert all(p["completed"] for p in report["phases"])
    starts = [p["start_s"] for p in report["phases"]]
    assert starts == sorted(starts)
    load = report["phases"][2]
    if report["rss_method"] in ("vmhwm", "sampled"):
        assert load["peak_rss_bytes"] - load["start_rss_bytes"] >= 60 * 2**20, "the 64 MiB of the load phase"
        assert report["phases"][3]["peak_rss_bytes"] < load["peak_rss_bytes"], "peaks are reset per phase"
    assert load["peak_allocated_bytes"] is None, "no CUDA here"


def test_stop_happens_inside_step_so_the_step_phase_ends_there(tmp_path: Path) -> None:
    _, report = harness(tmp_path, TRAIN.format(steps=1), "--steps", "1")
    assert report["status"] == "steps_done" and report["steps_completed"] == 1


def test_script_that_ends_before_n_steps(tmp_path: Path) -> None:
    result, report = harness(tmp_path, TRAIN.format(steps=1), "--steps", "3")
    assert result.returncode == 0
    assert "script end" in result.stdout
    assert report["status"] == "script_ended" and report["steps_completed"] == 1
    assert report["phases"][-1] == {**report["phases"][-1], "name": "step", "completed": True}


def test_initialize_that_raises_is_reported_in_the_init_phase(tmp_path: Path) -> None:
    result, report = harness(tmp_path, TRAIN.format(steps=1), env={"FAKE_INIT_FAILS": "1"})
    assert result.returncode == 1
    assert report["exception"]["type"] == "ValueError" and report["exception"]["message"] == "bad config"
    assert report["exception"]["phase"] == "init"
    assert [(p["name"], p["completed"]) for p in report["phases"]] == [("setup", True), ("init", False)]
    assert "ValueError: bad config" in result.stderr


def test_second_initialize_call_does_not_restart_the_phases(tmp_path: Path) -> None:
    script = """
        import deepspeed
        engine, *_ = deepspeed.initialize(model="a")
        other, *_ = deepspeed.initialize(model="b")
        engine(1)
        engine.step()
    """
    _, report = harness(tmp_path, script)
    assert report["initialize_calls"] == 2
    assert [p["name"] for p in report["phases"]] == ["setup", "init", "load", "step"]


def test_hooks_are_installed_on_import_and_keep_the_api(tmp_path: Path) -> None:
    script = """
        import sys
        print("before", "deepspeed" in sys.modules)
        from deepspeed import initialize
        print("doc", initialize.__doc__)
        print("wrapped", initialize.__wrapped__.__module__)
    """
    result, report = harness(tmp_path, script)
    assert "before False" in result.stdout, "the harness must not import deepspeed before the script does"
    assert "doc the stand-in's docstring" in result.stdout
    assert "wrapped deepspeed" in result.stdout
    assert not report["initialize_called"] and report["status"] == "script_ended"


def test_script_runs_as_main_with_argv_and_path(tmp_path: Path) -> None:
    (tmp_path / "helper_mod.py").write_text("VALUE = 42\n")
    script = """
        import sys, os
        import helper_mod
        print("main", __name__, os.path.basename(__file__), sys.argv[1:], helper_mod.VALUE)
    """
    result, _ = harness(tmp_path, script, "--steps", "1")
    assert "main __main__ train.py [] 42" in result.stdout


def test_as_path_runs_a_copy_as_if_it_were_the_original(tmp_path: Path) -> None:
    original = tmp_path / "project" / "train.py"
    original.parent.mkdir()
    original.write_text("raise SystemExit('the original must not run')\n")
    (original.parent / "sibling.py").write_text("NAME = 'sibling'\n")
    copy = tmp_path / "copy" / "train.py"
    copy.parent.mkdir()
    copy.write_text("import sibling\nprint('copy ran', __file__, sibling.NAME)\n1 / 0\n")
    report = tmp_path / "r.json"
    result = subprocess.run(
        [sys.executable, str(HARNESS), "--report", str(report), "--as-path", str(original), str(copy), "--x"],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert f"copy ran {original} sibling" in result.stdout
    assert f'File "{original}", line 3' in result.stderr and "1 / 0" in result.stderr, "the copy's lines"
    data = json.loads(report.read_text())
    assert data["script"] == str(original) and data["exception"]["type"] == "ZeroDivisionError"


@pytest.mark.parametrize(
    ("code", "status", "exit_code"), [("sys.exit(3)", "exit", 3), ("sys.exit()", "script_ended", 0)]
)
def test_script_calling_sys_exit(tmp_path: Path, code: str, status: str, exit_code: int) -> None:
    result, report = harness(tmp_path, f"import sys\n{code}\n")
    assert result.returncode == exit_code
    assert report["status"] == status and report["exit_code"] == exit_code


@pytest.mark.parametrize(("ending", "exit_code", "status"), [("", 0, "steps_done"), ("sys.exit(3)", 3, "exit")])
def test_the_teardown_is_skipped_once_the_report_is_written(
    tmp_path: Path, ending: str, exit_code: int, status: str
) -> None:
    """Under a launcher a rank's teardown (a process group's destructors, its peer gone) can abort after the rank
    has finished and reported, failing the launch: the harness exits with the script's status before teardown.
    The stand-in: an exit handler that aborts the process."""
    script = f"""
        import atexit, logging, os, sys
        import deepspeed
        atexit.register(os.abort)
        logging.basicConfig(stream=sys.stderr)
        logging.getLogger("train").warning("logged before the end")
        {ending}
        engine, *_ = deepspeed.initialize(model="m")
        engine(0)
        engine.step()
    """
    result, report = harness(tmp_path, script, "--steps", "1")
    assert result.returncode == exit_code, result.stderr
    assert report["status"] == status and report["exit_code"] == exit_code
    assert "logged before the end" in result.stderr


def test_report_is_written_at_each_boundary(tmp_path: Path) -> None:
    """A child killed mid-phase leaves the phases it finished: the report on disk is current at every boundary."""
    script = """
        import json, sys
        import deepspeed
        engine, *_ = deepspeed.initialize(model="m")
        report = json.load(open(sys.argv[1]))
        print("seen", report["current_phase"], [p["name"] for p in report["phases"] if p["completed"]])
    """
    for name, text in FAKE_DEEPSPEED.items():
        path = tmp_path / "fake" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (tmp_path / "train.py").write_text(textwrap.dedent(script))
    report = tmp_path / "r.json"
    result = subprocess.run(
        [sys.executable, str(HARNESS), "--report", str(report), str(tmp_path / "train.py"), str(report)],
        env={**os.environ, "PYTHONPATH": str(tmp_path / "fake")}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert "seen load ['setup', 'init']" in result.stdout, result.stderr


FAKE_TORCH = """
    import types
    __version__ = "0.0+stand-in"

    class _Cuda:
        # The caching allocator's counters as torch.cuda exposes them, for two devices.
        def __init__(self):
            self.allocated, self.peak, self.current, self.initialized = [0, 0], [0, 0], 0, False
            self.touched = set()
        def is_available(self): return True
        def is_initialized(self): return self.initialized
        def device_count(self): return 2
        def current_device(self): return self.current
        def set_device(self, device): self.current = device
        def memory_allocated(self, device): return self.allocated[device]
        def max_memory_allocated(self, device): return self.peak[device]
        def max_memory_reserved(self, device): return 2 * self.peak[device]
        def memory_reserved(self, device): return 2 * self.allocated[device]
        def reset_peak_memory_stats(self, device): self.peak[device] = self.allocated[device]
        def synchronize(self): pass
        def get_device_name(self, device): return "Stand-in GPU"
        def get_device_properties(self, device): return types.SimpleNamespace(total_memory=1000000)
        def alloc(self, device, size):
            self.initialized = True
            self.touched.add(device)  # the process now holds a CUDA context there
            self.allocated[device] += size
            self.peak[device] = max(self.peak[device], self.allocated[device])
        def free(self, device, size): self.allocated[device] -= size

    cuda = _Cuda()
"""

GPU_SCRIPT = """
    import torch
    import deepspeed
    torch.cuda.alloc(0, 100)                       # setup: the model on cuda:0 before the device is set
    def inside_initialize():
        torch.cuda.set_device(1)
        torch.cuda.alloc(1, 1000)                  # the engine on the rank's own device
        torch.cuda.free(0, 100)
    engine, *_ = deepspeed.initialize(model=inside_initialize)
    torch.cuda.alloc(1, 500)                       # load: a checkpoint on the GPU, then freed
    torch.cuda.free(1, 500)
    engine(1)
    torch.cuda.alloc(1, 300)                       # step
    engine.step()
"""


def test_gpu_counters_per_phase_and_device(tmp_path: Path) -> None:
    """The CUDA path, on a stand-in torch.cuda: peaks reset at each boundary, the rank's own device from LOCAL_RANK,
    memory the rank put on another device listed under `devices`."""
    fake_torch = tmp_path / "fake" / "torch" / "__init__.py"
    fake_torch.parent.mkdir(parents=True)
    fake_torch.write_text(textwrap.dedent(FAKE_TORCH))
    result, report = harness(tmp_path, GPU_SCRIPT, env={"LOCAL_RANK": "1", "RANK": "1"})
    assert result.returncode == 0, result.stderr
    phases = {p["name"]: p for p in report["phases"]}
    own = [(phases[n]["peak_allocated_bytes"], phases[n]["device_index"]) for n in ("setup", "init", "load", "step")]
    assert own == [(0, 1), (1000, 1), (1500, 1), (1300, 1)]
    assert phases["setup"]["devices"] == {
        "0": {"peak_allocated_bytes": 100, "peak_reserved_bytes": 200},
        "1": {"peak_allocated_bytes": 0, "peak_reserved_bytes": 0},
    }
    assert phases["init"]["devices"]["0"]["peak_allocated_bytes"] == 100
    assert set(phases["load"]["devices"]) == {"1"}, "cuda:0 held nothing in the load phase"
    assert phases["load"]["start_allocated_bytes"] == 1000 and phases["load"]["peak_reserved_bytes"] == 3000
    assert report["device"] == {"type": "cuda", "index": 1, "name": "Stand-in GPU", "count": 2, "total_bytes": 1000000}
    assert report["rank"] == 1 and report["versions"]["torch"] == "0.0+stand-in"


FAKE_NVML = """
    import os
    import types
    import torch
    CONTEXT = 500 * 1024 * 1024
    def nvmlInit(): pass
    def nvmlDeviceGetHandleByIndex(index): return index
    def nvmlDeviceGetMemoryInfo(handle): return types.SimpleNamespace(used=7 * 2**30, total=140 * 2**30)
    def nvmlDeviceGetComputeRunningProcesses(handle):
        # another process, and this one on every device it touched: its context plus what its allocator reserved
        found = [types.SimpleNamespace(pid=1, usedGpuMemory=2**30)]
        if handle in torch.cuda.touched:
            pid = 2 if os.environ.get("FAKE_NVML_OTHER_NAMESPACE") else os.getpid()
            found.append(types.SimpleNamespace(pid=pid, usedGpuMemory=CONTEXT + torch.cuda.memory_reserved(handle)))
        return found
"""


def _fake_gpu(tmp_path: Path, nvml: bool) -> None:
    fake_torch = tmp_path / "fake" / "torch" / "__init__.py"
    fake_torch.parent.mkdir(parents=True)
    fake_torch.write_text(textwrap.dedent(FAKE_TORCH))
    if nvml:
        (tmp_path / "fake" / "pynvml.py").write_text(textwrap.dedent(FAKE_NVML))


def test_nvml_counts_the_cuda_context_per_process_and_device(tmp_path: Path) -> None:
    """NVML's figure for this process minus the allocator's reserved bytes: the context, on every device the
    process touched (here cuda:0 before the device was set, then its own cuda:1), at the end of each phase."""
    _fake_gpu(tmp_path, nvml=True)
    result, report = harness(tmp_path, GPU_SCRIPT, env={"LOCAL_RANK": "1", "RANK": "1"})
    assert result.returncode == 0, result.stderr
    assert report["nvml"] == "measured"
    phases = {p["name"]: p for p in report["phases"]}
    context = 500 * 1024 * 1024
    setup = phases["setup"]["nvml"]
    assert setup["0"] == {
        "process_used_bytes": context + 200,
        "reserved_bytes": 200,
        "context_bytes": context,
        "device_used_bytes": 7 * 2**30,
    }
    assert setup["1"]["process_used_bytes"] is None and setup["1"]["context_bytes"] is None  # not touched yet
    for name in ("init", "load", "step"):
        assert phases[name]["nvml"]["1"]["context_bytes"] == context
        assert phases[name]["nvml"]["0"]["context_bytes"] == context, "the stray context on cuda:0 stays"
    assert phases["step"]["nvml"]["1"]["reserved_bytes"] == 2 * 1300


def test_nvml_not_installed_or_blind_to_the_process_says_not_measured(tmp_path: Path) -> None:
    _fake_gpu(tmp_path, nvml=False)
    _, report = harness(tmp_path, GPU_SCRIPT)
    assert report["nvml"] == "not measured: nvidia-ml-py is not installed"
    assert all(p["nvml"] == {} for p in report["phases"])
    blind = tmp_path / "blind"
    blind.mkdir()
    _fake_gpu(blind, nvml=True)
    _, report = harness(blind, GPU_SCRIPT, env={"FAKE_NVML_OTHER_NAMESPACE": "1"})
    assert report["nvml"].startswith("not measured: NVML does not list this process")


def test_cpu_run_has_no_nvml_figures(tmp_path: Path) -> None:
    _, report = harness(tmp_path, TRAIN.format(steps=1))
    assert report["nvml"] == "not measured: CUDA was not used"


PIPELINE_DEEPSPEED = {
    "deepspeed/runtime/pipe/__init__.py": "",
    "deepspeed/runtime/pipe/engine.py": """
        from deepspeed.runtime.engine import DeepSpeedEngine
        class PipelineEngine(DeepSpeedEngine):
            # as DeepSpeed's: forward passes go through DeepSpeedEngine.forward, the optimizer step does not
            # go through step()
            def train_batch(self, data_iter=None):
                for micro in range(2):
                    super().forward(micro)
                print("batch", flush=True)
                return 0.5
            def step(self):
                raise RuntimeError("Only train_batch() is accessible in pipeline mode.")
    """,
}


def test_a_pipeline_engine_gets_a_step_phase_from_train_batch(tmp_path: Path) -> None:
    for name, text in PIPELINE_DEEPSPEED.items():
        path = tmp_path / "fake" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    script = """
        import deepspeed
        from deepspeed.runtime.pipe.engine import PipelineEngine
        deepspeed.initialize(model="m")
        engine = PipelineEngine("m")
        for _ in range(5):
            engine.train_batch()
        print("script end", flush=True)
    """
    result, report = harness(tmp_path, script, "--steps", "2")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "batch\nbatch\n", "stopped after the second train_batch() returned"
    assert report["status"] == "steps_done" and report["steps_completed"] == 2
    assert [p["name"] for p in report["phases"]] == ["setup", "init", "load", "step"]
