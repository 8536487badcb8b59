"""The harness that runs inside each child process, around the user's script.

Run as a file, not as a module, so that it needs nothing but the standard library and does not put
runtime_check's package root on the child's sys.path:

    python harness.py --report REPORT.json --steps N [--as-path ORIGINAL] SCRIPT [SCRIPT_ARGS...]

It executes SCRIPT as `__main__` (as `python SCRIPT` would: sys.argv, sys.path[0], `__file__`), and marks phases:

    setup  harness start -> deepspeed.initialize is called (imports, model built, anything loaded before it)
    init   the initialize call itself
    load   initialize returned -> the engine's first forward (torch.load, load_state_dict, load_checkpoint ...)
    step   the first forward -> the Nth return of engine.step() (or of a pipeline engine's train_batch()); then
           the script is stopped (StopAfterSteps)

Hooks are installed when the script imports deepspeed (a meta path finder wraps the module's loader), never before:
`deepspeed.initialize`, `DeepSpeedEngine.forward` / `.step` and `PipelineEngine.train_batch` are wrapped on the
classes and module.

Per phase it records wall time, peak RSS (VmHWM after a reset through /proc/self/clear_refs, else a sampling thread,
else getrusage's whole-run peak) and, when CUDA is initialised, each device's peak allocated and reserved bytes
(the caching allocator's peak counters, reset at every boundary), and at the end of each phase what NVML says the
process holds on each GPU, its CUDA context included (optional: `nvidia-ml-py`). The report is rewritten
atomically at every boundary, so a child killed by a timeout still leaves the phases it finished.

With `--as-path`, SCRIPT's text is run as if it lived at ORIGINAL (its `__file__`, sys.path[0] and code filename),
so that a fixed copy kept in a temporary directory finds the files and modules beside the user's script.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import json
import linecache
import logging
import os
import platform
import re
import sys
import threading
import time
import traceback
import types
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

PHASES = ("setup", "init", "load", "step")
REPORT_VERSION = 1
SAMPLE_INTERVAL_S = 0.005
MESSAGE_LIMIT = 4000


class StopAfterSteps(SystemExit):
    """Raised from the wrapped engine.step() after the requested number of steps: ends the script cleanly."""


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            match = re.search(rf"^{field}:\s+(\d+) kB", status.read(), flags=re.M)
    except OSError:
        return None
    return int(match.group(1)) * 1024 if match else None


class RssMeter:
    """Peak resident memory per phase. Methods, best first: `vmhwm` (the kernel's high-water mark, reset with
    `echo 5 > /proc/self/clear_refs`: exact), `sampled` (a thread reading VmRSS every 5 ms: misses spikes shorter
    than that), `ru_maxrss` (getrusage: the peak of the whole run so far, not per phase)."""

    def __init__(self) -> None:
        self.method = "ru_maxrss"
        self._peak = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        if _status_kib("VmHWM") is not None and self._reset_hwm():
            self.method = "vmhwm"
        elif _status_kib("VmRSS") is not None:
            self.method = "sampled"
            threading.Thread(target=self._sample, name="runtime_check-rss", daemon=True).start()

    @staticmethod
    def _reset_hwm() -> bool:
        try:
            with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
                clear.write("5")
        except OSError:
            return False
        return True

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            current = _status_kib("VmRSS") or 0
            with self._lock:
                self._peak = max(self._peak, current)

    def current(self) -> int:
        value = _status_kib("VmRSS")
        if value is not None:
            return value
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)

    def reset(self) -> None:
        if self.method == "vmhwm":
            self._reset_hwm()
        elif self.method == "sampled":
            with self._lock:
                self._peak = self.current()

    def peak(self) -> int:
        if self.method == "vmhwm":
            return max(_status_kib("VmHWM") or 0, self.current())
        if self.method == "sampled":
            with self._lock:
                return max(self._peak, self.current())
        return self.current()


def _cuda() -> Any | None:
    """torch.cuda when the script has imported torch and CUDA is initialised; never imports or initialises it."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is None:
        return None
    try:
        return cuda if cuda.is_available() and cuda.is_initialized() else None
    except Exception:
        return None


