"""The second hostile-input sweep (issue #26): nothing hangs, leaks or is lost.

Each case runs the real command (`python -m dslint`) with a time limit and a memory limit, so a case that would
hang or read forever fails instead of taking the suite down, next to a good file whose finding must still be
reported. Cases that need what root cannot do are simulated in process, by monkeypatching.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEADER = 'import deepspeed\nimport torch\nengine, *_ = deepspeed.initialize(model=m, config="ds.json")\n'
GOOD = HEADER + 'state = torch.load("w.pt")\n'  # DSL202, fixable
GOOD_FINDING = "good.py:4:9: DSL202"
MEMORY = 3 * 1024 * 1024 * 1024


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def dslint(
    cwd: Path,
    *args: str,
    timeout: float = 60,
    stdin: int | None = subprocess.DEVNULL,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """The real command, killed after `timeout` seconds (a hang fails the test) and held to 3 GB of memory."""
    return subprocess.run(
        [sys.executable, "-m", "dslint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="backslashreplace",
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=timeout,
        stdin=stdin,
        preexec_fn=_limit_memory,
    )


def assert_one_clear_line(result: subprocess.CompletedProcess[str], code: int, *needles: str) -> str:
    """Exit `code`, no traceback, and one line holding every needle."""
    everything = result.stdout + result.stderr
    assert "Traceback" not in everything and "internal error" not in everything, everything
    assert result.returncode == code, everything
    lines = [line for line in everything.splitlines() if all(needle in line for needle in needles)]
    assert len(lines) == 1, everything
    if code == 2:
        assert "All checks passed" not in everything
    return lines[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "good.py").write_text(GOOD, encoding="utf-8")
    (tmp_path / "ds.json").write_text('{"train_batch_size": 8}\n', encoding="utf-8")
    return tmp_path


# -- FIFOs and devices are never opened blocking, nor read without a limit ----------------------------------------


def test_a_fifo_in_a_walked_tree_or_named_is_refused_without_opening_it(project: Path) -> None:
    os.mkfifo(project / "pipe.py")
    (project / "sub").mkdir()
    os.mkfifo(project / "sub" / "ds_config.json")  # named like a config: the walk reads those
    os.mkfifo(project / "sub" / "other.json")  # a candidate config: peeked at
    result = dslint(project, "check", ".", timeout=30)
    assert_one_clear_line(result, 2, "dslint: error: pipe.py: cannot read: not a regular file (a pipe)")
    assert_one_clear_line(result, 2, "ds_config.json", "not a regular file (a pipe)")
    assert GOOD_FINDING in result.stdout
    named = dslint(project, "check", "pipe.py", "good.py", timeout=30)
    assert_one_clear_line(named, 2, "dslint: error: pipe.py: cannot read: not a regular file (a pipe)")
    assert GOOD_FINDING in named.stdout
    fix = dslint(project, "fix", ".", timeout=30)
    assert_one_clear_line(fix, 2, "pipe.py", "not a regular file (a pipe)")
    assert "fixed DSL202" in fix.stdout


def test_a_config_a_script_points_at_that_is_a_fifo(project: Path) -> None:
    (project / "ds.json").unlink()
    os.mkfifo(project / "ds.json")
    result = dslint(project, "check", "--output-format", "full", "good.py", timeout=30)
    assert result.returncode in (1, 2) and "Traceback" not in result.stderr, result.stdout + result.stderr
    assert "good.py:4:9: DSL202" in result.stdout


def test_cache_entries_that_are_fifos_or_dev_zero_are_rebuilt(project: Path) -> None:
    cache = project / "cache"
    env = {"DSLINT_CACHE_DIR": str(cache)}
    first = dslint(project, "check", "good.py", env=env)
    assert first.returncode == 1 and GOOD_FINDING in first.stdout, first.stderr
    entries = [path for path in cache.rglob("*") if path.parent.parent.name.startswith("v") and path.is_file()]
    assert entries
    for index, entry in enumerate(entries):
        entry.unlink()
        if index % 2:
            entry.symlink_to("/dev/zero")
        else:
            os.mkfifo(entry)
    again = dslint(project, "check", "good.py", env=env, timeout=30)
    assert again.returncode == 1 and again.stdout == first.stdout, again.stdout + again.stderr
