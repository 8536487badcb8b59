"""`dslint check --watch`: a check, then another each time a checked file changes, until interrupted."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BAD = "import deepspeed\nmodel = Net()\nmodel.cuda()\nengine, *_ = deepspeed.initialize(model=model)\n"
GOOD = "import deepspeed\nmodel = Net()\nengine, *_ = deepspeed.initialize(model=model)\n"


def _lines(stream: object, into: queue.Queue[str]) -> None:
    for line in iter(stream.readline, ""):  # type: ignore[attr-defined]
        into.put(line)


def _until(lines: queue.Queue[str], marker: str, timeout: float = 60) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        seen.append(line)
        if marker in line:
            return seen


def test_watch_checks_again_after_a_change(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BAD, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSLINT_")}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "dslint", "check", "--watch", "--no-cache", "train.py"]
    process = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(process.stdout, lines), daemon=True).start()
    try:
        first = _until(lines, "[watching for changes")
        assert any("train.py:3:1: DSL101" in line for line in first), first
        assert any(line.startswith("Found 1 finding") for line in first), first
        time.sleep(0.1)
        (tmp_path / "train.py").write_text(GOOD, encoding="utf-8")
        os.utime(tmp_path / "train.py", (time.time() + 5, time.time() + 5))  # a new mtime, however coarse
        second = _until(lines, "[watching for changes")
        assert any(line.startswith("All checks passed") for line in second), second
        assert not any("DSL101" in line for line in second), second
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=90) == 0  # generous: a loaded 2-core machine answers SIGINT slowly
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