def _own_device(cuda: Any) -> int:
    """The rank's device: LOCAL_RANK, as DeepSpeed sets it in initialize; before that call the current device is
    still cuda:0 on every rank, which would hide exactly the misplacement a multi-rank run is meant to show."""
    local_rank = _env_int("LOCAL_RANK")
    if local_rank is not None and 0 <= local_rank < cuda.device_count():
        return local_rank
    return int(cuda.current_device())


class NvmlMeter:
    """What NVML says this process holds on each GPU, read at the end of every phase: the driver's figure for the
    process (`usedGpuMemory`: its CUDA context plus everything its allocator reserved) beside the allocator's own
    current reserved bytes, whose difference is the context (and any memory allocated outside PyTorch's caching
    allocator: cuBLAS and NCCL workspaces). NVML gives current usage, not a peak. `nvidia-ml-py` is imported lazily
    and is optional: without it, or where NVML cannot see this process (a PID namespace), `status` says why and the
    figures are absent ("not measured")."""

    def __init__(self) -> None:
        self.status = "not measured: CUDA was not used"
        self._nvml: Any | None = None
        self._started = False
        self._handles: dict[int, Any] = {}

    def _start(self) -> Any | None:
        if self._started:
            return self._nvml
        self._started = True
        try:
            import pynvml  # type: ignore[import-not-found]  # nvidia-ml-py, optional
        except ImportError:
            self.status = "not measured: nvidia-ml-py is not installed"
            return None
        try:
            pynvml.nvmlInit()
        except Exception as error:
            self.status = f"not measured: NVML did not start ({error})"
            return None
        self._nvml = pynvml
        self.status = "measured"
        return pynvml

    def _handle(self, nvml: Any, cuda: Any, device: int) -> Any:
        """The NVML handle of CUDA device `device` (NVML numbers GPUs its own way: matched by UUID, else PCI bus)."""
        if device in self._handles:
            return self._handles[device]
        props = cuda.get_device_properties(device)
        handle = None
        uuid = getattr(props, "uuid", None)
        if uuid is not None:
            with contextlib.suppress(Exception):
                text = str(uuid)
                handle = nvml.nvmlDeviceGetHandleByUUID(text if text.startswith("GPU-") else f"GPU-{text}")
        if handle is None and hasattr(props, "pci_bus_id"):
            with contextlib.suppress(Exception):
                bus = f"{getattr(props, 'pci_domain_id', 0):08x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
                handle = nvml.nvmlDeviceGetHandleByPciBusId(bus)
        if handle is None:
            handle = nvml.nvmlDeviceGetHandleByIndex(device)
        self._handles[device] = handle
        return handle

    def read(self, cuda: Any, devices: Sequence[int]) -> dict[str, dict[str, int | None]]:
        """Per CUDA device (of `devices`, and any other where NVML lists this process): NVML's bytes for this
        process, the allocator's current reserved bytes, and the difference (the context and non-allocator
        memory); plus the device's total use, which includes other processes."""
        nvml = self._start()
        if nvml is None:
            return {}
        found: dict[str, dict[str, int | None]] = {}
        pid = os.getpid()
        seen_self = False
        for device in range(cuda.device_count()):
            try:
                handle = self._handle(nvml, cuda, device)
                processes = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
                device_used = int(nvml.nvmlDeviceGetMemoryInfo(handle).used)
            except Exception as error:
                self.status = f"not measured: NVML failed ({error})"
                return {}
            used = next((p.usedGpuMemory for p in processes if p.pid == pid), None)
            seen_self = seen_self or used is not None
            if used is None and device not in devices:
                continue
            reserved = int(cuda.memory_reserved(device))
            found[str(device)] = {
                "process_used_bytes": int(used) if used is not None else None,
                "reserved_bytes": reserved,
                "context_bytes": max(int(used) - reserved, 0) if used is not None else None,
                "device_used_bytes": device_used,
            }
        if not seen_self and found:
            self.status = "not measured: NVML does not list this process (another PID namespace?)"
        elif seen_self:
            self.status = "measured"
        return found


