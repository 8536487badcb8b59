"""Running one script (original or fixed) in child processes with the harness, under a timeout."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

HARNESS = Path(__file__).resolve().with_name("harness.py")
POLL_S = 0.2
TERM_GRACE_S = 5.0
OUTPUT_TAIL = 4000


@dataclass
class ChildResult:
    """What one launch produced: per-rank harness reports, the launcher's exit status, and its output's tail."""

    label: str
    returncode: int | None
    timed_out: bool
    seconds: float
    reports: list[dict[str, Any]] = field(default_factory=list)
    output_tail: str = ""
    nproc: int = 1

    @property
    def report(self) -> dict[str, Any] | None:
        """Rank 0's report (the only one in a single-rank run)."""
        return self.reports[0] if self.reports else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def command(
    script: Path, as_path: Path, script_args: list[str], steps: int, report: Path, nproc: int, port: int
) -> list[str]:
    harness = [str(HARNESS), "--report", str(report), "--steps", str(steps), "--as-path", str(as_path)]
    if nproc == 1:
        return [sys.executable, *harness, str(script), *script_args]
    # torchrun sets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT for each rank it starts.
    launcher = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}"]
    launcher += ["--master-addr=127.0.0.1", f"--master-port={port}"]
    return [*launcher, *harness, str(script), *script_args]


def child_env(port: int, nproc: int) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    if nproc == 1:
        env.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def read_report(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _kill_group(process: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def _tail(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - OUTPUT_TAIL))
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def run_child(
    label: str,
    script: Path,
    as_path: Path,
    script_args: list[str],
    *,
    steps: int,
    timeout: float,
    workdir: Path,
    nproc: int = 1,
    progress: Callable[[str, list[dict[str, Any]], float], None] | None = None,
) -> ChildResult:
    """Run `script` (as if it were `as_path`) under the harness; kill its whole process group on timeout."""
    port = free_port()
    report_pattern = workdir / f"{label}-rank{{rank}}.json"
    log = workdir / f"{label}.log"
    argv = command(script, as_path, script_args, steps, report_pattern, nproc, port)
    started = time.monotonic()
    timed_out = False
    with log.open("wb") as output:
        process = subprocess.Popen(
            argv, cwd=os.getcwd(), env=child_env(port, nproc), stdout=output, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            while process.poll() is None:
                elapsed = time.monotonic() - started
                if progress is not None:
                    progress(label, _reports(workdir, label, nproc), elapsed)
                if elapsed > timeout:
                    timed_out = True
                    _kill_group(process, signal.SIGTERM)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(TERM_GRACE_S)
                    break
                time.sleep(POLL_S)
        finally:
            _kill_group(process, signal.SIGKILL)  # stragglers: data-loader workers, a hung rank, a shell's children
            process.wait()
    seconds = time.monotonic() - started
    return ChildResult(
        label=label,
        returncode=process.returncode,
        timed_out=timed_out,
        seconds=round(seconds, 3),
        reports=_reports(workdir, label, nproc),
        output_tail=_tail(log),
        nproc=nproc,
    )


def _reports(workdir: Path, label: str, nproc: int) -> list[dict[str, Any]]:
    reports = []
    for rank in range(nproc):
        report = read_report(workdir / f"{label}-rank{rank}.json")
        if report is not None:
            reports.append(report)
    return reports


class Progress:
    """A one-line indicator on stderr: rewritten in place on a terminal, one line per change otherwise."""

    SPINNER = "|/-\\"

    def __init__(self, stream: TextIO, enabled: bool = True) -> None:
        self.stream = stream
        self.enabled = enabled
        self.tty = stream.isatty()
        self.last = ""
        self.ticks = 0

    def __call__(self, label: str, reports: list[dict[str, Any]], elapsed: float) -> None:
        if not self.enabled:
            return
        phases = sorted({str(r.get("current_phase") or r.get("status")) for r in reports}) or ["starting"]
        state = f"{label}: {', '.join(phases)}"
        if self.tty:
            self.ticks += 1
            spin = self.SPINNER[self.ticks % len(self.SPINNER)]
            self.stream.write(f"\r\x1b[K{spin} runtime_check {state} ({elapsed:.0f} s)")
            self.stream.flush()
        elif state != self.last:
            self.stream.write(f"runtime_check: {state} ({elapsed:.0f} s)\n")
            self.stream.flush()
        self.last = state

    def done(self, label: str, result: ChildResult) -> None:
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\r\x1b[K")
        outcome = "timed out" if result.timed_out else f"exit {result.returncode}"
        self.stream.write(f"runtime_check: {label}: {outcome} after {result.seconds:.1f} s\n")
        self.stream.flush()
        self.last = ""