class Recorder:
    """Phases, their measurements, and the report file."""

    def __init__(self, report_path: str, steps: int, script: str) -> None:
        self.report_path = report_path
        self.steps_requested = steps
        self.steps_done = 0
        self.script = script
        self.t0 = time.monotonic()
        self.rss = RssMeter()
        self.nvml = NvmlMeter()
        self.phases: list[dict[str, Any]] = []
        self.current: dict[str, Any] | None = None
        self.initialize_calls = 0
        self.forward_seen = False
        self.stopped = "running"
        self.exception: dict[str, Any] | None = None
        self.exit_code: int | None = None
        self.begin("setup")

    # phases -----------------------------------------------------------------------------------------------------
    def begin(self, name: str) -> None:
        cuda = _cuda()
        phase: dict[str, Any] = {
            "name": name,
            "completed": False,
            "start_s": round(time.monotonic() - self.t0, 6),
            "seconds": None,
            "start_rss_bytes": self.rss.current(),
            "peak_rss_bytes": None,
            "start_allocated_bytes": None,
            "peak_allocated_bytes": None,
            "peak_reserved_bytes": None,
            "devices": {},
            "device_index": None,
            "nvml": {},
        }
        if cuda is not None:
            phase["start_allocated_bytes"] = int(cuda.memory_allocated(_own_device(cuda)))
            for device in range(cuda.device_count()):
                cuda.reset_peak_memory_stats(device)
        self.rss.reset()
        self._t_phase = time.monotonic()
        self.current = phase

    def end(self, completed: bool) -> None:
        phase = self.current
        if phase is None:
            return
        cuda = _cuda()
        if cuda is not None:
            with contextlib.suppress(Exception):  # a failed kernel must not hide the script's own error
                cuda.synchronize()
            self._read_cuda(cuda, phase)
            with contextlib.suppress(Exception):  # optional, never fatal
                phase["nvml"] = self.nvml.read(cuda, [int(d) for d in phase["devices"]])
        phase["peak_rss_bytes"] = max(self.rss.peak(), phase["start_rss_bytes"])
        phase["seconds"] = round(time.monotonic() - self._t_phase, 6)
        phase["completed"] = completed
        self.phases.append(phase)
        self.current = None

    @staticmethod
    def _read_cuda(cuda: Any, phase: dict[str, Any]) -> None:
        # The allocator's counters are host-side: reading them creates no context on devices this rank never used.
        devices: dict[str, dict[str, int]] = {}
        for device in range(cuda.device_count()):
            allocated = int(cuda.max_memory_allocated(device))
            reserved = int(cuda.max_memory_reserved(device))
            if allocated or reserved or device == _own_device(cuda):
                devices[str(device)] = {"peak_allocated_bytes": allocated, "peak_reserved_bytes": reserved}
        phase["devices"] = devices
        phase["device_index"] = _own_device(cuda)
        # The rank's own device is what the per-rank comparison reads; other devices show misplaced tensors.
        own = devices.get(str(_own_device(cuda)), {"peak_allocated_bytes": 0, "peak_reserved_bytes": 0})
        phase["peak_allocated_bytes"] = own["peak_allocated_bytes"]
        phase["peak_reserved_bytes"] = own["peak_reserved_bytes"]
        if phase["start_allocated_bytes"] is None:
            phase["start_allocated_bytes"] = 0  # CUDA was initialised during this phase

    def boundary(self, next_phase: str) -> None:
        self.end(completed=True)
        self.begin(next_phase)
        self.write()

    # events from the hooks ----------------------------------------------------------------------------------------
    def on_initialize_called(self) -> bool:
        self.initialize_calls += 1
        if self.initialize_calls != 1 or self.current is None or self.current["name"] != "setup":
            return False
        self.boundary("init")
        return True

    def on_initialize_returned(self) -> None:
        if self.current is not None and self.current["name"] == "init":
            self.boundary("load")

    def on_forward(self) -> None:
        if not self.forward_seen and self.current is not None and self.current["name"] == "load":
            self.forward_seen = True
            self.boundary("step")

    def on_step_returned(self) -> None:
        if self.current is None or self.current["name"] != "step":
            return
        self.steps_done += 1
        if self.steps_done >= self.steps_requested:
            raise StopAfterSteps(0)

    # the end ------------------------------------------------------------------------------------------------------
    def finish(self, stopped: str, exit_code: int, error: BaseException | None = None) -> None:
        self.stopped = stopped
        self.exit_code = exit_code
        if error is not None:
            self.exception = {
                "type": f"{type(error).__module__}.{type(error).__qualname__}".removeprefix("builtins."),
                "message": str(error)[:MESSAGE_LIMIT],
                "phase": self.current["name"] if self.current else None,
                "traceback": "".join(traceback.format_exception(error))[-MESSAGE_LIMIT:],
            }
        self.end(completed=error is None and stopped != "exit")
        self.write()

    def report(self) -> dict[str, Any]:
        phases = list(self.phases)
        if self.current is not None:  # a live snapshot: the phase in progress, not measured yet
            phases.append(dict(self.current, seconds=round(time.monotonic() - self._t_phase, 6)))
        return {
            "report_version": REPORT_VERSION,
            "script": self.script,
            "pid": os.getpid(),
            "rank": _env_int("RANK"),
            "local_rank": _env_int("LOCAL_RANK"),
            "world_size": _env_int("WORLD_SIZE"),
            "status": self.stopped,
            "current_phase": self.current["name"] if self.current else None,
            "initialize_called": self.initialize_calls > 0,
            "initialize_calls": self.initialize_calls,
            "steps_requested": self.steps_requested,
            "steps_completed": self.steps_done,
            "exit_code": self.exit_code,
            "exception": self.exception,
            "rss_method": self.rss.method,
            "nvml": self.nvml.status,
            "phases": phases,
            "versions": _versions(),
            "device": _device(),
        }

    def write(self) -> None:
        temporary = f"{self.report_path}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(self.report(), handle, indent=1)
        os.replace(temporary, self.report_path)


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    return int(value) if value is not None and value.lstrip("-").isdigit() else None


def _versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("torch", "deepspeed"):
        module = sys.modules.get(name)
        versions[name] = str(getattr(module, "__version__", None)) if module is not None else None
    return versions


def _device() -> dict[str, Any]:
    cuda = _cuda()
    if cuda is not None:
        index = cuda.current_device()
        return {
            "type": "cuda",
            "index": index,
            "name": cuda.get_device_name(index),
            "count": cuda.device_count(),
            "total_bytes": int(cuda.get_device_properties(index).total_memory),
        }
    return {"type": "cpu", "name": _cpu_name(), "count": os.cpu_count()}


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            match = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read(), flags=re.M)
    except OSError:
        match = None
    return match.group(1).strip() if match else platform.processor() or platform.machine()


# hooks ----------------------------------------------------------------------------------------------------------------
def _patch_deepspeed(module: types.ModuleType, recorder: Recorder) -> None:
    original_initialize: Callable[..., Any] = module.initialize

    def initialize(*args: Any, **kwargs: Any) -> Any:
        first = recorder.on_initialize_called()
        result = original_initialize(*args, **kwargs)
        if first:
            recorder.on_initialize_returned()
        return result

    initialize.__wrapped__ = original_initialize  # type: ignore[attr-defined]
    initialize.__doc__ = original_initialize.__doc__
    module.initialize = initialize  # type: ignore[attr-defined]

    # Already imported by deepspeed/__init__; looked up by name so that no type information is needed.
    DeepSpeedEngine: Any = importlib.import_module("deepspeed.runtime.engine").DeepSpeedEngine

    original_forward: Callable[..., Any] = DeepSpeedEngine.forward
    original_step: Callable[..., Any] = DeepSpeedEngine.step

    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        recorder.on_forward()
        return original_forward(self, *args, **kwargs)

    def step(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original_step(self, *args, **kwargs)
        recorder.on_step_returned()
        return result

    DeepSpeedEngine.forward = forward
    DeepSpeedEngine.step = step

    # A pipeline engine trains through train_batch(): its forward passes call DeepSpeedEngine.forward (the load ->
    # step boundary), but its optimizer step does not go through step(): one train_batch() is one step.
    try:
        PipelineEngine: Any = importlib.import_module("deepspeed.runtime.pipe.engine").PipelineEngine
    except (ImportError, AttributeError):
        PipelineEngine = None  # a DeepSpeed without pipeline parallelism
    if PipelineEngine is not None:
        original_train_batch: Callable[..., Any] = PipelineEngine.train_batch

        def train_batch(self: Any, *args: Any, **kwargs: Any) -> Any:
            recorder.on_forward()
            result = original_train_batch(self, *args, **kwargs)
            recorder.on_step_returned()
            return result

        PipelineEngine.train_batch = train_batch


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader, recorder: Recorder) -> None:
        self.loader = loader
        self.recorder = recorder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self.loader.exec_module(module)
        _patch_deepspeed(module, self.recorder)


class DeepSpeedImportHook(importlib.abc.MetaPathFinder):
    """Patches deepspeed right after its package body has run, whoever imports it first."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "deepspeed":
            return None
        sys.meta_path.remove(self)  # once is enough, and the other finders must not see us
        spec: importlib.machinery.ModuleSpec | None = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _PatchingLoader(spec.loader, self.recorder)
        return spec


# running the script ---------------------------------------------------------------------------------------------------
def run_script(source_path: str, as_path: str, argv: list[str], recorder: Recorder) -> int:
    with open(source_path, "rb") as handle:
        source = handle.read()
    code = compile(source, as_path, "exec", dont_inherit=True)
    if source_path != as_path:  # tracebacks show the lines that ran, not the user's file
        text = source.decode("utf-8", errors="replace")
        linecache.cache[as_path] = (len(text), None, text.splitlines(keepends=True), as_path)
    main = types.ModuleType("__main__")
    main.__dict__.update(
        {"__file__": as_path, "__builtins__": builtins, "__cached__": None, "__spec__": None, "__loader__": None}
    )
    sys.modules["__main__"] = main
    sys.argv = [as_path, *argv]
    sys.path[0] = os.path.dirname(os.path.abspath(as_path))
    if "deepspeed" in sys.modules:
        _patch_deepspeed(sys.modules["deepspeed"], recorder)
    else:
        sys.meta_path.insert(0, DeepSpeedImportHook(recorder))
    try:
        exec(code, main.__dict__)
    except StopAfterSteps:
        recorder.finish("steps_done", 0)
        return 0
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        recorder.finish("exit" if status else "script_ended", status, None if status == 0 else exit_)
        return status
    except BaseException as error:
        recorder.finish("exception", 1, error)
        traceback.print_exception(error)
        return 1
    recorder.finish("script_ended", 0)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="runtime_check.harness")
    parser.add_argument("--report", required=True)
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--as-path", default=None)
    parser.add_argument("script")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    as_path = os.path.abspath(args.as_path or args.script)
    report_path = args.report
    if "{rank}" in report_path:  # one report per rank under a launcher
        report_path = report_path.replace("{rank}", os.environ.get("RANK", "0"))
    recorder = Recorder(report_path, args.steps, as_path)
    recorder.write()
    status = run_script(args.script, as_path, list(args.script_args), recorder)
    sys.stdout.flush()
    sys.stderr.flush()
    return status


def exit_without_teardown(status: int) -> NoReturn:
    """End the process once the report is written, skipping the interpreter's teardown. Under a launcher a rank's
    teardown runs the process group's and DeepSpeed's C++ destructors, which can abort after a peer has already
    exited and closed its connections (gloo): the launcher then fails a run in which every rank finished and
    reported. Nothing the report says depends on the teardown; stragglers are killed with the process group."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    exit_without_teardown(main())
